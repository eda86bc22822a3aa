//! Document 003's Monitor: the live figures of one process and the status page that shows
//! them (`--status ADDR`).
//!
//! * this file: the figures (counters, per-host rows, the last errors, the history, every
//!   process of a shared crawl) and the snapshot served as `/status.json`;
//! * [`server`]: the HTTP endpoint and its rules (the `Host` check, the per-run token, the
//!   same-origin check);
//! * [`page`] and [`chart`]: the HTML console;
//! * [`pacer`]: the page rate limit that `POST /rate` changes.
//!
//! A single-process crawl serves the page too: its figures live in the crawl's records and are
//! copied in when a status is served.

mod chart;
mod history;
mod hosts;
mod pacer;
mod page;
mod server;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use tokio::time::Instant;

use self::history::{History, Sample};
use self::hosts::{ErrorRow, HostRow, Tally};
pub(crate) use self::pacer::{Pacer, check_rate};
pub(crate) use self::server::start;
use crate::backend::BackendReport;
use crate::logger::Logger;
use crate::skip::{SkipClass, SkipReason};

/// Counters of one process, updated without a lock by every spider.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// Responses received (any status, 304 included).
    pub(crate) fetched: AtomicU64,
    /// Responses 304 Not Modified (incremental revisits).
    pub(crate) not_modified: AtomicU64,
    /// New URLs this process pushed to the shared frontier.
    pub(crate) queued: AtomicU64,
    /// Links the shared filter had already seen.
    pub(crate) duplicates: AtomicU64,
    /// URL rules applied (`--learn`, `--rules`).
    pub(crate) rules: AtomicU64,
    /// Links skipped because a rule maps them onto a page already fetched or queued.
    pub(crate) saved: AtomicU64,
    /// Fetches that checked a candidate rule.
    pub(crate) rule_checks: AtomicU64,
    /// Candidate rules removed by a wrong prediction.
    pub(crate) rules_rejected: AtomicU64,
    /// Links left out for `nofollow`.
    pub(crate) nofollow: AtomicU64,
    /// Links that are no http(s) URL (`mailto:`, `javascript:`, unparsable).
    pub(crate) not_web: AtomicU64,
    /// Links refused by the trap rules (length, slashes, depth).
    pub(crate) traps: AtomicU64,
    /// Links out of scope, URLs refused by robots.txt, unusable redirects.
    pub(crate) skipped: AtomicU64,
    /// Failed fetches.
    pub(crate) errors: AtomicU64,
    /// Body bytes received.
    pub(crate) bytes: AtomicU64,
    /// URLs not followed and failed fetches, per reason (`traps`, `skipped` and `errors` are
    /// its sums by class).
    pub(crate) by_reason: Mutex<BTreeMap<SkipReason, u64>>,
}

impl Counters {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// Replaces the per-reason counts (and their sums) with `counts`.
    pub(crate) fn set_skips(&self, counts: &BTreeMap<SkipReason, u64>) {
        for class in [&self.traps, &self.skipped, &self.errors] {
            class.store(0, Ordering::Relaxed);
        }
        for (&reason, &n) in counts {
            Self::add(self.class(reason), n);
        }
        *lock(&self.by_reason) = counts.clone();
    }

    fn class(&self, reason: SkipReason) -> &AtomicU64 {
        match reason.class() {
            SkipClass::Trap => &self.traps,
            SkipClass::Error => &self.errors,
            SkipClass::Other => &self.skipped,
        }
    }

    /// The per-reason counts, by reason name.
    pub(crate) fn skips(&self) -> BTreeMap<&'static str, u64> {
        lock(&self.by_reason)
            .iter()
            .map(|(r, n)| (r.name(), *n))
            .collect()
    }
}

/// Copies the run's figures (kept in its records) into the counters.
pub(crate) type Refresh = Box<dyn Fn(&Counters) + Send + Sync>;

/// One process's row on the status page of a shared crawl: what it publishes of itself.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub(crate) struct ProcessRow {
    pub(crate) process: String,
    /// Where it serves its own status page, if it does.
    pub(crate) status_page: Option<String>,
    pub(crate) fetched: u64,
    /// Failed fetches and 4xx/5xx answers.
    pub(crate) errors: u64,
    pub(crate) bytes: u64,
    /// URLs it admitted to the run queue.
    pub(crate) queued: u64,
    /// Pages per second over its last ten seconds or so.
    pub(crate) pages_per_sec: f64,
    /// Its page rate limit (0: none).
    pub(crate) rate_limit: f64,
    pub(crate) uptime_secs: f64,
    /// Seconds since it published this row.
    pub(crate) age_secs: f64,
}

