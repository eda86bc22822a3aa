//! A growing segmented filter shared through Redis: the filter a crawl or a URL list uses when
//! it cannot know its size, with exactly-once admission across processes.
//!
//! # Growth, key by key
//!
//! The filter's segments are spread over data keys as in [`RedisSegmentStore`]. A growing
//! filter gives every layer the same number of segments in each key, so an item's segment in
//! any layer lies in the key of its segment in the first: all the bits that decide an item are
//! in one key, and one command on that key decides it atomically. Keys grow on their own,
//! when their part of their newest layer has admitted its share of the layer's capacity (the
//! admissions are counted in the key's header); the layer count is in the header too, read by
//! every command.
//!
//! * **A key with one layer** (every key until the filter passes its first estimate) is
//!   decided by the store's `BITFIELD` batches, as a fixed filter is: one command per key and
//!   batch, the known-bits cache, the same Redis cost.
//! * **A key with more layers** is decided by a script (`lua/grown_admit.lua`): an item found
//!   in an older layer is a duplicate and writes nothing; the others are tested and set in the
//!   newest layer. Only the script can make the write depend on the reads, which exactly-once
//!   needs once there are two layers; it costs Redis about twice a `BITFIELD` per item.
//! * **A client that did not know a key had grown** sent a `BITFIELD` for the first layer
//!   only, and the header in the same reply says so. Its write may have made an item present
//!   in the first layer; if its write set the item's last missing bit there, the item is new
//!   unless a newer layer holds it (a script that admitted it there first), which one read of
//!   the newer layers decides: a script that comes after the write finds the item in the
//!   first layer and writes nothing, so that read cannot be fooled. Otherwise it is a
//!   duplicate. Either way the answer is exact.

use std::collections::BTreeMap;

use url_dedup_bloom::hash::{Digest, HashKey, ItemHasher, SipHash13};
use url_dedup_bloom::sizing::Growth;
use url_dedup_segmented::Probe;

use crate::error::{Error, Result};
use crate::segment_store::header::HEADER_BITS;
use crate::segment_store::{RedisSegmentStore, StoreOptions};

mod admission;
mod snapshot;

/// The rate the shared filter's users get by default (`url-dedup --redis`, the crawler's
/// shared crawl, Python's `RedisDupeFilter`): one new URL in 100,000 taken for a seen one. At
/// this rate the filter sets 3 bits per URL (see [`SHARED_SIZE_FOR_SPEED`]), which costs Redis
/// less CPU and memory per URL than `SADD` of the URL.
///
/// [`SHARED_SIZE_FOR_SPEED`]: crate::SHARED_SIZE_FOR_SPEED
///
/// # Examples
///
/// ```
/// assert_eq!(url_dedup_redis::DEFAULT_SHARED_FPR, 1e-5);
/// ```
pub const DEFAULT_SHARED_FPR: f64 = 1e-5;

/// Rounds of re-planning a batch whose keys keep growing under it: growth adds one layer per
/// key at a time, and a layer takes many batches to fill, so two rounds are the norm.
const MAX_ROUNDS: usize = 16;

/// A growing segmented Bloom filter in Redis, shared by every process that opens the same
/// prefix: each URL is admitted by exactly one of them, and no lookup's false-positive rate
/// passes the target however many URLs arrive.
///
/// # Examples
///
/// ```
/// # use url_dedup_redis::testing::RedisServer;
/// # let Some(server) = RedisServer::start_or_skip("SharedFilter example") else { return Ok(()) };
/// use url_dedup_redis::{SharedFilter, StoreOptions};
///
/// // Sized for 1,000 URLs, given 20,000: the keys grow, nothing is lost.
/// let seen: SharedFilter = SharedFilter::open(&server.url(), StoreOptions::new("seen"), 1_000, 0.001)?;
/// let urls: Vec<String> = (0..20_000).map(|i| format!("https://example.com/{i}")).collect();
/// let new = seen.try_check_and_insert_batch(&urls)?;
/// assert!(new.iter().filter(|&&n| n).count() > 19_950);
///
/// // Another process joins with only the URL and the prefix, and sees what was admitted.
/// let other: SharedFilter = SharedFilter::open(&server.url(), StoreOptions::new("seen"), 1_000, 0.001)?;
/// assert_eq!(other.try_check_and_insert_batch(&urls[..3])?, [false, false, false]);
/// assert!(seen.layers()? > 1);
/// # Ok::<(), url_dedup_redis::Error>(())
/// ```
pub struct SharedFilter<H = SipHash13> {
    store: RedisSegmentStore,
    hasher: H,
}

