//! Where an item's bits go: which segment, and which bit offsets inside it.
//!
//! This is the whole filter logic, as plain values and pure functions, so that every store —
//! the in-memory one here, a Redis store on another machine — sets exactly the same bits for
//! the same item.

use url_dedup_bloom::hash::{Digest, mix64, reduce};
use url_dedup_bloom::sizing::{
    MAX_HASHES, MIN_LANE_BITS, Sizing, blocked_false_positive_rate, split_false_positive_rate,
};

use crate::Error;

/// The smallest segment: one 64-bit word.
pub const MIN_SEGMENT_BITS: u64 = 64;
/// The default segment: one 64-byte cache line.
pub const DEFAULT_SEGMENT_BITS: u64 = 512;
/// The largest segment: 512 MiB, the largest string Redis stores.
pub const MAX_SEGMENT_BITS: u64 = 1 << 32;

/// Where an item's bits go inside its segment.
///
/// # Examples
///
/// ```
/// use url_dedup_segmented::{Layout, Placement};
///
/// let scattered = Layout::for_items(10_000_000, 0.01, 512)?;
/// let split = Layout::for_items_with(10_000_000, 0.01, 512, Placement::Split)?;
/// assert_eq!(scattered.placement(), Placement::Scattered);
/// assert_eq!((split.placement(), split.hashes()), (Placement::Split, 8));
/// // Split costs a few percent more memory for the same rate.
/// assert!(split.bits() > scattered.bits());
/// # Ok::<(), url_dedup_segmented::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Placement {
    /// Each of the item's `hashes` bits may be any bit of the segment (a blocked Bloom
    /// filter). The fewest bits for a given rate; the default.
    #[default]
    Scattered,
    /// The segment is cut into `hashes` equal lanes and the item sets one bit in each (a
    /// *split-block* filter, the layout of Parquet's and Impala's filters). `hashes` is a power
    /// of two. With eight 64-bit lanes in a 512-bit segment, an item's whole bit pattern is a
    /// handful of vector instructions, which makes this the fastest in-memory layout, for about
    /// 5% more bits than [`Scattered`](Self::Scattered) at 1%.
    Split,
}

impl Placement {
    /// The number that stands for this placement in snapshots and in Redis metadata.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_segmented::Placement;
    ///
    /// assert_eq!(Placement::Scattered.code(), 0);
    /// assert_eq!(Placement::from_code(Placement::Split.code()), Some(Placement::Split));
    /// assert_eq!(Placement::from_code(9), None);
    /// ```
    pub fn code(self) -> u16 {
        match self {
            Self::Scattered => 0,
            Self::Split => 1,
        }
    }

    /// The placement a [`code`](Self::code) stands for, if any.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_segmented::Placement;
    ///
    /// assert_eq!(Placement::from_code(0), Some(Placement::Scattered));
    /// ```
    pub fn from_code(code: u16) -> Option<Self> {
        match code {
            0 => Some(Self::Scattered),
            1 => Some(Self::Split),
            _ => None,
        }
    }
}

/// The geometry of a segmented filter: `segments` segments of `segment_bits` bits each, and
/// `hashes` bits per item, all inside the item's one segment.
///
/// `segment_bits` is a power of two between [`MIN_SEGMENT_BITS`] and [`MAX_SEGMENT_BITS`], so
/// bit offsets come from the high bits of a multiply, with no division anywhere.
///
/// # Examples
///
/// ```
/// use url_dedup_segmented::Layout;
///
/// // 10 million URLs at 1%, one cache line per segment.
/// let layout = Layout::for_items(10_000_000, 0.01, 512)?;
/// assert_eq!(layout.segment_bits(), 512);
/// assert!(layout.bits() as f64 / 1e7 < 10.2);
/// assert!(layout.false_positive_rate(10_000_000) <= 0.01);
/// # Ok::<(), url_dedup_segmented::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(try_from = "RawLayout", into = "RawLayout")
)]
pub struct Layout {
    segments: u64,
    segment_bits: u64,
    hashes: u32,
    placement: Placement,
    /// Bits per offset: `log2(segment_bits)` when scattered, `log2(lane bits)` when split.
    width: u32,
}

