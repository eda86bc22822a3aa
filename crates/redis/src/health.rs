//! Since when a Redis deployment has been unreachable, shared by every call of the process on
//! it: the clock the give-up budget is measured on.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

/// One deployment's outage clock and call counters.
///
/// Times are nanoseconds since a process-wide origin, in atomics: every reply received marks
/// the deployment reachable, on the I/O thread's hot path.
#[derive(Debug, Default)]
pub(crate) struct Health {
    /// When the outage began, plus one (0: reachable).
    down_since: AtomicU64,
    /// When a reply last arrived, plus one (0: never).
    last_heard: AtomicU64,
    attempts: AtomicU64,
    failed: AtomicU64,
    unavailable: AtomicU64,
}

/// What the calls on one Redis deployment met, counted over every [`Link`](crate::Link) and
/// shared filter of the process that uses it (see [`Link::stats`](crate::Link::stats)).
///
/// # Examples
///
/// ```
/// use url_dedup_redis::LinkStats;
///
/// let stats = LinkStats::default();
/// assert_eq!((stats.attempts, stats.outage), (0, None));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LinkStats {
    /// Attempts made: a call answered at once makes one, a call retried makes several.
    pub attempts: u64,
    /// Attempts that failed for a reason a retry may fix (a broken connection, a timeout, a
    /// server loading its data, a cluster failing over).
    pub failed_attempts: u64,
    /// Calls that gave up with [`Error::Unavailable`](crate::Error::Unavailable).
    pub unavailable: u64,
    /// How long Redis has been unreachable, as the calls saw it; `None` when the last attempt
    /// reached it.
    pub outage: Option<Duration>,
}

fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

fn stamp(at: Instant) -> u64 {
    at.saturating_duration_since(origin()).as_nanos() as u64 + 1
}

fn instant(stamp: u64) -> Option<Instant> {
    (stamp != 0).then(|| origin() + Duration::from_nanos(stamp - 1))
}

impl Health {
    /// The clock of the deployment named `key` (its seed addresses): one per process, shared
    /// by every link and store opened on it while any of them lives.
    pub(crate) fn of(key: &str) -> Arc<Self> {
        static ALL: OnceLock<Mutex<HashMap<String, Weak<Health>>>> = OnceLock::new();
        let mut all = ALL
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(health) = all.get(key).and_then(Weak::upgrade) {
            return health;
        }
        all.retain(|_, health| health.strong_count() > 0);
        let health = Arc::new(Self::default());
        all.insert(key.to_owned(), Arc::downgrade(&health));
        health
    }

    /// Redis answered: the outage, if any, is over.
    pub(crate) fn heard(&self) {
        self.last_heard
            .store(stamp(Instant::now()), Ordering::Relaxed);
        if self.down_since.load(Ordering::Relaxed) != 0 {
            self.down_since.store(0, Ordering::Relaxed);
        }
    }

    /// An attempt begun at `attempt_started` failed for a transient reason: returns when the
    /// outage began (this attempt's start, unless an earlier failure began it; never before
    /// the last answer).
    pub(crate) fn failed(&self, attempt_started: Instant) -> Instant {
        self.failed.fetch_add(1, Ordering::Relaxed);
        self.mark_down(attempt_started)
    }

    /// A request begun at `started` failed for a transient reason (counted by its call, if
    /// any, through [`failed`](Self::failed)): the outage began then at the latest.
    pub(crate) fn mark_down(&self, started: Instant) -> Instant {
        let start = stamp(started).max(self.last_heard.load(Ordering::Relaxed));
        match self
            .down_since
            .compare_exchange(0, start, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => instant(start),
            Err(earlier) => instant(earlier),
        }
        .unwrap_or(started)
    }

    /// When the current outage began; `None` while Redis answers.
    pub(crate) fn down_since(&self) -> Option<Instant> {
        instant(self.down_since.load(Ordering::Relaxed))
    }

    pub(crate) fn count_attempt(&self) {
        self.attempts.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn count_unavailable(&self) {
        self.unavailable.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn stats(&self) -> LinkStats {
        LinkStats {
            attempts: self.attempts.load(Ordering::Relaxed),
            failed_attempts: self.failed.load(Ordering::Relaxed),
            unavailable: self.unavailable.load(Ordering::Relaxed),
            outage: self.down_since().map(|since| since.elapsed()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_clock_per_deployment_while_it_is_used() {
        let a = Health::of("health-test:1");
        let b = Health::of("health-test:1");
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &Health::of("health-test:2")));
        let since = a.failed(Instant::now());
        assert_eq!(b.down_since(), Some(since));
        // A later failure keeps the outage's start.
        assert_eq!(b.failed(Instant::now()), since);
        a.heard();
        assert_eq!(b.down_since(), None);
        assert_eq!(b.stats().failed_attempts, 2);
    }

    #[test]
    fn an_outage_begins_no_earlier_than_the_last_answer() {
        let health = Health::default();
        let before = Instant::now();
        health.heard();
        let since = health.failed(before);
        assert!(since >= before);
        assert!(health.down_since().is_some());
    }
}
