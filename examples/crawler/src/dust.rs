//! Learning which URLs serve one page while crawling (`--learn`), and the rules admission
//! applies (`--learn`, `--rules FILE`).
//!
//! The committer shows this stage every HTML page fetched with its fingerprints
//! ([`Dust::observe`]); the stage learns rules host by host and hands admission the rules it
//! trusts ([`Applied`]). Nothing here fetches or admits: a check of a candidate rule is an
//! ordinary fetch of a URL the rule maps onto a page already fetched.
//!
//! 1. **Evidence.** Each page's URL, exact fingerprint and SimHash go to the learner
//!    ([`crate::learner`], off the commit path) as [`Evidence`]. A host is learned when it has
//!    [`LEARN_AFTER`] fingerprinted pages, and again each time that number has grown by a
//!    quarter (so learning costs a few times the pages), or when [`DUPLICATES_TO_LEARN`]
//!    duplicate fetches came since. What the learner found comes back through
//!    [`Dust::learned`].
//! 2. **Checks.** A learned rule is a candidate. When a fetched URL is one a candidate rewrites
//!    onto a URL already fetched, or onto the rewrite of one (a login form's URLs differ only
//!    in their return address, and its bare URL is never linked), the two fingerprints are
//!    compared (equal exact fingerprints,
//!    or SimHashes within [`NEAR_BITS`] bits): [`url_dedup_rules::CHECKS_TO_CONFIRM`] right
//!    predictions confirm the rule, one wrong one removes it for the rest of the crawl
//!    (DustBuster's validation).
//! 3. **Skips.** Admission rewrites each new link with the confirmed rules; a link whose
//!    rewrite is already in the done set is skipped, naming the rule. When a rule is
//!    confirmed, the rewrites of the host's fetched URLs join the done set
//!    ([`Dust::observe`] returns them), so later aliases of those pages are skipped too.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use url_dedup_fingerprint::{NearIndex, PageFingerprint, SimHash};
use url_dedup_rules::{Check, Rule, RuleId, RuleSet, Rules, Status};

use crate::aliases::FetchedAliases;
use crate::learner::Evidence;

/// Fingerprinted pages of a host before its rules are first learned: enough for a rule to be
/// seen on the three pages the learner asks for, and few enough to start saving early.
pub(crate) const LEARN_AFTER: usize = 20;

/// Duplicate fetches of a host (a page's content again, under another URL, that no rule
/// rewrites) that make it due to be learned again, however few pages were added: aliases met
/// late in a crawl (a form each article links, found a level deeper than the articles) are
/// learned while they are met. A large host waits for 1/64 of its pages, so learning stays a
/// small share of the crawl.
pub(crate) const DUPLICATES_TO_LEARN: usize = 16;

/// Two pages whose SimHashes are at most this many bits apart are one page for a check.
pub(crate) const NEAR_BITS: u32 = 3;

/// The name of the rules file in `--out` (`rules-NAME.txt` for a process of a shared crawl).
pub(crate) const RULES_FILE: &str = "rules.txt";

/// The log of the pages fingerprinted, in `--out` (`pages-NAME.tsv` in a shared crawl):
/// `url<TAB>exact<TAB>simhash<TAB>words<TAB>near-duplicate URL`. A resumed crawl learns from it
/// again.
pub(crate) const PAGES_FILE: &str = "pages.tsv";

/// The SimHashes of the pages a process fetched, and a URL of each: near duplicates by name.
#[derive(Debug)]
pub(crate) struct NearPages {
    index: Option<NearIndex>,
    urls: HashMap<u64, String>,
}

impl NearPages {
    /// An empty index.
    pub(crate) fn new() -> Self {
        Self {
            // 3 bits of 64 is a shape the index takes.
            index: NearIndex::new(NEAR_BITS).ok(),
            urls: HashMap::new(),
        }
    }

