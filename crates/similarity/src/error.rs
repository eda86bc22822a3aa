//! Errors from building, restoring and saving similarity filters.

use url_dedup_bloom::snapshot::SnapshotError;

/// What went wrong.
///
/// # Examples
///
/// ```
/// use url_dedup_similarity::{Error, SimilarityFilter};
///
/// let err = SimilarityFilter::builder().expected_items(0).build().unwrap_err();
/// assert!(matches!(err, Error::Sizing(_)));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A parameter is out of range (no features, more than 64, a zero region size, ...).
    #[error("invalid similarity filter parameters: {0}")]
    InvalidParameters(&'static str),
    /// The expected count or rate cannot be turned into a size.
    #[error(transparent)]
    Sizing(#[from] url_dedup_bloom::Error),
    /// A snapshot names a feature that is not built in and was not supplied.
    #[error("unknown feature {0:?} (supply custom features to read this snapshot)")]
    UnknownFeature(String),
    /// The supplied features differ from the ones the snapshot was written with.
    #[error("snapshot was written with features {found:?}, not {expected:?}")]
    FeatureMismatch {
        /// Names of the supplied features.
        expected: Vec<String>,
        /// Names recorded in the snapshot.
        found: Vec<String>,
    },
    /// The bit array could not be allocated.
    #[error("cannot allocate {bytes} bytes for the similarity filter")]
    OutOfMemory {
        /// The size that was requested.
        bytes: u64,
    },
    /// A snapshot could not be read or written.
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    /// Feature hashes made by the [`FeatureHasher`](crate::FeatureHasher) of a filter with
    /// other features, key or feature hash; nothing was recorded.
    #[error("feature hashes made for a filter with other features, key or feature hash")]
    ForeignHashes,
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Self::Snapshot(SnapshotError::Io(e))
    }
}
