//! SURT keys and the Internet Archive's URL canonicalizers, as the `surt` Python package
//! (internetarchive/surt, a port of archive-commons' Java classes) computes them for CDX
//! indexes and Wayback lookups.
//!
//! A SURT ("Sort-friendly URI Reordering Transform") writes the host backwards with commas,
//! so that a sorted index groups a site's hosts: `http://www.archive.org/goo/?b&a` has the key
//! `org,archive)/goo?a&b`.
//!
//! Three canonicalizers, each a step of the next:
//!
//! * [`ArchiveCanonicalizer::Google`] (archive-commons' `GoogleURLCanonicalizer`): the Safe
//!   Browsing rules on host and path (repeated unescaping, one escaping of octets `<= 0x20`,
//!   `>= 0x7F`, `#` and `%`, host dots, IPv4 forms, dot segments), fragment dropped; unlike Safe
//!   Browsing it keeps the port and user info, and accepts any scheme;
//! * [`ArchiveCanonicalizer::Ia`] (`IAURLCanonicalizer`): lower-cases host, path and query,
//!   strips `www`, `www2`, ... labels, user info and default ports, session ids (`jsessionid`,
//!   `phpsessid`, `sid` with 32-character values, ASP.NET path and query ids, `cfid` and
//!   `cftoken`), a trailing slash (not the root's) and an empty query, and sorts the query;
//! * [`ArchiveCanonicalizer::DefaultIa`]: the first, then the second; what [`surt`] uses.

use crate::CanonError;
use crate::conventions::idna::python_idna;
use crate::percent::{CONTROL_SPACE_HASH_PERCENT, decode_repeatedly, escape_into};

/// Which of the archive canonicalizers to apply before writing a URL or key.
///
/// # Examples
///
/// ```
/// use url_dedup_canon::conventions::surt::{ArchiveCanonicalizer, Surt};
///
/// let ia = Surt { canonicalizer: ArchiveCanonicalizer::Ia, ..Surt::default() };
/// assert_eq!(ia.canonicalize("http://www.archive.org:80/big/")?, "http://archive.org/big");
/// # Ok::<(), url_dedup_canon::CanonError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ArchiveCanonicalizer {
    /// None: the URL as parsed.
    Identity,
    /// `GoogleURLCanonicalizer`: unescaping, escaping, host and path rules.
    Google,
    /// `IAURLCanonicalizer`: case, `www`, session ids, ports, trailing slash, query order.
    Ia,
    /// `DefaultIAURLCanonicalizer`: `Google`, then `Ia`. The default.
    #[default]
    DefaultIa,
}

/// SURT keys and archive canonicalization, with the `surt` package's options.
///
/// # Examples
///
/// ```
/// use url_dedup_canon::conventions::surt::Surt;
///
/// let surt = Surt { with_scheme: true, trailing_comma: true, ..Surt::default() };
/// assert_eq!(surt.key("https://www.example.com/")?, "https://(com,example,)/");
/// assert_eq!(Surt::default().canonicalize("http://www34.archive.org/index.html?b=a&a=b")?,
///     "http://archive.org/index.html?a=b&b=a");
/// # Ok::<(), url_dedup_canon::CanonError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Surt {
    /// The canonicalizer applied first. Default: [`ArchiveCanonicalizer::DefaultIa`].
    pub canonicalizer: ArchiveCanonicalizer,
    /// Start keys with the scheme (`http://(org,archive)/`). Default: off.
    pub with_scheme: bool,
    /// End the host of a key with a comma (`org,archive,)/`). Default: off.
    pub trailing_comma: bool,
    /// Reverse IPv4 addresses in keys too (`254,1,168,192)/`). Default: on.
    pub reverse_ipaddr: bool,
    /// Strip leading `www.`, `www2.`, ... labels (`Ia` step). Default: on.
    pub host_massage: bool,
    /// Lower-case the query (`Ia` step). Default: on.
    pub query_lowercase: bool,
}

impl Default for Surt {
    fn default() -> Self {
        Self {
            canonicalizer: ArchiveCanonicalizer::DefaultIa,
            with_scheme: false,
            trailing_comma: false,
            reverse_ipaddr: true,
            host_massage: true,
            query_lowercase: true,
        }
    }
}

