//! Learning rules from the pages a crawl fetched.
//!
//! 1. **Pages.** URLs of a host with the same content digest are one page. A URL fetched twice
//!    with different contents changes by itself (a front page): it is left out.
//! 2. **Candidates.** For each page with several URLs, each pair of its URLs proposes the rules
//!    that would map one onto the other ([`crate::diff`]): the parameters in which two URLs
//!    of one path differ, the token-aligned substring that turns one spelling into the other
//!    (also with its variable tokens as `*`, and with one more token of context), a default
//!    document, a trailing slash. A candidate is dropped unless at least
//!    [`LearnOptions::min_pages`] pages propose it, or their URLs number at least
//!    [`LearnOptions::min_urls`] (a form linked from every page with a different return
//!    address is one or two pages with many URLs).
//! 3. **Greedy acceptance.** Candidates are tried from the most pages to the fewest, the most
//!    general first. A candidate is applied, after the rules accepted so far, to every URL of
//!    the host; it is **rejected** if it puts two URLs of different pages on one URL (two
//!    pages whose SimHashes are within [`LearnOptions::max_distance`] bits do not count as
//!    different: a page with a counter in its text), or if it puts the URLs of fewer than
//!    `min_pages` pages with another URL of their page and saves fewer than `min_urls`
//!    fetches.
//!    Otherwise it is accepted, with its support: the pages it folded,
//!    the fetches it saves, and the share of its rewrites that landed on a URL of the same
//!    page.
//! 4. **Rounds.** The URLs of a page that the accepted rules left apart propose candidates
//!    again from their rewritten forms, and step 3 runs on the new ones, until a round
//!    accepts nothing (four rounds at most).
//!
//! The rules of a host are therefore checked together: applied in order to the URLs they were
//! learned from, they never put two different pages on one URL.

use std::collections::{HashMap, HashSet};

use crate::diff::{self, Candidate};
use crate::{Rule, RuleKind, RuleSet, Status, Support};

/// How a [`Learner`] judges evidence.
///
/// # Examples
///
/// ```
/// let o = url_dedup_rules::LearnOptions::default();
/// assert_eq!((o.min_pages, o.min_urls, o.max_distance, o.predictions), (3, 12, 3, 3));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LearnOptions {
    /// The fewest pages whose URLs a rule must fold, rightly, to be kept.
    pub min_pages: u64,
    /// A rule backed by fewer than `min_pages` pages is still kept when it saves at least this
    /// many fetches (URLs it puts with another URL of their page): the evidence of a login
    /// form linked from every article with the article as its return address. `u64::MAX`
    /// turns this off.
    pub min_urls: u64,
    /// Pages whose SimHashes are at most this many bits apart are not told apart (they
    /// neither support nor contradict a rule); `0` tells every digest apart.
    pub max_distance: u32,
    /// The most candidates tried per host, the best supported first.
    pub max_candidates: usize,
    /// The most predictions listed per rule.
    pub predictions: usize,
    /// The status learned rules get: [`Status::Candidate`] until checked (the default), or
    /// [`Status::Confirmed`] when the evidence is trusted as it is.
    pub status: Status,
}

impl Default for LearnOptions {
    fn default() -> Self {
        Self {
            min_pages: 3,
            min_urls: 12,
            max_distance: 3,
            max_candidates: 2_000,
            predictions: 3,
            status: Status::Candidate,
        }
    }
}

impl LearnOptions {
    /// The defaults with `min_pages` pages.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(url_dedup_rules::LearnOptions::default().with_min_pages(5).min_pages, 5);
    /// ```
    pub fn with_min_pages(mut self, min_pages: u64) -> Self {
        self.min_pages = min_pages.max(1);
        self
    }

    /// The defaults with `min_urls` URLs (at least 1).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(url_dedup_rules::LearnOptions::default().with_min_urls(40).min_urls, 40);
    /// ```
    pub fn with_min_urls(mut self, min_urls: u64) -> Self {
        self.min_urls = min_urls.max(1);
        self
    }

