use std::fmt;

use url_dedup_bloom::hash::{Digest, HashKey, ItemHasher, SipHash13};
use url_dedup_bloom::sizing;

use crate::batch;
use crate::{Builder, Layout, MemoryStore, Probe, SegmentStore};

/// A Bloom filter split into segments: each item's bits all fall inside one segment.
///
/// Every method takes `&self`; share the filter between threads behind an `Arc`.
///
/// * **In memory** (`S = `[`MemoryStore`], the default): `check_and_insert`, `contains` and
///   their batch forms return plain `bool`s. One cache line per item with the default 512-bit
///   segments, and exactly-once admission under any number of threads.
/// * **Over any [`SegmentStore`]** (a Redis store, say): the `try_` methods return the store's
///   `Result`, and batches cost one store call.
///
/// # Exactly-once admission
///
/// When several threads call `check_and_insert` with the same item that is not yet in the
/// filter, exactly one of them gets `true`. A thread gets `false` for an item nobody inserted
/// only when that item is a genuine false positive: all its bits were already set by other
/// items before any thread inserted it. The guarantee holds for every store that honours the
/// [`SegmentStore`] contract.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use url_dedup_segmented::SegmentedBloomFilter;
///
/// let seen = Arc::new(
///     SegmentedBloomFilter::builder()
///         .expected_items(100_000)
///         .false_positive_rate(0.01)
///         .build()?,
/// );
/// let admitted = Arc::new(AtomicUsize::new(0));
/// let threads: Vec<_> = (0..4)
///     .map(|_| {
///         let (seen, admitted) = (Arc::clone(&seen), Arc::clone(&admitted));
///         std::thread::spawn(move || {
///             // Every thread discovers the same 1,000 URLs.
///             for i in 0..1_000 {
///                 if seen.check_and_insert(format!("https://example.com/{i}")) {
///                     admitted.fetch_add(1, Ordering::Relaxed);
///                 }
///             }
///         })
///     })
///     .collect();
/// for t in threads {
///     t.join().unwrap();
/// }
/// // Each URL was admitted by exactly one thread (up to false positives, none at this load).
/// assert_eq!(admitted.load(Ordering::Relaxed), 1_000);
/// # Ok::<(), url_dedup_segmented::Error>(())
/// ```
pub struct SegmentedBloomFilter<H = SipHash13, S = MemoryStore> {
    pub(crate) layout: Layout,
    pub(crate) hasher: H,
    pub(crate) expected_items: u64,
    pub(crate) store: S,
}

impl SegmentedBloomFilter<SipHash13, MemoryStore> {
    /// A builder for an in-memory filter keyed with a random SipHash key.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder()
    ///     .expected_items(1_000)
    ///     .build()?;
    /// assert_eq!(f.segment_bits(), 512);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn builder() -> Builder<SipHash13> {
        Builder::default()
    }
}

impl<H: ItemHasher, S: SegmentStore> SegmentedBloomFilter<H, S> {
    /// A filter over an existing store, using the store's layout.
    ///
    /// `expected_items` is what the layout was sized for (0 if unknown); it only feeds
    /// [`is_over_capacity`](Self::is_over_capacity). The hasher must be the one every other user
    /// of the store hashes with, or the filter will not find their items.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::{HashKey, SipHash13, ItemHasher};
    /// use url_dedup_segmented::{Layout, MemoryStore, SegmentedBloomFilter};
    ///
    /// let store = MemoryStore::new(Layout::for_items(1_000, 0.01, 512)?)?;
    /// let f = SegmentedBloomFilter::with_store(store, SipHash13::new(HashKey::from_bytes([3; 16])), 1_000);
    /// assert!(f.check_and_insert("a"));
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn with_store(store: S, hasher: H, expected_items: u64) -> Self {
        Self {
            layout: store.layout(),
            hasher,
            expected_items,
            store,
        }
    }

    /// Hashes an item with the filter's hasher.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(10).build()?;
    /// assert_eq!(f.hash("a"), f.hash("a"));
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    #[inline]
    pub fn hash(&self, item: impl AsRef<[u8]>) -> Digest {
        self.hasher.hash(item.as_ref())
    }

