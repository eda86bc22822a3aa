//! The crawl engine, one for both modes: shared state, workers, housekeeping, and the end of
//! the run.
//!
//! Where the run queue and the done set live is the [`Backend`]: in this process (a journal
//! and checkpoints in the output directory, [`CrawlState`]) or in Redis, shared with other
//! processes ([`SharedQueue`]). Everything else is the same in both: workers pace hosts and
//! read robots.txt, pages go through the same fetch, parse, trap and scope rules, and the same
//! records (WARC, mirror, skip report, counters) are written. Every option works in both modes
//! or is refused when the command line is read.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use tokio::sync::{mpsc, watch};

use crate::canonical::Canonicalizer;
use crate::error::CrawlError;
use crate::fetch::{Exchange, Fetcher, Validators};
use crate::frontier::{Job, JobKind};
use crate::kernel::Kernels;
use crate::logger::Logger;
use crate::monitor::{Counters, Monitor, Refresh};
use crate::options::CrawlConfig;
use crate::page::{self, Candidate};
use crate::records::Records;
use crate::router::Router;
use crate::shared_queue::{self, Commit, SharedQueue, SharedSettings};
use crate::skip::SkipReason;
use crate::state::CrawlState;
use crate::summary::{Ending, Stop, Summary};
use crate::worker;

/// Where the run queue and the done set live.
pub(crate) enum Backend {
    /// In this process: journal and checkpoints in the output directory.
    Local(Box<Mutex<CrawlState>>),
    /// In Redis, shared with the other processes of the crawl.
    Shared(Box<SharedQueue>),
}

/// What every worker and fetch task shares.
pub(crate) struct Shared {
    pub(crate) config: CrawlConfig,
    pub(crate) canon: Canonicalizer,
    pub(crate) fetcher: Fetcher,
    pub(crate) kernels: Kernels,
    /// Live figures, the status page and the page rate limit.
    pub(crate) monitor: Arc<Monitor>,
    backend: Backend,
    router: Router,
    /// Most jobs of a local crawl handed to the workers and not done: the rest of the run
    /// queue waits on disk.
    window: usize,
    stop: watch::Sender<bool>,
    /// Fetches started, counted against --max-pages (pages of earlier runs included).
    started: AtomicU64,
    limit_hit: AtomicBool,
    fatal: Mutex<Option<CrawlError>>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Shared {
    /// The local state; `None` in a shared crawl. A panic elsewhere while it was held leaves
    /// it usable (it is only ever changed through methods that keep it consistent line by
    /// line).
    fn local(&self) -> Option<MutexGuard<'_, CrawlState>> {
        match &self.backend {
            Backend::Local(state) => Some(state.lock().unwrap_or_else(|p| p.into_inner())),
            Backend::Shared(_) => None,
        }
    }

    /// The shared backend; `None` in a single-process crawl.
    pub(crate) fn shared_queue(&self) -> Option<&SharedQueue> {
        match &self.backend {
            Backend::Shared(q) => Some(q),
            Backend::Local(_) => None,
        }
    }

    /// Runs `f` on this process's records (under the state's lock in a local crawl).
    pub(crate) fn with_records<T>(&self, f: impl FnOnce(&mut Records) -> T) -> T {
        match &self.backend {
            Backend::Local(state) => {
                f(&mut state.lock().unwrap_or_else(|p| p.into_inner()).records)
            }
            Backend::Shared(q) => f(&mut q.records()),
        }
    }

    /// Asks every worker to stop starting fetches and to finish when idle.
    pub(crate) fn request_stop(&self) {
        self.stop.send_replace(true);
    }

    /// Whether the crawl is stopping, and a way to wait for it.
    pub(crate) fn stop_signal(&self) -> watch::Receiver<bool> {
        self.stop.subscribe()
    }

    /// Queues `job` at the worker of its host.
    pub(crate) fn route(&self, job: Job) {
        self.router.route(job);
    }

    /// Claims one fetch of the --max-pages budget; false when it is used up.
    pub(crate) fn claim_fetch(&self) -> bool {
        let Some(max) = self.config.max_pages else {
            return true;
        };
        if self.started.fetch_add(1, Ordering::Relaxed) < max {
            return true;
        }
        self.limit_hit.store(true, Ordering::Relaxed);
        self.request_stop();
        false
    }

    /// Records a fatal error (the output directory cannot be written, Redis lost the crawl)
    /// and stops the crawl.
    pub(crate) fn fail(&self, e: CrawlError) {
        self.fatal
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert(e);
        self.request_stop();
    }

