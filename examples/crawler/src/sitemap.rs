//! URLs listed in an XML sitemap (found through robots.txt `Sitemap:` lines), or in an RSS or
//! Atom feed.

use std::cell::RefCell;

use lol_html::{HtmlRewriter, Settings, element, text};
use url::Url;

use crate::budget::{self, Cut, ParseBudget};

/// The `<loc>` entries of a sitemap, and whether it is a sitemap index (whose entries are
/// further sitemaps rather than pages).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Sitemap {
    pub(crate) locs: Vec<Url>,
    pub(crate) is_index: bool,
    /// What the memory budget cut, if anything.
    pub(crate) cut: Option<Cut>,
}

/// Longest `<loc>` text gathered: far beyond any URL a crawl follows, and a bound on what one
/// endless text node can cost.
const MAX_LOC: usize = 64 << 10;

/// Parses a sitemap. The HTML tokenizer reads the simple XML of sitemaps well enough, and keeps
/// the crawler to one parser; entries that are not http(s) URLs are dropped.
///
/// Feeds: RSS `<link>` text and Atom `<link href>` (no `rel`, or `rel="alternate"`) count as
/// entries. RSS's `<link>` is an HTML void element to the tokenizer, so its text is read as a
/// `<loc>`.
pub(crate) fn parse(body: &[u8], base: &Url, budget: ParseBudget) -> Sitemap {
    let rss;
    let body = if find(body, b"<rss").is_some() {
        rss = replace(&replace(body, b"<link>", b"<loc>"), b"</link>", b"</loc>");
        &rss[..]
    } else {
        body
    };
    let atom = find(body, b"<feed").is_some();
    let state = RefCell::new((false, budget.links(), String::new()));
    let rewriter = HtmlRewriter::new(
        Settings::new()
            .with_memory_settings(budget.memory_settings())
            .append_element_content_handler(element!("sitemapindex", |_| {
                state.borrow_mut().0 = true;
                Ok(())
            }))
            .append_element_content_handler(element!("link[href]", |el| {
                let alternate = el
                    .get_attribute("rel")
                    .is_none_or(|r| r.eq_ignore_ascii_case("alternate"));
                if atom
                    && alternate
                    && let Some(href) = el.get_attribute("href")
                    && let Ok(url) = base.join(href.trim())
                    && matches!(url.scheme(), "http" | "https")
                {
                    state.borrow_mut().1.push(url);
                }
                Ok(())
            }))
            .append_element_content_handler(text!("loc", |t| {
                let mut s = state.borrow_mut();
                if s.2.len() + t.as_str().len() <= MAX_LOC {
                    s.2.push_str(t.as_str());
                }
                if t.last_in_text_node() {
                    let raw = std::mem::take(&mut s.2);
                    if let Ok(url) = base.join(raw.trim())
                        && matches!(url.scheme(), "http" | "https")
                    {
                        s.1.push(url);
                    }
                }
                Ok(())
            })),
        |_: &[u8]| {},
    );
    // A malformed sitemap yields whatever was read before the error.
    let parsed_before = budget::feed(rewriter, body).unwrap_or(None);
    let (is_index, locs, _) = state.into_inner();
    Sitemap {
        cut: Cut {
            decoded_before: None,
            parsed_before,
            links_dropped: locs.dropped,
            rewrite_dropped: false,
        }
        .into_option(),
        locs: locs.kept,
        is_index,
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn replace(hay: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(hay.len());
    let mut rest = hay;
    while let Some(i) = find(rest, from) {
        out.extend_from_slice(&rest[..i]);
        out.extend_from_slice(to);
        rest = &rest[i + from.len()..];
    }
    out.extend_from_slice(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUDGET: fn() -> ParseBudget = || ParseBudget::new(1 << 20);

    #[test]
    fn reads_urlsets_and_indexes() {
        let base = Url::parse("http://h/sitemap.xml").unwrap();
        let set = parse(
            b"<?xml version='1.0'?><urlset><url><loc> http://h/a </loc></url><url><loc>/b</loc></url><url><loc>ftp://x/</loc></url></urlset>",
            &base,
            BUDGET(),
        );
        assert!(!set.is_index);
        assert_eq!(
            set.locs.iter().map(Url::as_str).collect::<Vec<_>>(),
            ["http://h/a", "http://h/b"]
        );
        let index = parse(
            b"<sitemapindex><sitemap><loc>http://h/s2.xml</loc></sitemap></sitemapindex>",
            &base,
            BUDGET(),
        );
        assert!(index.is_index);
        assert_eq!(index.locs.len(), 1);
    }
}
