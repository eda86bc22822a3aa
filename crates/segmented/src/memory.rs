//! The in-memory segment store: cache-line-aligned atomic words, striped locks for
//! exactly-once admission, and a dirty bit per segment for incremental checkpoints.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use crate::arch::{self, Avx2};
use crate::layout::{fold_line_offsets, fold_wide_offsets};
use crate::stripes::{StripeGuard, Stripes};
use crate::{Error, Layout, Placement, Probe, SegmentStore, bit_order};

/// Calls `$f::<W, N>(args)` for a segment of `$len` words, `N` of them, whose offsets are `W`
/// bits wide: 2, 4 or 8 cache lines. Anything else (or an `$f` that finds the segment of
/// another length, which [`Kernel::Lines`] rules out) gives `$fallback`.
macro_rules! by_lines {
    ($len:expr, $f:ident($($arg:expr),*), $fallback:expr) => {
        match $len {
            16 => $f::<10, 16>($($arg),*),
            32 => $f::<11, 32>($($arg),*),
            64 => $f::<12, 64>($($arg),*),
            _ => None,
        }
        .unwrap_or_else(|| $fallback)
    };
}

/// Segments in memory, shared between threads by `&self`.
///
/// * Words are 64-byte aligned, so a 512-bit segment is exactly one cache line: an item costs
///   one cache miss at most.
/// * [`check_and_insert`](Self::check_and_insert) first tests the item's bits with plain loads;
///   only if one is missing does it take the segment's stripe lock and test-and-set under it.
///   Known items and queries never write and never lock.
/// * Each segment has a dirty bit, set when a write changes it and cleared when a checkpoint
///   copies it, so an incremental checkpoint holds only what changed.
///
/// # Examples
///
/// ```
/// use url_dedup_segmented::{Layout, MemoryStore, Probe};
///
/// let store = MemoryStore::new(Layout::new(16, 512, 7)?)?;
/// let p = Probe { segment: 3, seed: 0x1234_5678_9abc_def1 };
/// assert!(!store.contains(p));
/// assert!(store.check_and_insert(p));
/// assert!(!store.check_and_insert(p));
/// assert!(store.contains(p));
/// assert_eq!(store.dirty_segments(), vec![3]);
/// # Ok::<(), url_dedup_segmented::Error>(())
/// ```
pub struct MemoryStore {
    layout: Layout,
    /// Words with up to seven words of slack in front, so that `base` can be 64-byte aligned
    /// without `unsafe` or a custom allocator.
    storage: Box<[AtomicU64]>,
    base: usize,
    segment_words: usize,
    stripes: Stripes,
    dirty: Box<[AtomicU64]>,
    kernel: Kernel,
    /// Set once a growing filter has moved its admissions to a newer layer: writers check it
    /// under their stripe lock (see [`Admission::Sealed`]).
    sealed: AtomicBool,
}

/// What one admission attempt found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Admission {
    /// The item was new and its bits are now set; the count of admissions in its stripe.
    New(u64),
    /// Every bit was already set.
    Present,
    /// The store was sealed before the item could be written: nothing changed.
    Sealed,
}

/// How a store tests and sets an item's bits, chosen once from its layout and the CPU.
#[derive(Clone, Copy, Debug)]
enum Kernel {
    /// Eight 64-bit lanes of a 512-bit segment, vector masks (the CPU has AVX2).
    SplitLineAvx2(Avx2),
    /// Eight 64-bit lanes of a 512-bit segment, scalar masks.
    SplitLine,
    /// Scattered bits in a 512-bit segment: one cache line, unrolled offsets.
    Line,
    /// Scattered bits in a segment of 2, 4 or 8 cache lines (the low rates of a growing
    /// filter): offsets unrolled per seed word, words indexed without bounds checks.
    Lines,
    /// Any other layout: the layout's offsets, one at a time.
    General,
}

impl Kernel {
    fn for_layout(layout: &Layout) -> Self {
        match (layout.placement(), layout.segment_bits(), layout.hashes()) {
            (Placement::Split, 512, 8) => {
                Avx2::detect().map_or(Self::SplitLine, Self::SplitLineAvx2)
            }
            (Placement::Scattered, 512, _) => Self::Line,
            (Placement::Scattered, 1024 | 2048 | 4096, _) => Self::Lines,
            _ => Self::General,
        }
    }

    /// The AVX2 token of a split-line kernel (`None`: scalar).
    #[inline(always)]
    fn split_line(self) -> Option<Option<Avx2>> {
        match self {
            Self::SplitLineAvx2(token) => Some(Some(token)),
            Self::SplitLine => Some(None),
            _ => None,
        }
    }
}

