//! The segmented filter's segments in Redis: one string per group of segments, one atomic
//! `BITFIELD` per data key and batch.
//!
//! The store's parts, one idea each: [`options`] (what a user chooses), [`sizing`] (layouts
//! and keys), [`meta`] (the metadata and layers every process agrees on), [`creation`]
//! (making a filter, checking it on new connections), [`header`] (each data key's header and
//! what a client remembers of it), [`known_bits`] (the cache of bits seen set),
//! [`packing`] (a batch as `BITFIELD` commands), [`batch`] and [`cluster_batch`] (sending it),
//! [`optimistic`] (document 003's `WATCH` mode) and [`transfer`] (snapshots and merges).

use std::future::Future;

use url_dedup_bloom::hash::{HashKey, ItemHasher};
use url_dedup_bloom::sizing::Growth;
use url_dedup_segmented::{Layout, SegmentedBloomFilter};

use crate::connection::Connection;
use crate::error::{Error, Result};
use crate::link::{Failure, Link};

mod addressing;
mod batch;
mod cluster_batch;
mod creation;
pub(crate) mod header;
mod interface;
pub(crate) mod known_bits;
pub(crate) mod meta;
mod optimistic;
mod options;
mod packing;
mod sizing;
mod transfer;

use batch::Stamps;
use header::KeyStates;
use known_bits::Known;
pub use known_bits::KnownBitsStats;
pub(crate) use meta::{LayerShape, LayerSizing};
use meta::{Layers, Meta, MetaGrowth, new_generation};
pub use options::{Acknowledge, StoreOptions, Uncertain, WriteMode};
use sizing::default_segments_per_key;
pub use sizing::{REDIS_SIZE_FOR_SPEED, SHARED_SIZE_FOR_SPEED};

/// The [`SegmentStore`](url_dedup_segmented::SegmentStore) of a segmented filter shared through
/// Redis by many processes.
///
/// * **One Redis string per segment** (`<prefix>:<n>`, or `<prefix>:{n}` with
///   [`cluster_tags`](StoreOptions::cluster_tags)), created at full size when the filter is
///   created, so memory is exactly the filter's bits plus a small per-key overhead.
/// * **Exactly-once across processes without locks.** An item's bits all live in one segment,
///   and one `BITFIELD key SET u1 o1 1 ... SET u1 ok 1` returns their old values while setting
///   them, atomically. Of all clients inserting a new URL at once, exactly one sees a zero.
/// * **Batches**: the items of a batch are grouped by segment, one `BITFIELD` per segment
///   (items in batch order inside it), all packed into one pipeline: one round trip carries
///   the whole batch.
/// * **Metadata** (`<prefix>:meta`): layout, hash algorithm and key. Opening with other
///   parameters is [`Error::Mismatch`], never silent corruption; [`join`](Self::join) reads
///   them, so a second machine needs only the URL and prefix.
/// * **Snapshots**: [`to_memory`](Self::to_memory) and [`merge_from_memory`](Self::merge_from_memory)
///   move segments to and from the in-memory filter with `GETRANGE`/`SETRANGE`, whose
///   snapshot format then writes or reads files.
/// * **Failures**: calls go through the store's [`Link`](crate::Link), which reconnects and
///   retries under the [`Backoff`](crate::Backoff) policy (the give-up budget shared with every link of the
///   process on the same Redis); the metadata is checked again on every new connection (a
///   Redis that restarted empty gets it back); a batch whose reply was lost is handled per
///   [`Uncertain`].
/// * **Known bits**: in [`WriteMode::Bitfield`] the store remembers the bits it has seen set
///   (they are never cleared) and leaves them out of its commands; an item whose bits are all
///   known is answered without Redis. Same answers, same exactly-once guarantee, emptied on
///   every reconnect; see [`StoreOptions::known_bits_limit`] and
///   [`known_bits_stats`](Self::known_bits_stats).
///
/// The trait is synchronous; call it from `tokio::task::spawn_blocking` in async code.
/// Threads sharing a store pipeline their batches over one connection per node.
///
/// # Examples
///
/// ```
/// # use url_dedup_redis::testing::RedisServer;
/// # let Some(server) = RedisServer::start_or_skip("RedisSegmentStore example") else { return Ok(()) };
/// use url_dedup_bloom::{HashKey, SipHash13};
/// use url_dedup_redis::{RedisSegmentStore, StoreOptions};
///
/// let layout = RedisSegmentStore::layout_for(1_000_000, 0.01)?;
/// let hasher = SipHash13::new(HashKey::from_bytes(*b"shared crawl key"));
/// let seen = RedisSegmentStore::create_filter(&server.url(), StoreOptions::new("seen"), layout, hasher, 1_000_000)?;
/// assert_eq!(seen.try_check_and_insert_batch(&["https://a.example/", "https://b.example/", "https://a.example/"])?, [true, true, false]);
///
/// // Another process joins with only the URL and the prefix.
/// let other = RedisSegmentStore::join::<SipHash13>(&server.url(), StoreOptions::new("seen"))?;
/// assert!(!other.try_check_and_insert("https://b.example/")?);
/// # Ok::<(), url_dedup_redis::Error>(())
/// ```
pub struct RedisSegmentStore {
    link: Link,
    options: StoreOptions,
    meta: Meta,
    meta_key: String,
    /// The data keys' names.
    key_names: Box<[String]>,
    /// Bits seen set, in [`WriteMode::Bitfield`] when the filter fits the limit.
    known: Known,
    /// What this client remembers of each data key.
    keys: KeyStates,
    /// The layers' shapes computed so far.
    layers: Layers,
    /// Batch counter keys, one per writing batch in flight.
    stamps: Stamps,
    /// Whether this handle created the filter (its generation is the one it proposed).
    created: bool,
}

