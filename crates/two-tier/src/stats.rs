//! What a node did, counted as it happens: for tests, monitoring and the benchmark's
//! round-trip figures.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Live counters of one node, shared by its tasks.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    round_trips: AtomicU64,
    frames_sent: AtomicU64,
    frames_received: AtomicU64,
    rejected: AtomicU64,
    duplicates: AtomicU64,
    late_answers: AtomicU64,
    timeouts: AtomicU64,
    completed: AtomicU64,
    dropped_locally: AtomicU64,
    removed_by_answers: AtomicU64,
    dispatched: AtomicU64,
    /// Iterations begun by each of the role's loops (a host runs two, a center one). A loop
    /// that begins an iteration has finished handling what it took in the one before.
    rounds: [AtomicU64; 2],
}

/// Which of a role's loops counts a round.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Loop {
    /// The center's loop, or a host's loop answering its center.
    Main = 0,
    /// A host's loop submitting its pool.
    Submit = 1,
}

macro_rules! bump {
    ($($name:ident => $field:ident),* $(,)?) => {
        impl Counters {
            $(pub(crate) fn $name(&self, n: u64) { self.$field.fetch_add(n, Relaxed); })*
        }
    };
}

bump! {
    add_frames_sent => frames_sent,
    add_frames_received => frames_received,
    add_dropped_locally => dropped_locally,
    add_removed_by_answers => removed_by_answers,
    add_dispatched => dispatched,
}

impl Counters {
    /// Counts the start of an iteration of `which` loop.
    pub(crate) fn round(&self, which: Loop) {
        self.rounds[which as usize].fetch_add(1, Relaxed);
    }
    /// Iterations begun so far by each loop, in [`Loop`] order.
    #[cfg_attr(not(any(test, feature = "testing")), allow(dead_code))]
    pub(crate) fn rounds(&self) -> [u64; 2] {
        [self.rounds[0].load(Relaxed), self.rounds[1].load(Relaxed)]
    }
    pub(crate) fn round_trip(&self) {
        self.round_trips.fetch_add(1, Relaxed);
    }
    pub(crate) fn rejected(&self) {
        self.rejected.fetch_add(1, Relaxed);
    }
    pub(crate) fn duplicate(&self) {
        self.duplicates.fetch_add(1, Relaxed);
    }
    pub(crate) fn late_answer(&self) {
        self.late_answers.fetch_add(1, Relaxed);
    }
    pub(crate) fn timeout(&self) {
        self.timeouts.fetch_add(1, Relaxed);
    }
    pub(crate) fn completed(&self) {
        self.completed.fetch_add(1, Relaxed);
    }

    pub(crate) fn snapshot(&self) -> Stats {
        Stats {
            round_trips: self.round_trips.load(Relaxed),
            frames_sent: self.frames_sent.load(Relaxed),
            frames_received: self.frames_received.load(Relaxed),
            rejected: self.rejected.load(Relaxed),
            duplicates: self.duplicates.load(Relaxed),
            late_answers: self.late_answers.load(Relaxed),
            timeouts: self.timeouts.load(Relaxed),
            completed: self.completed.load(Relaxed),
            dropped_locally: self.dropped_locally.load(Relaxed),
            removed_by_answers: self.removed_by_answers.load(Relaxed),
            dispatched: self.dispatched.load(Relaxed),
        }
    }
}

/// A snapshot of what a node did since it started.
///
/// # Examples
///
/// ```
/// use url_dedup_two_tier::Stats;
///
/// let mut one = Stats::default();
/// one.round_trips = 3;
/// let mut total = Stats::default();
/// total += one;
/// total += one;
/// assert_eq!(total.round_trips, 6);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Calls to Redis (each script, command or pipeline is one round trip), to the node's own
    /// Redis and to its peers'.
    pub round_trips: u64,
    /// Frames pushed into other nodes' inboxes.
    pub frames_sent: u64,
    /// Frames taken from this node's inboxes (including rejected ones).
    pub frames_received: u64,
    /// Frames rejected as malformed, oversized or misrouted.
    pub rejected: u64,
    /// Frames delivered again and ignored: a number admitted before, an answer counted before.
    pub duplicates: u64,
    /// Answers that came after their frame had completed (timeout), ignored.
    pub late_answers: u64,
    /// Frames completed by their deadline rather than by their last answer.
    pub timeouts: u64,
    /// Frames whose dedup finished at this center (own network or another network's request).
    pub completed: u64,
    /// URLs a host dropped in local dedup (already in its `finish_URL`).
    pub dropped_locally: u64,
    /// URLs removed from this center's frames because an answer marked them.
    pub removed_by_answers: u64,
    /// URLs this center moved from `task_URL` into hosts' `task_pool`s.
    pub dispatched: u64,
}

impl std::ops::AddAssign for Stats {
    fn add_assign(&mut self, o: Self) {
        self.round_trips += o.round_trips;
        self.frames_sent += o.frames_sent;
        self.frames_received += o.frames_received;
        self.rejected += o.rejected;
        self.duplicates += o.duplicates;
        self.late_answers += o.late_answers;
        self.timeouts += o.timeouts;
        self.completed += o.completed;
        self.dropped_locally += o.dropped_locally;
        self.removed_by_answers += o.removed_by_answers;
        self.dispatched += o.dispatched;
    }
}

/// One call through `link`'s retry loop, counted as one round trip.
pub(crate) async fn counted<T, F, Fut>(
    counters: &Counters,
    link: &url_dedup_redis::Link,
    operation: &'static str,
    attempt: F,
) -> crate::Result<T>
where
    F: FnMut(url_dedup_redis::Connection) -> Fut,
    Fut: std::future::Future<Output = redis::RedisResult<T>>,
{
    counters.round_trip();
    Ok(link.run(operation, attempt).await?)
}