    /// These options with `status` for learned rules.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_rules::{LearnOptions, Status};
    /// assert_eq!(LearnOptions::default().with_status(Status::Confirmed).status, Status::Confirmed);
    /// ```
    pub fn with_status(mut self, status: Status) -> Self {
        self.status = status;
        self
    }

    /// These options with `max_distance`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(url_dedup_rules::LearnOptions::default().with_max_distance(0).max_distance, 0);
    /// ```
    pub fn with_max_distance(mut self, max_distance: u32) -> Self {
        self.max_distance = max_distance;
        self
    }
}

/// A URL the learner could not take.
///
/// # Examples
///
/// ```
/// let mut learner = url_dedup_rules::Learner::new(Default::default());
/// assert!(learner.add("/relative", 1, None).is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("not an absolute URL: {0:?}")]
pub struct NotAbsolute(pub String);

/// A page, as the learner knows it.
#[derive(Clone, Copy, Debug)]
struct Page {
    digest: u128,
    simhash: Option<u64>,
}

/// What the learner holds of one host.
#[derive(Debug, Default)]
struct HostData {
    /// The origin of each URL (`https://host`), by index into `origins`.
    origins: Vec<String>,
    /// Path, query and fragment of each URL, its origin, its page (`UNSTABLE` when fetched
    /// twice with different contents).
    urls: Vec<(String, u32, u32)>,
    by_url: HashMap<String, u32>,
    pages: Vec<Page>,
    by_digest: HashMap<u128, u32>,
}

const UNSTABLE: u32 = u32::MAX;

/// The most rounds of candidates a host's learning runs.
const MAX_ROUNDS: usize = 4;

/// Learns rules from `(URL, content)` pairs: feed it every page a crawl fetched, then
/// [`learn`](Self::learn).
///
/// URLs should be canonical (the form the deduplicator decides on), so that rules are learned
/// and applied on one form.
///
/// # Examples
///
/// ```
/// use url_dedup_rules::{Learner, LearnOptions, Rules};
///
/// let mut learner = Learner::new(LearnOptions::default());
/// for page in 0..5u128 {
///     learner.add(&format!("https://shop.example/item/{page}"), page, None)?;
///     learner.add(&format!("https://shop.example/item/{page}?sort=price"), page, None)?;
///     learner.add(&format!("https://shop.example/item/{page}?page=2"), 100 + page, None)?;
/// }
/// let learned = learner.learn();
/// assert_eq!(learned.rules.to_string().lines().filter(|l| l.starts_with("ignore-param")).collect::<Vec<_>>(),
///            [r#"ignore-param "sort" in "/**""#]);
/// let rules = Rules::new(&learned.rules);
/// assert_eq!(rules.apply("https://shop.example/item/9?sort=name"), "https://shop.example/item/9");
/// assert_eq!(rules.apply("https://shop.example/item/9?page=2"), "https://shop.example/item/9?page=2");
/// # Ok::<(), url_dedup_rules::NotAbsolute>(())
/// ```
#[derive(Debug)]
pub struct Learner {
    options: LearnOptions,
    hosts: Vec<(String, HostData)>,
    host_index: HashMap<String, usize>,
}

/// A rule that was rejected because it would fold different pages.
///
/// # Examples
///
/// See [`Report`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejected {
    /// The host.
    pub host: String,
    /// The rule.
    pub kind: RuleKind,
    /// Two URLs of different pages it would put on one URL.
    pub example: (String, String),
}

