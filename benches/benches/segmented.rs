//! The segmented filter beside its peers, in one run: url-dedup-segmented (keyed SipHash-1-3
//! and XXH3) against fastbloom 0.17 (keyed SipHash-1-3, its default; and fed XXH3), sbbf-rs
//! 0.2.8 (Parquet split-block filter, fed XXH3, through its safe wrapper sbbf-rs-safe) and our
//! classic `url_dedup_bloom::BloomFilter`.
//!
//! ```text
//! cargo bench -p url-dedup-benches --bench segmented
//! URL_DEDUP_BENCH_SIZES=10M URL_DEDUP_BENCH_RATES=0.01 cargo bench -p url-dedup-benches --bench segmented
//! ```
//!
//! Figures are CPU time, not wall time: the machine is shared and noisy, and time spent
//! preempted by other processes is not the filter's. Two-thread figures are the two threads'
//! CPU time summed, per operation: equal to the one-thread figure when sharing costs nothing.
//!
//! For every configuration (n, p) it prints each filter's bits per item, memory and measured
//! false-positive rate at n items (1,000,000 absent keys), then times, in ns per operation:
//!
//! * `insert`, `hit`, `miss`: one item at a time (insert fills an empty filter sized for n,
//!   starting a fresh one, untimed, when all n keys are in, so it averages over fill levels);
//! * `insert batch`, `hit batch`, `miss batch`: url-dedup-segmented's batch methods, 1,024
//!   items per call, reported per item;
//! * `insert 2 threads`, `hit 2 threads`: two threads sharing one filter by `&self`, summed CPU
//!   time per operation (url-dedup-segmented, and fastbloom's `AtomicBloomFilter`).

use std::hint::black_box;
use std::time::Duration;

use cpu_time::ThreadTime;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use url_dedup_benches::peers::{
    Classic, Fastbloom, FastbloomXxh3, Filter, Sbbf, Segmented, SegmentedSplit, SegmentedSplitXxh3,
    SegmentedXxh3, segmented, segmented_with,
};
use url_dedup_benches::{rates, urls};
use url_dedup_bloom::hash::{ItemHasher, SipHash13, Xxh3};
use url_dedup_segmented::{Placement, SegmentedBloomFilter};

const BATCH: usize = 1024;

struct Keys<'a> {
    label: &'static str,
    p: f64,
    present: &'a [String],
    absent: &'a [String],
}

fn group_name(keys: &Keys) -> String {
    format!("segmented/{}/p={}", keys.label, keys.p)
}

fn report(name: &str, keys: &Keys, bits: u64, false_positives: usize) {
    let n = keys.present.len();
    println!(
        "{:<28} n={:<9} p={:<6} bits/item {:>6.2}  measured FPR {:.3}%  memory {:.1} MiB",
        name,
        n,
        keys.p,
        bits as f64 / n as f64,
        100.0 * false_positives as f64 / keys.absent.len() as f64,
        bits as f64 / 8.0 / (1 << 20) as f64,
    );
}

/// Times `op` over `iters` keys taken in order from `keys`, `chunk` keys per call, restarting
/// (untimed, with `reset`) when the keys run out. Measures the CPU time of this thread, not
/// wall time: the benchmark machine is shared, and time spent preempted by other processes says
/// nothing about a filter.
fn cycle<S>(
    state: &mut S,
    next: &mut usize,
    keys: &[String],
    iters: u64,
    reset: impl FnMut(&mut S),
    mut op: impl FnMut(&mut S, &[String]),
    chunk: usize,
) -> Duration {
    cycle_with(state, next, keys, iters, reset, |state, slice| {
        let start = ThreadTime::now();
        for part in slice.chunks(chunk) {
            op(state, part);
        }
        start.elapsed()
    })
}

