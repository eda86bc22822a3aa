//! Invariants over random inputs: no false negatives, batch == sequential (shared and `&mut`),
//! the `&mut self` path == the shared one, segment export and import round trip, incremental checkpoints replayed over a base == the live filter.

use proptest::prelude::*;
use url_dedup_bloom::HashKey;
use url_dedup_segmented::{Layout, Placement, SegmentedBloomFilter};

type Filter = SegmentedBloomFilter<url_dedup_bloom::SipHash13>;

fn filter(layout: Layout, key: u8) -> SegmentedBloomFilter {
    SegmentedBloomFilter::builder()
        .layout(layout)
        .key(HashKey::from_bytes([key; 16]))
        .build()
        .unwrap()
}

/// Scattered layouts of any hash count, and split ones (eight 64-bit lanes of a 512-bit segment
/// among them, the vector kernel).
fn layouts() -> impl Strategy<Value = Layout> {
    let segment_bits = || prop::sample::select(vec![64u64, 128, 512, 4096, 1 << 16]);
    prop_oneof![
        (1u64..64, segment_bits(), 1u32..12)
            .prop_map(|(segments, bits, hashes)| Layout::new(segments, bits, hashes).unwrap()),
        (1u64..64, segment_bits(), 0u32..4).prop_map(|(segments, bits, log)| {
            Layout::with_placement(segments, bits, 1 << log, Placement::Split).unwrap()
        }),
        (1u64..64).prop_map(|segments| {
            Layout::with_placement(segments, 512, 8, Placement::Split).unwrap()
        }),
    ]
}

fn items() -> impl Strategy<Value = Vec<Vec<u8>>> {
    // Small alphabet and lengths so that repeats are common.
    prop::collection::vec(prop::collection::vec(0u8..4, 0..6), 0..300)
}

fn words(f: &SegmentedBloomFilter) -> Vec<u64> {
    let mut out = Vec::new();
    for s in 0..f.segments() {
        f.store().read_segment(s, &mut out).unwrap();
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn no_false_negatives(layout in layouts(), items in items(), key in any::<u8>()) {
        let f = filter(layout, key);
        for item in &items {
            f.insert(item);
        }
        for item in &items {
            prop_assert!(f.contains(item));
            prop_assert!(!f.check_and_insert(item));
        }
        prop_assert!(f.contains_batch(&items).into_iter().all(|x| x));
    }

    #[test]
    fn exclusive_path_equals_shared_path(layout in layouts(), items in items()) {
        let shared = filter(layout, 3);
        let mut exclusive = filter(layout, 3);
        for item in &items {
            prop_assert_eq!(shared.check_and_insert(item), exclusive.check_and_insert_mut(item));
        }
        prop_assert_eq!(words(&shared), words(&exclusive));
        prop_assert_eq!(shared.store().dirty_segments(), exclusive.store().dirty_segments());
    }

    #[test]
    fn batch_equals_sequential(layout in layouts(), items in items(), split in 0usize..300) {
        let one = filter(layout, 1);
        let batch = filter(layout, 1);
        let store_path = filter(layout, 1);
        let sequential: Vec<bool> = items.iter().map(|i| one.check_and_insert(i)).collect();
        let split = split.min(items.len());
        let mut batched = batch.check_and_insert_batch(&items[..split]);
        batched.extend(batch.check_and_insert_batch(&items[split..]));
        prop_assert_eq!(&batched, &sequential);
        prop_assert_eq!(&store_path.try_check_and_insert_batch(&items).unwrap(), &sequential);
        let mut exclusive = filter(layout, 1);
        let mut exclusive_batched = exclusive.check_and_insert_batch_mut(&items[..split]);
        exclusive_batched.extend(exclusive.check_and_insert_batch_mut(&items[split..]));
        prop_assert_eq!(&exclusive_batched, &sequential);
        prop_assert_eq!(words(&one), words(&batch));
        prop_assert_eq!(words(&one), words(&exclusive));
        prop_assert_eq!(one.store().dirty_segments(), exclusive.store().dirty_segments());
        let queried: Vec<bool> = items.iter().map(|i| one.contains(i)).collect();
        prop_assert_eq!(batch.contains_batch(&items), queried.clone());
        prop_assert_eq!(store_path.try_contains_batch(&items).unwrap(), queried);
    }

    #[test]
    fn export_import_round_trip(
        layout in layouts(),
        items in items(),
        pick in prop::collection::btree_set(0u64..64, 0..20),
    ) {
        let a = filter(layout, 3);
        let b = filter(layout, 3);
        for item in &items {
            a.insert(item);
        }
        let chosen: Vec<u64> = pick.into_iter().filter(|&s| s < layout.segments()).collect();
        let mut export = Vec::new();
        a.export_segments(&mut export, &chosen).unwrap();
        prop_assert_eq!(b.import_segments(&export[..]).unwrap(), chosen.len() as u64);
        for s in 0..layout.segments() {
            let (mut x, mut y) = (Vec::new(), Vec::new());
            a.store().read_segment(s, &mut x).unwrap();
            b.store().read_segment(s, &mut y).unwrap();
            if chosen.contains(&s) {
                prop_assert_eq!(x, y);
            } else {
                prop_assert!(y.iter().all(|&w| w == 0));
            }
        }
        // The whole filter round-trips through a snapshot, bit for bit.
        let c = Filter::from_bytes(&a.to_bytes()).unwrap();
        prop_assert_eq!(words(&a), words(&c));
        prop_assert_eq!(c.layout(), a.layout());
    }

    #[test]
    fn checkpoints_over_base_rebuild_the_live_filter(
        layout in layouts(),
        rounds in prop::collection::vec(items(), 1..5),
    ) {
        let live = filter(layout, 9);
        for item in &rounds[0] {
            live.insert(item);
        }
        let base = live.to_bytes();
        let mut deltas = Vec::new();
        for round in &rounds[1..] {
            for item in round {
                live.insert(item);
            }
            let mut delta = Vec::new();
            live.checkpoint(&mut delta).unwrap();
            deltas.push(delta);
        }
        prop_assert!(live.dirty_segments().is_empty());
        let restored = Filter::from_bytes(&base).unwrap();
        for delta in &deltas {
            restored.import_segments(&delta[..]).unwrap();
        }
        prop_assert_eq!(words(&restored), words(&live));
    }
}
