//! The distributed URL task queue spiders pull from (document 003), at-least-once, with a
//! per-host politeness budget shared by every worker: at most
//! [`host_concurrency`](FrontierSettings::host_concurrency) tasks of a host claimed at once
//! (one by default: document 002's "one site is crawled serially"), their starts
//! [`host_delay`](FrontierSettings::host_delay) apart.
//!
//! Keys under the namespace `{ns}` (a hash tag: every key of one frontier, and so every script,
//! stays in one Redis Cluster slot):
//!
//! | key | type | holds |
//! |---|---|---|
//! | `{ns}:q:<host>` | list | the host's pending tasks, FIFO |
//! | `{ns}:ready` | sorted set | hosts with pending tasks and a free request slot, scored by the time (ms) they are due |
//! | `{ns}:busy` | hash | host -> tasks of it claimed now, over all workers |
//! | `{ns}:proc:<worker>` | hash | claim token -> task, the worker's processing set |
//! | `{ns}:workers` | set | workers that may hold tasks (scanned by [`Frontier::requeue_dead`]) |
//! | `{ns}:pending`, `{ns}:ids` | counters | queued tasks; last task id given |
//! | `{ns}:acked` | counter | tasks acknowledged so far |
//! | `{ns}:hosts` | hash | host -> tasks queued through [`Frontier::commit`], for its host budget |
//! | `{ns}:delays` | hash | host -> its own politeness delay (ms), set by [`Frontier::set_host_delay`] |
//! | `{ns}:next` | hash | host -> the earliest time (ms) its next claim may start |
//! | `{ns}:wake` | channel | published when a host becomes ready |
//!
//! Every state change is one Lua script, so a task is always in exactly one place: a host
//! queue or one worker's processing hash.

use std::time::Duration;

use redis::{Script, Value};

use crate::error::{Error, Result};
use crate::link::Link;
use crate::namespace::{Namespace, WorkerId, random_u64};
use crate::signal::Subscription;
use crate::task::{ClaimedTask, NewTask};

/// Tasks per push script: bounds how long one script holds Redis (about 1 ms).
const PUSH_CHUNK: usize = 1_000;
/// Most tasks one claim or finish script handles: bounds how long it holds Redis.
const MAX_BATCH: usize = 256;
/// How long a push token is remembered, so a push retried after a lost reply is not doubled.
const PUSH_TOKEN_TTL_MS: u64 = 10 * 60 * 1000;
/// Longest a sleeping worker goes without re-checking the queue, in case a wake-up was lost.
const POLL_INTERVAL: Duration = Duration::from_millis(500);

/// Tunables of a [`Frontier`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use url_dedup_redis::FrontierSettings;
///
/// let polite = FrontierSettings { host_delay: Duration::from_secs(1), ..Default::default() };
/// assert_eq!(polite.max_url_len, 8192);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrontierSettings {
    /// Politeness: after a task of a host is finished, the host's next task is due this much
    /// later (measured on the Redis server's clock, so workers' clocks do not matter).
    pub host_delay: Duration,
    /// Longest URL accepted by [`Frontier::push`].
    pub max_url_len: usize,
    /// Politeness: most tasks of one host claimed at once, over all workers and processes
    /// (at least 1). With more than one, claims of a host start `host_delay` apart.
    pub host_concurrency: u32,
}

impl Default for FrontierSettings {
    /// One task per host at a time, no delay between tasks of a host; URLs up to 8 KiB.
    fn default() -> Self {
        Self {
            host_delay: Duration::ZERO,
            max_url_len: 8192,
            host_concurrency: 1,
        }
    }
}

/// The answer to [`Frontier::claim`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use url_dedup_redis::Claim;
///
/// let nothing = Claim::Empty { next_due: Some(Duration::from_millis(250)) };
/// assert!(matches!(nothing, Claim::Empty { .. }));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Claim {
    /// A task, leased to the caller.
    Task(ClaimedTask),
    /// No host is due now. `next_due` says when the earliest one will be, if any is waiting for
    /// its politeness delay; `None` means every queue is empty or its host busy.
    Empty {
        /// Time until the earliest delayed host is due.
        next_due: Option<Duration>,
    },
}

