//! The crawl: shared state, workers, checkpoints, and the end of the run.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, watch};

use crate::canonical::Canonicalizer;
use crate::error::CrawlError;
use crate::fetch::{Exchange, Fetcher};
use crate::frontier::{Job, JobKind};
use crate::kernel::Kernels;
use crate::logger::Logger;
use crate::monitor::{Counters, Monitor, Refresh};
use crate::options::CrawlConfig;
use crate::page::{self, Candidate};
use crate::router::Router;
use crate::skip::SkipReason;
use crate::state::CrawlState;
use crate::summary::{Stop, Summary};
use crate::worker;

/// What every worker and fetch task shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) config: CrawlConfig,
    pub(crate) canon: Canonicalizer,
    pub(crate) fetcher: Fetcher,
    pub(crate) kernels: Kernels,
    /// Live figures, the status page and the page rate limit.
    pub(crate) monitor: Arc<Monitor>,
    state: Mutex<CrawlState>,
    router: Router,
    stop: watch::Sender<bool>,
    /// Fetches started, counted against --max-pages (pages of earlier runs included).
    started: AtomicU64,
    limit_hit: AtomicBool,
    fatal: Mutex<Option<CrawlError>>,
}

impl Shared {
    /// The state; a panic elsewhere while it was held leaves it usable (it is only ever
    /// changed through methods that keep it consistent line by line).
    pub(crate) fn state(&self) -> MutexGuard<'_, CrawlState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Asks every worker to stop starting fetches and to finish when idle.
    pub(crate) fn request_stop(&self) {
        self.stop.send_replace(true);
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

    /// Records a fatal error (the output directory cannot be written) and stops the crawl.
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
            let mut state = self.state();
            state.stats.nofollow += nofollow;
            state.stats.not_web += not_web;
        }
    }

    /// Offers candidates to the done set outside of a page (sitemaps from robots.txt).
    pub(crate) fn offer(&self, candidates: Vec<Candidate>) {
        let admitted = {
            let mut state = self.state();
            page::admit_all(self, &mut state, None, candidates)
        };
        match admitted {
            Ok(jobs) => jobs.into_iter().for_each(|j| self.router.route(j)),
            Err(e) => self.fail(e),
        }
    }

    /// Completes a job that produced no response (a failure, or a rule applied at dispatch).
    pub(crate) fn give_up(&self, job: &Job, problem: Option<(SkipReason, String)>) {
        let result = {
            let mut state = self.state();
            let skipped = match &problem {
                Some((reason, detail)) => state.skip(*reason, &job.url, detail),
                None => Ok(()),
            };
            skipped.and_then(|()| state.complete(job, None))
        };
        self.after_commit(result, Vec::new());
    }

    /// Completes a job with its response: admits what it links to, writes the WARC records,
    /// journals it done.
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
        let result = {
            let mut state = self.state();
            let record = || -> Result<(Vec<Job>, bool), CrawlError> {
                let admitted = page::admit_all(self, &mut state, Some(&job.url), candidates)?;
                if let Some((reason, detail)) = &problem {
                    state.skip(*reason, &job.url, detail)?;
                }
                if let Some((hash, decoded)) = body {
                    state.body_seen_hash(hash);
                    state.stats.decoded += u64::from(decoded);
                }
                state.stats.redirects += u64::from(is_redirect);
                state.stats.sitemap_urls += sitemap_pages;
                if self.config.mirror && job.kind == JobKind::Page && body.is_some() {
                    state.stats.mirror_files += 1;
                }
                Ok((admitted, state.complete(job, Some(exchange))?))
            };
            record()
        };
        match result {
            Ok((admitted, empty)) => self.after_commit(Ok(empty), admitted),
            Err(e) => self.fail(e),
        }
    }

    fn after_commit(&self, result: Result<bool, CrawlError>, admitted: Vec<Job>) {
        match result {
            Ok(empty) => {
                admitted.into_iter().for_each(|j| self.router.route(j));
                if empty {
                    self.request_stop();
                }
            }
            Err(e) => self.fail(e),
        }
    }
}

