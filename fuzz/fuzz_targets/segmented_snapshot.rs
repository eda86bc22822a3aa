//! Bytes into the segmented filter's snapshot reader, as they are and resealed (see
//! `url_dedup_fuzz::reseal`): an error or a filter, never a panic, never an allocation far
//! beyond the input's size; an accepted filter is usable and round-trips exactly.
#![no_main]

use libfuzzer_sys::fuzz_target;
use url_dedup_bloom::SipHash13;
use url_dedup_bloom::snapshot::Limits;
use url_dedup_segmented::SegmentedBloomFilter;

fn exercise(bytes: &[u8]) {
    let limits = Limits {
        max_payload_bytes: 1 << 24,
    };
    if let Ok(filter) = SegmentedBloomFilter::<SipHash13>::read_from_with_limits(bytes, limits) {
        let _ = filter.contains(bytes);
        let _ = filter.check_and_insert(bytes);
        let out = filter.to_bytes();
        let again = SegmentedBloomFilter::<SipHash13>::from_bytes(&out).expect("round trip");
        assert_eq!(again.to_bytes(), out);
    }
}

fuzz_target!(|data: &[u8]| {
    exercise(data);
    exercise(&url_dedup_fuzz::reseal(data));
});
