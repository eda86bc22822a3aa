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
    /// The similarity filter could not be built or restored.
    #[cfg(feature = "similarity")]
    #[error(transparent)]
    Similarity(#[from] url_dedup_similarity::Error),
    /// A state snapshot is malformed or does not match this configuration.
    #[error("state snapshot: {0}")]
    Snapshot(#[from] url_dedup_bloom::snapshot::SnapshotError),
    /// Bytes that are not UTF-8 given to a deduplicator that canonicalizes URLs.
    #[error("not valid UTF-8 (only a deduplicator without canonicalization compares raw bytes)")]
    NotUtf8,
    /// A state snapshot was written under another configuration (canonicalization policy,
    /// similarity preset, filter kind) than the one asked for; see
    /// [`Builder::accept_config_change`](crate::Builder::accept_config_change).
    #[error(
        "the state was written under another configuration\n  recorded:\n{}  this run:\n{}",
        indent(recorded),
        indent(configured)
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

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Self::Snapshot(url_dedup_bloom::snapshot::SnapshotError::Io(e))
    }
}

/// Each line of `text` indented for an error message.
fn indent(text: &str) -> String {
    text.lines().map(|l| format!("    {l}\n")).collect()
}
