use url_dedup_bloom::snapshot::SnapshotError;

/// Errors from building, restoring and importing segmented filters.
///
/// Store operations report the store's own error type
/// ([`SegmentStore::Error`](crate::SegmentStore::Error)); this enum covers everything else.
///
/// # Examples
///
/// ```
/// use url_dedup_segmented::{Error, SegmentedBloomFilter};
///
/// let err = SegmentedBloomFilter::builder().expected_items(0).build().unwrap_err();
/// assert!(matches!(err, Error::InvalidParameters(_)));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A size, rate, count or segment index is out of range.
    #[error("invalid segmented filter parameters: {0}")]
    InvalidParameters(&'static str),
    /// A snapshot or segment export does not belong to this filter (other size, hash or key).
    #[error("incompatible segmented filter: {0}")]
    Incompatible(&'static str),
    /// The filter's memory could not be allocated.
    #[error("cannot allocate {bytes} bytes for the filter")]
    OutOfMemory {
        /// The size that was requested.
        bytes: u64,
    },
    /// A snapshot could not be read or written.
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Self::Snapshot(SnapshotError::Io(e))
    }
}

impl From<url_dedup_bloom::Error> for Error {
    fn from(e: url_dedup_bloom::Error) -> Self {
        use url_dedup_bloom::Error as Bloom;
        match e {
            Bloom::InvalidParameters(msg) => Self::InvalidParameters(msg),
            Bloom::Incompatible(msg) => Self::Incompatible(msg),
            Bloom::OutOfMemory { bytes } => Self::OutOfMemory { bytes },
            Bloom::Snapshot(s) => Self::Snapshot(s),
            _ => Self::InvalidParameters("rejected by the shared sizing code"),
        }
    }
}