    /// Where an item's bits are: its segment and offset seed.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(1_000).build()?;
    /// assert!(f.probe("https://example.com/").segment < f.segments());
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    #[inline]
    pub fn probe(&self, item: impl AsRef<[u8]>) -> Probe {
        self.layout.probe(self.hash(item))
    }

    /// Inserts an item through the store; `Ok(true)` if it was new.
    ///
    /// # Errors
    ///
    /// The store's error.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(10).build()?;
    /// assert!(f.try_check_and_insert("a")?);
    /// assert!(!f.try_check_and_insert("a")?);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn try_check_and_insert(&self, item: impl AsRef<[u8]>) -> Result<bool, S::Error> {
        let mut out = Vec::with_capacity(1);
        self.store.check_and_insert(&[self.probe(item)], &mut out)?;
        Ok(out.first().copied().unwrap_or(false))
    }

    /// Whether an item may have been inserted, through the store.
    ///
    /// # Errors
    ///
    /// The store's error.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(10).build()?;
    /// assert!(!f.try_contains("a")?);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn try_contains(&self, item: impl AsRef<[u8]>) -> Result<bool, S::Error> {
        let mut out = Vec::with_capacity(1);
        self.store.contains(&[self.probe(item)], &mut out)?;
        Ok(out.first().copied().unwrap_or(false))
    }

    /// Inserts a batch with one store call; one answer per item, as if inserted one by one.
    ///
    /// # Errors
    ///
    /// The store's error.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(10).build()?;
    /// assert_eq!(f.try_check_and_insert_batch(&["a", "b", "a"])?, [true, true, false]);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn try_check_and_insert_batch<I: AsRef<[u8]>>(
        &self,
        items: &[I],
    ) -> Result<Vec<bool>, S::Error> {
        let probes: Vec<Probe> = items.iter().map(|i| self.probe(i)).collect();
        let mut out = Vec::with_capacity(items.len());
        self.store.check_and_insert(&probes, &mut out)?;
        Ok(out)
    }

    /// Looks up a batch with one store call.
    ///
    /// # Errors
    ///
    /// The store's error.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(10).build()?;
    /// f.try_check_and_insert("a")?;
    /// assert_eq!(f.try_contains_batch(&["a", "b"])?, [true, false]);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn try_contains_batch<I: AsRef<[u8]>>(&self, items: &[I]) -> Result<Vec<bool>, S::Error> {
        let probes: Vec<Probe> = items.iter().map(|i| self.probe(i)).collect();
        let mut out = Vec::with_capacity(items.len());
        self.store.contains(&probes, &mut out)?;
        Ok(out)
    }

    /// The geometry: segments, segment size, bits per item.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(10).build()?;
    /// assert_eq!(f.layout().segment_bits(), 512);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The store holding the segments.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(10).build()?;
    /// assert_eq!(f.store().count_ones(), 0);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn store(&self) -> &S {
        &self.store
    }

    /// Gives the store back.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(10).build()?;
    /// let store = f.into_store();
    /// assert_eq!(store.count_ones(), 0);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn into_store(self) -> S {
        self.store
    }

    /// The hasher's key.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::HashKey;
    ///
    /// let key = HashKey::from_bytes([1; 16]);
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(10).key(key).build()?;
    /// assert_eq!(f.key(), key);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn key(&self) -> HashKey {
        self.hasher.key()
    }

    /// The number of items the filter was sized for (0 if unknown).
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(10).build()?;
    /// assert_eq!(f.expected_items(), 10);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn expected_items(&self) -> u64 {
        self.expected_items
    }

    /// Total bits.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(10).build()?;
    /// assert_eq!(f.bits() % 512, 0);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn bits(&self) -> u64 {
        self.layout.bits()
    }

    /// Bits set per item.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(1_000).build()?;
    /// assert!((5..=9).contains(&f.hashes()));
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn hashes(&self) -> u32 {
        self.layout.hashes()
    }

    /// Number of segments.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(1_000).build()?;
    /// assert_eq!(f.segments() * 512, f.bits());
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn segments(&self) -> u64 {
        self.layout.segments()
    }

    /// Bits per segment.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder()
    ///     .expected_items(1_000)
    ///     .segment_bits(1 << 16)
    ///     .build()?;
    /// assert_eq!(f.segment_bits(), 1 << 16);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn segment_bits(&self) -> u64 {
        self.layout.segment_bits()
    }
}