    /// The URL of a page within [`NEAR_BITS`] of `simhash`, if any; else records `url` as the
    /// page of `simhash`.
    pub(crate) fn check_and_insert(&mut self, simhash: u64, url: &str) -> Option<String> {
        let index = self.index.as_mut()?;
        match index.check_and_insert(SimHash(simhash)) {
            Some(near) => Some(
                self.urls
                    .get(&near.0)
                    .cloned()
                    .unwrap_or_else(|| format!("simhash {near}")),
            ),
            None => {
                self.urls.insert(simhash, url.to_owned());
                None
            }
        }
    }
}

/// `set` with every rule confirmed: a set a person chose (`--rules FILE`).
pub(crate) fn trusted(set: RuleSet) -> RuleSet {
    let mut out = RuleSet::new();
    for (_, host, rule) in set.iter() {
        let mut rule = rule.clone();
        rule.status = Status::Confirmed;
        out.push(host, rule);
    }
    out
}

/// The host of a canonical URL as rules name it: lower case, with `:port` when not the
/// scheme's default.
pub(crate) fn host_of(url: &str) -> Option<String> {
    let u = url::Url::parse(url).ok()?;
    let host = u.host_str()?;
    Some(match u.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_owned(),
    })
}

/// The rules admission applies: the confirmed ones. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub(crate) struct Applied {
    rules: Arc<Rules>,
    set: Arc<RuleSet>,
}

impl Applied {
    /// `url` (canonical) rewritten by the rules, with the rules that did it, when they change it.
    pub(crate) fn rewrite(&self, url: &str) -> Option<(String, String)> {
        if self.rules.is_empty() {
            return None;
        }
        let mut fired = Vec::new();
        let key = self.rules.apply_traced(url, &mut fired);
        if key == url {
            return None;
        }
        let names: Vec<String> = fired
            .iter()
            .filter_map(|&id| self.set.get(id))
            .map(|r| r.kind.to_string())
            .collect();
        Some((key.into_owned(), names.join("; ")))
    }

    /// Whether no rule is applied.
    pub(crate) fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// `url` (canonical) rewritten by the rules, when they change it; no rule names.
    pub(crate) fn key(&self, url: &str) -> Option<String> {
        rewritten(&self.rules, url)
    }
}

/// `url` rewritten by `rules`, when they change it.
fn rewritten(rules: &Rules, url: &str) -> Option<String> {
    match rules.apply(url) {
        std::borrow::Cow::Owned(k) if k != url => Some(k),
        _ => None,
    }
}

/// What the stage did, for the summary and the status page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct DustFigures {
    /// Candidate rules learned.
    pub(crate) learned: u64,
    /// Candidates confirmed by their checks.
    pub(crate) confirmed: u64,
    /// Candidates removed by a wrong prediction.
    pub(crate) rejected: u64,
    /// Fetches that checked a candidate.
    pub(crate) checks: u64,
    /// Pages fetched whose SimHash is near an earlier page's.
    pub(crate) near_duplicates: u64,
    /// Rules applied now.
    pub(crate) rules: u64,
}

/// What the stage knows of one host.
#[derive(Debug)]
struct HostPages {
    /// Fingerprinted URLs, in the order fetched.
    urls: Vec<String>,
    /// Learn again when `urls` reaches this.
    next_learn: usize,
    /// The exact fingerprints of the host's pages.
    contents: HashSet<u128>,
    /// Duplicate fetches since the host was last due to be learned.
    duplicates: usize,
    /// Whether the host has confirmed rules: its fetched URLs go to [`FetchedAliases`].
    keyed: bool,
    /// The rewrites by all rules of the URLs they change, each with the first URL (index into
    /// `urls`) that has it: what a check compares with when the rewrite was never fetched.
    rewrites: HashMap<String, u32>,
    /// The [`Dust::version`] of the rules `rewrites` was made with.
    rewrites_version: u64,
}

