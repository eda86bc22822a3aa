//! The segmented filter's segments in Redis: one string per segment, one atomic `BITFIELD` per
//! segment and batch.

use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use redis::{Client, Connection, RedisError};
use url_dedup_bloom::hash::{HashAlgorithm, HashKey, ItemHasher};
use url_dedup_bloom::sizing::Growth;
use url_dedup_segmented::{
    Layout, MAX_SEGMENT_BITS, MemoryStore, Placement, Probe, SegmentStore, SegmentedBloomFilter,
    bit_order,
};

use crate::cluster::Redirect;
use crate::deployment::Deployment;
use crate::error::{Error, Result};
use crate::known_bits::{KnownBits, KnownBitsStats};
use crate::link::{Backoff, Retry, is_transient};
use crate::resp::Packed;
use crate::wire::{Reply, Wire};

/// Format version of the metadata hash; bumped if key names or bit meanings ever change.
/// Version 2 put a header in front of every data key.
const META_VERSION: u64 = 2;
/// Bits at the start of every data key before its first segment, four `i64` fields: the
/// filter's generation, a count of the commands that wrote the key, the key's number of
/// layers (a growing filter adds layers key by key), and the items admitted into its newest
/// layer. Every command on the key reads them in the same atomic `BITFIELD`, so a key that
/// vanished (a Redis restarted empty, `FLUSHALL`) or went back in time (a failover to a
/// replica that missed writes) is noticed on the round trip that meets it, at no extra round
/// trip, and so is a key that grew since the client last met it.
pub(crate) const HEADER_BITS: u64 = 256;
/// Bit offset of the generation in a data key's header.
pub(crate) const GENERATION_AT: u64 = 0;
/// Bit offset of the write count in a data key's header.
pub(crate) const WRITES_AT: u64 = 64;
/// Bit offset of the layer count in a data key's header (0 reads as 1: keys start with one).
pub(crate) const LAYERS_AT: u64 = 128;
/// Bit offset of the count of items admitted into the key's newest layer.
pub(crate) const ADMITTED_AT: u64 = 192;
/// Values each command reads besides its bits: the header's generation, write count, layers
/// and admitted, and the client's witness bit in the key (see [`Expect`]).
pub(crate) const HEADER_OPS: usize = 5;
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
/// Longest a client answers from its cache of known bits alone before it checks a key's
/// header again: a reset is noticed within about this long even when every URL is known.
const VERIFY_EVERY: Duration = Duration::from_secs(1);
/// Redirections a command may follow before the store gives up (a slot moves at most twice
/// while one command is redirected: MOVED, then ASK during a migration).
const MAX_REDIRECTS: usize = 16;
/// How long a creator may hold the creation lock (it holds it while it sizes the data keys).
const CREATION_LOCK_MS: u64 = 60_000;
/// Most `SET u1` operations in one `BITFIELD`: about 50 us of Redis time, so other clients are
/// never stalled behind a huge batch, and Redis starts on a batch's first commands while the
/// client still packs the rest. Not more: Redis 7 grows a `BITFIELD`'s operation array by one
/// `zrealloc` per operation, and at 1,024 operations per command that cost about 8% more Redis
/// time per URL than at 256 (`cargo bench --bench redis`, 1.00 against 0.92 us per URL).
const MAX_OPS_PER_COMMAND: usize = 256;
/// Packed bytes the client accumulates before handing them to the socket.
const SEND_CHUNK: usize = 32 << 10;
/// Bytes per `GETRANGE`/`SETRANGE` when moving whole segments, so no single reply is huge.
const TRANSFER_CHUNK: u64 = 1 << 20;
/// Largest segment the store reads back ([`MAX_SEGMENT_BITS`] / 8: a Redis string's limit).
const MAX_SEGMENT_BYTES: u64 = MAX_SEGMENT_BITS / 8;
/// Default [`StoreOptions::known_bits_limit`]: a 10-million-URL filter at 1% (24 MiB) fits
/// with room to spare.
const DEFAULT_KNOWN_BITS_LIMIT: u64 = 64 << 20;

/// How a batch sets its bits.
///
/// # Examples
///
/// ```
/// use url_dedup_redis::WriteMode;
///
/// assert_eq!(WriteMode::default(), WriteMode::Bitfield);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WriteMode {
    /// One `BITFIELD key SET u1 o 1 ...` per segment of the batch, all pipelined in one round
    /// trip. Each command tests and sets atomically, so concurrent clients need no lock.
    #[default]
    Bitfield,
    /// Document 003's optimistic locking: `WATCH` the batch's segment keys, read the bits,
    /// then `MULTI`/`BITFIELD SET`/`EXEC`, and start over if another client changed a watched
    /// segment meanwhile. Two round trips per batch, more under contention; kept to compare.
    Optimistic,
}

/// What a batch whose reply was lost reports for its items.
///
/// When the connection breaks after a batch was sent, Redis may or may not have set its bits.
/// The retry then sees "all bits set" both for items that were there before and for items our
/// own lost attempt set, and cannot tell them apart.
///
/// # Examples
///
/// ```
/// use url_dedup_redis::Uncertain;
///
/// assert_eq!(Uncertain::default(), Uncertain::AssumeNew);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Uncertain {
    /// Report every item of the retried batch as new: at-least-once. No URL is ever lost; a
    /// failure may get up to one batch crawled twice.
    #[default]
    AssumeNew,
    /// Report what the retry saw: at-most-once. Items the lost attempt inserted are reported
    /// as duplicates and never crawled.
    TrustRedis,
}

/// Where and how a [`RedisSegmentStore`] keeps its segments.
///
/// # Examples
///
/// ```
/// use url_dedup_redis::StoreOptions;
///
/// let opts = StoreOptions::new("crawl:seen");
/// assert_eq!(opts.data_key(7, 100), "crawl:seen:7");
/// let tagged = StoreOptions { cluster_tags: true, ..StoreOptions::new("crawl:seen") };
/// assert_eq!(tagged.data_key(7, 16_384), "crawl:seen:{41432}"); // in slot 7
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreOptions {
    /// Key prefix: data key `n` is `<prefix>:<n>`, the metadata `<prefix>:meta`.
    pub prefix: String,
    /// Put each data key in a hash slot of its own (`<prefix>:{tag}`, see
    /// [`cluster::slot_tag`](crate::cluster::slot_tag)): data key `i` of `n` in slot
    /// `i × 16384 / n`, so a filter of 16,384 keys has the segments of virtual node `v` in
    /// slot `v`, and a cluster spreads the keys over its masters while each key's helper keys
    /// share its slot. Always on for a filter created on a cluster; recorded in the metadata.
    pub cluster_tags: bool,
    /// Segments stored side by side in one Redis string; `None` packs as many as fit in just
    /// under 1 MiB (see [`RedisSegmentStore`] for why). Recorded in the metadata.
    pub segments_per_key: Option<u64>,
    /// How batches set bits.
    pub mode: WriteMode,
    /// What a batch retried after a lost reply reports.
    pub uncertain: Uncertain,
    /// Reconnection and retry policy.
    pub backoff: Backoff,
    /// Connections kept for threads sharing the store (at least 1).
    pub connections: usize,
    /// The filter's hash key, kept out of Redis. `None` (the default) writes the key into the
    /// metadata, so a process joins with only the URL and the prefix; `Some` writes only a
    /// check value (a keyed hash of a constant, which tells nothing of the key) and every
    /// process must bring the key itself, from an environment variable or a key file, say.
    /// The key is what keeps crafted URLs from aiming at the filter's bits: treat it as a
    /// secret, and keep Redis private either way.
    pub key: Option<HashKey>,
    /// Largest filter, in bytes of bits, for which the store keeps a client-side copy of the
    /// bits it has seen set (default 64 MiB; 0 disables it).
    ///
    /// Bits of the shared filter are only ever set, so a bit this client saw as 1 (answered 1,
    /// or set by one of its own commands) is still 1. [`WriteMode::Bitfield`] batches leave
    /// such bits out of their commands and answer an item whose bits are all known without
    /// asking Redis; the answers are the same as with every bit sent, and admission stays
    /// exactly-once across clients (see [`docs/redis.md`](https://github.com/url-dedup/url-dedup/blob/main/docs/redis.md)).
    ///
    /// * **Memory**: as much as the filter itself, about 2.5 bytes per expected URL at 1%, in
    ///   every process that opens it (24 MiB for 10 million URLs), allocated when the store
    ///   is opened. A filter larger than the limit, or an allocation that fails, runs without.
    /// * **Cleared** whenever the store opens a connection, which it does after every failure:
    ///   a Redis that restarted may have lost bits.
    /// * **Assumes** nobody deletes or clears the filter's keys while clients are connected;
    ///   a process that does so must have every client reopen the store.
    ///
    /// [`WriteMode::Optimistic`] keeps no cache.
    pub known_bits_limit: u64,
    /// Wait after every writing batch until this many replicas of each master it wrote to
    /// have its writes (`WAIT`). A batch whose writes are not acknowledged in time is tried
    /// again like a batch whose reply was lost (its answers per [`Uncertain`]), until the
    /// backoff's budget is spent ([`Error::Unavailable`]).
    /// Redis replicates asynchronously: without this, a master that dies may take the last
    /// admissions with it, and its promoted replica admits those URLs again (the write
    /// counts in the keys' headers notice it when a client saw them, see
    /// [`Error::StoreReset`]). Costs one more round trip per batch and master.
    pub acknowledge: Option<Acknowledge>,
    /// For a growing filter created by this store: this many bits per item and layer (see
    /// [`RedisSegmentStore::layout_for_hashes`]). Redis's work per URL is proportional to it,
    /// and the filter's memory grows as it falls. `None`: [`RedisSegmentStore::layout_for`]'s
    /// choice (2 at 1%). Recorded in the metadata.
    pub hashes: Option<u32>,
}

/// How many replicas must hold a batch's writes before it is answered (see
/// [`StoreOptions::acknowledge`]).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use url_dedup_redis::{Acknowledge, StoreOptions};
///
/// let safe = StoreOptions {
///     acknowledge: Some(Acknowledge { replicas: 1, timeout: Duration::from_secs(1) }),
///     ..StoreOptions::new("seen")
/// };
/// assert_eq!(safe.acknowledge.unwrap().replicas, 1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Acknowledge {
    /// Replicas that must acknowledge.
    pub replicas: u32,
    /// How long to wait for them.
    pub timeout: Duration,
}

impl StoreOptions {
    /// Defaults for `prefix`: plain keys, [`WriteMode::Bitfield`], [`Uncertain::AssumeNew`],
    /// the default [`Backoff`], one connection, a cache of known bits for filters up to
    /// 64 MiB.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_redis::{StoreOptions, WriteMode};
    ///
    /// let opts = StoreOptions::new("seen");
    /// assert_eq!(opts.mode, WriteMode::Bitfield);
    /// assert_eq!(opts.known_bits_limit, 64 << 20);
    /// ```
    pub fn new(prefix: impl Into<String>) -> Self {
        Self {
            prefix: prefix.into(),
            cluster_tags: false,
            segments_per_key: None,
            mode: WriteMode::default(),
            uncertain: Uncertain::default(),
            backoff: Backoff::default(),
            connections: 1,
            key: None,
            known_bits_limit: DEFAULT_KNOWN_BITS_LIMIT,
            acknowledge: None,
            hashes: None,
        }
    }

    /// The name of data key number `index` of `keys` (holding segments
    /// `index * segments_per_key ..`).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_redis::{StoreOptions, cluster::key_slot};
    ///
    /// assert_eq!(StoreOptions::new("p").data_key(0, 10), "p:0");
    /// let tagged = StoreOptions { cluster_tags: true, ..StoreOptions::new("p") };
    /// assert_eq!(key_slot(tagged.data_key(5, 10).as_bytes()), 8_192);
    /// ```
    pub fn data_key(&self, index: u64, keys: u64) -> String {
        if self.cluster_tags {
            let slot = index * u64::from(crate::cluster::SLOTS) / keys.max(1);
            let tag = crate::cluster::slot_tag(slot as u16);
            format!("{}:{{{tag}}}", self.prefix)
        } else {
            format!("{}:{index}", self.prefix)
        }
    }

    /// How long a connection's batch counter key, or a script call's token key, lives after its
    /// last batch (see [`Uncertain`]): as long as a retry of the batch may come, the backoff's
    /// budget, and half a minute more.
    pub(crate) fn token_ttl_ms(&self) -> u64 {
        (self.backoff.give_up_after + Duration::from_secs(30)).as_millis() as u64
    }

    /// The key of the metadata hash.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_redis::StoreOptions;
    ///
    /// assert_eq!(StoreOptions::new("p").meta_key(), "p:meta");
    /// ```
    pub fn meta_key(&self) -> String {
        format!("{}:meta", self.prefix)
    }
}

/// What the metadata hash records: everything another process needs to compute the same bits.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Meta {
    layout: Layout,
    segments_per_key: u64,
    algorithm: HashAlgorithm,
    key: HashKey,
    expected_items: u64,
    /// Random and non-zero, chosen when the filter is created and written into every data
    /// key's header: a filter re-created under the same prefix has another one.
    generation: i64,
    /// Whether the metadata holds the key itself or only [`key_check`].
    key_in_redis: bool,
    /// How the filter grows, for a growing filter (see [`LayerShape`]).
    growth: Option<MetaGrowth>,
    /// Whether data keys are named with slot tags ([`StoreOptions::cluster_tags`]).
    key_tags: bool,
}

