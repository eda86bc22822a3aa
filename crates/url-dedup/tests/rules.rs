//! Rules compose with canonicalization on every path a URL can take through the facade.

use url_dedup::UrlDedup;
use url_dedup::rules::{RuleSet, Rules};

fn rules() -> Rules {
    let set = RuleSet::parse(
        "rules-format 1\nhost \"shop.example\"\nignore-param \"ref\" in \"/**\"\nreplace \"/print/\" \"/\"\n",
    )
    .unwrap();
    Rules::new(&set)
}

#[test]
fn every_path_decides_on_the_rewritten_form() {
    let d = UrlDedup::builder().rules(rules()).build().unwrap();
    // Canonicalization first (host case, sorted query), then the rules.
    assert_eq!(
        d.canonicalize("https://SHOP.example/print/item/7?ref=home&b=1")
            .unwrap(),
        "https://shop.example/item/7?b=1"
    );
    assert!(
        d.check_and_insert("https://shop.example/item/7?b=1")
            .unwrap()
            .is_new()
    );
    assert!(
        !d.check_and_insert("https://SHOP.example/print/item/7?ref=x&b=1")
            .unwrap()
            .is_new()
    );
    // The batch and prepared paths the command takes agree.
    let p = d.preparer();
    let (key, digest) = p
        .prepare(b"https://shop.example/print/item/8?ref=a")
        .unwrap();
    assert_eq!(&*key, b"https://shop.example/item/8");
    let decided = d.check_and_insert_prepared([(&*key, digest)]);
    assert!(decided[0].as_ref().unwrap().0.is_new());
    let batch = d.check_and_insert_batch([
        "https://shop.example/item/8",
        "https://other.example/print/x",
    ]);
    assert!(!batch[0].as_ref().unwrap().is_new());
    assert!(batch[1].as_ref().unwrap().is_new());
    assert!(d.contains("https://shop.example/print/item/8").unwrap());
}

#[test]
fn without_canonicalization_rules_read_the_line() {
    let d = UrlDedup::builder()
        .no_canonicalization()
        .rules(rules())
        .build()
        .unwrap();
    assert!(
        d.check_and_insert("https://shop.example/print/a")
            .unwrap()
            .is_new()
    );
    assert!(
        !d.check_and_insert("https://shop.example/a")
            .unwrap()
            .is_new()
    );
    // Not UTF-8: compared as it is.
    let p = d.preparer();
    assert_eq!(
        &*p.prepare(b"https://shop.example/print/\xff").unwrap().0,
        b"https://shop.example/print/\xff"
    );
}

#[test]
fn a_state_restores_with_other_rules() {
    let d = UrlDedup::builder()
        .expected_urls(1000)
        .rules(rules())
        .build()
        .unwrap();
    d.check_and_insert("https://shop.example/print/a").unwrap();
    let mut state = Vec::new();
    d.write_to(&mut state).unwrap();
    let back = UrlDedup::builder().restore(&state[..]).unwrap();
    // Recorded under the rules: the rewritten form is seen, the alias is new without them.
    assert!(
        !back
            .check_and_insert("https://shop.example/a")
            .unwrap()
            .is_new()
    );
    assert!(
        back.check_and_insert("https://shop.example/print/a")
            .unwrap()
            .is_new()
    );
}
