//! Runs a list of URLs through a classic Bloom filter at 1% and prints statistics, not the
//! URLs: input URLs, distinct URLs (counted exactly), URLs the filter kept, distinct URLs lost
//! to false positives, the filter's size, hashes, bits per URL and memory, its estimated item
//! count and fill ratio, and the throughput.
//!
//! ```text
//! cargo run --release -p url-dedup-bloom --example dedup            # built-in sample crawl
//! cargo run --release -p url-dedup-bloom --example dedup -- urls.txt
//! ```
//!
//! Without a file it generates a sample crawl (one million URLs, a third of them repeats) so it
//! runs anywhere, with no network. To write the deduplicated list itself, use the `url-dedup`
//! command (`cargo run --release -p url-dedup-cli -- urls.txt > unique.txt`).

use std::io::{BufRead, BufReader};
use std::time::Instant;

use url_dedup_bloom::BloomFilter;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let urls: Vec<String> = match std::env::args_os().nth(1) {
        Some(path) => BufReader::new(std::fs::File::open(path)?)
            .lines()
            .collect::<Result<_, _>>()?,
        None => sample_crawl(1_000_000),
    };
    let distinct_estimate = urls.len() as u64;
    let mut seen = BloomFilter::builder()
        .expected_items(distinct_estimate.max(1))
        .false_positive_rate(0.01)
        .build()?;

    let start = Instant::now();
    let kept = urls.iter().filter(|u| seen.check_and_insert(u)).count();
    let elapsed = start.elapsed();

    // Exact count for comparison: how many distinct URLs there really were.
    let exact: std::collections::HashSet<&str> = urls.iter().map(String::as_str).collect();
    println!("input URLs          {:>12}", urls.len());
    println!("distinct (exact)    {:>12}", exact.len());
    println!("kept by the filter  {:>12}", kept);
    println!(
        "lost to false pos.  {:>12} ({:.3}% of distinct)",
        exact.len() - kept,
        100.0 * (exact.len() - kept) as f64 / exact.len().max(1) as f64
    );
    println!(
        "filter              {:>12} bits, {} hashes, {:.2} bits/URL, {:.1} KiB",
        seen.bits(),
        seen.hashes(),
        seen.bits() as f64 / exact.len().max(1) as f64,
        seen.memory_bytes() as f64 / 1024.0
    );
    println!("estimated items     {:>12.0}", seen.estimated_items());
    println!("fill ratio          {:>12.3}", seen.fill_ratio());
    println!(
        "throughput          {:>12.0} URLs/s ({:.0} ns/URL)",
        urls.len() as f64 / elapsed.as_secs_f64(),
        elapsed.as_nanos() as f64 / urls.len().max(1) as f64
    );
    Ok(())
}

/// A crawl-like URL list: pages of a few hundred sites, every third URL a repeat of an earlier one.
fn sample_crawl(count: usize) -> Vec<String> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut urls: Vec<String> = Vec::with_capacity(count);
    for i in 0..count {
        if i % 3 == 2 {
            let earlier = urls[(next() % i as u64) as usize].clone();
            urls.push(earlier);
        } else {
            let r = next();
            urls.push(format!(
                "https://site{}.example/section{}/page-{}.html",
                r % 300,
                (r >> 16) % 20,
                next() % 10_000_000
            ));
        }
    }
    urls
}
