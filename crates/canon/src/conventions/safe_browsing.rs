//! Google Safe Browsing (and Web Risk) URL canonicalization, and the host-suffix and
//! path-prefix expressions a client looks up.
//!
//! The rules of the published protocol ("URLs and Hashing", Safe Browsing API v4), in the
//! order the reference Go client (`google/safebrowsing`, `urls.go`) applies them:
//!
//! 1. drop the fragment, trim surrounding whitespace, remove tabs, CR and LF;
//! 2. percent-decode repeatedly until nothing changes, then escape octets `<= 0x20`,
//!    `>= 0x7F`, `#` and `%` (upper-case hex): one canonical escaping whatever the layers;
//! 3. a URL without a scheme is taken as `http`; a scheme must be followed by `//`;
//! 4. host: user info and port removed, an internationalized name in punycode, runs of dots
//!    folded and leading or trailing dots removed, IPv4 in any form (decimal, octal, hex, fewer
//!    than four parts) written in dotted decimal, the rest lower-cased;
//! 5. path: `.` and `..` resolved, runs of slashes folded, a trailing slash kept;
//! 6. the query is kept as it is (after step 2), even when empty (`/q?`).
//!
//! This is for matching against blocklists, where merging too much is harmless; it is no way
//! to fetch pages (it drops ports and decodes `%2F`).

use std::fmt;
use std::net::IpAddr;

use crate::CanonError;
use crate::conventions::idna::raw_punycode;
use crate::percent::{CONTROL_SPACE_HASH_PERCENT, decode, decode_repeatedly, escape_into};

/// Most components a host-suffix expression has, as the protocol asks ("starting with the last
/// five components").
const HOST_SUFFIX_COMPONENTS: usize = 5;
/// Most leading path components a path-prefix expression has (besides the root).
const PATH_PREFIX_COMPONENTS: usize = 3;

/// A URL in Safe Browsing canonical form, split into the parts lookups are built from.
///
/// # Examples
///
/// ```
/// use url_dedup_canon::conventions::safe_browsing::SafeBrowsingUrl;
///
/// let url = SafeBrowsingUrl::parse("http://www.GOOgle.com.../blah/../a%2541?q")?;
/// assert_eq!(url.host(), "www.google.com");
/// assert_eq!(url.to_string(), "http://www.google.com/aA?q");
/// # Ok::<(), url_dedup_canon::CanonError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SafeBrowsingUrl {
    scheme: String,
    host: String,
    path: String,
    query: Option<String>,
}

/// The Safe Browsing canonical form of `input`.
///
/// # Errors
///
/// [`CanonError::Convention`] when the input has no host, has a scheme not followed by `//`
/// (`mailto:`), has an unclosed `[` in its host, or an internationalized host that cannot be
/// converted to punycode.
///
/// # Examples
///
/// ```
/// use url_dedup_canon::conventions::safe_browsing::canonicalize;
///
/// assert_eq!(canonicalize("http://host/%25%32%35")?, "http://host/%25");
/// assert_eq!(canonicalize("http://3279880203/blah")?, "http://195.127.0.11/blah");
/// assert_eq!(canonicalize("www.google.com")?, "http://www.google.com/");
/// # Ok::<(), url_dedup_canon::CanonError>(())
/// ```
pub fn canonicalize(input: &str) -> Result<String, CanonError> {
    SafeBrowsingUrl::parse_bytes(input.as_bytes()).map(|url| url.to_string())
}

/// The host-suffix / path-prefix expressions a Safe Browsing client hashes and looks up for
/// `input`, most specific first for each host (see [`SafeBrowsingUrl::expressions`]).
///
/// # Errors
///
/// As [`canonicalize`].
///
/// # Examples
///
/// ```
/// use url_dedup_canon::conventions::safe_browsing::expressions;
///
/// assert_eq!(
///     expressions("http://a.b.c/1/2.html?param=1")?,
///     [
///         "a.b.c/1/2.html?param=1", "a.b.c/1/2.html", "a.b.c/", "a.b.c/1/",
///         "b.c/1/2.html?param=1", "b.c/1/2.html", "b.c/", "b.c/1/",
///     ],
/// );
/// # Ok::<(), url_dedup_canon::CanonError>(())
/// ```
pub fn expressions(input: &str) -> Result<Vec<String>, CanonError> {
    SafeBrowsingUrl::parse_bytes(input.as_bytes()).map(|url| url.expressions())
}

fn rejected(reason: &'static str) -> CanonError {
    CanonError::Convention {
        convention: "safe-browsing",
        reason,
    }
}

