//! The facade's behaviour as a crawler relies on it: one verdict per URL, stable across
//! threads and across a snapshot.

use std::sync::Arc;

use proptest::prelude::*;
use url_dedup::bloom::HashKey;
use url_dedup::similarity::Preset;
use url_dedup::{Error, FilterKind, Outcome, UrlDedup};

#[test]
fn spellings_of_one_page_are_duplicates() {
    let d = UrlDedup::builder().expected_urls(1_000).build().unwrap();
    assert_eq!(
        d.check_and_insert("https://example.com/a/b?x=1&y=2")
            .unwrap(),
        Outcome::New
    );
    for same in [
        "HTTPS://EXAMPLE.COM/a/b?x=1&y=2",
        "https://example.com:443/a/./b?x=1&y=2",
        "https://example.com/a/c/../b?y=2&x=1",
        "https://example.com/a/b?x=1&y=2#section",
        "https://example.com/a/b?x=1&y=2&utm_source=feed",
        "https://example.com/%61/b?x=1&y=2",
    ] {
        assert_eq!(
            d.check_and_insert(same).unwrap(),
            Outcome::Duplicate,
            "{same}"
        );
    }
    assert_eq!(
        d.check_and_insert("https://example.com/a/b?x=1").unwrap(),
        Outcome::New
    );
}

#[test]
fn invalid_urls_are_errors_and_record_nothing() {
    let d = UrlDedup::builder().expected_urls(1_000).build().unwrap();
    for bad in [
        "",
        "relative/path",
        "ftp://example.com/",
        "javascript:alert(1)",
        "http://",
    ] {
        assert!(
            matches!(d.check_and_insert(bad), Err(Error::InvalidUrl(_))),
            "{bad:?}"
        );
    }
    assert!(d.estimated_urls() < 0.5);
}

#[test]
fn similar_urls_are_folded_and_explained() {
    let d = UrlDedup::builder()
        .expected_urls(1_000)
        .similarity(Preset::Crawler)
        .build()
        .unwrap();
    assert!(
        d.check_and_insert("https://shop.example/list?sort=price&order=asc")
            .unwrap()
            .is_new()
    );
    let Outcome::Similar(why) = d
        .check_and_insert("https://shop.example/list?sort=name&order=desc")
        .unwrap()
    else {
        panic!("expected similar");
    };
    assert!(why.features().count() > 0);
    // Recorded as seen: the same URL again is an exact duplicate now.
    assert_eq!(
        d.check_and_insert("https://shop.example/list?sort=name&order=desc")
            .unwrap(),
        Outcome::Duplicate
    );
    // A different template on the same site is new.
    assert!(
        d.check_and_insert("https://shop.example/item/17")
            .unwrap()
            .is_new()
    );
}

#[test]
fn concurrent_callers_share_one_state() {
    let d = Arc::new(UrlDedup::builder().expected_urls(100_000).build().unwrap());
    let handles: Vec<_> = (0..2)
        .map(|t| {
            let d = Arc::clone(&d);
            std::thread::spawn(move || {
                (0..20_000)
                    .filter(|i| {
                        let url = format!("https://example.com/{}", (i * 7 + t) % 30_000);
                        d.check_and_insert(&url).unwrap().is_new()
                    })
                    .count()
            })
        })
        .collect();
    let admitted: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
    // 40,000 checks over 30,000 distinct URLs with the default segmented filter: never
    // admitted twice (exactly-once), and missing only the filter's rare false positives.
    let distinct: std::collections::HashSet<usize> = (0..2)
        .flat_map(|t| (0..20_000).map(move |i| (i * 7 + t) % 30_000))
        .collect();
    let distinct = distinct.len();
    assert!(
        admitted <= distinct,
        "{admitted} admitted of {distinct}: a URL was admitted twice"
    );
    assert!(
        admitted + 100 >= distinct,
        "{admitted} admitted of {distinct}"
    );
}

