//! The feature-similarity URL filter of document 004 (patent "URL deduplication based on
//! similarity comparison"), faithfully, then better.
//!
//! An exact filter folds only URLs it has seen. Crawlers and scanners also drown in URLs
//! that differ yet lead to the same kind of page: `?sort=asc` and `?sort=desc`, session
//! tokens no list knows, calendars that go on forever. Document 004 splits a URL
//! `u1/u2/.../un` into **features** — site `u1`, depth `n`, first directory `u2`, last page
//! `un` — and gives each feature type its own region of a Bloom filter: the MD5 of a value,
//! mod `N`, is one bit. A URL all of whose feature bits are already set is **similar** to
//! what came before and is dropped; otherwise it is **new** and its bits are set.
//!
//! # Quick start
//!
//! ```
//! use url_dedup_similarity::{Preset, SimilarityFilter};
//!
//! let mut filter = SimilarityFilter::builder()
//!     .expected_items(1_000_000) // k
//!     .false_positive_rate(0.01) // P
//!     .preset(Preset::Crawler)
//!     .build()?;
//!
//! for url in [
//!     "https://shop.example/list?sort=price&page=1",
//!     "https://shop.example/list?sort=name&page=1",
//!     "https://shop.example/item/17",
//! ] {
//!     let verdict = filter.check_and_insert(url);
//!     println!("{url}: {}", filter.explain(&verdict));
//! }
//! assert_eq!(filter.len(), 2);
//! # Ok::<(), url_dedup_similarity::Error>(())
//! ```
//!
//! # Faithful, then better
//!
//! [`Preset::Document004`] is exactly the document: four features, each value hashed with MD5
//! (`md-5`) and reduced mod `N` (the 128-bit digest as a big-endian integer), all four bits set
//! means similar. [`Builder::unkeyed`] reproduces the document's plain MD5; what the filter
//! does differently, and why:
//!
//! * **Keyed MD5 by default.** Plain MD5 positions are public, so anyone can pick URLs that
//!   set chosen bits and make a crawler skip real pages. A random 16-byte key is absorbed
//!   before each value (`MD5(key ‖ value)`).
//! * **Sizing that meets the rate asked for.** The document computes `M = -k ln P / (ln 2)^2`
//!   bits ([`url_dedup_bloom::sizing::optimal_bits`]) and derives `N` from `M`. With `F` regions
//!   of `M / F` bits the rate is `(1 - e^(-k/N))^F`, which exceeds `P` whenever `F` is below the
//!   optimal hash count (4 features at 1% give 1.35%). `N` grows from `M / F` until the shared
//!   formula [`url_dedup_bloom::sizing::false_positive_rate`] meets `P`.
//! * **A [`Feature`] trait**, so features can be added and any subset chosen, with
//!   [`builtin`] features beyond the four: query-parameter names, path templates
//!   (`/item/{int}`), file extension, and [scoping](builtin::Scoped) of any feature to the
//!   site or directory.
//! * **[`Preset::Crawler`]**, the recommended preset. Document 004 compares each feature
//!   against all URLs ever seen, so `https://a.example/news/2.html` counts as similar once
//!   any site had a depth-3 URL, a `news` directory and a page called `2.html`.
//!   `docs/similarity.md` measures what that costs on real URL lists.
//! * **Explained verdicts**: [`Verdict`] carries which features matched;
//!   [`SimilarityFilter::explain`] names them.
//! * **Snapshots** in the workspace's versioned, checksummed format
//!   ([`SimilarityFilter::write_to`]), and serde behind the `serde` feature.
//!
//! # Input
//!
//! Features are read from the URL text ([`UrlParts`]), so feed canonical URLs (see the
//! `url-dedup-canon` crate): two spellings of one page then have equal features. A trailing
//! slash adds no segment, the root URL has depth 1, and the fragment is ignored.
//!
//! # Features
//!
//! * `serde`: `Serialize`/`Deserialize` for [`SimilarityFilter`] with built-in features
//!   (tested with postcard and bincode 2).
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod builtin;
mod error;
mod feature;
mod filter;
mod persist;
mod preset;
#[cfg(feature = "serde")]
mod serde_impl;
mod url_parts;
mod verdict;

pub use error::Error;
pub use feature::Feature;
pub use filter::{Builder, MAX_FEATURES, SimilarityFilter};
pub use preset::Preset;
pub use url_parts::UrlParts;
pub use verdict::{Explanation, Matches, Verdict};
