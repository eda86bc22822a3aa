//! Jobs, the unit of the run queue of document 002, and the one definition of a host.
//!
//! A job is a canonical URL and what the crawl knows of it (depth, redirects, kind, and the
//! validators of a revisit). It knows nothing of where the run queue lives: a backend keeps
//! whatever it needs to finish a job (a Redis claim, a journal position) on its side.

use std::sync::Arc;

use url::Url;

use crate::fetch::Validators;

/// What a queued URL is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum JobKind {
    /// A page: fetched, stored, its links followed.
    Page,
    /// An XML sitemap: fetched, its entries admitted as pages (or sitemaps, for an index).
    Sitemap,
    /// What a page needs to be shown (image, script, stylesheet, font, icon): fetched whatever
    /// its type and stored in the mirror; a stylesheet's own references are requisites too.
    Requisite,
}

impl JobKind {
    pub(crate) fn code(self) -> char {
        match self {
            Self::Page => 'P',
            Self::Sitemap => 'S',
            Self::Requisite => 'R',
        }
    }

    pub(crate) fn from_code(c: &str) -> Option<Self> {
        match c {
            "P" => Some(Self::Page),
            "S" => Some(Self::Sitemap),
            "R" => Some(Self::Requisite),
            _ => None,
        }
    }
}

/// One admitted URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Job {
    /// Canonical URL.
    pub(crate) url: Arc<str>,
    /// Link distance from a seed.
    pub(crate) depth: u32,
    /// Redirects followed to reach it.
    pub(crate) hops: u32,
    pub(crate) kind: JobKind,
    /// What an earlier fetch stored about the page, for a conditional GET (`--every`).
    pub(crate) revisit: Option<Validators>,
}

impl Job {
    /// A job first seen now.
    pub(crate) fn new(url: &str, depth: u32, hops: u32, kind: JobKind) -> Self {
        Self {
            url: url.into(),
            depth,
            hops,
            kind,
            revisit: None,
        }
    }

    /// The host of the job's URL ([`host_of`]); empty for a URL that does not parse (no
    /// canonical URL gets here).
    pub(crate) fn host(&self) -> String {
        Url::parse(&self.url)
            .map(|u| host_of(&u))
            .unwrap_or_default()
    }
}

/// The crawl's one definition of a host, for politeness (one worker, `--per-host`, the delay),
/// for host budgets and for the shared run queue: the host name, with the port only when it
/// is not the scheme's default. So `http://a/` and `https://a/` are one host (one server to be
/// polite to), and `http://a:8080/` is another. robots.txt is kept per origin, as RFC 9309 says.
pub(crate) fn host_of(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_is_its_name_and_any_port_that_is_not_the_default() {
        let host = |u: &str| host_of(&Url::parse(u).unwrap());
        assert_eq!(host("http://a.example/x"), "a.example");
        assert_eq!(host("https://a.example/y"), "a.example");
        assert_eq!(host("http://a.example:80/"), "a.example");
        assert_eq!(host("https://a.example:443/"), "a.example");
        assert_eq!(host("http://a.example:8080/"), "a.example:8080");
        assert_eq!(host("https://a.example:80/"), "a.example:80");
        assert_eq!(host("http://127.0.0.1:3000/"), "127.0.0.1:3000");
        assert_eq!(host("http://[::1]:3000/"), "[::1]:3000");
    }
}
