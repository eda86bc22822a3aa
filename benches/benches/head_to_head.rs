//! Head to head, interleaved: our filters and their peers measured in alternating rounds, so
//! that a burst of load from other processes lands on every contender alike, and reported as
//! medians over rounds of each contender's time and of each ratio.
//!
//! Criterion's targets (`bloom`, `segmented`) measure one contender after another, several
//! seconds each; on a shared two-core machine the background load changes between them and
//! ratios drift by 20% from run to run. Here every round times every contender on the same
//! slice of keys, in a rotated order, and a ratio is taken within a round before the median
//! across rounds is.
//!
//! ```text
//! cargo bench -p url-dedup-benches --bench head_to_head
//! URL_DEDUP_BENCH_SIZES=100K URL_DEDUP_BENCH_RATES=0.01,0.001 URL_DEDUP_BENCH_ROUNDS=11 \
//!     cargo bench -p url-dedup-benches --bench head_to_head
//! ```
//!
//! `URL_DEDUP_BENCH_ONLY=sbbf,split` keeps the contenders whose names contain one of the
//! words. Defaults: n = 10M, p = 1%, 9 rounds of 1,000,000 operations per contender and operation
//! (`URL_DEDUP_BENCH_OPS`). Times are CPU time of the measuring thread, in ns per operation:
//!
//! * `insert`: keys added to a filter being filled, which continues across rounds and starts
//!   afresh (untimed) when full, so rounds average over fill levels;
//! * `hit`: present keys queried on a full filter; `miss`: absent keys on the same filter.
//!
//! `split` contenders use [`Placement::Split`] (one bit in each of eight 64-bit lanes of a
//! 512-bit segment), the others the default scattered placement. `batch` contenders are
//! url-dedup-segmented's batch methods, 1,024 keys per call: `check_and_insert_batch_mut` for
//! inserts and `contains_batch` for queries. The others are single calls. Every insert, ours
//! and the peers', goes through `&mut self`; the `&self` exactly-once batch path is timed by
//! the `segmented` bench.

use std::time::Duration;

use cpu_time::ThreadTime;
use url_dedup_benches::peers::{
    Bloomfilter, Classic, Fastbloom, Filter, Sbbf, Segmented, SegmentedSplit, SegmentedSplitXxh3,
    SegmentedXxh3, segmented_with,
};
use url_dedup_benches::{env_usize, median, rates, sizes_or, urls};
use url_dedup_bloom::hash::{ItemHasher, SipHash13, Xxh3};
use url_dedup_segmented::{Placement, SegmentedBloomFilter};

const BATCH: usize = 1024;
const OPS: [&str; 3] = ["insert", "hit", "miss"];

/// One contender: its figures and a way to time each operation over a slice of keys.
struct Contender<'k> {
    name: String,
    bits_per_item: f64,
    fpr: f64,
    time: Box<dyn FnMut(usize, &'k [String]) -> Duration + 'k>,
}

fn timed(op: impl FnOnce()) -> Duration {
    let start = ThreadTime::now();
    op();
    start.elapsed()
}

/// Measured false-positive rate of a full filter over `absent` keys.
fn fpr(absent: &[String], contains: impl Fn(&str) -> bool) -> f64 {
    absent.iter().filter(|k| contains(k)).count() as f64 / absent.len() as f64
}

fn single<'k, F: Filter + 'k>(
    n: usize,
    p: f64,
    present: &'k [String],
    absent: &'k [String],
) -> Contender<'k> {
    let mut full = F::new(n, p);
    present.iter().for_each(|k| full.insert(k));
    let mut filling = F::new(n, p);
    let mut filled = 0usize;
    Contender {
        name: F::NAME.to_string(),
        bits_per_item: full.bits() as f64 / n as f64,
        fpr: fpr(absent, |k| full.contains(k)),
        time: Box::new(move |op, keys| match op {
            0 => {
                if filled + keys.len() > n {
                    filling = F::new(n, p);
                    filled = 0;
                }
                filled += keys.len();
                timed(|| keys.iter().for_each(|k| filling.insert(k)))
            }
            _ => timed(|| {
                let found = keys.iter().filter(|k| full.contains(k)).count();
                std::hint::black_box(found);
            }),
        }),
    }
}

fn batch<'k, H: ItemHasher + 'k>(
    name: &str,
    placement: Placement,
    n: usize,
    p: f64,
    present: &'k [String],
    absent: &'k [String],
) -> Contender<'k> {
    let full: SegmentedBloomFilter<H> = segmented_with(n, p, placement);
    present.chunks(BATCH).for_each(|c| {
        full.check_and_insert_batch(c);
    });
    let mut filling: SegmentedBloomFilter<H> = segmented_with(n, p, placement);
    let mut filled = 0usize;
    Contender {
        name: format!("{name} batch"),
        bits_per_item: full.bits() as f64 / n as f64,
        fpr: {
            let found: usize = absent
                .chunks(BATCH)
                .map(|c| full.contains_batch(c).into_iter().filter(|&x| x).count())
                .sum();
            found as f64 / absent.len() as f64
        },
        time: Box::new(move |op, keys| match op {
            0 => {
                if filled + keys.len() > n {
                    filling.clear();
                    filled = 0;
                }
                filled += keys.len();
                timed(|| {
                    for c in keys.chunks(BATCH) {
                        std::hint::black_box(filling.check_and_insert_batch_mut(c));
                    }
                })
            }
            _ => timed(|| {
                for c in keys.chunks(BATCH) {
                    std::hint::black_box(full.contains_batch(c));
                }
            }),
        }),
    }
}