/// A similarity filter that grew past its first layer is written and read back whole: the
/// restored deduplicator folds exactly what the original folds, including URLs whose features
/// were recorded in different layers.
#[test]
fn a_grown_similarity_filter_round_trips_through_a_state() {
    let build = || {
        UrlDedup::builder()
            .expected_urls(50)
            .similarity(Preset::Crawler)
            .hash_key(HashKey::from_bytes([8; 16]))
    };
    let d = build().build().unwrap();
    for i in 0..2_000 {
        d.check_and_insert(&format!("https://s{}.example/d{i}/p{i}.html", i % 9))
            .unwrap();
    }
    // Grown: several layers of each filter.
    assert!(d.memory_bytes() > 8 * build().build().unwrap().memory_bytes());
    let mut state = Vec::new();
    d.write_to(&mut state).unwrap();
    let r = build().restore(&state[..]).unwrap();
    assert_eq!(r.memory_bytes(), d.memory_bytes());
    for i in 0..300 {
        // Other query values: similar to what was recorded, in whichever layer.
        let near = format!("https://s{}.example/d{i}/p{i}.html?ref=rss", i % 9);
        let far = format!("https://other{i}.example/x{i}/y{i}.php");
        let restored = r.check_and_insert(&near).unwrap();
        assert_eq!(restored, d.check_and_insert(&near).unwrap(), "{near}");
        assert!(matches!(restored, Outcome::Similar(_)), "{near}");
        assert_eq!(
            r.check_and_insert(&far).unwrap(),
            d.check_and_insert(&far).unwrap(),
            "{far}"
        );
    }
}

#[test]
fn state_round_trip_keeps_every_url() {
    let d = UrlDedup::builder()
        .expected_urls(10_000)
        .similarity(Preset::Document004)
        .hash_key(HashKey::from_bytes([9; 16]))
        .build()
        .unwrap();
    let urls: Vec<String> = (0..2_000)
        .map(|i| format!("https://site{}.example/p/{i}", i % 13))
        .collect();
    for u in &urls {
        d.check_and_insert(u).unwrap();
    }
    let mut state = Vec::new();
    d.write_to(&mut state).unwrap();

    let r = UrlDedup::builder()
        .similarity(Preset::Document004)
        .restore(&state[..])
        .unwrap();
    for u in &urls {
        assert_eq!(r.check_and_insert(u).unwrap(), Outcome::Duplicate, "{u}");
    }
    // Asking for the wrong components is a clear error, not a silently different filter.
    assert!(matches!(
        UrlDedup::builder().restore(&state[..]),
        Err(Error::ConfigMismatch { .. })
    ));
    assert!(matches!(
        UrlDedup::builder()
            .accept_config_change()
            .restore(&state[..]),
        Err(Error::StateMismatch(_))
    ));
    // Damage anywhere is detected.
    for pos in (0..state.len()).step_by(state.len() / 50 + 1) {
        let mut bad = state.clone();
        bad[pos] ^= 0x55;
        assert!(
            UrlDedup::builder()
                .similarity(Preset::Document004)
                .restore(&bad[..])
                .is_err(),
            "flip at {pos}"
        );
    }
}

