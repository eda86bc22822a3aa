//! What a filter must offer to be a shard of a [`ShardedFilter`](crate::ShardedFilter).

use url_dedup_bloom::hash::{Digest, HashKey, ItemHasher};
use url_dedup_bloom::sizing::Sizing;
use url_dedup_bloom::{AtomicBloomFilter, BloomFilter, Error as BloomError};
use url_dedup_segmented::{
    Error as SegmentedError, Layout, MemoryStore, Placement, SegmentedBloomFilter,
};

/// A deduplication filter that can live in one virtual node and travel with it.
///
/// Deliberately small: create an empty shard from parameters, answer by [`Digest`] (the
/// sharded filter hashes each URL once), and turn into bytes and back. The classic filters of
/// `url-dedup-bloom` and the segmented filter of `url-dedup-segmented` implement it here.
///
/// **Contract on digests.** Every digest a shard sees has the same low `log2 N` bits of `h1`
/// (they chose its virtual node). A shard must derive positions from the high bits of `h1`
/// (multiply-shift, as [`url_dedup_bloom::hash::reduce`] does) or from `h2`, never from the low
/// bits of `h1` alone.
///
/// # Examples
///
/// ```
/// use url_dedup_partition::{BloomShardParams, Shard};
/// use url_dedup_bloom::{BloomFilter, hash::HashKey};
///
/// let params = BloomShardParams::new(1_000, 0.01, HashKey::from_bytes([1; 16]));
/// let mut shard: BloomFilter = Shard::create(&params)?;
/// let d = shard.hash("https://example.com/");
/// assert!(Shard::check_and_insert_digest(&mut shard, d));
/// let moved: BloomFilter = Shard::import(&Shard::export(&shard)?, &params)?;
/// assert!(Shard::contains_digest(&moved, d));
/// # Ok::<(), url_dedup_bloom::Error>(())
/// ```
pub trait Shard: Sized {
    /// Everything needed to create an empty shard; the same in every process of a cluster.
    type Params: Clone + std::fmt::Debug;
    /// The shard's error type.
    type Error: std::error::Error + Send + Sync + 'static;

    /// An empty shard.
    ///
    /// # Errors
    ///
    /// When the parameters are invalid or memory cannot be allocated.
    fn create(params: &Self::Params) -> Result<Self, Self::Error>;

    /// Records the item; `true` if it was new.
    fn check_and_insert_digest(&mut self, digest: Digest) -> bool;

    /// Whether the item may have been recorded.
    fn contains_digest(&self, digest: Digest) -> bool;

    /// The shard as self-describing, checksummed bytes.
    ///
    /// # Errors
    ///
    /// When the shard's storage cannot be read.
    fn export(&self) -> Result<Vec<u8>, Self::Error>;

    /// A shard from [`export`](Self::export)ed bytes.
    ///
    /// # Errors
    ///
    /// When the bytes are damaged or describe a shard built with other parameters; the error
    /// names the problem and nothing is imported.
    fn import(bytes: &[u8], params: &Self::Params) -> Result<Self, Self::Error>;
}

/// Parameters of a classic Bloom filter shard: expected URLs per shard, target rate, key.
///
/// # Examples
///
/// ```
/// use url_dedup_partition::BloomShardParams;
/// use url_dedup_bloom::hash::HashKey;
///
/// // 10 million URLs over 16384 virtual nodes at 1%.
/// let p = BloomShardParams::for_total(10_000_000, 16384, 0.01, HashKey::from_bytes([0; 16]));
/// assert_eq!(p.expected_items, 611);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct BloomShardParams {
    /// URLs each shard is sized for.
    pub expected_items: u64,
    /// Target false-positive rate at that load.
    pub false_positive_rate: f64,
    /// Hash key of the shards (shared by the cluster).
    pub key: HashKey,
}

impl BloomShardParams {
    /// Explicit per-shard parameters.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::BloomShardParams;
    /// use url_dedup_bloom::hash::HashKey;
    ///
    /// let p = BloomShardParams::new(500, 0.001, HashKey::from_bytes([0; 16]));
    /// assert_eq!(p.expected_items, 500);
    /// ```
    pub fn new(expected_items: u64, false_positive_rate: f64, key: HashKey) -> Self {
        Self {
            expected_items,
            false_positive_rate,
            key,
        }
    }

