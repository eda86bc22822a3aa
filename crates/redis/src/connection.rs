//! The connection a [`Link`](crate::Link) hands to every call: it sends each command to the
//! node serving its key (the only node of a single server), over that node's shared
//! connection, and follows a cluster's `MOVED` and `ASK`.

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redis::aio::ConnectionLike;
use redis::{Cmd, Pipeline, RedisError, RedisFuture, RedisResult, Value};

use crate::blocking::{Pool, Socket};
use crate::cluster::Redirect;
use crate::deployment::Deployment;
use crate::health::Health;
use crate::node::{Answer, NodeConn, Target, failure, gone};
use crate::retry::{Backoff, is_transient, may_have_moved};
use crate::wire::Replies;

/// Redirections one command may follow (a slot moves at most twice while one command is
/// redirected: `MOVED`, then `ASK` during a migration).
pub(crate) const MAX_REDIRECTS: usize = 16;

/// `ASKING`, packed: sent before a command redirected by `ASK`, in the same write so that no
/// other caller's command comes between them on the shared connection.
const ASKING: &[u8] = b"*1\r\n$6\r\nASKING\r\n";

/// What every handle of one link shares: the deployment, the policy, the outage clock, and
/// one connection per node.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) deployment: Deployment,
    pub(crate) backoff: Backoff,
    pub(crate) health: Arc<Health>,
    nodes: Mutex<HashMap<String, NodeConn>>,
    redirections: std::sync::atomic::AtomicU64,
}

impl Shared {
    pub(crate) fn new(deployment: Deployment, backoff: Backoff, health: Arc<Health>) -> Self {
        Self {
            deployment,
            backoff,
            health,
            nodes: Mutex::new(HashMap::new()),
            redirections: Default::default(),
        }
    }

    /// The connection to `node` (`host:port`), opened on first use.
    pub(crate) fn node(&self, node: &str) -> RedisResult<NodeConn> {
        let mut nodes = self
            .nodes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(conn) = nodes.get(node) {
            return Ok(conn.clone());
        }
        let conn = NodeConn::new(Target {
            info: self.deployment.info_for(node)?,
            backoff: self.backoff,
            health: self.health.clone(),
        })?;
        nodes.insert(node.to_owned(), conn.clone());
        Ok(conn)
    }

    /// Counts a `MOVED` or `ASK` followed.
    pub(crate) fn count_redirection(&self) {
        self.redirections
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// `MOVED` and `ASK` redirections followed.
    pub(crate) fn redirections(&self) -> u64 {
        self.redirections.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Notes a failed request begun at `started`: the outage clock starts, and on a cluster
    /// the slot map is read again before the next attempt when slots may have moved.
    pub(crate) fn note_failure(&self, e: &RedisError, started: Instant) {
        if is_transient(e) {
            self.health.mark_down(started);
        }
        if may_have_moved(e) {
            self.deployment.mark_stale();
        }
    }
}

/// A connection to one Redis server or to a Redis Cluster, as a [`Link`](crate::Link) hands it
/// to each attempt of [`Link::run`](crate::Link::run). Commands are sent with the `redis`
/// crate as on any async connection ([`redis::aio::ConnectionLike`]); each goes to the node
/// serving its key and follows `MOVED` and `ASK`. On a cluster, every key of one command,
/// transaction or script must be in one hash slot (the keys of a
/// [`Namespace`](crate::Namespace) are). A command without a key goes where the previous
/// command of this connection went, so a script loaded after `NOSCRIPT` is loaded where it
/// runs.
///
/// Commands sent outside [`Link::run`](crate::Link::run) are routed and redirected but not
/// retried.
///
/// # Examples
///
/// ```
/// # use url_dedup_redis::testing::RedisServer;
/// # let Some(server) = RedisServer::start_or_skip("Connection example") else { return };
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let link = url_dedup_redis::Link::connect(&server.url()).await?;
/// let mut conn: url_dedup_redis::Connection = link.connection();
/// let n: u64 = redis::cmd("INCR").arg("{c}:hits").query_async(&mut conn).await.unwrap();
/// assert_eq!(n, 1);
/// assert!(!conn.is_cluster());
/// # Ok::<(), url_dedup_redis::Error>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct Connection {
    shared: Arc<Shared>,
    /// How long each request may wait for its replies.
    limit: Duration,
    /// Where the last command with a key went.
    last: Option<String>,
    /// For a blocking caller, the sockets this attempt holds (see [`crate::blocking`]).
    held: Option<Arc<Held>>,
}

/// The sockets a blocking attempt holds, one per node, handed back to their pools when the
/// attempt ends (a socket that failed is dropped instead).
#[derive(Default)]
struct Held {
    sockets: Mutex<Vec<(String, Socket, Arc<Pool>)>>,
}

impl Drop for Held {
    fn drop(&mut self) {
        let sockets = std::mem::take(
            self.sockets
                .get_mut()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        for (_, socket, pool) in sockets {
            pool.give(socket);
        }
    }
}

impl Connection {
    /// A connection for one attempt; `blocking` for a caller that waits on its own thread.
    pub(crate) fn new(shared: Arc<Shared>, limit: Duration, blocking: bool) -> Self {
        Self {
            shared,
            limit,
            last: None,
            held: blocking.then(Default::default),
        }
    }