proptest! {
    #[test]
    fn never_panics_and_errors_record_nothing(input in ".{0,200}") {
        let d = UrlDedup::builder().expected_urls(100).build().unwrap();
        match d.check_and_insert(&input) {
            Ok(first) => {
                prop_assert!(first.is_new());
                prop_assert_eq!(d.check_and_insert(&input).unwrap(), Outcome::Duplicate);
            }
            Err(_) => prop_assert!(d.estimated_urls() < 0.5),
        }
    }

    #[test]
    fn batch_equals_sequential(urls in prop::collection::vec("https://[a-c]\\.example/[a-d]{0,3}(\\?[a-c]=[0-9])?", 0..50)) {
        let key = HashKey::from_bytes([1; 16]);
        let a = UrlDedup::builder().expected_urls(1_000).hash_key(key).build().unwrap();
        let b = UrlDedup::builder().expected_urls(1_000).hash_key(key).build().unwrap();
        let batch: Vec<_> = a.check_and_insert_batch(&urls).into_iter().map(|r| r.unwrap()).collect();
        let seq: Vec<_> = urls.iter().map(|u| b.check_and_insert(u).unwrap()).collect();
        prop_assert_eq!(batch, seq);
    }

    #[test]
    fn canonical_batch_equals_sequential(
        urls in prop::collection::vec("(https|HTTPS|ftp)://[a-c]\\.(example|EXAMPLE)/[a-d]{0,3}(\\?[a-c]=[0-9])?(#x)?", 0..50),
        similar in any::<bool>(),
    ) {
        let key = HashKey::from_bytes([2; 16]);
        let build = || {
            let b = UrlDedup::builder().expected_urls(1_000).hash_key(key);
            if similar { b.similarity(Preset::Crawler) } else { b }.build().unwrap()
        };
        let (a, b) = (build(), build());
        let show = |r: Result<(Outcome, std::borrow::Cow<'_, str>), Error>| match r {
            Ok((outcome, canonical)) => Ok((outcome, canonical.into_owned())),
            Err(e) => Err(e.to_string()),
        };
        let batch: Vec<_> = a
            .check_and_insert_batch_canonical(urls.iter().map(String::as_str))
            .into_iter()
            .map(show)
            .collect();
        let seq: Vec<_> = urls.iter().map(|u| show(b.check_and_insert_canonical(u))).collect();
        prop_assert_eq!(batch, seq);
    }

    /// Keys canonicalized and hashed on other threads are decided exactly as the same lines
    /// given to the deduplicator whole, by every exact filter, with or without similarity,
    /// through the shared or the owner's (`_mut`) call, in a filter that grows or not.
    #[test]
    fn prepared_batch_equals_bytes_batch(
        urls in prop::collection::vec("(https|HTTPS|ftp)://[a-c]\\.(example|EXAMPLE)/[a-d]{0,3}(\\?[a-c]=[0-9])?(#x)?", 0..50),
        similar in any::<bool>(),
        kind in prop::sample::select(vec![FilterKind::Growing, FilterKind::Segmented, FilterKind::Classic, FilterKind::Exact]),
        canonical in any::<bool>(),
        owned in any::<bool>(),
        expected in prop::sample::select(vec![4u64, 1_000]),
    ) {
        let key = HashKey::from_bytes([3; 16]);
        let build = || {
            let b = UrlDedup::builder().expected_urls(expected).hash_key(key).filter(kind);
            let b = if canonical { b } else { b.no_canonicalization() };
            if similar { b.similarity(Preset::Crawler) } else { b }.build().unwrap()
        };
        let (mut a, b) = (build(), build());
        let show = |r: Result<(Outcome, std::borrow::Cow<'_, [u8]>), Error>| match r {
            Ok((outcome, key)) => Ok((outcome, key.into_owned())),
            Err(e) => Err(e.to_string()),
        };
        let preparer = a.preparer();
        let prepared = std::thread::scope(|s| {
            s.spawn(|| urls.iter().map(|u| preparer.prepare(u.as_bytes())).collect::<Vec<_>>())
                .join()
                .unwrap()
        });
        let mut from_prepared = Vec::new();
        let ok: Vec<_> = prepared.iter().filter_map(|p| p.as_ref().ok()).collect();
        let items = ok.iter().map(|(k, d)| (&**k, *d));
        let mut decided = if owned {
            a.check_and_insert_prepared_mut(items)
        } else {
            a.check_and_insert_prepared(items)
        }
        .into_iter();
        for p in &prepared {
            from_prepared.push(match p {
                Ok(_) => show(decided.next().unwrap()),
                Err(e) => Err(e.to_string()),
            });
        }
        let whole: Vec<_> = b
            .check_and_insert_batch_bytes(urls.iter().map(|u| u.as_bytes()))
            .into_iter()
            .map(show)
            .collect();
        prop_assert_eq!(from_prepared, whole);
    }
}