impl std::fmt::Debug for RedisSegmentStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisSegmentStore")
            .field("options", &self.options)
            .field("layout", &self.meta.layout)
            .finish_non_exhaustive()
    }
}

impl RedisSegmentStore {
    /// Creates the filter's metadata and segments, or opens them if they exist with the same
    /// parameters.
    ///
    /// # Errors
    ///
    /// [`Error::Mismatch`] when the prefix holds a filter with other parameters or another
    /// key; [`Error::Unavailable`] when Redis stays unreachable.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("create example") else { return Ok(()) };
    /// use url_dedup_bloom::{HashKey, ItemHasher, SipHash13};
    /// use url_dedup_redis::{Error, RedisSegmentStore, StoreOptions};
    ///
    /// let layout = RedisSegmentStore::layout_for(10_000, 0.01)?;
    /// let key = HashKey::from_bytes([1; 16]);
    /// RedisSegmentStore::create::<SipHash13>(&server.url(), StoreOptions::new("f"), layout, key, 10_000)?;
    /// let other_key = HashKey::from_bytes([2; 16]);
    /// let err = RedisSegmentStore::create::<SipHash13>(&server.url(), StoreOptions::new("f"), layout, other_key, 10_000).unwrap_err();
    /// assert!(matches!(err, Error::Mismatch { field: "key", .. }));
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// ```
    pub fn create<H: ItemHasher>(
        url: &str,
        options: StoreOptions,
        layout: Layout,
        key: HashKey,
        expected_items: u64,
    ) -> Result<Self> {
        let link = Link::open(url, options.backoff)?;
        let segments_per_key = options
            .segments_per_key
            .unwrap_or_else(|| default_segments_per_key(layout, link.is_cluster()))
            .clamp(1, layout.segments());
        let wanted = Meta {
            layout,
            segments_per_key,
            algorithm: H::ALGORITHM,
            key,
            expected_items,
            generation: new_generation(),
            key_in_redis: options.key.is_none(),
            growth: None,
            key_tags: options.cluster_tags,
        };
        Self::create_with(link, options, wanted)
    }

    /// Creates (or opens) the filter `wanted` describes.
    fn create_with(link: Link, options: StoreOptions, wanted: Meta) -> Result<Self> {
        let key = wanted.key;
        if options.key.is_some_and(|k| k != key) {
            return Err(Error::Mismatch {
                field: "key",
                stored: "<the key in the options>".into(),
                expected: "<another key>".into(),
            });
        }
        Self::check_deployment(&link, &options)?;
        let mut options = options;
        // On a cluster every data key gets a slot of its own.
        options.cluster_tags |= link.is_cluster();
        let mut wanted = wanted;
        wanted.key_tags = options.cluster_tags;
        let meta_key = options.meta_key();
        let (options_ref, meta_key_ref, wanted_ref) = (&options, &meta_key, &wanted);
        let stored = link.run_blocking("create filter", |conn| async move {
            Ok(creation::create_or_read(conn, options_ref, meta_key_ref, wanted_ref).await?)
        })?;
        let stored = Meta::parse(&meta_key, &stored, Some(key))?;
        wanted.check_against(&stored)?;
        // Generations are random: the stored one is ours only if this call wrote it.
        let created = stored.generation == wanted.generation;
        let store = Self::unopened(link, options, stored, created);
        store.open()?;
        Ok(store)
    }