/// A distributed, at-least-once URL task queue with per-host leases.
///
/// * **Pull**: workers [`claim`](Self::claim) a task; it moves atomically into the worker's
///   processing set, and the task's host is leased to the worker until it
///   [`ack`](Self::ack)s or [`release`](Self::release)s the task, so one site is crawled by one
///   worker at a time, in FIFO order.
/// * **At-least-once**: a worker whose [`Membership`](crate::Membership) lease expired is
///   presumed dead; [`requeue_dead`](Self::requeue_dead) puts its tasks back at the front of
///   their hosts' queues. Only a worker with a live membership lease may claim.
/// * **Retries are harmless**: pushes carry a token, claims a token, acks are idempotent, so
///   the retry loop of [`Link`] never doubles or loses a task when a reply is lost.
///
/// # Examples
///
/// ```
/// # use url_dedup_redis::testing::RedisServer;
/// # let Some(server) = RedisServer::start_or_skip("Frontier example") else { return };
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use url_dedup_redis::{Claim, Frontier, Link, Membership, Namespace, NewTask, WorkerId};
///
/// let link = Link::connect(&server.url()).await?;
/// let ns = Namespace::new("crawl")?;
/// let frontier = Frontier::new(link.clone(), ns.clone());
/// let members = Membership::new(link, ns);
///
/// let urls = ["https://a.example/1", "https://a.example/2", "https://b.example/1"];
/// let tasks = urls.iter().map(|u| NewTask::from_url(u)).collect::<Result<Vec<_>, _>>()?;
/// frontier.push(&tasks).await?;
///
/// let (w1, w2) = (WorkerId::new("w1")?, WorkerId::new("w2")?);
/// members.join(&w1).await?;
/// members.join(&w2).await?;
/// let Claim::Task(t1) = frontier.claim(&w1).await? else { panic!() };
/// let Claim::Task(t2) = frontier.claim(&w2).await? else { panic!() };
/// assert_ne!(t1.host(), t2.host()); // one worker per host
/// // a.example's second URL waits until its first is done.
/// assert!(matches!(frontier.claim(&w2).await?, Claim::Empty { .. }));
/// frontier.ack(&t1).await?;
/// frontier.ack(&t2).await?;
/// let Claim::Task(t3) = frontier.claim(&w2).await? else { panic!() };
/// assert_eq!(t3.url(), "https://a.example/2");
/// # Ok::<(), url_dedup_redis::Error>(())
/// # }).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct Frontier {
    link: Link,
    ns: Namespace,
    settings: FrontierSettings,
    keys: Keys,
    /// The frontier's generation, read (or written, for a new frontier) on first use and
    /// checked by every script after that (see `lua/guard.lua`).
    generation: std::sync::Arc<tokio::sync::OnceCell<String>>,
}

#[derive(Clone, Debug)]
struct Keys {
    ready: String,
    busy: String,
    ids: String,
    pending: String,
    workers: String,
    queue_prefix: String,
    wake: String,
    generation: String,
    acked: String,
    queued_per_host: String,
    delays: String,
    next_start: String,
}

fn scripts() -> &'static Scripts {
    static SCRIPTS: std::sync::OnceLock<Scripts> = std::sync::OnceLock::new();
    SCRIPTS.get_or_init(|| Scripts {
        push: guarded(include_str!("../lua/push.lua")),
        claim: guarded(include_str!("../lua/claim.lua")),
        finish: guarded(include_str!("../lua/finish.lua")),
        requeue: guarded(include_str!("../lua/requeue.lua")),
        commit: guarded(include_str!("../lua/commit.lua")),
        host_delay: Script::new(include_str!("../lua/host_delay.lua")),
    })
}

