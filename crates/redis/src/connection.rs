//! The connection a [`Link`](crate::Link) hands to every call: one multiplexed connection to
//! a single server, or the `redis` crate's cluster connection, which sends each command to
//! the master serving its key's slot and follows `MOVED` and `ASK`.

use redis::aio::{ConnectionLike, ConnectionManager};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};

/// A clone of a [`Link`](crate::Link)'s connection: to one Redis server, or to a Redis
/// Cluster. Commands are sent with the `redis` crate as on any async connection
/// ([`redis::aio::ConnectionLike`]); on a cluster, every key of one command, transaction or
/// script must be in one hash slot (the keys of a [`Namespace`](crate::Namespace) are).
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
pub struct Connection(Inner);

#[derive(Clone)]
enum Inner {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

impl Connection {
    pub(crate) fn single(conn: ConnectionManager) -> Self {
        Self(Inner::Single(conn))
    }

    pub(crate) fn cluster(conn: ClusterConnection) -> Self {
        Self(Inner::Cluster(conn))
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
        matches!(self.0, Inner::Cluster(_))
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
        match &mut self.0 {
            Inner::Single(c) => c.req_packed_command(cmd),
            Inner::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match &mut self.0 {
            Inner::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Inner::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match &self.0 {
            Inner::Single(c) => c.get_db(),
            Inner::Cluster(c) => c.get_db(),
        }
    }
}