/// The schedule of a growing filter's layers, as the metadata records it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct MetaGrowth {
    /// Items the first layer holds (over all keys).
    pub(crate) first_capacity: u64,
    /// The rate no lookup exceeds, whatever the number of layers.
    pub(crate) target_fpr: f64,
    /// Capacities and rates from layer to layer.
    pub(crate) growth: Growth,
    /// Bits per item and layer, when chosen ([`StoreOptions::hashes`]).
    pub(crate) hashes: Option<u32>,
}

/// Where one layer of a growing filter lies in every data key, and what it holds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct LayerShape {
    /// The layer's geometry over all keys: `per_key` segments in each of the data keys, so an
    /// item's segment in any layer lies in the same key as in the first.
    pub(crate) layout: Layout,
    /// Segments of the layer in each data key.
    pub(crate) per_key: u64,
    /// Bit offset in a data key where the layer's first segment starts (header included).
    pub(crate) start: u64,
    /// Items one key's part of the layer holds at the layer's rate.
    pub(crate) share: u64,
}

/// What the metadata holds for a key kept out of Redis: one keyed hash of a constant.
fn key_check(key: HashKey) -> String {
    use url_dedup_bloom::SipHash13;
    let digest = SipHash13::new(key).hash(b"url-dedup: check of a key kept out of redis");
    format!("{:016x}{:016x}", digest.h1, digest.h2)
}

impl Meta {
    fn fields(&self) -> Vec<(&'static str, String)> {
        let mut fields = vec![
            ("version", META_VERSION.to_string()),
            ("generation", self.generation.to_string()),
            ("segments", self.layout.segments().to_string()),
            ("segment_bits", self.layout.segment_bits().to_string()),
            ("hashes", self.layout.hashes().to_string()),
            ("placement", self.layout.placement().code().to_string()),
            ("segments_per_key", self.segments_per_key.to_string()),
            ("algorithm", self.algorithm.0.to_string()),
            if self.key_in_redis {
                ("key", self.key.to_hex())
            } else {
                ("key_check", key_check(self.key))
            },
            ("expected_items", self.expected_items.to_string()),
            ("key_tags", u8::from(self.key_tags).to_string()),
        ];
        if let Some(g) = self.growth {
            fields.extend([
                ("growth_first", g.first_capacity.to_string()),
                ("growth_target", g.target_fpr.to_string()),
                ("growth_factor", g.growth.factor.to_string()),
                ("growth_tightening", g.growth.tightening.to_string()),
            ]);
            if let Some(k) = g.hashes {
                fields.push(("growth_hashes", k.to_string()));
            }
        }
        fields
    }

    /// Reads the metadata at `key`; `supplied` is the hash key this process brings (needed
    /// when the metadata holds only a check of it).
    fn parse(key: &str, fields: &[(String, String)], supplied: Option<HashKey>) -> Result<Self> {
        let get = |name: &str| -> Result<&str> {
            fields
                .iter()
                .find(|(f, _)| f == name)
                .map(|(_, v)| v.as_str())
                .ok_or_else(|| corrupt(key, format!("metadata has no {name}")))
        };
        let num = |name: &str| -> Result<u64> {
            get(name)?
                .parse()
                .map_err(|_| corrupt(key, format!("metadata {name} is not a number")))
        };
        if num("version")? != META_VERSION {
            return Err(Error::Mismatch {
                field: "version",
                stored: get("version")?.to_owned(),
                expected: META_VERSION.to_string(),
            });
        }
        // Metadata written before placements existed has none: those filters are scattered.
        let placement = match fields.iter().any(|(f, _)| f == "placement") {
            false => Placement::Scattered,
            true => u16::try_from(num("placement")?)
                .ok()
                .and_then(Placement::from_code)
                .ok_or_else(|| corrupt(key, "unknown bit placement"))?,
        };
        let layout = Layout::with_placement(
            num("segments")?,
            num("segment_bits")?,
            u32::try_from(num("hashes")?).map_err(|_| corrupt(key, "hashes out of range"))?,
            placement,
        )
        .map_err(|e| corrupt(key, e.to_string()))?;
        let algorithm = HashAlgorithm(
            u16::try_from(num("algorithm")?).map_err(|_| corrupt(key, "algorithm out of range"))?,
        );
        let (hash_key, key_in_redis) = match fields.iter().find(|(f, _)| f == "key_check") {
            None => {
                let parsed: HashKey = get("key")?
                    .parse()
                    .map_err(|_| corrupt(key, "hash key is not 32 hex digits"))?;
                (parsed, true)
            }
            Some((_, check)) => {
                let supplied = supplied.ok_or(Error::KeyRequired {
                    meta: key.to_owned(),
                })?;
                if key_check(supplied) != *check {
                    return Err(Error::Mismatch {
                        field: "key",
                        stored: "<the creator's key>".into(),
                        expected: "<a different key>".into(),
                    });
                }
                (supplied, false)
            }
        };
        let segments_per_key = num("segments_per_key")?;
        if segments_per_key == 0 {
            return Err(corrupt(key, "segments_per_key is 0"));
        }
        let generation: i64 = get("generation")?
            .parse()
            .ok()
            .filter(|&g| g != 0)
            .ok_or_else(|| corrupt(key, "metadata generation is not a non-zero number"))?;
        let growth = match fields.iter().any(|(f, _)| f == "growth_factor") {
            false => None,
            true => {
                let float = |name: &str| -> Result<f64> {
                    get(name)?
                        .parse()
                        .map_err(|_| corrupt(key, format!("metadata {name} is not a number")))
                };
                let g = MetaGrowth {
                    first_capacity: num("growth_first")?,
                    target_fpr: float("growth_target")?,
                    growth: Growth {
                        factor: u32::try_from(num("growth_factor")?)
                            .map_err(|_| corrupt(key, "growth factor out of range"))?,
                        tightening: float("growth_tightening")?,
                    },
                    hashes: match fields.iter().any(|(f, _)| f == "growth_hashes") {
                        false => None,
                        true => Some(
                            u32::try_from(num("growth_hashes")?)
                                .ok()
                                .filter(|&k| k > 0)
                                .ok_or_else(|| corrupt(key, "growth_hashes out of range"))?,
                        ),
                    },
                };
                g.growth
                    .validate()
                    .map_err(|e| corrupt(key, e.to_string()))?;
                Some(g)
            }
        };
        Ok(Self {
            layout,
            segments_per_key,
            algorithm,
            key: hash_key,
            expected_items: num("expected_items")?,
            generation,
            key_in_redis,
            growth,
            key_tags: fields.iter().any(|(f, v)| f == "key_tags" && v == "1"),
        })
    }

    /// Number of Redis strings holding segments.
    fn data_keys(&self) -> u64 {
        self.layout.segments().div_ceil(self.segments_per_key)
    }

    /// Segments held by data key `index` (the last one may hold fewer).
    fn key_segments(&self, index: u64) -> u64 {
        let per_key = self.segments_per_key;
        (self.layout.segments() - index * per_key).min(per_key)
    }

    /// The 32 bytes a data key starts with: generation, no writes yet, one layer, nothing
    /// admitted.
    fn header_bytes(&self) -> [u8; (HEADER_BITS / 8) as usize] {
        let mut header = [0u8; (HEADER_BITS / 8) as usize];
        header[..8].copy_from_slice(&self.generation.to_be_bytes());
        header[16..24].copy_from_slice(&1i64.to_be_bytes());
        header
    }