impl MemoryStore {
    /// An empty store for `layout`.
    ///
    /// # Errors
    ///
    /// [`Error::OutOfMemory`] when the words cannot be allocated.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_segmented::{Layout, MemoryStore};
    ///
    /// let store = MemoryStore::new(Layout::new(1_000, 512, 7)?)?;
    /// assert_eq!(store.count_ones(), 0);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn new(layout: Layout) -> Result<Self, Error> {
        let words = layout.words();
        let bytes = words.saturating_mul(8);
        let oom = Error::OutOfMemory { bytes };
        let len = usize::try_from(words)
            .ok()
            .and_then(|w| w.checked_add(7))
            .ok_or(Error::OutOfMemory { bytes })?;
        let segment_words =
            usize::try_from(layout.segment_words()).map_err(|_| Error::OutOfMemory { bytes })?;
        let dirty_len = usize::try_from(layout.segments().div_ceil(64))
            .map_err(|_| Error::OutOfMemory { bytes })?;
        let mut storage: Vec<AtomicU64> = Vec::new();
        storage.try_reserve_exact(len).map_err(|_| oom)?;
        storage.resize_with(len, || AtomicU64::new(0));
        let storage = storage.into_boxed_slice();
        // The address decides how many slack words put `base` on a 64-byte boundary; it is read
        // after boxing because shrinking to fit may have moved the allocation.
        let base = (storage.as_ptr() as usize).wrapping_neg() % 64 / 8;
        let mut dirty: Vec<AtomicU64> = Vec::new();
        dirty
            .try_reserve_exact(dirty_len)
            .map_err(|_| Error::OutOfMemory { bytes })?;
        dirty.resize_with(dirty_len, || AtomicU64::new(0));
        Ok(Self {
            layout,
            storage,
            base,
            segment_words,
            stripes: Stripes::for_this_machine(layout.segments()),
            dirty: dirty.into_boxed_slice(),
            kernel: Kernel::for_layout(&layout),
            sealed: AtomicBool::new(false),
        })
    }

    /// The geometry of this store.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_segmented::{Layout, MemoryStore};
    ///
    /// let l = Layout::new(4, 1024, 5)?;
    /// assert_eq!(MemoryStore::new(l)?.layout(), l);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The words of one segment; empty for an out-of-range index, which the filter never
    /// produces (its segments come from [`Layout::probe`]).
    #[inline]
    fn segment(&self, segment: u64) -> &[AtomicU64] {
        let range = self.segment_range(segment);
        self.storage.get(range).unwrap_or(&[])
    }

    /// [`segment`](Self::segment) for an owner with exclusive access.
    #[inline]
    fn segment_mut(&mut self, segment: u64) -> &mut [AtomicU64] {
        let range = self.segment_range(segment);
        self.storage.get_mut(range).unwrap_or(&mut [])
    }

    /// The segment as one cache line, when segments are 512 bits (`None` when out of range).
    #[inline(always)]
    fn line(&self, segment: u64) -> Option<&[AtomicU64; 8]> {
        let words = self.storage.get(self.base..)?;
        words.as_chunks::<8>().0.get(usize::try_from(segment).ok()?)
    }

    /// [`line`](Self::line) for an owner with exclusive access.
    #[inline(always)]
    fn line_mut(&mut self, segment: u64) -> Option<&mut [AtomicU64; 8]> {
        let words = self.storage.get_mut(self.base..)?;
        words
            .as_chunks_mut::<8>()
            .0
            .get_mut(usize::try_from(segment).ok()?)
    }

    #[inline]
    fn segment_range(&self, segment: u64) -> std::ops::Range<usize> {
        let start = self.base + (segment as usize).wrapping_mul(self.segment_words);
        start..start.wrapping_add(self.segment_words)
    }

    /// Whether all of a probe's bits are set. Never writes, never locks.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_segmented::{Layout, MemoryStore, Probe};
    ///
    /// let store = MemoryStore::new(Layout::new(2, 512, 4)?)?;
    /// let p = Probe { segment: 1, seed: 42 };
    /// assert!(!store.contains(p));
    /// store.check_and_insert(p);
    /// assert!(store.contains(p));
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    #[inline(always)]
    pub fn contains(&self, probe: Probe) -> bool {
        // The split line first and small enough to inline: a single call's cost is mostly how
        // many instructions it keeps in flight (see `arch`).
        if let Some(avx2) = self.kernel.split_line() {
            return self
                .line(probe.segment)
                .is_some_and(|line| !arch::split_line_missing(line, probe.seed, avx2));
        }
        self.contains_scattered(probe)
    }

    /// Kept out of line so that [`contains`](Self::contains) stays small enough to inline with
    /// the split line's fast path; this path's unrolled offsets are large.
    #[inline(never)]
    fn contains_scattered(&self, probe: Probe) -> bool {
        let segment = self.segment(probe.segment);
        match (self.kernel, <&[AtomicU64; 8]>::try_from(segment)) {
            (Kernel::Line, Ok(line)) => self.missing_in_line(line, probe.seed) == 0,
            (Kernel::Lines, _) => self.missing_in_lines(segment, probe.seed) == 0,
            _ => self.layout.offsets(probe).all(|offset| {
                let (w, mask) = bit_order::locate(offset);
                segment.get(w).is_some_and(|x| x.load(Relaxed) & mask != 0)
            }),
        }
    }

    /// Sets a probe's bits; `true` if any was zero. Atomic per probe: of several threads
    /// inserting the same new probe at once, exactly one gets `true`.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_segmented::{Layout, MemoryStore, Probe};
    ///
    /// let store = MemoryStore::new(Layout::new(2, 512, 4)?)?;
    /// let p = Probe { segment: 0, seed: 7 };
    /// assert!(store.check_and_insert(p));
    /// assert!(!store.check_and_insert(p));
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    #[inline]
    pub fn check_and_insert(&self, probe: Probe) -> bool {
        matches!(self.admit::<false>(probe), Admission::New(_))
    }

    /// [`check_and_insert`](Self::check_and_insert) that writes nothing once the store is
    /// [sealed](Self::seal): the admission step of a growing filter's newest layer.
    #[inline]
    pub(crate) fn admit_unless_sealed(&self, probe: Probe) -> Admission {
        self.admit::<true>(probe)
    }

    /// Stops every later [`admit_unless_sealed`](Self::admit_unless_sealed). Takes every stripe
    /// lock, so an admission that got its lock first has finished writing when this returns,
    /// and one that gets it later sees the seal.
    pub(crate) fn seal(&self) {
        let _all = self.stripes.lock_all();
        self.sealed.store(true, Relaxed);
    }

    /// The admission step: a lock-free pre-test, then test-and-set under the stripe lock.
    /// `SEALABLE` adds the seal check under the lock; the plain filter compiles without it.
    #[inline(always)]
    fn admit<const SEALABLE: bool>(&self, probe: Probe) -> Admission {
        let segment = self.segment(probe.segment);
        match (self.kernel, <&[AtomicU64; 8]>::try_from(segment)) {
            (Kernel::Line, Ok(line)) => {
                if self.missing_in_line(line, probe.seed) == 0 {
                    return Admission::Present;
                }
                let guard = self.stripes.lock(probe.segment);
                if SEALABLE && self.sealed.load(Relaxed) {
                    return Admission::Sealed;
                }
                // Under the lock no other writer touches this segment: test again (another
                // thread may have inserted the item since the pre-test), then set with plain
                // stores. The stores are unconditional: rewriting a set bit changes nothing,
                // and a branch per bit on random data would mispredict half the time.
                let missing =
                    fold_line_offsets(self.layout.hashes(), probe.seed, 0, |missing, offset| {
                        set_word(
                            &line[(offset >> 6) as usize & 7],
                            bit_order::mask(offset),
                            missing,
                        )
                    });
                self.conclude(&guard, missing, probe.segment)
            }
            (Kernel::SplitLineAvx2(_) | Kernel::SplitLine, Ok(line)) => {
                let avx2 = self.kernel.split_line().flatten();
                if !arch::split_line_missing(line, probe.seed, avx2) {
                    return Admission::Present;
                }
                let guard = self.stripes.lock(probe.segment);
                if SEALABLE && self.sealed.load(Relaxed) {
                    return Admission::Sealed;
                }
                // As above; each lane's word gets its one bit.
                let missing = line
                    .iter()
                    .zip(arch::split_line_masks(probe.seed))
                    .fold(0, |missing, (word, mask)| set_word(word, mask, missing));
                self.conclude(&guard, missing, probe.segment)
            }
            (Kernel::Lines, _) => {
                if self.missing_in_lines(segment, probe.seed) == 0 {
                    return Admission::Present;
                }
                let guard = self.stripes.lock(probe.segment);
                if SEALABLE && self.sealed.load(Relaxed) {
                    return Admission::Sealed;
                }
                // As for one line: test again under the lock, set with plain stores.
                let hashes = self.layout.hashes();
                let missing = by_lines!(
                    segment.len(),
                    set_in_lines(segment, hashes, probe.seed),
                    self.set_offsets(segment, probe)
                );
                self.conclude(&guard, missing, probe.segment)
            }
            _ => self.admit_general::<SEALABLE>(segment, probe),
        }
    }

    /// The item's bits that are zero in a segment of 2, 4 or 8 lines (zero: all set; when
    /// not zero, possibly only some of them: see [`missing_in_lines`]).
    #[inline(always)]
    fn missing_in_lines(&self, segment: &[AtomicU64], seed: u64) -> u64 {
        let hashes = self.layout.hashes();
        by_lines!(
            segment.len(),
            missing_in_lines(segment, hashes, seed),
            self.layout
                .offsets(Probe { segment: 0, seed })
                .fold(0, |missing, offset| {
                    let (w, mask) = bit_order::locate(offset);
                    missing | segment.get(w).map_or(mask, |x| mask & !x.load(Relaxed))
                })
        )
    }

    /// Sets a probe's bits in `segment` (the caller holds its stripe lock), one offset at a
    /// time; returns the bits that were zero.
    fn set_offsets(&self, segment: &[AtomicU64], probe: Probe) -> u64 {
        self.layout.offsets(probe).fold(0, |missing, offset| {
            let (w, mask) = bit_order::locate(offset);
            segment
                .get(w)
                .map_or(missing, |word| set_word(word, mask, missing))
        })
    }

    /// The end of an admission, still under the stripe lock: `missing` holds the bits that
    /// were zero.
    #[inline(always)]
    fn conclude(&self, guard: &StripeGuard<'_>, missing: u64, segment: u64) -> Admission {
        if missing == 0 {
            return Admission::Present;
        }
        self.mark_dirty(segment);
        Admission::New(guard.count_admission())
    }

    /// [`check_and_insert`](Self::check_and_insert) for an owner with exclusive access: the
    /// same answer and the same bits, without the stripe lock and with plain loads and stores.
    ///
    /// `&mut self` proves that no other thread can be looking, so exactly-once holds without a
    /// lock. This matters for speed, not only for the lock's own cost: on x86 a locked
    /// instruction waits for every earlier load, so the lock of one insert would stall until
    /// its cache miss is served, and the next insert could not start its own miss meanwhile.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_segmented::{Layout, MemoryStore, Probe};
    ///
    /// let mut store = MemoryStore::new(Layout::new(16, 512, 7)?)?;
    /// let probe = Probe { segment: 3, seed: 0x5eed };
    /// assert!(store.check_and_insert_mut(probe));
    /// assert!(!store.check_and_insert_mut(probe));
    /// assert!(store.contains(probe));
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    #[inline(always)]
    pub fn check_and_insert_mut(&mut self, probe: Probe) -> bool {
        self.admit_mut(probe).is_some()
    }

    /// [`check_and_insert_mut`](Self::check_and_insert_mut) that returns, for a new probe,
    /// its stripe's admission count (as [`Admission::New`] does): a growing filter's newest
    /// layer reports its fill from it.
    #[inline(always)]
    pub(crate) fn admit_mut(&mut self, probe: Probe) -> Option<u64> {
        if let Some(avx2) = self.kernel.split_line() {
            let new = self
                .line_mut(probe.segment)
                .is_some_and(|line| arch::split_line_insert(line, probe.seed, avx2));
            if !new {
                return None;
            }
            self.mark_dirty_mut(probe.segment);
            return Some(self.stripes.count_admission_mut(probe.segment));
        }
        self.admit_scattered_mut(probe)
    }

    /// Out of line for the reason given at [`contains_scattered`](Self::contains_scattered).
    #[inline(never)]
    fn admit_scattered_mut(&mut self, probe: Probe) -> Option<u64> {
        let (hashes, offsets, kernel) = (
            self.layout.hashes(),
            self.layout.offsets(probe),
            self.kernel,
        );
        let segment = self.segment_mut(probe.segment);
        let missing = match (kernel, <&mut [AtomicU64; 8]>::try_from(&mut *segment)) {
            // Unconditional stores, as in `check_and_insert`: no branch on loaded data.
            (Kernel::Line, Ok(line)) => {
                fold_line_offsets(hashes, probe.seed, 0, |missing, offset| {
                    let word = line[(offset >> 6) as usize & 7].get_mut();
                    set_bits(word, bit_order::mask(offset), missing)
                })
            }
            (Kernel::Lines, _) => by_lines!(
                segment.len(),
                set_in_lines_mut(segment, hashes, probe.seed),
                set_offsets_mut(segment, offsets)
            ),
            _ => set_offsets_mut(segment, offsets),
        };
        if missing == 0 {
            return None;
        }
        self.mark_dirty_mut(probe.segment);
        Some(self.stripes.count_admission_mut(probe.segment))
    }

    #[inline(always)]
    fn mark_dirty_mut(&mut self, segment: u64) {
        if let Some(word) = self.dirty.get_mut((segment / 64) as usize) {
            let (word, bit) = (word.get_mut(), 1u64 << (segment % 64));
            // Test first: a store per insert would take a store-buffer slot that an insert's
            // cache miss holds until it is served, and the buffer would fill before the
            // misses could overlap. Once a segment is dirty, inserts only read the word.
            if *word & bit == 0 {
                *word |= bit;
            }
        }
    }

    #[cold]
    fn admit_general<const SEALABLE: bool>(
        &self,
        segment: &[AtomicU64],
        probe: Probe,
    ) -> Admission {
        let set = |offset: u64| {
            let (w, mask) = bit_order::locate(offset);
            segment.get(w).is_none_or(|x| x.load(Relaxed) & mask != 0)
        };
        if self.layout.offsets(probe).all(set) {
            return Admission::Present;
        }
        let guard = self.stripes.lock(probe.segment);
        if SEALABLE && self.sealed.load(Relaxed) {
            return Admission::Sealed;
        }
        let missing = self.layout.offsets(probe).fold(0, |missing, offset| {
            let (w, mask) = bit_order::locate(offset);
            segment
                .get(w)
                .map_or(missing, |word| set_word(word, mask, missing))
        });
        self.conclude(&guard, missing, probe.segment)
    }

    /// The item's bits that are zero in a one-line segment (zero: all set). Branch-free:
    /// every offset is a load from the same cache line, fetched once.
    #[inline]
    fn missing_in_line(&self, line: &[AtomicU64; 8], seed: u64) -> u64 {
        fold_line_offsets(self.layout.hashes(), seed, 0, |missing, offset| {
            let mask = bit_order::mask(offset);
            missing | (mask & !line[(offset >> 6) as usize & 7].load(Relaxed))
        })
    }

    /// Asks for a segment's cache lines, so that a later access does not wait for memory:
    /// the first line of a one-line segment, every line of a segment of up to eight lines
    /// (the low rates a growing filter reaches use them, and their bits fall on every line),
    /// the first eight of a larger one.
    #[inline]
    pub(crate) fn prefetch(&self, segment: u64) {
        let words = self.segment(segment);
        for line in words.chunks(8).take(8) {
            if let Some(word) = line.first() {
                arch::prefetch(word);
            }
        }
    }

    #[inline]
    fn mark_dirty(&self, segment: u64) {
        if let Some(word) = self.dirty.get((segment / 64) as usize) {
            let bit = 1u64 << (segment % 64);
            // Test first: once a segment is dirty, further writes leave the shared word alone.
            if word.load(Relaxed) & bit == 0 {
                word.fetch_or(bit, Relaxed);
            }
        }
    }

    /// Copies one segment into `out` (appending `segment_words` words) and clears its dirty bit,
    /// as one step with respect to writers: a write that lands after the copy marks it dirty
    /// again.
    pub(crate) fn take_segment(&self, segment: u64, out: &mut Vec<u64>) -> Result<(), Error> {
        let words = self.checked_segment(segment)?;
        let _guard = self.stripes.lock(segment);
        if let Some(word) = self.dirty.get((segment / 64) as usize) {
            word.fetch_and(!(1u64 << (segment % 64)), Relaxed);
        }
        out.extend(words.iter().map(|w| w.load(Relaxed)));
        Ok(())
    }

    /// Marks segments dirty again (after a checkpoint that could not be written).
    pub(crate) fn remark_dirty(&self, segments: impl IntoIterator<Item = u64>) {
        for segment in segments {
            self.mark_dirty(segment);
        }
    }

    fn checked_segment(&self, segment: u64) -> Result<&[AtomicU64], Error> {
        if segment >= self.layout.segments() {
            return Err(Error::InvalidParameters("segment index out of range"));
        }
        Ok(self.segment(segment))
    }

    /// Copies one segment's words (bit convention of [`bit_order`]) into `out`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameters`] for a segment index out of range.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_segmented::{Layout, MemoryStore};
    ///
    /// let store = MemoryStore::new(Layout::new(2, 128, 1)?)?;
    /// store.merge_segment(1, &[1, 2])?;
    /// let mut out = Vec::new();
    /// store.read_segment(1, &mut out)?;
    /// assert_eq!(out, [1, 2]);
    /// assert!(store.read_segment(2, &mut out).is_err());
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn read_segment(&self, segment: u64, out: &mut Vec<u64>) -> Result<(), Error> {
        let words = self.checked_segment(segment)?;
        let _guard = self.stripes.lock(segment);
        out.extend(words.iter().map(|w| w.load(Relaxed)));
        Ok(())
    }

    /// ORs `words` into one segment; returns whether any bit changed. Extra words beyond the
    /// segment are an error; fewer words leave the rest of the segment as it is.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameters`] for a segment index out of range or too many words.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_segmented::{Layout, MemoryStore};
    ///
    /// let store = MemoryStore::new(Layout::new(2, 128, 1)?)?;
    /// assert!(store.merge_segment(0, &[7, 0])?);
    /// assert!(!store.merge_segment(0, &[3])?);
    /// assert!(store.merge_segment(0, &[0, 0, 1]).is_err());
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn merge_segment(&self, segment: u64, words: &[u64]) -> Result<bool, Error> {
        let target = self.checked_segment(segment)?;
        if words.len() > target.len() {
            return Err(Error::InvalidParameters(
                "more words than the segment holds",
            ));
        }
        let _guard = self.stripes.lock(segment);
        let mut changed = false;
        for (word, &add) in target.iter().zip(words) {
            let old = word.load(Relaxed);
            if old | add != old {
                word.store(old | add, Relaxed);
                changed = true;
            }
        }
        if changed {
            self.mark_dirty(segment);
        }
        Ok(changed)
    }

    /// The segments changed since they were last copied by a checkpoint or snapshot, in
    /// ascending order (a moment's view while other threads insert).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_segmented::{Layout, MemoryStore, Probe};
    ///
    /// let store = MemoryStore::new(Layout::new(200, 512, 4)?)?;
    /// store.check_and_insert(Probe { segment: 130, seed: 1 });
    /// store.check_and_insert(Probe { segment: 5, seed: 1 });
    /// assert_eq!(store.dirty_segments(), [5, 130]);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn dirty_segments(&self) -> Vec<u64> {
        let mut out = Vec::new();
        for (i, word) in self.dirty.iter().enumerate() {
            let mut bits = word.load(Relaxed);
            while bits != 0 {
                out.push(i as u64 * 64 + u64::from(bits.trailing_zeros()));
                bits &= bits - 1;
            }
        }
        out
    }

    /// Overwrites the words (all of them, in segment order) of a store nobody else uses yet,
    /// leaving it clean. Extra words are ignored, missing ones stay zero.
    #[cfg(feature = "serde")]
    pub(crate) fn load_words(&mut self, words: &[u64]) {
        let len = self.layout.words() as usize;
        if let Some(target) = self.storage.get_mut(self.base..self.base + len) {
            for (t, &w) in target.iter_mut().zip(words) {
                *t.get_mut() = w;
            }
        }
        self.clear_dirty();
    }

    /// The words (all of them, in segment order) of a store nobody else uses yet, for a
    /// snapshot reader to fill in place.
    pub(crate) fn words_mut(&mut self) -> &mut [AtomicU64] {
        let len = self.layout.words() as usize;
        self.storage
            .get_mut(self.base..self.base + len)
            .unwrap_or(&mut [])
    }

    /// Forgets every dirty mark (the store now equals what was last saved).
    pub(crate) fn clear_dirty(&mut self) {
        for w in self.dirty.iter_mut() {
            *w.get_mut() = 0;
        }
    }

    /// Marks every segment dirty, so the next checkpoint holds the whole filter.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_segmented::{Layout, MemoryStore};
    ///
    /// let store = MemoryStore::new(Layout::new(70, 64, 1)?)?;
    /// store.mark_all_dirty();
    /// assert_eq!(store.dirty_segments().len(), 70);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn mark_all_dirty(&self) {
        let segments = self.layout.segments();
        for (i, word) in self.dirty.iter().enumerate() {
            let left = segments - i as u64 * 64;
            let bits = if left >= 64 {
                u64::MAX
            } else {
                (1u64 << left) - 1
            };
            word.store(bits, Relaxed);
        }
    }

    /// How many probes this store has admitted as new (merged and imported segments add bits
    /// but no admissions). Exact when no thread is inserting; a moment's view otherwise.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_segmented::{Layout, MemoryStore, Probe};
    ///
    /// let store = MemoryStore::new(Layout::new(8, 512, 4)?)?;
    /// store.check_and_insert(Probe { segment: 1, seed: 99 });
    /// store.check_and_insert(Probe { segment: 1, seed: 99 });
    /// store.check_and_insert(Probe { segment: 2, seed: 7 });
    /// assert_eq!(store.admitted(), 2);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn admitted(&self) -> u64 {
        self.stripes.admitted()
    }

    /// How many stripe locks the store has.
    pub(crate) fn stripe_count(&self) -> usize {
        self.stripes.len()
    }

    /// Sets the admission count of a store nobody else uses yet (restoring a snapshot).
    pub(crate) fn set_admitted(&mut self, count: u64) {
        self.stripes.set_admitted(count);
    }

    /// Number of bits set.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_segmented::{Layout, MemoryStore};
    ///
    /// let store = MemoryStore::new(Layout::new(1, 64, 1)?)?;
    /// store.merge_segment(0, &[0b1011])?;
    /// assert_eq!(store.count_ones(), 3);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn count_ones(&self) -> u64 {
        self.words()
            .iter()
            .map(|w| u64::from(w.load(Relaxed).count_ones()))
            .sum()
    }

    /// All words, in segment order (a moment's view while other threads insert).
    pub(crate) fn words(&self) -> &[AtomicU64] {
        let len = self.layout.words() as usize;
        self.storage.get(self.base..self.base + len).unwrap_or(&[])
    }

    /// Zeroes every bit and dirty flag.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_segmented::{Layout, MemoryStore, Probe};
    ///
    /// let mut store = MemoryStore::new(Layout::new(4, 512, 3)?)?;
    /// store.check_and_insert(Probe { segment: 1, seed: 99 });
    /// store.clear();
    /// assert_eq!(store.count_ones(), 0);
    /// assert!(store.dirty_segments().is_empty());
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn clear(&mut self) {
        for w in self.storage.iter_mut().chain(self.dirty.iter_mut()) {
            *w.get_mut() = 0;
        }
    }

    /// Heap bytes held: the words, their alignment slack, the dirty bits and the locks.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_segmented::{Layout, MemoryStore};
    ///
    /// let store = MemoryStore::new(Layout::new(1_000, 512, 7)?)?;
    /// assert!(store.memory_bytes() >= 64_000);
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn memory_bytes(&self) -> u64 {
        ((self.storage.len() + self.dirty.len()) * 8 + self.stripes.bytes()) as u64
    }
}

