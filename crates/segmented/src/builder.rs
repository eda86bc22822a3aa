use url_dedup_bloom::hash::{HashKey, ItemHasher, SipHash13};

use crate::layout::DEFAULT_SEGMENT_BITS;
use crate::{Error, Layout, MemoryStore, Placement, SegmentStore, SegmentedBloomFilter};

/// Configures a [`SegmentedBloomFilter`].
///
/// Give [`expected_items`](Self::expected_items) and
/// [`false_positive_rate`](Self::false_positive_rate) (1% if not set); the builder sizes the
/// filter with [`Layout::for_items_with`] for the [`segment_bits`](Self::segment_bits) (one
/// 512-bit cache line unless set) and [`placement`](Self::placement) (scattered unless set)
/// chosen. Or fix the geometry with [`layout`](Self::layout). The hasher
/// is keyed SipHash-1-3 with a random key unless [`key`](Self::key) or
/// [`hasher`](Self::hasher) says otherwise.
///
/// # Examples
///
/// ```
/// use url_dedup_bloom::{HashKey, Xxh3};
/// use url_dedup_segmented::{Layout, SegmentedBloomFilter};
///
/// let filter = SegmentedBloomFilter::builder()
///     .expected_items(1_000_000)
///     .false_positive_rate(0.001)
///     .key(HashKey::from_bytes([42; 16]))
///     .build()?;
/// assert!(filter.layout().false_positive_rate(1_000_000) <= 0.001);
///
/// // Trusted input, fastest hash; explicit geometry.
/// let fast = SegmentedBloomFilter::builder()
///     .layout(Layout::new(1 << 10, 512, 7)?)
///     .hasher(Xxh3::new(HashKey::from_bytes([1; 16])))
///     .build()?;
/// assert_eq!(fast.segments(), 1 << 10);
/// # Ok::<(), url_dedup_segmented::Error>(())
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct Builder<H = SipHash13> {
    expected_items: Option<u64>,
    fpr: f64,
    segment_bits: u64,
    placement: Placement,
    layout: Option<Layout>,
    hasher: Option<H>,
}

impl Default for Builder<SipHash13> {
    fn default() -> Self {
        Self {
            expected_items: None,
            fpr: 0.01,
            segment_bits: DEFAULT_SEGMENT_BITS,
            placement: Placement::Scattered,
            layout: None,
            hasher: None,
        }
    }
}

