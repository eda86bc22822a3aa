//! Link extraction and mirror rewriting in one streaming pass over a page (`lol_html`).
//!
//! Links come only from the elements and attributes that are links: `a`, `area` and `link`
//! `href`, `frame` and `iframe` `src`. Text that merely looks like a URL (inside `<script>`,
//! JSON, templates) is never followed; that is the mistake that makes wget and httrack request
//! thousands of non-pages. `<base href>` changes how relative links resolve, and
//! `rel="nofollow"` (on the link or in `<meta name="robots">`) is honoured when asked.
//!
//! **Requisites** are what a page needs to be shown, fetched for the offline copy like
//! `wget -p`: `img` `src` and `srcset`, `source` `src` and `srcset`, `script src`,
//! `input type=image`, `video poster`, stylesheets and icons (`link rel=stylesheet`, `icon`,
//! `apple-touch-icon`, `preload`), `url(...)` in `style` attributes and `<style>` elements, and
//! the same inside `<noscript>` (whose content the parser sees as text).
//!
//! When a mirror is written, the same pass rewrites each followed link and requisite to the
//! relative path of its local copy (document 002's rewriting, wget's `-k`), other web links to
//! absolute URLs, and drops `<base href>` so the relative paths resolve against the local file.
//!
//! The pass reads UTF-8 ([`crate::charset`] decodes other pages first); a link's query is
//! percent-encoded in the page's own encoding, as the URL standard says and browsers do.

use std::cell::RefCell;

use encoding_rs::Encoding;
use lol_html::html_content::{ContentType, Element};
use lol_html::{HtmlRewriter, Settings, element, text};
use url::Url;

use crate::budget::{self, Cut, Links, ParseBudget};

/// What a reference in a page is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LinkKind {
    /// A link to another document, followed by the crawl.
    Page,
    /// Something the page needs to be shown (image, script, stylesheet, font, icon).
    Requisite,
}

/// Maps an absolute link to the relative path of its mirrored copy, `None` when not mirrored.
pub(crate) type Rewrite<'a> = &'a dyn Fn(&Url, LinkKind) -> Option<String>;

/// What to do with the links of a page.
pub(crate) struct ExtractOptions<'a> {
    /// The pass's working memory (see [`crate::budget`]).
    pub(crate) budget: ParseBudget,
    /// Skip links marked `rel="nofollow"`, and all links of a page whose robots meta tag says
    /// `nofollow`.
    pub(crate) respect_nofollow: bool,
    /// When set, rewrite links for the offline mirror: given an absolute link, the relative
    /// path of its local copy, or `None` when the link is not mirrored.
    pub(crate) rewrite: Option<Rewrite<'a>>,
    /// The encoding of the queries of the page's links (see
    /// [`crate::charset::Decoded::query_encoding`]); `None` for UTF-8.
    pub(crate) query_encoding: Option<&'static Encoding>,
    /// When rewriting, make the page's charset declarations (`<meta charset>`,
    /// `<meta http-equiv="Content-Type">`) say UTF-8: the page was decoded from another
    /// encoding and its copy is UTF-8.
    pub(crate) declare_utf8: bool,
}

/// `raw` resolved against `base`, its query percent-encoded in `query_encoding`.
pub(crate) fn resolve(
    base: &Url,
    raw: &str,
    query_encoding: Option<&'static Encoding>,
) -> Result<Url, url::ParseError> {
    let Some(encoding) = query_encoding else {
        return base.join(raw);
    };
    let encode: &dyn Fn(&str) -> std::borrow::Cow<'_, [u8]> = &|s| encoding.encode(s).0;
    Url::options()
        .base_url(Some(base))
        .encoding_override(Some(encode))
        .parse(raw)
}

