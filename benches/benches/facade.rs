//! The facade as users get it by default (`UrlDedup::builder().build()`: canonicalization,
//! the growing filter at 0.1% for a million URLs) against what people write without it:
//! `url::Url::parse` then a `HashSet<String>` of the parsed URL, or then fastbloom sized for
//! the same million URLs at the same rate. Interleaved rounds, medians, ratios.
//!
//! ```text
//! cargo bench -p url-dedup-benches --bench facade
//! URL_DEDUP_BENCH_LINES=2000000 URL_DEDUP_BENCH_ROUNDS=5 cargo bench -p url-dedup-benches --bench facade
//! ```
//!
//! The list is `CrawlList` (`gen-urls`): `URL_DEDUP_BENCH_LINES` lines (default 2,000,000),
//! half of them repeats of earlier ones, so the million distinct URLs are what the default
//! expects. Each round gives every contender a fresh structure and the whole list, one call
//! per line, in a rotated order; a time is the measuring thread's CPU time per line. A ratio
//! is the peer's time over the facade's within a round, median over rounds. Memory is what
//! each structure holds at the end: the facade's `memory_bytes`, fastbloom's bits, and for
//! the set its table (a `String` and a control byte per slot) plus each string's heap block.

use std::collections::HashSet;
use std::time::Duration;

use cpu_time::ThreadTime;
use url::Url;
use url_dedup::UrlDedup;
use url_dedup_benches::{CrawlList, env_usize, median};

/// One contender: processes every line into a fresh structure, returns the lines found new
/// and the bytes the structure holds.
type Run = Box<dyn Fn(&[&str]) -> (usize, u64)>;

fn facade() -> Run {
    Box::new(|lines| {
        let dedup = UrlDedup::builder().build().expect("default builder");
        let new = lines
            .iter()
            .filter(|l| dedup.check_and_insert(l).is_ok_and(|o| o.is_new()))
            .count();
        (new, dedup.memory_bytes())
    })
}

fn hash_set() -> Run {
    Box::new(|lines| {
        let mut seen: HashSet<String> = HashSet::new();
        let new = lines
            .iter()
            .filter(|l| Url::parse(l).is_ok_and(|u| seen.insert(u.into())))
            .count();
        let strings: usize = seen.iter().map(String::capacity).sum();
        let table = seen.capacity() * (std::mem::size_of::<String>() + 1);
        (new, (strings + table) as u64)
    })
}

fn fastbloom() -> Run {
    Box::new(|lines| {
        let mut seen = fastbloom::BloomFilter::with_false_pos(0.001).expected_items(1_000_000);
        let new = lines
            .iter()
            .filter(|l| Url::parse(l).is_ok_and(|u| !seen.insert(u.as_str())))
            .count();
        (new, seen.num_bits() as u64 / 8)
    })
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") || std::env::args().any(|a| a == "--list") {
        return;
    }
    let count = env_usize("URL_DEDUP_BENCH_LINES", 2_000_000);
    let rounds = env_usize("URL_DEDUP_BENCH_ROUNDS", 5).max(1);
    let list = CrawlList::new(count, 0.5, 7);
    let lines: Vec<&str> = list.lines().collect();
    let contenders: Vec<(&str, Run)> = vec![
        ("url-dedup UrlDedup (default)", facade()),
        ("Url::parse + HashSet<String>", hash_set()),
        ("Url::parse + fastbloom 0.17 (0.1%)", fastbloom()),
    ];
    // ns[contender][round], and each contender's last answer and memory.
    let mut ns = vec![Vec::new(); contenders.len()];
    let mut last = vec![(0, 0); contenders.len()];
    for round in 0..rounds {
        for k in 0..contenders.len() {
            let c = (k + round) % contenders.len();
            let start = ThreadTime::now();
            last[c] = (contenders[c].1)(&lines);
            let took: Duration = start.elapsed();
            ns[c].push(took.as_nanos() as f64 / lines.len() as f64);
        }
    }
    println!(
        "\n{count} lines, {} distinct, {rounds} interleaved rounds; CPU ns per line, medians; {}\n",
        list.distinct(),
        url_dedup_benches::machine_state()
    );
    println!("| contender | ns/line | new | bytes/distinct URL | facade's speed-up |");
    println!("|---|---|---|---|---|");
    for (c, (name, _)) in contenders.iter().enumerate() {
        let ratio = median(ns[c].iter().zip(&ns[0]).map(|(p, o)| p / o).collect());
        println!(
            "| {name} | {:.0} | {} | {:.1} | {:.2}x |",
            median(ns[c].clone()),
            last[c].0,
            last[c].1 as f64 / list.distinct() as f64,
            ratio
        );
    }
}
