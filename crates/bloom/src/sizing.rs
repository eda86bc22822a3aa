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

/// How a growing filter adds capacity: the schedule of its layers (scalable Bloom filters,
/// Almeida, Baquero, Preguiça and Hutchison, 2007).
///
/// Layer `i` holds `first × factor^i` items at rate `target × (1 − tightening) ×
/// tightening^i`. A lookup asks every layer, so its false-positive rate is at most the sum of
/// the layers' rates, a geometric series below `target` however many layers were added: the
/// filter keeps its promise however wrong the first estimate was. The first layer pays for
/// the headroom with `log2(1 / (1 − tightening))` bits of rate, each later layer with
/// `log2(1 / tightening)` more.
///
/// # Examples
///
/// ```
/// use url_dedup_bloom::sizing::Growth;
///
/// let g = Growth::default();
/// let (first, rate) = g.layer(1_000, 0.001, 0);
/// assert_eq!(first, 1_000);
/// assert!((rate - 0.0007).abs() < 1e-12);
/// assert_eq!(g.layer(1_000, 0.001, 3).0, 8_000);
/// // Whatever the number of layers, the rates add up to less than the target.
/// let total: f64 = (0..40).map(|i| g.layer(1_000, 0.001, i).1).sum();
/// assert!(total < 0.001);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Growth {
    /// Each layer holds this many times the items of the one before (2 to 16; default 2).
    pub factor: u32,
    /// Each layer's rate is this fraction of the one before (strictly between 0 and 1;
    /// default 0.3).
    pub tightening: f64,
}

impl Default for Growth {
    fn default() -> Self {
        // The first layer is the whole filter when the estimate is right, so it gets most of
        // the rate: at 70% of it, a growing filter at its expected count has 9% more bits
        // than a blocked filter at the full rate at 1% and 7% at 0.1% (halving cost 17% and
        // 13%). Doubling keeps the newest layer at about half the memory; each later layer
        // costs 2.5 bits per item more than the one before (halving: 1.44), so ten times the
        // estimate costs 12-15% more bits per item than with halving.
        Self {
            factor: 2,
            tightening: 0.3,
        }
    }
}

