//! Which URLs belong to the crawl at all.

use url::Url;

use crate::job::host_of;

/// How far from its seeds a crawl may wander.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Scope {
    /// Only the seeds' hosts (and ports).
    Host(Vec<String>),
    /// Any host under one of the seeds' registrable domains (`www.example.co.uk` and
    /// `shop.example.co.uk` are one site), decided by the public suffix list.
    Domain(Vec<String>),
    /// URLs whose canonical spelling starts with one of these prefixes.
    Prefix(Vec<String>),
}

/// Link patterns: `--accept-regex` (a link must match one, when any is given) and
/// `--reject-regex` (a link matching one is not followed), on canonical URLs.
#[derive(Clone, Debug, Default)]
pub(crate) struct Patterns {
    accept: Option<regex::RegexSet>,
    reject: Option<regex::RegexSet>,
}

impl Patterns {
    /// The patterns, or which one does not compile and why.
    pub(crate) fn new(accept: &[String], reject: &[String]) -> Result<Self, String> {
        let set = |flag: &str, patterns: &[String]| -> Result<Option<regex::RegexSet>, String> {
            if patterns.is_empty() {
                return Ok(None);
            }
            for p in patterns {
                regex::Regex::new(p).map_err(|e| format!("{flag} {p:?}: {e}"))?;
            }
            regex::RegexSet::new(patterns)
                .map(Some)
                .map_err(|e| format!("{flag}: {e}"))
        };
        Ok(Self {
            accept: set("--accept-regex", accept)?,
            reject: set("--reject-regex", reject)?,
        })
    }

    /// `None` when `url` may be followed, else why not.
    pub(crate) fn refuses(&self, url: &str) -> Option<String> {
        if let Some(accept) = &self.accept
            && !accept.is_match(url)
        {
            return Some("matches no --accept-regex".into());
        }
        let reject = self.reject.as_ref()?;
        let first = reject.matches(url).into_iter().next()?;
        Some(format!(
            "matches --reject-regex {:?}",
            reject.patterns()[first]
        ))
    }
}

/// The kind of scope the user asked for, before the seeds are known.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ScopeKind {
    /// Same host as a seed: its name, and its port when it is not the scheme's default
    /// (`http://h/` and `https://h/` are one host).
    Host,
    /// Same registrable domain as a seed.
    Domain,
    /// Under a seed's directory (`http://h/std/index.html`: `http://h/std/`), as `wget -np`,
    /// or under a `--prefix`.
    Prefix,
}

impl Scope {
    /// The scope of `kind` around `seeds`; `prefixes` replace the seeds as prefixes when given.
    pub(crate) fn new(kind: ScopeKind, seeds: &[Url], prefixes: &[Url]) -> Self {
        let mut keys: Vec<String> = match kind {
            ScopeKind::Host => seeds.iter().map(host_of).collect(),
            ScopeKind::Domain => seeds.iter().map(domain_key).collect(),
            ScopeKind::Prefix if prefixes.is_empty() => seeds.iter().map(directory_of).collect(),
            ScopeKind::Prefix => prefixes.iter().map(|u| u.to_string()).collect(),
        };
        keys.sort();
        keys.dedup();
        match kind {
            ScopeKind::Host => Self::Host(keys),
            ScopeKind::Domain => Self::Domain(keys),
            ScopeKind::Prefix => Self::Prefix(keys),
        }
    }

    /// The option value naming this kind of scope.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::Host(_) => "host",
            Self::Domain(_) => "domain",
            Self::Prefix(_) => "prefix",
        }
    }

    /// Whether `url` (canonical) is inside the crawl.
    pub(crate) fn contains(&self, url: &Url) -> bool {
        match self {
            Self::Host(hosts) => hosts.contains(&host_of(url)),
            Self::Domain(domains) => domains.contains(&domain_key(url)),
            Self::Prefix(prefixes) => {
                let s = url.as_str();
                prefixes.iter().any(|p| s.starts_with(p.as_str()))
            }
        }
    }
}

