//! Crawler-trap rules: limits that stop a crawl from following endless generated URLs
//! (calendars, session-id loops, ever-deeper relative paths).
//!
//! Document 002 skips a URL whose length or number of `/` exceeds a threshold; we add a depth
//! limit and a per-host page budget. Every rule is cheap and decided before the URL reaches the
//! done set, so a trap costs neither a fetch nor a filter slot.

use url::Url;

use crate::skip::SkipReason;

/// The limits, all inclusive.
#[derive(Clone, Debug)]
pub(crate) struct TrapRules {
    /// Longest URL (in bytes of its canonical spelling) that is followed.
    pub(crate) max_url_len: usize,
    /// Most `/` characters a followed URL may contain, `scheme://` included.
    pub(crate) max_slashes: usize,
    /// Deepest link distance from a seed that is fetched (seeds are at depth 0).
    pub(crate) max_depth: u32,
    /// Most URLs admitted per host.
    pub(crate) host_budget: u64,
}

impl TrapRules {
    /// Checks the URL-intrinsic rules and the depth; the host budget is checked where the
    /// per-host counts live, at admission.
    pub(crate) fn check(&self, url: &Url, depth: u32) -> Result<(), SkipReason> {
        let s = url.as_str();
        if s.len() > self.max_url_len {
            return Err(SkipReason::UrlTooLong);
        }
        if s.bytes().filter(|&b| b == b'/').count() > self.max_slashes {
            return Err(SkipReason::TooManySlashes);
        }
        if depth > self.max_depth {
            return Err(SkipReason::TooDeep);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> TrapRules {
        TrapRules {
            max_url_len: 40,
            max_slashes: 6,
            max_depth: 3,
            host_budget: 10,
        }
    }

    #[test]
    fn each_rule_fires_alone() {
        let r = rules();
        let ok = Url::parse("http://h/a/b").unwrap();
        assert_eq!(r.check(&ok, 3), Ok(()));
        assert_eq!(r.check(&ok, 4), Err(SkipReason::TooDeep));
        let deep = Url::parse("http://h/a/b/c/d/e").unwrap();
        assert_eq!(r.check(&deep, 0), Err(SkipReason::TooManySlashes));
        let long = Url::parse(&format!("http://h/?q={}", "x".repeat(40))).unwrap();
        assert_eq!(r.check(&long, 0), Err(SkipReason::UrlTooLong));
    }
}
