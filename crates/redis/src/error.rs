use std::time::Duration;

/// Errors from the Redis backends.
///
/// Connection problems are retried with backoff inside every call; only when Redis has been
/// unreachable for the whole give-up budget does a call return [`Error::Unavailable`]. Nothing is
/// dropped on the floor when that happens: a failed push left nothing half-written that a retry
/// would lose, and claimed tasks stay in their worker's processing set until acknowledged or
/// requeued.
///
/// # Examples
///
/// ```
/// use url_dedup_redis::Error;
///
/// let err = Error::InvalidTask("host is empty");
/// assert_eq!(err.to_string(), "invalid task: host is empty");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Redis has been unreachable (or kept dropping the connection, or answered that it
    /// cannot serve: loading, failing over) for the whole give-up budget, counted from its
    /// first failure seen by any call of the process.
    #[error(
        "redis unreachable for {elapsed:.1?}, past the give-up budget of {budget:?}: \
         {operation} failed after {attempts} attempt(s); last error: {source}"
    )]
    Unavailable {
        /// What was being done.
        operation: &'static str,
        /// How many times this call tried.
        attempts: u32,
        /// How long Redis had been unreachable when the call gave up.
        elapsed: Duration,
        /// The budget the call spent: [`Backoff::give_up_after`](crate::Backoff::give_up_after),
        /// or [`Backoff::first_contact`](crate::Backoff::first_contact) for a first contact.
        budget: Duration,
        /// The last connection error.
        #[source]
        source: redis::RedisError,
    },
    /// Redis answered with an error that a retry would not fix (wrong type, bad URL, ...).
    #[error("redis error during {operation}: {source}")]
    Redis {
        /// What was being done.
        operation: &'static str,
        /// The error Redis or the client reported.
        #[source]
        source: redis::RedisError,
    },
    /// Redis answered, but not in the shape our scripts promise: the keys were written by
    /// something else.
    #[error("unexpected data in redis at {key}: {detail}")]
    Corrupt {
        /// The key holding the data.
        key: String,
        /// What was wrong.
        detail: String,
    },
    /// A task was rejected before reaching Redis.
    #[error("invalid task: {0}")]
    InvalidTask(&'static str),
    /// A name (worker, namespace, config field) is empty, too long or contains a separator.
    #[error("invalid name {name:?}: {reason}")]
    InvalidName {
        /// The rejected name.
        name: String,
        /// Why.
        reason: &'static str,
    },
    /// The worker has no live membership lease, so it may not claim work.
    #[error("worker {0:?} is not a live member (join or heartbeat first)")]
    NotMember(String),
    /// A shared filter exists under this prefix with other parameters than the caller's: using
    /// it would compute other bits and silently corrupt both.
    #[error("filter parameters differ: {field} is {stored} in redis, {expected} here")]
    Mismatch {
        /// The first parameter that differs.
        field: &'static str,
        /// Its value in Redis.
        stored: String,
        /// The caller's value.
        expected: String,
    },
    /// The shared structure under `prefix` is not the one this client opened: Redis lost its
    /// data (a restart without persistence, `FLUSHALL`, a failover to a replica that missed
    /// writes) or someone deleted and re-created it. What it had admitted is gone, so URLs
    /// admitted before may be admitted again; the client stops rather than carry on as if
    /// nothing had been seen. Its cache of known bits is emptied.
    #[error(
        "the shared {what} at {prefix} was reset: {detail}; what it recorded before is gone, \
         so URLs seen before may be taken for new ones"
    )]
    StoreReset {
        /// What was reset: "filter" or "frontier".
        what: &'static str,
        /// The key prefix or namespace.
        prefix: String,
        /// What showed it.
        detail: String,
    },
    /// The filter keeps its hash key out of Redis and this process brought none
    /// ([`StoreOptions::key`](crate::StoreOptions::key)).
    #[error("the filter at {meta} keeps its hash key out of redis: supply the key")]
    KeyRequired {
        /// The metadata key.
        meta: String,
    },
    /// A data key of a growing filter has more than one layer, and the caller gave only
    /// first-layer probes (the [`SegmentStore`](url_dedup_segmented::SegmentStore) interface):
    /// use [`SharedFilter`](crate::SharedFilter), which hashes items itself and finds their
    /// bits in every layer.
    #[error("data key {key} has grown past its first layer: open the filter as a SharedFilter")]
    Grown {
        /// The data key.
        key: String,
    },
    /// No filter metadata exists at this key.
    #[error("no filter at {key}")]
    NoFilter {
        /// The metadata key that was looked up.
        key: String,
    },
    /// The optimistic (WATCH/MULTI/EXEC) write lost the race this many times in a row.
    #[error("optimistic write gave up after {attempts} conflicting attempts")]
    Contended {
        /// Rounds tried.
        attempts: u32,
    },
    /// The segmented filter rejected parameters or a snapshot.
    #[error(transparent)]
    Segmented(#[from] url_dedup_segmented::Error),
    /// A write guarded by a leader epoch came from a leader that has been replaced.
    #[error("fenced: epoch {presented} is stale, current leader epoch is {current}")]
    Fenced {
        /// The epoch the writer presented.
        presented: u64,
        /// The newest epoch in Redis.
        current: u64,
    },
}

/// Results of this crate.
///
/// # Examples
///
/// ```
/// fn check(name: &str) -> url_dedup_redis::Result<url_dedup_redis::WorkerId> {
///     url_dedup_redis::WorkerId::new(name)
/// }
/// assert!(check("w1").is_ok());
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;
