//! A segmented filter that grows: when its newest layer is full it adds a larger one with a
//! tighter rate, so a lookup stays below the target rate however wrong the first estimate was.
//!
//! # Layers
//!
//! Layer `i` is an ordinary in-memory segmented filter sized by [`Growth::layer`]: `first ×
//! factor^i` items at `target × (1 − tightening) × tightening^i`. Only the newest layer takes
//! new items; a lookup asks every layer, newest first, and finds an item in the layer that
//! admitted it. The layers' rates form a geometric series whose sum stays below the target.
//!
//! # Exactly-once admission while growing
//!
//! A new item is tested against the older layers, then admitted into the newest one under its
//! segment's stripe lock, exactly as in [`SegmentedBloomFilter`](crate::SegmentedBloomFilter).
//! Growth must not let two threads admit the same item into two different layers, so the
//! grower first *seals* the newest layer: it takes every stripe lock of that layer once and
//! sets a flag that later admissions check under their lock. An admission that got its lock
//! before the seal has finished writing when the seal completes; one that comes after sees the
//! flag, writes nothing and starts again against the new list of layers, in which the sealed
//! layer is now an older layer that it tests. Only then is the new layer published. The new
//! layer is allocated before the seal, so the sealed window is a few microseconds.
//!
//! # Counting
//!
//! Each stripe counts the admissions made under its lock, in the lock's own cache line, and
//! reports them to the layer in steps (a power of two), so the shared counter is touched
//! rarely. Growth starts when the reported count passes the layer's capacity: never before
//! the layer holds its capacity, and at most 1/256 of it later (what the stripes hold back
//! unreported). A layer is sized for 1/128 more than its capacity, so the items admitted
//! before growth starts, and those other threads admit while the next layer is allocated,
//! stay within its rate.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use url_dedup_bloom::hash::{Digest, HashKey, ItemHasher, SipHash13};
use url_dedup_bloom::sizing::Growth;

use crate::batch;
use crate::memory::Admission;
use crate::{Error, Layout, MemoryStore, Placement, Probe};

/// The most layers a filter adds. With the smallest factor, 2, layer 40 alone would hold
/// 2^40 times the first estimate: memory runs out long before.
pub const MAX_LAYERS: usize = 40;

/// What decides the size of every layer: the first layer's capacity, the target rate of a
/// lookup, the growth schedule, and the segment geometry.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct GrowthPlan {
    /// Items the first layer holds.
    pub first_capacity: u64,
    /// The rate no lookup exceeds, whatever the number of layers.
    pub target_fpr: f64,
    /// How capacities grow and rates tighten from layer to layer.
    pub growth: Growth,
    /// Bits per segment in every layer.
    pub segment_bits: u64,
    /// Where an item's bits go inside its segment.
    pub placement: Placement,
}

impl GrowthPlan {
    /// The layout, capacity and rate of layer `index`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameters`] when the layer cannot be sized (a capacity past 2^64 bits,
    /// a rate no segment of this size reaches).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_segmented::GrowingFilter;
    ///
    /// let f = GrowingFilter::builder().expected_items(1_000).false_positive_rate(0.01).build()?;
    /// let plan = f.plan();
    /// let (first, _, rate) = plan.layer(0)?;
    /// let (second, capacity, _) = plan.layer(1)?;
    /// assert_eq!(capacity, 2_000);
    /// assert!(rate < 0.01 && second.bits() > first.bits());
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn layer(&self, index: u32) -> Result<(Layout, u64, f64), Error> {
        let (capacity, fpr) = self
            .growth
            .layer(self.first_capacity, self.target_fpr, index);
        let layout = Layout::for_items_with(
            with_headroom(capacity),
            fpr,
            self.segment_bits,
            self.placement,
        )?;
        Ok((layout, capacity, fpr))
    }

    pub(crate) fn validate(&self) -> Result<(), Error> {
        self.growth.validate()?;
        if self.first_capacity == 0 {
            return Err(Error::InvalidParameters(
                "expected items must be at least 1",
            ));
        }
        if !(self.target_fpr > 0.0 && self.target_fpr < 1.0) {
            return Err(Error::InvalidParameters(
                "false-positive rate must be strictly between 0 and 1",
            ));
        }
        Ok(())
    }
}

/// Items a layer of `capacity` is sized for: 1/128 more (and one), twice what its stripes may
/// hold back unreported when growth starts (see [`Layer::new`]), the rest for what other
/// threads admit while the next layer is allocated.
fn with_headroom(capacity: u64) -> u64 {
    capacity.saturating_add(capacity / 128 + 1)
}

