//! Similarity filter `check_and_insert` per preset and region sizing, beside a bare
//! `url::Url::parse` of the same URLs (the floor of any filter that parses its input) and an
//! exact filter's `check_and_insert`, in the same run, at two scales:
//!
//! * `similarity/check_and_insert`: 100,000 URLs at 1% (every filter in the cache);
//! * `similarity/1M at 1e-9`: 1,000,000 URLs at one in a billion, the `url-dedup` command's
//!   default rate, which the deduplicator hands its similarity filter too: regions far larger
//!   than the cache, beside the command's exact filter (the growing segmented filter).
//! * `similarity/real lists at 1e-9`: the two real URL lists of `crates/similarity/data`
//!   (48,402 URLs from documentation and source code, in the order they were found, so with
//!   the locality of real pages: a site's URLs come together) into a fresh filter sized for
//!   them at one in a billion, in batches of 1,000 as the command hands them over, beside the
//!   command's exact filter doing the same; and the deduplicator users call (`UrlDedup`,
//!   canonicalizing each URL first) in its exact mode and with the crawler and page presets.
//!
//! ```sh
//! cargo bench -p url-dedup-benches --bench similarity -- --warm-up-time 1 --measurement-time 3
//! ```

use std::hint::black_box;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use url_dedup_bloom::BloomFilter;
use url_dedup_segmented::GrowingFilter;
use url_dedup_similarity::{FeatureHash, Preset, RegionSizing, SimilarityFilter};

const URLS: usize = 100_000;
const BATCH: usize = 1_000;

/// The larger scale: URLs and rate.
const LARGE: (usize, f64) = (1_000_000, 1e-9);

fn large(c: &mut Criterion) {
    let (count, rate) = LARGE;
    let urls = url_dedup_benches::urls(count, 11);
    let mut group = c.benchmark_group("similarity/1M at 1e-9");
    group.throughput(Throughput::Elements(BATCH as u64));
    let mut run = |name: &str, mut op: Box<dyn FnMut(&str) -> bool>| {
        let mut next = 0usize;
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                for _ in 0..BATCH {
                    black_box(op(black_box(&urls[next])));
                    next = (next + 1) % count;
                }
            });
        });
    };
    let exact = GrowingFilter::builder()
        .expected_items(count as u64)
        .false_positive_rate(rate)
        .build()
        .expect("valid sizing");
    run(
        "exact GrowingFilter (SipHash-1-3)",
        Box::new(move |u| exact.check_and_insert(u)),
    );
    for (name, sizing, preset) in [
        (
            "Crawler, per-feature sizing, SipHash-1-3",
            RegionSizing::PerFeature,
            Preset::Crawler,
        ),
        (
            "Crawler, blocked sizing, SipHash-1-3",
            RegionSizing::Blocked,
            Preset::Crawler,
        ),
        (
            "Page, blocked sizing, SipHash-1-3",
            RegionSizing::Blocked,
            Preset::Page,
        ),
    ] {
        let mut filter = SimilarityFilter::builder()
            .expected_items(count as u64)
            .false_positive_rate(rate)
            .preset(preset)
            .region_sizing(sizing)
            .feature_hash(FeatureHash::SipHash13)
            .build()
            .expect("valid sizing");
        run(name, Box::new(move |u| filter.check_and_insert(u).is_new()));
    }
    group.finish();
}

/// Decides one batch of a list against state of its own (a fresh filter or deduplicator).
type Decide = Box<dyn FnMut(&[&str])>;