impl<H: ItemHasher> SharedFilter<H> {
    /// Opens the growing filter under `options.prefix`, creating it if there is none: a
    /// first layer of `first_capacity` items, rate at most `target_fpr`, the default
    /// [`Growth`]. Of processes opening the same prefix at once, one creates and the others
    /// join what it made. The hash key is [`StoreOptions::key`] when given (kept out of
    /// Redis), else a random one, shared through the metadata.
    ///
    /// # Errors
    ///
    /// [`Error::Mismatch`] when the prefix holds a filter that is not growing or has another
    /// key; [`Error::KeyRequired`]; [`Error::Unavailable`] when Redis stays unreachable.
    ///
    /// # Examples
    ///
    /// See [`SharedFilter`].
    pub fn open(
        url: &str,
        options: StoreOptions,
        first_capacity: u64,
        target_fpr: f64,
    ) -> Result<Self> {
        match Self::join(url, options.clone()) {
            Ok(filter) => return Ok(filter),
            Err(Error::NoFilter { .. }) => {}
            Err(e) => return Err(e),
        }
        let key = options.key.unwrap_or_else(HashKey::random);
        let store = match RedisSegmentStore::create_growing::<H>(
            url,
            options.clone(),
            first_capacity,
            target_fpr,
            Growth::default(),
            key,
        ) {
            // Another process created it first with other parameters or its own key: join it.
            Err(Error::Mismatch { .. }) if options.key.is_none() => {
                return Self::join(url, options);
            }
            other => other?,
        };
        Self::on(store)
    }

    /// Opens an existing filter from its metadata alone.
    ///
    /// # Errors
    ///
    /// [`Error::NoFilter`] when the prefix holds no filter; as [`open`](Self::open) otherwise.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("SharedFilter::join example") else { return };
    /// use url_dedup_redis::{Error, SharedFilter, StoreOptions};
    ///
    /// let err = SharedFilter::<url_dedup_bloom::SipHash13>::join(&server.url(), StoreOptions::new("none"));
    /// assert!(matches!(err, Err(Error::NoFilter { .. })));
    /// ```
    pub fn join(url: &str, options: StoreOptions) -> Result<Self> {
        let filter = RedisSegmentStore::join::<H>(url, options)?;
        Self::on(filter.into_store())
    }

    /// A filter over an opened store (which must hash with `H`).
    fn on(store: RedisSegmentStore) -> Result<Self> {
        if !store.is_growing() {
            return Err(Error::Mismatch {
                field: "growth",
                stored: "a filter of fixed size".into(),
                expected: "a growing filter".into(),
            });
        }
        let hasher = H::from_key(store.key());
        Ok(Self { store, hasher })
    }

    /// The store underneath: its options, generation, statistics, segment transfers.
    ///
    /// # Examples
    ///
    /// See [`SharedFilter`].
    pub fn store(&self) -> &RedisSegmentStore {
        &self.store
    }

    /// The hash key.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("SharedFilter::key example") else { return Ok(()) };
    /// use url_dedup_bloom::HashKey;
    /// use url_dedup_redis::{SharedFilter, StoreOptions};
    ///
    /// let key = HashKey::from_bytes([3; 16]);
    /// let options = StoreOptions { key: Some(key), ..StoreOptions::new("k") };
    /// let f = SharedFilter::<url_dedup_bloom::SipHash13>::open(&server.url(), options, 100, 0.01)?;
    /// assert_eq!(f.key(), key);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// ```
    pub fn key(&self) -> HashKey {
        self.hasher.key()
    }

    /// Checks and inserts one item; `Ok(true)` if it was new.
    ///
    /// # Errors
    ///
    /// As [`try_check_and_insert_batch`](Self::try_check_and_insert_batch).
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("SharedFilter one example") else { return Ok(()) };
    /// use url_dedup_redis::{SharedFilter, StoreOptions};
    ///
    /// let f = SharedFilter::<url_dedup_bloom::SipHash13>::open(&server.url(), StoreOptions::new("o"), 100, 0.01)?;
    /// assert!(f.try_check_and_insert("https://example.com/")?);
    /// assert!(!f.try_check_and_insert("https://example.com/")?);
    /// assert!(f.try_contains("https://example.com/")?);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// ```
    pub fn try_check_and_insert(&self, item: impl AsRef<[u8]>) -> Result<bool> {
        Ok(self.try_check_and_insert_batch(&[item])?[0])
    }

