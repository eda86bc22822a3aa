//! Finding every stored SimHash within k bits of a query without a scan: permuted tables
//! (Manku, Jain and Das Sarma, "Detecting near-duplicates for web crawling", WWW 2007).
//!
//! Cut the 64 bits into `b` blocks. Two fingerprints at most `k` bits apart differ in at most
//! `k` blocks, so they agree exactly on at least `b - k` of them. Keep one table for each
//! choice of `b - k` blocks, keyed on those blocks: every fingerprint within `k` bits of a
//! query shares the key of at least one table with it, and only the few entries under the
//! query's key in each table need their distance checked.
//!
//! Each table is an open-addressing hash table of 64-bit words (the fingerprint with its key
//! blocks moved to the top, so equal keys are equal top bits); entries of one key sit in one
//! run of slots from their key's home. Memory is `tables * 8` bytes per fingerprint over the
//! load factor (0.375 to 0.75): with the default 4 blocks and `k = 3`, 4 tables of 16-bit keys,
//! 43 to 85 bytes per fingerprint ([`NearIndex::memory_bytes`]).

use std::io::{Read, Write};

use url_dedup_bloom::snapshot::{self, Kind, Limits, Params, SnapshotError};

use crate::SimHash;

/// The snapshot kind of a [`NearIndex`].
pub const SNAPSHOT_KIND: Kind = Kind(9);

/// Layout of the snapshot's parameter block; bump when it changes.
const LAYOUT: u16 = 1;

/// The most tables an index may have (`C(blocks, max_distance)`).
pub const MAX_TABLES: usize = 64;

/// Why an index could not be made or read.
///
/// # Examples
///
/// ```
/// use url_dedup_fingerprint::{IndexError, NearIndex};
/// assert!(matches!(NearIndex::with_blocks(3, 3), Err(IndexError::Shape(_))));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    /// The distance and block count do not make a usable index.
    #[error("invalid index shape: {0}")]
    Shape(String),
    /// The snapshot could not be read or written.
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    /// Redis failed (the Redis form, feature `redis`).
    #[cfg(feature = "redis")]
    #[error(transparent)]
    Redis(#[from] url_dedup_redis::Error),
    /// Redis holds data of the index that this crate did not write.
    #[error("the index in Redis is damaged: {0}")]
    Corrupt(&'static str),
}

/// One permuted table.
#[derive(Clone, Debug)]
struct Table {
    /// The blocks in the order they are laid out, key blocks first: `(shift, width)`.
    layout: Vec<(u32, u32)>,
    /// The number of top bits of a permuted fingerprint that are its key.
    key_bits: u32,
    /// Slots: permuted fingerprints, 0 for empty (fingerprint 0 is kept aside).
    slots: Vec<u64>,
}

impl Table {
    #[inline]
    fn permute(&self, f: u64) -> u64 {
        let mut out = 0u64;
        for &(shift, width) in &self.layout {
            out = out.checked_shl(width).unwrap_or(0) | (f >> shift & mask(width));
        }
        out
    }

    fn unpermute(&self, p: u64) -> u64 {
        let mut out = 0u64;
        let mut left = 64u32;
        for &(shift, width) in &self.layout {
            left -= width;
            out |= (p >> left & mask(width)) << shift;
        }
        out
    }

    #[inline]
    fn key(&self, permuted: u64) -> u64 {
        permuted >> (64 - self.key_bits)
    }

    #[inline]
    fn home(&self, key: u64) -> usize {
        // The key's bits are the fingerprint's, already well mixed; the multiply spreads
        // short keys over a long table.
        (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - self.slots.len().trailing_zeros()))
            as usize
    }

    /// Puts `permuted` (not yet present, not 0) in the first free slot of its run.
    fn place(&mut self, permuted: u64) {
        let mask = self.slots.len() - 1;
        let mut i = self.home(self.key(permuted));
        while self.slots[i] != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = permuted;
    }

    /// Calls `found` with every entry sharing the key of `permuted`.
    #[inline]
    fn for_each_candidate(&self, permuted: u64, mut found: impl FnMut(u64)) {
        let mask = self.slots.len() - 1;
        let key = self.key(permuted);
        let mut i = self.home(key);
        loop {
            let slot = self.slots[i];
            if slot == 0 {
                return;
            }
            if self.key(slot) == key {
                found(slot);
            }
            i = (i + 1) & mask;
        }
    }

    fn contains(&self, permuted: u64) -> bool {
        let mut hit = false;
        self.for_each_candidate(permuted, |s| hit |= s == permuted);
        hit
    }
}

