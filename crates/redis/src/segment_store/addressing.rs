//! Where a store's segments are (data keys, offsets, layers), and what else the rest of the
//! crate reads of a store.

use url_dedup_bloom::hash::HashKey;
use url_dedup_segmented::Probe;

use super::RedisSegmentStore;
use super::batch::StampGuard;
use super::header::KeyStates;
use super::meta::{LayerShape, MetaGrowth};
use crate::error::{Error, Result};
use crate::link::Link;

impl RedisSegmentStore {
    /// The generation as the 8 bytes a data key starts with (what the scripts compare).
    pub(crate) fn generation_bytes(&self) -> [u8; 8] {
        self.meta.generation.to_be_bytes()
    }

    /// The filter's hash key (every process sharing the filter hashes with it).
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("store key example") else { return Ok(()) };
    /// use url_dedup_bloom::{HashKey, SipHash13};
    /// use url_dedup_redis::{RedisSegmentStore, StoreOptions};
    ///
    /// let layout = RedisSegmentStore::layout_for(1_000, 0.01)?;
    /// let key = HashKey::from_bytes([4; 16]);
    /// let store = RedisSegmentStore::create::<SipHash13>(&server.url(), StoreOptions::new("k"), layout, key, 1_000)?;
    /// assert_eq!(store.key(), key);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// ```
    pub fn key(&self) -> HashKey {
        self.meta.key
    }

    /// `MOVED` and `ASK` redirections this store's link has followed: on a Redis Cluster, the
    /// slots that moved under it (0 on a single server).
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("redirections example") else { return Ok(()) };
    /// use url_dedup_bloom::{HashKey, SipHash13};
    /// use url_dedup_redis::{RedisSegmentStore, StoreOptions};
    ///
    /// let layout = RedisSegmentStore::layout_for(1_000, 0.01)?;
    /// let store = RedisSegmentStore::create::<SipHash13>(&server.url(), StoreOptions::new("r"), layout, HashKey::random(), 1_000)?;
    /// assert_eq!(store.redirections(), 0);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// ```
    pub fn redirections(&self) -> u64 {
        self.link.redirections()
    }

    /// The schedule of a growing filter.
    pub(crate) fn growth_plan(&self) -> Option<MetaGrowth> {
        self.meta.growth
    }

    /// Whether the filter adds layers as it fills ([`create_growing`](Self::create_growing)).
    ///
    /// # Examples
    ///
    /// See [`create_growing`](Self::create_growing).
    pub fn is_growing(&self) -> bool {
        self.meta.growth.is_some()
    }

    /// The shape of layer `index` (layer 0 is the filter's [`Layout`]).
    pub(crate) fn layer(&self, index: u32) -> Result<LayerShape> {
        self.layers.layer(index, &self.meta)
    }

    /// What this client remembers of each data key.
    pub(crate) fn keys(&self) -> &KeyStates {
        &self.keys
    }

    /// The link the store's calls go through: its [`stats`](Link::stats) say what they met.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("store link example") else { return Ok(()) };
    /// use url_dedup_bloom::{HashKey, SipHash13};
    /// use url_dedup_redis::{RedisSegmentStore, StoreOptions};
    ///
    /// let layout = RedisSegmentStore::layout_for(1_000, 0.01)?;
    /// let store = RedisSegmentStore::create::<SipHash13>(&server.url(), StoreOptions::new("l"), layout, HashKey::random(), 1_000)?;
    /// assert_eq!(store.link().stats().outage, None);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// ```
    pub fn link(&self) -> &Link {
        &self.link
    }

    /// A key and number that a script writing through this store sets (`SET key number`)
    /// and checks first, so that its retry knows whether the lost attempt ran: a batch
    /// counter key and its next number on a single Redis; on a cluster, where a script
    /// touches only keys of one slot, a fresh token key in the slot of `data_key`.
    /// The key is the call's until the returned guard is dropped.
    pub(crate) fn script_stamp(&self, data_key: &str) -> (String, u64, Option<StampGuard<'_>>) {
        if self.link.is_cluster() {
            let token = format!("{data_key}:t:{:016x}", crate::namespace::random_u64());
            (token, 1, None)
        } else {
            let mut held = self.stamps.take();
            let stamp = held.get();
            let (key, number) = (stamp.key.clone(), stamp.next());
            (key, number, Some(held))
        }
    }

    /// The name of data key `index` (named once, when the store is opened: a batch names a
    /// key per command).
    pub(crate) fn data_key(&self, index: u64) -> &str {
        self.key_names
            .get(index as usize)
            .map_or("", String::as_str)
    }

    /// Number of Redis strings holding segments (of each layer, for a growing filter).
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("data_keys example") else { return Ok(()) };
    /// use url_dedup_bloom::SipHash13;
    /// use url_dedup_redis::{SharedFilter, StoreOptions};
    ///
    /// let seen: SharedFilter<SipHash13> =
    ///     SharedFilter::open(&server.url(), StoreOptions::new("seen"), 10_000, 0.01)?;
    /// assert_eq!(seen.store().data_keys(), 1); // 12 KiB fit in one string
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// ```
    pub fn data_keys(&self) -> u64 {
        self.meta.data_keys()
    }

    /// Segments held by data key `index` (the last one may hold fewer).
    pub(crate) fn key_segments(&self, index: u64) -> u64 {
        self.meta.key_segments(index)
    }

    /// The data key of `segment` and the bit offset where the segment starts in it.
    pub(crate) fn locate(&self, segment: u64) -> (u64, u64) {
        let per_key = self.meta.segments_per_key;
        (
            segment / per_key,
            segment % per_key * self.meta.layout.segment_bits(),
        )
    }

    /// The error for a probe (the [`SegmentStore`] interface, which sees only first-layer
    /// probes) that meets a data key of more than one layer.
    pub(crate) fn grown(&self, key: u64) -> Error {
        Error::Grown {
            key: self.data_key(key).to_owned(),
        }
    }

    pub(crate) fn check_probes(&self, probes: &[Probe]) -> Result<()> {
        let segments = self.meta.layout.segments();
        if probes.iter().any(|p| p.segment >= segments) {
            return Err(Error::Segmented(
                url_dedup_segmented::Error::InvalidParameters("probe segment out of range"),
            ));
        }
        Ok(())
    }

    /// Whether every first-layer bit of `probe` is known set on the server: the item is in the
    /// filter whatever layers its key grew since, since an item whose bits are all set in an
    /// older layer is a duplicate (and present) in a grown key too. `false` without a cache.
    /// Call [`verify_if_due`](Self::verify_if_due) for a batch answered this way, so that a
    /// reset is noticed as on the first layers' path.
    pub(crate) fn known_present(&self, probe: Probe) -> bool {
        self.known
            .all_known(self.meta.layout, std::slice::from_ref(&probe))
    }
}
