//! The [`Canonicalizer`]: the fast check for inputs already canonical, and the full path
//! through the WHATWG parser for the rest.

use std::borrow::Cow;

use url::{Host, Url};

use crate::conventions::{safe_browsing, surt, w3lib};
use crate::{CanonError, Policy, Rules, already_canonical, path, percent, query};

/// Turns URLs into their canonical form under a [`Policy`].
///
/// Cheap to share (`&self` everywhere, `Send + Sync`); build one per policy and reuse it.
///
/// # Examples
///
/// ```
/// use std::borrow::Cow;
/// use url_dedup_canon::Canonicalizer;
///
/// let canon = Canonicalizer::default();
/// let messy = canon.canonicalize("HTTPS://Example.COM:443/a/../b/%7euser?utm_medium=x&q=1#frag")?;
/// assert_eq!(messy, "https://example.com/b/~user?q=1");
///
/// // Already canonical: the input itself comes back, nothing is allocated.
/// let clean = canon.canonicalize("https://example.com/b/~user?q=1")?;
/// assert!(matches!(clean, Cow::Borrowed(_)));
/// # Ok::<(), url_dedup_canon::CanonError>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Canonicalizer {
    policy: Policy,
}

impl Canonicalizer {
    /// A canonicalizer applying `policy`.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_canon::{Canonicalizer, Policy};
    ///
    /// let canon = Canonicalizer::new(Policy::rfc3986());
    /// assert!(!canon.policy().sort_query);
    /// ```
    pub fn new(policy: Policy) -> Self {
        Self { policy }
    }

