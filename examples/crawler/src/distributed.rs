//! Several crawler processes, one crawl (document 003): `--redis URL` puts the run queue and
//! the done set in Redis through `url_dedup_redis`.
//!
//! * **Frontier**: `url_dedup_redis::Frontier`s, one per virtual node of the partition table
//!   ([`crate::shards`]): per-host queues with leases. A claimed URL stays in this process's
//!   processing set until acknowledged; the new URLs a page links to are pushed *before* the
//!   page is acknowledged, so "every queue empty and nothing in flight" means the crawl is
//!   really over, for every process at once.
//! * **Partition table**: the leader applies joins and leaves and publishes fenced epochs; a
//!   process claims only from the virtual nodes it owns, so a joining process takes over its
//!   share and a leaving one hands its share over, with no page fetched twice.
//! * **Done set**: the facade `url_dedup::UrlDedup` in Redis mode ([`crate::done`]): one
//!   test-and-set round trip per batch, so of two processes finding the same new link, exactly
//!   one pushes it. The hash key is drawn once per crawl and kept in the crawl's namespace
//!   (`SET NX`), so every process brings the same key to the facade.
//! * **Membership**: a heartbeat lease per process. A process that dies (`kill -9`) stops
//!   renewing it; the others' housekeeping calls `requeue_dead`, and its claimed URLs go back
//!   to the front of their hosts' queues (at-least-once: those few are fetched again).
//! * **Idle spiders** wait in `claim_wait` on one of their virtual nodes, woken by its pub/sub
//!   signal when a URL is pushed there, with a polling fallback.
//! * **Stop flag**: `crawler --redis URL --crawl-name NAME --stop` sets a key; every process
//!   sees it within a heartbeat, finishes its fetches in flight, acknowledges them and leaves.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::aio::ConnectionManager;
use reqwest::header;
use url::Url;
use url_dedup_bloom::HashKey;
use url_dedup_redis::{ClaimedTask, FrontierSettings, Link, Namespace, NewTask, WorkerId};

use crate::canonical::Canonicalizer;
use crate::done::{DoneSet, SharedFilter, Verdict};
use crate::error::CrawlError;
use crate::fetch::{BodyLimit, Fetcher, Validators};
use crate::kernel::{Kernels, Response};
use crate::logger::Logger;
use crate::monitor::{Counters, Monitor};
use crate::options::CrawlConfig;
use crate::page::Rejected;
use crate::robots::RobotsRules;
use crate::shards::ShardedFrontier;
use crate::skip::SkipReason;
use crate::template::Lineage;

/// How long an idle spider waits for work before it checks whether the crawl is over.
const IDLE_WAIT: Duration = Duration::from_millis(300);

/// URLs offered to the shared filter and pushed to the frontier in one go: a long seed list or
/// a page of thousands of links reaches the frontier, and the other processes' spiders, batch
/// by batch instead of all at the end, and no single push script holds Redis for long.
const OFFER_BATCH: usize = 256;

/// Where a process finds the shared crawl.
#[derive(Clone, Debug)]
pub(crate) struct Shared {
    pub(crate) redis: String,
    pub(crate) name: String,
    pub(crate) lease: Duration,
    pub(crate) log_cap: u64,
    /// Incremental crawl: the period between two revisits.
    pub(crate) every: Option<Duration>,
    /// Retries of the done set's Redis calls.
    pub(crate) backoff: url_dedup_redis::Backoff,
}

/// One process of a shared crawl.
struct Node {
    config: CrawlConfig,
    canon: Canonicalizer,
    fetcher: Fetcher,
    kernels: Kernels,
    shards: ShardedFrontier,
    me: WorkerId,
    seen: Arc<DoneSet>,
    conn: ConnectionManager,
    stop_key: String,
    known_key: String,
    period_key: String,
    /// Hash of URLs admitted per template budget key (`crate::template`), for every process.
    templates_key: String,
    every: Option<Duration>,
    robots: Mutex<HashMap<String, Arc<RobotsRules>>>,
    monitor: Arc<Monitor>,
    /// `status<TAB>url` of every response this process received.
    fetched: Record,
    /// `offered<TAB>decided<TAB>url` of every URL this process admitted (pushed to the
    /// frontier), the times in microseconds since the Unix epoch: when the batch it came in
    /// was offered to the shared filter, and when it was queued.
    admitted: Record,
    stopping: AtomicBool,
    started: AtomicU64,
}

