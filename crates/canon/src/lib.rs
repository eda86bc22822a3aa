//! URL canonicalization for crawlers: one string per resource, before any filter is asked.
//!
//! Two URLs that name the same page must reach a deduplication filter as the same bytes, or
//! the filter sees two new URLs. [`Canonicalizer`] parses with the WHATWG URL Standard (the
//! `url` crate, as browsers do), normalizes per RFC 3986 section 6, and applies the crawler
//! options of a [`Policy`].
//!
//! # Quick start
//!
//! ```
//! use url_dedup_canon::Canonicalizer;
//!
//! let canon = Canonicalizer::default();
//! assert_eq!(
//!     canon.canonicalize("HTTP://Example.COM:80/./news/../a%2fb/%7Ebob?utm_source=feed&b=2&a=1#top")?,
//!     "http://example.com/a%2Fb/~bob?a=1&b=2",
//! );
//! # Ok::<(), url_dedup_canon::CanonError>(())
//! ```
//!
//! # What is normalized
//!
//! Always (RFC 3986 section 6, none of which changes the resource):
//!
//! * scheme and host lower-cased; internationalized hosts converted to punycode (IDNA/UTS 46);
//!   IPv4 addresses in their dotted-decimal form, IPv6 in their compressed form;
//! * default ports removed (`:80` for http, `:443` for https);
//! * dot segments resolved (`/a/./b/../c` is `/a/c`) and an empty path written `/`;
//! * percent-encoding: hex digits in upper case, octets of unreserved characters
//!   (`A-Z a-z 0-9 - . _ ~`) decoded, reserved and other octets never decoded; characters the
//!   WHATWG parser encodes (spaces, non-ASCII, ...) encoded.
//!
//! Policy options, each on or off ([`Policy`] documents the defaults): remove the fragment,
//! sort query parameters (stable), drop an empty query, remove tracking parameters
//! (`utm_*`, `gclid`, `fbclid`, `mc_eid`, ... configurable), remove session-id query and path
//! parameters, fold `www.`, a trailing-slash policy, fold `http` into `https`, lower-case the
//! path, and a length limit.
//!
//! # Session ids: remove only what cannot name a page
//!
//! A dropped parameter that names a page loses the page, so session ids are removed by a
//! two-part rule:
//!
//! * names used for nothing but sessions ([`ParamList::session`]: `jsessionid`, `phpsessid`,
//!   `aspsessionid*`, `cfid`, `cftoken`, ...) are removed whatever their value;
//! * short names that sites also use for content ([`ParamList::session_token`]: `sid`, `s`,
//!   `session`, ...) are removed only when the value [looks like a session
//!   token](looks_like_session_token): 16 or more letters and digits, both present, with a
//!   change between digits, lower and upper case about every three bytes.
//!   `sid=01/05/17/222314` (a Slashdot story), `sid=123` (PHP-Nuke) and `s=canonicalization`
//!   (a search) stay; `sid=3f2a9c8e1b7d4a6f0e5c2b9a8d7f6e1c` goes.
//!
//! ```
//! use url_dedup_canon::Canonicalizer;
//!
//! let canon = Canonicalizer::default();
//! let story = "https://yro.slashdot.org/article.pl?sid=01/05/17/222314";
//! assert_eq!(canon.canonicalize(story)?, story);
//! assert_eq!(
//!     canon.canonicalize("http://forum.example/t.php?sid=3f2a9c8e1b7d4a6f0e5c2b9a8d7f6e1c&t=4")?,
//!     "http://forum.example/t.php?t=4",
//! );
//! # Ok::<(), url_dedup_canon::CanonError>(())
//! ```
//!
//! # The cheap path
//!
//! Most links a crawler extracts are already canonical. Before parsing, a single pass over
//! the bytes checks whether the input is in a plain canonical form; if so the input itself is
//! returned as [`Cow::Borrowed`](std::borrow::Cow::Borrowed), with no parse and no
//! allocation. The check is conservative: inputs it cannot prove canonical (IPv6 and
//! non-decimal IPv4 hosts, punycode, user info, unusual characters) take the full path, which is
//! always correct.
//! [`Canonicalizer::canonicalize_into`] writes into a reusable `String` instead, for loops
//! that should not allocate per URL.
//!
//! Measured with `cargo bench -p url-dedup-benches --bench canon` (two runs, ratios within
//! each run; figures in [`docs/benchmarks.md`](https://github.com/url-dedup/url-dedup/blob/main/docs/benchmarks.md)): on already-canonical URLs 3.6–3.7 times the
//! rate of a bare `url::Url::parse`, on messy ones 0.60–0.61 of it, and faster than the
//! `urlnorm` crate on both.
//!
//! # Errors
//!
//! Input that is not an absolute `http`/`https` URL, is longer than the policy's limit, or
//! that the WHATWG parser rejects yields a [`CanonError`] naming the reason. Nothing panics
//! on any input (property-tested and fuzzed).
//!
//! # Choices where standards differ
//!
//! * WHATWG, not RFC 3986, decides parsing: it is what browsers (and so the web's links)
//!   follow, e.g. `\` is a path separator in `http` URLs and `%2e` segments are dot segments.
//! * Sorting keeps repeated names in their order (`a=2&a=1` stays): lists often depend on it.
//! * Google Safe Browsing's rules (repeated unescaping, host-dot folding) are for matching
//!   against blocklists, not for fetching; `tests/canonicalization_examples.rs` states per
//!   example where the crawler policy follows them and why not elsewhere. The `safe-browsing`
//!   convention below follows them all.
//!
//! # Named conventions
//!
//! When URLs must match another project's, a [`Convention`] reproduces it exactly, each scored
//! against that project's own published test vectors (see [`conventions`]): `w3lib` (Scrapy's
//! `canonicalize_url`), `safe-browsing` (Google Safe Browsing), `ia` (the Internet Archive's
//! canonicalizer) and `surt` (SURT keys of CDX indexes, also as [`surt()`]).
//!
//! ```
//! use url_dedup_canon::{Convention, surt};
//!
//! let canon = "w3lib".parse::<Convention>()?.canonicalizer();
//! assert_eq!(canon.canonicalize("http://www.example.com/do?q=a space&a=1")?,
//!     "http://www.example.com/do?a=1&q=a+space");
//! assert_eq!(surt("http://www.archive.org/goo/?b&a")?, "org,archive)/goo?a&b");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod already_canonical;
mod canonicalizer;
pub mod conventions;
mod error;
mod param_list;
mod path;
mod percent;
mod policy;
mod query;
mod session_token;

pub use canonicalizer::Canonicalizer;
pub use conventions::surt::surt;
pub use conventions::{Convention, Rules, UnknownConvention};
pub use error::CanonError;
pub use param_list::ParamList;
pub use policy::{Policy, TrailingSlash};
pub use session_token::looks_like_session_token;
#[cfg(test)]
mod properties;
