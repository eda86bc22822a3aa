//! The exact mode: a set of keyed 128-bit fingerprints instead of a Bloom filter.
//!
//! Two distinct URLs share a fingerprint with probability 2^-128 per pair; over a billion
//! distinct URLs the chance that any two collide is about 1.5 × 10^-21 (the birthday bound
//! `n² / 2^129`), so the set answers "seen before" exactly for any list a machine can hold.
//! The key (keyed SipHash-1-3-128, the workspace's default hasher) keeps crafted URLs from
//! aiming at a collision. Memory: 16 bytes per fingerprint plus the hash table's control byte
//! and slack, 19–39 bytes per URL as the table fills and doubles.
//!
//! The set is split into 64 shards by the fingerprint's top bits, each behind its own lock:
//! threads rarely meet, and a shard grows (and briefly holds its old table) alone.

use std::collections::HashSet;
use std::hash::{BuildHasher, Hasher};
use std::io::{Read, Write};
use std::sync::{Mutex, MutexGuard};

use url_dedup_bloom::hash::{Digest, HashAlgorithm, HashKey, ItemHasher, SipHash13};
use url_dedup_bloom::snapshot::{self, Kind, Limits, Params, SnapshotError};

use crate::Error;

/// Shards: enough that a few crawler threads seldom wait on one another.
const SHARDS: usize = 64;

/// Layout of the snapshot's parameter block; bump when it changes.
const FORMAT: u16 = 1;

/// Hash-table bytes per slot: the fingerprint and the table's control byte.
const SLOT_BYTES: u64 = 17;

/// Keyed 128-bit fingerprints of every item seen.
pub(crate) struct FingerprintSet {
    hasher: SipHash13,
    shards: Box<[Mutex<HashSet<u128, PassThrough>>]>,
}

/// The fingerprints are keyed hashes already: the table uses their low 64 bits as they are.
#[derive(Clone, Copy, Default)]
struct PassThrough;

#[derive(Default)]
struct PassThroughHasher(u64);

impl BuildHasher for PassThrough {
    type Hasher = PassThroughHasher;
    fn build_hasher(&self) -> PassThroughHasher {
        PassThroughHasher(0)
    }
}

