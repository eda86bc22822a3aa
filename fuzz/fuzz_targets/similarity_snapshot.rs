//! Bytes into the similarity filter's snapshot reader, as they are and resealed (see
//! `url_dedup_fuzz::reseal`), then as URLs into a filter: errors or a usable filter, never a
//! panic or an allocation far beyond the input's size.
#![no_main]

use libfuzzer_sys::fuzz_target;
use url_dedup_bloom::snapshot::Limits;
use url_dedup_similarity::{Preset, SimilarityFilter};

fn exercise(bytes: &[u8]) {
    let limits = Limits {
        max_payload_bytes: 1 << 24,
    };
    for preset in [Preset::Document004, Preset::Crawler] {
        if let Ok(filter) = SimilarityFilter::read_from_with(bytes, preset.features(), limits) {
            let mut again = Vec::new();
            filter.write_to(&mut again).expect("write to memory");
            let back = SimilarityFilter::read_from(&again[..]).expect("round trip");
            assert_eq!(back, filter);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    exercise(data);
    exercise(&url_dedup_fuzz::reseal(data));
    if let Ok(text) = std::str::from_utf8(data) {
        let mut filter = SimilarityFilter::builder()
            .expected_items(100)
            .build()
            .expect("valid");
        filter.check_and_insert(text);
        assert!(filter.check(text).is_similar());
    }
});