    /// Runs `f` on this attempt's socket to `node`, taken from the node's pool (connecting)
    /// on first use; drops the socket if `f` fails.
    fn on_socket<T>(
        &self,
        held: &Held,
        node: &str,
        f: impl FnOnce(&mut Socket) -> io::Result<T>,
    ) -> RedisResult<T> {
        let mut sockets = held
            .sockets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let at = match sockets.iter().position(|(n, _, _)| n == node) {
            Some(at) => at,
            None => {
                let pool = self.shared.node(node)?.pool;
                let socket = pool.take(self.limit).map_err(failure)?;
                sockets.push((node.to_owned(), socket, pool));
                sockets.len() - 1
            }
        };
        match f(&mut sockets[at].1) {
            Ok(value) => Ok(value),
            Err(e) => {
                sockets.swap_remove(at);
                Err(failure(e))
            }
        }
    }

    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }

    /// Whether this connection is to a Redis Cluster.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("is_cluster example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let link = url_dedup_redis::Link::connect(&server.url()).await?;
    /// assert!(!link.connection().is_cluster());
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn is_cluster(&self) -> bool {
        self.shared.deployment.is_cluster()
    }

    /// The node serving `key`.
    pub(crate) fn node_of(&self, key: &[u8]) -> String {
        self.shared.deployment.node_of(key)
    }

    /// Connects to `node` if needed; the connection's generation.
    pub(crate) async fn ready(&self, node: &str) -> RedisResult<u64> {
        let started = Instant::now();
        let result = match &self.held {
            Some(held) => self.on_socket(held, node, |socket| Ok(socket.generation)),
            None => async { self.shared.node(node)?.ready(self.limit).await }.await,
        };
        if let Err(e) = &result {
            self.shared.note_failure(e, started);
        }
        result
    }

    /// Sends `bytes` (`replies` commands) to `node` as they are, on the connection of
    /// `generation` if given, and returns the raw replies: the segment store's path, which
    /// decodes them itself and follows its own redirections.
    pub(crate) async fn raw(
        &self,
        node: &str,
        bytes: Vec<u8>,
        replies: usize,
        extra: Option<Duration>,
        generation: Option<u64>,
    ) -> RedisResult<Answer> {
        let started = Instant::now();
        let result = match &self.held {
            Some(held) => self.on_socket(held, node, |socket| {
                if generation.is_some_and(|g| g != socket.generation) {
                    return Err(gone("the connection was replaced"));
                }
                // `None`: a blocking command that may wait for ever.
                let wait = match extra {
                    Some(extra) => self.limit.checked_add(extra),
                    None => Some(self.limit),
                };
                socket.request(&bytes, replies, wait)
            }),
            None => {
                async {
                    self.shared
                        .node(node)?
                        .request(bytes, replies, extra, generation, self.limit)
                        .await
                }
                .await
            }
        };
        if let Err(e) = &result {
            self.shared.note_failure(e, started);
        }
        result
    }