impl SafeBrowsingUrl {
    /// Parses and canonicalizes `input`.
    ///
    /// # Errors
    ///
    /// As [`canonicalize`].
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_canon::conventions::safe_browsing::SafeBrowsingUrl;
    ///
    /// assert!(SafeBrowsingUrl::parse("mailto:someone@example.com").is_err());
    /// ```
    pub fn parse(input: &str) -> Result<Self, CanonError> {
        Self::parse_bytes(input.as_bytes())
    }

    /// Parses and canonicalizes `input` given as bytes, for URLs that are not UTF-8 (the
    /// published examples include a raw `0x80` octet).
    ///
    /// # Errors
    ///
    /// As [`canonicalize`].
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_canon::conventions::safe_browsing::SafeBrowsingUrl;
    ///
    /// let url = SafeBrowsingUrl::parse_bytes(b"http://\x01\x80.com/")?;
    /// assert_eq!(url.to_string(), "http://%01%80.com/");
    /// # Ok::<(), url_dedup_canon::CanonError>(())
    /// ```
    pub fn parse_bytes(input: &[u8]) -> Result<Self, CanonError> {
        let before_fragment = input.split(|&b| b == b'#').next().unwrap_or_default();
        let trimmed = before_fragment.trim_ascii();
        let joined: Vec<u8> = trimmed
            .iter()
            .copied()
            .filter(|b| !matches!(b, b'\t' | b'\r' | b'\n'))
            .collect();
        let mut escaped = Vec::with_capacity(joined.len());
        escape_into(
            &decode_repeatedly(&joined),
            &CONTROL_SPACE_HASH_PERCENT,
            &mut escaped,
        );
        // Everything outside 0x21..=0x7E is escaped now: the rest is ASCII.
        let text = String::from_utf8_lossy(&escaped);
        let (scheme, rest) = split_scheme(&text);
        let (rest, query) = match rest.split_once('?') {
            Some((rest, query)) => (rest, Some(query.to_owned())),
            None => (rest, None),
        };
        let authority_and_path = match scheme {
            Some(_) => rest
                .strip_prefix("//")
                .ok_or_else(|| rejected("a scheme must be followed by //"))?,
            None => rest,
        };
        let (hostish, path) = match authority_and_path.find('/') {
            Some(i) => authority_and_path.split_at(i),
            None => (authority_and_path, ""),
        };
        if hostish.is_empty() {
            return Err(rejected("no host"));
        }
        Ok(Self {
            scheme: scheme.map_or_else(|| "http".to_owned(), str::to_ascii_lowercase),
            host: host(hostish)?,
            path: clean_path(path),
            query,
        })
    }

    /// The host, canonical: `www.google.com`, `195.127.0.11`, `[::1]`.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_canon::conventions::safe_browsing::SafeBrowsingUrl;
    ///
    /// assert_eq!(SafeBrowsingUrl::parse("http://0x12.0x43.0x44.0x01")?.host(), "18.67.68.1");
    /// # Ok::<(), url_dedup_canon::CanonError>(())
    /// ```
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The path, canonical, starting with `/`.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_canon::conventions::safe_browsing::SafeBrowsingUrl;
    ///
    /// assert_eq!(SafeBrowsingUrl::parse("http://a.com//a//b///c////")?.path(), "/a/b/c/");
    /// # Ok::<(), url_dedup_canon::CanonError>(())
    /// ```
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The query without its `?`, `None` when the URL had no `?`.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_canon::conventions::safe_browsing::SafeBrowsingUrl;
    ///
    /// assert_eq!(SafeBrowsingUrl::parse("http://a.com/q?")?.query(), Some(""));
    /// # Ok::<(), url_dedup_canon::CanonError>(())
    /// ```
    pub fn query(&self) -> Option<&str> {
        self.query.as_deref()
    }

    /// The host suffixes looked up: the exact host, then up to four suffixes taken from the last
    /// five components by removing leading components, never the last component alone. An IP
    /// address is looked up only as itself.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_canon::conventions::safe_browsing::SafeBrowsingUrl;
    ///
    /// let url = SafeBrowsingUrl::parse("http://a.b.c.d.e.f.g/1.html")?;
    /// assert_eq!(url.host_suffixes(), ["a.b.c.d.e.f.g", "c.d.e.f.g", "d.e.f.g", "e.f.g", "f.g"]);
    /// # Ok::<(), url_dedup_canon::CanonError>(())
    /// ```
    pub fn host_suffixes(&self) -> Vec<&str> {
        let mut hosts = vec![self.host.as_str()];
        if is_ip_address(&self.host) {
            return hosts;
        }
        let dots: Vec<usize> = self.host.match_indices('.').map(|(i, _)| i).collect();
        let components = dots.len() + 1;
        let first = components.saturating_sub(HOST_SUFFIX_COMPONENTS).max(1);
        for &dot in &dots[first - 1..] {
            hosts.push(&self.host[dot + 1..]);
        }
        // The last component alone (the top-level domain) is never looked up.
        if components > 1 {
            hosts.pop();
        }
        hosts
    }

