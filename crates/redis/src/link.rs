//! One logical connection to Redis that survives restarts: a multiplexed connection (to one
//! server, or to every master of a Redis Cluster) plus a retry loop with exponential backoff
//! around every call.

use std::future::Future;
use std::time::{Duration, Instant};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::{Client, ConnectionInfo, RedisError, RedisResult};

use crate::connection::Connection;
use crate::error::{Error, Result};

/// How long and how often a call is retried while Redis is unreachable.
///
/// Delays start at `initial`, double up to `max`, and the call gives up with
/// [`Error::Unavailable`] once `give_up_after` has passed since its first attempt. The first
/// contact with a server (opening a [`Link`] or a shared filter) gives up sooner, after
/// `first_contact`: a Redis that was never reached is a wrong address or a server that is
/// not running, and a user should hear of it in seconds, while a Redis that answered before
/// and stops is more likely restarting, worth the longer wait.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use url_dedup_redis::Backoff;
///
/// let patient = Backoff { give_up_after: Duration::from_secs(300), ..Backoff::default() };
/// assert_eq!(patient.initial, Duration::from_millis(20));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// First delay after a failed attempt.
    pub initial: Duration,
    /// Longest delay between two attempts.
    pub max: Duration,
    /// Total time after which the call reports [`Error::Unavailable`].
    pub give_up_after: Duration,
    /// How long one command may wait for its reply before the connection counts as broken.
    pub response_timeout: Duration,
    /// How long opening one TCP connection may take.
    pub connect_timeout: Duration,
    /// Total time after which the first contact with a server gives up (at most
    /// `give_up_after`).
    pub first_contact: Duration,
}

impl Default for Backoff {
    /// 20 ms doubling to 1 s, giving up after 30 s (3 s for the first contact); connections
    /// time out after 1 s, replies after 10 s.
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(20),
            max: Duration::from_secs(1),
            give_up_after: Duration::from_secs(30),
            response_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(1),
            first_contact: Duration::from_secs(3),
        }
    }
}

impl Backoff {
    /// A policy that keeps retrying a server that stops answering for `give_up_after` (also
    /// the cap of the first contact), other settings as the default.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use url_dedup_redis::Backoff;
    ///
    /// let quick = Backoff::giving_up_after(Duration::from_millis(500));
    /// assert_eq!(quick.first_contact, Duration::from_millis(500));
    /// let patient = Backoff::giving_up_after(Duration::from_secs(600));
    /// assert_eq!(patient.first_contact, Backoff::default().first_contact);
    /// ```
    pub fn giving_up_after(give_up_after: Duration) -> Self {
        let default = Self::default();
        Self {
            give_up_after,
            first_contact: default.first_contact.min(give_up_after),
            ..default
        }
    }
}

/// A shared, self-healing connection to one Redis server or to a Redis Cluster.
///
/// Cheap to clone: clones share one multiplexed TCP connection (per master, on a cluster),
/// which carries pipelined requests from many tasks at once. When the connection breaks, the
/// next call reconnects; calls that fail on a broken connection are retried under the
/// [`Backoff`] policy.
///
/// A cluster is named by several comma-separated seed URLs
/// (`redis://10.0.0.1:7000,redis://10.0.0.2:7000`), or by one URL of a node that says it is
/// in cluster mode (`INFO cluster`). Each command then goes to the master serving its key's
/// hash slot, following `MOVED` and `ASK` while slots move.
///
/// # Examples
///
/// ```
/// # use url_dedup_redis::testing::RedisServer;
/// # let Some(server) = RedisServer::start_or_skip("Link example") else { return };
/// # let url = server.url();
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use url_dedup_redis::Link;
///
/// let link = Link::connect(&url).await?;
/// assert_eq!(link.ping().await?, ());
/// # Ok::<(), url_dedup_redis::Error>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct Link {
    client: Client,
    conn: Connection,
    backoff: Backoff,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("server", &self.client.get_connection_info().addr())
            .field("cluster", &self.conn.is_cluster())
            .field("backoff", &self.backoff)
            .finish_non_exhaustive()
    }
}

impl Link {
    /// Connects to `url` (`redis://host:port/db`, or comma-separated seeds of a cluster) with
    /// the default [`Backoff`].
    ///
    /// # Errors
    ///
    /// [`Error::Redis`] for a malformed URL, [`Error::Unavailable`] when the server cannot be
    /// reached within the backoff budget.
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{Error, Link};
    ///
    /// let err = Link::connect("not a url").await.unwrap_err();
    /// assert!(matches!(err, Error::Redis { .. }));
    /// # });
    /// ```
    pub async fn connect(url: &str) -> Result<Self> {
        Self::connect_with(url, Backoff::default()).await
    }

