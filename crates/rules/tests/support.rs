//! What backs a rule: pages it folds, or fetches it saves.

use url_dedup_rules::{LearnOptions, Learner};

fn rules(pages: &[(String, u128)]) -> String {
    let mut learner = Learner::new(LearnOptions::default());
    for (url, digest) in pages {
        learner.add(url, *digest, None).unwrap();
    }
    learner.learn().rules.to_string()
}

/// A wiki's sign-in form, linked from each of `n` articles with the article as `returnto=`,
/// and once by its short name.
fn form(n: usize) -> Vec<(String, u128)> {
    let mut pages: Vec<(String, u128)> = (0..n)
        .map(|i| {
            let url = format!("https://w.example/index.php?title=Login&returnto=A{i}");
            (url, 1_000)
        })
        .collect();
    pages.push(("https://w.example/index.php/Login".into(), 1_000));
    pages
}

#[test]
fn one_page_with_many_urls_backs_a_rule_by_the_fetches_it_saves() {
    let text = rules(&form(20));
    assert!(text.contains(r#"ignore-param "returnto""#), "{text}");
    // Below `min_urls` fetches saved, one page is not enough.
    let text = rules(&form(8));
    assert!(!text.contains(r#"ignore-param "returnto""#), "{text}");
}

#[test]
fn moving_a_group_another_rule_made_saves_nothing_new() {
    // One article under both spellings, and the form: `?title=` -> `/` folds two pages, and
    // saves two fetches. That the form's 20 URLs move with it is no evidence: `returnto` had
    // put them together already.
    let mut pages = form(20);
    pages.push(("https://w.example/index.php?title=A0".into(), 0));
    pages.push(("https://w.example/index.php/A0".into(), 0));
    let text = rules(&pages);
    assert!(text.contains(r#"ignore-param "returnto""#), "{text}");
    assert!(!text.contains(r#"replace"#), "{text}");
}
