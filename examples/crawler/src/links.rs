//! Link extraction and mirror rewriting in one streaming pass over a page (`lol_html`).
//!
//! Links come only from the elements and attributes that are links: `a`, `area` and `link`
//! `href`, `frame` and `iframe` `src`. Text that merely looks like a URL (inside `<script>`,
//! JSON, templates) is never followed; that is the mistake that makes wget and httrack request
//! thousands of non-pages. `<base href>` changes how relative links resolve, and
//! `rel="nofollow"` (on the link or in `<meta name="robots">`) is honoured when asked.
//!
//! When a mirror is written, the same pass rewrites each followed link to the relative path of
//! its local copy (document 002's rewriting), other web links to absolute URLs, and drops
//! `<base href>` so the relative paths resolve against the local file.

use std::cell::RefCell;

use lol_html::{HtmlRewriter, Settings, element};
use url::Url;

use crate::budget::{self, Cut, Links, ParseBudget};

/// Maps an absolute link to the relative path of its mirrored copy, `None` when not mirrored.
pub(crate) type Rewrite<'a> = &'a dyn Fn(&Url) -> Option<String>;

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
}

/// The result of one pass.
#[derive(Debug, Default)]
pub(crate) struct Extracted {
    /// Absolute http(s) links in document order (duplicates included: deduplication is the
    /// done set's job).
    pub(crate) links: Vec<Url>,
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

    let link = |el: &mut lol_html::html_content::Element<'_, '_>, attr: &str| {
        let Some(raw) = el.get_attribute(attr) else {
            return Ok(());
        };
        let mut p = pass.borrow_mut();
        let resolved = p.base.as_ref().unwrap_or(page).join(raw.trim());
        let Some(target) = resolved
            .ok()
            .filter(|t| matches!(t.scheme(), "http" | "https"))
        else {
            p.not_web += 1;
            return Ok(());
        };
        let nofollow = opts.respect_nofollow
            && el.get_attribute("rel").is_some_and(|rel| {
                rel.split_ascii_whitespace()
                    .any(|t| t.eq_ignore_ascii_case("nofollow"))
            });
        if let Some(rewrite) = opts.rewrite {
            let new = rewrite(&target).unwrap_or_else(|| target.to_string());
            el.set_attribute(attr, &new)?;
        }
        if nofollow {
            p.nofollow += 1;
        } else {
            p.links.push(target);
        }
        Ok(())
    };

    let rewriter = HtmlRewriter::new(
        Settings::new()
            .with_memory_settings(opts.budget.memory_settings())
            .append_element_content_handler(element!("base[href]", |el| {
                let mut p = pass.borrow_mut();
                // Only the first <base> counts (HTML standard).
                if p.base.is_none() {
                    let href = el.get_attribute("href").unwrap_or_default();
                    p.base = Some(page.join(href.trim()).unwrap_or_else(|_| page.clone()));
                }
                if rewriting {
                    el.remove_attribute("href");
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
            .append_element_content_handler(element!("a[href], area[href], link[href]", |el| link(
                el, "href"
            )))
            .append_element_content_handler(element!("frame[src], iframe[src]", |el| link(
                el, "src"
            ))),
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
    if opts.respect_nofollow && p.page_nofollow {
        p.nofollow += p.links.kept.len();
        p.links.kept.clear();
    }
    let cut = Cut {
        parsed_before,
        links_dropped: p.links.dropped,
        rewrite_dropped,
    };
    Ok(Extracted {
        links: p.links.kept,
        nofollow: p.nofollow,
        not_web: p.not_web,
        rewritten: (rewriting && !rewrite_dropped).then_some(output),
        cut: cut.into_option(),
    })
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
                "http://h/dir/c.css",
                "http://h/dir/f",
                "http://other/i"
            ]
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
        let local =
            |u: &Url| (u.host_str() == Some("h")).then(|| crate::mirror::relative(&page, u));
        let opts = ExtractOptions {
            budget: ParseBudget::new(1 << 20),
            respect_nofollow: false,
            rewrite: Some(&local),
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
        let local = |u: &Url| Some(format!("local-{}", u.path().rsplit('/').next().unwrap()));
        let opts = ExtractOptions {
            budget: ParseBudget::new(1 << 20),
            respect_nofollow: false,
            rewrite: Some(&local),
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