    /// The first field where `self` (ours) and `stored` disagree.
    fn check_against(&self, stored: &Self) -> Result<()> {
        let pairs: [(&'static str, String, String); 7] = [
            (
                "segments",
                stored.layout.segments().to_string(),
                self.layout.segments().to_string(),
            ),
            (
                "segment_bits",
                stored.layout.segment_bits().to_string(),
                self.layout.segment_bits().to_string(),
            ),
            (
                "hashes",
                stored.layout.hashes().to_string(),
                self.layout.hashes().to_string(),
            ),
            (
                "placement",
                format!("{:?}", stored.layout.placement()),
                format!("{:?}", self.layout.placement()),
            ),
            (
                "segments_per_key",
                stored.segments_per_key.to_string(),
                self.segments_per_key.to_string(),
            ),
            (
                "algorithm",
                stored.algorithm.0.to_string(),
                self.algorithm.0.to_string(),
            ),
            ("key", "<stored key>".into(), "<a different key>".into()),
        ];
        if self.growth != stored.growth {
            return Err(Error::Mismatch {
                field: "growth",
                stored: format!("{:?}", stored.growth),
                expected: format!("{:?}", self.growth),
            });
        }
        for (field, stored_value, ours) in pairs {
            let differs = if field == "key" {
                stored.key != self.key
            } else {
                stored_value != ours
            };
            if differs {
                return Err(Error::Mismatch {
                    field,
                    stored: stored_value,
                    expected: ours,
                });
            }
        }
        Ok(())
    }
}

/// The [`SegmentStore`] of a segmented filter shared through Redis by many processes.
///
/// * **One Redis string per segment** (`<prefix>:<n>`, or `<prefix>:{n}` with
///   [`cluster_tags`](StoreOptions::cluster_tags)), created at full size when the filter is
///   created, so memory is exactly the filter's bits plus a small per-key overhead.
/// * **Exactly-once across processes without locks.** An item's bits all live in one segment,
///   and one `BITFIELD key SET u1 o1 1 ... SET u1 ok 1` returns their old values while setting
///   them, atomically. Of all clients inserting a new URL at once, exactly one sees a zero.
/// * **Batches**: the items of a batch are grouped by segment, one `BITFIELD` per segment
///   (items in batch order inside it), all packed into one pipeline: one round trip carries
///   the whole batch.
/// * **Metadata** (`<prefix>:meta`): layout, hash algorithm and key. Opening with other
///   parameters is [`Error::Mismatch`], never silent corruption; [`join`](Self::join) reads
///   them, so a second machine needs only the URL and prefix.
/// * **Snapshots**: [`to_memory`](Self::to_memory) and [`merge_from_memory`](Self::merge_from_memory)
///   move segments to and from the in-memory filter with `GETRANGE`/`SETRANGE`, whose
///   snapshot format then writes or reads files.
/// * **Failures**: calls reconnect and retry under the [`Backoff`] policy, re-checking the
///   metadata after each reconnect (a Redis that restarted empty gets it back); a batch whose
///   reply was lost is handled per [`Uncertain`].
/// * **Known bits**: in [`WriteMode::Bitfield`] the store remembers the bits it has seen set
///   (they are never cleared) and leaves them out of its commands; an item whose bits are all
///   known is answered without Redis. Same answers, same exactly-once guarantee, emptied on
///   every reconnect; see [`StoreOptions::known_bits_limit`] and
///   [`known_bits_stats`](Self::known_bits_stats).
///
/// The trait is synchronous; call it from `tokio::task::spawn_blocking` in async code.
///
/// # Examples
///
/// ```
/// # use url_dedup_redis::testing::RedisServer;
/// # let Some(server) = RedisServer::start_or_skip("RedisSegmentStore example") else { return Ok(()) };
/// use url_dedup_bloom::{HashKey, SipHash13};
/// use url_dedup_redis::{RedisSegmentStore, StoreOptions};
///
/// let layout = RedisSegmentStore::layout_for(1_000_000, 0.01)?;
/// let hasher = SipHash13::new(HashKey::from_bytes(*b"shared crawl key"));
/// let seen = RedisSegmentStore::create_filter(&server.url(), StoreOptions::new("seen"), layout, hasher, 1_000_000)?;
/// assert_eq!(seen.try_check_and_insert_batch(&["https://a.example/", "https://b.example/", "https://a.example/"])?, [true, true, false]);
///
/// // Another process joins with only the URL and the prefix.
/// let other = RedisSegmentStore::join::<SipHash13>(&server.url(), StoreOptions::new("seen"))?;
/// assert!(!other.try_check_and_insert("https://b.example/")?);
/// # Ok::<(), url_dedup_redis::Error>(())
/// ```
pub struct RedisSegmentStore {
    deployment: Deployment,
    options: StoreOptions,
    meta: Meta,
    meta_key: String,
    /// Per pooled slot, a connection per node (one for a single server).
    pool: Vec<Mutex<Vec<Option<Live>>>>,
    next: AtomicUsize,
    /// Bits seen set, in [`WriteMode::Bitfield`] when the filter fits the limit.
    known: Option<KnownBits>,
    bits_sent: AtomicU64,
    bits_skipped: AtomicU64,
    /// Per data key, the highest write count its header has shown this client: a lower one
    /// later means the key lost writes.
    writes_seen: Box<[AtomicI64]>,
    /// Per data key, one more than the offset of the last bit this client set there (0:
    /// none yet); see [`Expect`].
    witnesses: Box<[AtomicU64]>,
    /// The layers' shapes computed so far, layer 0 first (see [`layer`](Self::layer)).
    shapes: Mutex<Vec<LayerShape>>,
    /// Per data key, the layers it had when last met (see [`HEADER_BITS`]).
    layers_seen: Box<[std::sync::atomic::AtomicU32]>,
    /// Per data key, admissions counted here and not yet added to its header.
    pending_admitted: Box<[AtomicU64]>,
    /// `MOVED` and `ASK` redirections followed.
    redirections: AtomicU64,
    /// When the store was opened; `verified` counts milliseconds from here.
    opened: Instant,
    /// When a data key's header was last checked.
    verified: AtomicU64,
    /// The data key the next verification reads (they take turns).
    verify_turn: AtomicU64,
    /// Whether this handle created the filter (its generation is the one it proposed).
    created: bool,
}

impl std::fmt::Debug for RedisSegmentStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisSegmentStore")
            .field("options", &self.options)
            .field("layout", &self.meta.layout)
            .finish_non_exhaustive()
    }
}

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
    fn layout_within(items: u64, fpr: f64, hashes: Option<u32>) -> Result<Layout> {
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
        let budget = optimum.bits as f64 * REDIS_SIZE_FOR_SPEED;
        for hashes in 1..optimum.hashes {
            if let Some(layout) = sized(hashes, budget)? {
                return Ok(layout);
            }
        }
        Ok(Layout::for_items(items, fpr, segment_bits)?)
    }

    /// Creates the filter's metadata and segments, or opens them if they exist with the same
    /// parameters.
    ///
    /// # Errors
    ///
    /// [`Error::Mismatch`] when the prefix holds a filter with other parameters or another
    /// key; [`Error::Unavailable`] when Redis stays unreachable.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("create example") else { return Ok(()) };
    /// use url_dedup_bloom::{HashKey, ItemHasher, SipHash13};
    /// use url_dedup_redis::{Error, RedisSegmentStore, StoreOptions};
    ///
    /// let layout = RedisSegmentStore::layout_for(10_000, 0.01)?;
    /// let key = HashKey::from_bytes([1; 16]);
    /// RedisSegmentStore::create::<SipHash13>(&server.url(), StoreOptions::new("f"), layout, key, 10_000)?;
    /// let other_key = HashKey::from_bytes([2; 16]);
    /// let err = RedisSegmentStore::create::<SipHash13>(&server.url(), StoreOptions::new("f"), layout, other_key, 10_000).unwrap_err();
    /// assert!(matches!(err, Error::Mismatch { field: "key", .. }));
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// ```
    pub fn create<H: ItemHasher>(
        url: &str,
        options: StoreOptions,
        layout: Layout,
        key: HashKey,
        expected_items: u64,
    ) -> Result<Self> {
        let deployment = Deployment::open(url, &options.backoff)?;
        let segments_per_key = options
            .segments_per_key
            .unwrap_or_else(|| default_segments_per_key(layout, deployment.is_cluster()))
            .clamp(1, layout.segments());
        let wanted = Meta {
            layout,
            segments_per_key,
            algorithm: H::ALGORITHM,
            key,
            expected_items,
            generation: new_generation(),
            key_in_redis: options.key.is_none(),
            growth: None,
            key_tags: options.cluster_tags,
        };
        Self::create_with(deployment, options, wanted)
    }

    /// Creates (or opens) the filter `wanted` describes.
    fn create_with(deployment: Deployment, options: StoreOptions, wanted: Meta) -> Result<Self> {
        let key = wanted.key;
        if options.key.is_some_and(|k| k != key) {
            return Err(Error::Mismatch {
                field: "key",
                stored: "<the key in the options>".into(),
                expected: "<another key>".into(),
            });
        }
        Self::check_deployment(&deployment, &options)?;
        let mut options = options;
        // On a cluster every data key gets a slot of its own.
        options.cluster_tags |= deployment.is_cluster();
        let mut wanted = wanted;
        wanted.key_tags = options.cluster_tags;
        let meta_key = options.meta_key();
        let stored = retry_sync(&options.backoff, true, "create filter", || {
            create_or_read(&deployment, &options, &meta_key, &wanted)
        })?;
        let stored = Meta::parse(&meta_key, &stored, Some(key))?;
        wanted.check_against(&stored)?;
        // Generations are random: the stored one is ours only if this call wrote it.
        let created = stored.generation == wanted.generation;
        let store = Self::unopened(deployment, options, stored, created);
        store.with_key("open filter", &store.meta_key.clone(), |_| Ok(()))?;
        Ok(store)
    }

    /// Creates (or opens) a **growing** filter, whose data keys add layers as they fill:
    /// layer `i` holds `first_capacity × factor^i` items at `target_fpr × (1 − tightening) ×
    /// tightening^i` (see [`Growth`]), so no lookup's false-positive rate passes
    /// `target_fpr` however many items arrive. Each data key grows on its own, when its part
    /// of its newest layer is full; every layer of an item lies in the same key, so one key's
    /// commands decide it atomically. Open it through [`SharedFilter`](crate::SharedFilter),
    /// which hashes items itself to find their bits in every layer.
    ///
    /// # Errors
    ///
    /// As for [`create`](Self::create); [`Error::Segmented`] for an invalid growth schedule.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("create_growing example") else { return Ok(()) };
    /// use url_dedup_bloom::{HashKey, SipHash13, sizing::Growth};
    /// use url_dedup_redis::{RedisSegmentStore, StoreOptions};
    ///
    /// let key = HashKey::from_bytes([1; 16]);
    /// let store = RedisSegmentStore::create_growing::<SipHash13>(
    ///     &server.url(), StoreOptions::new("g"), 1_000, 0.01, Growth::default(), key)?;
    /// assert!(store.is_growing());
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// ```
    pub fn create_growing<H: ItemHasher>(
        url: &str,
        options: StoreOptions,
        first_capacity: u64,
        target_fpr: f64,
        growth: Growth,
        key: HashKey,
    ) -> Result<Self> {
        growth.validate().map_err(|e| Error::Segmented(e.into()))?;
        let (capacity, fpr) = growth.layer(first_capacity, target_fpr, 0);
        let sized = Self::layout_within(capacity, fpr, options.hashes)?;
        let deployment = Deployment::open(url, &options.backoff)?;
        let per_key = options
            .segments_per_key
            .unwrap_or_else(|| default_segments_per_key(sized, deployment.is_cluster()))
            .clamp(1, sized.segments());
        // Every layer has the same number of segments in each key, so an item's segment in
        // any layer is in the key of its segment in the first (see `LayerShape`).
        let keys = sized.segments().div_ceil(per_key);
        let per_key = sized.segments().div_ceil(keys);
        let layout = Layout::new(keys * per_key, sized.segment_bits(), sized.hashes())?;
        let wanted = Meta {
            layout,
            segments_per_key: per_key,
            algorithm: H::ALGORITHM,
            key,
            expected_items: first_capacity,
            generation: new_generation(),
            key_in_redis: options.key.is_none(),
            key_tags: options.cluster_tags,
            growth: Some(MetaGrowth {
                first_capacity,
                target_fpr,
                growth,
                hashes: options.hashes,
            }),
        };
        Self::create_with(deployment, options, wanted)
    }

    /// The generation as the 8 bytes a data key starts with (what the scripts compare).
    pub(crate) fn generation_bytes(&self) -> [u8; 8] {
        self.meta.generation.to_be_bytes()
    }

    /// The filter's hash key (every process sharing the filter hashes with it).
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("store key example") else { return Ok(()) };
    /// use url_dedup_bloom::{HashKey, SipHash13};
    /// use url_dedup_redis::{RedisSegmentStore, StoreOptions};
    ///
    /// let layout = RedisSegmentStore::layout_for(1_000, 0.01)?;
    /// let key = HashKey::from_bytes([4; 16]);
    /// let store = RedisSegmentStore::create::<SipHash13>(&server.url(), StoreOptions::new("k"), layout, key, 1_000)?;
    /// assert_eq!(store.key(), key);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// ```
    pub fn key(&self) -> HashKey {
        self.meta.key
    }

    /// `MOVED` and `ASK` redirections this store has followed: on a Redis Cluster, the slots
    /// that moved under it (0 on a single server).
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("redirections example") else { return Ok(()) };
    /// use url_dedup_bloom::{HashKey, SipHash13};
    /// use url_dedup_redis::{RedisSegmentStore, StoreOptions};
    ///
    /// let layout = RedisSegmentStore::layout_for(1_000, 0.01)?;
    /// let store = RedisSegmentStore::create::<SipHash13>(&server.url(), StoreOptions::new("r"), layout, HashKey::random(), 1_000)?;
    /// assert_eq!(store.redirections(), 0);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// ```
    pub fn redirections(&self) -> u64 {
        self.redirections.load(Ordering::Relaxed)
    }

    /// The schedule of a growing filter.
    pub(crate) fn growth_plan(&self) -> Option<MetaGrowth> {
        self.meta.growth
    }

    /// Whether the filter adds layers as it fills ([`create_growing`](Self::create_growing)).
    ///
    /// # Examples
    ///
    /// See [`create_growing`](Self::create_growing).
    pub fn is_growing(&self) -> bool {
        self.meta.growth.is_some()
    }

    /// The shape of layer `index` (layer 0 is the filter's [`Layout`]).
    pub(crate) fn layer(&self, index: u32) -> Result<LayerShape> {
        let mut shapes = self
            .shapes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while shapes.len() <= index as usize {
            let Some(growth) = self.meta.growth else {
                return Err(Error::Segmented(
                    url_dedup_segmented::Error::InvalidParameters("a fixed filter has one layer"),
                ));
            };
            let previous = *shapes.last().unwrap_or(&shapes[0]);
            let j = shapes.len() as u32;
            let (capacity, fpr) = growth
                .growth
                .layer(growth.first_capacity, growth.target_fpr, j);
            let sized = Self::layout_within(capacity, fpr, growth.hashes)?;
            let keys = self.data_keys();
            let per_key = sized.segments().div_ceil(keys);
            let layout = Layout::new(keys * per_key, sized.segment_bits(), sized.hashes())?;
            shapes.push(LayerShape {
                layout,
                per_key,
                start: previous.start + previous.per_key * previous.layout.segment_bits(),
                share: capacity.div_ceil(keys),
            });
        }
        Ok(shapes[index as usize])
    }

    /// [`create`](Self::create), wrapped in a filter that hashes with `hasher`.
    ///
    /// # Errors
    ///
    /// As for [`create`](Self::create).
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("create_filter example") else { return Ok(()) };
    /// use url_dedup_bloom::{ItemHasher, SipHash13};
    /// use url_dedup_redis::{RedisSegmentStore, StoreOptions};
    ///
    /// let layout = RedisSegmentStore::layout_for(10_000, 0.01)?;
    /// let f = RedisSegmentStore::create_filter(&server.url(), StoreOptions::new("f"), layout, SipHash13::random(), 10_000)?;
    /// assert!(f.try_check_and_insert("https://example.com/")?);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// ```
    pub fn create_filter<H: ItemHasher>(
        url: &str,
        options: StoreOptions,
        layout: Layout,
        hasher: H,
        expected_items: u64,
    ) -> Result<SegmentedBloomFilter<H, Self>> {
        let store = Self::create::<H>(url, options, layout, hasher.key(), expected_items)?;
        Ok(SegmentedBloomFilter::with_store(
            store,
            hasher,
            expected_items,
        ))
    }

    /// Opens an existing filter from its metadata alone: layout, algorithm and key.
    ///
    /// # Errors
    ///
    /// [`Error::NoFilter`] when the prefix holds no filter; [`Error::Mismatch`] when it was
    /// made with another hash algorithm than `H`; [`Error::Corrupt`] for unreadable metadata.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("join example") else { return };
    /// use url_dedup_bloom::SipHash13;
    /// use url_dedup_redis::{Error, RedisSegmentStore, StoreOptions};
    ///
    /// let err = RedisSegmentStore::join::<SipHash13>(&server.url(), StoreOptions::new("none")).unwrap_err();
    /// assert!(matches!(err, Error::NoFilter { .. }));
    /// ```
    pub fn join<H: ItemHasher>(
        url: &str,
        options: StoreOptions,
    ) -> Result<SegmentedBloomFilter<H, Self>> {
        let deployment = Deployment::open(url, &options.backoff)?;
        Self::check_deployment(&deployment, &options)?;
        let meta_key = options.meta_key();
        let fields: Vec<(String, String)> =
            retry_sync(&options.backoff, true, "read filter metadata", || {
                on_key(&deployment, &options.backoff, &meta_key, |conn| {
                    redis::cmd("HGETALL").arg(&meta_key).query(conn)
                })
            })?;
        if fields.is_empty() {
            return Err(Error::NoFilter { key: meta_key });
        }
        let meta = Meta::parse(&meta_key, &fields, options.key)?;
        if let Some(wanted) = options.segments_per_key
            && wanted != meta.segments_per_key
        {
            return Err(Error::Mismatch {
                field: "segments_per_key",
                stored: meta.segments_per_key.to_string(),
                expected: wanted.to_string(),
            });
        }
        if meta.algorithm != H::ALGORITHM {
            return Err(Error::Mismatch {
                field: "algorithm",
                stored: meta.algorithm.0.to_string(),
                expected: H::ALGORITHM.0.to_string(),
            });
        }
        let expected = meta.expected_items;
        let hasher = H::from_key(meta.key);
        let mut options = options;
        options.cluster_tags = meta.key_tags;
        let store = Self::unopened(deployment, options, meta, false);
        store.with_key("open filter", &store.meta_key.clone(), |_| Ok(()))?;
        Ok(SegmentedBloomFilter::with_store(store, hasher, expected))
    }

    /// Refuses what a cluster cannot do: document 003's optimistic mode `WATCH`es many keys
    /// at once, which a cluster allows only within one slot.
    fn check_deployment(deployment: &Deployment, options: &StoreOptions) -> Result<()> {
        if deployment.is_cluster() && options.mode == WriteMode::Optimistic {
            return Err(Error::Mismatch {
                field: "mode",
                stored: "a Redis Cluster".into(),
                expected: "WriteMode::Optimistic, which needs one server".into(),
            });
        }
        Ok(())
    }

    /// A store over `meta`, not yet checked against Redis; `created` when this handle wrote
    /// the metadata.
    fn unopened(deployment: Deployment, options: StoreOptions, meta: Meta, created: bool) -> Self {
        let pool = (0..options.connections.max(1))
            .map(|_| Mutex::new(Vec::new()))
            .collect();
        let bits = meta.layout.bits();
        let known = (options.mode == WriteMode::Bitfield
            && bits.div_ceil(8) <= options.known_bits_limit)
            .then(|| KnownBits::new(bits))
            .flatten();
        let keys = meta.layout.segments().div_ceil(meta.segments_per_key) as usize;
        let first = LayerShape {
            layout: meta.layout,
            per_key: meta.segments_per_key,
            start: HEADER_BITS,
            share: meta
                .growth
                .map_or(meta.expected_items, |g| g.first_capacity)
                .div_ceil(keys.max(1) as u64),
        };
        Self {
            shapes: Mutex::new(vec![first]),
            deployment,
            meta_key: options.meta_key(),
            options,
            meta,
            pool,
            next: AtomicUsize::new(0),
            known,
            bits_sent: AtomicU64::new(0),
            bits_skipped: AtomicU64::new(0),
            writes_seen: (0..keys).map(|_| AtomicI64::new(0)).collect(),
            witnesses: (0..keys).map(|_| AtomicU64::new(0)).collect(),
            layers_seen: (0..keys)
                .map(|_| std::sync::atomic::AtomicU32::new(1))
                .collect(),
            pending_admitted: (0..keys).map(|_| AtomicU64::new(0)).collect(),
            redirections: AtomicU64::new(0),
            opened: Instant::now(),
            verified: AtomicU64::new(0),
            verify_turn: AtomicU64::new(0),
            created,
        }
    }

    /// Whether this handle created the filter in Redis, rather than finding it there: of
    /// processes opening the same prefix at once, exactly one gets `true`. A caller that
    /// expected to find earlier data (a second run of a job) and gets `true` is looking at a
    /// Redis that lost it: a restart without persistence, a `FLUSHALL`, another server.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("created example") else { return Ok(()) };
    /// use url_dedup_bloom::{SipHash13, ItemHasher};
    /// use url_dedup_redis::{RedisSegmentStore, StoreOptions};
    ///
    /// let layout = RedisSegmentStore::layout_for(1_000, 0.01)?;
    /// let key = SipHash13::random().key();
    /// let first = RedisSegmentStore::create::<SipHash13>(&server.url(), StoreOptions::new("c"), layout, key, 1_000)?;
    /// let second = RedisSegmentStore::create::<SipHash13>(&server.url(), StoreOptions::new("c"), layout, key, 1_000)?;
    /// let joined = RedisSegmentStore::join::<SipHash13>(&server.url(), StoreOptions::new("c"))?;
    /// assert!(first.created());
    /// assert!(!second.created() && !joined.store().created());
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// ```
    pub fn created(&self) -> bool {
        self.created
    }

    /// The filter's generation: random, chosen when it was created, the same for every
    /// process that shares it (see [`Error::StoreReset`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("generation example") else { return Ok(()) };
    /// use url_dedup_bloom::{SipHash13, ItemHasher};
    /// use url_dedup_redis::{RedisSegmentStore, StoreOptions};
    ///
    /// let layout = RedisSegmentStore::layout_for(1_000, 0.01)?;
    /// let a = RedisSegmentStore::create_filter(&server.url(), StoreOptions::new("g"), layout, SipHash13::random(), 1_000)?;
    /// let b = RedisSegmentStore::join::<SipHash13>(&server.url(), StoreOptions::new("g"))?;
    /// assert_eq!(a.store().generation(), b.store().generation());
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// ```
    pub fn generation(&self) -> i64 {
        self.meta.generation
    }

    /// The options the store was opened with.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("options example") else { return Ok(()) };
    /// use url_dedup_bloom::{ItemHasher, SipHash13};
    /// use url_dedup_redis::{RedisSegmentStore, StoreOptions};
    /// let layout = RedisSegmentStore::layout_for(1_000, 0.01)?;
    /// let f = RedisSegmentStore::create_filter(&server.url(), StoreOptions::new("o"), layout, SipHash13::random(), 1_000)?;
    /// assert_eq!(f.store().options().prefix, "o");
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// ```
    pub fn options(&self) -> &StoreOptions {
        &self.options
    }

    /// Bit operations sent to Redis and left out thanks to the cache of known-set bits (see
    /// [`StoreOptions::known_bits_limit`]), counted over the store's successful batches.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("known_bits_stats example") else { return Ok(()) };
    /// use url_dedup_bloom::{ItemHasher, SipHash13};
    /// use url_dedup_redis::{RedisSegmentStore, StoreOptions};
    ///
    /// let layout = RedisSegmentStore::layout_for(1_000, 0.01)?;
    /// let f = RedisSegmentStore::create_filter(&server.url(), StoreOptions::new("k"), layout, SipHash13::random(), 1_000)?;
    /// assert!(f.try_check_and_insert("https://example.com/")?);
    /// let before = f.store().known_bits_stats();
    /// assert!(before.bytes > 0);
    ///
    /// // Every bit of this URL is known set: the answer comes without asking Redis.
    /// assert!(!f.try_check_and_insert("https://example.com/")?);
    /// let after = f.store().known_bits_stats();
    /// assert_eq!(after.sent, before.sent);
    /// assert_eq!(after.skipped, before.skipped + u64::from(layout.hashes()));
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// ```
    pub fn known_bits_stats(&self) -> KnownBitsStats {
        KnownBitsStats {
            bytes: self.known.as_ref().map_or(0, KnownBits::bytes),
            sent: self.bits_sent.load(Ordering::Relaxed),
            skipped: self.bits_skipped.load(Ordering::Relaxed),
            invalidations: self.known.as_ref().map_or(0, KnownBits::invalidations),
        }
    }

    /// Copies every segment into a new in-memory store (`GETRANGE` in 1 MiB pieces). Wrap it
    /// with [`SegmentedBloomFilter::with_store`] and the hasher to write a snapshot file.
    ///
    /// Segments are read one after another, not at one instant: bits set during the copy may
    /// or may not be in it, as with any online backup of a filter that only gains bits.
    ///
    /// # Errors
    ///
    /// [`Error::Segmented`] if the memory cannot be allocated; [`Error::Unavailable`] when Redis
    /// stays unreachable; [`Error::Corrupt`] if a segment key holds more than a segment.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("to_memory example") else { return Ok(()) };
    /// use url_dedup_bloom::{ItemHasher, SipHash13};
    /// use url_dedup_redis::{RedisSegmentStore, StoreOptions};
    /// use url_dedup_segmented::SegmentedBloomFilter;
    ///
    /// let layout = RedisSegmentStore::layout_for(1_000, 0.01)?;
    /// let hasher = SipHash13::random();
    /// let shared = RedisSegmentStore::create_filter(&server.url(), StoreOptions::new("b"), layout, hasher.clone(), 1_000)?;
    /// shared.try_check_and_insert("https://example.com/")?;
    ///
    /// let copy = SegmentedBloomFilter::with_store(shared.store().to_memory()?, hasher, 1_000);
    /// assert!(copy.contains("https://example.com/"));
    /// let mut file = Vec::new();
    /// copy.write_to(&mut file)?; // the workspace's checksummed snapshot format
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_memory(&self) -> Result<MemoryStore> {
        let memory = MemoryStore::new(self.meta.layout)?;
        let per_segment = self.meta.layout.segment_words() as usize;
        let mut words = Vec::new();
        // One key at a time: a key's segments are one contiguous byte range in Redis.
        for index in 0..self.data_keys() {
            let first = index * self.meta.segments_per_key;
            words.clear();
            self.read_segments(first, self.key_segments(index), &mut words)?;
            for (segment, part) in (first..).zip(words.chunks(per_segment)) {
                memory.merge_segment(segment, part)?;
            }
        }
        Ok(memory)
    }

    /// ORs every non-empty segment of `memory` into Redis (a union: nothing already admitted
    /// is forgotten). Returns how many segments were written. Use it to seed a shared filter
    /// from a snapshot file.
    ///
    /// # Errors
    ///
    /// [`Error::Mismatch`] when `memory` has another layout; [`Error::Unavailable`] when Redis
    /// stays unreachable.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("merge_from_memory example") else { return Ok(()) };
    /// use url_dedup_bloom::{ItemHasher, SipHash13};
    /// use url_dedup_redis::{RedisSegmentStore, StoreOptions};
    /// use url_dedup_segmented::{MemoryStore, SegmentedBloomFilter};
    ///
    /// let layout = RedisSegmentStore::layout_for(1_000, 0.01)?;
    /// let hasher = SipHash13::random();
    /// let local = SegmentedBloomFilter::with_store(MemoryStore::new(layout)?, hasher.clone(), 1_000);
    /// local.check_and_insert("https://seed.example/");
    ///
    /// let shared = RedisSegmentStore::create_filter(&server.url(), StoreOptions::new("s"), layout, hasher, 1_000)?;
    /// assert_eq!(shared.store().merge_from_memory(local.store())?, 1);
    /// assert!(!shared.try_check_and_insert("https://seed.example/")?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn merge_from_memory(&self, memory: &MemoryStore) -> Result<u64> {
        if memory.layout() != self.meta.layout {
            return Err(Error::Mismatch {
                field: "layout",
                stored: format!("{:?}", self.meta.layout),
                expected: format!("{:?}", memory.layout()),
            });
        }
        let per_segment = self.meta.layout.segment_words() as usize;
        let mut words = Vec::new();
        let mut written = 0;
        // One merge per key, not per segment: each merge writes a helper string as long as the
        // key and ORs the whole key, so per-segment merges cost a key's length each.
        for index in 0..self.data_keys() {
            let first = index * self.meta.segments_per_key;
            words.clear();
            for segment in first..first + self.key_segments(index) {
                memory.read_segment(segment, &mut words)?;
            }
            let nonzero = words
                .chunks(per_segment)
                .filter(|part| part.iter().any(|&w| w != 0))
                .count();
            if nonzero > 0 {
                self.merge_segments(first, &words)?;
                written += nonzero as u64;
            }
        }
        Ok(written)
    }

    /// Runs `f` on a pooled connection, connecting (and checking the metadata) first when
    /// needed, retrying transient failures under the backoff policy. A failed `f` may have
    /// run on the server before its reply was lost; callers that count calls know.
    pub(crate) fn with_connection<T>(
        &self,
        operation: &'static str,
        f: impl FnMut(&mut Live) -> redis::RedisResult<T>,
    ) -> Result<T> {
        self.with_node(operation, 0, f)
    }

    /// Runs `f` on a pooled connection to node `node` (the only node of a single server),
    /// connecting (and checking the metadata) first when needed, retrying transient failures
    /// under the backoff policy. A failed `f` may have run on the server before its reply was
    /// lost; callers that count calls know.
    pub(crate) fn with_node<T>(
        &self,
        operation: &'static str,
        node: usize,
        f: impl FnMut(&mut Live) -> redis::RedisResult<T>,
    ) -> Result<T> {
        match self.with_node_routed(operation, node, f)? {
            Routed::Done(value) => Ok(value),
            Routed::Gone => Err(Error::Redis {
                operation,
                source: RedisError::from((
                    redis::ErrorKind::Client,
                    "the cluster node serves no slot any more",
                )),
            }),
        }
    }

    /// [`with_node`](Self::with_node) that gives up on a cluster node which, after a failure,
    /// no longer serves any slot (it died and a replica took over, or it was removed): the
    /// caller routes again by key. Whatever `f` sent there may have run.
    fn with_node_routed<T>(
        &self,
        operation: &'static str,
        node: usize,
        mut f: impl FnMut(&mut Live) -> redis::RedisResult<T>,
    ) -> Result<Routed<T>> {
        let slot = self.pick();
        let mut guard = slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if guard.len() <= node {
            guard.resize_with(node + 1, || None);
        }
        let mut retry = Retry::new(&self.options.backoff);
        loop {
            let result = match guard[node].as_mut() {
                Some(conn) => f(conn).map_err(Failure::Redis),
                None => match self.fresh_connection(node) {
                    Ok(mut conn) => {
                        let r = f(&mut conn).map_err(Failure::Redis);
                        guard[node] = Some(conn);
                        r
                    }
                    Err(e) => Err(e),
                },
            };
            match result {
                Ok(value) => return Ok(Routed::Done(value)),
                Err(Failure::Fatal(e)) => return Err(e),
                Err(Failure::Redis(e)) => {
                    if is_transient(&e) || e.code() == Some("CLUSTERDOWN") {
                        // The connection may be broken: the next attempt opens a fresh one.
                        guard[node] = None;
                        if self.deployment.is_cluster() {
                            // A failover may be under way: where are the slots now?
                            let _ = self.deployment.refresh(&self.options.backoff);
                            if !self.deployment.serves_any(node) {
                                return Ok(Routed::Gone);
                            }
                        }
                    }
                    std::thread::sleep(retry.failed(operation, e)?);
                }
            }
        }
    }

    /// Runs `f` on the node that serves `key`, following the cluster's redirections: `MOVED`
    /// (the slot moved: the slot map learns it) and `ASK` (the slot is migrating: `ASKING`,
    /// then `f` once more on the node it names). A redirected command did not run, so `f`
    /// runs again safely.
    pub(crate) fn with_key<T>(
        &self,
        operation: &'static str,
        key: &str,
        mut f: impl FnMut(&mut Live) -> redis::RedisResult<T>,
    ) -> Result<T> {
        let mut node = self.deployment.node_of(key.as_bytes());
        let mut asking = false;
        let mut gone = 0;
        while gone < MAX_REDIRECTS {
            let result = self.with_node_routed(operation, node, |live| {
                if asking {
                    redis::cmd("ASKING").query::<()>(&mut live.admin)?;
                }
                f(live)
            });
            let result = match result {
                Ok(Routed::Done(value)) => Ok(value),
                Ok(Routed::Gone) => {
                    gone += 1;
                    node = self.deployment.node_of(key.as_bytes());
                    asking = false;
                    continue;
                }
                Err(e) => Err(e),
            };
            match result {
                Err(Error::Redis { source, .. }) if redirect_of(&source).is_some() => {
                    self.redirections.fetch_add(1, Ordering::Relaxed);
                    match redirect_of(&source) {
                        Some(Redirect::Moved { slot, node: to }) => {
                            node = self.deployment.moved(slot, &to);
                            asking = false;
                        }
                        Some(Redirect::Ask { node: to, .. }) => {
                            node = self.deployment.index_of(&to);
                            asking = true;
                        }
                        None => {}
                    }
                    gone += 1;
                }
                other => return other,
            }
        }
        Err(Error::Redis {
            operation,
            source: RedisError::from((redis::ErrorKind::Client, "too many cluster redirections")),
        })
    }

    fn pick(&self) -> &Mutex<Vec<Option<Live>>> {
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let n = self.pool.len();
        for i in 0..n {
            let slot = &self.pool[(start + i) % n];
            if let Ok(guard) = slot.try_lock() {
                drop(guard);
                return slot;
            }
        }
        &self.pool[start % n]
    }

    /// New connections, after checking that the metadata is still the one this store opened:
    /// missing or of another generation, the filter was reset, and carrying on would admit
    /// again what it had admitted.
    fn fresh_connection(&self, node: usize) -> std::result::Result<Live, Failure> {
        let client = self.deployment.client(node).map_err(Failure::Fatal)?;
        let mut admin = connect(&client, &self.options.backoff).map_err(Failure::Redis)?;
        // The metadata lives on one node: checked when connecting to it (every data key's
        // header holds the generation too, checked by every command).
        if self.deployment.node_of(self.meta_key.as_bytes()) == node {
            self.check_meta(&mut admin)?;
        }
        let backoff = &self.options.backoff;
        let wire = Wire::connect(
            client.get_connection_info(),
            backoff.connect_timeout,
            backoff.response_timeout,
        )
        .map_err(|e| Failure::Redis(e.into()))?;
        // Connected, possibly to a Redis that restarted and lost bits: forget what the old
        // connections saw. Only after connecting, so no bit learned from an older server can
        // outlive this (see `known_bits`).
        if let Some(known) = &self.known {
            known.clear();
        }
        Ok(Live {
            admin,
            wire,
            stamp_key: format!(
                "{}:conn:{:016x}",
                self.options.prefix,
                crate::namespace::random_u64()
            ),
            stamp: 0,
        })
    }

    /// Checks that the metadata is still the one this store opened: missing or of another
    /// generation, the filter was reset, and carrying on would admit again what it had
    /// admitted.
    fn check_meta(&self, admin: &mut Connection) -> std::result::Result<(), Failure> {
        let stored: Vec<(String, String)> = redis::cmd("HGETALL")
            .arg(&self.meta_key)
            .query(admin)
            .map_err(Failure::Redis)?;
        if stored.is_empty() {
            return Err(Failure::Fatal(self.reset("its metadata is gone")));
        }
        let stored =
            Meta::parse(&self.meta_key, &stored, Some(self.meta.key)).map_err(Failure::Fatal)?;
        self.meta.check_against(&stored).map_err(Failure::Fatal)?;
        if stored.generation != self.meta.generation {
            return Err(Failure::Fatal(self.reset(&format!(
                "it was re-created (generation {}, opened as {})",
                stored.generation, self.meta.generation
            ))));
        }
        Ok(())
    }

    /// The error for a probe (the [`SegmentStore`] interface, which sees only first-layer
    /// probes) that meets a data key of more than one layer.
    fn grown(&self, key: u64) -> Error {
        Error::Grown {
            key: self.data_key(key),
        }
    }

    /// The error for a filter found reset; empties the cache of known bits, whose bits may
    /// be gone from Redis.
    pub(crate) fn reset(&self, detail: &str) -> Error {
        if let Some(known) = &self.known {
            known.clear();
        }
        Error::StoreReset {
            what: "filter",
            prefix: self.options.prefix.clone(),
            detail: detail.to_owned(),
        }
    }

    /// What a command sent from now on must find in data key `key`. Read before the command
    /// is sent, since answers on other connections may arrive out of their order of execution.
    pub(crate) fn expect(&self, key: u64) -> Expect {
        Expect {
            floor: self
                .writes_seen
                .get(key as usize)
                .map_or(0, |seen| seen.load(Ordering::Relaxed)),
            witness: self
                .witnesses
                .get(key as usize)
                .map_or(0, |w| w.load(Ordering::Relaxed)),
        }
    }

    /// Notes that this client set the bit at `offset` (past the header) of data key `key`:
    /// the key's witness from now on.
    pub(crate) fn witness(&self, key: u64, offset: u64) {
        if let Some(w) = self.witnesses.get(key as usize) {
            w.store(offset + 1, Ordering::Relaxed);
        }
    }

    /// Checks the values a batch's commands read (per command, in order: generation, write
    /// count, layers, admitted, witness bit) against the generation and what each command
    /// expected (see [`expect`](Self::expect)); returns each command's header.
    pub(crate) fn check_headers(
        &self,
        commands: impl Iterator<Item = (u64, Expect)>,
        headers: &[i64],
    ) -> Result<Vec<KeyHeader>> {
        let mut out = Vec::new();
        for ((key, expect), header) in commands.zip(headers.chunks(HEADER_OPS)) {
            let &[generation, writes, layers, admitted, witnessed] = header else {
                return Err(corrupt(&self.options.prefix, "short BITFIELD header"));
            };
            let floor = expect.floor;
            if generation != self.meta.generation {
                let detail = if generation == 0 {
                    format!("data key {} is gone", self.data_key(key))
                } else {
                    format!("data key {} is of another generation", self.data_key(key))
                };
                return Err(self.reset(&detail));
            }
            if writes < floor {
                return Err(self.reset(&format!(
                    "data key {} went back from {floor} writes to {writes} \
                     (a failover to a replica that missed writes?)",
                    self.data_key(key)
                )));
            }
            if expect.witness != 0 && witnessed == 0 {
                return Err(self.reset(&format!(
                    "a bit this client set in data key {} is 0 again \
                     (a failover to a replica that missed writes?)",
                    self.data_key(key)
                )));
            }
            if let Some(seen) = self.writes_seen.get(key as usize) {
                seen.fetch_max(writes, Ordering::Relaxed);
            }
            let header = KeyHeader {
                key,
                layers: u32::try_from(layers.max(1)).unwrap_or(u32::MAX),
                admitted: u64::try_from(admitted).unwrap_or(0),
            };
            self.note_layers(key, header.layers);
            out.push(header);
        }
        self.verified
            .store(self.opened.elapsed().as_millis() as u64, Ordering::Relaxed);
        Ok(out)
    }

    /// Remembers that data key `key` has at least `layers` layers.
    pub(crate) fn note_layers(&self, key: u64, layers: u32) {
        if let Some(seen) = self.layers_seen.get(key as usize) {
            seen.fetch_max(layers, Ordering::Relaxed);
        }
    }

    /// The layers data key `key` had when this client last met it.
    pub(crate) fn layers_of(&self, key: u64) -> u32 {
        self.layers_seen
            .get(key as usize)
            .map_or(1, |seen| seen.load(Ordering::Relaxed).max(1))
    }

    /// Takes the admissions this client counted on `key` and has not reported yet.
    fn take_pending(&self, key: u64) -> u64 {
        self.pending_admitted
            .get(key as usize)
            .map_or(0, |p| p.swap(0, Ordering::Relaxed))
    }

    /// Counts admissions into `key`'s newest layer, reported with the next command there.
    pub(crate) fn add_pending(&self, key: u64, admitted: u64) {
        if let Some(p) = self.pending_admitted.get(key as usize) {
            p.fetch_add(admitted, Ordering::Relaxed);
        }
    }

    /// Reads data key `key`'s header alone and checks it.
    pub(crate) fn check_key(&self, key: u64) -> Result<KeyHeader> {
        let expect = self.expect(key);
        let data_key = self.data_key(key);
        let values: Vec<Option<i64>> = self.with_key("check filter", &data_key, |live| {
            let mut cmd = redis::cmd("BITFIELD_RO");
            cmd.arg(&data_key);
            header_reads(&mut cmd, expect);
            cmd.query(&mut live.admin)
        })?;
        let header: Vec<i64> = values.into_iter().map(|v| v.unwrap_or(0)).collect();
        let mut checked = self.check_headers(std::iter::once((key, expect)), &header)?;
        checked
            .pop()
            .ok_or_else(|| corrupt(&data_key, "BITFIELD_RO answered no header"))
    }

    /// Whether the store has gone [`VERIFY_EVERY`] without meeting a data key's header.
    fn verification_due(&self) -> bool {
        let now = self.opened.elapsed().as_millis() as u64;
        now.saturating_sub(self.verified.load(Ordering::Relaxed)) >= VERIFY_EVERY.as_millis() as u64
    }

    /// The name of data key `index`.
    pub(crate) fn data_key(&self, index: u64) -> String {
        self.options.data_key(index, self.data_keys())
    }

    /// Number of Redis strings holding segments (of each layer, for a growing filter).
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("data_keys example") else { return Ok(()) };
    /// use url_dedup_bloom::SipHash13;
    /// use url_dedup_redis::{SharedFilter, StoreOptions};
    ///
    /// let seen: SharedFilter<SipHash13> =
    ///     SharedFilter::open(&server.url(), StoreOptions::new("seen"), 10_000, 0.01)?;
    /// assert_eq!(seen.store().data_keys(), 1); // 12 KiB fit in one string
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// ```
    pub fn data_keys(&self) -> u64 {
        self.meta.data_keys()
    }

    /// Segments held by data key `index` (the last one may hold fewer).
    fn key_segments(&self, index: u64) -> u64 {
        self.meta.key_segments(index)
    }

    /// The data key of `segment` and the bit offset where the segment starts in it.
    pub(crate) fn locate(&self, segment: u64) -> (u64, u64) {
        let per_key = self.meta.segments_per_key;
        (
            segment / per_key,
            segment % per_key * self.meta.layout.segment_bits(),
        )
    }

    fn check_probes(&self, probes: &[Probe]) -> Result<()> {
        let segments = self.meta.layout.segments();
        if probes.iter().any(|p| p.segment >= segments) {
            return Err(Error::Segmented(
                url_dedup_segmented::Error::InvalidParameters("probe segment out of range"),
            ));
        }
        Ok(())
    }

    /// The batch's probe indexes grouped by data key, each group in batch order, split so no
    /// command exceeds [`MAX_OPS_PER_COMMAND`].
    fn groups(&self, probes: &[Probe]) -> Vec<(u64, Vec<usize>)> {
        let per_key = self.meta.segments_per_key;
        let per_command = (MAX_OPS_PER_COMMAND / self.meta.layout.hashes() as usize).max(1);
        let mut groups: Vec<(u64, Vec<usize>)> = Vec::new();
        for i in self.key_order(probes) {
            let key = probes[i].segment / per_key;
            match groups.last_mut() {
                Some((k, members)) if *k == key && members.len() < per_command => {
                    members.push(i);
                }
                _ => groups.push((key, vec![i])),
            }
        }
        groups
    }

    /// Appends `BITFIELD key SET u1 <o> 1 ...` (or `BITFIELD_RO key GET u1 <o> ...`) for the
    /// members' bits, offsets computed by the segmented crate's [`Layout::offsets`].
    fn pack_bitfield(
        &self,
        packed: &mut Packed,
        set: bool,
        key: u64,
        members: &[usize],
        probes: &[Probe],
    ) {
        let layout = self.meta.layout;
        let offsets = members.iter().flat_map(|&i| {
            let (_, base) = self.locate(probes[i].segment);
            layout.offsets(probes[i]).map(move |offset| base + offset)
        });
        let ops = members.len() * layout.hashes() as usize;
        let expect = self.expect(key);
        pack_bitfield_command(packed, set, &self.data_key(key), 0, expect, ops, offsets);
    }

    /// The batch's probe indexes sorted by data key; stable, so a repeat sees its first
    /// occurrence.
    fn key_order(&self, probes: &[Probe]) -> Vec<usize> {
        let per_key = self.meta.segments_per_key;
        let mut order: Vec<usize> = (0..probes.len()).collect();
        order.sort_by_key(|&i| probes[i].segment / per_key);
        order
    }

    /// Whether the store talks to a Redis Cluster.
    pub(crate) fn is_cluster(&self) -> bool {
        self.deployment.is_cluster()
    }

    /// Whether every first-layer bit of `probe` is known set on the server: the item is in the
    /// filter whatever layers its key grew since, since an item whose bits are all set in an
    /// older layer is a duplicate (and present) in a grown key too. `false` without a cache.
    /// Call [`verify_if_due`](Self::verify_if_due) for a batch answered this way, so that a
    /// reset is noticed as on the first layers' path.
    pub(crate) fn known_present(&self, probe: Probe) -> bool {
        self.known
            .as_ref()
            .is_some_and(|known| self.all_known(known, std::slice::from_ref(&probe)))
    }

    /// Reads one data key's header (every key in turn) if the store has not met one for
    /// [`VERIFY_EVERY`]: a client whose cache answers every URL still notices a reset.
    pub(crate) fn verify_if_due(&self) -> Result<()> {
        if self.verification_due() {
            // Every key in turn: on a cluster, a failover resets the keys of one master
            // only, and a client whose cache answers everything still hears of it.
            let turn = self.verify_turn.fetch_add(1, Ordering::Relaxed);
            self.check_key(turn % self.data_keys())?;
        }
        Ok(())
    }

    /// Whether every bit of every probe is known set.
    fn all_known(&self, known: &KnownBits, probes: &[Probe]) -> bool {
        let layout = self.meta.layout;
        probes.iter().all(|&probe| {
            let base = probe.segment * layout.segment_bits();
            layout
                .offsets(probe)
                .all(|offset| known.is_set(base + offset))
        })
    }

    /// Plans the batch into `plan` and sends it: the probes in `order`, each with its bits not
    /// known set (items whose bits are all known are left out), grouped by data key, whole
    /// items of at most [`MAX_OPS_PER_COMMAND`] bits per command. Commands are handed to the
    /// socket in pieces, so Redis works on the first ones while later ones are planned.
    /// With a `stamp` (a connection's counter key and this batch's number), the commands run as
    /// one transaction that also sets the counter to the number (see
    /// [`bitfield_batch`](Self::bitfield_batch)). Returns how many `BITFIELD`s were sent.
    #[allow(clippy::too_many_arguments)] // one batch's state, passed rather than stored
    fn plan_and_send(
        &self,
        live: &mut Live,
        set: bool,
        probes: &[Probe],
        order: &[usize],
        known: Option<&KnownBits>,
        stamp: Option<(&str, u64)>,
        plan: &mut Plan,
    ) -> redis::RedisResult<usize> {
        self.plan_commands(probes, order, known, plan);
        let mut packed = std::mem::take(&mut plan.packed);
        packed.clear();
        if stamp.is_some() {
            packed.command(1);
            packed.bulk(b"MULTI");
        }
        for c in 0..plan.commands.len() {
            self.pack_planned(&mut packed, set, plan, c);
            if packed.buf.len() >= SEND_CHUNK {
                live.wire.send(&packed.buf)?;
                packed.clear();
            }
        }
        if let Some((key, number)) = stamp {
            packed.command(5);
            packed.bulk(b"SET");
            packed.bulk(key.as_bytes());
            packed.bulk_u64(number);
            packed.bulk(b"PX");
            packed.bulk_u64(self.options.token_ttl_ms());
            packed.command(1);
            packed.bulk(b"EXEC");
        }
        live.wire.send(&packed.buf)?;
        packed.clear();
        plan.packed = packed;
        Ok(plan.commands.len())
    }

    /// Plans a batch into `plan`: the probes in `order`, each with its bits not known set
    /// (items whose bits are all known are left out), grouped by data key, whole items of at
    /// most [`MAX_OPS_PER_COMMAND`] bits per command.
    fn plan_commands(
        &self,
        probes: &[Probe],
        order: &[usize],
        known: Option<&KnownBits>,
        plan: &mut Plan,
    ) {
        let layout = self.meta.layout;
        let per_key = self.meta.segments_per_key;
        let segment_bits = layout.segment_bits();
        plan.commands.clear();
        plan.floors.clear();
        plan.items.clear();
        plan.offsets.clear();
        plan.skipped = 0;
        // The epoch first: bits read after it are no older than it.
        plan.epoch = known.map_or(0, KnownBits::epoch);
        let mut ops = 0;
        for &i in order {
            let probe = probes[i];
            let key = probe.segment / per_key;
            let base = probe.segment % per_key * segment_bits;
            let key_base = key * per_key * segment_bits;
            let first = plan.offsets.len();
            for offset in layout.offsets(probe) {
                let at = base + offset;
                match known {
                    Some(known) if known.is_set(key_base + at) => plan.skipped += 1,
                    _ => plan.offsets.push(at),
                }
            }
            let sent = plan.offsets.len() - first;
            if sent == 0 {
                continue;
            }
            match plan.commands.last() {
                Some(&(k, _)) if k == key && ops + sent <= MAX_OPS_PER_COMMAND => ops += sent,
                _ => {
                    plan.commands.push((key, 0));
                    plan.floors.push(self.expect(key));
                    ops = sent;
                }
            }
            plan.items.push((i, plan.offsets.len()));
            if let Some(command) = plan.commands.last_mut() {
                command.1 = plan.items.len();
            }
        }
    }

    /// Appends planned command `c` to `packed`: `BITFIELD key SET u1 <o> 1 ...` (`set`) or
    /// `BITFIELD_RO key GET u1 <o> ...`.
    fn pack_planned(&self, packed: &mut Packed, set: bool, plan: &Plan, c: usize) {
        let (key, items_end) = plan.commands[c];
        let items_start = if c == 0 { 0 } else { plan.commands[c - 1].1 };
        let from = plan.offsets_start(items_start);
        let to = plan.items[items_end - 1].1;
        let admitted = if set { self.take_pending(key) } else { 0 };
        pack_bitfield_command(
            packed,
            set,
            &self.data_key(key),
            admitted,
            plan.floors[c],
            to - from,
            plan.offsets[from..to].iter().copied(),
        );
    }

    /// With [`StoreOptions::acknowledge`], waits until enough replicas of the node behind
    /// `live` hold the writes this connection made (`WAIT` on the batch's own connection).
    fn await_replicas(&self, live: &mut Live, node: usize) -> redis::RedisResult<()> {
        let Some(ack) = self.options.acknowledge else {
            return Ok(());
        };
        let mut packed = Packed::default();
        packed.command(3);
        packed.bulk(b"WAIT");
        packed.bulk_u64(u64::from(ack.replicas));
        packed.bulk_u64(ack.timeout.as_millis() as u64);
        match live.wire.pipeline(&packed, 0)?.first() {
            Some(Reply::Int(n)) if *n >= i64::from(ack.replicas) => Ok(()),
            // As a lost reply: the retry finds the batch's token and answers per `Uncertain`.
            Some(Reply::Int(n)) => Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!(
                    "{n} of {} replicas of node {node} acknowledged within {:?}",
                    ack.replicas, ack.timeout
                ),
            )
            .into()),
            other => Err(RedisError::from((
                redis::ErrorKind::Parse,
                "WAIT answered",
                format!("{other:?}"),
            ))),
        }
    }

    /// Sends a planned batch to a cluster: each command to the master serving its key's slot,
    /// one pipeline per master, following `MOVED` and `ASK` for the commands that get them
    /// (they did not run). Fills `headers` and `bits` in command order, as a single server's
    /// reply would; returns, per command, whether an attempt whose reply was lost may have
    /// run it (a cluster batch is no transaction: its keys are in many slots, so only the
    /// commands sent to a node that failed are in doubt).
    fn run_on_cluster(
        &self,
        operation: &'static str,
        set: bool,
        plan: &Plan,
        headers: &mut Vec<i64>,
        bits: &mut Vec<u8>,
    ) -> Result<Vec<bool>> {
        let n = plan.commands.len();
        let mut replies: Vec<Option<(Vec<i64>, Vec<u8>)>> = vec![None; n];
        let mut targets: Vec<(usize, bool)> = plan
            .commands
            .iter()
            .map(|&(key, _)| {
                (
                    self.deployment.node_of(self.data_key(key).as_bytes()),
                    false,
                )
            })
            .collect();
        let mut ran = vec![false; n];
        for _ in 0..MAX_REDIRECTS {
            let mut by_node: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
            for c in (0..n).filter(|&c| replies[c].is_none()) {
                by_node.entry(targets[c].0).or_default().push(c);
            }
            if by_node.is_empty() {
                break;
            }
            for (node, commands) in by_node {
                let asking: Vec<bool> = commands.iter().map(|&c| targets[c].1).collect();
                let mut attempts = 0;
                let answers = self.with_node_routed(operation, node, |live| {
                    attempts += 1;
                    let mut packed = Packed::default();
                    for (&c, &ask) in commands.iter().zip(&asking) {
                        if ask {
                            packed.command(1);
                            packed.bulk(b"ASKING");
                        }
                        self.pack_planned(&mut packed, set, plan, c);
                    }
                    live.wire.send(&packed.buf)?;
                    let answers = live.wire.receive_each(&asking, HEADER_OPS)?;
                    if set {
                        self.await_replicas(live, node)?;
                    }
                    Ok(answers)
                })?;
                if attempts > 1 {
                    commands.iter().for_each(|&c| ran[c] = true);
                }
                let answers = match answers {
                    Routed::Done(answers) => answers,
                    Routed::Gone => {
                        // The node died; what it ran before may be lost or on its replica.
                        for &c in &commands {
                            ran[c] = true;
                            let key = self.data_key(plan.commands[c].0);
                            targets[c] = (self.deployment.node_of(key.as_bytes()), false);
                        }
                        continue;
                    }
                };
                for (&c, answer) in commands.iter().zip(answers) {
                    match answer {
                        Ok(reply) => replies[c] = Some(reply),
                        Err(message) => match Redirect::parse(&message).inspect(|_| {
                            self.redirections.fetch_add(1, Ordering::Relaxed);
                        }) {
                            Some(Redirect::Moved { slot, node: to }) => {
                                targets[c] = (self.deployment.moved(slot, &to), false);
                            }
                            Some(Redirect::Ask { node: to, .. }) => {
                                targets[c] = (self.deployment.index_of(&to), true);
                            }
                            None => {
                                return Err(Error::Redis {
                                    operation,
                                    source: server_error(message),
                                });
                            }
                        },
                    }
                }
            }
        }
        for reply in replies {
            let (h, b) = reply.ok_or_else(|| Error::Redis {
                operation,
                source: RedisError::from((
                    redis::ErrorKind::Client,
                    "too many cluster redirections",
                )),
            })?;
            headers.extend(h);
            bits.extend(b);
        }
        Ok(ran)
    }

    /// `BITFIELD key SET u1 <o> 1 ...` (`set`) or `BITFIELD_RO key GET u1 <o> ...` for the
    /// batch, one pipelined round trip, leaving out bits known set. Fills `answers` with "any
    /// bit was 0" (`set`) or "all bits are 1", learns the bits seen set, and returns whether
    /// the batch was retried (a failed attempt may have run before its reply was lost).
    pub(crate) fn bitfield_batch(
        &self,
        set: bool,
        probes: &[Probe],
        answers: &mut [bool],
    ) -> Result<BatchReport> {
        let known = self.known.as_ref();
        let k = self.meta.layout.hashes() as usize;
        let mut plan = Plan::default();
        let mut bits = Vec::with_capacity(probes.len() * k);
        let mut headers = Vec::new();
        let mut attempts = 0;
        // Whether an attempt whose reply was lost had run.
        let mut ran = false;
        let mut report = BatchReport::default();
        if let Some(known) = known.filter(|k| self.all_known(k, probes)) {
            // Nothing to ask: every item is a duplicate, and present. Unless the store has
            // not met a header for a while: then one key is asked, so that a reset is noticed
            // even by a client that knows every URL it sees.
            plan.epoch = known.epoch();
            plan.skipped = (probes.len() * k) as u64;
            self.verify_if_due()?;
        } else {
            let order = self.key_order(probes);
            plan.items.reserve(probes.len());
            plan.offsets.reserve(probes.len() * k);
            let operation = if set { "check and insert" } else { "contains" };
            // A writing batch runs as one transaction that also sets its connection's counter
            // key to the batch's number (batches on one connection run one after the other).
            // When its reply is lost, the retry reads that key: if it does not hold the
            // number, nothing of the attempt ran (a connection that broke while idle, a server
            // that restarted between batches) and the retry's answers are exact; only a batch
            // that did run has answers no one can know, and [`Uncertain`] decides for it
            // alone. One key per connection, not one per batch: Redis holds a few hundred
            // bytes per client, however many batches they send.
            let mut sent: Option<(String, u64)> = None;
            if self.deployment.is_cluster() {
                // Planned once: the known-bits cache is emptied by a reconnect, but a bit it
                // left out is set on the server whatever happens to the connection.
                self.plan_commands(probes, &order, known, &mut plan);
                report.ran_commands =
                    self.run_on_cluster(operation, set, &plan, &mut headers, &mut bits)?;
            } else {
                self.with_connection(operation, |live| {
                    attempts += 1;
                    if let (Some((key, number)), false) = (&sent, ran) {
                        let last: Option<u64> =
                            redis::cmd("GET").arg(key).query(&mut live.admin)?;
                        ran = last == Some(*number);
                    }
                    let stamp = set.then(|| {
                        live.stamp += 1;
                        (live.stamp_key.clone(), live.stamp)
                    });
                    sent.clone_from(&stamp);
                    // Planned afresh by every attempt: a retry runs on a new connection, which
                    // emptied the cache (bits known from a server that restarted would be wrong).
                    // A failed attempt may have left answers behind.
                    bits.clear();
                    headers.clear();
                    let commands = self.plan_and_send(
                        live,
                        set,
                        probes,
                        &order,
                        known,
                        stamp.as_ref().map(|(key, number)| (key.as_str(), *number)),
                        &mut plan,
                    )?;
                    let received = if stamp.is_some() {
                        live.wire.receive_bitfield_transaction(
                            commands,
                            HEADER_OPS,
                            &mut headers,
                            &mut bits,
                        )?
                    } else {
                        live.wire.receive_bitfields(
                            commands,
                            HEADER_OPS,
                            &mut headers,
                            &mut bits,
                        )?
                    };
                    received.map_err(server_error)?;
                    if set {
                        self.await_replicas(live, 0)?;
                    }
                    Ok(())
                })?;
            }
            let met = self.check_headers(
                plan.commands
                    .iter()
                    .map(|&(key, _)| key)
                    .zip(plan.floors.iter().copied()),
                &headers,
            )?;
            let mut start = 0;
            for (header, &(_, items_end)) in met.into_iter().zip(&plan.commands) {
                let members = plan.items[start..items_end]
                    .iter()
                    .map(|&(i, _)| i)
                    .collect();
                report.commands.push((header, members));
                start = items_end;
            }
        }
        if bits.len() != plan.offsets.len() {
            return Err(corrupt(
                &self.options.prefix,
                format!(
                    "BITFIELD answered {} values, not {}",
                    bits.len(),
                    plan.offsets.len()
                ),
            ));
        }
        // Items left out have every bit known set: a duplicate, and present.
        answers.fill(!set);
        for (n, &(i, end)) in plan.items.iter().enumerate() {
            let olds = &bits[plan.offsets_start(n)..end];
            answers[i] = if set {
                olds.contains(&0)
            } else {
                olds.iter().all(|&b| b == 1)
            };
        }
        if set {
            // Each key's witness: the last bit its command set (1 from now on, whatever it
            // was before).
            for &(key, items_end) in &plan.commands {
                self.witness(key, plan.offsets[plan.items[items_end - 1].1 - 1]);
            }
        }
        if let Some(known) = known.filter(|_| !bits.is_empty()) {
            // After SET every bit sent is 1, whatever it was; after GET those answered 1 are.
            // Not if a connection was opened since planning: the answers may be the old one's.
            known.learn(
                plan.epoch,
                plan.global_bits(self.meta.segments_per_key * self.meta.layout.segment_bits())
                    .zip(&bits)
                    .filter(|&(_, &b)| set || b == 1)
                    .map(|(bit, _)| bit),
            );
        }
        self.bits_sent
            .fetch_add(plan.offsets.len() as u64, Ordering::Relaxed);
        self.bits_skipped.fetch_add(plan.skipped, Ordering::Relaxed);
        report.ran = ran;
        Ok(report)
    }

    fn optimistic_check_and_insert(&self, probes: &[Probe], new: &mut [bool]) -> Result<bool> {
        let groups = self.groups(probes);
        let layout = self.meta.layout;
        let k = layout.hashes() as usize;
        let mut read = Packed::default();
        read.command(1 + groups.len());
        read.bulk(b"WATCH");
        for (key, _) in &groups {
            read.bulk(self.data_key(*key).as_bytes());
        }
        for (key, members) in &groups {
            self.pack_bitfield(&mut read, false, *key, members, probes);
        }
        let mut write = Packed::default();
        let mut uncertain = false;
        let mut headers = Vec::new();
        for round in 0u32.. {
            if round >= 1_000 {
                return Err(Error::Contended { attempts: round });
            }
            // Tries of this round: more than one means a try failed on the wire, possibly
            // after its EXEC ran. A conflict (EXEC answered nil) is a new round, not a failure.
            let mut tries = 0u32;
            let floors: Vec<Expect> = groups.iter().map(|&(key, _)| self.expect(key)).collect();
            let committed = self.with_connection("optimistic check and insert", |live| {
                tries += 1;
                // The WATCH reply is skipped; one reply per BITFIELD_RO follows.
                let replies = checked(live.wire.pipeline(&read, 1)?)?;
                write.clear();
                write.command(1);
                write.bulk(b"MULTI");
                // Bits this batch sets, so a repeat later in the batch is not new again.
                let mut set_here: std::collections::HashSet<(u64, u64)> = Default::default();
                let mut any = false;
                headers.clear();
                for ((key, members), reply) in groups.iter().zip(replies) {
                    let values =
                        int_array(reply, HEADER_OPS + k * members.len(), &self.options.prefix)
                            .map_err(|e| {
                                RedisError::from((
                                    redis::ErrorKind::Parse,
                                    "bad reply",
                                    e.to_string(),
                                ))
                            })?;
                    let (header, bits) = values.split_at(HEADER_OPS);
                    headers.extend_from_slice(header);
                    let mut fresh_members = Vec::new();
                    for (&i, old) in members.iter().zip(bits.chunks(k)) {
                        let (_, base) = self.locate(probes[i].segment);
                        let offsets: Vec<u64> =
                            layout.offsets(probes[i]).map(|o| base + o).collect();
                        let fresh = offsets
                            .iter()
                            .zip(old)
                            .any(|(&o, &b)| b == 0 && !set_here.contains(&(*key, o)));
                        new[i] = fresh;
                        if fresh {
                            set_here.extend(offsets.iter().map(|&o| (*key, o)));
                            fresh_members.push(i);
                        }
                    }
                    if !fresh_members.is_empty() {
                        any = true;
                        self.pack_bitfield(&mut write, true, *key, &fresh_members, probes);
                    }
                }
                if !any {
                    write.clear();
                    write.command(1);
                    write.bulk(b"UNWATCH");
                    checked(live.wire.pipeline(&write, 0)?)?;
                    return Ok(true);
                }
                write.command(1);
                write.bulk(b"EXEC");
                // Skip MULTI's +OK and each +QUEUED; EXEC answers nil when a watched key moved.
                let exec = checked(live.wire.pipeline(&write, write.commands - 1)?)?;
                Ok(!matches!(exec.first(), Some(Reply::Nil) | None))
            })?;
            uncertain |= tries > 1;
            self.check_headers(
                groups
                    .iter()
                    .map(|&(key, _)| key)
                    .zip(floors.iter().copied()),
                &headers,
            )?;
            if committed {
                break;
            }
        }
        Ok(uncertain)
    }
}

