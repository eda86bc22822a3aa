use std::net::IpAddr;

/// Why a frame was rejected.
///
/// A node that receives such a frame logs the error (`tracing`, level `error`), counts it in
/// [`Stats::rejected`](crate::Stats::rejected) and changes nothing else.
///
/// # Examples
///
/// ```
/// use url_dedup_two_tier::FrameError;
///
/// let e = FrameError::TooLarge { bytes: 10, max: 5 };
/// assert_eq!(e.to_string(), "frame of 10 bytes exceeds the limit of 5");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The encoded frame is larger than [`FrameLimits::max_bytes`](crate::FrameLimits::max_bytes).
    #[error("frame of {bytes} bytes exceeds the limit of {max}")]
    TooLarge {
        /// Its size.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// Not the JSON object `{URL_set, IP, number, flag}`.
    #[error("malformed frame: {0}")]
    Json(String),
    /// More URLs than [`FrameLimits::max_urls`](crate::FrameLimits::max_urls).
    #[error("{urls} URLs in one frame exceed the limit of {max}")]
    TooManyUrls {
        /// How many it carried.
        urls: usize,
        /// The limit.
        max: usize,
    },
    /// A URL that may not travel (empty, too long, control characters).
    #[error("URL {url:?} rejected: {reason}")]
    BadUrl {
        /// The URL (its first 80 characters).
        url: String,
        /// Why.
        reason: &'static str,
    },
    /// `number` 0 is never issued.
    #[error("frame number 0 is never issued")]
    ZeroNumber,
    /// A well-formed frame that the receiving node must not get from this sender: wrong flag
    /// for its role, an `IP` that does not match the sender, a sender outside the topology.
    #[error("frame {number} (flag {flag}) from {sender} rejected: {reason}")]
    Misrouted {
        /// The frame's number.
        number: u64,
        /// The frame's flag.
        flag: u8,
        /// The node whose inbox it came through.
        sender: IpAddr,
        /// Why it does not belong here.
        reason: &'static str,
    },
}

/// Errors of the two-tier protocol.
///
/// # Examples
///
/// ```
/// use url_dedup_two_tier::Error;
///
/// let e = Error::UnknownNode("10.9.9.9".parse().unwrap());
/// assert_eq!(e.to_string(), "10.9.9.9 is not a node of the topology");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Redis failed or stayed unreachable for the whole retry budget.
    #[error(transparent)]
    Redis(#[from] url_dedup_redis::Error),
    /// The topology is not usable (duplicate addresses, no hosts, too many networks, ...).
    #[error("invalid topology: {0}")]
    Topology(String),
    /// The address names no node of the topology, or a node of another role.
    #[error("{0} is not a node of the topology")]
    UnknownNode(IpAddr),
    /// Input that may not enter the system (an over-long URL handed to
    /// [`LocalHost::discover`](crate::LocalHost::discover), ...).
    #[error(transparent)]
    Frame(#[from] FrameError),
    /// Redis answered in a shape our scripts never produce: the keys were written by
    /// something else.
    #[error("unexpected data in redis at {key}: {detail}")]
    Corrupt {
        /// The key.
        key: String,
        /// What was wrong.
        detail: String,
    },
}

/// Results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
