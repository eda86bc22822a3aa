//! Invariants of the classic filter, checked on random inputs.

use proptest::prelude::*;
use url_dedup_bloom::{AtomicBloomFilter, BloomFilter, Error, HashKey, Xxh3};

fn filter(key: [u8; 16], bits: u64, hashes: u32) -> BloomFilter {
    BloomFilter::builder()
        .bits(bits)
        .hashes(hashes)
        .key(HashKey::from_bytes(key))
        .build()
        .unwrap()
}

fn items() -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop::collection::vec(prop::collection::vec(any::<u8>(), 0..80), 0..200)
}

proptest! {
    #[test]
    fn no_false_negatives(key in any::<[u8; 16]>(), bits in 1u64..5_000, hashes in 1u32..12, items in items()) {
        let mut f = filter(key, bits, hashes);
        for it in &items {
            f.insert(it);
        }
        for it in &items {
            prop_assert!(f.contains(it));
            prop_assert!(!f.check_and_insert(it), "a present item must not be reported new");
        }
    }

    #[test]
    fn atomic_agrees_with_plain(key in any::<[u8; 16]>(), items in items()) {
        let mut plain = filter(key, 2_048, 5);
        let atomic: AtomicBloomFilter = filter(key, 2_048, 5).into_atomic();
        for it in &items {
            prop_assert_eq!(plain.check_and_insert(it), atomic.check_and_insert(it));
        }
        prop_assert_eq!(plain, atomic.to_filter());
    }

    #[test]
    fn union_equals_inserting_both(key in any::<[u8; 16]>(), a in items(), b in items()) {
        let (mut fa, mut fb, mut both) = (filter(key, 4_000, 6), filter(key, 4_000, 6), filter(key, 4_000, 6));
        for it in &a { fa.insert(it); both.insert(it); }
        for it in &b { fb.insert(it); both.insert(it); }
        fa.union(&fb).unwrap();
        prop_assert_eq!(&fa, &both);
        for it in a.iter().chain(&b) {
            prop_assert!(fa.contains(it));
        }
    }

    #[test]
    fn intersect_keeps_common_items(key in any::<[u8; 16]>(), a in items(), b in items(), common in items()) {
        let (mut fa, mut fb) = (filter(key, 4_000, 6), filter(key, 4_000, 6));
        for it in a.iter().chain(&common) { fa.insert(it); }
        for it in b.iter().chain(&common) { fb.insert(it); }
        fa.intersect(&fb).unwrap();
        for it in &common {
            prop_assert!(fa.contains(it));
        }
    }

    #[test]
    fn mismatched_filters_are_rejected(
        key in any::<[u8; 16]>(), other_key in any::<[u8; 16]>(),
        bits in 64u64..5_000, hashes in 1u32..12, dbits in 0u64..3, dhashes in 0u32..3,
    ) {
        prop_assume!(key != other_key || dbits != 0 || dhashes != 0);
        let mut a = filter(key, bits, hashes);
        let b = filter(other_key, bits + dbits, hashes + dhashes);
        let before = a.clone();
        prop_assert!(matches!(a.union(&b), Err(Error::Incompatible(_))));
        prop_assert!(matches!(a.intersect(&b), Err(Error::Incompatible(_))));
        prop_assert_eq!(a, before, "a rejected combination must not change the filter");
    }

    #[test]
    fn snapshot_round_trip(key in any::<[u8; 16]>(), bits in 1u64..10_000, hashes in 1u32..20, items in items()) {
        let mut f = filter(key, bits, hashes);
        f.extend(&items);
        let bytes = f.to_bytes();
        let g: BloomFilter = BloomFilter::from_bytes(&bytes).unwrap();
        prop_assert_eq!(&g, &f);
        prop_assert_eq!(g.len(), f.len());
        prop_assert_eq!(g.expected_items(), f.expected_items());
        prop_assert_eq!(g.key(), f.key());
        let atomic: AtomicBloomFilter = AtomicBloomFilter::read_from(&bytes[..]).unwrap();
        prop_assert_eq!(atomic.to_filter(), f);
    }

    #[test]
    fn damaged_snapshots_are_errors(key in any::<[u8; 16]>(), items in items(), pos in any::<prop::sample::Index>(), flip in 1u8..=255) {
        let mut f = filter(key, 3_000, 4);
        f.extend(&items);
        let mut bytes = f.to_bytes();
        let i = pos.index(bytes.len());
        bytes[i] ^= flip;
        prop_assert!(BloomFilter::<url_dedup_bloom::SipHash13>::from_bytes(&bytes).is_err());
        let cut = pos.index(bytes.len());
        prop_assert!(BloomFilter::<url_dedup_bloom::SipHash13>::from_bytes(&f.to_bytes()[..cut]).is_err());
    }
}