/// The result of one pass.
#[derive(Debug, Default)]
pub(crate) struct Extracted {
    /// Absolute http(s) links in document order (duplicates included: deduplication is the
    /// done set's job).
    pub(crate) links: Vec<Url>,
    /// Absolute http(s) requisites in document order.
    pub(crate) requisites: Vec<Url>,
    /// Links left out because of `nofollow`.
    pub(crate) nofollow: usize,
    /// Links that are no http(s) URL (`mailto:`, `javascript:`, `tel:`, unparsable).
    pub(crate) not_web: usize,
    /// The rewritten page, when rewriting was asked for (and fit its bound).
    pub(crate) rewritten: Option<Vec<u8>>,
    /// What the memory budget cut, if anything.
    pub(crate) cut: Option<Cut>,
}

struct Pass {
    base: Option<Url>,
    links: Links,
    nofollow: usize,
    not_web: usize,
    page_nofollow: bool,
}

/// Extracts (and optionally rewrites) the links of the HTML page `html` fetched from `page`.
pub(crate) fn extract(
    html: &[u8],
    page: &Url,
    opts: &ExtractOptions<'_>,
) -> Result<Extracted, lol_html::errors::RewritingError> {
    let pass = RefCell::new(Pass {
        base: None,
        links: opts.budget.links(),
        nofollow: 0,
        not_web: 0,
        page_nofollow: false,
    });
    let rewriting = opts.rewrite.is_some();
    // Rewritten links are usually about as long as the originals; a copy that outgrows the
    // page by more than an eighth (and 64 KiB, for small pages) is given up (the page is
    // mirrored as fetched) rather than reallocated to twice its size: it never grows past the
    // capacity reserved here.
    let output_cap = if rewriting {
        html.len() + html.len() / 8 + (64 << 10)
    } else {
        0
    };
    let mut output = Vec::with_capacity(output_cap);
    let mut rewrite_dropped = false;

    // Resolves one reference against the page (or its `<base>`), records it, and returns what
    // it becomes in the mirror (`None`: not a web URL, left as it is).
    let take = |raw: &str, kind: LinkKind, nofollow: bool| -> Option<String> {
        let mut p = pass.borrow_mut();
        let resolved = resolve(
            p.base.as_ref().unwrap_or(page),
            raw.trim(),
            opts.query_encoding,
        );
        let Some(target) = resolved
            .ok()
            .filter(|t| matches!(t.scheme(), "http" | "https"))
        else {
            p.not_web += 1;
            return None;
        };
        let new = opts
            .rewrite
            .map(|rewrite| rewrite(&target, kind).unwrap_or_else(|| target.to_string()));
        match kind {
            LinkKind::Page if nofollow => p.nofollow += 1,
            LinkKind::Page => p.links.push(target),
            LinkKind::Requisite => p.links.push_requisite(target),
        }
        new
    };
    let link = |el: &mut Element<'_, '_>, attr: &str, kind: LinkKind| {
        let Some(raw) = el.get_attribute(attr) else {
            return Ok(());
        };
        let raw = crate::entities::decode(&raw).into_owned();
        let nofollow = opts.respect_nofollow
            && el.get_attribute("rel").is_some_and(|rel| {
                rel.split_ascii_whitespace()
                    .any(|t| t.eq_ignore_ascii_case("nofollow"))
            });
        if let Some(new) = take(&raw, kind, nofollow) {
            el.set_attribute(attr, &new)?;
        }
        Ok(())
    };
    let srcset = |el: &mut Element<'_, '_>| {
        let Some(raw) = el.get_attribute("srcset") else {
            return Ok(());
        };
        let raw = crate::entities::decode(&raw).into_owned();
        let rewritten = rewrite_srcset(&raw, |url| take(url, LinkKind::Requisite, false));
        if rewriting {
            el.set_attribute("srcset", &rewritten)?;
        }
        Ok(())
    };
    let inline_css = |css: &str| -> String {
        crate::css::rewrite(css, |url| take(url, LinkKind::Requisite, false)).0
    };
    let style_attr = |el: &mut Element<'_, '_>| {
        let Some(raw) = el.get_attribute("style") else {
            return Ok(());
        };
        let raw = crate::entities::decode(&raw).into_owned();
        let rewritten = inline_css(&raw);
        if rewriting && rewritten != raw {
            el.set_attribute("style", &rewritten)?;
        }
        Ok(())
    };
    // `<style>` and `<noscript>` content arrives as text, possibly in several chunks: it is
    // gathered, read whole at the last chunk, and (when rewriting) put back in its place.
    let style_text = RefCell::new(String::new());
    let noscript_text = RefCell::new(String::new());
    let nested = RefCell::new(Vec::<Extracted>::new());

    let rewriter = HtmlRewriter::new(
        Settings::new()
            .with_memory_settings(opts.budget.memory_settings())
            .append_element_content_handler(element!("base[href]", |el| {
                let mut p = pass.borrow_mut();
                // Only the first <base> counts (HTML standard).
                if p.base.is_none() {
                    let href = el.get_attribute("href").unwrap_or_default();
                    let href = crate::entities::decode(&href);
                    let base = resolve(page, href.trim(), opts.query_encoding);
                    p.base = Some(base.unwrap_or_else(|_| page.clone()));
                }
                if rewriting {
                    el.remove_attribute("href");
                }
                Ok(())
            }))
            .append_element_content_handler(element!("meta[charset]", |el| {
                if rewriting && opts.declare_utf8 {
                    el.set_attribute("charset", "utf-8")?;
                }
                Ok(())
            }))
            .append_element_content_handler(element!("meta[http-equiv][content]", |el| {
                let pragma = el.get_attribute("http-equiv").unwrap_or_default();
                if rewriting && opts.declare_utf8 && pragma.eq_ignore_ascii_case("content-type") {
                    el.set_attribute("content", "text/html; charset=utf-8")?;
                }
                Ok(())
            }))
            .append_element_content_handler(element!("meta[name][content]", |el| {
                let name = el.get_attribute("name").unwrap_or_default();
                let content = el
                    .get_attribute("content")
                    .unwrap_or_default()
                    .to_ascii_lowercase();
                if name.eq_ignore_ascii_case("robots") && content.contains("nofollow") {
                    pass.borrow_mut().page_nofollow = true;
                }
                Ok(())
            }))
            .append_element_content_handler(element!("a[href], area[href]", |el| link(
                el,
                "href",
                LinkKind::Page
            )))
            .append_element_content_handler(element!("link[href]", |el| {
                let kind = link_rel_kind(el.get_attribute("rel").as_deref().unwrap_or(""));
                link(el, "href", kind)
            }))
            .append_element_content_handler(element!("frame[src], iframe[src]", |el| link(
                el,
                "src",
                LinkKind::Page
            )))
            .append_element_content_handler(element!(
                "img[src], script[src], source[src], input[type=image i][src], embed[src]",
                |el| link(el, "src", LinkKind::Requisite)
            ))
            .append_element_content_handler(element!("video[poster]", |el| link(
                el,
                "poster",
                LinkKind::Requisite
            )))
            .append_element_content_handler(element!("img[srcset], source[srcset]", |el| srcset(
                el
            )))
            .append_element_content_handler(element!("[style]", |el| style_attr(el)))
            .append_element_content_handler(text!("style", |chunk| {
                style_text.borrow_mut().push_str(chunk.as_str());
                if !chunk.last_in_text_node() {
                    if rewriting {
                        chunk.remove();
                    }
                    return Ok(());
                }
                let css = std::mem::take(&mut *style_text.borrow_mut());
                let rewritten = inline_css(&css);
                if rewriting {
                    chunk.replace(&rewritten, ContentType::Html);
                }
                Ok(())
            }))
            .append_element_content_handler(text!("noscript", |chunk| {
                noscript_text.borrow_mut().push_str(chunk.as_str());
                if !chunk.last_in_text_node() {
                    if rewriting {
                        chunk.remove();
                    }
                    return Ok(());
                }
                let fragment = std::mem::take(&mut *noscript_text.borrow_mut());
                let base = pass.borrow().base.clone();
                let inner = extract(fragment.as_bytes(), base.as_ref().unwrap_or(page), opts)?;
                if rewriting {
                    let text = inner.rewritten.as_deref().map_or(fragment.as_str(), |r| {
                        std::str::from_utf8(r).unwrap_or(&fragment)
                    });
                    chunk.replace(text, ContentType::Html);
                }
                nested.borrow_mut().push(inner);
                Ok(())
            })),
        |chunk: &[u8]| {
            if !rewriting || rewrite_dropped {
                return;
            }
            if output.len() + chunk.len() > output_cap {
                rewrite_dropped = true;
                output = Vec::new();
            } else {
                output.extend_from_slice(chunk);
            }
        },
    );
    let parsed_before = budget::feed(rewriter, html)?;
    if let Some(at) = parsed_before
        && rewriting
        && !rewrite_dropped
    {
        // The rest of the page, unparsed, goes to the copy as it is.
        if output.len() + html.len() - at > output_cap {
            rewrite_dropped = true;
        } else {
            output.extend_from_slice(&html[at..]);
        }
    }

    let mut p = pass.into_inner();
    for inner in nested.into_inner() {
        p.links.kept.extend(inner.links);
        p.links.requisites.extend(inner.requisites);
        p.nofollow += inner.nofollow;
        p.not_web += inner.not_web;
    }
    if opts.respect_nofollow && p.page_nofollow {
        p.nofollow += p.links.kept.len();
        p.links.kept.clear();
    }
    let cut = Cut {
        decoded_before: None,
        parsed_before,
        links_dropped: p.links.dropped,
        rewrite_dropped,
    };
    Ok(Extracted {
        links: p.links.kept,
        requisites: p.links.requisites,
        nofollow: p.nofollow,
        not_web: p.not_web,
        rewritten: (rewriting && !rewrite_dropped).then_some(output),
        cut: cut.into_option(),
    })
}