    /// Whether an item may have been inserted.
    ///
    /// # Errors
    ///
    /// As [`try_contains_batch`](Self::try_contains_batch).
    ///
    /// # Examples
    ///
    /// See [`try_check_and_insert`](Self::try_check_and_insert).
    pub fn try_contains(&self, item: impl AsRef<[u8]>) -> Result<bool> {
        Ok(self.try_contains_batch(&[item])?[0])
    }

    /// Checks and inserts a batch: one answer per item, as if inserted one by one in order,
    /// exactly once across every process sharing the filter. Keys of one layer are decided in
    /// one pipelined round trip; keys that grew cost one script call each.
    ///
    /// # Errors
    ///
    /// [`Error::StoreReset`] when Redis lost the filter, [`Error::Unavailable`] when it stays
    /// unreachable; other store errors.
    ///
    /// # Examples
    ///
    /// See [`SharedFilter`].
    pub fn try_check_and_insert_batch<I: AsRef<[u8]>>(&self, items: &[I]) -> Result<Vec<bool>> {
        let digests: Vec<Digest> = items.iter().map(|i| self.hasher.hash(i.as_ref())).collect();
        // Keys grow between round trips: a batch far larger than a key's share of its layer
        // goes in parts, so the layer grows before it is overfilled.
        let first = self.store.layer(0)?;
        let part = match self.store.growth_plan() {
            Some(plan) => plan.sizing.part(&first, self.store.data_keys()),
            None => 4096,
        };
        let mut new = Vec::with_capacity(digests.len());
        for chunk in digests.chunks(part) {
            new.extend(self.check_and_insert_digests(chunk)?);
        }
        Ok(new)
    }

    /// Looks up a batch.
    ///
    /// # Errors
    ///
    /// As [`try_check_and_insert_batch`](Self::try_check_and_insert_batch).
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("SharedFilter contains example") else { return Ok(()) };
    /// use url_dedup_redis::{SharedFilter, StoreOptions};
    ///
    /// let f = SharedFilter::<url_dedup_bloom::SipHash13>::open(&server.url(), StoreOptions::new("c"), 100, 0.01)?;
    /// f.try_check_and_insert("a")?;
    /// assert_eq!(f.try_contains_batch(&["a", "b"])?, [true, false]);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// ```
    pub fn try_contains_batch<I: AsRef<[u8]>>(&self, items: &[I]) -> Result<Vec<bool>> {
        let digests: Vec<Digest> = items.iter().map(|i| self.hasher.hash(i.as_ref())).collect();
        let first = self.store.layer(0)?;
        let probes: Vec<Probe> = digests.iter().map(|&d| first.layout.probe(d)).collect();
        let mut found = vec![false; digests.len()];
        let (single, grown): (Vec<usize>, Vec<usize>) = (0..digests.len())
            .partition(|&i| self.store.keys().layers_of(self.key_of(probes[i])) == 1);
        // Present in a grown key when all its first-layer bits are known set: no round trip.
        let (known, grown) = self.split_known(grown, &probes)?;
        known.iter().for_each(|&i| found[i] = true);
        let mut again = grown;
        if !single.is_empty() {
            let sub: Vec<Probe> = single.iter().map(|&i| probes[i]).collect();
            let mut answers = vec![true; sub.len()];
            let report = self.store.bitfield_batch(false, &sub, &mut answers)?;
            let mut grown_members = vec![false; sub.len()];
            for (header, members) in &report.commands {
                if header.layers > 1 {
                    members.iter().for_each(|&m| grown_members[m] = true);
                }
            }
            for (m, &i) in single.iter().enumerate() {
                if answers[m] {
                    found[i] = true;
                } else if grown_members[m] {
                    again.push(i);
                }
            }
        }
        for _ in 0..MAX_ROUNDS {
            if again.is_empty() {
                return Ok(found);
            }
            let mut next = Vec::new();
            for (key, members) in group_by_key(&again, |i| self.key_of(probes[i])) {
                let layers = self.store.keys().layers_of(key);
                let present = self.read_layers(key, &members, &digests, 0..layers)?;
                match present {
                    Some(present) => {
                        for (&i, p) in members.iter().zip(present) {
                            found[i] = p;
                        }
                    }
                    None => next.extend(members),
                }
            }
            again = next;
        }
        Err(Error::Contended {
            attempts: MAX_ROUNDS as u32,
        })
    }

