//! How big a shared filter is: its layout (few hashes, big segments) and how its segments
//! are spread over Redis strings.

use url_dedup_segmented::Layout;

use super::RedisSegmentStore;
use crate::error::{Error, Result};

/// How much larger than the memory-optimal Bloom filter a Redis filter may be, so that it
/// takes fewer bits per URL (see [`RedisSegmentStore::layout_for`]): twice, and a little, so
/// that 1% takes `k = 2` (2.03 times the optimum) rather than 3.
///
/// # Examples
///
/// ```
/// use url_dedup_bloom::sizing::Sizing;
/// use url_dedup_redis::{REDIS_SIZE_FOR_SPEED, RedisSegmentStore};
///
/// let optimum = Sizing::classic(1_000_000, 0.01)?.bits as f64;
/// let layout = RedisSegmentStore::layout_for(1_000_000, 0.01)?;
/// // Within the allowance, before rounding up to whole segments.
/// assert!((layout.bits() as f64) < optimum * REDIS_SIZE_FOR_SPEED * 1.07);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const REDIS_SIZE_FOR_SPEED: f64 = 2.1;

/// How much larger than the memory-optimal Bloom filter a layer of a
/// [`SharedFilter`](crate::SharedFilter) may be, so that it sets fewer bits per URL: 8 times.
/// Redis's CPU per URL, not its memory, is what a shared filter must keep below `SADD`'s: at
/// the default rate, 10⁻⁵, this takes `k = 3` at about 20 bytes per URL, where `SADD` of the
/// URL keeps about 127; at 1% it still takes `k = 2`.
///
/// # Examples
///
/// ```
/// use url_dedup_redis::{DEFAULT_SHARED_FPR, SHARED_SIZE_FOR_SPEED};
/// assert_eq!((SHARED_SIZE_FOR_SPEED, DEFAULT_SHARED_FPR), (8.0, 1e-5));
/// ```
pub const SHARED_SIZE_FOR_SPEED: f64 = 8.0;
impl RedisSegmentStore {
    /// A layout suited to Redis for `items` at false-positive rate `fpr`.
    ///
    /// * **Few hashes.** Every bit is one `SET u1 <offset> 1` that Redis parses and answers,
    ///   so Redis's work per URL is proportional to `k`, and one Redis core is what a shared
    ///   filter runs out of first (its memory, a byte or two per URL, comes long after). The
    ///   layout takes the fewest hashes whose size is at most about twice the optimum
    ///   ([`REDIS_SIZE_FOR_SPEED`]): `k` is about the number of decimal digits of `1/fpr`,
    ///   half the memory-optimal `k`. At 1%: `k = 2` at about 19.5 bits (2.4 bytes) per URL,
    ///   instead of `k = 7` at 9.6 bits; at 10⁻⁹, `k = 9` at 85 bits instead of `k = 30` at
    ///   43. [`layout_for_hashes`](Self::layout_for_hashes) takes any other `k`.
    /// * **Big segments**: up to 2^16 bits (8 KiB), at least 16 of them so rounding up to whole
    ///   segments wastes little; `BITFIELD` is O(1) in the offset, and the filter is as good as
    ///   a classic one of the same size.
    ///
    /// # Errors
    ///
    /// [`Error::Segmented`] for zero items or a rate outside `(0, 1)`.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_redis::RedisSegmentStore;
    ///
    /// let layout = RedisSegmentStore::layout_for(10_000_000, 0.01)?;
    /// assert_eq!((layout.segment_bits(), layout.hashes()), (1 << 16, 2));
    /// assert!(layout.false_positive_rate(10_000_000) <= 0.01);
    /// let bytes_per_url = layout.bits() as f64 / 8.0 / 1e7;
    /// assert!(bytes_per_url < 2.6, "{bytes_per_url}");
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// ```
    pub fn layout_for(items: u64, fpr: f64) -> Result<Layout> {
        Self::layout_within(items, fpr, None)
    }