/// The fields of a [`Layout`] before validation (serde goes through this).
#[cfg(feature = "serde")]
#[derive(serde::Serialize, serde::Deserialize)]
struct RawLayout {
    segments: u64,
    segment_bits: u64,
    hashes: u32,
    /// Absent in layouts written before placements existed: those are scattered.
    #[serde(default)]
    placement: Placement,
}

#[cfg(feature = "serde")]
impl TryFrom<RawLayout> for Layout {
    type Error = Error;
    fn try_from(r: RawLayout) -> Result<Self, Error> {
        Layout::with_placement(r.segments, r.segment_bits, r.hashes, r.placement)
    }
}

#[cfg(feature = "serde")]
impl From<Layout> for RawLayout {
    fn from(l: Layout) -> Self {
        Self {
            segments: l.segments,
            segment_bits: l.segment_bits,
            hashes: l.hashes,
            placement: l.placement,
        }
    }
}

impl Layout {
    /// A [scattered](Placement::Scattered) layout of explicit size.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameters`] when `segments` is zero, `segment_bits` is not a power of two
    /// in `64..=2^32`, `hashes` is not in `1..=64`, or the total exceeds 2^64 bits.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_segmented::Layout;
    ///
    /// let l = Layout::new(1_000, 512, 7)?;
    /// assert_eq!(l.bits(), 512_000);
    /// assert!(Layout::new(1_000, 500, 7).is_err());
    /// assert!(Layout::new(0, 512, 7).is_err());
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn new(segments: u64, segment_bits: u64, hashes: u32) -> Result<Self, Error> {
        Self::with_placement(segments, segment_bits, hashes, Placement::Scattered)
    }

    /// A layout of explicit size and placement.
    ///
    /// # Errors
    ///
    /// As [`Layout::new`]; for [`Placement::Split`] also when `hashes` is not a power of two or
    /// leaves lanes narrower than 8 bits.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_segmented::{Layout, Placement};
    ///
    /// let l = Layout::with_placement(1_000, 512, 8, Placement::Split)?;
    /// assert_eq!(l.placement(), Placement::Split);
    /// assert!(Layout::with_placement(1_000, 512, 7, Placement::Split).is_err());
    /// assert!(Layout::with_placement(1_000, 512, 128, Placement::Split).is_err());
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn with_placement(
        segments: u64,
        segment_bits: u64,
        hashes: u32,
        placement: Placement,
    ) -> Result<Self, Error> {
        check_segment_bits(segment_bits)?;
        if segments == 0 {
            return Err(Error::InvalidParameters(
                "a filter needs at least one segment",
            ));
        }
        if !(1..=MAX_HASHES).contains(&hashes) {
            return Err(Error::InvalidParameters("hashes must be between 1 and 64"));
        }
        if segments.checked_mul(segment_bits).is_none() {
            return Err(Error::InvalidParameters("filter would exceed 2^64 bits"));
        }
        let width = match placement {
            Placement::Scattered => segment_bits.trailing_zeros(),
            Placement::Split => {
                if !hashes.is_power_of_two() || segment_bits / u64::from(hashes) < MIN_LANE_BITS {
                    return Err(Error::InvalidParameters(
                        "a split layout needs a power-of-two hash count and lanes of 8+ bits",
                    ));
                }
                (segment_bits / u64::from(hashes)).trailing_zeros()
            }
        };
        Ok(Self {
            segments,
            segment_bits,
            hashes,
            placement,
            width,
        })
    }

    /// The smallest [scattered](Placement::Scattered) layout of `segment_bits`-bit segments
    /// that holds `items` items at a false-positive rate of at most `fpr`, with the number of
    /// hashes that minimises the rate.
    ///
    /// Uses [`Sizing::blocked`], which accounts for the uneven load of segments (a Poisson
    /// mixture), so a blocked filter gets the few extra bits it needs over a classic one.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameters`] for zero items, a rate outside `(0, 1)`, an invalid segment
    /// size, or a target no segment of that size can reach.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_segmented::Layout;
    ///
    /// let line = Layout::for_items(1_000_000, 0.001, 512)?;
    /// let big = Layout::for_items(1_000_000, 0.001, 1 << 20)?;
    /// assert!(big.bits() < line.bits()); // larger segments are closer to a classic filter
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn for_items(items: u64, fpr: f64, segment_bits: u64) -> Result<Self, Error> {
        Self::for_items_with(items, fpr, segment_bits, Placement::Scattered)
    }

