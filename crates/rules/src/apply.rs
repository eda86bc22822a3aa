//! Applying rules at a bounded cost per URL: rules are indexed by host, a host's
//! `ignore-param` rules by parameter name, and its `replace` rules by the literal each starts
//! with (one Aho-Corasick pass finds which can match), so a URL meets only the rules that may
//! apply to it, whatever the number of rules.

use std::borrow::Cow;
use std::collections::HashMap;

use aho_corasick::AhoCorasick;

use crate::parts::{self, param_name, path_query_fragment};
use crate::{RuleId, RuleKind, RuleSet, Status};

/// The rules of one host, ready to apply.
#[derive(Clone, Debug)]
struct Host {
    kinds: Vec<RuleKind>,
    ids: Vec<RuleId>,
    /// `ignore-param` rules by parameter name.
    by_param: HashMap<String, Vec<u32>>,
    /// The anchors of `replace` and `default-document` rules, and the rules of each anchor.
    anchors: Option<AhoCorasick>,
    by_anchor: Vec<Vec<u32>>,
    /// `trailing-slash` rules that remove a slash, and those that add one.
    slash_remove: Vec<u32>,
    slash_add: Vec<u32>,
}

/// Rules ready to apply to URLs. Cheap to share between threads (`Send + Sync`).
///
/// # Examples
///
/// ```
/// use url_dedup_rules::{Rules, RuleSet};
///
/// let set = RuleSet::parse(r#"rules-format 1
/// host "wiki.example"
/// ignore-param "printable" in "/**"
/// replace "index.php?title=" "index.php/"
/// "#)?;
/// let rules = Rules::new(&set);
/// // In order: the parameter goes, then the spelling changes.
/// assert_eq!(rules.apply("https://wiki.example/index.php?printable=yes&title=Main"), "https://wiki.example/index.php/Main");
/// assert_eq!(rules.apply("https://other.example/index.php?title=Main"), "https://other.example/index.php?title=Main");
/// # Ok::<(), url_dedup_rules::ParseError>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Rules {
    hosts: HashMap<String, Host>,
    len: usize,
}

/// The most rewrites one URL goes through: a bound on the cost of a pathological rule set.
const MAX_REWRITES: usize = 64;

impl Rules {
    /// Every rule of `set`, whatever its status: a set a person chose.
    ///
    /// # Examples
    ///
    /// See [`Rules`].
    pub fn new(set: &RuleSet) -> Self {
        Self::build(set, |_| true)
    }

    /// The confirmed rules of `set` only: what a crawler trusts while it checks the others.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_rules::{Rules, RuleSet};
    /// let set = RuleSet::parse("rules-format 1\nhost \"h\"\nreplace \"/print/\" \"/\"\n    status candidate\n")?;
    /// assert_eq!(Rules::confirmed(&set).apply("https://h/print/a"), "https://h/print/a");
    /// assert_eq!(Rules::new(&set).apply("https://h/print/a"), "https://h/a");
    /// # Ok::<(), url_dedup_rules::ParseError>(())
    /// ```
    pub fn confirmed(set: &RuleSet) -> Self {
        Self::build(set, |s| s == Status::Confirmed)
    }

    fn build(set: &RuleSet, keep: impl Fn(Status) -> bool) -> Self {
        let mut hosts = HashMap::new();
        let mut len = 0;
        for (h, hr) in set.hosts.iter().enumerate() {
            let mut host = Host {
                kinds: Vec::new(),
                ids: Vec::new(),
                by_param: HashMap::new(),
                anchors: None,
                by_anchor: Vec::new(),
                slash_remove: Vec::new(),
                slash_add: Vec::new(),
            };
            let mut anchor_text: Vec<String> = Vec::new();
            for (r, rule) in hr.rules.iter().enumerate() {
                if !keep(rule.status) {
                    continue;
                }
                let i = host.kinds.len() as u32;
                match &rule.kind {
                    RuleKind::IgnoreParam { name, .. } => {
                        host.by_param.entry(name.clone()).or_default().push(i);
                    }
                    RuleKind::Replace { from, .. } => {
                        add_anchor(&mut anchor_text, &mut host.by_anchor, from.anchor(), i);
                    }
                    RuleKind::DefaultDocument { name, .. } => {
                        add_anchor(&mut anchor_text, &mut host.by_anchor, name, i);
                    }
                    RuleKind::TrailingSlash { add: false, .. } => host.slash_remove.push(i),
                    RuleKind::TrailingSlash { add: true, .. } => host.slash_add.push(i),
                }
                host.kinds.push(rule.kind.clone());
                host.ids.push(RuleId {
                    host: h as u32,
                    rule: r as u32,
                });
            }
            if host.kinds.is_empty() {
                continue;
            }
            if !anchor_text.is_empty() {
                // Built from literals only, so it cannot fail; without it every anchored rule
                // is tried, which is slower but the same.
                host.anchors = AhoCorasick::builder()
                    .kind(Some(aho_corasick::AhoCorasickKind::DFA))
                    .build(&anchor_text)
                    .ok();
            }
            len += host.kinds.len();
            hosts.insert(hr.host.clone(), host);
        }
        Self { hosts, len }
    }

