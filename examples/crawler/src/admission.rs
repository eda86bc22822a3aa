//! The admission rules, in one place for the single-process and the shared crawl: which of the
//! links found may join the crawl, and which queued URLs may be fetched now.
//!
//! A link is admitted when, in this order:
//!
//! 1. it has a canonical form ([`crate::canonical`]);
//! 2. its canonical form is in the crawl's scope ([`crate::scope`]), unless it is a requisite:
//!    what an admitted page needs to be shown is fetched wherever it is (`wget -p`); and,
//!    unless it is a seed or a requisite, it passes `--accept-regex` and `--reject-regex`;
//! 3. it passes the trap rules at its depth: length, `/` count, repeated segments, depth
//!    ([`crate::traps`]);
//! 4. when it continues the template of the page it was found on, that template's budget is
//!    not used up (a URL refused here stays out of the done set, so a link from a page of
//!    another template still admits it);
//! 5. the done set says it is new (exactly one process is told so, however many race);
//!    with `--similar`, a new URL similar to earlier ones is skipped (and remembered);
//! 6. with rules (`--learn`, `--rules`, [`crate::dust`]), a new URL that the rules rewrite
//!    onto another is queued only when that other URL is new to the done set too (it is added
//!    there, so exactly one alias of a page is queued); else it is skipped, naming the rule;
//! 7. its host ([`crate::job::host_of`]) has not used up `--host-budget`: the backend counts
//!    and queues in one step, so processes racing for the last place cannot both take it.
//!
//! Budgets count the URLs queued: a URL counted against its template's budget and then not
//! queued (similar, or its host's budget used up) is given back.
//!
//! A queued URL is fetched when its host's robots.txt allows it, the confirmed rules do not map
//! it onto a page this process fetched since it was queued ([`at_dispatch`],
//! [`crate::aliases`]), and the `--max-pages` budget has room ([`FetchBudget`]).
//!
//! The backend ([`crate::backend::Backend`]) stores the done set and the budgets' counts; it
//! decides nothing itself.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use url::Url;

use crate::aliases::FetchedAliases;
use crate::backend::{Backend, Commit, Done};
use crate::canonical::Canonicalizer;
use crate::done::Verdict;
use crate::dust::Applied;
use crate::error::CrawlError;
use crate::job::{Job, JobKind};
use crate::options::CrawlConfig;
use crate::robots::RobotsRules;
use crate::skip::SkipReason;
use crate::template::{self, Lineage};

/// A link found, before canonicalization.
#[derive(Clone, Debug)]
pub(crate) struct Candidate {
    pub(crate) url: Url,
    pub(crate) depth: u32,
    pub(crate) hops: u32,
    pub(crate) kind: JobKind,
}

/// A link offered to the crawl, with the page it was found on (none for seeds and sitemaps
/// named by robots.txt).
#[derive(Clone, Debug)]
pub(crate) struct Offer {
    pub(crate) from: Option<Arc<str>>,
    pub(crate) candidate: Candidate,
}

/// A URL left out, for the skip report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) reason: SkipReason,
    pub(crate) url: String,
    pub(crate) detail: String,
}

/// What the rules decided about a batch of offers.
#[derive(Debug, Default)]
pub(crate) struct Admitted {
    /// The URLs queued.
    pub(crate) queued: Vec<Arc<str>>,
    pub(crate) refusals: Vec<Refusal>,
    /// Links the done set had seen already.
    pub(crate) duplicates: u64,
    /// Links whose canonical form differs from their spelling on the page.
    pub(crate) canonicalized: u64,
}

/// The rules of one crawl.
#[derive(Debug)]
pub(crate) struct Rules<'a> {
    pub(crate) canon: &'a Canonicalizer,
    pub(crate) config: &'a CrawlConfig,
    /// The URL rules that map aliases of a page onto one URL (`--learn`, `--rules`).
    pub(crate) dust: Option<Applied>,
}