    /// Connects with an explicit retry policy.
    ///
    /// # Errors
    ///
    /// As for [`connect`](Self::connect).
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use std::time::Duration;
    /// use url_dedup_redis::{Backoff, Error, Link};
    ///
    /// // Nothing listens on port 1: the call gives up after about 200 ms.
    /// let quick = Backoff { give_up_after: Duration::from_millis(200), ..Backoff::default() };
    /// let err = Link::connect_with("redis://127.0.0.1:1/", quick).await.unwrap_err();
    /// assert!(matches!(err, Error::Unavailable { .. }));
    /// # });
    /// ```
    pub async fn connect_with(url: &str, backoff: Backoff) -> Result<Self> {
        let seeds = crate::deployment::parse_seeds(url)?;
        let client = Client::open(seeds[0].clone()).map_err(|source| Error::Redis {
            operation: "open client",
            source,
        })?;
        // The manager's own reconnect loop is kept short: the policy lives in `run`, which
        // sees every failure and owns the time budget.
        let config = ConnectionManagerConfig::new()
            .set_number_of_retries(1)
            .set_min_delay(backoff.initial)
            .set_max_delay(backoff.max)
            .set_connection_timeout(Some(backoff.connect_timeout))
            .set_response_timeout(Some(backoff.response_timeout));
        let single =
            ConnectionManager::new_lazy_with_config(client.clone(), config).map_err(|source| {
                Error::Redis {
                    operation: "connect",
                    source,
                }
            })?;
        let mut link = Self {
            client,
            conn: Connection::single(single),
            backoff,
        };
        let mut retry = Retry::first_contact(&link.backoff);
        // Several seeds name a cluster; one URL names a cluster when its server says so.
        let cluster = seeds.len() > 1
            || link
                .run_with(&mut retry, "connect", |mut c| async move {
                    let info: String = redis::cmd("INFO")
                        .arg("cluster")
                        .query_async(&mut c)
                        .await?;
                    Ok(info.contains("cluster_enabled:1"))
                })
                .await?;
        if cluster {
            let cluster = cluster_client(seeds, &backoff)?;
            let conn = loop {
                match cluster.get_async_connection().await {
                    Ok(conn) => break conn,
                    Err(e) => tokio::time::sleep(retry.failed("connect", e)?).await,
                }
            };
            link.conn = Connection::cluster(conn);
        }
        link.run_with(&mut retry, "connect", |mut c| async move {
            redis::cmd("PING").query_async::<()>(&mut c).await
        })
        .await?;
        Ok(link)
    }

    /// Round trip to the server.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when the server stays unreachable.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("ping example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let link = url_dedup_redis::Link::connect(&server.url()).await?;
    /// link.ping().await?;
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn ping(&self) -> Result<()> {
        self.run("ping", |mut c| async move {
            redis::cmd("PING").query_async::<()>(&mut c).await
        })
        .await
    }

    /// The retry policy.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("backoff example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{Backoff, Link};
    /// let link = Link::connect(&server.url()).await?;
    /// assert_eq!(link.backoff(), Backoff::default());
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn backoff(&self) -> Backoff {
        self.backoff
    }

    /// The underlying client, for dedicated connections (pub/sub) that cannot be multiplexed.
    /// On a cluster, the first seed's: a message published on any node reaches the
    /// subscribers of every node.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("client example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let link = url_dedup_redis::Link::connect(&server.url()).await?;
    /// assert_eq!(link.client().get_connection_info().addr().to_string(), format!("127.0.0.1:{}", server.port()));
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// A clone of the multiplexed connection, for callers that build their own commands; it
    /// reconnects by itself but is not retried.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("connection example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let link = url_dedup_redis::Link::connect(&server.url()).await?;
    /// let mut conn = link.connection();
    /// let n: u64 = redis::cmd("EXISTS").arg("{c}:hits").query_async(&mut conn).await.unwrap();
    /// assert_eq!(n, 0);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn connection(&self) -> Connection {
        self.conn.clone()
    }

    /// Runs `attempt` until it succeeds, fails for a reason a retry cannot fix, or the backoff
    /// budget is spent. `attempt` must be safe to repeat: the reply to a command that did run
    /// can be lost with the connection, so every operation built on this is idempotent or
    /// carries a token that makes its repetition harmless.
    ///
    /// Public so that crates built on this one (the two-tier protocol) share this one retry
    /// loop instead of writing their own.
    ///
    /// # Errors
    ///
    /// [`Error::Redis`] for a permanent failure, [`Error::Unavailable`] once the budget is spent.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("run example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let link = url_dedup_redis::Link::connect(&server.url()).await?;
    /// let n: u64 = link
    ///     .run("count", |mut conn| async move {
    ///         redis::cmd("INCR").arg("hits").query_async(&mut conn).await
    ///     })
    ///     .await?;
    /// assert_eq!(n, 1);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn run<T, F, Fut>(&self, operation: &'static str, attempt: F) -> Result<T>
    where
        F: FnMut(Connection) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        self.run_with(&mut Retry::new(&self.backoff), operation, attempt)
            .await
    }

    async fn run_with<T, F, Fut>(
        &self,
        retry: &mut Retry<'_>,
        operation: &'static str,
        mut attempt: F,
    ) -> Result<T>
    where
        F: FnMut(Connection) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        loop {
            match attempt(self.conn.clone()).await {
                Ok(value) => return Ok(value),
                Err(source) => tokio::time::sleep(retry.failed(operation, source)?).await,
            }
        }
    }
}