/// The SURT key of `url` with the `surt` package's defaults: default IA canonicalization, no
/// scheme, no trailing comma.
///
/// # Errors
///
/// [`CanonError::Convention`] for a port that is not a number from 0 to 65535.
///
/// # Examples
///
/// ```
/// use url_dedup_canon::surt;
///
/// assert_eq!(surt("http://www.archive.org/goo/?a=2&b&a=1")?, "org,archive)/goo?a=1&a=2&b");
/// assert_eq!(surt("dns:archive.org")?, "dns:archive.org");
/// # Ok::<(), url_dedup_canon::CanonError>(())
/// ```
pub fn surt(url: &str) -> Result<String, CanonError> {
    Surt::default().key(url)
}

fn rejected(reason: &'static str) -> CanonError {
    CanonError::Convention {
        convention: "surt",
        reason,
    }
}

/// A URL split as archive-commons' `HandyURL` holds it; `None` and empty differ as they do
/// there (`?` with an empty query is remembered in `last_delimiter`).
#[derive(Debug, Default)]
struct HandyUrl {
    scheme: Option<Vec<u8>>,
    host: Option<Vec<u8>>,
    port: Option<u16>,
    path: Option<Vec<u8>>,
    query: Option<Vec<u8>>,
    fragment: Option<Vec<u8>>,
    trailing_question_mark: bool,
}

impl Surt {
    /// The SURT key of `url` under these options: `-` for an empty URL, a `filedesc` record
    /// name as it is.
    ///
    /// # Errors
    ///
    /// As [`surt`].
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_canon::conventions::surt::Surt;
    ///
    /// let plain_ip = Surt { reverse_ipaddr: false, ..Surt::default() };
    /// assert_eq!(plain_ip.key("http://192.168.1.254/info/")?, "192.168.1.254)/info");
    /// # Ok::<(), url_dedup_canon::CanonError>(())
    /// ```
    pub fn key(&self, url: &str) -> Result<String, CanonError> {
        if url.is_empty() {
            return Ok("-".to_owned());
        }
        if url.starts_with("filedesc") {
            return Ok(url.to_owned());
        }
        let handy = self.canonicalized(url)?;
        Ok(into_string(handy.write(true, self)))
    }

    /// `url` canonicalized by [`Surt::canonicalizer`], written as a URL.
    ///
    /// # Errors
    ///
    /// As [`surt`].
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_canon::conventions::surt::{ArchiveCanonicalizer, Surt};
    ///
    /// let google = Surt { canonicalizer: ArchiveCanonicalizer::Google, ..Surt::default() };
    /// assert_eq!(google.canonicalize("http://host/%25%32%35")?, "http://host/%25");
    /// # Ok::<(), url_dedup_canon::CanonError>(())
    /// ```
    pub fn canonicalize(&self, url: &str) -> Result<String, CanonError> {
        let handy = self.canonicalized(url)?;
        Ok(into_string(handy.write(false, self)))
    }

    fn canonicalized(&self, url: &str) -> Result<HandyUrl, CanonError> {
        let mut handy = HandyUrl::parse(url.as_bytes())?;
        match self.canonicalizer {
            ArchiveCanonicalizer::Identity => {}
            ArchiveCanonicalizer::Google => handy.google(),
            ArchiveCanonicalizer::Ia => handy.ia(self),
            ArchiveCanonicalizer::DefaultIa => {
                handy.google();
                handy.ia(self);
            }
        }
        Ok(handy)
    }
}

