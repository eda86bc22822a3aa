//! Bytes into `import_segments` of a small live filter: an error leaves the filter exactly as
//! it was; success only ever adds bits and never loses an item.
//!
//! The first byte picks the input: the remaining bytes as they are and resealed (odd; see
//! `url_dedup_fuzz::reseal`), or a genuine export of another filter with the same geometry and
//! key, built from the remaining bytes and then cut or flipped at fuzzer-chosen places (even),
//! so the accepting paths are reached too.
#![no_main]

use libfuzzer_sys::fuzz_target;
use url_dedup_bloom::snapshot::Limits;
use url_dedup_bloom::{HashKey, SipHash13};
use url_dedup_segmented::{Layout, SegmentedBloomFilter};

fn small() -> SegmentedBloomFilter<SipHash13> {
    SegmentedBloomFilter::builder()
        .layout(Layout::new(4, 128, 3).expect("valid layout"))
        .key(HashKey::from_bytes([0; 16]))
        .build()
        .expect("small filter")
}

/// A genuine export of the segments `mode` picks from a filter holding `rest`'s items, damaged
/// as `mode`'s high bits say.
fn export(mode: u8, rest: &[u8]) -> Vec<u8> {
    let source = small();
    for item in rest.chunks(3) {
        source.insert(item);
    }
    let segments: Vec<u64> = (0..4).filter(|s| mode >> (s + 1) & 1 == 1).collect();
    let mut bytes = Vec::new();
    source
        .export_segments(&mut bytes, &segments)
        .expect("valid export");
    if mode & 0x40 != 0 && !bytes.is_empty() {
        let at = usize::from(rest.first().copied().unwrap_or(0)) % bytes.len();
        bytes[at] ^= rest.get(1).copied().unwrap_or(1) | 1;
    }
    if mode & 0x80 != 0 {
        let keep = rest.len() % (bytes.len() + 1);
        bytes.truncate(keep);
    }
    bytes
}

fn import(input: &[u8]) {
    let filter = small();
    filter.insert("https://example.com/");
    let before = filter.to_bytes();
    let ones = filter.count_ones();
    let limits = Limits {
        max_payload_bytes: 1 << 20,
    };
    match filter.import_segments_with_limits(input, limits) {
        Ok(_) => assert!(filter.count_ones() >= ones),
        Err(_) => assert_eq!(filter.to_bytes(), before),
    }
    assert!(filter.contains("https://example.com/"));
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode & 1 == 1 {
        import(rest);
        import(&url_dedup_fuzz::reseal(rest));
    } else {
        import(&export(mode, rest));
    }
});
