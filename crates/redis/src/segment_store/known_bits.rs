//! The segment store's client-side copy of the shared filter's bits that it has seen set.
//!
//! Bits of the shared filter are only ever set, so a bit seen as 1 stays 1 for as long as the
//! server keeps its data. The store leaves such bits out of its commands. The copy is
//! emptied whenever a connection of the store is opened again, since a Redis that restarted
//! may have lost data; an epoch keeps a batch planned before such a clear from teaching the
//! copy what it saw on the old connection.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError, RwLock};

use url_dedup_segmented::{Layout, Probe};

/// The store's cache of known bits (when it keeps one), what it saved, and the connections it
/// was learned on.
#[derive(Debug)]
pub(crate) struct Known {
    bits: Option<KnownBits>,
    sent: AtomicU64,
    skipped: AtomicU64,
    /// The generations of the connections the cache was checked against.
    connections: Mutex<HashSet<u64>>,
}

impl Known {
    /// A cache for `bits` filter bits when `keep`, none otherwise (or when the memory cannot
    /// be had).
    pub(crate) fn new(bits: u64, keep: bool) -> Self {
        Self {
            bits: keep.then(|| KnownBits::new(bits)).flatten(),
            sent: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            connections: Mutex::new(HashSet::new()),
        }
    }

    /// The cache, if the store keeps one.
    pub(crate) fn bits(&self) -> Option<&KnownBits> {
        self.bits.as_ref()
    }

    /// Forgets every bit.
    pub(crate) fn clear(&self) {
        if let Some(bits) = &self.bits {
            bits.clear();
        }
    }

    /// Counts bit operations a batch sent and left out.
    pub(crate) fn count(&self, sent: u64, skipped: u64) {
        self.sent.fetch_add(sent, Ordering::Relaxed);
        self.skipped.fetch_add(skipped, Ordering::Relaxed);
    }

    /// Whether the connection of `generation` is one the cache was not checked against; it
    /// is from now on.
    pub(crate) fn new_connection(&self, generation: u64) -> bool {
        self.connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(generation)
    }

    /// Forgets the connection of `generation`, so that it is checked again.
    pub(crate) fn unchecked(&self, generation: u64) {
        self.connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&generation);
    }

    /// Whether every bit of every probe is known set (never, without a cache).
    pub(crate) fn all_known(&self, layout: Layout, probes: &[Probe]) -> bool {
        let Some(known) = &self.bits else {
            return false;
        };
        probes.iter().all(|&probe| {
            let base = probe.segment * layout.segment_bits();
            layout
                .offsets(probe)
                .all(|offset| known.is_set(base + offset))
        })
    }

    pub(crate) fn stats(&self) -> KnownBitsStats {
        KnownBitsStats {
            bytes: self.bits.as_ref().map_or(0, KnownBits::bytes),
            sent: self.sent.load(Ordering::Relaxed),
            skipped: self.skipped.load(Ordering::Relaxed),
            invalidations: self.bits.as_ref().map_or(0, KnownBits::invalidations),
        }
    }
}

/// One bit per filter bit, indexed by global bit position (`segment * segment_bits + offset`).
#[derive(Debug)]
pub(crate) struct KnownBits {
    words: Box<[AtomicU64]>,
    /// Held shared while learning, exclusively while clearing.
    lock: RwLock<()>,
    /// Bumped by every [`clear`](Self::clear); a batch learns only in the epoch it was
    /// planned in.
    epoch: AtomicU64,
    /// Whether a bit was learned since the last clear (a clean copy need not be rewritten).
    dirty: AtomicBool,
    /// Clears that emptied a copy holding bits.
    invalidations: AtomicU64,
}

impl KnownBits {
    /// A copy for `bits` filter bits, all unknown; `None` if the memory cannot be had.
    pub(crate) fn new(bits: u64) -> Option<Self> {
        let len = usize::try_from(bits.div_ceil(64)).ok()?;
        let mut words = Vec::new();
        words.try_reserve_exact(len).ok()?;
        words.resize_with(len, || AtomicU64::new(0));
        Some(Self {
            words: words.into_boxed_slice(),
            lock: RwLock::new(()),
            epoch: AtomicU64::new(0),
            dirty: AtomicBool::new(false),
            invalidations: AtomicU64::new(0),
        })
    }

    /// The current epoch. Read it before reading bits to plan a batch, and pass it to
    /// [`learn`](Self::learn) afterwards.
    #[inline]
    pub(crate) fn epoch(&self) -> u64 {
        // Acquire: seeing a clear's epoch means seeing the zeros it wrote.
        self.epoch.load(Ordering::Acquire)
    }

    /// Whether `bit` is known to be set on the server.
    #[inline]
    pub(crate) fn is_set(&self, bit: u64) -> bool {
        self.words[(bit / 64) as usize].load(Ordering::Relaxed) & (1 << (bit % 64)) != 0
    }

