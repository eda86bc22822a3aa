//! A segmented Bloom filter for URL deduplication: every URL's bits fall inside one segment
//! (by default one 64-byte cache line), concurrent crawler threads are each told "new" exactly
//! once per URL, batches overlap their cache misses, and segments are the unit of storage,
//! transfer and incremental backup.
//!
//! Implements the distributed filter of source document 003 (a Bloom bit vector split into
//! segments stored under different keys, each guarded on its own), with the same filter logic
//! over memory here and over Redis in `url-dedup-redis`.
//!
//! # Quick start
//!
//! ```
//! use url_dedup_segmented::SegmentedBloomFilter;
//!
//! let seen = SegmentedBloomFilter::builder()
//!     .expected_items(10_000_000)
//!     .false_positive_rate(0.01)
//!     .build()?;
//! // 512-bit segments need ~9.9 bits per URL for 1% (a classic filter: 9.6).
//! assert!(seen.bits() as f64 / 1e7 < 10.0);
//!
//! for url in ["https://example.com/", "https://example.com/about", "https://example.com/"] {
//!     if seen.check_and_insert(url) {
//!         // new: crawl it
//!     }
//! }
//! // Batches: one answer per URL, as if inserted one by one, several times faster.
//! let new = seen.check_and_insert_batch(&["https://example.com/", "https://example.com/faq"]);
//! assert_eq!(new, [false, true]);
//! # Ok::<(), url_dedup_segmented::Error>(())
//! ```
//!
//! # Pieces
//!
//! * [`SegmentedBloomFilter`]: the filter; `&self` everywhere, `Send + Sync`.
//! * [`Layout`] and [`Probe`]: the filter logic as plain values — which segment
//!   ([`Layout::probe`]) and which bit offsets inside it ([`Layout::offsets`]) — for stores on
//!   other machines to reproduce exactly.
//! * [`bit_order`]: offset `o` is bit `7 - o % 8` of byte `o / 8`, Redis's numbering, so a
//!   segment exported from memory means the same bits in a Redis string.
//! * [`SegmentStore`]: where segments live; one atomic test-and-set per probe, many probes per
//!   call. [`MemoryStore`] is the in-memory one.
//! * Snapshots (`write_to`/`read_from`, kind `SEGMENTED`), segment exports and incremental
//!   checkpoints (`export_segments`/`import_segments`/`checkpoint`, kind `SEGMENTS`), in the
//!   workspace's versioned, checksummed format.
//!
//! # Features
//!
//! * `serde`: `Serialize`/`Deserialize` for the in-memory filter, [`Layout`] and [`Probe`].
#![deny(missing_docs)]
#![deny(unsafe_code)]

mod batch;
pub mod bit_order;
mod builder;
mod error;
mod filter;
mod layout;
mod memory;
mod persist;
mod prefetch;
#[cfg(feature = "serde")]
mod serde_impl;
mod store;
mod stripes;

pub use builder::Builder;
pub use error::Error;
pub use filter::SegmentedBloomFilter;
pub use layout::{
    DEFAULT_SEGMENT_BITS, Layout, MAX_SEGMENT_BITS, MIN_SEGMENT_BITS, Offsets, Probe,
};
pub use memory::MemoryStore;
pub use store::SegmentStore;