/// Raises the stop flag of a shared crawl and wakes its idle spiders.
pub(crate) async fn raise_stop(redis: &str, name: &str) -> Result<(), CrawlError> {
    let link = Link::connect(redis).await?;
    let ns = Namespace::new(name)?;
    let mut conn = link.connection();
    let () = redis::cmd("SET")
        .arg(ns.key("stop"))
        .arg("1")
        .query_async(&mut conn)
        .await?;
    Ok(())
}

/// Joins (or starts) the shared crawl and works until it is done or stopped; returns this
/// process's counters as one JSON line.
pub(crate) async fn run(config: CrawlConfig, shared: Shared) -> Result<String, CrawlError> {
    std::fs::create_dir_all(&config.out)
        .map_err(CrawlError::io("creating output directory", &config.out))?;
    let link = Link::connect_with(&shared.redis, shared.backoff).await?;
    let ns = Namespace::new(&shared.name)?;
    let mut conn = link.connection();
    let me = WorkerId::random("crawler");

    let key = crawl_key(&mut conn, &ns).await?;
    let seen = {
        let at = SharedFilter {
            redis: shared.redis.clone(),
            prefix: format!("{}:seen", shared.name),
            key,
            backoff: shared.backoff,
        };
        let size = config.filter;
        tokio::task::spawn_blocking(move || DoneSet::shared(size, &at))
            .await
            .map_err(|e| CrawlError::Options(format!("filter setup: {e}")))??
    };
    let settings = FrontierSettings {
        host_delay: config.delay,
        ..Default::default()
    };
    let shards =
        ShardedFrontier::open(&link, &shared.name, me.clone(), shared.lease, key, settings).await?;
    shards.join().await?;

    let logger = Logger::new(
        me.to_string(),
        Some((conn.clone(), ns.key("log"))),
        shared.log_cap,
    );
    let monitor = Arc::new(Monitor {
        shared: true,
        ..Monitor::new(me.to_string(), shared.name.clone(), config.rate, logger)
    });
    if let Some(addr) = config.status {
        crate::monitor::start(monitor.clone(), addr).await?;
    }
    let fetched = Record::create(config.out.join(format!("fetched-{me}.tsv")))?;
    let admitted = Record::create(config.out.join(format!("admitted-{me}.tsv")))?;

    let node = Arc::new(Node {
        canon: Canonicalizer::default(),
        fetcher: Fetcher::new(config.fetch.clone())?,
        kernels: Kernels::standard(
            config.respect_nofollow,
            crate::budget::ParseBudget::new(config.fetch.max_body),
        ),
        shards,
        me,
        seen: Arc::new(seen),
        conn,
        stop_key: ns.key("stop"),
        known_key: ns.key("known"),
        period_key: ns.key("period"),
        templates_key: ns.key("templates"),
        every: shared.every,
        robots: Mutex::new(HashMap::new()),
        monitor,
        fetched,
        admitted,
        stopping: AtomicBool::new(false),
        started: AtomicU64::new(0),
        config,
    });
    node.monitor
        .logger
        .info(&format!("joined crawl {}", shared.name));

    // The first process publishes the first table; a later one is added by the leader.
    node.coordinate().await;
    // Every process offers the seeds: the shared filter lets exactly one push each.
    let seeds = node.config.seeds.clone();
    node.offer(seeds, None).await?;

    let signals = crate::signals::listen(crate::signals::Handlers {
        // This process leaves; the others carry on (the stop flag is for ending them all).
        drain: {
            let node = node.clone();
            move || node.stopping.store(true, Ordering::Relaxed)
        },
        // What this process holds is requeued by the others once its lease expires.
        abort: {
            let node = node.clone();
            move || {
                let _ = node.fetched.flush();
                let _ = node.admitted.flush();
            }
        },
    })
    .map_err(CrawlError::io(
        "installing signal handlers",
        &node.config.out,
    ))?;
    let housekeeping = tokio::spawn(housekeeping(node.clone(), shared.lease));
    let mut failure = None;
    let mut period = node.period().await?;
    loop {
        let began = tokio::time::Instant::now();
        let spiders: Vec<_> = (0..node.config.workers)
            .map(|_| tokio::spawn(spider(node.clone())))
            .collect();
        for s in spiders {
            match s.await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => failure = Some(e),
                Err(e) => failure = Some(CrawlError::Options(format!("spider failed: {e}"))),
            }
        }
        let Some(every) = node.every else { break };
        if failure.is_some() || node.stopping.load(Ordering::Relaxed) {
            break;
        }
        node.monitor
            .logger
            .info(&format!("period {period} done; next in {every:?}"));
        match node.next_period(period, began + every).await? {
            Some(next) => period = next,
            None => break,
        }
    }
    housekeeping.abort();
    signals.abort();
    node.fetched.flush()?;
    node.admitted.flush()?;
    // Nothing should be held here; whatever is goes back for the others at once.
    node.shards.leave().await?;
    if let Some(e) = failure {
        node.monitor.logger.error(&e.to_string()).await;
        return Err(e);
    }
    let status = serde_json::to_string(&summary(&node)).unwrap_or_default();
    Ok(status)
}