proptest! {
    /// Similarity features hashed where the keys were prepared, on another thread, are
    /// decided exactly as the same lines given to the deduplicator whole, through the shared
    /// or the owner's call, while the similarity filter grows; keys handed over without
    /// hashes, or with hashes another deduplicator's preparer made, are hashed on the spot.
    #[test]
    fn prepared_batch_with_features_equals_bytes_batch(
        urls in prop::collection::vec("https://[a-c]\\.example/(item|doc)/[0-9]{1,2}(\\?(ref=rss|sort=name|id=[0-9]))?", 0..80),
        sources in prop::collection::vec(0u8..8, 80),
        owned in any::<bool>(),
        expected in prop::sample::select(vec![2u64, 1_000]),
    ) {
        let build = |key: u8| {
            UrlDedup::builder()
                .expected_urls(expected)
                .hash_key(HashKey::from_bytes([key; 16]))
                .similarity(Preset::Crawler)
                .build()
                .unwrap()
        };
        let (mut a, b, foreign) = (build(4), build(4), build(5));
        let show = |r: Result<(Outcome, std::borrow::Cow<'_, [u8]>), Error>| match r {
            Ok((outcome, key)) => Ok((outcome, key.into_owned())),
            Err(e) => Err(e.to_string()),
        };
        let (preparer, other) = (a.preparer(), foreign.preparer());
        let (prepared, own, theirs) = std::thread::scope(|s| {
            s.spawn(|| {
                let mut own = preparer.feature_hashes().unwrap();
                let mut theirs = other.feature_hashes().unwrap();
                let prepared: Vec<_> = urls
                    .iter()
                    .zip(&sources)
                    .map(|(u, &source)| {
                        let (key, digest) = preparer.prepare(u.as_bytes()).unwrap();
                        let text = std::str::from_utf8(&key).unwrap();
                        // Mostly this deduplicator's hashes; sometimes none, sometimes
                        // another deduplicator's.
                        let at = match source {
                            0 => None,
                            1 => Some((false, theirs.push(text))),
                            _ => Some((true, own.push(text))),
                        };
                        (key.into_owned(), digest, at)
                    })
                    .collect();
                (prepared, own, theirs)
            })
            .join()
            .unwrap()
        });
        let items = prepared.iter().map(|(k, d, at)| {
            let hashed = at.and_then(|(mine, i)| if mine { own.get(i) } else { theirs.get(i) });
            (&k[..], *d, hashed)
        });
        let decided: Vec<_> = if owned {
            a.check_and_insert_prepared_with_features_mut(items)
        } else {
            a.check_and_insert_prepared_with_features(items)
        }
        .into_iter()
        .map(show)
        .collect();
        let whole: Vec<_> = b
            .check_and_insert_batch_bytes(urls.iter().map(|u| u.as_bytes()))
            .into_iter()
            .map(show)
            .collect();
        prop_assert_eq!(decided, whole);
        let state = |d: &UrlDedup| {
            let mut out = Vec::new();
            d.write_to(&mut out).unwrap();
            out
        };
        prop_assert!(state(&a) == state(&b), "the two deduplicators recorded different bits");
    }
}

/// A digest made under another deduplicator's key is not used as it is: the key is hashed
/// again, so a mix-up of preparers costs time, never a wrong answer.
#[test]
fn a_digest_from_another_deduplicator_is_not_trusted() {
    let a = UrlDedup::builder().expected_urls(1_000).build().unwrap();
    let b = UrlDedup::builder().expected_urls(1_000).build().unwrap();
    let (key, digest) = b.preparer().prepare(b"https://example.com/x").unwrap();
    assert!(
        a.check_and_insert_prepared([(&*key, digest)])[0]
            .as_ref()
            .unwrap()
            .0
            .is_new()
    );
    // Had `a` used b's digest, its bits would be b's positions, not those of the key.
    assert!(a.contains("https://example.com/x").unwrap());
}

