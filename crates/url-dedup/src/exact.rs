//! The exact filter behind a [`UrlDedup`](crate::UrlDedup): classic, segmented in memory, or
//! segmented in Redis. One enum so every call site stays a plain method call.

use std::io::{Read, Write};

#[cfg(feature = "redis")]
use url_dedup_bloom::SipHash13;
use url_dedup_bloom::{AtomicBloomFilter, HashKey};
use url_dedup_segmented::SegmentedBloomFilter;

use crate::Error;

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
    /// The segmented filter (one 512-bit cache line per URL): exactly-once admission when
    /// threads race on the same URL, a prefetching batch path, 9.97 bits per URL at 1%.
    #[default]
    Segmented,
    /// The classic K-hash filter: the fewest bits per URL (9.59 at 1%), but two threads racing
    /// on the same new URL may both be told it is new.
    Classic,
}

/// Tags of the exact filter in a state snapshot.
pub(crate) const TAG_CLASSIC: u16 = 1;
pub(crate) const TAG_SEGMENTED: u16 = 2;

pub(crate) enum Exact {
    Classic(AtomicBloomFilter),
    Segmented(SegmentedBloomFilter),
    #[cfg(feature = "redis")]
    // Boxed: the store holds sockets and buffers, several times the other variants' size.
    Redis(Box<SegmentedBloomFilter<SipHash13, url_dedup_redis::RedisSegmentStore>>),
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
        })
    }

    /// Opens the shared filter under `prefix` in Redis, creating it if it does not exist. A
    /// process that finds an existing filter adopts its size and key, so every process that
    /// names the same prefix shares one filter.
    #[cfg(feature = "redis")]
    pub(crate) fn redis(
        url: &str,
        prefix: &str,
        expected: u64,
        fpr: f64,
        key: Option<HashKey>,
    ) -> Result<Self, Error> {
        use url_dedup_bloom::ItemHasher;
        use url_dedup_redis::{Error as RedisError, RedisSegmentStore, StoreOptions};
        let options = || StoreOptions::new(prefix);
        match RedisSegmentStore::join::<SipHash13>(url, options()) {
            Ok(filter) => return Ok(Self::Redis(Box::new(filter))),
            Err(RedisError::NoFilter { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        let layout = RedisSegmentStore::layout_for(expected, fpr)?;
        let hasher = key.map_or_else(SipHash13::random, SipHash13::new);
        match RedisSegmentStore::create_filter(url, options(), layout, hasher, expected) {
            Ok(filter) => Ok(Self::Redis(Box::new(filter))),
            // Another process created it first with its own key: use theirs.
            Err(RedisError::Mismatch { .. }) if key.is_none() => Ok(Self::Redis(Box::new(
                RedisSegmentStore::join::<SipHash13>(url, options())?,
            ))),
            Err(e) => Err(e.into()),
        }
    }

    pub(crate) fn check_and_insert(&self, item: &[u8]) -> Result<bool, Error> {
        Ok(match self {
            Self::Classic(f) => f.check_and_insert(item),
            Self::Segmented(f) => f.check_and_insert(item),
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
            #[cfg(feature = "redis")]
            Self::Redis(f) => f.try_check_and_insert_batch(items)?,
        })
    }

    pub(crate) fn contains(&self, item: &[u8]) -> Result<bool, Error> {
        Ok(match self {
            Self::Classic(f) => f.contains(item),
            Self::Segmented(f) => f.contains(item),
            #[cfg(feature = "redis")]
            Self::Redis(f) => f.try_contains(item)?,
        })
    }

    pub(crate) fn expected_items(&self) -> u64 {
        match self {
            Self::Classic(f) => f.expected_items(),
            Self::Segmented(f) => f.expected_items(),
            #[cfg(feature = "redis")]
            Self::Redis(f) => f.expected_items(),
        }
    }

    /// NaN for the Redis store: its bits are not here to count.
    pub(crate) fn estimated_items(&self) -> f64 {
        match self {
            Self::Classic(f) => f.estimated_items(),
            Self::Segmented(f) => f.estimated_items(),
            #[cfg(feature = "redis")]
            Self::Redis(_) => f64::NAN,
        }
    }

    pub(crate) fn is_over_capacity(&self) -> bool {
        match self {
            Self::Classic(f) => f.is_over_capacity(),
            Self::Segmented(f) => f.is_over_capacity(),
            #[cfg(feature = "redis")]
            Self::Redis(_) => false,
        }
    }

    /// Bytes of filter state, wherever it lives.
    pub(crate) fn state_bytes(&self) -> u64 {
        match self {
            Self::Classic(f) => f.memory_bytes(),
            Self::Segmented(f) => f.memory_bytes(),
            #[cfg(feature = "redis")]
            Self::Redis(f) => f.bits().div_ceil(8),
        }
    }

    pub(crate) fn tag(&self) -> u16 {
        match self {
            Self::Classic(_) => TAG_CLASSIC,
            Self::Segmented(_) => TAG_SEGMENTED,
            #[cfg(feature = "redis")]
            Self::Redis(_) => TAG_SEGMENTED,
        }
    }

    /// Writes the filter's own snapshot; a Redis filter is copied out segment by segment and
    /// written as a segmented filter.
    pub(crate) fn write_to(&self, out: &mut impl Write) -> Result<(), Error> {
        match self {
            Self::Classic(f) => f.write_to(out)?,
            Self::Segmented(f) => f.write_to(out)?,
            #[cfg(feature = "redis")]
            Self::Redis(f) => {
                let memory = f.store().to_memory()?;
                let copy = SegmentedBloomFilter::with_store(
                    memory,
                    SipHash13::new(f.key()),
                    f.expected_items(),
                );
                copy.write_to(out)?;
            }
        }
        Ok(())
    }

    /// Reads the exact filter of a state snapshot. With `into` set to a Redis filter, the
    /// snapshot's bits are merged into it instead (seeding a shared filter from a file).
    pub(crate) fn read(tag: u16, input: &mut impl Read, into: Option<Self>) -> Result<Self, Error> {
        match (tag, into) {
            (TAG_CLASSIC, None) => Ok(Self::Classic(AtomicBloomFilter::read_from(input)?)),
            (TAG_SEGMENTED, None) => Ok(Self::Segmented(SegmentedBloomFilter::read_from(input)?)),
            #[cfg(feature = "redis")]
            (TAG_SEGMENTED, Some(Self::Redis(shared))) => {
                let file = SegmentedBloomFilter::<SipHash13>::read_from(input)?;
                if file.layout() != shared.layout() || file.key() != shared.key() {
                    return Err(Error::StateMismatch(
                        "the snapshot's filter differs in size or key from the one in Redis",
                    ));
                }
                shared.store().merge_from_memory(file.store())?;
                Ok(Self::Redis(shared))
            }
            (TAG_CLASSIC | TAG_SEGMENTED, Some(_)) => Err(Error::StateMismatch(
                "only a segmented snapshot can seed a shared filter",
            )),
            _ => Err(Error::StateMismatch("unknown exact filter kind")),
        }
    }
}

impl std::fmt::Debug for Exact {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Classic(x) => x.fmt(f),
            Self::Segmented(x) => x.fmt(f),
            #[cfg(feature = "redis")]
            Self::Redis(x) => x.fmt(f),
        }
    }
}
