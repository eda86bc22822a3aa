//! A single pass over the input that proves it is already canonical, so the common case
//! (links extracted from pages, mostly well formed) skips the parser and every allocation.
//!
//! The check is conservative: it answers `true` only for inputs made of a small, plain
//! subset of URL syntax (lower-case ASCII host that is a plain domain or a dotted-decimal
//! IPv4 address, no user info, no fragment, no character the parser would encode or map),
//! for which the full path provably returns the input unchanged. Anything unusual answers
//! `false` and takes the full path, which is always right. Property tests and the
//! `canonicalize` fuzz target check that `true` is never wrong.
//!
//! It runs on every URL a deduplicator sees, so it is written for speed: each byte is
//! classified by one table lookup, and the loops branch only on the bytes that need a
//! second look (`/`, `%`, `.`, `;`, upper-case letters).

use crate::percent::{hex_value, is_unreserved};
use crate::query::is_clean;
use crate::{Policy, Rules, TrailingSlash};

/// A host byte that needs no second look: a lower-case letter, a digit or `-`.
const HOST: u8 = 1;
/// A path byte the parser leaves alone under every policy: unreserved, sub-delims except `;`,
/// `:` and `@`. `/`, `%`, `;` and upper-case letters depend on the policy or on their
/// neighbours and are looked at separately.
const PATH: u8 = 2;
/// A query byte the parser leaves alone: unreserved, sub-delims except `'` (encoded in
/// special schemes), `:`, `@`, `/` and `?`; `%` is looked at separately.
const QUERY: u8 = 4;

/// A byte a host may hold without a second look: [`HOST`] or `.`.
const DOMAIN: u8 = 8;

/// The class bits of every byte.
static CLASS: [u8; 256] = {
    let mut class = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        let (lower, upper, digit) = (
            c.is_ascii_lowercase(),
            c.is_ascii_uppercase(),
            c.is_ascii_digit(),
        );
        let mark = matches!(c, b'-' | b'.' | b'_' | b'~');
        let sub_delim = matches!(
            c,
            b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',' | b'=' | b':' | b'@'
        );
        if lower || digit || c == b'-' {
            class[b] |= HOST | DOMAIN;
        }
        if c == b'.' {
            class[b] |= DOMAIN;
        }
        if lower || digit || mark || sub_delim {
            class[b] |= PATH;
        }
        if (lower || upper || digit || mark || sub_delim || matches!(c, b';' | b'/' | b'?'))
            && c != b'\''
        {
            class[b] |= QUERY;
        }
        b += 1;
    }
    class
};

#[inline(always)]
fn is(class: u8, c: u8) -> bool {
    CLASS[usize::from(c)] & class != 0
}

/// The index of the first byte of `bytes` from `i` on that is not in `class` (one class bit),
/// or the length. Eight bytes a step while all eight are in it: eight table lookups and one
/// branch, where a byte at a time took a branch per byte and was most of the check's time.
#[inline(always)]
fn skip(class: u8, bytes: &[u8], mut i: usize) -> usize {
    while let Some(chunk) = bytes.get(i..i + 8) {
        if chunk
            .iter()
            .fold(class, |all, &c| all & CLASS[usize::from(c)])
            == 0
        {
            break;
        }
        i += 8;
    }
    while bytes.get(i).is_some_and(|&c| is(class, c)) {
        i += 1;
    }
    i
}

/// Whether `input` is canonical under `policy`; `false` means "not proven".
pub(crate) fn check(input: &str, policy: &Policy) -> bool {
    if policy.rules != Rules::Whatwg {
        return false;
    }
    let b = input.as_bytes();
    let (https, rest) = if let Some(rest) = b.strip_prefix(b"https://") {
        (true, rest)
    } else if let Some(rest) = b.strip_prefix(b"http://") {
        if policy.fold_scheme {
            return false;
        }
        (false, rest)
    } else {
        return false;
    };
    let Some(rest) = authority(rest, https, policy) else {
        return false;
    };
    // `rest` starts with the path's `/`.
    let Some(rest) = path(rest, policy) else {
        return false;
    };
    match rest.split_first() {
        None => true,
        Some((b'?', query)) => self::query(query, policy),
        // A fragment: removed by the default policy, and kept ones are rare enough to leave
        // to the full path.
        _ => false,
    }
}

