//! What every process sharing a filter must agree on: the metadata hash (layout, hash
//! algorithm and key, generation, growth schedule), and the layers a growing filter adds.

use std::sync::Mutex;

use url_dedup_bloom::hash::{HashAlgorithm, HashKey, ItemHasher};
use url_dedup_bloom::sizing::Growth;
use url_dedup_segmented::{Layout, Placement};

use super::RedisSegmentStore;
use super::header::HEADER_BITS;
use super::sizing::{REDIS_SIZE_FOR_SPEED, SHARED_SIZE_FOR_SPEED};
use crate::error::{Error, Result};

/// Format version of the metadata hash; bumped if key names or bit meanings ever change.
/// Version 2 put a header in front of every data key; version 3 sizes a growing filter's
/// layers key by key ([`LayerSizing::PerKey`]). A fixed filter is still written as version 2,
/// so that every reader of version 2 opens it.
const META_VERSION: u64 = 2;
/// The version of a growing filter's metadata whose layers are sized key by key.
const PER_KEY_VERSION: u64 = 3;
/// What the metadata hash records: everything another process needs to compute the same bits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Meta {
    pub(crate) layout: Layout,
    pub(crate) segments_per_key: u64,
    pub(crate) algorithm: HashAlgorithm,
    pub(crate) key: HashKey,
    pub(crate) expected_items: u64,
    /// Random and non-zero, chosen when the filter is created and written into every data
    /// key's header: a filter re-created under the same prefix has another one.
    pub(crate) generation: i64,
    /// Whether the metadata holds the key itself or only [`key_check`].
    pub(crate) key_in_redis: bool,
    /// How the filter grows, for a growing filter (see [`LayerShape`]).
    pub(crate) growth: Option<MetaGrowth>,
    /// Whether data keys are named with slot tags ([`StoreOptions::cluster_tags`]).
    pub(crate) key_tags: bool,
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
    /// How layers are sized and when a key adds one (the metadata's version says which).
    pub(crate) sizing: LayerSizing,
}

/// How a growing filter's layers are sized, and when a data key adds one. Every process
/// sharing a filter must compute the same layers, so this is part of the metadata.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LayerSizing {
    /// Metadata version 2: a layer holds its capacity over all keys at its rate, with the
    /// hashes [`REDIS_SIZE_FOR_SPEED`] allows, and a key adds the next layer at 7/8 of its
    /// share. A filter given exactly its expected count had two layers in most keys.
    Even,
    /// Metadata version 3: a key's part of a layer holds its share of the layer's capacity
    /// plus four standard deviations of the spread of items over keys, and a key adds a layer
    /// only past that, so a filter given its expected count keeps one layer. The part is sized
    /// for 1/64 more, what other clients admit before they report it (a batch goes in parts of
    /// at most 1/128 of a layer), and takes the hashes [`SHARED_SIZE_FOR_SPEED`] allows.
    PerKey,
}

impl LayerSizing {
    /// How much larger than the memory-optimal filter a layer may be to take fewer hashes.
    pub(crate) fn allowance(self) -> f64 {
        match self {
            Self::Even => REDIS_SIZE_FOR_SPEED,
            Self::PerKey => SHARED_SIZE_FOR_SPEED,
        }
    }

    /// Items admitted into a key's part of a layer, of `share` items a key among `keys`, at
    /// which the key adds the next layer.
    pub(crate) fn grow_at(self, share: u64, keys: u64) -> u64 {
        match self {
            Self::Even => share - share / 8,
            Self::PerKey => key_capacity(share, keys).saturating_add(1),
        }
    }

    /// Items the layout of a layer of `capacity` items over `keys` keys is sized for.
    pub(crate) fn sized_items(self, capacity: u64, keys: u64) -> u64 {
        match self {
            Self::Even => capacity,
            Self::PerKey => {
                let full = key_capacity(capacity.div_ceil(keys.max(1)), keys);
                full.saturating_add(full / 64 + 1)
                    .saturating_mul(keys.max(1))
            }
        }
    }

    /// Items a batch is cut into, so that a key grows before the parts overfill it: with the
    /// first layer `first` of `keys` keys.
    pub(crate) fn part(self, first: &LayerShape, keys: u64) -> usize {
        let part = match self {
            Self::Even => (first.share.saturating_mul(keys) / 8).clamp(64, 4096),
            Self::PerKey => (first.grow_at.saturating_mul(keys) / 128).clamp(16, 4096),
        };
        part as usize
    }
}

/// Admissions a key's part of a layer holds before it grows: its `share` of the layer's
/// capacity, and four standard deviations of the count a key among `keys` gets when the
/// layer's capacity is spread over them at random (binomially), so that no key grows at the
/// expected count, but for about one key in 30,000.
fn key_capacity(share: u64, keys: u64) -> u64 {
    if keys <= 1 {
        return share;
    }
    let variance = share as f64 * (1.0 - 1.0 / keys as f64);
    share.saturating_add((4.0 * variance.sqrt()).ceil() as u64)
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
    /// The layer's capacity over the data keys: a key's share of it.
    pub(crate) share: u64,
    /// Admissions into one key's part of the layer at which the key adds the next layer.
    pub(crate) grow_at: u64,
}

