//! The one place where a discovered URL becomes the string the done set remembers.
//!
//! Every URL passes through [`Canonicalizer::canonicalize`] before scope rules, trap rules and
//! the dedup filter see it, so two spellings of one page are one entry. The work is done by the
//! workspace's `url_dedup_canon::Canonicalizer` with its default crawler policy (RFC 3986
//! normalization; fragments, tracking and session parameters removed; query parameters sorted;
//! no `www.` or scheme folding, so a canonical URL is always one the site serves). This module
//! adapts it to parsed URLs, maps its errors to skip reasons, and drops user information
//! (`http://user:password@host/`): a password does not belong in a WARC record's target URI or
//! the done set, and the same page with and without it is one page (`--keep-userinfo` keeps
//! it, and the fetch then sends it as an `Authorization` header the WARC records).

use std::borrow::Cow;

use url::Url;
use url_dedup_canon::CanonError;

use crate::skip::SkipReason;

/// Turns URLs into their canonical spelling.
#[derive(Clone, Debug, Default)]
pub(crate) struct Canonicalizer {
    inner: url_dedup_canon::Canonicalizer,
    /// Keep `user:password@` (`--keep-userinfo`).
    keep_userinfo: bool,
}

impl Canonicalizer {
    /// A canonicalizer that keeps user information in URLs.
    pub(crate) fn keeping_userinfo(keep: bool) -> Self {
        Self {
            keep_userinfo: keep,
            ..Self::default()
        }
    }

    /// The canonical form of `url`, or why it has none.
    pub(crate) fn canonicalize(&self, url: &Url) -> Result<Url, SkipReason> {
        let mut url = match self.inner.canonicalize(url.as_str()) {
            Ok(Cow::Borrowed(_)) => url.clone(),
            Ok(Cow::Owned(s)) => Url::parse(&s).map_err(|_| SkipReason::BadUrl)?,
            Err(CanonError::TooLong { .. }) => return Err(SkipReason::UrlTooLong),
            Err(_) => return Err(SkipReason::BadUrl),
        };
        if !self.keep_userinfo && (!url.username().is_empty() || url.password().is_some()) {
            // Both succeed on an http(s) URL, the only kind the canonicalizer accepts.
            let _ = url.set_username("");
            let _ = url.set_password(None);
        }
        Ok(url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(s: &str) -> String {
        Canonicalizer::default()
            .canonicalize(&Url::parse(s).unwrap())
            .unwrap()
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
            "http://example.com/a?x=1&y=2&sessionid=abc",
        ] {
            assert_eq!(canon(s), want, "{s}");
        }
    }

    #[test]
    fn user_information_is_dropped_unless_kept() {
        assert_eq!(
            canon("http://user:pw@example.com/x"),
            "http://example.com/x"
        );
        assert_eq!(canon("http://user@example.com/x"), "http://example.com/x");
        let keep = Canonicalizer::keeping_userinfo(true);
        let url = Url::parse("http://user:pw@example.com/x").unwrap();
        assert_eq!(
            keep.canonicalize(&url).unwrap().as_str(),
            "http://user:pw@example.com/x"
        );
    }

    #[test]
    fn overlong_urls_are_trap_skips() {
        let long = Url::parse(&format!("http://example.com/{}", "a".repeat(9000))).unwrap();
        assert_eq!(
            Canonicalizer::default().canonicalize(&long),
            Err(SkipReason::UrlTooLong)
        );
    }

    proptest::proptest! {
        #[test]
        fn canonicalization_is_idempotent(path in "[a-z/.0-9%A-F]{0,20}", q in "[a-z=&]{0,20}") {
            let url = Url::parse(&format!("http://h.example/{path}?{q}#f")).unwrap();
            let once = Canonicalizer::default().canonicalize(&url).unwrap();
            proptest::prop_assert_eq!(canon(once.as_str()), once.to_string());
        }
    }
}
