//! Document 003's spider "kernels": what a data source's responses mean. A kernel decides, for
//! the responses it understands, which links to follow and what to store; the core (frontier,
//! done set, politeness, output) stays the same for every source, so a new kind of source is one
//! more `Kernel`, not a change to the crawl.
//!
//! Two ship: [`HtmlKernel`] (pages: links from `a`, `area`, `link`, `frame`, `iframe`, the page
//! stored, rewritten for the mirror when asked) and [`FeedKernel`] (XML sitemaps, sitemap
//! indexes, RSS and Atom feeds: their entries are followed, nothing of the feed is stored).

use url::Url;

use crate::budget::{Cut, ParseBudget};
use crate::charset;
use crate::links::{self, ExtractOptions, Rewrite};
use crate::sitemap;

/// A response as a kernel sees it (its content coding already decoded).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Response<'a> {
    pub(crate) url: &'a Url,
    /// `Content-Type` without parameters, lower case.
    pub(crate) mime: &'a str,
    /// The whole `Content-Type` value, parameters (`charset`) included.
    pub(crate) content_type: &'a str,
    pub(crate) body: &'a [u8],
}

impl<'a> Response<'a> {
    /// `content_type` is the header's value, in lower case.
    pub(crate) fn new(url: &'a Url, content_type: &'a str, body: &'a [u8]) -> Self {
        let mime = content_type.split(';').next().unwrap_or("").trim();
        Self {
            url,
            mime,
            content_type,
            body,
        }
    }
}

/// What a kernel made of a response.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Harvest {
    /// Links to offer to the done set, in document order.
    pub(crate) follow: Vec<Url>,
    /// What the document needs to be shown (images, scripts, stylesheets), for the offline
    /// copy.
    pub(crate) requisites: Vec<Url>,
    /// Whether the followed links are themselves feeds or sitemaps (a sitemap index).
    pub(crate) follow_feeds: bool,
    /// Links left out on the page's request (`nofollow`).
    pub(crate) nofollow: usize,
    /// Links that are no http(s) URL (`mailto:`, `javascript:`, unparsable).
    pub(crate) not_web: usize,
    /// What to store in place of the body (a rewritten page); `None` keeps the body as is.
    pub(crate) stored: Option<Vec<u8>>,
    /// Whether the response is content to store at all (a page), or only a list of links.
    pub(crate) is_content: bool,
    /// What the parse's memory budget cut, if anything: reported with the response.
    pub(crate) cut: Option<Cut>,
}

/// How one kind of data source is read.
pub(crate) trait Kernel: Send + Sync {
    /// Short name, for reports.
    fn name(&self) -> &'static str;
    /// Whether this kernel reads `response` (decided on its type, or its start).
    fn reads(&self, response: &Response<'_>) -> bool;
    /// Links to follow and what to store; `rewrite` maps links to mirror paths when a mirror is
    /// written.
    fn read(&self, response: &Response<'_>, rewrite: Option<Rewrite<'_>>) -> Harvest;
}

/// HTML pages: the link-following kernel of document 002.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HtmlKernel {
    pub(crate) respect_nofollow: bool,
    pub(crate) budget: ParseBudget,
}

impl Kernel for HtmlKernel {
    fn name(&self) -> &'static str {
        "html"
    }

    fn reads(&self, response: &Response<'_>) -> bool {
        matches!(response.mime, "text/html" | "application/xhtml+xml")
    }

    /// A page in another encoding than UTF-8 is decoded first; its copy for the mirror is
    /// UTF-8, begins with a byte order mark and declares UTF-8 in its `<meta>` tags, since the
    /// HTTP header that named its encoding is not part of the copy. A page whose UTF-8 form
    /// outgrows the budget is read up to there and mirrored as fetched.
    fn read(&self, response: &Response<'_>, rewrite: Option<Rewrite<'_>>) -> Harvest {
        let syntax = match response.mime {
            "application/xhtml+xml" => charset::Syntax::Xml,
            _ => charset::Syntax::Html,
        };
        let page = charset::decode(
            response.body,
            response.content_type,
            syntax,
            self.budget.decoded(),
        );
        let transcoded = page.transcoded() && page.cut_at.is_none();
        let opts = ExtractOptions {
            budget: self.budget,
            respect_nofollow: self.respect_nofollow,
            rewrite: rewrite.filter(|_| page.cut_at.is_none()),
            query_encoding: page.query_encoding(),
            declare_utf8: transcoded,
        };
        let marked = |mut copy: Vec<u8>| {
            copy.splice(0..0, *b"\xEF\xBB\xBF");
            copy
        };
        match links::extract(&page.utf8, response.url, &opts) {
            Ok(found) => {
                let mut cut = found.cut;
                if let Some(at) = page.cut_at {
                    let cut = cut.get_or_insert_with(Cut::default);
                    cut.decoded_before = Some(at);
                    cut.rewrite_dropped = rewrite.is_some();
                }
                Harvest {
                    follow: found.links,
                    requisites: found.requisites,
                    follow_feeds: false,
                    nofollow: found.nofollow,
                    not_web: found.not_web,
                    // A transcoded page whose rewriting was given up is still stored as UTF-8.
                    stored: match (found.rewritten, transcoded && opts.rewrite.is_some()) {
                        (Some(copy), true) => Some(marked(copy)),
                        (None, true) => Some(marked(page.utf8.into_owned())),
                        (copy, false) => copy,
                    },
                    is_content: true,
                    cut,
                }
            }
            // Only a handler failing (an attribute it cannot set) ends the pass early; the
            // page is kept as is, with no links.
            Err(_) => Harvest {
                is_content: true,
                ..Harvest::default()
            },
        }
    }
}

