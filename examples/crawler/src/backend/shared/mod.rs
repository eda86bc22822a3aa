//! The shared backend (document 003): `--redis URL` puts the run queue, the done set and the
//! admission budgets in Redis, so any number of processes crawl one set of sites together.
//!
//! * **Run queue**: `--queue-stripes` `url_dedup_redis::Frontier`s (one by default), each in
//!   one Redis Cluster hash slot. A host goes to the stripe of its virtual node in the
//!   partition table (16,384 virtual nodes, routed with the crawl's key). No process owns a
//!   host: every process claims from every stripe, and each host's politeness budget
//!   (`--per-host` requests at once, their starts `--delay-ms` apart) is held in Redis for all
//!   processes together.
//! * **Done set**: the facade `url_dedup::UrlDedup` in Redis mode ([`crate::done`]): of two
//!   processes finding one new link, exactly one admits it. The hash key is drawn once per
//!   crawl and kept in the crawl's namespace (`SET NX`).
//! * **Batches**: the engine claims up to 64 URLs per round trip and commits every page
//!   finished meanwhile at once: one done-set call for all their links, then one `commit`
//!   script per stripe that queues the new URLs (with the host budget) and acknowledges the
//!   pages. A page's links are queued before its claim ends, so "every queue empty and nothing
//!   claimed" really means the crawl is over, for every process at once.
//! * **Membership and faults** ([`coordination`]): a heartbeat lease per process; the leader
//!   requeues the claims of processes whose lease expired. See docs/distributed.md for what
//!   a Redis pause, restart, failover or outage does.
//! * **Stop flag**: `crawler --redis URL --crawl-name NAME --stop` sets a key; every process
//!   sees it within a heartbeat, finishes its fetches in flight and leaves.

mod console;
mod coordination;
mod periods;
mod queue;
mod record;
mod setup;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use url_dedup_bloom::HashKey;
use url_dedup_partition::{NodeId, PartitionTable, RouteKey};
use url_dedup_redis::{
    ClaimedTask, FrontierSettings, LeaderLease, Link, Membership, Namespace, NewTask, WorkerId,
};

use self::coordination::Leadership;
use self::record::Record;
pub(crate) use self::setup::Arrival;
use self::setup::{Store, StoreBuild, crawl_key, stripe_name};
use super::{Backend, BackendReport, Commit, Take};
use crate::done::{SharedFilter, Verdict};
use crate::error::CrawlError;
use crate::logger::Logger;
use crate::options::CrawlConfig;
use crate::records::Records;

/// Virtual nodes of the partition table that routes hosts to queue stripes.
const VIRTUAL_NODES: u64 = 16_384;

/// How long an idle process waits on a stripe before it looks again (and checks whether the
/// crawl is over).
const IDLE_WAIT: Duration = Duration::from_millis(300);

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
    /// Replicas that must have each done-set batch (`--redis-acknowledge`).
    pub(crate) acknowledge: Option<u32>,
    /// Frontiers the run queue is split into.
    pub(crate) stripes: usize,
    /// After Redis lost the crawl's data: start again from the seeds instead of stopping.
    pub(crate) continue_after_reset: bool,
}

/// What one commit script does on one stripe: queue new tasks (with their places in the
/// commit) and acknowledge claims taken from it.
type StripeWork = (Vec<usize>, Vec<NewTask>, Vec<ClaimedTask>);

/// The crawl's plain keys.
struct Keys {
    stop: String,
    known: String,
    period: String,
    templates: String,
    /// Confirmed rules of `--learn`: host to the text of its rules.
    rules: String,
    /// The URL of each page in the near-duplicate index: SimHash (hex) to URL.
    near_urls: String,
}