/// The loop behind [`cycle`] and [`cycle_two`]: hands `time` consecutive slices of `keys`
/// totalling `iters` keys, restarting with `reset` when the keys run out, and sums the
/// durations `time` reports.
fn cycle_with<S>(
    state: &mut S,
    next: &mut usize,
    keys: &[String],
    iters: u64,
    mut reset: impl FnMut(&mut S),
    mut time: impl FnMut(&mut S, &[String]) -> Duration,
) -> Duration {
    let n = keys.len();
    let mut total = Duration::ZERO;
    let mut left = iters as usize;
    while left > 0 {
        if *next >= n {
            reset(state);
            *next = 0;
        }
        let take = left.min(n - *next);
        total += time(state, &keys[*next..*next + take]);
        *next += take;
        left -= take;
    }
    total
}

fn single<F: Filter>(c: &mut Criterion, keys: &Keys) {
    let n = keys.present.len();
    let mut full = F::new(n, keys.p);
    keys.present.iter().for_each(|k| full.insert(k));
    let fp = keys.absent.iter().filter(|k| full.contains(k)).count();
    report(F::NAME, keys, full.bits(), fp);

    let mut group = c.benchmark_group(group_name(keys));
    let mut filling = F::new(n, keys.p);
    let mut next = 0usize;
    group.bench_function(BenchmarkId::new("insert", F::NAME), |b| {
        b.iter_custom(|iters| {
            cycle(
                &mut filling,
                &mut next,
                keys.present,
                iters,
                |f| *f = F::new(n, keys.p),
                |f, part| part.iter().for_each(|k| f.insert(black_box(k))),
                usize::MAX,
            )
        })
    });
    drop(filling);
    for (name, set) in [("hit", keys.present), ("miss", keys.absent)] {
        let mut next = 0usize;
        group.bench_function(BenchmarkId::new(name, F::NAME), |b| {
            b.iter_custom(|iters| {
                cycle(
                    &mut (),
                    &mut next,
                    set,
                    iters,
                    |_| {},
                    |_, part| {
                        for k in part {
                            black_box(full.contains(black_box(k)));
                        }
                    },
                    usize::MAX,
                )
            })
        });
    }
    group.finish();
}

fn batch<H: ItemHasher>(c: &mut Criterion, keys: &Keys, name: &str, placement: Placement) {
    let n = keys.present.len();
    let full = segmented_with::<H>(n, keys.p, placement);
    full.check_and_insert_batch(keys.present);
    let mut group = c.benchmark_group(group_name(keys));
    let mut filling = segmented_with::<H>(n, keys.p, placement);
    let mut next = 0usize;
    let mut out = Vec::with_capacity(BATCH);
    group.bench_function(BenchmarkId::new("insert batch", name), |b| {
        b.iter_custom(|iters| {
            cycle(
                &mut filling,
                &mut next,
                keys.present,
                iters,
                |f| f.clear(),
                |f, part| {
                    out.clear();
                    f.check_and_insert_batch_into(part, &mut out);
                    black_box(&out);
                },
                BATCH,
            )
        })
    });
    drop(filling);
    for (op, set) in [("hit batch", keys.present), ("miss batch", keys.absent)] {
        let mut next = 0usize;
        group.bench_function(BenchmarkId::new(op, name), |b| {
            b.iter_custom(|iters| {
                cycle(
                    &mut (),
                    &mut next,
                    set,
                    iters,
                    |_| {},
                    |_, part| {
                        black_box(full.contains_batch(part));
                    },
                    BATCH,
                )
            })
        });
    }
    group.finish();
}