impl Growth {
    /// Checks the factor and tightening ranges.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameters`] for a factor outside `2..=16` or a tightening outside
    /// `(0, 1)`.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::sizing::Growth;
    ///
    /// assert!(Growth::default().validate().is_ok());
    /// assert!(Growth { factor: 1, tightening: 0.5 }.validate().is_err());
    /// assert!(Growth { factor: 2, tightening: 1.0 }.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), Error> {
        if !(2..=16).contains(&self.factor) {
            return Err(Error::InvalidParameters(
                "growth factor must be between 2 and 16",
            ));
        }
        if !(self.tightening > 0.0 && self.tightening < 1.0) {
            return Err(Error::InvalidParameters(
                "tightening ratio must be strictly between 0 and 1",
            ));
        }
        Ok(())
    }

    /// Capacity and rate of layer `index` when the first layer holds `first` items and every
    /// lookup must stay below `target`. Capacities saturate at `u64::MAX`.
    ///
    /// # Examples
    ///
    /// See [`Growth`].
    pub fn layer(&self, first: u64, target: f64, index: u32) -> (u64, f64) {
        let capacity = u64::from(self.factor)
            .checked_pow(index)
            .and_then(|m| first.checked_mul(m))
            .unwrap_or(u64::MAX);
        let rate = target * (1.0 - self.tightening) * self.tightening.powi(index as i32);
        (capacity, rate)
    }
}

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
        Self::grow_until(items, fpr, block_bits, |bits_per_item| {
            best_blocked_hashes(block_bits, bits_per_item)
        })
    }

    /// Whether [`Sizing::blocked`] for these inputs is at most `max_bits` bits, from one
    /// rate instead of a search: the rate at the largest size of the search's steps that fits
    /// in `max_bits` (the best rate only falls as the size grows, so the search's answer fits
    /// exactly when that size meets the target). `false` where [`Sizing::blocked`] fails.
    ///
    /// For choosing among block sizes by what each costs in bits, as a growing filter picks
    /// its segment size, without sizing each one in full.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::sizing::Sizing;
    ///
    /// let bits = Sizing::blocked(1_000_000, 1e-9, 2048)?.bits;
    /// assert!(Sizing::blocked_fits(1_000_000, 1e-9, 2048, bits));
    /// assert!(!Sizing::blocked_fits(1_000_000, 1e-9, 2048, bits - 2048));
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn blocked_fits(items: u64, fpr: f64, block_bits: u64, max_bits: u64) -> bool {
        let Ok(sizes) = size_steps(items, fpr) else {
            return false;
        };
        if block_bits == 0 {
            return false;
        }
        let n = items as f64;
        sizes
            .iter()
            .rposition(|&b| whole_blocks(b, n, block_bits).is_some_and(|bits| bits <= max_bits))
            .is_some_and(|step| best_blocked_hashes(block_bits, sizes[step]).1 <= fpr)
    }

    /// Sizing for a *split-block* filter: each block of `block_bits` bits is cut into `hashes`
    /// equal lanes and an item sets one bit in every lane of its block (the layout of Parquet's
    /// and Impala's split-block filters). `hashes` is a power of two and lanes are at least
    /// [`MIN_LANE_BITS`] wide; among those, the count that needs the fewest bits is chosen.
    ///
    /// One bit per lane makes an item's bit pattern computable with a few vector instructions,
    /// at the price of a slightly higher rate than [`Sizing::blocked`] at the same size.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameters`] for the same inputs as [`Sizing::classic`], or when
    /// `block_bits` is not a power of two of at least [`MIN_LANE_BITS`] bits.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::sizing::{Sizing, split_false_positive_rate};
    ///
    /// let split = Sizing::split(1_000_000, 0.01, 512)?;
    /// assert_eq!(split.hashes, 8); // eight 64-bit lanes
    /// assert!(split.bits > Sizing::blocked(1_000_000, 0.01, 512)?.bits);
    /// let rate = split_false_positive_rate(512, split.bits as f64 / 1e6, split.hashes);
    /// assert!(rate <= 0.01);
    /// # Ok::<(), url_dedup_bloom::Error>(())
    /// ```
    pub fn split(items: u64, fpr: f64, block_bits: u64) -> Result<Self, Error> {
        if !block_bits.is_power_of_two() || block_bits < MIN_LANE_BITS {
            return Err(Error::InvalidParameters(
                "a split block is a power of two of at least 8 bits",
            ));
        }
        let max_hashes = MAX_HASHES.min((block_bits / MIN_LANE_BITS).min(1 << 31) as u32);
        Self::grow_until(items, fpr, block_bits, |bits_per_item| {
            std::iter::successors(Some(1u32), |k| k.checked_mul(2))
                .take_while(|&k| k <= max_hashes)
                .map(|k| (k, split_false_positive_rate(block_bits, bits_per_item, k)))
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .unwrap_or((1, 1.0))
        })
    }

    /// The classic size grown by the fewest 1% steps at which `best(bits per item)` (the best
    /// hash count and its rate) meets `fpr`, rounded up to whole blocks.
    ///
    /// The best rate falls as the size grows, so that step is found by doubling, then
    /// bisecting: about `2 log2(steps)` evaluations of the rate instead of one per step. Each
    /// evaluation sums a Poisson mixture, and a growing filter at one in a billion took 4 ms
    /// to build when every step was tried in turn.
    fn grow_until(
        items: u64,
        fpr: f64,
        block_bits: u64,
        best: impl Fn(f64) -> (u32, f64),
    ) -> Result<Self, Error> {
        const NO_SIZE: Error = Error::InvalidParameters(
            "no blocked filter of this block size reaches the requested false-positive rate",
        );
        let sizes = size_steps(items, fpr)?;
        let meets = |step: usize| {
            let (hashes, rate) = best(sizes[step]);
            (rate <= fpr).then_some(hashes)
        };
        // Steps 0, 2, 6, 14, ... until one meets the target, then halve the gap between it and
        // the last that missed. (Everyday rates meet it near step 4, blocked at 1%; starting
        // 0, 1, 3, 7 took one rate more than trying each step there.)
        let mut missed = None;
        let mut step = 0;
        let mut hashes = loop {
            match meets(step) {
                Some(hashes) => break hashes,
                None if step + 1 == sizes.len() => return Err(NO_SIZE),
                None => {
                    missed = Some(step);
                    step = (step * 2 + 2).min(sizes.len() - 1);
                }
            }
        };
        if let Some(mut missed) = missed {
            while step - missed > 1 {
                let mid = missed + (step - missed) / 2;
                match meets(mid) {
                    Some(h) => (step, hashes) = (mid, h),
                    None => missed = mid,
                }
            }
        }
        let bits = whole_blocks(sizes[step], items as f64, block_bits).ok_or(NO_SIZE)?;
        Ok(Self { bits, hashes })
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
    if block_bits <= EXACT_FILL_MAX_BLOCK_BITS {
        return small_block_false_positive_rate(block_bits, bits_per_item, hashes);
    }
    let b = block_bits as f64;
    let k = f64::from(hashes);
    // With `load` items in the block, each bit stays zero with probability (1 - 1/b)^(k*load).
    let per_load = k * (-1.0 / b).ln_1p();
    poisson_mixture(block_bits, bits_per_item, hashes, |load| {
        (1.0 - (load * per_load).exp()).powf(k)
    })
}

