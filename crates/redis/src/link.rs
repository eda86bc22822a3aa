//! The connection layer: one logical connection to a Redis server or cluster that every
//! structure of this crate goes through, async or blocking, with one rule for timeouts,
//! retries, redirections, failover and giving up.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use redis::{Client, RedisError, RedisResult, Value};

use crate::cluster::SlotMap;
use crate::connection::{Connection, Shared};
use crate::deployment::Deployment;
use crate::error::{Error, Result};
use crate::health::{Health, LinkStats};
use crate::node::Target;
use crate::retry::{Backoff, Retry};
use crate::wire::Replies;

/// A shared, self-healing connection to one Redis server or to a Redis Cluster: the layer
/// every structure of this crate goes through.
///
/// Cheap to clone: clones share one connection per node, which carries the commands of many
/// tasks and threads at once (pipelined, answered in order). A connection that breaks is
/// opened again by the next command. [`run`](Self::run) retries a call under the [`Backoff`]
/// policy while Redis is unreachable; the budget is counted from when Redis stopped answering
/// and shared by every link and shared filter of the process on the same Redis, so once it
/// has been unreachable for the budget every call fails at once with [`Error::Unavailable`].
///
/// A cluster is named by several comma-separated seed URLs
/// (`redis://10.0.0.1:7000,redis://10.0.0.2:7000`), or by one URL of a node that says it is
/// in cluster mode (`INFO cluster`). Each command then goes to the master serving its key's
/// hash slot, following `MOVED` and `ASK` while slots move; after a failure that may mean a
/// failover, the next attempt reads the slot map again.
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
    shared: Arc<Shared>,
    client: Client,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("server", &self.client.get_connection_info().addr())
            .field("cluster", &self.is_cluster())
            .field("backoff", &self.shared.backoff)
            .finish_non_exhaustive()
    }
}

/// Why an attempt failed: a Redis error, retried when transient, or an error that ends the
/// call at once (a reset store, corrupt data).
#[derive(Debug)]
pub(crate) enum Failure {
    Redis(RedisError),
    Fatal(Error),
}

impl From<RedisError> for Failure {
    fn from(e: RedisError) -> Self {
        Self::Redis(e)
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Self::Redis(e.into())
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Self::Fatal(e)
    }
}