    /// Parameters for `total` URLs spread over `virtual_nodes` shards (rounded up, at least 1).
    ///
    /// # Examples
    ///
    /// See [`BloomShardParams`].
    pub fn for_total(
        total: u64,
        virtual_nodes: u32,
        false_positive_rate: f64,
        key: HashKey,
    ) -> Self {
        Self::new(
            total.div_ceil(u64::from(virtual_nodes.max(1))).max(1),
            false_positive_rate,
            key,
        )
    }

    fn check(
        &self,
        expected_items: u64,
        bits: u64,
        hashes: u32,
        key: HashKey,
    ) -> Result<(), BloomError> {
        let sizing = Sizing::classic(self.expected_items, self.false_positive_rate)?;
        if expected_items != self.expected_items
            || bits != sizing.bits
            || hashes != sizing.hashes
            || key != self.key
        {
            return Err(BloomError::Incompatible(
                "shard was built with other parameters than this filter's",
            ));
        }
        Ok(())
    }
}

impl<H: ItemHasher> Shard for BloomFilter<H> {
    type Params = BloomShardParams;
    type Error = BloomError;

    fn create(p: &BloomShardParams) -> Result<Self, BloomError> {
        BloomFilter::builder()
            .expected_items(p.expected_items)
            .false_positive_rate(p.false_positive_rate)
            .hasher(H::from_key(p.key))
            .build()
    }

    #[inline]
    fn check_and_insert_digest(&mut self, digest: Digest) -> bool {
        BloomFilter::check_and_insert_digest(self, digest)
    }

    #[inline]
    fn contains_digest(&self, digest: Digest) -> bool {
        BloomFilter::contains_digest(self, digest)
    }

    fn export(&self) -> Result<Vec<u8>, BloomError> {
        Ok(self.to_bytes())
    }

    fn import(bytes: &[u8], p: &BloomShardParams) -> Result<Self, BloomError> {
        let f = BloomFilter::<H>::from_bytes(bytes)?;
        p.check(f.expected_items(), f.bits(), f.hashes(), f.key())?;
        Ok(f)
    }
}

/// The same shard over atomic words: built, exported and checked through the plain filter.
impl<H: ItemHasher> Shard for AtomicBloomFilter<H> {
    type Params = BloomShardParams;
    type Error = BloomError;

    fn create(p: &BloomShardParams) -> Result<Self, BloomError> {
        <BloomFilter<H> as Shard>::create(p).map(BloomFilter::into_atomic)
    }

    #[inline]
    fn check_and_insert_digest(&mut self, digest: Digest) -> bool {
        AtomicBloomFilter::check_and_insert_digest(self, digest)
    }

    #[inline]
    fn contains_digest(&self, digest: Digest) -> bool {
        AtomicBloomFilter::contains_digest(self, digest)
    }

    fn export(&self) -> Result<Vec<u8>, BloomError> {
        Ok(self.to_bytes())
    }

    fn import(bytes: &[u8], p: &BloomShardParams) -> Result<Self, BloomError> {
        <BloomFilter<H> as Shard>::import(bytes, p).map(BloomFilter::into_atomic)
    }
}

/// Parameters of a segmented-filter shard: the same for every shard of one
/// [`ShardedFilter`](crate::ShardedFilter), so a shard that arrives from another node is checked
/// against them before it is used.
///
/// # Examples
///
/// ```
/// use url_dedup_bloom::hash::HashKey;
/// use url_dedup_partition::{SegmentedShardParams, Shard};
/// use url_dedup_segmented::SegmentedBloomFilter;
///
/// let p = SegmentedShardParams::new(1_000, 0.01, 512, HashKey::from_bytes([1; 16]));
/// let mut shard = <SegmentedBloomFilter as Shard>::create(&p)?;
/// let d = shard.hash("https://example.com/");
/// assert!(Shard::check_and_insert_digest(&mut shard, d));
/// let copy = <SegmentedBloomFilter as Shard>::import(&Shard::export(&shard)?, &p)?;
/// assert!(Shard::contains_digest(&copy, d));
/// # Ok::<(), url_dedup_segmented::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SegmentedShardParams {
    /// Items one shard is sized for.
    pub expected_items: u64,
    /// False-positive rate at that many items.
    pub false_positive_rate: f64,
    /// Bits per segment (512, one cache line, for in-memory shards).
    pub segment_bits: u64,
    /// The hash key all shards share.
    pub key: HashKey,
    /// Where an item's bits go in its segment: [`Placement::Split`] (what
    /// [`new`](Self::new) picks: 2% more bits at 1%, faster single calls, in the cache and out
    /// of it) or [`Placement::Scattered`] (the fewest bits). Absent from parameters serialized
    /// in a self-describing format (JSON) before it existed, it reads as scattered, the only
    /// placement there was.
    #[cfg_attr(feature = "serde", serde(default))]
    pub placement: Placement,
}

