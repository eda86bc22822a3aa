//! Feature values hashed away from the filter (`FeatureHasher`, `FeatureHashes`) decide
//! exactly as URLs handed to the filter itself, and hashes made for another filter are
//! refused without recording anything.

use proptest::prelude::*;
use url_dedup_bloom::HashKey;
use url_dedup_similarity::{
    Error, FeatureHash, FeatureHashes, GrowingSimilarityFilter, RegionSizing, SimilarityFilter,
};

fn filter(expected: u64, sizing: RegionSizing, hash: FeatureHash) -> SimilarityFilter {
    SimilarityFilter::builder()
        .expected_items(expected)
        .false_positive_rate(0.01)
        .hash_key(HashKey::from_bytes([5; 16]))
        .region_sizing(sizing)
        .feature_hash(hash)
        .build()
        .unwrap()
}

/// URLs that are new, exact repeats and presentation variants of one another.
fn url(i: u64) -> String {
    let page = i / 3;
    let variant = ["", "?ref=rss", "?sort=name"][(i % 3) as usize];
    format!(
        "https://site{}.example/d{}/item-{page}.html{variant}",
        page % 13,
        page % 5
    )
}

fn sizing() -> impl Strategy<Value = RegionSizing> {
    prop_oneof![
        Just(RegionSizing::Blocked),
        Just(RegionSizing::PerFeature),
        Just(RegionSizing::Document004),
    ]
}

fn hash() -> impl Strategy<Value = FeatureHash> {
    prop_oneof![Just(FeatureHash::SipHash13), Just(FeatureHash::Md5)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Hashed on another thread and decided in batches cut anywhere: the verdicts and bits of
    /// one call per URL, for a plain filter and for a growing one through its layer changes,
    /// with every region sizing and feature hash.
    #[test]
    fn hashed_batches_decide_as_single_calls(
        items in proptest::collection::vec(0u64..300, 0..400),
        expected in 1u64..80,
        cuts in proptest::collection::vec(0usize..400, 0..4),
        sizing in sizing(),
        hash in hash(),
    ) {
        let urls: Vec<String> = items.iter().map(|&i| url(i)).collect();
        let mut single_plain = filter(expected, sizing, hash);
        let mut single_growing = GrowingSimilarityFilter::new(filter(expected, sizing, hash));
        let plain_verdicts: Vec<_> = urls.iter().map(|u| single_plain.check_and_insert(u)).collect();
        let growing_verdicts: Vec<_> =
            urls.iter().map(|u| single_growing.check_and_insert(u)).collect();

        let mut plain = filter(expected, sizing, hash);
        let mut growing = GrowingSimilarityFilter::new(filter(expected, sizing, hash));
        let hasher = growing.feature_hasher();
        let to_hash = urls.clone();
        let hashed = std::thread::spawn(move || {
            let mut hashed = FeatureHashes::new(&hasher);
            for u in &to_hash {
                hashed.push(u);
            }
            hashed
        })
        .join()
        .unwrap();
        prop_assert_eq!(hashed.len(), urls.len());
        let all: Vec<_> = hashed.urls().collect();
        let mut cuts = cuts;
        cuts.push(all.len());
        cuts.sort_unstable();
        let (mut from_plain, mut from_growing, mut at) = (Vec::new(), Vec::new(), 0);
        for cut in cuts {
            let cut = cut.min(all.len()).max(at);
            from_plain.extend(plain.check_and_insert_hashed(&all[at..cut]).unwrap());
            from_growing.extend(growing.check_and_insert_hashed(&all[at..cut]).unwrap());
            at = cut;
        }
        prop_assert_eq!(from_plain, plain_verdicts);
        prop_assert!(plain == single_plain);
        prop_assert_eq!(from_growing, growing_verdicts);
        prop_assert_eq!(growing.layers(), single_growing.layers());
        prop_assert!(growing == single_growing);
    }
}

/// Hashes made with another key, other features or another feature hash would set and test
/// meaningless bits: the call fails and records nothing.
#[test]
fn hashes_of_another_filter_are_refused_and_nothing_is_recorded() {
    let mut target = filter(1_000, RegionSizing::Blocked, FeatureHash::SipHash13);
    target.check_and_insert("https://a.example/x");
    let before = target.clone();
    let others = [
        SimilarityFilter::builder()
            .hash_key(HashKey::from_bytes([6; 16]))
            .feature_hash(FeatureHash::SipHash13)
            .build()
            .unwrap(),
        SimilarityFilter::builder()
            .hash_key(HashKey::from_bytes([5; 16]))
            .feature_hash(FeatureHash::Md5)
            .build()
            .unwrap(),
        SimilarityFilter::builder()
            .hash_key(HashKey::from_bytes([5; 16]))
            .feature_hash(FeatureHash::SipHash13)
            .preset(url_dedup_similarity::Preset::Document004)
            .build()
            .unwrap(),
    ];
    for other in &others {
        let mut hashed = FeatureHashes::new(&other.feature_hasher());
        hashed.push("https://b.example/y");
        let mut own = FeatureHashes::new(&target.feature_hasher());
        own.push("https://c.example/z");
        // One foreign URL among the filter's own fails the whole call.
        let urls = [own.get(0).unwrap(), hashed.get(0).unwrap()];
        assert!(matches!(
            target.check_and_insert_hashed(&urls),
            Err(Error::ForeignHashes)
        ));
        assert!(target == before);
    }
    // The same key, features and hash from another filter (a restored snapshot, another
    // size) hash alike and are accepted.
    let mut snapshot = Vec::new();
    target.write_to(&mut snapshot).unwrap();
    let restored = SimilarityFilter::read_from(&snapshot[..]).unwrap();
    let resized = filter(50, RegionSizing::PerFeature, FeatureHash::SipHash13);
    for hasher in [restored.feature_hasher(), resized.feature_hasher()] {
        let mut hashed = FeatureHashes::new(&hasher);
        hashed.push("https://a.example/x");
        let verdicts = target
            .check_and_insert_hashed(&[hashed.get(0).unwrap()])
            .unwrap();
        assert!(verdicts[0].is_similar());
    }
}