    /// [`Layout::for_items`] for a given placement; a split layout is sized by
    /// [`Sizing::split`].
    ///
    /// # Errors
    ///
    /// As [`Layout::for_items`].
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_segmented::{Layout, Placement};
    ///
    /// let l = Layout::for_items_with(1_000_000, 0.01, 512, Placement::Split)?;
    /// assert!(l.false_positive_rate(1_000_000) <= 0.01);
    /// assert!(l.bits() as f64 / 1e6 < 10.6);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn for_items_with(
        items: u64,
        fpr: f64,
        segment_bits: u64,
        placement: Placement,
    ) -> Result<Self, Error> {
        check_segment_bits(segment_bits)?;
        let request = (items, fpr.to_bits(), segment_bits, placement);
        if let Some(layout) = recent_layouts::find(request) {
            return Ok(layout);
        }
        let sizing = match placement {
            Placement::Scattered => Sizing::blocked(items, fpr, segment_bits)?,
            Placement::Split => Sizing::split(items, fpr, segment_bits)?,
        };
        let layout = Self::with_placement(
            sizing.bits / segment_bits,
            segment_bits,
            sizing.hashes,
            placement,
        )?;
        recent_layouts::remember(request, layout);
        Ok(layout)
    }

    /// The smallest segment, from one cache line (512 bits) up to eight, whose scattered
    /// layout at rate `fpr` stays within 25% of a classic filter's size: one line at everyday
    /// rates, a few adjacent lines for rates near one in a billion, where a single line would
    /// need nearly twice the bits.
    ///
    /// Why a quarter: a lookup costs about one cache miss per line it reads, and the misses a
    /// core can have in flight are few (ten or so), so lines per lookup bound a batch's
    /// speed. At 5 × 10^-10 four lines take 22% more bits than a classic filter and eight
    /// take 12%, and the `url-dedup` command's `--raw` run of its 10M-line benchmark went from
    /// 1.14 s to 0.90 s with four (docs/benchmarks.md).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_segmented::Layout;
    ///
    /// assert_eq!(Layout::compact_segment_bits(0.01), 512);
    /// assert_eq!(Layout::compact_segment_bits(1e-9), 2048);
    /// assert_eq!(Layout::compact_segment_bits(1e-11), 4096);
    /// ```
    pub fn compact_segment_bits(fpr: f64) -> u64 {
        // The ratio of sizes does not depend on the count; a million items keeps the search
        // fast.
        const ITEMS: u64 = 1_000_000;
        // A thread that builds many filters at one rate (a filter per site) answers it once.
        recent_layouts::compact_segment_bits(fpr, || {
            let Ok(classic) = Sizing::classic(ITEMS, fpr) else {
                return DEFAULT_SEGMENT_BITS;
            };
            // One rate per candidate, not a sizing: whether the candidate's size fits is all
            // that is asked (a growing filter at a new rate of 10^-9 took 1.5 ms to build when
            // each candidate was sized in full).
            let max_bits = (1.25 * classic.bits as f64) as u64;
            [512, 1024, 2048]
                .into_iter()
                .find(|&bits| Sizing::blocked_fits(ITEMS, fpr, bits, max_bits))
                .unwrap_or(4096)
        })
    }

    /// Folds `f` over a probe's bit offsets: the offsets of [`offsets`](Self::offsets), in
    /// the same order, computed by unrolled code for scattered segments of one to eight cache
    /// lines (a loop over [`Offsets`] otherwise). For callers that keep their own bits in
    /// this layout.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_segmented::{Layout, Probe};
    ///
    /// let l = Layout::new(4, 4096, 29)?;
    /// let probe = Probe { segment: 1, seed: 0x0123_4567_89ab_cdef };
    /// let folded = l.fold_offsets(probe, Vec::new(), |mut v, o| { v.push(o); v });
    /// assert_eq!(folded, l.offsets(probe).collect::<Vec<_>>());
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    #[inline(always)]
    pub fn fold_offsets<A>(&self, probe: Probe, init: A, f: impl FnMut(A, u64) -> A) -> A {
        match (self.placement, self.segment_bits) {
            (Placement::Scattered, 512) => fold_line_offsets(self.hashes, probe.seed, init, f),
            (Placement::Scattered, 1024) => {
                fold_wide_offsets::<10, A>(self.hashes, probe.seed, init, f)
            }
            (Placement::Scattered, 2048) => {
                fold_wide_offsets::<11, A>(self.hashes, probe.seed, init, f)
            }
            (Placement::Scattered, 4096) => {
                fold_wide_offsets::<12, A>(self.hashes, probe.seed, init, f)
            }
            _ => self.offsets(probe).fold(init, f),
        }
    }

    /// Where an item's bits go inside its segment.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_segmented::{Layout, Placement};
    ///
    /// assert_eq!(Layout::new(3, 64, 2)?.placement(), Placement::Scattered);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    #[inline]
    pub fn placement(&self) -> Placement {
        self.placement
    }

    /// Number of segments.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(url_dedup_segmented::Layout::new(3, 64, 2)?.segments(), 3);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    #[inline]
    pub fn segments(&self) -> u64 {
        self.segments
    }

    /// Bits per segment (a power of two).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(url_dedup_segmented::Layout::new(3, 1024, 2)?.segment_bits(), 1024);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    #[inline]
    pub fn segment_bits(&self) -> u64 {
        self.segment_bits
    }

    /// 64-bit words per segment.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(url_dedup_segmented::Layout::new(3, 512, 2)?.segment_words(), 8);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    #[inline]
    pub fn segment_words(&self) -> u64 {
        self.segment_bits / 64
    }

    /// Bytes per segment: the length of the segment's Redis string.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(url_dedup_segmented::Layout::new(3, 512, 2)?.segment_bytes(), 64);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    #[inline]
    pub fn segment_bytes(&self) -> u64 {
        self.segment_bits / 8
    }

    /// Bits each item sets, all in its segment.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(url_dedup_segmented::Layout::new(3, 512, 6)?.hashes(), 6);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    #[inline]
    pub fn hashes(&self) -> u32 {
        self.hashes
    }

    /// Total bits, `segments * segment_bits`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(url_dedup_segmented::Layout::new(3, 512, 6)?.bits(), 1536);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    #[inline]
    pub fn bits(&self) -> u64 {
        self.segments * self.segment_bits
    }

    /// Total 64-bit words.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(url_dedup_segmented::Layout::new(3, 512, 6)?.words(), 24);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    #[inline]
    pub fn words(&self) -> u64 {
        self.bits() / 64
    }

    /// The segment and offset seed of a digest: `h1` picks the segment by multiply-shift
    /// ([`reduce`]), `h2` seeds the offsets.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::hash::Digest;
    /// use url_dedup_segmented::Layout;
    ///
    /// let l = Layout::new(100, 512, 7)?;
    /// let p = l.probe(Digest { h1: u64::MAX, h2: 5 });
    /// assert_eq!(p.segment, 99);
    /// assert_eq!(p.seed, 5);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    #[inline]
    pub fn probe(&self, digest: Digest) -> Probe {
        Probe {
            segment: reduce(digest.h1, self.segments),
            seed: digest.h2,
        }
    }

    /// The `hashes` bit offsets of a probe inside its segment, in `0..segment_bits`, numbered
    /// as Redis numbers bits (see [`bit_order`](crate::bit_order)).
    ///
    /// The offsets come from consecutive slices of `seed`, most significant first. When a slice
    /// no longer fits in the bits left, the next 64 bits come from the SplitMix64 finalizer of
    /// the previous value. Slices of a uniform hash are independent and uniform, and unlike a
    /// chain of multiplies they do not wait on each other.
    ///
    /// * [`Placement::Scattered`]: each slice is `log2(segment_bits)` bits wide and is the
    ///   offset (seven 9-bit offsets for a 512-bit segment). Offsets of one item may coincide;
    ///   the sizing's Poisson model counts that.
    /// * [`Placement::Split`]: slice `i` is `log2(lane bits)` wide and picks the bit of lane
    ///   `i`, so offset `i` is `i * lane_bits + slice` (eight 6-bit slices for eight 64-bit
    ///   lanes).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_segmented::{Layout, Probe};
    ///
    /// let l = Layout::new(10, 512, 7)?;
    /// let offsets: Vec<u64> = l.offsets(Probe { segment: 3, seed: 0xdead_beef_cafe_f00d }).collect();
    /// assert_eq!(offsets.len(), 7);
    /// assert!(offsets.iter().all(|&o| o < 512));
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    #[inline]
    pub fn offsets(&self, probe: Probe) -> Offsets {
        let stride = match self.placement {
            Placement::Scattered => 0,
            Placement::Split => 1 << self.width,
        };
        Offsets::new(probe.seed, self.width, self.hashes, stride)
    }

    /// Expected false-positive rate after `items` distinct insertions (the Poisson-mixture rate
    /// of [`blocked_false_positive_rate`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let l = url_dedup_segmented::Layout::for_items(100_000, 0.01, 512)?;
    /// assert!(l.false_positive_rate(100_000) <= 0.01);
    /// assert!(l.false_positive_rate(200_000) > 0.01);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn false_positive_rate(&self, items: u64) -> f64 {
        if items == 0 {
            return 0.0;
        }
        let bits_per_item = self.bits() as f64 / items as f64;
        match self.placement {
            Placement::Scattered => {
                blocked_false_positive_rate(self.segment_bits, bits_per_item, self.hashes)
            }
            Placement::Split => {
                split_false_positive_rate(self.segment_bits, bits_per_item, self.hashes)
            }
        }
    }

    /// The most distinct items this layout holds with an expected false-positive rate of at
    /// most `fpr` (0 if even one item exceeds it): what a filter built on an explicit layout
    /// is sized for.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_segmented::Layout;
    ///
    /// let l = Layout::for_items(1_000_000, 0.01, 512)?;
    /// let capacity = l.capacity(0.01);
    /// assert!((1_000_000..1_010_000).contains(&capacity));
    /// assert!(l.capacity(0.001) < capacity);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn capacity(&self, fpr: f64) -> u64 {
        // The rate grows with the items; search the largest count that still meets `fpr`.
        let (mut meets, mut fails) = (0u64, self.bits().saturating_add(1));
        while fails - meets > 1 {
            let mid = meets + (fails - meets) / 2;
            if self.false_positive_rate(mid) <= fpr {
                meets = mid;
            } else {
                fails = mid;
            }
        }
        meets
    }
}