/// This process's part of a shared crawl.
pub(crate) struct SharedBackend {
    me: WorkerId,
    name: String,
    /// The run queue's stripes and the done set, replaced together when the crawl goes on
    /// after Redis lost its data (`--after-redis-reset continue`).
    store: std::sync::RwLock<Arc<Store>>,
    build: StoreBuild,
    /// Stores built so far, less one: a failure seen under an older store was already dealt
    /// with.
    resets: AtomicU64,
    recovering: tokio::sync::Mutex<()>,
    continue_after_reset: bool,
    /// Set when the store was rebuilt: the engine offers the seeds again.
    restart_owed: AtomicBool,
    key: HashKey,
    members: Vec<Membership>,
    main: Membership,
    lease: LeaderLease,
    leader: tokio::sync::Mutex<Leadership>,
    lease_ttl: Duration,
    /// Only its routing of host names to virtual nodes is used.
    table: PartitionTable,
    /// Where Redis is, for messages.
    redis: String,
    /// How long a call retries before it gives up.
    give_up: Duration,
    keys: Keys,
    every: Option<Duration>,
    seeds: Vec<String>,
    /// The claims behind the jobs this process took and has not committed.
    claims: Mutex<HashMap<Arc<str>, (usize, ClaimedTask)>>,
    next_stripe: AtomicUsize,
    room: usize,
    /// `status<TAB>url` of every response this process received.
    fetched: Record,
    /// `offered<TAB>decided<TAB>url` of every URL this process queued, the times in
    /// microseconds since the Unix epoch: when its batch was committed, and when it was queued.
    admitted: Record,
    /// Redis's command count and the pages acknowledged crawl-wide when this process joined.
    baseline: Mutex<Option<(u64, u64)>>,
    /// Calls this process made to Redis, each one round trip.
    calls: AtomicU64,
    /// Pages this process fetched (for calls per page).
    pages: AtomicU64,
    /// The incremental crawl's period and when it began.
    period: tokio::sync::Mutex<periods::Period>,
    logger: Logger,
    /// The crawl's near-duplicate index of page SimHashes (`--learn`).
    near: Option<url_dedup_fingerprint::RedisNearIndex>,
}

impl std::fmt::Debug for SharedBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedBackend")
            .field("me", &self.me)
            .field("name", &self.name)
            .field("stripes", &self.build.stripes)
            .finish_non_exhaustive()
    }
}

/// Raises the stop flag of a shared crawl.
pub(crate) async fn raise_stop(redis: &str, name: &str) -> Result<(), CrawlError> {
    let ns = Namespace::new(name)?;
    let mut conn = Link::connect(redis).await?.connection();
    let () = redis::cmd("SET")
        .arg(ns.key("stop"))
        .arg("1")
        .query_async(&mut conn)
        .await?;
    Ok(())
}