/// What a client expects of a data key, checked by every command on it: the key's write
/// count must be at least the highest this client has seen (`floor`), and the witness, the
/// last bit this client's commands set there (its offset past the header, plus one; 0 for
/// none), must still be 1. Bits are never cleared, so a 0 there means the key lost writes this
/// client saw done: a failover to a replica that missed them, or an older copy restored. The
/// write count alone can miss that, since other clients' writes after the loss raise it again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Expect {
    pub(crate) floor: i64,
    pub(crate) witness: u64,
}

/// Appends the reads of a data key's header and of the client's witness bit to a
/// `BITFIELD_RO` command, in the order [`RedisSegmentStore::check_headers`] takes them.
pub(crate) fn header_reads(cmd: &mut redis::Cmd, expect: Expect) {
    for at in [GENERATION_AT, WRITES_AT, LAYERS_AT, ADMITTED_AT] {
        cmd.arg("GET").arg("i64").arg(at);
    }
    cmd.arg("GET").arg("u1").arg(witness_at(expect));
}

/// Where a command reads the witness bit: without one, any bit (the answer is not checked).
fn witness_at(expect: Expect) -> u64 {
    match expect.witness {
        0 => 0,
        w => HEADER_BITS + w - 1,
    }
}

/// What a command read from its data key's header.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KeyHeader {
    pub(crate) key: u64,
    /// Layers the key has (a growing filter adds them key by key).
    pub(crate) layers: u32,
    /// Items admitted into its newest layer, as counted so far.
    pub(crate) admitted: u64,
}

