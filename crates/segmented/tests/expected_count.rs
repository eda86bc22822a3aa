//! Up to its expected count the growing filter is one layer of about a blocked filter's size,
//! at its target rate; it adds a layer only once more items arrive.

use url_dedup_bloom::HashKey;
use url_dedup_bloom::sizing::Sizing;
use url_dedup_segmented::GrowingFilter;

fn url(i: u64) -> String {
    format!("https://example.com/page/{i}")
}

fn filter(expected: u64, fpr: f64) -> GrowingFilter {
    GrowingFilter::builder()
        .expected_items(expected)
        .false_positive_rate(fpr)
        .key(HashKey::from_bytes([23; 16]))
        .build()
        .unwrap()
}

/// Inserts fresh URLs from `*next` on until `admitted` items were taken as new (a false
/// positive is not admitted, so the filter holds exactly `admitted` items).
fn fill_to(f: &GrowingFilter, admitted: u64, next: &mut u64) {
    while f.admitted() < admitted {
        f.check_and_insert(url(*next));
        *next += 1;
    }
}

#[test]
fn at_the_expected_count_it_is_one_layer_of_a_blocked_filters_size() {
    const N: u64 = 100_000;
    for fpr in [0.01, 0.001, 1e-6, 1e-9] {
        let f = filter(N, fpr);
        fill_to(&f, N, &mut 0);
        assert_eq!(f.layers(), 1, "at {fpr}");
        // A blocked filter with the same segments, sized for N items at the target rate.
        let blocked = Sizing::blocked(N, fpr, f.plan().segment_bits).unwrap().bits;
        let ratio = f.bits() as f64 / blocked as f64;
        assert!(
            ratio <= 1.10,
            "at {fpr}: {ratio} times a blocked filter's bits"
        );
        assert!(f.expected_fpr() < fpr, "at {fpr}: {}", f.expected_fpr());
    }
}

/// The most items a layer of `capacity` takes before the next one is added: 1/128 more, and
/// one (the item whose admission is reported past the capacity).
fn late(capacity: u64) -> u64 {
    capacity + capacity / 128 + 1
}

#[test]
fn a_layer_is_added_only_past_the_expected_count() {
    for expected in [1, 10, 1_000, 100_000] {
        let f = filter(expected, 0.01);
        let mut next = 0;
        fill_to(&f, expected, &mut next);
        assert_eq!(f.layers(), 1, "{expected} items");
        fill_to(&f, late(expected), &mut next);
        assert_eq!(f.layers(), 2, "{} items", f.admitted());
        // The second layer, twice the first's capacity, takes items from there.
        fill_to(&f, 3 * expected, &mut next);
        assert_eq!(f.layers(), 2, "{} items", f.admitted());
        fill_to(&f, late(expected) + late(2 * expected), &mut next);
        assert_eq!(f.layers(), 3, "{} items", f.admitted());
    }
}

#[test]
fn an_owners_calls_grow_at_the_same_count() {
    let mut f = filter(1_000, 0.01);
    let mut admitted = 0;
    let mut next = 0;
    while admitted < 1_000 {
        admitted += u64::from(f.check_and_insert_mut(url(next)));
        next += 1;
    }
    assert_eq!(f.layers(), 1);
    assert!(f.check_and_insert_mut(url(next)));
    assert!(f.check_and_insert_mut(url(next + 1)));
    assert_eq!(f.layers(), 2);
}

/// With `queries` absent items and a true rate p, the measured rate has standard deviation
/// sqrt(p (1 - p) / queries); a filter at its target exceeds it by six deviations about once
/// in a billion runs (and the keys are fixed, so a run's outcome never changes).
#[test]
fn the_measured_rate_at_the_expected_count_is_within_the_target() {
    const N: u64 = 200_000;
    const QUERIES: u64 = 1_000_000;
    for fpr in [0.01, 0.001] {
        let f = filter(N, fpr);
        let mut next = 0;
        fill_to(&f, N, &mut next);
        assert_eq!(f.layers(), 1);
        let hits = (0..QUERIES)
            .filter(|i| f.contains(format!("https://example.org/absent/{i}")))
            .count() as f64;
        let measured = hits / QUERIES as f64;
        let sd = (fpr * (1.0 - fpr) / QUERIES as f64).sqrt();
        assert!(measured <= fpr + 6.0 * sd, "at {fpr}: measured {measured}");
        // A filter that set far too many bits would show a rate near zero.
        assert!(measured > fpr / 4.0, "at {fpr}: measured {measured}");
    }
}

/// A snapshot written before growth waited for the capacity and the default rate share changed
/// (commit 32bce40: layers at half the rate of the one before, the first grown at 95 of its 100
/// items). It loads as written and keeps growing on its own schedule.
#[test]
fn a_snapshot_of_the_earlier_schedule_loads_and_keeps_its_schedule() {
    let bytes = include_bytes!("data/growing-halving.snapshot");
    let f = GrowingFilter::<url_dedup_bloom::SipHash13>::read_from(&bytes[..]).unwrap();
    assert_eq!(f.key(), HashKey::from_bytes([31; 16]));
    assert_eq!(f.layers(), 4);
    assert_eq!(f.admitted(), 997);
    assert_eq!(f.plan().growth.tightening, 0.5);
    let rates: Vec<f64> = f.layer_stores().iter().map(|&(_, _, r)| r).collect();
    assert_eq!(rates, [0.005, 0.0025, 0.00125, 0.000625]);
    assert!((0..1_000).all(|i| f.contains(url(i))));
    let mut next = 1_000;
    fill_to(&f, 3_000, &mut next);
    assert_eq!(f.layers(), 5);
    assert_eq!(f.layer_stores()[4].2, 0.0003125);
    assert!(f.expected_fpr() < 0.01);
}