impl Rules<'_> {
    /// The canonical form of `link` if the crawl may follow it at `depth` as a `kind`: steps 1
    /// to 3. A `seed` was chosen by the user: link patterns do not apply to it (nor to
    /// requisites, which a page needs). The mirror's links are rewritten by the same verdict.
    pub(crate) fn vet(
        &self,
        link: &Url,
        depth: u32,
        kind: JobKind,
        seed: bool,
    ) -> Result<Url, Refusal> {
        let chosen = seed || kind == JobKind::Requisite;
        let url = self.canon.canonicalize(link).map_err(|reason| Refusal {
            reason,
            url: link.to_string(),
            detail: "no canonical form".into(),
        })?;
        if kind != JobKind::Requisite && !self.config.scope.contains(&url) {
            return Err(Refusal {
                reason: SkipReason::OutOfScope,
                url: url.into(),
                detail: String::new(),
            });
        }
        if !chosen && let Some(why) = self.config.patterns.refuses(url.as_str()) {
            return Err(Refusal {
                reason: SkipReason::Pattern,
                url: url.into(),
                detail: why,
            });
        }
        if let Err(reason) = self.config.traps.check(&url, depth) {
            return Err(Refusal {
                reason,
                url: url.into(),
                detail: format!("depth {depth}"),
            });
        }
        Ok(url)
    }

    /// Decides about a batch of offers (from any number of pages) and commits the batch:
    /// the new URLs are queued and the jobs `done` completed in one backend commit, so a
    /// finished page's links are queued before it counts as done.
    pub(crate) async fn admit<B: Backend>(
        &self,
        backend: &B,
        offers: Vec<Offer>,
        done: Vec<Done>,
    ) -> Result<Admitted, CrawlError> {
        let mut out = Admitted::default();
        let mut distinct = HashSet::new();
        let mut vetted = Vec::with_capacity(offers.len());
        for Offer { from, candidate: c } in offers {
            let seed = from.is_none() && c.depth == 0;
            let url = match self.vet(&c.url, c.depth, c.kind, seed) {
                Ok(url) => url,
                Err(refusal) => {
                    out.refusals.push(refusal);
                    continue;
                }
            };
            if url.as_str() != c.url.as_str() {
                out.canonicalized += 1;
            }
            if !distinct.insert(url.to_string()) {
                out.duplicates += 1;
                continue;
            }
            let job = Job::new(url.as_str(), c.depth, c.hops, c.kind);
            // Requisites are not links of the page's template: they never count against a
            // template budget.
            let lineage = from
                .as_deref()
                .filter(|_| c.kind != JobKind::Requisite)
                .and_then(|page| Lineage::of(page, &job.url));
            vetted.push((job, lineage));
        }
        // Step 4, then step 5 for what is left.
        let (vetted, mut counted) = self
            .within_template_budgets(backend, vetted, &mut out)
            .await?;
        let verdicts = match vetted.is_empty() {
            true => Vec::new(),
            false => {
                let urls = vetted.iter().map(|(j, _)| j.url.to_string()).collect();
                backend.admit(urls).await?
            }
        };
        let mut new = Vec::new();
        for ((job, lineage), verdict) in vetted.into_iter().zip(verdicts) {
            match verdict {
                Verdict::New => {
                    new.push((job, lineage));
                    continue;
                }
                Verdict::Duplicate => out.duplicates += 1,
                // Kept in the done set, so the next link to it is a plain duplicate.
                Verdict::Similar(why) => out.refusals.push(Refusal {
                    reason: SkipReason::Similar,
                    url: job.url.to_string(),
                    detail: why,
                }),
            }
        }
        // Step 6.
        let queue = self.by_rules(backend, new, &mut out).await?;
        // Step 7, in the backend's commit.
        let urls: Vec<Arc<str>> = queue.iter().map(|(j, _)| j.url.clone()).collect();
        let commit = Commit {
            queue,
            host_budget: self.config.traps.host_budget,
            done,
        };
        let queued = backend.commit(commit).await?;
        for (url, queued) in urls.into_iter().zip(queued) {
            if queued {
                counted.remove(&*url);
                out.queued.push(url);
            } else {
                out.refusals.push(Refusal {
                    reason: SkipReason::HostBudget,
                    url: url.to_string(),
                    detail: String::new(),
                });
            }
        }
        // A template budget counts the URLs queued: what was counted and not queued (a
        // duplicate found in a race, a similar URL, a host's budget) is given back.
        if !counted.is_empty() {
            backend
                .count_templates(counted.into_values().collect(), -1)
                .await?;
        }
        Ok(out)
    }

    /// Step 6: `new` without the URLs that the rules rewrite onto a URL the done set has
    /// (or another URL of this batch had): the rewrite joins the done set in their stead.
    async fn by_rules<B: Backend>(
        &self,
        backend: &B,
        new: Vec<(Job, Option<Lineage>)>,
        out: &mut Admitted,
    ) -> Result<Vec<(Job, Option<Lineage>)>, CrawlError> {
        let Some(dust) = self.dust.as_ref().filter(|d| !d.is_empty()) else {
            return Ok(new);
        };
        let rewrites: Vec<Option<(String, String)>> =
            new.iter().map(|(j, _)| dust.rewrite(&j.url)).collect();
        let keys: Vec<String> = rewrites.iter().flatten().map(|(k, _)| k.clone()).collect();
        if keys.is_empty() {
            return Ok(new);
        }
        let mut verdicts = backend.admit(keys).await?.into_iter();
        let mut queue = Vec::with_capacity(new.len());
        for ((job, lineage), rewrite) in new.into_iter().zip(rewrites) {
            let Some((key, why)) = rewrite else {
                queue.push((job, lineage));
                continue;
            };
            match verdicts.next() {
                Some(Verdict::Duplicate) => out.refusals.push(Refusal {
                    reason: SkipReason::DustRule,
                    url: job.url.to_string(),
                    detail: format!("{why} -> {key}"),
                }),
                _ => queue.push((job, lineage)),
            }
        }
        Ok(queue)
    }

    /// Step 4: `vetted` without the URLs that continue their page's template past its budget,
    /// and the template key counted for each URL let through (by URL). A URL already in the
    /// done set costs no budget. Processes finding one new URL at once may both count it: a
    /// budget can run out a few URLs early, never late.
    async fn within_template_budgets<B: Backend>(
        &self,
        backend: &B,
        vetted: Vec<(Job, Option<Lineage>)>,
        out: &mut Admitted,
    ) -> Result<(Vec<(Job, Option<Lineage>)>, HashMap<String, String>), CrawlError> {
        let mut kept = HashMap::new();
        let budgeted: Vec<usize> = (0..vetted.len())
            .filter(|&i| vetted[i].1.is_some())
            .collect();
        if budgeted.is_empty() {
            return Ok((vetted, kept));
        }
        let urls = budgeted
            .iter()
            .map(|&i| vetted[i].0.url.to_string())
            .collect();
        let seen = backend.seen(urls).await?;
        let mut counted = Vec::new();
        for (&i, seen) in budgeted.iter().zip(seen) {
            if seen {
                // Not new: the done set will say so, at no budget's cost.
                continue;
            }
            let (job, lineage) = &vetted[i];
            if let Some(lineage) = lineage {
                counted.push((i, template::key(&job.url, *lineage)));
            }
        }
        if counted.is_empty() {
            return Ok((vetted, kept));
        }
        let keys = counted.iter().map(|(_, k)| k.clone()).collect();
        let counts = backend.count_templates(keys, 1).await?;
        let budget = self.config.traps.template_budget;
        let mut keep = vec![true; vetted.len()];
        let mut over = Vec::new();
        for ((i, key), count) in counted.into_iter().zip(counts) {
            if count > budget {
                keep[i] = false;
                out.refusals.push(Refusal {
                    reason: SkipReason::TemplateBudget,
                    url: vetted[i].0.url.to_string(),
                    detail: key.clone(),
                });
                over.push(key);
            } else {
                kept.insert(vetted[i].0.url.to_string(), key);
            }
        }
        // A refused URL is not counted: the budget counts URLs let through.
        if !over.is_empty() {
            backend.count_templates(over, -1).await?;
        }
        let vetted = vetted
            .into_iter()
            .zip(keep)
            .filter_map(|(v, keep)| keep.then_some(v))
            .collect();
        Ok((vetted, kept))
    }
}

