//! What a [`Canonicalizer`](crate::Canonicalizer) changes beyond RFC 3986 section 6.

use crate::{ParamList, Rules, looks_like_session_token};

/// What to do with a slash at the end of a path.
///
/// # Examples
///
/// ```
/// use url_dedup_canon::{Canonicalizer, Policy, TrailingSlash};
///
/// let mut policy = Policy::default();
/// policy.trailing_slash = TrailingSlash::Remove;
/// let canon = Canonicalizer::new(policy);
/// assert_eq!(canon.canonicalize("https://example.com/docs/")?, "https://example.com/docs");
/// assert_eq!(canon.canonicalize("https://example.com/")?, "https://example.com/");
/// # Ok::<(), url_dedup_canon::CanonError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TrailingSlash {
    /// Leave paths as they are: `/docs` and `/docs/` stay different (the default, because
    /// servers may answer them differently).
    #[default]
    Keep,
    /// Remove every trailing slash except the root's: `/docs//` becomes `/docs`.
    Remove,
    /// Add a slash to a path whose last segment has no dot (looks like a directory):
    /// `/docs` becomes `/docs/`, `/page.html` is left alone.
    AddToDirectories,
}

/// The options of a [`Canonicalizer`](crate::Canonicalizer), each on or off.
///
/// RFC 3986 section 6 normalizations (case of scheme and host, IDNA, default ports, dot
/// segments, empty path, percent-encoding) are always applied; they never change which
/// resource a URL names. The fields below are the crawler options, which trade a small risk of
/// merging two different resources for many fewer duplicates.
///
/// [`Policy::default`] is the recommended crawler policy; [`Policy::rfc3986`] applies only the
/// RFC's normalizations and removes fragments.
///
/// # Examples
///
/// ```
/// use url_dedup_canon::{Canonicalizer, Policy};
///
/// let mut policy = Policy::default();
/// policy.fold_www = true;
/// let canon = Canonicalizer::new(policy);
/// assert_eq!(
///     canon.canonicalize("HTTP://WWW.Example.com:80/a/./b/../c?utm_source=x&b=2&a=1#top")?,
///     "http://example.com/a/c?a=1&b=2",
/// );
/// # Ok::<(), url_dedup_canon::CanonError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Policy {
    /// Remove the `#fragment`, which is never sent to the server. Default: on.
    pub remove_fragment: bool,
    /// Sort query parameters by name, keeping the order of parameters with the same name (a
    /// stable sort: `a=2&a=1` is not reordered, since repeated names are often lists).
    /// Default: on.
    pub sort_query: bool,
    /// Remove a query that is empty (a bare `?`), or that becomes empty once parameters are
    /// removed. Default: on.
    pub drop_empty_query: bool,
    /// Remove query parameters named in [`Policy::tracking_params`]. Default: on.
    pub remove_tracking_params: bool,
    /// Names of tracking parameters; see [`ParamList::tracking`] for the default list.
    pub tracking_params: ParamList,
    /// Remove session ids from the query and from path parameters (`;jsessionid=...`):
    /// parameters named in [`Policy::session_params`] whatever their value, and parameters
    /// named in [`Policy::session_token_params`] when their value
    /// [looks like a session token](crate::looks_like_session_token). Default: on.
    pub remove_session_params: bool,
    /// Names used for nothing but session ids, removed whatever their value; see
    /// [`ParamList::session`] for the default list.
    pub session_params: ParamList,
    /// Names that some sites use for session ids and others for content (`sid` is the story
    /// id of Slash and PHP-Nuke sites, `s` a search word), removed only when the value looks
    /// like a session token; see [`ParamList::session_token`] for the default list.
    pub session_token_params: ParamList,
    /// Remove leading `www.` labels from host names (`www.example.com` becomes `example.com`),
    /// as long as a dot remains. Default: off, because a few sites serve different content
    /// on the two hosts.
    pub fold_www: bool,
    /// What to do with trailing slashes. Default: [`TrailingSlash::Keep`].
    pub trailing_slash: TrailingSlash,
    /// Treat `http` and `https` as one: `http` URLs are rewritten to `https` (and port 443 then
    /// becomes the default port). Default: off.
    pub fold_scheme: bool,
    /// Lower-case the path, for sites known to be case-insensitive (IIS, most Windows
    /// servers). Percent-encoded octets keep their upper-case hex digits. Default: off.
    pub lowercase_path: bool,
    /// Longest URL accepted, in bytes, both as input and as output. Default: 8192, the
    /// request-line buffer of common servers; longer URLs are crawler traps more often than
    /// pages.
    pub max_len: usize,
    /// Which rules apply. Default: [`Rules::Whatwg`], the WHATWG parser and the switches
    /// above. The other rules reproduce a public project exactly and ignore every switch but
    /// `max_len`: [`Policy::w3lib`], [`Policy::safe_browsing`], [`Policy::internet_archive`],
    /// [`Policy::surt`].
    pub rules: Rules,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            remove_fragment: true,
            sort_query: true,
            drop_empty_query: true,
            remove_tracking_params: true,
            tracking_params: ParamList::tracking(),
            remove_session_params: true,
            session_params: ParamList::session(),
            session_token_params: ParamList::session_token(),
            fold_www: false,
            trailing_slash: TrailingSlash::Keep,
            fold_scheme: false,
            lowercase_path: false,
            max_len: 8192,
            rules: Rules::Whatwg,
        }
    }
}