fn mask(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// A set of SimHashes that finds every member within `k` bits of a query, reading only the
/// entries that share one of the query's table keys.
///
/// # Examples
///
/// ```
/// use url_dedup_fingerprint::{NearIndex, SimHash};
///
/// let mut index = NearIndex::new(3)?;
/// assert_eq!(index.check_and_insert(SimHash(0xffff_0000_ffff_0000)), None);
/// // Three bits away: a near duplicate of the first, which stays the one indexed.
/// let near = SimHash(0xffff_0000_ffff_0007);
/// assert_eq!(index.check_and_insert(near), Some(SimHash(0xffff_0000_ffff_0000)));
/// assert_eq!(index.len(), 1);
/// // Four bits away: not a near duplicate.
/// assert_eq!(index.nearest(SimHash(0xffff_0000_ffff_000f)), None);
/// # Ok::<(), url_dedup_fingerprint::IndexError>(())
/// ```
#[derive(Clone, Debug)]
pub struct NearIndex {
    max_distance: u32,
    blocks: u32,
    tables: Vec<Table>,
    len: u64,
    /// Whether `SimHash(0)`, which cannot sit in a slot, is a member.
    has_zero: bool,
}

impl NearIndex {
    /// An index that finds fingerprints within `max_distance` bits, with `max_distance + 1`
    /// blocks: the fewest tables, the least memory (`k = 3`: 4 tables keyed on 16 bits, which
    /// stays fast to some tens of millions of fingerprints; use
    /// [`with_blocks`](Self::with_blocks) for more).
    ///
    /// # Errors
    ///
    /// [`IndexError::Shape`] when `max_distance` is above 8.
    ///
    /// # Examples
    ///
    /// ```
    /// let index = url_dedup_fingerprint::NearIndex::new(3)?;
    /// assert_eq!((index.max_distance(), index.tables()), (3, 4));
    /// # Ok::<(), url_dedup_fingerprint::IndexError>(())
    /// ```
    pub fn new(max_distance: u32) -> Result<Self, IndexError> {
        Self::with_blocks(max_distance, max_distance + 1)
    }

    /// An index with `blocks` blocks: `C(blocks, max_distance)` tables, each keyed on
    /// `blocks - max_distance` blocks (about `64 * (blocks - max_distance) / blocks` bits).
    /// More blocks mean longer keys, so fewer entries read per query, and more tables.
    ///
    /// # Errors
    ///
    /// [`IndexError::Shape`] when `max_distance` is above 8, `blocks` is not above
    /// `max_distance` or above 32, or the index would need more than [`MAX_TABLES`] tables.
    ///
    /// # Examples
    ///
    /// ```
    /// // Manku et al.'s 20 tables for k = 3, keys of 32 or 33 bits.
    /// let index = url_dedup_fingerprint::NearIndex::with_blocks(3, 6)?;
    /// assert_eq!(index.tables(), 20);
    /// # Ok::<(), url_dedup_fingerprint::IndexError>(())
    /// ```
    pub fn with_blocks(max_distance: u32, blocks: u32) -> Result<Self, IndexError> {
        if max_distance > 8 {
            return Err(IndexError::Shape(format!(
                "max distance {max_distance} is above 8"
            )));
        }
        if blocks <= max_distance || blocks > 32 {
            return Err(IndexError::Shape(format!(
                "{blocks} blocks for distance {max_distance}: need more blocks than the distance, at most 32"
            )));
        }
        let tables = binomial(blocks, max_distance);
        if tables > MAX_TABLES as u64 {
            return Err(IndexError::Shape(format!(
                "{blocks} blocks for distance {max_distance} make {tables} tables, more than {MAX_TABLES}"
            )));
        }
        // Block i covers `width` bits from the top: blocks with the lower index hold the
        // higher bits, and the first `64 % blocks` are one bit wider.
        let mut spans = Vec::with_capacity(blocks as usize);
        let mut top = 64u32;
        for i in 0..blocks {
            let width = 64 / blocks + u32::from(i < 64 % blocks);
            top -= width;
            spans.push((top, width));
        }
        let keep = (blocks - max_distance) as usize;
        let mut tables = Vec::with_capacity(tables as usize);
        for_each_combination(blocks as usize, keep, &mut |chosen| {
            let mut layout: Vec<(u32, u32)> = chosen.iter().map(|&i| spans[i]).collect();
            let key_bits = layout.iter().map(|&(_, w)| w).sum();
            layout.extend(
                (0..blocks as usize)
                    .filter(|i| !chosen.contains(i))
                    .map(|i| spans[i]),
            );
            tables.push(Table {
                layout,
                key_bits,
                slots: vec![0; 16],
            });
        });
        Ok(Self {
            max_distance,
            blocks,
            tables,
            len: 0,
            has_zero: false,
        })
    }

    /// The largest distance a query finds.
    ///
    /// # Examples
    ///
    /// See [`new`](Self::new).
    pub fn max_distance(&self) -> u32 {
        self.max_distance
    }

    /// The number of blocks the 64 bits are cut into.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(url_dedup_fingerprint::NearIndex::new(3)?.blocks(), 4);
    /// # Ok::<(), url_dedup_fingerprint::IndexError>(())
    /// ```
    pub fn blocks(&self) -> u32 {
        self.blocks
    }

    /// The number of tables.
    ///
    /// # Examples
    ///
    /// See [`with_blocks`](Self::with_blocks).
    pub fn tables(&self) -> usize {
        self.tables.len()
    }

    /// The number of fingerprints held.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut index = url_dedup_fingerprint::NearIndex::new(3)?;
    /// index.insert(url_dedup_fingerprint::SimHash(7));
    /// index.insert(url_dedup_fingerprint::SimHash(7));
    /// assert_eq!(index.len(), 1);
    /// # Ok::<(), url_dedup_fingerprint::IndexError>(())
    /// ```
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the index holds nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(url_dedup_fingerprint::NearIndex::new(3)?.is_empty());
    /// # Ok::<(), url_dedup_fingerprint::IndexError>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes the tables take.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut index = url_dedup_fingerprint::NearIndex::new(3)?;
    /// for i in 1..=100_000u64 {
    ///     index.insert(url_dedup_fingerprint::SimHash(url_dedup_fingerprint::feature_hash(i)));
    /// }
    /// let per = index.memory_bytes() as f64 / index.len() as f64;
    /// assert!((4.0 * 8.0 / 0.75..=4.0 * 8.0 / 0.375).contains(&per), "{per}");
    /// # Ok::<(), url_dedup_fingerprint::IndexError>(())
    /// ```
    pub fn memory_bytes(&self) -> u64 {
        self.tables
            .iter()
            .map(|t| t.slots.len() as u64 * 8)
            .sum::<u64>()
    }

    /// Whether `fingerprint` itself is held.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_fingerprint::{NearIndex, SimHash};
    /// let mut index = NearIndex::new(3)?;
    /// index.insert(SimHash(1));
    /// assert!(index.contains(SimHash(1)) && !index.contains(SimHash(3)));
    /// # Ok::<(), url_dedup_fingerprint::IndexError>(())
    /// ```
    pub fn contains(&self, fingerprint: SimHash) -> bool {
        if fingerprint.0 == 0 {
            return self.has_zero;
        }
        let t = &self.tables[0];
        t.contains(t.permute(fingerprint.0))
    }

    /// Adds `fingerprint`; `false` when it was held already.
    ///
    /// # Examples
    ///
    /// See [`len`](Self::len).
    pub fn insert(&mut self, fingerprint: SimHash) -> bool {
        if self.contains(fingerprint) {
            return false;
        }
        self.len += 1;
        if fingerprint.0 == 0 {
            self.has_zero = true;
            return true;
        }
        for t in &mut self.tables {
            // Grow at three quarters full: runs stay short.
            if (self.len as usize) * 4 > t.slots.len() * 3 {
                let doubled = vec![0; t.slots.len() * 2];
                let old = std::mem::replace(&mut t.slots, doubled);
                for p in old.into_iter().filter(|&p| p != 0) {
                    t.place(p);
                }
            }
            let p = t.permute(fingerprint.0);
            t.place(p);
        }
        true
    }

    /// Every held fingerprint within [`max_distance`](Self::max_distance) bits of
    /// `fingerprint`, nearest first (ties in ascending order).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_fingerprint::{NearIndex, SimHash};
    /// let mut index = NearIndex::new(2)?;
    /// for f in [0b0000, 0b0001, 0b0111, 0b1111] {
    ///     index.insert(SimHash(f));
    /// }
    /// assert_eq!(index.within(SimHash(0b0011)), [SimHash(0b0001), SimHash(0b0111), SimHash(0b0000), SimHash(0b1111)]);
    /// # Ok::<(), url_dedup_fingerprint::IndexError>(())
    /// ```
    pub fn within(&self, fingerprint: SimHash) -> Vec<SimHash> {
        let mut found = Vec::new();
        self.visit(fingerprint, |f| found.push(f));
        found.sort_unstable_by_key(|f| (f.distance(fingerprint), *f));
        found.dedup();
        found
    }

    /// The held fingerprint nearest to `fingerprint` within
    /// [`max_distance`](Self::max_distance) bits, and its distance.
    ///
    /// # Examples
    ///
    /// See [`NearIndex`].
    pub fn nearest(&self, fingerprint: SimHash) -> Option<SimHash> {
        let mut best: Option<SimHash> = None;
        self.visit(fingerprint, |f| {
            let better = match best {
                None => true,
                Some(b) => (f.distance(fingerprint), f) < (b.distance(fingerprint), b),
            };
            if better {
                best = Some(f);
            }
        });
        best
    }

    /// The nearest held fingerprint within [`max_distance`](Self::max_distance) bits; when
    /// there is none, `fingerprint` is added. The first page of a group of near duplicates
    /// stays its representative.
    ///
    /// # Examples
    ///
    /// See [`NearIndex`].
    pub fn check_and_insert(&mut self, fingerprint: SimHash) -> Option<SimHash> {
        let near = self.nearest(fingerprint);
        if near.is_none() {
            self.insert(fingerprint);
        }
        near
    }

    /// The bucket of `fingerprint` in each table when buckets are the top `bits` bits of the
    /// key (all of it when the key is shorter): the Redis form's set names.
    #[cfg(feature = "redis")]
    pub(crate) fn buckets(&self, fingerprint: SimHash, bits: u32) -> Vec<u64> {
        self.tables
            .iter()
            .map(|t| t.permute(fingerprint.0) >> (64 - bits.min(t.key_bits)))
            .collect()
    }

    /// Calls `found` with each held fingerprint within the distance (one may come more than
    /// once, from several tables).
    fn visit(&self, fingerprint: SimHash, mut found: impl FnMut(SimHash)) {
        let k = self.max_distance;
        if self.has_zero && fingerprint.0.count_ones() <= k {
            found(SimHash(0));
        }
        for t in &self.tables {
            let q = t.permute(fingerprint.0);
            t.for_each_candidate(q, |p| {
                // A bit permutation keeps distances.
                if (p ^ q).count_ones() <= k {
                    found(SimHash(t.unpermute(p)));
                }
            });
        }
    }

    /// Every held fingerprint, in no particular order.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_fingerprint::{NearIndex, SimHash};
    /// let mut index = NearIndex::new(3)?;
    /// index.insert(SimHash(0));
    /// index.insert(SimHash(9));
    /// let mut all: Vec<SimHash> = index.iter().collect();
    /// all.sort();
    /// assert_eq!(all, [SimHash(0), SimHash(9)]);
    /// # Ok::<(), url_dedup_fingerprint::IndexError>(())
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = SimHash> + '_ {
        let t = &self.tables[0];
        self.has_zero.then_some(SimHash(0)).into_iter().chain(
            t.slots
                .iter()
                .filter(|&&p| p != 0)
                .map(move |&p| SimHash(t.unpermute(p))),
        )
    }

    /// Writes the index as a checksummed snapshot (the workspace's snapshot format, kind
    /// [`SNAPSHOT_KIND`]): its shape and its fingerprints, 8 bytes each; the tables are built
    /// again on reading.
    ///
    /// # Errors
    ///
    /// [`IndexError::Snapshot`] when writing fails.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_fingerprint::{NearIndex, SimHash};
    ///
    /// let mut index = NearIndex::new(3)?;
    /// index.insert(SimHash(42));
    /// let mut bytes = Vec::new();
    /// index.write_to(&mut bytes)?;
    /// let back = NearIndex::read_from(&bytes[..])?;
    /// assert_eq!(back.nearest(SimHash(43)), Some(SimHash(42)));
    /// # Ok::<(), url_dedup_fingerprint::IndexError>(())
    /// ```
    pub fn write_to<W: Write>(&self, out: W) -> Result<(), IndexError> {
        let mut p = Params::new();
        p.put_u16(LAYOUT)
            .put_u32(self.max_distance)
            .put_u32(self.blocks)
            .put_u64(self.len);
        snapshot::write(
            out,
            SNAPSHOT_KIND,
            p.as_bytes(),
            self.len,
            self.iter().map(|f| f.0),
        )?;
        Ok(())
    }

    /// Reads an index written by [`write_to`](Self::write_to).
    ///
    /// # Errors
    ///
    /// [`IndexError::Snapshot`] for input that is damaged, truncated, of another kind, or
    /// whose parts disagree (a fingerprint twice, a count that is not the payload's).
    ///
    /// # Examples
    ///
    /// ```
    /// let err = url_dedup_fingerprint::NearIndex::read_from(&b"URLDEDUP nonsense"[..]);
    /// assert!(err.is_err());
    /// ```
    pub fn read_from<R: Read>(input: R) -> Result<Self, IndexError> {
        Self::read_with_limits(input, Limits::default())
    }

    /// [`read_from`](Self::read_from) with explicit size limits.
    ///
    /// # Errors
    ///
    /// As [`read_from`](Self::read_from).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_fingerprint::{NearIndex, SimHash};
    /// use url_dedup_bloom::snapshot::Limits;
    ///
    /// let mut index = NearIndex::new(3)?;
    /// (1..100).for_each(|i| { index.insert(SimHash(i)); });
    /// let mut bytes = Vec::new();
    /// index.write_to(&mut bytes)?;
    /// assert!(NearIndex::read_with_limits(&bytes[..], Limits { max_payload_bytes: 80 }).is_err());
    /// # Ok::<(), url_dedup_fingerprint::IndexError>(())
    /// ```
    pub fn read_with_limits<R: Read>(mut input: R, limits: Limits) -> Result<Self, IndexError> {
        let header = snapshot::read_header(&mut input, SNAPSHOT_KIND, limits)?;
        let mut p = header.params();
        let invalid = |why| IndexError::Snapshot(SnapshotError::InvalidParameters(why));
        if p.u16()? != LAYOUT {
            return Err(invalid("unknown near-duplicate index layout"));
        }
        let (k, blocks, len) = (p.u32()?, p.u32()?, p.u64()?);
        if !p.is_empty() || len != header.payload_words() {
            return Err(invalid("the count is not the payload's"));
        }
        let mut index = Self::with_blocks(k, blocks)
            .map_err(|_| invalid("the index shape is not one this version makes"))?;
        let mut twice = false;
        header.read_payload_with(&mut input, |words| {
            for &w in words {
                twice |= !index.insert(SimHash(w));
            }
        })?;
        if twice {
            return Err(invalid("a fingerprint is stored twice"));
        }
        Ok(index)
    }
}

