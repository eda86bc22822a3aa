//! Dynamic configuration that every worker watches (ZooKeeper's watched config node).

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Duration;

use redis::Script;

use crate::error::{Error, Result};
use crate::leader::Epoch;
use crate::link::Link;
use crate::namespace::Namespace;
use crate::signal::Subscription;

const SET: &str = r"
-- KEYS: 1 config hash, 2 version counter, 3 leader epoch counter
-- ARGV: 1 change channel, 2 fencing epoch or 0, 3.. field, value pairs
if ARGV[2] ~= '0' then
  local current = tonumber(redis.call('GET', KEYS[3]) or '0')
  if current ~= tonumber(ARGV[2]) then return {0, current} end
end
for i = 3, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
local version = redis.call('INCR', KEYS[2])
redis.call('PUBLISH', ARGV[1], version)
return {1, version}
";

/// Longest a watcher goes without re-reading the version, in case a notification was lost.
const POLL_INTERVAL: Duration = Duration::from_millis(500);

/// One consistent read of the shared configuration.
///
/// # Examples
///
/// ```
/// use url_dedup_redis::ConfigSnapshot;
///
/// let empty = ConfigSnapshot::default();
/// assert_eq!(empty.version, 0);
/// assert_eq!(empty.get("delay_ms"), None);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConfigSnapshot {
    /// Incremented by every change; 0 before the first.
    pub version: u64,
    /// Field -> value.
    pub values: BTreeMap<String, String>,
}

impl ConfigSnapshot {
    /// The value of `field`.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_redis::ConfigSnapshot;
    ///
    /// let mut snap = ConfigSnapshot::default();
    /// snap.values.insert("stop".into(), "1".into());
    /// assert_eq!(snap.get("stop"), Some("1"));
    /// ```
    pub fn get(&self, field: &str) -> Option<&str> {
        self.values.get(field).map(String::as_str)
    }
}

/// A configuration hash with a version counter and a change channel.
///
/// Writers change fields with [`set`](Self::set) (or [`set_fenced`](Self::set_fenced), which
/// only the current leader's term can do); each change bumps `{ns}:config:version` and
/// publishes it on `{ns}:config:changed`. Workers block in
/// [`wait_for_change`](Self::wait_for_change), which wakes on the notification and re-reads the
/// version at least every 500 ms, so a notification lost during a reconnect delays a change,
/// never hides it.
///
/// # Examples
///
/// ```
/// # use url_dedup_redis::testing::RedisServer;
/// # let Some(server) = RedisServer::start_or_skip("SharedConfig example") else { return };
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use std::time::Duration;
/// use url_dedup_redis::{Link, Namespace, SharedConfig};
///
/// let config = SharedConfig::new(Link::connect(&server.url()).await?, Namespace::new("c")?);
/// let watcher = config.clone();
/// let waiting = tokio::spawn(async move { watcher.wait_for_change(0, Duration::from_secs(5)).await });
/// config.set(&[("max_depth", "5")]).await?;
/// let seen = waiting.await.unwrap()?.expect("a change");
/// assert_eq!(seen.get("max_depth"), Some("5"));
/// # Ok::<(), url_dedup_redis::Error>(())
/// # }).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct SharedConfig {
    link: Link,
    hash: String,
    version: String,
    channel: String,
    leader_epoch: String,
}

