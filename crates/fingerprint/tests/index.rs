//! The index finds every fingerprint within k bits and nothing beyond: checked against a
//! linear scan on random sets with planted neighbours.

use proptest::prelude::*;
use url_dedup_fingerprint::{NearIndex, SimHash};

/// `base` fingerprints, each with a neighbour at a distance of 0 to 6 bits.
fn clustered() -> impl Strategy<Value = (Vec<u64>, Vec<u64>)> {
    (
        prop::collection::vec(any::<u64>(), 1..200),
        prop::collection::vec((any::<u64>(), 0u32..=6, any::<u64>()), 1..200),
    )
        .prop_map(|(base, probes)| {
            let queries = probes
                .into_iter()
                .map(|(pick, bits, seed)| {
                    let mut q = base[(pick % base.len() as u64) as usize];
                    let mut s = seed;
                    for _ in 0..bits {
                        s = s
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        q ^= 1 << (s >> 58);
                    }
                    q
                })
                .collect();
            (base, queries)
        })
}

fn scan(stored: &[u64], q: u64, k: u32) -> Vec<SimHash> {
    let mut found: Vec<SimHash> = stored
        .iter()
        .filter(|&&f| (f ^ q).count_ones() <= k)
        .map(|&f| SimHash(f))
        .collect();
    found.sort_by_key(|f| (f.distance(SimHash(q)), *f));
    found.dedup();
    found
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn within_is_a_linear_scan((stored, queries) in clustered(), shape in 0usize..6) {
        let (k, blocks) = [(3, 4), (3, 5), (3, 6), (0, 1), (2, 3), (4, 7)][shape];
        let mut index = NearIndex::with_blocks(k, blocks).unwrap();
        for &f in &stored {
            index.insert(SimHash(f));
        }
        for &q in queries.iter().chain(&stored) {
            let expected = scan(&stored, q, k);
            prop_assert_eq!(index.within(SimHash(q)), expected.clone());
            prop_assert_eq!(index.nearest(SimHash(q)), expected.first().copied());
        }
        let mut all: Vec<SimHash> = index.iter().collect();
        all.sort();
        let mut distinct: Vec<SimHash> = stored.iter().map(|&f| SimHash(f)).collect();
        distinct.sort();
        distinct.dedup();
        prop_assert_eq!(index.len(), distinct.len() as u64);
        prop_assert_eq!(all, distinct);
    }

    #[test]
    fn snapshots_round_trip(stored in prop::collection::vec(any::<u64>(), 0..300)) {
        let mut index = NearIndex::new(3).unwrap();
        for &f in &stored {
            index.insert(SimHash(f));
        }
        let mut bytes = Vec::new();
        index.write_to(&mut bytes).unwrap();
        let back = NearIndex::read_from(&bytes[..]).unwrap();
        let (mut a, mut b): (Vec<_>, Vec<_>) = (index.iter().collect(), back.iter().collect());
        a.sort();
        b.sort();
        prop_assert_eq!(a, b);
        prop_assert_eq!(back.max_distance(), 3);
    }
}

/// check_and_insert keeps the first of a group of near duplicates.
#[test]
fn the_first_of_a_group_represents_it() {
    let mut index = NearIndex::new(3).unwrap();
    let first = SimHash(0x0f0f_0f0f_0f0f_0f0f);
    assert_eq!(index.check_and_insert(first), None);
    for bits in [0b1u64, 0b11, 0b111] {
        assert_eq!(index.check_and_insert(SimHash(first.0 ^ bits)), Some(first));
    }
    assert_eq!(index.len(), 1);
    assert_eq!(index.check_and_insert(SimHash(first.0 ^ 0b1111)), None);
    assert_eq!(index.len(), 2);
}

/// A large index: every planted neighbour is found, and the memory is what the docs say.
#[test]
fn a_hundred_thousand_fingerprints() {
    let mut index = NearIndex::new(3).unwrap();
    let stored: Vec<u64> = (1..=100_000u64)
        .map(url_dedup_fingerprint::feature_hash)
        .collect();
    for &f in &stored {
        index.insert(SimHash(f));
    }
    for (i, &f) in stored.iter().enumerate().step_by(97) {
        let q = f ^ (0b1001 << (i % 50)) ^ (1 << 63);
        assert_eq!(index.nearest(SimHash(q)), Some(SimHash(f)));
    }
    let per = index.memory_bytes() as f64 / index.len() as f64;
    assert!(
        (32.0 / 0.75..=32.0 / 0.375).contains(&per),
        "{per} bytes per fingerprint"
    );
}