fn summary(node: &Node) -> HashMap<&'static str, serde_json::Value> {
    let c = &node.monitor.counters;
    let load = |a: &AtomicU64| serde_json::Value::from(a.load(Ordering::Relaxed));
    HashMap::from([
        ("process", serde_json::Value::from(node.me.to_string())),
        ("fetched", load(&c.fetched)),
        ("not_modified", load(&c.not_modified)),
        ("queued", load(&c.queued)),
        ("duplicates", load(&c.duplicates)),
        ("nofollow", load(&c.nofollow)),
        ("not_web", load(&c.not_web)),
        ("traps", load(&c.traps)),
        ("skipped", load(&c.skipped)),
        ("errors", load(&c.errors)),
        ("bytes", load(&c.bytes)),
        ("table_epoch", load(&c.table_epoch)),
        ("most_shards", load(&c.most_shards)),
        ("skips", serde_json::json!(c.skips())),
    ])
}

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

/// The crawl's hash key: drawn by the first process, read by the others.
async fn crawl_key(conn: &mut ConnectionManager, ns: &Namespace) -> Result<HashKey, CrawlError> {
    let name = ns.key("hash-key");
    let fresh: String = HashKey::random()
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
    Ok(HashKey::from_bytes(bytes))
}

/// Heartbeats, requeueing the tasks of dead processes, and watching the stop flag.
async fn housekeeping(node: Arc<Node>, lease: Duration) {
    let mut beat = tokio::time::interval((lease / 3).max(Duration::from_millis(50)));
    loop {
        beat.tick().await;
        match node.shards.heartbeat().await {
            Ok(true) => {}
            // Presumed dead while stalled: our claims were handed out again; rejoined.
            Ok(false) => {
                node.monitor
                    .logger
                    .warn("membership lease lost; rejoined")
                    .await
            }
            Err(e) => node.monitor.logger.warn(&format!("heartbeat: {e}")).await,
        }
        node.coordinate().await;
        match node.shards.requeue_dead().await {
            Ok(0) => {}
            Ok(n) => {
                node.monitor
                    .logger
                    .warn(&format!("requeued {n} URLs of a dead process"))
                    .await
            }
            Err(e) => node.monitor.logger.warn(&format!("requeue: {e}")).await,
        }
        if node.stop_raised().await {
            node.stopping.store(true, Ordering::Relaxed);
        }
    }
}

