//! Serde round trips through postcard and bincode 2; damaged payloads are rejected.
#![cfg(feature = "serde")]

use url_dedup_bloom::{HashKey, SipHash13, Xxh3};
use url_dedup_segmented::{Layout, Placement, Probe, SegmentedBloomFilter};

fn filled() -> SegmentedBloomFilter {
    let f = SegmentedBloomFilter::builder()
        .expected_items(5_000)
        .key(HashKey::from_bytes([8; 16]))
        .build()
        .unwrap();
    for i in 0..3_000 {
        f.insert(format!("https://example.com/{i}"));
    }
    f
}

fn same(a: &SegmentedBloomFilter, b: &SegmentedBloomFilter) {
    assert_eq!(a.layout(), b.layout());
    assert_eq!(a.key(), b.key());
    assert_eq!(a.expected_items(), b.expected_items());
    assert_eq!(a.to_bytes(), b.to_bytes());
}

#[test]
fn postcard_round_trip() {
    let f = filled();
    let bytes = postcard::to_allocvec(&f).unwrap();
    let g: SegmentedBloomFilter = postcard::from_bytes(&bytes).unwrap();
    same(&f, &g);
    assert!(g.contains("https://example.com/2999"));
    assert!(g.dirty_segments().is_empty());
}

#[test]
fn bincode2_round_trip() {
    let f = filled();
    let config = bincode2::config::standard();
    let bytes = bincode2::serde::encode_to_vec(&f, config).unwrap();
    let (g, _): (SegmentedBloomFilter, usize) =
        bincode2::serde::decode_from_slice(&bytes, config).unwrap();
    same(&f, &g);
}

#[test]
fn layout_and_probe_round_trip_and_validate() {
    for l in [
        Layout::new(1_000, 4096, 9).unwrap(),
        Layout::with_placement(1_000, 512, 8, Placement::Split).unwrap(),
    ] {
        let back: Layout = postcard::from_bytes(&postcard::to_allocvec(&l).unwrap()).unwrap();
        assert_eq!(back, l);
    }
    // The same fields with an invalid segment size, or a split with a hash count that is not a
    // power of two, are refused.
    #[derive(serde::Serialize)]
    struct Raw {
        segments: u64,
        segment_bits: u64,
        hashes: u32,
        placement: Placement,
    }
    for (segment_bits, hashes, placement) in
        [(500, 3, Placement::Scattered), (512, 7, Placement::Split)]
    {
        let bad = postcard::to_allocvec(&Raw {
            segments: 10,
            segment_bits,
            hashes,
            placement,
        })
        .unwrap();
        assert!(postcard::from_bytes::<Layout>(&bad).is_err());
    }
    let p = Probe {
        segment: 7,
        seed: 99,
    };
    assert_eq!(
        postcard::from_bytes::<Probe>(&postcard::to_allocvec(&p).unwrap()).unwrap(),
        p
    );
}

#[test]
fn damaged_or_foreign_payloads_are_rejected() {
    let bytes = postcard::to_allocvec(&filled()).unwrap();
    // Another hash algorithm.
    assert!(postcard::from_bytes::<SegmentedBloomFilter<Xxh3>>(&bytes).is_err());
    // Truncations never panic and never succeed.
    for len in (0..bytes.len()).step_by(97) {
        assert!(postcard::from_bytes::<SegmentedBloomFilter<SipHash13>>(&bytes[..len]).is_err());
    }
}