/// The output is the input's UTF-8 with ASCII edits and escapes, so it stays UTF-8.
fn into_string(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Empty is absent, as Python's `x or None`.
fn non_empty(bytes: &[u8]) -> Option<Vec<u8>> {
    (!bytes.is_empty()).then(|| bytes.to_vec())
}

fn has_scheme(url: &[u8]) -> bool {
    scheme_len(url).is_some()
}

/// Length of `scheme` in `scheme:...` (a letter, then letters, digits, `+`, `-`, `.`).
fn scheme_len(url: &[u8]) -> Option<usize> {
    let colon = url.iter().position(|&b| b == b':')?;
    let scheme = &url[..colon];
    let valid = scheme.first().is_some_and(u8::is_ascii_alphabetic)
        && scheme
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    valid.then_some(colon)
}

impl HandyUrl {
    /// `handyurl.parse`: trims, removes tabs and line breaks, adds `http://` to URLs without a
    /// scheme, keeps the last of repeated `http://` prefixes, and splits as RFC 2396 Appendix B
    /// (user info is dropped).
    fn parse(url: &[u8]) -> Result<Self, CanonError> {
        let trimmed = url.trim_ascii();
        if trimmed.is_empty() {
            // The package fails on a URL of only whitespace (it has no scheme to look at).
            return Err(rejected("no URL"));
        }
        let mut url: Vec<u8> = trimmed
            .iter()
            .copied()
            .filter(|b| !matches!(b, b'\n' | b'\r' | b'\t'))
            .collect();
        if !url.is_empty() && !has_scheme(&url) {
            url.splice(0..0, b"http://".iter().copied());
        }
        // `http://https://order.1and1.com` is `https://order.1and1.com`.
        let mut at = 0;
        let mut last = None;
        loop {
            if url[at..].starts_with(b"http://") {
                last = Some(at);
                at += 7;
            } else if url[at..].starts_with(b"https://") {
                last = Some(at);
                at += 8;
            } else {
                break;
            }
        }
        if let Some(last) = last {
            url.drain(..last);
        }

        let (scheme, rest) = match scheme_len(&url) {
            Some(len) => (&url[..len], &url[len + 1..]),
            None => (&url[..0], &url[..]),
        };
        let (netloc, rest) = match rest.strip_prefix(b"//") {
            Some(after) => {
                let end = after
                    .iter()
                    .position(|b| matches!(b, b'/' | b'?' | b'#'))
                    .unwrap_or(after.len());
                after.split_at(end)
            }
            None => (&rest[..0], rest),
        };
        let path_end = rest
            .iter()
            .position(|b| matches!(b, b'?' | b'#'))
            .unwrap_or(rest.len());
        let (path, rest) = rest.split_at(path_end);
        let (query, fragment) = match rest.split_first() {
            Some((b'?', after)) => match after.iter().position(|&b| b == b'#') {
                Some(hash) => (&after[..hash], &after[hash + 1..]),
                None => (after, &after[after.len()..]),
            },
            Some((_, after)) => (&after[..0], after),
            None => (rest, rest),
        };

        let netloc = netloc.strip_suffix(b":").map_or(netloc, |n| {
            let end = n.iter().rposition(|&b| b != b':').map_or(0, |i| i + 1);
            &n[..end]
        });
        let (hostname, port) = host_and_port(netloc)?;
        let mut handy = Self {
            scheme: non_empty(scheme),
            host: non_empty(hostname).map(|h| lowercase_before_zone(&h)),
            port,
            path: non_empty(path),
            query: non_empty(query),
            fragment: non_empty(fragment),
            trailing_question_mark: false,
        };
        // `http:////www.vikings.com`: the host is in the path.
        if handy
            .scheme
            .as_deref()
            .is_some_and(|s| s.starts_with(b"http"))
            && handy.host.is_none()
            && let Some(path) = handy.path.take()
        {
            let start = path.iter().position(|&b| b != b'/').unwrap_or(path.len());
            let rest = &path[start..];
            let slash = rest.iter().position(|&b| b == b'/').unwrap_or(rest.len());
            handy.host = Some(rest[..slash].to_vec());
            let mut new_path = vec![b'/'];
            new_path.extend_from_slice(rest.get(slash + 1..).unwrap_or_default());
            handy.path = Some(new_path);
        }
        handy.trailing_question_mark = url.ends_with(b"?") && handy.query.is_none();
        Ok(handy)
    }

    /// `GoogleURLCanonicalizer.canonicalize`.
    fn google(&mut self) {
        self.fragment = None;
        if let Some(query) = self.query.take() {
            self.query = Some(escape_once(&decode_repeatedly(&query)));
        }
        if let Some(host) = self.host.take().filter(|h| !h.is_empty()) {
            let mut host = decode_repeatedly(&host);
            if !host.is_ascii() {
                // Python decodes with errors ignored, then applies its `idna` codec; on failure
                // the bytes stay as they were.
                let text: String = host.utf8_chunks().map(|chunk| chunk.valid()).collect();
                if let Some(ascii) = python_idna(&text) {
                    host = ascii.into_bytes();
                }
            }
            let single_dots = replace_double_dots(&host);
            let host = strip_dots(&single_dots);
            self.host = Some(match archive_ipv4(host) {
                Some(ip) => ip.into_bytes(),
                None => escape_once(&host.to_ascii_lowercase()),
            });
        }
        let has_host = self.host.as_ref().is_some_and(|h| !h.is_empty());
        let path = self.path.take().map(|p| decode_repeatedly(&p));
        let path = if has_host {
            Some(normalize_path(path.as_deref().unwrap_or_default()))
        } else {
            path
        };
        self.path = path.map(|p| escape_once(&p));
    }

    /// `IAURLCanonicalizer.canonicalize` with the options of `surt`.
    fn ia(&mut self, options: &Surt) {
        if let Some(host) = self.host.as_mut() {
            host.make_ascii_lowercase();
            if options.host_massage && self.scheme.as_deref() != Some(b"dns") {
                let start = www_prefix_len(host);
                host.drain(..start);
            }
        }
        if let (Some(scheme), Some(port)) = (&self.scheme, self.port) {
            let default = match scheme.to_ascii_lowercase().as_slice() {
                b"http" => 80,
                b"https" => 443,
                _ => 0,
            };
            if port == default {
                self.port = None;
            }
        }
        if let Some(path) = self.path.as_mut().filter(|p| !p.is_empty()) {
            path.make_ascii_lowercase();
            *path = strip_path_session_id(path);
            if path.len() > 1 && path.ends_with(b"/") {
                path.pop();
            }
        }
        match self.query.take() {
            Some(query) => {
                let mut query = strip_query_session_id(&query);
                if options.query_lowercase {
                    query.make_ascii_lowercase();
                }
                let query = alpha_reorder_query(&query);
                self.query = non_empty(&query);
            }
            None => self.trailing_question_mark = false,
        }
    }

    /// `handyurl.geturl_bytes`: as a URL, or (`surt`) as a key.
    fn write(&self, surt: bool, options: &Surt) -> Vec<u8> {
        let scheme = self.scheme.as_deref().unwrap_or_default();
        let host = self.host.as_deref().filter(|h| !h.is_empty()).map(|h| {
            if surt {
                host_to_surt(h, options.reverse_ipaddr)
            } else {
                h.to_vec()
            }
        });
        let with_scheme = !surt || options.with_scheme;
        let mut out = Vec::new();
        if with_scheme || host.is_none() {
            out.extend_from_slice(scheme);
            out.push(b':');
        }
        if let Some(host) = &host {
            if with_scheme {
                if scheme != b"dns" {
                    out.extend_from_slice(b"//");
                }
                if surt {
                    out.push(b'(');
                }
            }
            out.extend_from_slice(host);
            if let Some(port) = self.port {
                out.extend_from_slice(format!(":{port}").as_bytes());
            }
            if surt {
                if options.trailing_comma {
                    out.push(b',');
                }
                out.push(b')');
            }
        }
        match self.path.as_deref().filter(|p| !p.is_empty()) {
            Some(path) => out.extend_from_slice(path),
            None if self.query.is_some() || self.fragment.is_some() => out.push(b'/'),
            None => {}
        }
        if let Some(query) = &self.query {
            out.push(b'?');
            out.extend_from_slice(query);
        }
        if let Some(fragment) = &self.fragment {
            out.push(b'#');
            out.extend_from_slice(fragment);
        }
        if self.trailing_question_mark {
            out.push(b'?');
        }
        out
    }
}

/// Host and port of an authority, as Python's `urlsplit` reads them (user info dropped, IPv6
/// brackets removed, a port of 0 taken as none).
fn host_and_port(netloc: &[u8]) -> Result<(&[u8], Option<u16>), CanonError> {
    let host_port = match netloc.iter().rposition(|&b| b == b'@') {
        Some(at) => &netloc[at + 1..],
        None => netloc,
    };
    let (host, port) = match host_port.iter().position(|&b| b == b'[') {
        Some(open) => {
            let bracketed = &host_port[open + 1..];
            let close = bracketed
                .iter()
                .position(|&b| b == b']')
                .unwrap_or(bracketed.len());
            let after = bracketed.get(close + 1..).unwrap_or_default();
            let port = match after.iter().position(|&b| b == b':') {
                Some(colon) => &after[colon + 1..],
                None => &after[after.len()..],
            };
            (&bracketed[..close], port)
        }
        None => match host_port.iter().position(|&b| b == b':') {
            Some(colon) => (&host_port[..colon], &host_port[colon + 1..]),
            None => (host_port, &host_port[host_port.len()..]),
        },
    };
    if port.is_empty() {
        return Ok((host, None));
    }
    if !port.iter().all(u8::is_ascii_digit) {
        return Err(rejected("port is not a number"));
    }
    let number = std::str::from_utf8(port)
        .ok()
        .and_then(|p| p.parse::<u32>().ok())
        .filter(|&p| p <= 65_535)
        .ok_or_else(|| rejected("port out of range 0-65535"))?;
    Ok((host, u16::try_from(number).ok().filter(|&p| p != 0)))
}

/// ASCII lower case before an IPv6 zone (`%eth0` keeps its case).
fn lowercase_before_zone(host: &[u8]) -> Vec<u8> {
    let zone = host.iter().position(|&b| b == b'%').unwrap_or(host.len());
    let mut out = host[..zone].to_ascii_lowercase();
    out.extend_from_slice(&host[zone..]);
    out
}

/// Octets `<= 0x20`, `>= 0x7F`, `#` and `%` escaped (upper-case hex).
fn escape_once(src: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(src.len());
    escape_into(src, &CONTROL_SPACE_HASH_PERCENT, &mut out);
    out
}

/// Each `..` replaced by `.`, left to right, once (`a...b` becomes `a..b`, as Python's
/// `bytes.replace`).
fn replace_double_dots(host: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(host.len());
    let mut i = 0;
    while i < host.len() {
        if host[i..].starts_with(b"..") {
            out.push(b'.');
            i += 2;
        } else {
            out.push(host[i]);
            i += 1;
        }
    }
    out
}

fn strip_dots(host: &[u8]) -> &[u8] {
    let start = host.iter().position(|&b| b != b'.').unwrap_or(host.len());
    let end = host
        .iter()
        .rposition(|&b| b != b'.')
        .map_or(start, |i| i + 1);
    &host[start..end]
}

/// `attemptIPFormats`: an all-digit host is a 32-bit number (taken modulo 2^32, as the archive
/// does for numbers from broken records); a host of one to four decimal or octal parts is read
/// as the C resolver reads it (`inet_aton`: `10.0.258` is `10.0.1.2`, `017.0.0.1` is
/// `15.0.0.1`, a part too large is no address).
fn archive_ipv4(host: &[u8]) -> Option<String> {
    if host.is_empty() {
        return None;
    }
    if host.iter().all(u8::is_ascii_digit) {
        let value = host.iter().fold(0u32, |v, &d| {
            v.wrapping_mul(10).wrapping_add(u32::from(d - b'0'))
        });
        return Some(std::net::Ipv4Addr::from(value).to_string());
    }
    let text = std::str::from_utf8(host).ok()?;
    let parts: Vec<&str> = text.split('.').collect();
    let first = parts[0];
    let decimal = first.starts_with(|c: char| ('1'..='9').contains(&c))
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let octal = first.starts_with('0')
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| (b'0'..=b'7').contains(&b)));
    if parts.len() > 4 || !(decimal || octal) {
        return None;
    }
    inet_aton(&parts).map(|ip| ip.to_string())
}