/// Checks the authority at the start of `rest` (a host and maybe a port, ending at the
/// path's `/`) and returns what follows it.
#[inline(always)]
fn authority<'a>(rest: &'a [u8], https: bool, policy: &Policy) -> Option<&'a [u8]> {
    let i = skip(DOMAIN, rest, 0);
    let host = &rest[..i];
    if !(domain(host) || ipv4(host)) || (policy.fold_www && host.starts_with(b"www.")) {
        return None;
    }
    let mut rest = &rest[i..];
    if let Some(after) = rest.strip_prefix(b":") {
        let digits = after.iter().take_while(|c| c.is_ascii_digit()).count();
        let port = &after[..digits];
        let default: &[u8] = if https { b"443" } else { b"80" };
        let valid = !port.is_empty()
            && port.len() <= 5
            && port[0] != b'0'
            && port.iter().fold(0u32, |n, &d| n * 10 + u32::from(d - b'0')) <= 65_535
            && port != default;
        if !valid {
            return None;
        }
        rest = &after[digits..];
    }
    // A missing path, user info, a backslash or any other byte ends the fast path.
    (rest.first() == Some(&b'/')).then_some(rest)
}

/// A host the WHATWG host parser and UTS 46 leave as they are: lower-case letters, digits,
/// dots and hyphens in non-empty labels; no label that is punycode or has hyphens at the
/// edges or at positions 3-4; and a last label that does not start with a digit (which
/// would send the host through IPv4 parsing).
fn domain(host: &[u8]) -> bool {
    if host.is_empty() || host.len() > 253 {
        return false;
    }
    let mut last: &[u8] = &[];
    for label in host.split(|&c| c == b'.') {
        // The caller's scan left only lower-case letters, digits, `-` and `.` in `host`.
        let plain = match label {
            [] | [b'-', ..] | [.., b'-'] | [_, _, b'-', b'-', ..] => false,
            _ => label.iter().all(|&c| is(HOST, c)),
        };
        if !plain {
            return false;
        }
        last = label;
    }
    last.first().is_some_and(|c| !c.is_ascii_digit())
}

/// A dotted-decimal IPv4 address as the WHATWG host parser writes one: four decimal numbers
/// from 0 to 255 without leading zeros (which would make them octal).
fn ipv4(host: &[u8]) -> bool {
    let mut parts = 0;
    for part in host.split(|&c| c == b'.') {
        parts += 1;
        let valid = match part {
            [b'0'] => true,
            [b'1'..=b'9', rest @ ..] if rest.len() <= 2 => {
                part.iter().all(u8::is_ascii_digit)
                    && part.iter().fold(0u32, |n, &d| n * 10 + u32::from(d - b'0')) <= 255
            }
            _ => false,
        };
        if !valid || parts > 4 {
            return false;
        }
    }
    parts == 4
}

/// Checks the path at the start of `rest` (from its `/`) and returns what follows it (a query
/// or a fragment with its `?` or `#`, or nothing).
#[inline(always)]
fn path<'a>(rest: &'a [u8], policy: &Policy) -> Option<&'a [u8]> {
    let (semicolon, upper) = (!policy.remove_session_params, !policy.lowercase_path);
    // A segment starting with `(` may be an ASP.NET cookieless session, which that policy
    // removes: left to the full path.
    let cookieless = |at: usize| !semicolon && rest.get(at) == Some(&b'(');
    // `rest[0]` is `/`; segments start after each `/`.
    let mut segment_start = 1;
    let mut i = 1;
    if cookieless(1) {
        return None;
    }
    loop {
        i = skip(PATH, rest, i);
        let Some(&c) = rest.get(i) else {
            break;
        };
        match c {
            b'/' => {
                if is_dot_segment(&rest[segment_start..i]) || cookieless(i + 1) {
                    return None;
                }
                segment_start = i + 1;
            }
            b'%' => {
                if !canonical_triplet(rest, i) {
                    return None;
                }
                i += 3;
                continue;
            }
            b';' if semicolon => {}
            b'A'..=b'Z' if upper => {}
            b'?' | b'#' => break,
            _ => return None,
        }
        i += 1;
    }
    let last = &rest[segment_start..i];
    let path_len = i;
    let fits = !is_dot_segment(last)
        && match policy.trailing_slash {
            TrailingSlash::Keep => true,
            TrailingSlash::Remove => path_len == 1 || !last.is_empty(),
            TrailingSlash::AddToDirectories => last.is_empty() || last.contains(&b'.'),
        };
    fits.then(|| &rest[i..])
}

