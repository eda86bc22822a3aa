//! Head to head, interleaved: our filters and their peers measured in alternating rounds, so
//! that a burst of load from other processes lands on every contender alike, and reported as
//! medians over rounds of each contender's time and of each ratio.
//!
//! Criterion's targets (`bloom`, `segmented`) measure one contender after another, several
//! seconds each; on a shared two-core machine the background load changes between them and
//! ratios drift by 20% from run to run. Here every round times every contender on the same
//! keys, in a rotated order, and a ratio is taken within a round before the median across
//! rounds is.
//!
//! ```text
//! URL_DEDUP_BENCH_ROUNDS=21 cargo bench -p url-dedup-benches --bench head_to_head
//! URL_DEDUP_BENCH_SIZES=10K,100K,1M URL_DEDUP_BENCH_RATES=0.01 cargo bench -p url-dedup-benches --bench head_to_head
//! ```
//!
//! `url-dedup GrowingFilter` is the growing filter as users get it by default (sized for n, so
//! one layer); the other `url-dedup-segmented` rows are the fixed-size filter.
//!
//! `URL_DEDUP_BENCH_ONLY=sbbf,split` keeps the contenders whose names contain one of the
//! words. Defaults: n = 10M, p = 1%, 9 rounds. Times are CPU time of the measuring thread, in
//! ns per operation:
//!
//! * `insert`: a fresh filter built and filled from empty with all n keys, build included,
//!   so every round covers every fill level and every contender pays for its memory the way
//!   it chooses to (zeroed up front, or page by page on first touch);
//! * `hit`: present keys queried on a full filter; `miss`: absent keys on the same filter;
//!   each round queries 1,000,000 keys (`URL_DEDUP_BENCH_OPS`), the same ones for everyone.
//!
//! Small filters repeat their fill, and their queries cycle over their keys, until a round has
//! about a million operations, so that every measured interval is long against the clock.
//!
//! Keys sit back to back in one buffer ([`KeyBuffer`]), as a crawler holds the URLs of a
//! page. An earlier version took them from a `Vec<String>`, one heap block per key, and
//! filled one filter across rounds (so a round measured a tenth of the fill); see
//! `docs/benchmarks.md` for what that changed.
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
    Bloomfilter, Classic, Fastbloom, Filter, Growing, Sbbf, Segmented, SegmentedSplit,
    SegmentedSplitXxh3, SegmentedXxh3, segmented_with,
};
use url_dedup_benches::{KeyBuffer, env_usize, median, rates, sizes_or};
use url_dedup_bloom::hash::{ItemHasher, SipHash13, Xxh3};
use url_dedup_segmented::{Placement, SegmentedBloomFilter};

const BATCH: usize = 1024;
const OPS: [&str; 3] = ["insert", "hit", "miss"];

/// Times one operation (`0` insert, `1` hit, `2` miss) over keys: the time taken and the
/// number of operations it covers.
type Timer<'k> = Box<dyn FnMut(usize, &'k [&'k str]) -> (Duration, usize) + 'k>;

/// One contender: its figures and a way to time each operation.
struct Contender<'k> {
    name: String,
    bits_per_item: f64,
    fpr: f64,
    time: Timer<'k>,
}

fn timed(op: impl FnOnce()) -> Duration {
    let start = ThreadTime::now();
    op();
    start.elapsed()
}

/// How many times `keys.len()` operations must run for a round of about `ops`.
fn repeats(keys: usize, ops: usize) -> usize {
    ops.div_ceil(keys.max(1)).max(1)
}

/// Measured false-positive rate of a full filter over `absent` keys.
fn fpr(absent: &[&str], contains: impl Fn(&str) -> bool) -> f64 {
    absent.iter().filter(|k| contains(k)).count() as f64 / absent.len() as f64
}

