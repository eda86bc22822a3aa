#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod dedup;
mod error;
mod outcome;

pub use dedup::{Builder, UrlDedup};
pub use error::Error;
pub use outcome::{Explanation, Outcome};

/// The classic Bloom filter and the shared sizing, hashing and snapshot code
/// (crate `url-dedup-bloom`).
pub use url_dedup_bloom as bloom;
/// URL canonicalization (crate `url-dedup-canon`).
pub use url_dedup_canon as canon;
/// The feature-similarity filter of document 004 (crate `url-dedup-similarity`).
#[cfg(feature = "similarity")]
pub use url_dedup_similarity as similarity;
