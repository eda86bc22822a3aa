//! Named conventions: canonical forms that reproduce public projects exactly, for crawlers that
//! share fingerprints, indexes or blocklists with them.
//!
//! | name | reproduces | module |
//! | --- | --- | --- |
//! | `crawler` | this crate's crawler policy ([`Policy::default`]) | the crate root |
//! | `rfc3986` | RFC 3986 section 6 only ([`Policy::rfc3986`]) | the crate root |
//! | `w3lib` | Scrapy's `w3lib.url.canonicalize_url` | [`w3lib`] |
//! | `safe-browsing` | Google Safe Browsing / Web Risk URL canonicalization | [`safe_browsing`] |
//! | `ia` | the Internet Archive's default canonicalizer (`surt` package) | [`surt`] |
//! | `surt` | SURT keys of CDX indexes (`surt.surt`) | [`surt`] |
//!
//! [`docs/canonicalization.md`](https://github.com/url-dedup/url-dedup/blob/main/docs/canonicalization.md) tables each against its source and lists every published test
//! vector a convention does not reproduce, with the reason.

use std::fmt;
use std::str::FromStr;

use crate::{Canonicalizer, Policy};

mod idna;
pub mod safe_browsing;
pub mod surt;
pub mod w3lib;

/// Which rules a [`Policy`] applies.
///
/// # Examples
///
/// ```
/// use url_dedup_canon::{Canonicalizer, Policy, Rules};
///
/// assert_eq!(Policy::default().rules, Rules::Whatwg);
/// let canon = Canonicalizer::new(Policy::w3lib());
/// assert_eq!(canon.canonicalize("http://www.example.com/do?b=&a=2")?, "http://www.example.com/do?a=2&b=");
/// # Ok::<(), url_dedup_canon::CanonError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Rules {
    /// WHATWG parsing, RFC 3986 normalization and the crawler switches of the [`Policy`].
    #[default]
    Whatwg,
    /// Scrapy's `canonicalize_url` with its default arguments ([`w3lib`]).
    W3lib,
    /// Google Safe Browsing canonicalization ([`safe_browsing`]).
    SafeBrowsing,
    /// The Internet Archive's default canonicalizer, as a URL ([`surt`]).
    InternetArchive,
    /// The SURT key of the Internet Archive's canonical form ([`surt`]).
    Surt,
}

/// A named convention, for command lines and configuration files (`--policy w3lib`).
///
/// # Examples
///
/// ```
/// use url_dedup_canon::Convention;
///
/// let convention: Convention = "safe-browsing".parse()?;
/// assert_eq!(convention.to_string(), "safe-browsing");
/// let canon = convention.canonicalizer();
/// assert_eq!(canon.canonicalize("http://www.google.com.../")?, "http://www.google.com/");
/// assert_eq!(Convention::default(), Convention::Crawler);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Convention {
    /// `crawler`: [`Policy::default`], the crawler policy of this crate.
    #[default]
    Crawler,
    /// `rfc3986`: [`Policy::rfc3986`], the RFC's normalizations and no more.
    Rfc3986,
    /// `w3lib`: [`Policy::w3lib`], Scrapy's `canonicalize_url`.
    W3lib,
    /// `safe-browsing`: [`Policy::safe_browsing`], Google Safe Browsing canonicalization.
    SafeBrowsing,
    /// `ia`: [`Policy::internet_archive`], the Internet Archive's default canonicalizer.
    Ia,
    /// `surt`: [`Policy::surt`], SURT keys as in CDX indexes.
    Surt,
}

impl Convention {
    /// Every convention, in the order of the table in [the module docs](self).
    ///
    /// # Examples
    ///
    /// ```
    /// let names: Vec<String> =
    ///     url_dedup_canon::Convention::ALL.iter().map(|c| c.to_string()).collect();
    /// assert_eq!(names, ["crawler", "rfc3986", "w3lib", "safe-browsing", "ia", "surt"]);
    /// ```
    pub const ALL: [Self; 6] = [
        Self::Crawler,
        Self::Rfc3986,
        Self::W3lib,
        Self::SafeBrowsing,
        Self::Ia,
        Self::Surt,
    ];

    /// The name `FromStr` accepts and `Display` writes.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(url_dedup_canon::Convention::Ia.name(), "ia");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Self::Crawler => "crawler",
            Self::Rfc3986 => "rfc3986",
            Self::W3lib => "w3lib",
            Self::SafeBrowsing => "safe-browsing",
            Self::Ia => "ia",
            Self::Surt => "surt",
        }
    }

    /// The policy of this convention.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_canon::{Convention, Policy};
    ///
    /// assert_eq!(Convention::Rfc3986.policy(), Policy::rfc3986());
    /// ```
    pub fn policy(self) -> Policy {
        match self {
            Self::Crawler => Policy::default(),
            Self::Rfc3986 => Policy::rfc3986(),
            Self::W3lib => Policy::w3lib(),
            Self::SafeBrowsing => Policy::safe_browsing(),
            Self::Ia => Policy::internet_archive(),
            Self::Surt => Policy::surt(),
        }
    }

    /// A canonicalizer applying this convention.
    ///
    /// # Examples
    ///
    /// ```
    /// let canon = url_dedup_canon::Convention::Surt.canonicalizer();
    /// assert_eq!(canon.canonicalize("http://www.archive.org/")?, "org,archive)/");
    /// # Ok::<(), url_dedup_canon::CanonError>(())
    /// ```
    pub fn canonicalizer(self) -> Canonicalizer {
        Canonicalizer::new(self.policy())
    }
}

impl fmt::Display for Convention {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A convention name that [`Convention`] does not know.
///
/// # Examples
///
/// ```
/// let err = "scrapy2".parse::<url_dedup_canon::Convention>().unwrap_err();
/// assert!(err.to_string().contains("w3lib"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown convention {name:?}; expected one of crawler, rfc3986, w3lib, safe-browsing, ia, surt"
)]
pub struct UnknownConvention {
    /// The name given.
    pub name: String,
}

impl FromStr for Convention {
    type Err = UnknownConvention;

    /// A name of [`Convention::ALL`], ignoring ASCII case; `_` may stand for `-`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|c| {
                c.name().len() == s.len()
                    && c.name()
                        .bytes()
                        .zip(s.bytes())
                        .all(|(a, b)| a == b.to_ascii_lowercase() || (a == b'-' && b == b'_'))
            })
            .ok_or_else(|| UnknownConvention { name: s.to_owned() })
    }
}
