//! `Serialize`/`Deserialize` for the filter (feature `serde`).
//!
//! The filter serializes as its feature names, parameters and bit words. Deserializing
//! resolves names to [`builtin`](crate::builtin) features and checks sizes and padding as a
//! snapshot read does; filters with custom features are restored from snapshots with
//! [`SimilarityFilter::read_from_with`](crate::SimilarityFilter::read_from_with).

use serde::{Deserialize, Deserializer, Serialize, Serializer, de::Error as _};
use url_dedup_bloom::HashKey;

use crate::filter::{check_feature_count, words_for};
use crate::persist::{check_hashes, check_padding};
use crate::region_sizing::Regions;
use crate::words::Words;
use crate::{FeatureHash, RegionSizing, SimilarityFilter, builtin};

#[derive(Serialize)]
struct ReprRef<'a> {
    features: Vec<&'a str>,
    region_bits: u64,
    hashes: u32,
    sizing: u16,
    hash: u16,
    key: Option<HashKey>,
    expected_items: u64,
    fpr: f64,
    items: u64,
    words: &'a [u64],
}

#[derive(Deserialize)]
struct Repr {
    features: Vec<String>,
    region_bits: u64,
    hashes: u32,
    sizing: u16,
    hash: u16,
    key: Option<HashKey>,
    expected_items: u64,
    fpr: f64,
    items: u64,
    words: Vec<u64>,
}

impl Serialize for SimilarityFilter {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        ReprRef {
            features: self.features().collect(),
            region_bits: self.regions.bits,
            hashes: self.regions.hashes,
            sizing: self.sizing.id(self.regions.block_bits()),
            hash: self.hash.id(),
            key: self.key,
            expected_items: self.expected_items,
            fpr: self.fpr,
            items: self.items,
            words: self.raw_words(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for SimilarityFilter {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let r = Repr::deserialize(deserializer)?;
        let f = check_feature_count(r.features.len()).map_err(D::Error::custom)?;
        let (sizing, block_bits) = RegionSizing::from_id(r.sizing)
            .ok_or_else(|| D::Error::custom("unknown region sizing"))?;
        check_hashes(r.hashes, sizing).map_err(D::Error::custom)?;
        let regions = Regions::restore(sizing, r.region_bits, r.hashes, block_bits)
            .map_err(D::Error::custom)?;
        let hash =
            FeatureHash::from_id(r.hash).ok_or_else(|| D::Error::custom("unknown feature hash"))?;
        let words = words_for(r.region_bits, f).map_err(D::Error::custom)?;
        if r.words.len() as u64 != words {
            return Err(D::Error::custom(
                "word count does not match the filter size",
            ));
        }
        if !(r.fpr > 0.0 && r.fpr < 1.0) || r.expected_items == 0 {
            return Err(D::Error::custom("expected items or rate out of range"));
        }
        check_padding(&r.words, r.region_bits * u64::from(f)).map_err(D::Error::custom)?;
        let features = r
            .features
            .iter()
            .map(|n| {
                builtin::by_name(n)
                    .ok_or_else(|| D::Error::custom(format!("unknown feature {n:?}")))
            })
            .collect::<Result<_, _>>()?;
        Ok(Self::from_parts(
            features,
            (regions, sizing),
            Words::from_vec(r.words).map_err(D::Error::custom)?,
            (r.key, hash),
            r.expected_items,
            r.fpr,
            r.items,
        ))
    }
}