/// One spider: claims a URL, crawls it, acknowledges it; until the crawl is over or stopped.
async fn spider(node: Arc<Node>) -> Result<(), CrawlError> {
    loop {
        if node.stopping.load(Ordering::Relaxed) {
            return Ok(());
        }
        match node.shards.claim_wait(IDLE_WAIT).await? {
            Some((shard, task)) => {
                if let Some(max) = node.config.max_pages
                    && node.started.fetch_add(1, Ordering::Relaxed) >= max
                {
                    node.shards.release(shard, &task).await?;
                    node.stopping.store(true, Ordering::Relaxed);
                    return Ok(());
                }
                node.crawl(&task).await?;
                node.shards.ack(shard, &task).await?;
            }
            None => {
                if node.stop_raised().await {
                    node.stopping.store(true, Ordering::Relaxed);
                    return Ok(());
                }
                if node.shards.drained().await? {
                    return Ok(());
                }
            }
        }
    }
}

impl Node {
    /// Leader duties (when this process holds the lease) and this process's share.
    async fn coordinate(&self) {
        match self.shards.coordinate().await {
            Ok(Some(change)) => self.monitor.logger.info(&change),
            Ok(None) => {}
            Err(e) => self.monitor.logger.warn(&format!("coordinator: {e}")).await,
        }
        match self.shards.refresh().await {
            Ok(Some(a)) => {
                let c = &self.monitor.counters;
                c.table_epoch.store(a.epoch, Ordering::Relaxed);
                c.shards.store(a.owned.len() as u64, Ordering::Relaxed);
                c.most_shards
                    .fetch_max(a.owned.len() as u64, Ordering::Relaxed);
                self.monitor.logger.info(&format!(
                    "partition epoch {}: {} of {} virtual nodes here",
                    a.epoch,
                    a.owned.len(),
                    crate::shards::VIRTUAL_NODES
                ));
            }
            Ok(None) => {}
            Err(e) => {
                self.monitor
                    .logger
                    .warn(&format!("partition table: {e}"))
                    .await
            }
        }
    }

    /// The current period of an incremental crawl (0 before the first revisit).
    async fn period(&self) -> Result<u64, CrawlError> {
        let mut conn = self.conn.clone();
        let p: Option<u64> = redis::cmd("GET")
            .arg(&self.period_key)
            .query_async(&mut conn)
            .await?;
        Ok(p.unwrap_or(0))
    }

    /// Waits until `due`, then starts period `current + 1`: the first process there schedules
    /// it (revisits of every known page and the seeds), the others wait for it. `None` when
    /// the stop flag was raised meanwhile.
    async fn next_period(
        &self,
        current: u64,
        due: tokio::time::Instant,
    ) -> Result<Option<u64>, CrawlError> {
        let nap = Duration::from_millis(100);
        loop {
            if self.stopping.load(Ordering::Relaxed) || self.stop_raised().await {
                return Ok(None);
            }
            let now = tokio::time::Instant::now();
            if now >= due {
                break;
            }
            tokio::time::sleep((due - now).min(nap)).await;
        }
        let next = current + 1;
        let scheduling = format!("{}:{next}", self.period_key);
        loop {
            if self.stop_raised().await {
                return Ok(None);
            }
            let now = self.period().await?;
            if now > current {
                return Ok(Some(now));
            }
            let mut conn = self.conn.clone();
            // The claim expires, so a scheduler that dies half way is replaced.
            let won: Option<String> = redis::cmd("SET")
                .arg(&scheduling)
                .arg(self.me.as_str())
                .arg("NX")
                .arg("PX")
                .arg(60_000)
                .query_async(&mut conn)
                .await?;
            if won.is_some() {
                let revisits = self.schedule_revisits().await?;
                let () = redis::cmd("SET")
                    .arg(&self.period_key)
                    .arg(next)
                    .query_async(&mut conn)
                    .await?;
                self.monitor
                    .logger
                    .info(&format!("period {next}: {revisits} revisits scheduled"));
                return Ok(Some(next));
            }
            tokio::time::sleep(nap).await;
        }
    }

