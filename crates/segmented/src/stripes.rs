//! Striped spinlocks: the one place where concurrent admissions of an item are serialised.
//!
//! A segment's writers take the lock of its stripe (`segment mod stripes`) around the final
//! test-and-set of the item's bits, which makes that test-and-set one indivisible step: of
//! several threads inserting the same new item, exactly one finds a bit missing. Readers and
//! re-insertions of known items never take a lock (their lock-free pre-test already saw every
//! bit set), so the lock is paid only by genuinely new items.
//!
//! Why spin: the critical section is a handful of loads and stores on one cache line that the
//! pre-test has just brought in, far shorter than a futex round trip. Each lock has its own
//! cache line so two threads on different stripes never share one; after a short spin a waiter
//! yields, so a lock holder that lost its core (two busy cores, more threads) is not starved.
//!
//! Each stripe also counts the admissions made under its lock. The count shares the lock's
//! cache line, which the holder already owns, so counting costs a plain load and store and no
//! extra locked instruction; a growing filter sums the stripes to know when a layer is full.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

#[repr(align(64))]
struct Stripe {
    lock: AtomicBool,
    /// Admissions made under this lock; written only by the lock's holder (or `&mut`).
    admitted: AtomicU64,
}

/// A power-of-two number of spinlocks, one per cache line.
pub(crate) struct Stripes {
    locks: Box<[Stripe]>,
    mask: u64,
}

impl Stripes {
    /// Eight stripes per hardware thread, at least 64 and at most 4096: with T threads the
    /// chance that two of them want the same stripe at once stays below T / (8 T). Never more
    /// than the filter has segments (rounded up to a power of two): a stripe no segment maps
    /// to is 64 bytes of nothing, and a sharded filter has thousands of small shards.
    pub(crate) fn for_this_machine(segments: u64) -> Self {
        // Asked once per process: the answer reads the scheduler's affinity mask and the
        // cgroup's CPU quota from files, tens of microseconds, which a small filter (a shard
        // of a partitioned one) would pay again at every build.
        static THREADS: OnceLock<usize> = OnceLock::new();
        let threads =
            *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(4, |n| n.get()));
        let most = usize::try_from(segments.max(1).next_power_of_two()).unwrap_or(4096);
        let count = (threads * 8).next_power_of_two().clamp(64, 4096).min(most);
        Self {
            locks: (0..count)
                .map(|_| Stripe {
                    lock: AtomicBool::new(false),
                    admitted: AtomicU64::new(0),
                })
                .collect(),
            mask: count as u64 - 1,
        }
    }

    /// Heap bytes held by the locks.
    pub(crate) fn bytes(&self) -> usize {
        self.locks.len() * std::mem::size_of::<Stripe>()
    }

    /// How many stripes there are.
    pub(crate) fn len(&self) -> usize {
        self.locks.len()
    }

    /// The stripe of `segment`.
    #[inline]
    fn stripe(&self, segment: u64) -> &Stripe {
        // `mask` is `len - 1`, so the index is in bounds; `get` keeps the code panic-free anyway.
        match self.locks.get((segment & self.mask) as usize) {
            Some(stripe) => stripe,
            None => &self.locks[0],
        }
    }

    /// Locks the stripe of `segment` until the guard drops.
    #[inline]
    pub(crate) fn lock(&self, segment: u64) -> StripeGuard<'_> {
        let stripe = self.stripe(segment);
        let lock = &stripe.lock;
        let mut spins = 0u32;
        while lock
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            // Wait on a plain load so the line stays shared while the holder works.
            while lock.load(Ordering::Relaxed) {
                spins += 1;
                if spins < 128 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
        StripeGuard(stripe)
    }

    /// Locks every stripe, in index order (one caller at a time may do this; the growing
    /// filter's grower holds its own mutex while it does).
    pub(crate) fn lock_all(&self) -> Vec<StripeGuard<'_>> {
        (0..self.locks.len() as u64).map(|i| self.lock(i)).collect()
    }

    /// Counts one admission in the stripe of `segment` through exclusive access; returns the
    /// stripe's new count.
    #[inline]
    pub(crate) fn count_admission_mut(&mut self, segment: u64) -> u64 {
        let index = (segment & self.mask) as usize;
        match self.locks.get_mut(index) {
            Some(stripe) => {
                let count = stripe.admitted.get_mut();
                *count += 1;
                *count
            }
            None => 0,
        }
    }

    /// Admissions counted over all stripes (a moment's view while other threads admit).
    pub(crate) fn admitted(&self) -> u64 {
        self.locks
            .iter()
            .map(|s| s.admitted.load(Ordering::Relaxed))
            .sum()
    }

    /// Sets the total admission count (after a restore), held by the first stripe.
    pub(crate) fn set_admitted(&mut self, total: u64) {
        for (i, stripe) in self.locks.iter_mut().enumerate() {
            *stripe.admitted.get_mut() = if i == 0 { total } else { 0 };
        }
    }
}

/// Holds one stripe's lock; releases it on drop.
pub(crate) struct StripeGuard<'a>(&'a Stripe);

impl StripeGuard<'_> {
    /// Counts one admission in this stripe and returns the stripe's new count. A plain load
    /// and store: only the lock's holder writes the count.
    #[inline]
    pub(crate) fn count_admission(&self) -> u64 {
        let count = self.0.admitted.load(Ordering::Relaxed) + 1;
        self.0.admitted.store(count, Ordering::Relaxed);
        count
    }
}

impl Drop for StripeGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        self.0.lock.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    #[test]
    fn small_filters_get_no_more_stripes_than_segments() {
        assert_eq!(Stripes::for_this_machine(1).bytes(), 64);
        assert_eq!(Stripes::for_this_machine(12).bytes(), 16 * 64);
        assert!(Stripes::for_this_machine(1 << 30).bytes() >= 64 * 64);
        // One stripe still excludes: every segment maps to it.
        let one = Stripes::for_this_machine(1);
        drop(one.lock(5));
        drop(one.lock(6));
    }

    #[test]
    fn a_stripe_excludes_concurrent_holders() {
        let stripes = Stripes::for_this_machine(1 << 20);
        let counter = AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..20_000 {
                        let _g = stripes.lock(7);
                        // A non-atomic read-modify-write: lost updates would show if two
                        // threads were inside at once.
                        let v = counter.load(Ordering::Relaxed);
                        counter.store(v + 1, Ordering::Relaxed);
                    }
                });
            }
        });
        assert_eq!(counter.load(Ordering::Relaxed), 80_000);
    }
}