impl fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryStore")
            .field("layout", &self.layout)
            .finish_non_exhaustive()
    }
}

impl SegmentStore for MemoryStore {
    type Error = Error;

    fn layout(&self) -> Layout {
        self.layout
    }

    fn check_and_insert(&self, probes: &[Probe], new: &mut Vec<bool>) -> Result<(), Error> {
        check_probes(&self.layout, probes)?;
        new.reserve(probes.len());
        for chunk in probes.chunks(crate::batch::CHUNK) {
            for p in chunk {
                self.prefetch(p.segment);
            }
            new.extend(
                chunk
                    .iter()
                    .map(|&p| MemoryStore::check_and_insert(self, p)),
            );
        }
        Ok(())
    }

    fn contains(&self, probes: &[Probe], found: &mut Vec<bool>) -> Result<(), Error> {
        check_probes(&self.layout, probes)?;
        found.reserve(probes.len());
        for chunk in probes.chunks(crate::batch::CHUNK) {
            for p in chunk {
                self.prefetch(p.segment);
            }
            found.extend(chunk.iter().map(|&p| MemoryStore::contains(self, p)));
        }
        Ok(())
    }

    fn read_segment(&self, segment: u64, out: &mut Vec<u64>) -> Result<(), Error> {
        MemoryStore::read_segment(self, segment, out)
    }