    /// The policy this canonicalizer applies.
    ///
    /// # Examples
    ///
    /// ```
    /// let canon = url_dedup_canon::Canonicalizer::default();
    /// assert_eq!(canon.policy().max_len, 8192);
    /// ```
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The canonical form of `input`: borrowed when `input` already is canonical, owned
    /// otherwise.
    ///
    /// The result is a fixed point: canonicalizing it again returns it unchanged (and
    /// borrowed, on the fast path, for all but unusual hosts and characters).
    ///
    /// # Errors
    ///
    /// [`CanonError::TooLong`] before any parsing when `input` exceeds the policy's
    /// `max_len` (and when its canonical form does); [`CanonError::NotAbsolute`] for a
    /// relative reference; [`CanonError::UnsupportedScheme`] for schemes other than `http`
    /// and `https`; [`CanonError::Unparsable`] for anything the WHATWG parser rejects.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_canon::{CanonError, Canonicalizer};
    ///
    /// let canon = Canonicalizer::default();
    /// assert_eq!(canon.canonicalize("http://example.com")?, "http://example.com/");
    /// assert_eq!(
    ///     canon.canonicalize("http://bücher.example/Straße?PHPSESSID=42")?,
    ///     "http://xn--bcher-kva.example/Stra%C3%9Fe",
    /// );
    /// let long = format!("http://example.com/{}", "a".repeat(9000));
    /// assert!(matches!(canon.canonicalize(&long), Err(CanonError::TooLong { .. })));
    /// # Ok::<(), CanonError>(())
    /// ```
    pub fn canonicalize<'a>(&self, input: &'a str) -> Result<Cow<'a, str>, CanonError> {
        let limit = self.policy.max_len;
        if input.len() > limit {
            return Err(CanonError::TooLong {
                len: input.len(),
                limit,
            });
        }
        if already_canonical::check(input, &self.policy) {
            return Ok(Cow::Borrowed(input));
        }
        let mut out = String::with_capacity(input.len() + 8);
        self.canonicalize_by_rules(input, &mut out)?;
        if out.len() > limit {
            return Err(CanonError::TooLong {
                len: out.len(),
                limit,
            });
        }
        if out == input {
            return Ok(Cow::Borrowed(input));
        }
        Ok(Cow::Owned(out))
    }

    /// The canonical form of `input` given as bytes: UTF-8 input as
    /// [`canonicalize`](Self::canonicalize) gives it; other bytes only under rules that read
    /// bytes, [`Rules::SafeBrowsing`] (its published examples include a raw `0x80` octet, and
    /// its canonical form escapes every octet outside printable ASCII).
    ///
    /// # Errors
    ///
    /// As [`canonicalize`](Self::canonicalize); [`CanonError::NotUtf8`] for bytes that are not
    /// UTF-8 under other rules.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_canon::{CanonError, Canonicalizer, Policy};
    ///
    /// let latin1 = b"http://example.com/caf\xe9";
    /// let safe_browsing = Canonicalizer::new(Policy::safe_browsing());
    /// assert_eq!(&*safe_browsing.canonicalize_bytes(latin1)?, b"http://example.com/caf%E9");
    /// let crawler = Canonicalizer::default();
    /// assert_eq!(crawler.canonicalize_bytes(latin1), Err(CanonError::NotUtf8));
    /// assert_eq!(&*crawler.canonicalize_bytes(b"HTTP://Example.com")?, b"http://example.com/");
    /// # Ok::<(), CanonError>(())
    /// ```
    pub fn canonicalize_bytes<'a>(&self, input: &'a [u8]) -> Result<Cow<'a, [u8]>, CanonError> {
        if let Ok(text) = std::str::from_utf8(input) {
            return Ok(match self.canonicalize(text)? {
                Cow::Borrowed(b) => Cow::Borrowed(b.as_bytes()),
                Cow::Owned(o) => Cow::Owned(o.into_bytes()),
            });
        }
        if self.policy.rules != Rules::SafeBrowsing {
            return Err(CanonError::NotUtf8);
        }
        let limit = self.policy.max_len;
        if input.len() > limit {
            return Err(CanonError::TooLong {
                len: input.len(),
                limit,
            });
        }
        let canonical = safe_browsing::SafeBrowsingUrl::parse_bytes(input)?.to_string();
        if canonical.len() > limit {
            return Err(CanonError::TooLong {
                len: canonical.len(),
                limit,
            });
        }
        Ok(Cow::Owned(canonical.into_bytes()))
    }

    /// Writes the canonical form of `input` into `out` (cleared first), reusing its buffer:
    /// after warm-up a loop over URLs allocates nothing of its own, canonical or not (the
    /// WHATWG parser still allocates for inputs that need it).
    ///
    /// Returns whether `input` was already canonical. On error `out` is left empty.
    ///
    /// # Errors
    ///
    /// As [`Canonicalizer::canonicalize`].
    ///
    /// # Examples
    ///
    /// ```
    /// let canon = url_dedup_canon::Canonicalizer::default();
    /// let mut out = String::new();
    /// for url in ["https://a.example/x", "HTTPS://A.example:443/x#top"] {
    ///     canon.canonicalize_into(url, &mut out)?;
    ///     assert_eq!(out, "https://a.example/x");
    /// }
    /// assert!(canon.canonicalize_into("ftp://a.example/", &mut out).is_err());
    /// assert!(out.is_empty());
    /// # Ok::<(), url_dedup_canon::CanonError>(())
    /// ```
    pub fn canonicalize_into(&self, input: &str, out: &mut String) -> Result<bool, CanonError> {
        out.clear();
        let limit = self.policy.max_len;
        if input.len() > limit {
            return Err(CanonError::TooLong {
                len: input.len(),
                limit,
            });
        }
        if already_canonical::check(input, &self.policy) {
            out.push_str(input);
            return Ok(true);
        }
        if let Err(e) = self.canonicalize_by_rules(input, out) {
            out.clear();
            return Err(e);
        }
        if out.len() > limit {
            let len = out.len();
            out.clear();
            return Err(CanonError::TooLong { len, limit });
        }
        Ok(out == input)
    }

    /// Whether `input` is already canonical under this policy (equivalent to
    /// `canonicalize(input)` returning `input` itself).
    ///
    /// # Examples
    ///
    /// ```
    /// let canon = url_dedup_canon::Canonicalizer::default();
    /// assert!(canon.is_canonical("https://example.com/a?x=1&y=2"));
    /// assert!(!canon.is_canonical("https://example.com/a?y=2&x=1"));
    /// assert!(!canon.is_canonical("not a url"));
    /// ```
    pub fn is_canonical(&self, input: &str) -> bool {
        matches!(self.canonicalize(input), Ok(Cow::Borrowed(_)))
    }

    /// Appends the canonical form of `input` under the policy's [`Rules`] to `out`.
    fn canonicalize_by_rules(&self, input: &str, out: &mut String) -> Result<(), CanonError> {
        let canonical = match self.policy.rules {
            Rules::Whatwg => return self.canonicalize_slow(input, out),
            Rules::W3lib => w3lib::canonicalize(input)?,
            Rules::SafeBrowsing => safe_browsing::canonicalize(input)?,
            Rules::InternetArchive => surt::Surt::default().canonicalize(input)?,
            Rules::Surt => surt::surt(input)?,
        };
        out.push_str(&canonical);
        Ok(())
    }

    /// Parses with the WHATWG parser (case, IDNA, IPv4 forms, default ports, dot segments,
    /// empty path, encoding of illegal characters), then applies what the parser leaves
    /// alone: percent-encoding normalization and the policy's crawler options.
    pub(crate) fn canonicalize_slow(
        &self,
        input: &str,
        out: &mut String,
    ) -> Result<(), CanonError> {
        let policy = &self.policy;
        let url = Url::parse(input).map_err(|e| match e {
            url::ParseError::RelativeUrlWithoutBase => CanonError::NotAbsolute,
            other => CanonError::Unparsable(other),
        })?;
        let scheme = match url.scheme() {
            "http" if policy.fold_scheme => "https",
            s @ ("http" | "https") => s,
            other => {
                return Err(CanonError::UnsupportedScheme {
                    scheme: other.to_owned(),
                });
            }
        };
        out.push_str(scheme);
        out.push_str("://");
        let username = url.username();
        if !username.is_empty() || url.password().is_some() {
            out.push_str(username);
            if let Some(password) = url.password() {
                out.push(':');
                out.push_str(password);
            }
            out.push('@');
        }
        match url.host() {
            Some(Host::Domain(mut domain)) => {
                if policy.fold_www {
                    // Every leading `www.`: stripping one would leave `www.www.a.com` for a
                    // second pass to change, breaking idempotence.
                    while let Some(rest) = domain.strip_prefix("www.")
                        && rest.contains('.')
                    {
                        domain = rest;
                    }
                }
                out.push_str(domain);
            }
            Some(_) => out.push_str(url.host_str().unwrap_or_default()),
            None => return Err(CanonError::Unparsable(url::ParseError::EmptyHost)),
        }
        let default_port = if scheme == "https" { 443 } else { 80 };
        if let Some(port) = url.port().filter(|&p| p != default_port) {
            out.push(':');
            out.push_str(&port.to_string());
        }
        let path_start = out.len();
        percent::normalize_into(url.path(), out, policy.lowercase_path);
        path::apply_policy(out, path_start, policy);
        if let Some(q) = url.query() {
            query::write(q, policy, out);
        }
        if !policy.remove_fragment
            && let Some(fragment) = url.fragment()
        {
            out.push('#');
            percent::normalize_into(fragment, out, false);
        }
        Ok(())
    }
}