/// What a learning run saw and did.
///
/// # Examples
///
/// ```
/// let mut learner = url_dedup_rules::Learner::new(Default::default());
/// learner.add("https://h.example/a", 1, None)?;
/// learner.add("https://h.example/a?x=1", 1, None)?;
/// learner.add("https://h.example/a", 2, None)?; // changed between fetches
/// let report = learner.learn().report;
/// assert_eq!((report.urls, report.unstable_urls, report.pages), (2, 1, 1));
/// # Ok::<(), url_dedup_rules::NotAbsolute>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Hosts seen.
    pub hosts: usize,
    /// Distinct URLs seen.
    pub urls: u64,
    /// URLs left out because their content changed between fetches.
    pub unstable_urls: u64,
    /// Distinct pages (contents) seen.
    pub pages: u64,
    /// URLs of a page beyond its first: the duplicate fetches in the input.
    pub duplicate_urls: u64,
    /// Candidates tried.
    pub candidates: u64,
    /// Rules accepted.
    pub rules: u64,
    /// Candidates rejected because they fold different pages.
    pub rejected: Vec<Rejected>,
}

/// Rules and the report of a learning run.
///
/// # Examples
///
/// See [`Learner`].
#[derive(Clone, Debug, Default)]
pub struct Learned {
    /// The rules, host by host.
    pub rules: RuleSet,
    /// What the run saw and did.
    pub report: Report,
}

impl Learner {
    /// An empty learner.
    ///
    /// # Examples
    ///
    /// See [`Learner`].
    pub fn new(options: LearnOptions) -> Self {
        Self {
            options,
            hosts: Vec::new(),
            host_index: HashMap::new(),
        }
    }

    /// Records that `url` served the page whose exact digest is `digest` (and SimHash
    /// `simhash`, when known).
    ///
    /// # Errors
    ///
    /// [`NotAbsolute`] when `url` has no `scheme://host`; nothing is recorded.
    ///
    /// # Examples
    ///
    /// See [`Learner`].
    pub fn add(
        &mut self,
        url: &str,
        digest: u128,
        simhash: Option<u64>,
    ) -> Result<(), NotAbsolute> {
        let p = crate::parts::split(url).ok_or_else(|| NotAbsolute(url.to_owned()))?;
        let h = match self.host_index.get(p.host) {
            Some(&h) => h,
            None => {
                self.hosts.push((p.host.to_owned(), HostData::default()));
                self.host_index
                    .insert(p.host.to_owned(), self.hosts.len() - 1);
                self.hosts.len() - 1
            }
        };
        let data = &mut self.hosts[h].1;
        let page = match data.by_digest.get(&digest) {
            Some(&i) => i,
            None => {
                data.pages.push(Page { digest, simhash });
                let i = (data.pages.len() - 1) as u32;
                data.by_digest.insert(digest, i);
                i
            }
        };
        match data.by_url.get(p.rest) {
            Some(&u) => {
                let entry = &mut data.urls[u as usize];
                if entry.2 != page {
                    entry.2 = UNSTABLE;
                }
            }
            None => {
                let origin = match data.origins.iter().position(|o| o == p.origin) {
                    Some(o) => o as u32,
                    None => {
                        data.origins.push(p.origin.to_owned());
                        (data.origins.len() - 1) as u32
                    }
                };
                data.by_url
                    .insert(p.rest.to_owned(), data.urls.len() as u32);
                data.urls.push((p.rest.to_owned(), origin, page));
            }
        }
        Ok(())
    }

    /// The number of distinct URLs recorded.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut l = url_dedup_rules::Learner::new(Default::default());
    /// l.add("https://h/a", 1, None)?;
    /// l.add("https://h/a", 1, None)?;
    /// assert_eq!(l.len(), 1);
    /// # Ok::<(), url_dedup_rules::NotAbsolute>(())
    /// ```
    pub fn len(&self) -> usize {
        self.hosts.iter().map(|(_, d)| d.urls.len()).sum()
    }

