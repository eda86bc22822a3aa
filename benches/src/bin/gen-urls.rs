//! Writes a crawl-like URL list to stdout: `gen-urls COUNT [DUPLICATE_FRACTION] [SEED]`.
//!
//! Each line is either a new URL (from `url_dedup_benches::urls`) or, with probability
//! DUPLICATE_FRACTION, an exact repeat of an earlier line, so every tool under comparison can
//! find the same duplicates. Deterministic for a given seed (`url_dedup_benches::CrawlList`).

use std::io::{BufWriter, Write};

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let count: usize = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let dup: f64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(0.5);
    let seed: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(7);

    let list = url_dedup_benches::CrawlList::new(count, dup, seed);
    let mut out = BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
    for line in list.lines() {
        out.write_all(line.as_bytes())?;
        out.write_all(b"\n")?;
    }
    out.flush()
}