impl SharedBackend {
    /// Connects to the shared crawl `settings.name` (creating it if this is its first process),
    /// joins it, and opens this process's records in `config.out`.
    pub(crate) async fn open(
        config: &CrawlConfig,
        settings: &SharedSettings,
        software: &str,
    ) -> Result<(Self, Records), CrawlError> {
        let link = Link::connect_with(&settings.redis, settings.backoff).await?;
        let ns = Namespace::new(&settings.name)?;
        let conn = link.connection();
        let me = WorkerId::random("crawler");
        let (key, started) = crawl_key(&link, &ns, None).await?;
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
                acknowledge: settings.acknowledge,
            },
            size: config.filter,
        };
        let store = build.store().await?;
        let members = (0..build.stripes)
            .map(|s| {
                let ns = Namespace::new(&stripe_name(&settings.name, s))?;
                Ok(Membership::with_ttl(link.clone(), ns, settings.lease))
            })
            .collect::<Result<Vec<_>, url_dedup_redis::Error>>()?;
        let table = PartitionTable::builder()
            .virtual_nodes(VIRTUAL_NODES)
            .key(key)
            .route_by(RouteKey::Host)
            .nodes([NodeId(0)])
            .build()?;
        let out = &config.out;
        let arrival = Arrival::of(started, out, &settings.name)?;
        let warc = format!("crawl-{me}.warc");
        let records = Records::open(out, config.warc.then_some((warc.as_str(), 0)), software)?;
        let logger = Logger::new(
            me.to_string(),
            Some((conn.clone(), ns.key("log"))),
            settings.log_cap,
        );
        let backend = Self {
            fetched: Record::create(out, &format!("fetched-{me}.tsv"))?,
            admitted: Record::create(out, &format!("admitted-{me}.tsv"))?,
            name: settings.name.clone(),
            store: std::sync::RwLock::new(Arc::new(store)),
            build,
            resets: AtomicU64::new(0),
            recovering: tokio::sync::Mutex::new(()),
            continue_after_reset: settings.continue_after_reset,
            restart_owed: AtomicBool::new(false),
            key,
            members,
            main: Membership::with_ttl(link.clone(), ns.clone(), settings.lease),
            lease: LeaderLease::with_ttl(link.clone(), ns.clone(), settings.lease),
            leader: tokio::sync::Mutex::new(Leadership::default()),
            lease_ttl: settings.lease,
            table,
            redis: settings.redis.clone(),
            give_up: settings.backoff.give_up_after,
            keys: Keys {
                stop: ns.key("stop"),
                known: ns.key("known"),
                period: ns.key("period"),
                templates: ns.key("templates"),
                rules: ns.key("rules"),
                near_urls: ns.key("near-urls"),
            },
            near: match config.learn {
                true => Some(
                    url_dedup_fingerprint::RedisNearIndex::open(
                        link.clone(),
                        &format!("{}:near", settings.name),
                        crate::dust::NEAR_BITS,
                        4,
                    )
                    .await
                    .map_err(|e| CrawlError::Options(format!("near-duplicate index: {e}")))?,
                ),
                false => None,
            },
            every: settings.every,
            seeds: config.seeds.iter().map(|u| u.to_string()).collect(),
            claims: Mutex::new(HashMap::new()),
            next_stripe: AtomicUsize::new(0),
            room: (config.workers * config.per_host).max(1),
            baseline: Mutex::new(None),
            calls: AtomicU64::new(0),
            pages: AtomicU64::new(0),
            period: tokio::sync::Mutex::new(periods::Period::default()),
            logger,
            me,
        };
        backend.join().await?;
        if backend.every.is_some() {
            periods::begin(&backend).await?;
        }
        backend.greet(arrival, &config.out).await;
        Ok((backend, records))
    }

    /// Where warnings go: this process's log and the crawl's shared log stream.
    pub(crate) fn logger(&self) -> Logger {
        self.logger.clone()
    }

    /// Says how this process came to the crawl.
    async fn greet(&self, arrival: Arrival, out: &std::path::Path) {
        let name = &self.name;
        match arrival {
            Arrival::Joined => self.logger.info(&format!("joined crawl {name}")),
            Arrival::Started => self.logger.info(&format!("started crawl {name}")),
            Arrival::LostEarlierRun => {
                self.logger
                    .warn(&format!(
                        "crawl {name} is not in Redis, but {} holds an earlier run of it: Redis \
                         lost the crawl (restarted without persistence?), which starts again \
                         from the seeds and fetches its pages again",
                        out.display()
                    ))
                    .await;
            }
        }
    }

    /// Counts `n` calls to Redis.
    fn called(&self, n: usize) {
        self.calls.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// Runs one command on the crawl's own keys, retried like every Redis call of the crawl
    /// (`--redis-give-up-ms`). Commands sent this way are safe to send twice.
    async fn query<T: redis::FromRedisValue>(
        &self,
        operation: &'static str,
        cmd: &redis::Cmd,
    ) -> Result<T, CrawlError> {
        self.called(1);
        Ok(self
            .build
            .link
            .run(operation, |mut conn| async move {
                cmd.query_async(&mut conn).await
            })
            .await?)
    }

    /// Runs a pipeline on the crawl's own keys, retried likewise.
    async fn pipeline<T: redis::FromRedisValue>(
        &self,
        operation: &'static str,
        pipe: &redis::Pipeline,
    ) -> Result<T, CrawlError> {
        self.called(1);
        Ok(self
            .build
            .link
            .run(operation, |mut conn| async move {
                pipe.query_async(&mut conn).await
            })
            .await?)
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

    fn claims(&self) -> MutexGuard<'_, HashMap<Arc<str>, (usize, ClaimedTask)>> {
        self.claims.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Deals with `e`, seen under store `epoch`: `Ok(())` when the call may be made again,
    /// `Err(e)` when the crawl must stop. A Redis that lost the crawl's data stops the crawl,
    /// unless `--after-redis-reset continue` was given: then a new run queue and done set are
    /// made (once, however many calls saw the failure), the engine is told to offer the seeds
    /// again, and the shared log says, as an error, that pages fetched before may be fetched
    /// again.
    async fn recover(&self, epoch: u64, e: CrawlError) -> Result<(), CrawlError> {
        if !is_reset(&e) || !self.continue_after_reset {
            return Err(e);
        }
        let _one_at_a_time = self.recovering.lock().await;
        if self.epoch() != epoch {
            return Ok(());
        }
        let fetched = self.pages.load(Ordering::Relaxed);
        self.logger
            .error(&format!(
                "Redis lost the shared crawl's data ({e}); going on as asked \
                 (--after-redis-reset continue): the run queue starts again from the seeds and \
                 every page fetched before may be fetched again ({fetched} by this process)"
            ))
            .await;
        let ns = Namespace::new(&self.name)?;
        let _ = crawl_key(&self.build.link, &ns, Some(self.key)).await?;
        let store = self.build.store().await?;
        *self.store.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(store);
        // The claims of the lost store are gone with it.
        self.claims().clear();
        self.resets.fetch_add(1, Ordering::SeqCst);
        self.join().await?;
        self.restart_owed.store(true, Ordering::SeqCst);
        Ok(())
    }

    /// Joins the crawl's membership and every stripe's.
    async fn join(&self) -> Result<(), CrawlError> {
        self.called(1 + self.members.len());
        self.main.join(&self.me).await?;
        for m in &self.members {
            m.join(&self.me).await?;
        }
        Ok(())
    }
}

impl Backend for SharedBackend {
    fn process(&self) -> String {
        self.me.to_string()
    }

    fn explain(&self, e: CrawlError) -> CrawlError {
        if unreachable(&e) {
            CrawlError::Options(format!(
                "the shared crawl's Redis at {} could not be reached for {:.1} s \
                 (--redis-give-up-ms), so this process stopped; the URLs it held go back to \
                 the other processes when its lease expires: {e}",
                self.redis,
                self.give_up.as_secs_f64()
            ))
        } else if is_reset(&e) {
            CrawlError::Options(format!(
                "{e}\nRedis lost the shared crawl's data (a restart without persistence, a \
                 flush, an eviction): its run queue and done set are gone, so this process \
                 stopped instead of taking an empty queue for a finished crawl. Pages already \
                 fetched would be fetched again by a new crawl under the same name; \
                 --after-redis-reset continue goes on from the seeds instead."
            ))
        } else {
            e
        }
    }

    fn pages_before(&self) -> u64 {
        0
    }

    fn room(&self) -> usize {
        // At most this many URLs claimed and not committed: what a killed process leaves to
        // be fetched again.
        self.room
    }

    fn paces_hosts(&self) -> bool {
        true
    }

    async fn seen(&self, urls: Vec<String>) -> Result<Vec<bool>, CrawlError> {
        let epoch = self.epoch();
        match self.seen_once(urls.clone()).await {
            Err(e) => {
                self.recover(epoch, e).await?;
                self.seen_once(urls).await
            }
            ok => ok,
        }
    }

    async fn count_templates(&self, keys: Vec<String>, delta: i64) -> Result<Vec<u64>, CrawlError> {
        let mut pipe = redis::pipe();
        for key in &keys {
            pipe.cmd("HINCRBY")
                .arg(&self.keys.templates)
                .arg(key)
                .arg(delta);
        }
        // Sent twice after a lost reply, a count runs a budget out early, never late.
        let counts: Vec<i64> = self.pipeline("count templates", &pipe).await?;
        Ok(counts.into_iter().map(|n| n.max(0) as u64).collect())
    }

    async fn admit(&self, urls: Vec<String>) -> Result<Vec<Verdict>, CrawlError> {
        let epoch = self.epoch();
        match self.admit_once(urls.clone()).await {
            Err(e) => {
                self.recover(epoch, e).await?;
                self.admit_once(urls).await
            }
            ok => ok,
        }
    }

    async fn commit(&self, commit: Commit) -> Result<Vec<bool>, CrawlError> {
        for done in &commit.done {
            if let Some(status) = done.status {
                self.fetched
                    .write(format_args!("{status}\t{}", done.job.url))?;
            }
        }
        self.pages.fetch_add(
            commit.done.iter().filter(|d| d.fetched).count() as u64,
            Ordering::Relaxed,
        );
        let epoch = self.epoch();
        let queued = match self.commit_once(&commit).await {
            Err(e) => {
                self.recover(epoch, e).await?;
                self.commit_once(&commit).await?
            }
            Ok(q) => q,
        };
        {
            let mut claims = self.claims();
            for done in &commit.done {
                claims.remove(&done.job.url);
            }
        }
        // What this process recorded reaches the disk with each commit, so a killed
        // process's records list every page it committed.
        self.fetched.flush()?;
        self.admitted.flush()?;
        Ok(queued)
    }

    async fn take(&self, max: usize, idle: bool) -> Result<Take, CrawlError> {
        if self.restart_owed.swap(false, Ordering::SeqCst) {
            return Ok(Take::Restart);
        }
        let epoch = self.epoch();
        let wait = idle.then_some(IDLE_WAIT);
        let jobs = match self.claim(max, wait).await {
            Err(e) => {
                self.recover(epoch, e).await?;
                return Ok(Take::Idle);
            }
            Ok(jobs) => jobs,
        };
        if !jobs.is_empty() {
            return Ok(Take::Jobs(jobs));
        }
        if !idle || !self.drained().await? {
            return Ok(Take::Idle);
        }
        match self.every {
            None => Ok(Take::Finished),
            Some(every) => {
                periods::next(self, every).await?;
                Ok(Take::Idle)
            }
        }
    }

    fn housekeeping_period(&self) -> Duration {
        (self.lease_ttl / 3).max(Duration::from_millis(50))
    }

    async fn housekeep(&self) -> Result<bool, CrawlError> {
        coordination::beat(self).await
    }

    fn file_name(&self, stem: &str, ext: &str) -> String {
        format!("{stem}-{}.{ext}", self.me)
    }

    async fn near_page(&self, simhash: u64, url: &str) -> Result<Option<String>, CrawlError> {
        let Some(index) = &self.near else {
            return Ok(None);
        };
        self.called(1);
        let found = index
            .check_and_insert(url_dedup_fingerprint::SimHash(simhash))
            .await
            .map_err(|e| CrawlError::Options(format!("near-duplicate index: {e}")))?;
        let mut pipe = redis::pipe();
        match found {
            None => {
                pipe.cmd("HSETNX")
                    .arg(&self.keys.near_urls)
                    .arg(format!("{simhash:016x}"))
                    .arg(url)
                    .ignore();
                let () = self.pipeline("name a page", &pipe).await?;
                Ok(None)
            }
            Some(near) => {
                pipe.cmd("HGET")
                    .arg(&self.keys.near_urls)
                    .arg(format!("{:016x}", near.0));
                let (name,): (Option<String>,) = self.pipeline("find a page", &pipe).await?;
                Ok(Some(name.unwrap_or_else(|| format!("simhash {near}"))))
            }
        }
    }

    async fn shared_rules(&self) -> Result<Vec<(String, String)>, CrawlError> {
        let mut pipe = redis::pipe();
        pipe.cmd("HGETALL").arg(&self.keys.rules);
        let (all,): (Vec<(String, String)>,) = self.pipeline("read rules", &pipe).await?;
        Ok(all)
    }

    async fn share_rules(&self, rules: Vec<(String, String)>) -> Result<(), CrawlError> {
        if rules.is_empty() {
            return Ok(());
        }
        let mut pipe = redis::pipe();
        for (host, text) in &rules {
            pipe.cmd("HSET")
                .arg(&self.keys.rules)
                .arg(host)
                .arg(text)
                .ignore();
        }
        let () = self.pipeline("share rules", &pipe).await?;
        Ok(())
    }

    async fn share_host_delay(&self, host: String, delay: Duration) -> Result<(), CrawlError> {
        let store = self.store();
        self.called(1);
        store.stripes[self.stripe_of(&host)]
            .set_host_delay(&host, delay)
            .await?;
        Ok(())
    }

    async fn finish(&self, fatal: Option<&CrawlError>) -> Result<(), CrawlError> {
        let _ = self.fetched.flush();
        let _ = self.admitted.flush();
        // A process that lost Redis leaves nothing to hand back that its lease's expiry does
        // not: the others requeue its claims.
        if fatal.is_some_and(unreachable) {
            return Ok(());
        }
        coordination::leave(self).await
    }

    fn abort(&self) {
        // What this process holds is requeued by the others once its lease expires.
        let _ = self.fetched.flush();
        let _ = self.admitted.flush();
    }

    async fn report(&self) -> BackendReport {
        let per_page = self.commands_per_page().await;
        let pages = self.pages.load(Ordering::Relaxed);
        let calls = (pages > 0).then(|| self.calls.load(Ordering::Relaxed) as f64 / pages as f64);
        BackendReport {
            pages_total: pages,
            pending: 0,
            done: self.store().done.figures(),
            resumed: None,
            extra: serde_json::json!({
                "process": self.me.to_string(),
                "redis_commands_per_page": per_page,
                "redis_calls_per_page": calls,
            }),
        }
    }

    async fn crawl_view(
        &self,
        mine: crate::monitor::ProcessRow,
        look: bool,
    ) -> crate::monitor::CrawlView {
        console::view(self, mine, look).await
    }
}

impl SharedBackend {
    /// Redis commands processed per page acknowledged, crawl-wide, since this process
    /// joined (every client's commands count; `None` before the first page).
    async fn commands_per_page(&self) -> Option<f64> {
        let now = self.command_count().await.ok()?;
        let mut pages = 0;
        for f in &self.store().stripes {
            self.called(1);
            pages += f.acked().await.unwrap_or(0);
        }
        let mut baseline = self.baseline.lock().unwrap_or_else(|p| p.into_inner());
        let (commands0, pages0) = *baseline.get_or_insert((now, pages));
        if now < commands0 || pages < pages0 {
            // A master failed over or restarted: its counts began again. Count from here.
            *baseline = Some((now, pages));
            return None;
        }
        (pages > pages0).then(|| (now - commands0) as f64 / (pages - pages0) as f64)
    }

    async fn command_count(&self) -> Result<u64, CrawlError> {
        let info: redis::Value = self
            .query("INFO stats", redis::cmd("INFO").arg("stats"))
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

/// Whether `e` says that Redis could not be reached for the whole retry budget.
fn unreachable(e: &CrawlError) -> bool {
    match e {
        CrawlError::Shared(url_dedup_redis::Error::Unavailable { .. }) => true,
        CrawlError::Done(e) => e.is_unavailable(),
        _ => false,
    }
}

/// Whether `e` says that Redis lost the crawl's data.
pub(crate) fn is_reset(e: &CrawlError) -> bool {
    match e {
        CrawlError::Shared(url_dedup_redis::Error::StoreReset { .. }) => true,
        CrawlError::Done(e) => e.is_reset(),
        _ => false,
    }
}

/// Wall-clock microseconds since the Unix epoch: comparable between the processes of a host.
fn micros_since_epoch() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros())
}