    /// Whether nothing was recorded.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(url_dedup_rules::Learner::new(Default::default()).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Learns the rules of every host (the module documentation says how).
    ///
    /// # Examples
    ///
    /// See [`Learner`].
    pub fn learn(&self) -> Learned {
        let mut learned = Learned::default();
        for (host, data) in &self.hosts {
            let report = &mut learned.report;
            report.hosts += 1;
            report.urls += data.urls.len() as u64;
            report.unstable_urls += data.urls.iter().filter(|u| u.2 == UNSTABLE).count() as u64;
            let used: HashSet<u32> = data
                .urls
                .iter()
                .map(|u| u.2)
                .filter(|&p| p != UNSTABLE)
                .collect();
            report.pages += used.len() as u64;
            report.duplicate_urls +=
                data.urls.iter().filter(|u| u.2 != UNSTABLE).count() as u64 - used.len() as u64;
            for rule in HostLearner::new(self.options, host, data, report).run() {
                learned.rules.push(host, rule);
            }
        }
        learned
    }
}

/// One host's learning run.
struct HostLearner<'a> {
    o: LearnOptions,
    host: &'a str,
    data: &'a HostData,
    report: &'a mut Report,
    /// The URLs taken (stable ones), by index into `data.urls`.
    taken: Vec<u32>,
    /// Each taken URL's current rewritten form.
    key: Vec<String>,
    /// Taken URLs (positions in `taken`) by current form.
    groups: HashMap<String, Vec<u32>>,
}

impl<'a> HostLearner<'a> {
    fn new(o: LearnOptions, host: &'a str, data: &'a HostData, report: &'a mut Report) -> Self {
        let taken: Vec<u32> = (0..data.urls.len() as u32)
            .filter(|&u| data.urls[u as usize].2 != UNSTABLE)
            .collect();
        let key: Vec<String> = taken
            .iter()
            .map(|&u| data.urls[u as usize].0.clone())
            .collect();
        let mut groups: HashMap<String, Vec<u32>> = HashMap::new();
        for (i, k) in key.iter().enumerate() {
            groups.entry(k.clone()).or_default().push(i as u32);
        }
        Self {
            o,
            host,
            data,
            report,
            taken,
            key,
            groups,
        }
    }

    fn page(&self, i: u32) -> u32 {
        self.data.urls[self.taken[i as usize] as usize].2
    }

    fn url(&self, i: u32, rest: &str) -> String {
        let origin = &self.data.origins[self.data.urls[self.taken[i as usize] as usize].1 as usize];
        format!("{origin}{rest}")
    }

    /// Whether pages `a` and `b` are told apart.
    fn different(&self, a: u32, b: u32) -> bool {
        if a == b {
            return false;
        }
        let (pa, pb) = (self.data.pages[a as usize], self.data.pages[b as usize]);
        match (pa.simhash, pb.simhash) {
            (Some(x), Some(y)) if self.o.max_distance > 0 => {
                (x ^ y).count_ones() > self.o.max_distance
            }
            _ => pa.digest != pb.digest,
        }
    }