    fn merge_segment(&self, segment: u64, words: &[u64]) -> Result<(), Error> {
        MemoryStore::merge_segment(self, segment, words).map(|_| ())
    }
}

/// [`MemoryStore::missing_in_lines`] for `N` words and `W`-bit offsets; `None` when the
/// segment has another length. Stops at the first seed word that finds a bit missing, so a
/// non-zero answer may hold only that word's missing bits.
#[inline(always)]
fn missing_in_lines<const W: u32, const N: usize>(
    segment: &[AtomicU64],
    hashes: u32,
    seed: u64,
) -> Option<u64> {
    let words = <&[AtomicU64; N]>::try_from(segment).ok()?;
    // One seed word's offsets at a time, stopping after the first word that finds a bit
    // missing: a new item usually stops after the first (its first few lines), a known one
    // reads every line, all of whose loads go out together.
    let per_word = 64 / W;
    let (mut seed_word, mut left) = (seed, hashes);
    loop {
        let mut x = seed_word;
        let mut missing = 0;
        for i in 0..64 / W {
            if i < left {
                let offset = x >> (64 - W);
                // `N` is a power of two and the offset below `64 N`: no bounds check.
                let word = &words[(offset >> 6) as usize % N];
                missing |= bit_order::mask(offset) & !word.load(Relaxed);
                x <<= W;
            }
        }
        if missing != 0 || left <= per_word {
            return Some(missing);
        }
        left -= per_word;
        seed_word = url_dedup_bloom::hash::mix64(seed_word);
    }
}

