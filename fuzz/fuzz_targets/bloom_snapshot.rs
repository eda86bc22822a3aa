//! Arbitrary bytes into the classic filter's snapshot reader: it must return an error or a
//! filter, never panic, and never allocate far beyond the input's size.
#![no_main]

use libfuzzer_sys::fuzz_target;
use url_dedup_bloom::snapshot::Limits;
use url_dedup_bloom::{BloomFilter, SipHash13};

fuzz_target!(|data: &[u8]| {
    let limits = Limits { max_payload_bytes: 1 << 24 };
    if let Ok(filter) = BloomFilter::<SipHash13>::read_from_with_limits(data, limits) {
        // A filter that was accepted must be fully usable and round-trip exactly.
        let _ = filter.contains(data);
        let again = BloomFilter::<SipHash13>::from_bytes(&filter.to_bytes()).expect("round trip");
        assert_eq!(again, filter);
    }
});
