//! Arbitrary bytes into the segmented filter's snapshot reader: an error or a filter, never a
//! panic, never an allocation far beyond the input's size; an accepted filter is usable and
//! round-trips exactly.
#![no_main]

use libfuzzer_sys::fuzz_target;
use url_dedup_bloom::SipHash13;
use url_dedup_bloom::snapshot::Limits;
use url_dedup_segmented::SegmentedBloomFilter;

fuzz_target!(|data: &[u8]| {
    let limits = Limits {
        max_payload_bytes: 1 << 24,
    };
    if let Ok(filter) = SegmentedBloomFilter::<SipHash13>::read_from_with_limits(data, limits) {
        let _ = filter.contains(data);
        let _ = filter.check_and_insert(data);
        let bytes = filter.to_bytes();
        let again = SegmentedBloomFilter::<SipHash13>::from_bytes(&bytes).expect("round trip");
        assert_eq!(again.to_bytes(), bytes);
    }
});
