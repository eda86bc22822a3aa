//! The edge cases the issue names, under both presets: root URLs (`n = 1`), trailing
//! slashes, query-only differences, IDN hosts, ports, very deep paths.

use url_dedup_canon::Canonicalizer;
use url_dedup_similarity::{Preset, SimilarityFilter, UrlParts, Verdict};

fn filter(preset: Preset) -> SimilarityFilter {
    SimilarityFilter::builder()
        .expected_items(10_000)
        .false_positive_rate(0.001)
        .preset(preset)
        .build()
        .unwrap()
}

const PRESETS: [Preset; 2] = [Preset::Document004, Preset::Crawler];

#[test]
fn root_urls_have_depth_one() {
    for url in [
        "http://a.example/",
        "http://a.example",
        "http://a.example/?x=1",
    ] {
        assert_eq!(UrlParts::parse(url).depth(), 1, "{url}");
    }
    for preset in PRESETS {
        let mut f = filter(preset);
        assert!(f.check_and_insert("http://a.example/").is_new());
        assert!(f.check_and_insert("http://a.example").is_similar());
        // Another site's root is new: its site feature was never seen.
        assert!(f.check_and_insert("http://b.example/").is_new());
    }
    // The document's last page of a root URL is the site itself, query included.
    let mut f = filter(Preset::Document004);
    f.check_and_insert("http://a.example/");
    assert!(f.check_and_insert("http://a.example/?lang=en").is_new());
}

#[test]
fn trailing_slashes_do_not_make_a_new_page() {
    for preset in PRESETS {
        let mut f = filter(preset);
        assert!(f.check_and_insert("http://a.example/docs/").is_new());
        assert!(f.check_and_insert("http://a.example/docs").is_similar());
        assert!(f.check_and_insert("http://a.example/docs//").is_similar());
    }
}

#[test]
fn query_only_differences() {
    // Document 004: the query is part of the last page, so any change is new.
    let mut f = filter(Preset::Document004);
    assert!(f.check_and_insert("http://a.example/list?page=1").is_new());
    assert!(f.check_and_insert("http://a.example/list?page=2").is_new());
    // Crawler preset: presentation parameters (word values) do not make a new page...
    let mut f = filter(Preset::Crawler);
    assert!(f.check_and_insert("http://a.example/list?page=1").is_new());
    let v = f.check_and_insert("http://a.example/list?page=1&sort=name");
    assert!(v.is_similar(), "{}", f.explain(&v));
    assert!(
        f.check_and_insert("http://a.example/list?sort=date&page=1")
            .is_similar()
    );
    // ...but identifying values (digits, search terms) do, and the verdict says which
    // feature did not match.
    let v = f.check_and_insert("http://a.example/list?page=2");
    assert!(v.is_new());
    let explanation = f.explain(&v);
    let unmatched: Vec<&str> = explanation
        .features()
        .filter(|&(_, matched)| !matched)
        .map(|(name, _)| name)
        .collect();
    assert_eq!(unmatched, ["path:query_key"]);
    assert!(f.check_and_insert("http://a.example/list?q=rust").is_new());
    assert!(f.check_and_insert("http://a.example/list?q=go").is_new());
}

#[test]
fn idn_hosts_fold_once_canonical() {
    let canon = Canonicalizer::default();
    for preset in PRESETS {
        let mut f = filter(preset);
        let unicode = canon
            .canonicalize("http://Bücher.example/katalog/1")
            .unwrap();
        let puny = canon
            .canonicalize("http://xn--bcher-kva.example/katalog/1")
            .unwrap();
        assert_eq!(unicode, puny);
        assert!(f.check_and_insert(&unicode).is_new());
        assert!(f.check_and_insert(&puny).is_similar());
        // Raw Unicode input is accepted as text (no panic), as its own site.
        assert_eq!(
            UrlParts::parse("http://bücher.example/k").site(),
            "bücher.example"
        );
        assert!(
            f.check_and_insert("http://bücher.example/katalog/1")
                .is_new()
        );
    }
}

#[test]
fn ports_are_part_of_the_site() {
    for preset in PRESETS {
        let mut f = filter(preset);
        assert!(f.check_and_insert("http://a.example/x").is_new());
        assert!(f.check_and_insert("http://a.example:8080/x").is_new());
        assert!(f.check_and_insert("http://a.example:8080/x").is_similar());
    }
    assert_eq!(
        UrlParts::parse("http://user@a.example:81/").site(),
        "a.example:81"
    );
}

#[test]
fn very_deep_paths() {
    let deep = format!("http://a.example{}", "/d".repeat(10_000));
    assert_eq!(UrlParts::parse(&deep).depth(), 10_001);
    for preset in PRESETS {
        let mut f = filter(preset);
        assert!(f.check_and_insert(&deep).is_new());
        assert!(f.check_and_insert(&deep).is_similar());
        let deeper = format!("{deep}/d");
        assert!(f.check_and_insert(&deeper).is_new());
    }
}

#[test]
fn document_004_folds_across_sites_and_the_crawler_preset_does_not() {
    let seen = [
        "http://a.example/news/2.html",
        "http://b.example/blog/x.html",
    ];
    let probe = "http://b.example/news/2.html";
    let mut doc = filter(Preset::Document004);
    let mut crawler = filter(Preset::Crawler);
    for url in seen {
        doc.check_and_insert(url);
        crawler.check_and_insert(url);
    }
    // Site b, depth 3, first directory `news` and page `2.html` were each seen somewhere.
    assert!(matches!(doc.check(probe), Verdict::Similar(_)));
    assert!(crawler.check(probe).is_new());
}

#[test]
fn numeric_templates_and_extensions_distinguish_pages() {
    let mut f = filter(Preset::Crawler);
    f.check_and_insert("http://a.example/item/1/a.html");
    f.check_and_insert("http://a.example/item/x/b.pdf");
    // `/item/{int}/b.pdf` has a path template never seen, `b.pdf` under `/item/1` is new too.
    let v = f.check_and_insert("http://a.example/item/1/b.pdf");
    assert!(v.is_new(), "{}", f.explain(&v));
}

#[test]
fn check_does_not_record() {
    let mut f = filter(Preset::Crawler);
    assert!(f.check("http://a.example/").is_new());
    assert!(f.is_empty());
    f.check_and_insert("http://a.example/");
    assert_eq!(f.len(), 1);
}
