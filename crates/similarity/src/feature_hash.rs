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

    /// The hash of one feature value.
    #[inline]
    pub(crate) fn hash(&self, value: &[u8]) -> Hashed {
        match self {
            Self::Md5(keyed) => {
                let digest: [u8; 16] = keyed.clone().chain_update(value).finalize().into();
                let v = u128::from_be_bytes(digest);
                Hashed {
                    halves: Digest {
                        h1: (v >> 64) as u64,
                        h2: v as u64,
                    },
                    md5: true,
                }
            }
            Self::SipHash13(sip) => Hashed {
                halves: sip.hash(value),
                md5: false,
            },
        }
    }
}

/// A feature value's hash: two halves for multi-bit regions; for MD5 the halves are the
/// whole 128-bit value (high half first) that document 004 reduces mod N for a one-bit
/// region. Kept to 24 bytes: a batch of URLs hashed on other threads carries one per feature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Hashed {
    pub(crate) halves: Digest,
    md5: bool,
}

impl Hashed {
    /// The bit of a one-bit region of `n` bits: document 004's `MD5 mod N`, or a multiply-shift
    /// of the first half for SipHash. Only one-bit regions pay for the 128-bit division.
    #[inline]
    pub(crate) fn bit(&self, n: u64) -> u64 {
        if self.md5 {
            let v = u128::from(self.halves.h1) << 64 | u128::from(self.halves.h2);
            (v % u128::from(n)) as u64
        } else {
            url_dedup_bloom::hash::reduce(self.halves.h1, n)
        }
    }
}