/// A state written without canonicalization holds raw lines; read by a canonicalizing run it
/// would call distinct pages "seen" (their canonical forms were never recorded) without a word.
#[test]
fn a_state_is_refused_under_another_canonicalization() {
    let raw = UrlDedup::builder().no_canonicalization().build().unwrap();
    raw.check_and_insert("https://Example.com/a").unwrap();
    let mut state = Vec::new();
    raw.write_to(&mut state).unwrap();

    let err = UrlDedup::builder().restore(&state[..]).unwrap_err();
    let Error::ConfigMismatch {
        recorded,
        configured,
    } = &err
    else {
        panic!("expected a configuration mismatch, got {err}");
    };
    assert!(recorded.contains("canonicalization: none"), "{recorded}");
    assert!(
        configured.contains("canonicalization: Policy"),
        "{configured}"
    );
    assert!(
        err.to_string().contains(
            "canonicalization: recorded none (byte for byte); this run URLs canonicalized"
        )
    );

    // The same configuration restores; an explicit choice restores anyway.
    assert!(
        UrlDedup::builder()
            .no_canonicalization()
            .restore(&state[..])
            .is_ok()
    );
    assert!(
        UrlDedup::builder()
            .accept_config_change()
            .restore(&state[..])
            .is_ok()
    );
    // Another filter kind is another configuration too.
    assert!(matches!(
        UrlDedup::builder()
            .no_canonicalization()
            .filter(FilterKind::Exact)
            .restore(&state[..]),
        Err(Error::ConfigMismatch { .. })
    ));
}

/// The default filter grows: sized for a thousand URLs and handed a hundred times as many, it
/// keeps every one it was given and stays below its rate.
#[test]
fn the_default_filter_grows_past_a_wrong_estimate() {
    // A fixed key: which URLs collide depends on it, and with a random one the count of lost
    // URLs is itself random (58 to 92 over 40 random keys, 101 in one run), so a bound near
    // its expectation failed now and then for no fault of the filter.
    let d = UrlDedup::builder()
        .expected_urls(1_000)
        .false_positive_rate(0.001)
        .hash_key(HashKey::from_bytes([21; 16]))
        .build()
        .unwrap();
    let urls: Vec<String> = (0..100_000)
        .map(|i| format!("https://example.com/item/{i}"))
        .collect();
    let new = d
        .check_and_insert_batch(&urls)
        .into_iter()
        .filter(|r| r.as_ref().unwrap().is_new())
        .count();
    // Below 1/1,000 at every moment: fewer than 100 of 100,000 taken for seen in expectation,
    // 102 with this key. A filter that kept its first size would lose thousands.
    assert!(new >= 99_850, "{new}");
    assert!(d.false_positive_rate() < 0.001);
    assert!(!d.is_over_capacity());
    assert!(urls.iter().all(|u| d.contains(u).unwrap()));
}

#[test]
fn the_exact_mode_never_confuses_two_urls_and_survives_a_snapshot() {
    let d = UrlDedup::builder()
        .filter(FilterKind::Exact)
        .build()
        .unwrap();
    let urls: Vec<String> = (0..50_000)
        .map(|i| format!("https://example.com/item/{i}"))
        .collect();
    assert!(
        d.check_and_insert_batch(&urls)
            .into_iter()
            .all(|r| r.unwrap().is_new())
    );
    assert!(d.false_positive_rate() < 1e-25);
    assert!(d.memory_bytes() >= 50_000 * 16);
    let mut state = Vec::new();
    d.write_to(&mut state).unwrap();
    let r = UrlDedup::builder()
        .filter(FilterKind::Exact)
        .restore(&state[..])
        .unwrap();
    assert!(
        urls.iter()
            .all(|u| r.check_and_insert(u).unwrap() == Outcome::Duplicate)
    );
    assert!(
        r.check_and_insert("https://example.com/item/50000")
            .unwrap()
            .is_new()
    );
}