impl Hasher for PassThroughHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u128` is used; anything else is folded in rather than ignored.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u128(&mut self, v: u128) {
        self.0 = v as u64;
    }
}

fn fingerprint(d: Digest) -> u128 {
    u128::from(d.h1) << 64 | u128::from(d.h2)
}

impl FingerprintSet {
    pub(crate) fn new(key: HashKey) -> Self {
        Self {
            hasher: SipHash13::new(key),
            shards: (0..SHARDS)
                .map(|_| Mutex::new(HashSet::with_hasher(PassThrough)))
                .collect(),
        }
    }

    fn shard(&self, fp: u128) -> MutexGuard<'_, HashSet<u128, PassThrough>> {
        let i = (fp >> 122) as usize % SHARDS;
        // A poisoned shard only means a thread panicked while inserting; the set itself is
        // intact (an insert either happened or did not).
        self.shards[i]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn check_and_insert(&self, item: &[u8]) -> bool {
        self.check_and_insert_digest(self.hasher.hash(item))
    }

    /// For a digest of the key made under this set's hash key.
    pub(crate) fn check_and_insert_digest(&self, digest: Digest) -> bool {
        let fp = fingerprint(digest);
        self.shard(fp).insert(fp)
    }

    pub(crate) fn contains(&self, item: &[u8]) -> bool {
        let fp = fingerprint(self.hasher.hash(item));
        self.shard(fp).contains(&fp)
    }

    pub(crate) fn len(&self) -> u64 {
        self.shards
            .iter()
            .map(|s| {
                s.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .len() as u64
            })
            .sum()
    }

    pub(crate) fn key(&self) -> HashKey {
        self.hasher.key()
    }

    /// Heap bytes of the tables.
    pub(crate) fn memory_bytes(&self) -> u64 {
        self.shards
            .iter()
            .map(|s| {
                let capacity = s
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .capacity() as u64;
                // hashbrown keeps 8 buckets per 7 usable slots.
                capacity * 8 / 7 * SLOT_BYTES
            })
            .sum()
    }

    /// Chance that any two of the items held so far share a fingerprint (the birthday bound):
    /// the probability that some distinct URL was wrongly reported as seen.
    pub(crate) fn collision_probability(&self) -> f64 {
        let n = self.len() as f64;
        n * n / 2f64.powi(129)
    }

    /// Writes a `FINGERPRINTS` snapshot: key, count, then each fingerprint as two words.
    pub(crate) fn write_to(&self, out: &mut impl Write) -> Result<(), Error> {
        // Copy shard by shard so no lock is held while writing; the count is fixed up front.
        let copies: Vec<Vec<u128>> = self
            .shards
            .iter()
            .map(|s| {
                s.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .iter()
                    .copied()
                    .collect()
            })
            .collect();
        let count: u64 = copies.iter().map(|c| c.len() as u64).sum();
        let mut p = Params::new();
        p.put_u16(FORMAT)
            .put_u16(SipHash13::ALGORITHM.0)
            .put_bytes(&self.key().to_bytes())
            .put_u64(count);
        let words = copies
            .iter()
            .flatten()
            .flat_map(|&fp| [(fp >> 64) as u64, fp as u64]);
        snapshot::write(out, Kind::FINGERPRINTS, p.as_bytes(), count * 2, words)?;
        Ok(())
    }

    /// Reads a snapshot written by [`write_to`](Self::write_to), inserting fingerprints as they
    /// arrive so the set is never held twice.
    pub(crate) fn read_from(input: &mut impl Read, limits: Limits) -> Result<Self, Error> {
        let header = snapshot::read_header(&mut *input, Kind::FINGERPRINTS, limits)?;
        let mut r = header.params();
        if r.u16()? != FORMAT {
            return Err(SnapshotError::InvalidParameters("unknown fingerprint set layout").into());
        }
        if HashAlgorithm(r.u16()?) != SipHash13::ALGORITHM {
            return Err(Error::StateMismatch(
                "fingerprints of another hash algorithm",
            ));
        }
        let key = HashKey::from_bytes(r.bytes()?);
        let count = r.u64()?;
        if count.checked_mul(2) != Some(header.payload_words()) {
            return Err(SnapshotError::InvalidParameters(
                "payload length does not match the fingerprint count",
            )
            .into());
        }
        let set = Self::new(key);
        let mut high = None;
        header.read_payload_with(&mut *input, |words| {
            for &w in words {
                match high.take() {
                    None => high = Some(w),
                    Some(h) => {
                        let fp = u128::from(h) << 64 | u128::from(w);
                        set.shard(fp).insert(fp);
                    }
                }
            }
        })?;
        Ok(set)
    }
}

impl std::fmt::Debug for FingerprintSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FingerprintSet")
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fingerprint_set_is_exact_and_survives_a_snapshot() {
        let set = FingerprintSet::new(HashKey::from_bytes([3; 16]));
        let items: Vec<String> = (0..10_000)
            .map(|i| format!("https://e.example/{i}"))
            .collect();
        assert!(items.iter().all(|i| set.check_and_insert(i.as_bytes())));
        assert!(items.iter().all(|i| !set.check_and_insert(i.as_bytes())));
        assert_eq!(set.len(), 10_000);
        let mut bytes = Vec::new();
        set.write_to(&mut bytes).unwrap();
        let back = FingerprintSet::read_from(&mut &bytes[..], Limits::default()).unwrap();
        assert_eq!(back.len(), 10_000);
        assert!(items.iter().all(|i| back.contains(i.as_bytes())));
        assert!(!back.contains(b"https://e.example/10000"));
        assert!(back.memory_bytes() >= 10_000 * 16);
        for cut in [0, 10, bytes.len() / 2, bytes.len() - 1] {
            assert!(FingerprintSet::read_from(&mut &bytes[..cut], Limits::default()).is_err());
        }
    }
}