    /// The path prefixes looked up: the path with its query, the path, the root, then up to
    /// three more prefixes adding one component each, with a trailing slash.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_canon::conventions::safe_browsing::SafeBrowsingUrl;
    ///
    /// let url = SafeBrowsingUrl::parse("http://a.com/a/b/c/d/e.html?123")?;
    /// assert_eq!(
    ///     url.path_prefixes(),
    ///     ["/a/b/c/d/e.html?123", "/a/b/c/d/e.html", "/", "/a/", "/a/b/", "/a/b/c/"],
    /// );
    /// # Ok::<(), url_dedup_canon::CanonError>(())
    /// ```
    pub fn path_prefixes(&self) -> Vec<String> {
        let mut paths = Vec::new();
        if let Some(query) = self.query.as_deref().filter(|q| !q.is_empty()) {
            paths.push(format!("{}?{query}", self.path));
        }
        if self.path != "/" {
            paths.push(self.path.clone());
        }
        paths.push("/".to_owned());
        let components: Vec<&str> = self.path.split('/').filter(|s| !s.is_empty()).collect();
        let directories = components
            .len()
            .saturating_sub(1)
            .min(PATH_PREFIX_COMPONENTS);
        for i in 1..=directories {
            paths.push(format!("/{}/", components[..i].join("/")));
        }
        paths
    }

    /// Every host suffix joined with every path prefix (no scheme): what is hashed for a
    /// lookup, most specific host first.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_canon::conventions::safe_browsing::SafeBrowsingUrl;
    ///
    /// let url = SafeBrowsingUrl::parse("http://1.2.3.4/a/b")?;
    /// assert_eq!(url.expressions(), ["1.2.3.4/a/b", "1.2.3.4/", "1.2.3.4/a/"]);
    /// # Ok::<(), url_dedup_canon::CanonError>(())
    /// ```
    pub fn expressions(&self) -> Vec<String> {
        let paths = self.path_prefixes();
        self.host_suffixes()
            .into_iter()
            .flat_map(|host| paths.iter().map(move |path| format!("{host}{path}")))
            .collect()
    }
}

impl fmt::Display for SafeBrowsingUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}{}", self.scheme, self.host, self.path)?;
        match &self.query {
            Some(query) => write!(f, "?{query}"),
            None => Ok(()),
        }
    }
}

/// `scheme:` at the start (a letter, then letters, digits, `+`, `-`, `.`), and the rest.
fn split_scheme(s: &str) -> (Option<&str>, &str) {
    for (i, c) in s.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
            b':' => return (Some(&s[..i]), &s[i + 1..]),
            _ => break,
        }
    }
    (None, s)
}

/// The canonical host of an authority (user info and port dropped).
fn host(authority: &str) -> Result<String, CanonError> {
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if host.starts_with('[') && !host.contains(']') {
        return Err(rejected("missing ] in host"));
    }
    let host = strip_port(host);
    let decoded = decode(host.as_bytes(), false);
    let host = if decoded.iter().any(|&b| b > 0x80) {
        let unicode = std::str::from_utf8(&decoded)
            .map_err(|_| rejected("internationalized host is not UTF-8"))?;
        let punycode = raw_punycode(unicode)
            .ok_or_else(|| rejected("internationalized host has no punycode form"))?;
        // Punycode keeps ASCII as it is, control bytes too (`\x01\u{80}.com` is
        // `xn--\x01-ba.com`), and so does the Go client; the protocol escapes every octet
        // `<= 0x20` of a canonical URL, so they are escaped again here.
        let mut escaped = Vec::with_capacity(punycode.len());
        escape_into(
            punycode.as_bytes(),
            &CONTROL_SPACE_HASH_PERCENT,
            &mut escaped,
        );
        String::from_utf8_lossy(&escaped).into_owned()
    } else {
        host.to_owned()
    };
    let mut folded = String::with_capacity(host.len());
    for c in host.chars() {
        if !(c == '.' && folded.ends_with('.')) {
            folded.push(c);
        }
    }
    let folded = folded.trim_matches('.');
    Ok(ipv4(folded).unwrap_or_else(|| lowercase_outside_escapes(folded)))
}

