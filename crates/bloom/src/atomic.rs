use std::fmt;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::builder::Builder;
use crate::hash::{Digest, HashKey, ItemHasher, SipHash13};
use crate::shape::Shape;
use crate::snapshot::{self, Kind, Limits};
use crate::{BloomFilter, Error};

/// A classic Bloom filter over atomic words: every method takes `&self`, and the filter is
/// `Send + Sync`, so threads share it behind an `Arc` with no lock.
///
/// # What concurrent `check_and_insert` guarantees
///
/// An item's `k` bits lie in up to `k` different words, and no single atomic instruction covers
/// them all. So:
///
/// * **No lost admission.** If an item is genuinely new (some of its bits are zero) and several
///   threads insert it at once, at least one of them is told `true`: every bit is set by exactly
///   one `fetch_or`, and whoever sets a bit reports the item as new.
/// * **Possible double admission.** Two threads racing on the same new item can both be told
///   `true` (each set a different one of its bits first). If your crawler must fetch a URL at
///   most once under concurrency, use the segmented filter (`url-dedup-segmented`), which keeps
///   an item's bits in one segment and admits each new item exactly once.
/// * Reads never write: a bit is tested with a plain load before any `fetch_or`, so queries and
///   re-insertions of known items do not bounce cache lines between cores.
///
/// Memory ordering is `Relaxed`: the filter publishes no other data, and a bit once set stays
/// set, so there is nothing for stronger orderings to protect.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use url_dedup_bloom::AtomicBloomFilter;
///
/// let filter = Arc::new(AtomicBloomFilter::builder().expected_items(10_000).build_atomic()?);
/// let handles: Vec<_> = (0..2)
///     .map(|t| {
///         let f = Arc::clone(&filter);
///         std::thread::spawn(move || {
///             for i in 0..1_000 {
///                 f.insert(format!("https://example.com/{t}/{i}"));
///             }
///         })
///     })
///     .collect();
/// for h in handles {
///     h.join().unwrap();
/// }
/// assert!(filter.contains("https://example.com/1/999"));
/// # Ok::<(), url_dedup_bloom::Error>(())
/// ```
pub struct AtomicBloomFilter<H = SipHash13> {
    shape: Shape<H>,
    words: Box<[AtomicU64]>,
}

impl AtomicBloomFilter<SipHash13> {
    /// A builder; finish it with [`Builder::build_atomic`].
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_bloom::AtomicBloomFilter::builder().expected_items(10).build_atomic()?;
    /// assert_eq!(f.hashes(), 7);
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn builder() -> Builder<SipHash13> {
        Builder::default()
    }
}

impl<H: ItemHasher> AtomicBloomFilter<H> {
    pub(crate) fn from_parts(shape: Shape<H>, words: Vec<u64>) -> Self {
        // Same size and alignment: this collect reuses the allocation.
        let words = words.into_iter().map(AtomicU64::new).collect();
        Self { shape, words }
    }

    /// Inserts an item; `true` if this call set at least one of its bits.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_bloom::AtomicBloomFilter::builder().expected_items(10).build_atomic()?;
    /// assert!(f.insert("a"));
    /// assert!(!f.insert("a"));
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    #[inline]
    pub fn insert(&self, item: impl AsRef<[u8]>) -> bool {
        self.check_and_insert(item)
    }

    /// Inserts an item and reports whether it was new; see the type-level documentation for
    /// what this means under concurrency.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_bloom::AtomicBloomFilter::builder().expected_items(10).build_atomic()?;
    /// assert!(f.check_and_insert("https://example.com/"));
    /// assert!(!f.check_and_insert("https://example.com/"));
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    #[inline]
    pub fn check_and_insert(&self, item: impl AsRef<[u8]>) -> bool {
        self.check_and_insert_digest(self.shape.digest(item.as_ref()))
    }

    /// [`check_and_insert`](Self::check_and_insert) for a precomputed [`Digest`].
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_bloom::AtomicBloomFilter::builder().expected_items(10).build_atomic()?;
    /// assert!(f.check_and_insert_digest(f.hash("a")));
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    #[inline]
    pub fn check_and_insert_digest(&self, digest: Digest) -> bool {
        self.shape.fold_positions(digest, false, |new, w, mask| {
            let word = &self.words[w];
            // Test first: a set bit costs a shared read, not an exclusive cache-line write.
            new | (word.load(Relaxed) & mask == 0 && word.fetch_or(mask, Relaxed) & mask == 0)
        })
    }