/// Blocks up to this size get the exact fill distribution instead of its mean.
///
/// `(1 - zero fraction)^k` is the rate at the *expected* fill; the rate is convex in the fill,
/// so a block whose fill varies much (a small one) has a higher mean rate. At 64 bits the
/// mean-fill formula promised 1.00% where `tests/fpr.rs` of the segmented filter measured 1.08%.
/// The gap shrinks as blocks grow; from 512 bits on it is below the noise of a 400,000-query
/// test, so larger blocks keep the formula every published figure here was computed with.
const EXACT_FILL_MAX_BLOCK_BITS: u64 = 256;

/// [`blocked_false_positive_rate`] for small blocks, exactly: [`exact_fill_closed_form`] for
/// up to 16 hashes, [`exact_fill_by_draws`] beyond (where the closed form's alternating sums
/// would lose their precision).
fn small_block_false_positive_rate(block_bits: u64, bits_per_item: f64, hashes: u32) -> f64 {
    if block_bits == 0 || bits_per_item <= 0.0 {
        return 1.0;
    }
    if hashes <= 16 {
        exact_fill_closed_form(block_bits, bits_per_item, hashes)
    } else {
        exact_fill_by_draws(block_bits, bits_per_item, hashes)
    }
}

/// The exact rate in closed form, O(k^2) per call (sizing calls it dozens of times, and a
/// sharded filter sizes thousands of shards).
///
/// A query's k positions cover `d` distinct bits with probability `S(k, d) (b)_d / b^k`
/// (Stirling numbers of the second kind). After `L` draws, `d` given bits are all set with
/// probability `sum_j (-1)^j C(d, j) (1 - j/b)^L` (inclusion–exclusion over the bits missed),
/// and with `L = k * load`, `load ~ Poisson(lambda)`, the mean of `x^L` is
/// `exp(-lambda (1 - x^k))`.
fn exact_fill_closed_form(block_bits: u64, bits_per_item: f64, hashes: u32) -> f64 {
    let b = block_bits as f64;
    let k = hashes as usize;
    let lambda = b / bits_per_item;
    // stirling[d] = S(k, d), built row by row.
    let mut stirling = vec![0.0f64; k + 1];
    stirling[0] = 1.0;
    for n in 1..=k {
        for d in (1..=n).rev() {
            stirling[d] = d as f64 * stirling[d] + stirling[d - 1];
        }
        stirling[0] = 0.0;
    }
    let mut total = 0.0;
    // (b)_d / b^d: the chance that d draws hit d distinct bits, given their pattern.
    let mut distinct = 1.0;
    for (d, &partitions) in stirling.iter().enumerate().skip(1) {
        distinct *= (b - (d - 1) as f64) / b;
        let p_distinct = partitions * distinct * b.powi(d as i32 - k as i32);
        let (mut inner, mut binomial) = (0.0, 1.0);
        for j in 0..=d {
            let x = 1.0 - j as f64 / b;
            let sign = if j % 2 == 0 { 1.0 } else { -1.0 };
            inner += sign * binomial * (-lambda * (1.0 - x.powi(hashes as i32))).exp();
            binomial = binomial * (d - j) as f64 / (j + 1) as f64;
        }
        total += p_distinct * inner;
    }
    total.clamp(0.0, 1.0)
}