impl<H: ItemHasher> SegmentedBloomFilter<H, MemoryStore> {
    /// Inserts an item; `true` if it was new. Same as
    /// [`check_and_insert`](Self::check_and_insert).
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(10).build()?;
    /// assert!(f.insert("a"));
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    #[inline]
    pub fn insert(&self, item: impl AsRef<[u8]>) -> bool {
        self.check_and_insert(item)
    }

    /// Inserts an item and reports whether it was new: exactly one of several threads
    /// inserting the same new item gets `true` (see the type-level documentation).
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(10).build()?;
    /// assert!(f.check_and_insert("https://example.com/"));
    /// assert!(!f.check_and_insert("https://example.com/"));
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    #[inline]
    pub fn check_and_insert(&self, item: impl AsRef<[u8]>) -> bool {
        self.check_and_insert_digest(self.hasher.hash(item.as_ref()))
    }

    /// [`check_and_insert`](Self::check_and_insert) for a precomputed [`Digest`].
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(10).build()?;
    /// assert!(f.check_and_insert_digest(f.hash("a")));
    /// assert!(f.contains("a"));
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    #[inline]
    pub fn check_and_insert_digest(&self, digest: Digest) -> bool {
        self.store.check_and_insert(self.layout.probe(digest))
    }

    /// [`check_and_insert`](Self::check_and_insert) through `&mut self`: the same answer, the
    /// same bits, and faster for a filter that one thread owns, since exclusive access needs no
    /// lock and no atomic read-modify-write (see [`MemoryStore::check_and_insert_mut`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(10).build()?;
    /// assert!(f.check_and_insert_mut("https://example.com/"));
    /// assert!(!f.check_and_insert_mut("https://example.com/"));
    /// assert!(f.contains("https://example.com/"));
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    #[inline(always)]
    pub fn check_and_insert_mut(&mut self, item: impl AsRef<[u8]>) -> bool {
        let digest = self.hasher.hash(item.as_ref());
        self.check_and_insert_digest_mut(digest)
    }

    /// [`check_and_insert_mut`](Self::check_and_insert_mut) for a precomputed [`Digest`].
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(10).build()?;
    /// let digest = f.hash("a");
    /// assert!(f.check_and_insert_digest_mut(digest));
    /// assert!(!f.check_and_insert_digest_mut(digest));
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    #[inline(always)]
    pub fn check_and_insert_digest_mut(&mut self, digest: Digest) -> bool {
        let probe = self.layout.probe(digest);
        self.store.check_and_insert_mut(probe)
    }

    /// Whether the item may have been inserted. Never writes.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(10).build()?;
    /// f.insert("a");
    /// assert!(f.contains("a"));
    /// assert!(!f.contains("b"));
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    #[inline(always)]
    pub fn contains(&self, item: impl AsRef<[u8]>) -> bool {
        self.contains_digest(self.hasher.hash(item.as_ref()))
    }

    /// [`contains`](Self::contains) for a precomputed [`Digest`].
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(10).build()?;
    /// assert!(!f.contains_digest(f.hash("a")));
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    #[inline(always)]
    pub fn contains_digest(&self, digest: Digest) -> bool {
        self.store.contains(self.layout.probe(digest))
    }