    /// Creates (or opens) a **growing** filter, whose data keys add layers as they fill:
    /// layer `i` holds `first_capacity × factor^i` items at `target_fpr × (1 − tightening) ×
    /// tightening^i` (see [`Growth`]), so no lookup's false-positive rate passes
    /// `target_fpr` however many items arrive. Each data key grows on its own, when its part
    /// of its newest layer is full; every layer of an item lies in the same key, so one key's
    /// commands decide it atomically. Open it through [`SharedFilter`](crate::SharedFilter),
    /// which hashes items itself to find their bits in every layer.
    ///
    /// # Errors
    ///
    /// As for [`create`](Self::create); [`Error::Segmented`] for an invalid growth schedule.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("create_growing example") else { return Ok(()) };
    /// use url_dedup_bloom::{HashKey, SipHash13, sizing::Growth};
    /// use url_dedup_redis::{RedisSegmentStore, StoreOptions};
    ///
    /// let key = HashKey::from_bytes([1; 16]);
    /// let store = RedisSegmentStore::create_growing::<SipHash13>(
    ///     &server.url(), StoreOptions::new("g"), 1_000, 0.01, Growth::default(), key)?;
    /// assert!(store.is_growing());
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// ```
    pub fn create_growing<H: ItemHasher>(
        url: &str,
        options: StoreOptions,
        first_capacity: u64,
        target_fpr: f64,
        growth: Growth,
        key: HashKey,
    ) -> Result<Self> {
        growth.validate().map_err(|e| Error::Segmented(e.into()))?;
        let (capacity, fpr) = growth.layer(first_capacity, target_fpr, 0);
        let sizing = LayerSizing::PerKey;
        let sized_for = |keys: u64| {
            let items = sizing.sized_items(capacity, keys);
            Self::layout_allowing(items, fpr, options.hashes, sizing.allowance())
        };
        let link = Link::open(url, options.backoff)?;
        // A key's part is sized for its share and the spread of items over keys, which
        // depend on the number of keys: add keys until the parts fit the keys' size.
        let (mut keys, mut sized) = (1, sized_for(1)?);
        for _ in 0..16 {
            let per_key = options
                .segments_per_key
                .unwrap_or_else(|| default_segments_per_key(sized, link.is_cluster()))
                .clamp(1, sized.segments());
            let needed = sized.segments().div_ceil(per_key);
            if needed <= keys {
                break;
            }
            keys = needed;
            sized = sized_for(keys)?;
        }
        // Every layer has the same number of segments in each key, so an item's segment in
        // any layer is in the key of its segment in the first (see `LayerShape`).
        let keys = keys.min(sized.segments());
        let per_key = sized.segments().div_ceil(keys);
        let layout = Layout::new(keys * per_key, sized.segment_bits(), sized.hashes())?;
        let wanted = Meta {
            layout,
            segments_per_key: per_key,
            algorithm: H::ALGORITHM,
            key,
            expected_items: first_capacity,
            generation: new_generation(),
            key_in_redis: options.key.is_none(),
            key_tags: options.cluster_tags,
            growth: Some(MetaGrowth {
                first_capacity,
                target_fpr,
                growth,
                hashes: options.hashes,
                sizing,
            }),
        };
        Self::create_with(link, options, wanted)
    }

    /// [`create`](Self::create), wrapped in a filter that hashes with `hasher`.
    ///
    /// # Errors
    ///
    /// As for [`create`](Self::create).
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("create_filter example") else { return Ok(()) };
    /// use url_dedup_bloom::{ItemHasher, SipHash13};
    /// use url_dedup_redis::{RedisSegmentStore, StoreOptions};
    ///
    /// let layout = RedisSegmentStore::layout_for(10_000, 0.01)?;
    /// let f = RedisSegmentStore::create_filter(&server.url(), StoreOptions::new("f"), layout, SipHash13::random(), 10_000)?;
    /// assert!(f.try_check_and_insert("https://example.com/")?);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// ```
    pub fn create_filter<H: ItemHasher>(
        url: &str,
        options: StoreOptions,
        layout: Layout,
        hasher: H,
        expected_items: u64,
    ) -> Result<SegmentedBloomFilter<H, Self>> {
        let store = Self::create::<H>(url, options, layout, hasher.key(), expected_items)?;
        Ok(SegmentedBloomFilter::with_store(
            store,
            hasher,
            expected_items,
        ))
    }