/// What the metadata holds for a key kept out of Redis: one keyed hash of a constant.
fn key_check(key: HashKey) -> String {
    use url_dedup_bloom::SipHash13;
    let digest = SipHash13::new(key).hash(b"url-dedup: check of a key kept out of redis");
    format!("{:016x}{:016x}", digest.h1, digest.h2)
}

impl Meta {
    pub(crate) fn fields(&self) -> Vec<(&'static str, String)> {
        let version = match self.growth.map(|g| g.sizing) {
            Some(LayerSizing::PerKey) => PER_KEY_VERSION,
            _ => META_VERSION,
        };
        let mut fields = vec![
            ("version", version.to_string()),
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
    pub(crate) fn parse(
        key: &str,
        fields: &[(String, String)],
        supplied: Option<HashKey>,
    ) -> Result<Self> {
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
        let version = num("version")?;
        if version != META_VERSION && version != PER_KEY_VERSION {
            return Err(Error::Mismatch {
                field: "version",
                stored: get("version")?.to_owned(),
                expected: format!("{META_VERSION} or {PER_KEY_VERSION}"),
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
                    sizing: match version {
                        PER_KEY_VERSION => LayerSizing::PerKey,
                        _ => LayerSizing::Even,
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
    pub(crate) fn data_keys(&self) -> u64 {
        self.layout.segments().div_ceil(self.segments_per_key)
    }

    /// Segments held by data key `index` (the last one may hold fewer).
    pub(crate) fn key_segments(&self, index: u64) -> u64 {
        let per_key = self.segments_per_key;
        (self.layout.segments() - index * per_key).min(per_key)
    }

    /// The 32 bytes a data key starts with: generation, no writes yet, one layer, nothing
    /// admitted.
    pub(crate) fn header_bytes(&self) -> [u8; (HEADER_BITS / 8) as usize] {
        let mut header = [0u8; (HEADER_BITS / 8) as usize];
        header[..8].copy_from_slice(&self.generation.to_be_bytes());
        header[16..24].copy_from_slice(&1i64.to_be_bytes());
        header
    }

    /// The first field where `self` (ours) and `stored` disagree.
    pub(crate) fn check_against(&self, stored: &Self) -> Result<()> {
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

/// The layers' shapes computed so far, layer 0 first.
#[derive(Debug)]
pub(crate) struct Layers {
    shapes: Mutex<Vec<LayerShape>>,
}

impl Layers {
    /// The first layer of the filter `meta` describes.
    pub(crate) fn new(meta: &Meta) -> Self {
        let keys = meta.data_keys();
        let share = meta
            .growth
            .map_or(meta.expected_items, |g| g.first_capacity)
            .div_ceil(keys.max(1));
        let first = LayerShape {
            layout: meta.layout,
            per_key: meta.segments_per_key,
            start: HEADER_BITS,
            share,
            grow_at: meta.growth.map_or(share, |g| g.sizing.grow_at(share, keys)),
        };
        Self {
            shapes: Mutex::new(vec![first]),
        }
    }

    /// The shape of layer `index` (layer 0 is the filter's [`Layout`]).
    pub(crate) fn layer(&self, index: u32, meta: &Meta) -> Result<LayerShape> {
        let mut shapes = self
            .shapes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while shapes.len() <= index as usize {
            let Some(growth) = meta.growth else {
                return Err(Error::Segmented(
                    url_dedup_segmented::Error::InvalidParameters("a fixed filter has one layer"),
                ));
            };
            let previous = *shapes.last().unwrap_or(&shapes[0]);
            let j = shapes.len() as u32;
            let (capacity, fpr) = growth
                .growth
                .layer(growth.first_capacity, growth.target_fpr, j);
            let keys = meta.data_keys();
            let sizing = growth.sizing;
            let sized = RedisSegmentStore::layout_allowing(
                sizing.sized_items(capacity, keys),
                fpr,
                growth.hashes,
                sizing.allowance(),
            )?;
            let per_key = sized.segments().div_ceil(keys);
            let layout = Layout::new(keys * per_key, sized.segment_bits(), sized.hashes())?;
            let share = capacity.div_ceil(keys);
            shapes.push(LayerShape {
                layout,
                per_key,
                start: previous.start + previous.per_key * previous.layout.segment_bits(),
                share,
                grow_at: sizing.grow_at(share, keys),
            });
        }
        Ok(shapes[index as usize])
    }
}

/// A random, non-zero generation.
pub(crate) fn new_generation() -> i64 {
    loop {
        let g = crate::namespace::random_u64() as i64;
        if g != 0 {
            return g;
        }
    }
}

/// Data at `key` that is not what this crate writes.
pub(crate) fn corrupt(key: &str, detail: impl Into<String>) -> Error {
    Error::Corrupt {
        key: key.to_owned(),
        detail: detail.into(),
    }
}
