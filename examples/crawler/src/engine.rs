//! The crawl engine, one for both modes. Where the run queue and the done set live is the
//! [`Backend`]; everything else is here once:
//!
//! ```text
//!   backend ──take──▶ feeder ──route──▶ workers ──fetch, parse──▶ outbox
//!      ▲                                                             │
//!      └────────────── commit ◀── admission rules ◀── committer ◀────┘
//! ```
//!
//! A job flows one way: the feeder takes it from the backend and routes it to the worker of
//! its host; the worker paces the host, checks robots.txt and fetches; the page's result goes
//! to the committer as a value. The committer records it (WARC, skip report, counters), asks
//! the admission rules ([`crate::admission`]) which of its links join the crawl, and commits
//! the batch to the backend. Nothing below calls back up.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use tokio::sync::{mpsc, watch};

use crate::admission::{Candidate, FetchBudget, Offer, Rules};
use crate::backend::local::LocalBackend;
use crate::backend::shared::{SharedBackend, SharedSettings};
use crate::backend::{Backend, BackendReport, Done, Take};
use crate::canonical::Canonicalizer;
use crate::dust::Dust;
use crate::error::CrawlError;
use crate::fetch::{Fetcher, Validators};
use crate::files::Access;
use crate::job::JobKind;
use crate::kernel::Kernels;
use crate::learner::Learning;
use crate::logger::Logger;
use crate::monitor::{Counters, Monitor, Refresh};
use crate::options::CrawlConfig;
use crate::outbox::{Message, Outbox};
use crate::page::{Context, Fetched};
use crate::records::Records;
use crate::router::Router;
use crate::summary::{Ending, RuleFigures, Stop, Summary};
use crate::worker::{self, Crew, Halt};
use std::io::Write as _;
use std::path::Path;
use url_dedup_fingerprint::PageFingerprint;

/// How often a process of a shared crawl reads the rules the others shared.
const RULES_READ: Duration = Duration::from_secs(1);

/// How long an idle feeder waits before it asks the backend again (another process may have
/// queued work meanwhile).
const IDLE_POLL: Duration = Duration::from_millis(50);

/// What a run prints when it ends, and how the process exits.
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

    /// The exit status: 0 when the crawl did its job (see docs/crawler.md, "Exit status").
    pub(crate) fn exit_code(&self) -> u8 {
        self.summary.exit_code()
    }
}

/// Runs a crawl to its end (queue empty, --max-pages, a signal, the stop flag or a fatal
/// error).
pub(crate) async fn run(
    config: CrawlConfig,
    sharing: Option<SharedSettings>,
) -> Result<Report, CrawlError> {
    let out = config.out.clone();
    std::fs::create_dir_all(&out).map_err(CrawlError::io("creating output directory", &out))?;
    let software = format!("url-dedup-crawler/{}", env!("CARGO_PKG_VERSION"));
    match sharing {
        None => {
            let (backend, records) = LocalBackend::open(&out, &config, &software)?;
            let logger = backend.logger();
            let name = out.display().to_string();
            drive(config, backend, records, logger, name).await
        }
        Some(settings) => {
            let (backend, records) = SharedBackend::open(&config, &settings, &software).await?;
            let logger = backend.logger();
            drive(config, backend, records, logger, settings.name.clone()).await
        }
    }
}

/// Everything the engine's tasks share.
struct Engine<B> {
    ctx: Arc<Context>,
    backend: Arc<B>,
    records: Mutex<Records>,
    monitor: Arc<Monitor>,
    budget: Arc<FetchBudget>,
    outbox: Outbox,
    router: Router,
    halt: Arc<watch::Sender<Halt>>,
    fatal: Mutex<Option<CrawlError>>,
    /// The backend found the crawl complete.
    finished: AtomicBool,
    /// A signal asked this process to stop.
    interrupted: AtomicBool,
    /// The shared crawl's stop flag was raised.
    flagged: AtomicBool,
    /// The learning stage (`--learn`) and the rules admission applies (`--rules`).
    dust: Mutex<Dust>,
    /// The learner thread (`--learn`): learns off the commit path.
    learning: Mutex<Option<Learning>>,
    /// When this process last read the rules other processes shared.
    rules_read: Mutex<Option<Instant>>,
}

