//! The growing filter keeps its promises past any estimate: every inserted item is found, a
//! fresh item is a false positive no more often than the target, threads racing on the same
//! items while layers are added admit each item once, and snapshots bring back every layer.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};

use proptest::prelude::*;
use url_dedup_bloom::{HashKey, SipHash13};
use url_dedup_segmented::{GrowingFilter, Placement};

fn url(i: u64) -> String {
    format!("https://example.com/page/{i}")
}

#[test]
fn the_rate_stays_below_the_target_however_far_past_the_estimate() {
    const N: u64 = 200_000;
    const TARGET: f64 = 0.01;
    for placement in [Placement::Scattered, Placement::Split] {
        // Sized for 1,000 items, given 200 times as many.
        let f = GrowingFilter::builder()
            .expected_items(1_000)
            .false_positive_rate(TARGET)
            .placement(placement)
            .key(HashKey::from_bytes([1; 16]))
            .build()
            .unwrap();
        let mut false_positives_while_filling = 0u64;
        for i in 0..N {
            if !f.check_and_insert(url(i)) {
                false_positives_while_filling += 1;
            }
        }
        assert!(f.layers() >= 7, "{placement:?}: {} layers", f.layers());
        assert!(f.expected_fpr() < TARGET);
        assert_eq!(f.admitted(), N - false_positives_while_filling);
        assert!((0..N).all(|i| f.contains(url(i))), "a false negative");
        let probes = 200_000u64;
        let hits = (N..N + probes).filter(|&i| f.contains(url(i))).count() as f64;
        let measured = hits / probes as f64;
        let sigma = (TARGET * (1.0 - TARGET) / probes as f64).sqrt();
        assert!(
            measured <= TARGET + 4.0 * sigma,
            "{placement:?}: measured {measured}, target {TARGET}"
        );
    }
}

