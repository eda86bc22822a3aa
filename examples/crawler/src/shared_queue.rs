//! The shared backend of the crawl engine (document 003): `--redis URL` puts the run queue, the
//! done set and the admission budgets in Redis, so any number of processes crawl one set of
//! sites together. Everything else (fetching, politeness per process, robots.txt, traps, WARC,
//! mirror, skip report, status page) is the engine's, the same as in a single-process crawl.
//!
//! * **Run queue**: `--queue-stripes` `url_dedup_redis::Frontier`s (one by default), each in
//!   one Redis Cluster hash slot. A host goes to the stripe of its virtual node in the
//!   partition table (16,384 virtual nodes, routed with the crawl's key). No process owns a
//!   host or a virtual node: every process claims from every stripe, and each host's
//!   politeness budget (`--per-host` requests at once, their starts `--delay-ms` apart) is
//!   held in Redis for all processes together. So several processes share one site's pages,
//!   and shares do not cap at any number of processes.
//! * **Done set**: the facade `url_dedup::UrlDedup` in Redis mode ([`crate::done`]): of two
//!   processes finding one new link, exactly one admits it. The hash key is drawn once per
//!   crawl and kept in the crawl's namespace (`SET NX`).
//! * **Batches**: a feeder claims up to 64 URLs per round trip; a committer takes every page
//!   finished meanwhile at once: one done-set call for all their links, then one `commit`
//!   script per stripe that queues the new URLs (with the host budget) and acknowledges the
//!   pages. A page's links are queued before its claim ends, so "every queue empty and nothing
//!   claimed" really means the crawl is over, for every process at once.
//! * **Membership**: a heartbeat lease per process, renewed by the engine's housekeeping loop.
//!   The leader (`LeaderLease`) requeues the
//!   claims of processes whose lease expired (at-least-once: the pages a killed process held
//!   are fetched again) and schedules the revisits of `--every`.
//! * **Stop flag**: `crawler --redis URL --crawl-name NAME --stop` sets a key; every process
//!   sees it within a heartbeat, finishes its fetches in flight and leaves.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{Notify, mpsc};
use url_dedup_bloom::HashKey;
use url_dedup_partition::{NodeId, PartitionTable, RouteKey};
use url_dedup_redis::Connection;
use url_dedup_redis::{
    ClaimedTask, Epoch, Frontier, FrontierSettings, LeaderLease, Link, Membership, Namespace,
    NewTask, WorkerId,
};

use crate::crawl::Shared;
use crate::done::{DoneSet, SharedFilter, Verdict};
use crate::error::CrawlError;
use crate::fetch::Validators;
use crate::frontier::{Job, JobKind};
use crate::records::Records;
use crate::skip::SkipReason;
use crate::template::Lineage;

/// Virtual nodes of the partition table that routes hosts to queue stripes.
pub(crate) const VIRTUAL_NODES: u64 = 16_384;

/// Most URLs claimed in one round trip.
const CLAIM_BATCH: usize = 64;

/// How long an idle feeder waits on a stripe before it looks again (and checks whether the
/// crawl is over).
const IDLE_WAIT: Duration = Duration::from_millis(300);

/// How long a busy feeder waits for a slot of a host to free before it looks again.
const BUSY_WAIT: Duration = Duration::from_millis(50);

/// Separates the fields of a task's data; no header value or number holds it.
const FIELD: char = '\u{1f}';

/// Where a process finds the shared crawl, and how it takes part.
#[derive(Clone, Debug)]
pub(crate) struct SharedSettings {
    pub(crate) redis: String,
    pub(crate) name: String,
    pub(crate) lease: Duration,
    pub(crate) log_cap: u64,
    /// Incremental crawl: the period between two revisits.
    pub(crate) every: Option<Duration>,
    /// Retries of every Redis call.
    pub(crate) backoff: url_dedup_redis::Backoff,
    /// Frontiers the run queue is split into.
    pub(crate) stripes: usize,
    /// After Redis lost the crawl's data: start again from the seeds instead of stopping.
    pub(crate) continue_after_reset: bool,
}

/// A job's claim on the shared frontier, given back when the page is committed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Claimed {
    stripe: usize,
    task: ClaimedTask,
    /// What an earlier period stored about the page, for a conditional GET.
    pub(crate) known: Option<Validators>,
}

/// What a finished page (or a sitemap list found in robots.txt) hands to the committer.
#[derive(Debug)]
pub(crate) struct Commit {
    /// The page's claim, acknowledged once its links are queued.
    pub(crate) claim: Option<Arc<Claimed>>,
    /// Links that passed scope and trap rules, with how they continue the page's template.
    pub(crate) offers: Vec<(Job, Option<Lineage>)>,
    /// The page's validators, kept for the revisit of the next period (`--every`).
    pub(crate) remember: Option<(Arc<str>, Option<Validators>)>,
}

struct Keys {
    stop: String,
    known: String,
    period: String,
    templates: String,
}