/// The learning stage.
#[derive(Debug)]
pub(crate) struct Dust {
    learn: bool,
    set: RuleSet,
    applied: Applied,
    /// Confirmed rules and candidates: which candidate a fetched URL checks.
    all: Rules,
    hosts: HashMap<String, HostPages>,
    /// Evidence for the learner, since [`take_evidence`](Self::take_evidence).
    evidence: Vec<Evidence>,
    /// Fingerprints of the URLs fetched, for the checks.
    pages: HashMap<String, PageFingerprint>,
    /// Rules removed by a wrong prediction, by host and text: never learned again.
    rejected: HashSet<(String, String)>,
    /// Hosts whose confirmed rules changed since [`take_changed_hosts`](Self::take_changed_hosts).
    changed_hosts: HashSet<String>,
    /// The rule set changed since [`take_dirty`](Self::take_dirty).
    dirty: bool,
    /// Counts the rebuilds of `all`: a host's `rewrites` made before the last one are stale.
    version: u64,
    /// What the dispatcher skips: aliases queued before their rule was confirmed.
    aliases: FetchedAliases,
    pub(crate) figures: DustFigures,
}

impl Dust {
    /// A stage that learns when `learn`, starting from `saved` (the rules file of an earlier
    /// run, kept as it was) and `given` (`--rules FILE`, trusted).
    pub(crate) fn new(learn: bool, saved: Option<RuleSet>, given: Option<&RuleSet>) -> Self {
        let mut dust = Self {
            learn,
            set: saved.unwrap_or_default(),
            applied: Applied::default(),
            all: Rules::default(),
            hosts: HashMap::new(),
            evidence: Vec::new(),
            pages: HashMap::new(),
            rejected: HashSet::new(),
            changed_hosts: HashSet::new(),
            dirty: false,
            version: 0,
            aliases: FetchedAliases::default(),
            figures: DustFigures::default(),
        };
        if let Some(given) = given {
            dust.merge(given);
            dust.changed_hosts.clear();
        }
        dust.rebuild();
        dust
    }

    /// Whether the stage does anything (learning, or rules to apply).
    pub(crate) fn active(&self) -> bool {
        self.learn || !self.set.is_empty()
    }

    /// The rules admission applies now.
    pub(crate) fn applied(&self) -> Applied {
        self.applied.clone()
    }

    /// The whole rule set (confirmed rules and candidates) in its text form.
    pub(crate) fn text(&self) -> String {
        self.set.to_string()
    }

    /// Whether the rule set changed since the last call.
    pub(crate) fn take_dirty(&mut self) -> bool {
        std::mem::take(&mut self.dirty)
    }

    /// The hosts whose confirmed rules changed since the last call: what a shared crawl
    /// publishes.
    pub(crate) fn take_changed_hosts(&mut self) -> Vec<String> {
        std::mem::take(&mut self.changed_hosts)
            .into_iter()
            .collect()
    }

    /// Each of `hosts` with the text of its confirmed rules.
    pub(crate) fn texts_of(
        &self,
        hosts: impl IntoIterator<Item = String>,
    ) -> Vec<(String, String)> {
        let confirmed = self.set.confirmed();
        hosts
            .into_iter()
            .map(|h| {
                let mut one = RuleSet::new();
                for (_, host, rule) in confirmed.iter() {
                    if host == h {
                        one.push(host, rule.clone());
                    }
                }
                (h, one.to_string())
            })
            .collect()
    }

    /// Takes in the confirmed rules another process published (`text`, the rules file form);
    /// returns the rewrites of this process's fetched URLs that the new rules make, for the done
    /// set. A rule this process removed stays removed.
    pub(crate) fn take_shared(&mut self, text: &str) -> Vec<String> {
        let Ok(set) = RuleSet::parse(text) else {
            return Vec::new();
        };
        let hosts = self.merge(&set);
        // Published rules are not published back unless this process adds to them.
        for h in &hosts {
            self.changed_hosts.remove(h);
        }
        self.rebuild();
        hosts.iter().flat_map(|h| self.confirmed_for(h)).collect()
    }

