//! One rule: what it rewrites, the evidence for it, and whether it is trusted.

use std::fmt;

use crate::parts::{self, param_name, path_query_fragment};
use crate::{PathPattern, SubstitutionPattern};

/// What a rule rewrites. Rules read and write the path, query and fragment of a URL (its
/// origin never changes); they are meant for canonical URLs (lower-case host, sorted query).
///
/// # Examples
///
/// ```
/// use url_dedup_rules::RuleKind;
///
/// let kind: RuleKind = "ignore-param \"sort\" in \"/list/*\"".parse()?;
/// assert_eq!(kind.rewrite("/list/7?page=2&sort=name").as_deref(), Some("/list/7?page=2"));
/// assert_eq!(kind.rewrite("/item/7?sort=name"), None);
/// # Ok::<(), url_dedup_rules::ParseError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RuleKind {
    /// Drop every query parameter `name` (with the value `value`, when given) from URLs
    /// whose path matches `path`: it does not change the page (a sort order, a view, a
    /// session token, a referrer, `page=1`).
    IgnoreParam {
        /// The parameter's name, as it is spelled in the URL.
        name: String,
        /// The one value that does not matter (`page=1`), or `None` for every value.
        value: Option<String>,
        /// Where the parameter does not matter.
        path: PathPattern,
    },
    /// Replace each match of `from` in the path and query by `to`: two spellings of one page
    /// (`/index.php?title=` and `/wiki/`, `/print/` and `/`).
    Replace {
        /// What is replaced.
        from: SubstitutionPattern,
        /// What replaces it (may be empty).
        to: String,
    },
    /// Drop a last path segment `name` (`index.html`) from URLs whose directory (the path up
    /// to and with its last `/`) matches `path`: the server's default document.
    DefaultDocument {
        /// The document's name.
        name: String,
        /// The directories where it is the default.
        path: PathPattern,
    },
    /// Drop (or add) the `/` that ends a path matching `path` (written without that `/`);
    /// the root `/` is never changed.
    TrailingSlash {
        /// `true` adds a slash to paths without one, `false` removes it.
        add: bool,
        /// The paths it applies to.
        path: PathPattern,
    },
}

impl RuleKind {
    /// The rewritten path, query and fragment, or `None` when the rule does not apply to
    /// `rest` (a URL's path, query and fragment).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_rules::RuleKind;
    ///
    /// let print: RuleKind = r#"replace "/print/" "/""#.parse()?;
    /// assert_eq!(print.rewrite("/print/a/7").as_deref(), Some("/a/7"));
    /// let index: RuleKind = r#"default-document "index.html" in "/**""#.parse()?;
    /// assert_eq!(index.rewrite("/docs/index.html?x").as_deref(), Some("/docs/?x"));
    /// let slash: RuleKind = r#"trailing-slash remove in "/docs/*""#.parse()?;
    /// assert_eq!(slash.rewrite("/docs/intro/").as_deref(), Some("/docs/intro"));
    /// # Ok::<(), url_dedup_rules::ParseError>(())
    /// ```
    pub fn rewrite(&self, rest: &str) -> Option<String> {
        match self {
            RuleKind::IgnoreParam { name, value, path } => {
                let (p, query, fragment) = path_query_fragment(rest);
                let query = query?;
                if !path.matches(p) {
                    return None;
                }
                let dropped = |param: &str| {
                    param_name(param) == name
                        && value
                            .as_deref()
                            .is_none_or(|v| param.get(name.len() + 1..) == Some(v))
                };
                if !query.split('&').any(dropped) {
                    return None;
                }
                // One pass, one allocation: the path, then the parameters kept.
                let mut out = String::with_capacity(rest.len());
                out.push_str(p);
                for param in query.split('&').filter(|param| !dropped(param)) {
                    out.push(if out.len() == p.len() { '?' } else { '&' });
                    out.push_str(param);
                }
                out.push_str(fragment);
                Some(out)
            }
            RuleKind::Replace { from, to } => {
                let end = rest.find('#').unwrap_or(rest.len());
                let (body, fragment) = rest.split_at(end);
                let (mut out, mut copied, mut at) = (String::new(), 0, 0);
                while let Some((s, e)) = from.find(body, at) {
                    out.push_str(&body[copied..s]);
                    out.push_str(to);
                    copied = e;
                    at = e.max(s + 1);
                }
                if copied == 0 && out.is_empty() {
                    return None;
                }
                out.push_str(&body[copied..]);
                out.push_str(fragment);
                (out != rest).then_some(out)
            }
            RuleKind::DefaultDocument { name, path } => {
                let (p, _, _) = path_query_fragment(rest);
                let dir = p.strip_suffix(name.as_str())?;
                if !dir.ends_with('/') || !path.matches(dir) {
                    return None;
                }
                Some(format!("{dir}{}", &rest[p.len()..]))
            }
            RuleKind::TrailingSlash { add, path } => {
                let (p, _, _) = path_query_fragment(rest);
                let tail = &rest[p.len()..];
                if *add {
                    if p.ends_with('/') || p.is_empty() || !path.matches(p) {
                        return None;
                    }
                    Some(format!("{p}/{tail}"))
                } else {
                    let bare = p.strip_suffix('/')?;
                    if bare.is_empty() || !path.matches(bare) {
                        return None;
                    }
                    Some(format!("{bare}{tail}"))
                }
            }
        }
    }