    /// Pushes every known page and every seed again (they are in the done set, so they bypass
    /// it); returns how many.
    async fn schedule_revisits(&self) -> Result<u64, CrawlError> {
        let mut urls: std::collections::BTreeSet<String> =
            self.config.seeds.iter().map(|u| u.to_string()).collect();
        let mut conn = self.conn.clone();
        let mut cursor = String::from("0");
        loop {
            let (next, flat): (String, Vec<String>) = redis::cmd("HSCAN")
                .arg(&self.known_key)
                .arg(&cursor)
                .arg("COUNT")
                .arg(1000)
                .query_async(&mut conn)
                .await?;
            urls.extend(flat.into_iter().step_by(2));
            if next == "0" {
                break;
            }
            cursor = next;
        }
        let tasks: Vec<NewTask> = urls
            .iter()
            .filter_map(|u| NewTask::from_url(u).ok())
            .collect();
        let n = tasks.len() as u64;
        self.shards.push(tasks).await?;
        Counters::add(&self.monitor.counters.queued, n);
        Ok(n)
    }

    /// The validators stored for `url` by an earlier period, if any.
    async fn known_validators(&self, url: &str) -> Option<Validators> {
        let mut conn = self.conn.clone();
        let stored: redis::RedisResult<Option<String>> = redis::cmd("HGET")
            .arg(&self.known_key)
            .arg(url)
            .query_async(&mut conn)
            .await;
        stored.ok().flatten().and_then(|s| Validators::decode(&s))
    }

    /// Remembers a fetched page for the next period's revisit, with its validators.
    async fn remember(&self, url: &str, validators: Option<Validators>) -> Result<(), CrawlError> {
        let mut conn = self.conn.clone();
        let () = redis::cmd("HSET")
            .arg(&self.known_key)
            .arg(url)
            .arg(validators.map(|v| v.encode()).unwrap_or_default())
            .query_async(&mut conn)
            .await
            .map(|_: u64| ())?;
        Ok(())
    }

    async fn stop_raised(&self) -> bool {
        let mut conn = self.conn.clone();
        let flag: redis::RedisResult<Option<String>> = redis::cmd("GET")
            .arg(&self.stop_key)
            .query_async(&mut conn)
            .await;
        matches!(flag, Ok(Some(_)))
    }

    /// Offers links found on page `from` (none for the seeds) to the shared done set; pushes
    /// the new ones to the frontier, [`OFFER_BATCH`] URLs at a time.
    async fn offer(&self, found: Vec<Url>, from: Option<&Url>) -> Result<(), CrawlError> {
        let c = &self.monitor.counters;
        let mut urls = Vec::with_capacity(found.len());
        for link in found {
            // Depth is not carried by shared tasks; length and slash limits still apply.
            match crate::page::vet(&self.canon, &self.config, &link, 0) {
                Ok(url) => urls.push(String::from(url)),
                Err(Rejected::Trap(reason, _) | Rejected::NoCanonical(reason)) => c.skip(reason),
                Err(Rejected::OutOfScope(_)) => c.skip(SkipReason::OutOfScope),
            }
        }
        urls.sort_unstable();
        urls.dedup();
        let mut rest = urls.into_iter().peekable();
        while rest.peek().is_some() {
            let batch: Vec<String> = rest.by_ref().take(OFFER_BATCH).collect();
            self.offer_batch(batch, from).await?;
        }
        Ok(())
    }

