//! The exact filter behind a [`UrlDedup`](crate::UrlDedup): growing, segmented or classic in
//! memory, a fingerprint set, or segmented in Redis. One enum so every call site stays a plain
//! method call.

use std::io::{Read, Write};

#[cfg(feature = "redis")]
use url_dedup_bloom::SipHash13;
use url_dedup_bloom::hash::Digest;
use url_dedup_bloom::snapshot::Limits;
use url_dedup_bloom::{AtomicBloomFilter, HashKey};
use url_dedup_segmented::{GrowingFilter, SegmentedBloomFilter};

use crate::Error;
use crate::fingerprints::FingerprintSet;

/// Which exact filter a [`UrlDedup`](crate::UrlDedup) uses.
///
/// # Examples
///
/// ```
/// use url_dedup::{FilterKind, UrlDedup};
///
/// let d = UrlDedup::builder().filter(FilterKind::Classic).build()?;
/// assert!(d.check_and_insert("https://example.com/")?.is_new());
/// # Ok::<(), url_dedup::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FilterKind {
    /// A segmented filter that grows ([`GrowingFilter`]): up to the expected count it is one
    /// layer about the size of the segmented filter; past it, it adds layers of double the
    /// capacity at 0.3 times the rate, so a lookup stays below the false-positive rate
    /// however wrong the expected count was. One cache line per
    /// URL and layer, exactly-once admission when threads race on the same URL.
    #[default]
    Growing,
    /// The segmented filter of fixed size (one 512-bit cache line per URL): exactly-once
    /// admission, a prefetching batch path, 9.97 bits per URL at 1%. Past the expected count
    /// its rate rises ([`UrlDedup::is_over_capacity`](crate::UrlDedup::is_over_capacity)).
    Segmented,
    /// The classic K-hash filter of fixed size: the fewest bits per URL (9.59 at 1%), but two
    /// threads racing on the same new URL may both be told it is new.
    Classic,
    /// No false positives in practice: a set of keyed 128-bit fingerprints, one per distinct
    /// URL. Two distinct URLs collide with probability 2^-128 (for a billion URLs, any
    /// collision at all has probability about 10^-21). Costs 19–39 bytes per URL instead of
    /// about 2; the false-positive rate and expected count only size nothing.
    Exact,
}

/// Tags of the exact filter in a state snapshot.
pub(crate) const TAG_CLASSIC: u16 = 1;
pub(crate) const TAG_SEGMENTED: u16 = 2;
pub(crate) const TAG_GROWING: u16 = 3;
pub(crate) const TAG_FINGERPRINTS: u16 = 4;

pub(crate) enum Exact {
    Classic(AtomicBloomFilter),
    Segmented(SegmentedBloomFilter),
    Growing(GrowingFilter),
    Fingerprints(FingerprintSet),
    #[cfg(feature = "redis")]
    // Boxed: the store holds sockets and buffers, several times the other variants' size.
    Redis(Box<url_dedup_redis::SharedFilter<SipHash13>>),
}

impl Exact {
    pub(crate) fn build(
        kind: FilterKind,
        expected: u64,
        fpr: f64,
        key: Option<HashKey>,
    ) -> Result<Self, Error> {
        let key = key.unwrap_or_else(HashKey::random);
        Ok(match kind {
            FilterKind::Classic => Self::Classic(
                AtomicBloomFilter::builder()
                    .expected_items(expected)
                    .false_positive_rate(fpr)
                    .key(key)
                    .build_atomic()?,
            ),
            FilterKind::Segmented => Self::Segmented(
                SegmentedBloomFilter::builder()
                    .expected_items(expected)
                    .false_positive_rate(fpr)
                    .key(key)
                    .build()?,
            ),
            FilterKind::Growing => Self::Growing(
                GrowingFilter::builder()
                    .expected_items(expected)
                    .false_positive_rate(fpr)
                    .key(key)
                    .build()?,
            ),
            FilterKind::Exact => Self::Fingerprints(FingerprintSet::new(key)),
        })
    }

    /// The kind a state snapshot's tag stands for.
    pub(crate) fn kind_of_tag(tag: u16) -> Option<FilterKind> {
        match tag {
            TAG_CLASSIC => Some(FilterKind::Classic),
            TAG_SEGMENTED => Some(FilterKind::Segmented),
            TAG_GROWING => Some(FilterKind::Growing),
            TAG_FINGERPRINTS => Some(FilterKind::Exact),
            _ => None,
        }
    }

    /// Opens the shared filter under `options.prefix` in Redis, creating it if it does not exist. A
    /// process that finds an existing filter adopts its size and key, so every process that
    /// names the same prefix shares one filter.
    #[cfg(feature = "redis")]
    pub(crate) fn redis(
        url: &str,
        options: url_dedup_redis::StoreOptions,
        expected: u64,
        fpr: f64,
    ) -> Result<Self, Error> {
        use url_dedup_redis::SharedFilter;
        // Growing, like the in-memory default: the first process sizes the first layer, the
        // filter adds layers key by key, and later processes join what it made.
        Ok(Self::Redis(Box::new(SharedFilter::open(
            url, options, expected, fpr,
        )?)))
    }

