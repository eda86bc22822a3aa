//! Sizing formulas shared by every filter in the workspace.
//!
//! A user knows two things about the URLs they will see: roughly how many (`n`) and how many
//! false positives they can afford (`p`). Everything else follows from the classic analysis of
//! Bloom filters:
//!
//! * bits `m = ceil(-n ln p / (ln 2)^2)`,
//! * hash functions `k = round(m / n * ln 2)`, at least 1,
//! * false-positive rate after `n` insertions `(1 - e^(-k n / m))^k`.
//!
//! Blocked layouts (all K bits of an item in one block of `B` bits, as in the segmented filter)
//! pay for locality with a higher false-positive rate at the same size, because blocks receive
//! unequal numbers of items. [`blocked_false_positive_rate`] computes that rate exactly (a Poisson
//! mixture over the block load) and [`Sizing::blocked`] searches for the smallest size that
//! still meets the target.
//!
//! The same functions size the similarity filter's feature regions and the shards of the
//! partitioned filter, so all crates agree on what "n items at rate p" means.

use std::f64::consts::LN_2;

use crate::Error;

/// The largest number of hash functions a filter accepts.
///
/// `k` grows with `log2(1/p)`; 64 covers rates far below 10^-18, and the bound lets hot paths
/// keep all indexes of an item in a fixed-size array on the stack.
pub const MAX_HASHES: u32 = 64;

/// The size of a filter: how many bits it has and how many of them each item sets.
///
/// # Examples
///
/// ```
/// use url_dedup_bloom::sizing::Sizing;
///
/// let s = Sizing::classic(1_000_000, 0.01)?;
/// assert_eq!(s.bits, 9_585_059);
/// assert_eq!(s.hashes, 7);
/// assert!((s.false_positive_rate(1_000_000) - 0.01).abs() < 0.0005);
/// # Ok::<(), url_dedup_bloom::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Sizing {
    /// Number of bits `m` in the filter.
    pub bits: u64,
    /// Number of bits `k` each item sets.
    pub hashes: u32,
}

impl Sizing {
    /// The classic sizing for `items` expected items at false-positive rate `fpr`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameters`] when `items` is zero, `fpr` is not strictly between 0 and 1,
    /// or the result would need more than `u64::MAX` bits.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::sizing::Sizing;
    ///
    /// let s = Sizing::classic(10_000_000, 0.001)?;
    /// assert_eq!(s.hashes, 10);
    /// assert!(Sizing::classic(0, 0.01).is_err());
    /// assert!(Sizing::classic(10, 1.5).is_err());
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn classic(items: u64, fpr: f64) -> Result<Self, Error> {
        let bits = optimal_bits(items, fpr)?;
        Ok(Self {
            bits,
            hashes: optimal_hashes(bits, items),
        })
    }

    /// Sizing for a blocked filter whose items each set `hashes` bits inside one block of
    /// `block_bits` bits, so that the rate at `items` items does not exceed `fpr`.
    ///
    /// Starts from the classic size and grows it by 1% steps (trying every `k` near the optimum
    /// at each step) until [`blocked_false_positive_rate`] meets the target. The result is
    /// rounded up to a whole number of blocks.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameters`] for the same inputs as [`Sizing::classic`], or when
    /// `block_bits` is zero.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::sizing::{Sizing, blocked_false_positive_rate};
    ///
    /// let classic = Sizing::classic(1_000_000, 0.01)?;
    /// let blocked = Sizing::blocked(1_000_000, 0.01, 512)?;
    /// assert!(blocked.bits > classic.bits);
    /// assert_eq!(blocked.bits % 512, 0);
    /// let rate = blocked_false_positive_rate(512, blocked.bits as f64 / 1e6, blocked.hashes);
    /// assert!(rate <= 0.01);
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn blocked(items: u64, fpr: f64, block_bits: u64) -> Result<Self, Error> {
        if block_bits == 0 {
            return Err(Error::InvalidParameters(
                "block size must be at least one bit",
            ));
        }
        let classic = Self::classic(items, fpr)?;
        let n = items as f64;
        let mut bits_per_item = classic.bits as f64 / n;
        // 400 steps of 1% is a factor of ~53: far more than any sane block size needs. Giving up
        // with an error beats looping forever on a block too small for the target.
        let max_hashes = MAX_HASHES.min(block_bits.min(u64::from(u32::MAX)) as u32);
        for _ in 0..400 {
            let (hashes, rate) = best_hashes(block_bits, bits_per_item, max_hashes);
            if rate <= fpr {
                let raw = (bits_per_item * n).ceil();
                let blocks = (raw / block_bits as f64).ceil().max(1.0);
                let bits = blocks * block_bits as f64;
                if !bits.is_finite() || bits >= u64::MAX as f64 {
                    break;
                }
                return Ok(Self {
                    bits: bits as u64,
                    hashes,
                });
            }
            bits_per_item *= 1.01;
        }
        Err(Error::InvalidParameters(
            "no blocked filter of this block size reaches the requested false-positive rate",
        ))
    }

