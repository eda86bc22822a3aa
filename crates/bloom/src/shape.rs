//! What a plain and an atomic filter have in common: size, number of hashes, hasher, and how
//! those are written into and read back from a snapshot's parameter block.

use crate::Error;
use crate::hash::{Digest, HashAlgorithm, HashKey, ItemHasher};
use crate::sizing::{self, MAX_HASHES};
use crate::snapshot::{Header, Params, SnapshotError};

/// The geometry and hasher of a classic filter.
#[derive(Clone, Debug)]
pub(crate) struct Shape<H> {
    pub(crate) bits: u64,
    pub(crate) hashes: u32,
    pub(crate) expected_items: u64,
    pub(crate) hasher: H,
}

/// Parameters as stored in a snapshot, before they are trusted.
pub(crate) struct StoredParams {
    pub(crate) bits: u64,
    pub(crate) hashes: u32,
    pub(crate) algorithm: HashAlgorithm,
    pub(crate) key: HashKey,
    pub(crate) expected_items: u64,
    pub(crate) items: u64,
}

impl<H: ItemHasher> Shape<H> {
    pub(crate) fn new(
        bits: u64,
        hashes: u32,
        expected_items: u64,
        hasher: H,
    ) -> Result<Self, Error> {
        if bits == 0 {
            return Err(Error::InvalidParameters("a filter needs at least one bit"));
        }
        if !(1..=MAX_HASHES).contains(&hashes) {
            return Err(Error::InvalidParameters("hashes must be between 1 and 64"));
        }
        Ok(Self {
            bits,
            hashes,
            expected_items,
            hasher,
        })
    }

    /// Number of 64-bit words that hold `bits` bits.
    pub(crate) fn words(&self) -> u64 {
        self.bits.div_ceil(64)
    }

    #[inline]
    pub(crate) fn digest(&self, item: &[u8]) -> Digest {
        self.hasher.hash(item)
    }

    /// Folds `f` over the word index and mask of each of the item's bits, in
    /// [`Digest::indexes`] order.
    ///
    /// The usual values of `k` go to copies with `k` fixed at compile time, where the loop
    /// unrolls and its counter and exit test disappear. A single-item call is bound by how many
    /// items' cache misses the core keeps in flight at once, which its reorder window limits:
    /// fewer instructions per item let the next item's loads start sooner.
    #[inline(always)]
    pub(crate) fn fold_positions<A>(
        &self,
        digest: Digest,
        init: A,
        mut f: impl FnMut(A, usize, u64) -> A,
    ) -> A {
        macro_rules! fixed {
            ($($k:literal)*) => {
                match self.hashes {
                    $($k => {
                        return digest
                            .index_array::<$k>(self.bits)
                            .into_iter()
                            .fold(init, |a, i| f(a, (i >> 6) as usize, 1u64 << (i & 63)));
                    })*
                    _ => {}
                }
            };
        }
        fixed!(3 4 5 6 7 8 9 10 11 12 13 14);
        self.positions(digest).fold(init, |a, (w, m)| f(a, w, m))
    }

    /// Word index and mask of each of the item's bits.
    #[inline]
    pub(crate) fn positions(&self, digest: Digest) -> impl Iterator<Item = (usize, u64)> {
        digest
            .indexes(self.hashes, self.bits)
            .map(|i| ((i >> 6) as usize, 1u64 << (i & 63)))
    }

    pub(crate) fn fpr_at(&self, ones: u64) -> f64 {
        (ones as f64 / self.bits as f64).powi(self.hashes as i32)
    }

    pub(crate) fn estimate(&self, ones: u64) -> f64 {
        sizing::estimate_items(self.bits, self.hashes, ones)
    }

    pub(crate) fn compatible(&self, other: &Self) -> Result<(), Error> {
        if self.bits != other.bits || self.hashes != other.hashes {
            return Err(Error::Incompatible(
                "filters differ in size or number of hashes",
            ));
        }
        if self.hasher.key() != other.hasher.key() {
            return Err(Error::Incompatible("filters use different hash keys"));
        }
        Ok(())
    }

    pub(crate) fn params(&self, items: u64) -> Params {
        let mut p = Params::new();
        p.put_u64(self.bits)
            .put_u32(self.hashes)
            .put_u16(H::ALGORITHM.0)
            .put_bytes(&self.hasher.key().to_bytes())
            .put_u64(self.expected_items)
            .put_u64(items);
        p
    }

    /// Decodes and checks a snapshot header, returning the shape and stored item count.
    pub(crate) fn from_header(header: &Header) -> Result<(Self, u64), Error> {
        let mut r = header.params();
        let stored = StoredParams {
            bits: r.u64()?,
            hashes: r.u32()?,
            algorithm: HashAlgorithm(r.u16()?),
            key: HashKey::from_bytes(r.bytes()?),
            expected_items: r.u64()?,
            items: r.u64()?,
        };
        let (shape, items) = Self::from_stored(stored)?;
        if header.payload_words() != shape.words() {
            return Err(SnapshotError::InvalidParameters(
                "payload length does not match the filter size",
            )
            .into());
        }
        Ok((shape, items))
    }

    pub(crate) fn from_stored(p: StoredParams) -> Result<(Self, u64), Error> {
        if p.algorithm != H::ALGORITHM {
            return Err(Error::Incompatible(
                "snapshot was written with a different hash algorithm",
            ));
        }
        let shape = Self::new(p.bits, p.hashes, p.expected_items, H::from_key(p.key))?;
        Ok((shape, p.items))
    }

    /// Bits past `self.bits` in the last word must be zero: no position can reach them, so a
    /// one there means the payload was not written by a filter of this shape.
    pub(crate) fn check_padding(&self, last_word: u64) -> Result<(), Error> {
        let used = self.bits % 64;
        if used != 0 && last_word >> used != 0 {
            return Err(
                SnapshotError::InvalidParameters("bits set beyond the filter's end").into(),
            );
        }
        Ok(())
    }
}

/// Allocates `words` zeroed words, reporting failure instead of aborting the process.
pub(crate) fn zeroed_words(words: u64) -> Result<Vec<u64>, Error> {
    let bytes = words.saturating_mul(8);
    let len = usize::try_from(words).map_err(|_| Error::OutOfMemory { bytes })?;
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| Error::OutOfMemory { bytes })?;
    v.resize(len, 0);
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::SipHash13;

    #[test]
    fn unrolled_positions_are_the_listed_ones() {
        let hasher = SipHash13::new(HashKey::from_bytes([9; 16]));
        for hashes in 1..=20 {
            for bits in [1u64, 64, 1_000, 9_585_059, 1 << 40] {
                let shape = Shape::new(bits, hashes, 0, hasher.clone()).unwrap();
                for item in 0..50u32 {
                    let d = shape.digest(&item.to_le_bytes());
                    let listed: Vec<(usize, u64)> = shape.positions(d).collect();
                    let folded = shape.fold_positions(d, Vec::new(), |mut v, w, m| {
                        v.push((w, m));
                        v
                    });
                    assert_eq!(folded, listed, "k = {hashes}, m = {bits}");
                }
            }
        }
    }
}