    pub(crate) fn check_and_insert(&self, item: &[u8]) -> Result<bool, Error> {
        Ok(match self {
            Self::Classic(f) => f.check_and_insert(item),
            Self::Segmented(f) => f.check_and_insert(item),
            Self::Growing(f) => f.check_and_insert(item),
            Self::Fingerprints(f) => f.check_and_insert(item),
            #[cfg(feature = "redis")]
            Self::Redis(f) => f.try_check_and_insert(item)?,
        })
    }

    /// One answer per item, in order; a network store answers the whole batch in one round
    /// trip.
    pub(crate) fn check_and_insert_batch(&self, items: &[&[u8]]) -> Result<Vec<bool>, Error> {
        Ok(match self {
            Self::Classic(f) => items.iter().map(|i| f.check_and_insert(i)).collect(),
            Self::Segmented(f) => f.check_and_insert_batch(items),
            Self::Growing(f) => f.check_and_insert_batch(items),
            Self::Fingerprints(f) => items.iter().map(|i| f.check_and_insert(i)).collect(),
            #[cfg(feature = "redis")]
            Self::Redis(f) => f.try_check_and_insert_batch(items)?,
        })
    }

    /// [`check_and_insert_batch`](Self::check_and_insert_batch) with each key's digest made
    /// beforehand under this filter's key. Redis hashes the keys again: next to a round trip
    /// the hash costs nothing.
    pub(crate) fn check_and_insert_digests(
        &self,
        #[cfg_attr(not(feature = "redis"), allow(unused_variables))] keys: &[&[u8]],
        digests: &[Digest],
    ) -> Result<Vec<bool>, Error> {
        Ok(match self {
            Self::Classic(f) => digests
                .iter()
                .map(|&d| f.check_and_insert_digest(d))
                .collect(),
            Self::Segmented(f) => f.check_and_insert_digests(digests),
            Self::Growing(f) => f.check_and_insert_digests(digests),
            Self::Fingerprints(f) => digests
                .iter()
                .map(|&d| f.check_and_insert_digest(d))
                .collect(),
            #[cfg(feature = "redis")]
            Self::Redis(f) => f.try_check_and_insert_batch(keys)?,
        })
    }

    /// [`check_and_insert_digests`](Self::check_and_insert_digests) for an owner: the
    /// in-memory segmented filters write without stripe locks.
    pub(crate) fn check_and_insert_digests_mut(
        &mut self,
        keys: &[&[u8]],
        digests: &[Digest],
    ) -> Result<Vec<bool>, Error> {
        match self {
            Self::Segmented(f) => Ok(f.check_and_insert_digests_mut(digests)),
            Self::Growing(f) => Ok(f.check_and_insert_digests_mut(digests)),
            _ => self.check_and_insert_digests(keys, digests),
        }
    }

    /// The key every digest of this filter is made with.
    pub(crate) fn key(&self) -> HashKey {
        match self {
            Self::Classic(f) => f.key(),
            Self::Segmented(f) => f.key(),
            Self::Growing(f) => f.key(),
            Self::Fingerprints(f) => f.key(),
            #[cfg(feature = "redis")]
            Self::Redis(f) => f.key(),
        }
    }

    /// One answer per item, in order; Redis answers the whole batch in one round trip.
    pub(crate) fn contains_batch(&self, items: &[&[u8]]) -> Result<Vec<bool>, Error> {
        Ok(match self {
            Self::Classic(f) => items.iter().map(|i| f.contains(i)).collect(),
            Self::Segmented(f) => f.contains_batch(items),
            Self::Growing(f) => f.contains_batch(items),
            Self::Fingerprints(f) => items.iter().map(|i| f.contains(i)).collect(),
            #[cfg(feature = "redis")]
            Self::Redis(f) => f.try_contains_batch(items)?,
        })
    }

    pub(crate) fn contains(&self, item: &[u8]) -> Result<bool, Error> {
        Ok(match self {
            Self::Classic(f) => f.contains(item),
            Self::Segmented(f) => f.contains(item),
            Self::Growing(f) => f.contains(item),
            Self::Fingerprints(f) => f.contains(item),
            #[cfg(feature = "redis")]
            Self::Redis(f) => f.try_contains(item)?,
        })
    }

    /// What the filter was sized for: for a growing filter, its first layer; for a
    /// fingerprint set, which is never full, 0.
    pub(crate) fn expected_items(&self) -> u64 {
        match self {
            Self::Classic(f) => f.expected_items(),
            Self::Segmented(f) => f.expected_items(),
            Self::Growing(f) => f.plan().first_capacity,
            Self::Fingerprints(_) => 0,
            #[cfg(feature = "redis")]
            Self::Redis(f) => f.first_capacity(),
        }
    }

    /// NaN for the Redis store: its bits are not here to count.
    pub(crate) fn estimated_items(&self) -> f64 {
        match self {
            Self::Classic(f) => f.estimated_items(),
            Self::Segmented(f) => f.estimated_items(),
            Self::Growing(f) => f.admitted() as f64,
            Self::Fingerprints(f) => f.len() as f64,
            #[cfg(feature = "redis")]
            Self::Redis(_) => f64::NAN,
        }
    }