/// Runs `op` on two threads, each over one half of `keys`; the sum of the two threads' CPU
/// times. Wall time would mostly measure how often other processes preempt us on a shared
/// two-core machine; summed CPU time shows what sharing costs (contended locks and cache lines
/// make it grow above the one-thread figure, perfect scaling keeps it equal).
fn two_threads(keys: &[String], op: impl Fn(&str) + Sync) -> Duration {
    let (a, b) = keys.split_at(keys.len() / 2);
    std::thread::scope(|s| {
        let handles: Vec<_> = [a, b]
            .into_iter()
            .map(|half| {
                let op = &op;
                s.spawn(move || {
                    let start = ThreadTime::now();
                    half.iter().for_each(|k| op(k));
                    start.elapsed()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .sum()
    })
}

/// Times `op` on two threads over `iters` keys, like [`cycle`].
fn cycle_two<S: Sync>(
    state: &mut S,
    next: &mut usize,
    keys: &[String],
    iters: u64,
    reset: impl FnMut(&mut S),
    op: impl Fn(&S, &str) + Sync,
) -> Duration {
    cycle_with(state, next, keys, iters, reset, |state, slice| {
        let shared = &*state;
        two_threads(slice, |k| op(shared, k))
    })
}

/// A filter that two threads share through `&self`.
trait Shared: Sync {
    const NAME: &'static str;
    fn new(n: usize, p: f64) -> Self;
    fn insert(&self, key: &str);
    fn contains(&self, key: &str) -> bool;
}

impl Shared for SegmentedBloomFilter<SipHash13> {
    const NAME: &'static str = "url-dedup-segmented";
    fn new(n: usize, p: f64) -> Self {
        segmented(n, p)
    }
    fn insert(&self, key: &str) {
        self.check_and_insert(key);
    }
    fn contains(&self, key: &str) -> bool {
        SegmentedBloomFilter::contains(self, key)
    }
}

impl Shared for fastbloom::AtomicBloomFilter {
    const NAME: &'static str = "fastbloom 0.17 atomic";
    fn new(n: usize, p: f64) -> Self {
        fastbloom::AtomicBloomFilter::with_false_pos(p).expected_items(n)
    }
    fn insert(&self, key: &str) {
        fastbloom::AtomicBloomFilter::insert(self, key);
    }
    fn contains(&self, key: &str) -> bool {
        fastbloom::AtomicBloomFilter::contains(self, key)
    }
}

/// `insert 2 threads` (filling an empty filter) and `hit 2 threads` for one shared filter.
fn threads<F: Shared>(c: &mut Criterion, keys: &Keys) {
    let (n, p) = (keys.present.len(), keys.p);
    let mut group = c.benchmark_group(group_name(keys));
    let mut filling = F::new(n, p);
    let mut next = 0usize;
    group.bench_function(BenchmarkId::new("insert 2 threads", F::NAME), |b| {
        b.iter_custom(|iters| {
            cycle_two(
                &mut filling,
                &mut next,
                keys.present,
                iters,
                |f| *f = F::new(n, p),
                |f, k| f.insert(black_box(k)),
            )
        })
    });
    let mut full = filling;
    keys.present.iter().for_each(|k| full.insert(k));
    let mut next = 0usize;
    group.bench_function(BenchmarkId::new("hit 2 threads", F::NAME), |b| {
        b.iter_custom(|iters| {
            cycle_two(
                &mut full,
                &mut next,
                keys.present,
                iters,
                |_| {},
                |f, k| {
                    black_box(f.contains(k));
                },
            )
        })
    });
    group.finish();
}

fn all(c: &mut Criterion) {
    let absent = urls(1_000_000, 2);
    for (label, n) in url_dedup_benches::sizes() {
        let present = urls(n, 1);
        for p in rates(&[0.01, 0.001]) {
            let keys = Keys {
                label,
                p,
                present: &present,
                absent: &absent,
            };
            let (scattered, split) = (Placement::Scattered, Placement::Split);
            single::<Segmented>(c, &keys);
            batch::<SipHash13>(c, &keys, "url-dedup-segmented", scattered);
            single::<SegmentedXxh3>(c, &keys);
            batch::<Xxh3>(c, &keys, "url-dedup-segmented xxh3", scattered);
            single::<SegmentedSplit>(c, &keys);
            batch::<SipHash13>(c, &keys, "url-dedup-segmented split", split);
            single::<SegmentedSplitXxh3>(c, &keys);
            batch::<Xxh3>(c, &keys, "url-dedup-segmented split xxh3", split);
            single::<Fastbloom>(c, &keys);
            single::<FastbloomXxh3>(c, &keys);
            single::<Sbbf>(c, &keys);
            single::<Classic>(c, &keys);
            threads::<SegmentedBloomFilter<SipHash13>>(c, &keys);
            threads::<fastbloom::AtomicBloomFilter>(c, &keys);
        }
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(15)
        .warm_up_time(Duration::from_millis(700))
        .measurement_time(Duration::from_secs(2));
    targets = all
}
criterion_main!(benches);
