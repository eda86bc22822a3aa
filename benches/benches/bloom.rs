//! Classic Bloom filters side by side: url-dedup-bloom against fastbloom, bloomfilter and
//! probabilistic-collections, each with its default keyed SipHash, on URL-like keys.
//!
//! ```text
//! cargo bench -p url-dedup-benches --bench bloom
//! URL_DEDUP_BENCH_SIZES=100K cargo bench -p url-dedup-benches --bench bloom   # small n only
//! ```
//!
//! For every configuration (n, p) it prints each filter's bits per item and its measured
//! false-positive rate at n items, then times insert (filling an empty filter sized for n, so
//! the figure averages over fill levels), query hit and query miss, in ns per operation.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use url_dedup_benches::peers::{
    Bloomfilter, Classic, ClassicAtomic, Fastbloom, Filter, Probabilistic,
};
use url_dedup_benches::urls;

struct Keys<'a> {
    label: &'static str,
    p: f64,
    present: &'a [String],
    absent: &'a [String],
}

fn run<F: Filter>(c: &mut Criterion, keys: &Keys) {
    let n = keys.present.len();
    let mut full = F::new(n, keys.p);
    keys.present.iter().for_each(|k| full.insert(k));
    let false_positives = keys.absent.iter().filter(|k| full.contains(k)).count();
    println!(
        "{:<32} n={:<9} p={:<6} bits/item {:>6.2}  measured FPR {:.3}%  memory {:.1} MiB",
        F::NAME,
        n,
        keys.p,
        full.bits() as f64 / n as f64,
        100.0 * false_positives as f64 / keys.absent.len() as f64,
        full.bits() as f64 / 8.0 / (1 << 20) as f64,
    );

    let group_name = format!("bloom/{}/p={}", keys.label, keys.p);
    let mut group = c.benchmark_group(group_name);

    // Insert: keep filling one filter; start a fresh one (untimed) when all n keys are in.
    let mut filling = F::new(n, keys.p);
    let mut next = 0usize;
    group.bench_function(BenchmarkId::new("insert", F::NAME), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut left = iters as usize;
            while left > 0 {
                if next == n {
                    filling = F::new(n, keys.p);
                    next = 0;
                }
                let take = left.min(n - next);
                let start = Instant::now();
                for k in &keys.present[next..next + take] {
                    filling.insert(black_box(k));
                }
                total += start.elapsed();
                next += take;
                left -= take;
            }
            total
        })
    });
    drop(filling);

    let mut i = 0usize;
    group.bench_function(BenchmarkId::new("hit", F::NAME), |b| {
        b.iter(|| {
            i = if i + 1 == n { 0 } else { i + 1 };
            black_box(full.contains(black_box(&keys.present[i])))
        })
    });
    let mut j = 0usize;
    let m = keys.absent.len();
    group.bench_function(BenchmarkId::new("miss", F::NAME), |b| {
        b.iter(|| {
            j = if j + 1 == m { 0 } else { j + 1 };
            black_box(full.contains(black_box(&keys.absent[j])))
        })
    });
    group.finish();
}

fn classic(c: &mut Criterion) {
    let absent = urls(1_000_000, 2);
    for (label, n) in url_dedup_benches::sizes() {
        let present = urls(n, 1);
        for p in [0.01, 0.001] {
            let keys = Keys {
                label,
                p,
                present: &present,
                absent: &absent,
            };
            run::<Classic>(c, &keys);
            run::<ClassicAtomic>(c, &keys);
            run::<Fastbloom>(c, &keys);
            run::<Bloomfilter>(c, &keys);
            run::<Probabilistic>(c, &keys);
        }
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = classic
}
criterion_main!(benches);