impl SegmentedShardParams {
    /// Parameters from their parts, with the split placement. A node holds thousands of
    /// shards, most small enough for the cache, where single calls are what a partitioned
    /// filter makes (one digest routed to one shard) and the split placement is the faster
    /// one: 1.1 to 1.3 times fastbloom's speed on SipHash inserts at 10^4 to 10^6 items,
    /// where the scattered placement is 0.85 to 1.0 times (docs/benchmarks.md), for 2% more
    /// bits. [`with_placement`](Self::with_placement) picks the scattered placement.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::hash::HashKey;
    /// use url_dedup_segmented::Placement;
    /// let p = url_dedup_partition::SegmentedShardParams::new(10, 0.01, 512, HashKey::from_bytes([0; 16]));
    /// assert_eq!((p.segment_bits, p.placement), (512, Placement::Split));
    /// ```
    pub fn new(
        expected_items: u64,
        false_positive_rate: f64,
        segment_bits: u64,
        key: HashKey,
    ) -> Self {
        Self {
            expected_items,
            false_positive_rate,
            segment_bits,
            key,
            placement: Placement::Split,
        }
    }

    /// These parameters with the shards' bits placed as `placement` says.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::hash::HashKey;
    /// use url_dedup_partition::{SegmentedShardParams, Shard};
    /// use url_dedup_segmented::{Placement, SegmentedBloomFilter};
    ///
    /// let split = SegmentedShardParams::new(1_000, 0.01, 512, HashKey::from_bytes([1; 16]));
    /// let scattered = split.with_placement(Placement::Scattered);
    /// let shard = <SegmentedBloomFilter as Shard>::create(&scattered)?;
    /// assert_eq!(shard.layout().placement(), Placement::Scattered);
    /// // A shard of the other placement is refused.
    /// assert!(<SegmentedBloomFilter as Shard>::import(&Shard::export(&shard)?, &split).is_err());
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn with_placement(mut self, placement: Placement) -> Self {
        self.placement = placement;
        self
    }

    /// The shards' layout. Every shard of a filter has the same parameters, and a node
    /// creates or imports thousands of shards, so the sizing search runs once per thread and
    /// parameters, not once per shard.
    fn layout(&self) -> Result<Layout, SegmentedError> {
        type Sized = ((u64, u64, u64, Placement), Layout);
        thread_local! {
            static LAST: std::cell::Cell<Option<Sized>> = const { std::cell::Cell::new(None) };
        }
        let key = (
            self.expected_items,
            self.false_positive_rate.to_bits(),
            self.segment_bits,
            self.placement,
        );
        if let Some((last, layout)) = LAST.get()
            && last == key
        {
            return Ok(layout);
        }
        let layout = Layout::for_items_with(
            self.expected_items,
            self.false_positive_rate,
            self.segment_bits,
            self.placement,
        )?;
        LAST.set(Some((key, layout)));
        Ok(layout)
    }
}

impl<H: ItemHasher> Shard for SegmentedBloomFilter<H, MemoryStore> {
    type Params = SegmentedShardParams;
    type Error = SegmentedError;

    fn create(p: &SegmentedShardParams) -> Result<Self, SegmentedError> {
        SegmentedBloomFilter::builder()
            .layout(p.layout()?)
            .expected_items(p.expected_items)
            .hasher(H::from_key(p.key))
            .build()
    }

    /// The owner's path: a shard is `&mut`, so no stripe lock is taken.
    #[inline]
    fn check_and_insert_digest(&mut self, digest: Digest) -> bool {
        SegmentedBloomFilter::check_and_insert_digest_mut(self, digest)
    }

    #[inline]
    fn contains_digest(&self, digest: Digest) -> bool {
        SegmentedBloomFilter::contains_digest(self, digest)
    }

    fn export(&self) -> Result<Vec<u8>, SegmentedError> {
        Ok(self.to_bytes())
    }

    fn import(bytes: &[u8], p: &SegmentedShardParams) -> Result<Self, SegmentedError> {
        let f = SegmentedBloomFilter::<H, MemoryStore>::from_bytes(bytes)?;
        if f.layout() != p.layout()? || f.key() != p.key || f.expected_items() != p.expected_items {
            return Err(SegmentedError::Incompatible(
                "shard was built with other parameters than this filter's",
            ));
        }
        Ok(f)
    }
}