fn single<'k, F: Filter + 'k>(
    (n, p, ops): (usize, f64, usize),
    present: &'k [&'k str],
    absent: &'k [&'k str],
) -> Contender<'k> {
    let mut full = F::new(n, p);
    present.iter().for_each(|k| full.insert(k));
    Contender {
        name: F::NAME.to_string(),
        bits_per_item: full.bits() as f64 / n as f64,
        fpr: fpr(absent, |k| full.contains(k)),
        time: Box::new(move |op, keys| match op {
            0 => {
                let reps = repeats(keys.len(), ops);
                let took = timed(|| {
                    for _ in 0..reps {
                        let mut filter = F::new(n, p);
                        keys.iter().for_each(|k| filter.insert(k));
                        std::hint::black_box(&filter);
                    }
                });
                (took, reps * keys.len())
            }
            _ => {
                let reps = repeats(keys.len(), ops);
                let took = timed(|| {
                    for _ in 0..reps {
                        let found = keys.iter().filter(|k| full.contains(k)).count();
                        std::hint::black_box(found);
                    }
                });
                (took, reps * keys.len())
            }
        }),
    }
}

fn batch<'k, H: ItemHasher + 'k>(
    name: &str,
    placement: Placement,
    (n, p, ops): (usize, f64, usize),
    present: &'k [&'k str],
    absent: &'k [&'k str],
) -> Contender<'k> {
    let full: SegmentedBloomFilter<H> = segmented_with(n, p, placement);
    present.chunks(BATCH).for_each(|c| {
        full.check_and_insert_batch(c);
    });
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
                let reps = repeats(keys.len(), ops);
                let took = timed(|| {
                    for _ in 0..reps {
                        let mut filter: SegmentedBloomFilter<H> = segmented_with(n, p, placement);
                        for c in keys.chunks(BATCH) {
                            std::hint::black_box(filter.check_and_insert_batch_mut(c));
                        }
                    }
                });
                (took, reps * keys.len())
            }
            _ => {
                let reps = repeats(keys.len(), ops);
                let took = timed(|| {
                    for _ in 0..reps {
                        for c in keys.chunks(BATCH) {
                            std::hint::black_box(full.contains_batch(c));
                        }
                    }
                });
                (took, reps * keys.len())
            }
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
    let absent_keys = KeyBuffer::urls(1_000_000, 2);
    let absent_all = absent_keys.as_slice();

    for (label, n) in sizes {
        let present_keys = KeyBuffer::urls(n, 1);
        let present = present_keys.as_slice();
        let window = ops.min(n);
        let absent = &absent_all[..window.min(absent_all.len())];
        for &p in &rates {
            println!(
                "\n## n = {label}, p = {p}: {rounds} interleaved rounds; insert fills a fresh filter \
                 with all {n} keys, queries take {window} keys\n\nbefore: {}",
                url_dedup_benches::machine_state()
            );
            let (scattered, split) = (Placement::Scattered, Placement::Split);
            let size = (n, p, ops);
            let mut all: Vec<Contender> = vec![
                single::<Classic>(size, &present, &absent_all),
                single::<Growing>(size, &present, &absent_all),
                single::<Segmented>(size, &present, &absent_all),
                batch::<SipHash13>(
                    "url-dedup-segmented",
                    scattered,
                    size,
                    &present,
                    &absent_all,
                ),
                single::<SegmentedXxh3>(size, &present, &absent_all),
                batch::<Xxh3>(
                    "url-dedup-segmented xxh3",
                    scattered,
                    size,
                    &present,
                    &absent_all,
                ),
                single::<SegmentedSplit>(size, &present, &absent_all),
                batch::<SipHash13>(
                    "url-dedup-segmented split",
                    split,
                    size,
                    &present,
                    &absent_all,
                ),
                single::<SegmentedSplitXxh3>(size, &present, &absent_all),
                batch::<Xxh3>(
                    "url-dedup-segmented split xxh3",
                    split,
                    size,
                    &present,
                    &absent_all,
                ),
                single::<Fastbloom>(size, &present, &absent_all),
                single::<Bloomfilter>(size, &present, &absent_all),
                single::<Sbbf>(size, &present, &absent_all),
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
                let slices: [&[&str]; 3] = [&present, &present[start..start + window], absent];
                for (op, keys) in slices.iter().enumerate() {
                    let count = all.len();
                    for i in 0..count {
                        let c = (i + round) % count;
                        let (took, done) = (all[c].time)(op, keys);
                        ns[c][op].push(took.as_nanos() as f64 / done as f64);
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
                Growing::NAME,
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
