//! Snapshots and serde: round trips, and damaged input rejected with an error.

use std::sync::Arc;

use url_dedup_bloom::HashKey;
use url_dedup_bloom::snapshot::{Limits, SnapshotError};
use url_dedup_similarity::{Error, Feature, Preset, SimilarityFilter, UrlParts, builtin};

fn filled(preset: Preset) -> SimilarityFilter {
    let mut f = SimilarityFilter::builder()
        .expected_items(2_000)
        .preset(preset)
        .hash_key(HashKey::from_bytes([5; 16]))
        .build()
        .unwrap();
    for i in 0..500 {
        f.check_and_insert(&format!(
            "https://s{}.example/d{}/p{i}.html?x={i}",
            i % 7,
            i % 3
        ));
    }
    f
}

fn bytes(f: &SimilarityFilter) -> Vec<u8> {
    let mut out = Vec::new();
    f.write_to(&mut out).unwrap();
    out
}

#[test]
fn round_trip_keeps_every_verdict() {
    for preset in [Preset::Document004, Preset::Crawler] {
        let f = filled(preset);
        let back = SimilarityFilter::read_from(&bytes(&f)[..]).unwrap();
        assert_eq!(back, f);
        for i in 0..1000 {
            let url = format!("https://s{}.example/d{}/p{i}.html?y=1", i % 9, i % 4);
            assert_eq!(back.check(&url), f.check(&url));
        }
    }
}

#[test]
fn unkeyed_filters_round_trip_as_unkeyed() {
    let f = SimilarityFilter::builder().unkeyed().build().unwrap();
    let back = SimilarityFilter::read_from(&bytes(&f)[..]).unwrap();
    assert_eq!(back.hash_key(), None);
}

#[test]
fn every_byte_flip_and_truncation_is_an_error() {
    let good = bytes(&filled(Preset::Document004));
    for pos in (0..good.len()).step_by(7) {
        let mut bad = good.clone();
        bad[pos] ^= 0x04;
        assert!(
            SimilarityFilter::read_from(&bad[..]).is_err(),
            "flip at {pos}"
        );
    }
    for len in (0..good.len()).step_by(13) {
        assert!(
            SimilarityFilter::read_from(&good[..len]).is_err(),
            "cut at {len}"
        );
    }
}

#[test]
fn size_limits_are_enforced_before_allocation() {
    let good = bytes(&filled(Preset::Crawler));
    let err = SimilarityFilter::read_from_with(
        &good[..],
        Preset::Crawler.features(),
        Limits {
            max_payload_bytes: 64,
        },
    )
    .unwrap_err();
    assert!(matches!(
        err,
        Error::Snapshot(SnapshotError::TooLarge { .. })
    ));
}

#[derive(Debug)]
struct Tld;

impl Feature for Tld {
    fn name(&self) -> &str {
        "tld"
    }
    fn write_value(&self, url: &UrlParts<'_>, out: &mut Vec<u8>) {
        out.extend_from_slice(url.site().rsplit('.').next().unwrap_or("").as_bytes());
    }
}

#[test]
fn custom_features_need_to_be_supplied() {
    let features: Vec<Arc<dyn Feature>> = vec![Arc::new(builtin::Site), Arc::new(Tld)];
    let mut f = SimilarityFilter::builder()
        .features(features.clone())
        .build()
        .unwrap();
    f.check_and_insert("https://a.example/");
    let buf = bytes(&f);
    assert!(matches!(
        SimilarityFilter::read_from(&buf[..]),
        Err(Error::UnknownFeature(name)) if name == "tld"
    ));
    let back = SimilarityFilter::read_from_with(&buf[..], features, Limits::default()).unwrap();
    assert_eq!(back, f);
}

#[test]
fn other_kinds_are_refused_by_name() {
    let bloom = url_dedup_bloom::BloomFilter::builder()
        .expected_items(10)
        .build()
        .unwrap();
    let mut buf = Vec::new();
    bloom.write_to(&mut buf).unwrap();
    let err = SimilarityFilter::read_from(&buf[..]).unwrap_err();
    assert!(err.to_string().contains("similarity filter"), "{err}");
}

#[cfg(feature = "serde")]
mod serde_support {
    use super::*;

    #[test]
    fn postcard_round_trip() {
        let f = filled(Preset::Crawler);
        let encoded = postcard::to_allocvec(&f).unwrap();
        let back: SimilarityFilter = postcard::from_bytes(&encoded).unwrap();
        assert_eq!(back, f);
    }

    #[test]
    fn bincode2_round_trip() {
        let f = filled(Preset::Document004);
        let config = bincode2::config::standard();
        let encoded = bincode2::serde::encode_to_vec(&f, config).unwrap();
        let (back, _): (SimilarityFilter, usize) =
            bincode2::serde::decode_from_slice(&encoded, config).unwrap();
        assert_eq!(back, f);
    }

    #[test]
    fn inconsistent_serde_input_is_rejected() {
        let f = filled(Preset::Document004);
        let mut encoded = postcard::to_allocvec(&f).unwrap();
        // Truncating drops words: the count no longer matches the size.
        encoded.truncate(encoded.len() - 8);
        assert!(postcard::from_bytes::<SimilarityFilter>(&encoded).is_err());
    }
}