/// The C library's `inet_aton` on parts already split at dots.
fn inet_aton(parts: &[&str]) -> Option<std::net::Ipv4Addr> {
    let values: Vec<u32> = parts
        .iter()
        .map(|p| crate::conventions::safe_browsing::parse_c_number(p))
        .collect::<Option<_>>()?;
    let (leading, last) = values
        .split_last()
        .map(|(last, leading)| (leading, *last))?;
    if leading.iter().any(|&v| v > 0xff) {
        return None;
    }
    let last_bits = 8 * (4 - leading.len() as u32);
    if last_bits < 32 && last >> last_bits != 0 {
        return None;
    }
    let value = leading
        .iter()
        .enumerate()
        .fold(last, |acc, (i, &v)| acc | v << (24 - 8 * i as u32));
    Some(std::net::Ipv4Addr::from(value))
}

/// `normalizePath`: `.` removed, `..` removes the previous segment (kept when there is none),
/// empty segments folded except the last (a trailing slash stays).
fn normalize_path(path: &[u8]) -> Vec<u8> {
    if path.is_empty() {
        return b"/".to_vec();
    }
    let mut kept: Vec<&[u8]> = Vec::new();
    for segment in path.split(|&b| b == b'/').skip(1) {
        match segment {
            b"." => {}
            b".." => {
                if kept.pop().is_none() {
                    kept.push(segment);
                }
            }
            s => kept.push(s),
        }
    }
    let mut out = vec![b'/'];
    if let Some((last, leading)) = kept.split_last() {
        for segment in leading.iter().filter(|s| !s.is_empty()) {
            out.extend_from_slice(segment);
            out.push(b'/');
        }
        out.extend_from_slice(last);
    }
    out
}