/// One layer: an in-memory segmented store and its share of the plan.
pub(crate) struct Layer {
    pub(crate) layout: Layout,
    pub(crate) capacity: u64,
    pub(crate) fpr: f64,
    pub(crate) store: MemoryStore,
    /// Admissions reported by the stripes, in steps of `step`.
    reported: AtomicU64,
    /// Each stripe reports every `step`-th admission of its own (a power of two).
    step: u64,
}

impl Layer {
    pub(crate) fn new(
        layout: Layout,
        capacity: u64,
        fpr: f64,
        store: MemoryStore,
    ) -> Result<Self, Error> {
        if store.layout() != layout {
            return Err(Error::Incompatible("layer store and layout differ"));
        }
        // Each stripe holds back fewer than `step` admissions, so growth, which starts when
        // the reported count passes the capacity, starts at most `stripes × (step − 1)` ≤
        // capacity / 256 admissions late (plus the reporting stripe's own step, at most as
        // much again over the stripes).
        let stripes = store.stripe_count().max(1) as u64;
        let most = capacity / stripes.saturating_mul(256) + 1;
        let step = 1 << most.ilog2();
        let reported = AtomicU64::new(store.admitted());
        Ok(Self {
            layout,
            capacity,
            fpr,
            store,
            reported,
            step,
        })
    }

    #[inline]
    fn probe(&self, digest: Digest) -> Probe {
        self.layout.probe(digest)
    }

    /// Whether a stripe whose count is now `count` reports to the layer.
    #[inline]
    fn reports(&self, count: u64) -> bool {
        count & (self.step - 1) == 0
    }
}

/// A segmented Bloom filter that adds layers as it fills, keeping every lookup's
/// false-positive rate below its target however many items arrive.
///
/// Use it when the number of distinct items is a guess: a list of unknown length, a crawl of
/// unknown size. It answers like [`SegmentedBloomFilter`](crate::SegmentedBloomFilter) (same
/// `&self` methods, `Send + Sync`, exactly-once admission across threads, prefetching batches)
/// and costs one extra cache miss per older layer for items that are not in the newest one.
///
/// # Examples
///
/// ```
/// use url_dedup_segmented::GrowingFilter;
///
/// // Sized for 1,000 URLs, handed 50,000.
/// let seen = GrowingFilter::builder().expected_items(1_000).false_positive_rate(0.001).build()?;
/// let mut new = 0;
/// for i in 0..50_000 {
///     if seen.check_and_insert(format!("https://example.com/{i}")) {
///         new += 1;
///     }
/// }
/// assert!(seen.layers() >= 6);
/// assert!(seen.expected_fpr() < 0.001);
/// // Each lookup is a false positive with probability below 1/1,000: about 25 of 50,000 here.
/// assert!(new >= 49_900);
/// assert!(seen.contains("https://example.com/7"));
/// # Ok::<(), url_dedup_segmented::Error>(())
/// ```
pub struct GrowingFilter<H = SipHash13> {
    pub(crate) hasher: H,
    pub(crate) plan: GrowthPlan,
    /// Layers `0..published`, each set once.
    pub(crate) layers: Box<[OnceLock<Layer>]>,
    published: AtomicUsize,
    /// Held by the thread that adds a layer.
    grower: Mutex<()>,
    /// Set when a layer could not be added (out of memory, past [`MAX_LAYERS`]): the newest
    /// layer then keeps taking items past its capacity.
    stalled: AtomicBool,
}

/// Whether an item is a duplicate held by a layer older than `newest` (`older`, oldest
/// first): older layers are only read. With older layers, the newest layer is asked first
/// (its pre-test; a grown filter's recent duplicates are there), then the older ones, newest
/// first. `false` without older layers, where the newest layer's admission decides alone.
#[inline]
fn in_older_layers<'a>(
    newest: &Layer,
    probe: Probe,
    older: impl DoubleEndedIterator<Item = &'a Layer> + Clone,
    digest: Digest,
) -> bool {
    older.clone().next().is_some()
        && (newest.store.contains(probe) || older.rev().any(|l| l.store.contains(l.probe(digest))))
}

/// Configures a [`GrowingFilter`].
///
/// # Examples
///
/// ```
/// use url_dedup_bloom::sizing::Growth;
/// use url_dedup_segmented::GrowingFilter;
///
/// let f = GrowingFilter::builder()
///     .expected_items(100_000)
///     .false_positive_rate(1e-6)
///     .growth(Growth { factor: 4, tightening: 0.5 })
///     .build()?;
/// assert_eq!(f.plan().growth.factor, 4);
/// # Ok::<(), url_dedup_segmented::Error>(())
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct GrowingBuilder<H = SipHash13> {
    expected_items: u64,
    fpr: f64,
    growth: Growth,
    segment_bits: Option<u64>,
    placement: Placement,
    hasher: Option<H>,
}