    /// Counts the links of a page left out for `nofollow` or for being no web URL.
    pub(crate) fn count_unfollowed(&self, nofollow: u64, not_web: u64) {
        if nofollow + not_web > 0 {
            self.with_records(|r| {
                r.stats.nofollow += nofollow;
                r.stats.not_web += not_web;
            });
        }
    }

    /// Offers candidates to the done set outside of a page (the seeds, sitemaps from
    /// robots.txt).
    pub(crate) fn offer(&self, candidates: Vec<Candidate>) {
        match &self.backend {
            Backend::Local(state) => {
                let mut state = state.lock().unwrap_or_else(|p| p.into_inner());
                match page::admit_all(self, &mut state, None, candidates) {
                    Ok(_) => self.hand_out(&mut state),
                    Err(e) => self.fail(e),
                }
            }
            Backend::Shared(q) => {
                let offers = page::vet_all(self, &mut q.records(), None, candidates);
                match offers {
                    Ok(offers) => q.submit(Commit {
                        claim: None,
                        offers,
                        remember: None,
                    }),
                    Err(e) => self.fail(e),
                }
            }
        }
    }

    /// A host's politeness delay learnt from its robots.txt (`Crawl-delay`): in a shared
    /// crawl it is written to Redis (with `--delay-ms` if longer), so every process spaces its
    /// requests to the host by it. A failure is logged: the host is then paced by
    /// `--delay-ms` only.
    pub(crate) async fn share_host_delay(&self, url: &str, delay: Duration) {
        let Some(q) = self.shared_queue() else {
            return;
        };
        if let Err(e) = q.set_host_delay(url, delay.max(self.config.delay)).await {
            let message = format!("{url}: cannot share its crawl delay: {e}");
            self.monitor.logger.warn(&message).await;
        }
    }

    /// Offers the seeds (again, in a shared crawl going on after Redis lost its data).
    pub(crate) fn offer_seeds(&self) {
        self.offer(self.seeds());
    }

    fn seeds(&self) -> Vec<Candidate> {
        self.config
            .seeds
            .iter()
            .map(|url| Candidate {
                url: url.clone(),
                depth: 0,
                hops: 0,
                kind: JobKind::Page,
            })
            .collect()
    }

    /// Completes a job that produced no response (a failure, or a rule applied at dispatch).
    pub(crate) fn give_up(&self, job: &Job, problem: Option<(SkipReason, String)>) {
        match &self.backend {
            Backend::Local(state) => {
                let mut state = state.lock().unwrap_or_else(|p| p.into_inner());
                let skipped = match &problem {
                    Some((reason, detail)) => state.skip(*reason, &job.url, detail),
                    None => Ok(()),
                };
                match skipped.and_then(|()| state.complete(job, None)) {
                    Ok(()) => self.hand_out(&mut state),
                    Err(e) => self.fail(e),
                }
            }
            Backend::Shared(q) => {
                if let Some((reason, detail)) = &problem
                    && let Err(e) = q.records().skip(*reason, &job.url, detail)
                {
                    self.fail(e);
                }
                q.submit(Commit {
                    claim: job.claim.clone(),
                    offers: Vec::new(),
                    remember: None,
                });
            }
        }
    }