    /// Whether the item may have been inserted.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_bloom::AtomicBloomFilter::builder().expected_items(10).build_atomic()?;
    /// f.insert("a");
    /// assert!(f.contains("a") && !f.contains("b"));
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
    /// let f = url_dedup_bloom::AtomicBloomFilter::builder().expected_items(10).build_atomic()?;
    /// assert!(!f.contains_digest(f.hash("a")));
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    #[inline]
    pub fn contains_digest(&self, digest: Digest) -> bool {
        // Branch-free like `BloomFilter::contains_digest`: all K loads in flight at once.
        self.shape.fold_positions(digest, 0u64, |missing, w, mask| {
            missing | (mask & !self.words[w].load(Relaxed))
        }) == 0
    }

    /// Hashes an item with this filter's hasher.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_bloom::AtomicBloomFilter::builder().expected_items(10).build_atomic()?;
    /// assert_eq!(f.hash("a"), f.hash("a"));
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    #[inline]
    pub fn hash(&self, item: impl AsRef<[u8]>) -> Digest {
        self.shape.digest(item.as_ref())
    }

    /// Number of bits `m`.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_bloom::AtomicBloomFilter::builder().bits(100).build_atomic()?;
    /// assert_eq!(f.bits(), 100);
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn bits(&self) -> u64 {
        self.shape.bits
    }

    /// Number of bits `k` per item.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_bloom::AtomicBloomFilter::builder().bits(100).hashes(3).build_atomic()?;
    /// assert_eq!(f.hashes(), 3);
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
    /// let f = url_dedup_bloom::AtomicBloomFilter::builder().expected_items(5).build_atomic()?;
    /// assert_eq!(f.expected_items(), 5);
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn expected_items(&self) -> u64 {
        self.shape.expected_items
    }

    /// The hasher's key.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::{AtomicBloomFilter, hash::HashKey};
    ///
    /// let key = HashKey::from_bytes([8; 16]);
    /// let f = AtomicBloomFilter::builder().expected_items(5).key(key).build_atomic()?;
    /// assert_eq!(f.key(), key);
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn key(&self) -> HashKey {
        self.shape.hasher.key()
    }

    /// Number of bits set (a moment's view while other threads insert).
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_bloom::AtomicBloomFilter::builder().bits(1 << 12).hashes(2).build_atomic()?;
    /// f.insert("a");
    /// assert!((1..=2).contains(&f.count_ones()));
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn count_ones(&self) -> u64 {
        self.words
            .iter()
            .map(|w| u64::from(w.load(Relaxed).count_ones()))
            .sum()
    }

    /// Fraction of bits set.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_bloom::AtomicBloomFilter::builder().bits(64).build_atomic()?;
    /// assert_eq!(f.fill_ratio(), 0.0);
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn fill_ratio(&self) -> f64 {
        self.count_ones() as f64 / self.shape.bits as f64
    }

    /// Swamidass–Baldi estimate of the number of distinct items.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_bloom::AtomicBloomFilter::builder().expected_items(1_000).build_atomic()?;
    /// (0..500).for_each(|i| { f.insert(i.to_string()); });
    /// assert!((f.estimated_items() - 500.0).abs() < 30.0);
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn estimated_items(&self) -> f64 {
        self.shape.estimate(self.count_ones())
    }

    /// The false-positive rate now.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_bloom::AtomicBloomFilter::builder().expected_items(10).build_atomic()?;
    /// assert_eq!(f.estimated_fpr(), 0.0);
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn estimated_fpr(&self) -> f64 {
        self.shape.fpr_at(self.count_ones())
    }

    /// Whether the filter holds more distinct items (by estimate) than it was sized for.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_bloom::AtomicBloomFilter::builder().expected_items(10).build_atomic()?;
    /// (0..100).for_each(|i| { f.insert(i.to_string()); });
    /// assert!(f.is_over_capacity());
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn is_over_capacity(&self) -> bool {
        self.estimated_items() > self.shape.expected_items as f64
    }

    /// Adds every item of `other` (word-wise atomic OR).
    ///
    /// # Errors
    ///
    /// [`Error::Incompatible`] unless size, hashes and key match.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::{AtomicBloomFilter, hash::HashKey};
    ///
    /// let b = AtomicBloomFilter::builder().expected_items(10).key(HashKey::from_bytes([1; 16]));
    /// let (x, y) = (b.clone().build_atomic()?, b.build_atomic()?);
    /// y.insert("b");
    /// x.union(&y)?;
    /// assert!(x.contains("b"));
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn union(&self, other: &Self) -> Result<(), Error> {
        self.shape.compatible(&other.shape)?;
        for (a, b) in self.words.iter().zip(other.words.iter()) {
            a.fetch_or(b.load(Relaxed), Relaxed);
        }
        Ok(())
    }

