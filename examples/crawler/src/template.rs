//! URL templates: what the pages one piece of server code generates have in common, and how a
//! link continues the template of the page it was found on.
//!
//! A template is built from the similarity crate's features (`url_dedup_similarity`): the site
//! (`Site`), the path with digit runs written `{int}` (`PathTemplate`: `/cal/2026/5` is
//! `/cal/{int}/{int}`), and the sorted query-parameter names (`QueryNames`: `?month&year`). On
//! top of those, a run of one repeated path segment is written once with a `+`
//! (`/tree/{int}/{int}/{int}` is `/tree/{int}+`, and so is `/tree/{int}/{int}`), so every
//! level of an ever-deeper tree of numbered directories has one template.
//!
//! Traps generate their URLs from their own pages: each calendar page links to the next month,
//! each search result page to a longer query. A link **continues its page's template** when it
//! has the same template ([`Lineage::Template`]), or the same site and path template and a
//! longer query ([`Lineage::QueryGrowth`]: facets added one by one, a query value growing). The
//! crawl budgets the URLs admitted that way per template ([`crate::traps`]). Links from a page
//! of another template (an index, a list, a sitemap) are never counted, so a catalogue of a
//! million `/item/{int}` pages linked from its list pages is not held back.

use url_dedup_similarity::builtin::{PathTemplate, QueryNames, Site};
use url_dedup_similarity::{Feature, UrlParts};

/// The template of one URL, in parts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Template {
    site: String,
    path: String,
    names: String,
}

impl Template {
    /// The template of the canonical URL `url`.
    pub(crate) fn of(url: &str) -> Self {
        let url = tokens_abstracted(url);
        let parts = UrlParts::parse(&url);
        let mut buf = Vec::new();
        let mut value = |feature: &dyn Feature| {
            buf.clear();
            feature.write_value(&parts, &mut buf);
            String::from_utf8_lossy(&buf).into_owned()
        };
        Self {
            site: value(&Site),
            path: collapse_runs(&value(&PathTemplate)),
            names: value(&QueryNames),
        }
    }

    /// The budget key of URLs continuing this template through `lineage`:
    /// `site/path?names`, or `site/path?+` for query growth.
    pub(crate) fn key(&self, lineage: Lineage) -> String {
        let names = match lineage {
            Lineage::Template => &self.names,
            Lineage::QueryGrowth => "?+",
        };
        format!("{}{}{names}", self.site, self.path)
    }
}

/// How a link continues the template of the page it was found on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lineage {
    /// The same template.
    Template,
    /// The same site and path template, and a longer query.
    QueryGrowth,
}

impl Lineage {
    /// How `link` continues the template of `page` (both canonical), if it does.
    pub(crate) fn of(page: &str, link: &str) -> Option<Self> {
        let (from, to) = (Template::of(page), Template::of(link));
        if from == to {
            Some(Self::Template)
        } else if from.site == to.site && from.path == to.path && query_len(link) > query_len(page)
        {
            Some(Self::QueryGrowth)
        } else {
            None
        }
    }

    /// A one-letter code, for the journal.
    pub(crate) fn code(lineage: Option<Self>) -> char {
        match lineage {
            None => '-',
            Some(Self::Template) => 't',
            Some(Self::QueryGrowth) => 'q',
        }
    }

    /// The inverse of [`code`](Self::code); `None` for a letter that is no code.
    pub(crate) fn from_code(code: &str) -> Option<Option<Self>> {
        match code {
            "-" => Some(None),
            "t" => Some(Some(Self::Template)),
            "q" => Some(Some(Self::QueryGrowth)),
            _ => None,
        }
    }
}

/// The budget key of `url` admitted through `lineage`.
pub(crate) fn key(url: &str, lineage: Lineage) -> String {
    Template::of(url).key(lineage)
}

/// `url` with each path segment that is a session token written `{token}`: a token is new on
/// every page of a session-in-path trap (`/sess/S3fa9c0d2e1b47a68/page`), so without this every
/// page would be a template of its own and no budget would stop it.
fn tokens_abstracted(url: &str) -> std::borrow::Cow<'_, str> {
    let Some(path_start) = url
        .find("://")
        .and_then(|i| url[i + 3..].find('/').map(|j| i + 3 + j))
    else {
        return url.into();
    };
    let path_end = url[path_start..]
        .find(['?', '#'])
        .map_or(url.len(), |i| path_start + i);
    let path = &url[path_start..path_end];
    if !path.split('/').any(is_token) {
        return url.into();
    }
    let abstracted: Vec<&str> = path
        .split('/')
        .map(|s| if is_token(s) { "{token}" } else { s })
        .collect();
    format!(
        "{}{}{}",
        &url[..path_start],
        abstracted.join("/"),
        &url[path_end..]
    )
    .into()
}