    /// Inserts a batch; one answer per item, exactly as inserting them one by one in order.
    ///
    /// Hashes a chunk of items and touches each item's segment first, then tests and sets: the
    /// cache misses of the whole chunk overlap instead of following one another, which is what
    /// makes filters far larger than the CPU cache several times faster per item.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(100).build()?;
    /// assert_eq!(f.check_and_insert_batch(&["a", "b", "a"]), [true, true, false]);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn check_and_insert_batch<I: AsRef<[u8]>>(&self, items: &[I]) -> Vec<bool> {
        let mut out = Vec::with_capacity(items.len());
        self.check_and_insert_batch_into(items, &mut out);
        out
    }

    /// [`check_and_insert_batch`](Self::check_and_insert_batch) appending to a caller's vector,
    /// so a crawler loop allocates nothing per batch.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(100).build()?;
    /// let mut new = Vec::new();
    /// f.check_and_insert_batch_into(&["a", "b"], &mut new);
    /// f.check_and_insert_batch_into(&["b", "c"], &mut new);
    /// assert_eq!(new, [true, true, false, true]);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn check_and_insert_batch_into<I: AsRef<[u8]>>(&self, items: &[I], out: &mut Vec<bool>) {
        out.reserve(items.len());
        pipelined(&mut &*self, items, |f, p| {
            out.push(f.store.check_and_insert(p))
        });
    }

    /// [`check_and_insert_batch`](Self::check_and_insert_batch) through `&mut self`: the same
    /// answers and bits, without the stripe locks, for a filter that one thread owns (see
    /// [`check_and_insert_mut`](Self::check_and_insert_mut)).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(100).build()?;
    /// assert_eq!(f.check_and_insert_batch_mut(&["a", "b", "a"]), [true, true, false]);
    /// assert!(f.contains("b"));
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn check_and_insert_batch_mut<I: AsRef<[u8]>>(&mut self, items: &[I]) -> Vec<bool> {
        let mut out = Vec::with_capacity(items.len());
        pipelined(self, items, |f, p| {
            out.push(f.store.check_and_insert_mut(p))
        });
        out
    }

    /// Looks up a batch, overlapping the cache misses like
    /// [`check_and_insert_batch`](Self::check_and_insert_batch).
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(100).build()?;
    /// f.insert("a");
    /// assert_eq!(f.contains_batch(&["a", "b"]), [true, false]);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn contains_batch<I: AsRef<[u8]>>(&self, items: &[I]) -> Vec<bool> {
        let mut out = Vec::with_capacity(items.len());
        pipelined(&mut &*self, items, |f, p| out.push(f.store.contains(p)));
        out
    }

    /// [`check_and_insert_batch`](Self::check_and_insert_batch) for digests computed
    /// beforehand with [`hash`](Self::hash), for instance on other threads: the same answers
    /// and bits as for the items they are digests of, with the cache misses overlapped.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(100).build()?;
    /// let digests = [f.hash("a"), f.hash("b"), f.hash("a")];
    /// assert_eq!(f.check_and_insert_digests(&digests), [true, true, false]);
    /// assert!(f.contains("b"));
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn check_and_insert_digests(&self, digests: &[Digest]) -> Vec<bool> {
        let mut out = Vec::with_capacity(digests.len());
        pipelined_by(
            &mut &*self,
            digests,
            |_, &d| d,
            |f, p| out.push(f.store.check_and_insert(p)),
        );
        out
    }

    /// [`check_and_insert_digests`](Self::check_and_insert_digests) through `&mut self`: the
    /// same answers and bits without the stripe locks, for a filter one thread owns (see
    /// [`check_and_insert_mut`](Self::check_and_insert_mut)).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(100).build()?;
    /// let digests = [f.hash("a"), f.hash("b"), f.hash("a")];
    /// assert_eq!(f.check_and_insert_digests_mut(&digests), [true, true, false]);
    /// assert!(f.contains("b"));
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn check_and_insert_digests_mut(&mut self, digests: &[Digest]) -> Vec<bool> {
        let mut out = Vec::with_capacity(digests.len());
        pipelined_by(
            self,
            digests,
            |_, &d| d,
            |f, p| out.push(f.store.check_and_insert_mut(p)),
        );
        out
    }

    /// [`contains_batch`](Self::contains_batch) for digests computed with
    /// [`hash`](Self::hash).
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(100).build()?;
    /// f.insert("a");
    /// assert_eq!(f.contains_digests(&[f.hash("a"), f.hash("b")]), [true, false]);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn contains_digests(&self, digests: &[Digest]) -> Vec<bool> {
        let mut out = Vec::with_capacity(digests.len());
        pipelined_by(
            &mut &*self,
            digests,
            |_, &d| d,
            |f, p| out.push(f.store.contains(p)),
        );
        out
    }

    /// An item's probe, with its segment requested from memory.
    #[inline]
    fn locate(&self, digest: Digest) -> Probe {
        let probe = self.layout.probe(digest);
        self.store.prefetch(probe.segment);
        probe
    }

    /// Number of bits set.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(10).build()?;
    /// f.insert("a");
    /// assert!((1..=f.hashes() as u64).contains(&f.count_ones()));
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn count_ones(&self) -> u64 {
        self.store.count_ones()
    }

    /// Fraction of bits set.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(10).build()?;
    /// assert_eq!(f.fill_ratio(), 0.0);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn fill_ratio(&self) -> f64 {
        self.count_ones() as f64 / self.bits() as f64
    }

    /// Swamidass–Baldi estimate of the number of distinct items inserted.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(10_000).build()?;
    /// (0..5_000).for_each(|i| { f.insert(i.to_string()); });
    /// assert!((f.estimated_items() - 5_000.0).abs() < 150.0);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn estimated_items(&self) -> f64 {
        sizing::estimate_items(self.bits(), self.hashes(), self.count_ones())
    }

    /// The expected false-positive rate at the estimated number of items.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(10).build()?;
    /// assert_eq!(f.estimated_fpr(), 0.0);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn estimated_fpr(&self) -> f64 {
        let items = self.estimated_items();
        if !items.is_finite() {
            return 1.0;
        }
        self.layout.false_positive_rate(items.round() as u64)
    }

    /// Whether the filter holds more distinct items (by estimate) than it was sized for, so
    /// its false-positive rate is above the target.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(10).build()?;
    /// assert!(!f.is_over_capacity());
    /// (0..200).for_each(|i| { f.insert(i.to_string()); });
    /// assert!(f.is_over_capacity());
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn is_over_capacity(&self) -> bool {
        self.expected_items > 0 && self.estimated_items() > self.expected_items as f64
    }

    /// Segments changed since the last checkpoint or snapshot.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(1_000).build()?;
    /// f.insert("a");
    /// assert_eq!(f.dirty_segments(), [f.probe("a").segment]);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn dirty_segments(&self) -> Vec<u64> {
        self.store.dirty_segments()
    }

    /// Heap bytes held.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(1_000).build()?;
    /// assert!(f.memory_bytes() >= f.bits() / 8);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn memory_bytes(&self) -> u64 {
        self.store.memory_bytes()
    }

    /// Removes every item.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(10).build()?;
    /// f.insert("a");
    /// f.clear();
    /// assert!(!f.contains("a"));
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn clear(&mut self) {
        self.store.clear();
    }
}

