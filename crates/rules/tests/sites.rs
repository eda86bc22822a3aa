//! Rules learned from half of a generated site fold the aliases of the other half, and no
//! page of it, on sites whose spellings are drawn at random.

use url_dedup_rules::testing::{Site, SiteUrl, evaluate};
use url_dedup_rules::{LearnOptions, Learner, Rules};

/// Learns from the URLs of the pages `train` picks; returns the rules and the evaluation on
/// the other pages' URLs.
fn learn_half(
    seed: u64,
) -> (
    String,
    url_dedup_rules::testing::Evaluation,
    url_dedup_rules::testing::Evaluation,
) {
    let site = Site::generate(seed, 150);
    let train = |u: &SiteUrl| u.page.is_multiple_of(2);
    let mut learner = Learner::new(LearnOptions::default());
    for u in site.urls().iter().filter(|u| train(u)) {
        learner.add(&u.url, u128::from(u.page), None).unwrap();
    }
    let learned = learner.learn();
    let rules = Rules::new(&learned.rules);
    let unseen: Vec<SiteUrl> = site.urls().iter().filter(|u| !train(u)).cloned().collect();
    let on_unseen = evaluate(&unseen, |u| rules.apply(u).into_owned());
    let on_all = evaluate(site.urls(), |u| rules.apply(u).into_owned());
    (learned.rules.to_string(), on_unseen, on_all)
}

#[test]
fn rules_generalize_to_unseen_pages() {
    let mut total = url_dedup_rules::testing::Evaluation::default();
    for seed in 1..=8 {
        let (rules, unseen, all) = learn_half(seed);
        assert_eq!(all.pages_missed, 0, "seed {seed}\n{rules}");
        total.duplicates += unseen.duplicates;
        total.avoided += unseen.avoided;
        total.skipped += unseen.skipped;
        total.skipped_right += unseen.skipped_right;
        total.pages += unseen.pages;
        total.pages_missed += unseen.pages_missed;
    }
    // The goal: at least 80% of the duplicate fetches avoided, at most 0.1% of the
    // pages missed (none, at this size).
    assert!(total.recall() >= 0.8, "{total:?}");
    assert_eq!(total.precision(), 1.0, "{total:?}");
    assert_eq!(total.pages_missed, 0);
}
