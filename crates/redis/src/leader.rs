//! One leader at a time: a lease key set with `SET NX PX`, and a fencing epoch from `INCR`.

use std::fmt;
use std::time::Duration;

use redis::Script;

use crate::error::Result;
use crate::link::Link;
use crate::namespace::{Namespace, WorkerId};

/// A leader's term number. Every successful acquisition increments it, so a deposed leader's
/// writes carry a smaller epoch than the current one and can be refused
/// ([`SharedConfig::set_fenced`](crate::SharedConfig::set_fenced)).
///
/// # Examples
///
/// ```
/// use url_dedup_redis::Epoch;
///
/// assert!(Epoch(2) > Epoch(1));
/// assert_eq!(Epoch(7).to_string(), "epoch 7");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Epoch(pub u64);

impl fmt::Display for Epoch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "epoch {}", self.0)
    }
}

const ACQUIRE: &str = r"
-- KEYS: 1 lease, 2 epoch counter; ARGV: 1 candidate, 2 ttl ms
local cur = redis.call('GET', KEYS[1])
if cur then
  local sep = string.find(cur, ':', 1, true)
  if sep and string.sub(cur, sep + 1) == ARGV[1] then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return tonumber(string.sub(cur, 1, sep - 1))
  end
  return 0
end
local epoch = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], string.format('%d', epoch) .. ':' .. ARGV[1], 'PX', ARGV[2])
return epoch
";

const RENEW: &str = r"
-- KEYS: 1 lease; ARGV: 1 'epoch:candidate', 2 ttl ms, 3 'renew' or 'release'
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[3] == 'release' then redis.call('DEL', KEYS[1]) else redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 1
";

/// A leader lease (ZooKeeper's leader election, on one Redis key).
///
/// The lease key `{ns}:leader` holds `epoch:candidate` and expires after the TTL unless
/// renewed. Acquiring is `SET NX PX` inside a script that also takes the next epoch from
/// `INCR {ns}:leader:epoch`, so each term has its own fencing number. A leader must renew well
/// within the TTL and stop acting as leader when [`renew`](Self::renew) returns `false`.
///
/// # Examples
///
/// ```
/// # use url_dedup_redis::testing::RedisServer;
/// # let Some(server) = RedisServer::start_or_skip("LeaderLease example") else { return };
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use std::time::Duration;
/// use url_dedup_redis::{Epoch, LeaderLease, Link, Namespace, WorkerId};
///
/// let lease = LeaderLease::with_ttl(Link::connect(&server.url()).await?, Namespace::new("c")?, Duration::from_millis(200));
/// let (a, b) = (WorkerId::new("a")?, WorkerId::new("b")?);
/// assert_eq!(lease.try_acquire(&a).await?, Some(Epoch(1)));
/// assert_eq!(lease.try_acquire(&b).await?, None);
/// tokio::time::sleep(Duration::from_millis(300)).await; // a stops renewing
/// assert_eq!(lease.try_acquire(&b).await?, Some(Epoch(2)));
/// assert!(!lease.renew(&a, Epoch(1)).await?);
/// # Ok::<(), url_dedup_redis::Error>(())
/// # }).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct LeaderLease {
    link: Link,
    key: String,
    epoch_key: String,
    ttl: Duration,
}