    /// Completes a job with its response: admits what it links to, writes the WARC records,
    /// marks it done (journaled, or acknowledged in Redis).
    pub(crate) fn commit_exchange(
        &self,
        job: &Job,
        exchange: &Exchange,
        candidates: Vec<Candidate>,
        problem: Option<(SkipReason, String)>,
        body: Option<(u64, bool)>,
    ) {
        let is_redirect = exchange.status.is_redirection() && !candidates.is_empty();
        let sitemap_pages = if job.kind == JobKind::Sitemap {
            candidates
                .iter()
                .filter(|c| c.kind == JobKind::Page)
                .count() as u64
        } else {
            0
        };
        let mirrored = self.config.mirror && job.kind != JobKind::Sitemap && body.is_some();
        let note = |records: &mut Records| -> Result<(), CrawlError> {
            if let Some((reason, detail)) = &problem {
                records.skip(*reason, &job.url, detail)?;
            }
            if let Some((hash, decoded)) = body {
                records.body_seen_hash(hash);
                records.stats.decoded += u64::from(decoded);
            }
            records.stats.redirects += u64::from(is_redirect);
            records.stats.sitemap_urls += sitemap_pages;
            records.stats.mirror_files += u64::from(mirrored);
            records.stats.not_modified += u64::from(exchange.status == StatusCode::NOT_MODIFIED);
            Ok(())
        };
        match &self.backend {
            Backend::Local(state) => {
                let mut state = state.lock().unwrap_or_else(|p| p.into_inner());
                let record = || -> Result<(), CrawlError> {
                    page::admit_all(self, &mut state, Some(&job.url), candidates)?;
                    note(&mut state.records)?;
                    state.complete(job, Some(exchange))
                };
                match record() {
                    Ok(()) => self.hand_out(&mut state),
                    Err(e) => self.fail(e),
                }
            }
            Backend::Shared(q) => {
                let offers = {
                    let mut records = q.records();
                    let record = || -> Result<_, CrawlError> {
                        let offers = page::vet_all(self, &mut records, Some(&job.url), candidates)?;
                        note(&mut records)?;
                        records.exchange(&job.url, exchange)?;
                        Ok(offers)
                    };
                    record()
                };
                let offers = offers.and_then(|o| {
                    q.log_fetched(exchange.status.as_u16(), &job.url)
                        .map(|()| o)
                });
                match offers {
                    Ok(offers) => {
                        let remember = (q.revisits() && exchange.status.is_success())
                            .then(|| (job.url.clone(), Validators::of(&exchange.headers)));
                        q.submit(Commit {
                            claim: job.claim.clone(),
                            offers,
                            remember,
                        });
                    }
                    Err(e) => {
                        self.fail(e);
                        // Still given back, so the crawl can end.
                        q.submit(Commit {
                            claim: job.claim.clone(),
                            offers: Vec::new(),
                            remember: None,
                        });
                    }
                }
            }
        }
    }

    /// Hands the next jobs of the local run queue to the workers, up to the window; stops the
    /// crawl when nothing is left, handed out or queued.
    fn hand_out(&self, state: &mut CrawlState) {
        match state.hand_out(self.window) {
            Ok(jobs) => {
                jobs.into_iter().for_each(|j| self.router.route(j));
                if state.handed_len() == 0 {
                    self.request_stop();
                }
            }
            Err(e) => self.fail(e),
        }
    }
}

/// What a run prints when it ends: its summary, in both modes; with `--json`, as one JSON
/// object, with `extra` (a shared crawl's process name and Redis figures).
#[derive(Debug)]
pub(crate) struct Report {
    pub(crate) summary: Box<Summary>,
    extra: serde_json::Value,
}

impl Report {
    /// The summary as text, or as one JSON line.
    pub(crate) fn render(&self, json: bool) -> String {
        if json {
            self.summary.json(self.extra.clone())
        } else {
            self.summary.to_string()
        }
    }
}