/// Whether a path segment looks like a session token, not a name a person chose: 16 or more
/// hex digits mixing letters and digits (after at most two letters, as in `S3fa9...`; a token
/// of digits alone is a number, which templates abstract already), a UUID, or 22 or more characters
/// of base64 mixing upper case, lower case and digits. Slugs (`install-guide-2024`), dates and
/// plain numbers are not tokens.
fn is_token(segment: &str) -> bool {
    let b = segment.as_bytes();
    let count = |f: fn(&u8) -> bool| b.iter().filter(|c| f(c)).count();
    let hex_after = |prefix: usize| {
        let rest = &b[prefix.min(b.len())..];
        b[..prefix.min(b.len())].iter().all(u8::is_ascii_alphabetic)
            && rest.len() >= 16
            && rest.iter().all(u8::is_ascii_hexdigit)
            && rest.iter().any(u8::is_ascii_digit)
            && rest.iter().any(u8::is_ascii_alphabetic)
    };
    let hex = (0..=2).any(hex_after);
    let uuid = b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        });
    let base64 = b.len() >= 22
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_'))
        && count(u8::is_ascii_uppercase) >= 2
        && count(u8::is_ascii_lowercase) >= 2
        && count(u8::is_ascii_digit) >= 2;
    hex || uuid || base64
}

fn query_len(url: &str) -> usize {
    UrlParts::parse(url).query().map_or(0, str::len)
}

/// `path` with each run of two or more equal segments written once, followed by `+`.
fn collapse_runs(path: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut last: Option<&str> = None;
    for segment in path.split('/') {
        if last == Some(segment) {
            if let Some(written) = out.last_mut()
                && !written.ends_with('+')
            {
                written.push('+');
            }
            continue;
        }
        out.push(segment.to_owned());
        last = Some(segment);
    }
    out.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key_of(url: &str) -> String {
        key(url, Lineage::Template)
    }

    #[test]
    fn templates_abstract_numbers_runs_and_query_values() {
        assert_eq!(key_of("http://h:8/cal/2026/5"), "h:8/cal/{int}+");
        assert_eq!(
            key_of("http://h:8/cal/2026/5/day-7"),
            "h:8/cal/{int}+/day-{int}"
        );
        assert_eq!(key_of("http://h/tree/0/1/2/"), "h/tree/{int}+");
        assert_eq!(key_of("http://h/tree/0/"), "h/tree/{int}");
        assert_eq!(
            key_of("http://h/list?sort=a&page=2"),
            "h/list?page&sort",
            "values do not count, names do"
        );
        assert_eq!(key_of("http://h/a/a/b/b/b/c"), "h/a+/b+/c");
        assert_eq!(key("http://h/f?a=1", Lineage::QueryGrowth), "h/f?+");
    }

    #[test]
    fn a_link_continues_its_page_by_template_or_by_a_growing_query() {
        let lineage = |page: &str, link: &str| Lineage::of(page, link);
        assert_eq!(
            lineage("http://h/cal/2026/5", "http://h/cal/2026/6"),
            Some(Lineage::Template)
        );
        assert_eq!(
            lineage("http://h/tree/0/1/", "http://h/tree/0/1/2/"),
            Some(Lineage::Template)
        );
        assert_eq!(
            lineage("http://h/f?a=1", "http://h/f?a=1&b=2"),
            Some(Lineage::QueryGrowth)
        );
        assert_eq!(
            lineage("http://h/s?q=ab", "http://h/s?q=abc"),
            Some(Lineage::Template)
        );
        // An index and its pages, a list and its items: other templates.
        assert_eq!(lineage("http://h/docs/", "http://h/docs/setup.html"), None);
        assert_eq!(lineage("http://h/list?page=2", "http://h/item/7"), None);
        assert_eq!(lineage("http://h/f?a=1&b=2", "http://h/f?a=1"), None);
        assert_eq!(lineage("http://h/a", "http://g/a"), None);
    }

    #[test]
    fn session_tokens_in_paths_are_one_template() {
        let a = key_of("http://h/sess/S3fa9c0d2e1b47a68/page");
        let b = key_of("http://h/sess/S9c0d2e1b47a683fa/page");
        assert_eq!(a, "h/sess/{token}/page");
        assert_eq!(a, b);
        assert_eq!(
            key_of("http://h/u/123e4567-e89b-12d3-a456-426614174000/x"),
            "h/u/{token}/x"
        );
        assert_eq!(
            key_of("http://h/s/Zx9Kq2LmP0aB7cD4eF6gH8iJ/x"),
            "h/s/{token}/x"
        );
        assert_eq!(
            Lineage::of(
                "http://h/sess/S3fa9c0d2e1b47a68/page",
                "http://h/sess/Sb47a683fa9c0d2e1/page"
            ),
            Some(Lineage::Template)
        );
        // A token whose hex digits are nearly all decimal is one too.
        assert_eq!(key_of("http://h/sess/S538454127b096493/page"), a);
        // Names people chose stay themselves.
        for name in [
            "install-guide-2024",
            "20260115",
            "deadbeef",
            "README",
            "a1b2c3",
        ] {
            assert!(!is_token(name), "{name}");
        }
    }

    #[test]
    fn codes_round_trip() {
        for l in [None, Some(Lineage::Template), Some(Lineage::QueryGrowth)] {
            assert_eq!(Lineage::from_code(&Lineage::code(l).to_string()), Some(l));
        }
        assert_eq!(Lineage::from_code("x"), None);
    }
}