    /// One batch of [`offer`](Self::offer): template budgets, the filter, the frontier.
    async fn offer_batch(
        &self,
        mut urls: Vec<String>,
        from: Option<&Url>,
    ) -> Result<(), CrawlError> {
        let c = &self.monitor.counters;
        let offered = micros_since_epoch();
        if let Some(page) = from {
            urls = self.within_template_budgets(page, urls).await?;
        }
        if urls.is_empty() {
            return Ok(());
        }
        let seen = self.seen.clone();
        let (urls, new) = tokio::task::spawn_blocking(move || {
            let new = seen.admit_batch(&urls);
            new.map(|n| (urls, n))
        })
        .await
        .map_err(|e| CrawlError::Options(format!("filter task: {e}")))??;
        let mut tasks = Vec::new();
        let mut queued = Vec::new();
        for (url, verdict) in urls.iter().zip(new) {
            match verdict {
                Verdict::New => {}
                Verdict::Duplicate => {
                    Counters::add(&c.duplicates, 1);
                    continue;
                }
                Verdict::Similar(_) => {
                    c.skip(SkipReason::Similar);
                    continue;
                }
            }
            match NewTask::from_url(url) {
                Ok(t) => {
                    tasks.push(t);
                    queued.push(url);
                }
                Err(e) => {
                    c.skip(SkipReason::BadUrl);
                    self.monitor.logger.warn(&format!("{url}: {e}")).await;
                }
            }
        }
        if !tasks.is_empty() {
            let n = tasks.len() as u64;
            self.shards.push(tasks).await?;
            Counters::add(&c.queued, n);
            let decided = micros_since_epoch();
            for url in queued {
                self.admitted
                    .write(format_args!("{offered}\t{decided}\t{url}"))?;
            }
        }
        Ok(())
    }

    /// `urls` (found on `page`) without the ones that continue `page`'s template past its
    /// budget. The counts are shared by every process (`HINCRBY` on one hash); a URL already in
    /// the done set costs no budget, and one refused is left out of the done set, so a link to
    /// it from a page of another template still admits it. Two processes finding the same new
    /// URL at once may both count it: a budget can run out a few URLs early, never late.
    async fn within_template_budgets(
        &self,
        page: &Url,
        urls: Vec<String>,
    ) -> Result<Vec<String>, CrawlError> {
        let keys: Vec<Option<String>> = urls
            .iter()
            .map(|u| Lineage::of(page.as_str(), u).map(|l| crate::template::key(u, l)))
            .collect();
        if keys.iter().all(Option::is_none) {
            return Ok(urls);
        }
        let seen = self.seen.clone();
        let (urls, known) = tokio::task::spawn_blocking(move || {
            let known = seen.contains_batch(&urls);
            known.map(|k| (urls, k))
        })
        .await
        .map_err(|e| CrawlError::Options(format!("filter task: {e}")))??;
        let mut pipe = redis::pipe();
        let mut counted = Vec::new();
        for (i, (key, known)) in keys.iter().zip(&known).enumerate() {
            if let (Some(key), false) = (key, known) {
                pipe.cmd("HINCRBY").arg(&self.templates_key).arg(key).arg(1);
                counted.push(i);
            }
        }
        if counted.is_empty() {
            return Ok(urls);
        }
        let mut conn = self.conn.clone();
        let counts: Vec<u64> = pipe.query_async(&mut conn).await?;
        let budget = self.config.traps.template_budget;
        let mut refused = vec![false; urls.len()];
        for (&i, &count) in counted.iter().zip(&counts) {
            if count > budget {
                refused[i] = true;
                self.monitor.counters.skip(SkipReason::TemplateBudget);
            }
        }
        Ok(urls
            .into_iter()
            .zip(refused)
            .filter_map(|(u, refused)| (!refused).then_some(u))
            .collect())
    }