/// Runs a crawl to its end (queue empty, --max-pages, a signal, the stop flag or a fatal
/// error).
pub(crate) async fn run(
    config: CrawlConfig,
    sharing: Option<SharedSettings>,
) -> Result<Report, CrawlError> {
    let begin = Instant::now();
    let out = config.out.clone();
    std::fs::create_dir_all(&out).map_err(CrawlError::io("creating output directory", &out))?;
    let software = format!("url-dedup-crawler/{}", env!("CARGO_PKG_VERSION"));
    let (backend, resumed, pages_before, process, logger) = match &sharing {
        None => {
            let (state, resumed) =
                CrawlState::open(&out, config.filter, &config.traps, config.warc, &software)?;
            let pages = state.pages_done();
            let process = format!("crawler-{}", std::process::id());
            let logger = Logger::new(process.clone(), None, 1);
            (
                Backend::Local(Box::new(Mutex::new(state))),
                Some(resumed),
                pages,
                process,
                logger,
            )
        }
        Some(settings) => {
            let q = SharedQueue::open(&config, settings).await?;
            let process = q.me.to_string();
            let logger = Logger::new(process.clone(), Some(q.log_stream()), settings.log_cap);
            (Backend::Shared(Box::new(q)), None, 0, process, logger)
        }
    };
    let fetcher = Fetcher::new(config.fetch.clone())?;

    let mut inboxes = Vec::new();
    let mut senders = Vec::new();
    for _ in 0..config.workers {
        let (tx, rx) = mpsc::unbounded_channel();
        senders.push(tx);
        inboxes.push(rx);
    }
    let (stop, _) = watch::channel(false);
    let crawl_name = match &sharing {
        Some(s) => s.name.clone(),
        None => out.display().to_string(),
    };
    let monitor = Arc::new(Monitor {
        shared: sharing.is_some(),
        ..Monitor::new(process, crawl_name, config.rate, logger)
    });
    let shared = Arc::new(Shared {
        monitor: monitor.clone(),
        canon: Canonicalizer::default(),
        fetcher,
        kernels: Kernels::standard(
            config.respect_nofollow,
            crate::budget::ParseBudget::new(config.fetch.max_body),
        ),
        backend,
        router: Router::new(senders)?,
        window: (config.workers * config.per_host * 64).max(4096),
        stop,
        started: AtomicU64::new(pages_before),
        limit_hit: AtomicBool::new(false),
        fatal: Mutex::new(None),
        config,
    });

    let _ = monitor.refresh.set(refresh_from(Arc::downgrade(&shared)));
    if let Some(addr) = shared.config.status {
        crate::monitor::start(monitor.clone(), addr).await?;
    }

    let workers: Vec<_> = inboxes
        .into_iter()
        .map(|inbox| tokio::spawn(worker::run(shared.clone(), inbox, shared.stop.subscribe())))
        .collect();

    let seeds = shared.seeds();
    let mut tasks = Vec::new();
    if let Some(mut state) = shared.local() {
        // The run queue of an interrupted crawl first, then the seeds (already seen when
        // resuming).
        page::admit_all(&shared, &mut state, None, seeds)?;
        shared.hand_out(&mut state);
    } else if let (Some(q), Some(settings)) = (shared.shared_queue(), &sharing) {
        q.join().await?;
        let logger = &monitor.logger;
        match q.arrival() {
            shared_queue::Arrival::Joined => {
                logger.info(&format!("joined crawl {}", settings.name))
            }
            shared_queue::Arrival::Started => {
                logger.info(&format!("started crawl {}", settings.name));
            }
            shared_queue::Arrival::LostEarlierRun => {
                logger
                    .warn(&format!(
                        "crawl {} is not in Redis, but {} holds an earlier run of it: Redis \
                         lost the crawl (restarted without persistence?), which starts again \
                         from the seeds and fetches its pages again",
                        settings.name,
                        shared.config.out.display()
                    ))
                    .await;
            }
        }
        // Every process offers the seeds: the shared done set lets exactly one queue each.
        shared.offer(seeds);
        tasks.push(tokio::spawn(shared_queue::commit(shared.clone())));
        tasks.push(tokio::spawn(shared_queue::feed(shared.clone())));
    }

    let interrupted = Arc::new(AtomicBool::new(false));
    let signals = crate::signals::listen(crate::signals::Handlers {
        // In a shared crawl this process leaves; the others carry on (the stop flag is for
        // ending them all).
        drain: {
            let (shared, interrupted) = (shared.clone(), interrupted.clone());
            move || {
                interrupted.store(true, Ordering::Relaxed);
                shared.request_stop();
            }
        },
        abort: {
            let shared = shared.clone();
            move || match &shared.backend {
                Backend::Local(state) => {
                    let mut state = state.lock().unwrap_or_else(|p| p.into_inner());
                    state.flush();
                    // Never released: no other writer starts a journal line or WARC record
                    // before the process is gone.
                    std::mem::forget(state);
                }
                // What this process holds is requeued by the others once its lease expires.
                Backend::Shared(q) => q.flush(),
            }
        },
    })
    .map_err(CrawlError::io("installing signal handlers", &out))?;
    let background = tokio::spawn(housekeeping(shared.clone()));
    for w in workers {
        let _ = w.await;
    }
    signals.abort();

    let fatal = || {
        shared
            .fatal
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    };
    if let Some(q) = shared.shared_queue() {
        // Everything finished is committed before this process leaves; what it still holds
        // goes back to the others at once.
        q.close_commits();
        let mut tasks = tasks.into_iter();
        if let Some(committer) = tasks.next() {
            let _ = committer.await;
        }
        tasks.for_each(|t| t.abort());
        // Heartbeats went on until everything was committed: no claim of this process was
        // handed to another meanwhile.
        background.abort();
        q.flush();
        let left = q.leave().await;
        if let Some(e) = fatal() {
            monitor.logger.error(&e.to_string()).await;
            return Err(explain_reset(e));
        }
        left?;
        let stop = if shared.limit_hit.load(Ordering::Relaxed) {
            Stop::MaxPages
        } else if q.finished() {
            Stop::Finished
        } else {
            Stop::Interrupted
        };
        let ending = Ending {
            stop,
            shared: true,
            elapsed: begin.elapsed(),
        };
        let extra = shared_figures(&shared, q).await;
        let done = q.done_set();
        let mut records = q.records();
        let fetched = records.stats.fetched;
        let summary = Summary::new(
            &shared.config,
            &mut records,
            &done,
            (fetched, 0),
            Default::default(),
            ending,
        );
        return Ok(Report {
            summary: Box::new(summary),
            extra,
        });
    }
    background.abort();
    let Some(mut state) = shared.local() else {
        unreachable!("a crawl is local or shared");
    };
    if let Some(e) = fatal() {
        return Err(e);
    }
    state.checkpoint()?;
    let stop = if interrupted.load(Ordering::Relaxed) {
        Stop::Interrupted
    } else if state.pending_len() == 0 {
        Stop::Finished
    } else if shared.limit_hit.load(Ordering::Relaxed) {
        Stop::MaxPages
    } else {
        Stop::Interrupted
    };
    let ending = Ending {
        stop,
        shared: false,
        elapsed: begin.elapsed(),
    };
    let (records, done, totals) = state.for_summary();
    let summary = Summary::new(
        &shared.config,
        records,
        done,
        totals,
        resumed.unwrap_or_default(),
        ending,
    );
    Ok(Report {
        summary: Box::new(summary),
        extra: serde_json::json!({}),
    })
}

