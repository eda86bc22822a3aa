//! Which hash turns a feature value into bit positions.

use md5::{Digest as _, Md5};
use url_dedup_bloom::hash::{ItemHasher, SipHash13};
use url_dedup_bloom::{Digest, HashKey};

/// The hash applied to each feature value.
///
/// # Examples
///
/// ```
/// use url_dedup_similarity::{FeatureHash, SimilarityFilter};
///
/// let mut fast = SimilarityFilter::builder().feature_hash(FeatureHash::SipHash13).build()?;
/// assert!(fast.check_and_insert("https://a.example/x").is_new());
/// assert!(fast.check_and_insert("https://a.example/x").is_similar());
/// assert_eq!(fast.feature_hash(), FeatureHash::SipHash13);
/// # Ok::<(), url_dedup_similarity::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FeatureHash {
    /// MD5, as document 004 specifies, with the filter's key absorbed first
    /// (`MD5(key ‖ value)`) unless the filter is unkeyed. One-bit regions take the 128-bit
    /// digest, big-endian, mod `N`.
    #[default]
    Md5,
    /// The workspace's keyed SipHash-1-3 ([`url_dedup_bloom::SipHash13`], the filter's key, or
    /// the all-zero key when unkeyed): several times faster than MD5 on short values, and a
    /// keyed PRF by design. One-bit regions use multiply-shift reduction.
    SipHash13,
}

impl FeatureHash {
    pub(crate) fn id(self) -> u16 {
        match self {
            Self::Md5 => 0,
            Self::SipHash13 => 1,
        }
    }

    pub(crate) fn from_id(id: u16) -> Option<Self> {
        match id {
            0 => Some(Self::Md5),
            1 => Some(Self::SipHash13),
            _ => None,
        }
    }
}

/// A [`FeatureHash`] with its key applied, ready to hash values.
#[derive(Clone)]
pub(crate) enum ValueHasher {
    /// MD5 state after absorbing the key: cloned per value.
    Md5(Md5),
    SipHash13(SipHash13),
}

impl ValueHasher {
    pub(crate) fn new(hash: FeatureHash, key: Option<HashKey>) -> Self {
        match hash {
            FeatureHash::Md5 => {
                let mut state = Md5::new();
                if let Some(key) = key {
                    state.update(key.to_bytes());
                }
                Self::Md5(state)
            }
            FeatureHash::SipHash13 => {
                Self::SipHash13(SipHash13::new(key.unwrap_or(HashKey::from_bytes([0; 16]))))
            }
        }
    }

    /// The bit of a one-bit region of `n` bits, and the two halves for multi-bit regions.
    #[inline]
    pub(crate) fn hash(&self, value: &[u8], n: u64) -> (u64, Digest) {
        match self {
            Self::Md5(keyed) => {
                let digest: [u8; 16] = keyed.clone().chain_update(value).finalize().into();
                let v = u128::from_be_bytes(digest);
                // Document 004: the 128-bit MD5 value mod N selects the bit.
                let bit = (v % u128::from(n)) as u64;
                let halves = Digest {
                    h1: (v >> 64) as u64,
                    h2: v as u64,
                };
                (bit, halves)
            }
            Self::SipHash13(sip) => {
                let d = sip.hash(value);
                (url_dedup_bloom::hash::reduce(d.h1, n), d)
            }
        }
    }
}