/// [`Backoff`]'s policy as loop state, shared by the async [`Link::run`] and the blocking
/// segment store: after each failed attempt it gives the wait before the next one, or the
/// error to return.
pub(crate) struct Retry<'a> {
    backoff: &'a Backoff,
    start: Instant,
    delay: Duration,
    attempts: u32,
    /// The time after which the call gives up.
    budget: Duration,
}

impl<'a> Retry<'a> {
    pub(crate) fn new(backoff: &'a Backoff) -> Self {
        Self {
            backoff,
            start: Instant::now(),
            delay: backoff.initial,
            attempts: 0,
            budget: backoff.give_up_after,
        }
    }

    /// The policy of a first contact, which gives up after [`Backoff::first_contact`].
    pub(crate) fn first_contact(backoff: &'a Backoff) -> Self {
        Self {
            budget: backoff.first_contact.min(backoff.give_up_after),
            ..Self::new(backoff)
        }
    }

    /// An attempt of `operation` failed with `source`: `Ok(wait)` to try again after `wait`;
    /// [`Error::Redis`] when the error is not transient; [`Error::Unavailable`] when waiting
    /// would pass the backoff's budget.
    pub(crate) fn failed(
        &mut self,
        operation: &'static str,
        source: RedisError,
    ) -> Result<Duration> {
        self.attempts += 1;
        if !is_transient(&source) {
            return Err(Error::Redis { operation, source });
        }
        let elapsed = self.start.elapsed();
        if elapsed + self.delay > self.budget {
            return Err(Error::Unavailable {
                operation,
                attempts: self.attempts,
                elapsed,
                source,
            });
        }
        let wait = self.delay;
        self.delay = (self.delay * 2).min(self.backoff.max);
        Ok(wait)
    }
}

/// A cluster client for `seeds` whose own retries (of `MOVED`, `ASK`, `TRYAGAIN` and lost
/// nodes) are few and quick: the time budget belongs to [`Link::run`].
fn cluster_client(seeds: Vec<ConnectionInfo>, backoff: &Backoff) -> Result<ClusterClient> {
    use redis::io::tcp::TcpSettings;
    let millis = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    ClusterClient::builder(seeds)
        .connection_timeout(backoff.connect_timeout)
        .response_timeout(backoff.response_timeout)
        .retries(4)
        .min_retry_wait(millis(backoff.initial))
        .max_retry_wait(millis(backoff.max))
        .tcp_settings(TcpSettings::default().set_nodelay(true))
        .build()
        .map_err(|source| Error::Redis {
            operation: "open cluster client",
            source,
        })
}

/// Whether a retry on a fresh connection may succeed: the connection broke or timed out, the
/// server is still loading its data after a restart, or a cluster is between two states (a
/// slot in migration, a failover under way).
///
/// `NOSCRIPT` too: a script call loads its script once when the server does not know it, and
/// a master promoted by a failover between that load and the call answers `NOSCRIPT` again
/// (a crawl on a cluster whose masters came and went stopped on it). The script did not run,
/// so calling again, which loads it on the new master, is safe.
pub(crate) fn is_transient(e: &RedisError) -> bool {
    // Not `MOVED` or `ASK`: those are followed where they are met, never retried as they are.
    e.is_io_error()
        || e.kind() == redis::ErrorKind::ClusterConnectionNotFound
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || e.is_timeout()
        || matches!(
            e.code(),
            Some("LOADING" | "BUSY" | "TRYAGAIN" | "MASTERDOWN" | "CLUSTERDOWN" | "NOSCRIPT")
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::RedisServer;

    /// A script call on a server that does not know the script (a master promoted by a
    /// failover) fails with `NOSCRIPT`: retried, not given up on; a plain error is not.
    #[test]
    fn a_script_unknown_to_the_server_is_worth_a_retry() {
        let Some(server) = RedisServer::start_or_skip("a_script_unknown_to_the_server") else {
            return;
        };
        let mut conn = redis::Client::open(server.url())
            .unwrap()
            .get_connection()
            .unwrap();
        let unknown: RedisError = redis::cmd("EVALSHA")
            .arg("0123456789abcdef0123456789abcdef01234567")
            .arg(0)
            .query::<()>(&mut conn)
            .unwrap_err();
        assert_eq!(unknown.code(), Some("NOSCRIPT"));
        assert!(is_transient(&unknown));
        let wrong: RedisError = redis::cmd("INCR")
            .arg("not-a-number")
            .arg("extra")
            .query::<()>(&mut conn)
            .unwrap_err();
        assert!(!is_transient(&wrong), "{wrong}");
    }
}