impl Default for GrowingBuilder<SipHash13> {
    fn default() -> Self {
        Self {
            expected_items: 1_000_000,
            fpr: 0.001,
            growth: Growth::default(),
            segment_bits: None,
            placement: Placement::Scattered,
            hasher: None,
        }
    }
}

impl<H: ItemHasher> GrowingBuilder<H> {
    /// Items the first layer holds (default one million): a guess is fine.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::GrowingFilter::builder().expected_items(10).build()?;
    /// assert_eq!(f.plan().first_capacity, 10);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn expected_items(mut self, items: u64) -> Self {
        self.expected_items = items;
        self
    }

    /// The false-positive rate no lookup exceeds, however many layers are added (default
    /// 0.1%).
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::GrowingFilter::builder().false_positive_rate(0.01).build()?;
    /// assert_eq!(f.plan().target_fpr, 0.01);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn false_positive_rate(mut self, fpr: f64) -> Self {
        self.fpr = fpr;
        self
    }

    /// The growth schedule (default [`Growth::default`]: double the capacity, 0.3 times the
    /// rate).
    ///
    /// # Examples
    ///
    /// See [`GrowingBuilder`].
    pub fn growth(mut self, growth: Growth) -> Self {
        self.growth = growth;
        self
    }

    /// Bits per segment. By default the smallest of 512 (one cache line), 1024, 2048 and 4096
    /// whose size stays within 25% of a classic filter at the first layer's rate (see
    /// [`Layout::compact_segment_bits`]): one line at everyday rates, a few adjacent lines for
    /// rates near one in a billion, where a single line would need nearly twice the bits.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_segmented::GrowingFilter;
    ///
    /// assert_eq!(GrowingFilter::builder().false_positive_rate(0.01).build()?.plan().segment_bits, 512);
    /// assert_eq!(GrowingFilter::builder().false_positive_rate(1e-9).build()?.plan().segment_bits, 2048);
    /// let f = GrowingFilter::builder().segment_bits(1024).build()?;
    /// assert_eq!(f.plan().segment_bits, 1024);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn segment_bits(mut self, bits: u64) -> Self {
        self.segment_bits = Some(bits);
        self
    }

    /// Where an item's bits go inside its segment (default [`Placement::Scattered`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_segmented::{GrowingFilter, Placement};
    ///
    /// let f = GrowingFilter::builder().false_positive_rate(0.01).placement(Placement::Split).build()?;
    /// assert_eq!(f.plan().placement, Placement::Split);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn placement(mut self, placement: Placement) -> Self {
        self.placement = placement;
        self
    }

    /// Keys the hasher (default: a random key).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::HashKey;
    ///
    /// let key = HashKey::from_bytes([9; 16]);
    /// let f = url_dedup_segmented::GrowingFilter::builder().key(key).build()?;
    /// assert_eq!(f.key(), key);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn key(mut self, key: HashKey) -> Self {
        self.hasher = Some(H::from_key(key));
        self
    }

    /// Hashes with another [`ItemHasher`].
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::{HashKey, ItemHasher, Xxh3};
    ///
    /// let f = url_dedup_segmented::GrowingFilter::builder()
    ///     .hasher(Xxh3::new(HashKey::from_bytes([1; 16])))
    ///     .build()?;
    /// assert!(f.check_and_insert("a"));
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn hasher<H2: ItemHasher>(self, hasher: H2) -> GrowingBuilder<H2> {
        GrowingBuilder {
            expected_items: self.expected_items,
            fpr: self.fpr,
            growth: self.growth,
            segment_bits: self.segment_bits,
            placement: self.placement,
            hasher: Some(hasher),
        }
    }

    /// The plan this builder describes, with the segment size resolved.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameters`] for out-of-range counts, rates or growth.
    ///
    /// # Examples
    ///
    /// ```
    /// let plan = url_dedup_segmented::GrowingFilter::builder().expected_items(5).plan()?;
    /// assert_eq!(plan.first_capacity, 5);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn plan(&self) -> Result<GrowthPlan, Error> {
        let mut plan = GrowthPlan {
            first_capacity: self.expected_items,
            target_fpr: self.fpr,
            growth: self.growth,
            segment_bits: 512,
            placement: self.placement,
        };
        plan.validate()?;
        plan.segment_bits = match self.segment_bits {
            Some(bits) => bits,
            None => Layout::compact_segment_bits(plan.growth.layer(1, plan.target_fpr, 0).1),
        };
        Ok(plan)
    }

    /// Builds an empty filter with its first layer.
    ///
    /// # Errors
    ///
    /// As [`plan`](Self::plan); [`Error::OutOfMemory`] when the first layer cannot be
    /// allocated.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(url_dedup_segmented::GrowingFilter::builder().false_positive_rate(0.0).build().is_err());
    /// ```
    pub fn build(self) -> Result<GrowingFilter<H>, Error> {
        let plan = self.plan()?;
        let (layout, capacity, fpr) = plan.layer(0)?;
        let first = Layer::new(layout, capacity, fpr, MemoryStore::new(layout)?)?;
        let hasher = self.hasher.unwrap_or_else(H::random);
        GrowingFilter::from_layers(hasher, plan, vec![first])
    }
}