/// A Redis that lost the crawl's data stops the crawl with what happened and what it means.
fn explain_reset(e: CrawlError) -> CrawlError {
    if shared_queue::is_reset(&e) {
        CrawlError::Options(format!(
            "{e}\nRedis lost the shared crawl's data (a restart without persistence, a flush, \
             an eviction): its run queue and done set are gone, so this process stopped \
             instead of taking an empty queue for a finished crawl. Pages already fetched \
             would be fetched again by a new crawl under the same name; \
             --after-redis-reset continue goes on from the seeds instead."
        ))
    } else {
        e
    }
}

/// What a shared crawl's summary adds in JSON: this process's name and the Redis figures.
async fn shared_figures(shared: &Shared, q: &SharedQueue) -> serde_json::Value {
    let per_page = q.commands_per_page().await;
    let fetched = shared.with_records(|r| r.stats.fetched);
    serde_json::json!({
        "process": q.me.to_string(),
        "redis_commands_per_page": per_page.is_finite().then_some(per_page),
        "redis_calls_per_page": q.calls_per_page(fetched),
    })
}

/// Copies the figures of this run (kept in its records) into the monitor's counters.
fn refresh_from(shared: Weak<Shared>) -> Refresh {
    Box::new(move |c: &Counters| {
        let Some(shared) = shared.upgrade() else {
            return;
        };
        shared.with_records(|r| {
            let s = &r.stats;
            for (counter, value) in [
                (&c.fetched, s.fetched),
                (&c.not_modified, s.not_modified),
                (&c.queued, s.admitted),
                (&c.duplicates, s.duplicate_links),
                (&c.nofollow, s.nofollow),
                (&c.not_web, s.not_web),
                (&c.bytes, s.wire_bytes),
            ] {
                counter.store(value, Ordering::Relaxed);
            }
            c.set_skips(r.skips.counts());
        });
    })
}

/// The one housekeeping loop of both modes: periodic checkpoints (single-process crawl),
/// heartbeats, the leader's duties and the stop flag (shared crawl, every third of the lease),
/// the Redis figures of the status page and progress lines.
async fn housekeeping(shared: Arc<Shared>) {
    let every = shared.config.checkpoint_every;
    let progress = shared.config.progress && std::io::stderr().is_terminal();
    let mut checkpoint = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    let mut tick = tokio::time::interval(Duration::from_secs(2));
    let beat_every = match shared.shared_queue() {
        Some(_) => shared_queue::beat_every(&shared),
        None => Duration::from_secs(3600),
    };
    let mut beat = tokio::time::interval(beat_every);
    loop {
        tokio::select! {
            _ = beat.tick(), if shared.shared_queue().is_some() => {
                shared_queue::beat(&shared).await;
            }
            _ = checkpoint.tick(), if shared.shared_queue().is_none() => {
                let result = shared.local().map(|mut s| s.checkpoint());
                if let Some(Err(e)) = result {
                    shared.fail(e);
                }
            }
            _ = tick.tick() => {
                if let Some(q) = shared.shared_queue() {
                    let per_page = q.commands_per_page().await;
                    let counters = &shared.monitor.counters;
                    counters.set_commands_per_page(per_page);
                    let fetched = shared.with_records(|r| r.stats.fetched);
                    counters.set_calls_per_page(q.calls_per_page(fetched));
                }
                if progress {
                    let fetched = shared.with_records(|r| r.stats.fetched);
                    match shared.local() {
                        Some(state) => eprintln!(
                            "fetched {} pages, {} queued",
                            state.pages_done(),
                            state.pending_len()
                        ),
                        None => eprintln!("fetched {fetched} pages"),
                    }
                }
            }
        }
    }
}