/// What one batch of `BITFIELD`s met beyond its answers.
#[derive(Debug, Default)]
pub(crate) struct BatchReport {
    /// Whether an attempt whose reply was lost had run (a single server's batch is one
    /// transaction: all of it or none).
    pub(crate) ran: bool,
    /// On a cluster, per command: whether an attempt whose reply was lost may have run it.
    pub(crate) ran_commands: Vec<bool>,
    /// Per command: its key's header and the probe indices it carried.
    pub(crate) commands: Vec<(KeyHeader, Vec<usize>)>,
}

impl BatchReport {
    /// Per probe of a batch of `probes`: whether its answer is in doubt, because an attempt
    /// that carried it may have run before its reply was lost.
    pub(crate) fn uncertain(&self, probes: usize) -> Vec<bool> {
        let mut doubt = vec![self.ran; probes];
        for ((_, members), _) in self
            .commands
            .iter()
            .zip(&self.ran_commands)
            .filter(|&(_, &ran)| ran)
        {
            members.iter().for_each(|&m| doubt[m] = true);
        }
        doubt
    }
}

/// One batch's `BITFIELD` commands, built by [`RedisSegmentStore::plan_and_send`].
#[derive(Default)]
struct Plan {
    /// Per command: its data key and the end of its items in `items`.
    commands: Vec<(u64, usize)>,
    /// Per command: what its key must show (see [`RedisSegmentStore::expect`]).
    floors: Vec<Expect>,
    /// Per item sent, in command order: its probe index and the end of its bits in `offsets`.
    items: Vec<(usize, usize)>,
    /// The bits to send, as offsets inside their data key.
    offsets: Vec<u64>,
    /// Bits left out because they were known set.
    skipped: u64,
    /// The cache's epoch when the plan was made.
    epoch: u64,
    /// Commands packed and not yet sent (kept for its buffer).
    packed: Packed,
}

