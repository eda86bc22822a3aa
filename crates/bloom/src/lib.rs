//! The classic K-hash Bloom filter of the url-dedup workspace, and the pieces every other
//! filter in the workspace shares.
//!
//! A crawler asks one question per discovered URL: *have I seen this before?* A Bloom filter
//! answers it in a few bits per URL, never forgets a URL (no false negatives), and wrongly says
//! "seen" for a small, chosen fraction of new URLs (false positives).
//!
//! # Quick start
//!
//! ```
//! use url_dedup_bloom::BloomFilter;
//!
//! // 10 million URLs at 1% false positives: 11.4 MiB, 7 hashes per URL.
//! let mut seen = BloomFilter::builder()
//!     .expected_items(10_000_000)
//!     .false_positive_rate(0.01)
//!     .build()?;
//! assert_eq!(seen.hashes(), 7);
//!
//! for url in ["https://example.com/", "https://example.com/about", "https://example.com/"] {
//!     if seen.check_and_insert(url) {
//!         println!("crawl {url}");
//!     }
//! }
//! assert_eq!(seen.len(), 2);
//! # Ok::<(), url_dedup_bloom::Error>(())
//! ```
//!
//! # What is inside
//!
//! * [`BloomFilter`]: single-owner filter on a `bitvec` bit vector.
//! * [`AtomicBloomFilter`]: the same over atomic words, shared between threads by `&self`.
//! * [`Builder`]: sizing from expected items and false-positive rate, or explicit bits and
//!   hashes; hasher and key.
//! * [`sizing`]: the formulas (classic and blocked) that every crate of the workspace uses.
//! * [`hash`]: keyed SipHash-1-3 (default) and XXH3 hashers, enhanced double hashing with
//!   multiply-shift reduction and 64-bit positions.
//! * [`snapshot`]: the versioned, checksummed binary format shared by all persistent structures.
//!
//! # Design choices
//!
//! * **One keyed hash per item.** SipHash-1-3 with a random 128-bit key yields 128 bits; the `k`
//!   positions come from enhanced double hashing of its halves, so the cost of hashing does not
//!   grow with `k`, and crafted URLs cannot target bits without the key.
//! * **64-bit positions** and multiply-shift reduction: correct beyond 2^32 bits, no division.
//! * **Items are bytes.** Hashing is defined on the item's bytes, not on Rust's `Hash` trait, so
//!   snapshots and shared filters stay valid across Rust versions and other languages.
//! * **Snapshots are versioned and checksummed**, with the payload as bulk little-endian words;
//!   damaged input yields an [`Error`], never a panic or a huge allocation.
//!
//! # Features
//!
//! * `serde`: `Serialize`/`Deserialize` for filters, keys and sizes (tested with postcard and
//!   bincode 2).
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod atomic;
mod builder;
mod error;
mod filter;
pub mod hash;
#[cfg(feature = "serde")]
mod serde_impl;
mod shape;
pub mod sizing;
pub mod snapshot;

pub use atomic::AtomicBloomFilter;
pub use builder::Builder;
pub use error::Error;
pub use filter::BloomFilter;
pub use hash::{Digest, HashKey, ItemHasher, SipHash13, Xxh3};
