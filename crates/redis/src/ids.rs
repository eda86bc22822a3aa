//! Globally unique URL ids from one `INCR` counter (ZooKeeper's sequential nodes).

use std::ops::Range;

use crate::error::Result;
use crate::link::Link;
use crate::namespace::Namespace;

/// Unique, increasing 64-bit ids shared by every process of a crawl, from `{ns}:url-ids`.
///
/// Ids start at 1. A call retried after a lost reply may skip ids, never repeat one. For high
/// rates, [`reserve`](Self::reserve) takes a block per round trip.
///
/// # Examples
///
/// ```
/// # use url_dedup_redis::testing::RedisServer;
/// # let Some(server) = RedisServer::start_or_skip("GlobalIds example") else { return };
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use url_dedup_redis::{GlobalIds, Link, Namespace};
///
/// let ids = GlobalIds::new(Link::connect(&server.url()).await?, Namespace::new("c")?);
/// assert_eq!(ids.next().await?, 1);
/// assert_eq!(ids.reserve(100).await?, 2..102);
/// assert_eq!(ids.next().await?, 102);
/// # Ok::<(), url_dedup_redis::Error>(())
/// # }).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct GlobalIds {
    link: Link,
    key: String,
}

impl GlobalIds {
    /// The id counter of namespace `ns`.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("GlobalIds::new example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{GlobalIds, Link, Namespace};
    /// let ids = GlobalIds::new(Link::connect(&server.url()).await?, Namespace::new("c")?);
    /// assert!(ids.next().await? >= 1);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn new(link: Link, ns: Namespace) -> Self {
        Self {
            link,
            key: ns.key("url-ids"),
        }
    }

    /// The next id.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`](crate::Error::Unavailable) when Redis stays unreachable.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("next id example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{GlobalIds, Link, Namespace};
    /// let ids = GlobalIds::new(Link::connect(&server.url()).await?, Namespace::new("c")?);
    /// assert!(ids.next().await? < ids.next().await?);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn next(&self) -> Result<u64> {
        Ok(self.reserve(1).await?.start)
    }

    /// `count` consecutive ids (at least one), as a range.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`](crate::Error::Unavailable) when Redis stays unreachable.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("reserve example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{GlobalIds, Link, Namespace};
    /// let ids = GlobalIds::new(Link::connect(&server.url()).await?, Namespace::new("c")?);
    /// assert_eq!(ids.reserve(10).await?.count(), 10);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn reserve(&self, count: u64) -> Result<Range<u64>> {
        let count = count.max(1);
        let last: u64 = self
            .link
            .run("reserve ids", |mut conn| {
                let key = self.key.clone();
                async move {
                    redis::cmd("INCRBY")
                        .arg(key)
                        .arg(count)
                        .query_async(&mut conn)
                        .await
                }
            })
            .await?;
        Ok(last + 1 - count..last + 1)
    }
}
