//! Prints the machine's latency of a random memory read, the figure a filter lookup's cache
//! miss costs and every speed ratio depends on: `mem-latency [MIB] [ROUNDS]`.
//!
//! Follows a chain of pointers through a buffer of MIB mebibytes (default 256, far larger than
//! any cache) in a random cyclic order, so each read waits for the one before and none is
//! predicted or prefetched: the time per step is one read's latency, TLB misses included as a
//! filter's lookups meet them. Prints the median over ROUNDS (default 5) rounds of 2^22 steps,
//! in nanoseconds of wall time (`url_dedup_benches::random_read_ns`).

fn main() {
    let mut args = std::env::args().skip(1);
    let mib: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(256);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    println!(
        "random read latency over {mib} MiB: {:.0} ns (median of {rounds} rounds)",
        url_dedup_benches::random_read_ns(mib, rounds)
    );
}