/// Length of a leading `www.` or `www<digits>.` label.
fn www_prefix_len(host: &[u8]) -> usize {
    let Some(rest) = host.strip_prefix(b"www") else {
        return 0;
    };
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if rest.get(digits) == Some(&b'.') {
        3 + digits + 1
    } else {
        0
    }
}

/// `alphaReorderQuery`: pairs split at the first `=` and sorted (a bare name before the same
/// name with a value), joined with `&`; queries of one byte or less as they are.
fn alpha_reorder_query(query: &[u8]) -> Vec<u8> {
    if query.len() <= 1 {
        return query.to_vec();
    }
    let mut pairs: Vec<Vec<&[u8]>> = query
        .split(|&b| b == b'&')
        .map(|arg| arg.splitn(2, |&b| b == b'=').collect())
        .collect();
    pairs.sort();
    let mut out = Vec::with_capacity(query.len());
    for (i, pair) in pairs.iter().enumerate() {
        if i > 0 {
            out.push(b'&');
        }
        out.extend_from_slice(&pair.join(&b'=')[..]);
    }
    out
}

/// One of the query session-id patterns: a name (compared without case), then a value
/// pattern that must end the query or be followed by `&`.
struct QuerySessionId {
    name: &'static [u8],
    value: fn(&[u8]) -> Option<usize>,
}

