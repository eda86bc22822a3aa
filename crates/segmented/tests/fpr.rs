//! Statistical test of the false-positive rate at the design load.
//!
//! With N queries of absent items and a true rate p, the measured rate has standard deviation
//! sqrt(p (1 - p) / N). The sizing promises an expected rate at or below the target, so the
//! test accepts a measured rate up to the target plus four standard deviations (a correct
//! filter fails this about once in 30,000 runs), and requires it above a third of the target
//! (a filter that sets far too many bits, or a broken test, would show a rate near zero).

use url_dedup_bloom::{HashKey, Xxh3};
use url_dedup_segmented::{Placement, SegmentedBloomFilter};

fn measured(items: u64, fpr: f64, segment_bits: u64, placement: Placement, queries: u64) -> f64 {
    let f = SegmentedBloomFilter::builder()
        .expected_items(items)
        .false_positive_rate(fpr)
        .segment_bits(segment_bits)
        .placement(placement)
        .hasher(Xxh3::new(HashKey::from_bytes([17; 16])))
        .build()
        .unwrap();
    for i in 0..items {
        f.insert(format!("https://example.com/in/{i}"));
    }
    let hits = (0..queries)
        .filter(|i| f.contains(format!("https://example.com/out/{i}")))
        .count();
    hits as f64 / queries as f64
}

fn assert_within(items: u64, fpr: f64, segment_bits: u64) {
    assert_placed_within(items, fpr, segment_bits, Placement::Scattered);
}

fn assert_placed_within(items: u64, fpr: f64, segment_bits: u64, placement: Placement) {
    let queries = 400_000u64;
    let rate = measured(items, fpr, segment_bits, placement, queries);
    let sd = (fpr * (1.0 - fpr) / queries as f64).sqrt();
    assert!(
        rate <= fpr + 4.0 * sd,
        "{placement:?} segment {segment_bits}: measured {rate} above target {fpr} (+4 sd = {})",
        fpr + 4.0 * sd
    );
    assert!(
        rate > fpr / 3.0,
        "{placement:?} segment {segment_bits}: measured {rate} implausibly low"
    );
}

#[test]
fn one_percent_with_cache_line_segments() {
    assert_within(200_000, 0.01, 512);
}

#[test]
fn one_in_a_thousand_with_cache_line_segments() {
    assert_within(200_000, 0.001, 512);
}

#[test]
fn one_percent_with_large_and_tiny_segments() {
    assert_within(200_000, 0.01, 1 << 16);
    assert_within(200_000, 0.01, 64);
}

#[test]
fn split_placement_meets_its_targets() {
    assert_placed_within(200_000, 0.01, 512, Placement::Split);
    assert_placed_within(200_000, 0.001, 512, Placement::Split);
    assert_placed_within(200_000, 0.01, 1 << 16, Placement::Split);
}