impl GrowingFilter<SipHash13> {
    /// A builder keyed with a random SipHash key.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::GrowingFilter::builder().build()?;
    /// assert_eq!(f.layers(), 1);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn builder() -> GrowingBuilder<SipHash13> {
        GrowingBuilder::default()
    }
}

/// One layer of a [`GrowingFilter`] as separate parts, to move layers between the in-memory
/// filter and another store (a shared filter in Redis keeps its layers there).
#[derive(Debug)]
pub struct LayerParts {
    /// The layer's bits.
    pub store: MemoryStore,
    /// Items the layer holds at its rate.
    pub capacity: u64,
    /// The layer's rate at its capacity.
    pub fpr: f64,
    /// Items admitted into the layer (it grows the filter once this reaches `capacity`).
    pub admitted: u64,
}

impl<H: ItemHasher> GrowingFilter<H> {
    /// A filter made of existing layers, oldest first, growing on `plan` from there. Each
    /// store's admission count says how full it is.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameters`] for no layer or more than [`MAX_LAYERS`], or an invalid
    /// plan.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::{HashKey, ItemHasher, SipHash13};
    /// use url_dedup_segmented::{GrowingFilter, LayerParts, MemoryStore};
    ///
    /// let f = GrowingFilter::builder().expected_items(100).build()?;
    /// f.check_and_insert("a");
    /// let parts = f
    ///     .layer_stores()
    ///     .into_iter()
    ///     .map(|(store, capacity, fpr)| {
    ///         let copy = MemoryStore::new(store.layout())?;
    ///         for segment in 0..store.layout().segments() {
    ///             let mut words = Vec::new();
    ///             store.read_segment(segment, &mut words)?;
    ///             copy.merge_segment(segment, &words)?;
    ///         }
    ///         Ok(LayerParts { store: copy, capacity, fpr, admitted: store.admitted() })
    ///     })
    ///     .collect::<Result<Vec<_>, url_dedup_segmented::Error>>()?;
    /// let g = GrowingFilter::from_parts(SipHash13::new(f.key()), f.plan(), parts)?;
    /// assert!(g.contains("a"));
    /// assert_eq!(g.admitted(), 1);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn from_parts(hasher: H, plan: GrowthPlan, layers: Vec<LayerParts>) -> Result<Self, Error> {
        plan.validate()?;
        let layers = layers
            .into_iter()
            .map(|l| {
                let mut store = l.store;
                store.set_admitted(l.admitted);
                Layer::new(store.layout(), l.capacity, l.fpr, store)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Self::from_layers(hasher, plan, layers)
    }

    /// Every layer's store, capacity and rate, oldest first.
    ///
    /// # Examples
    ///
    /// See [`from_parts`](Self::from_parts).
    pub fn layer_stores(&self) -> Vec<(&MemoryStore, u64, f64)> {
        self.live_layers()
            .map(|l| (&l.store, l.capacity, l.fpr))
            .collect()
    }

    /// A filter over existing layers (a restored snapshot), oldest first.
    pub(crate) fn from_layers(
        hasher: H,
        plan: GrowthPlan,
        layers: Vec<Layer>,
    ) -> Result<Self, Error> {
        if layers.is_empty() || layers.len() > MAX_LAYERS {
            return Err(Error::InvalidParameters(
                "a growing filter has 1 to 40 layers",
            ));
        }
        let published = layers.len();
        let slots: Box<[OnceLock<Layer>]> = (0..MAX_LAYERS).map(|_| OnceLock::new()).collect();
        for (slot, layer) in slots.iter().zip(layers) {
            let _ = slot.set(layer);
        }
        Ok(Self {
            hasher,
            plan,
            layers: slots,
            published: AtomicUsize::new(published),
            grower: Mutex::new(()),
            stalled: AtomicBool::new(false),
        })
    }

    /// The published layers, oldest first.
    #[inline]
    pub(crate) fn live_layers(&self) -> impl DoubleEndedIterator<Item = &Layer> + Clone {
        let published = self.published.load(Ordering::Acquire);
        self.layers[..published.min(MAX_LAYERS)]
            .iter()
            .filter_map(OnceLock::get)
    }

    /// Hashes an item with the filter's hasher.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::GrowingFilter::builder().build()?;
    /// assert_eq!(f.hash("a"), f.hash("a"));
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    #[inline]
    pub fn hash(&self, item: impl AsRef<[u8]>) -> Digest {
        self.hasher.hash(item.as_ref())
    }

    /// Inserts an item and reports whether it was new: exactly one of several threads
    /// inserting the same new item gets `true`, also while a layer is being added.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::GrowingFilter::builder().build()?;
    /// assert!(f.check_and_insert("https://example.com/"));
    /// assert!(!f.check_and_insert("https://example.com/"));
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    #[inline]
    pub fn check_and_insert(&self, item: impl AsRef<[u8]>) -> bool {
        self.check_and_insert_digest(self.hash(item))
    }

    /// [`check_and_insert`](Self::check_and_insert) for a precomputed [`Digest`].
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::GrowingFilter::builder().build()?;
    /// assert!(f.check_and_insert_digest(f.hash("a")));
    /// assert!(f.contains("a"));
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn check_and_insert_digest(&self, digest: Digest) -> bool {
        loop {
            let published = self.published.load(Ordering::Acquire);
            let mut layers = self.live_layers();
            let Some(newest) = layers.next_back() else {
                return false;
            };
            let probe = newest.probe(digest);
            // The newest layer's own pre-test runs inside `admit_unless_sealed`.
            if in_older_layers(newest, probe, layers, digest) {
                return false;
            }
            match newest.store.admit_unless_sealed(probe) {
                Admission::New(stripe_count) => {
                    if newest.reports(stripe_count) {
                        self.report(published, newest);
                    }
                    return true;
                }
                Admission::Present => return false,
                Admission::Sealed => {
                    // A grower sealed this layer and is about to publish the next one.
                    if self.published.load(Ordering::Acquire) == published {
                        std::thread::yield_now();
                    }
                }
            }
        }
    }

    /// [`check_and_insert`](Self::check_and_insert) through `&mut self`: the same answer and
    /// bits without stripe locks, for a filter that one thread owns (see
    /// [`MemoryStore::check_and_insert_mut`]).
    ///
    /// # Examples
    ///
    /// ```
    /// // At one in a billion, 1,000 new URLs are all admitted (at the default 10^-3, about one
    /// // run in six would take one of them for seen).
    /// let mut f = url_dedup_segmented::GrowingFilter::builder()
    ///     .expected_items(10)
    ///     .false_positive_rate(1e-9)
    ///     .build()?;
    /// for i in 0..1_000 {
    ///     assert!(f.check_and_insert_mut(format!("https://example.com/{i}")));
    /// }
    /// assert!(!f.check_and_insert_mut("https://example.com/7"));
    /// assert!(f.layers() > 1);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn check_and_insert_mut(&mut self, item: impl AsRef<[u8]>) -> bool {
        let digest = self.hash(item);
        self.check_and_insert_digest_mut(digest)
    }