impl<B: Backend> Engine<B> {
    fn records(&self) -> MutexGuard<'_, Records> {
        self.records.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn dust(&self) -> MutexGuard<'_, Dust> {
        self.dust.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What URL rules did so far: the figures of the status page and the summary.
    fn rule_figures(&self) -> RuleFigures {
        let saved = self
            .records()
            .skips
            .counts()
            .get(&crate::skip::SkipReason::DustRule)
            .copied()
            .unwrap_or(0);
        let d = self.dust().figures;
        RuleFigures {
            applied: d.rules,
            saved,
            checks: d.checks,
            rejected: d.rejected,
        }
    }

    fn learning(&self) -> MutexGuard<'_, Option<Learning>> {
        self.learning.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Shows the learning stage the pages fingerprinted in a batch, with the rules the learner
    /// found since the last batch, and hands the learner the new evidence (it learns on its
    /// own thread: a commit never waits for it); gives the done set the URLs that rules
    /// confirmed meanwhile map fetched pages onto; saves and shares the rules when they
    /// changed. Runs before the batch's links are admitted, so they meet the newest rules, and
    /// before its pages count as done, so a process that finds the shared crawl complete reads
    /// every confirmed rule (rules are confirmed here, by checks; the learner only proposes).
    async fn learn(&self, pages: Vec<(Arc<str>, PageFingerprint)>) -> Result<(), CrawlError> {
        let mut marks = Vec::new();
        let mut near = Vec::with_capacity(pages.len());
        for (url, fp) in &pages {
            let found = match fp.is_empty() {
                true => None,
                false => self.backend.near_page(fp.simhash.0, url).await?,
            };
            near.push(found);
        }
        let learned = self
            .learning()
            .as_mut()
            .map(Learning::learned)
            .unwrap_or_default();
        let evidence = {
            let mut dust = self.dust();
            for set in learned {
                dust.learned(set);
            }
            for ((url, fp), near) in pages.iter().zip(&near) {
                if near.is_some() {
                    dust.near_duplicate();
                }
                marks.extend(dust.observe(url, *fp));
            }
            dust.take_evidence()
        };
        if let Some(learning) = &*self.learning() {
            learning.send(evidence);
        }
        {
            let mut records = self.records();
            for ((url, fp), near) in pages.iter().zip(&near) {
                records.page(url, fp, near.as_deref())?;
            }
        }
        self.sync_rules(false, &mut marks).await?;
        crate::admission::mark(&*self.backend, marks).await
    }

    /// Reads the rules other processes shared (at most every [`RULES_READ`], or now when
    /// `now`), publishes the hosts whose rules changed here, and saves the rules file when the
    /// rules changed.
    async fn sync_rules(&self, now: bool, marks: &mut Vec<String>) -> Result<(), CrawlError> {
        let due = {
            let mut last = self.rules_read.lock().unwrap_or_else(|p| p.into_inner());
            let due = now || last.is_none_or(|t| t.elapsed() >= RULES_READ);
            if due {
                *last = Some(Instant::now());
            }
            due
        };
        let publish = self.dust().take_changed_hosts();
        if due || !publish.is_empty() {
            let shared = self.backend.shared_rules().await?;
            let mut dust = self.dust();
            for (_, text) in shared {
                marks.extend(dust.take_shared(&text));
            }
        }
        if !publish.is_empty() {
            // Published after reading, with what was read merged in: a host's text holds
            // every rule of it that any process confirmed and published before.
            let publish = self.dust().texts_of(publish);
            self.backend.share_rules(publish).await?;
        }
        let text = {
            let mut dust = self.dust();
            dust.take_dirty().then(|| dust.text())
        };
        if let Some(text) = text {
            let name = self.backend.file_name("rules", "txt");
            let out = &self.ctx.config.out;
            crate::files::replace(out, Path::new(&name), Access::Private, |f| {
                f.write_all(text.as_bytes())
            })
            .map_err(CrawlError::io("saving rules", out.join(&name)))?;
        }
        Ok(())
    }

    /// Asks every worker to start no new fetch and to finish when its fetches are done.
    fn request_stop(&self) {
        self.halt.send_if_modified(|h| {
            let drain = *h == Halt::Run;
            if drain {
                *h = Halt::Drain;
            }
            drain
        });
    }