/// This process's view of the shared crawl.
pub(crate) struct SharedQueue {
    pub(crate) me: WorkerId,
    pub(crate) name: String,
    /// The run queue's stripes and the done set, replaced together when the crawl goes on
    /// after Redis lost its data (`--after-redis-reset continue`).
    store: std::sync::RwLock<Arc<Store>>,
    /// How the store is rebuilt.
    build: StoreBuild,
    /// Stores built so far, less one: a failure seen under an older store was already dealt
    /// with.
    resets: AtomicU64,
    recovering: tokio::sync::Mutex<()>,
    continue_after_reset: bool,
    key: HashKey,
    members: Vec<Membership>,
    main: Membership,
    lease: LeaderLease,
    leader: tokio::sync::Mutex<Option<Epoch>>,
    /// Only its routing of host names to virtual nodes is used.
    table: PartitionTable,
    conn: Connection,
    keys: Keys,
    every: Option<Duration>,
    host_budget: u64,
    template_budget: u64,
    next: AtomicUsize,
    /// URLs claimed and not yet committed, plus offers not yet committed.
    held: AtomicU64,
    held_changed: Notify,
    /// `None` once the crawl closed it: the committer then ends when it has committed
    /// everything sent before.
    commits: Mutex<Option<mpsc::UnboundedSender<Commit>>>,
    inbox: Mutex<Option<mpsc::UnboundedReceiver<Commit>>>,
    /// The WARC file, skip report and counters of this process.
    pub(crate) records: Mutex<Records>,
    /// `status<TAB>url` of every response this process received.
    fetched: Record,
    /// `offered<TAB>decided<TAB>url` of every URL this process admitted (queued), the times
    /// in microseconds since the Unix epoch: when its batch was offered to the done set, and
    /// when it was queued.
    admitted: Record,
    /// Redis's command count and the pages acknowledged crawl-wide when this process joined.
    baseline: Mutex<Option<(u64, u64)>>,
    /// Whether this process started the crawl in Redis (drew its key) or joined it, and
    /// whether the output directory holds an earlier run of a crawl it started.
    arrival: Arrival,
    /// Calls this process made to Redis (frontier scripts, done-set batches, its own keys,
    /// memberships), each one round trip.
    calls: AtomicU64,
    /// Set when this process saw the crawl over (every queue empty, nothing claimed).
    finished: std::sync::atomic::AtomicBool,
    /// The membership lease's length.
    lease_ttl: Duration,
}

impl std::fmt::Debug for SharedQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedQueue")
            .field("me", &self.me)
            .field("name", &self.name)
            .field("stripes", &self.build.stripes)
            .finish_non_exhaustive()
    }
}

/// Raises the stop flag of a shared crawl.
pub(crate) async fn raise_stop(redis: &str, name: &str) -> Result<(), CrawlError> {
    let ns = Namespace::new(name)?;
    let mut conn = connect(redis).await?;
    let () = redis::cmd("SET")
        .arg(ns.key("stop"))
        .arg("1")
        .query_async(&mut conn)
        .await?;
    Ok(())
}

/// How a process came to a shared crawl.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Arrival {
    /// The crawl was not in Redis: this process started it.
    Started,
    /// Another process started it.
    Joined,
    /// The crawl was not in Redis, yet the output directory holds an earlier run of it:
    /// Redis lost it between runs (a restart without persistence), and it starts again from
    /// the seeds.
    LostEarlierRun,
}

impl SharedQueue {
    /// How this process came to the crawl.
    pub(crate) fn arrival(&self) -> Arrival {
        self.arrival
    }

    /// Connects to the shared crawl `settings.name` (creating it if this is its first process)
    /// and registers this process, not yet as a member.
    pub(crate) async fn open(
        config: &crate::options::CrawlConfig,
        settings: &SharedSettings,
    ) -> Result<Self, CrawlError> {
        let link = Link::connect_with(&settings.redis, settings.backoff).await?;
        let ns = Namespace::new(&settings.name)?;
        let mut conn = connect(&settings.redis).await?;
        let me = WorkerId::random("crawler");
        let (key, started) = crawl_key(&mut conn, &ns, None).await?;
        let build = StoreBuild {
            link: link.clone(),
            name: settings.name.clone(),
            stripes: settings.stripes.max(1),
            frontier: FrontierSettings {
                host_delay: config.delay,
                host_concurrency: u32::try_from(config.per_host).unwrap_or(u32::MAX),
                ..Default::default()
            },
            filter: SharedFilter {
                redis: settings.redis.clone(),
                prefix: format!("{}:seen", settings.name),
                key,
                backoff: settings.backoff,
            },
            size: config.filter,
        };
        let store = build.store().await?;
        let mut members = Vec::new();
        for s in 0..build.stripes {
            let ns = Namespace::new(&stripe_name(&settings.name, s))?;
            members.push(Membership::with_ttl(link.clone(), ns, settings.lease));
        }
        let table = PartitionTable::builder()
            .virtual_nodes(VIRTUAL_NODES)
            .key(key)
            .route_by(RouteKey::Host)
            .nodes([NodeId(0)])
            .build()?;
        let out = &config.out;
        let arrival = match (started, name_crawl_in(out, &settings.name)?) {
            (false, _) => Arrival::Joined,
            (true, false) => Arrival::Started,
            (true, true) => Arrival::LostEarlierRun,
        };
        let warc = format!("crawl-{me}.warc");
        let records = Records::open(out, config.warc.then_some((warc.as_str(), 0)), &software())?;
        let (commits, inbox) = mpsc::unbounded_channel();
        Ok(Self {
            fetched: Record::create(out.join(format!("fetched-{me}.tsv")))?,
            admitted: Record::create(out.join(format!("admitted-{me}.tsv")))?,
            records: Mutex::new(records),
            me,
            name: settings.name.clone(),
            store: std::sync::RwLock::new(Arc::new(store)),
            build,
            resets: AtomicU64::new(0),
            recovering: tokio::sync::Mutex::new(()),
            continue_after_reset: settings.continue_after_reset,
            key,
            members,
            main: Membership::with_ttl(link.clone(), ns.clone(), settings.lease),
            lease: LeaderLease::with_ttl(link, ns.clone(), settings.lease),
            leader: tokio::sync::Mutex::new(None),
            table,
            conn,
            keys: Keys {
                stop: ns.key("stop"),
                known: ns.key("known"),
                period: ns.key("period"),
                templates: ns.key("templates"),
            },
            every: settings.every,
            host_budget: config.traps.host_budget,
            template_budget: config.traps.template_budget,
            next: AtomicUsize::new(0),
            held: AtomicU64::new(0),
            held_changed: Notify::new(),
            commits: Mutex::new(Some(commits)),
            inbox: Mutex::new(Some(inbox)),
            baseline: Mutex::new(None),
            arrival,
            calls: AtomicU64::new(0),
            finished: std::sync::atomic::AtomicBool::new(false),
            lease_ttl: settings.lease,
        })
    }