    /// [`check_and_insert_mut`](Self::check_and_insert_mut) for a precomputed [`Digest`].
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = url_dedup_segmented::GrowingFilter::builder().build()?;
    /// let digest = f.hash("a");
    /// assert!(f.check_and_insert_digest_mut(digest));
    /// assert!(!f.check_and_insert_digest_mut(digest));
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn check_and_insert_digest_mut(&mut self, digest: Digest) -> bool {
        let published = (*self.published.get_mut()).min(MAX_LAYERS);
        let Some(newest_index) = published.checked_sub(1) else {
            return false;
        };
        let (older, newest) = self.layers[..published].split_at_mut(newest_index);
        let Some(newest) = newest.first_mut().and_then(OnceLock::get_mut) else {
            return false;
        };
        let probe = newest.probe(digest);
        // No other thread can grow or seal the filter meanwhile, so the newest layer takes the
        // item unless an older one has it.
        if in_older_layers(
            newest,
            probe,
            older.iter().filter_map(OnceLock::get),
            digest,
        ) {
            return false;
        }
        let Some(stripe_count) = newest.store.admit_mut(probe) else {
            return false;
        };
        if newest.reports(stripe_count)
            && let Some(newest) = self.layers[newest_index].get()
        {
            self.report(published, newest);
        }
        true
    }

