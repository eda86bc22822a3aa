//! Property tests: no false negatives, `check` agrees with `check_and_insert`, snapshots
//! preserve verdicts, arbitrary text never panics.

use proptest::prelude::*;
use url_dedup_similarity::{FeatureHash, Preset, RegionSizing, SimilarityFilter};

fn url() -> impl Strategy<Value = String> {
    (
        "(https?://)?[a-c]\\.example(:[0-9]{2})?",
        prop::collection::vec("[a-c0-9]{0,3}", 0..5),
        prop::option::of("[a-c]=[0-9]?(&[a-c]=[0-9]?)?"),
    )
        .prop_map(|(site, segs, q)| {
            let mut u = site;
            for s in segs {
                u.push('/');
                u.push_str(&s);
            }
            if let Some(q) = q {
                u.push('?');
                u.push_str(&q);
            }
            u
        })
}

/// A filter for `k` URLs with any preset, region sizing and feature hash.
fn filter(k: u64) -> impl Strategy<Value = SimilarityFilter> {
    (
        prop::sample::select(vec![Preset::Document004, Preset::Crawler]),
        prop::sample::select(vec![RegionSizing::PerFeature, RegionSizing::Document004]),
        prop::sample::select(vec![FeatureHash::Md5, FeatureHash::SipHash13]),
        any::<bool>(),
    )
        .prop_map(move |(preset, sizing, hash, keyed)| {
            let b = SimilarityFilter::builder()
                .expected_items(k)
                .preset(preset)
                .region_sizing(sizing)
                .feature_hash(hash);
            let b = if keyed { b } else { b.unkeyed() };
            b.build().unwrap()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn inserted_urls_are_always_similar_afterwards(
        urls in prop::collection::vec(url(), 1..60),
        mut f in filter(100),
    ) {
        for u in &urls {
            let before = f.check(u);
            let verdict = f.check_and_insert(u);
            prop_assert_eq!(before, verdict);
        }
        for u in &urls {
            prop_assert!(f.check(u).is_similar(), "{} forgotten", u);
        }
    }

    #[test]
    fn snapshots_preserve_verdicts(
        urls in prop::collection::vec(url(), 0..40),
        probes in prop::collection::vec(url(), 1..40),
        mut f in filter(50),
    ) {
        for u in &urls {
            f.check_and_insert(u);
        }
        let mut buf = Vec::new();
        f.write_to(&mut buf).unwrap();
        let back = SimilarityFilter::read_from(&buf[..]).unwrap();
        for p in &probes {
            prop_assert_eq!(back.check(p), f.check(p));
        }
        prop_assert_eq!(back, f);
    }

    #[test]
    fn any_text_is_accepted(text in "\\PC{0,60}", mut f in filter(10)) {
        f.check_and_insert(&text);
        prop_assert!(f.check(&text).is_similar());
    }

    #[test]
    fn arbitrary_snapshot_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let _ = SimilarityFilter::read_from(&bytes[..]);
    }
}