    /// The candidates proposed by the current forms of each page's URLs, best first, but for
    /// those in `tried`.
    fn candidates(&self, tried: &HashSet<RuleKind>) -> Vec<RuleKind> {
        let mut by_page: HashMap<u32, Vec<u32>> = HashMap::new();
        for i in 0..self.taken.len() as u32 {
            by_page.entry(self.page(i)).or_default().push(i);
        }
        // Candidate -> (pages proposing it, their URLs beyond the first, its most general rank).
        let mut found: HashMap<RuleKind, (u64, u64, u8)> = HashMap::new();
        let mut scratch: Vec<Candidate> = Vec::new();
        let mut pages: Vec<(&u32, &Vec<u32>)> =
            by_page.iter().filter(|(_, m)| m.len() > 1).collect();
        pages.sort_unstable_by_key(|(p, _)| **p);
        for (_, members) in pages {
            let mut members: Vec<&str> = members
                .iter()
                .map(|&i| self.key[i as usize].as_str())
                .collect();
            members.sort_unstable_by_key(|m| (m.len(), *m));
            scratch.clear();
            // All pairs of a small page; each URL with the shortest three of a large one.
            let reps = if members.len() <= 12 {
                members.len()
            } else {
                3
            };
            for (x, a) in members.iter().enumerate() {
                for b in members.iter().take(reps).skip(x + 1) {
                    diff::candidates(a, b, &mut scratch);
                }
                if x >= reps {
                    for b in members.iter().take(reps) {
                        diff::candidates(a, b, &mut scratch);
                    }
                }
            }
            scratch.sort();
            scratch.dedup_by(|x, y| x.0 == y.0);
            let extra = members.len() as u64 - 1;
            for (kind, rank) in scratch.drain(..) {
                let e = found.entry(kind).or_insert((0, 0, rank));
                e.0 += 1;
                e.1 += extra;
                e.2 = e.2.min(rank);
            }
        }
        let mut list: Vec<(RuleKind, u64, u64, u8)> = found
            .into_iter()
            .filter(|(k, (n, u, _))| self.enough(*n, *u) && !tried.contains(k))
            .map(|(k, (n, u, r))| (k, n, u, r))
            .collect();
        list.sort_by(|a, b| {
            b.1.cmp(&a.1)
                .then(b.2.cmp(&a.2))
                .then(a.3.cmp(&b.3))
                .then_with(|| a.0.cmp(&b.0))
        });
        list.truncate(self.o.max_candidates);
        list.into_iter().map(|(k, ..)| k).collect()
    }

    /// Whether `pages` pages, with `urls` URLs beyond the first of each, back a rule.
    fn enough(&self, pages: u64, urls: u64) -> bool {
        pages >= self.o.min_pages || urls >= self.o.min_urls
    }

    /// Rounds of candidates and acceptance: after each round, the URLs of a page that the
    /// rules did not bring together propose candidates again from their new forms (a
    /// default document is proposed again once a trailing slash is gone), until a round
    /// accepts nothing.
    fn run(mut self) -> Vec<Rule> {
        let mut rules = Vec::new();
        let mut tried: HashSet<RuleKind> = HashSet::new();
        for _round in 0..MAX_ROUNDS {
            let before = rules.len();
            for kind in self.candidates(&tried) {
                tried.insert(kind.clone());
                self.report.candidates += 1;
                if let Some(rule) = self.try_rule(kind) {
                    self.report.rules += 1;
                    rules.push(rule);
                }
            }
            if rules.len() == before {
                break;
            }
        }
        rules
    }