    /// Opens an existing filter from its metadata alone: layout, algorithm and key.
    ///
    /// # Errors
    ///
    /// [`Error::NoFilter`] when the prefix holds no filter; [`Error::Mismatch`] when it was
    /// made with another hash algorithm than `H`; [`Error::Corrupt`] for unreadable metadata.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("join example") else { return };
    /// use url_dedup_bloom::SipHash13;
    /// use url_dedup_redis::{Error, RedisSegmentStore, StoreOptions};
    ///
    /// let err = RedisSegmentStore::join::<SipHash13>(&server.url(), StoreOptions::new("none")).unwrap_err();
    /// assert!(matches!(err, Error::NoFilter { .. }));
    /// ```
    pub fn join<H: ItemHasher>(
        url: &str,
        options: StoreOptions,
    ) -> Result<SegmentedBloomFilter<H, Self>> {
        let link = Link::open(url, options.backoff)?;
        Self::check_deployment(&link, &options)?;
        let meta_key = options.meta_key();
        let read = redis::cmd("HGETALL").arg(&meta_key).clone();
        let fields: Vec<(String, String)> =
            link.run_blocking("read filter metadata", |mut conn| {
                let read = &read;
                async move { Ok(read.query_async(&mut conn).await?) }
            })?;
        if fields.is_empty() {
            return Err(Error::NoFilter { key: meta_key });
        }
        let meta = Meta::parse(&meta_key, &fields, options.key)?;
        if let Some(wanted) = options.segments_per_key
            && wanted != meta.segments_per_key
        {
            return Err(Error::Mismatch {
                field: "segments_per_key",
                stored: meta.segments_per_key.to_string(),
                expected: wanted.to_string(),
            });
        }
        if meta.algorithm != H::ALGORITHM {
            return Err(Error::Mismatch {
                field: "algorithm",
                stored: meta.algorithm.0.to_string(),
                expected: H::ALGORITHM.0.to_string(),
            });
        }
        let expected = meta.expected_items;
        let hasher = H::from_key(meta.key);
        let mut options = options;
        options.cluster_tags = meta.key_tags;
        let store = Self::unopened(link, options, meta, false);
        store.open()?;
        Ok(SegmentedBloomFilter::with_store(store, hasher, expected))
    }

    /// Refuses what a cluster cannot do: document 003's optimistic mode `WATCH`es many keys
    /// at once, which a cluster allows only within one slot.
    fn check_deployment(link: &Link, options: &StoreOptions) -> Result<()> {
        if link.is_cluster() && options.mode == WriteMode::Optimistic {
            return Err(Error::Mismatch {
                field: "mode",
                stored: "a Redis Cluster".into(),
                expected: "WriteMode::Optimistic, which needs one server".into(),
            });
        }
        Ok(())
    }

    /// A store over `meta`, not yet checked against Redis; `created` when this handle wrote
    /// the metadata.
    fn unopened(link: Link, options: StoreOptions, meta: Meta, created: bool) -> Self {
        let bits = meta.layout.bits();
        let known = Known::new(
            bits,
            options.mode == WriteMode::Bitfield && bits.div_ceil(8) <= options.known_bits_limit,
        );
        let keys = meta.data_keys();
        let key_names = (0..keys).map(|i| options.data_key(i, keys)).collect();
        Self {
            layers: Layers::new(&meta),
            keys: KeyStates::new(keys as usize),
            key_names,
            stamps: Stamps::new(&options.prefix),
            meta_key: options.meta_key(),
            link,
            options,
            meta,
            known,
            created,
        }
    }

    /// Checks the metadata on the connection that serves it, as on every new connection.
    fn open(&self) -> Result<()> {
        self.with_key("open filter", &self.meta_key, |_| async { Ok(()) })
    }