    /// Sends `bytes` (`replies` commands, the last `keep` of whose replies are returned) to
    /// the node of `key`, following redirections. Without `commands`, the request is one
    /// command or one `MULTI`/`EXEC` transaction, redirected as a whole (a transaction with a
    /// redirected command ran none of them); with them (each command packed alone), each
    /// redirected command is sent again alone, so none runs twice.
    async fn send(
        &mut self,
        key: Option<&[u8]>,
        bytes: Vec<u8>,
        replies: usize,
        keep: usize,
        extra: Option<Duration>,
        commands: Option<Vec<Vec<u8>>>,
    ) -> RedisResult<Vec<Value>> {
        let node = match key {
            Some(key) => self.node_of(key),
            None => self
                .last
                .clone()
                .unwrap_or_else(|| self.shared.deployment.any_node()),
        };
        self.last = Some(node.clone());
        let values = self.exchange(&node, false, &bytes, replies, extra).await?;
        let Some(commands) = commands else {
            return match values.iter().find_map(redirect_in) {
                None => Ok(tail(values, keep)),
                Some(redirect) => self.follow(redirect, &bytes, replies, keep, extra).await,
            };
        };
        let mut out = Vec::with_capacity(values.len());
        for (value, command) in values.into_iter().zip(&commands) {
            match redirect_in(&value) {
                None => out.push(value),
                Some(redirect) => {
                    let mut again = self.follow(redirect, command, 1, 1, extra).await?;
                    out.push(again.pop().unwrap_or(Value::Nil));
                }
            }
        }
        Ok(tail(out, keep))
    }

    /// Sends `bytes` where `redirect` points (after `ASKING` for an `ASK`), following further
    /// redirections.
    async fn follow(
        &mut self,
        mut redirect: Redirect,
        bytes: &[u8],
        replies: usize,
        keep: usize,
        extra: Option<Duration>,
    ) -> RedisResult<Vec<Value>> {
        for _ in 0..MAX_REDIRECTS {
            self.shared.count_redirection();
            let asking = matches!(redirect, Redirect::Ask { .. });
            let node = self.shared.deployment.redirected(&redirect);
            self.last = Some(node.clone());
            let values = self.exchange(&node, asking, bytes, replies, extra).await?;
            match values.iter().find_map(redirect_in) {
                None => return Ok(tail(values, keep)),
                Some(next) => redirect = next,
            }
        }
        Err(RedisError::from((
            redis::ErrorKind::Client,
            "too many cluster redirections",
        )))
    }

    /// One request to `node` (after `ASKING` when `asking`), every reply decoded.
    async fn exchange(
        &self,
        node: &str,
        asking: bool,
        bytes: &[u8],
        replies: usize,
        extra: Option<Duration>,
    ) -> RedisResult<Vec<Value>> {
        let mut request = Vec::with_capacity(ASKING.len() + bytes.len());
        if asking {
            request.extend_from_slice(ASKING);
        }
        request.extend_from_slice(bytes);
        let skip = usize::from(asking);
        let answer = self.raw(node, request, replies + skip, extra, None).await?;
        let mut decoder = Replies::new(&answer.bytes);
        decoder.skip(skip)?;
        (0..replies).map(|_| decoder.value()).collect()
    }
}

/// The last `keep` of `values`.
fn tail(mut values: Vec<Value>, keep: usize) -> Vec<Value> {
    values.split_off(values.len().saturating_sub(keep))
}

/// The redirection a reply asks for, if it is `MOVED` or `ASK`.
pub(crate) fn redirect_in(value: &Value) -> Option<Redirect> {
    match value {
        Value::ServerError(e) => Redirect::parse(&format!("{} {}", e.code(), e.details()?)),
        _ => None,
    }
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("cluster", &self.is_cluster())
            .finish_non_exhaustive()
    }
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let key = key_of(cmd);
            let mut values = self
                .send(
                    key.as_deref(),
                    cmd.get_packed_command(),
                    1,
                    1,
                    blocking_time(cmd),
                    None,
                )
                .await?;
            Ok(values.pop().unwrap_or(Value::Nil))
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let key = pipeline.cmd_iter().find_map(key_of);
            let extra = pipeline.cmd_iter().filter_map(blocking_time).max();
            let commands = (!pipeline.is_transaction())
                .then(|| pipeline.cmd_iter().map(Cmd::get_packed_command).collect());
            self.send(
                key.as_deref(),
                pipeline.get_packed_pipeline(),
                offset + count,
                count,
                extra,
                commands,
            )
            .await
        })
    }

    fn get_db(&self) -> i64 {
        self.shared.deployment.first_seed().redis_settings().db()
    }
}