/// The layouts [`Layout::for_items_with`] sized last on this thread, and the last answer of
/// [`Layout::compact_segment_bits`].
///
/// Sizing searches the blocked or split model's rate over bit counts and hash counts, about a
/// tenth of a millisecond; filling a filter of 10,000 items takes a few tenths. A partitioned
/// filter builds thousands of shards of one size, and a small filter would spend a third of
/// its life being sized: the answer for the same request is the same, so it is kept.
mod recent_layouts {
    use std::cell::{Cell, RefCell};

    use super::{Layout, Placement};

    /// Items, rate (as bits), segment bits and placement.
    pub(super) type Request = (u64, u64, u64, Placement);

    /// How many answers a thread keeps.
    const KEPT: usize = 8;

    thread_local! {
        /// Newest first.
        static RECENT: RefCell<Vec<(Request, Layout)>> = const { RefCell::new(Vec::new()) };
    }

    pub(super) fn find(request: Request) -> Option<Layout> {
        RECENT.with_borrow(|recent| {
            recent
                .iter()
                .find(|(r, _)| *r == request)
                .map(|&(_, layout)| layout)
        })
    }

    pub(super) fn remember(request: Request, layout: Layout) {
        RECENT.with_borrow_mut(|recent| {
            recent.insert(0, (request, layout));
            recent.truncate(KEPT);
        });
    }

