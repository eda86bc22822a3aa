//! Frame numbers unique in the whole system: blocks from an `INCR` counter on the network's
//! center, with the network's index in the low bits.

use std::ops::Range;

use tokio::sync::Mutex;
use url_dedup_redis::GlobalIds;

use crate::error::Result;
use crate::stats::Counters;

/// Bits of a frame number that hold the network's index.
pub(crate) const NETWORK_BITS: u32 = 10;

/// Issues frame numbers unique across every network of the system.
///
/// Each center's Redis holds one counter ([`GlobalIds`], an `INCRBY`); a host reserves
/// `block` values per round trip and numbers frames `(id << 10) | network`. Two networks
/// never share a number because the low bits differ; one network never repeats a number
/// because `INCRBY` never returns the same range twice (a retried call may skip a block,
/// never repeat one). Numbers stay below 2^53 for ids below 2^43, so JSON readers that
/// parse numbers as doubles read them exactly.
///
/// # Examples
///
/// ```
/// # use url_dedup_redis::testing::RedisServer;
/// # let Some(server) = RedisServer::start_or_skip("FrameNumber example") else { return };
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use url_dedup_redis::{GlobalIds, Link, Namespace};
/// use url_dedup_two_tier::FrameNumber;
///
/// let ids = GlobalIds::new(Link::connect(&server.url()).await?, Namespace::new("c")?);
/// let numbers = FrameNumber::new(ids, 3, 16);
/// let a = numbers.next().await?;
/// let b = numbers.next().await?;
/// assert_eq!((a & 1023, b & 1023), (3, 3));
/// assert_eq!(b >> 10, (a >> 10) + 1);
/// # Ok::<(), url_dedup_two_tier::Error>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct FrameNumber {
    ids: GlobalIds,
    network: u64,
    block: u64,
    reserved: Mutex<Range<u64>>,
    counters: Option<std::sync::Arc<Counters>>,
}

impl FrameNumber {
    /// Numbers for network `network` (its index in the topology), reserving `block` ids per
    /// round trip to the center.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("FrameNumber::new example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{GlobalIds, Link, Namespace};
    /// use url_dedup_two_tier::FrameNumber;
    ///
    /// let ids = GlobalIds::new(Link::connect(&server.url()).await?, Namespace::new("c")?);
    /// assert_eq!(FrameNumber::new(ids, 0, 1).next().await?, 1 << 10);
    /// # Ok::<(), url_dedup_two_tier::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn new(ids: GlobalIds, network: usize, block: u64) -> Self {
        Self {
            ids,
            network: network as u64 & ((1 << NETWORK_BITS) - 1),
            block: block.max(1),
            reserved: Mutex::new(0..0),
            counters: None,
        }
    }

    pub(crate) fn with_counters(mut self, counters: std::sync::Arc<Counters>) -> Self {
        self.counters = Some(counters);
        self
    }

    /// The next number.
    ///
    /// # Errors
    ///
    /// [`Error::Redis`](crate::Error::Redis) when the center's Redis stays unreachable.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("FrameNumber::next example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{GlobalIds, Link, Namespace};
    /// use url_dedup_two_tier::FrameNumber;
    ///
    /// let link = Link::connect(&server.url()).await?;
    /// let a = FrameNumber::new(GlobalIds::new(link.clone(), Namespace::new("c")?), 1, 4);
    /// let b = FrameNumber::new(GlobalIds::new(link, Namespace::new("c")?), 1, 4);
    /// assert_ne!(a.next().await?, b.next().await?);
    /// # Ok::<(), url_dedup_two_tier::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn next(&self) -> Result<u64> {
        let mut reserved = self.reserved.lock().await;
        if reserved.is_empty() {
            *reserved = self.ids.reserve(self.block).await?;
            if let Some(c) = &self.counters {
                c.round_trip();
            }
        }
        let id = reserved.start;
        reserved.start += 1;
        Ok((id << NETWORK_BITS) | self.network)
    }
}