impl LeaderLease {
    /// A lease of 10 seconds.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("LeaderLease::new example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{LeaderLease, Link, Namespace};
    /// let lease = LeaderLease::new(Link::connect(&server.url()).await?, Namespace::new("c")?);
    /// assert_eq!(lease.current().await?, None);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn new(link: Link, ns: Namespace) -> Self {
        Self::with_ttl(link, ns, Duration::from_secs(10))
    }

    /// A lease of `ttl` (at least 1 ms).
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("LeaderLease::with_ttl example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use std::time::Duration;
    /// use url_dedup_redis::{LeaderLease, Link, Namespace};
    /// let lease = LeaderLease::with_ttl(Link::connect(&server.url()).await?, Namespace::new("c")?, Duration::from_secs(5));
    /// assert_eq!(lease.current().await?, None);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn with_ttl(link: Link, ns: Namespace, ttl: Duration) -> Self {
        Self {
            link,
            key: ns.key("leader"),
            epoch_key: ns.key("leader:epoch"),
            ttl: ttl.max(Duration::from_millis(1)),
        }
    }

    /// Becomes leader if nobody is, returning the new term's epoch; `None` if another candidate
    /// holds the lease. A candidate that already holds it gets its epoch back and a renewed
    /// lease, so a retry after a lost reply is harmless.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`](crate::Error::Unavailable) when Redis stays unreachable.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("try_acquire example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{Epoch, LeaderLease, Link, Namespace, WorkerId};
    /// let lease = LeaderLease::new(Link::connect(&server.url()).await?, Namespace::new("c")?);
    /// let me = WorkerId::new("me")?;
    /// assert_eq!(lease.try_acquire(&me).await?, Some(Epoch(1)));
    /// assert_eq!(lease.try_acquire(&me).await?, Some(Epoch(1)));
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn try_acquire(&self, candidate: &WorkerId) -> Result<Option<Epoch>> {
        let ttl = self.ttl_ms();
        let epoch: u64 = self
            .link
            .run("acquire leadership", |mut conn| {
                let script = Script::new(ACQUIRE);
                let (key, epoch_key) = (self.key.clone(), self.epoch_key.clone());
                let name = candidate.to_string();
                async move {
                    script
                        .key(key)
                        .key(epoch_key)
                        .arg(name)
                        .arg(ttl)
                        .invoke_async(&mut conn)
                        .await
                }
            })
            .await?;
        Ok((epoch > 0).then_some(Epoch(epoch)))
    }

    /// Extends the lease of `candidate`'s term `epoch`; `false` if that term is over.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`](crate::Error::Unavailable) when Redis stays unreachable.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("renew example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{LeaderLease, Link, Namespace, WorkerId};
    /// let lease = LeaderLease::new(Link::connect(&server.url()).await?, Namespace::new("c")?);
    /// let me = WorkerId::new("me")?;
    /// let epoch = lease.try_acquire(&me).await?.unwrap();
    /// assert!(lease.renew(&me, epoch).await?);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn renew(&self, candidate: &WorkerId, epoch: Epoch) -> Result<bool> {
        self.renew_or_release(candidate, epoch, "renew").await
    }

    /// Gives up the lease of `candidate`'s term `epoch` now, so another candidate need not wait
    /// for the TTL; `false` if that term was already over.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`](crate::Error::Unavailable) when Redis stays unreachable.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("release lease example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{Epoch, LeaderLease, Link, Namespace, WorkerId};
    /// let lease = LeaderLease::new(Link::connect(&server.url()).await?, Namespace::new("c")?);
    /// let (a, b) = (WorkerId::new("a")?, WorkerId::new("b")?);
    /// let epoch = lease.try_acquire(&a).await?.unwrap();
    /// assert!(lease.release(&a, epoch).await?);
    /// assert_eq!(lease.try_acquire(&b).await?, Some(Epoch(2)));
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn release(&self, candidate: &WorkerId, epoch: Epoch) -> Result<bool> {
        self.renew_or_release(candidate, epoch, "release").await
    }

    async fn renew_or_release(
        &self,
        candidate: &WorkerId,
        epoch: Epoch,
        mode: &'static str,
    ) -> Result<bool> {
        let ttl = self.ttl_ms();
        let holder = format!("{}:{candidate}", epoch.0);
        let done: i64 = self
            .link
            .run("renew leadership", |mut conn| {
                let script = Script::new(RENEW);
                let key = self.key.clone();
                let holder = holder.clone();
                async move {
                    script
                        .key(key)
                        .arg(holder)
                        .arg(ttl)
                        .arg(mode)
                        .invoke_async(&mut conn)
                        .await
                }
            })
            .await?;
        Ok(done == 1)
    }

    /// The current leader and its epoch, if the lease is held.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`](crate::Error::Unavailable) when Redis stays unreachable.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("current example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{Epoch, LeaderLease, Link, Namespace, WorkerId};
    /// let lease = LeaderLease::new(Link::connect(&server.url()).await?, Namespace::new("c")?);
    /// let me = WorkerId::new("me")?;
    /// lease.try_acquire(&me).await?;
    /// assert_eq!(lease.current().await?, Some((me, Epoch(1))));
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn current(&self) -> Result<Option<(WorkerId, Epoch)>> {
        let value: Option<String> = self
            .link
            .run("read leader", |mut conn| {
                let key = self.key.clone();
                async move { redis::cmd("GET").arg(key).query_async(&mut conn).await }
            })
            .await?;
        Ok(value.and_then(|v| {
            let (epoch, name) = v.split_once(':')?;
            Some((WorkerId::new(name).ok()?, Epoch(epoch.parse().ok()?)))
        }))
    }

    fn ttl_ms(&self) -> u64 {
        self.ttl.as_millis().max(1) as u64
    }
}