    thread_local! {
        /// The last rate (as bits) whose compact segment size was asked, and that size (0:
        /// none yet).
        static COMPACT: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
    }

    /// The compact segment size at `fpr`: the last answer when the rate is the last one
    /// asked, else `choose`'s, remembered.
    pub(super) fn compact_segment_bits(fpr: f64, choose: impl FnOnce() -> u64) -> u64 {
        match COMPACT.get() {
            (rate, bits) if bits != 0 && rate == fpr.to_bits() => bits,
            _ => {
                let bits = choose();
                COMPACT.set((fpr.to_bits(), bits));
                bits
            }
        }
    }
}

fn check_segment_bits(segment_bits: u64) -> Result<(), Error> {
    if !segment_bits.is_power_of_two()
        || !(MIN_SEGMENT_BITS..=MAX_SEGMENT_BITS).contains(&segment_bits)
    {
        return Err(Error::InvalidParameters(
            "segment size must be a power of two between 64 and 2^32 bits",
        ));
    }
    Ok(())
}

/// One item, located: its segment and the seed of its bit offsets.
///
/// What a [`SegmentStore`](crate::SegmentStore) receives. A store derives the offsets with
/// [`Layout::offsets`], so it never needs the item or the hash key.
///
/// # Examples
///
/// ```
/// use url_dedup_segmented::{Layout, Probe};
/// use url_dedup_bloom::hash::Digest;
///
/// let l = Layout::new(8, 512, 3)?;
/// let p: Probe = l.probe(Digest { h1: 0, h2: 1 });
/// assert_eq!(p, Probe { segment: 0, seed: 1 });
/// # Ok::<(), url_dedup_segmented::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Probe {
    /// The segment, in `0..segments`.
    pub segment: u64,
    /// Seeds the bit offsets inside the segment.
    pub seed: u64,
}

