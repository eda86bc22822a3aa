//! Where and how a shared filter keeps its segments: [`StoreOptions`] and its parts.

use std::time::Duration;

use url_dedup_bloom::hash::HashKey;

use crate::retry::Backoff;

/// Default [`StoreOptions::known_bits_limit`]: a 10-million-URL filter at 1% (24 MiB) fits
/// with room to spare.
const DEFAULT_KNOWN_BITS_LIMIT: u64 = 64 << 20;

/// How a batch sets its bits.
///
/// # Examples
///
/// ```
/// use url_dedup_redis::WriteMode;
///
/// assert_eq!(WriteMode::default(), WriteMode::Bitfield);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WriteMode {
    /// One `BITFIELD key SET u1 o 1 ...` per segment of the batch, all pipelined in one round
    /// trip. Each command tests and sets atomically, so concurrent clients need no lock.
    #[default]
    Bitfield,
    /// Document 003's optimistic locking: `WATCH` the batch's segment keys, read the bits,
    /// then `MULTI`/`BITFIELD SET`/`EXEC`, and start over if another client changed a watched
    /// segment meanwhile. Two round trips per batch, more under contention; kept to compare.
    Optimistic,
}

/// What a batch whose reply was lost reports for its items.
///
/// When the connection breaks after a batch was sent, Redis may or may not have set its bits.
/// The retry then sees "all bits set" both for items that were there before and for items our
/// own lost attempt set, and cannot tell them apart.
///
/// # Examples
///
/// ```
/// use url_dedup_redis::Uncertain;
///
/// assert_eq!(Uncertain::default(), Uncertain::AssumeNew);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Uncertain {
    /// Report every item of the retried batch as new: at-least-once. No URL is ever lost; a
    /// failure may get up to one batch crawled twice.
    #[default]
    AssumeNew,
    /// Report what the retry saw: at-most-once. Items the lost attempt inserted are reported
    /// as duplicates and never crawled.
    TrustRedis,
}

/// Where and how a [`RedisSegmentStore`](crate::RedisSegmentStore) keeps its segments.
///
/// # Examples
///
/// ```
/// use url_dedup_redis::StoreOptions;
///
/// let opts = StoreOptions::new("crawl:seen");
/// assert_eq!(opts.data_key(7, 100), "crawl:seen:7");
/// let tagged = StoreOptions { cluster_tags: true, ..StoreOptions::new("crawl:seen") };
/// assert_eq!(tagged.data_key(7, 16_384), "crawl:seen:{41432}"); // in slot 7
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreOptions {
    /// Key prefix: data key `n` is `<prefix>:<n>`, the metadata `<prefix>:meta`.
    pub prefix: String,
    /// Put each data key in a hash slot of its own (`<prefix>:{tag}`, see
    /// [`cluster::slot_tag`](crate::cluster::slot_tag)): data key `i` of `n` in slot
    /// `i × 16384 / n`, so a filter of 16,384 keys has the segments of virtual node `v` in
    /// slot `v`, and a cluster spreads the keys over its masters while each key's helper keys
    /// share its slot. Always on for a filter created on a cluster; recorded in the metadata.
    pub cluster_tags: bool,
    /// Segments stored side by side in one Redis string; `None` packs as many as fit in just
    /// under 1 MiB (see [`RedisSegmentStore`](crate::RedisSegmentStore) for why). Recorded in the metadata.
    pub segments_per_key: Option<u64>,
    /// How batches set bits.
    pub mode: WriteMode,
    /// What a batch retried after a lost reply reports.
    pub uncertain: Uncertain,
    /// Reconnection and retry policy of the link the store opens.
    pub backoff: Backoff,
    /// No longer used: threads sharing a store send their batches over one shared
    /// connection per node, which pipelines them.
    #[deprecated(note = "batches share one multiplexed connection per node; this has no effect")]
    pub connections: usize,
    /// The filter's hash key, kept out of Redis. `None` (the default) writes the key into the
    /// metadata, so a process joins with only the URL and the prefix; `Some` writes only a
    /// check value (a keyed hash of a constant, which tells nothing of the key) and every
    /// process must bring the key itself, from an environment variable or a key file, say.
    /// The key is what keeps crafted URLs from aiming at the filter's bits: treat it as a
    /// secret, and keep Redis private either way.
    pub key: Option<HashKey>,
    /// Largest filter, in bytes of bits, for which the store keeps a client-side copy of the
    /// bits it has seen set (default 64 MiB; 0 disables it).
    ///
    /// Bits of the shared filter are only ever set, so a bit this client saw as 1 (answered 1,
    /// or set by one of its own commands) is still 1. [`WriteMode::Bitfield`] batches leave
    /// such bits out of their commands and answer an item whose bits are all known without
    /// asking Redis; the answers are the same as with every bit sent, and admission stays
    /// exactly-once across clients (see [`docs/redis.md`](https://github.com/url-dedup/url-dedup/blob/main/docs/redis.md)).
    ///
    /// * **Memory**: as much as the filter itself, about 2.5 bytes per expected URL at 1%, in
    ///   every process that opens it (24 MiB for 10 million URLs), allocated when the store
    ///   is opened. A filter larger than the limit, or an allocation that fails, runs without.
    /// * **Cleared** whenever the store's connection to a node is opened again, which happens
    ///   after every failure: a Redis that restarted may have lost bits.
    /// * **Assumes** nobody deletes or clears the filter's keys while clients are connected;
    ///   a process that does so must have every client reopen the store.
    ///
    /// [`WriteMode::Optimistic`] keeps no cache.
    pub known_bits_limit: u64,
    /// Wait after every writing batch until this many replicas of each master it wrote to
    /// have its writes (`WAIT`, sent right after the batch on its connection, in the same
    /// round trip). A batch whose writes are not acknowledged in time is tried again like a
    /// batch whose reply was lost (its answers per [`Uncertain`]), until the backoff's budget
    /// is spent ([`Error::Unavailable`](crate::Error::Unavailable)). Redis replicates
    /// asynchronously: without this, a master that dies may take the last admissions with
    /// it, and its promoted replica admits those URLs again (the write counts in the keys'
    /// headers notice it when a client saw them, see
    /// [`Error::StoreReset`](crate::Error::StoreReset)). Costs the replicas' acknowledgement
    /// per batch and master.
    pub acknowledge: Option<Acknowledge>,
    /// For a growing filter created by this store: this many bits per item and layer (see
    /// [`RedisSegmentStore::layout_for_hashes`](crate::RedisSegmentStore::layout_for_hashes)).
    /// Redis's work per URL is proportional to it, and the filter's memory grows as it falls.
    /// `None`: the choice of [`RedisSegmentStore::layout_for`](crate::RedisSegmentStore::layout_for)
    /// (2 at 1%). Recorded in the metadata.
    pub hashes: Option<u32>,
}

