//! How big each feature's region is, and how many bits a feature value sets in it.

use url_dedup_bloom::sizing::{self, Sizing};
use url_dedup_segmented::{DEFAULT_SEGMENT_BITS, Layout};

/// Bits per block of a [`RegionSizing::Blocked`] region: one 64-byte cache line. Larger blocks
/// would take fewer bits at rates near one in a billion (50 instead of 79 per value with
/// 4096-bit blocks), but a URL would then touch eight lines per feature, 56 in all: on a
/// million URLs at that rate a check took 2.3 times as long as with one line per feature.
const BLOCK_BITS: u64 = DEFAULT_SEGMENT_BITS;

use crate::Error;

/// How the regions are sized from the expected count `k` and rate `P`.
///
/// A URL is similar when *every* feature matched, but most features of a new URL (its site,
/// its depth) match legitimately; usually one feature alone (the page, or the query) tells
/// it apart. What matters is therefore the rate at which **one** never-seen feature value is
/// taken for seen, and that is what [`RegionSizing::Blocked`] and [`RegionSizing::PerFeature`]
/// bound.
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
///     .region_sizing(RegionSizing::PerFeature)
///     .build()?;
/// assert_eq!((per_feature.region_bits(), per_feature.hashes()), (9_585_059, 7));
/// assert!(per_feature.expected_false_positive_rate() <= 0.0101);
///
/// // The default: one cache line per feature value, 4% more bits than a classic region.
/// let blocked = SimilarityFilter::builder()
///     .expected_items(1_000_000)
///     .false_positive_rate(0.01)
///     .preset(Preset::Document004)
///     .build()?;
/// assert_eq!(blocked.region_sizing(), RegionSizing::Blocked);
/// assert_eq!(blocked.block_bits(), Some(512));
/// assert!(blocked.region_bits() < per_feature.region_bits() * 105 / 100);
/// assert!(blocked.expected_false_positive_rate() <= 0.01);
/// # Ok::<(), url_dedup_similarity::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RegionSizing {
    /// Each region is a blocked Bloom filter for `k` values at rate `P`: a feature value's
    /// bits all fall in one 512-bit block (one cache line) of the region, picked by the first
    /// half of its hash, at the offsets the segmented filter uses
    /// ([`url_dedup_segmented::Layout`]). A URL costs one memory access per feature instead of
    /// one per bit. The price is bits at low rates: 4% more than
    /// [`PerFeature`](Self::PerFeature) at 1%, 8% at 0.1%, 35% at one in a million, 84% at one
    /// in a billion. A never-seen value is taken for seen with probability at most `P`,
    /// counting the uneven load of blocks.
    #[default]
    Blocked,
    /// Each region is a classic Bloom filter for `k` values at rate `P`
    /// ([`Sizing::classic`]), and a feature value sets that filter's optimal number of bits,
    /// derived from its hash by enhanced double hashing, anywhere in the region. A
    /// never-seen value is taken for seen with probability at most `P`. The fewest bits (`F`
    /// times those of one exact filter), one memory access per bit.
    PerFeature,
    /// Document 004 exactly: `M = -k ln P / (ln 2)^2` bits in total
    /// ([`sizing::optimal_bits`]), `N = ceil(M / F)` bits per region, one bit per feature
    /// value (`MD5 mod N`). `P` then bounds only the case where *all* `F` values are new;
    /// one new value among old ones is missed at the region's fill rate, `1 - e^(-k/N)`.
    Document004,
}

/// The size of every region and what a value sets in one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Regions {
    /// Bits per region, `N`.
    pub(crate) bits: u64,
    /// Bits per feature value.
    pub(crate) hashes: u32,
    /// The blocks of a [`RegionSizing::Blocked`] region.
    pub(crate) blocks: Option<Layout>,
}

impl Regions {
    /// The regions of a filter read back from its sizing, region size, bits per value and
    /// block size (0 unless blocked).
    pub(crate) fn restore(
        sizing: RegionSizing,
        bits: u64,
        hashes: u32,
        block_bits: u64,
    ) -> Result<Self, Error> {
        let blocks = match sizing {
            RegionSizing::Blocked => {
                if block_bits == 0 || bits == 0 || !bits.is_multiple_of(block_bits) {
                    return Err(Error::InvalidParameters(
                        "a blocked region is a whole number of blocks",
                    ));
                }
                Some(
                    Layout::new(bits / block_bits, block_bits, hashes)
                        .map_err(|_| Error::InvalidParameters("invalid block layout"))?,
                )
            }
            _ => None,
        };
        Ok(Self {
            bits,
            hashes,
            blocks,
        })
    }