impl Plan {
    /// Where item `n`'s bits start in `offsets`.
    fn offsets_start(&self, n: usize) -> usize {
        if n == 0 { 0 } else { self.items[n - 1].1 }
    }

    /// The global position (`segment * segment_bits + offset`) of each bit in `offsets`,
    /// given the bits per data key.
    fn global_bits(&self, key_bits: u64) -> impl Iterator<Item = u64> + '_ {
        let mut item = 0;
        self.commands.iter().flat_map(move |&(key, items_end)| {
            let from = self.offsets_start(item);
            let to = self.items[items_end - 1].1;
            item = items_end;
            self.offsets[from..to]
                .iter()
                .map(move |&at| key * key_bits + at)
        })
    }
}

/// The connections of one pool slot: `admin` (the `redis` crate) for metadata and segment
/// transfers, `wire` for the batches.
pub(crate) struct Live {
    pub(crate) admin: Connection,
    wire: Wire,
    /// This connection's batch counter key (`<prefix>:conn:<random>`): each writing batch's
    /// transaction sets it to the batch's number (see [`RedisSegmentStore::bitfield_batch`]).
    stamp_key: String,
    /// Writing batches sent on this connection.
    stamp: u64,
}

impl Live {
    /// A key and number that a script writing on this connection sets (`SET key number`)
    /// and checks first, so that its retry knows whether the lost attempt ran: this
    /// connection's counter key and its next number on a single Redis; on a cluster, where a
    /// script touches only keys of one slot, a fresh token key in the slot of `data_key`.
    pub(crate) fn next_stamp(&mut self, cluster: bool, data_key: &str) -> (String, u64) {
        self.stamp += 1;
        if cluster {
            let token = format!("{data_key}:t:{:016x}", crate::namespace::random_u64());
            (token, self.stamp)
        } else {
            (self.stamp_key.clone(), self.stamp)
        }
    }
}