fn binomial(n: u32, k: u32) -> u64 {
    let k = k.min(n - k) as u64;
    (0..k).fold(1u64, |acc, i| acc * (u64::from(n) - i) / (i + 1))
}

/// Calls `f` with every `k`-subset of `0..n`, in lexicographic order.
fn for_each_combination(n: usize, k: usize, f: &mut impl FnMut(&[usize])) {
    fn go(n: usize, k: usize, start: usize, chosen: &mut Vec<usize>, f: &mut impl FnMut(&[usize])) {
        if chosen.len() == k {
            f(chosen);
            return;
        }
        for i in start..n {
            chosen.push(i);
            go(n, k, i + 1, chosen, f);
            chosen.pop();
        }
    }
    go(n, k, 0, &mut Vec::with_capacity(k), f);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutations_invert() {
        for (k, b) in [(3, 4), (3, 6), (2, 7), (0, 1), (8, 9)] {
            let index = NearIndex::with_blocks(k, b).unwrap();
            for t in &index.tables {
                assert_eq!(t.layout.iter().map(|l| l.1).sum::<u32>(), 64);
                for f in [1u64, u64::MAX, 0x0123_4567_89ab_cdef, 1 << 63] {
                    assert_eq!(t.unpermute(t.permute(f)), f);
                    assert_eq!(t.permute(f).count_ones(), f.count_ones());
                }
            }
        }
    }

    #[test]
    fn shapes() {
        assert_eq!(NearIndex::new(0).unwrap().tables(), 1);
        assert_eq!(NearIndex::with_blocks(3, 5).unwrap().tables(), 10);
        assert!(NearIndex::new(9).is_err());
        assert!(NearIndex::with_blocks(8, 16).is_err()); // 12,870 tables
        assert_eq!(binomial(6, 3), 20);
    }

    #[test]
    fn zero_is_a_member_like_any_other() {
        let mut index = NearIndex::new(3).unwrap();
        assert!(index.insert(SimHash(0)));
        assert!(!index.insert(SimHash(0)));
        assert_eq!(index.nearest(SimHash(0b111)), Some(SimHash(0)));
        assert_eq!(index.nearest(SimHash(0b1111)), None);
        assert_eq!(index.len(), 1);
    }

    #[test]
    fn a_damaged_snapshot_is_refused() {
        let mut index = NearIndex::new(3).unwrap();
        for i in 1..50u64 {
            index.insert(SimHash(crate::feature_hash(i)));
        }
        let mut bytes = Vec::new();
        index.write_to(&mut bytes).unwrap();
        for pos in (0..bytes.len()).step_by(7) {
            let mut bad = bytes.clone();
            bad[pos] ^= 4;
            assert!(NearIndex::read_from(&bad[..]).is_err(), "flip at {pos}");
        }
        for len in 0..bytes.len() {
            assert!(NearIndex::read_from(&bytes[..len]).is_err());
        }
    }
}
