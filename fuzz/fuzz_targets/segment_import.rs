//! Arbitrary bytes into `import_segments` of a small live filter: an error leaves the filter
//! exactly as it was; success only ever adds bits.
#![no_main]

use libfuzzer_sys::fuzz_target;
use url_dedup_bloom::snapshot::Limits;
use url_dedup_bloom::{HashKey, SipHash13};
use url_dedup_segmented::{Layout, SegmentedBloomFilter};

fuzz_target!(|data: &[u8]| {
    // A fixed geometry and key, so that well-formed exports built by the fuzzer can match.
    let filter: SegmentedBloomFilter<SipHash13> = SegmentedBloomFilter::builder()
        .layout(Layout::new(4, 128, 3).expect("valid layout"))
        .key(HashKey::from_bytes([0; 16]))
        .build()
        .expect("small filter");
    filter.insert("https://example.com/");
    let before = filter.to_bytes();
    let ones = filter.count_ones();
    let limits = Limits {
        max_payload_bytes: 1 << 20,
    };
    match filter.import_segments_with_limits(data, limits) {
        Ok(_) => assert!(filter.count_ones() >= ones),
        Err(_) => assert_eq!(filter.to_bytes(), before),
    }
    assert!(filter.contains("https://example.com/"));
});
