//! Fingerprints of whole pages: what changes between fetches does not change them, what
//! tells pages apart does, and no input makes them fail.

use proptest::prelude::*;
use url_dedup_fingerprint::{Content, Fingerprinter};

fn page(article: &str, clock: &str, recent: &[&str], views: u32) -> String {
    let recent: String = recent
        .iter()
        .map(|r| format!("<li><a href=/{r}>{r}</a></li>"))
        .collect();
    format!(
        r#"<!DOCTYPE html><html><head><title>T</title><script>var now="{clock}";</script></head>
        <body class="page has-sidebar"><header id=masthead>Wiki <span>Hello user{views}</span></header>
        <nav class=main-navigation><ul><li><a href=/>Home</a></ul></nav>
        <div id=primary><main id=main class=site-main>{article}
        <p>Last edited on {clock}.</p></main></div>
        <aside id=secondary class=widget-area><section class=widget><h2>Recent changes</h2><ul>{recent}</ul></section></aside>
        <footer id=colophon>Viewed {views} times. Generated at {clock}.</footer></body></html>"#
    )
}

const ARTICLE: &str = "<h1>Crawling politely</h1><p>A polite crawler fetches one page of a site \
    at a time, waits between fetches, and reads robots.txt before anything else.</p>\
    <ul><li>Identify yourself</li><li>Back off on errors</li><li>Cache what you can</li></ul>";

#[test]
fn what_changes_between_fetches_is_ignored() {
    let f = Fingerprinter::new();
    let a = f.fingerprint(page(ARTICLE, "5 March 2024, 12:00", &["A", "B"], 100).as_bytes());
    let b = f.fingerprint(page(ARTICLE, "Mar 7, 2024 09:13 pm", &["C", "D", "E"], 231).as_bytes());
    assert_eq!(a.exact, b.exact);
    assert_eq!(a.simhash, b.simhash);
    assert_eq!(
        Content::extract(page(ARTICLE, "2024-03-05", &[], 1).as_bytes()).text(),
        "crawling politely\na polite crawler fetches one page of a site at a time waits between \
         fetches and reads robots txt before anything else\nidentify yourself\nback off on \
         errors\ncache what you can\nlast edited on <date>"
    );
}

#[test]
fn what_tells_pages_apart_is_kept() {
    let f = Fingerprinter::new();
    let a = f.fingerprint(page(ARTICLE, "x", &[], 1).as_bytes());
    let other = ARTICLE.replace("robots.txt", "the sitemap");
    let b = f.fingerprint(page(&other, "x", &[], 1).as_bytes());
    assert_ne!(a.exact, b.exact);
    let numbered = ARTICLE.replace("one page", "two pages");
    assert_ne!(
        a.exact,
        f.fingerprint(page(&numbered, "x", &[], 1).as_bytes()).exact
    );
}

proptest! {
    #[test]
    fn any_bytes_are_fingerprinted(bytes in prop::collection::vec(any::<u8>(), 0..2000)) {
        let f = Fingerprinter::new();
        let a = f.fingerprint(&bytes);
        prop_assert_eq!(a, f.fingerprint(&bytes));
        prop_assert_eq!(a.words as usize, Content::extract(&bytes).word_count());
    }

    #[test]
    fn any_markup_is_fingerprinted(parts in prop::collection::vec(
        prop::sample::select(vec![
            "<p>", "</p>", "<div class=sidebar>", "</div>", "<main>", "</main>", "<nav>", "</nav>",
            "<script>", "</script>", "<!--", "-->", "<a href='x>y'>", "</a>", "word ", "12:30 ",
            "5 March 2024 ", "&amp;", "<br>", "<", ">", "\"", "'", "<li>", "é ", "\u{00a0}",
        ]),
        0..200,
    )) {
        let html = parts.concat();
        let content = Content::extract(html.as_bytes());
        let text = content.text();
        // The text is words and line breaks only: no markup survives.
        prop_assert!(!text.contains('<') || text.contains("<time>") || text.contains("<date>"));
        let _ = Fingerprinter::new().fingerprint(html.as_bytes());
    }
}