/// A seed's directory, as `wget --no-parent` takes it: the URL up to the last `/` of its path
/// (`http://h/std/index.html` is under `http://h/std/`).
fn directory_of(seed: &Url) -> String {
    let mut dir = seed.clone();
    dir.set_query(None);
    dir.set_fragment(None);
    let path = dir.path();
    let cut = path.rfind('/').map_or(1, |i| i + 1);
    let path = path[..cut].to_owned();
    dir.set_path(&path);
    dir.to_string()
}

/// The registrable domain (eTLD+1); hosts without one (IP addresses, `localhost`) stand for
/// themselves.
fn domain_key(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.host() {
        Some(url::Host::Domain(_)) => psl::domain_str(host).unwrap_or(host).to_owned(),
        _ => host.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    /// The crawl's one host: the name, and a port other than the scheme's default.
    #[test]
    fn host_scope_is_the_crawls_host() {
        let s = Scope::new(ScopeKind::Host, &[u("http://example.com/")], &[]);
        assert!(s.contains(&u("http://example.com/x")));
        assert!(s.contains(&u("https://example.com/x")));
        assert!(!s.contains(&u("http://example.com:8080/x")));
        assert!(!s.contains(&u("http://www.example.com/x")));
    }

    #[test]
    fn domain_scope_uses_the_public_suffix_list() {
        let s = Scope::new(ScopeKind::Domain, &[u("https://www.example.co.uk/")], &[]);
        assert!(s.contains(&u("http://shop.example.co.uk/x")));
        assert!(!s.contains(&u("http://other.co.uk/")));
        let ip = Scope::new(ScopeKind::Domain, &[u("http://127.0.0.1:9/")], &[]);
        assert!(ip.contains(&u("http://127.0.0.1:10/")));
        assert!(!ip.contains(&u("http://127.0.0.2/")));
    }

    #[test]
    fn patterns_accept_and_reject() {
        let none = Patterns::new(&[], &[]).unwrap();
        assert_eq!(none.refuses("http://h/x"), None);
        let p = Patterns::new(&["/docs/".into()], &["\\.pdf$".into(), "print=".into()]).unwrap();
        assert_eq!(p.refuses("http://h/docs/a"), None);
        assert_eq!(
            p.refuses("http://h/blog/a").as_deref(),
            Some("matches no --accept-regex")
        );
        assert_eq!(
            p.refuses("http://h/docs/a.pdf").as_deref(),
            Some("matches --reject-regex \"\\\\.pdf$\"")
        );
        assert!(
            Patterns::new(&["(".into()], &[])
                .unwrap_err()
                .contains("--accept-regex")
        );
    }

    /// `--scope prefix` from a page stays in that page's directory, as `wget --no-parent` does;
    /// it once kept to the seed's own URL, so a crawl from `/std/index.html` stopped there.
    #[test]
    fn a_prefix_from_a_page_is_its_directory() {
        let s = Scope::new(ScopeKind::Prefix, &[u("http://h/std/index.html?x=1")], &[]);
        assert!(s.contains(&u("http://h/std/vec/struct.Vec.html")));
        assert!(s.contains(&u("http://h/std/index.html")));
        assert!(!s.contains(&u("http://h/core/index.html")));
        assert!(!s.contains(&u("http://h/stdlib/")));
    }

    #[test]
    fn prefix_scope() {
        let s = Scope::new(ScopeKind::Prefix, &[u("http://h/docs/")], &[]);
        assert!(s.contains(&u("http://h/docs/a")));
        assert!(!s.contains(&u("http://h/blog/")));
        let p = Scope::new(ScopeKind::Prefix, &[u("http://h/docs/")], &[u("http://h/")]);
        assert!(p.contains(&u("http://h/blog/")));
    }
}