    /// Records a fatal error (the output directory cannot be written, Redis is gone) and
    /// stops the crawl at once: fetches in flight are abandoned, to be fetched again by the
    /// next run or by another process.
    fn fail(&self, e: CrawlError) {
        self.fatal
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert(e);
        self.halt.send_replace(Halt::Abort);
    }

    fn seeds(&self) -> Vec<Candidate> {
        self.ctx
            .config
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

    /// Records a batch of finished jobs, admits the links they found (and the offers made
    /// outside of pages), and commits it all to the backend.
    async fn commit(&self, batch: Vec<Message>) -> Result<(), CrawlError> {
        let mut offers = Vec::new();
        let mut done = Vec::new();
        let mut warnings = Vec::new();
        let mut pages = Vec::new();
        {
            let mut records = self.records();
            for message in batch {
                match message {
                    Message::Fetched(f) => {
                        if let (Some(fp), Some(_)) = (f.fingerprint, &f.exchange) {
                            pages.push((f.job.url.clone(), fp));
                        }
                        self.record(&mut records, *f, &mut offers, &mut done)?
                    }
                    Message::Offer(found) => {
                        offers.extend(found.into_iter().map(|candidate| Offer {
                            from: None,
                            candidate,
                        }))
                    }
                    Message::Warn(w) => warnings.push(w),
                }
            }
        }
        for w in warnings {
            self.monitor.logger.warn(&w).await;
        }
        if self.ctx.config.learn {
            self.learn(pages).await?;
        }
        let applied = {
            let dust = self.dust();
            dust.active().then(|| dust.applied())
        };
        let rules = Rules {
            canon: &self.ctx.canon,
            config: &self.ctx.config,
            dust: applied,
        };
        let admitted = rules.admit(&*self.backend, offers, done).await?;
        let mut records = self.records();
        records.stats.duplicate_links += admitted.duplicates;
        records.stats.canonicalized += admitted.canonicalized;
        records.stats.admitted += admitted.queued.len() as u64;
        for r in &admitted.refusals {
            records.skip(r.reason, &r.url, &r.detail)?;
        }
        records.flush_skips();
        Ok(())
    }

    /// Records one finished job: its skip, counters and WARC records; collects its links
    /// and what the backend must hear of it.
    fn record(
        &self,
        records: &mut Records,
        f: Fetched,
        offers: &mut Vec<Offer>,
        done: &mut Vec<Done>,
    ) -> Result<(), CrawlError> {
        if let Some(e) = f.fatal {
            self.fail(e);
        }
        let job = f.job;
        if let Some((reason, detail)) = &f.problem {
            records.skip(*reason, &job.url, detail)?;
        }
        let answer = f
            .exchange
            .as_ref()
            .map(|x| (x.status.as_u16(), x.body.len()));
        self.monitor.note(&job.url, answer, f.problem.as_ref());
        records.stats.nofollow += f.unfollowed.0;
        records.stats.not_web += f.unfollowed.1;
        if let Some((hash, decoded)) = f.body {
            records.body_seen_hash(hash);
            records.stats.decoded += u64::from(decoded);
        }
        records.stats.mirror_files += u64::from(f.mirrored);
        records.stats.retries += u64::from(f.retries);
        let (warc_len, status, validators) = match &f.exchange {
            Some(x) => {
                records.stats.redirects +=
                    u64::from(x.status.is_redirection() && !f.links.is_empty());
                if job.kind == JobKind::Sitemap {
                    records.stats.sitemap_urls +=
                        f.links.iter().filter(|c| c.kind == JobKind::Page).count() as u64;
                }
                records.stats.not_modified += u64::from(x.status == StatusCode::NOT_MODIFIED);
                let validators = x
                    .status
                    .is_success()
                    .then(|| Validators::of(&x.headers))
                    .flatten();
                let warc_len = records.exchange(&job.url, x)?;
                (warc_len, Some(x.status.as_u16()), validators)
            }
            None => (records.warc_offset(), None, None),
        };
        let from: Arc<str> = job.url.clone();
        offers.extend(f.links.into_iter().map(|candidate| Offer {
            from: Some(from.clone()),
            candidate,
        }));
        done.push(Done {
            fetched: f.exchange.is_some(),
            status,
            warc_len,
            validators,
            job,
        });
        Ok(())
    }

    /// Why the run ended, the same way in both modes.
    fn stop_reason(&self) -> Stop {
        if self.finished.load(Ordering::Relaxed) {
            Stop::Finished
        } else if self.interrupted.load(Ordering::Relaxed) || self.flagged.load(Ordering::Relaxed) {
            Stop::Interrupted
        } else if self.budget.used_up() {
            Stop::MaxPages
        } else {
            Stop::Interrupted
        }
    }
}

/// Runs the crawl on `backend`.
async fn drive<B: Backend>(
    config: CrawlConfig,
    backend: B,
    mut records: Records,
    logger: Logger,
    crawl_name: String,
) -> Result<Report, CrawlError> {
    let begin = Instant::now();
    let backend = Arc::new(backend);
    let fetcher = Fetcher::new(config.fetch.clone())?;
    let shared = backend.paces_hosts();
    let monitor = Arc::new(Monitor::new(
        backend.process(),
        crawl_name,
        shared,
        config.rate,
        logger,
    ));
    let kernels = Kernels::standard(
        config.respect_nofollow,
        crate::budget::ParseBudget::new(config.fetch.max_body),
    );
    let workers = config.workers;
    let dust = open_dust(&config, &*backend, &mut records).await?;
    let aliases = dust.aliases();
    let learning = config.learn.then(Learning::start);
    let budget = Arc::new(FetchBudget::new(config.max_pages, backend.pages_before()));
    let canon = Canonicalizer::keeping_userinfo(config.keep_userinfo);
    let ctx = Arc::new(Context {
        config,
        canon,
        fetcher,
        kernels,
        pacer: monitor.pacer.clone(),
    });
    let mut inboxes = Vec::new();
    let mut senders = Vec::new();
    for _ in 0..workers {
        let (tx, rx) = mpsc::unbounded_channel();
        senders.push(tx);
        inboxes.push(rx);
    }
    let (outbox, inbox) = Outbox::new();
    let halt = Arc::new(watch::Sender::new(Halt::Run));
    let engine = Arc::new(Engine {
        ctx: ctx.clone(),
        backend: backend.clone(),
        records: Mutex::new(records),
        monitor: monitor.clone(),
        budget: budget.clone(),
        outbox: outbox.clone(),
        router: Router::new(senders)?,
        halt: halt.clone(),
        fatal: Mutex::new(None),
        finished: AtomicBool::new(false),
        interrupted: AtomicBool::new(false),
        flagged: AtomicBool::new(false),
        dust: Mutex::new(dust),
        learning: Mutex::new(learning),
        rules_read: Mutex::new(None),
    });
    let _ = monitor.refresh.set(refresh_from(Arc::downgrade(&engine)));
    if let Some(addr) = ctx.config.status {
        crate::monitor::start(monitor.clone(), addr, &ctx.config.out).await?;
    }

    let crew = Crew {
        ctx,
        backend,
        budget,
        outbox: outbox.clone(),
        halt: halt.clone(),
        aliases,
    };
    let workers: Vec<_> = inboxes
        .into_iter()
        .map(|inbox| tokio::spawn(worker::run(crew.clone(), inbox, halt.subscribe())))
        .collect();
    drop(crew);
    // The run queue of an interrupted crawl comes first; the seeds are offered in every run
    // (and by every process of a shared crawl): the done set lets each in once.
    outbox.offer(engine.seeds());
    let committer = supervised(&engine, "committer", commit_all(engine.clone(), inbox));
    let feeder = supervised(&engine, "feeder", feed(engine.clone()));

    let signals = crate::signals::listen(crate::signals::Handlers {
        // In a shared crawl this process leaves; the others carry on (the stop flag is for
        // ending them all).
        drain: {
            let engine = engine.clone();
            move || {
                engine.interrupted.store(true, Ordering::Relaxed);
                engine.request_stop();
            }
        },
        abort: {
            let engine = engine.clone();
            move || {
                engine.records().flush();
                engine.backend.abort();
            }
        },
    })
    .map_err(CrawlError::io(
        "installing signal handlers",
        &engine.ctx.config.out,
    ))?;
    let background = supervised(&engine, "housekeeping", housekeeping(engine.clone()));
    for w in workers {
        let _ = w.await;
    }
    signals.abort();
    feeder.abort();
    // Everything finished is committed before this process ends its part.
    outbox.close();
    let _ = committer.await;
    background.abort();
    // What the learner has left to learn, in the rules file too.
    let learning = engine.learning().take();
    if let Some(mut learning) = learning {
        match learning.finish().await {
            Ok(sets) => {
                let mut dust = engine.dust();
                for set in sets {
                    dust.learned(set);
                }
            }
            Err(e) => engine.fail(e),
        }
    }

    let fatal = engine
        .fatal
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take();
    if fatal.is_none() && engine.ctx.config.learn {
        // The last rules other processes shared, in this process's rules file too.
        let mut marks = Vec::new();
        if let Err(e) = engine.sync_rules(true, &mut marks).await {
            monitor.logger.warn(&format!("rules: {e}")).await;
        }
    }
    let finished = engine.backend.finish(fatal.as_ref()).await;
    engine.records().flush();
    if let Some(e) = fatal {
        let e = engine.backend.explain(e);
        monitor.logger.error(&e.to_string()).await;
        return Err(e);
    }
    finished?;
    let report = engine.backend.report().await;
    let ending = Ending {
        stop: engine.stop_reason(),
        shared,
        elapsed: begin.elapsed(),
        panics: outbox.panics(),
    };
    let BackendReport { extra, .. } = &report;
    let extra = extra.clone();
    let active = engine.dust().active();
    let rules = active.then(|| engine.rule_figures());
    let summary = Summary::new(
        &engine.ctx.config,
        &mut engine.records(),
        &report,
        ending,
        rules,
    );
    Ok(Report {
        summary: Box::new(summary),
        extra,
    })
}

/// The learning stage of a run: the rules file an earlier run saved in `--out` (kept as it
/// was), `--rules FILE` (trusted), and the pages an earlier run fingerprinted (its page log)
/// as evidence. With `--learn`, also turns on the page log and revisit records.
async fn open_dust<B: Backend>(
    config: &CrawlConfig,
    backend: &B,
    records: &mut Records,
) -> Result<Dust, CrawlError> {
    let out = &config.out;
    let rules_name = backend.file_name("rules", "txt");
    let saved = match config.learn {
        true => match crate::files::read_private(out, Path::new(&rules_name)) {
            Ok(Some(text)) => Some(url_dedup_rules::RuleSet::parse(&text).map_err(|e| {
                CrawlError::DamagedState(format!("{}: {e}", out.join(&rules_name).display()))
            })?),
            Ok(None) => None,
            Err(e) => return Err(CrawlError::io("reading rules", out.join(&rules_name))(e)),
        },
        false => None,
    };
    let mut dust = Dust::new(config.learn, saved, config.rules.as_ref());
    if config.learn {
        let pages = backend.file_name("pages", "tsv");
        for log in crate::dust::page_logs(out, &pages)
            .map_err(CrawlError::io("listing page logs", out.to_owned()))?
        {
            let Some(text) = crate::files::read_private(out, Path::new(&log))
                .map_err(CrawlError::io("reading page log", out.join(&log)))?
            else {
                continue;
            };
            // The SimHash index of a shared crawl already holds other processes' pages.
            let own = log == pages;
            for (url, fp) in text.lines().filter_map(crate::dust::parse_page_line) {
                if own && !fp.is_empty() {
                    backend.near_page(fp.simhash.0, url).await?;
                }
                dust.remember(url, fp);
            }
        }
        dust.resumed();
        records.learn(&pages)?;
    }
    Ok(dust)
}

/// Runs one of the engine's own tasks; a panic in it (a bug) stops the crawl with an error
/// naming the task, where it would otherwise end the task alone and leave the crawl without
/// its feeder, committer or heartbeats.
fn supervised<B: Backend>(
    engine: &Arc<Engine<B>>,
    name: &'static str,
    task: impl std::future::Future<Output = ()> + Send + 'static,
) -> tokio::task::JoinHandle<()> {
    let engine = engine.clone();
    tokio::spawn(async move {
        let inner = tokio::spawn(task);
        let abort = inner.abort_handle();
        // Aborting this task aborts the inner one too.
        let _guard = AbortOnDrop(abort);
        if let Err(e) = inner.await
            && e.is_panic()
        {
            let why = match e.try_into_panic() {
                Ok(p) => crate::worker::panic_message(p.as_ref()),
                Err(e) => e.to_string(),
            };
            engine.fail(CrawlError::Options(format!(
                "internal error in the crawl's {name}: {why}"
            )));
        }
    })
}

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Takes jobs from the backend while this process has room and routes them to the workers;
/// ends the crawl when the backend finds it complete.
async fn feed<B: Backend>(engine: Arc<Engine<B>>) {
    let mut halt = engine.halt.subscribe();
    let room = engine.backend.room();
    loop {
        if *halt.borrow_and_update() != Halt::Run {
            return;
        }
        // Registered before `held` is read, so a commit finishing meanwhile is not missed.
        let settled = engine.outbox.settled();
        tokio::pin!(settled);
        settled.as_mut().enable();
        let held = engine.outbox.held() as usize;
        if held >= room {
            tokio::select! {
                () = &mut settled => {}
                _ = halt.changed() => {}
            }
            continue;
        }
        // Taking is cancel-safe: what a shared backend claimed and was not routed stays
        // claimed by this process and goes back when it leaves.
        let took = tokio::select! {
            took = engine.backend.take(room - held, held == 0) => took,
            _ = halt.changed() => continue,
        };
        match took {
            Ok(Take::Jobs(jobs)) => {
                engine.outbox.hold(jobs.len() as u64);
                jobs.into_iter().for_each(|j| engine.router.route(j));
            }
            Ok(Take::Idle) => {
                tokio::select! {
                    () = &mut settled => {}
                    _ = halt.changed() => {}
                    () = tokio::time::sleep(IDLE_POLL) => {}
                }
            }
            Ok(Take::Finished) => {
                engine.finished.store(true, Ordering::Relaxed);
                engine.request_stop();
                return;
            }
            Ok(Take::Restart) => engine.outbox.offer(engine.seeds()),
            Err(e) => {
                engine.fail(e);
                return;
            }
        }
    }
}

/// Commits finished jobs in batches: everything finished while the previous batch was being
/// committed goes in the next.
async fn commit_all<B: Backend>(
    engine: Arc<Engine<B>>,
    mut inbox: mpsc::UnboundedReceiver<Message>,
) {
    let mut batch = Vec::new();
    while inbox.recv_many(&mut batch, 256).await > 0 {
        let held: u64 = batch.iter().map(Message::held).sum();
        if let Err(e) = engine.commit(std::mem::take(&mut batch)).await {
            engine.fail(e);
        }
        engine.outbox.settle(held);
    }
}

/// Periodic duties of the backend (checkpoints, or heartbeats and the leader's work), the
/// status page's backend figures, and progress lines.
async fn housekeeping<B: Backend>(engine: Arc<Engine<B>>) {
    let every = engine.backend.housekeeping_period();
    let progress = engine.ctx.config.progress && std::io::stderr().is_terminal();
    let mut duty = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    duty.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut tick = tokio::time::interval(Duration::from_secs(2));
    loop {
        tokio::select! {
            _ = duty.tick() => match engine.backend.housekeep().await {
                Ok(true) => {
                    engine.flagged.store(true, Ordering::Relaxed);
                    engine.request_stop();
                }
                Ok(false) => {}
                Err(e) => engine.fail(e),
            },
            _ = tick.tick() => {
                let report = engine.backend.report().await;
                let mine = engine.monitor.own_row();
                let view = engine.backend.crawl_view(mine, engine.monitor.is_served()).await;
                engine.monitor.sample(&report, view);
                if progress {
                    eprintln!(
                        "fetched {} pages, {} queued",
                        report.pages_total, report.pending
                    );
                }
            }
        }
    }
}

/// Copies the figures of this run (kept in its records) into the monitor's counters.
fn refresh_from<B: Backend>(engine: Weak<Engine<B>>) -> Refresh {
    Box::new(move |c: &Counters| {
        let Some(engine) = engine.upgrade() else {
            return;
        };
        let r = engine.records();
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
        drop(r);
        let d = engine.rule_figures();
        for (counter, value) in [
            (&c.rules, d.applied),
            (&c.saved, d.saved),
            (&c.rule_checks, d.checks),
            (&c.rules_rejected, d.rejected),
        ] {
            counter.store(value, Ordering::Relaxed);
        }
    })
}