#[test]
fn snapshot_with_another_hasher_is_rejected() {
    let f = BloomFilter::builder()
        .expected_items(100)
        .hasher(Xxh3::new(HashKey::from_bytes([1; 16])))
        .build()
        .unwrap();
    let err = BloomFilter::<url_dedup_bloom::SipHash13>::from_bytes(&f.to_bytes()).unwrap_err();
    assert!(matches!(err, Error::Incompatible(_)), "{err}");
    assert!(BloomFilter::<Xxh3>::from_bytes(&f.to_bytes()).is_ok());
}

#[test]
fn filters_beyond_two_to_the_32_bits_use_their_top_half() {
    // 2^33 bits is 1 GiB; building it is cheap (zeroed pages) but only a handful of words are
    // touched. With a 32-bit index, no position would ever land above 2^32.
    let f = BloomFilter::builder()
        .bits(1 << 33)
        .hashes(8)
        .build_atomic()
        .unwrap();
    let mut high = 0;
    for i in 0..1_000u32 {
        let d = f.hash(i.to_le_bytes());
        high += d.indexes(8, 1 << 33).filter(|&p| p >= 1 << 32).count();
        f.insert(i.to_le_bytes());
    }
    assert!(
        (3_500..4_500).contains(&high),
        "{high} of 8000 positions above 2^32"
    );
    assert!((0..1_000u32).all(|i| f.contains(i.to_le_bytes())));
}

#[test]
fn absurd_sizes_are_errors_not_aborts() {
    let err = BloomFilter::builder().bits(u64::MAX).build().unwrap_err();
    assert!(matches!(err, Error::OutOfMemory { .. }), "{err}");
    assert!(BloomFilter::builder().bits(0).build().is_err());
    assert!(BloomFilter::builder().bits(64).hashes(0).build().is_err());
    assert!(BloomFilter::builder().bits(64).hashes(65).build().is_err());
    assert!(
        BloomFilter::builder()
            .expected_items(10)
            .false_positive_rate(0.0)
            .build()
            .is_err()
    );
    assert!(
        BloomFilter::builder()
            .expected_items(10)
            .false_positive_rate(f64::NAN)
            .build()
            .is_err()
    );
}

#[test]
fn lying_snapshot_header_is_rejected_before_allocation() {
    // Rewrite a real snapshot's parameters to claim 2^60 bits, with a valid header checksum.
    use url_dedup_bloom::snapshot::{self, Kind, Params};
    let mut p = Params::new();
    p.put_u64(1 << 60)
        .put_u32(7)
        .put_u16(1)
        .put_bytes(&[0; 16])
        .put_u64(1)
        .put_u64(0);
    let mut forged = Vec::new();
    // Announce the matching word count but supply no payload.
    let words = (1u64 << 60) / 64;
    let _ = snapshot::write(
        &mut forged,
        Kind::BLOOM,
        p.as_bytes(),
        words,
        std::iter::empty(),
    );
    let err = BloomFilter::<url_dedup_bloom::SipHash13>::from_bytes(&forged).unwrap_err();
    assert!(
        err.to_string().contains("limit") || err.to_string().contains("announced"),
        "{err}"
    );
}
