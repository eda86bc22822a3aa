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
pub(crate) fn is_clean(query: &str, policy: &Policy) -> bool {
    let mut previous = "";
    query.split('&').all(|pair| {
        let (name, value) = split_pair(pair);
        let keep = !(pair.is_empty()
            || policy.drops_param(name, value)
            || (policy.sort_query && name < previous));
        previous = name;
        keep
    })
}
