//! CPU-specific code, the one place in the crate that needs `unsafe`: a cache-line prefetch
//! hint for the batch path, and AVX2 kernels for split 512-bit segments.
//!
//! * The batch methods request every segment of a chunk before using any. A plain load would
//!   do that too, but it cannot retire until its line arrives, so the core's out-of-order
//!   window fills and the hashing of further items stalls behind it; a `PREFETCHT0` retires at
//!   once, and hashing the next chunk overlaps the memory latency of this one.
//! * A single call on a filter far larger than the cache is bound by how many calls' cache
//!   misses the core keeps in flight, and so by instructions per call. Scalar code needs about
//!   six instructions per lane to test eight lanes; AVX2 does all eight in about a dozen, which
//!   is what lets one call at a time keep pace with sbbf-rs.
//!
//! Both are measured in [`docs/benchmarks.md`](https://github.com/url-dedup/url-dedup/blob/main/docs/benchmarks.md). Every kernel has a portable twin, used on other
//! CPUs and checked against the AVX2 one by the tests below.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Asks the CPU to bring the cache line holding `value` into L1. No effect on results.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn prefetch<T>(value: &T) {
    prefetch_line(value);
}

/// Asks the CPU to bring the cache line holding `value` into its nearest cache, so that a
/// read of it a little later does not wait for memory. A hint: it changes no result, and does
/// nothing on CPUs other than x86_64. Batches of filters built on the workspace's layouts
/// (the similarity filter's blocked regions, for one) request a chunk's lines with it before
/// testing any.
///
/// # Examples
///
/// ```
/// let words = vec![0u64; 1 << 20];
/// url_dedup_segmented::prefetch_line(&words[12_345]);
/// assert_eq!(words[12_345], 0);
/// ```
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[inline(always)]
pub fn prefetch_line<T>(value: &T) {
    use core::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
    // SAFETY: `_mm_prefetch` is `unsafe` only because it is a `target_feature(sse)` intrinsic.
    // SSE is part of the x86_64 baseline, so the instruction always exists, and PREFETCHT0 is
    // a hint with no architectural effect: it never faults, reads nothing into registers and
    // writes nothing. The pointer comes from a live reference anyway.
    unsafe { _mm_prefetch::<_MM_HINT_T0>((value as *const T).cast::<i8>()) }
}

/// Elsewhere: nothing (a hint may be ignored).
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub fn prefetch_line<T>(_value: &T) {}

/// Elsewhere: a plain load, which still overlaps the misses of one chunk.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(crate) fn prefetch(value: &AtomicU64) {
    std::hint::black_box(value.load(Relaxed));
}

/// Proof that this CPU has AVX2: only [`Avx2::detect`] makes one.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Avx2(());

impl Avx2 {
    /// `Some` when the CPU running this process has AVX2.
    pub(crate) fn detect() -> Option<Self> {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            return Some(Self(()));
        }
        None
    }
}

/// The eight masks of a split 512-bit segment: lane `i` (word `i`) gets the bit that the 6-bit
/// slice `i` of `seed`, most significant first, names in Redis bit order. The same bits as
/// [`Layout::offsets`](crate::Layout::offsets) for eight lanes of 64 bits.
#[inline(always)]
pub(crate) fn split_line_masks(seed: u64) -> [u64; 8] {
    std::array::from_fn(|i| (1u64 << 63) >> ((seed >> (58 - 6 * i)) & 63))
}

/// Whether any of the item's bits is zero in a split 512-bit segment. Loads are atomic per
/// word, so other threads may insert meanwhile.
#[inline(always)]
pub(crate) fn split_line_missing(line: &[AtomicU64; 8], seed: u64, avx2: Option<Avx2>) -> bool {
    #[cfg(target_arch = "x86_64")]
    if let Some(token) = avx2 {
        // The vector loads need 16-byte alignment to be atomic per word; the store aligns
        // lines to 64 bytes, and this check costs one predictable branch.
        if (line.as_ptr() as usize).is_multiple_of(16) {
            return x86::split_line_missing(token, line, seed);
        }
    }
    let _ = avx2;
    let masks = split_line_masks(seed);
    line.iter().zip(masks).fold(0, |missing, (word, mask)| {
        missing | (mask & !word.load(Relaxed))
    }) != 0
}