    /// The number of rules applied.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(url_dedup_rules::Rules::default().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no rule is applied.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(url_dedup_rules::Rules::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The URL `url` is rewritten to (itself, borrowed, when no rule applies). Meant for
    /// canonical URLs: a host is found as it is spelled (lower case).
    ///
    /// # Examples
    ///
    /// See [`Rules`].
    pub fn apply<'a>(&self, url: &'a str) -> Cow<'a, str> {
        self.apply_inner(url, None)
    }

    /// [`apply`](Self::apply), also appending to `fired` the id of each rule that rewrote the
    /// URL, in order: how a crawler knows which rule to check when it fetches a URL the rules
    /// fold.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_rules::{RuleId, Rules, RuleSet};
    /// let set = RuleSet::parse("rules-format 1\nhost \"h\"\nreplace \"/print/\" \"/\"\nignore-param \"sid\" in \"/**\"\n")?;
    /// let mut fired = Vec::new();
    /// let out = Rules::new(&set).apply_traced("https://h/print/a?sid=1", &mut fired);
    /// assert_eq!(out, "https://h/a");
    /// assert_eq!(fired, [RuleId { host: 0, rule: 0 }, RuleId { host: 0, rule: 1 }]);
    /// # Ok::<(), url_dedup_rules::ParseError>(())
    /// ```
    pub fn apply_traced<'a>(&self, url: &'a str, fired: &mut Vec<RuleId>) -> Cow<'a, str> {
        self.apply_inner(url, Some(fired))
    }

    fn apply_inner<'a>(&self, url: &'a str, mut fired: Option<&mut Vec<RuleId>>) -> Cow<'a, str> {
        let Some(p) = parts::split(url) else {
            return Cow::Borrowed(url);
        };
        let Some(host) = self.hosts.get(p.host) else {
            return Cow::Borrowed(url);
        };
        let mut rest: Cow<'_, str> = Cow::Borrowed(p.rest);
        let mut next = 0u32; // rules before `next` have had their turn
        let mut candidates: Vec<u32> = Vec::new();
        for _ in 0..MAX_REWRITES {
            candidates.clear();
            host.candidates(&rest, next, &mut candidates);
            let mut rewrote = false;
            for &i in &candidates {
                if let Some(new) = host.kinds[i as usize].rewrite(&rest) {
                    if let Some(f) = fired.as_deref_mut() {
                        f.push(host.ids[i as usize]);
                    }
                    rest = Cow::Owned(new);
                    next = i + 1;
                    rewrote = true;
                    // The text changed: which later rules may apply is found again.
                    break;
                }
            }
            if !rewrote {
                break;
            }
        }
        match rest {
            Cow::Borrowed(_) => Cow::Borrowed(url),
            Cow::Owned(r) => Cow::Owned(format!("{}{r}", p.origin)),
        }
    }
}

fn add_anchor(text: &mut Vec<String>, rules: &mut Vec<Vec<u32>>, anchor: &str, rule: u32) {
    match text.iter().position(|t| t == anchor) {
        Some(a) => rules[a].push(rule),
        None => {
            text.push(anchor.to_owned());
            rules.push(vec![rule]);
        }
    }
}

impl Host {
    /// The rules from `from` on that may apply to `rest`, in order.
    fn candidates(&self, rest: &str, from: u32, out: &mut Vec<u32>) {
        let (path, query, _) = path_query_fragment(rest);
        if let Some(q) = query
            && !self.by_param.is_empty()
        {
            for param in q.split('&') {
                if let Some(rules) = self.by_param.get(param_name(param)) {
                    out.extend(rules.iter().filter(|&&i| i >= from));
                }
            }
        }
        match &self.anchors {
            Some(ac) => {
                for m in ac.find_overlapping_iter(rest) {
                    out.extend(
                        self.by_anchor[m.pattern().as_usize()]
                            .iter()
                            .filter(|&&i| i >= from),
                    );
                }
            }
            None => {
                for rules in &self.by_anchor {
                    out.extend(rules.iter().filter(|&&i| i >= from));
                }
            }
        }
        // A slash can only be removed from a path that ends with one, and added to one that
        // does not.
        let slash = if path.ends_with('/') {
            &self.slash_remove
        } else {
            &self.slash_add
        };
        out.extend(slash.iter().filter(|&&i| i >= from));
        out.sort_unstable();
        out.dedup();
    }
}

/// The rules of `kinds` applied in order, one after the other, to `rest` with no index: what
/// [`Rules`] computes, the plain way (the tests' reference).
#[cfg(feature = "testing")]
pub(crate) fn apply_plain(kinds: &[&RuleKind], rest: &str) -> Option<String> {
    let mut out: Option<String> = None;
    let mut next = 0;
    for _ in 0..MAX_REWRITES {
        let cur = out.as_deref().unwrap_or(rest);
        let Some((i, new)) = kinds[next..]
            .iter()
            .enumerate()
            .find_map(|(i, k)| k.rewrite(cur).map(|n| (i, n)))
        else {
            break;
        };
        next += i + 1;
        out = Some(new);
    }
    out
}
