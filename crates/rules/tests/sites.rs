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
    // By the page that links a URL: the sign-in form's URLs are split with their articles.
    let train = |u: &SiteUrl| u.from.is_multiple_of(2);
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
        total += unseen;
    }
    // The goal: at least 80% of the duplicate fetches avoided, at most 0.1% of the
    // pages missed (none, at this size).
    assert!(total.recall() >= 0.8, "{total:?}");
    assert_eq!(total.precision(), 1.0, "{total:?}");
    assert_eq!(total.pages_missed, 0);
}

#[test]
fn a_form_linked_with_every_return_address_is_one_url() {
    // One page with a URL per article: too few pages for `min_pages`, enough URLs for
    // `min_urls`. Learned from the even articles' links, it folds the odd ones'.
    let mut with_form = 0;
    for seed in 1..=8 {
        let site = Site::generate(seed, 60);
        let form: Vec<&SiteUrl> = site.urls().iter().filter(|u| u.from != u.page).collect();
        if form.is_empty() {
            continue;
        }
        with_form += 1;
        let mut learner = Learner::new(LearnOptions::default());
        for u in site.urls().iter().filter(|u| u.from.is_multiple_of(2)) {
            learner.add(&u.url, u128::from(u.page), None).unwrap();
        }
        let learned = learner.learn();
        let rules = Rules::new(&learned.rules);
        let keys: std::collections::HashSet<String> = form
            .iter()
            .map(|u| rules.apply(&u.url).into_owned())
            .collect();
        assert_eq!(keys.len(), 1, "seed {seed}: {keys:?}\n{}", learned.rules);
        let all = evaluate(site.urls(), |u| rules.apply(u).into_owned());
        assert_eq!((all.pages_missed, all.precision()), (0, 1.0), "seed {seed}");
    }
    assert!(with_form >= 4, "{with_form} of 8 sites have a form");
}
