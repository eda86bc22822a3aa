//! Every filter the benchmarks time, ours and its peers, behind one small trait, so that each
//! bench target and the interleaved head-to-head run measure exactly the same adapters.
//!
//! Each peer is used as its own documentation tells users to: its default hasher unless the
//! name says otherwise, sized by its own constructor for the same `(n, p)`.

use url_dedup_bloom::hash::{HashKey, ItemHasher, SipHash13, Xxh3};
use url_dedup_segmented::{Placement, SegmentedBloomFilter};
use xxhash_rust::xxh3::xxh3_64;

/// A filter as the single-item benchmarks see it: `insert` takes `&mut self`, as it does for
/// every peer.
///
/// # Examples
///
/// ```
/// use url_dedup_benches::peers::{Classic, Filter};
///
/// let mut f = Classic::new(1_000, 0.01);
/// f.insert("https://example.com/");
/// assert!(f.contains("https://example.com/"));
/// ```
pub trait Filter {
    /// Name printed in reports and used in benchmark ids.
    const NAME: &'static str;
    /// An empty filter sized for `n` items at false-positive rate `p`.
    fn new(n: usize, p: f64) -> Self;
    /// Adds one key.
    fn insert(&mut self, key: &str);
    /// Whether `key` may be present.
    fn contains(&self, key: &str) -> bool;
    /// Size of the bit array.
    fn bits(&self) -> u64;
}

/// A segmented filter with a random key for hasher `H`, sized for `(n, p)` with the default
/// 512-bit segments.
///
/// # Examples
///
/// ```
/// let f = url_dedup_benches::peers::segmented::<url_dedup_bloom::SipHash13>(1_000, 0.01);
/// assert_eq!(f.segment_bits(), 512);
/// ```
pub fn segmented<H: ItemHasher>(n: usize, p: f64) -> SegmentedBloomFilter<H> {
    segmented_with(n, p, Placement::Scattered)
}

/// [`segmented`] with the bits of each item placed as `placement` says.
///
/// # Examples
///
/// ```
/// use url_dedup_segmented::Placement;
///
/// let f = url_dedup_benches::peers::segmented_with::<url_dedup_bloom::Xxh3>(
///     1_000,
///     0.01,
///     Placement::Split,
/// );
/// assert_eq!(f.layout().placement(), Placement::Split);
/// ```
pub fn segmented_with<H: ItemHasher>(
    n: usize,
    p: f64,
    placement: Placement,
) -> SegmentedBloomFilter<H> {
    SegmentedBloomFilter::builder()
        .expected_items(n as u64)
        .false_positive_rate(p)
        .placement(placement)
        .hasher(H::from_key(HashKey::random()))
        .build()
        .expect("valid parameters")
}

