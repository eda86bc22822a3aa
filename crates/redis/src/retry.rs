//! When a call tries again and when it gives up: the one policy of every call on the layer.
//!
//! A call retries what may succeed on a fresh try (a broken or timed-out connection, a server
//! loading its data, a cluster between two states) with exponential backoff. It gives up when
//! Redis has been unreachable for the budget, counted from when it stopped answering, not from
//! when the call began: the clock is the [`Health`] of the deployment, shared by every call of
//! the process on the same Redis. So a process whose Redis is gone stops after the budget,
//! whatever it was doing, instead of letting each of its calls wait the budget in turn.

use std::time::{Duration, Instant};

use redis::RedisError;

use crate::error::{Error, Result};
use crate::health::Health;

/// How long and how often a call is retried while Redis is unreachable.
///
/// Delays start at `initial` and double up to `max`. A call gives up with
/// [`Error::Unavailable`] once Redis has been unreachable for `give_up_after`, measured from
/// the first attempt that failed, by any call of the process on the same Redis; a call made
/// after that tries once and fails at once. The first contact with a server (opening a
/// [`Link`](crate::Link) or a shared filter) gives up sooner, after `first_contact`: a Redis
/// that was never reached is a wrong address or a server that is not running, and a user
/// should hear of it in seconds, while a Redis that answered before and stops is more likely
/// restarting, worth the longer wait.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use url_dedup_redis::Backoff;
///
/// let patient = Backoff { give_up_after: Duration::from_secs(300), ..Backoff::default() };
/// assert_eq!(patient.initial, Duration::from_millis(20));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// First delay after a failed attempt.
    pub initial: Duration,
    /// Longest delay between two attempts.
    pub max: Duration,
    /// How long Redis may stay unreachable before calls report [`Error::Unavailable`].
    pub give_up_after: Duration,
    /// How long one command may wait for its reply before the connection counts as broken
    /// (blocking commands such as `BLPOP` and `WAIT` get their own timeout on top).
    pub response_timeout: Duration,
    /// How long opening one TCP connection may take; also how long the one attempt of a call
    /// made after the budget was spent may wait.
    pub connect_timeout: Duration,
    /// Total time after which the first contact with a server gives up (at most
    /// `give_up_after`).
    pub first_contact: Duration,
}

impl Default for Backoff {
    /// 20 ms doubling to 1 s, giving up after 30 s (3 s for the first contact); connections
    /// time out after 1 s, replies after 10 s.
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(20),
            max: Duration::from_secs(1),
            give_up_after: Duration::from_secs(30),
            response_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(1),
            first_contact: Duration::from_secs(3),
        }
    }
}

impl Backoff {
    /// A policy that keeps retrying a server that stops answering for `give_up_after` (also
    /// the cap of the first contact), other settings as the default.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use url_dedup_redis::Backoff;
    ///
    /// let quick = Backoff::giving_up_after(Duration::from_millis(500));
    /// assert_eq!(quick.first_contact, Duration::from_millis(500));
    /// let patient = Backoff::giving_up_after(Duration::from_secs(600));
    /// assert_eq!(patient.first_contact, Backoff::default().first_contact);
    /// ```
    pub fn giving_up_after(give_up_after: Duration) -> Self {
        let default = Self::default();
        Self {
            give_up_after,
            first_contact: default.first_contact.min(give_up_after),
            ..default
        }
    }
}

/// [`Backoff`]'s policy for one call, as loop state: before each attempt it says how long the
/// attempt may wait for a reply; after a failed attempt, the wait before the next one or the
/// error to return.
pub(crate) struct Retry<'a> {
    backoff: &'a Backoff,
    health: &'a Health,
    delay: Duration,
    attempts: u32,
    /// When a first contact gives up, whatever the shared clock says.
    first_contact: Option<Instant>,
    /// The outage had outlasted the budget when the call began: one attempt, no retry.
    last_chance: bool,
    /// When the call began: no call waits longer than the budget, even while other nodes of a
    /// cluster answer and so keep the shared clock from running.
    started: Instant,
    attempt_started: Instant,
}

