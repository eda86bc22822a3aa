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

use std::sync::atomic::{AtomicBool, Ordering};

#[repr(align(64))]
struct Stripe(AtomicBool);

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
        let threads = std::thread::available_parallelism().map_or(4, |n| n.get());
        let most = usize::try_from(segments.max(1).next_power_of_two()).unwrap_or(4096);
        let count = (threads * 8).next_power_of_two().clamp(64, 4096).min(most);
        Self {
            locks: (0..count).map(|_| Stripe(AtomicBool::new(false))).collect(),
            mask: count as u64 - 1,
        }
    }

    /// Heap bytes held by the locks.
    pub(crate) fn bytes(&self) -> usize {
        self.locks.len() * std::mem::size_of::<Stripe>()
    }

    /// Locks the stripe of `segment` until the guard drops.
    #[inline]
    pub(crate) fn lock(&self, segment: u64) -> StripeGuard<'_> {
        // `mask` is `len - 1`, so the index is in bounds; `get` keeps the code panic-free anyway.
        let lock = match self.locks.get((segment & self.mask) as usize) {
            Some(stripe) => &stripe.0,
            None => &self.locks[0].0,
        };
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
        StripeGuard(lock)
    }
}

/// Holds one stripe's lock; releases it on drop.
pub(crate) struct StripeGuard<'a>(&'a AtomicBool);

impl Drop for StripeGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
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