impl SharedConfig {
    /// The configuration of namespace `ns`.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("SharedConfig::new example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{Link, Namespace, SharedConfig};
    /// let config = SharedConfig::new(Link::connect(&server.url()).await?, Namespace::new("c")?);
    /// assert_eq!(config.snapshot().await?.version, 0);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn new(link: Link, ns: Namespace) -> Self {
        Self {
            link,
            hash: ns.key("config"),
            version: ns.key("config:version"),
            channel: ns.key("config:changed"),
            leader_epoch: ns.key("leader:epoch"),
        }
    }

    /// Sets fields and returns the new version.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when Redis stays unreachable.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("config set example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{Link, Namespace, SharedConfig};
    /// let config = SharedConfig::new(Link::connect(&server.url()).await?, Namespace::new("c")?);
    /// assert_eq!(config.set(&[("a", "1"), ("b", "2")]).await?, 1);
    /// assert_eq!(config.snapshot().await?.get("b"), Some("2"));
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn set(&self, fields: &[(&str, &str)]) -> Result<u64> {
        self.write(0, fields).await
    }

    /// Sets fields only if `epoch` is the newest leader epoch: a leader that was replaced while
    /// it was paused cannot overwrite its successor's configuration.
    ///
    /// # Errors
    ///
    /// [`Error::Fenced`] for a stale epoch; [`Error::Unavailable`] when Redis stays unreachable.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("set_fenced example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{Error, LeaderLease, Link, Namespace, SharedConfig, WorkerId};
    /// let link = Link::connect(&server.url()).await?;
    /// let ns = Namespace::new("c")?;
    /// let lease = LeaderLease::new(link.clone(), ns.clone());
    /// let config = SharedConfig::new(link, ns);
    /// let (a, b) = (WorkerId::new("a")?, WorkerId::new("b")?);
    /// let old = lease.try_acquire(&a).await?.unwrap();
    /// lease.release(&a, old).await?;
    /// let new = lease.try_acquire(&b).await?.unwrap();
    /// config.set_fenced(new, &[("table_epoch", "9")]).await?;
    /// assert!(matches!(config.set_fenced(old, &[("table_epoch", "8")]).await, Err(Error::Fenced { .. })));
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn set_fenced(&self, epoch: Epoch, fields: &[(&str, &str)]) -> Result<u64> {
        self.write(epoch.0.max(1), fields).await
    }

    async fn write(&self, fence: u64, fields: &[(&str, &str)]) -> Result<u64> {
        let (ok, n): (i64, u64) = self
            .link
            .run("set config", |mut conn| {
                static SCRIPT: OnceLock<Script> = OnceLock::new();
                let mut call = SCRIPT.get_or_init(|| Script::new(SET)).prepare_invoke();
                call.key(&self.hash)
                    .key(&self.version)
                    .key(&self.leader_epoch)
                    .arg(&self.channel)
                    .arg(fence);
                for (field, value) in fields {
                    call.arg(*field).arg(*value);
                }
                async move { call.invoke_async(&mut conn).await }
            })
            .await?;
        if ok == 1 {
            Ok(n)
        } else {
            Err(Error::Fenced {
                presented: fence,
                current: n,
            })
        }
    }

    /// Reads the version and every field in one atomic step.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when Redis stays unreachable.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("snapshot example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{Link, Namespace, SharedConfig};
    /// let config = SharedConfig::new(Link::connect(&server.url()).await?, Namespace::new("c")?);
    /// config.set(&[("stop", "1")]).await?;
    /// let snap = config.snapshot().await?;
    /// assert_eq!((snap.version, snap.get("stop")), (1, Some("1")));
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn snapshot(&self) -> Result<ConfigSnapshot> {
        let (version, values): (Option<u64>, BTreeMap<String, String>) = self
            .link
            .run("read config", |mut conn| {
                let mut pipe = redis::pipe();
                pipe.atomic()
                    .cmd("GET")
                    .arg(&self.version)
                    .cmd("HGETALL")
                    .arg(&self.hash);
                async move { pipe.query_async(&mut conn).await }
            })
            .await?;
        Ok(ConfigSnapshot {
            version: version.unwrap_or(0),
            values,
        })
    }

    /// Waits until the version exceeds `since`, up to `timeout`; `None` on timeout.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when Redis stays unreachable.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("wait_for_change example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use std::time::Duration;
    /// use url_dedup_redis::{Link, Namespace, SharedConfig};
    /// let config = SharedConfig::new(Link::connect(&server.url()).await?, Namespace::new("c")?);
    /// assert_eq!(config.wait_for_change(0, Duration::from_millis(50)).await?, None);
    /// config.set(&[("k", "v")]).await?;
    /// assert_eq!(config.wait_for_change(0, Duration::from_millis(50)).await?.unwrap().version, 1);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn wait_for_change(
        &self,
        since: u64,
        timeout: Duration,
    ) -> Result<Option<ConfigSnapshot>> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut changes = Subscription::new(self.link.clone(), self.channel.clone());
        // Subscribe first, then read: a change between the two is then never missed.
        changes.ensure(POLL_INTERVAL.min(timeout)).await;
        loop {
            let snap = self.snapshot().await?;
            if snap.version > since {
                return Ok(Some(snap));
            }
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            changes.wait(left.min(POLL_INTERVAL)).await;
        }
    }
}
