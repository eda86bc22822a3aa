//! A set of rules, host by host, in the order they apply.

use crate::{Rule, RuleKind, Status};

/// Names one rule of a [`RuleSet`]: its host's position and its own.
///
/// # Examples
///
/// ```
/// use url_dedup_rules::{Rule, RuleId, RuleSet};
///
/// let mut set = RuleSet::new();
/// let id = set.push("h.example", Rule::new(r#"replace "/print/" "/""#.parse()?));
/// assert_eq!(id, RuleId { host: 0, rule: 0 });
/// # Ok::<(), url_dedup_rules::ParseError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RuleId {
    /// The host's position in the set.
    pub host: u32,
    /// The rule's position among its host's rules.
    pub rule: u32,
}

/// The rules of one host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HostRules {
    pub(crate) host: String,
    pub(crate) rules: Vec<Rule>,
}

/// Rules, host by host. A host's rules apply in order, each to what the one before made.
///
/// Its text form (`Display`, [`RuleSet::parse`]) is the file a person reviews: see the crate
/// documentation.
///
/// # Examples
///
/// ```
/// use url_dedup_rules::RuleSet;
///
/// let set = RuleSet::parse("rules-format 1\nhost \"h.example\"\nreplace \"/print/\" \"/\"\n")?;
/// assert_eq!(set.len(), 1);
/// assert_eq!(RuleSet::parse(&set.to_string())?, set);
/// # Ok::<(), url_dedup_rules::ParseError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuleSet {
    pub(crate) hosts: Vec<HostRules>,
}

/// How many right predictions confirm a candidate by default ([`RuleSet::record_check`]).
pub const CHECKS_TO_CONFIRM: u32 = 3;

/// What a check of a prediction found.
///
/// # Examples
///
/// ```
/// use url_dedup_rules::{Check, Rule, RuleSet, Status};
///
/// let mut set = RuleSet::new();
/// let mut rule = Rule::new(r#"ignore-param "sort" in "/**""#.parse()?);
/// rule.status = Status::Candidate;
/// let id = set.push("h.example", rule);
/// assert_eq!(set.record_check(id, true), Check::Passed { checked: 1 });
/// assert_eq!(set.record_check(id, true), Check::Passed { checked: 2 });
/// assert_eq!(set.record_check(id, true), Check::Confirmed);
/// assert_eq!(set.get(id).unwrap().status, Status::Confirmed);
/// # Ok::<(), url_dedup_rules::ParseError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// The prediction was right; the rule needs more.
    Passed {
        /// Right predictions so far.
        checked: u32,
    },
    /// The prediction was right and the rule is now confirmed.
    Confirmed,
    /// The prediction was wrong: the rule folds distinct pages and was removed.
    Removed,
    /// No such rule (it was removed, or the id is of another set).
    Unknown,
}

impl RuleSet {
    /// An empty set.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(url_dedup_rules::RuleSet::new().is_empty());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `rule` to the rules of `host` (a lower-case host, with `:port` when not the
    /// default one); returns its id.
    ///
    /// # Examples
    ///
    /// See [`RuleId`].
    pub fn push(&mut self, host: &str, rule: Rule) -> RuleId {
        let h = match self.hosts.iter().position(|h| h.host == host) {
            Some(h) => h,
            None => {
                self.hosts.push(HostRules {
                    host: host.to_owned(),
                    rules: Vec::new(),
                });
                self.hosts.len() - 1
            }
        };
        self.hosts[h].rules.push(rule);
        RuleId {
            host: h as u32,
            rule: (self.hosts[h].rules.len() - 1) as u32,
        }
    }

    /// The number of rules.
    ///
    /// # Examples
    ///
    /// See [`RuleSet`].
    pub fn len(&self) -> usize {
        self.hosts.iter().map(|h| h.rules.len()).sum()
    }

    /// Whether the set has no rule.
    ///
    /// # Examples
    ///
    /// See [`new`](Self::new).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The hosts that have rules, in order.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_rules::{Rule, RuleSet};
    /// let mut set = RuleSet::new();
    /// set.push("b.example", Rule::new(r#"replace "/print/" "/""#.parse()?));
    /// set.push("a.example", Rule::new(r#"replace "/print/" "/""#.parse()?));
    /// assert_eq!(set.hosts().collect::<Vec<_>>(), ["b.example", "a.example"]);
    /// # Ok::<(), url_dedup_rules::ParseError>(())
    /// ```
    pub fn hosts(&self) -> impl Iterator<Item = &str> {
        self.hosts.iter().map(|h| h.host.as_str())
    }

    /// Every rule with its host and id, in order.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_rules::{Rule, RuleSet};
    /// let mut set = RuleSet::new();
    /// set.push("h.example", Rule::new(r#"replace "/print/" "/""#.parse()?));
    /// let (id, host, rule) = set.iter().next().unwrap();
    /// assert_eq!((id.rule, host), (0, "h.example"));
    /// assert_eq!(rule.kind.to_string(), r#"replace "/print/" "/""#);
    /// # Ok::<(), url_dedup_rules::ParseError>(())
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = (RuleId, &str, &Rule)> {
        self.hosts.iter().enumerate().flat_map(|(h, hr)| {
            hr.rules.iter().enumerate().map(move |(r, rule)| {
                (
                    RuleId {
                        host: h as u32,
                        rule: r as u32,
                    },
                    hr.host.as_str(),
                    rule,
                )
            })
        })
    }