    /// A stripe of the newest of `published` layers counted another `step` admissions: the
    /// filter grows once the layer holds more than its capacity.
    #[cold]
    fn report(&self, published: usize, layer: &Layer) {
        let total = layer.reported.fetch_add(layer.step, Ordering::Relaxed) + layer.step;
        if total > layer.capacity && !self.stalled.load(Ordering::Relaxed) {
            self.grow(published);
        }
    }

    /// Adds layer `published` unless another thread already has.
    #[cold]
    fn grow(&self, published: usize) {
        let _grower = self
            .grower
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if self.published.load(Ordering::Acquire) != published {
            return;
        }
        let (Some(slot), Some(Some(newest))) = (
            self.layers.get(published),
            published.checked_sub(1).map(|i| self.layers[i].get()),
        ) else {
            self.stalled.store(true, Ordering::Relaxed);
            return;
        };
        // Allocate first: until the seal, other threads keep admitting into the full layer,
        // a little past its capacity, rather than wait for the allocation.
        let next = self
            .plan
            .layer(published as u32)
            .and_then(|(layout, capacity, fpr)| {
                Layer::new(layout, capacity, fpr, MemoryStore::new(layout)?)
            });
        let Ok(next) = next else {
            self.stalled.store(true, Ordering::Relaxed);
            return;
        };
        newest.store.seal();
        let _ = slot.set(next);
        self.published.store(published + 1, Ordering::Release);
    }