    /// A layout of exactly `hashes` bits per item, as many bits as the rate then takes. Fewer
    /// hashes cost Redis less work per URL and more memory: at 1%, `k = 1` takes about 100
    /// bits (12.5 bytes) per URL for half the work of `k = 2`; `k = 4` about 10.6 bits (1.33
    /// bytes) for twice its work.
    ///
    /// # Errors
    ///
    /// As [`layout_for`](Self::layout_for); also for `hashes` = 0, or a rate that `hashes`
    /// cannot reach in a filter of at most 2^64 bits.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_redis::RedisSegmentStore;
    ///
    /// let lean = RedisSegmentStore::layout_for_hashes(1_000_000, 0.01, 4)?;
    /// assert_eq!(lean.hashes(), 4);
    /// assert!(lean.false_positive_rate(1_000_000) <= 0.01);
    /// let default = RedisSegmentStore::layout_for(1_000_000, 0.01)?;
    /// assert!(lean.bits() < default.bits());
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// ```
    pub fn layout_for_hashes(items: u64, fpr: f64, hashes: u32) -> Result<Layout> {
        if hashes == 0 {
            return Err(Error::Segmented(
                url_dedup_segmented::Error::InvalidParameters("hashes must be at least 1"),
            ));
        }
        Self::layout_within(items, fpr, Some(hashes))
    }

    /// The layout for `items` at `fpr`: `hashes` if given, else the fewest hashes whose size
    /// is within [`REDIS_SIZE_FOR_SPEED`] of the optimum.
    pub(crate) fn layout_within(items: u64, fpr: f64, hashes: Option<u32>) -> Result<Layout> {
        Self::layout_allowing(items, fpr, hashes, REDIS_SIZE_FOR_SPEED)
    }

    /// The layout for `items` at `fpr`: `hashes` if given, else the fewest hashes whose size
    /// is within `allowance` times the optimum.
    pub(crate) fn layout_allowing(
        items: u64,
        fpr: f64,
        hashes: Option<u32>,
        allowance: f64,
    ) -> Result<Layout> {
        let optimum = url_dedup_bloom::sizing::Sizing::classic(items, fpr)
            .map_err(|e| Error::Segmented(e.into()))?;
        let target = (optimum.bits / 16).max(64);
        let segment_bits = (1u64 << (63 - target.leading_zeros())).clamp(64, 1 << 16);
        // Bits per item for `hashes`, grown from the classic figure until the segmented rate
        // holds; `None` past `budget` bits.
        let sized = |hashes: u32, budget: f64| -> Result<Option<Layout>> {
            let mut bits_per_item = url_dedup_bloom::sizing::bits_per_item(hashes, fpr);
            for _ in 0..400 {
                let bits = bits_per_item * items as f64;
                if !bits.is_finite() || bits > budget || bits > u64::MAX as f64 {
                    return Ok(None);
                }
                let segments = (bits / segment_bits as f64).ceil().max(1.0) as u64;
                // Rounding up to whole segments (at most 1/16 more) is not held against k.
                let layout = Layout::new(segments, segment_bits, hashes)?;
                if layout.false_positive_rate(items) <= fpr {
                    return Ok(Some(layout));
                }
                bits_per_item *= 1.005;
            }
            Ok(None)
        };
        if let Some(k) = hashes {
            return sized(k, f64::MAX)?.ok_or(Error::Segmented(
                url_dedup_segmented::Error::InvalidParameters(
                    "no filter of so few hashes reaches the rate",
                ),
            ));
        }
        let budget = optimum.bits as f64 * allowance;
        for hashes in 1..optimum.hashes {
            if let Some(layout) = sized(hashes, budget)? {
                return Ok(layout);
            }
        }
        Ok(Layout::for_items(items, fpr, segment_bits)?)
    }
}

/// Segments per data key.
///
/// * **One server**: so one key is just under 1 MiB: jemalloc rounds a string of 2^k bytes
///   plus Redis's header up to 1.25 * 2^k, so a power-of-two key would waste 25%, while
///   2^k - 1 segments of a smaller power of two fill the 1 MiB size class exactly.
/// * **A cluster**: the same keys of up to 1 MiB, but at least 16 of them (or one per
///   segment, if fewer), so that even a small filter spreads its work over the masters; at
///   most one per slot (16,384). Resharding moves slots, and with them the keys in them. Not
///   more keys than that: a batch sends one command per key it touches, each reading the key's
///   header, so a batch of 1,000 URLs over hundreds of small keys would cost Redis several times
///   the work of its bits.
pub(crate) fn default_segments_per_key(layout: Layout, cluster: bool) -> u64 {
    let target = (1u64 << 20) - 64;
    let per_key = (target / layout.segment_bytes()).max(1);
    if cluster {
        let keys = layout
            .segments()
            .div_ceil(per_key)
            .max(16)
            .min(layout.segments())
            .min(u64::from(crate::cluster::SLOTS));
        return layout.segments().div_ceil(keys);
    }
    per_key
}