    /// The expected false-positive rate of a classic filter of this size after `items` distinct
    /// insertions.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::sizing::Sizing;
    ///
    /// let s = Sizing { bits: 1 << 20, hashes: 7 };
    /// assert!(s.false_positive_rate(0) == 0.0);
    /// assert!(s.false_positive_rate(100_000) < s.false_positive_rate(200_000));
    /// ```
    pub fn false_positive_rate(&self, items: u64) -> f64 {
        false_positive_rate(self.bits, self.hashes, items)
    }

    /// How many items this size holds at false-positive rate `fpr` (the inverse of the classic
    /// sizing, at this `k`).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::sizing::Sizing;
    ///
    /// let s = Sizing::classic(50_000, 0.01)?;
    /// let n = s.capacity(0.01);
    /// assert!((49_000..=51_000).contains(&n));
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn capacity(&self, fpr: f64) -> u64 {
        let per_item = bits_per_item(self.hashes, fpr);
        if !per_item.is_finite() || per_item <= 0.0 {
            return 0;
        }
        (self.bits as f64 / per_item).floor() as u64
    }
}

/// Bits per item a classic filter needs to reach rate `fpr` with exactly `hashes` hash
/// functions: `-k / ln(1 - p^(1/k))`, the classic rate solved for `m / n`. Equals the optimum
/// `-ln p / (ln 2)^2` at the optimal `k`; stores that pay per hash (Redis) use it to price a
/// smaller `k`. Infinite when `fpr` is not in `(0, 1)`.
///
/// # Examples
///
/// ```
/// use url_dedup_bloom::sizing::bits_per_item;
///
/// assert!((bits_per_item(7, 0.01) - 9.59).abs() < 0.02);
/// assert!(bits_per_item(4, 0.01) > bits_per_item(7, 0.01));
/// assert!(bits_per_item(4, 1.5).is_infinite());
/// ```
pub fn bits_per_item(hashes: u32, fpr: f64) -> f64 {
    if !(fpr > 0.0 && fpr < 1.0) {
        return f64::INFINITY;
    }
    let k = f64::from(hashes.max(1));
    let inner = 1.0 - fpr.powf(1.0 / k);
    if inner <= 0.0 {
        return f64::INFINITY;
    }
    -k / inner.ln()
}

/// Bits `m = ceil(-n ln p / (ln 2)^2)` for `items` items at rate `fpr`.
///
/// # Errors
///
/// [`Error::InvalidParameters`] when `items` is zero, `fpr` is not in `(0, 1)`, or the answer
/// does not fit in a `u64`.
///
/// # Examples
///
/// ```
/// use url_dedup_bloom::sizing::optimal_bits;
///
/// assert_eq!(optimal_bits(1_000, 0.01)?, 9_586);
/// # Ok::<(), url_dedup_bloom::Error>(())
/// ```
pub fn optimal_bits(items: u64, fpr: f64) -> Result<u64, Error> {
    if items == 0 {
        return Err(Error::InvalidParameters(
            "expected items must be at least 1",
        ));
    }
    if !(fpr > 0.0 && fpr < 1.0) {
        return Err(Error::InvalidParameters(
            "false-positive rate must be strictly between 0 and 1",
        ));
    }
    let bits = (-(items as f64) * fpr.ln() / (LN_2 * LN_2)).ceil();
    if !bits.is_finite() || bits >= u64::MAX as f64 {
        return Err(Error::InvalidParameters("filter would exceed 2^64 bits"));
    }
    Ok((bits as u64).max(1))
}