/// What the backend knows of the whole crawl, for the status page.
#[derive(Clone, Debug, Default)]
pub(crate) struct CrawlView {
    /// Every live process's row, this one's included (only this one in a single-process
    /// crawl).
    pub(crate) processes: Vec<ProcessRow>,
    /// URLs queued crawl-wide and not yet fetched, when the backend knows it here.
    pub(crate) queued: Option<u64>,
}

/// What the status endpoint shows.
pub(crate) struct Monitor {
    pub(crate) process: String,
    pub(crate) crawl: String,
    /// Whether this process shares its crawl through Redis (it then has a partition table).
    pub(crate) shared: bool,
    pub(crate) counters: Counters,
    pub(crate) pacer: Arc<Pacer>,
    pub(crate) logger: Logger,
    pub(crate) started: Instant,
    /// Copies the run's figures into `counters` before a status is served.
    pub(crate) refresh: OnceLock<Refresh>,
    /// Where the status page is served, once it is.
    served_at: OnceLock<SocketAddr>,
    /// Per-host rows and the last errors, fed by every finished job.
    tally: Mutex<Tally>,
    /// Samples of the figures over the run.
    history: Mutex<History>,
    /// The latest sample's view of the crawl and the backend's figures.
    latest: Mutex<Latest>,
}

/// What the latest sample brought from the backend.
#[derive(Debug, Default)]
struct Latest {
    view: CrawlView,
    /// What the backend adds (a shared crawl's Redis figures).
    backend: serde_json::Map<String, serde_json::Value>,
}

impl std::fmt::Debug for Monitor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Monitor")
            .field("process", &self.process)
            .field("crawl", &self.crawl)
            .field("shared", &self.shared)
            .field("counters", &self.counters)
            .finish_non_exhaustive()
    }
}

/// Everything the status page shows, as served at `/status.json`.
#[derive(Debug, serde::Serialize)]
pub(crate) struct Status {
    pub(crate) process: String,
    pub(crate) crawl: String,
    pub(crate) mode: &'static str,
    pub(crate) uptime_secs: f64,
    pub(crate) fetched: u64,
    pub(crate) not_modified: u64,
    pub(crate) queued: u64,
    pub(crate) duplicates: u64,
    pub(crate) rules: u64,
    pub(crate) saved: u64,
    pub(crate) rule_checks: u64,
    pub(crate) rules_rejected: u64,
    pub(crate) nofollow: u64,
    pub(crate) not_web: u64,
    pub(crate) traps: u64,
    pub(crate) skipped: u64,
    pub(crate) errors: u64,
    /// Responses 4xx and 5xx.
    pub(crate) error_responses: u64,
    pub(crate) bytes: u64,
    /// Pages per second over the whole run.
    pub(crate) pages_per_sec: f64,
    /// Pages per second over the last ten seconds or so.
    pub(crate) recent_pages_per_sec: f64,
    pub(crate) rate_limit: f64,
    /// URLs waiting in the run queue (crawl-wide in a shared crawl), when known.
    pub(crate) queue: Option<u64>,
    /// What the backend adds: a shared crawl's Redis commands run per page (crawl-wide,
    /// those inside scripts included) and this process's calls to Redis per page.
    #[serde(flatten)]
    pub(crate) backend: serde_json::Map<String, serde_json::Value>,
    /// Distinct URLs not followed and failed fetches, per reason.
    pub(crate) skips: BTreeMap<&'static str, u64>,
    /// The hosts with most pages, then any other host among those with most errors.
    pub(crate) hosts: Vec<HostRow>,
    /// Hosts this process fetched from, and whether the rows above are exact.
    pub(crate) hosts_seen: u64,
    pub(crate) hosts_exact: bool,
    /// The newest failed fetches and 4xx/5xx answers, newest first.
    pub(crate) last_errors: Vec<ErrorRow>,
    /// Samples over the run, oldest first.
    pub(crate) history: Vec<Sample>,
    /// Every live process of a shared crawl (empty in a single-process crawl).
    pub(crate) processes: Vec<ProcessRow>,
    pub(crate) log: Vec<crate::logger::Entry>,
}