    /// Keeps only bits set in both filters (word-wise atomic AND).
    ///
    /// # Errors
    ///
    /// [`Error::Incompatible`] unless size, hashes and key match.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::{AtomicBloomFilter, hash::HashKey};
    ///
    /// let b = AtomicBloomFilter::builder().expected_items(10).key(HashKey::from_bytes([1; 16]));
    /// let (x, y) = (b.clone().build_atomic()?, b.build_atomic()?);
    /// x.insert("a");
    /// x.intersect(&y)?;
    /// assert!(!x.contains("a"));
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn intersect(&self, other: &Self) -> Result<(), Error> {
        self.shape.compatible(&other.shape)?;
        for (a, b) in self.words.iter().zip(other.words.iter()) {
            a.fetch_and(b.load(Relaxed), Relaxed);
        }
        Ok(())
    }

    /// Removes every item. Inserts racing with `clear` may or may not survive it.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_bloom::AtomicBloomFilter::builder().expected_items(10).build_atomic()?;
    /// f.insert("a");
    /// f.clear();
    /// assert!(!f.contains("a"));
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn clear(&self) {
        for w in self.words.iter() {
            w.store(0, Relaxed);
        }
    }

    /// Memory held by the bits, in bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_bloom::AtomicBloomFilter::builder().bits(640).build_atomic()?;
    /// assert_eq!(f.memory_bytes(), 80);
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn memory_bytes(&self) -> u64 {
        self.shape.words() * 8
    }

    /// Writes a snapshot in the same format as [`BloomFilter::write_to`]; the two types read
    /// each other's snapshots. Inserts that race with the write may or may not be included.
    ///
    /// # Errors
    ///
    /// [`Error::Snapshot`] when writing fails.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::{AtomicBloomFilter, BloomFilter};
    ///
    /// let f = AtomicBloomFilter::builder().expected_items(10).build_atomic()?;
    /// f.insert("a");
    /// let mut buf = Vec::new();
    /// f.write_to(&mut buf)?;
    /// let g: BloomFilter = BloomFilter::read_from(&buf[..])?;
    /// assert!(g.contains("a"));
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn write_to<W: Write>(&self, out: W) -> Result<(), Error> {
        let items = self.estimated_items().round() as u64;
        let params = self.shape.params(items);
        snapshot::write(
            out,
            Kind::BLOOM,
            params.as_bytes(),
            self.shape.words(),
            self.words.iter().map(|w| w.load(Relaxed)),
        )?;
        Ok(())
    }

    /// Reads a snapshot with the default [`Limits`].
    ///
    /// # Errors
    ///
    /// As [`BloomFilter::read_from`].
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::AtomicBloomFilter;
    ///
    /// let f = AtomicBloomFilter::builder().expected_items(10).build_atomic()?;
    /// let g: AtomicBloomFilter = AtomicBloomFilter::read_from(&f.to_bytes()[..])?;
    /// assert_eq!(g.bits(), f.bits());
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn read_from<R: Read>(input: R) -> Result<Self, Error> {
        Self::read_from_with_limits(input, Limits::default())
    }

    /// Reads a snapshot with explicit [`Limits`].
    ///
    /// # Errors
    ///
    /// As [`BloomFilter::read_from_with_limits`].
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::{AtomicBloomFilter, snapshot::Limits};
    ///
    /// let f = AtomicBloomFilter::builder().expected_items(10_000).build_atomic()?;
    /// let tight = Limits { max_payload_bytes: 64 };
    /// let g: Result<AtomicBloomFilter, _> = AtomicBloomFilter::read_from_with_limits(&f.to_bytes()[..], tight);
    /// assert!(g.is_err());
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn read_from_with_limits<R: Read>(input: R, limits: Limits) -> Result<Self, Error> {
        BloomFilter::<H>::read_from_with_limits(input, limits).map(BloomFilter::into_atomic)
    }

    /// The snapshot as bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_bloom::AtomicBloomFilter::builder().expected_items(10).build_atomic()?;
    /// assert_eq!(&f.to_bytes()[..8], b"URLDEDUP");
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.memory_bytes() as usize + 128);
        let _ = self.write_to(&mut out);
        out
    }

    /// A single-owner copy of the current bits.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_bloom::AtomicBloomFilter::builder().expected_items(10).build_atomic()?;
    /// f.insert("a");
    /// assert!(f.to_filter().contains("a"));
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn to_filter(&self) -> BloomFilter<H> {
        let words = self.words.iter().map(|w| w.load(Relaxed)).collect();
        let items = self.estimated_items().round() as u64;
        BloomFilter::from_parts(self.shape.clone(), words, items)
    }
}

impl<H: ItemHasher> From<BloomFilter<H>> for AtomicBloomFilter<H> {
    fn from(filter: BloomFilter<H>) -> Self {
        filter.into_atomic()
    }
}

impl<H: ItemHasher> fmt::Debug for AtomicBloomFilter<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AtomicBloomFilter")
            .field("bits", &self.shape.bits)
            .field("hashes", &self.shape.hashes)
            .field("expected_items", &self.shape.expected_items)
            .field("hasher", &self.shape.hasher)
            .finish()
    }
}