    /// Runs `attempt` under the link's retry policy, on the node serving `key` (redirections
    /// followed), after [`ready`](Self::ready) checked a connection it had not met.
    pub(crate) fn with_key<T, F, Fut>(
        &self,
        operation: &'static str,
        key: &str,
        mut attempt: F,
    ) -> Result<T>
    where
        F: FnMut(Connection) -> Fut,
        Fut: Future<Output = std::result::Result<T, Failure>>,
    {
        self.link.run_blocking(operation, |conn| {
            let node = conn.node_of(key.as_bytes());
            let attempt = attempt(conn.clone());
            async move {
                self.ready(&conn, &node).await?;
                attempt.await
            }
        })
    }

    /// Whether this handle created the filter in Redis, rather than finding it there: of
    /// processes opening the same prefix at once, exactly one gets `true`. A caller that
    /// expected to find earlier data (a second run of a job) and gets `true` is looking at a
    /// Redis that lost it: a restart without persistence, a `FLUSHALL`, another server.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("created example") else { return Ok(()) };
    /// use url_dedup_bloom::{SipHash13, ItemHasher};
    /// use url_dedup_redis::{RedisSegmentStore, StoreOptions};
    ///
    /// let layout = RedisSegmentStore::layout_for(1_000, 0.01)?;
    /// let key = SipHash13::random().key();
    /// let first = RedisSegmentStore::create::<SipHash13>(&server.url(), StoreOptions::new("c"), layout, key, 1_000)?;
    /// let second = RedisSegmentStore::create::<SipHash13>(&server.url(), StoreOptions::new("c"), layout, key, 1_000)?;
    /// let joined = RedisSegmentStore::join::<SipHash13>(&server.url(), StoreOptions::new("c"))?;
    /// assert!(first.created());
    /// assert!(!second.created() && !joined.store().created());
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// ```
    pub fn created(&self) -> bool {
        self.created
    }

    /// The filter's generation: random, chosen when it was created, the same for every
    /// process that shares it (see [`Error::StoreReset`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("generation example") else { return Ok(()) };
    /// use url_dedup_bloom::{SipHash13, ItemHasher};
    /// use url_dedup_redis::{RedisSegmentStore, StoreOptions};
    ///
    /// let layout = RedisSegmentStore::layout_for(1_000, 0.01)?;
    /// let a = RedisSegmentStore::create_filter(&server.url(), StoreOptions::new("g"), layout, SipHash13::random(), 1_000)?;
    /// let b = RedisSegmentStore::join::<SipHash13>(&server.url(), StoreOptions::new("g"))?;
    /// assert_eq!(a.store().generation(), b.store().generation());
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// ```
    pub fn generation(&self) -> i64 {
        self.meta.generation
    }

    /// The options the store was opened with.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("options example") else { return Ok(()) };
    /// use url_dedup_bloom::{ItemHasher, SipHash13};
    /// use url_dedup_redis::{RedisSegmentStore, StoreOptions};
    /// let layout = RedisSegmentStore::layout_for(1_000, 0.01)?;
    /// let f = RedisSegmentStore::create_filter(&server.url(), StoreOptions::new("o"), layout, SipHash13::random(), 1_000)?;
    /// assert_eq!(f.store().options().prefix, "o");
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// ```
    pub fn options(&self) -> &StoreOptions {
        &self.options
    }

    /// Bit operations sent to Redis and left out thanks to the cache of known-set bits (see
    /// [`StoreOptions::known_bits_limit`]), counted over the store's successful batches.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("known_bits_stats example") else { return Ok(()) };
    /// use url_dedup_bloom::{ItemHasher, SipHash13};
    /// use url_dedup_redis::{RedisSegmentStore, StoreOptions};
    ///
    /// let layout = RedisSegmentStore::layout_for(1_000, 0.01)?;
    /// let f = RedisSegmentStore::create_filter(&server.url(), StoreOptions::new("k"), layout, SipHash13::random(), 1_000)?;
    /// assert!(f.try_check_and_insert("https://example.com/")?);
    /// let before = f.store().known_bits_stats();
    /// assert!(before.bytes > 0);
    ///
    /// // Every bit of this URL is known set: the answer comes without asking Redis.
    /// assert!(!f.try_check_and_insert("https://example.com/")?);
    /// let after = f.store().known_bits_stats();
    /// assert_eq!(after.sent, before.sent);
    /// assert_eq!(after.skipped, before.skipped + u64::from(layout.hashes()));
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// ```
    pub fn known_bits_stats(&self) -> KnownBitsStats {
        self.known.stats()
    }
}