    /// Adds the rules of `set` as confirmed; returns the hosts whose rules changed.
    fn merge(&mut self, set: &RuleSet) -> Vec<String> {
        let mut hosts = Vec::new();
        for (_, host, rule) in set.iter() {
            let text = rule.kind.to_string();
            if self.rejected.contains(&(host.to_owned(), text)) {
                continue;
            }
            let known = self
                .set
                .iter()
                .find(|(_, h, r)| *h == host && r.kind == rule.kind)
                .map(|(id, _, r)| (id, r.status));
            match known {
                Some((_, Status::Confirmed)) => continue,
                Some((id, Status::Candidate)) => {
                    // Confirmed elsewhere: what is left of its checks is done.
                    let mut check = Check::Passed { checked: 0 };
                    while matches!(check, Check::Passed { .. }) {
                        check = self.set.record_check(id, true);
                    }
                }
                None => {
                    let mut rule = rule.clone();
                    rule.status = Status::Confirmed;
                    self.set.push(host, rule);
                }
            }
            if !hosts.iter().any(|h| h == host) {
                hosts.push(host.to_owned());
            }
            self.changed_hosts.insert(host.to_owned());
            self.dirty = true;
        }
        hosts
    }

    fn rebuild(&mut self) {
        let set = Arc::new(self.set.clone());
        self.applied = Applied {
            rules: Arc::new(Rules::confirmed(&set)),
            set,
        };
        self.all = Rules::new(&self.set);
        self.aliases.set_rules(self.applied.clone());
        self.version += 1;
        self.figures.rules = self.applied.rules.len() as u64;
    }

    /// The rewrites, by the confirmed rules, of the fetched URLs of `host` that they change:
    /// for the done set. They and the fetched URLs go to the dispatcher's [`FetchedAliases`],
    /// as will the URLs the host fetches from now on.
    fn confirmed_for(&mut self, host: &str) -> Vec<String> {
        let Some(h) = self.hosts.get_mut(host) else {
            return Vec::new();
        };
        h.keyed = true;
        let marks: Vec<String> = h
            .urls
            .iter()
            .filter_map(|u| rewritten(&self.applied.rules, u))
            .collect();
        self.aliases
            .insert(h.urls.iter().cloned().chain(marks.iter().cloned()));
        marks
    }

    /// The aliases the dispatcher skips; kept up to date by this stage.
    pub(crate) fn aliases(&self) -> FetchedAliases {
        self.aliases.clone()
    }

    /// After the pages of earlier runs are remembered: the hosts with confirmed rules give
    /// their fetched URLs to the dispatcher.
    pub(crate) fn resumed(&mut self) {
        let hosts: Vec<String> = self
            .hosts
            .keys()
            .filter(|h| self.has_confirmed(h))
            .cloned()
            .collect();
        for h in hosts {
            self.confirmed_for(&h);
        }
    }

    fn has_confirmed(&self, host: &str) -> bool {
        self.set
            .iter()
            .any(|(_, h, r)| h == host && r.status == Status::Confirmed)
    }

    /// Takes in a page fetched by an earlier run (from the page log): evidence only.
    pub(crate) fn remember(&mut self, url: &str, fp: PageFingerprint) {
        if !self.learn || fp.is_empty() {
            return;
        }
        let Some(host) = host_of(url) else {
            return;
        };
        if self.pages.insert(url.to_owned(), fp).is_some() {
            return;
        }
        let h = self.host(&host);
        h.urls.push(url.to_owned());
        h.contents.insert(fp.exact.0);
        h.rewrites_version = u64::MAX;
        self.evidence.push(Evidence::Page {
            host,
            url: url.to_owned(),
            exact: fp.exact.0,
            simhash: fp.simhash.0,
        });
    }

    /// The evidence gathered since the last call, for the learner.
    pub(crate) fn take_evidence(&mut self) -> Vec<Evidence> {
        std::mem::take(&mut self.evidence)
    }