    /// Items the first layer holds: what the creator sized the filter for.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("first_capacity example") else { return Ok(()) };
    /// use url_dedup_redis::{SharedFilter, StoreOptions};
    ///
    /// let f: SharedFilter = SharedFilter::open(&server.url(), StoreOptions::new("f"), 1_234, 0.01)?;
    /// assert_eq!(f.first_capacity(), 1_234);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// ```
    pub fn first_capacity(&self) -> u64 {
        self.store.growth_plan().map_or(0, |g| g.first_capacity)
    }

    /// The rate no lookup exceeds, however many items arrive: what the creator asked for.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("false_positive_rate example") else { return Ok(()) };
    /// use url_dedup_redis::{DEFAULT_SHARED_FPR, SharedFilter, StoreOptions};
    ///
    /// let f: SharedFilter = SharedFilter::open(&server.url(), StoreOptions::new("r"), 1_000, DEFAULT_SHARED_FPR)?;
    /// assert_eq!((f.false_positive_rate(), f.hashes()?), (1e-5, 3));
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// ```
    pub fn false_positive_rate(&self) -> f64 {
        self.store.growth_plan().map_or(0.0, |g| g.target_fpr)
    }

    /// Bits each item sets in the first layer, one `BITFIELD` operation each for Redis.
    ///
    /// # Errors
    ///
    /// [`Error::Segmented`] for a layer that cannot be sized (never for the first).
    ///
    /// # Examples
    ///
    /// See [`false_positive_rate`](Self::false_positive_rate).
    pub fn hashes(&self) -> Result<u32> {
        Ok(self.store.layer(0)?.layout.hashes())
    }

    /// Bytes of filter bits in Redis, every layer of every key (one header read per key).
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`], [`Error::StoreReset`].
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("bytes example") else { return Ok(()) };
    /// use url_dedup_redis::{SharedFilter, StoreOptions};
    ///
    /// let f: SharedFilter = SharedFilter::open(&server.url(), StoreOptions::new("m"), 100_000, 0.01)?;
    /// assert!(f.bytes()? >= 100_000); // about 2.5 bytes per URL at 1%
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// ```
    pub fn bytes(&self) -> Result<u64> {
        let mut total = 0;
        for key in 0..self.store.data_keys() {
            for j in 0..self.store.check_key(key)?.layers {
                let shape = self.store.layer(j)?;
                total += shape.per_key * shape.layout.segment_bytes();
            }
        }
        Ok(total)
    }

    /// The most layers any data key has: 1 until the filter passes its first layer's
    /// capacity somewhere.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`], [`Error::StoreReset`].
    ///
    /// # Examples
    ///
    /// See [`SharedFilter`].
    pub fn layers(&self) -> Result<u32> {
        let mut most = 1;
        for key in 0..self.store.data_keys() {
            most = most.max(self.store.check_key(key)?.layers);
        }
        Ok(most)
    }

    /// Splits items of grown keys (indexes into `probes`) into those whose first-layer bits
    /// are all known set, present without a round trip, and the rest. When any is answered
    /// from the cache, a data key's header is read if one is due, so that a reset is still
    /// noticed.
    fn split_known(&self, grown: Vec<usize>, probes: &[Probe]) -> Result<(Vec<usize>, Vec<usize>)> {
        let (known, rest): (Vec<usize>, Vec<usize>) = grown
            .into_iter()
            .partition(|&i| self.store.known_present(probes[i]));
        if !known.is_empty() {
            self.store.verify_if_due()?;
        }
        Ok((known, rest))
    }

    /// The data key of a first-layer probe.
    fn key_of(&self, probe: Probe) -> u64 {
        self.store.locate(probe.segment).0
    }
}

impl<H: ItemHasher> std::fmt::Debug for SharedFilter<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedFilter")
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

/// `items` grouped by their data key, each group in the order given.
fn group_by_key(items: &[usize], key: impl Fn(usize) -> u64) -> BTreeMap<u64, Vec<usize>> {
    let mut groups: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for &i in items {
        groups.entry(key(i)).or_default().push(i);
    }
    groups
}

// The header layout the scripts assume.
const _: () = assert!(HEADER_BITS == 256);
