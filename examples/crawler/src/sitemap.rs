//! URLs listed in an XML sitemap (found through robots.txt `Sitemap:` lines).

use std::cell::RefCell;

use lol_html::{HtmlRewriter, Settings, element, text};
use url::Url;

/// The `<loc>` entries of a sitemap, and whether it is a sitemap index (whose entries are
/// further sitemaps rather than pages).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Sitemap {
    pub(crate) locs: Vec<Url>,
    pub(crate) is_index: bool,
}

/// Parses a sitemap. The HTML tokenizer reads the simple XML of sitemaps well enough, and keeps
/// the crawler to one parser; entries that are not http(s) URLs are dropped.
pub(crate) fn parse(body: &[u8], base: &Url) -> Sitemap {
    let state = RefCell::new((Sitemap::default(), String::new()));
    let mut rewriter = HtmlRewriter::new(
        Settings::new()
            .append_element_content_handler(element!("sitemapindex", |_| {
                state.borrow_mut().0.is_index = true;
                Ok(())
            }))
            .append_element_content_handler(text!("loc", |t| {
                let mut s = state.borrow_mut();
                s.1.push_str(t.as_str());
                if t.last_in_text_node() {
                    let raw = std::mem::take(&mut s.1);
                    if let Ok(url) = base.join(raw.trim())
                        && matches!(url.scheme(), "http" | "https")
                    {
                        s.0.locs.push(url);
                    }
                }
                Ok(())
            })),
        |_: &[u8]| {},
    );
    // A malformed sitemap yields whatever was read before the error.
    let _ = rewriter.write(body).and_then(|()| rewriter.end());
    state.into_inner().0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_urlsets_and_indexes() {
        let base = Url::parse("http://h/sitemap.xml").unwrap();
        let set = parse(
            b"<?xml version='1.0'?><urlset><url><loc> http://h/a </loc></url><url><loc>/b</loc></url><url><loc>ftp://x/</loc></url></urlset>",
            &base,
        );
        assert!(!set.is_index);
        assert_eq!(
            set.locs.iter().map(Url::as_str).collect::<Vec<_>>(),
            ["http://h/a", "http://h/b"]
        );
        let index = parse(
            b"<sitemapindex><sitemap><loc>http://h/s2.xml</loc></sitemap></sitemapindex>",
            &base,
        );
        assert!(index.is_index);
        assert_eq!(index.locs.len(), 1);
    }
}
