#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod builder;
mod dedup;
mod error;
mod exact;
mod fingerprints;
mod outcome;
mod prepare;
mod state;

pub use builder::Builder;
pub use dedup::{Decision, UrlDedup};
pub use error::Error;
pub use exact::FilterKind;
pub use outcome::{Explanation, Outcome};
pub use prepare::{KeyDigest, Preparer};

/// The classic Bloom filter and the shared sizing, hashing and snapshot code
/// (crate `url-dedup-bloom`).
pub use url_dedup_bloom as bloom;
/// URL canonicalization (crate `url-dedup-canon`).
pub use url_dedup_canon as canon;
/// The virtual-node partition table and sharded filters (crate `url-dedup-partition`).
pub use url_dedup_partition as partition;
/// The distributed backends on Redis (crate `url-dedup-redis`).
#[cfg(feature = "redis")]
pub use url_dedup_redis as redis;
/// Learned URL rewrite rules (crate `url-dedup-rules`).
#[cfg(feature = "rules")]
pub use url_dedup_rules as rules;
/// The segmented Bloom filter (crate `url-dedup-segmented`).
pub use url_dedup_segmented as segmented;
/// The feature-similarity filter of document 004 (crate `url-dedup-similarity`).
#[cfg(feature = "similarity")]
pub use url_dedup_similarity as similarity;