/// Whether a `<link>` with this `rel` is a requisite (a stylesheet, an icon, a preloaded
/// resource) or a link to another document (`alternate`, `next`, `canonical`, ...).
fn link_rel_kind(rel: &str) -> LinkKind {
    let requisite = rel.split_ascii_whitespace().any(|t| {
        [
            "stylesheet",
            "icon",
            "apple-touch-icon",
            "apple-touch-icon-precomposed",
            "mask-icon",
            "preload",
            "modulepreload",
        ]
        .iter()
        .any(|r| t.eq_ignore_ascii_case(r))
    });
    if requisite {
        LinkKind::Requisite
    } else {
        LinkKind::Page
    }
}

/// A `srcset` value with each candidate's URL replaced by what `map` returns for it (kept
/// when `None`); `map` sees every URL. Candidates are `url [descriptor]`, separated by commas.
fn rewrite_srcset(srcset: &str, mut map: impl FnMut(&str) -> Option<String>) -> String {
    srcset
        .split(',')
        .map(|candidate| {
            let trimmed = candidate.trim();
            let (url, descriptor) = trimmed
                .split_once(char::is_whitespace)
                .map_or((trimmed, ""), |(u, d)| (u, d.trim()));
            if url.is_empty() {
                return candidate.to_owned();
            }
            let url = map(url).unwrap_or_else(|| url.to_owned());
            if descriptor.is_empty() {
                url
            } else {
                format!("{url} {descriptor}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn links(html: &str, nofollow: bool) -> Vec<String> {
        let page = Url::parse("http://h/dir/page").unwrap();
        let opts = ExtractOptions {
            budget: ParseBudget::new(1 << 20),
            respect_nofollow: nofollow,
            rewrite: None,
            query_encoding: None,
            declare_utf8: false,
        };
        extract(html.as_bytes(), &page, &opts)
            .unwrap()
            .links
            .iter()
            .map(Url::to_string)
            .collect()
    }

    #[test]
    fn only_link_elements_count() {
        let html = r#"<a href="a">x</a><area href="/b"><link rel=stylesheet href="c.css">
            <frame src="f"><iframe src="//other/i"></iframe><img src="img.png">
            <script>var u = "/from-script"; fetch("/api");</script>
            <a href="mailto:x@y">m</a><a href="javascript:void(0)">j</a><p>http://text/url</p>"#;
        assert_eq!(
            links(html, false),
            [
                "http://h/dir/a",
                "http://h/b",
                "http://h/dir/f",
                "http://other/i"
            ]
        );
    }

    fn requisites(html: &str) -> (Vec<String>, String) {
        let page = Url::parse("http://h/dir/page").unwrap();
        let local = |u: &Url, kind: LinkKind| {
            let tag = if kind == LinkKind::Requisite {
                "R"
            } else {
                "P"
            };
            Some(format!("{tag}:{}", u.path()))
        };
        let opts = ExtractOptions {
            budget: ParseBudget::new(1 << 20),
            respect_nofollow: false,
            rewrite: Some(&local),
            query_encoding: None,
            declare_utf8: false,
        };
        let found = extract(html.as_bytes(), &page, &opts).unwrap();
        let urls = found.requisites.iter().map(Url::to_string).collect();
        (urls, String::from_utf8(found.rewritten.unwrap()).unwrap())
    }

    #[test]
    fn requisites_are_found_and_rewritten_everywhere_a_page_uses_them() {
        let html = concat!(
            r#"<link rel="stylesheet" href="/s/site.css"><link rel="icon" href="/favicon.ico">"#,
            r#"<link rel="alternate" href="/feed.xml"><script src="app.js"></script>"#,
            r#"<img src="a.png" srcset="a-2x.png 2x, /img/a-3x.png 3x">"#,
            r#"<picture><source srcset="b.webp"></picture>"#,
            r#"<div style="background: url('bg.png')">x</div>"#,
            r#"<style>.x { background: url(/img/x.png) } @import "print.css";</style>"#,
            r#"<noscript><link rel="stylesheet" href="/s/noscript.css"><img src="n.gif"></noscript>"#,
        );
        let (urls, copy) = requisites(html);
        assert_eq!(
            urls,
            [
                "http://h/s/site.css",
                "http://h/favicon.ico",
                "http://h/dir/app.js",
                "http://h/dir/a.png",
                "http://h/dir/a-2x.png",
                "http://h/img/a-3x.png",
                "http://h/dir/b.webp",
                "http://h/dir/bg.png",
                "http://h/img/x.png",
                "http://h/dir/print.css",
                "http://h/s/noscript.css",
                "http://h/dir/n.gif",
            ]
        );
        for expected in [
            r#"href="R:/s/site.css""#,
            r#"href="P:/feed.xml""#,
            r#"src="R:/dir/app.js""#,
            r#"srcset="R:/dir/a-2x.png 2x, R:/img/a-3x.png 3x""#,
            r#"url('R:/dir/bg.png')"#,
            "url(R:/img/x.png)",
            r#"@import "R:/dir/print.css""#,
            r#"<noscript><link rel="stylesheet" href="R:/s/noscript.css"><img src="R:/dir/n.gif"></noscript>"#,
        ] {
            assert!(copy.contains(expected), "{expected} not in {copy}");
        }
    }

    /// The URL standard: a path is UTF-8 whatever the page's encoding, a query is encoded in
    /// the page's (characters it cannot write become `&#N;`).
    #[test]
    fn queries_are_encoded_in_the_pages_encoding() {
        let page = Url::parse("http://h/dir/page").unwrap();
        let extract_in = |encoding| {
            let opts = ExtractOptions {
                budget: ParseBudget::new(1 << 20),
                respect_nofollow: false,
                rewrite: None,
                query_encoding: encoding,
                declare_utf8: false,
            };
            let html = "<a href='/caf\u{e9}.html?q=\u{e9}\u{20ac}&k=\u{4e2d}'>x</a>";
            let found = extract(html.as_bytes(), &page, &opts).unwrap();
            found.links[0].to_string()
        };
        assert_eq!(
            extract_in(Some(encoding_rs::WINDOWS_1252)),
            "http://h/caf%C3%A9.html?q=%E9%80&k=&%2320013;"
        );
        assert_eq!(
            extract_in(Some(encoding_rs::SHIFT_JIS)),
            "http://h/caf%C3%A9.html?q=&%23233;&%238364;&k=%92%86"
        );
        assert_eq!(
            extract_in(None),
            "http://h/caf%C3%A9.html?q=%C3%A9%E2%82%AC&k=%E4%B8%AD"
        );
    }

    #[test]
    fn a_transcoded_copy_declares_utf8() {
        let page = Url::parse("http://h/p").unwrap();
        let local = |u: &Url, _: LinkKind| Some(u.path().to_owned());
        let opts = ExtractOptions {
            budget: ParseBudget::new(1 << 20),
            respect_nofollow: false,
            rewrite: Some(&local),
            query_encoding: Some(encoding_rs::WINDOWS_1252),
            declare_utf8: true,
        };
        let html = concat!(
            r#"<meta charset="iso-8859-1"><meta http-equiv="Content-Type" "#,
            r#"content="text/html; charset=iso-8859-1"><meta http-equiv=refresh content="5">"#
        );
        let out = extract(html.as_bytes(), &page, &opts).unwrap();
        assert_eq!(
            String::from_utf8(out.rewritten.unwrap()).unwrap(),
            concat!(
                r#"<meta charset="utf-8"><meta http-equiv="Content-Type" "#,
                r#"content="text/html; charset=utf-8"><meta http-equiv=refresh content="5">"#
            )
        );
    }

    #[test]
    fn base_href_changes_resolution() {
        let html = r#"<head><base href="http://h/other/"></head><a href="x">x</a>"#;
        assert_eq!(links(html, false), ["http://h/other/x"]);
    }

    #[test]
    fn nofollow_is_an_option() {
        let html = r#"<a rel="external nofollow" href="/n">n</a><a href="/f">f</a>"#;
        assert_eq!(links(html, false), ["http://h/n", "http://h/f"]);
        assert_eq!(links(html, true), ["http://h/f"]);
        let meta = r#"<meta name="ROBOTS" content="noindex, nofollow"><a href="/f">f</a>"#;
        assert!(links(meta, true).is_empty());
    }

    #[test]
    fn rewriting_points_links_at_local_copies() {
        let page = Url::parse("http://h/dir/page").unwrap();
        let local = |u: &Url, _: LinkKind| {
            (u.host_str() == Some("h")).then(|| crate::mirror::relative(&page, u))
        };
        let opts = ExtractOptions {
            budget: ParseBudget::new(1 << 20),
            respect_nofollow: false,
            rewrite: Some(&local),
            query_encoding: None,
            declare_utf8: false,
        };
        let html = r#"<base href="/dir/"><a href="x">x</a><a href="http://g/y">y</a><a href="mailto:m">m</a>"#;
        let out = extract(html.as_bytes(), &page, &opts).unwrap();
        let text = String::from_utf8(out.rewritten.unwrap()).unwrap();
        assert_eq!(
            text,
            r#"<base><a href="x.html">x</a><a href="http://g/y">y</a><a href="mailto:m">m</a>"#
        );
    }

    #[test]
    fn a_page_nested_past_the_budget_keeps_its_first_links_and_a_whole_copy() {
        let page = Url::parse("http://h/dir/page").unwrap();
        let mut html = String::from("<a href=\"first\">f</a>");
        html.push_str(&"<div>".repeat(200_000));
        html.push_str("<a href=\"last\">l</a>");
        let local =
            |u: &Url, _: LinkKind| Some(format!("local-{}", u.path().rsplit('/').next().unwrap()));
        let opts = ExtractOptions {
            budget: ParseBudget::new(1 << 20),
            respect_nofollow: false,
            rewrite: Some(&local),
            query_encoding: None,
            declare_utf8: false,
        };
        let found = extract(html.as_bytes(), &page, &opts).unwrap();
        assert_eq!(found.links, [Url::parse("http://h/dir/first").unwrap()]);
        let cut = found.cut.unwrap();
        assert!(
            cut.parsed_before.is_some() && !cut.rewrite_dropped,
            "{cut:?}"
        );
        // Rewritten up to where parsing stopped, as fetched after it.
        let copy = String::from_utf8(found.rewritten.unwrap()).unwrap();
        assert!(
            copy.starts_with("<a href=\"local-first\">"),
            "{}",
            &copy[..40]
        );
        assert!(copy.ends_with("<a href=\"last\">l</a>"));
        assert_eq!(copy.len(), html.len() + "local-".len());
    }
}