impl Link {
    /// Connects to `url` (`redis://host:port/db`, or comma-separated seeds of a cluster) with
    /// the default [`Backoff`].
    ///
    /// # Errors
    ///
    /// [`Error::Redis`] for a malformed URL, [`Error::Unavailable`] when the server cannot be
    /// reached within [`Backoff::first_contact`].
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
        let deployment = Deployment::new(url)?;
        let client =
            Client::open(deployment.first_seed().clone()).map_err(|source| Error::Redis {
                operation: "open client",
                source,
            })?;
        let health = Health::of(&deployment.name());
        let link = Self {
            shared: Arc::new(Shared::new(deployment, backoff, health)),
            client,
        };
        let retry = Retry::first_contact(&link.shared.backoff, &link.shared.health);
        link.run_with(retry, false, "connect", |conn| async move {
            let map = discover(&conn).await?;
            conn.deployment().discovered(map);
            Ok(())
        })
        .await?;
        Ok(link)
    }

    /// [`connect_with`](Self::connect_with) for blocking callers.
    pub(crate) fn open(url: &str, backoff: Backoff) -> Result<Self> {
        crate::io::block_on(Self::connect_with(url, backoff)).map_err(|source| Error::Redis {
            operation: "connect",
            source: source.into(),
        })?
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
        self.shared.backoff
    }

    /// A `redis` crate client for the first seed, for connections this crate does not offer.
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

    /// A connection for callers that build their own commands: routed, redirected and
    /// reconnected like every other, but not retried (use [`run`](Self::run) for that).
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
        let backoff = &self.shared.backoff;
        Connection::new(
            self.shared.clone(),
            backoff.response_timeout.min(backoff.give_up_after),
            false,
        )
    }

    /// A link with connections of its own, for commands that block their connection
    /// (`BLPOP`, `WAIT` with a long timeout): the same deployment, policy and outage clock.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("dedicated example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let link = url_dedup_redis::Link::connect(&server.url()).await?;
    /// let waiter = link.dedicated();
    /// let popped: Option<(String, String)> = waiter
    ///     .run("wait", |mut c| async move { redis::cmd("BLPOP").arg("{c}:wake").arg(0.05).query_async(&mut c).await })
    ///     .await?;
    /// assert_eq!(popped, None);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn dedicated(&self) -> Self {
        Self {
            shared: Arc::new(Shared::new(
                self.shared.deployment.copy(),
                self.shared.backoff,
                self.shared.health.clone(),
            )),
            client: self.client.clone(),
        }
    }

    /// What the calls on this Redis met: attempts, failures, calls that gave up, and how long
    /// Redis has been unreachable, counted over every link and shared filter of the process
    /// that uses the same URL.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("stats example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let link = url_dedup_redis::Link::connect(&server.url()).await?;
    /// let before = link.stats();
    /// link.ping().await?;
    /// assert_eq!(link.stats().attempts, before.attempts + 1);
    /// assert_eq!(link.stats().outage, None);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn stats(&self) -> LinkStats {
        self.shared.health.stats()
    }

    /// Whether the link is to a Redis Cluster.
    pub(crate) fn is_cluster(&self) -> bool {
        self.shared.deployment.is_cluster()
    }

    /// `MOVED` and `ASK` redirections this link has followed.
    pub(crate) fn redirections(&self) -> u64 {
        self.shared.redirections()
    }

    /// The node serving `key`.
    pub(crate) fn node_of(&self, key: &[u8]) -> String {
        self.shared.deployment.node_of(key)
    }

    /// Follows a redirection met by a caller of [`Connection::raw`]: the node to ask.
    pub(crate) fn redirected(&self, redirect: &crate::cluster::Redirect) -> String {
        self.shared.count_redirection();
        self.shared.deployment.redirected(redirect)
    }

    /// Runs `attempt` until it succeeds, fails for a reason a retry cannot fix, or Redis has
    /// been unreachable for the budget. `attempt` must be safe to repeat: the reply to a
    /// command that did run can be lost with the connection, so every operation built on this
    /// is idempotent or carries a token that makes its repetition harmless.
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
    pub async fn run<T, F, Fut>(&self, operation: &'static str, mut attempt: F) -> Result<T>
    where
        F: FnMut(Connection) -> Fut,
        Fut: Future<Output = RedisResult<T>>,
    {
        let retry = Retry::new(&self.shared.backoff, &self.shared.health);
        self.run_with(retry, false, operation, |conn| {
            let attempt = attempt(conn);
            async move { attempt.await.map_err(Failure::Redis) }
        })
        .await
    }

    /// [`run`](Self::run) for attempts that may also fail for good ([`Failure::Fatal`]), from
    /// a blocking caller: the attempts run on the caller's thread, their sockets too.
    pub(crate) fn run_blocking<T, F, Fut>(&self, operation: &'static str, attempt: F) -> Result<T>
    where
        F: FnMut(Connection) -> Fut,
        Fut: Future<Output = std::result::Result<T, Failure>>,
    {
        let retry = Retry::new(&self.shared.backoff, &self.shared.health);
        crate::io::block_on(self.run_with(retry, true, operation, attempt)).map_err(|source| {
            Error::Redis {
                operation,
                source: source.into(),
            }
        })?
    }

    async fn run_with<T, F, Fut>(
        &self,
        mut retry: Retry<'_>,
        blocking: bool,
        operation: &'static str,
        mut attempt: F,
    ) -> Result<T>
    where
        F: FnMut(Connection) -> Fut,
        Fut: Future<Output = std::result::Result<T, Failure>>,
    {
        loop {
            let limit = retry.attempt();
            let conn = Connection::new(self.shared.clone(), limit, blocking);
            let result = match refresh_if_stale(&conn).await {
                Ok(()) => attempt(conn).await,
                Err(e) => Err(Failure::Redis(e)),
            };
            match result {
                Ok(value) => return Ok(value),
                Err(Failure::Fatal(e)) => return Err(e),
                Err(Failure::Redis(source)) => {
                    if crate::retry::may_have_moved(&source) {
                        self.shared.deployment.mark_stale();
                    }
                    tokio::time::sleep(retry.failed(operation, source)?).await;
                }
            }
        }
    }

    /// A subscription to `channel` on a connection of its own (on a cluster, to the master of
    /// slot 0: a message published on any node reaches the subscribers of every node). One
    /// `()` per message; the receiver ends when the connection breaks.
    pub(crate) async fn subscribe(
        &self,
        channel: &str,
        limit: Duration,
    ) -> RedisResult<tokio::sync::mpsc::UnboundedReceiver<()>> {
        let deployment = &self.shared.deployment;
        let target = Target {
            info: deployment.info_for(&deployment.any_node())?,
            backoff: self.shared.backoff,
            health: self.shared.health.clone(),
        };
        crate::node::subscribe(&target, channel, limit).await
    }
}

impl Connection {
    fn deployment(&self) -> &Deployment {
        &self.shared().deployment
    }

    /// One command to `node`, its reply decoded, errors as errors; not redirected.
    pub(crate) async fn query_on(&self, node: &str, cmd: &redis::Cmd) -> RedisResult<Value> {
        let answer = self
            .raw(node, cmd.get_packed_command(), 1, None, None)
            .await?;
        Replies::new(&answer.bytes).value()?.extract_error()
    }
}

/// What the seeds say: a cluster's slot map, or `None` for one server. Tries every seed in
/// turn, so a client starts while some nodes are down.
async fn discover(conn: &Connection) -> std::result::Result<Option<SlotMap>, Failure> {
    let deployment = conn.deployment();
    let mut last = None;
    for seed in 0..deployment.seed_count() {
        let node = deployment.seed(seed);
        let info = match conn
            .query_on(&node, redis::cmd("INFO").arg("cluster"))
            .await
        {
            Ok(info) => info,
            Err(e) => {
                last = Some(e);
                continue;
            }
        };
        let info: String = redis::from_redis_value(info).map_err(RedisError::from)?;
        if !info.contains("cluster_enabled:1") {
            if deployment.seed_count() > 1 {
                return Err(Failure::Fatal(Error::Redis {
                    operation: "open cluster",
                    source: RedisError::from((
                        redis::ErrorKind::Client,
                        "several URLs name a cluster, but the server is not one",
                    )),
                }));
            }
            return Ok(None);
        }
        match slot_map(conn, &node).await {
            Ok(map) => return Ok(Some(map)),
            Err(e) => last = Some(e),
        }
    }
    Err(Failure::Redis(last.unwrap_or_else(|| {
        RedisError::from((redis::ErrorKind::Client, "no seed to ask"))
    })))
}

/// `CLUSTER SLOTS` of `node`.
async fn slot_map(conn: &Connection, node: &str) -> RedisResult<SlotMap> {
    let reply = conn
        .query_on(node, redis::cmd("CLUSTER").arg("SLOTS"))
        .await?;
    SlotMap::from_cluster_slots(&reply).ok_or_else(|| {
        RedisError::from((
            redis::ErrorKind::Parse,
            "CLUSTER SLOTS answered no slot map",
        ))
    })
}

/// Reads the slot map again when a failure may have moved slots, from the first node that
/// answers.
async fn refresh_if_stale(conn: &Connection) -> RedisResult<()> {
    let deployment = conn.deployment();
    if !deployment.take_stale() {
        return Ok(());
    }
    let mut last = None;
    for node in deployment.known_nodes() {
        match slot_map(conn, &node).await {
            Ok(map) => {
                deployment.refreshed(&map);
                return Ok(());
            }
            Err(e) => last = Some(e),
        }
    }
    deployment.mark_stale();
    Err(last.unwrap_or_else(|| RedisError::from((redis::ErrorKind::Client, "no node to ask"))))
}
