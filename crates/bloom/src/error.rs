use crate::snapshot::SnapshotError;

/// Errors from building, combining and restoring filters.
///
/// # Examples
///
/// ```
/// use url_dedup_bloom::{BloomFilter, Error};
///
/// let err = BloomFilter::builder().expected_items(0).build().unwrap_err();
/// assert!(matches!(err, Error::InvalidParameters(_)));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A size, rate or count is out of range.
    #[error("invalid filter parameters: {0}")]
    InvalidParameters(&'static str),
    /// Two filters (or a filter and a snapshot) cannot be combined.
    #[error("incompatible filters: {0}")]
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