fn real(c: &mut Criterion) {
    let urls: Vec<&str> = [
        include_str!("../../crates/similarity/data/real-urls.txt"),
        include_str!("../../crates/similarity/data/real-urls-rust.txt"),
    ]
    .iter()
    .flat_map(|list| list.lines())
    .collect();
    let count = urls.len() as u64;
    let rate = LARGE.1;
    let mut group = c.benchmark_group("similarity/real lists at 1e-9");
    group.throughput(Throughput::Elements(count));
    group.sample_size(20);
    // Each iteration decides the whole list, in batches, with a fresh filter built outside the
    // timing.
    let mut whole_list = |name: &str, decide: &dyn Fn() -> Decide| {
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter_batched(
                decide,
                |mut decide| {
                    for batch in urls.chunks(BATCH) {
                        decide(batch);
                    }
                    decide
                },
                BatchSize::LargeInput,
            );
        });
    };
    whole_list("exact GrowingFilter (SipHash-1-3)", &|| {
        let mut filter = GrowingFilter::builder()
            .expected_items(count)
            .false_positive_rate(rate)
            .build()
            .expect("valid sizing");
        Box::new(move |batch| {
            black_box(filter.check_and_insert_batch_mut(batch));
        })
    });
    // The deduplicator users call, canonicalizing each URL first: the exact mode and the
    // similarity modes side by side.
    for (name, similar) in [
        ("UrlDedup, exact mode (canonicalizing)", None),
        (
            "UrlDedup, crawler preset (canonicalizing)",
            Some(Preset::Crawler),
        ),
        ("UrlDedup, page preset (canonicalizing)", Some(Preset::Page)),
    ] {
        whole_list(name, &|| {
            let builder = url_dedup::UrlDedup::builder()
                .expected_urls(count)
                .false_positive_rate(rate);
            let dedup = match similar {
                Some(preset) => builder.similarity(preset),
                None => builder,
            }
            .build()
            .expect("valid sizing");
            Box::new(move |batch| {
                black_box(dedup.check_and_insert_batch(batch.iter().copied()));
            })
        });
    }
    for (name, preset) in [
        ("Crawler, blocked sizing, SipHash-1-3", Preset::Crawler),
        ("Page, blocked sizing, SipHash-1-3", Preset::Page),
    ] {
        whole_list(name, &|| {
            let mut filter = SimilarityFilter::builder()
                .expected_items(count)
                .false_positive_rate(rate)
                .feature_hash(FeatureHash::SipHash13)
                .preset(preset)
                .build()
                .expect("valid sizing");
            Box::new(move |batch| {
                black_box(filter.check_and_insert_batch(batch));
            })
        });
    }
    group.finish();
}

fn bench(c: &mut Criterion) {
    let urls = url_dedup_benches::urls(URLS, 11);
    let mut group = c.benchmark_group("similarity/check_and_insert");
    group.throughput(Throughput::Elements(BATCH as u64));

    // Each iteration handles the next 1,000 URLs of a 100,000-URL list, cycling, so the
    // filters see a mix of new and already-recorded URLs as in a crawl.
    let mut run = |name: &str, mut op: Box<dyn FnMut(&str) -> bool>| {
        let mut next = 0usize;
        group.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                for _ in 0..BATCH {
                    black_box(op(black_box(&urls[next])));
                    next = (next + 1) % URLS;
                }
            });
        });
    };
    run(
        "url::Url::parse (floor)",
        Box::new(|u| url::Url::parse(u).is_ok()),
    );
    let mut exact = BloomFilter::builder()
        .expected_items(URLS as u64)
        .false_positive_rate(0.01)
        .build()
        .expect("valid sizing");
    run(
        "exact BloomFilter (SipHash-1-3)",
        Box::new(move |u| exact.check_and_insert(u)),
    );
    for (name, preset, sizing, hash) in [
        (
            "Document004, document sizing",
            Preset::Document004,
            RegionSizing::Document004,
            FeatureHash::Md5,
        ),
        (
            "Document004, per-feature sizing",
            Preset::Document004,
            RegionSizing::PerFeature,
            FeatureHash::Md5,
        ),
        (
            "Crawler, per-feature sizing",
            Preset::Crawler,
            RegionSizing::PerFeature,
            FeatureHash::Md5,
        ),
        (
            "Crawler, per-feature sizing, SipHash-1-3",
            Preset::Crawler,
            RegionSizing::PerFeature,
            FeatureHash::SipHash13,
        ),
        (
            "Crawler, blocked sizing (default), MD5",
            Preset::Crawler,
            RegionSizing::Blocked,
            FeatureHash::Md5,
        ),
        (
            "Crawler, blocked sizing (default), SipHash-1-3",
            Preset::Crawler,
            RegionSizing::Blocked,
            FeatureHash::SipHash13,
        ),
    ] {
        let mut filter = SimilarityFilter::builder()
            .expected_items(URLS as u64)
            .false_positive_rate(0.01)
            .preset(preset)
            .region_sizing(sizing)
            .feature_hash(hash)
            .build()
            .expect("valid sizing");
        run(name, Box::new(move |u| filter.check_and_insert(u).is_new()));
    }
    group.finish();
}

criterion_group!(benches, bench, large, real);
criterion_main!(benches);
