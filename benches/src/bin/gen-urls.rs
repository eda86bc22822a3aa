//! Writes a crawl-like URL list to stdout: `gen-urls COUNT [DUPLICATE_FRACTION] [SEED]`.
//!
//! Each line is either a new URL (from `url_dedup_benches::urls`) or, with probability
//! DUPLICATE_FRACTION, an exact repeat of an earlier line, so every tool under comparison can
//! find the same duplicates. Deterministic for a given seed.

use std::io::{BufWriter, Write};

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let count: usize = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let dup: f64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(0.5);
    let seed: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(7);

    let distinct = ((count as f64) * (1.0 - dup)).ceil() as usize;
    let fresh = url_dedup_benches::urls(distinct, seed);
    let mut out = BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
    let mut state = seed | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let (mut emitted_fresh, threshold) = (0usize, (dup * u64::MAX as f64) as u64);
    for _ in 0..count {
        let repeat = emitted_fresh > 0 && (next() < threshold || emitted_fresh == distinct);
        let line = if repeat {
            &fresh[(next() % emitted_fresh as u64) as usize]
        } else {
            emitted_fresh += 1;
            &fresh[emitted_fresh - 1]
        };
        out.write_all(line.as_bytes())?;
        out.write_all(b"\n")?;
    }
    out.flush()
}