/// Calls `apply` on the probe of every item, in order, through [`batch::pipelined`]: hashing
/// and memory latency overlap instead of following one another. `filter` is
/// `&mut &SegmentedBloomFilter` for the shared paths and `&mut SegmentedBloomFilter` for the
/// exclusive one.
#[inline]
fn pipelined<F, H, I>(filter: &mut F, items: &[I], apply: impl FnMut(&mut F, Probe))
where
    F: std::borrow::Borrow<SegmentedBloomFilter<H, MemoryStore>>,
    H: ItemHasher,
    I: AsRef<[u8]>,
{
    pipelined_by(filter, items, |h, i| h.hash(i.as_ref()), apply);
}

/// [`pipelined`] for items that `digest` turns into digests (items, or digests already).
#[inline]
fn pipelined_by<F, H, T>(
    filter: &mut F,
    items: &[T],
    digest: impl Fn(&H, &T) -> Digest,
    apply: impl FnMut(&mut F, Probe),
) where
    F: std::borrow::Borrow<SegmentedBloomFilter<H, MemoryStore>>,
    H: ItemHasher,
{
    batch::pipelined(
        filter,
        items,
        |f, item| {
            let f = f.borrow();
            f.locate(digest(&f.hasher, item))
        },
        apply,
    );
}

impl<H: ItemHasher, S: fmt::Debug> fmt::Debug for SegmentedBloomFilter<H, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SegmentedBloomFilter")
            .field("layout", &self.layout)
            .field("hasher", &self.hasher)
            .field("expected_items", &self.expected_items)
            .field("store", &self.store)
            .finish()
    }
}