/// What [`RedisSegmentStore::with_node_routed`] came to.
enum Routed<T> {
    Done(T),
    /// The node serves no slot any more: route again.
    Gone,
}

enum Failure {
    Redis(RedisError),
    Fatal(Error),
}

impl SegmentStore for RedisSegmentStore {
    type Error = Error;

    fn layout(&self) -> Layout {
        self.meta.layout
    }

    fn check_and_insert(&self, probes: &[Probe], new: &mut Vec<bool>) -> Result<()> {
        if probes.is_empty() {
            return Ok(());
        }
        self.check_probes(probes)?;
        let mut answers = vec![false; probes.len()];
        let uncertain = match self.options.mode {
            WriteMode::Bitfield => {
                let report = self.bitfield_batch(true, probes, &mut answers)?;
                let doubt = report.uncertain(probes.len());
                for (header, members) in &report.commands {
                    if header.layers > 1 {
                        return Err(self.grown(header.key));
                    }
                    let new = members.iter().filter(|&&i| answers[i]).count() as u64;
                    self.add_pending(header.key, new);
                }
                doubt
            }
            WriteMode::Optimistic => {
                let ran = self.optimistic_check_and_insert(probes, &mut answers)?;
                vec![ran; probes.len()]
            }
        };
        if self.options.uncertain == Uncertain::AssumeNew {
            for (answer, doubt) in answers.iter_mut().zip(uncertain) {
                *answer |= doubt;
            }
        }
        new.extend_from_slice(&answers);
        Ok(())
    }

    fn contains(&self, probes: &[Probe], found: &mut Vec<bool>) -> Result<()> {
        if probes.is_empty() {
            return Ok(());
        }
        self.check_probes(probes)?;
        let mut answers = vec![true; probes.len()];
        let report = self.bitfield_batch(false, probes, &mut answers)?;
        for (header, members) in &report.commands {
            // Found in the first layer is found; not found there may be in another.
            if header.layers > 1 && members.iter().any(|&i| !answers[i]) {
                return Err(self.grown(header.key));
            }
        }
        found.extend_from_slice(&answers);
        Ok(())
    }

    fn read_segment(&self, segment: u64, out: &mut Vec<u64>) -> Result<()> {
        self.read_segments(segment, 1, out)
    }

    fn merge_segment(&self, segment: u64, words: &[u64]) -> Result<()> {
        if words.len() as u64 > self.meta.layout.segment_words() {
            return Err(Error::Segmented(
                url_dedup_segmented::Error::InvalidParameters("more words than a segment holds"),
            ));
        }
        self.merge_segments(segment, words)
    }
}

impl RedisSegmentStore {
    /// The data key index and the key's first bit of `count` (at least 1) consecutive
    /// segments from `first`: an error unless all are in range and in one data key.
    fn span(&self, first: u64, count: u64) -> Result<(u64, u64)> {
        let last = first.saturating_add(count.max(1) - 1);
        self.check_probes(&[first, last].map(|segment| Probe { segment, seed: 0 }))?;
        let (index, base_bits) = self.locate(first);
        if self.locate(last).0 != index {
            return Err(Error::Segmented(
                url_dedup_segmented::Error::InvalidParameters("segments span two data keys"),
            ));
        }
        Ok((index, base_bits))
    }