    fn host(&mut self, host: &str) -> &mut HostPages {
        // A host with rules given (`--rules FILE`, shared ones) is keyed from its first page.
        let keyed = !self.hosts.contains_key(host) && self.has_confirmed(host);
        self.hosts
            .entry(host.to_owned())
            .or_insert_with(|| HostPages {
                urls: Vec::new(),
                next_learn: LEARN_AFTER,
                contents: HashSet::new(),
                duplicates: 0,
                keyed,
                rewrites: HashMap::new(),
                rewrites_version: u64::MAX,
            })
    }

    /// Counts a page whose SimHash is near an earlier page's.
    pub(crate) fn near_duplicate(&mut self) {
        self.figures.near_duplicates += 1;
    }

    /// Takes in a fetched HTML page: checks the candidates it predicts, hands it to the
    /// learner, with its host when the host's time to learn has come. Returns the URLs to add to the done set: rewrites of
    /// fetched URLs by rules confirmed just now.
    pub(crate) fn observe(&mut self, url: &str, fp: PageFingerprint) -> Vec<String> {
        if !self.learn || fp.is_empty() {
            return Vec::new();
        }
        let Some(host) = host_of(url) else {
            return Vec::new();
        };
        let mut marks = Vec::new();
        if self.check(url, &fp, &host) {
            marks = self.confirmed_for(&host);
        }
        if self.pages.insert(url.to_owned(), fp).is_some() {
            return marks;
        }
        let rewrite = rewritten(&self.all, url);
        // A duplicate that a rule (candidate or confirmed) rewrites is one learning has seen.
        let explained = rewrite.is_some();
        let version = self.version;
        let h = self.host(&host);
        h.urls.push(url.to_owned());
        if let Some(k) = rewrite.filter(|_| h.rewrites_version == version) {
            h.rewrites.entry(k).or_insert(h.urls.len() as u32 - 1);
        }
        let keyed = h.keyed;
        if !h.contents.insert(fp.exact.0) && !explained {
            h.duplicates += 1;
        }
        let many = h.urls.len() >= LEARN_AFTER
            && h.duplicates >= DUPLICATES_TO_LEARN.max(h.urls.len() / 64);
        let due = h.urls.len() >= h.next_learn || many;
        if due {
            h.next_learn = (h.urls.len() * 5 / 4).max(h.urls.len() + 1);
            h.duplicates = 0;
        }
        self.evidence.push(Evidence::Page {
            host: host.clone(),
            url: url.to_owned(),
            exact: fp.exact.0,
            simhash: fp.simhash.0,
        });
        if due {
            self.evidence.push(Evidence::Learn(host));
        }
        if keyed {
            let key = self.applied.key(url);
            self.aliases
                .insert(std::iter::once(url.to_owned()).chain(key));
        }
        marks
    }

    /// Checks the candidates that rewrite `url` onto a fetched URL; returns whether one was
    /// confirmed.
    fn check(&mut self, url: &str, fp: &PageFingerprint, host: &str) -> bool {
        let mut fired = Vec::new();
        let key = self.all.apply_traced(url, &mut fired);
        if key == url {
            return false;
        }
        let Some(target) = self.target(host, url, &key) else {
            return false;
        };
        let same = target.exact == fp.exact || target.simhash.distance(fp.simhash) <= NEAR_BITS;
        let mut candidates: Vec<RuleId> = fired
            .into_iter()
            .filter(|&id| {
                self.set
                    .get(id)
                    .is_some_and(|r| r.status == Status::Candidate)
            })
            .collect();
        if candidates.is_empty() {
            return false;
        }
        self.figures.checks += 1;
        // Removing a rule moves the ids after it: the last first.
        candidates.sort_unstable_by(|a, b| b.cmp(a));
        candidates.dedup();
        let mut confirmed = false;
        let mut changed = false;
        for id in candidates {
            let text = self.set.get(id).map(|r| r.kind.to_string());
            match self.set.record_check(id, same) {
                Check::Confirmed => {
                    self.figures.confirmed += 1;
                    self.changed_hosts.insert(host.to_owned());
                    confirmed = true;
                    changed = true;
                }
                Check::Removed => {
                    self.figures.rejected += 1;
                    changed = true;
                    if let Some(text) = text {
                        self.rejected.insert((host.to_owned(), text));
                    }
                }
                Check::Passed { .. } | Check::Unknown => {}
            }
        }
        self.dirty = true;
        // A check that passed changes no rewrite: the rules stay as built.
        if changed {
            self.rebuild();
        }
        confirmed
    }

