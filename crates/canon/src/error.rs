//! Why an input cannot be canonicalized.

/// Why a URL was rejected. Each variant names one reason; the input is never modified.
///
/// # Examples
///
/// ```
/// use url_dedup_canon::{CanonError, Canonicalizer};
///
/// let canon = Canonicalizer::default();
/// assert!(matches!(canon.canonicalize("/relative/path"), Err(CanonError::NotAbsolute)));
/// assert!(matches!(
///     canon.canonicalize("ftp://example.com/"),
///     Err(CanonError::UnsupportedScheme { .. })
/// ));
/// assert!(matches!(canon.canonicalize("http://exa mple.com/"), Err(CanonError::Unparsable(_))));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CanonError {
    /// The input, or its canonical form, is longer than the policy's `max_len`.
    #[error("URL is {len} bytes long, over the limit of {limit} bytes")]
    TooLong {
        /// Length of the input (or of its canonical form), in bytes.
        len: usize,
        /// The policy's limit.
        limit: usize,
    },
    /// The input has no scheme: it is a relative reference, to be resolved against its page
    /// first.
    #[error("not an absolute URL (relative reference without a base)")]
    NotAbsolute,
    /// The input is an absolute URL, but not `http` or `https`.
    #[error("scheme {scheme:?} is not http or https")]
    UnsupportedScheme {
        /// The scheme found, lower-cased.
        scheme: String,
    },
    /// The WHATWG URL parser rejected the input (bad host, bad port, ...).
    #[error("unparsable URL: {0}")]
    Unparsable(#[source] url::ParseError),
    /// Bytes that are not UTF-8, under rules that read only text (all but Safe Browsing's; see
    /// [`Canonicalizer::canonicalize_bytes`](crate::Canonicalizer::canonicalize_bytes)).
    #[error("not valid UTF-8 (of the conventions, only safe-browsing reads other bytes)")]
    NotUtf8,
    /// A named convention rejects the input, as the project it reproduces does (a Safe
    /// Browsing URL without a host, a w3lib port that is not a number, ...).
    #[error("{convention} rejects the URL: {reason}")]
    Convention {
        /// The convention's name (`w3lib`, `safe-browsing`, `surt`).
        convention: &'static str,
        /// What is wrong.
        reason: &'static str,
    },
}