/// `host` lower-cased but for the hex digits of its escapes, which stay upper case as the
/// protocol writes them (`some%1Bhost.com`). Every `%` of a host starts an escape here: a
/// literal `%` was escaped as `%25`.
fn lowercase_outside_escapes(host: &str) -> String {
    let mut out = String::with_capacity(host.len());
    let mut hex_left = 0;
    for c in host.chars() {
        if hex_left > 0 {
            hex_left -= 1;
            out.push(c.to_ascii_uppercase());
        } else {
            hex_left = if c == '%' { 2 } else { 0 };
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// `host` without a trailing `:digits`.
fn strip_port(host: &str) -> &str {
    match host.rsplit_once(':') {
        Some((name, port)) if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

/// An IPv4 address in any of the forms resolvers accept (parts in decimal, `0` octal or `0x`
/// hex; fewer than four parts, the last filling the remaining octets), in dotted decimal.
///
/// As the reference client: each part but the last keeps only its low octet, the last its low
/// `5 - parts` octets; a dotted quad followed by a space and anything, within 15 bytes, is the
/// quad (the Windows resolver accepts it).
fn ipv4(host: &str) -> Option<String> {
    let host = windows_dotted_quad(host).unwrap_or(host);
    let parts: Vec<&str> = host.split('.').collect();
    if parts.len() > 4 {
        return None;
    }
    let mut octets = Vec::with_capacity(4);
    for (i, part) in parts.iter().enumerate() {
        let value = parse_c_number(part)?;
        let width = if i + 1 == parts.len() {
            5 - parts.len()
        } else {
            1
        };
        octets.extend((0..width).rev().map(|k| (value >> (8 * k)) & 0xff));
    }
    Some(
        octets
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join("."),
    )
}

/// `d.d.d.d ` (one to three digits each) at the start of a host of at most 15 bytes: the quad.
fn windows_dotted_quad(host: &str) -> Option<&str> {
    if host.len() > 15 {
        return None;
    }
    let (quad, _) = host.split_once(' ')?;
    let parts: Vec<&str> = quad.split('.').collect();
    let plain = |p: &&str| (1..=3).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit());
    (parts.len() == 4 && parts.iter().all(plain)).then_some(quad)
}

/// A 32-bit unsigned number written as C and Go write literals: `0x` hex, `0` octal, or
/// decimal; no sign, no separators.
pub(crate) fn parse_c_number(s: &str) -> Option<u32> {
    let (digits, radix) = if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (hex, 16)
    } else if s.len() > 1 && s.starts_with('0') {
        (&s[1..], 8)
    } else {
        (s, 10)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u32::from_str_radix(digits, radix).ok()
}

/// Whether a canonical host is an IP address (IPv6 in brackets).
fn is_ip_address(host: &str) -> bool {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
        .is_ok()
}

/// `.` and `..` resolved and runs of slashes folded; the trailing slash of the input kept;
/// an empty path is `/`.
fn clean_path(path: &str) -> String {
    let mut kept: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                kept.pop();
            }
            s => kept.push(s),
        }
    }
    let mut out = String::with_capacity(path.len() + 1);
    for segment in &kept {
        out.push('/');
        out.push_str(segment);
    }
    if out.is_empty() || path.ends_with('/') {
        out.push('/');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `TestParseIPAddress` of google/safebrowsing, `urls_test.go`, commit
    /// bbf0d20d26b32d99fd21664677fe31ee9f0f66e3.
    #[test]
    fn ip_address_forms_as_the_reference_client() {
        for (input, output) in [
            ("123.123.0.0.1", None),
            ("255.0.0.1", Some("255.0.0.1")),
            ("12.0x12.01234", Some("12.18.2.156")),
            ("276.2.3", Some("20.2.0.3")),
            ("012.034.01.055", Some("10.28.1.45")),
            ("0x12.0x43.0x44.0x01", Some("18.67.68.1")),
            ("167838211", Some("10.1.2.3")),
            ("3279880203", Some("195.127.0.11")),
            ("4294967295", Some("255.255.255.255")),
            ("10.192.95.89 xy", Some("10.192.95.89")),
            ("1.2.3.00x0", None),
        ] {
            assert_eq!(ipv4(input).as_deref(), output, "{input}");
        }
    }

    #[test]
    fn paths_are_cleaned_as_the_reference_client() {
        assert_eq!(clean_path(""), "/");
        assert_eq!(clean_path("/blah/.."), "/");
        assert_eq!(clean_path("/foo/.././bar/./../foo.html"), "/foo.html");
        assert_eq!(clean_path("//a//b///c////"), "/a/b/c/");
    }
}