/// Hash functions `k = round(m / n * ln 2)`, clamped to `1..=MAX_HASHES`.
///
/// # Examples
///
/// ```
/// use url_dedup_bloom::sizing::optimal_hashes;
///
/// assert_eq!(optimal_hashes(9_586, 1_000), 7);
/// assert_eq!(optimal_hashes(10, 1_000_000), 1);
/// ```
pub fn optimal_hashes(bits: u64, items: u64) -> u32 {
    let k = (bits as f64 / items.max(1) as f64 * LN_2).round();
    (k as u32).clamp(1, MAX_HASHES)
}

/// Expected false-positive rate `(1 - e^(-k n / m))^k` of a classic filter.
///
/// # Examples
///
/// ```
/// use url_dedup_bloom::sizing::false_positive_rate;
///
/// let p = false_positive_rate(9_586, 7, 1_000);
/// assert!((p - 0.01).abs() < 0.0005);
/// ```
pub fn false_positive_rate(bits: u64, hashes: u32, items: u64) -> f64 {
    if bits == 0 {
        return 1.0;
    }
    let k = f64::from(hashes);
    (1.0 - (-k * items as f64 / bits as f64).exp()).powf(k)
}

/// False-positive rate of a blocked filter: blocks of `block_bits` bits, `bits_per_item` bits
/// of total size per item, and `hashes` bits set per item inside its block.
///
/// The number of items in one block is Poisson with mean `block_bits / bits_per_item`; the rate
/// is the classic rate of one block averaged over that load. Terms are summed until the
/// Poisson tail is negligible.
///
/// # Examples
///
/// ```
/// use url_dedup_bloom::sizing::{blocked_false_positive_rate, false_positive_rate};
///
/// let classic = false_positive_rate(9_586, 7, 1_000);
/// let blocked = blocked_false_positive_rate(512, 9.586, 7);
/// assert!(blocked > classic);
/// ```
pub fn blocked_false_positive_rate(block_bits: u64, bits_per_item: f64, hashes: u32) -> f64 {
    if block_bits == 0 || bits_per_item <= 0.0 {
        return 1.0;
    }
    let b = block_bits as f64;
    let k = f64::from(hashes);
    let lambda = b / bits_per_item;
    // Very large blocks behave like a classic filter; the Poisson sum would need too many terms.
    if lambda > 10_000.0 {
        return (1.0 - (-k / bits_per_item).exp()).powf(k);
    }
    let mut total = 0.0;
    let mut log_pmf = -lambda; // ln P(load = 0)
    let limit = (lambda + 12.0 * lambda.sqrt() + 20.0) as u64;
    for load in 0..=limit {
        if load > 0 {
            log_pmf += lambda.ln() - (load as f64).ln();
        }
        // With `load` items in the block, each bit stays zero with probability (1 - 1/b)^(k*load).
        let zero = (load as f64 * k * (-1.0 / b).ln_1p()).exp();
        total += log_pmf.exp() * (1.0 - zero).powf(k);
    }
    total.min(1.0)
}

/// Swamidass–Baldi estimate of how many distinct items a filter holds, from its size and the
/// number of bits set: `-(m / k) ln(1 - X / m)`.
///
/// Returns `f64::INFINITY` for a completely full filter, where no estimate is possible.
///
/// # Examples
///
/// ```
/// use url_dedup_bloom::sizing::estimate_items;
///
/// assert_eq!(estimate_items(1_000, 7, 0), 0.0);
/// assert!(estimate_items(1_000, 7, 1_000).is_infinite());
/// ```
pub fn estimate_items(bits: u64, hashes: u32, ones: u64) -> f64 {
    if ones >= bits {
        return f64::INFINITY;
    }
    let m = bits as f64;
    -(m / f64::from(hashes.max(1))) * (1.0 - ones as f64 / m).ln()
}