/// A frontier script behind the generation guard (`lua/guard.lua`).
fn guarded(body: &str) -> Script {
    Script::new(&format!("{}{body}", include_str!("../lua/guard.lua")))
}

struct Scripts {
    push: Script,
    claim: Script,
    finish: Script,
    requeue: Script,
    commit: Script,
    host_delay: Script,
}

impl Frontier {
    /// A frontier in namespace `ns` with default [`FrontierSettings`].
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("Frontier::new example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{Frontier, Link, Namespace};
    ///
    /// let frontier = Frontier::new(Link::connect(&server.url()).await?, Namespace::new("c")?);
    /// assert_eq!(frontier.pending().await?, 0);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn new(link: Link, ns: Namespace) -> Self {
        Self::with_settings(link, ns, FrontierSettings::default())
    }

    /// A frontier with explicit settings.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("with_settings example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use std::time::Duration;
    /// use url_dedup_redis::{Frontier, FrontierSettings, Link, Namespace};
    ///
    /// let settings = FrontierSettings { host_delay: Duration::from_millis(500), ..Default::default() };
    /// let link = Link::connect(&server.url()).await?;
    /// let frontier = Frontier::with_settings(link, Namespace::new("c")?, settings);
    /// assert_eq!(frontier.settings().host_delay, Duration::from_millis(500));
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn with_settings(link: Link, ns: Namespace, settings: FrontierSettings) -> Self {
        let keys = Keys {
            ready: ns.key("ready"),
            busy: ns.key("busy"),
            ids: ns.key("ids"),
            pending: ns.key("pending"),
            workers: ns.key("workers"),
            queue_prefix: ns.key("q:"),
            wake: ns.key("wake"),
            generation: ns.key("generation"),
            acked: ns.key("acked"),
            queued_per_host: ns.key("hosts"),
            delays: ns.key("delays"),
            next_start: ns.key("next"),
        };
        Self {
            link,
            ns,
            settings,
            keys,
            generation: Default::default(),
        }
    }