/// Iterator over a probe's bit offsets; see [`Layout::offsets`].
///
/// # Examples
///
/// ```
/// use url_dedup_segmented::{Layout, Probe};
///
/// let l = Layout::new(1, 64, 2)?;
/// let mut it = l.offsets(Probe { segment: 0, seed: 0 });
/// assert_eq!(it.len(), 2);
/// assert_eq!(it.next(), Some(0));
/// # Ok::<(), url_dedup_segmented::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Offsets {
    /// The current 64-bit word, whole: the next one is derived from it.
    word: u64,
    /// Its unused bits, at the top.
    x: u64,
    /// How many bits of `x` are unused.
    avail: u32,
    /// Bits per slice.
    width: u32,
    left: u32,
    /// Where the current lane starts (always 0 when scattered).
    lane: u64,
    /// Bits per lane when split, 0 when scattered.
    stride: u64,
}

impl Offsets {
    /// Offsets that are `width`-bit slices of `seed`, `left` of them, lane `i` starting at
    /// `i * stride` (0 when scattered).
    #[inline(always)]
    fn new(seed: u64, width: u32, left: u32, stride: u64) -> Self {
        Self {
            word: seed,
            x: seed,
            avail: 64,
            width,
            left,
            lane: 0,
            stride,
        }
    }
}

impl Iterator for Offsets {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        if self.avail < self.width {
            // More offsets than one seed word holds (more than 7 in a 512-bit segment): 64
            // fresh bits from the previous word.
            self.word = mix64(self.word);
            self.x = self.word;
            self.avail = 64;
        }
        let offset = self.lane + (self.x >> (64 - self.width));
        // `width` is at most 32, so the shift is in range.
        self.x <<= self.width;
        self.avail -= self.width;
        self.lane += self.stride;
        Some(offset)
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left as usize, Some(self.left as usize))
    }
}

/// Folds `f` over the offsets of an item with seed `seed` in a 512-bit scattered segment of a
/// layout with `hashes` bits per item: the same offsets, in the same order, as [`Layout::offsets`] gives for
/// 512-bit segments.
///
/// The usual values of `hashes` go to copies where both the count and the 9-bit offset width
/// are compile-time constants, so the loop unrolls and the test for a fresh seed word
/// disappears. A single-item call is bound by how many items' cache misses the core keeps in
/// flight, which its reorder window limits: fewer instructions per item let the next item's
/// load start sooner.
#[inline(always)]
pub(crate) fn fold_line_offsets<A>(
    hashes: u32,
    seed: u64,
    init: A,
    mut f: impl FnMut(A, u64) -> A,
) -> A {
    macro_rules! fixed {
        ($($k:literal)*) => {
            match hashes {
                $($k => {
                    // An index loop over the array: always unrolled, where the array's
                    // by-value iterator sometimes stayed a call.
                    let offsets = line_offsets::<$k>(seed);
                    let mut acc = init;
                    for i in 0..$k {
                        acc = f(acc, offsets[i]);
                    }
                    return acc;
                })*
                _ => {}
            }
        };
    }
    fixed!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16);
    // More bits than that (rates below about 10^-6): a word's seven offsets unrolled.
    fold_wide_offsets::<LINE_WIDTH, A>(hashes, seed, init, f)
}

/// Offset width in a 512-bit segment.
const LINE_WIDTH: u32 = 9;