fn is_dot_segment(segment: &[u8]) -> bool {
    matches!(segment, [b'.'] | [b'.', b'.'])
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
    loop {
        i = skip(QUERY, query, i);
        let Some(&c) = query.get(i) else {
            break;
        };
        if c != b'%' || !canonical_triplet(query, i) {
            return false;
        }
        i += 3;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_classes_are_the_sets_the_parser_leaves_alone() {
        for c in 0..=255u8 {
            let path = c.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@".contains(&c);
            let query = c.is_ascii_alphanumeric() || b"-._~!$&()*+,;=:@/?".contains(&c);
            // Upper-case letters and `;` are path bytes looked at apart, by policy.
            let special = c.is_ascii_uppercase() || c == b';';
            assert_eq!(is(PATH, c), path && !special, "{c:#x}");
            assert_eq!(is(QUERY, c), query, "{c:#x}");
            let host = c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-';
            assert_eq!(is(HOST, c), host, "{c:#x}");
            assert_eq!(is(DOMAIN, c), host || c == b'.', "{c:#x}");
        }
    }

    /// The one-pass check covers the shapes of real URLs: of the canonical forms of the two
    /// real URL lists kept with the similarity crate (links from installed documentation and
    /// crate sources), all but a few take the fast path. Skipped where the lists are absent
    /// (a published crate). `-- --nocapture` prints the ones it does not prove.
    #[test]
    fn real_urls_take_the_fast_path() {
        let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../similarity/data/");
        let lists = ["real-urls.txt", "real-urls-rust.txt"]
            .map(|name| std::fs::read_to_string(format!("{data}{name}")));
        if lists.iter().any(Result::is_err) {
            return;
        }
        let policy = Policy::default();
        let canon = crate::Canonicalizer::new(policy.clone());
        let (mut canonical, mut missed) = (0, Vec::new());
        for list in lists.iter().flatten() {
            for url in list.lines() {
                if let Ok(form) = canon.canonicalize(url) {
                    canonical += 1;
                    if !check(&form, &policy) {
                        missed.push(form.into_owned());
                    }
                }
            }
        }
        println!(
            "{} of {canonical} canonical forms not proven canonical:",
            missed.len()
        );
        for form in &missed {
            println!("  {form}");
        }
        assert!(canonical > 40_000);
        assert!(missed.len() * 200 < canonical, "{} missed", missed.len());
    }

    #[test]
    fn hosts() {
        let policy = Policy::default();
        for (url, fast) in [
            ("https://127.0.0.1/", true),
            ("https://192.168.1.42:8080/x", true),
            ("https://0.0.0.0/", true),
            ("https://255.255.255.255/", true),
            ("https://256.1.1.1/", false),
            ("https://01.1.1.1/", false),
            ("https://1.1.1/", false),
            ("https://1.1.1.1.1/", false),
            ("https://1.1.1.a/", true),
            ("https://a.b1/", true),
            ("https://a.1b/", false),
            ("https://ab--c.example/", false),
            ("https://xn--bcher-kva.example/", false),
            ("https://-a.example/", false),
            ("https://a-.example/", false),
            ("https://a..example/", false),
            ("https://user@a.example/", false),
            ("https://a.example:443/", false),
            ("https://a.example:0443/", false),
            ("https://a.example:65536/", false),
            ("https://a.example:65535/", true),
            ("https://a.example", false),
            ("https://a.example?q", false),
            ("https://a.example\\x", false),
        ] {
            assert_eq!(check(url, &policy), fast, "{url}");
            if fast {
                let mut slow = String::new();
                let canon = crate::Canonicalizer::new(policy.clone());
                canon.canonicalize_slow(url, &mut slow).unwrap();
                assert_eq!(slow, url);
            }
        }
    }
}
