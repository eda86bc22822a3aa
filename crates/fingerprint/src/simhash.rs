//! Charikar's SimHash: a 64-bit fingerprint of a set of features in which similar sets differ
//! in few bits.
//!
//! Each feature is hashed to 64 bits. For each bit position, the features whose hash has a 1
//! there vote for 1 and the others for 0, each with its weight; the fingerprint's bit is the
//! majority. Changing a few features of a large set moves few majorities, so near-duplicate
//! pages get fingerprints a few bits apart, while unrelated pages differ in about 32 bits.

use std::fmt;
use std::str::FromStr;

/// A 64-bit SimHash.
///
/// # Examples
///
/// ```
/// use url_dedup_fingerprint::SimHash;
///
/// let a = SimHash::from_features([1u64, 2, 3, 4, 5].map(url_dedup_fingerprint::feature_hash));
/// let b = SimHash::from_features([1u64, 2, 3, 4, 6].map(url_dedup_fingerprint::feature_hash));
/// assert!(a.distance(b) < 32);
/// assert_eq!(a.to_string().parse::<SimHash>()?, a);
/// # Ok::<(), url_dedup_fingerprint::ParseError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SimHash(pub u64);

impl SimHash {
    /// The number of bits in which two fingerprints differ (their Hamming distance).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_fingerprint::SimHash;
    /// assert_eq!(SimHash(0b1011).distance(SimHash(0b0001)), 2);
    /// ```
    #[inline]
    pub fn distance(self, other: SimHash) -> u32 {
        (self.0 ^ other.0).count_ones()
    }

    /// The SimHash of features already hashed to 64 bits, each of weight 1 (a feature that
    /// occurs twice counts twice). No features give `SimHash(0)`.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_fingerprint::SimHash;
    /// assert_eq!(SimHash::from_features([0b110u64, 0b011, 0b010]), SimHash(0b010));
    /// assert_eq!(SimHash::from_features([]), SimHash(0));
    /// ```
    pub fn from_features(hashes: impl IntoIterator<Item = u64>) -> Self {
        let mut votes = Votes::default();
        for h in hashes {
            votes.add(h);
        }
        votes.finish()
    }

    /// The SimHash of weighted features: `(hash, weight)` pairs.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_fingerprint::SimHash;
    /// // One heavy feature outvotes two light ones.
    /// assert_eq!(SimHash::from_weighted([(0b1, 5), (0b10, 1), (0b10, 1)]), SimHash(0b1));
    /// ```
    pub fn from_weighted(features: impl IntoIterator<Item = (u64, u32)>) -> Self {
        let mut ones = [0u64; 64];
        let mut total = 0u64;
        for (h, w) in features {
            let w = u64::from(w);
            total += w;
            for (bit, one) in ones.iter_mut().enumerate() {
                *one += (h >> bit & 1) * w;
            }
        }
        let mut out = 0u64;
        for (bit, &one) in ones.iter().enumerate() {
            if one * 2 > total {
                out |= 1 << bit;
            }
        }
        SimHash(out)
    }
}

/// The votes of equally weighted features, bit by bit.
#[derive(Clone)]
pub(crate) struct Votes {
    ones: [u32; 64],
    total: u32,
}

impl Default for Votes {
    fn default() -> Self {
        Self {
            ones: [0; 64],
            total: 0,
        }
    }
}

impl Votes {
    #[inline]
    pub(crate) fn add(&mut self, h: u64) {
        // Plain shifts and adds: the compiler turns the 64 lanes into vector adds.
        for (bit, one) in self.ones.iter_mut().enumerate() {
            *one += (h >> bit & 1) as u32;
        }
        self.total += 1;
    }

    pub(crate) fn finish(&self) -> SimHash {
        let mut out = 0u64;
        for (bit, &one) in self.ones.iter().enumerate() {
            // A strict majority of ones; a tie is 0.
            if u64::from(one) * 2 > u64::from(self.total) {
                out |= 1 << bit;
            }
        }
        SimHash(out)
    }
}

/// A good 64-bit hash of a 64-bit value (the splitmix64 finalizer), for callers that build
/// their own features.
///
/// # Examples
///
/// ```
/// let (a, b) = (url_dedup_fingerprint::feature_hash(1), url_dedup_fingerprint::feature_hash(2));
/// assert!((a ^ b).count_ones() > 10);
/// ```
#[inline]
pub fn feature_hash(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl fmt::Display for SimHash {
    /// Sixteen lower-case hex digits.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

/// A fingerprint that could not be read from text.
///
/// # Examples
///
/// ```
/// assert!("xyz".parse::<url_dedup_fingerprint::SimHash>().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("not a fingerprint: expected {expected} hex digits, got {found:?}")]
pub struct ParseError {
    expected: usize,
    found: String,
}

pub(crate) fn parse_hex<const DIGITS: usize>(text: &str) -> Result<u128, ParseError> {
    let err = || ParseError {
        expected: DIGITS,
        found: text.chars().take(40).collect(),
    };
    if text.len() != DIGITS || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(err());
    }
    u128::from_str_radix(text, 16).map_err(|_| err())
}

impl FromStr for SimHash {
    type Err = ParseError;

    /// Sixteen hex digits, as [`Display`](fmt::Display) writes them.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_hex::<16>(s).map(|v| SimHash(v as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn votes_match_weighted() {
        let hs: Vec<u64> = (0..101).map(feature_hash).collect();
        assert_eq!(
            SimHash::from_features(hs.iter().copied()),
            SimHash::from_weighted(hs.iter().map(|&h| (h, 1)))
        );
    }

    #[test]
    fn few_changed_features_move_few_bits() {
        let base: Vec<u64> = (0..400).map(feature_hash).collect();
        let mut edited = base.clone();
        for f in edited.iter_mut().take(4) {
            *f = feature_hash(*f);
        }
        let a = SimHash::from_features(base);
        let b = SimHash::from_features(edited);
        let c = SimHash::from_features((1000..1400).map(feature_hash));
        assert!(a.distance(b) <= 6, "{}", a.distance(b));
        assert!(a.distance(c) >= 16, "{}", a.distance(c));
    }

    #[test]
    fn text_form_round_trips() {
        for v in [0, 1, u64::MAX, 0x0123_4567_89ab_cdef] {
            assert_eq!(SimHash(v).to_string().parse::<SimHash>(), Ok(SimHash(v)));
        }
        assert!("0123".parse::<SimHash>().is_err());
        assert!("+123456789abcdef".parse::<SimHash>().is_err());
    }
}