impl<H: ItemHasher> Builder<H> {
    /// How many distinct items the filter should hold at the target rate.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(100).build()?;
    /// assert_eq!(f.expected_items(), 100);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn expected_items(mut self, items: u64) -> Self {
        self.expected_items = Some(items);
        self
    }

    /// The false-positive rate at `expected_items` items (default 1%).
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder()
    ///     .expected_items(100_000)
    ///     .false_positive_rate(0.001)
    ///     .build()?;
    /// assert!(f.layout().false_positive_rate(100_000) <= 0.001);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn false_positive_rate(mut self, fpr: f64) -> Self {
        self.fpr = fpr;
        self
    }

    /// Bits per segment: a power of two from 64 to 2^32 (default 512, one cache line). Larger
    /// segments need fewer bits per item but touch more cache lines; they suit stores where a
    /// segment is a network key or a file shard.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder()
    ///     .expected_items(100_000)
    ///     .segment_bits(1 << 20)
    ///     .build()?;
    /// assert_eq!(f.segment_bits(), 1 << 20);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn segment_bits(mut self, bits: u64) -> Self {
        self.segment_bits = bits;
        self
    }

    /// Where an item's bits go inside its segment (default [`Placement::Scattered`]).
    /// [`Placement::Split`] with the default 512-bit segments is the fastest layout in memory,
    /// for a few percent more bits.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_segmented::{Placement, SegmentedBloomFilter};
    ///
    /// let f = SegmentedBloomFilter::builder()
    ///     .expected_items(100_000)
    ///     .placement(Placement::Split)
    ///     .build()?;
    /// assert_eq!(f.layout().placement(), Placement::Split);
    /// assert!(f.layout().false_positive_rate(100_000) <= 0.01);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn placement(mut self, placement: Placement) -> Self {
        self.placement = placement;
        self
    }

    /// An explicit geometry, overriding the sizing from items, rate and segment size. Unless
    /// [`expected_items`](Self::expected_items) is also given, the filter expects what the
    /// layout holds at the [`false_positive_rate`](Self::false_positive_rate)
    /// ([`Layout::capacity`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_segmented::{Layout, SegmentedBloomFilter};
    ///
    /// let l = Layout::new(64, 512, 6)?;
    /// let f = SegmentedBloomFilter::builder().layout(l).build()?;
    /// assert_eq!(f.layout(), l);
    /// assert_eq!(f.expected_items(), l.capacity(0.01));
    /// // Over-filling it is noticed, as for a filter sized from a count.
    /// (0..2 * f.expected_items()).for_each(|i| { f.insert(i.to_string()); });
    /// assert!(f.is_over_capacity());
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn layout(mut self, layout: Layout) -> Self {
        self.layout = Some(layout);
        self
    }

    /// Keys the hasher with `key` (for filters shared between processes or reopened later).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::HashKey;
    ///
    /// let key = HashKey::from_bytes([9; 16]);
    /// let a = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(10).key(key).build()?;
    /// let b = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(10).key(key).build()?;
    /// assert_eq!(a.probe("x"), b.probe("x"));
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn key(mut self, key: HashKey) -> Self {
        self.hasher = Some(H::from_key(key));
        self
    }

    /// Uses another hasher, such as [`Xxh3`](url_dedup_bloom::Xxh3) for trusted input.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::{HashKey, Xxh3};
    ///
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder()
    ///     .expected_items(10)
    ///     .hasher(Xxh3::new(HashKey::from_bytes([0; 16])))
    ///     .build()?;
    /// assert!(f.insert("a"));
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn hasher<H2: ItemHasher>(self, hasher: H2) -> Builder<H2> {
        Builder {
            expected_items: self.expected_items,
            fpr: self.fpr,
            segment_bits: self.segment_bits,
            placement: self.placement,
            layout: self.layout,
            hasher: Some(hasher),
        }
    }

    /// The geometry the builder would use: what a store for this filter must be created with.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameters`] when neither a layout nor the expected items are given, or
    /// they are out of range.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(1_000);
    /// assert_eq!(b.resolve_layout()?, b.build()?.layout());
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn resolve_layout(&self) -> Result<Layout, Error> {
        if let Some(layout) = self.layout {
            return Ok(layout);
        }
        let items = self.expected_items.ok_or(Error::InvalidParameters(
            "set expected_items or an explicit layout",
        ))?;
        Layout::for_items_with(items, self.fpr, self.segment_bits, self.placement)
    }

    /// Builds an in-memory filter.
    ///
    /// # Errors
    ///
    /// As [`resolve_layout`](Self::resolve_layout), or [`Error::OutOfMemory`].
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_segmented::SegmentedBloomFilter::builder().expected_items(1_000).build()?;
    /// assert!(f.check_and_insert("https://example.com/"));
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn build(self) -> Result<SegmentedBloomFilter<H, MemoryStore>, Error> {
        let layout = self.resolve_layout()?;
        let store = MemoryStore::new(layout)?;
        Ok(self.finish(store))
    }

    /// Builds a filter over an existing store, which must have been created with
    /// [`resolve_layout`](Self::resolve_layout)'s geometry.
    ///
    /// # Errors
    ///
    /// As [`resolve_layout`](Self::resolve_layout), or [`Error::Incompatible`] when the store's
    /// layout differs.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_segmented::{MemoryStore, SegmentedBloomFilter};
    ///
    /// let builder = SegmentedBloomFilter::builder().expected_items(1_000);
    /// let store = MemoryStore::new(builder.resolve_layout()?)?;
    /// let f = builder.build_on(store)?;
    /// assert!(f.try_check_and_insert("a")?);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn build_on<S: SegmentStore>(self, store: S) -> Result<SegmentedBloomFilter<H, S>, Error> {
        if store.layout() != self.resolve_layout()? {
            return Err(Error::Incompatible(
                "the store was created for another layout",
            ));
        }
        Ok(self.finish(store))
    }

    /// The filter over `store`, whose layout has been checked (so the sizing search runs once
    /// per build).
    fn finish<S: SegmentStore>(self, store: S) -> SegmentedBloomFilter<H, S> {
        let hasher = self.hasher.unwrap_or_else(H::random);
        // An explicit layout without a count expects what it holds at the target rate, so
        // `is_over_capacity` still warns when it is over-filled.
        let expected = self
            .expected_items
            .unwrap_or_else(|| store.layout().capacity(self.fpr));
        SegmentedBloomFilter::with_store(store, hasher, expected)
    }
}
