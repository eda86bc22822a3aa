//! Canonicalization throughput: `url-dedup-canon` beside a bare `url::Url::parse` (the floor:
//! every WHATWG-correct canonicalizer parses at least once) and the peer crate `urlnorm`
//! (parse plus its normalization string), on the same inputs in the same run.
//!
//! Two input sets of 1,000 URLs each: already canonical (what most extracted links look
//! like), and messy (case, default ports, dot segments, percent-encoding, tracking
//! parameters, unsorted queries, fragments).
//!
//! ```sh
//! cargo bench -p url-dedup-benches --bench canon -- --warm-up-time 1 --measurement-time 3
//! ```

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use url_dedup_canon::Canonicalizer;

const BATCH: usize = 1_000;

fn canonical_inputs() -> Vec<String> {
    url_dedup_benches::urls(BATCH, 7)
}

/// The same URLs written the way pages often link them.
fn messy_inputs() -> Vec<String> {
    canonical_inputs()
        .iter()
        .enumerate()
        .map(|(i, url)| {
            let rest = url.strip_prefix("https://").unwrap_or(url);
            let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
            let (path, query) = path.split_once('?').unwrap_or((path, ""));
            let host = host.to_ascii_uppercase();
            let query = if query.is_empty() {
                "utm_source=feed&b=2&a=1".to_owned()
            } else {
                format!(
                    "utm_medium=email&{}",
                    query.split('&').rev().collect::<Vec<_>>().join("&")
                )
            };
            match i % 3 {
                0 => format!("HTTPS://{host}:443/./x/../{path}?{query}#section-{i}"),
                1 => format!("https://{host}/{}?{query}", path.replace('-', "%2d")),
                _ => format!("Https://{host}/a/%7euser/../../{path}?{query}&gclid=xyz"),
            }
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let canon = Canonicalizer::default();
    let urlnorm = urlnorm::UrlNormalizer::default();
    for (name, inputs) in [
        ("already-canonical", canonical_inputs()),
        ("messy", messy_inputs()),
    ] {
        // Every input must be accepted, or the comparison would be unfair.
        assert!(inputs.iter().all(|u| canon.canonicalize(u).is_ok()));
        let mut group = c.benchmark_group(format!("canonicalize/{name}"));
        group.throughput(Throughput::Elements(BATCH as u64));
        group.bench_function(
            BenchmarkId::from_parameter("url::Url::parse (floor)"),
            |b| {
                b.iter(|| {
                    for u in &inputs {
                        black_box(url::Url::parse(black_box(u)).ok());
                    }
                });
            },
        );
        group.bench_function(BenchmarkId::from_parameter("url-dedup-canon"), |b| {
            b.iter(|| {
                for u in &inputs {
                    black_box(canon.canonicalize(black_box(u)).ok());
                }
            });
        });
        group.bench_function(BenchmarkId::from_parameter("urlnorm 0.1.6"), |b| {
            b.iter(|| {
                for u in &inputs {
                    if let Ok(parsed) = url::Url::parse(black_box(u)) {
                        black_box(urlnorm.compute_normalization_string(&parsed));
                    }
                }
            });
        });
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