/// Implements [`Filter`] for a newtype over a filter whose methods are spelled alike.
macro_rules! adapter {
    ($(#[$doc:meta])* $name:ident($inner:ty), $label:literal, |$n:ident, $p:ident| $new:expr,
     insert: $insert:ident, contains: $contains:ident, bits: |$f:ident| $bits:expr) => {
        $(#[$doc])*
        pub struct $name(pub $inner);
        impl Filter for $name {
            const NAME: &'static str = $label;
            fn new($n: usize, $p: f64) -> Self {
                Self($new)
            }
            #[inline]
            fn insert(&mut self, key: &str) {
                self.0.$insert(key);
            }
            #[inline]
            fn contains(&self, key: &str) -> bool {
                self.0.$contains(key)
            }
            fn bits(&self) -> u64 {
                let $f = &self.0;
                $bits
            }
        }
    };
}

adapter!(
    /// Our classic filter (`url_dedup_bloom::BloomFilter`), keyed SipHash-1-3-128.
    ///
    /// ```
    /// use url_dedup_benches::peers::{Classic, Filter};
    /// assert!(Classic::new(100, 0.01).bits() > 0);
    /// ```
    Classic(url_dedup_bloom::BloomFilter), "url-dedup-bloom",
    |n, p| url_dedup_bloom::BloomFilter::builder()
        .expected_items(n as u64)
        .false_positive_rate(p)
        .build()
        .expect("valid parameters"),
    insert: insert, contains: contains, bits: |f| f.bits()
);

adapter!(
    /// Our classic filter over atomic words (`url_dedup_bloom::AtomicBloomFilter`).
    ///
    /// ```
    /// use url_dedup_benches::peers::{ClassicAtomic, Filter};
    /// assert!(ClassicAtomic::new(100, 0.01).bits() > 0);
    /// ```
    ClassicAtomic(url_dedup_bloom::AtomicBloomFilter), "url-dedup-bloom atomic",
    |n, p| url_dedup_bloom::AtomicBloomFilter::builder()
        .expected_items(n as u64)
        .false_positive_rate(p)
        .build_atomic()
        .expect("valid parameters"),
    insert: insert, contains: contains, bits: |f| f.bits()
);

adapter!(
    /// Our segmented filter, keyed SipHash-1-3-128; `insert` is the `&mut self` path.
    ///
    /// ```
    /// use url_dedup_benches::peers::{Filter, Segmented};
    /// assert!(Segmented::new(100, 0.01).bits() > 0);
    /// ```
    Segmented(SegmentedBloomFilter<SipHash13>), "url-dedup-segmented",
    |n, p| segmented(n, p),
    insert: check_and_insert_mut, contains: contains, bits: |f| f.bits()
);

adapter!(
    /// Our segmented filter with `Xxh3` (XXH3-64, key-derived secret: the fast hasher).
    ///
    /// ```
    /// use url_dedup_benches::peers::{Filter, SegmentedXxh3};
    /// assert!(SegmentedXxh3::new(100, 0.01).bits() > 0);
    /// ```
    SegmentedXxh3(SegmentedBloomFilter<Xxh3>), "url-dedup-segmented xxh3",
    |n, p| segmented(n, p),
    insert: check_and_insert_mut, contains: contains, bits: |f| f.bits()
);

adapter!(
    /// Our segmented filter, split placement (eight 64-bit lanes per 512-bit segment, AVX2 when
    /// the CPU has it), keyed SipHash-1-3-128.
    ///
    /// ```
    /// use url_dedup_benches::peers::{Filter, SegmentedSplit};
    /// assert!(SegmentedSplit::new(100, 0.01).bits() > 0);
    /// ```
    SegmentedSplit(SegmentedBloomFilter<SipHash13>), "url-dedup-segmented split",
    |n, p| segmented_with(n, p, Placement::Split),
    insert: check_and_insert_mut, contains: contains, bits: |f| f.bits()
);

adapter!(
    /// Our segmented filter, split placement, `Xxh3`.
    ///
    /// ```
    /// use url_dedup_benches::peers::{Filter, SegmentedSplitXxh3};
    /// assert!(SegmentedSplitXxh3::new(100, 0.01).bits() > 0);
    /// ```
    SegmentedSplitXxh3(SegmentedBloomFilter<Xxh3>), "url-dedup-segmented split xxh3",
    |n, p| segmented_with(n, p, Placement::Split),
    insert: check_and_insert_mut, contains: contains, bits: |f| f.bits()
);

adapter!(
    /// Our growing filter as users get it by default (`GrowingFilter::builder()`: keyed
    /// SipHash-1-3-128, segments sized for the rate); `insert` is the `&mut self` path.
    ///
    /// ```
    /// use url_dedup_benches::peers::{Filter, Growing};
    /// let mut f = Growing::new(100, 0.01);
    /// (0..100).for_each(|i| f.insert(&i.to_string()));
    /// assert_eq!(f.0.layers(), 1);
    /// ```
    Growing(url_dedup_segmented::GrowingFilter<SipHash13>), "url-dedup GrowingFilter",
    |n, p| url_dedup_segmented::GrowingFilter::builder()
        .expected_items(n as u64)
        .false_positive_rate(p)
        .build()
        .expect("valid parameters"),
    insert: check_and_insert_mut, contains: contains, bits: |f| f.bits()
);

adapter!(
    /// fastbloom 0.17 with its default hasher (keyed SipHash-1-3).
    ///
    /// ```
    /// use url_dedup_benches::peers::{Fastbloom, Filter};
    /// assert!(Fastbloom::new(100, 0.01).bits() > 0);
    /// ```
    Fastbloom(fastbloom::BloomFilter), "fastbloom 0.17",
    |n, p| fastbloom::BloomFilter::with_false_pos(p).expected_items(n),
    insert: insert, contains: contains, bits: |f| f.num_bits() as u64
);

adapter!(
    /// fastbloom 0.17 fed XXH3 through its `BuildHasher` hook.
    ///
    /// ```
    /// use url_dedup_benches::peers::{FastbloomXxh3, Filter};
    /// assert!(FastbloomXxh3::new(100, 0.01).bits() > 0);
    /// ```
    FastbloomXxh3(fastbloom::BloomFilter<xxhash_rust::xxh3::Xxh3Builder>), "fastbloom 0.17 xxh3",
    |n, p| fastbloom::BloomFilter::with_false_pos(p)
        .hasher(xxhash_rust::xxh3::Xxh3Builder::new())
        .expected_items(n),
    insert: insert, contains: contains, bits: |f| f.num_bits() as u64
);

adapter!(
    /// bloomfilter 3.0 with its default hasher (two keyed SipHash-1-3, `%` reduction).
    ///
    /// ```
    /// use url_dedup_benches::peers::{Bloomfilter, Filter};
    /// assert!(Bloomfilter::new(100, 0.01).bits() > 0);
    /// ```
    Bloomfilter(bloomfilter::Bloom<str>), "bloomfilter 3.0",
    |n, p| bloomfilter::Bloom::new_for_fp_rate(n, p).expect("valid parameters"),
    insert: set, contains: check, bits: |f| f.len()
);

adapter!(
    /// probabilistic-collections 0.7 (two SipHash-2-4).
    ///
    /// ```
    /// use url_dedup_benches::peers::{Filter, Probabilistic};
    /// assert!(Probabilistic::new(100, 0.01).bits() > 0);
    /// ```
    Probabilistic(probabilistic_collections::bloom::BloomFilter<String>),
    "probabilistic-collections 0.7",
    |n, p| probabilistic_collections::bloom::BloomFilter::new(n, p),
    insert: insert, contains: contains, bits: |f| f.len() as u64
);

/// sbbf-rs 0.2.8 (Parquet split-block filter, AVX2) through sbbf-rs-safe, sized in 256-bit
/// buckets for rate `p` at `n` keys, fed XXH3-64 of the key's bytes.
///
/// ```
/// use url_dedup_benches::peers::{Filter, Sbbf};
/// let mut f = Sbbf::new(1_000, 0.01);
/// f.insert("a");
/// assert!(f.contains("a"));
/// ```
pub struct Sbbf(pub sbbf_rs_safe::Filter, u64);
impl Filter for Sbbf {
    const NAME: &'static str = "sbbf-rs 0.2.8 xxh3";
    fn new(n: usize, p: f64) -> Self {
        let bits = (sbbf_bits_per_key(p) * n as f64).ceil() as u64;
        let buckets = bits.div_ceil(256).max(1);
        let zero = vec![0u8; buckets as usize * 32];
        Self(
            sbbf_rs_safe::Filter::from_bytes(&zero).expect("whole buckets"),
            buckets * 256,
        )
    }
    #[inline]
    fn insert(&mut self, key: &str) {
        self.0.insert_hash(xxh3_64(key.as_bytes()));
    }
    #[inline]
    fn contains(&self, key: &str) -> bool {
        self.0.contains_hash(xxh3_64(key.as_bytes()))
    }
    fn bits(&self) -> u64 {
        self.1
    }
}

/// Bits per key a split-block filter needs for rate `p`: each key sets one bit in each of the
/// eight 32-bit lanes of one 256-bit bucket; bucket loads are Poisson.
///
/// ```
/// let b = url_dedup_benches::peers::sbbf_bits_per_key(0.01);
/// assert!((10.0..11.0).contains(&b));
/// ```
pub fn sbbf_bits_per_key(p: f64) -> f64 {
    let rate = |bits_per_key: f64| {
        let lambda = 256.0 / bits_per_key;
        let mut log_pmf = -lambda;
        let mut total = 0.0;
        for load in 0..(lambda * 4.0 + 40.0) as u32 {
            if load > 0 {
                log_pmf += lambda.ln() - f64::from(load).ln();
            }
            let lane = 1.0 - (31.0f64 / 32.0).powi(load as i32);
            total += log_pmf.exp() * lane.powi(8);
        }
        total
    };
    let mut b = -p.ln() / (2f64.ln() * 2f64.ln());
    while rate(b) > p {
        b *= 1.005;
    }
    b
}
