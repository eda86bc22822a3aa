//! Page fingerprints and the near-duplicate index beside the `simhash` and `web-simhash`
//! crates, in the same run:
//!
//! * `fingerprint/pages`: one page's fingerprints, over 200 Rust documentation pages (or
//!   generated pages when the documentation is not installed), throughput in bytes of HTML.
//!   `url-dedup` computes both its exact fingerprint and its SimHash; `simhash` hashes the
//!   words of the page with its tags removed (the removal is timed too, as a user pays it);
//!   `web-simhash` reads the HTML with its default extractor.
//! * `fingerprint/index query`: one query against 5,000 fingerprints with `k = 3`
//!   (`web-simhash`'s index sorts its tables on every insert, so it is built at that size).
//! * `fingerprint/index insert`: `NearIndex::check_and_insert` of 1,000,000 random
//!   fingerprints into one index, per insert.
//!
//! ```sh
//! cargo bench -p url-dedup-benches --bench fingerprint -- --warm-up-time 1 --measurement-time 3
//! ```

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use url_dedup_benches::near_pages::{self, strip_tags};
use url_dedup_fingerprint::{Fingerprinter, NearIndex, SimHash, feature_hash};

fn pages() -> Vec<String> {
    if let Some(docs) = near_pages::rust_docs() {
        let pairs = near_pages::real(&docs, 100, 7);
        let pages: Vec<String> = pairs
            .into_iter()
            .filter(|p| !p.same)
            .flat_map(|p| [p.a, p.b])
            .take(200)
            .collect();
        if pages.len() >= 100 {
            return pages;
        }
    }
    near_pages::generated(100, 7)
        .into_iter()
        .map(|p| p.a)
        .take(200)
        .collect()
}

fn fingerprints(c: &mut Criterion) {
    let pages = pages();
    let bytes: u64 = pages.iter().map(|p| p.len() as u64).sum();
    let mut group = c.benchmark_group("fingerprint/pages");
    group.throughput(Throughput::Bytes(bytes));
    let ours = Fingerprinter::new();
    let web = web_simhash::WebFeatureExtractor::default();
    // Interleaved: each method runs over the same pages in turn.
    group.bench_function(
        BenchmarkId::from_parameter("url-dedup (exact + SimHash)"),
        |b| {
            b.iter(|| {
                for p in &pages {
                    black_box(ours.fingerprint(black_box(p.as_bytes())));
                }
            })
        },
    );
    group.bench_function(
        BenchmarkId::from_parameter("simhash 0.3.0 (with tag removal)"),
        |b| {
            b.iter(|| {
                for p in &pages {
                    black_box(simhash::simhash(&strip_tags(black_box(p))));
                }
            })
        },
    );
    group.bench_function(BenchmarkId::from_parameter("web-simhash 0.1.1"), |b| {
        b.iter(|| {
            for p in &pages {
                black_box(web_simhash::SimHash64::from_html(black_box(p), &web));
            }
        })
    });
    group.finish();
}

fn index(c: &mut Criterion) {
    const N: u64 = 5_000;
    let stored: Vec<u64> = (0..N).map(|i| feature_hash(i + 1)).collect();
    // Half the queries have a stored fingerprint 2 bits away, half have none.
    let queries: Vec<u64> = (0..1_000u64)
        .map(|i| {
            if i % 2 == 0 {
                stored[(i as usize * 7) % stored.len()] ^ 0b101
            } else {
                feature_hash(1 << 40 | i)
            }
        })
        .collect();
    let mut ours = NearIndex::new(3).expect("valid shape");
    for &f in &stored {
        ours.insert(SimHash(f));
    }
    let web = web_simhash::SimHashIndex::from_items(
        web_simhash::IndexConfig::google64_k3(),
        stored
            .iter()
            .map(|&f| (f.to_string(), web_simhash::SimHash64(f))),
    );
    let mut group = c.benchmark_group("fingerprint/index query");
    group.throughput(Throughput::Elements(queries.len() as u64));
    group.bench_function(
        BenchmarkId::from_parameter("url-dedup NearIndex (4 tables)"),
        |b| {
            b.iter(|| {
                for &q in &queries {
                    black_box(ours.nearest(SimHash(q)));
                }
            })
        },
    );
    group.bench_function(
        BenchmarkId::from_parameter("web-simhash SimHashIndex"),
        |b| {
            b.iter(|| {
                for &q in &queries {
                    black_box(web.query(web_simhash::SimHash64(q)));
                }
            })
        },
    );
    group.finish();

    let mut group = c.benchmark_group("fingerprint/index insert");
    const BATCH: u64 = 1_000;
    group.throughput(Throughput::Elements(BATCH));
    for (name, blocks) in [("NearIndex, 4 tables", 4), ("NearIndex, 10 tables", 5)] {
        let mut index = NearIndex::with_blocks(3, blocks).expect("valid shape");
        let mut next = 0u64;
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                for _ in 0..BATCH {
                    next += 1;
                    // One index up to a million fingerprints, then a fresh one.
                    if next.is_multiple_of(1_000_000) {
                        index = NearIndex::with_blocks(3, blocks).expect("valid shape");
                    }
                    black_box(index.check_and_insert(SimHash(feature_hash(next))));
                }
            })
        });
    }
    group.finish();
}

criterion_group!(benches, fingerprints, index);
criterion_main!(benches);
