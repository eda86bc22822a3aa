//! Measures how many URLs each preset folds, and how many of those were genuinely different
//! pages, on a real URL list and on a generated site with known near-duplicates. Prints the
//! tables of `docs/similarity.md`.
//!
//! ```sh
//! cargo run --release -p url-dedup-similarity --example precision
//! cargo run --release -p url-dedup-similarity --example precision -- my-urls.txt other.txt
//! ```
//!
//! Without arguments the real lists are `data/real-urls.txt` (links in installed
//! documentation) and `data/real-urls-rust.txt` (links in the Rust sources of the Cargo
//! cache); `data/extract-real-urls.py` says how both were made.
//!
//! Pipeline, as a crawler would run it: canonicalize (default policy), drop exact duplicates
//! of an earlier canonical URL, then ask the similarity filter. A fold is *right* when the
//! same page came earlier, *wrong* when the page is genuinely different from every earlier
//! one. On the generated site the page behind each URL is known. On the real list it is
//! approximated by a stricter canonical form (also folding `www.`, `http`/`https` and trailing
//! slashes): two URLs equal under it are counted as the same page, which can only make the
//! wrong-fold count smaller than the truth.

use std::collections::HashSet;
use std::path::PathBuf;

use std::sync::Arc;
use url_dedup_bloom::HashKey;
use url_dedup_canon::{Canonicalizer, Policy, TrailingSlash};

use url_dedup_similarity::{Feature, FeatureHash, Preset, RegionSizing, SimilarityFilter, builtin};

/// Features, region sizing, feature hash, and whether the hash is keyed.
/// Features, sizing, hash, keyed, and the rate `P` per feature value.
type Config = (Vec<Arc<dyn Feature>>, RegionSizing, FeatureHash, bool, f64);

/// One URL and the page it leads to.
struct Link {
    url: String,
    page: String,
}

#[derive(Default)]
struct Tally {
    checked: u64,
    folded: u64,
    wrong: u64,
    near_duplicates: u64,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut lists: Vec<(PathBuf, String)> = std::env::args()
        .skip(1)
        .map(|arg| (PathBuf::from(&arg), arg))
        .collect();
    if lists.is_empty() {
        for name in ["real-urls.txt", "real-urls-rust.txt"] {
            lists.push((
                manifest.join("data").join(name),
                format!("crates/similarity/data/{name}"),
            ));
        }
    }
    let strict = {
        let mut p = Policy::default();
        p.fold_www = true;
        p.fold_scheme = true;
        p.trailing_slash = TrailingSlash::Remove;
        Canonicalizer::new(p)
    };
    for (path, shown) in lists {
        let text = std::fs::read_to_string(&path)?;
        let real: Vec<Link> = text
            .lines()
            .map(|line| Link {
                url: line.to_owned(),
                page: strict
                    .canonicalize(line)
                    .map_or_else(|_| line.to_owned(), |c| c.into_owned()),
            })
            .collect();
        println!("### Real URL list: `{shown}`\n");
        report(&real);
        println!();
    }
    println!("### Generated site with known near-duplicates\n");
    report(&generated_site());
    Ok(())
}

