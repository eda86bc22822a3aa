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
use url_dedup_segmented::{
    GrowingFilter, GrowthPlan, LayerParts, MemoryStore, Placement, Probe, bit_order,
};

use crate::error::{Error, Result};
use crate::segment_store::header::{HEADER_BITS, HEADER_OPS, KeyHeader, header_reads};
use crate::segment_store::{LayerShape, RedisSegmentStore, StoreOptions, Uncertain};

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
        let part = (first.share * self.store.data_keys() / 8).clamp(64, 4096) as usize;
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

    /// Copies every layer of every data key into an in-memory [`GrowingFilter`] (whose
    /// `write_to` writes the workspace's checksummed snapshot). Keys are read one after
    /// another, not at one instant: URLs admitted during the copy may or may not be in it.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`], [`Error::StoreReset`], [`Error::Segmented`] when memory runs out.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("to_growing example") else { return Ok(()) };
    /// use url_dedup_redis::{SharedFilter, StoreOptions};
    ///
    /// let shared: SharedFilter = SharedFilter::open(&server.url(), StoreOptions::new("b"), 100, 0.01)?;
    /// let urls: Vec<String> = (0..1_000).map(|i| format!("https://example.com/{i}")).collect();
    /// shared.try_check_and_insert_batch(&urls)?;
    /// let copy = shared.to_growing()?;
    /// assert!(copy.layers() > 1);
    /// assert!(urls.iter().all(|u| copy.contains(u)));
    ///
    /// // And back, into another prefix with the same key.
    /// let options = StoreOptions { key: Some(shared.key()), ..StoreOptions::new("c") };
    /// let other: SharedFilter = SharedFilter::open(&server.url(), options, 100, 0.01)?;
    /// other.merge_from(&copy)?;
    /// assert_eq!(other.try_contains_batch(&urls)?, vec![true; 1_000]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_growing(&self) -> Result<GrowingFilter<H>> {
        let keys = self.store.data_keys();
        let headers: Vec<KeyHeader> = (0..keys)
            .map(|key| self.store.check_key(key))
            .collect::<Result<_>>()?;
        let layers = headers.iter().map(|h| h.layers).max().unwrap_or(1);
        let mut parts = Vec::with_capacity(layers as usize);
        for j in 0..layers {
            let shape = self.store.layer(j)?;
            let memory = MemoryStore::new(shape.layout)?;
            let bytes = shape.per_key * shape.layout.segment_bytes();
            let per_segment = shape.layout.segment_words() as usize;
            let mut admitted = 0;
            for header in headers.iter().filter(|h| h.layers > j) {
                let data = self.store.read_region(header.key, shape.start / 8, bytes)?;
                let mut words = vec![0u64; per_segment * shape.per_key as usize];
                bit_order::bytes_to_words(&data, &mut words)?;
                let first = header.key * shape.per_key;
                for (segment, part) in (first..).zip(words.chunks(per_segment)) {
                    if part.iter().any(|&w| w != 0) {
                        memory.merge_segment(segment, part)?;
                    }
                }
                // Older layers of a key are full; its newest counts what it admitted.
                admitted += if header.layers == j + 1 {
                    header.admitted
                } else {
                    shape.share
                };
            }
            let (capacity, fpr) = self.growth_layer(j);
            parts.push(LayerParts {
                store: memory,
                capacity,
                fpr,
                admitted,
            });
        }
        Ok(GrowingFilter::from_parts(
            self.hasher.clone(),
            self.plan()?,
            parts,
        )?)
    }

    /// ORs every layer of `filter` into this filter, growing keys as needed (a union: nothing
    /// already admitted is forgotten). Use it to seed a shared filter from a snapshot file
    /// written by [`to_growing`](Self::to_growing) of a filter with the same parameters.
    ///
    /// # Errors
    ///
    /// [`Error::Mismatch`] when `filter` has another key or its layers other geometry;
    /// [`Error::Unavailable`], [`Error::StoreReset`].
    ///
    /// # Examples
    ///
    /// See [`to_growing`](Self::to_growing).
    pub fn merge_from(&self, filter: &GrowingFilter<H>) -> Result<()> {
        if filter.key() != self.key() {
            return Err(Error::Mismatch {
                field: "key",
                stored: "<this filter's key>".into(),
                expected: "<the snapshot's key>".into(),
            });
        }
        for (j, (memory, _, _)) in filter.layer_stores().into_iter().enumerate() {
            let j = j as u32;
            let shape = self.store.layer(j)?;
            if memory.layout() != shape.layout {
                return Err(Error::Mismatch {
                    field: "layout",
                    stored: format!("{:?}", shape.layout),
                    expected: format!("{:?}", memory.layout()),
                });
            }
            let mut words = Vec::new();
            for key in 0..self.store.data_keys() {
                words.clear();
                let first = key * shape.per_key;
                for segment in first..first + shape.per_key {
                    memory.read_segment(segment, &mut words)?;
                }
                if words.iter().all(|&w| w == 0) {
                    continue;
                }
                while self.store.check_key(key)?.layers <= j {
                    let layers = self.store.keys().layers_of(key);
                    self.grow(key, layers)?;
                }
                self.store.merge_region(
                    key,
                    shape.start / 8,
                    &bit_order::words_to_bytes(&words),
                )?;
            }
        }
        Ok(())
    }

    /// Capacity and rate of layer `index` on this filter's schedule.
    fn growth_layer(&self, index: u32) -> (u64, f64) {
        let plan = self.store.growth_plan();
        plan.map_or((0, 0.0), |g| {
            g.growth.layer(g.first_capacity, g.target_fpr, index)
        })
    }

    /// The in-memory plan equivalent to this filter's schedule.
    fn plan(&self) -> Result<GrowthPlan> {
        let g = self.store.growth_plan().ok_or(Error::Mismatch {
            field: "growth",
            stored: "a filter of fixed size".into(),
            expected: "a growing filter".into(),
        })?;
        Ok(GrowthPlan {
            first_capacity: g.first_capacity,
            target_fpr: g.target_fpr,
            growth: g.growth,
            segment_bits: self.store.layer(0)?.layout.segment_bits(),
            placement: Placement::Scattered,
        })
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

    fn check_and_insert_digests(&self, digests: &[Digest]) -> Result<Vec<bool>> {
        let first = self.store.layer(0)?;
        let probes: Vec<Probe> = digests.iter().map(|&d| first.layout.probe(d)).collect();
        let mut new = vec![false; digests.len()];
        let mut todo: Vec<usize> = (0..digests.len()).collect();
        // Items a write to a key's first layer completed after the key grew: new unless a
        // newer layer holds them (see the module documentation).
        let mut claims: Vec<usize> = Vec::new();
        let mut to_grow: BTreeMap<u64, u32> = BTreeMap::new();
        // Per first-layer key of this batch: admissions its header counted, and ours.
        let mut fill: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
        let assume_new = self.store.options().uncertain == Uncertain::AssumeNew;
        for _ in 0..MAX_ROUNDS {
            if todo.is_empty() && claims.is_empty() {
                break;
            }
            let mut unsettled = Vec::new();
            for (key, members) in group_by_key(&claims, |i| self.key_of(probes[i])) {
                let layers = self.store.keys().layers_of(key);
                match self.read_layers(key, &members, digests, 1..layers)? {
                    Some(present) => {
                        for (&i, p) in members.iter().zip(present) {
                            new[i] = !p;
                        }
                    }
                    None => unsettled.extend(members),
                }
            }
            claims = unsettled;
            let (single, grown): (Vec<usize>, Vec<usize>) = todo
                .iter()
                .partition(|&&i| self.store.keys().layers_of(self.key_of(probes[i])) == 1);
            todo = Vec::new();
            // An item of a grown key whose first-layer bits are all known set is a duplicate
            // (the script would find it in that layer): no round trip, as for a first layer.
            let (known, grown) = self.split_known(grown, &probes)?;
            known.iter().for_each(|&i| new[i] = false);

            if !single.is_empty() {
                let sub: Vec<Probe> = single.iter().map(|&i| probes[i]).collect();
                let mut answers = vec![false; sub.len()];
                let report = self.store.bitfield_batch(true, &sub, &mut answers)?;
                let doubt = report.uncertain(sub.len());
                let mut stale = vec![false; sub.len()];
                for (header, members) in &report.commands {
                    if header.layers > 1 {
                        // The key grew before this command: its write went to the first
                        // layer only. An item it completed there is a claim, settled by a
                        // read of the newer layers; the others were there already.
                        members.iter().for_each(|&m| stale[m] = true);
                        claims.extend(members.iter().filter(|&&m| answers[m]).map(|&m| single[m]));
                        continue;
                    }
                    // A key's items may span several commands: count them together.
                    let admitted = members.iter().filter(|&&m| answers[m]).count() as u64;
                    let seen = fill.entry(header.key).or_insert((0, 0));
                    seen.0 = seen.0.max(header.admitted);
                    seen.1 += admitted;
                }
                for (&key, &(counted, admitted)) in &fill {
                    self.store.keys().add_pending(key, admitted);
                    if counted + admitted >= trigger(first.share) {
                        to_grow.insert(key, 1);
                    }
                }
                fill.clear();
                for (m, &i) in single.iter().enumerate() {
                    if !stale[m] {
                        new[i] = answers[m] || (doubt[m] && assume_new);
                    }
                }
            }

            for (key, members) in group_by_key(&grown, |i| self.key_of(probes[i])) {
                let layers = self.store.keys().layers_of(key);
                match self.admit_grown(key, layers, &members, digests)? {
                    Admitted::Verdicts { answers, admitted } => {
                        for (&i, a) in members.iter().zip(answers) {
                            new[i] = a;
                        }
                        if admitted >= trigger(self.store.layer(layers - 1)?.share) {
                            to_grow.insert(key, layers);
                        }
                    }
                    Admitted::Replan => todo.extend(members),
                    Admitted::RanBefore => {
                        for &i in &members {
                            new[i] = assume_new;
                        }
                    }
                }
            }
        }
        if !todo.is_empty() || !claims.is_empty() {
            return Err(Error::Contended {
                attempts: MAX_ROUNDS as u32,
            });
        }
        for (key, layers) in to_grow {
            self.grow(key, layers)?;
        }
        Ok(new)
    }

    /// Where item `digest`'s bits are in layer `shape` of its data key: bit offsets in the key.
    fn offsets(shape: &LayerShape, digest: Digest) -> impl Iterator<Item = u64> {
        let probe = shape.layout.probe(digest);
        let base = shape.start + probe.segment % shape.per_key * shape.layout.segment_bits();
        shape.layout.offsets(probe).map(move |o| base + o)
    }

    /// Reads the bits of `members` in the given layers of data key `key`: whether each is
    /// present in one of them, or `None` when the key's layer count is not what the caller
    /// planned for (it knows the new count now).
    fn read_layers(
        &self,
        key: u64,
        members: &[usize],
        digests: &[Digest],
        layers: std::ops::Range<u32>,
    ) -> Result<Option<Vec<bool>>> {
        let planned = self.store.keys().layers_of(key);
        let shapes: Vec<LayerShape> = layers
            .clone()
            .map(|j| self.store.layer(j))
            .collect::<Result<_>>()?;
        let data_key = self.store.data_key(key);
        let expect = self.store.keys().expect(key);
        let mut cmd = redis::cmd("BITFIELD_RO");
        cmd.arg(&data_key);
        header_reads(&mut cmd, expect);
        for &i in members {
            for shape in &shapes {
                for offset in Self::offsets(shape, digests[i]) {
                    cmd.arg("GET").arg("u1").arg(offset);
                }
            }
        }
        let values: Vec<i64> = self.store.with_key("read layers", &data_key, |mut conn| {
            let cmd = &cmd;
            async move { Ok(cmd.query_async(&mut conn).await?) }
        })?;
        let (header, bits) = values.split_at(HEADER_OPS.min(values.len()));
        let met = self
            .store
            .check_headers(std::iter::once((key, expect)), header)?;
        if met.first().map(|h| h.layers) != Some(planned) {
            return Ok(None);
        }
        let mut bits = bits.iter();
        let present = members
            .iter()
            .map(|_| {
                shapes.iter().fold(false, |found, shape| {
                    let all = (0..shape.layout.hashes())
                        .fold(true, |all, _| all & (bits.next().copied() == Some(1)));
                    found | all
                })
            })
            .collect();
        Ok(Some(present))
    }

    /// Admits `members` into data key `key`, believed to have `layers` layers, with the
    /// script.
    fn admit_grown(
        &self,
        key: u64,
        layers: u32,
        members: &[usize],
        digests: &[Digest],
    ) -> Result<Admitted> {
        let shapes: Vec<LayerShape> = (0..layers)
            .map(|j| self.store.layer(j))
            .collect::<Result<_>>()?;
        let data_key = self.store.data_key(key);
        let generation = self.store.generation_bytes();
        let expect = self.store.keys().expect(key);
        // Chosen once and kept by the call's retries, which ask whether an attempt ran.
        let (stamp_key, number, _held) = self.store.script_stamp(&data_key);
        let mut call = scripts().admit.prepare_invoke();
        call.key(&data_key)
            .key(&stamp_key)
            .arg(&generation[..])
            .arg(layers)
            .arg(members.len())
            .arg(self.store.options().token_ttl_ms())
            .arg(expect.witness.checked_sub(1).map_or(0, |w| HEADER_BITS + w))
            .arg(number);
        for shape in &shapes {
            call.arg(shape.layout.hashes());
        }
        for &i in members {
            for shape in &shapes {
                for offset in Self::offsets(shape, digests[i]) {
                    call.arg(offset);
                }
            }
        }
        let reply: Vec<i64> = self
            .store
            .with_key("admit into a grown key", &data_key, |mut conn| {
                let call = &call;
                async move { Ok(call.invoke_async(&mut conn).await?) }
            })
            .map_err(|e| self.reset_or(e))?;
        match reply.as_slice() {
            [-2] => Ok(Admitted::RanBefore),
            [-1, now] => {
                self.note(key, *now);
                Ok(Admitted::Replan)
            }
            [l, writes, admitted, witnessed, verdicts @ ..] if verdicts.len() == members.len() => {
                let header = [
                    i64::from_be_bytes(generation),
                    *writes,
                    *l,
                    *admitted,
                    *witnessed,
                ];
                self.store
                    .check_headers(std::iter::once((key, expect)), &header)?;
                // A retried call whose first attempt ran found its number in the stamp key and
                // said so above.
                Ok(Admitted::Verdicts {
                    answers: verdicts.iter().map(|&v| v == 1).collect(),
                    admitted: u64::try_from(*admitted).unwrap_or(0),
                })
            }
            other => Err(Error::Corrupt {
                key: data_key,
                detail: format!("the admission script answered {other:?}"),
            }),
        }
    }

    /// Adds layer `layers` (0-based: the `layers + 1`-th) to data key `key` if it still has
    /// `layers` layers.
    fn grow(&self, key: u64, layers: u32) -> Result<()> {
        let shape = self.store.layer(layers)?;
        let bytes = (shape.start + shape.per_key * shape.layout.segment_bits()) / 8;
        let data_key = self.store.data_key(key);
        let generation = self.store.generation_bytes();
        let mut call = scripts().grow.prepare_invoke();
        call.key(&data_key)
            .arg(&generation[..])
            .arg(layers)
            .arg(bytes);
        let now: i64 = self
            .store
            .with_key("grow a key", &data_key, |mut conn| {
                let call = &call;
                async move { Ok(call.invoke_async(&mut conn).await?) }
            })
            .map_err(|e| self.reset_or(e))?;
        self.note(key, now);
        Ok(())
    }

    fn note(&self, key: u64, layers: i64) {
        if let Ok(layers) = u32::try_from(layers) {
            self.store.keys().note_layers(key, layers);
        }
    }

    /// A script's `STORERESET` error reply as [`Error::StoreReset`].
    fn reset_or(&self, e: Error) -> Error {
        match e {
            Error::Redis { source, .. } if source.code() == Some("STORERESET") => self.store.reset(
                source
                    .detail()
                    .unwrap_or("a data key is of another generation"),
            ),
            e => e,
        }
    }
}

