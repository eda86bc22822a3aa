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
//! [`Preset::Document004`] with [`RegionSizing::Document004`] and [`Builder::unkeyed`] is
//! exactly the document: four features, each value hashed with plain MD5 (`md-5`) and reduced
//! mod `N` (the 128-bit digest as a big-endian integer), all four bits set means similar. What
//! the filter does differently by default, and why:
//!
//! * **Keyed MD5 by default.** Plain MD5 positions are public, so anyone can pick URLs that
//!   set chosen bits and make a crawler skip real pages. A random 16-byte key is absorbed
//!   before each value (`MD5(key ‖ value)`). [`FeatureHash::SipHash13`] swaps MD5 for the
//!   workspace's keyed SipHash-1-3, which is faster (see [`docs/benchmarks.md`](https://github.com/url-dedup/url-dedup/blob/main/docs/benchmarks.md)).
//! * **Regions sized per feature, one cache line per value.** The document computes
//!   `M = -k ln P / (ln 2)^2` bits ([`url_dedup_bloom::sizing::optimal_bits`]), splits them
//!   into `F` regions of `N = M / F` bits and sets one bit per value; `P` then bounds only URLs
//!   whose `F` values are *all* new. But a new URL usually shares its site, depth and
//!   directory with old ones, and one feature alone tells it apart: that value is taken for
//!   seen at the region's fill rate, `1 - e^(-k/N)` (34% at design load for four features).
//!   [`RegionSizing::Blocked`] (the default) makes each region a blocked Bloom filter for `k`
//!   values at rate `P`: the value's bits all fall in one 512-bit block of the region (one
//!   cache line, one memory access per feature of a URL), placed as the segmented filter
//!   places an item's bits. [`RegionSizing::PerFeature`] makes it a classic Bloom filter
//!   ([`url_dedup_bloom::sizing::Sizing::classic`]), bits anywhere in the region by enhanced
//!   double hashing ([`url_dedup_bloom::Digest::indexes`]): fewer bits, one memory access
//!   per bit. [`RegionSizing::Document004`] keeps the document's layout.
//! * **A [`Feature`] trait**, so features can be added and any subset chosen, with
//!   [`builtin`] features beyond the four: query-parameter names, path templates
//!   (`/item/{int}`), file extension, and [scoping](builtin::Scoped) of any feature to the
//!   site or directory.
//! * **[`Preset::Crawler`]**, the recommended preset. Document 004 compares each feature
//!   against all URLs ever seen, so `https://a.example/news/2.html` counts as similar once
//!   any site had a depth-3 URL, a `news` directory and a page called `2.html`: on a real URL
//!   list 96% of its folds were genuinely different pages. The crawler preset scopes features
//!   to the site, directory or path and adds query keys, path templates and extensions; it
//!   folds URLs that differ only in presentation parameters (`?ref=rss`, `?sort=name`) and
//!   keeps pages told apart by any other parameter, words included (`?ring=caern`).
//!   [`docs/similarity.md`](https://github.com/url-dedup/url-dedup/blob/main/docs/similarity.md) has the measured table, including its memory cost (seven regions:
//!   70 bits per URL at 1% with blocked regions, 67 with classic ones).
//! * **[`Preset::Page`]**: the crawler preset's deciding feature alone. Its other six values
//!   are read from the site and the path, so a URL whose page and query key were seen matches
//!   them too: the same folds from one value per URL, a seventh of the memory and hashing,
//!   with chance folds at the rate the region is sized for (measured in `docs/similarity.md`).
//!   The `url-dedup` command's `--similar` uses it.
//! * **Explained verdicts**: [`Verdict`] carries which features matched;
//!   [`SimilarityFilter::explain`] names them.
//! * **Snapshots** in the workspace's versioned, checksummed format
//!   ([`SimilarityFilter::write_to`]), and serde behind the `serde` feature.
//!
//! # Cost
//!
//! One hash per feature per URL, and with the default [`RegionSizing::Blocked`] one memory
//! access per feature. At low rates (many bits per value) a filter also remembers, in a small
//! table, the values it found set: a site's name, depths, directories and templates recur on
//! nearly every URL of the site and are answered from the table without testing their bits
//! again (same verdicts; [`SimilarityFilter::memory_bytes`] counts the table). Measured with
//! `cargo bench -p url-dedup-benches --bench similarity`
//! ([`docs/benchmarks.md`](https://github.com/url-dedup/url-dedup/blob/main/docs/benchmarks.md)):
//! at 100,000 URLs and 1% the document's preset costs 2.0 times a bare `url::Url::parse` of
//! the same URL, the crawler preset 5.1 times with MD5 and 1.4 times with
//! [`FeatureHash::SipHash13`]; at a million URLs and one in a billion the crawler preset with
//! SipHash costs 3.4 times the workspace's exact growing filter, where classic regions
//! ([`RegionSizing::PerFeature`]) cost 10.3 times; on two real URL lists at one in a billion,
//! fed in batches, 6.8 times. Memory: 9.6 bits per URL for the document's layout at 1%, 10.0
//! per feature with blocked regions (70 for the crawler preset), 9.6 with classic ones.
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
mod feature_hash;
mod filter;
mod growing;
mod hashed;
mod known_values;
mod persist;
mod preset;
mod region_sizing;
#[cfg(feature = "serde")]
mod serde_impl;
mod url_parts;
mod verdict;
mod words;

pub use error::Error;
pub use feature::Feature;
pub use feature_hash::FeatureHash;
pub use filter::{Builder, MAX_FEATURES, SimilarityFilter};
pub use growing::GrowingSimilarityFilter;
pub use hashed::{FeatureHasher, FeatureHashes, HashedUrl};
pub use preset::Preset;
pub use region_sizing::RegionSizing;
pub use url_parts::UrlParts;
pub use verdict::{Explanation, Matches, Verdict};