/// A command's arguments, its name first.
fn args(cmd: &Cmd) -> Vec<&[u8]> {
    cmd.args_iter()
        .filter_map(|arg| match arg {
            redis::Arg::Simple(bytes) => Some(bytes),
            _ => None,
        })
        .collect()
}

/// The key a command is routed by: the first key of a script call, the second argument of
/// most commands, none for commands that have no key.
pub(crate) fn key_of(cmd: &Cmd) -> Option<Vec<u8>> {
    let args = args(cmd);
    let name = args.first()?.to_ascii_uppercase();
    match name.as_slice() {
        b"EVAL" | b"EVALSHA" | b"EVAL_RO" | b"EVALSHA_RO" | b"FCALL" | b"FCALL_RO" => {
            let keys: usize = std::str::from_utf8(args.get(2)?).ok()?.parse().ok()?;
            (keys > 0)
                .then(|| args.get(3).map(|k| k.to_vec()))
                .flatten()
        }
        b"PING" | b"INFO" | b"SCRIPT" | b"CLUSTER" | b"WAIT" | b"MULTI" | b"EXEC" | b"DISCARD"
        | b"ECHO" | b"TIME" | b"DBSIZE" | b"FLUSHALL" | b"FLUSHDB" | b"CONFIG" | b"CLIENT"
        | b"COMMAND" | b"SELECT" | b"AUTH" | b"HELLO" | b"PUBLISH" | b"SUBSCRIBE"
        | b"UNSUBSCRIBE" | b"SHUTDOWN" | b"DEBUG" | b"ASKING" | b"READONLY" | b"READWRITE"
        | b"UNWATCH" | b"SLOWLOG" | b"LASTSAVE" | b"BGSAVE" | b"SAVE" | b"ROLE" => None,
        b"MEMORY" | b"OBJECT" | b"BITOP" => args.get(2).map(|k| k.to_vec()),
        b"XREAD" | b"XREADGROUP" => {
            let streams = args
                .iter()
                .position(|a| a.eq_ignore_ascii_case(b"STREAMS"))?;
            args.get(streams + 1).map(|k| k.to_vec())
        }
        _ => args.get(1).map(|k| k.to_vec()),
    }
}

/// How long a blocking command may legitimately wait for its reply beyond the response
/// timeout: its own timeout (`BLPOP ... 5` waits up to 5 s), `None` for other commands. A
/// timeout of 0 (forever) is `Duration::MAX`.
pub(crate) fn blocking_time(cmd: &Cmd) -> Option<Duration> {
    let args = args(cmd);
    let name = args.first()?.to_ascii_uppercase();
    let number = |arg: &[u8]| -> Option<f64> { std::str::from_utf8(arg).ok()?.parse().ok() };
    let seconds = match name.as_slice() {
        b"BLPOP" | b"BRPOP" | b"BRPOPLPUSH" | b"BLMOVE" | b"BZPOPMIN" | b"BZPOPMAX" => {
            number(args.last()?)?
        }
        b"BLMPOP" | b"BZMPOP" => number(args.get(1)?)?,
        b"WAIT" | b"WAITAOF" => number(args.last()?)? / 1000.0,
        b"XREAD" | b"XREADGROUP" => {
            let block = args.iter().position(|a| a.eq_ignore_ascii_case(b"BLOCK"))?;
            number(args.get(block + 1)?)? / 1000.0
        }
        _ => return None,
    };
    Some(if seconds <= 0.0 || !seconds.is_finite() {
        Duration::MAX
    } else {
        Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX)
    })
}
