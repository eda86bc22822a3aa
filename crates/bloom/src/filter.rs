use std::fmt;
use std::io::{Read, Write};

use bitvec::prelude::{BitVec, Lsb0};

use crate::builder::Builder;
use crate::hash::{Digest, HashKey, ItemHasher, SipHash13};
use crate::shape::Shape;
use crate::snapshot::{self, Kind, Limits};
use crate::{AtomicBloomFilter, Error};

/// A classic Bloom filter: `m` bits, each item sets `k` of them anywhere in the filter.
///
/// Single-owner: inserts take `&mut self`. Share one between threads with
/// [`AtomicBloomFilter`], or use the segmented filter for exactly-once concurrent admission.
///
/// Items are byte strings (`&str`, `String`, `&[u8]`, ...). Each is hashed once with the
/// filter's [`ItemHasher`] and its `k` positions are derived from that one hash.
///
/// # Examples
///
/// ```
/// use url_dedup_bloom::BloomFilter;
///
/// let mut seen = BloomFilter::builder()
///     .expected_items(10_000)
///     .false_positive_rate(0.01)
///     .build()?;
///
/// assert!(seen.check_and_insert("https://example.com/a")); // new: crawl it
/// assert!(!seen.check_and_insert("https://example.com/a")); // seen before: skip it
/// assert!(seen.contains("https://example.com/a"));
/// # Ok::<(), url_dedup_bloom::Error>(())
/// ```
#[derive(Clone)]
pub struct BloomFilter<H = SipHash13> {
    shape: Shape<H>,
    bits: BitVec<u64, Lsb0>,
    items: u64,
}

impl BloomFilter<SipHash13> {
    /// A builder for a filter keyed with a random SipHash key.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_bloom::BloomFilter::builder().expected_items(1_000).build()?;
    /// assert!(f.is_empty());
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn builder() -> Builder<SipHash13> {
        Builder::default()
    }
}

impl<H: ItemHasher> BloomFilter<H> {
    pub(crate) fn from_parts(shape: Shape<H>, words: Vec<u64>, items: u64) -> Self {
        let mut bits = BitVec::from_vec(words);
        bits.truncate(shape.bits as usize);
        Self { shape, bits, items }
    }

    #[inline]
    fn words(&self) -> &[u64] {
        self.bits.as_raw_slice()
    }

    /// Inserts an item. Returns `true` if the item was new, that is if at least one of its bits
    /// was still zero.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = url_dedup_bloom::BloomFilter::builder().expected_items(100).build()?;
    /// assert!(f.insert("https://example.com/"));
    /// assert!(!f.insert("https://example.com/"));
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    #[inline]
    pub fn insert(&mut self, item: impl AsRef<[u8]>) -> bool {
        self.check_and_insert(item)
    }

    /// The one call a crawler makes per URL: returns `true` if the item was new (and records it),
    /// `false` if it was already present or is a false positive.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = url_dedup_bloom::BloomFilter::builder().expected_items(100).build()?;
    /// for url in ["https://a.example/", "https://b.example/", "https://a.example/"] {
    ///     if f.check_and_insert(url) {
    ///         // fetch url
    ///     }
    /// }
    /// assert_eq!(f.len(), 2);
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    #[inline]
    pub fn check_and_insert(&mut self, item: impl AsRef<[u8]>) -> bool {
        let digest = self.shape.digest(item.as_ref());
        self.check_and_insert_digest(digest)
    }

    /// [`check_and_insert`](Self::check_and_insert) for an item already hashed with
    /// [`hash`](Self::hash), so a caller that routes by hash does not hash twice.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = url_dedup_bloom::BloomFilter::builder().expected_items(100).build()?;
    /// let d = f.hash("https://example.com/");
    /// assert!(f.check_and_insert_digest(d));
    /// assert!(f.contains("https://example.com/"));
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    #[inline]
    pub fn check_and_insert_digest(&mut self, digest: Digest) -> bool {
        let words = self.bits.as_raw_mut_slice();
        // Read and write every word without an early exit: the K loads are independent, so
        // their cache misses overlap instead of queueing behind a branch.
        let missing = self.shape.fold_positions(digest, 0u64, |missing, w, mask| {
            let word = &mut words[w];
            let missing = missing | (mask & !*word);
            *word |= mask;
            missing
        });
        let new = missing != 0;
        self.items += u64::from(new);
        new
    }