fn main() {
    // `cargo test --benches` and `--list` run bench binaries too: only `cargo bench` measures.
    let args: Vec<String> = std::env::args().collect();
    if !args.iter().any(|a| a == "--bench") || args.iter().any(|a| a == "--list") {
        return;
    }
    let sizes = sizes_or(&["10M"]);
    let rates = rates(&[0.01]);
    let rounds = env_usize("URL_DEDUP_BENCH_ROUNDS", 9).max(1);
    let ops = env_usize("URL_DEDUP_BENCH_OPS", 1_000_000).max(BATCH);
    let absent = urls(1_000_000, 2);

    for (label, n) in sizes {
        let present = urls(n, 1);
        let window = ops.min(n);
        for &p in &rates {
            println!(
                "\n## n = {label}, p = {p}: {rounds} interleaved rounds of {window} operations"
            );
            let (scattered, split) = (Placement::Scattered, Placement::Split);
            let mut all: Vec<Contender> = vec![
                single::<Classic>(n, p, &present, &absent),
                single::<Segmented>(n, p, &present, &absent),
                batch::<SipHash13>("url-dedup-segmented", scattered, n, p, &present, &absent),
                single::<SegmentedXxh3>(n, p, &present, &absent),
                batch::<Xxh3>(
                    "url-dedup-segmented xxh3",
                    scattered,
                    n,
                    p,
                    &present,
                    &absent,
                ),
                single::<SegmentedSplit>(n, p, &present, &absent),
                batch::<SipHash13>("url-dedup-segmented split", split, n, p, &present, &absent),
                single::<SegmentedSplitXxh3>(n, p, &present, &absent),
                batch::<Xxh3>(
                    "url-dedup-segmented split xxh3",
                    split,
                    n,
                    p,
                    &present,
                    &absent,
                ),
                single::<Fastbloom>(n, p, &present, &absent),
                single::<Bloomfilter>(n, p, &present, &absent),
                single::<Sbbf>(n, p, &present, &absent),
            ];
            // `URL_DEDUP_BENCH_ONLY=sbbf,split` keeps the contenders whose names contain one of
            // the comma-separated words.
            if let Ok(only) = std::env::var("URL_DEDUP_BENCH_ONLY") {
                all.retain(|c| only.split(',').any(|w| c.name.contains(w.trim())));
            }
            // ns[contender][op][round]
            let mut ns = vec![vec![Vec::with_capacity(rounds); OPS.len()]; all.len()];
            for round in 0..rounds {
                let start = (round * window) % (n - window + 1).max(1);
                let slices = [
                    &present[start..start + window],
                    &present[start..start + window],
                    &absent[..window.min(absent.len())],
                ];
                for (op, keys) in slices.iter().enumerate() {
                    let count = all.len();
                    for i in 0..count {
                        let c = (i + round) % count;
                        let took = (all[c].time)(op, keys);
                        ns[c][op].push(took.as_nanos() as f64 / keys.len() as f64);
                    }
                }
            }
            println!(
                "\n| contender | bits/item | FPR | insert ns | hit ns | miss ns |\n|---|---|---|---|---|---|"
            );
            for (c, contender) in all.iter().enumerate() {
                println!(
                    "| {} | {:.2} | {:.3}% | {:.1} | {:.1} | {:.1} |",
                    contender.name,
                    contender.bits_per_item,
                    100.0 * contender.fpr,
                    median(ns[c][0].clone()),
                    median(ns[c][1].clone()),
                    median(ns[c][2].clone()),
                );
            }
            println!(
                "\nspeedup = peer time / our time, median over rounds of the per-round ratio\n\n| ours | peer | insert | hit | miss |\n|---|---|---|---|---|"
            );
            let ours = [
                "url-dedup-bloom",
                "url-dedup-segmented",
                "url-dedup-segmented batch",
                "url-dedup-segmented xxh3",
                "url-dedup-segmented xxh3 batch",
                "url-dedup-segmented split",
                "url-dedup-segmented split batch",
                "url-dedup-segmented split xxh3",
                "url-dedup-segmented split xxh3 batch",
            ];
            let peers = [Fastbloom::NAME, Bloomfilter::NAME, Sbbf::NAME];
            let index = |name: &str| all.iter().position(|c| c.name == name);
            for o in ours {
                for q in peers {
                    let (Some(oi), Some(qi)) = (index(o), index(q)) else {
                        continue;
                    };
                    let ratio = |op: usize| {
                        median(
                            ns[qi][op]
                                .iter()
                                .zip(&ns[oi][op])
                                .map(|(peer, us)| peer / us)
                                .collect(),
                        )
                    };
                    println!(
                        "| {o} | {q} | {:.2}x | {:.2}x | {:.2}x |",
                        ratio(0),
                        ratio(1),
                        ratio(2)
                    );
                }
            }
        }
    }
}