/// Adds `urls` to the done set, whatever it says: the URLs that newly confirmed rules map
/// fetched pages onto, so that later aliases of those pages are skipped (step 6).
pub(crate) async fn mark<B: Backend>(backend: &B, urls: Vec<String>) -> Result<(), CrawlError> {
    if !urls.is_empty() {
        backend.admit(urls).await?;
    }
    Ok(())
}

/// Whether a queued URL may be fetched: `None`, or why not (its host's robots.txt, or rules
/// confirmed since it was queued that map it onto a page fetched). A revisit of a page
/// (`--every`) and what is not a page are fetched whatever the rules say.
pub(crate) fn at_dispatch(
    robots: &RobotsRules,
    aliases: &FetchedAliases,
    job: &Job,
) -> Option<(SkipReason, String)> {
    if job.kind == JobKind::Page
        && job.revisit.is_none()
        && let Some(why) = aliases.skip(&job.url)
    {
        return Some((SkipReason::DustRule, why));
    }
    let reason = robots.verdict(&job.url)?;
    let detail = match robots {
        RobotsRules::Unreachable(why) => why.clone(),
        _ => String::new(),
    };
    Some((reason, detail))
}

/// The `--max-pages` budget of this process: fetches started, pages of earlier runs included.
#[derive(Debug)]
pub(crate) struct FetchBudget {
    max: Option<u64>,
    started: AtomicU64,
    used_up: AtomicBool,
}