/// Sets the item's bits in `N` words under the segment's stripe lock; the bits that were zero.
#[inline(always)]
fn set_in_lines<const W: u32, const N: usize>(
    segment: &[AtomicU64],
    hashes: u32,
    seed: u64,
) -> Option<u64> {
    let words = <&[AtomicU64; N]>::try_from(segment).ok()?;
    Some(fold_wide_offsets::<W, _>(
        hashes,
        seed,
        0,
        |missing, offset| {
            set_word(
                &words[(offset >> 6) as usize % N],
                bit_order::mask(offset),
                missing,
            )
        },
    ))
}

/// [`set_in_lines`] through exclusive access.
#[inline(always)]
fn set_in_lines_mut<const W: u32, const N: usize>(
    segment: &mut [AtomicU64],
    hashes: u32,
    seed: u64,
) -> Option<u64> {
    let words = <&mut [AtomicU64; N]>::try_from(segment).ok()?;
    Some(fold_wide_offsets::<W, _>(
        hashes,
        seed,
        0,
        |missing, offset| {
            let word = words[(offset >> 6) as usize % N].get_mut();
            set_bits(word, bit_order::mask(offset), missing)
        },
    ))
}

/// Sets offsets one at a time through exclusive access; the bits that were zero.
fn set_offsets_mut(segment: &mut [AtomicU64], offsets: crate::layout::Offsets) -> u64 {
    offsets.fold(0, |missing, offset| {
        let (w, mask) = bit_order::locate(offset);
        segment
            .get_mut(w)
            .map_or(missing, |word| set_bits(word.get_mut(), mask, missing))
    })
}