/// Exactly `n` bytes of `class`, returns `n` if they are there.
fn exactly(s: &[u8], n: usize, class: fn(&u8) -> bool) -> Option<usize> {
    (s.len() >= n && s[..n].iter().all(class)).then_some(n)
}

const QUERY_SESSION_IDS: [QuerySessionId; 5] = [
    QuerySessionId {
        name: b"jsessionid=",
        value: |s| exactly(s, 32, u8::is_ascii_alphanumeric),
    },
    QuerySessionId {
        name: b"phpsessid=",
        value: |s| exactly(s, 32, u8::is_ascii_alphanumeric),
    },
    QuerySessionId {
        name: b"sid=",
        value: |s| exactly(s, 32, u8::is_ascii_alphanumeric),
    },
    QuerySessionId {
        name: b"aspsessionid",
        value: |s| {
            exactly(s, 8, u8::is_ascii_alphabetic)?;
            (s.get(8) == Some(&b'=')).then_some(())?;
            exactly(&s[9..], 24, u8::is_ascii_alphabetic).map(|n| 9 + n)
        },
    },
    QuerySessionId {
        name: b"cfid=",
        value: |s| {
            let id = s.iter().position(|&b| b == b'&')?;
            let rest = &s[id + 1..];
            if id == 0 || rest.len() < 8 || !rest[..8].eq_ignore_ascii_case(b"cftoken=") {
                return None;
            }
            let token = rest[8..]
                .iter()
                .position(|&b| b == b'&')
                .unwrap_or(rest.len() - 8);
            (token > 0).then_some(id + 1 + 8 + token)
        },
    },
];

/// `stripQuerySessionID`: each pattern in turn removes its last occurrence that ends the
/// query or is followed by `&` (and that `&`).
fn strip_query_session_id(query: &[u8]) -> Vec<u8> {
    let mut query = query.to_vec();
    for pattern in &QUERY_SESSION_IDS {
        let found = (0..query.len()).rev().find_map(|start| {
            let name_end = start + pattern.name.len();
            let name = query.get(start..name_end)?;
            if !name.eq_ignore_ascii_case(pattern.name) {
                return None;
            }
            let end = name_end + (pattern.value)(&query[name_end..])?;
            match query.get(end) {
                None => Some((start, end, end)),
                Some(b'&') => Some((start, end, end + 1)),
                Some(_) => None,
            }
        });
        if let Some((start, _, resume)) = found {
            query.drain(start..resume);
        }
    }
    query
}

/// `stripPathSessionID`: an ASP.NET session segment (`/(S(...))/` or `/(...)/`, ids of 24
/// letters and digits) before a `.aspx` page is removed.
fn strip_path_session_id(path: &[u8]) -> Vec<u8> {
    let mut path = path.to_vec();
    for matcher in [cookieless_ids as fn(&[u8]) -> Option<usize>, bare_id] {
        let found = (0..path.len()).rev().find_map(|slash| {
            if path[slash] != b'/' {
                return None;
            }
            let rest = &path[slash + 1..];
            let len = matcher(rest)?;
            aspx_page(&rest[len..]).then_some((slash + 1, slash + 1 + len))
        });
        if let Some((start, end)) = found {
            path.drain(start..end);
        }
    }
    path
}