/// The exact rate by brute force: the distribution of the number of set bits after
/// `k * load` uniform draws into `b` bits, advanced draw by draw, and the rate
/// `E[(set / b)^k]` taken over it, mixed over Poisson loads.
fn exact_fill_by_draws(block_bits: u64, bits_per_item: f64, hashes: u32) -> f64 {
    let b = block_bits as usize;
    let bf = block_bits as f64;
    let rate_at_fill: Vec<f64> = (0..=b)
        .map(|set| (set as f64 / bf).powi(hashes as i32))
        .collect();
    // fill[s]: probability that s bits are set; `poisson_mixture` asks for loads 0, 1, 2, ...
    // in order, so each call adds the draws of one more item.
    let mut fill = vec![0.0f64; b + 1];
    fill[0] = 1.0;
    poisson_mixture(block_bits, bits_per_item, hashes, |load| {
        if load > 0.0 {
            for _ in 0..hashes {
                // One more draw: from s set bits, a new bit with probability (b - s) / b.
                for set in (1..=b).rev() {
                    fill[set] =
                        fill[set] * set as f64 / bf + fill[set - 1] * (b - set + 1) as f64 / bf;
                }
                fill[0] = 0.0;
            }
        }
        fill.iter().zip(&rate_at_fill).map(|(p, r)| p * r).sum()
    })
}

/// The narrowest lane a split block has (see [`Sizing::split`]).
pub const MIN_LANE_BITS: u64 = 8;

/// Expected false-positive rate of a split-block filter (blocks of `block_bits` bits cut into
/// `hashes` lanes, one bit per lane per item; see [`Sizing::split`]) at `bits_per_item` bits
/// per item: the same Poisson mixture over block loads as [`blocked_false_positive_rate`], with
/// each lane a one-hash filter of `block_bits / hashes` bits.
///
/// # Examples
///
/// ```
/// use url_dedup_bloom::sizing::{blocked_false_positive_rate, split_false_positive_rate};
///
/// let blocked = blocked_false_positive_rate(512, 10.5, 7);
/// let split = split_false_positive_rate(512, 10.5, 8);
/// assert!(split > blocked && split < 0.01);
/// ```
pub fn split_false_positive_rate(block_bits: u64, bits_per_item: f64, hashes: u32) -> f64 {
    let k = f64::from(hashes.max(1));
    let lane = block_bits as f64 / k;
    if lane < 1.0 {
        return 1.0;
    }
    // With `load` items in the block, each lane bit stays zero with probability (1 - 1/lane)^load.
    let per_load = (-1.0 / lane).ln_1p();
    poisson_mixture(block_bits, bits_per_item, hashes, |load| {
        (1.0 - (load * per_load).exp()).powf(k)
    })
}

