//! The page rate limit of one process (`--rate`, the status page's `POST /rate`): a pace of
//! fetch starts that a change reaches at once, and the range a limit must be in.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// The largest rate limit accepted, in pages per second: beyond it, a limit limits nothing.
pub(crate) const MAX_RATE: f64 = 1_000_000.0;
/// The smallest rate limit accepted other than 0 (no limit): one page every 1,000 seconds.
pub(crate) const MIN_RATE: f64 = 0.001;

/// Checks a page rate limit (`--rate`, the status page's `POST /rate`): 0 for none, or
/// between [`MIN_RATE`] and [`MAX_RATE`] pages per second.
pub(crate) fn check_rate(per_sec: f64) -> Result<f64, String> {
    if per_sec == 0.0 || (MIN_RATE..=MAX_RATE).contains(&per_sec) {
        Ok(per_sec)
    } else {
        Err(format!(
            "{per_sec} is not a rate limit: give 0 (no limit) or a number of pages per second \
             from {MIN_RATE} to {MAX_RATE}"
        ))
    }
}

/// A per-process pace: at most `pages_per_sec` fetch starts per second (0: unlimited).
#[derive(Debug)]
pub(crate) struct Pacer {
    per_sec: AtomicU64,
    next: Mutex<Instant>,
    /// Wakes the fetches waiting for a slot when the rate changes.
    changed: Notify,
}

impl Pacer {
    pub(crate) fn new(per_sec: f64) -> Self {
        Self {
            per_sec: AtomicU64::new(per_sec.max(0.0).to_bits()),
            next: Mutex::new(Instant::now()),
            changed: Notify::new(),
        }
    }

    pub(crate) fn rate(&self) -> f64 {
        f64::from_bits(self.per_sec.load(Ordering::Relaxed))
    }

    /// Changes the rate at once: slots booked at the old rate are given up, and the fetches
    /// waiting for them book again at the new one (so lifting a limit of one page a minute does
    /// not leave the waiting fetches asleep for minutes).
    pub(crate) fn set_rate(&self, per_sec: f64) {
        self.per_sec.store(per_sec.to_bits(), Ordering::Relaxed);
        *self.next.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
        self.changed.notify_waiters();
    }

    /// Waits for this process's next fetch slot.
    pub(crate) async fn wait(&self) {
        loop {
            // Registered before booking, so a change between booking and sleeping still wakes
            // this fetch.
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let Some(start) = self.book(Instant::now()) else {
                return;
            };
            tokio::select! {
                () = tokio::time::sleep_until(start) => return,
                () = &mut changed => {}
            }
        }
    }

    /// Books the next fetch slot at or after `now`; `None` when there is no limit.
    fn book(&self, now: Instant) -> Option<Instant> {
        let rate = self.rate();
        if rate <= 0.0 {
            return None;
        }
        let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
        // A slot not used for a while is not saved up: no burst after an idle spell.
        let start = (*next).max(now);
        *next = start + interval(rate);
        Some(start)
    }
}

/// The time between two fetch starts at `rate` pages per second, for any positive rate: a rate
/// checked by [`check_rate`] gives 1 µs to 1,000 s, and anything else is held to that range
/// rather than overflowing a `Duration`.
fn interval(rate: f64) -> Duration {
    let secs = (1.0 / rate).clamp(1.0 / MAX_RATE, 1.0 / MIN_RATE);
    Duration::try_from_secs_f64(secs).unwrap_or(Duration::from_secs(1000))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn pacer_spaces_slots_and_follows_changes() {
        let p = Pacer::new(10.0);
        let t0 = Instant::now();
        let slots: Vec<_> = (0..5).map(|_| p.book(t0).unwrap() - t0).collect();
        let step = Duration::from_millis(100);
        assert_eq!(slots, [0, 1, 2, 3, 4].map(|i| step * i));
        // Idle time is not saved up.
        let later = t0 + Duration::from_secs(5);
        assert_eq!(p.book(later), Some(later));
        p.set_rate(0.0);
        assert_eq!(p.book(later), None);
        // A change gives up the slots booked at the old rate.
        p.set_rate(2.0);
        assert_eq!(p.book(later), Some(later));
        assert_eq!(p.book(later), Some(later + step * 5));
    }

    impl Pacer {
        /// When the last booked slot ends.
        fn booked_until(&self) -> Instant {
            *self.next.lock().unwrap()
        }
    }

    /// A fetch waiting for its slot at the old rate starts at the new one: no (virtual) time
    /// passes when the limit is lifted, or raised, while it waits.
    #[tokio::test(start_paused = true)]
    async fn a_rate_change_reaches_the_fetches_already_waiting() {
        for new_rate in [0.0, 50.0] {
            let p = Arc::new(Pacer::new(0.01)); // one start per 100 s
            p.wait().await;
            let t0 = Instant::now();
            let waiter = tokio::spawn({
                let p = p.clone();
                async move {
                    p.wait().await;
                    Instant::now()
                }
            });
            // The waiter has booked its slot 100 s out and sleeps.
            while p.booked_until() < t0 + Duration::from_secs(200) {
                tokio::task::yield_now().await;
            }
            p.set_rate(new_rate);
            assert_eq!(waiter.await.unwrap(), t0, "rate {new_rate}");
        }
    }

    proptest::proptest! {
        /// Any rate at all, checked or not, books slots without panicking and no further
        /// apart than the slowest rate accepted; a rate the checks refuse never reaches here
        /// from an option or the status page.
        #[test]
        fn the_pacer_takes_any_rate(rate in proptest::num::f64::ANY) {
            let p = Pacer::new(rate);
            let t0 = Instant::now();
            if let (Some(a), Some(b)) = (p.book(t0), p.book(t0)) {
                proptest::prop_assert!(b - a <= Duration::from_secs(1000));
                proptest::prop_assert!(b > a);
            }
            p.set_rate(rate);
            let _ = p.book(t0);
            let accepted = check_rate(rate).is_ok();
            proptest::prop_assert_eq!(
                accepted,
                rate == 0.0 || (MIN_RATE..=MAX_RATE).contains(&rate)
            );
        }
    }

    #[test]
    fn extreme_rates_are_refused_with_the_range() {
        for bad in [1e-300, -1.0, f64::NAN, f64::INFINITY, 1e7, 1e-4] {
            let e = check_rate(bad).unwrap_err();
            assert!(e.contains("from 0.001 to 1000000"), "{bad}: {e}");
        }
        for good in [0.0, 0.001, 1.0, 1e6] {
            assert_eq!(check_rate(good), Ok(good));
        }
    }
}