/// `(` then one or more `X(24 ids)`, then `)/`; returns the length.
fn cookieless_ids(s: &[u8]) -> Option<usize> {
    let mut i = usize::from(s.first() == Some(&b'('));
    if i == 0 {
        return None;
    }
    let mut groups = 0;
    while s.get(i).is_some_and(u8::is_ascii_alphabetic) && s.get(i + 1) == Some(&b'(') {
        let id = exactly(&s[i + 2..], 24, u8::is_ascii_alphanumeric)?;
        if s.get(i + 2 + id) != Some(&b')') {
            return None;
        }
        i += 2 + id + 1;
        groups += 1;
    }
    (groups > 0 && s.get(i..i + 2) == Some(b")/")).then_some(i + 2)
}

/// `(` then 24 letters and digits, then `)/`; returns the length.
fn bare_id(s: &[u8]) -> Option<usize> {
    if s.first() != Some(&b'(') {
        return None;
    }
    exactly(&s[1..], 24, u8::is_ascii_alphanumeric)?;
    (s.get(25..27) == Some(b")/")).then_some(27)
}

/// At least one byte other than `?`, then `.aspx` (any case), then anything.
fn aspx_page(s: &[u8]) -> bool {
    let limit = s.iter().position(|&b| b == b'?').unwrap_or(s.len());
    (1..limit).any(|i| {
        s.get(i..i + 5)
            .is_some_and(|w| w.eq_ignore_ascii_case(b".aspx"))
    })
}

/// `hostToSURT`: labels reversed and joined with commas; a dotted quad kept as it is unless
/// `reverse_ipaddr`.
fn host_to_surt(host: &[u8], reverse_ipaddr: bool) -> Vec<u8> {
    if !reverse_ipaddr && is_dotted_quad(host) {
        return host.to_vec();
    }
    let labels: Vec<&[u8]> = host.split(|&b| b == b'.').rev().collect();
    labels.join(&b',')
}

/// Four dot-separated runs of one to three ASCII digits.
fn is_dotted_quad(host: &[u8]) -> bool {
    let parts: Vec<&[u8]> = host.split(|&b| b == b'.').collect();
    parts.len() == 4
        && parts
            .iter()
            .all(|p| (1..=3).contains(&p.len()) && p.iter().all(u8::is_ascii_digit))
}

#[cfg(test)]
mod tests {
    //! The helper vectors of internetarchive/surt, `tests/test_surt.py`, commit
    //! 6934c321b3e2f66af9c001d882475949f00570c5 (`test_attemptIPFormats`,
    //! `test_unescapeRepeatedly`, `test_alphaReorderQuery`, `test_massageHost`,
    //! `test_stripPathSessionID`, `test_stripQuerySessionID`, `test_hostToSURT`).

    use super::*;

    #[test]
    fn attempt_ip_formats() {
        for (host, ip) in [
            ("www.foo.com", None),
            ("127.0.0.1", Some("127.0.0.1")),
            ("017.0.0.1", Some("15.0.0.1")),
            ("168.188.99.26", Some("168.188.99.26")),
            ("10.0.258", Some("10.0.1.2")),
            ("1.2.3.256", None),
            ("39024579298", Some("22.11.210.226")),
        ] {
            assert_eq!(archive_ipv4(host.as_bytes()).as_deref(), ip, "{host}");
        }
    }

    #[test]
    fn unescape_repeatedly() {
        for (input, output) in [
            ("%!A%21%21%25", "%!A!!%"),
            ("%", "%"),
            ("%2", "%2"),
            ("%25", "%"),
            ("%25%", "%%"),
            ("%2525", "%"),
            ("%252525", "%"),
            ("%25%32%35", "%"),
        ] {
            assert_eq!(
                decode_repeatedly(input.as_bytes()),
                output.as_bytes(),
                "{input}"
            );
        }
    }

    #[test]
    fn alpha_reorder() {
        for (input, output) in [
            ("", ""),
            ("a", "a"),
            ("ab", "ab"),
            ("a=1", "a=1"),
            ("ab=1", "ab=1"),
            ("a=1&", "&a=1"),
            ("a=1&b=1", "a=1&b=1"),
            ("b=1&a=1", "a=1&b=1"),
            ("a=a&a=a", "a=a&a=a"),
            ("a=b&a=a", "a=a&a=b"),
            ("b=b&a=b&b=a&a=a", "a=a&a=b&b=a&b=b"),
        ] {
            assert_eq!(
                alpha_reorder_query(input.as_bytes()),
                output.as_bytes(),
                "{input}"
            );
        }
    }

