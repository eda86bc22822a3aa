//! How big each feature's region is, and how many bits a feature value sets in it.

use url_dedup_bloom::sizing::{self, Sizing};

use crate::Error;

/// How the regions are sized from the expected count `k` and rate `P`.
///
/// A URL is similar when *every* feature matched, but most features of a new URL (its site,
/// its depth) match legitimately; usually one feature alone (the page, or the query) tells
/// it apart. What matters is therefore the rate at which **one** never-seen feature value is
/// taken for seen, and that is what [`RegionSizing::PerFeature`] bounds.
///
/// # Examples
///
/// ```
/// use url_dedup_similarity::{Preset, RegionSizing, SimilarityFilter};
///
/// let faithful = SimilarityFilter::builder()
///     .expected_items(1_000_000)
///     .false_positive_rate(0.01)
///     .preset(Preset::Document004)
///     .region_sizing(RegionSizing::Document004)
///     .build()?;
/// // M = 9,585,059 bits split into four regions, one bit per feature value.
/// assert_eq!((faithful.region_bits(), faithful.hashes()), (2_396_265, 1));
/// // With 10^6 distinct values, a new value finds its one bit set 34% of the time.
/// assert!((faithful.expected_false_positive_rate() - 0.341).abs() < 0.001);
///
/// let per_feature = SimilarityFilter::builder()
///     .expected_items(1_000_000)
///     .false_positive_rate(0.01)
///     .preset(Preset::Document004)
///     .build()?;
/// assert_eq!((per_feature.region_bits(), per_feature.hashes()), (9_585_059, 7));
/// assert!(per_feature.expected_false_positive_rate() <= 0.0101);
/// # Ok::<(), url_dedup_similarity::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RegionSizing {
    /// Each region is a classic Bloom filter for `k` values at rate `P`
    /// ([`Sizing::classic`]), and a feature value sets that filter's optimal number of bits,
    /// derived from its MD5 by enhanced double hashing. A never-seen value is taken for
    /// seen with probability at most `P`. Costs `F` times the bits of one exact filter.
    #[default]
    PerFeature,
    /// Document 004 exactly: `M = -k ln P / (ln 2)^2` bits in total
    /// ([`sizing::optimal_bits`]), `N = ceil(M / F)` bits per region, one bit per feature
    /// value (`MD5 mod N`). `P` then bounds only the case where *all* `F` values are new;
    /// one new value among old ones is missed at the region's fill rate, `1 - e^(-k/N)`.
    Document004,
}

impl RegionSizing {
    /// `(N, bits per value)` for `features` regions, `items` values and rate `fpr`.
    pub(crate) fn size(self, items: u64, fpr: f64, features: u32) -> Result<(u64, u32), Error> {
        Ok(match self {
            Self::PerFeature => {
                let s = Sizing::classic(items, fpr)?;
                (s.bits, s.hashes)
            }
            Self::Document004 => {
                let m = sizing::optimal_bits(items, fpr)?;
                (m.div_ceil(u64::from(features)), 1)
            }
        })
    }

    /// Bits per value for a region of `bits` bits given explicitly.
    pub(crate) fn hashes_for(self, bits: u64, items: u64) -> u32 {
        match self {
            Self::PerFeature => sizing::optimal_hashes(bits, items),
            Self::Document004 => 1,
        }
    }

    pub(crate) fn id(self) -> u16 {
        match self {
            Self::PerFeature => 0,
            Self::Document004 => 1,
        }
    }

    pub(crate) fn from_id(id: u16) -> Option<Self> {
        match id {
            0 => Some(Self::PerFeature),
            1 => Some(Self::Document004),
            _ => None,
        }
    }
}
