//! Bytes into the classic filter's snapshot reader, as they are and resealed (see
//! `url_dedup_fuzz::reseal`): it must return an error or a filter, never panic, and never
//! allocate far beyond the input's size.
#![no_main]

use libfuzzer_sys::fuzz_target;
use url_dedup_bloom::snapshot::Limits;
use url_dedup_bloom::{BloomFilter, SipHash13};

fn exercise(bytes: &[u8]) {
    let limits = Limits {
        max_payload_bytes: 1 << 24,
    };
    if let Ok(filter) = BloomFilter::<SipHash13>::read_from_with_limits(bytes, limits) {
        // A filter that was accepted must be fully usable and round-trip exactly.
        let _ = filter.contains(bytes);
        let again = BloomFilter::<SipHash13>::from_bytes(&filter.to_bytes()).expect("round trip");
        assert_eq!(again, filter);
    }
}

fuzz_target!(|data: &[u8]| {
    exercise(data);
    exercise(&url_dedup_fuzz::reseal(data));
});