    /// Bits per block, 0 unless blocked.
    pub(crate) fn block_bits(&self) -> u64 {
        self.blocks.map_or(0, |l| l.segment_bits())
    }
}

impl RegionSizing {
    /// The regions for `features` features, `items` values and rate `fpr`.
    pub(crate) fn size(self, items: u64, fpr: f64, features: u32) -> Result<Regions, Error> {
        Ok(match self {
            Self::Blocked => {
                sizing::optimal_bits(items, fpr)?;
                let layout = Layout::for_items(items, fpr, BLOCK_BITS)
                    .map_err(|_| Error::InvalidParameters("no block size reaches this rate"))?;
                Regions {
                    bits: layout.bits(),
                    hashes: layout.hashes(),
                    blocks: Some(layout),
                }
            }
            Self::PerFeature => {
                let s = Sizing::classic(items, fpr)?;
                Regions {
                    bits: s.bits,
                    hashes: s.hashes,
                    blocks: None,
                }
            }
            Self::Document004 => {
                let m = sizing::optimal_bits(items, fpr)?;
                Regions {
                    bits: m.div_ceil(u64::from(features)),
                    hashes: 1,
                    blocks: None,
                }
            }
        })
    }

    /// The regions for an explicit region size of about `bits` bits (a blocked region is
    /// rounded up to whole blocks).
    pub(crate) fn with_bits(self, bits: u64, items: u64) -> Result<Regions, Error> {
        match self {
            Self::Blocked => {
                let blocks = bits.div_ceil(BLOCK_BITS).max(1);
                let hashes = sizing::optimal_hashes(blocks * BLOCK_BITS, items);
                Regions::restore(self, blocks * BLOCK_BITS, hashes, BLOCK_BITS)
            }
            Self::PerFeature => Ok(Regions {
                bits,
                hashes: sizing::optimal_hashes(bits, items),
                blocks: None,
            }),
            Self::Document004 => Ok(Regions {
                bits,
                hashes: 1,
                blocks: None,
            }),
        }
    }

    /// The number snapshots record for this sizing with blocks of `block_bits` bits: 0 per
    /// feature, 1 document 004, 2 to 5 blocked with blocks of 512 to 4096 bits.
    pub(crate) fn id(self, block_bits: u64) -> u16 {
        match self {
            Self::PerFeature => 0,
            Self::Document004 => 1,
            Self::Blocked => 2 + (block_bits / 512).max(1).ilog2() as u16,
        }
    }

    /// The sizing and block size an [`id`](Self::id) stands for.
    pub(crate) fn from_id(id: u16) -> Option<(Self, u64)> {
        match id {
            0 => Some((Self::PerFeature, 0)),
            1 => Some((Self::Document004, 0)),
            2..=5 => Some((Self::Blocked, 512 << (id - 2))),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip() {
        for (sizing, block) in [
            (RegionSizing::PerFeature, 0),
            (RegionSizing::Document004, 0),
            (RegionSizing::Blocked, 512),
            (RegionSizing::Blocked, 1024),
            (RegionSizing::Blocked, 2048),
            (RegionSizing::Blocked, 4096),
        ] {
            assert_eq!(
                RegionSizing::from_id(sizing.id(block)),
                Some((sizing, block))
            );
        }
        assert_eq!(RegionSizing::from_id(6), None);
    }

    #[test]
    fn blocks_are_one_line_and_cost_bits_at_low_rates() {
        for (rate, most) in [(0.01, 1.05), (0.001, 1.09), (1e-6, 1.35), (1e-9, 2.0)] {
            let blocked = RegionSizing::Blocked.size(1_000_000, rate, 7).unwrap();
            assert_eq!(blocked.block_bits(), 512);
            let classic = RegionSizing::PerFeature.size(1_000_000, rate, 7).unwrap();
            let ratio = blocked.bits as f64 / classic.bits as f64;
            assert!((1.0..most).contains(&ratio), "{rate}: {ratio}");
        }
    }
}
