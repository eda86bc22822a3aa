//! `Serialize`/`Deserialize` for filters (feature `serde`).
//!
//! A filter serializes as a struct of its parameters and its bit words. Deserializing checks
//! everything a snapshot read checks (algorithm, ranges, word count, padding), so a serde
//! payload from an untrusted source cannot build an inconsistent filter.

use serde::{Deserialize, Deserializer, Serialize, Serializer, de::Error as _};

use crate::hash::{HashAlgorithm, HashKey, ItemHasher};
use crate::shape::{Shape, StoredParams};
use crate::{AtomicBloomFilter, BloomFilter};

#[derive(Serialize)]
struct ReprRef<'a> {
    bits: u64,
    hashes: u32,
    algorithm: HashAlgorithm,
    key: HashKey,
    expected_items: u64,
    items: u64,
    words: &'a [u64],
}

#[derive(Deserialize)]
struct Repr {
    bits: u64,
    hashes: u32,
    algorithm: HashAlgorithm,
    key: HashKey,
    expected_items: u64,
    items: u64,
    words: Vec<u64>,
}

impl<H: ItemHasher> Serialize for BloomFilter<H> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let shape = self.shape();
        ReprRef {
            bits: shape.bits,
            hashes: shape.hashes,
            algorithm: H::ALGORITHM,
            key: shape.hasher.key(),
            expected_items: shape.expected_items,
            items: self.len(),
            words: self.raw_words(),
        }
        .serialize(serializer)
    }
}

impl<'de, H: ItemHasher> Deserialize<'de> for BloomFilter<H> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let r = Repr::deserialize(deserializer)?;
        let (shape, items) = Shape::<H>::from_stored(StoredParams {
            bits: r.bits,
            hashes: r.hashes,
            algorithm: r.algorithm,
            key: r.key,
            expected_items: r.expected_items,
            items: r.items,
        })
        .map_err(D::Error::custom)?;
        if r.words.len() as u64 != shape.words() {
            return Err(D::Error::custom(
                "word count does not match the filter size",
            ));
        }
        shape
            .check_padding(r.words.last().copied().unwrap_or(0))
            .map_err(D::Error::custom)?;
        Ok(Self::from_parts(shape, r.words, items))
    }
}

impl<H: ItemHasher> Serialize for AtomicBloomFilter<H> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_filter().serialize(serializer)
    }
}

impl<'de, H: ItemHasher> Deserialize<'de> for AtomicBloomFilter<H> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        BloomFilter::<H>::deserialize(deserializer).map(BloomFilter::into_atomic)
    }
}