    /// Inserts a batch; one answer per item, exactly as inserting them one by one in order.
    /// Hashes a chunk of items and requests their segments in every layer before testing any,
    /// so the cache misses of a chunk overlap.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::GrowingFilter::builder().build()?;
    /// assert_eq!(f.check_and_insert_batch(&["a", "b", "a"]), [true, true, false]);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn check_and_insert_batch<I: AsRef<[u8]>>(&self, items: &[I]) -> Vec<bool> {
        let mut out = Vec::with_capacity(items.len());
        Self::pipelined(
            &mut &*self,
            items,
            |h, i| h.hash(i.as_ref()),
            |f, d| out.push(f.check_and_insert_digest(d)),
        );
        out
    }

    /// Looks up a batch, overlapping cache misses like
    /// [`check_and_insert_batch`](Self::check_and_insert_batch).
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::GrowingFilter::builder().build()?;
    /// f.check_and_insert("a");
    /// assert_eq!(f.contains_batch(&["a", "b"]), [true, false]);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn contains_batch<I: AsRef<[u8]>>(&self, items: &[I]) -> Vec<bool> {
        let mut out = Vec::with_capacity(items.len());
        Self::pipelined(
            &mut &*self,
            items,
            |h, i| h.hash(i.as_ref()),
            |f, d| out.push(f.contains_digest(d)),
        );
        out
    }

    /// [`check_and_insert_batch`](Self::check_and_insert_batch) for digests computed
    /// beforehand with [`hash`](Self::hash), for instance on other threads: the same answers
    /// and bits as for the items they are digests of, with the cache misses overlapped.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::GrowingFilter::builder().build()?;
    /// let digests = [f.hash("a"), f.hash("b"), f.hash("a")];
    /// assert_eq!(f.check_and_insert_digests(&digests), [true, true, false]);
    /// assert!(f.contains("b"));
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn check_and_insert_digests(&self, digests: &[Digest]) -> Vec<bool> {
        let mut out = Vec::with_capacity(digests.len());
        Self::pipelined(
            &mut &*self,
            digests,
            |_, &d| d,
            |f, d| out.push(f.check_and_insert_digest(d)),
        );
        out
    }

    /// [`check_and_insert_batch`](Self::check_and_insert_batch) through `&mut self`: the same
    /// answers and bits without stripe locks (see
    /// [`check_and_insert_mut`](Self::check_and_insert_mut)).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = url_dedup_segmented::GrowingFilter::builder().build()?;
    /// assert_eq!(f.check_and_insert_batch_mut(&["a", "b", "a"]), [true, true, false]);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn check_and_insert_batch_mut<I: AsRef<[u8]>>(&mut self, items: &[I]) -> Vec<bool> {
        let mut out = Vec::with_capacity(items.len());
        Self::pipelined(
            self,
            items,
            |h, i| h.hash(i.as_ref()),
            |f, d| out.push(f.check_and_insert_digest_mut(d)),
        );
        out
    }

    /// [`check_and_insert_digests`](Self::check_and_insert_digests) through `&mut self`: the
    /// same answers and bits without stripe locks.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = url_dedup_segmented::GrowingFilter::builder().build()?;
    /// let digests = [f.hash("a"), f.hash("b"), f.hash("a")];
    /// assert_eq!(f.check_and_insert_digests_mut(&digests), [true, true, false]);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn check_and_insert_digests_mut(&mut self, digests: &[Digest]) -> Vec<bool> {
        let mut out = Vec::with_capacity(digests.len());
        Self::pipelined(
            self,
            digests,
            |_, &d| d,
            |f, d| out.push(f.check_and_insert_digest_mut(d)),
        );
        out
    }

    /// [`contains_batch`](Self::contains_batch) for digests computed with
    /// [`hash`](Self::hash).
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::GrowingFilter::builder().build()?;
    /// f.check_and_insert("a");
    /// assert_eq!(f.contains_digests(&[f.hash("a"), f.hash("b")]), [true, false]);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn contains_digests(&self, digests: &[Digest]) -> Vec<bool> {
        let mut out = Vec::with_capacity(digests.len());
        Self::pipelined(
            &mut &*self,
            digests,
            |_, &d| d,
            |f, d| out.push(f.contains_digest(d)),
        );
        out
    }

    /// Calls `apply` on the digest of every item (as `digest` computes it), in order, through
    /// [`batch::pipelined`], with a chunk's segments requested in every layer.
    #[inline]
    fn pipelined<F, T>(
        filter: &mut F,
        items: &[T],
        digest: impl Fn(&H, &T) -> Digest,
        apply: impl FnMut(&mut F, Digest),
    ) where
        F: std::borrow::Borrow<Self>,
    {
        batch::pipelined(
            filter,
            items,
            |f, item| {
                let f = f.borrow();
                let d = digest(&f.hasher, item);
                for layer in f.live_layers().rev() {
                    layer.store.prefetch(layer.probe(d).segment);
                }
                d
            },
            apply,
        );
    }

    /// Whether the item may have been inserted. Never writes.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::GrowingFilter::builder().build()?;
    /// f.check_and_insert("a");
    /// assert!(f.contains("a"));
    /// assert!(!f.contains("b"));
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    #[inline(always)]
    pub fn contains(&self, item: impl AsRef<[u8]>) -> bool {
        self.contains_digest(self.hash(item))
    }

    /// [`contains`](Self::contains) for a precomputed [`Digest`].
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::GrowingFilter::builder().build()?;
    /// assert!(!f.contains_digest(f.hash("a")));
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    #[inline(always)]
    pub fn contains_digest(&self, digest: Digest) -> bool {
        self.live_layers()
            .rev()
            .any(|l| l.store.contains(l.probe(digest)))
    }

    /// The plan every layer is sized from.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::GrowingFilter::builder().expected_items(7).build()?;
    /// assert_eq!(f.plan().first_capacity, 7);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn plan(&self) -> GrowthPlan {
        self.plan
    }

    /// The hasher's key.
    ///
    /// # Examples
    ///
    /// See [`GrowingBuilder::key`].
    pub fn key(&self) -> HashKey {
        self.hasher.key()
    }

    /// How many layers the filter has now.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::GrowingFilter::builder().expected_items(10).build()?;
    /// (0..100).for_each(|i| { f.check_and_insert(i.to_string()); });
    /// assert!(f.layers() > 1);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn layers(&self) -> usize {
        self.live_layers().count()
    }

    /// The layout of every layer, oldest first.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::GrowingFilter::builder().expected_items(100).build()?;
    /// assert_eq!(f.layouts().len(), 1);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn layouts(&self) -> Vec<Layout> {
        self.live_layers().map(|l| l.layout).collect()
    }

    /// Items admitted as new, over all layers (exact when no thread is inserting).
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::GrowingFilter::builder().build()?;
    /// f.check_and_insert_batch(&["a", "b", "a"]);
    /// assert_eq!(f.admitted(), 2);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn admitted(&self) -> u64 {
        self.live_layers().map(|l| l.store.admitted()).sum()
    }

    /// Items the layers hold at their rates: the capacity before the next layer is added.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::GrowingFilter::builder().expected_items(100).build()?;
    /// assert_eq!(f.capacity(), 100);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn capacity(&self) -> u64 {
        self.live_layers()
            .map(|l| l.capacity)
            .fold(0, u64::saturating_add)
    }

    /// The expected false-positive rate of a lookup now: the sum over layers of each layer's
    /// rate at its current count. Stays below the plan's target while the filter can grow.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::GrowingFilter::builder().expected_items(100).false_positive_rate(0.01).build()?;
    /// assert_eq!(f.expected_fpr(), 0.0);
    /// (0..1_000).for_each(|i| { f.check_and_insert(i.to_string()); });
    /// assert!(f.expected_fpr() > 0.0 && f.expected_fpr() < 0.01);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn expected_fpr(&self) -> f64 {
        self.live_layers()
            .map(|l| l.layout.false_positive_rate(l.store.admitted()))
            .sum()
    }

    /// Whether the filter could not add a layer it needed (memory ran out, or
    /// [`MAX_LAYERS`] was reached) and its newest layer holds more than its capacity, so
    /// lookups are above the target rate.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::GrowingFilter::builder().expected_items(10).build()?;
    /// (0..1_000).for_each(|i| { f.check_and_insert(i.to_string()); });
    /// assert!(!f.is_over_capacity());
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn is_over_capacity(&self) -> bool {
        self.stalled.load(Ordering::Relaxed)
            && self
                .live_layers()
                .next_back()
                .is_some_and(|l| l.store.admitted() > l.capacity)
    }

    /// Bits over all layers.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::GrowingFilter::builder().expected_items(1_000).build()?;
    /// assert_eq!(f.bits(), f.layouts()[0].bits());
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn bits(&self) -> u64 {
        self.live_layers().map(|l| l.layout.bits()).sum()
    }

    /// Heap bytes held by all layers.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::GrowingFilter::builder().expected_items(1_000).build()?;
    /// assert!(f.memory_bytes() >= f.bits() / 8);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn memory_bytes(&self) -> u64 {
        self.live_layers().map(|l| l.store.memory_bytes()).sum()
    }
}