/// `sum over loads j of Poisson(j; block_bits / bits_per_item) * rate_at(j)`: the rate of a
/// filter whose blocks each receive a Poisson-distributed number of items. `rate_at` is called
/// for loads 0, 1, 2, ... in order, once each.
fn poisson_mixture(
    block_bits: u64,
    bits_per_item: f64,
    hashes: u32,
    mut rate_at: impl FnMut(f64) -> f64,
) -> f64 {
    if block_bits == 0 || bits_per_item <= 0.0 {
        return 1.0;
    }
    let lambda = block_bits as f64 / bits_per_item;
    // Very large blocks behave like a classic filter; the Poisson sum would need too many terms.
    if lambda > 10_000.0 {
        let k = f64::from(hashes);
        return (1.0 - (-k / bits_per_item).exp()).powf(k);
    }
    let mut total = 0.0;
    let mut log_pmf = -lambda; // ln P(load = 0)
    let limit = (lambda + 12.0 * lambda.sqrt() + 20.0) as u64;
    for load in 0..=limit {
        if load > 0 {
            log_pmf += lambda.ln() - (load as f64).ln();
        }
        total += log_pmf.exp() * rate_at(load as f64);
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

/// The sizes a blocked or split sizing tries, in bits per item: the classic size for `items`
/// at `fpr`, grown by 1% steps. 400 steps is a factor of ~53, far more than any sane block
/// size needs; giving up with an error beats searching forever on a block too small for the
/// target. Sizes are grown by repeated multiplication, as every published size was computed.
fn size_steps(items: u64, fpr: f64) -> Result<Vec<f64>, Error> {
    let classic = Sizing::classic(items, fpr)?;
    Ok(
        std::iter::successors(Some(classic.bits as f64 / items as f64), |b| Some(b * 1.01))
            .take(400)
            .collect(),
    )
}

/// `bits_per_item` for `n` items, rounded up to whole blocks of `block_bits` bits (at least
/// one); `None` past `u64`.
fn whole_blocks(bits_per_item: f64, n: f64, block_bits: u64) -> Option<u64> {
    let raw = (bits_per_item * n).ceil();
    let blocks = (raw / block_bits as f64).ceil().max(1.0);
    let bits = blocks * block_bits as f64;
    (bits.is_finite() && bits < u64::MAX as f64).then_some(bits as u64)
}

/// [`best_hashes`] for a blocked filter: up to [`MAX_HASHES`] bits, and no more than the
/// block has.
fn best_blocked_hashes(block_bits: u64, bits_per_item: f64) -> (u32, f64) {
    let max_hashes = MAX_HASHES.min(block_bits.min(u64::from(u32::MAX)) as u32);
    best_hashes(block_bits, bits_per_item, max_hashes)
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
            // Small blocks use the exact fill distribution, which costs more per rate: fewer
            // sizes and hash counts (the best k stays below 20 there).
            let (step, max_k) = if block_bits <= EXACT_FILL_MAX_BLOCK_BITS {
                (25, 24)
            } else {
                (5, MAX_HASHES)
            };
            for tenths in (30..=400).step_by(step) {
                let bits_per_item = f64::from(tenths) / 10.0;
                let exhaustive = (1..=max_k)
                    .map(|k| (k, blocked_false_positive_rate(block_bits, bits_per_item, k)))
                    .min_by(|a, b| a.1.total_cmp(&b.1))
                    .unwrap();
                let walked = best_hashes(block_bits, bits_per_item, max_k);
                assert_eq!(
                    walked, exhaustive,
                    "block {block_bits}, {bits_per_item} bits/item"
                );
            }
        }
    }

    /// The sizing as first specified: every 1% step in turn, the first that meets the target.
    fn grown_step_by_step(
        items: u64,
        fpr: f64,
        block_bits: u64,
        best: impl Fn(f64) -> (u32, f64),
    ) -> Option<Sizing> {
        let mut bits_per_item = Sizing::classic(items, fpr).ok()?.bits as f64 / items as f64;
        for _ in 0..400 {
            let (hashes, rate) = best(bits_per_item);
            if rate <= fpr {
                let blocks = ((bits_per_item * items as f64).ceil() / block_bits as f64)
                    .ceil()
                    .max(1.0);
                let bits = blocks * block_bits as f64;
                return (bits < u64::MAX as f64).then_some(Sizing {
                    bits: bits as u64,
                    hashes,
                });
            }
            bits_per_item *= 1.01;
        }
        None
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// One rate answers as the whole search does: a blocked filter fits in `max_bits`
        /// exactly when the searched size does, for limits around that size (a block less, the
        /// size itself, a block more) and far from it.
        #[test]
        fn one_rate_tells_whether_the_searched_size_fits(
            exponent in 1.0f64..12.0,
            block_bits in proptest::sample::select(vec![64u64, 512, 1024, 2048, 4096]),
            items in proptest::sample::select(vec![1u64, 1_000, 1_000_000, 1_000_000_000]),
            blocks_off in -3i64..=3,
            scale in proptest::sample::select(vec![0.5f64, 1.0, 1.25, 4.0]),
        ) {
            let fpr = 10f64.powf(-exponent);
            let searched = Sizing::blocked(items, fpr, block_bits).ok().map(|s| s.bits);
            let around = searched.unwrap_or(items.saturating_mul(block_bits)) as f64 * scale;
            let max_bits = (around as i64).saturating_add(blocks_off * block_bits as i64).max(0) as u64;
            proptest::prop_assert_eq!(
                Sizing::blocked_fits(items, fpr, block_bits, max_bits),
                searched.is_some_and(|bits| bits <= max_bits),
                "{} items at {} in {}-bit blocks, at most {} bits (searched: {:?})",
                items, fpr, block_bits, max_bits, searched
            );
        }
    }

    #[test]
    fn blocks_too_small_for_the_rate_never_fit() {
        // 16-bit blocks cannot reach 10^-6 at any size the search tries.
        assert!(Sizing::blocked(1_000, 1e-6, 16).is_err());
        assert!(!Sizing::blocked_fits(1_000, 1e-6, 16, u64::MAX));
        assert!(!Sizing::blocked_fits(1_000, 0.01, 0, u64::MAX));
    }

    #[test]
    fn searching_the_steps_finds_the_first_that_meets_the_target() {
        // Targets a block meets at the first step, after a few, after hundreds (64 bits at
        // 10^-6: 7.6 times the classic size split), or never (16 bits at 10^-6); small blocks
        // (the exact fill, dearer per rate) with fewer targets.
        for (block_bits, targets) in [
            (16u64, &[1e-6][..]),
            (64, &[0.5, 0.01, 1e-6][..]),
            (512, &[0.5, 0.01, 1e-6, 1e-9][..]),
            (2048, &[0.01, 1e-9, 1e-12][..]),
        ] {
            for &fpr in targets {
                let counts: &[u64] = if block_bits < 512 {
                    &[1_000]
                } else {
                    &[1, 1_000_000_000]
                };
                for &items in counts {
                    let blocked = grown_step_by_step(items, fpr, block_bits, |b| {
                        best_hashes(block_bits, b, MAX_HASHES.min(block_bits as u32))
                    });
                    assert_eq!(
                        Sizing::blocked(items, fpr, block_bits).ok(),
                        blocked,
                        "blocked: {block_bits} bits, {fpr}, {items} items"
                    );
                    let max_split = MAX_HASHES.min((block_bits / MIN_LANE_BITS) as u32);
                    let split = grown_step_by_step(items, fpr, block_bits, |b| {
                        std::iter::successors(Some(1u32), |k| k.checked_mul(2))
                            .take_while(|&k| k <= max_split)
                            .map(|k| (k, split_false_positive_rate(block_bits, b, k)))
                            .min_by(|a, b| a.1.total_cmp(&b.1))
                            .unwrap_or((1, 1.0))
                    });
                    assert_eq!(
                        Sizing::split(items, fpr, block_bits).ok(),
                        split,
                        "split: {block_bits} bits, {fpr}, {items} items"
                    );
                }
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
    fn split_meets_target_with_few_extra_bits() {
        for &(p, block, ref per_item) in &[
            (0.01, 512u64, 10.0..10.8),
            (0.001, 512, 15.5..17.5),
            (0.01, 1 << 20, 9.5..10.6), // ten blocks: rounding up adds a few %
        ] {
            let s = Sizing::split(1_000_000, p, block).unwrap();
            assert!(s.hashes.is_power_of_two());
            assert!(split_false_positive_rate(block, s.bits as f64 / 1e6, s.hashes) <= p);
            let per = s.bits as f64 / 1e6;
            assert!(
                per_item.contains(&per),
                "p {p}, block {block}: {per} bits/item"
            );
        }
        assert!(Sizing::split(1_000, 0.01, 500).is_err());
        assert!(Sizing::split(1_000, 0.01, 4).is_err());
    }

    /// The measured false-positive rate of a simulated blocked filter: `blocks` blocks of
    /// `W` words at `per_item` bits per item, where `pattern` gives an item's mask per word
    /// from a random 64-bit value; 400,000 random queries.
    fn simulated_rate<const W: usize>(
        blocks: usize,
        per_item: f64,
        pattern: impl Fn(u64) -> [u64; W],
    ) -> f64 {
        let items = (blocks as f64 * 64.0 * W as f64 / per_item) as usize;
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut bits = vec![[0u64; W]; blocks];
        for _ in 0..items {
            let (b, masks) = (next() as usize % blocks, pattern(next()));
            for (word, mask) in bits[b].iter_mut().zip(masks) {
                *word |= mask;
            }
        }
        let trials = 400_000;
        let hits = (0..trials)
            .filter(|_| {
                let (b, masks) = (next() as usize % blocks, pattern(next()));
                bits[b]
                    .iter()
                    .zip(masks)
                    .all(|(word, mask)| word & mask == mask)
            })
            .count();
        hits as f64 / f64::from(trials)
    }

    #[test]
    fn split_rate_matches_a_simulation() {
        // 2,000 blocks of 512 bits, one bit in each of 8 lanes, 10 bits per item.
        let measured = simulated_rate(2_000, 10.0, |h| {
            std::array::from_fn::<u64, 8, _>(|lane| 1 << ((h >> (6 * lane)) & 63))
        });
        let model = split_false_positive_rate(512, 10.0, 8);
        // ~3,400 expected hits: 5 standard deviations is about 9%.
        assert!(
            (measured - model).abs() / model < 0.09,
            "{measured} vs {model}"
        );
    }

    #[test]
    fn blocked_rejects_impossible_targets() {
        assert!(Sizing::blocked(1_000, 1e-12, 8).is_err());
        assert!(Sizing::blocked(1_000, 0.01, 0).is_err());
    }

    #[test]
    fn closed_form_equals_the_draw_by_draw_distribution() {
        for b in [64u64, 128, 256] {
            for per_item in [4.0, 10.0, 15.0, 30.0] {
                for k in 1..=16 {
                    let closed = exact_fill_closed_form(b, per_item, k);
                    let draws = exact_fill_by_draws(b, per_item, k);
                    assert!(
                        (closed - draws).abs() <= 1e-9 + 1e-6 * draws,
                        "b {b}, {per_item} bits/item, k {k}: {closed} vs {draws}"
                    );
                }
            }
        }
    }

    #[test]
    fn small_blocks_use_the_exact_fill_distribution() {
        // 4,000 blocks of 64 bits at 10 bits per item with 6 hashes.
        let (k, per_item) = (6u32, 10.0f64);
        let measured = simulated_rate(4_000, per_item, |h| {
            [(0..k).fold(0u64, |m, i| m | 1 << ((h >> (6 * i)) & 63))]
        });
        let exact = blocked_false_positive_rate(64, per_item, k);
        assert!(
            (measured - exact).abs() / exact < 0.06,
            "{measured} vs {exact}"
        );
        // The mean-fill formula is what underestimated it.
        let mean_fill = poisson_mixture(64, per_item, k, |load| {
            (1.0 - (load * f64::from(k) * (-1.0f64 / 64.0).ln_1p()).exp()).powf(f64::from(k))
        });
        assert!(exact > mean_fill * 1.03, "{exact} vs {mean_fill}");
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
