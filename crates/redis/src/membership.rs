//! Who is alive: one heartbeat key per worker with a TTL (ZooKeeper's ephemeral nodes).

use std::time::Duration;

use crate::error::Result;
use crate::link::Link;
use crate::namespace::{Namespace, WorkerId};

/// Worker membership by heartbeat keys.
///
/// [`join`](Self::join) writes `{ns}:member:<worker>` with a TTL and adds the worker to
/// `{ns}:members`; [`heartbeat`](Self::heartbeat) renews the TTL. A worker that stops
/// heartbeating (crashed, partitioned, paused) disappears when the TTL runs out, which is the
/// lease [`Frontier::requeue_dead`](crate::Frontier::requeue_dead) waits for. Heartbeat at a
/// third of the TTL or more often.
///
/// # Examples
///
/// ```
/// # use url_dedup_redis::testing::RedisServer;
/// # let Some(server) = RedisServer::start_or_skip("Membership example") else { return };
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use std::time::Duration;
/// use url_dedup_redis::{Link, Membership, Namespace, WorkerId};
///
/// let members = Membership::with_ttl(Link::connect(&server.url()).await?, Namespace::new("c")?, Duration::from_millis(200));
/// let w = WorkerId::new("w1")?;
/// members.join(&w).await?;
/// assert_eq!(members.live().await?, vec![w.clone()]);
/// tokio::time::sleep(Duration::from_millis(400)).await; // no heartbeat: the lease runs out
/// assert!(members.live().await?.is_empty());
/// assert_eq!(members.prune().await?, vec![w]);
/// # Ok::<(), url_dedup_redis::Error>(())
/// # }).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct Membership {
    link: Link,
    ns: Namespace,
    ttl: Duration,
    members: String,
}

impl Membership {
    /// Membership with a 10-second lease.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("Membership::new example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use std::time::Duration;
    /// use url_dedup_redis::{Link, Membership, Namespace};
    /// let members = Membership::new(Link::connect(&server.url()).await?, Namespace::new("c")?);
    /// assert_eq!(members.ttl(), Duration::from_secs(10));
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn new(link: Link, ns: Namespace) -> Self {
        Self::with_ttl(link, ns, Duration::from_secs(10))
    }

    /// Membership with a lease of `ttl` (at least 1 ms).
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("with_ttl example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use std::time::Duration;
    /// use url_dedup_redis::{Link, Membership, Namespace};
    /// let members = Membership::with_ttl(Link::connect(&server.url()).await?, Namespace::new("c")?, Duration::ZERO);
    /// assert_eq!(members.ttl(), Duration::from_millis(1));
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn with_ttl(link: Link, ns: Namespace, ttl: Duration) -> Self {
        let members = ns.key("members");
        Self {
            link,
            ns,
            ttl: ttl.max(Duration::from_millis(1)),
            members,
        }
    }

    /// The lease length.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("ttl example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use std::time::Duration;
    /// use url_dedup_redis::{Link, Membership, Namespace};
    /// let m = Membership::with_ttl(Link::connect(&server.url()).await?, Namespace::new("c")?, Duration::from_secs(3));
    /// assert_eq!(m.ttl(), Duration::from_secs(3));
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Starts (or renews) `worker`'s lease and lists it as a member.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`](crate::Error::Unavailable) when Redis stays unreachable.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("join example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{Link, Membership, Namespace, WorkerId};
    /// let members = Membership::new(Link::connect(&server.url()).await?, Namespace::new("c")?);
    /// members.join(&WorkerId::new("w")?).await?;
    /// assert_eq!(members.live().await?.len(), 1);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn join(&self, worker: &WorkerId) -> Result<()> {
        let key = self.ns.member(worker);
        let ttl = self.ttl_ms();
        self.link
            .run("join", |mut conn| {
                let mut pipe = redis::pipe();
                pipe.atomic()
                    .cmd("SET")
                    .arg(&key)
                    .arg(1)
                    .arg("PX")
                    .arg(ttl)
                    .ignore()
                    .cmd("SADD")
                    .arg(&self.members)
                    .arg(worker.as_str())
                    .ignore();
                async move { pipe.query_async::<()>(&mut conn).await }
            })
            .await
    }