/// ORs `mask` into a word only this thread can reach (`&mut`) and adds the bits that were zero
/// to `missing`.
#[inline(always)]
pub(crate) fn set_bits(word: &mut u64, mask: u64, missing: u64) -> u64 {
    let old = *word;
    *word = old | mask;
    missing | (mask & !old)
}

/// ORs `mask` into `word` under the segment's lock (so a plain load and store suffice against
/// other writers; readers see each word change atomically) and adds the bits that were zero to
/// `missing`.
#[inline(always)]
fn set_word(word: &AtomicU64, mask: u64, missing: u64) -> u64 {
    let old = word.load(Relaxed);
    word.store(old | mask, Relaxed);
    missing | (mask & !old)
}

/// Probes handed in through the trait may come from anywhere: reject out-of-range segments
/// before touching anything, so a batch is all-or-nothing on bad input.
fn check_probes(layout: &Layout, probes: &[Probe]) -> Result<(), Error> {
    if probes.iter().any(|p| p.segment >= layout.segments()) {
        return Err(Error::InvalidParameters("probe segment out of range"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words a probe's offsets set, from the layout alone: what every store (Redis too)
    /// must agree on.
    fn reference(layout: &Layout, probe: Probe) -> Vec<u64> {
        let mut words = vec![0u64; layout.segment_words() as usize];
        for offset in layout.offsets(probe) {
            let (w, mask) = bit_order::locate(offset);
            words[w] |= mask;
        }
        words
    }

    proptest::proptest! {
        /// Every kernel (one line, several lines, split, general) sets exactly the layout's
        /// bits through both paths, and answers as the bits say.
        #[test]
        fn kernels_set_the_layouts_bits(
            bits in proptest::sample::select(vec![64u64, 512, 1024, 2048, 4096, 8192]),
            hashes in 1u32..=64,
            split in proptest::bool::ANY,
            seeds in proptest::collection::vec(proptest::num::u64::ANY, 1..8),
        ) {
            let layout = if split && bits == 512 {
                Layout::with_placement(2, 512, 8, Placement::Split).unwrap()
            } else {
                Layout::new(2, bits, hashes).unwrap()
            };
            let shared = MemoryStore::new(layout).unwrap();
            let mut exclusive = MemoryStore::new(layout).unwrap();
            let mut expected = vec![0u64; layout.segment_words() as usize];
            for &seed in &seeds {
                let probe = Probe { segment: 1, seed };
                let bits = reference(&layout, probe);
                let new = bits.iter().zip(&expected).any(|(b, e)| b & !e != 0);
                proptest::prop_assert_eq!(shared.contains(probe), !new);
                proptest::prop_assert_eq!(shared.check_and_insert(probe), new);
                proptest::prop_assert_eq!(exclusive.check_and_insert_mut(probe), new);
                for (e, b) in expected.iter_mut().zip(&bits) {
                    *e |= b;
                }
                proptest::prop_assert!(shared.contains(probe));
                for store in [&shared, &exclusive] {
                    let mut words = Vec::new();
                    store.read_segment(1, &mut words).unwrap();
                    proptest::prop_assert_eq!(&words, &expected);
                }
            }
        }

        /// On a densely filled segment (where most bits of an absent item are set, so a test
        /// that skips any offset shows), every kernel answers what the layout's bits say.
        #[test]
        fn kernels_answer_as_the_layouts_bits_on_full_segments(
            bits in proptest::sample::select(vec![512u64, 1024, 2048, 4096]),
            hashes in 1u32..=64,
            fill in proptest::collection::vec((proptest::num::u64::ANY, proptest::num::u64::ANY, proptest::num::u64::ANY), 64),
            seeds in proptest::collection::vec(proptest::num::u64::ANY, 1..32),
        ) {
            let layout = Layout::new(1, bits, hashes).unwrap();
            let store = MemoryStore::new(layout).unwrap();
            // About 7 bits in 8 set.
            let words: Vec<u64> = fill
                .iter()
                .take(layout.segment_words() as usize)
                .map(|&(a, b, c)| a | b | c)
                .collect();
            store.merge_segment(0, &words).unwrap();
            for &seed in &seeds {
                let probe = Probe { segment: 0, seed };
                let all_set = reference(&layout, probe)
                    .iter()
                    .zip(&words)
                    .all(|(r, w)| r & !w == 0);
                proptest::prop_assert_eq!(store.contains(probe), all_set);
            }
        }
    }
}
