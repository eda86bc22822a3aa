//! Prints the machine's latency of a random memory read, the figure a filter lookup's cache
//! miss costs and every speed ratio depends on: `mem-latency [MIB] [ROUNDS]`.
//!
//! Follows a chain of pointers through a buffer of MIB mebibytes (default 256, far larger than
//! any cache) in a random cyclic order, so each read waits for the one before and none is
//! predicted or prefetched: the time per step is one read's latency, TLB misses included as a
//! filter's lookups meet them. Prints the median over ROUNDS (default 5) rounds of 2^22 steps,
//! in nanoseconds of wall time, and the fastest and slowest round.

use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let mib: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(256);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5).max(1);
    let slots = (mib << 20) / std::mem::size_of::<usize>() / 8;
    // One pointer per cache line (8 words), so every step is a line of its own.
    let mut order: Vec<usize> = (0..slots).collect();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    // Sattolo's shuffle: a single cycle through every line.
    for i in (1..slots).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let j = (state % i as u64) as usize;
        order.swap(i, j);
    }
    let mut next = vec![0usize; slots * 8];
    for (k, &line) in order.iter().enumerate() {
        next[line * 8] = order[(k + 1) % slots] * 8;
    }
    const STEPS: usize = 1 << 22;
    let mut at = 0;
    let mut times: Vec<f64> = (0..=rounds)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..STEPS {
                at = next[at];
            }
            start.elapsed().as_nanos() as f64 / STEPS as f64
        })
        .collect();
    // The first round pays for page faults and warming the TLB.
    times.remove(0);
    std::hint::black_box(at);
    times.sort_by(f64::total_cmp);
    println!(
        "random read latency over {mib} MiB: {:.0} ns (median of {rounds} rounds, {:.0}-{:.0})",
        times[times.len() / 2],
        times[0],
        times[times.len() - 1]
    );
}