    /// Renews `worker`'s lease. Returns `false` when the lease had already run out: the worker
    /// was (or may have been) presumed dead and its claims requeued, so its unacknowledged tasks
    /// may run elsewhere too. The lease is re-established either way.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`](crate::Error::Unavailable) when Redis stays unreachable.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("heartbeat example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{Link, Membership, Namespace, WorkerId};
    /// let members = Membership::new(Link::connect(&server.url()).await?, Namespace::new("c")?);
    /// let w = WorkerId::new("w")?;
    /// assert!(!members.heartbeat(&w).await?); // never joined
    /// assert!(members.heartbeat(&w).await?);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn heartbeat(&self, worker: &WorkerId) -> Result<bool> {
        let key = self.ns.member(worker);
        let ttl = self.ttl_ms();
        let renewed: bool = self
            .link
            .run("heartbeat", |mut conn| {
                let key = key.clone();
                async move {
                    redis::cmd("PEXPIRE")
                        .arg(key)
                        .arg(ttl)
                        .query_async(&mut conn)
                        .await
                }
            })
            .await?;
        if !renewed {
            self.join(worker).await?;
        }
        Ok(renewed)
    }

    /// Ends `worker`'s lease now (a clean shutdown; acknowledge or release its tasks first, or
    /// they wait for [`Frontier::requeue_dead`](crate::Frontier::requeue_dead)).
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`](crate::Error::Unavailable) when Redis stays unreachable.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("leave example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{Link, Membership, Namespace, WorkerId};
    /// let members = Membership::new(Link::connect(&server.url()).await?, Namespace::new("c")?);
    /// let w = WorkerId::new("w")?;
    /// members.join(&w).await?;
    /// members.leave(&w).await?;
    /// assert!(members.live().await?.is_empty());
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn leave(&self, worker: &WorkerId) -> Result<()> {
        let key = self.ns.member(worker);
        self.link
            .run("leave", |mut conn| {
                let mut pipe = redis::pipe();
                pipe.atomic()
                    .cmd("DEL")
                    .arg(&key)
                    .ignore()
                    .cmd("SREM")
                    .arg(&self.members)
                    .arg(worker.as_str())
                    .ignore();
                async move { pipe.query_async::<()>(&mut conn).await }
            })
            .await
    }

    /// The members whose lease is live, sorted.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`](crate::Error::Unavailable) when Redis stays unreachable.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("live example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{Link, Membership, Namespace, WorkerId};
    /// let members = Membership::new(Link::connect(&server.url()).await?, Namespace::new("c")?);
    /// for name in ["b", "a"] { members.join(&WorkerId::new(name)?).await?; }
    /// assert_eq!(members.live().await?, vec![WorkerId::new("a")?, WorkerId::new("b")?]);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn live(&self) -> Result<Vec<WorkerId>> {
        Ok(self.split().await?.0)
    }

    /// Removes listed members whose lease ran out and returns them, sorted: the membership
    /// change a leader reacts to (requeue their tasks, rebalance).
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`](crate::Error::Unavailable) when Redis stays unreachable.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("prune example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{Link, Membership, Namespace};
    /// let members = Membership::new(Link::connect(&server.url()).await?, Namespace::new("c")?);
    /// assert!(members.prune().await?.is_empty());
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn prune(&self) -> Result<Vec<WorkerId>> {
        let dead = self.split().await?.1;
        for worker in &dead {
            // SREM only if the lease is still absent: a worker that rejoined in between stays.
            let key = self.ns.member(worker);
            self.link
                .run("prune", |mut conn| {
                    let script = redis::Script::new(
                        "if redis.call('EXISTS', KEYS[1]) == 0 then \
                         return redis.call('SREM', KEYS[2], ARGV[1]) end return 0",
                    );
                    let key = key.clone();
                    let members = self.members.clone();
                    let name = worker.to_string();
                    async move {
                        script
                            .key(key)
                            .key(members)
                            .arg(name)
                            .invoke_async::<i64>(&mut conn)
                            .await
                    }
                })
                .await?;
        }
        Ok(dead)
    }

    async fn split(&self) -> Result<(Vec<WorkerId>, Vec<WorkerId>)> {
        let names: Vec<String> = self
            .link
            .run("list members", |mut conn| {
                let key = self.members.clone();
                async move { redis::cmd("SMEMBERS").arg(key).query_async(&mut conn).await }
            })
            .await?;
        let mut workers: Vec<WorkerId> =
            names.iter().filter_map(|n| WorkerId::new(n).ok()).collect();
        workers.sort();
        if workers.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        let keys: Vec<String> = workers.iter().map(|w| self.ns.member(w)).collect();
        let alive: Vec<bool> = self
            .link
            .run("check members", |mut conn| {
                let mut pipe = redis::pipe();
                for key in &keys {
                    pipe.cmd("EXISTS").arg(key);
                }
                async move { pipe.query_async(&mut conn).await }
            })
            .await?;
        let (live, dead): (Vec<_>, Vec<_>) = workers
            .into_iter()
            .zip(alive)
            .partition(|(_, alive)| *alive);
        Ok((
            live.into_iter().map(|(w, _)| w).collect(),
            dead.into_iter().map(|(w, _)| w).collect(),
        ))
    }

    fn ttl_ms(&self) -> u64 {
        self.ttl.as_millis().max(1) as u64
    }
}