impl FetchBudget {
    /// A budget of `max` fetches, `before` of them used by earlier runs.
    pub(crate) fn new(max: Option<u64>, before: u64) -> Self {
        Self {
            max,
            started: AtomicU64::new(before),
            used_up: AtomicBool::new(false),
        }
    }

    /// Takes one fetch from the budget; `false` when it is used up (the crawl then stops).
    pub(crate) fn take(&self) -> bool {
        let Some(max) = self.max else {
            return true;
        };
        if self.started.fetch_add(1, Ordering::Relaxed) < max {
            return true;
        }
        self.used_up.store(true, Ordering::Relaxed);
        false
    }

    /// Whether a fetch was refused for want of budget.
    pub(crate) fn used_up(&self) -> bool {
        self.used_up.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    //! The same scenarios through both backends: the rules decide the same way whether the
    //! crawl lives in this process or in Redis.

    use std::path::Path;

    use clap::Parser;

    use super::*;
    use crate::backend::local::LocalBackend;
    use crate::backend::shared::{SharedBackend, SharedSettings};
    use crate::options::Options;

    fn config(out: &Path, extra: &[&str]) -> CrawlConfig {
        let mut args = vec!["crawler", "http://h.example/", "http://g.example/"];
        args.extend(["http://t.example/", "--out"]);
        args.push(out.to_str().unwrap());
        args.extend(extra);
        Options::parse_from(args).config().unwrap()
    }

    /// What happened to each offered link: queued, or left out and why.
    #[derive(Debug, PartialEq, Eq)]
    enum Fate {
        Queued,
        Duplicate,
        Refused(SkipReason),
    }

    /// Offers `links` found on `from` (none: seeds) as the engine does, and says what became
    /// of each, by its canonical form.
    async fn offer<B: Backend>(
        rules: &Rules<'_>,
        backend: &B,
        from: Option<&str>,
        links: &[&str],
    ) -> Vec<(String, Fate)> {
        let offers = links
            .iter()
            .map(|u| Offer {
                from: from.map(Arc::from),
                candidate: Candidate {
                    url: Url::parse(u).unwrap(),
                    depth: 1,
                    hops: 0,
                    kind: JobKind::Page,
                },
            })
            .collect();
        let admitted = rules.admit(backend, offers, Vec::new()).await.unwrap();
        let mut fates: Vec<(String, Fate)> = admitted
            .refusals
            .iter()
            .map(|r| (r.url.clone(), Fate::Refused(r.reason)))
            .collect();
        fates.extend(
            admitted
                .queued
                .iter()
                .map(|u| (u.to_string(), Fate::Queued)),
        );
        fates.sort_by(|a, b| a.0.cmp(&b.0));
        let duplicates = links.len() - fates.len();
        assert_eq!(admitted.duplicates as usize, duplicates);
        fates
    }

    fn fates(list: &[(&str, Fate)]) -> Vec<(String, Fate)> {
        let mut v: Vec<(String, Fate)> = list
            .iter()
            .map(|(u, f)| {
                let f = match f {
                    Fate::Queued => Fate::Queued,
                    Fate::Duplicate => Fate::Duplicate,
                    Fate::Refused(r) => Fate::Refused(*r),
                };
                (u.to_string(), f)
            })
            .filter(|(_, f)| *f != Fate::Duplicate)
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// The scenarios, run on one backend of a crawl with a host budget of 3 and a template
    /// budget of 2.
    async fn scenarios<B: Backend>(rules: &Rules<'_>, b: &B) {
        use Fate::*;
        use SkipReason as R;
        // Scope, canonical forms and duplicates within and across batches; http and https of
        // one host are one host.
        assert_eq!(
            offer(
                rules,
                b,
                None,
                &[
                    "http://h.example/a",
                    "http://h.example/a#top",
                    "https://h.example/b",
                    "http://elsewhere.example/",
                    "http://g.example/x",
                ]
            )
            .await,
            fates(&[
                ("http://h.example/a", Queued),
                ("http://h.example/a", Duplicate),
                ("https://h.example/b", Queued),
                ("http://elsewhere.example/", Refused(R::OutOfScope)),
                ("http://g.example/x", Queued),
            ])
        );
        assert_eq!(
            offer(
                rules,
                b,
                None,
                &["http://h.example/a", "http://h.example/c"]
            )
            .await,
            fates(&[
                ("http://h.example/a", Duplicate),
                ("http://h.example/c", Queued)
            ])
        );
        // The host budget (3) is used up by a, b and c: http and https alike.
        assert_eq!(
            offer(
                rules,
                b,
                None,
                &["https://h.example/d", "http://g.example/y"]
            )
            .await,
            fates(&[
                ("https://h.example/d", Refused(R::HostBudget)),
                ("http://g.example/y", Queued),
            ])
        );
        // A template continued from a page of its own template has a budget (2); a URL it
        // refuses stays out of the done set, so a link from elsewhere admits it, and links
        // from elsewhere do not count against it.
        let month = |m: u32| format!("http://t.example/cal/2026/{m}");
        let (m1, m2, m3, m4) = (month(1), month(2), month(3), month(4));
        assert_eq!(
            offer(rules, b, Some(&month(0)), &[&m1, &m2, &m3]).await,
            fates(&[
                (&m1, Queued),
                (&m2, Queued),
                (&m3, Refused(R::TemplateBudget)),
            ])
        );
        assert_eq!(
            offer(rules, b, Some(&month(0)), &[&m4]).await,
            fates(&[(&m4, Refused(R::TemplateBudget))])
        );
        assert_eq!(
            offer(rules, b, None, &[&m3, &m4]).await,
            fates(&[(&m3, Queued), (&m4, Refused(R::HostBudget))])
        );
        // A URL counted against its template and refused by its host's budget is given back
        // to the template: g.example's budget is used up, its template's is not.
        let day = |d: u32| format!("http://g.example/day/{d}");
        assert_eq!(
            offer(rules, b, None, &[&day(1)]).await,
            fates(&[(&day(1), Queued)])
        );
        for d in 2..5 {
            assert_eq!(
                offer(rules, b, Some(&day(1)), &[&day(d)]).await,
                fates(&[(&day(d), Refused(R::HostBudget))]),
                "day {d}"
            );
        }
        // Trap rules at the link's depth.
        let deep = format!("http://g.example/{}", "a/".repeat(40));
        assert_eq!(
            offer(rules, b, None, &[&deep]).await,
            fates(&[(deep.trim_end_matches('/'), Refused(R::TooManySlashes))])
                .into_iter()
                .map(|(_, f)| (deep.clone(), f))
                .collect::<Vec<_>>()
        );
    }

    const RULES: [&str; 4] = ["--host-budget", "3", "--template-budget", "2"];

    #[tokio::test]
    async fn the_rules_decide_in_a_single_process_crawl() {
        let dir = tempfile::tempdir().unwrap();
        let config = config(dir.path(), &RULES);
        let (backend, _records) = LocalBackend::open(dir.path(), &config, "test").unwrap();
        let canon = Canonicalizer::default();
        let rules = Rules {
            canon: &canon,
            config: &config,
            dust: None,
        };
        scenarios(&rules, &backend).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_rules_decide_the_same_in_a_shared_crawl() {
        let Some(redis) =
            url_dedup_redis::testing::RedisServer::start_or_skip("rules in a shared crawl")
        else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let config = config(dir.path(), &RULES);
        let settings = SharedSettings {
            redis: redis.url(),
            name: "rules".into(),
            lease: std::time::Duration::from_secs(60),
            log_cap: 100,
            every: None,
            backoff: url_dedup_redis::Backoff::default(),
            acknowledge: None,
            stripes: 2,
            continue_after_reset: false,
        };
        let (backend, _records) = SharedBackend::open(&config, &settings, "test")
            .await
            .unwrap();
        let canon = Canonicalizer::default();
        let rules = Rules {
            canon: &canon,
            config: &config,
            dust: None,
        };
        scenarios(&rules, &backend).await;
    }

    #[test]
    fn a_page_queued_before_its_rule_is_skipped_at_dispatch_and_nothing_else() {
        let given = url_dedup_rules::RuleSet::parse(
            "rules-format 1\nhost \"h.example\"\nignore-param \"sid\" in \"/**\"\n",
        )
        .unwrap();
        let mut dust = crate::dust::Dust::new(true, None, Some(&crate::dust::trusted(given)));
        let fp = url_dedup_fingerprint::Fingerprinter::new()
            .fingerprint(b"<html><body><main><p>one page under two names</p></main></body></html>");
        dust.observe("http://h.example/a", fp);
        let aliases = dust.aliases();
        let robots = RobotsRules::AllowAll;
        let alias = Job::new("http://h.example/a?sid=7", 1, 0, JobKind::Page);
        let (reason, why) = at_dispatch(&robots, &aliases, &alias).unwrap();
        assert_eq!(reason, SkipReason::DustRule);
        assert_eq!(why, r#"ignore-param "sid" in "/**" -> http://h.example/a"#);
        // A requisite, a revisit and another page are fetched.
        let requisite = Job::new("http://h.example/a?sid=7", 1, 0, JobKind::Requisite);
        assert_eq!(at_dispatch(&robots, &aliases, &requisite), None);
        let mut revisit = alias.clone();
        revisit.revisit = Some(Default::default());
        assert_eq!(at_dispatch(&robots, &aliases, &revisit), None);
        let other = Job::new("http://h.example/b?sid=7", 1, 0, JobKind::Page);
        assert_eq!(at_dispatch(&robots, &aliases, &other), None);
    }
}