#[test]
fn racing_threads_admit_each_item_once_while_layers_are_added() {
    const ITEMS: usize = 60_000;
    const THREADS: usize = 4;
    let f = Arc::new(
        GrowingFilter::builder()
            .expected_items(500)
            .false_positive_rate(1e-4)
            .key(HashKey::from_bytes([4; 16]))
            .build()
            .unwrap(),
    );
    let admissions: Arc<Vec<AtomicU8>> = Arc::new((0..ITEMS).map(|_| AtomicU8::new(0)).collect());
    let start = Arc::new(Barrier::new(THREADS));
    let led: Arc<Vec<AtomicBool>> = Arc::new(
        admissions
            .chunks(100)
            .map(|_| AtomicBool::new(false))
            .collect(),
    );
    let racers: Vec<_> = (0..THREADS)
        .map(|me| {
            let (f, admissions, start, led) =
                (f.clone(), admissions.clone(), start.clone(), led.clone());
            std::thread::spawn(move || {
                let mine = AtomicU64::new(0);
                // Every thread discovers the same items in the same order, so they race on
                // each one, and on each layer change. They start each round of 100 items
                // together, once the round's leader (each thread in turn) has inserted its
                // first item: on two busy cores the scheduler could otherwise let one thread
                // run through everything before the others start (one run admitted 59,988 of
                // 60,000 on one thread and none on two others).
                for (round, items) in admissions.chunks(100).enumerate() {
                    start.wait();
                    if round % THREADS == me {
                        if f.check_and_insert(url((round * 100) as u64)) {
                            items[0].fetch_add(1, Ordering::Relaxed);
                            mine.fetch_add(1, Ordering::Relaxed);
                        }
                        led[round].store(true, Ordering::Release);
                    } else {
                        while !led[round].load(Ordering::Acquire) {
                            std::thread::yield_now();
                        }
                    }
                    for (j, admitted) in items.iter().enumerate() {
                        if f.check_and_insert(url((round * 100 + j) as u64)) {
                            admitted.fetch_add(1, Ordering::Relaxed);
                            mine.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                mine.into_inner()
            })
        })
        .collect();
    let per_thread: Vec<u64> = racers.into_iter().map(|t| t.join().unwrap()).collect();
    let twice = admissions
        .iter()
        .filter(|a| a.load(Ordering::Relaxed) > 1)
        .count();
    assert_eq!(twice, 0, "items admitted by two threads");
    let total: u64 = per_thread.iter().sum();
    // False positives at a rate below 1e-4: a handful at most.
    assert!(
        total >= ITEMS as u64 - 20,
        "only {total} of {ITEMS} admitted"
    );
    assert!(f.layers() >= 6, "the race must span layer changes");
    // The threads really raced: each one won some of the shared items.
    assert!(per_thread.iter().all(|&n| n > 0), "{per_thread:?}");
}

#[test]
fn a_snapshot_brings_back_every_layer() {
    let f = GrowingFilter::builder()
        .expected_items(100)
        .false_positive_rate(0.001)
        .build()
        .unwrap();
    f.check_and_insert_batch(&(0..5_000).map(url).collect::<Vec<_>>());
    let mut bytes = Vec::new();
    f.write_to(&mut bytes).unwrap();
    let g = GrowingFilter::<SipHash13>::read_from(&bytes[..]).unwrap();
    assert_eq!(g.layouts(), f.layouts());
    assert_eq!(g.admitted(), f.admitted());
    assert_eq!(g.plan(), f.plan());
    assert_eq!(g.key(), f.key());
    assert!((0..5_000).all(|i| g.contains(url(i))));
    // The restored filter goes on growing on the same plan.
    g.check_and_insert_batch(&(5_000..40_000).map(url).collect::<Vec<_>>());
    assert!(g.layers() > f.layers());
    assert!(g.expected_fpr() < 0.001);
}

#[test]
fn damaged_snapshots_are_refused() {
    let f = GrowingFilter::builder()
        .expected_items(10)
        .false_positive_rate(0.01)
        .segment_bits(64)
        .build()
        .unwrap();
    (0..50).for_each(|i| {
        f.check_and_insert(url(i));
    });
    let mut bytes = Vec::new();
    f.write_to(&mut bytes).unwrap();
    for cut in 0..bytes.len() {
        assert!(GrowingFilter::<SipHash13>::read_from(&bytes[..cut]).is_err());
    }
    for i in 0..bytes.len() {
        for bit in 0..8 {
            let mut damaged = bytes.clone();
            damaged[i] ^= 1 << bit;
            assert!(
                GrowingFilter::<SipHash13>::read_from(&damaged[..]).is_err(),
                "flip of bit {bit} in byte {i} accepted"
            );
        }
    }
}

/// A filter at 1% with a first layer of `first` items, keyed with `key` repeated.
fn at_one_percent(first: u64, key: u8) -> GrowingFilter {
    GrowingFilter::builder()
        .expected_items(first)
        .false_positive_rate(0.01)
        .key(HashKey::from_bytes([key; 16]))
        .build()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A batch answers as the same items one at a time, through any number of layer changes.
    #[test]
    fn batches_answer_as_single_calls(
        items in proptest::collection::vec(0u64..3_000, 0..2_000),
        first in 1u64..200,
    ) {
        let build = || at_one_percent(first, 4);
        let (single, batched) = (build(), build());
        let urls: Vec<String> = items.iter().map(|&i| url(i)).collect();
        let one_by_one: Vec<bool> = urls.iter().map(|u| single.check_and_insert(u)).collect();
        prop_assert_eq!(batched.check_and_insert_batch(&urls), one_by_one);
        prop_assert_eq!(batched.layers(), single.layers());
        prop_assert!(urls.iter().all(|u| batched.contains(u)));
    }

    /// An owner's `&mut` calls (one at a time and batched) give the shared path's answers,
    /// layers and bits, through any number of layer changes.
    #[test]
    fn exclusive_calls_answer_as_shared_ones(
        items in proptest::collection::vec(0u64..3_000, 0..2_000),
        first in 1u64..200,
        cut in 0usize..2_000,
    ) {
        let build = || at_one_percent(first, 5);
        let (shared, mut single, mut batched) = (build(), build(), build());
        let urls: Vec<String> = items.iter().map(|&i| url(i)).collect();
        let expected: Vec<bool> = urls.iter().map(|u| shared.check_and_insert(u)).collect();
        let one_by_one: Vec<bool> = urls.iter().map(|u| single.check_and_insert_mut(u)).collect();
        prop_assert_eq!(&one_by_one, &expected);
        let (head, tail) = urls.split_at(cut.min(urls.len()));
        let digests: Vec<_> = tail.iter().map(|u| batched.hash(u)).collect();
        let mut answers = batched.check_and_insert_batch_mut(head);
        answers.extend(batched.check_and_insert_digests_mut(&digests));
        prop_assert_eq!(&answers, &expected);
        for f in [&single, &batched] {
            prop_assert_eq!(f.layers(), shared.layers());
            prop_assert_eq!(f.admitted(), shared.admitted());
            let ones = |f: &GrowingFilter| -> Vec<u64> {
                f.layer_stores().iter().map(|(s, _, _)| s.count_ones()).collect()
            };
            prop_assert_eq!(ones(f), ones(&shared));
            prop_assert!(urls.iter().all(|u| f.contains(u)));
        }
    }
}