/// Sets the item's bits in a split 512-bit segment nobody else can see (`&mut`); `true` if
/// any was zero.
#[inline(always)]
pub(crate) fn split_line_insert(line: &mut [AtomicU64; 8], seed: u64, avx2: Option<Avx2>) -> bool {
    #[cfg(target_arch = "x86_64")]
    if let Some(token) = avx2 {
        return x86::split_line_insert(token, line, seed);
    }
    let _ = avx2;
    let masks = split_line_masks(seed);
    line.iter_mut().zip(masks).fold(0, |missing, (word, mask)| {
        crate::memory::set_bits(word.get_mut(), mask, missing)
    }) != 0
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod x86 {
    use std::arch::asm;
    use std::arch::x86_64::{
        __m128i, __m256i, _mm256_andnot_si256, _mm256_loadu_si256, _mm256_or_si256,
        _mm256_set_m128i, _mm256_set1_epi64x, _mm256_setr_epi64x, _mm256_srlv_epi64,
        _mm256_storeu_si256, _mm256_testz_si256,
    };
    use std::sync::atomic::AtomicU64;

    use super::Avx2;

    /// The masks of words 0–3 and 4–7, as [`split_line_masks`](super::split_line_masks).
    #[target_feature(enable = "avx2")]
    #[inline]
    fn masks(seed: u64) -> (__m256i, __m256i) {
        let seed = _mm256_set1_epi64x(seed as i64);
        let six = _mm256_set1_epi64x(63);
        let top = _mm256_set1_epi64x(i64::MIN);
        let slice = |shifts| {
            let s = _mm256_srlv_epi64(seed, shifts);
            _mm256_srlv_epi64(top, std::arch::x86_64::_mm256_and_si256(s, six))
        };
        (
            slice(_mm256_setr_epi64x(58, 52, 46, 40)),
            slice(_mm256_setr_epi64x(34, 28, 22, 16)),
        )
    }

    pub(super) fn split_line_missing(_: Avx2, line: &[AtomicU64; 8], seed: u64) -> bool {
        // SAFETY: the `Avx2` token exists only when the CPU has AVX2 (see `Avx2::detect`).
        unsafe { missing(line, seed) }
    }

    #[target_feature(enable = "avx2")]
    fn missing(line: &[AtomicU64; 8], seed: u64) -> bool {
        let (lo, hi) = masks(seed);
        let p = line.as_ptr();
        let (w01, w23, w45, w67): (__m128i, __m128i, __m128i, __m128i);
        // SAFETY: `p` points to 64 live bytes (eight `AtomicU64`), 16-byte aligned (the caller
        // checked), and the block only reads them. Other threads may store to these words
        // concurrently, so the reads must be atomic per word to be race-free in Rust's memory
        // model: on every CPU with AVX, a 16-byte aligned VMOVDQA is a single atomic access
        // (Intel SDM vol. 3A §10.1.1; AMD APM vol. 2 §7.3.2), so the block behaves as eight
        // relaxed `AtomicU64` loads. Rust code cannot express that vector load, hence `asm!`.
        unsafe {
            asm!(
                "vmovdqa {a}, xmmword ptr [{p}]",
                "vmovdqa {b}, xmmword ptr [{p} + 16]",
                "vmovdqa {c}, xmmword ptr [{p} + 32]",
                "vmovdqa {d}, xmmword ptr [{p} + 48]",
                p = in(reg) p,
                a = out(xmm_reg) w01,
                b = out(xmm_reg) w23,
                c = out(xmm_reg) w45,
                d = out(xmm_reg) w67,
                options(nostack, readonly, preserves_flags, pure),
            );
        }
        let words_lo = _mm256_set_m128i(w23, w01);
        let words_hi = _mm256_set_m128i(w67, w45);
        let zero_bits = _mm256_or_si256(
            _mm256_andnot_si256(words_lo, lo),
            _mm256_andnot_si256(words_hi, hi),
        );
        _mm256_testz_si256(zero_bits, zero_bits) == 0
    }

    pub(super) fn split_line_insert(_: Avx2, line: &mut [AtomicU64; 8], seed: u64) -> bool {
        // SAFETY: the `Avx2` token exists only when the CPU has AVX2 (see `Avx2::detect`).
        unsafe { insert(line, seed) }
    }

    #[target_feature(enable = "avx2")]
    fn insert(line: &mut [AtomicU64; 8], seed: u64) -> bool {
        let (lo, hi) = masks(seed);
        // `AtomicU64` has the size and alignment of `u64`, and `&mut` means no other thread can
        // touch the line, so plain (non-atomic) vector accesses are race-free.
        let p = line.as_mut_ptr().cast::<__m256i>();
        // SAFETY: `p` and `p + 1` address the line's two 32-byte halves, inside the borrowed
        // array; unaligned loads and stores need no alignment.
        unsafe {
            let (a, b) = (_mm256_loadu_si256(p), _mm256_loadu_si256(p.add(1)));
            _mm256_storeu_si256(p, _mm256_or_si256(a, lo));
            _mm256_storeu_si256(p.add(1), _mm256_or_si256(b, hi));
            let zero_bits = _mm256_or_si256(_mm256_andnot_si256(a, lo), _mm256_andnot_si256(b, hi));
            _mm256_testz_si256(zero_bits, zero_bits) == 0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Layout, Placement, Probe, bit_order};

    /// A line aligned as the store aligns its segments, so the vector path is taken.
    #[repr(align(64))]
    struct Line([AtomicU64; 8]);

    fn line(words: [u64; 8]) -> Line {
        Line(words.map(AtomicU64::new))
    }

    #[test]
    fn masks_are_the_layouts_offsets() {
        let layout = Layout::with_placement(1, 512, 8, Placement::Split).unwrap();
        for seed in [0, 1, u64::MAX, 0xdead_beef_cafe_f00d, 0x0123_4567_89ab_cdef] {
            let mut expected = [0u64; 8];
            for offset in layout.offsets(Probe { segment: 0, seed }) {
                let (w, mask) = bit_order::locate(offset);
                expected[w] |= mask;
            }
            assert_eq!(split_line_masks(seed), expected, "seed {seed:#x}");
        }
    }

    proptest::proptest! {
        #[test]
        fn vector_and_portable_kernels_agree(words: [u64; 8], seed: u64) {
            let avx2 = Avx2::detect();
            let fixed = line(words);
            proptest::prop_assert_eq!(
                split_line_missing(&fixed.0, seed, avx2),
                split_line_missing(&fixed.0, seed, None)
            );
            let (mut a, mut b) = (line(words), line(words));
            proptest::prop_assert_eq!(
                split_line_insert(&mut a.0, seed, avx2),
                split_line_insert(&mut b.0, seed, None)
            );
            let bits = |l: Line| l.0.map(|w| w.into_inner());
            proptest::prop_assert!(!split_line_missing(&a.0, seed, avx2));
            proptest::prop_assert_eq!(bits(a), bits(b));
        }
    }
}