    /// Records `bits` as set, unless the copy was cleared since `epoch` (then what the batch
    /// saw may come from a server that has since lost it). Returns whether it recorded them.
    pub(crate) fn learn(&self, epoch: u64, bits: impl IntoIterator<Item = u64>) -> bool {
        let _shared = self.lock.read().unwrap_or_else(PoisonError::into_inner);
        // A clear bumps the epoch under the exclusive lock, so none can start until we are done.
        if self.epoch.load(Ordering::Relaxed) != epoch {
            return false;
        }
        self.dirty.store(true, Ordering::Relaxed);
        for bit in bits {
            let word = &self.words[(bit / 64) as usize];
            let mask = 1 << (bit % 64);
            // Most bits learned are known already: a plain load avoids a locked operation.
            if word.load(Ordering::Relaxed) & mask == 0 {
                word.fetch_or(mask, Ordering::Relaxed);
            }
        }
        true
    }

    /// Forgets every bit and starts a new epoch.
    pub(crate) fn clear(&self) {
        let _exclusive = self.lock.write().unwrap_or_else(PoisonError::into_inner);
        if self.dirty.swap(false, Ordering::Relaxed) {
            for word in &self.words {
                word.store(0, Ordering::Relaxed);
            }
            self.invalidations.fetch_add(1, Ordering::Relaxed);
        }
        // Release: whoever reads the new epoch sees the zeros above.
        self.epoch.fetch_add(1, Ordering::Release);
    }

    /// Clears that emptied a copy holding bits.
    pub(crate) fn invalidations(&self) -> u64 {
        self.invalidations.load(Ordering::Relaxed)
    }

    /// Bytes of the copy.
    pub(crate) fn bytes(&self) -> u64 {
        self.words.len() as u64 * 8
    }
}

/// What a store's cache of known-set bits saved: see
/// [`RedisSegmentStore::known_bits_stats`](crate::RedisSegmentStore::known_bits_stats).
///
/// # Examples
///
/// ```
/// use url_dedup_redis::KnownBitsStats;
///
/// let stats = KnownBitsStats { bytes: 1 << 20, sent: 300, skipped: 100, invalidations: 0 };
/// assert_eq!(stats.skipped_fraction(), 0.25);
/// assert_eq!(KnownBitsStats::default().skipped_fraction(), 0.0);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KnownBitsStats {
    /// Memory of the cache; 0 when the store keeps none (see
    /// [`StoreOptions::known_bits_limit`](crate::StoreOptions::known_bits_limit)).
    pub bytes: u64,
    /// Bit operations (`SET u1` or `GET u1`) that batches sent to Redis.
    pub sent: u64,
    /// Bit operations left out because the cache knew the bit was set.
    pub skipped: u64,
    /// Times the cache was emptied because a connection of the store was opened again (or the
    /// filter found reset) while it held bits.
    pub invalidations: u64,
}

impl KnownBitsStats {
    /// The share of bit operations the cache answered: `skipped / (sent + skipped)`, 0 before
    /// any.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_redis::KnownBitsStats;
    ///
    /// let stats = KnownBitsStats { sent: 0, skipped: 8, ..KnownBitsStats::default() };
    /// assert_eq!(stats.skipped_fraction(), 1.0);
    /// ```
    pub fn skipped_fraction(&self) -> f64 {
        let total = self.sent + self.skipped;
        if total == 0 {
            0.0
        } else {
            self.skipped as f64 / total as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learns_and_forgets() {
        let known = KnownBits::new(1_000).unwrap();
        assert_eq!(known.bytes(), 128);
        let epoch = known.epoch();
        assert!(known.learn(epoch, [0, 63, 64, 999]));
        assert!([0, 63, 64, 999].iter().all(|&b| known.is_set(b)));
        assert!(!known.is_set(1) && !known.is_set(998));
        known.clear();
        assert!((0..1_000).all(|b| !known.is_set(b)));
        assert_eq!(known.invalidations(), 1);
        // A clean copy is not counted again, but still starts a new epoch.
        let epoch = known.epoch();
        known.clear();
        assert_eq!(known.invalidations(), 1);
        assert_ne!(known.epoch(), epoch);
    }

    #[test]
    fn a_batch_planned_before_a_clear_learns_nothing() {
        let known = KnownBits::new(128).unwrap();
        let before = known.epoch();
        known.clear();
        assert!(!known.learn(before, [5]));
        assert!(!known.is_set(5));
        assert!(known.learn(known.epoch(), [5]));
        assert!(known.is_set(5));
    }

    #[test]
    fn too_large_is_none_not_an_abort() {
        assert!(KnownBits::new(u64::MAX).is_none());
    }
}