/// What the admission script did with a batch.
enum Admitted {
    /// One verdict per item, and the newest layer's admissions after them.
    Verdicts { answers: Vec<bool>, admitted: u64 },
    /// The key's layer count changed: plan again.
    Replan,
    /// A previous attempt of this call ran and its reply was lost: its answers are unknown.
    RanBefore,
}

/// The count at which a key's layer grows: 7/8 of its share, so that the parts of a batch
/// (an eighth of a share at most) and the admissions other clients have yet to report do
/// not carry it past its capacity.
fn trigger(share: u64) -> u64 {
    share - share / 8
}

/// `items` grouped by their data key, each group in the order given.
fn group_by_key(items: &[usize], key: impl Fn(usize) -> u64) -> BTreeMap<u64, Vec<usize>> {
    let mut groups: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for &i in items {
        groups.entry(key(i)).or_default().push(i);
    }
    groups
}

struct Scripts {
    admit: redis::Script,
    grow: redis::Script,
}

fn scripts() -> &'static Scripts {
    static SCRIPTS: std::sync::OnceLock<Scripts> = std::sync::OnceLock::new();
    SCRIPTS.get_or_init(|| Scripts {
        admit: redis::Script::new(include_str!("lua/grown_admit.lua")),
        grow: redis::Script::new(include_str!("lua/grow.lua")),
    })
}

impl<H: ItemHasher> std::fmt::Debug for SharedFilter<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedFilter")
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

// The header layout the scripts assume.
const _: () = assert!(HEADER_BITS == 256);