impl Policy {
    /// Only the normalizations of RFC 3986 section 6, plus fragment removal: no query
    /// reordering, no parameter removal, no host or scheme folding.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_canon::{Canonicalizer, Policy};
    ///
    /// let canon = Canonicalizer::new(Policy::rfc3986());
    /// assert_eq!(
    ///     canon.canonicalize("http://example.com/%7euser?b=1&utm_source=x&a=2")?,
    ///     "http://example.com/~user?b=1&utm_source=x&a=2",
    /// );
    /// # Ok::<(), url_dedup_canon::CanonError>(())
    /// ```
    pub fn rfc3986() -> Self {
        Self {
            sort_query: false,
            drop_empty_query: false,
            remove_tracking_params: false,
            remove_session_params: false,
            ..Self::default()
        }
    }

    /// Scrapy's `w3lib.url.canonicalize_url` with its default arguments: query sorted by name
    /// then value with blank values kept, fragment dropped, path and query escapes
    /// normalized, IDNA hosts; see [`conventions::w3lib`](crate::conventions::w3lib).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_canon::{Canonicalizer, Policy};
    ///
    /// let canon = Canonicalizer::new(Policy::w3lib());
    /// assert_eq!(
    ///     canon.canonicalize("http://www.example.com/do?c=3&b=5&b=2&a=50#x")?,
    ///     "http://www.example.com/do?a=50&b=2&b=5&c=3",
    /// );
    /// # Ok::<(), url_dedup_canon::CanonError>(())
    /// ```
    pub fn w3lib() -> Self {
        Self {
            rules: Rules::W3lib,
            ..Self::default()
        }
    }

    /// Google Safe Browsing (and Web Risk) canonicalization: repeated unescaping, one
    /// escaping of controls, spaces, `#`, `%` and non-ASCII, host dots and IPv4 forms, ports
    /// dropped; see [`conventions::safe_browsing`](crate::conventions::safe_browsing).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_canon::{Canonicalizer, Policy};
    ///
    /// let canon = Canonicalizer::new(Policy::safe_browsing());
    /// assert_eq!(canon.canonicalize("http://host/%2525252525252525")?, "http://host/%25");
    /// # Ok::<(), url_dedup_canon::CanonError>(())
    /// ```
    pub fn safe_browsing() -> Self {
        Self {
            rules: Rules::SafeBrowsing,
            ..Self::default()
        }
    }

    /// The Internet Archive's default canonicalizer (`DefaultIAURLCanonicalizer`), written
    /// as a URL: Safe Browsing-style escaping, then lower case, `www\d*.` stripped, session
    /// ids removed, query sorted; see [`conventions::surt`](crate::conventions::surt).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_canon::{Canonicalizer, Policy};
    ///
    /// let canon = Canonicalizer::new(Policy::internet_archive());
    /// assert_eq!(
    ///     canon.canonicalize("http://www34.archive.org/index.html?b=a&b=b&a=b")?,
    ///     "http://archive.org/index.html?a=b&b=a&b=b",
    /// );
    /// # Ok::<(), url_dedup_canon::CanonError>(())
    /// ```
    pub fn internet_archive() -> Self {
        Self {
            rules: Rules::InternetArchive,
            ..Self::default()
        }
    }

    /// SURT keys, as web archives index captures (`org,archive)/goo?a&b`): the Internet
    /// Archive's canonical form with the host reversed; see [`surt`](crate::surt()).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_canon::{Canonicalizer, Policy};
    ///
    /// let canon = Canonicalizer::new(Policy::surt());
    /// assert_eq!(canon.canonicalize("http://archive.org/goo/?b&a")?, "org,archive)/goo?a&b");
    /// # Ok::<(), url_dedup_canon::CanonError>(())
    /// ```
    pub fn surt() -> Self {
        Self {
            rules: Rules::Surt,
            ..Self::default()
        }
    }

    /// Whether any option rewrites the list of query parameters (and so splits the query on
    /// `&` and drops empty pieces).
    pub(crate) fn edits_query(&self) -> bool {
        self.sort_query || self.remove_tracking_params || self.remove_session_params
    }

    /// Whether the query parameter `name=value` is removed.
    pub(crate) fn drops_param(&self, name: &str, value: &str) -> bool {
        (self.remove_tracking_params && self.tracking_params.matches(name))
            || self.drops_session_param(name, value)
    }

    /// Whether the query or path parameter `name=value` is a session id this policy removes.
    pub(crate) fn drops_session_param(&self, name: &str, value: &str) -> bool {
        self.remove_session_params
            && (self.session_params.matches(name)
                || (self.session_token_params.matches(name) && looks_like_session_token(value)))
    }
}