    #[test]
    fn massage_host() {
        for (input, output) in [
            ("foo.com", "foo.com"),
            ("www.foo.com", "foo.com"),
            ("www12.foo.com", "foo.com"),
            ("www2foo.com", "www2foo.com"),
            ("www2.www2foo.com", "www2foo.com"),
        ] {
            assert_eq!(
                &input[www_prefix_len(input.as_bytes())..],
                output,
                "{input}"
            );
        }
    }

    #[test]
    fn path_session_ids() {
        for (input, output) in [
            ("/(S(4hqa0555fwsecu455xqckv45))/mileg.aspx", "/mileg.aspx"),
            ("/(4hqa0555fwsecu455xqckv45)/mileg.aspx", "/mileg.aspx"),
            (
                "/(a(4hqa0555fwsecu455xqckv45)S(4hqa0555fwsecu455xqckv45)f(4hqa0555fwsecu455xqckv45))/mileg.aspx?page=sessionschedules",
                "/mileg.aspx?page=sessionschedules",
            ),
            ("/photos/36050182@N05/", "/photos/36050182@N05/"),
        ] {
            assert_eq!(
                strip_path_session_id(input.as_bytes()),
                output.as_bytes(),
                "{input}"
            );
        }
    }

    #[test]
    fn query_session_ids() {
        let id = "0123456789abcdefghijklemopqrstuv";
        for (input, output) in [
            (format!("?jsessionid={id}"), "?".to_owned()),
            (format!("?jsessionid={id}0"), format!("?jsessionid={id}0")),
            (format!("?jsessionid={id}&x=y"), "?x=y".to_owned()),
            (format!("?one=two&jsessionid={id}&x=y"), "?one=two&x=y".to_owned()),
            (format!("?one=two&jsessionid={id}"), "?one=two&".to_owned()),
            (
                "?aspsessionidABCDEFGH=ABCDEFGHIJKLMNOPQRSTUVWX&x=y".to_owned(),
                "?x=y".to_owned(),
            ),
            (format!("?phpsessid={id}&x=y"), "?x=y".to_owned()),
            (format!("?one=two&phpsessid={id}&x=y"), "?one=two&x=y".to_owned()),
            (format!("?one=two&phpsessid={id}"), "?one=two&".to_owned()),
            ("?sid=9682993c8daa2c5497996114facdc805&x=y".to_owned(), "?x=y".to_owned()),
            (
                format!("?sid=9682993c8daa2c5497996114facdc805&jsessionid={id}"),
                "?".to_owned(),
            ),
            (
                "?CFID=1169580&CFTOKEN=48630702&dtstamp=22%2F08%2F2006%7C06%3A58%3A11".to_owned(),
                "?dtstamp=22%2F08%2F2006%7C06%3A58%3A11".to_owned(),
            ),
            (
                "?CFID=12412453&CFTOKEN=15501799&dt=19_08_2006_22_39_28".to_owned(),
                "?dt=19_08_2006_22_39_28".to_owned(),
            ),
            (
                "?CFID=14475712&CFTOKEN=2D89F5AF-3048-2957-DA4EE4B6B13661AB&r=468710288378&m=forgotten"
                    .to_owned(),
                "?r=468710288378&m=forgotten".to_owned(),
            ),
            (
                "?CFID=16603925&CFTOKEN=2AE13EEE-3048-85B0-56CEDAAB0ACA44B8".to_owned(),
                "?".to_owned(),
            ),
            (
                "?CFID=4308017&CFTOKEN=63914124&requestID=200608200458360%2E39414378".to_owned(),
                "?requestID=200608200458360%2E39414378".to_owned(),
            ),
        ] {
            assert_eq!(
                strip_query_session_id(input.as_bytes()),
                output.as_bytes(),
                "{input}"
            );
        }
    }

    #[test]
    fn host_to_surt_keys() {
        for (host, reversed, kept) in [
            ("www.archive.org", "org,archive,www", "org,archive,www"),
            ("123.123.net", "net,123,123", "net,123,123"),
            (
                "100.100.100.100.org",
                "org,100,100,100,100",
                "org,100,100,100,100",
            ),
            ("123.45.167.89", "89,167,45,123", "123.45.167.89"),
            ("10.162.1024.3", "3,1024,162,10", "3,1024,162,10"),
            ("990.991.992.993", "993,992,991,990", "990.991.992.993"),
        ] {
            assert_eq!(host_to_surt(host.as_bytes(), true), reversed.as_bytes());
            assert_eq!(host_to_surt(host.as_bytes(), false), kept.as_bytes());
        }
    }
}