    /// Whether the item may have been inserted: `false` is certain, `true` is wrong with the
    /// filter's false-positive rate.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = url_dedup_bloom::BloomFilter::builder().expected_items(100).build()?;
    /// f.insert("https://example.com/");
    /// assert!(f.contains("https://example.com/"));
    /// assert!(!f.contains("https://example.com/other"));
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    #[inline]
    pub fn contains(&self, item: impl AsRef<[u8]>) -> bool {
        self.contains_digest(self.shape.digest(item.as_ref()))
    }

    /// [`contains`](Self::contains) for a precomputed [`Digest`].
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_bloom::BloomFilter::builder().expected_items(100).build()?;
    /// assert!(!f.contains_digest(f.hash("x")));
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    #[inline]
    pub fn contains_digest(&self, digest: Digest) -> bool {
        let words = self.words();
        // No early exit: the K loads are independent, so their cache misses overlap and the
        // next call starts at once. Stopping at the first zero bit would make a miss wait for
        // each load in turn and then mispredict the exit (measured at n = 10M: 186 ns with the
        // early exit, see docs/benchmarks.md, against the hit path's 158 ns).
        self.shape.fold_positions(digest, 0u64, |missing, w, mask| {
            missing | (mask & !words[w])
        }) == 0
    }

    /// Hashes an item with this filter's hasher.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_bloom::BloomFilter::builder().expected_items(100).build()?;
    /// assert_eq!(f.hash("a"), f.hash("a"));
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    #[inline]
    pub fn hash(&self, item: impl AsRef<[u8]>) -> Digest {
        self.shape.digest(item.as_ref())
    }

    /// Number of insertions that were new (set at least one bit). Exact for distinct items up
    /// to false positives; after [`union`](Self::union) or [`intersect`](Self::intersect) it is
    /// replaced by [`estimated_items`](Self::estimated_items).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = url_dedup_bloom::BloomFilter::builder().expected_items(100).build()?;
    /// f.extend(["a", "b", "a"]);
    /// assert_eq!(f.len(), 2);
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn len(&self) -> u64 {
        self.items
    }