/// XML sitemaps and indexes, RSS and Atom feeds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FeedKernel {
    pub(crate) budget: ParseBudget,
}

impl Kernel for FeedKernel {
    fn name(&self) -> &'static str {
        "feed"
    }

    fn reads(&self, response: &Response<'_>) -> bool {
        matches!(
            response.mime,
            "application/xml"
                | "text/xml"
                | "application/rss+xml"
                | "application/atom+xml"
                | "application/x-sitemap+xml"
        )
    }

    fn read(&self, response: &Response<'_>, _rewrite: Option<Rewrite<'_>>) -> Harvest {
        let map = sitemap::parse(response.body, response.url, self.budget);
        Harvest {
            follow: map.locs,
            follow_feeds: map.is_index,
            cut: map.cut,
            ..Harvest::default()
        }
    }
}

/// The kernels of a crawl, asked in order; the first that reads a response reads it.
pub(crate) struct Kernels {
    kernels: Vec<Box<dyn Kernel>>,
    feed: FeedKernel,
}

impl std::fmt::Debug for Kernels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.kernels.iter().map(|k| k.name()))
            .finish()
    }
}

impl Kernels {
    /// The shipped kernels: HTML pages, then sitemaps and feeds; each parse within `budget`.
    pub(crate) fn standard(respect_nofollow: bool, budget: ParseBudget) -> Self {
        let feed = FeedKernel { budget };
        Self {
            kernels: vec![
                Box::new(HtmlKernel {
                    respect_nofollow,
                    budget,
                }),
                Box::new(feed),
            ],
            feed,
        }
    }

    /// The kernel for `response`, if any reads it.
    pub(crate) fn for_response(&self, response: &Response<'_>) -> Option<&dyn Kernel> {
        self.kernels
            .iter()
            .map(|k| &**k)
            .find(|k| k.reads(response))
    }

    /// The feed kernel, for a response known to be a sitemap whatever its declared type.
    pub(crate) fn feed(&self) -> &FeedKernel {
        &self.feed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(h: &Harvest) -> Vec<&str> {
        h.follow.iter().map(Url::as_str).collect()
    }

    #[test]
    fn each_source_goes_to_its_kernel() {
        let kernels = Kernels::standard(false, ParseBudget::new(1 << 20));
        let url = Url::parse("http://h/x").unwrap();
        let page = Response::new(&url, "text/html; charset=utf-8", b"<a href=/a>a</a>");
        let k = kernels.for_response(&page).unwrap();
        assert_eq!(k.name(), "html");
        let h = k.read(&page, None);
        assert_eq!(urls(&h), ["http://h/a"]);
        assert!(h.is_content);

        let map = Response::new(
            &url,
            "application/xml",
            b"<urlset><url><loc>http://h/b</loc></url></urlset>",
        );
        let k = kernels.for_response(&map).unwrap();
        assert_eq!(k.name(), "feed");
        let h = k.read(&map, None);
        assert_eq!(urls(&h), ["http://h/b"]);
        assert!(!h.is_content && !h.follow_feeds);

        let image = Response::new(&url, "image/png", b"\x89PNG");
        assert!(kernels.for_response(&image).is_none());
    }

    /// A page whose UTF-8 form would outgrow the budget is read up to the bound, reported,
    /// and mirrored as fetched; a smaller one in the same encoding is copied as UTF-8.
    #[test]
    fn a_transcoded_page_stays_within_its_budget() {
        let kernels = Kernels::standard(false, ParseBudget::new(4_000));
        let url = Url::parse("http://h/x").unwrap();
        let rewrite = |u: &Url, _: crate::links::LinkKind| Some(format!("local{}", u.path()));
        let read = |body: &[u8]| {
            let page = Response::new(&url, "text/html; charset=windows-1252", body);
            kernels
                .for_response(&page)
                .unwrap()
                .read(&page, Some(&rewrite))
        };
        let mut big = b"<a href=/first>\x80</a>".to_vec();
        big.extend(vec![0x80u8; 3_000]);
        big.extend(b"<a href=/last>x</a>");
        let h = read(&big);
        assert_eq!(urls(&h), ["http://h/first"]);
        assert!(h.stored.is_none());
        let cut = h.cut.unwrap();
        assert!(
            cut.decoded_before.is_some() && cut.rewrite_dropped,
            "{cut:?}"
        );
        let h = read(b"<a href=/first>\x80</a>");
        assert_eq!(h.cut, None);
        assert_eq!(
            String::from_utf8(h.stored.unwrap()).unwrap(),
            "\u{feff}<a href=\"local/first\">\u{20ac}</a>"
        );
    }

    #[test]
    fn feeds_give_their_entries() {
        let kernels = Kernels::standard(false, ParseBudget::new(1 << 20));
        let url = Url::parse("http://h/feed").unwrap();
        let rss = br#"<rss><channel><title>t</title><item><title>one</title><link>http://h/1</link></item><item><link> /2 </link></item></channel></rss>"#;
        let h = kernels
            .feed()
            .read(&Response::new(&url, "application/rss+xml", rss), None);
        assert_eq!(urls(&h), ["http://h/1", "http://h/2"]);
        let atom = br#"<feed><entry><link rel="alternate" href="http://h/3"/></entry><entry><link href="/4"/></entry></feed>"#;
        let h = kernels
            .feed()
            .read(&Response::new(&url, "application/atom+xml", atom), None);
        assert_eq!(urls(&h), ["http://h/3", "http://h/4"]);
    }
}
