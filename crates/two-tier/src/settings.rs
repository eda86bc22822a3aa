use std::time::Duration;

use url_dedup_redis::Backoff;

use crate::error::{Error, Result};
use crate::frame::FrameLimits;

/// Tuning shared by every role; the defaults suit a LAN.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use url_dedup_two_tier::Settings;
///
/// let fast = Settings { lan_timeout: Duration::from_millis(200), wan_timeout: Duration::from_millis(500), ..Settings::default() };
/// fast.validate()?;
/// # Ok::<(), url_dedup_two_tier::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// URLs per frame a host submits (the paper's "一定量").
    pub urls_per_frame: usize,
    /// How long a center waits for its hosts' answers before completing a frame with the
    /// answers it has.
    pub lan_timeout: Duration,
    /// How long a center waits for other networks' answers; longer than `lan_timeout`, since
    /// each of them waits for its own hosts first.
    pub wan_timeout: Duration,
    /// Limits on frames read and built.
    pub limits: FrameLimits,
    /// Frame numbers a host reserves per round trip to its center.
    pub numbers_per_reservation: u64,
    /// Most frames taken from the inboxes in one round trip.
    pub receive_batch: usize,
    /// Longest blocking wait for new work; also the poll interval for URLs written into
    /// `URL_pool` without [`LocalHost::discover`](crate::LocalHost::discover). Must stay below
    /// the backoff's response timeout.
    pub idle_wait: Duration,
    /// How long a node remembers the numbers it handled, to ignore repeated deliveries.
    pub seen_ttl: Duration,
    /// A center moves `task_URL` to the hosts once this many URLs wait there, or whenever its
    /// inboxes are empty.
    pub dispatch_chunk: usize,
    /// Reconnection policy of every link.
    pub backoff: Backoff,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            urls_per_frame: 1_000,
            lan_timeout: Duration::from_secs(2),
            wan_timeout: Duration::from_secs(5),
            limits: FrameLimits::default(),
            numbers_per_reservation: 64,
            receive_batch: 256,
            idle_wait: Duration::from_millis(500),
            seen_ttl: Duration::from_secs(24 * 3600),
            dispatch_chunk: 4_096,
            backoff: Backoff::default(),
        }
    }
}

impl Settings {
    /// Checks that the values fit together.
    ///
    /// # Errors
    ///
    /// [`Error::Topology`] naming the first setting out of range.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_two_tier::Settings;
    ///
    /// let bad = Settings { urls_per_frame: 0, ..Settings::default() };
    /// assert!(bad.validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<()> {
        let problem = if self.urls_per_frame == 0 || self.urls_per_frame > self.limits.max_urls {
            "urls_per_frame must be between 1 and limits.max_urls"
        } else if self.urls_per_frame > 5_000 {
            "urls_per_frame above 5000 would make single Redis scripts block too long"
        } else if self.wan_timeout < self.lan_timeout {
            "wan_timeout must not be shorter than lan_timeout"
        } else if self.receive_batch == 0 || self.dispatch_chunk == 0 {
            "receive_batch and dispatch_chunk must be positive"
        } else if self.idle_wait.is_zero() || self.idle_wait >= self.backoff.response_timeout {
            "idle_wait must be positive and below backoff.response_timeout"
        } else if self.seen_ttl < self.wan_timeout * 2 {
            "seen_ttl must be at least twice wan_timeout"
        } else {
            return Ok(());
        };
        Err(Error::Topology(format!("settings: {problem}")))
    }
}
