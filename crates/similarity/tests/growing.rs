//! The growing similarity filter: layers added as it fills keep its rate where a fixed-size
//! filter folds distinct pages by chance, and batches answer as single calls.

use proptest::prelude::*;
use url_dedup_bloom::HashKey;
use url_dedup_similarity::{FeatureHash, GrowingSimilarityFilter, SimilarityFilter};

fn first(expected: u64, fpr: f64) -> SimilarityFilter {
    SimilarityFilter::builder()
        .expected_items(expected)
        .false_positive_rate(fpr)
        .hash_key(HashKey::from_bytes([9; 16]))
        .feature_hash(FeatureHash::SipHash13)
        .build()
        .unwrap()
}

/// Distinct pages: each differs from every other in its last path segment (scoped to its
/// directory) and its page template, so none is similar to another.
fn page(i: u64) -> String {
    format!(
        "https://site{}.example/d{}/item-{i}.html?id={i}",
        i % 50,
        i % 7
    )
}

/// A filter sized for 200 URLs and handed 20,000 distinct pages: the fixed one ends up
/// folding a share of them by chance; the growing one folds next to none.
#[test]
fn a_filter_handed_far_more_urls_than_its_size_keeps_folding_by_chance_rare() {
    let mut fixed = first(200, 0.001);
    let mut growing = GrowingSimilarityFilter::new(first(200, 0.0005));
    let (mut fixed_folds, mut growing_folds) = (0, 0);
    for i in 0..20_000 {
        let url = page(i);
        fixed_folds += u32::from(fixed.check_and_insert(&url).is_similar());
        growing_folds += u32::from(growing.check_and_insert(&url).is_similar());
    }
    assert!(fixed_folds > 1_000, "the fixed filter folded {fixed_folds}");
    assert!(
        growing_folds < 20,
        "the growing filter folded {growing_folds}"
    );
    assert!(growing.layers() >= 7);
    // About the target of 0.001 (the first layer at 70% of it, the next ones at less).
    let rate = growing.measured_false_positive_rate();
    assert!(rate < 0.0015, "{rate}");
    assert!(fixed.measured_false_positive_rate() > 0.1);
    // What was recorded stays recorded, in whichever layer.
    assert!(
        (0..20_000)
            .step_by(997)
            .all(|i| growing.check(&page(i)).is_similar())
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Batches cut anywhere answer as one call per URL, through any number of layer changes,
    /// and a one-layer filter answers as the plain filter it grew from.
    #[test]
    fn batches_answer_as_single_calls(
        items in proptest::collection::vec(0u64..400, 0..600),
        expected in 1u64..60,
        cuts in proptest::collection::vec(0usize..600, 0..4),
    ) {
        let urls: Vec<String> = items.iter().map(|&i| page(i)).collect();
        let mut single = GrowingSimilarityFilter::new(first(expected, 0.01));
        let mut plain = first(expected, 0.01);
        let mut expected_verdicts = Vec::new();
        for url in &urls {
            let layers_before = single.layers();
            let verdict = single.check_and_insert(url);
            if layers_before == 1 {
                prop_assert_eq!(plain.check_and_insert(url), verdict);
            }
            expected_verdicts.push(verdict);
        }
        let mut batched = GrowingSimilarityFilter::new(first(expected, 0.01));
        let mut cuts = cuts;
        cuts.push(urls.len());
        cuts.sort_unstable();
        let (mut verdicts, mut at) = (Vec::new(), 0);
        for cut in cuts {
            let cut = cut.min(urls.len()).max(at);
            verdicts.extend(batched.check_and_insert_batch(&urls[at..cut]));
            at = cut;
        }
        prop_assert_eq!(verdicts, expected_verdicts);
        prop_assert_eq!(batched.layers(), single.layers());
        prop_assert!(batched == single);
    }
}