/// [`Offsets`] for a 512-bit segment and `K` offsets, unrolled: seven 9-bit offsets per seed
/// word, then a fresh word by [`mix64`], exactly as the iterator does.
#[inline(always)]
fn line_offsets<const K: usize>(seed: u64) -> [u64; K] {
    const PER_WORD: usize = (64 / LINE_WIDTH) as usize;
    let mut out = [0; K];
    let (mut word, mut x) = (seed, seed);
    for (i, slot) in out.iter_mut().enumerate() {
        if i > 0 && i % PER_WORD == 0 {
            word = mix64(word);
            x = word;
        }
        *slot = x >> (64 - LINE_WIDTH);
        x <<= LINE_WIDTH;
    }
    out
}

/// Folds `f` over the offsets of an item with seed `seed` in a scattered segment whose offsets
/// are `W` bits wide (`W = log2(segment_bits)`), `hashes` of them: the same offsets, in the
/// same order, as [`Layout::offsets`].
///
/// The offsets of each seed word form an inner loop of the compile-time length `64 / W`, which
/// unrolls, so the test for a fresh word runs once per word instead of once per offset. Low
/// rates need many bits per item (29 for one in a billion), where that test was a tenth of the
/// work of a lookup.
#[inline(always)]
pub(crate) fn fold_wide_offsets<const W: u32, A>(
    hashes: u32,
    seed: u64,
    init: A,
    mut f: impl FnMut(A, u64) -> A,
) -> A {
    let per_word = 64 / W;
    let (full_words, rest) = (hashes / per_word, hashes % per_word);
    let (mut acc, mut word) = (init, seed);
    for i in 0..full_words {
        if i > 0 {
            word = mix64(word);
        }
        let mut x = word;
        for _ in 0..64 / W {
            acc = f(acc, x >> (64 - W));
            x <<= W;
        }
    }
    if rest > 0 {
        if full_words > 0 {
            word = mix64(word);
        }
        let mut x = word;
        for _ in 0..rest {
            acc = f(acc, x >> (64 - W));
            x <<= W;
        }
    }
    acc
}

impl ExactSizeIterator for Offsets {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_segments_are_the_smallest_within_a_quarter_of_the_classic_size() {
        // The definition, by sizing every candidate in full.
        let sized = |fpr: f64| {
            let classic = Sizing::classic(1_000_000, fpr).unwrap().bits as f64;
            [512, 1024, 2048]
                .into_iter()
                .find(|&bits| {
                    Layout::for_items_with(1_000_000, fpr, bits, Placement::Scattered)
                        .is_ok_and(|l| l.bits() as f64 <= 1.25 * classic)
                })
                .unwrap_or(4096)
        };
        let mut answers = std::collections::BTreeSet::new();
        for tenths in 5..=140 {
            let fpr = 10f64.powf(-f64::from(tenths) / 10.0);
            let bits = Layout::compact_segment_bits(fpr);
            assert_eq!(bits, sized(fpr), "rate {fpr}");
            // Asked again (answered from the thread's last answer): the same.
            assert_eq!(Layout::compact_segment_bits(fpr), bits);
            answers.insert(bits);
        }
        // The sweep crosses every candidate.
        assert_eq!(
            answers.into_iter().collect::<Vec<_>>(),
            [512, 1024, 2048, 4096]
        );
    }

    #[test]
    fn unrolled_line_offsets_are_the_iterated_ones() {
        for hashes in 1..=24 {
            let l = Layout::new(4, 512, hashes).unwrap();
            for seed in [
                0u64,
                1,
                u64::MAX,
                0xdead_beef_cafe_f00d,
                0x0123_4567_89ab_cdef,
            ] {
                let probe = Probe { segment: 1, seed };
                let listed: Vec<u64> = l.offsets(probe).collect();
                let folded = fold_line_offsets(hashes, seed, Vec::new(), |mut v, o| {
                    v.push(o);
                    v
                });
                assert_eq!(folded, listed, "k = {hashes}, seed = {seed:#x}");
            }
        }
    }

