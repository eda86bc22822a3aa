//! `Serialize`/`Deserialize` for the in-memory filter (feature `serde`).
//!
//! The filter serializes as its layout, hash algorithm and key, expected items, and its words
//! (in the [`bit_order`](crate::bit_order) convention). Deserializing checks what a snapshot
//! read checks — the layout's ranges, the algorithm, the word count — so a payload from an
//! untrusted source cannot build an inconsistent filter. Dirty tracking is not serialized: a
//! deserialized filter starts clean.

use serde::{Deserialize, Deserializer, Serialize, Serializer, de::Error as _};
use std::sync::atomic::Ordering::Relaxed;
use url_dedup_bloom::hash::{HashAlgorithm, HashKey, ItemHasher};

use crate::{Layout, MemoryStore, SegmentedBloomFilter};

#[derive(Serialize)]
struct ReprRef {
    layout: Layout,
    algorithm: HashAlgorithm,
    key: HashKey,
    expected_items: u64,
    words: Vec<u64>,
}

#[derive(Deserialize)]
struct Repr {
    layout: Layout,
    algorithm: HashAlgorithm,
    key: HashKey,
    expected_items: u64,
    words: Vec<u64>,
}

impl<H: ItemHasher> Serialize for SegmentedBloomFilter<H, MemoryStore> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        ReprRef {
            layout: self.layout,
            algorithm: H::ALGORITHM,
            key: self.key(),
            expected_items: self.expected_items,
            words: self.store.words().iter().map(|w| w.load(Relaxed)).collect(),
        }
        .serialize(serializer)
    }
}

impl<'de, H: ItemHasher> Deserialize<'de> for SegmentedBloomFilter<H, MemoryStore> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let r = Repr::deserialize(deserializer)?;
        if r.algorithm != H::ALGORITHM {
            return Err(D::Error::custom(
                "filter was serialized with a different hash algorithm",
            ));
        }
        if r.words.len() as u64 != r.layout.words() {
            return Err(D::Error::custom("word count does not match the layout"));
        }
        let mut store = MemoryStore::new(r.layout).map_err(D::Error::custom)?;
        store.load_words(&r.words);
        Ok(Self::with_store(
            store,
            H::from_key(r.key),
            r.expected_items,
        ))
    }
}
