//! A cache-line prefetch hint: the one place in the crate that needs `unsafe`.
//!
//! The batch methods request every segment of a chunk before using any. A plain load would do
//! that too, but it cannot retire until its line arrives, so the core's out-of-order window
//! fills and the hashing of further items stalls behind it; a `PREFETCHT0` retires at once, and
//! hashing the next chunk overlaps the memory latency of this one. Measured in
//! `docs/benchmarks.md` (section "url-dedup-segmented").

/// Asks the CPU to bring the cache line holding `value` into L1. No effect on results.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[inline(always)]
pub(crate) fn prefetch<T>(value: &T) {
    use core::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
    // SAFETY: `_mm_prefetch` is `unsafe` only because it is a `target_feature(sse)` intrinsic.
    // SSE is part of the x86_64 baseline, so the instruction always exists, and PREFETCHT0 is
    // a hint with no architectural effect: it never faults, reads nothing into registers and
    // writes nothing. The pointer comes from a live reference anyway.
    unsafe { _mm_prefetch::<_MM_HINT_T0>((value as *const T).cast::<i8>()) }
}

/// Elsewhere: a plain load, which still overlaps the misses of one chunk.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(crate) fn prefetch(value: &std::sync::atomic::AtomicU64) {
    std::hint::black_box(value.load(std::sync::atomic::Ordering::Relaxed));
}