    #[test]
    fn unrolled_wide_offsets_are_the_iterated_ones() {
        fn check<const W: u32>() {
            for hashes in 1..=64 {
                let l = Layout::new(4, 1 << W, hashes).unwrap();
                for seed in [0u64, 1, u64::MAX, 0xdead_beef_cafe_f00d] {
                    let probe = Probe { segment: 1, seed };
                    let listed: Vec<u64> = l.offsets(probe).collect();
                    let folded = fold_wide_offsets::<W, _>(hashes, seed, Vec::new(), |mut v, o| {
                        v.push(o);
                        v
                    });
                    assert_eq!(folded, listed, "width {W}, k = {hashes}, seed = {seed:#x}");
                }
            }
        }
        check::<9>();
        check::<10>();
        check::<11>();
        check::<12>();
    }

    #[test]
    fn offsets_cover_every_bit_of_a_segment_uniformly() {
        let l = Layout::new(1, 512, 8).unwrap();
        let mut counts = [0u32; 512];
        // Seeds as the filter gets them: the h2 half of a real hash.
        use url_dedup_bloom::hash::{HashKey, ItemHasher, SipHash13};
        let hasher = SipHash13::new(HashKey::from_bytes([3; 16]));
        for i in 0..20_000u32 {
            let seed = hasher.hash(&i.to_le_bytes()).h2;
            for o in l.offsets(Probe { segment: 0, seed }) {
                counts[o as usize] += 1;
            }
        }
        // 160,000 draws over 512 bits: 312.5 expected per bit, sd ~17.7.
        let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
        assert!(*min > 220 && *max < 410, "min {min} max {max}");
    }

    #[test]
    fn split_offsets_put_one_bit_in_each_lane() {
        for (bits, hashes) in [(512u64, 8u32), (512, 16), (512, 64), (1 << 20, 8), (64, 8)] {
            let l = Layout::with_placement(3, bits, hashes, Placement::Split).unwrap();
            let lane = bits / u64::from(hashes);
            for seed in [0u64, u64::MAX, 0xdead_beef_cafe_f00d] {
                let offsets: Vec<u64> = l.offsets(Probe { segment: 0, seed }).collect();
                assert_eq!(offsets.len(), hashes as usize);
                for (i, o) in offsets.iter().enumerate() {
                    assert_eq!(o / lane, i as u64, "{bits}/{hashes}: offset {o}");
                }
            }
        }
        // Eight 64-bit lanes take the seed's top 48 bits, 6 at a time.
        let l = Layout::with_placement(1, 512, 8, Placement::Split).unwrap();
        let seed = 0b000001_000010_000011_000100_000101_000110_000111_001000u64 << 16;
        let offsets: Vec<u64> = l.offsets(Probe { segment: 0, seed }).collect();
        assert_eq!(offsets, [1, 66, 131, 196, 261, 326, 391, 456]);
    }

    #[test]
    fn a_remembered_layout_is_the_one_sizing_gives() {
        for placement in [Placement::Scattered, Placement::Split] {
            let first = Layout::for_items_with(12_345, 0.003, 512, placement).unwrap();
            let again = Layout::for_items_with(12_345, 0.003, 512, placement).unwrap();
            assert_eq!(first, again);
            let sizing = match placement {
                Placement::Scattered => Sizing::blocked(12_345, 0.003, 512).unwrap(),
                Placement::Split => Sizing::split(12_345, 0.003, 512).unwrap(),
            };
            assert_eq!((first.bits(), first.hashes()), (sizing.bits, sizing.hashes));
        }
        // Other requests are not confused with it.
        let other = Layout::for_items_with(12_345, 0.002, 512, Placement::Scattered).unwrap();
        assert!(other.bits() > Layout::for_items(12_345, 0.003, 512).unwrap().bits());
    }

    #[test]
    fn sizing_matches_published_figures() {
        // ~9.9 bits per item for 1% and ~15.5 for 0.1% with 512-bit blocks.
        let a = Layout::for_items(10_000_000, 0.01, 512).unwrap();
        let b = Layout::for_items(10_000_000, 0.001, 512).unwrap();
        let per = |l: Layout| l.bits() as f64 / 1e7;
        assert!((9.7..10.2).contains(&per(a)), "{}", per(a));
        assert!((15.0..16.2).contains(&per(b)), "{}", per(b));
    }

    #[test]
    fn largest_segments_use_every_offset_bit() {
        let l = Layout::new(2, MAX_SEGMENT_BITS, 2).unwrap();
        let mut it = l.offsets(Probe {
            segment: 1,
            seed: u64::MAX,
        });
        assert_eq!(it.next(), Some(MAX_SEGMENT_BITS - 1));
    }
}