/// Runs a crawl to its end (queue empty, --max-pages, Ctrl-C or a fatal error).
pub(crate) async fn run(config: CrawlConfig) -> Result<Summary, CrawlError> {
    let begin = Instant::now();
    let out = config.out.clone();
    std::fs::create_dir_all(&out).map_err(CrawlError::io("creating output directory", &out))?;
    let software = format!("url-dedup-crawler/{}", env!("CARGO_PKG_VERSION"));
    let (state, resumed) =
        CrawlState::open(&out, config.filter, &config.traps, config.warc, &software)?;
    let fetcher = Fetcher::new(config.fetch.clone())?;

    let mut inboxes = Vec::new();
    let mut senders = Vec::new();
    for _ in 0..config.workers {
        let (tx, rx) = mpsc::unbounded_channel();
        senders.push(tx);
        inboxes.push(rx);
    }
    let (stop, _) = watch::channel(false);
    let pages_before = state.pages_done();
    let monitor = Arc::new(Monitor::new(
        format!("crawler-{}", std::process::id()),
        out.display().to_string(),
        config.rate,
        Logger::new(format!("crawler-{}", std::process::id()), None, 1),
    ));
    let shared = Arc::new(Shared {
        monitor: monitor.clone(),
        canon: Canonicalizer::default(),
        fetcher,
        kernels: Kernels::standard(
            config.respect_nofollow,
            crate::budget::ParseBudget::new(config.fetch.max_body),
        ),
        state: Mutex::new(state),
        router: Router::new(senders)?,
        stop,
        started: AtomicU64::new(pages_before),
        limit_hit: AtomicBool::new(false),
        fatal: Mutex::new(None),
        config,
    });

    let _ = monitor.refresh.set(refresh_from(Arc::downgrade(&shared)));
    if let Some(addr) = shared.config.status {
        crate::monitor::start(monitor, addr).await?;
    }

    let workers: Vec<_> = inboxes
        .into_iter()
        .map(|inbox| tokio::spawn(worker::run(shared.clone(), inbox, shared.stop.subscribe())))
        .collect();

    // The run queue of an interrupted crawl first, then the seeds (already seen when resuming).
    let queued: Vec<Job> = shared.state().pending().cloned().collect();
    queued.into_iter().for_each(|j| shared.router.route(j));
    let seeds = shared.config.seeds.clone();
    let admitted = {
        let mut state = shared.state();
        let mut admitted = Vec::new();
        for seed in seeds {
            let job = Job {
                url: seed.as_str().into(),
                depth: 0,
                hops: 0,
                kind: JobKind::Page,
            };
            match state.admit(job, None) {
                Ok(crate::state::Admission::Admitted(j)) => admitted.push(j),
                Ok(_) => {}
                Err(e) => return Err(e),
            }
        }
        admitted
    };
    admitted.into_iter().for_each(|j| shared.router.route(j));
    if shared.state().pending_len() == 0 {
        shared.request_stop();
    }

    let interrupted = Arc::new(AtomicBool::new(false));
    let signals = crate::signals::listen(crate::signals::Handlers {
        drain: {
            let (shared, interrupted) = (shared.clone(), interrupted.clone());
            move || {
                interrupted.store(true, Ordering::Relaxed);
                shared.request_stop();
            }
        },
        abort: {
            let shared = shared.clone();
            move || {
                let mut state = shared.state();
                state.flush();
                // Never released: no other writer starts a journal line or WARC record
                // before the process is gone.
                std::mem::forget(state);
            }
        },
    })
    .map_err(CrawlError::io("installing signal handlers", &out))?;
    let background = tokio::spawn(housekeeping(shared.clone()));
    for w in workers {
        let _ = w.await;
    }
    background.abort();
    signals.abort();

    let mut state = shared.state();
    if let Some(e) = shared
        .fatal
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
    {
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
    Ok(Summary::new(
        &shared.config,
        &mut state,
        resumed,
        stop,
        begin.elapsed(),
    ))
}

/// Copies the figures of this run (kept in the state) into the monitor's counters.
fn refresh_from(shared: Weak<Shared>) -> Refresh {
    Box::new(move |c: &Counters| {
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let state = shared.state();
        let s = &state.stats;
        for (counter, value) in [
            (&c.fetched, s.fetched),
            (&c.queued, s.admitted),
            (&c.duplicates, s.duplicate_links),
            (&c.nofollow, s.nofollow),
            (&c.not_web, s.not_web),
            (&c.bytes, s.wire_bytes),
        ] {
            counter.store(value, Ordering::Relaxed);
        }
        c.set_skips(state.skips.counts());
    })
}

/// Periodic checkpoints and progress lines.
async fn housekeeping(shared: Arc<Shared>) {
    let every = shared.config.checkpoint_every;
    let progress = shared.config.progress && std::io::stderr().is_terminal();
    let mut checkpoint = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    let mut tick = tokio::time::interval(Duration::from_secs(2));
    loop {
        tokio::select! {
            _ = checkpoint.tick() => {
                let result = shared.state().checkpoint();
                if let Err(e) = result {
                    shared.fail(e);
                }
            }
            _ = tick.tick(), if progress => {
                let state = shared.state();
                eprintln!("fetched {} pages, {} queued", state.pages_done(), state.pending_len());
            }
        }
    }
}