/// Rows of the per-host table.
const HOST_ROWS: usize = 10;
/// Hosts with most errors shown even when they have few pages.
const ERROR_HOST_ROWS: usize = 5;
/// Entries of the log section.
const LOG_ROWS: usize = 20;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Monitor {
    /// A monitor for this process, pacing fetches at `rate` pages per second (0: no limit);
    /// `shared` when it shares its crawl through Redis.
    pub(crate) fn new(
        process: String,
        crawl: String,
        shared: bool,
        rate: f64,
        logger: Logger,
    ) -> Self {
        Self {
            process,
            crawl,
            shared,
            counters: Counters::default(),
            pacer: Arc::new(Pacer::new(rate)),
            logger,
            started: Instant::now(),
            refresh: OnceLock::new(),
            served_at: OnceLock::new(),
            tally: Mutex::new(Tally::default()),
            history: Mutex::new(History::default()),
            latest: Mutex::new(Latest::default()),
        }
    }

    /// Whether a status page is served (only then does the backend gather other processes'
    /// rows).
    pub(crate) fn is_served(&self) -> bool {
        self.served_at.get().is_some()
    }

    /// Counts one finished job of `url`: its answer (status and body length), or why it gave
    /// none.
    pub(crate) fn note(
        &self,
        url: &str,
        answer: Option<(u16, usize)>,
        problem: Option<&(SkipReason, String)>,
    ) {
        let failure = problem
            .filter(|(reason, _)| reason.class() == SkipClass::Error)
            .map(|(reason, detail)| (reason.name(), detail.as_str()));
        let at = self.started.elapsed().as_secs_f64();
        lock(&self.tally).note(url, answer, failure, at);
    }

    /// This process's row for the crawl's status pages, with the figures copied in first.
    pub(crate) fn own_row(&self) -> ProcessRow {
        self.refresh();
        let c = &self.counters;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        ProcessRow {
            process: self.process.clone(),
            status_page: self.served_at.get().map(|a| format!("http://{a}/")),
            fetched: load(&c.fetched),
            // A 4xx or 5xx answer is an error of the skip report (`http-error`) already.
            errors: load(&c.errors),
            bytes: load(&c.bytes),
            queued: load(&c.queued),
            pages_per_sec: lock(&self.history).recent_rate(),
            rate_limit: self.pacer.rate(),
            uptime_secs: self.started.elapsed().as_secs_f64(),
            age_secs: 0.0,
        }
    }

    /// Takes a sample: the backend's latest figures and view of the crawl join the history.
    pub(crate) fn sample(&self, report: &BackendReport, view: CrawlView) {
        let row = self.own_row();
        let queued = view.queued.unwrap_or(report.pending as u64);
        lock(&self.history).push(Sample {
            at: row.uptime_secs,
            fetched: row.fetched,
            errors: row.errors,
            queued,
        });
        let mut latest = lock(&self.latest);
        latest.view = CrawlView {
            queued: Some(queued),
            ..view
        };
        latest.backend = match &report.extra {
            serde_json::Value::Object(m) => m.clone(),
            _ => serde_json::Map::new(),
        };
    }

    fn refresh(&self) {
        if let Some(refresh) = self.refresh.get() {
            refresh(&self.counters);
        }
    }

    /// Everything the page shows, now.
    pub(crate) async fn status(&self) -> Status {
        let row = self.own_row();
        let c = &self.counters;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let (hosts, hosts_seen, hosts_exact, last_errors, error_responses) = {
            let tally = lock(&self.tally);
            (
                tally.top(HOST_ROWS, ERROR_HOST_ROWS),
                tally.hosts_seen(),
                tally.exact(),
                tally.last_errors(),
                tally.error_responses(),
            )
        };
        let history = lock(&self.history).points();
        let (queue, backend, mut processes) = {
            let latest = lock(&self.latest);
            (
                latest.view.queued,
                latest.backend.clone(),
                latest.view.processes.clone(),
            )
        };
        if self.shared {
            // This process's row is as of now, not as of the last sample.
            processes.retain(|p| p.process != row.process);
            processes.push(row.clone());
            processes.sort_by(|a, b| a.process.cmp(&b.process));
        } else {
            processes.clear();
        }
        let uptime = row.uptime_secs;
        Status {
            process: self.process.clone(),
            crawl: self.crawl.clone(),
            mode: if self.shared { "shared" } else { "local" },
            uptime_secs: uptime,
            fetched: row.fetched,
            not_modified: load(&c.not_modified),
            queued: row.queued,
            duplicates: load(&c.duplicates),
            rules: load(&c.rules),
            saved: load(&c.saved),
            rule_checks: load(&c.rule_checks),
            rules_rejected: load(&c.rules_rejected),
            nofollow: load(&c.nofollow),
            not_web: load(&c.not_web),
            traps: load(&c.traps),
            skipped: load(&c.skipped),
            errors: load(&c.errors),
            error_responses,
            bytes: row.bytes,
            pages_per_sec: if uptime > 0.0 {
                row.fetched as f64 / uptime
            } else {
                0.0
            },
            recent_pages_per_sec: row.pages_per_sec,
            rate_limit: row.rate_limit,
            queue,
            backend,
            skips: c.skips(),
            hosts,
            hosts_seen,
            hosts_exact,
            last_errors,
            history,
            processes,
            log: self.logger.recent(LOG_ROWS).await,
        }
    }
}