/// The `k` with the lowest blocked false-positive rate at `bits_per_item`, and that rate.
///
/// The rate is unimodal in `k` (too few bits per item, then too full a block), so the search
/// walks from the classic optimum `k = bits_per_item * ln 2` towards lower rates and stops at
/// the first rise: a handful of evaluations of the Poisson mixture instead of all 64 values.
fn best_hashes(block_bits: u64, bits_per_item: f64, max_hashes: u32) -> (u32, f64) {
    let rate = |k| blocked_false_positive_rate(block_bits, bits_per_item, k);
    let start = (bits_per_item * std::f64::consts::LN_2).round();
    let mut k = (start.max(1.0) as u32).clamp(1, max_hashes.max(1));
    let mut best = rate(k);
    for step in [-1i64, 1] {
        loop {
            let next = i64::from(k) + step;
            if next < 1 || next > i64::from(max_hashes) {
                break;
            }
            let r = rate(next as u32);
            if r >= best {
                break;
            }
            (k, best) = (next as u32, r);
        }
    }
    (k, best)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walking_from_the_classic_k_finds_the_exhaustive_best() {
        for block_bits in [64u64, 128, 512, 4096, 1 << 16] {
            for tenths in (30..=400).step_by(5) {
                let bits_per_item = f64::from(tenths) / 10.0;
                let exhaustive = (1..=MAX_HASHES)
                    .map(|k| (k, blocked_false_positive_rate(block_bits, bits_per_item, k)))
                    .min_by(|a, b| a.1.total_cmp(&b.1))
                    .unwrap();
                let walked = best_hashes(block_bits, bits_per_item, MAX_HASHES);
                assert_eq!(
                    walked, exhaustive,
                    "block {block_bits}, {bits_per_item} bits/item"
                );
            }
        }
    }

    #[test]
    fn classic_matches_textbook_values() {
        // 1% needs 9.585 bits per item and 7 hashes; 0.1% needs 14.38 and 10.
        let s = Sizing::classic(10_000_000, 0.01).unwrap();
        assert_eq!(s.hashes, 7);
        assert!((s.bits as f64 / 1e7 - 9.585).abs() < 0.001);
        let s = Sizing::classic(10_000_000, 0.001).unwrap();
        assert_eq!(s.hashes, 10);
        assert!((s.bits as f64 / 1e7 - 14.378).abs() < 0.001);
    }

    #[test]
    fn blocked_needs_more_bits_and_meets_target() {
        for &(p, block) in &[(0.01, 512u64), (0.001, 512), (0.01, 1 << 20)] {
            let c = Sizing::classic(1_000_000, p).unwrap();
            let b = Sizing::blocked(1_000_000, p, block).unwrap();
            assert!(b.bits >= c.bits);
            assert!(blocked_false_positive_rate(block, b.bits as f64 / 1e6, b.hashes) <= p);
        }
        // Published figure: a 512-bit block needs about 9.9 bits per item at 1%.
        let b = Sizing::blocked(1_000_000, 0.01, 512).unwrap();
        let per = b.bits as f64 / 1e6;
        assert!((9.7..10.3).contains(&per), "{per}");
    }

    #[test]
    fn blocked_rejects_impossible_targets() {
        assert!(Sizing::blocked(1_000, 1e-12, 8).is_err());
        assert!(Sizing::blocked(1_000, 0.01, 0).is_err());
    }

    #[test]
    fn huge_blocks_approach_classic_rate() {
        let classic = false_positive_rate(9_585_059, 7, 1_000_000);
        let blocked = blocked_false_positive_rate(1 << 24, 9.585059, 7);
        assert!((blocked - classic).abs() / classic < 0.01);
    }

    #[test]
    fn estimate_inverts_expected_fill() {
        let (m, k, n) = (1_000_000u64, 7u32, 50_000u64);
        let expected_ones = m as f64 * (1.0 - (-(k as f64) * n as f64 / m as f64).exp());
        let est = estimate_items(m, k, expected_ones as u64);
        assert!((est - n as f64).abs() < 5.0);
    }
}