impl<'a> Retry<'a> {
    pub(crate) fn new(backoff: &'a Backoff, health: &'a Health) -> Self {
        let now = Instant::now();
        Self {
            backoff,
            health,
            delay: backoff.initial,
            attempts: 0,
            first_contact: None,
            last_chance: health
                .down_since()
                .is_some_and(|since| now >= since + backoff.give_up_after),
            started: now,
            attempt_started: now,
        }
    }

    /// The policy of a first contact, which gives up after [`Backoff::first_contact`] at the
    /// latest.
    pub(crate) fn first_contact(backoff: &'a Backoff, health: &'a Health) -> Self {
        let now = Instant::now();
        Self {
            first_contact: Some(now + backoff.first_contact.min(backoff.give_up_after)),
            ..Self::new(backoff, health)
        }
    }

    /// An attempt begins now: how long it may wait for each reply (a blocking command's own
    /// timeout comes on top). Not much past the moment the call would give up, so a call ends
    /// about when its budget does even on a server that stopped answering without closing its
    /// connections.
    pub(crate) fn attempt(&mut self) -> Duration {
        let now = Instant::now();
        self.attempt_started = now;
        self.attempts += 1;
        self.health.count_attempt();
        if self.last_chance {
            return self
                .backoff
                .response_timeout
                .min(self.backoff.connect_timeout);
        }
        // A server that answered until now becomes unreachable, if it does, from now. The
        // last attempt still gets a connect timeout's worth: an answer needs a round trip.
        let deadline = self.deadline(self.health.down_since().unwrap_or(now));
        let floor = self
            .backoff
            .connect_timeout
            .min(self.backoff.response_timeout);
        self.backoff
            .response_timeout
            .min(deadline.saturating_duration_since(now).max(floor))
    }

    /// The budget this call spends: a first contact's own, or the give-up budget. An error
    /// names it, so "unreachable for 3.0s" never reads as past a budget of 30 s.
    fn budget(&self) -> Duration {
        match self.first_contact {
            Some(_) => self.backoff.first_contact.min(self.backoff.give_up_after),
            None => self.backoff.give_up_after,
        }
    }

    /// When the call gives up, for an outage that began at `since`: the budget after the
    /// outage began, or after the call began if that is sooner.
    fn deadline(&self, since: Instant) -> Instant {
        let budget = since.min(self.started) + self.backoff.give_up_after;
        self.first_contact.map_or(budget, |first| budget.min(first))
    }

    /// The attempt of `operation` failed with `source`: `Ok(wait)` to try again after
    /// `wait`; [`Error::Redis`] when the error is not transient; [`Error::Unavailable`] when
    /// Redis has been unreachable for the budget.
    pub(crate) fn failed(
        &mut self,
        operation: &'static str,
        source: RedisError,
    ) -> Result<Duration> {
        if !is_transient(&source) {
            return Err(Error::Redis { operation, source });
        }
        let since = self.health.failed(self.attempt_started);
        let now = Instant::now();
        let deadline = self.deadline(since);
        if self.last_chance || now >= deadline {
            self.health.count_unavailable();
            return Err(Error::Unavailable {
                operation,
                attempts: self.attempts,
                elapsed: now.saturating_duration_since(since.min(self.started)),
                budget: self.budget(),
                source,
            });
        }
        let wait = self.delay.min(deadline - now);
        self.delay = (self.delay * 2).min(self.backoff.max);
        Ok(wait)
    }
}