    /// Whether nothing has been inserted.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_bloom::BloomFilter::builder().expected_items(100).build()?;
    /// assert!(f.is_empty());
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.items == 0 && self.count_ones() == 0
    }

    /// Number of bits `m`.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_bloom::BloomFilter::builder().bits(640).build()?;
    /// assert_eq!(f.bits(), 640);
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn bits(&self) -> u64 {
        self.shape.bits
    }

    /// Number of bits `k` set per item.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_bloom::BloomFilter::builder().expected_items(1_000).build()?;
    /// assert_eq!(f.hashes(), 7);
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn hashes(&self) -> u32 {
        self.shape.hashes
    }

    /// The number of items the filter was sized for.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_bloom::BloomFilter::builder().expected_items(1_000).build()?;
    /// assert_eq!(f.expected_items(), 1_000);
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn expected_items(&self) -> u64 {
        self.shape.expected_items
    }

    /// Whether more items were admitted than the filter was sized for, so its false-positive
    /// rate is now above the target. Check it periodically and grow or rotate the filter.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = url_dedup_bloom::BloomFilter::builder().expected_items(10).build()?;
    /// f.extend((0..100).map(|i| format!("https://example.com/{i}")));
    /// assert!(f.is_over_capacity());
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn is_over_capacity(&self) -> bool {
        self.items > self.shape.expected_items
    }

    /// The hasher's key: needed to reopen the filter's bits elsewhere.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::{BloomFilter, hash::HashKey};
    ///
    /// let key = HashKey::from_bytes([5; 16]);
    /// let f = BloomFilter::builder().expected_items(10).key(key).build()?;
    /// assert_eq!(f.key(), key);
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn key(&self) -> HashKey {
        self.shape.hasher.key()
    }

    /// Number of bits set.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = url_dedup_bloom::BloomFilter::builder().bits(1 << 16).hashes(4).build()?;
    /// f.insert("x");
    /// assert!((1..=4).contains(&f.count_ones()));
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn count_ones(&self) -> u64 {
        self.words().iter().map(|w| u64::from(w.count_ones())).sum()
    }

    /// Fraction of bits set, from 0 to 1. Near one half the filter is at its design load.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_bloom::BloomFilter::builder().expected_items(10).build()?;
    /// assert_eq!(f.fill_ratio(), 0.0);
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn fill_ratio(&self) -> f64 {
        self.count_ones() as f64 / self.shape.bits as f64
    }

    /// Swamidass–Baldi estimate of the number of distinct items, from the bits set.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = url_dedup_bloom::BloomFilter::builder().expected_items(10_000).build()?;
    /// f.extend((0..5_000).map(|i| format!("https://example.com/{i}")));
    /// assert!((f.estimated_items() - 5_000.0).abs() < 150.0);
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn estimated_items(&self) -> f64 {
        self.shape.estimate(self.count_ones())
    }

    /// The false-positive rate now, `fill_ratio ^ k`.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = url_dedup_bloom::BloomFilter::builder().expected_items(1_000).build()?;
    /// f.extend((0..1_000).map(|i| format!("https://example.com/{i}")));
    /// assert!((f.estimated_fpr() - 0.01).abs() < 0.004);
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn estimated_fpr(&self) -> f64 {
        self.shape.fpr_at(self.count_ones())
    }

    /// Adds every item of `other`: afterwards this filter contains what either contained.
    ///
    /// # Errors
    ///
    /// [`Error::Incompatible`] unless both filters have the same size, hashes and key.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::{BloomFilter, hash::HashKey};
    ///
    /// let b = BloomFilter::builder().expected_items(100).key(HashKey::from_bytes([1; 16]));
    /// let (mut x, mut y) = (b.clone().build()?, b.build()?);
    /// x.insert("a");
    /// y.insert("b");
    /// x.union(&y)?;
    /// assert!(x.contains("a") && x.contains("b"));
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn union(&mut self, other: &Self) -> Result<(), Error> {
        self.combine(other, |a, b| a | b)
    }

    /// Keeps only bits set in both filters: afterwards this filter contains (at least) what both
    /// contained.
    ///
    /// # Errors
    ///
    /// [`Error::Incompatible`] unless both filters have the same size, hashes and key.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::{BloomFilter, hash::HashKey};
    ///
    /// let b = BloomFilter::builder().expected_items(100).key(HashKey::from_bytes([1; 16]));
    /// let (mut x, mut y) = (b.clone().build()?, b.build()?);
    /// x.extend(["a", "both"]);
    /// y.extend(["b", "both"]);
    /// x.intersect(&y)?;
    /// assert!(x.contains("both"));
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn intersect(&mut self, other: &Self) -> Result<(), Error> {
        self.combine(other, |a, b| a & b)
    }

    fn combine(&mut self, other: &Self, op: impl Fn(u64, u64) -> u64) -> Result<(), Error> {
        self.shape.compatible(&other.shape)?;
        for (a, b) in self.bits.as_raw_mut_slice().iter_mut().zip(other.words()) {
            *a = op(*a, *b);
        }
        self.items = self.estimated_items().round() as u64;
        Ok(())
    }

    /// Removes every item, keeping size and key.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = url_dedup_bloom::BloomFilter::builder().expected_items(10).build()?;
    /// f.insert("a");
    /// f.clear();
    /// assert!(!f.contains("a") && f.is_empty());
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn clear(&mut self) {
        self.bits.as_raw_mut_slice().fill(0);
        self.items = 0;
    }

    /// Memory held by the bits, in bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_bloom::BloomFilter::builder().bits(6400).build()?;
    /// assert_eq!(f.memory_bytes(), 800);
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn memory_bytes(&self) -> u64 {
        self.shape.words() * 8
    }

    /// Writes a snapshot (see [`snapshot`](crate::snapshot) for the format).
    ///
    /// # Errors
    ///
    /// [`Error::Snapshot`] when writing fails.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::BloomFilter;
    ///
    /// let mut f = BloomFilter::builder().expected_items(100).build()?;
    /// f.insert("https://example.com/");
    /// let mut file = Vec::new();
    /// f.write_to(&mut file)?;
    /// let g: BloomFilter = BloomFilter::read_from(&file[..])?;
    /// assert!(g.contains("https://example.com/"));
    /// assert_eq!(f, g);
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn write_to<W: Write>(&self, out: W) -> Result<(), Error> {
        let params = self.shape.params(self.items);
        snapshot::write(
            out,
            Kind::BLOOM,
            params.as_bytes(),
            self.shape.words(),
            self.words().iter().copied(),
        )?;
        Ok(())
    }

    /// Reads a snapshot written by [`write_to`](Self::write_to) with the default
    /// [`Limits`].
    ///
    /// # Errors
    ///
    /// [`Error::Snapshot`] for damaged, truncated or oversized input; [`Error::Incompatible`]
    /// when it was written with another hash algorithm than `H`.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::BloomFilter;
    ///
    /// assert!(BloomFilter::<url_dedup_bloom::SipHash13>::read_from(&b"garbage"[..]).is_err());
    /// ```
    pub fn read_from<R: Read>(input: R) -> Result<Self, Error> {
        Self::read_from_with_limits(input, Limits::default())
    }

    /// [`read_from`](Self::read_from) with explicit [`Limits`], for input from the network.
    ///
    /// # Errors
    ///
    /// As [`read_from`](Self::read_from), plus [`SnapshotError::TooLarge`](crate::snapshot::SnapshotError::TooLarge).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::{BloomFilter, snapshot::Limits};
    ///
    /// let f = BloomFilter::builder().expected_items(100_000).build()?;
    /// let bytes = f.to_bytes();
    /// let tight = Limits { max_payload_bytes: 1024 };
    /// assert!(BloomFilter::<url_dedup_bloom::SipHash13>::read_from_with_limits(&bytes[..], tight).is_err());
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn read_from_with_limits<R: Read>(mut input: R, limits: Limits) -> Result<Self, Error> {
        let header = snapshot::read_header(&mut input, Kind::BLOOM, limits)?;
        let (shape, items) = Shape::<H>::from_header(&header)?;
        let words = header.read_payload(&mut input)?;
        shape.check_padding(words.last().copied().unwrap_or(0))?;
        Ok(Self::from_parts(shape, words, items))
    }

    /// The snapshot as bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_bloom::BloomFilter::builder().expected_items(10).build()?;
    /// assert_eq!(&f.to_bytes()[..8], b"URLDEDUP");
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.memory_bytes() as usize + 128);
        // Writing to a Vec cannot fail.
        let _ = self.write_to(&mut out);
        out
    }

    /// Reads a snapshot from bytes.
    ///
    /// # Errors
    ///
    /// As [`read_from`](Self::read_from).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::BloomFilter;
    ///
    /// let f = BloomFilter::builder().expected_items(10).build()?;
    /// assert_eq!(BloomFilter::from_bytes(&f.to_bytes())?, f);
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        Self::read_from(bytes)
    }

    /// Turns this filter into one that can be shared between threads.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = url_dedup_bloom::BloomFilter::builder().expected_items(10).build()?;
    /// f.insert("a");
    /// let shared = f.into_atomic();
    /// assert!(shared.contains("a"));
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn into_atomic(self) -> AtomicBloomFilter<H> {
        AtomicBloomFilter::from_parts(self.shape, self.bits.into_vec())
    }

    #[cfg(feature = "serde")]
    pub(crate) fn shape(&self) -> &Shape<H> {
        &self.shape
    }

    #[cfg(feature = "serde")]
    pub(crate) fn raw_words(&self) -> &[u64] {
        self.words()
    }
}

impl<H: ItemHasher, T: AsRef<[u8]>> Extend<T> for BloomFilter<H> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        for item in iter {
            self.check_and_insert(item);
        }
    }
}

impl<H: ItemHasher> PartialEq for BloomFilter<H> {
    fn eq(&self, other: &Self) -> bool {
        self.shape.compatible(&other.shape).is_ok() && self.words() == other.words()
    }
}

impl<H: ItemHasher> Eq for BloomFilter<H> {}

impl<H: ItemHasher> fmt::Debug for BloomFilter<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BloomFilter")
            .field("bits", &self.shape.bits)
            .field("hashes", &self.shape.hashes)
            .field("expected_items", &self.shape.expected_items)
            .field("items", &self.items)
            .field("hasher", &self.shape.hasher)
            .finish()
    }
}
