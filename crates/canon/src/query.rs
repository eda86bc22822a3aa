//! Query rewriting: removal of tracking and session parameters, stable sort by name.

use crate::{Policy, percent};

/// The name and value of a `name=value` pair, split at the first `=` (the value is empty
/// when there is none).
#[inline]
pub(crate) fn split_pair(pair: &str) -> (&str, &str) {
    match pair.as_bytes().iter().position(|&b| b == b'=') {
        Some(end) => (&pair[..end], &pair[end + 1..]),
        None => (pair, ""),
    }
}

/// Appends the percent-normalized and rewritten `query` (without `?`) to `out`, preceded by
/// `?` unless the policy drops it as empty.
pub(crate) fn write(query: &str, policy: &Policy, out: &mut String) {
    if !policy.edits_query() {
        if !(query.is_empty() && policy.drop_empty_query) {
            out.push('?');
            percent::normalize_into(query, out, false);
        }
        return;
    }
    // Normalized into `out` first (after a provisional `?`), then edited in place when a
    // pair must go or move; most queries need neither.
    let mark = out.len();
    out.push('?');
    percent::normalize_into(query, out, false);
    let normalized = &out[mark + 1..];
    if is_clean(normalized, policy) && !(normalized.is_empty() && policy.drop_empty_query) {
        return;
    }
    let query = out.split_off(mark + 1);
    out.truncate(mark);
    let mut pairs: Vec<(&str, &str)> = query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .filter(|pair| {
            let (name, value) = split_pair(pair);
            !policy.drops_param(name, value)
        })
        .map(|pair| (split_pair(pair).0, pair))
        .collect();
    if policy.sort_query {
        // Stable: repeated names keep their order, which often matters.
        pairs.sort_by(|a, b| a.0.cmp(b.0));
    }
    if pairs.is_empty() && policy.drop_empty_query {
        return;
    }
    out.push('?');
    for (i, (_, pair)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        out.push_str(pair);
    }
}

/// Whether a normalized query needs no pair dropped or moved under `policy`: no empty pair, no
/// parameter the policy drops, and (when sorting) names already in order. The already-canonical
/// fast path and the slow path both decide with this, so they cannot disagree.
///
/// Runs on every URL with a query, so pairs are cut at `&` bytes (never inside a multi-byte
/// character) and names compared byte by byte, without a call per pair.
pub(crate) fn is_clean(query: &str, policy: &Policy) -> bool {
    let mut previous: &[u8] = &[];
    let mut rest = query;
    loop {
        let (pair, next) = match rest.as_bytes().iter().position(|&b| b == b'&') {
            Some(end) => (&rest[..end], Some(&rest[end + 1..])),
            None => (rest, None),
        };
        let (name, value) = split_pair(pair);
        if pair.is_empty()
            || policy.drops_param(name, value)
            || (policy.sort_query && before(name.as_bytes(), previous))
        {
            return false;
        }
        previous = name.as_bytes();
        match next {
            Some(next) => rest = next,
            None => return true,
        }
    }
}

/// `a < b` in byte order, inlined: parameter names are a few bytes long.
#[inline]
fn before(a: &[u8], b: &[u8]) -> bool {
    for (x, y) in a.iter().zip(b) {
        if x != y {
            return x < y;
        }
    }
    a.len() < b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_compare_in_byte_order() {
        for (a, b) in [
            ("", ""),
            ("", "a"),
            ("a", "b"),
            ("ab", "a"),
            ("a", "ab"),
            ("b", "ab"),
            ("é", "z"),
            ("Z", "a"),
        ] {
            assert_eq!(before(a.as_bytes(), b.as_bytes()), a < b, "{a} {b}");
            assert_eq!(before(b.as_bytes(), a.as_bytes()), b < a, "{b} {a}");
        }
    }

    #[test]
    fn a_query_is_clean_when_nothing_moves_or_goes() {
        let policy = Policy::default();
        for (query, clean) in [
            ("a=1&b=2", true),
            ("b=2&a=1", false),
            ("a=1&&b=2", false),
            ("a=1&", false),
            ("", false),
            ("a=1&utm_source=x", false),
            ("a&a=2&a=1", true),
            ("é=1&z=2", false),
            ("z=1&é=2", true),
        ] {
            assert_eq!(is_clean(query, &policy), clean, "{query}");
        }
    }
}