fn report(links: &[Link]) {
    let canon = Canonicalizer::default();
    let mut seen_canonical = HashSet::new();
    let mut rejected = 0u64;
    let mut exact = 0u64;
    let mut stream = Vec::new();
    for link in links {
        match canon.canonicalize(&link.url) {
            Err(_) => rejected += 1,
            Ok(c) => {
                if seen_canonical.insert(c.clone().into_owned()) {
                    stream.push((c.into_owned(), &link.page));
                } else {
                    exact += 1;
                }
            }
        }
    }
    println!(
        "{} URLs: {} rejected by the canonicalizer, {} exact duplicates once canonical, {} \
         reach the similarity filter.\n",
        links.len(),
        rejected,
        exact,
        stream.len()
    );
    println!(
        "| filter | URLs checked | near-duplicates among them | folded | folded, same page (right) \
         | folded, different page (wrong) | near-duplicates missed | bits/URL |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let k = stream.len().max(1) as u64;
    let lean: Vec<Arc<dyn Feature>> = vec![
        Arc::new(builtin::Site),
        Arc::new(builtin::Scoped::new(
            builtin::Scope::Path,
            builtin::QueryKey::default(),
        )),
    ];
    // The crawler preset as it was before word values counted: only search and language
    // parameters' words identified pages.
    let earlier_query_key: Vec<Arc<dyn Feature>> = Preset::Crawler
        .features()
        .into_iter()
        .map(|f| -> Arc<dyn Feature> {
            if f.name() == "path:query_key" {
                Arc::new(builtin::Scoped::new(
                    builtin::Scope::Path,
                    builtin::QueryKey::new([
                        "q", "query", "search", "s", "keyword", "keywords", "term", "text", "lang",
                        "hl", "locale",
                    ]),
                ))
            } else {
                f
            }
        })
        .collect();
    let rows: Vec<(&str, Option<Config>)> = vec![
        ("exact only (no similarity filter)", None),
        (
            "`Document004`, document sizing, plain MD5 (the patent as written)",
            Some((
                Preset::Document004.features(),
                RegionSizing::Document004,
                FeatureHash::Md5,
                false,
                0.01,
            )),
        ),
        (
            "`Document004`, per-feature sizing",
            Some((
                Preset::Document004.features(),
                RegionSizing::PerFeature,
                FeatureHash::Md5,
                true,
                0.01,
            )),
        ),
        (
            "`Crawler`, document sizing",
            Some((
                Preset::Crawler.features(),
                RegionSizing::Document004,
                FeatureHash::Md5,
                true,
                0.01,
            )),
        ),
        (
            "`Crawler`, blocked sizing (the default)",
            Some((
                Preset::Crawler.features(),
                RegionSizing::Blocked,
                FeatureHash::Md5,
                true,
                0.01,
            )),
        ),
        (
            "`Crawler`, per-feature sizing",
            Some((
                Preset::Crawler.features(),
                RegionSizing::PerFeature,
                FeatureHash::Md5,
                true,
                0.01,
            )),
        ),
        (
            "`Crawler` with the earlier query key (words identify only in search and language parameters)",
            Some((
                earlier_query_key,
                RegionSizing::PerFeature,
                FeatureHash::Md5,
                true,
                0.01,
            )),
        ),
        (
            "`Crawler`, per-feature sizing, SipHash-1-3",
            Some((
                Preset::Crawler.features(),
                RegionSizing::PerFeature,
                FeatureHash::SipHash13,
                true,
                0.01,
            )),
        ),
        (
            "custom: `site` + `path:query_key` only",
            Some((lean, RegionSizing::PerFeature, FeatureHash::Md5, true, 0.01)),
        ),
        (
            "`Page` (the crawler preset's deciding feature alone), blocked sizing",
            Some((
                Preset::Page.features(),
                RegionSizing::Blocked,
                FeatureHash::SipHash13,
                true,
                0.01,
            )),
        ),
        (
            "`Page`, blocked sizing, at 10^-4 (a third of the crawler preset's memory at 1%)",
            Some((
                Preset::Page.features(),
                RegionSizing::Blocked,
                FeatureHash::SipHash13,
                true,
                1e-4,
            )),
        ),
    ];
    for (name, config) in rows {
        let crawler = name.contains("the default");
        let mut filter = config.map(|(features, sizing, hash, keyed, rate)| {
            let b = SimilarityFilter::builder()
                .expected_items(k)
                .false_positive_rate(rate)
                .features(features)
                .region_sizing(sizing)
                .feature_hash(hash);
            let b = if keyed {
                b.hash_key(HashKey::from_bytes(*b"precision-tables"))
            } else {
                b.unkeyed()
            };
            b.build().expect("valid sizing")
        });
        let mut pages = HashSet::new();
        let mut t = Tally::default();
        for (url, page) in &stream {
            let same_page = !pages.insert(page.as_str());
            t.checked += 1;
            t.near_duplicates += u64::from(same_page);
            let similar = filter
                .as_mut()
                .is_some_and(|f| f.check_and_insert(url).is_similar());
            if similar {
                t.folded += 1;
                t.wrong += u64::from(!same_page);
            }
            if std::env::var_os("PRECISION_DEBUG").is_some() && crawler {
                if similar && !same_page {
                    eprintln!("wrong fold: {url}");
                } else if !similar && same_page {
                    eprintln!("missed: {url}");
                }
            }
        }
        let right = t.folded - t.wrong;
        let bits = filter.as_ref().map_or("—".to_owned(), |f| {
            format!("{:.1}", f.bits() as f64 / k as f64)
        });
        println!(
            "| {name} | {} | {} | {} | {right} | {} ({:.1}% of folds) | {} | {bits} |",
            t.checked,
            t.near_duplicates,
            t.folded,
            t.wrong,
            100.0 * t.wrong as f64 / t.folded.max(1) as f64,
            t.near_duplicates - right,
        );
    }
}

/// Fifty sites of five kinds. Every URL carries the page it leads to; variants of one page
/// are the near-duplicates a similarity filter should fold, everything else is a different
/// page it must not fold. Deterministic.
fn generated_site() -> Vec<Link> {
    let mut rng = SplitMix(0x5eed);
    let mut links = Vec::new();
    let add = |links: &mut Vec<Link>, url: String, page: String| links.push(Link { url, page });
    for s in 0..50u64 {
        match s % 5 {
            0 => {
                let host = format!("https://news{s}.example");
                for id in 0..300 {
                    let (year, month) = (2015 + id / 60, 1 + id % 12);
                    let base = format!("{host}/news/{year}/{month:02}/story-{id}.html");
                    let page = format!("news{s}/{id}");
                    add(&mut links, base.clone(), page.clone());
                    for v in [
                        "?ref=rss",
                        "?ref=home",
                        "?share=x",
                        "?amp=1",
                        "?utm_source=feed",
                    ] {
                        if rng.chance(0.3) {
                            add(&mut links, format!("{base}{v}"), page.clone());
                        }
                    }
                    if id % 5 == 0 {
                        add(&mut links, format!("{base}?page=2"), format!("{page}/p2"));
                    }
                }
            }
            1 => {
                let host = format!("https://shop{s}.example");
                for id in 0..400 {
                    let base = format!("{host}/item/{id}");
                    let page = format!("shop{s}/{id}");
                    add(&mut links, base.clone(), page.clone());
                    for v in [
                        "?color=red",
                        "?color=blue",
                        "?ref=search",
                        "?sessionkey=9f8e7d",
                    ] {
                        if rng.chance(0.3) {
                            add(&mut links, format!("{base}{v}"), page.clone());
                        }
                    }
                }
                for c in 0..20 {
                    for p in 1..6 {
                        let page = format!("shop{s}/cat{c}/{p}");
                        for sort in ["price", "name", "new"] {
                            if sort == "price" || rng.chance(0.4) {
                                add(
                                    &mut links,
                                    format!("{host}/category/{c}?page={p}&sort={sort}"),
                                    page.clone(),
                                );
                            }
                        }
                    }
                }
            }
            2 => {
                let host = format!("https://forum{s}.example");
                for id in 0..300 {
                    let base = format!("{host}/thread/{id}");
                    let page = format!("forum{s}/{id}");
                    add(&mut links, base.clone(), page.clone());
                    if rng.chance(0.4) {
                        add(&mut links, format!("{base}?highlight=rust"), page.clone());
                    }
                    for p in 2..(2 + rng.below(3)) {
                        add(
                            &mut links,
                            format!("{base}?page={p}"),
                            format!("{page}/p{p}"),
                        );
                    }
                }
                for m in 0..150 {
                    add(
                        &mut links,
                        format!("{host}/member/{m}"),
                        format!("forum{s}/m{m}"),
                    );
                }
            }
            3 => {
                let host = format!("https://wiki{s}.example");
                const WORDS: [&str; 12] = [
                    "Rust", "Bloom", "Filter", "Crawler", "Hash", "Graph", "Tree", "Queue",
                    "Index", "Cache", "Page", "Link",
                ];
                for id in 0..300u64 {
                    let title = format!(
                        "{}_{}_{id}",
                        WORDS[(id % 12) as usize],
                        WORDS[(id / 12 % 12) as usize]
                    );
                    let base = format!("{host}/wiki/{title}");
                    let page = format!("wiki{s}/{title}");
                    add(&mut links, base.clone(), page.clone());
                    if rng.chance(0.3) {
                        add(&mut links, format!("{base}?action=view"), page.clone());
                    }
                    if rng.chance(0.3) {
                        let rev = 1000 + rng.below(9000);
                        add(
                            &mut links,
                            format!("{base}?oldid={rev}"),
                            format!("{page}@{rev}"),
                        );
                    }
                }
                for w in WORDS {
                    add(
                        &mut links,
                        format!("{host}/wiki/Special:Search?search={w}"),
                        format!("wiki{s}/search/{w}"),
                    );
                }
            }
            _ => {
                // A directory of webrings, pets and editors: pages told apart only by a
                // word-valued parameter (`?ring=kamito`), with referral and sort variants.
                let host = format!("https://ring{s}.example");
                const SYLLABLES: [&str; 10] =
                    ["ka", "ru", "mi", "to", "ne", "sa", "lo", "vi", "de", "po"];
                for id in 0..300usize {
                    let word = format!(
                        "{}{}{}",
                        SYLLABLES[id % 10],
                        SYLLABLES[id / 10 % 10],
                        SYLLABLES[id / 100 % 10]
                    );
                    let (path, param) = match id % 3 {
                        0 => ("hub", "ring"),
                        1 => ("show.php", "pet_name"),
                        _ => ("staff", "editor"),
                    };
                    let base = format!("{host}/{path}?{param}={word}");
                    let page = format!("ring{s}/{param}/{word}");
                    add(&mut links, base.clone(), page.clone());
                    for v in ["&ref=home", "&sort=name", "&via=list"] {
                        if rng.chance(0.3) {
                            add(&mut links, format!("{base}{v}"), page.clone());
                        }
                    }
                }
            }
        }
    }
    // A crawl meets links in no particular order.
    for i in (1..links.len()).rev() {
        links.swap(i, rng.below(i as u64 + 1) as usize);
    }
    links
}

struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        url_dedup_bloom::hash::mix64(self.0)
    }
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }
    fn chance(&mut self, p: f64) -> bool {
        ((self.next() >> 11) as f64 / ((1u64 << 53) as f64)) < p
    }
}