    /// The frontier's generation: random, written by the first process to use the namespace
    /// and read by the others, then checked by every operation. A frontier whose generation
    /// is gone or changed lost its tasks, and its operations fail with
    /// [`Error::StoreReset`] instead of reporting an empty queue.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when Redis stays unreachable.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("generation example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{Frontier, Link, Namespace};
    /// let link = Link::connect(&server.url()).await?;
    /// let a = Frontier::new(link.clone(), Namespace::new("c")?);
    /// let b = Frontier::new(link, Namespace::new("c")?);
    /// assert_eq!(a.generation().await?, b.generation().await?);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn generation(&self) -> Result<String> {
        self.generation
            .get_or_try_init(|| async {
                let fresh = format!("{:016x}", random_u64());
                self.link
                    .run("frontier generation", |mut conn| {
                        let mut pipe = redis::pipe();
                        pipe.cmd("SET")
                            .arg(&self.keys.generation)
                            .arg(&fresh)
                            .arg("NX")
                            .ignore()
                            .cmd("GET")
                            .arg(&self.keys.generation);
                        async move { pipe.query_async::<(String,)>(&mut conn).await }
                    })
                    .await
                    .map(|(generation,)| generation)
            })
            .await
            .cloned()
    }

    /// A script's `STORERESET` error reply as [`Error::StoreReset`].
    fn reset_or(&self, e: Error) -> Error {
        match e {
            Error::Redis { source, .. } if source.code() == Some("STORERESET") => {
                Error::StoreReset {
                    what: "frontier",
                    prefix: self.ns.key(""),
                    detail: source
                        .detail()
                        .unwrap_or("its generation changed")
                        .to_owned(),
                }
            }
            e => e,
        }
    }

    /// The settings.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("settings example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{Frontier, FrontierSettings, Link, Namespace};
    /// let frontier = Frontier::new(Link::connect(&server.url()).await?, Namespace::new("c")?);
    /// assert_eq!(frontier.settings(), FrontierSettings::default());
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn settings(&self) -> FrontierSettings {
        self.settings
    }

    /// Appends tasks to their hosts' queues and returns the global id of the first one; the
    /// others follow consecutively within each chunk of 1,000. Wakes sleeping workers when a
    /// host becomes ready.
    ///
    /// Each chunk is one atomic script carrying a random token: if the reply is lost and the
    /// call retried, the script sees the token and does nothing twice. When the call returns
    /// an error, chunks before the failing one are queued and later ones are not; pushing the
    /// same tasks again may then queue some twice (the frontier is at-least-once), never lose
    /// them.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidTask`] for a URL longer than
    /// [`max_url_len`](FrontierSettings::max_url_len) (nothing is pushed);
    /// [`Error::Unavailable`] when Redis stays unreachable.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("push example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{Frontier, Link, Namespace, NewTask};
    /// let frontier = Frontier::new(Link::connect(&server.url()).await?, Namespace::new("c")?);
    /// let first = frontier.push(&[NewTask::new("h", "https://h/1")?, NewTask::new("h", "https://h/2")?]).await?;
    /// assert_eq!(first, Some(1));
    /// assert_eq!(frontier.pending().await?, 2);
    /// assert_eq!(frontier.push(&[]).await?, None);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn push(&self, tasks: &[NewTask]) -> Result<Option<u64>> {
        if tasks
            .iter()
            .any(|t| t.url().len() > self.settings.max_url_len)
        {
            return Err(Error::InvalidTask("url is longer than max_url_len"));
        }
        let generation = self.generation().await?;
        let mut first_id = None;
        for chunk in tasks.chunks(PUSH_CHUNK) {
            let token_key = self.ns.key(&format!("push:{:016x}", random_u64()));
            let first: u64 = self
                .link
                .run("push", |mut conn| {
                    let mut call = scripts().push.prepare_invoke();
                    call.key(&self.keys.ready)
                        .key(&self.keys.busy)
                        .key(&self.keys.ids)
                        .key(&self.keys.pending)
                        .key(&token_key)
                        .key(&self.keys.next_start)
                        .arg(&self.keys.queue_prefix)
                        .arg(&self.keys.wake)
                        .arg(PUSH_TOKEN_TTL_MS)
                        .arg(self.settings.host_concurrency.max(1));
                    for task in chunk {
                        call.arg(task.host()).arg(task.body());
                    }
                    call.key(&self.keys.generation).arg(&generation);
                    async move { call.invoke_async(&mut conn).await }
                })
                .await
                .map_err(|e| self.reset_or(e))?;
            first_id.get_or_insert(first);
        }
        Ok(first_id)
    }

    /// Leases the next due task to `worker`, who must hold a live
    /// [`Membership`](crate::Membership) lease.
    ///
    /// # Errors
    ///
    /// [`Error::NotMember`] when the worker's lease is missing or expired;
    /// [`Error::Unavailable`] when Redis stays unreachable.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("claim example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{Claim, Error, Frontier, Link, Membership, Namespace, WorkerId};
    /// let link = Link::connect(&server.url()).await?;
    /// let ns = Namespace::new("c")?;
    /// let frontier = Frontier::new(link.clone(), ns.clone());
    /// let me = WorkerId::new("w")?;
    /// assert!(matches!(frontier.claim(&me).await, Err(Error::NotMember(_))));
    /// Membership::new(link, ns).join(&me).await?;
    /// assert_eq!(frontier.claim(&me).await?, Claim::Empty { next_due: None });
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn claim(&self, worker: &WorkerId) -> Result<Claim> {
        let (mut tasks, next_due) = self.claim_up_to(worker, 1).await?;
        Ok(match tasks.pop() {
            Some(task) => Claim::Task(task),
            None => Claim::Empty { next_due },
        })
    }

    /// Leases up to `max` due tasks (at most 256) in one round trip: several hosts'
    /// tasks, and several of one host when its
    /// [`host_concurrency`](FrontierSettings::host_concurrency) allows. Empty when nothing is
    /// due.
    ///
    /// # Errors
    ///
    /// As for [`claim`](Self::claim).
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("claim_batch example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{Frontier, FrontierSettings, Link, Membership, Namespace, NewTask, WorkerId};
    /// let link = Link::connect(&server.url()).await?;
    /// let ns = Namespace::new("c")?;
    /// let two_per_host = FrontierSettings { host_concurrency: 2, ..Default::default() };
    /// let frontier = Frontier::with_settings(link.clone(), ns.clone(), two_per_host);
    /// let (a, b) = (WorkerId::new("a")?, WorkerId::new("b")?);
    /// let members = Membership::new(link, ns);
    /// members.join(&a).await?;
    /// members.join(&b).await?;
    /// let urls = (0..5).map(|i| NewTask::from_url(&format!("https://one.example/{i}")));
    /// frontier.push(&urls.collect::<Result<Vec<_>, _>>()?).await?;
    /// // Two requests to the host at once, over all workers.
    /// let first = frontier.claim_batch(&a, 1).await?;
    /// let second = frontier.claim_batch(&b, 10).await?;
    /// assert_eq!((first.len(), second.len()), (1, 1));
    /// assert!(frontier.claim_batch(&a, 10).await?.is_empty());
    /// assert_eq!(frontier.ack_batch(&first).await?, 1);
    /// assert_eq!(frontier.claim_batch(&a, 10).await?.len(), 1);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn claim_batch(&self, worker: &WorkerId, max: usize) -> Result<Vec<ClaimedTask>> {
        Ok(self.claim_up_to(worker, max).await?.0)
    }

    /// Claims up to `max` tasks; when there are none, also says when the next host is due.
    async fn claim_up_to(
        &self,
        worker: &WorkerId,
        max: usize,
    ) -> Result<(Vec<ClaimedTask>, Option<Duration>)> {
        let generation = self.generation().await?;
        let tokens: Vec<u64> = (0..max.clamp(1, MAX_BATCH)).map(|_| random_u64()).collect();
        let proc_key = self.proc_key(worker);
        let member_key = self.ns.member(worker);
        let delay_ms = self.settings.host_delay.as_millis() as u64;
        let (code, payload): (i64, Value) = self
            .link
            .run("claim", |mut conn| {
                let mut call = scripts().claim.prepare_invoke();
                call.key(&self.keys.ready)
                    .key(&self.keys.busy)
                    .key(&proc_key)
                    .key(&self.keys.workers)
                    .key(&self.keys.pending)
                    .key(&member_key)
                    .key(&self.keys.delays)
                    .key(&self.keys.next_start)
                    .key(&self.keys.generation)
                    .arg(&self.keys.queue_prefix)
                    .arg(worker.as_str())
                    .arg(self.settings.host_concurrency.max(1))
                    .arg(delay_ms);
                for token in &tokens {
                    call.arg(format!("{token:016x}"));
                }
                call.arg(&generation);
                async move { call.invoke_async(&mut conn).await }
            })
            .await
            .map_err(|e| self.reset_or(e))?;
        let corrupt = |detail: String| Error::Corrupt {
            key: proc_key.clone(),
            detail,
        };
        match (code, payload) {
            (1, Value::Array(items)) => {
                let mut tasks = Vec::with_capacity(items.len() / 2);
                for pair in items.chunks(2) {
                    let [Value::Int(i), Value::BulkString(raw)] = pair else {
                        return Err(corrupt(format!("claim script answered {pair:?}")));
                    };
                    let token = usize::try_from(*i - 1)
                        .ok()
                        .and_then(|i| tokens.get(i))
                        .ok_or_else(|| corrupt(format!("claim token {i} out of range")))?;
                    tasks.push(ClaimedTask::decode(raw, worker.clone(), *token, &proc_key)?);
                }
                Ok((tasks, None))
            }
            (0, Value::Int(ms)) => Ok((
                Vec::new(),
                u64::try_from(ms).ok().map(Duration::from_millis),
            )),
            (-1, _) => Err(Error::NotMember(worker.to_string())),
            (code, other) => Err(corrupt(format!("claim script answered {code} {other:?}"))),
        }
    }

    /// [`claim`](Self::claim), sleeping until a task is due or `timeout` passes. Sleeping
    /// workers are woken through pub/sub when a host becomes ready, and re-check at least every
    /// 500 ms in case a wake-up was lost.
    ///
    /// # Errors
    ///
    /// As for [`claim`](Self::claim).
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("claim_wait example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use std::time::Duration;
    /// use url_dedup_redis::{Frontier, Link, Membership, Namespace, NewTask, WorkerId};
    /// let link = Link::connect(&server.url()).await?;
    /// let ns = Namespace::new("c")?;
    /// let frontier = Frontier::new(link.clone(), ns.clone());
    /// let me = WorkerId::new("w")?;
    /// Membership::new(link, ns).join(&me).await?;
    /// let producer = frontier.clone();
    /// tokio::spawn(async move {
    ///     tokio::time::sleep(Duration::from_millis(50)).await;
    ///     producer.push(&[NewTask::from_url("https://late.example/")?]).await
    /// });
    /// let task = frontier.claim_wait(&me, Duration::from_secs(5)).await?.expect("woken up");
    /// assert_eq!(task.host(), "late.example");
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn claim_wait(
        &self,
        worker: &WorkerId,
        timeout: Duration,
    ) -> Result<Option<ClaimedTask>> {
        Ok(self.claim_batch_wait(worker, 1, timeout).await?.pop())
    }

    /// [`claim_batch`](Self::claim_batch), sleeping as [`claim_wait`](Self::claim_wait) does
    /// until some task is due or `timeout` passes (then the answer is empty).
    ///
    /// # Errors
    ///
    /// As for [`claim`](Self::claim).
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("claim_batch_wait example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use std::time::Duration;
    /// use url_dedup_redis::{Frontier, Link, Membership, Namespace, WorkerId};
    /// let link = Link::connect(&server.url()).await?;
    /// let ns = Namespace::new("c")?;
    /// let frontier = Frontier::new(link.clone(), ns.clone());
    /// let me = WorkerId::new("w")?;
    /// Membership::new(link, ns).join(&me).await?;
    /// let nothing = frontier.claim_batch_wait(&me, 8, Duration::from_millis(20)).await?;
    /// assert!(nothing.is_empty());
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn claim_batch_wait(
        &self,
        worker: &WorkerId,
        max: usize,
        timeout: Duration,
    ) -> Result<Vec<ClaimedTask>> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut wake = Subscription::new(self.link.clone(), self.keys.wake.clone());
        let mut subscribed = false;
        loop {
            let (tasks, next_due) = self.claim_up_to(worker, max).await?;
            if !tasks.is_empty() {
                return Ok(tasks);
            }
            if !subscribed {
                // Subscribe only once there is nothing to do (a busy worker never pays for it),
                // then look again: a push between the first look and the subscription would
                // otherwise go unnoticed until the next poll.
                subscribed = true;
                wake.ensure(POLL_INTERVAL).await;
                continue;
            }
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return Ok(Vec::new());
            }
            let nap = left.min(POLL_INTERVAL).min(
                next_due
                    .unwrap_or(POLL_INTERVAL)
                    .max(Duration::from_millis(1)),
            );
            wake.wait(nap).await;
        }
    }

    fn proc_key(&self, worker: &WorkerId) -> String {
        self.ns.key(&format!("proc:{worker}"))
    }
}

mod finish;
mod recovery;
#[cfg(test)]
mod tests;
