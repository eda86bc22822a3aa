#![doc = include_str!("../README.md")]
//!
//! # Overview
//!
//! Is this page one we fetched already, or nearly?
//!
//! Two URLs often serve one page: print views, session tokens, sort orders, `index.html`.
//! What a crawler fetched tells them apart from distinct pages, if it can compare pages in a
//! way that ignores what changes on every fetch (a clock, a counter, a "recent changes" box,
//! the navigation). This crate gives each page two fingerprints:
//!
//! * an **exact** fingerprint ([`ContentDigest`], 128 bits) of its main content: equal when
//!   the main contents hold the same words in the same blocks, dates and times aside;
//! * a 64-bit **SimHash** ([`SimHash`], Charikar 2002) of the words of the main content:
//!   pages that differ in a few words are a few bits apart.
//!
//! [`Content`] says what the main content is: `nav`, `header`, `footer`, `aside`, scripts,
//! hidden elements and the usual sidebar and menu containers are dropped, the `main` element
//! (or `article`s) is kept when the page has one, and dates, times and "5 minutes ago" read as
//! placeholders. [`NearIndex`] finds every SimHash within `k` bits of a query without a scan
//! (Manku, Jain and Das Sarma, WWW 2007: `k = 3` over 64 bits), and saves itself in the
//! workspace's checksummed snapshot format. With the `redis` feature, `RedisNearIndex` keeps
//! the same tables in Redis for the processes of a shared crawl.
//!
//! # Example
//!
//! ```
//! use url_dedup_fingerprint::{Fingerprinter, NearIndex};
//!
//! let f = Fingerprinter::new();
//! let article = "<main><h1>Release notes</h1>\
//!     <p>This release fixes the parser, which read some tags twice, and adds three options to \
//!     the command line, with tests for each of them. The guide explains how the options work \
//!     together, and which of them a crawl of a large site needs most.</p>\
//!     <p>Thanks to everyone who reported problems and sent patches for this release: the \
//!     next one will bring the changes to the index that many of you asked for.</p></main>";
//! let page = |extra: &str| format!("<html><body><nav>Home | Blog</nav>{article}{extra}</body></html>");
//!
//! let first = f.fingerprint(page("<footer>Generated 2024-05-01 12:00</footer>").as_bytes());
//! let again = f.fingerprint(page("<footer>Generated 2024-05-02 08:13</footer>").as_bytes());
//! assert_eq!(first.exact, again.exact); // the same page
//!
//! let mut index = NearIndex::new(3)?;
//! index.insert(first.simhash);
//! let edited = f.fingerprint(page("").replace("three", "four").as_bytes());
//! assert_ne!(edited.exact, first.exact);
//! assert_eq!(index.nearest(edited.simhash), Some(first.simhash)); // a near duplicate
//! # Ok::<(), url_dedup_fingerprint::IndexError>(())
//! ```
//!
//! # Memory
//!
//! A [`PageFingerprint`] is 32 bytes. A [`NearIndex`] takes `8 * tables` bytes per fingerprint
//! over its load factor (0.375 to 0.75): 43 to 85 bytes with the default 4 tables for `k = 3`.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod content;
mod html;
mod index;
mod page;
#[cfg(feature = "redis")]
mod redis_index;
mod simhash;
mod words;

pub use content::{Block, Content, HINTS};
pub use index::{IndexError, MAX_TABLES, NearIndex, SNAPSHOT_KIND};
pub use page::{ContentDigest, Fingerprinter, PageFingerprint};
#[cfg(feature = "redis")]
pub use redis_index::RedisNearIndex;
pub use simhash::{ParseError, SimHash, feature_hash};
pub use words::WordKind;
