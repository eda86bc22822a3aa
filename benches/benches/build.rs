//! What building a filter costs: sizing it (a search over sizes and hash counts that sums a
//! Poisson mixture per candidate) and allocating it. It matters to a crawler that keeps a
//! filter per site, and to a partitioned filter's thousands of shards.
//!
//! `fresh rate` builds each filter at a rate no earlier build used (nothing the sizing keeps
//! per thread applies); `same rate` builds them all at one rate, as a filter per site does.
//!
//! ```sh
//! cargo bench -p url-dedup-benches --bench build -- --warm-up-time 1 --measurement-time 3
//! ```

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use url_dedup_segmented::{GrowingFilter, SegmentedBloomFilter};

fn build(c: &mut Criterion) {
    let mut group = c.benchmark_group("build");
    for (items, rate) in [(1_000u64, 0.01), (100_000, 1e-6), (100_000, 1e-9)] {
        let case = format!("{items} at {rate:e}");
        // Rates a hair apart from one build to the next: each a new sizing.
        let mut nudge = 0u32;
        let mut fresh = move || {
            nudge = nudge.wrapping_add(1);
            rate * (1.0 + f64::from(nudge % 1_000_000) * 1e-9)
        };
        group.bench_function(BenchmarkId::new("GrowingFilter, fresh rate", &case), |b| {
            b.iter(|| {
                GrowingFilter::builder()
                    .expected_items(items)
                    .false_positive_rate(fresh())
                    .build()
                    .map(black_box)
            })
        });
        group.bench_function(BenchmarkId::new("GrowingFilter, same rate", &case), |b| {
            b.iter(|| {
                GrowingFilter::builder()
                    .expected_items(items)
                    .false_positive_rate(rate)
                    .build()
                    .map(black_box)
            })
        });
        group.bench_function(
            BenchmarkId::new("SegmentedBloomFilter, fresh rate", &case),
            |b| {
                b.iter(|| {
                    SegmentedBloomFilter::builder()
                        .expected_items(items)
                        .false_positive_rate(fresh())
                        .build()
                        .map(black_box)
                })
            },
        );
        group.bench_function(BenchmarkId::new("UrlDedup, fresh rate", &case), |b| {
            b.iter(|| {
                url_dedup::UrlDedup::builder()
                    .expected_urls(items)
                    .false_positive_rate(fresh())
                    .build()
                    .map(black_box)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, build);
criterion_main!(benches);