    /// Fetches one claimed URL and offers what it links to.
    async fn crawl(&self, task: &ClaimedTask) -> Result<(), CrawlError> {
        let c = &self.monitor.counters;
        let Ok(url) = Url::parse(task.url()) else {
            c.skip(SkipReason::BadUrl);
            return Ok(());
        };
        if self.config.robots {
            let rules = self.robots_for(task.host(), &url).await;
            if let Some(reason) = rules.verdict(url.as_str()) {
                c.skip(reason);
                return Ok(());
            }
        }
        // Only an incremental crawl pays the round trips of validators.
        let known = match self.every {
            Some(_) => self.known_validators(url.as_str()).await,
            None => None,
        };
        self.monitor.pacer.wait().await;
        let fetched = self
            .fetcher
            // Types are decided after the fetch: a kernel may read what the page filter refuses.
            .get_if_changed(
                &url,
                BodyLimit::Refuse(self.config.fetch.max_body),
                false,
                known.as_ref(),
            )
            .await;
        let exchange = match fetched {
            Ok(x) => x,
            Err(f) => {
                c.skip(f.reason);
                self.monitor
                    .logger
                    .warn(&format!("{url}: {} {}", f.reason.name(), f.detail))
                    .await;
                return Ok(());
            }
        };
        Counters::add(&c.fetched, 1);
        Counters::add(&c.bytes, exchange.body.len() as u64);
        self.fetched
            .write(format_args!("{}\t{url}", exchange.status.as_u16()))?;
        let mut found = Vec::new();
        if exchange.status == reqwest::StatusCode::NOT_MODIFIED {
            // Unchanged since the last period: its links were followed then.
            Counters::add(&c.not_modified, 1);
            return Ok(());
        }
        if self.every.is_some() && exchange.status.is_success() {
            self.remember(url.as_str(), Validators::of(&exchange.headers))
                .await?;
        }
        if exchange.status.is_redirection() {
            match exchange
                .header(header::LOCATION)
                .and_then(|l| url.join(l.trim()).ok())
            {
                Some(target) if matches!(target.scheme(), "http" | "https") => found.push(target),
                _ => c.skip(SkipReason::BadRedirect),
            }
        } else if exchange.status.is_success() {
            let ct = exchange
                .header(header::CONTENT_TYPE)
                .unwrap_or("")
                .to_ascii_lowercase();
            let encoding = exchange.header(header::CONTENT_ENCODING);
            match crate::content_coding::decode(encoding, &exchange.body, self.config.max_decoded) {
                Ok(body) => {
                    let response = Response::new(&url, &ct, &body);
                    if let Some(kernel) = self.kernels.for_response(&response) {
                        let harvest = kernel.read(&response, None);
                        Counters::add(&c.nofollow, harvest.nofollow as u64);
                        Counters::add(&c.not_web, harvest.not_web as u64);
                        if let Some(cut) = harvest.cut {
                            c.skip(SkipReason::ParseLimit);
                            self.monitor
                                .logger
                                .warn(&format!("{url}: {} ({cut})", SkipReason::ParseLimit))
                                .await;
                        }
                        found = harvest.follow;
                    } else if !self.config.fetch.accepts(&ct) {
                        c.skip(SkipReason::ContentType);
                    }
                }
                Err(e) => {
                    c.skip(e.reason);
                    self.monitor
                        .logger
                        .warn(&format!("{url}: {}", e.detail))
                        .await;
                }
            }
        } else if exchange.status.is_server_error() {
            self.monitor
                .logger
                .warn(&format!("{url}: HTTP {}", exchange.status.as_u16()))
                .await;
        }
        self.offer(found, Some(&url)).await
    }

    /// This host's robots.txt rules, fetched once per process. The frontier leases a host to
    /// one spider at a time, so two spiders never fetch the same robots.txt at once.
    async fn robots_for(&self, host: &str, url: &Url) -> Arc<RobotsRules> {
        if let Some(r) = self
            .robots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(host)
        {
            return r.clone();
        }
        let rules =
            Arc::new(RobotsRules::fetch(&self.fetcher, url, crate::options::AGENT_TOKEN).await);
        self.robots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(host.to_owned(), rules.clone());
        rules
    }
}