    /// Counts `n` calls to Redis.
    fn called(&self, n: usize) {
        self.calls.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// Calls to Redis per page this process fetched; `None` before its first page.
    pub(crate) fn calls_per_page(&self, fetched: u64) -> Option<f64> {
        (fetched > 0).then(|| self.calls.load(Ordering::Relaxed) as f64 / fetched as f64)
    }

    /// Whether this process saw the crawl over.
    pub(crate) fn finished(&self) -> bool {
        self.finished.load(Ordering::Relaxed)
    }

    /// The done set of the current store.
    pub(crate) fn done_set(&self) -> Arc<DoneSet> {
        self.store().done.clone()
    }

    /// The current store (stripes and done set).
    fn store(&self) -> Arc<Store> {
        self.store.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Which store is current: pass it to [`recover`](Self::recover) with a failure seen
    /// under it.
    fn epoch(&self) -> u64 {
        self.resets.load(Ordering::SeqCst)
    }

    /// Deals with `e`, seen under store `epoch`: `Ok(())` when the crawl goes on, `Err(e)` when
    /// it must stop. A Redis that lost the crawl's data stops the crawl, unless
    /// `--after-redis-reset continue` was given: then a new run queue and done set are made
    /// (once, however many tasks saw the failure), the seeds offered again, and the shared log
    /// says, as an error, that every page fetched before may be fetched again.
    pub(crate) async fn recover(
        &self,
        shared: &Shared,
        epoch: u64,
        e: CrawlError,
    ) -> Result<(), CrawlError> {
        if !is_reset(&e) || !self.continue_after_reset {
            return Err(e);
        }
        let _one_at_a_time = self.recovering.lock().await;
        if self.epoch() != epoch {
            return Ok(());
        }
        let fetched = self.records().stats.fetched;
        shared
            .monitor
            .logger
            .error(&format!(
                "Redis lost the shared crawl's data ({e}); going on as asked \
                 (--after-redis-reset continue): the run queue starts again from the seeds and \
                 every page fetched before may be fetched again ({fetched} by this process)"
            ))
            .await;
        let mut conn = self.conn.clone();
        let ns = Namespace::new(&self.name)?;
        let _ = crawl_key(&mut conn, &ns, Some(self.key)).await?;
        let store = self.build.store().await?;
        *self.store.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(store);
        self.resets.fetch_add(1, Ordering::SeqCst);
        self.join().await?;
        shared.offer_seeds();
        Ok(())
    }

    /// The records of this process.
    pub(crate) fn records(&self) -> MutexGuard<'_, Records> {
        self.records.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A connection for the shared log stream.
    pub(crate) fn log_stream(&self) -> (Connection, String) {
        let ns = Namespace::new(&self.name).map(|ns| ns.key("log"));
        (self.conn.clone(), ns.unwrap_or_default())
    }

    /// Joins the crawl's membership and every stripe's.
    pub(crate) async fn join(&self) -> Result<(), CrawlError> {
        self.main.join(&self.me).await?;
        for m in &self.members {
            m.join(&self.me).await?;
        }
        Ok(())
    }

    /// Gives back every URL this process still holds (claimed, not committed) and leaves.
    pub(crate) async fn leave(&self) -> Result<(), CrawlError> {
        for (frontier, members) in self.store().stripes.iter().zip(&self.members) {
            frontier.requeue_worker(&self.me).await?;
            members.leave(&self.me).await?;
        }
        self.main.leave(&self.me).await?;
        if let Some(epoch) = self.leader.lock().await.take() {
            self.lease.release(&self.me, epoch).await?;
        }
        Ok(())
    }

    /// Hands a finished page (or offers found elsewhere) to the committer.
    pub(crate) fn submit(&self, commit: Commit) {
        if commit.claim.is_none() {
            self.held.fetch_add(1, Ordering::SeqCst);
        }
        // A closed channel means the crawl is ending: what is not committed is requeued when
        // this process leaves.
        if let Some(commits) = &*self.commits.lock().unwrap_or_else(|p| p.into_inner()) {
            let _ = commits.send(commit);
        }
    }

    /// Whether pages' validators are kept for revisits (`--every`).
    pub(crate) fn revisits(&self) -> bool {
        self.every.is_some()
    }

    /// Lets the committer end once it has committed everything sent so far.
    pub(crate) fn close_commits(&self) {
        self.commits
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
    }

    /// Writes one line of `fetched-PROCESS.tsv`.
    pub(crate) fn log_fetched(&self, status: u16, url: &str) -> Result<(), CrawlError> {
        self.fetched.write(format_args!("{status}\t{url}"))
    }

    /// Flushes this process's records, best effort (for a process about to exit).
    pub(crate) fn flush(&self) {
        let _ = self.fetched.flush();
        let _ = self.admitted.flush();
        self.records().flush();
    }

    fn stripe_of(&self, host: &str) -> usize {
        let (vnode, _) = self.table.route(host.as_bytes());
        vnode.index() % self.build.stripes
    }

    /// Claims up to `max` URLs, rotating over the stripes. With `wait`, an idle process waits
    /// up to that long for a URL to be queued (woken through pub/sub); a busy one never waits
    /// here: its own commits free the slots it is waiting for, and every process woken by every
    /// acknowledgement would send a claim per page for nothing.
    async fn claim(&self, max: usize, wait: Option<Duration>) -> Result<Vec<Job>, CrawlError> {
        let store = self.store();
        let n = store.stripes.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let mut tasks = Vec::new();
        for i in 0..n {
            let s = (start + i) % n;
            self.called(1);
            let got = store.stripes[s].claim_batch(&self.me, max).await?;
            if !got.is_empty() {
                tasks = got.into_iter().map(|t| (s, t)).collect();
                break;
            }
        }
        if let (true, Some(wait)) = (tasks.is_empty(), wait) {
            let s = start % n;
            self.called(1);
            tasks = store.stripes[s]
                .claim_batch_wait(&self.me, max, wait / n as u32)
                .await?
                .into_iter()
                .map(|t| (s, t))
                .collect();
        }
        Ok(tasks
            .into_iter()
            .map(|(stripe, task)| job_of(stripe, task))
            .collect())
    }

    /// Gives the host of `url` its politeness delay for every process (its robots.txt's
    /// `Crawl-delay`, or `--delay-ms` if longer).
    pub(crate) async fn set_host_delay(
        &self,
        url: &str,
        delay: Duration,
    ) -> Result<(), CrawlError> {
        let task = NewTask::from_url(url)?;
        let store = self.store();
        self.called(1);
        store.stripes[self.stripe_of(task.host())]
            .set_host_delay(task.host(), delay)
            .await?;
        Ok(())
    }

    /// Whether every stripe is empty with nothing claimed by any process.
    async fn drained(&self) -> Result<bool, CrawlError> {
        for f in &self.store().stripes {
            self.called(2);
            if f.pending().await? > 0 || f.in_flight().await? > 0 {
                return Ok(false);
            }
        }
        Ok(true)
    }

    async fn stop_raised(&self) -> bool {
        self.called(1);
        let mut conn = self.conn.clone();
        let flag: redis::RedisResult<Option<String>> = redis::cmd("GET")
            .arg(&self.keys.stop)
            .query_async(&mut conn)
            .await;
        matches!(flag, Ok(Some(_)))
    }

    /// Redis commands processed per page acknowledged, crawl-wide, since this process
    /// joined (every client's commands count; NaN before the first page).
    pub(crate) async fn commands_per_page(&self) -> f64 {
        let Ok(now) = self.command_count().await else {
            return f64::NAN;
        };
        let mut pages = 0;
        for f in &self.store().stripes {
            self.called(1);
            pages += f.acked().await.unwrap_or(0);
        }
        let mut baseline = self.baseline.lock().unwrap_or_else(|p| p.into_inner());
        let (commands0, pages0) = *baseline.get_or_insert((now, pages));
        if pages > pages0 {
            (now - commands0) as f64 / (pages - pages0) as f64
        } else {
            f64::NAN
        }
    }

    async fn command_count(&self) -> Result<u64, CrawlError> {
        self.called(1);
        let mut conn = self.conn.clone();
        let info: redis::Value = redis::cmd("INFO")
            .arg("stats")
            .query_async(&mut conn)
            .await?;
        // A cluster answers for each master: the count is their sum.
        let texts: Vec<redis::Value> = match info {
            redis::Value::Map(nodes) => nodes.into_iter().map(|(_, text)| text).collect(),
            one => vec![one],
        };
        let mut total = 0;
        for text in texts {
            let text: String = redis::from_redis_value(text)
                .map_err(|e| CrawlError::Options(format!("INFO stats: {e}")))?;
            total += text
                .lines()
                .find_map(|l| l.strip_prefix("total_commands_processed:"))
                .and_then(|v| v.trim().parse::<u64>().ok())
                .ok_or_else(|| CrawlError::Options("INFO stats has no command count".into()))?;
        }
        Ok(total)
    }
}

/// The run queue's stripes and the done set of one generation of the crawl's data in Redis.
struct Store {
    stripes: Vec<Frontier>,
    done: Arc<DoneSet>,
}

/// How a [`Store`] is made.
struct StoreBuild {
    link: Link,
    name: String,
    stripes: usize,
    frontier: FrontierSettings,
    filter: SharedFilter,
    size: crate::done::FilterSize,
}

impl StoreBuild {
    /// Opens the stripes and the done set (creating them when Redis has none).
    async fn store(&self) -> Result<Store, CrawlError> {
        let (size, at) = (self.size, self.filter.clone());
        let done = tokio::task::spawn_blocking(move || DoneSet::shared(size, &at))
            .await
            .map_err(|e| CrawlError::Options(format!("done set setup: {e}")))??;
        let stripes = (0..self.stripes)
            .map(|s| {
                let ns = Namespace::new(&stripe_name(&self.name, s))?;
                Ok(Frontier::with_settings(
                    self.link.clone(),
                    ns,
                    self.frontier,
                ))
            })
            .collect::<Result<Vec<_>, url_dedup_redis::Error>>()?;
        Ok(Store {
            stripes,
            done: Arc::new(done),
        })
    }
}

/// The namespace of stripe `s` of crawl `name`.
fn stripe_name(name: &str, s: usize) -> String {
    format!("{name}-s{s}")
}

/// The job a claimed task stands for: its URL and the depth, hops, kind and validators it was
/// pushed with.
fn job_of(stripe: usize, task: ClaimedTask) -> Job {
    let (kind, depth, hops, known) = read_data(task.data());
    Job {
        url: task.url().into(),
        depth,
        hops,
        kind,
        claim: Some(Arc::new(Claimed {
            stripe,
            task,
            known,
        })),
    }
}

/// The inverse of [`task_of`]'s data; a task pushed without data is a page at depth 0.
fn read_data(data: &str) -> (JobKind, u32, u32, Option<Validators>) {
    let mut fields = data.split(FIELD);
    let mut head = fields.next().unwrap_or("").split(' ');
    let kind = head
        .next()
        .and_then(JobKind::from_code)
        .unwrap_or(JobKind::Page);
    let mut number = || head.next().and_then(|n| n.parse().ok()).unwrap_or(0);
    let (depth, hops) = (number(), number());
    let known = match (fields.next(), fields.next()) {
        (Some(etag), Some(modified)) => Validators::decode(&format!("{etag}\n{modified}")),
        _ => None,
    };
    (kind, depth, hops, known)
}

/// The task a job is pushed as: `kind depth hops`, then the validators for a revisit.
fn task_of(job: &Job, known: Option<&Validators>) -> Result<NewTask, url_dedup_redis::Error> {
    let mut data = format!("{} {} {}", job.kind.code(), job.depth, job.hops);
    if let Some(v) = known {
        let (etag, modified) = (
            v.etag.as_deref().unwrap_or(""),
            v.last_modified.as_deref().unwrap_or(""),
        );
        if !etag.contains(FIELD) && !modified.contains(FIELD) {
            data.push_str(&format!("{FIELD}{etag}{FIELD}{modified}"));
        }
    }
    NewTask::from_url(&job.url)?.with_data(data)
}

fn software() -> String {
    format!("url-dedup-crawler/{}", env!("CARGO_PKG_VERSION"))
}

/// The engine's shared backend; only called when the crawl is shared.
fn queue(shared: &Shared) -> &SharedQueue {
    shared
        .shared_queue()
        .expect("the shared tasks run only in a shared crawl")
}

/// Claims URLs while this process has room for them and hands them to the workers; ends the
/// crawl when every queue is empty and nothing is claimed anywhere (or starts the next period
/// of `--every`).
pub(crate) async fn feed(shared: Arc<Shared>) {
    let q = queue(&shared);
    loop {
        let epoch = q.epoch();
        let Err(e) = feed_until_done(&shared).await else {
            return;
        };
        if let Err(e) = q.recover(&shared, epoch, e).await {
            shared.fail(e);
            return;
        }
    }
}

async fn feed_until_done(shared: &Arc<Shared>) -> Result<(), CrawlError> {
    let q = queue(shared);
    // At most this many URLs claimed and not committed: what a killed process leaves to be
    // fetched again.
    let room = (shared.config.workers * shared.config.per_host).max(1) as u64;
    let mut stop = shared.stop_signal();
    let mut period = period(q).await?;
    let mut began = tokio::time::Instant::now();
    loop {
        if *stop.borrow_and_update() {
            return Ok(());
        }
        // Registered before `held` is read, so a commit finishing meanwhile is not missed.
        let freed = q.held_changed.notified();
        tokio::pin!(freed);
        freed.as_mut().enable();
        let held = q.held.load(Ordering::SeqCst);
        if held >= room {
            tokio::select! {
                () = &mut freed => {}
                _ = stop.changed() => {}
                () = tokio::time::sleep(IDLE_WAIT) => {}
            }
            continue;
        }
        let want = ((room - held) as usize).min(CLAIM_BATCH);
        let jobs = q.claim(want, (held == 0).then_some(IDLE_WAIT)).await?;
        if !jobs.is_empty() {
            q.held.fetch_add(jobs.len() as u64, Ordering::SeqCst);
            jobs.into_iter().for_each(|j| shared.route(j));
            continue;
        }
        if q.held.load(Ordering::SeqCst) > 0 {
            // Nothing due for now: look again when one of this process's pages is committed
            // (its host's slot is free again), or after a while for the other processes'.
            tokio::select! {
                () = &mut freed => {}
                _ = stop.changed() => {}
                () = tokio::time::sleep(BUSY_WAIT) => {}
            }
            continue;
        }
        if q.stop_raised().await {
            shared.request_stop();
            return Ok(());
        }
        if !q.drained().await? {
            continue;
        }
        let Some(every) = q.every else {
            q.finished.store(true, Ordering::Relaxed);
            shared.request_stop();
            return Ok(());
        };
        shared
            .monitor
            .logger
            .info(&format!("period {period} done; next in {every:?}"));
        match next_period(shared, q, period, began + every).await? {
            Some(next) => {
                period = next;
                began = tokio::time::Instant::now();
            }
            None => {
                shared.request_stop();
                return Ok(());
            }
        }
    }
}

/// The current period of an incremental crawl (0 before the first revisit).
async fn period(q: &SharedQueue) -> Result<u64, CrawlError> {
    let mut conn = q.conn.clone();
    let p: Option<u64> = redis::cmd("GET")
        .arg(&q.keys.period)
        .query_async(&mut conn)
        .await?;
    Ok(p.unwrap_or(0))
}

/// Waits until `due`, then starts period `current + 1`: the first process there schedules it
/// (revisits of every known page and the seeds), the others wait for it. `None` when the stop
/// flag was raised meanwhile.
async fn next_period(
    shared: &Shared,
    q: &SharedQueue,
    current: u64,
    due: tokio::time::Instant,
) -> Result<Option<u64>, CrawlError> {
    let nap = Duration::from_millis(100);
    let mut stop = shared.stop_signal();
    loop {
        if *stop.borrow_and_update() || q.stop_raised().await {
            return Ok(None);
        }
        let now = tokio::time::Instant::now();
        if now >= due {
            break;
        }
        tokio::time::sleep((due - now).min(nap)).await;
    }
    let next = current + 1;
    let scheduling = format!("{}:{next}", q.keys.period);
    loop {
        if q.stop_raised().await {
            return Ok(None);
        }
        let now = period(q).await?;
        if now > current {
            return Ok(Some(now));
        }
        let mut conn = q.conn.clone();
        // The claim expires, so a scheduler that dies half way is replaced.
        let won: Option<String> = redis::cmd("SET")
            .arg(&scheduling)
            .arg(q.me.as_str())
            .arg("NX")
            .arg("PX")
            .arg(60_000)
            .query_async(&mut conn)
            .await?;
        if won.is_some() {
            let revisits = schedule_revisits(shared, q).await?;
            let () = redis::cmd("SET")
                .arg(&q.keys.period)
                .arg(next)
                .query_async(&mut conn)
                .await?;
            shared
                .monitor
                .logger
                .info(&format!("period {next}: {revisits} revisits scheduled"));
            return Ok(Some(next));
        }
        tokio::time::sleep(nap).await;
    }
}

/// Queues every known page and every seed again, with the validators stored for it (they are
/// in the done set, so they bypass it); returns how many.
async fn schedule_revisits(shared: &Shared, q: &SharedQueue) -> Result<u64, CrawlError> {
    let mut known: HashMap<String, Option<Validators>> = shared
        .config
        .seeds
        .iter()
        .map(|u| (u.to_string(), None))
        .collect();
    let mut conn = q.conn.clone();
    let mut cursor = String::from("0");
    loop {
        let (next, flat): (String, Vec<String>) = redis::cmd("HSCAN")
            .arg(&q.keys.known)
            .arg(&cursor)
            .arg("COUNT")
            .arg(1000)
            .query_async(&mut conn)
            .await?;
        for pair in flat.chunks(2) {
            if let [url, validators] = pair {
                known.insert(url.clone(), Validators::decode(validators));
            }
        }
        if next == "0" {
            break;
        }
        cursor = next;
    }
    let mut by_stripe: HashMap<usize, Vec<NewTask>> = HashMap::new();
    for (url, validators) in &known {
        let job = Job::new(url, 0, 0, JobKind::Page);
        if let Ok(task) = task_of(&job, validators.as_ref()) {
            by_stripe
                .entry(q.stripe_of(task.host()))
                .or_default()
                .push(task);
        }
    }
    let mut n = 0;
    for (s, tasks) in by_stripe {
        q.store().stripes[s].push(&tasks).await?;
        n += tasks.len() as u64;
    }
    Ok(n)
}

/// Commits finished pages in batches: everything finished while the previous batch was in
/// Redis goes in the next.
pub(crate) async fn commit(shared: Arc<Shared>) {
    let q = queue(&shared);
    let Some(mut inbox) = q.inbox.lock().unwrap_or_else(|p| p.into_inner()).take() else {
        return;
    };
    let mut batch = Vec::new();
    while inbox.recv_many(&mut batch, 256).await > 0 {
        let n = batch.len() as u64;
        let epoch = q.epoch();
        if let Err(e) = commit_batch(q, std::mem::take(&mut batch)).await
            && let Err(e) = q.recover(&shared, epoch, e).await
        {
            shared.fail(e);
        }
        q.held.fetch_sub(n, Ordering::SeqCst);
        q.held_changed.notify_waiters();
    }
}

/// What one commit script does on one stripe.
#[derive(Default)]
struct StripeWork {
    /// New URLs of the stripe's hosts, and their tasks.
    jobs: Vec<Job>,
    tasks: Vec<NewTask>,
    /// Claims taken from the stripe, to acknowledge.
    acks: Vec<ClaimedTask>,
}

/// Commits one batch: template budgets, the done set, then per stripe the new URLs (with the
/// host budget) and the claims to acknowledge.
async fn commit_batch(q: &SharedQueue, batch: Vec<Commit>) -> Result<(), CrawlError> {
    let offered_at = micros_since_epoch();
    let mut distinct = HashSet::new();
    let mut offers = Vec::new();
    let mut claims: Vec<Arc<Claimed>> = Vec::new();
    let mut remember = Vec::new();
    for c in batch {
        for (job, lineage) in c.offers {
            if distinct.insert(job.url.clone()) {
                offers.push((job, lineage));
            }
        }
        claims.extend(c.claim);
        remember.extend(c.remember);
    }
    let offers = within_template_budgets(q, offers).await?;
    let store = q.store();
    let urls: Vec<String> = offers.iter().map(|(j, _)| j.url.to_string()).collect();
    let done = store.done.clone();
    q.called(usize::from(!urls.is_empty()));
    let verdicts = tokio::task::spawn_blocking(move || done.admit_batch(&urls))
        .await
        .map_err(|e| CrawlError::Options(format!("done set task: {e}")))??;
    let mut new = Vec::new();
    {
        let mut records = q.records();
        for ((job, _), verdict) in offers.into_iter().zip(verdicts) {
            match verdict {
                Verdict::New => new.push(job),
                Verdict::Duplicate => records.stats.duplicate_links += 1,
                Verdict::Similar(why) => records.skip(SkipReason::Similar, &job.url, &why)?,
            }
        }
    }
    // One commit per stripe: the new URLs of its hosts, the claims taken from it.
    let mut work: HashMap<usize, StripeWork> = HashMap::new();
    for job in new {
        match task_of(&job, None) {
            Ok(task) => {
                let w = work.entry(q.stripe_of(task.host())).or_default();
                w.jobs.push(job);
                w.tasks.push(task);
            }
            Err(e) => q
                .records()
                .skip(SkipReason::BadUrl, &job.url, &e.to_string())?,
        }
    }
    for claim in &claims {
        work.entry(claim.stripe)
            .or_default()
            .acks
            .push(claim.task.clone());
    }
    if !remember.is_empty() {
        let mut cmd = redis::cmd("HSET");
        cmd.arg(&q.keys.known);
        for (url, validators) in &remember {
            cmd.arg(&**url).arg(
                validators
                    .as_ref()
                    .map(Validators::encode)
                    .unwrap_or_default(),
            );
        }
        let mut conn = q.conn.clone();
        q.called(1);
        let _: u64 = cmd.query_async(&mut conn).await?;
    }
    for (s, w) in work {
        q.called(1);
        let queued = store.stripes[s]
            .commit(&q.me, &w.tasks, q.host_budget, &w.acks)
            .await?;
        let decided_at = micros_since_epoch();
        let mut records = q.records();
        for (job, queued) in w.jobs.iter().zip(queued) {
            if queued {
                records.stats.admitted += 1;
                q.admitted
                    .write(format_args!("{offered_at}\t{decided_at}\t{}", job.url))?;
            } else {
                records.skip(SkipReason::HostBudget, &job.url, "")?;
            }
        }
    }
    Ok(())
}

/// `offers` without the ones that continue their page's template past its budget. The counts
/// are shared by every process (`HINCRBY` on one hash); a URL already in the done set costs no
/// budget, and one refused is left out of the done set, so a link to it from a page of another
/// template still admits it. Two processes finding the same new URL at once may both count it:
/// a budget can run out a few URLs early, never late.
async fn within_template_budgets(
    q: &SharedQueue,
    offers: Vec<(Job, Option<Lineage>)>,
) -> Result<Vec<(Job, Option<Lineage>)>, CrawlError> {
    let budgeted: Vec<(usize, String)> = offers
        .iter()
        .enumerate()
        .filter_map(|(i, (job, lineage))| lineage.map(|l| (i, crate::template::key(&job.url, l))))
        .collect();
    if budgeted.is_empty() {
        return Ok(offers);
    }
    let urls: Vec<String> = budgeted
        .iter()
        .map(|(i, _)| offers[*i].0.url.to_string())
        .collect();
    let done = q.store().done.clone();
    q.called(urls.len());
    let known = tokio::task::spawn_blocking(move || done.contains_batch(&urls))
        .await
        .map_err(|e| CrawlError::Options(format!("done set task: {e}")))??;
    let mut pipe = redis::pipe();
    let mut counted = Vec::new();
    for ((i, key), known) in budgeted.iter().zip(known) {
        if !known {
            pipe.cmd("HINCRBY").arg(&q.keys.templates).arg(key).arg(1);
            counted.push((*i, key));
        }
    }
    if counted.is_empty() {
        return Ok(offers);
    }
    let mut conn = q.conn.clone();
    q.called(1);
    let counts: Vec<u64> = pipe.query_async(&mut conn).await?;
    let mut refused = vec![false; offers.len()];
    {
        let mut records = q.records();
        for ((i, key), count) in counted.into_iter().zip(counts) {
            if count > q.template_budget {
                refused[i] = true;
                records.skip(SkipReason::TemplateBudget, &offers[i].0.url, key)?;
            }
        }
    }
    Ok(offers
        .into_iter()
        .zip(refused)
        .filter_map(|(o, refused)| (!refused).then_some(o))
        .collect())
}

/// Heartbeats, the leader's duties and the stop flag, every third of the lease.
/// One beat of the shared crawl's housekeeping (every third of the lease, from the engine's
/// housekeeping loop): heartbeats, the leader's duties, the stop flag.
pub(crate) async fn beat(shared: &Shared) {
    let q = queue(shared);
    let log = &shared.monitor.logger;
    match heartbeat(q).await {
        Ok(true) => {}
        Ok(false) => log.warn("membership lease lost; rejoined").await,
        Err(e) => log.warn(&format!("heartbeat: {e}")).await,
    }
    let epoch = q.epoch();
    match lead(q).await {
        Ok(0) => {}
        Ok(n) => {
            log.warn(&format!("requeued {n} URLs of a dead process"))
                .await
        }
        Err(e) if is_reset(&e) => {
            if let Err(e) = q.recover(shared, epoch, e).await {
                shared.fail(e);
            }
        }
        Err(e) => log.warn(&format!("leader: {e}")).await,
    }
    if q.stop_raised().await {
        shared.request_stop();
    }
}

/// How often [`beat`] runs: a third of the membership lease.
pub(crate) fn beat_every(shared: &Shared) -> Duration {
    (queue(shared).lease_ttl / 3).max(Duration::from_millis(50))
}

/// Renews every lease; rejoins where one was lost. Returns whether all were still held.
async fn heartbeat(q: &SharedQueue) -> Result<bool, CrawlError> {
    q.called(1 + q.members.len());
    let mut held = q.main.heartbeat(&q.me).await?;
    if !held {
        q.main.join(&q.me).await?;
    }
    for m in &q.members {
        if !m.heartbeat(&q.me).await? {
            held = false;
            m.join(&q.me).await?;
        }
    }
    Ok(held)
}

/// Holds or takes the leader lease; the leader requeues the claims of dead processes.
async fn lead(q: &SharedQueue) -> Result<u64, CrawlError> {
    q.called(1);
    let mut leader = q.leader.lock().await;
    let renewed = match *leader {
        Some(epoch) => q.lease.renew(&q.me, epoch).await?,
        None => false,
    };
    if !renewed {
        *leader = q.lease.try_acquire(&q.me).await?;
    }
    if leader.is_none() {
        return Ok(0);
    }
    let mut n = 0;
    for f in &q.store().stripes {
        q.called(1);
        n += f.requeue_dead().await?;
    }
    Ok(n)
}

/// Whether `e` says that Redis lost the crawl's data.
pub(crate) fn is_reset(e: &CrawlError) -> bool {
    match e {
        CrawlError::Shared(url_dedup_redis::Error::StoreReset { .. }) => true,
        CrawlError::Done(e) => e.is_reset(),
        _ => false,
    }
}

/// A connection of this process's own for the crawl's plain keys (stop flag, periods, known
/// pages, template counts, log stream); the frontier and the done set keep theirs.
/// A connection to the crawl's Redis: one server, or a cluster named by its seeds.
async fn connect(redis: &str) -> Result<Connection, CrawlError> {
    Ok(Link::connect(redis).await?.connection())
}

/// The crawl's hash key: drawn by the first process (or `keep`, the key of a crawl going on
/// after Redis lost its data), read by the others.
async fn crawl_key(
    conn: &mut Connection,
    ns: &Namespace,
    keep: Option<HashKey>,
) -> Result<(HashKey, bool), CrawlError> {
    let name = ns.key("hash-key");
    let fresh: String = keep
        .unwrap_or_else(HashKey::random)
        .to_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let _: Option<String> = redis::cmd("SET")
        .arg(&name)
        .arg(&fresh)
        .arg("NX")
        .query_async(conn)
        .await?;
    let stored: String = redis::cmd("GET").arg(&name).query_async(conn).await?;
    let bad = || CrawlError::Options(format!("{name} in Redis is not a 32-digit hex key"));
    if stored.len() != 32 || !stored.is_ascii() {
        return Err(bad());
    }
    let mut bytes = [0u8; 16];
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = u8::from_str_radix(&stored[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
    }
    // Keys are random: the stored one is this process's only if its `SET NX` took.
    Ok((HashKey::from_bytes(bytes), stored == fresh))
}

/// Names the shared crawl `name` in `out` ([`SHARED_CRAWL_FILE`]); whether it was named
/// there already, by an earlier process of this crawl (another crawl's does not count).
fn name_crawl_in(out: &Path, name: &str) -> Result<bool, CrawlError> {
    let path = out.join(SHARED_CRAWL_FILE);
    let before = std::fs::read_to_string(&path).is_ok_and(|s| s.trim_end() == name);
    if !before {
        std::fs::write(&path, format!("{name}\n")).map_err(CrawlError::io("writing", &path))?;
    }
    Ok(before)
}

/// The file of an output directory that names the shared crawl whose processes wrote there.
const SHARED_CRAWL_FILE: &str = "shared-crawl.txt";

/// A tab-separated record this process keeps in its output directory.
struct Record {
    path: PathBuf,
    out: Mutex<BufWriter<File>>,
}

impl Record {
    fn create(path: PathBuf) -> Result<Self, CrawlError> {
        let file = File::create(&path).map_err(CrawlError::io("creating", &path))?;
        Ok(Self {
            path,
            out: Mutex::new(BufWriter::new(file)),
        })
    }

    /// Appends one line.
    fn write(&self, line: std::fmt::Arguments<'_>) -> Result<(), CrawlError> {
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        writeln!(out, "{line}").map_err(CrawlError::io("writing", &self.path))
    }

    fn flush(&self) -> Result<(), CrawlError> {
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        out.flush().map_err(CrawlError::io("writing", &self.path))
    }
}

/// Wall-clock microseconds since the Unix epoch: comparable between the processes of a host.
fn micros_since_epoch() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jobs_depth_hops_kind_and_validators_travel_with_its_task() {
        let job = Job::new("http://h.example/a", 7, 2, JobKind::Sitemap);
        let known = Validators {
            etag: Some("\"v1\"".into()),
            last_modified: None,
        };
        let task = task_of(&job, Some(&known)).unwrap();
        assert_eq!(task.url(), "http://h.example/a");
        assert_eq!(
            read_data(task.data()),
            (JobKind::Sitemap, 7, 2, Some(known))
        );
        let plain = task_of(&job, None).unwrap();
        assert_eq!(read_data(plain.data()), (JobKind::Sitemap, 7, 2, None));
        assert_eq!(read_data(""), (JobKind::Page, 0, 0, None));
    }
}