    /// The fingerprint of the fetched URL `key`, or else of the first fetched URL of `host`
    /// but `url` that all the rules rewrite onto `key`.
    fn target(&mut self, host: &str, url: &str, key: &str) -> Option<PageFingerprint> {
        if let Some(fp) = self.pages.get(key) {
            return Some(*fp);
        }
        let version = self.version;
        let h = self.hosts.get_mut(host)?;
        if h.rewrites_version != version {
            h.rewrites.clear();
            for (i, u) in h.urls.iter().enumerate() {
                if let Some(k) = rewritten(&self.all, u) {
                    h.rewrites.entry(k).or_insert(i as u32);
                }
            }
            h.rewrites_version = version;
        }
        let first = &h.urls[*h.rewrites.get(key)? as usize];
        if first == url {
            return None;
        }
        self.pages.get(first).copied()
    }

    /// Takes in the rules the learner learned for a host from all its evidence. A rule
    /// removed meanwhile stays removed; the status of the others is kept.
    pub(crate) fn learned(&mut self, learned: RuleSet) {
        let mut fresh = RuleSet::new();
        for (_, lh, rule) in learned.iter() {
            if self
                .rejected
                .contains(&(lh.to_owned(), rule.kind.to_string()))
            {
                continue;
            }
            let known = self
                .set
                .iter()
                .any(|(_, sh, r)| sh == lh && r.kind == rule.kind);
            if !known {
                self.figures.learned += 1;
            }
            fresh.push(lh, without_predictions(rule));
        }
        if fresh.is_empty() {
            return;
        }
        let before = self.set.clone();
        self.set.update(fresh);
        if self.set != before {
            self.dirty = true;
            self.rebuild();
        }
    }
}

/// The page logs in `out` to learn from on start: this process's own (`own`), and those of
/// earlier runs and other processes of a shared crawl (`pages-NAME.tsv`: a process takes a new
/// name each run). Own first.
pub(crate) fn page_logs(out: &std::path::Path, own: &str) -> std::io::Result<Vec<String>> {
    let mut logs = vec![own.to_owned()];
    let mut others = Vec::new();
    let entries = match std::fs::read_dir(out) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(logs),
        Err(e) => return Err(e),
    };
    let prefix = format!("{}-", PAGES_FILE.trim_end_matches(".tsv"));
    for entry in entries {
        let name = entry?.file_name();
        let Some(name) = name.to_str() else { continue };
        let is_log = name == PAGES_FILE || (name.starts_with(&prefix) && name.ends_with(".tsv"));
        if is_log && name != own {
            others.push(name.to_owned());
        }
    }
    others.sort();
    logs.extend(others);
    Ok(logs)
}

/// Reads a line of the page log: the URL and its fingerprints.
pub(crate) fn parse_page_line(line: &str) -> Option<(&str, PageFingerprint)> {
    let mut f = line.split('\t');
    let url = f.next()?;
    let exact = f.next()?.parse().ok()?;
    let simhash = f.next()?.parse().ok()?;
    let words = f.next()?.parse().ok()?;
    Some((
        url,
        PageFingerprint {
            exact,
            simhash,
            words,
        },
    ))
}

/// A learned rule as the crawler keeps it: its predictions are pairs it fetched already, and
/// its checks are made on the URLs the crawl meets instead.
fn without_predictions(rule: &Rule) -> Rule {
    let mut rule = rule.clone();
    rule.predicts.clear();
    rule
}

#[cfg(test)]
#[path = "dust_tests.rs"]
mod tests;
