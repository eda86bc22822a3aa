/// Errors from building a [`UrlDedup`](crate::UrlDedup), checking URLs, and snapshots.
///
/// # Examples
///
/// ```
/// use url_dedup::{Error, UrlDedup};
///
/// let dedup = UrlDedup::builder().expected_urls(10).build()?;
/// let err = dedup.check_and_insert("/relative/path").unwrap_err();
/// assert!(matches!(err, Error::InvalidUrl(_)));
/// # Ok::<(), url_dedup::Error>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The input is not an absolute http(s) URL the canonicalizer accepts.
    #[error("invalid URL: {0}")]
    InvalidUrl(#[from] url_dedup_canon::CanonError),
    /// The exact filter could not be built, combined or restored.
    #[error(transparent)]
    Filter(#[from] url_dedup_bloom::Error),
    /// The segmented filter could not be built or restored.
    #[error(transparent)]
    Segmented(#[from] url_dedup_segmented::Error),
    /// The shared filter in Redis failed (unreachable, mismatched parameters, ...).
    #[cfg(feature = "redis")]
    #[error(transparent)]
    Redis(#[from] url_dedup_redis::Error),
    /// The filter's store failed while answering a batch; every URL of the batch carries this.
    #[error("filter store failed: {0}")]
    Store(String),
    /// The shared filter's store could not be reached for its whole retry budget, in a batch
    /// call (each URL carries the message; see [`is_unavailable`](Self::is_unavailable)).
    #[error("filter store failed: {0}")]
    Unavailable(String),
    /// The shared filter's Redis lost data it held (a restart without persistence, a
    /// `FLUSHALL`, a failover to a replica that missed writes): what a batch's URLs carry for
    /// the store's reset, so that a caller can tell it from a passing failure (see
    /// [`is_reset`](Self::is_reset)).
    #[error("{0}")]
    Reset(String),
    /// The similarity filter could not be built or restored.
    #[cfg(feature = "similarity")]
    #[error(transparent)]
    Similarity(#[from] url_dedup_similarity::Error),
    /// A state snapshot is malformed or does not match this configuration.
    #[error("state snapshot: {0}")]
    Snapshot(#[from] url_dedup_bloom::snapshot::SnapshotError),
    /// Bytes that are not UTF-8 given to a deduplicator that canonicalizes URLs (by any
    /// convention but safe-browsing, which reads bytes).
    #[error(
        "not valid UTF-8 (only a deduplicator without canonicalization, or with the \
         safe-browsing convention, takes other bytes)"
    )]
    NotUtf8,
    /// A state snapshot was written under another configuration (canonicalization policy,
    /// similarity preset, filter kind) than the one asked for; see
    /// [`Builder::accept_config_change`](crate::Builder::accept_config_change).
    #[error(
        "the state was written under another configuration\n{}",
        differences(recorded, configured)
    )]
    ConfigMismatch {
        /// What the snapshot records, one `name: value` line each.
        recorded: String,
        /// What this run asks for, in the same form.
        configured: String,
    },
    /// A state snapshot holds components this configuration does not have, or lacks some.
    #[error("state snapshot does not match the configuration: {0}")]
    StateMismatch(&'static str),
}

impl Error {
    /// Whether the shared filter's store lost data it held: carrying on would admit again
    /// URLs it had admitted. A crawler stops, or starts over knowingly.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup::Error;
    ///
    /// assert!(Error::Reset("the shared filter at seen was reset: ...".into()).is_reset());
    /// assert!(!Error::Store("connection refused".into()).is_reset());
    /// ```
    pub fn is_reset(&self) -> bool {
        match self {
            Self::Reset(_) => true,
            #[cfg(feature = "redis")]
            Self::Redis(url_dedup_redis::Error::StoreReset { .. }) => true,
            _ => false,
        }
    }
}

impl Error {
    /// Whether the shared filter's store could not be reached for the whole retry budget: a
    /// caller may try again later; nothing was lost.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup::Error;
    ///
    /// assert!(Error::Unavailable("redis unavailable during contains".into()).is_unavailable());
    /// assert!(!Error::Store("missing answer".into()).is_unavailable());
    /// ```
    pub fn is_unavailable(&self) -> bool {
        match self {
            Self::Unavailable(_) => true,
            #[cfg(feature = "redis")]
            Self::Redis(url_dedup_redis::Error::Unavailable { .. }) => true,
            _ => false,
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Self::Snapshot(url_dedup_bloom::snapshot::SnapshotError::Io(e))
    }
}

/// The `name: value` lines that differ between two configurations, each value cut down to
/// the comma-separated parts that differ when it is long (a canonicalization policy is a long
/// line of which one switch may differ).
fn differences(recorded: &str, configured: &str) -> String {
    let value = |text: &str, name: &str| -> String {
        text.lines()
            .find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(": ")))
            .unwrap_or("not recorded")
            .to_owned()
    };
    let mut names: Vec<&str> = Vec::new();
    for line in recorded.lines().chain(configured.lines()) {
        let name = line.split(": ").next().unwrap_or(line);
        if !names.contains(&name) {
            names.push(name);
        }
    }
    let mut out = String::new();
    for name in names {
        let (was, now) = (value(recorded, name), value(configured, name));
        if was == now {
            continue;
        }
        let short = |v: &str, other: &str| {
            if other.starts_with("none") && v.starts_with("Policy") {
                "URLs canonicalized".to_owned()
            } else {
                v.to_owned()
            }
        };
        let (was, now) = (short(&was, &now), short(&now, &was));
        let (was, now) = if was.len() + now.len() > 160 {
            let parts = |v: &str| v.split(", ").map(str::to_owned).collect::<Vec<_>>();
            let (a, b) = (parts(&was), parts(&now));
            (
                a.iter()
                    .filter(|p| !b.contains(p))
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", "),
                b.iter()
                    .filter(|p| !a.contains(p))
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", "),
            )
        } else {
            (was, now)
        };
        out.push_str(&format!("  {name}: recorded {was}; this run {now}\n"));
    }
    out
}
