//! A shared filter to and from memory: snapshots of every layer of every key, and merges of
//! snapshots back in.

use url_dedup_bloom::hash::ItemHasher;
use url_dedup_segmented::{
    GrowingFilter, GrowthPlan, LayerParts, MemoryStore, Placement, bit_order,
};

use super::SharedFilter;
use crate::error::{Error, Result};
use crate::segment_store::header::KeyHeader;

impl<H: ItemHasher> SharedFilter<H> {
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
}
