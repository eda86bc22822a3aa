//! Serde support (feature `serde`): the filter survives postcard and bincode 2, and a payload
//! that was tampered with is rejected rather than turned into an inconsistent filter.
#![cfg(feature = "serde")]

use url_dedup_bloom::{AtomicBloomFilter, BloomFilter, HashKey, SipHash13};

fn sample() -> BloomFilter {
    let mut f = BloomFilter::builder()
        .expected_items(1_000)
        .key(HashKey::from_bytes([3; 16]))
        .build()
        .unwrap();
    f.extend((0..500).map(|i| format!("https://example.com/{i}")));
    f
}

#[test]
fn postcard_round_trip() {
    let f = sample();
    let bytes = postcard::to_stdvec(&f).unwrap();
    let g: BloomFilter = postcard::from_bytes(&bytes).unwrap();
    assert_eq!(f, g);
    assert_eq!(f.len(), g.len());
    assert!(g.contains("https://example.com/499"));
}

#[test]
fn bincode2_round_trip() {
    let f = sample();
    let config = bincode2::config::standard();
    let bytes = bincode2::serde::encode_to_vec(&f, config).unwrap();
    let (g, _): (BloomFilter, usize) = bincode2::serde::decode_from_slice(&bytes, config).unwrap();
    assert_eq!(f, g);
    let atomic: AtomicBloomFilter = bincode2::serde::decode_from_slice(&bytes, config)
        .unwrap()
        .0;
    assert_eq!(atomic.to_filter(), f);
}

#[test]
fn inconsistent_payload_is_rejected() {
    // Same filter with one word dropped: the word count no longer matches the size.
    #[derive(serde::Serialize)]
    struct Forged {
        bits: u64,
        hashes: u32,
        algorithm: u16,
        key: [u8; 16],
        expected_items: u64,
        items: u64,
        words: Vec<u64>,
    }
    let forged = Forged {
        bits: 1_000,
        hashes: 7,
        algorithm: 1,
        key: [0; 16],
        expected_items: 100,
        items: 0,
        words: vec![0; 3],
    };
    let bytes = postcard::to_stdvec(&forged).unwrap();
    assert!(postcard::from_bytes::<BloomFilter<SipHash13>>(&bytes).is_err());
    let ok = Forged {
        words: vec![0; 16],
        ..forged
    };
    let bytes = postcard::to_stdvec(&ok).unwrap();
    assert!(postcard::from_bytes::<BloomFilter<SipHash13>>(&bytes).is_ok());
}
