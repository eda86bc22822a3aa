//! `Preset::Page`, the crawler preset's deciding feature alone, folds exactly the URLs the
//! crawler preset folds, chance aside: checked on the two real URL lists and on generated
//! URLs that share sites, directories, pages and parameters, at a rate where chance folds do
//! not occur.

use proptest::prelude::*;
use url_dedup_bloom::HashKey;
use url_dedup_similarity::{FeatureHash, Preset, RegionSizing, SimilarityFilter};

fn filter(preset: Preset, sizing: RegionSizing, expected: u64) -> SimilarityFilter {
    SimilarityFilter::builder()
        .expected_items(expected)
        .false_positive_rate(1e-9)
        .hash_key(HashKey::from_bytes([11; 16]))
        .feature_hash(FeatureHash::SipHash13)
        .region_sizing(sizing)
        .preset(preset)
        .build()
        .unwrap()
}

/// Which of `urls` each preset finds similar, in order.
fn folds(preset: Preset, sizing: RegionSizing, urls: &[String]) -> Vec<bool> {
    let mut f = filter(preset, sizing, urls.len().max(1) as u64);
    urls.iter()
        .map(|u| f.check_and_insert(u).is_similar())
        .collect()
}

#[test]
fn the_page_key_folds_as_the_crawler_preset_on_real_lists() {
    for list in [
        include_str!("../data/real-urls.txt"),
        include_str!("../data/real-urls-rust.txt"),
    ] {
        let urls: Vec<String> = list.lines().map(str::to_owned).collect();
        let crawler = folds(Preset::Crawler, RegionSizing::Blocked, &urls);
        let page = folds(Preset::Page, RegionSizing::Blocked, &urls);
        assert!(crawler.iter().filter(|&&f| f).count() > urls.len() / 10);
        let differ: Vec<&String> = urls
            .iter()
            .zip(crawler.iter().zip(&page))
            .filter(|(_, (c, p))| c != p)
            .map(|(u, _)| u)
            .collect();
        assert!(differ.is_empty(), "folded by one preset only: {differ:?}");
    }
}

fn url() -> impl Strategy<Value = String> {
    (
        0u8..3,
        proptest::sample::select(vec![
            "",
            "/",
            "/a",
            "/a/",
            "/a/b",
            "/a/b.html",
            "/B/12/x.php",
            "/a/b/",
        ]),
        proptest::sample::select(vec![
            "",
            "?ref=rss",
            "?id=7",
            "?id=7&ref=rss",
            "?sort=name",
            "?page=2",
            "?q=rust",
            "?color=red",
            "?",
        ]),
    )
        .prop_map(|(site, path, query)| format!("https://s{site}.example{path}{query}"))
}

proptest! {
    /// Any sequence of URLs on a few sites, paths and queries, with both sizings that keep a
    /// value's rate: the same folds.
    #[test]
    fn the_page_key_folds_as_the_crawler_preset(urls in proptest::collection::vec(url(), 0..60)) {
        for sizing in [RegionSizing::Blocked, RegionSizing::PerFeature] {
            prop_assert_eq!(
                folds(Preset::Page, sizing, &urls),
                folds(Preset::Crawler, sizing, &urls)
            );
        }
    }
}