    /// Applies `kind` after the accepted rules; keeps it if it folds enough pages and no two
    /// different ones.
    fn try_rule(&mut self, kind: RuleKind) -> Option<Rule> {
        let moved: Vec<(u32, String)> = (0..self.key.len() as u32)
            .filter(|&i| kind.may_apply(&self.key[i as usize]))
            .filter_map(|i| kind.rewrite(&self.key[i as usize]).map(|k| (i, k)))
            .collect();
        if moved.is_empty() {
            return None;
        }
        let moving: HashSet<u32> = moved.iter().map(|m| m.0).collect();
        let mut arriving: HashMap<&str, Vec<u32>> = HashMap::new();
        for (i, k) in &moved {
            arriving.entry(k.as_str()).or_default().push(*i);
        }
        // Pages some of whose URLs the rule puts with another URL of the same page that was not
        // with it before (a group another rule made, moved whole, helps no page).
        let mut helped: HashSet<u32> = HashSet::new();
        let (mut saved_after, mut confirmed) = (0u64, 0u64);
        for (k, movers) in &arriving {
            let staying = self
                .groups
                .get(*k)
                .map(|g| {
                    g.iter()
                        .copied()
                        .filter(|i| !moving.contains(i))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default();
            let group: Vec<u32> = staying.iter().chain(movers.iter()).copied().collect();
            let mut distinct: Vec<(u32, u32)> = group.iter().map(|&i| (self.page(i), i)).collect();
            distinct.sort_unstable();
            distinct.dedup_by_key(|p| p.0);
            for (x, &(a, ia)) in distinct.iter().enumerate() {
                for &(b, ib) in &distinct[x + 1..] {
                    if self.different(a, b) {
                        let (ua, ub) = (self.original(ia), self.original(ib));
                        self.report.rejected.push(crate::Rejected {
                            host: self.host.to_owned(),
                            kind,
                            example: (ua, ub),
                        });
                        return None;
                    }
                }
            }
            saved_after += (group.len() - distinct.len()) as u64;
            // Each page of the group with the forms its URLs had before the rule.
            let mut before: HashMap<u32, HashSet<&str>> = HashMap::new();
            for &g in &group {
                let p = self.page(g);
                before
                    .entry(p)
                    .or_default()
                    .insert(self.key[g as usize].as_str());
            }
            for &m in movers {
                let p = self.page(m);
                if before.get(&p).is_some_and(|forms| forms.len() > 1) {
                    confirmed += 1;
                    helped.insert(p);
                }
            }
        }
        // The fetches saved before, in the groups the movers leave and join.
        let mut touched: HashSet<&str> = arriving.keys().copied().collect();
        for (i, _) in &moved {
            touched.insert(self.key[*i as usize].as_str());
        }
        let saved_before: u64 = touched
            .iter()
            .filter_map(|k| self.groups.get(*k))
            .map(|g| {
                let mut p: Vec<u32> = g.iter().map(|&i| self.page(i)).collect();
                p.sort_unstable();
                p.dedup();
                (g.len() - p.len()) as u64
            })
            .sum();
        let saved_left: u64 = touched
            .iter()
            .filter(|k| !arriving.contains_key(*k))
            .filter_map(|k| self.groups.get(*k))
            .map(|g| {
                let rest: Vec<u32> = g.iter().copied().filter(|i| !moving.contains(i)).collect();
                let mut p: Vec<u32> = rest.iter().map(|&i| self.page(i)).collect();
                p.sort_unstable();
                p.dedup();
                (rest.len() - p.len()) as u64
            })
            .sum();
        // The fetches saved, not the URLs moved, back a rule by URLs: a rule that moves a group
        // other rules made folds nothing new.
        let saved = (saved_after + saved_left).saturating_sub(saved_before);
        if !self.enough(helped.len() as u64, saved) {
            return None;
        }
        // Predictions: rewrites not yet confirmed by a fetched URL of the same page first.
        let mut predicts: Vec<(String, String)> = Vec::new();
        for pass in [false, true] {
            for (i, k) in &moved {
                if predicts.len() >= self.o.predictions {
                    break;
                }
                let p = self.page(*i);
                let confirmed_here = arriving[k.as_str()]
                    .iter()
                    .chain(self.groups.get(k).into_iter().flatten())
                    .any(|&g| g != *i && self.page(g) == p);
                if confirmed_here == pass {
                    let pair = (self.original(*i), self.url(*i, k));
                    if !predicts.contains(&pair) {
                        predicts.push(pair);
                    }
                }
            }
        }
        let support = Support {
            pages: helped.len() as u64,
            saved,
            confidence: (100 * confirmed / moved.len() as u64) as u8,
        };
        // Accept: move the URLs.
        for (i, k) in moved {
            let old = std::mem::replace(&mut self.key[i as usize], k.clone());
            if let Some(g) = self.groups.get_mut(&old) {
                g.retain(|&x| x != i);
                if g.is_empty() {
                    self.groups.remove(&old);
                }
            }
            self.groups.entry(k).or_default().push(i);
        }
        Some(Rule {
            kind,
            support,
            status: self.o.status,
            checked: 0,
            predicts,
        })
    }

    /// The URL as it was recorded.
    fn original(&self, i: u32) -> String {
        self.url(i, &self.data.urls[self.taken[i as usize] as usize].0)
    }
}