    /// The rule `id` names.
    ///
    /// # Examples
    ///
    /// See [`Check`].
    pub fn get(&self, id: RuleId) -> Option<&Rule> {
        self.hosts
            .get(id.host as usize)?
            .rules
            .get(id.rule as usize)
    }

    /// The host of the rule `id` names.
    ///
    /// # Examples
    ///
    /// See [`RuleSet::update`].
    pub fn host_of(&self, id: RuleId) -> Option<&str> {
        self.hosts.get(id.host as usize).map(|h| h.host.as_str())
    }

    /// Records the check of one of rule `id`'s predictions: a URL it maps onto another was
    /// fetched, and the two pages were the same (`same`) or not. A candidate is confirmed
    /// after [`CHECKS_TO_CONFIRM`] right predictions; a rule that predicted wrong is removed
    /// (confirmed or not: it folds distinct pages). Removing a rule changes the ids of the
    /// rules after it on its host.
    ///
    /// # Examples
    ///
    /// See [`Check`].
    pub fn record_check(&mut self, id: RuleId, same: bool) -> Check {
        self.record_check_with(id, same, CHECKS_TO_CONFIRM)
    }

    /// [`record_check`](Self::record_check) with `needed` right predictions to confirm.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_rules::{Check, Rule, RuleSet, Status};
    /// let mut set = RuleSet::new();
    /// let mut rule = Rule::new(r#"ignore-param "sort" in "/**""#.parse()?);
    /// rule.status = Status::Candidate;
    /// let id = set.push("h.example", rule);
    /// assert_eq!(set.record_check_with(id, false, 1), Check::Removed);
    /// assert!(set.is_empty());
    /// # Ok::<(), url_dedup_rules::ParseError>(())
    /// ```
    pub fn record_check_with(&mut self, id: RuleId, same: bool, needed: u32) -> Check {
        let Some(host) = self.hosts.get_mut(id.host as usize) else {
            return Check::Unknown;
        };
        if id.rule as usize >= host.rules.len() {
            return Check::Unknown;
        }
        if !same {
            host.rules.remove(id.rule as usize);
            return Check::Removed;
        }
        let rule = &mut host.rules[id.rule as usize];
        rule.checked = rule.checked.saturating_add(1);
        if rule.status == Status::Candidate && rule.checked >= needed {
            rule.status = Status::Confirmed;
            return Check::Confirmed;
        }
        Check::Passed {
            checked: rule.checked,
        }
    }

    /// Takes in rules learned again: a learned rule that this set has already (same host and
    /// [`RuleKind`]) keeps its status and checks and takes the new evidence; a new one is
    /// added as the learner made it; this set's candidates that were not learned again are
    /// dropped, its confirmed rules stay. Learned rules come after the confirmed ones of
    /// their host, in the learned order.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_rules::{Rule, RuleSet, Status, Support};
    ///
    /// let kind = |s: &str| s.parse::<url_dedup_rules::RuleKind>().unwrap();
    /// let mut current = RuleSet::new();
    /// let mut old = Rule::new(kind(r#"replace "/print/" "/""#));
    /// old.status = Status::Candidate;
    /// old.checked = 2;
    /// current.push("h.example", old);
    ///
    /// let mut learned = RuleSet::new();
    /// let mut again = Rule::new(kind(r#"replace "/print/" "/""#));
    /// again.status = Status::Candidate;
    /// again.support = Support { pages: 9, saved: 9, confidence: 100 };
    /// learned.push("h.example", again);
    ///
    /// current.update(learned);
    /// let rule = current.iter().next().unwrap().2;
    /// assert_eq!((rule.checked, rule.support.pages), (2, 9));
    /// ```
    pub fn update(&mut self, learned: RuleSet) {
        for lh in learned.hosts {
            let old = self
                .hosts
                .iter()
                .position(|h| h.host == lh.host)
                .map(|i| std::mem::take(&mut self.hosts[i].rules))
                .unwrap_or_default();
            let find = |kind: &RuleKind| old.iter().find(|r| &r.kind == kind);
            let mut rules: Vec<Rule> = old
                .iter()
                .filter(|r| {
                    r.status == Status::Confirmed && !lh.rules.iter().any(|l| l.kind == r.kind)
                })
                .cloned()
                .collect();
            for mut rule in lh.rules {
                if let Some(prev) = find(&rule.kind) {
                    rule.status = prev.status;
                    rule.checked = prev.checked;
                }
                rules.push(rule);
            }
            match self.hosts.iter_mut().find(|h| h.host == lh.host) {
                Some(h) => h.rules = rules,
                None => self.hosts.push(HostRules {
                    host: lh.host,
                    rules,
                }),
            }
        }
    }

    /// The set with only its confirmed rules: what a crawler trusts before checking.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_rules::{Rule, RuleSet, Status};
    /// let mut set = RuleSet::new();
    /// let mut candidate = Rule::new(r#"replace "/print/" "/""#.parse()?);
    /// candidate.status = Status::Candidate;
    /// set.push("h.example", candidate);
    /// set.push("h.example", Rule::new(r#"ignore-param "sid" in "/**""#.parse()?));
    /// assert_eq!(set.confirmed().len(), 1);
    /// # Ok::<(), url_dedup_rules::ParseError>(())
    /// ```
    pub fn confirmed(&self) -> RuleSet {
        RuleSet {
            hosts: self
                .hosts
                .iter()
                .map(|h| HostRules {
                    host: h.host.clone(),
                    rules: h
                        .rules
                        .iter()
                        .filter(|r| r.status == Status::Confirmed)
                        .cloned()
                        .collect(),
                })
                .filter(|h| !h.rules.is_empty())
                .collect(),
        }
    }
}