    /// Appends the words of `count` consecutive segments from `first`, all in one data key,
    /// read with `GETRANGE` in chunks.
    fn read_segments(&self, first: u64, count: u64, out: &mut Vec<u64>) -> Result<()> {
        let (index, base_bits) = self.span(first, count)?;
        let bytes = (self.meta.layout.segment_bytes() * count).min(MAX_SEGMENT_BYTES);
        let data = self.read_region(index, (HEADER_BITS + base_bits) / 8, bytes)?;
        let mut words = vec![0u64; (self.meta.layout.segment_words() * count) as usize];
        bit_order::bytes_to_words(&data, &mut words)?;
        out.extend_from_slice(&words);
        Ok(())
    }

    /// `bytes` bytes of data key `index` from byte `start`, read with `GETRANGE` in chunks;
    /// fewer when the string is shorter (the rest reads as zeros, as in Redis).
    pub(crate) fn read_region(&self, index: u64, start: u64, bytes: u64) -> Result<Vec<u8>> {
        let key = self.data_key(index);
        let mut data = Vec::with_capacity(bytes.min(MAX_SEGMENT_BYTES) as usize);
        while (data.len() as u64) < bytes {
            let from = start + data.len() as u64;
            let to = (from + TRANSFER_CHUNK).min(start + bytes) - 1;
            let piece: Vec<u8> = self.with_key("read segment", &key, |live| {
                redis::cmd("GETRANGE")
                    .arg(&key)
                    .arg(from)
                    .arg(to)
                    .query(&mut live.admin)
            })?;
            if piece.is_empty() {
                break;
            }
            data.extend_from_slice(&piece);
        }
        if data.len() as u64 > bytes {
            return Err(corrupt(&key, "GETRANGE returned more than asked"));
        }
        Ok(data)
    }

    /// ORs `words` into consecutive segments from `first`, all in one data key.
    fn merge_segments(&self, first: u64, words: &[u64]) -> Result<()> {
        let per_segment = self.meta.layout.segment_words();
        let count = (words.len() as u64).div_ceil(per_segment);
        let (index, base_bits) = self.span(first, count)?;
        self.merge_region(
            index,
            (HEADER_BITS + base_bits) / 8,
            &bit_order::words_to_bytes(words),
        )
    }

    /// ORs `bytes` into data key `index` from byte `start`, in one transaction: the bytes go
    /// to a helper key at the same offsets, then `BITOP OR`.
    pub(crate) fn merge_region(&self, index: u64, start: u64, bytes: &[u8]) -> Result<()> {
        let key = self.data_key(index);
        // The helper key shares the data key's hash tag, so the transaction stays in one slot.
        let scratch = format!("{key}:merge");
        let start = start as usize;
        self.with_key("merge segment", &key, |live| {
            let mut pipe = redis::pipe();
            pipe.atomic();
            pipe.cmd("DEL").arg(&scratch).ignore();
            for (n, piece) in bytes.chunks(TRANSFER_CHUNK as usize).enumerate() {
                let at = start + n * TRANSFER_CHUNK as usize;
                pipe.cmd("SETRANGE")
                    .arg(&scratch)
                    .arg(at)
                    .arg(piece)
                    .ignore();
            }
            // OR in place: bits already set stay set, so merging never loses an admission.
            pipe.cmd("BITOP")
                .arg("OR")
                .arg(&key)
                .arg(&key)
                .arg(&scratch)
                .ignore();
            pipe.cmd("DEL").arg(&scratch).ignore();
            pipe.query::<()>(&mut live.admin)
        })
    }
}

/// Appends one `BITFIELD key ... SET u1 <o> 1 ...` (`set`) or `BITFIELD_RO key ... GET u1 <o>
/// ...` command of `ops` bit operations, one per offset of a segment's data (the header's size
/// is added here). Each command first reads the key's header, in the same atomic command: its
/// generation, and its write count, which a writing command also increments.
#[allow(clippy::too_many_arguments)]
fn pack_bitfield_command(
    packed: &mut Packed,
    set: bool,
    key: &str,
    admitted: u64,
    expect: Expect,
    ops: usize,
    offsets: impl Iterator<Item = u64>,
) {
    let per_op = if set { 4 } else { 3 };
    let header_args = if set { 3 + 4 + 3 + 4 } else { 3 * 4 } + 3;
    packed.command(2 + header_args + ops * per_op);
    packed.bulk(if set { b"BITFIELD" } else { b"BITFIELD_RO" });
    packed.bulk(key.as_bytes());
    packed.bulk(b"GET");
    packed.bulk(b"i64");
    packed.bulk_u64(GENERATION_AT);
    if set {
        packed.bulk(b"INCRBY");
        packed.bulk(b"i64");
        packed.bulk_u64(WRITES_AT);
        packed.bulk(b"1");
    } else {
        packed.bulk(b"GET");
        packed.bulk(b"i64");
        packed.bulk_u64(WRITES_AT);
    }
    packed.bulk(b"GET");
    packed.bulk(b"i64");
    packed.bulk_u64(LAYERS_AT);
    if set {
        // Admissions this client counted on the key since its last command there.
        packed.bulk(b"INCRBY");
        packed.bulk(b"i64");
        packed.bulk_u64(ADMITTED_AT);
        packed.bulk_u64(admitted);
    } else {
        packed.bulk(b"GET");
        packed.bulk(b"i64");
        packed.bulk_u64(ADMITTED_AT);
    }
    packed.bulk(b"GET");
    packed.bulk(b"u1");
    packed.bulk_u64(witness_at(expect));
    // The fixed parts of each operation, pre-encoded.
    let (head, tail): (&[u8], &[u8]) = if set {
        (b"$3\r\nSET\r\n$2\r\nu1\r\n", b"$1\r\n1\r\n")
    } else {
        (b"$3\r\nGET\r\n$2\r\nu1\r\n", b"")
    };
    for offset in offsets {
        packed.buf.extend_from_slice(head);
        packed.bulk_u64(HEADER_BITS + offset);
        packed.buf.extend_from_slice(tail);
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
fn default_segments_per_key(layout: Layout, cluster: bool) -> u64 {
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

/// A random, non-zero generation.
fn new_generation() -> i64 {
    loop {
        let g = crate::namespace::random_u64() as i64;
        if g != 0 {
            return g;
        }
    }
}

/// The metadata of the filter at `meta_key`, creating the filter first if there is none.
///
/// Creation holds a lock (`<meta>:creating`, `SET NX` with a deadline) while it writes every
/// data key (header, then full size, replacing whatever a reset left) and only then the
/// metadata: whoever sees the metadata finds every key ready, and of two processes creating
/// the same filter one creates and the other waits and reads what it made.
fn create_or_read(
    deployment: &Deployment,
    options: &StoreOptions,
    meta_key: &str,
    wanted: &Meta,
) -> redis::RedisResult<Vec<(String, String)>> {
    let backoff = &options.backoff;
    let lock = format!("{meta_key}:creating");
    let deadline = Instant::now() + Duration::from_millis(CREATION_LOCK_MS);
    let read_meta = || {
        on_key(deployment, backoff, meta_key, |conn| {
            redis::cmd("HGETALL")
                .arg(meta_key)
                .query::<Vec<(String, String)>>(conn)
        })
    };
    loop {
        let stored = read_meta()?;
        if !stored.is_empty() {
            return Ok(stored);
        }
        let token = format!("{:016x}", crate::namespace::random_u64());
        let locked: Option<String> = on_key(deployment, backoff, &lock, |conn| {
            redis::cmd("SET")
                .arg(&lock)
                .arg(&token)
                .arg("NX")
                .arg("PX")
                .arg(CREATION_LOCK_MS)
                .query(conn)
        })?;
        if locked.is_none() {
            if Instant::now() > deadline {
                return Err(RedisError::from((
                    redis::ErrorKind::Client,
                    "another process holds the filter's creation lock",
                    lock,
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        let result = (|| {
            let stored = read_meta()?;
            if !stored.is_empty() {
                return Ok(stored);
            }
            let header = wanted.header_bytes();
            for index in 0..wanted.data_keys() {
                let key = options.data_key(index, wanted.data_keys());
                let bytes =
                    HEADER_BITS / 8 + wanted.key_segments(index) * wanted.layout.segment_bytes();
                // SETRANGE on a missing key allocates exactly `offset + 1` bytes (SETBIT and
                // BITFIELD grow strings in doubling steps).
                on_key(deployment, backoff, &key, |conn| {
                    redis::pipe()
                        .atomic()
                        .cmd("DEL")
                        .arg(&key)
                        .ignore()
                        .cmd("SETRANGE")
                        .arg(&key)
                        .arg(bytes - 1)
                        .arg(&b"\0"[..])
                        .ignore()
                        .cmd("SETRANGE")
                        .arg(&key)
                        .arg(0)
                        .arg(&header[..])
                        .ignore()
                        .query::<()>(conn)
                })?;
            }
            on_key(deployment, backoff, meta_key, |conn| {
                let mut hset = redis::cmd("HSET");
                hset.arg(meta_key);
                for (field, value) in wanted.fields() {
                    hset.arg(field).arg(value);
                }
                hset.query::<()>(conn)
            })?;
            read_meta()
        })();
        let release = redis::Script::new(
            "if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end return 0",
        );
        let _ = on_key(deployment, backoff, &lock, |conn| {
            release.key(&lock).arg(&token).invoke::<i64>(conn)
        });
        return result;
    }
}

/// Runs `f` on a new connection to the node serving `key`, following `MOVED` and `ASK`
/// redirections: for the steps that open a filter, before it has its pool of connections.
fn on_key<T>(
    deployment: &Deployment,
    backoff: &Backoff,
    key: &str,
    mut f: impl FnMut(&mut Connection) -> redis::RedisResult<T>,
) -> redis::RedisResult<T> {
    let mut node = deployment.node_of(key.as_bytes());
    let mut asking = false;
    for _ in 0..MAX_REDIRECTS {
        let client = deployment
            .client(node)
            .map_err(|e| RedisError::from((redis::ErrorKind::Client, "node", e.to_string())))?;
        let mut conn = connect(&client, backoff)?;
        if asking {
            redis::cmd("ASKING").query::<()>(&mut conn)?;
        }
        match f(&mut conn) {
            Err(e) => match redirect_of(&e) {
                Some(Redirect::Moved { slot, node: to }) => {
                    node = deployment.moved(slot, &to);
                    asking = false;
                }
                Some(Redirect::Ask { node: to, .. }) => {
                    node = deployment.index_of(&to);
                    asking = true;
                }
                None => return Err(e),
            },
            ok => return ok,
        }
    }
    Err(RedisError::from((
        redis::ErrorKind::Client,
        "too many cluster redirections",
    )))
}

/// A `MOVED` or `ASK` error as a redirection.
pub(crate) fn redirect_of(e: &RedisError) -> Option<Redirect> {
    let code = e.code()?;
    Redirect::parse(&format!("{code} {}", e.detail().unwrap_or("")))
}

fn connect(client: &Client, backoff: &Backoff) -> redis::RedisResult<Connection> {
    let conn = client.get_connection_with_timeout(backoff.connect_timeout)?;
    conn.set_read_timeout(Some(backoff.response_timeout))?;
    conn.set_write_timeout(Some(backoff.response_timeout))?;
    Ok(conn)
}

/// Runs `f` under the backoff policy; `first_contact` for the calls that open a filter, which
/// give up sooner (see [`Backoff::first_contact`]).
fn retry_sync<T>(
    backoff: &Backoff,
    first_contact: bool,
    operation: &'static str,
    mut f: impl FnMut() -> redis::RedisResult<T>,
) -> Result<T> {
    let mut retry = if first_contact {
        Retry::first_contact(backoff)
    } else {
        Retry::new(backoff)
    };
    loop {
        match f() {
            Ok(v) => return Ok(v),
            Err(source) => std::thread::sleep(retry.failed(operation, source)?),
        }
    }
}

/// The replies, or the first error reply as a `RedisError`: transient ones (a restarted
/// server still loading its data, a busy script) as I/O errors so the caller retries them.
fn checked(replies: Vec<Reply>) -> redis::RedisResult<Vec<Reply>> {
    for reply in &replies {
        let error = match reply {
            Reply::Error(e) => e,
            Reply::Array(items) => match items.iter().find(|r| matches!(r, Reply::Error(_))) {
                Some(Reply::Error(e)) => e,
                _ => continue,
            },
            _ => continue,
        };
        return Err(server_error(error.clone()));
    }
    Ok(replies)
}

/// An error reply as a `RedisError`: transient ones (a restarted server still loading its
/// data, a busy script) as I/O errors, so the caller reconnects and retries.
fn server_error(message: String) -> RedisError {
    let transient = ["LOADING", "BUSY", "TRYAGAIN", "MASTERDOWN"]
        .iter()
        .any(|code| message.starts_with(code));
    if transient {
        std::io::Error::new(std::io::ErrorKind::ConnectionAborted, message).into()
    } else {
        RedisError::from((redis::ErrorKind::Client, "redis answered an error", message))
    }
}

fn int_array(reply: Reply, expected: usize, key: &str) -> Result<Vec<i64>> {
    let Reply::Array(items) = reply else {
        return Err(corrupt(key, format!("BITFIELD answered {reply:?}")));
    };
    if items.len() != expected {
        return Err(corrupt(
            key,
            format!("BITFIELD answered {} values, not {expected}", items.len()),
        ));
    }
    items
        .into_iter()
        .map(|v| match v {
            Reply::Int(i) => Ok(i),
            other => Err(corrupt(key, format!("BITFIELD value {other:?}"))),
        })
        .collect()
}

fn corrupt(key: &str, detail: impl Into<String>) -> Error {
    Error::Corrupt {
        key: key.to_owned(),
        detail: detail.into(),
    }
}