    /// The chance that a new URL is taken for a seen one, now. For the fingerprint set, the
    /// chance that any two URLs so far share a fingerprint. NaN for the Redis store.
    pub(crate) fn false_positive_rate(&self) -> f64 {
        match self {
            Self::Classic(f) => f.estimated_fpr(),
            Self::Segmented(f) => f.estimated_fpr(),
            Self::Growing(f) => f.expected_fpr(),
            Self::Fingerprints(f) => f.collision_probability(),
            #[cfg(feature = "redis")]
            Self::Redis(_) => f64::NAN,
        }
    }

    /// Whether opening the shared filter created it in Redis; `None` for filters in memory.
    pub(crate) fn created_in_redis(&self) -> Option<bool> {
        match self {
            #[cfg(feature = "redis")]
            Self::Redis(f) => Some(f.store().created()),
            _ => None,
        }
    }

    pub(crate) fn is_over_capacity(&self) -> bool {
        match self {
            Self::Classic(f) => f.is_over_capacity(),
            Self::Segmented(f) => f.is_over_capacity(),
            Self::Growing(f) => f.is_over_capacity(),
            Self::Fingerprints(_) => false,
            #[cfg(feature = "redis")]
            Self::Redis(_) => false,
        }
    }

    /// Bytes of filter state, wherever it lives.
    pub(crate) fn state_bytes(&self) -> u64 {
        match self {
            Self::Classic(f) => f.memory_bytes(),
            Self::Segmented(f) => f.memory_bytes(),
            Self::Growing(f) => f.memory_bytes(),
            Self::Fingerprints(f) => f.memory_bytes(),
            #[cfg(feature = "redis")]
            Self::Redis(f) => f.bytes().unwrap_or(0),
        }
    }

    pub(crate) fn tag(&self) -> u16 {
        match self {
            Self::Classic(_) => TAG_CLASSIC,
            Self::Segmented(_) => TAG_SEGMENTED,
            Self::Growing(_) => TAG_GROWING,
            Self::Fingerprints(_) => TAG_FINGERPRINTS,
            #[cfg(feature = "redis")]
            Self::Redis(_) => TAG_GROWING,
        }
    }

    /// Writes the filter's own snapshot; a Redis filter is copied out segment by segment and
    /// written as a segmented filter.
    pub(crate) fn write_to(&self, out: &mut impl Write) -> Result<(), Error> {
        match self {
            Self::Classic(f) => f.write_to(out)?,
            Self::Segmented(f) => f.write_to(out)?,
            Self::Growing(f) => f.write_to(out)?,
            Self::Fingerprints(f) => f.write_to(out)?,
            #[cfg(feature = "redis")]
            Self::Redis(f) => f.to_growing()?.write_to(out)?,
        }
        Ok(())
    }

    /// Reads the exact filter of a state snapshot. With `into` set to a Redis filter, the
    /// snapshot's bits are merged into it instead (seeding a shared filter from a file).
    pub(crate) fn read(
        tag: u16,
        input: &mut impl Read,
        into: Option<Self>,
        limits: Limits,
    ) -> Result<Self, Error> {
        match (tag, into) {
            (TAG_CLASSIC, None) => Ok(Self::Classic(AtomicBloomFilter::read_from_with_limits(
                input, limits,
            )?)),
            (TAG_SEGMENTED, None) => Ok(Self::Segmented(
                SegmentedBloomFilter::read_from_with_limits(input, limits)?,
            )),
            (TAG_GROWING, None) => Ok(Self::Growing(GrowingFilter::read_from_with_limits(
                input, limits,
            )?)),
            (TAG_FINGERPRINTS, None) => Ok(Self::Fingerprints(FingerprintSet::read_from(
                input, limits,
            )?)),
            #[cfg(feature = "redis")]
            (TAG_GROWING, Some(Self::Redis(shared))) => {
                let file = GrowingFilter::<SipHash13>::read_from_with_limits(input, limits)?;
                if file.key() != shared.key() {
                    return Err(Error::StateMismatch(
                        "the snapshot's filter has another key than the one in Redis",
                    ));
                }
                shared.merge_from(&file)?;
                Ok(Self::Redis(shared))
            }
            (TAG_CLASSIC | TAG_SEGMENTED | TAG_GROWING | TAG_FINGERPRINTS, Some(_)) => Err(
                Error::StateMismatch("only a segmented snapshot can seed a shared filter"),
            ),
            _ => Err(Error::StateMismatch("unknown exact filter kind")),
        }
    }
}

impl std::fmt::Debug for Exact {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Classic(x) => x.fmt(f),
            Self::Segmented(x) => x.fmt(f),
            Self::Growing(x) => x.fmt(f),
            Self::Fingerprints(x) => x.fmt(f),
            #[cfg(feature = "redis")]
            Self::Redis(x) => x.fmt(f),
        }
    }
}
