//! Precision and recall of near-duplicate detection on labelled pairs of pages: this
//! workspace's fingerprints beside the `simhash` and `web-simhash` crates.
//!
//! ```sh
//! cargo bench -p url-dedup-benches --bench near_duplicates
//! NEAR_PAIRS=300 cargo bench -p url-dedup-benches --bench near_duplicates   # pairs per kind
//! ```
//!
//! Each method judges a pair "one page" when its fingerprints are at most 3 bits apart (the
//! exact fingerprint: when they are equal). The `simhash` crate hashes whitespace-separated
//! words of the page's text with its tags removed (what a user of that crate would give it);
//! `web-simhash` reads the HTML with its own default extractor. The real pages are the Rust
//! documentation installed with the toolchain (`RUST_DOCS` to point elsewhere).
#![allow(missing_docs)]

use url_dedup_benches::near_pages::{self, Pair, strip_tags};
use url_dedup_fingerprint::Fingerprinter;

const K: u32 = 3;

/// Whether two pages' HTML are the same page, by one method.
type Judge = Box<dyn Fn(&str, &str) -> bool>;

/// A method: a name and a judgement of one pair.
struct Method {
    name: &'static str,
    same: Judge,
}

fn methods() -> Vec<Method> {
    let ours = Fingerprinter::new();
    let web = web_simhash::WebFeatureExtractor::default();
    vec![
        Method {
            name: "url-dedup exact",
            same: Box::new(move |a, b| {
                ours.fingerprint(a.as_bytes()).exact == ours.fingerprint(b.as_bytes()).exact
            }),
        },
        Method {
            name: "url-dedup SimHash",
            same: Box::new(move |a, b| {
                let (a, b) = (
                    ours.fingerprint(a.as_bytes()),
                    ours.fingerprint(b.as_bytes()),
                );
                a.simhash.distance(b.simhash) <= K
            }),
        },
        Method {
            name: "url-dedup SimHash, 3-word shingles",
            same: Box::new(move |a, b| {
                let o = Fingerprinter::new().with_shingle_width(3);
                let (a, b) = (o.fingerprint(a.as_bytes()), o.fingerprint(b.as_bytes()));
                a.simhash.distance(b.simhash) <= K
            }),
        },
        Method {
            name: "simhash 0.3.0",
            same: Box::new(|a, b| {
                let (a, b) = (
                    simhash::simhash(&strip_tags(a)),
                    simhash::simhash(&strip_tags(b)),
                );
                simhash::hamming_distance(a, b) <= K
            }),
        },
        Method {
            name: "web-simhash 0.1.1",
            same: Box::new(move |a, b| {
                let (a, b) = (
                    web_simhash::SimHash64::from_html(a, &web),
                    web_simhash::SimHash64::from_html(b, &web),
                );
                a.hamming_distance(b) <= K
            }),
        },
    ]
}

fn report(title: &str, pairs: &[Pair], methods: &[Method]) {
    println!("\n### {title}\n");
    let mut kinds: Vec<(&str, bool)> = Vec::new();
    for p in pairs {
        if !kinds.contains(&(p.kind, p.same)) {
            kinds.push((p.kind, p.same));
        }
    }
    let header: Vec<&str> = methods.iter().map(|m| m.name).collect();
    println!(
        "| pairs judged one page | label | n | {} |",
        header.join(" | ")
    );
    println!("|---|---|---|{}", "---|".repeat(methods.len()));
    let verdicts: Vec<Vec<bool>> = methods
        .iter()
        .map(|m| pairs.iter().map(|p| (m.same)(&p.a, &p.b)).collect())
        .collect();
    for (kind, same) in &kinds {
        let idx: Vec<usize> = (0..pairs.len())
            .filter(|&i| pairs[i].kind == *kind)
            .collect();
        let cells: Vec<String> = verdicts
            .iter()
            .map(|v| {
                let yes = idx.iter().filter(|&&i| v[i]).count();
                format!("{:.1}%", 100.0 * yes as f64 / idx.len() as f64)
            })
            .collect();
        let label = if *same { "one page" } else { "two pages" };
        println!(
            "| {kind} | {label} | {} | {} |",
            idx.len(),
            cells.join(" | ")
        );
    }
    let summary: Vec<(String, String)> = verdicts
        .iter()
        .map(|v| {
            let tp = (0..pairs.len()).filter(|&i| v[i] && pairs[i].same).count();
            let fp = (0..pairs.len()).filter(|&i| v[i] && !pairs[i].same).count();
            let positives = pairs.iter().filter(|p| p.same).count();
            let precision = if tp + fp == 0 {
                1.0
            } else {
                tp as f64 / (tp + fp) as f64
            };
            (
                format!("{:.1}%", 100.0 * precision),
                format!("{:.1}%", 100.0 * tp as f64 / positives.max(1) as f64),
            )
        })
        .collect();
    let (p, r): (Vec<String>, Vec<String>) = summary.into_iter().unzip();
    println!("| **precision** | | {} | {} |", pairs.len(), p.join(" | "));
    println!("| **recall** | | | {} |", r.join(" | "));
}

fn main() {
    // `cargo bench` passes `--bench`; criterion-style filters are not used here.
    let per_kind = url_dedup_benches::env_usize("NEAR_PAIRS", 300);
    let methods = methods();
    report(
        &format!("Generated pages ({per_kind} pairs per kind, seed 1)"),
        &near_pages::generated(per_kind, 1),
        &methods,
    );
    match near_pages::rust_docs() {
        Some(docs) => report(
            &format!(
                "Rust documentation ({}, up to {per_kind} pairs per kind, seed 1)",
                docs.display()
            ),
            &near_pages::real(&docs, per_kind, 1),
            &methods,
        ),
        None => println!("\n(no Rust documentation found: set RUST_DOCS)"),
    }
}