impl<H: ItemHasher> fmt::Debug for GrowingFilter<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GrowingFilter")
            .field("plan", &self.plan)
            .field("layouts", &self.layouts())
            .field("hasher", &self.hasher)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stripes_hold_back_at_most_a_256th_of_the_capacity() {
        for capacity in [1, 10, 1_000, 100_000, 10_000_000] {
            let layout = Layout::for_items(capacity, 0.01, 512).unwrap();
            let store = MemoryStore::new(layout).unwrap();
            let stripes = store.stripe_count() as u64;
            let layer = Layer::new(layout, capacity, 0.01, store).unwrap();
            assert!(layer.step.is_power_of_two());
            assert!(stripes * (layer.step - 1) <= capacity / 256, "{capacity}");
            // Steps are as long as that allows, so the shared count is touched rarely.
            assert!(
                stripes * (2 * layer.step - 1) > capacity / 256,
                "{capacity}"
            );
            // The layer is sized for the late start and for what threads admit meanwhile.
            let plan = GrowingFilter::builder()
                .expected_items(capacity)
                .false_positive_rate(0.01)
                .plan()
                .unwrap();
            let (sized, _, rate) = plan.layer(0).unwrap();
            let late = capacity + stripes * (layer.step - 1) + layer.step;
            assert!(sized.false_positive_rate(late) <= rate, "{capacity}");
        }
    }

    /// What makes growth safe for a thread that read the list of layers just before it
    /// changed: the layer it would admit into no longer takes new items.
    #[test]
    fn growth_seals_the_layer_it_replaces() {
        let f = GrowingFilter::builder()
            .expected_items(1_000)
            .build()
            .unwrap();
        f.grow(1);
        assert_eq!(f.layers(), 2);
        let old = f.live_layers().next().unwrap();
        let probe = old.probe(f.hash("late"));
        assert_eq!(old.store.admit_unless_sealed(probe), Admission::Sealed);
        // Growing twice from the same count adds one layer.
        f.grow(1);
        assert_eq!(f.layers(), 2);
        assert!(f.check_and_insert("late"));
        assert!(!f.check_and_insert("late"));
    }

    #[test]
    fn a_sealed_layer_takes_no_new_item() {
        let f = GrowingFilter::builder()
            .expected_items(1_000)
            .build()
            .unwrap();
        let layer = f.live_layers().next().unwrap();
        let a = layer.probe(f.hash("a"));
        let b = layer.probe(f.hash("b"));
        assert!(matches!(
            layer.store.admit_unless_sealed(a),
            Admission::New(1)
        ));
        layer.store.seal();
        assert_eq!(layer.store.admit_unless_sealed(a), Admission::Present);
        assert_eq!(layer.store.admit_unless_sealed(b), Admission::Sealed);
        assert!(!layer.store.contains(b));
    }
}