/// How many replicas must hold a batch's writes before it is answered (see
/// [`StoreOptions::acknowledge`]).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use url_dedup_redis::{Acknowledge, StoreOptions};
///
/// let safe = StoreOptions {
///     acknowledge: Some(Acknowledge { replicas: 1, timeout: Duration::from_secs(1) }),
///     ..StoreOptions::new("seen")
/// };
/// assert_eq!(safe.acknowledge.unwrap().replicas, 1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Acknowledge {
    /// Replicas that must acknowledge.
    pub replicas: u32,
    /// How long to wait for them.
    pub timeout: Duration,
}

impl StoreOptions {
    /// Defaults for `prefix`: plain keys, [`WriteMode::Bitfield`], [`Uncertain::AssumeNew`],
    /// the default [`Backoff`], a cache of known bits for filters up to 64 MiB.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_redis::{StoreOptions, WriteMode};
    ///
    /// let opts = StoreOptions::new("seen");
    /// assert_eq!(opts.mode, WriteMode::Bitfield);
    /// assert_eq!(opts.known_bits_limit, 64 << 20);
    /// ```
    #[allow(deprecated)] // sets every field, the deprecated one included
    pub fn new(prefix: impl Into<String>) -> Self {
        Self {
            prefix: prefix.into(),
            cluster_tags: false,
            segments_per_key: None,
            mode: WriteMode::default(),
            uncertain: Uncertain::default(),
            backoff: Backoff::default(),
            connections: 1,
            key: None,
            known_bits_limit: DEFAULT_KNOWN_BITS_LIMIT,
            acknowledge: None,
            hashes: None,
        }
    }

    /// The name of data key number `index` of `keys` (holding segments
    /// `index * segments_per_key ..`).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_redis::{StoreOptions, cluster::key_slot};
    ///
    /// assert_eq!(StoreOptions::new("p").data_key(0, 10), "p:0");
    /// let tagged = StoreOptions { cluster_tags: true, ..StoreOptions::new("p") };
    /// assert_eq!(key_slot(tagged.data_key(5, 10).as_bytes()), 8_192);
    /// ```
    pub fn data_key(&self, index: u64, keys: u64) -> String {
        if self.cluster_tags {
            let slot = index * u64::from(crate::cluster::SLOTS) / keys.max(1);
            let tag = crate::cluster::slot_tag(slot as u16);
            format!("{}:{{{tag}}}", self.prefix)
        } else {
            format!("{}:{index}", self.prefix)
        }
    }

    /// How long a connection's batch counter key, or a script call's token key, lives after its
    /// last batch (see [`Uncertain`]): as long as a retry of the batch may come, the backoff's
    /// budget, and half a minute more.
    pub(crate) fn token_ttl_ms(&self) -> u64 {
        (self.backoff.give_up_after + Duration::from_secs(30)).as_millis() as u64
    }

    /// The key of the metadata hash.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_redis::StoreOptions;
    ///
    /// assert_eq!(StoreOptions::new("p").meta_key(), "p:meta");
    /// ```
    pub fn meta_key(&self) -> String {
        format!("{}:meta", self.prefix)
    }
}
