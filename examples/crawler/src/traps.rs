//! Crawler-trap rules: limits that stop a crawl from following endless generated URLs
//! (calendars, session-id loops, ever-deeper relative paths, growing queries), by what the URLs
//! look like rather than by how far they are from a seed.
//!
//! Document 002 skips a URL whose length or number of `/` exceeds a threshold. We add:
//!
//! * **repeated segments**: a path in which one segment occurs more than
//!   `--max-segment-repeats` times (`/a/b/a/b/a/b/a/`) is a relative link resolving against
//!   itself, not a page;
//! * **a budget per URL template** ([`crate::template`]): at most `--template-budget` URLs of
//!   one template admitted from pages of that same template (a calendar's next month, a tree's
//!   next level, a query grown by one more character or parameter); links from pages of other
//!   templates (indexes, lists, sitemaps) are never counted;
//! * **depth** (`--max-depth`), a backstop for chains that change template at every step, set
//!   far beyond real navigation chains (a manual's prev/next links run hundreds deep);
//! * **a per-host budget** (`--host-budget`).
//!
//! Every rule is cheap and decided before the URL reaches the done set, so a trap costs neither
//! a fetch nor a filter slot; the two budgets are checked where their counts live, at admission.

use url::Url;

use crate::skip::SkipReason;

/// The limits, all inclusive.
#[derive(Clone, Debug)]
pub(crate) struct TrapRules {
    /// Longest URL (in bytes of its canonical spelling) that is followed.
    pub(crate) max_url_len: usize,
    /// Most `/` characters a followed URL may contain, `scheme://` included.
    pub(crate) max_slashes: usize,
    /// Most occurrences of one segment in a followed URL's path.
    pub(crate) max_segment_repeats: usize,
    /// Deepest link distance from a seed that is fetched (seeds are at depth 0).
    pub(crate) max_depth: u32,
    /// Most URLs admitted per host.
    pub(crate) host_budget: u64,
    /// Most URLs of one template admitted from pages of the same template.
    pub(crate) template_budget: u64,
}

impl TrapRules {
    /// Checks the URL-intrinsic rules and the depth; the budgets are checked where their
    /// counts live, at admission.
    pub(crate) fn check(&self, url: &Url, depth: u32) -> Result<(), SkipReason> {
        let s = url.as_str();
        if s.len() > self.max_url_len {
            return Err(SkipReason::UrlTooLong);
        }
        if s.bytes().filter(|&b| b == b'/').count() > self.max_slashes {
            return Err(SkipReason::TooManySlashes);
        }
        if most_repeated_segment(url.path()) > self.max_segment_repeats {
            return Err(SkipReason::RepeatedSegment);
        }
        if depth > self.max_depth {
            return Err(SkipReason::TooDeep);
        }
        Ok(())
    }
}

/// How often the most frequent non-empty segment of `path` occurs in it.
fn most_repeated_segment(path: &str) -> usize {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    segments
        .iter()
        .map(|s| segments.iter().filter(|t| *t == s).count())
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> TrapRules {
        TrapRules {
            max_url_len: 40,
            max_slashes: 8,
            max_segment_repeats: 2,
            max_depth: 3,
            host_budget: 10,
            template_budget: 10,
        }
    }

    #[test]
    fn each_rule_fires_alone() {
        let r = rules();
        let ok = Url::parse("http://h/a/b").unwrap();
        assert_eq!(r.check(&ok, 3), Ok(()));
        assert_eq!(r.check(&ok, 4), Err(SkipReason::TooDeep));
        let deep = Url::parse("http://h/a/b/c/d/e/f/g").unwrap();
        assert_eq!(r.check(&deep, 0), Err(SkipReason::TooManySlashes));
        let long = Url::parse(&format!("http://h/?q={}", "x".repeat(40))).unwrap();
        assert_eq!(r.check(&long, 0), Err(SkipReason::UrlTooLong));
        let looping = Url::parse("http://h/a/b/a/b/a").unwrap();
        assert_eq!(r.check(&looping, 0), Err(SkipReason::RepeatedSegment));
        assert_eq!(r.check(&Url::parse("http://h/a/b/a/").unwrap(), 0), Ok(()));
    }

    #[test]
    fn segments_are_counted_wherever_they_repeat() {
        assert_eq!(most_repeated_segment("/"), 0);
        assert_eq!(most_repeated_segment("/a//b/"), 1);
        assert_eq!(most_repeated_segment("/x/a/y/a/z/a"), 3);
    }
}