    /// Whether the rule can apply to a URL whose path and query are `rest`, judged cheaply;
    /// never `false` when [`rewrite`](Self::rewrite) would apply.
    pub(crate) fn may_apply(&self, rest: &str) -> bool {
        match self {
            RuleKind::IgnoreParam { name, .. } => rest.contains(name.as_str()),
            RuleKind::Replace { from, .. } => rest.contains(from.anchor()),
            RuleKind::DefaultDocument { name, .. } => rest.contains(name.as_str()),
            RuleKind::TrailingSlash { .. } => true,
        }
    }
}

/// The evidence for a rule in the pages it was learned from.
///
/// # Examples
///
/// ```
/// let s = url_dedup_rules::Support { pages: 12, saved: 30, confidence: 91 };
/// assert_eq!(s.to_string(), "pages=12 saved=30 confidence=91%");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Support {
    /// Distinct pages whose URLs the rule folded together, rightly.
    pub pages: u64,
    /// Fetches the rule would have saved: URLs it folded onto another URL of the same page.
    pub saved: u64,
    /// Of the URLs the rule rewrote, the percentage whose rewritten form another URL of the
    /// same page shared (the rest were not contradicted, only not confirmed).
    pub confidence: u8,
}

impl fmt::Display for Support {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "pages={} saved={} confidence={}%",
            self.pages, self.saved, self.confidence
        )
    }
}

/// Whether a rule is trusted.
///
/// # Examples
///
/// ```
/// use url_dedup_rules::Status;
/// assert_eq!(Status::Candidate.to_string(), "candidate");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// Learned, not yet checked: the crawler fetches a few URLs it predicts as duplicates
    /// before it trusts it.
    Candidate,
    /// Checked by fetching, or written or accepted by a person.
    Confirmed,
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Status::Candidate => "candidate",
            Status::Confirmed => "confirmed",
        })
    }
}

/// A rule of one host, with its evidence, its status and the duplicates it predicts.
///
/// # Examples
///
/// ```
/// use url_dedup_rules::{Rule, Status};
///
/// let rule = Rule::new(r#"ignore-param "sessionid" in "/**""#.parse()?);
/// assert_eq!(rule.status, Status::Confirmed);
/// assert_eq!(rule.rewrite("https://h.example/a?sessionid=1").as_deref(), Some("https://h.example/a"));
/// # Ok::<(), url_dedup_rules::ParseError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// What it rewrites.
    pub kind: RuleKind,
    /// The evidence it was learned from (zero for a rule a person wrote).
    pub support: Support,
    /// Whether it is trusted.
    pub status: Status,
    /// How many of its predictions were fetched and found right so far.
    pub checked: u32,
    /// URLs the rule predicts to be duplicates, each with the URL it maps it onto: fetching
    /// both and comparing the pages checks the rule (DustBuster's validation).
    pub predicts: Vec<(String, String)>,
}

impl Rule {
    /// A confirmed rule without evidence or predictions: one a person writes.
    ///
    /// # Examples
    ///
    /// See [`Rule`].
    pub fn new(kind: RuleKind) -> Self {
        Self {
            kind,
            support: Support::default(),
            status: Status::Confirmed,
            checked: 0,
            predicts: Vec::new(),
        }
    }

    /// This rule alone applied to an absolute URL: the rewritten URL, or `None` when it
    /// does not apply.
    ///
    /// # Examples
    ///
    /// See [`Rule`].
    pub fn rewrite(&self, url: &str) -> Option<String> {
        let p = parts::split(url)?;
        self.kind
            .rewrite(p.rest)
            .map(|rest| format!("{}{rest}", p.origin))
    }
}