/// Whether a retry may succeed: the connection broke or timed out, the server is still loading
/// its data after a restart or busy with a script, or a cluster is between two states (a slot
/// in migration, a failover under way: `TRYAGAIN`, `CLUSTERDOWN`, `MASTERDOWN`, and
/// `READONLY` from a master demoted to a replica, whose slots the next attempt looks up
/// again).
///
/// `NOSCRIPT` too: a script call loads its script once when the server does not know it, and
/// a master promoted by a failover between that load and the call answers `NOSCRIPT` again.
/// The script did not run, so calling again, which loads it on the new master, is safe.
///
/// Not `MOVED` or `ASK`: those are followed where they are met, never retried as they are.
pub(crate) fn is_transient(e: &RedisError) -> bool {
    e.is_io_error()
        || e.kind() == redis::ErrorKind::ClusterConnectionNotFound
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || e.is_timeout()
        || matches!(
            e.code(),
            Some(
                "LOADING"
                    | "BUSY"
                    | "TRYAGAIN"
                    | "MASTERDOWN"
                    | "CLUSTERDOWN"
                    | "NOSCRIPT"
                    | "READONLY"
            )
        )
}

/// Whether a failure may mean the cluster's slots moved (a master died and a replica took
/// over, or a master was demoted): the next attempt reads the slot map again first.
pub(crate) fn may_have_moved(e: &RedisError) -> bool {
    e.is_io_error()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || e.is_timeout()
        || matches!(
            e.code(),
            Some("TRYAGAIN" | "MASTERDOWN" | "CLUSTERDOWN" | "READONLY")
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::RedisServer;

    fn transient_io() -> RedisError {
        std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused").into()
    }

    /// A script call on a server that does not know the script (a master promoted by a
    /// failover) fails with `NOSCRIPT`: retried, not given up on; a plain error is not.
    #[test]
    fn a_script_unknown_to_the_server_is_worth_a_retry() {
        let Some(server) = RedisServer::start_or_skip("a_script_unknown_to_the_server") else {
            return;
        };
        let mut conn = redis::Client::open(server.url())
            .unwrap()
            .get_connection()
            .unwrap();
        let unknown: RedisError = redis::cmd("EVALSHA")
            .arg("0123456789abcdef0123456789abcdef01234567")
            .arg(0)
            .query::<()>(&mut conn)
            .unwrap_err();
        assert_eq!(unknown.code(), Some("NOSCRIPT"));
        assert!(is_transient(&unknown));
        let wrong: RedisError = redis::cmd("INCR")
            .arg("not-a-number")
            .arg("extra")
            .query::<()>(&mut conn)
            .unwrap_err();
        assert!(!is_transient(&wrong), "{wrong}");
    }

    /// The budget runs from the first failure of any call: a call that begins later gives up
    /// at the same moment, and a call that begins after it tries once.
    #[test]
    fn the_budget_is_counted_from_the_first_failure() {
        let health = Health::default();
        let backoff = Backoff {
            initial: Duration::from_millis(1),
            give_up_after: Duration::from_millis(30),
            ..Backoff::default()
        };
        let mut first = Retry::new(&backoff, &health);
        first.attempt();
        let started = Instant::now();
        assert!(first.failed("first", transient_io()).is_ok());
        let mut second = Retry::new(&backoff, &health);
        loop {
            second.attempt();
            match second.failed("second", transient_io()) {
                Ok(wait) => std::thread::sleep(wait),
                Err(Error::Unavailable { elapsed, .. }) => {
                    assert!(elapsed >= Duration::from_millis(30));
                    break;
                }
                Err(e) => panic!("{e}"),
            }
        }
        assert!(started.elapsed() >= Duration::from_millis(29));
        let attempts = health.stats().attempts;
        let mut late = Retry::new(&backoff, &health);
        late.attempt();
        assert!(matches!(
            late.failed("late", transient_io()),
            Err(Error::Unavailable { attempts: 1, .. })
        ));
        assert_eq!(health.stats().attempts, attempts + 1);
        // An answer ends the outage: the next call has the whole budget again.
        health.heard();
        let mut fresh = Retry::new(&backoff, &health);
        fresh.attempt();
        assert!(fresh.failed("fresh", transient_io()).is_ok());
    }
}
