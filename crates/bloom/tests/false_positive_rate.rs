//! The measured false-positive rate at the design load stays near the requested rate.
//!
//! Fixed keys make the test reproducible. With n = 200,000 items and 1,000,000 probes of
//! absent items, the binomial standard deviation of the measured rate at p = 1% is 0.01%, so a
//! 10% relative tolerance (0.1 percentage point) is ten standard deviations: the test fails only
//! when the filter is genuinely off, not by chance.

use url_dedup_bloom::{BloomFilter, HashKey, ItemHasher, SipHash13, Xxh3};

fn measured_fpr<H: ItemHasher>(hasher: H, n: u64, p: f64) -> f64 {
    let mut f = BloomFilter::builder()
        .expected_items(n)
        .false_positive_rate(p)
        .hasher(hasher)
        .build()
        .unwrap();
    for i in 0..n {
        f.insert(format!("https://www.example.com/inserted/{i}/page.html"));
    }
    let probes = 1_000_000u64;
    let hits = (0..probes)
        .filter(|i| f.contains(format!("https://www.example.com/absent/{i}/page.html")))
        .count();
    hits as f64 / probes as f64
}

#[test]
fn siphash_filter_meets_its_rate() {
    for &p in &[0.01, 0.001] {
        let fpr = measured_fpr(SipHash13::new(HashKey::from_bytes([11; 16])), 200_000, p);
        // At 0.1%, 1,000,000 probes give a standard deviation of 0.0032%: 10% is 3 sigma.
        assert!((fpr - p).abs() < p * 0.10, "p = {p}: measured {fpr}");
    }
}

#[test]
fn xxh3_filter_meets_its_rate() {
    let fpr = measured_fpr(Xxh3::new(HashKey::from_bytes([12; 16])), 200_000, 0.01);
    assert!((fpr - 0.01).abs() < 0.001, "measured {fpr}");
}
