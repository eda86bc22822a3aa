//! A single pass over the input that proves it is already canonical, so the common case
//! (links extracted from pages, mostly well formed) skips the parser and every allocation.
//!
//! The check is conservative: it answers `true` only for inputs made of a small, plain
//! subset of URL syntax (lower-case ASCII host that is neither an IP address nor punycode,
//! no user info, no fragment, no character the parser would encode or map), for which the
//! full path provably returns the input unchanged. Anything unusual answers `false` and
//! takes the full path, which is always right. Property tests and the `canonicalize` fuzz
//! target check that `true` is never wrong.

use crate::percent::{ByteSet, alphanumeric_and, hex_value, is_unreserved};
use crate::query::is_clean;
use crate::{Policy, Rules, TrailingSlash};

/// Bytes a canonical path may hold as they are: unreserved, sub-delims, `:`, `@` (and `/`,
/// `%`, handled separately). Everything else the parser encodes or treats specially.
const PATH_BYTES: ByteSet = alphanumeric_and(b"-._~!$&'()*+,;=:@");
/// The same for a query: `/` and `?` are allowed, `'` is not (the parser encodes it in
/// special schemes).
const QUERY_BYTES: ByteSet = alphanumeric_and(b"-._~!$&()*+,;=:@/?");

/// Whether `input` is canonical under `policy`; `false` means "not proven".
pub(crate) fn check(input: &str, policy: &Policy) -> bool {
    if policy.rules != Rules::Whatwg {
        return false;
    }
    let b = input.as_bytes();
    let (scheme_https, rest) = if let Some(rest) = b.strip_prefix(b"https://") {
        (true, rest)
    } else if let Some(rest) = b.strip_prefix(b"http://") {
        if policy.fold_scheme {
            return false;
        }
        (false, rest)
    } else {
        return false;
    };
    // The authority ends at the first `/`; a `?`, `#` or `\` before it means the path is
    // missing or the parser would rewrite a backslash.
    let Some(auth_len) = rest
        .iter()
        .position(|&c| matches!(c, b'/' | b'?' | b'#' | b'\\'))
    else {
        return false;
    };
    if rest[auth_len] != b'/' || !authority(&rest[..auth_len], scheme_https, policy) {
        return false;
    }
    let rest = &rest[auth_len..];
    let path_len = rest
        .iter()
        .position(|&c| matches!(c, b'?' | b'#'))
        .unwrap_or(rest.len());
    if !path(&rest[..path_len], policy) {
        return false;
    }
    match rest.get(path_len) {
        None => true,
        Some(b'?') => query(&rest[path_len + 1..], policy),
        // A fragment: removed by the default policy, and kept ones are rare enough to leave
        // to the full path.
        _ => false,
    }
}

fn authority(auth: &[u8], https: bool, policy: &Policy) -> bool {
    let (host, port) = match auth.iter().rposition(|&c| c == b':') {
        Some(i) => (&auth[..i], Some(&auth[i + 1..])),
        None => (auth, None),
    };
    if let Some(port) = port {
        let default: &[u8] = if https { b"443" } else { b"80" };
        let valid = !port.is_empty()
            && port.len() <= 5
            && port[0] != b'0'
            && port.iter().all(u8::is_ascii_digit)
            && port.iter().fold(0u32, |n, &d| n * 10 + u32::from(d - b'0')) <= 65_535
            && port != default;
        if !valid {
            return false;
        }
    }
    if policy.fold_www && host.starts_with(b"www.") {
        return false;
    }
    domain(host)
}

/// A host the WHATWG host parser and UTS 46 leave as they are: lower-case letters, digits,
/// dots and hyphens in non-empty labels; no label that is punycode or has hyphens at the
/// edges or at positions 3-4; and a last label that does not start with a digit (which
/// would send the host through IPv4 parsing).
fn domain(host: &[u8]) -> bool {
    if host.is_empty() || host.len() > 253 {
        return false;
    }
    let mut last = &host[..0];
    for label in host.split(|&c| c == b'.') {
        let plain = !label.is_empty()
            && label
                .iter()
                .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
            && label[0] != b'-'
            && label[label.len() - 1] != b'-'
            && label.get(2..4) != Some(b"--");
        if !plain {
            return false;
        }
        last = label;
    }
    !last[0].is_ascii_digit()
}

/// A path the parser leaves alone and the policy would not change.
fn path(path: &[u8], policy: &Policy) -> bool {
    let mut segment_start = 0;
    let mut i = 0;
    while i < path.len() {
        let c = path[i];
        match c {
            b'/' => {
                if is_dot_segment(&path[segment_start..i]) {
                    return false;
                }
                segment_start = i + 1;
            }
            b'%' => {
                if !canonical_triplet(path, i) {
                    return false;
                }
                i += 3;
                continue;
            }
            b';' if policy.remove_session_params => return false,
            b'A'..=b'Z' if policy.lowercase_path => return false,
            _ if PATH_BYTES[usize::from(c)] => {}
            _ => return false,
        }
        i += 1;
    }
    let last = &path[segment_start..];
    if is_dot_segment(last) {
        return false;
    }
    match policy.trailing_slash {
        TrailingSlash::Keep => true,
        TrailingSlash::Remove => path.len() == 1 || last != b"",
        TrailingSlash::AddToDirectories => last.is_empty() || last.contains(&b'.'),
    }
}

fn is_dot_segment(segment: &[u8]) -> bool {
    segment == b"." || segment == b".."
}

/// `%XY` with upper-case hex digits, encoding an octet that must stay encoded.
fn canonical_triplet(s: &[u8], at: usize) -> bool {
    let (Some(&hi), Some(&lo)) = (s.get(at + 1), s.get(at + 2)) else {
        return false;
    };
    let upper = |d: u8| d.is_ascii_digit() || (b'A'..=b'F').contains(&d);
    match (hex_value(hi), hex_value(lo)) {
        (Some(h), Some(l)) if upper(hi) && upper(lo) => !is_unreserved(h << 4 | l),
        _ => false,
    }
}

/// A query the parser leaves alone (no `'`, which it encodes in special schemes) and the
/// policy would not change: not empty if empty queries are dropped, and when the policy
/// edits parameters, no empty pair, no parameter it removes, names in sorted order.
fn query(query: &[u8], policy: &Policy) -> bool {
    if query.is_empty() {
        return !policy.drop_empty_query;
    }
    let mut i = 0;
    while i < query.len() {
        let c = query[i];
        if c == b'%' {
            if !canonical_triplet(query, i) {
                return false;
            }
            i += 3;
            continue;
        }
        if !QUERY_BYTES[usize::from(c)] {
            return false;
        }
        i += 1;
    }
    if !policy.edits_query() {
        return true;
    }
    // Only ASCII was accepted above, so this cannot fail.
    let Ok(query) = std::str::from_utf8(query) else {
        return false;
    };
    is_clean(query, policy)
}
