//! The one place where a discovered URL becomes the string the done set remembers.
//!
//! Every URL passes through [`Canonicalizer::canonicalize`] before scope rules, trap rules and the
//! dedup filter see it, so two spellings of one page are one entry. The WHATWG parser in `url`
//! already lower-cases scheme and host, drops default ports and resolves dot segments; this
//! seam adds what a crawler needs on top. It is deliberately small: the workspace's own
//! canonicalization crate replaces it as soon as that crate lands.

use url::Url;

/// Query parameters that identify a campaign or a session, never a page.
const IGNORED_PARAMS: &[&str] = &[
    "utm_source",
    "utm_medium",
    "utm_campaign",
    "utm_term",
    "utm_content",
    "gclid",
    "fbclid",
    "sessionid",
    "jsessionid",
    "phpsessid",
    "sid",
];

/// Turns URLs into their canonical spelling.
#[derive(Clone, Debug, Default)]
pub(crate) struct Canonicalizer;

impl Canonicalizer {
    /// The canonical form of `url`: no fragment, no tracking or session parameters, the
    /// remaining query parameters sorted (stably, so repeated names keep their order), and no
    /// empty `?`.
    pub(crate) fn canonicalize(&self, mut url: Url) -> Url {
        url.set_fragment(None);
        if let Some(query) = url.query() {
            let mut pairs: Vec<(&str, &str)> = query
                .split('&')
                .filter(|p| !p.is_empty())
                .map(|p| p.split_once('=').unwrap_or((p, "")))
                .filter(|(name, _)| !IGNORED_PARAMS.iter().any(|i| name.eq_ignore_ascii_case(i)))
                .collect();
            pairs.sort_by(|a, b| a.0.cmp(b.0));
            let joined = pairs
                .iter()
                .map(|(k, v)| {
                    if v.is_empty() {
                        (*k).to_owned()
                    } else {
                        format!("{k}={v}")
                    }
                })
                .collect::<Vec<_>>()
                .join("&");
            url.set_query((!joined.is_empty()).then_some(joined.as_str()));
        }
        url
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(s: &str) -> String {
        Canonicalizer
            .canonicalize(Url::parse(s).unwrap())
            .to_string()
    }

    #[test]
    fn spellings_of_one_page_agree() {
        let want = "http://example.com/a?x=1&y=2";
        for s in [
            "http://example.com/a?x=1&y=2",
            "HTTP://EXAMPLE.com:80/a?y=2&x=1",
            "http://example.com/b/../a?x=1&y=2#top",
            "http://example.com/a?utm_source=news&x=1&y=2",
            "http://example.com/a?x=1&&y=2&sessionid=abc",
        ] {
            assert_eq!(canon(s), want, "{s}");
        }
    }

    #[test]
    fn empty_query_is_dropped() {
        assert_eq!(
            canon("http://example.com/?utm_medium=x"),
            "http://example.com/"
        );
        assert_eq!(canon("http://example.com/?"), "http://example.com/");
    }

    proptest::proptest! {
        #[test]
        fn canonicalization_is_idempotent(path in "[a-z/.]{0,20}", q in "[a-z=&]{0,20}") {
            let once = canon(&format!("http://h.example/{path}?{q}#f"));
            proptest::prop_assert_eq!(canon(&once), once.clone());
        }
    }
}
