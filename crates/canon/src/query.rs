//! Query rewriting: removal of tracking and session parameters, stable sort by name.

use crate::Policy;

/// The name of a `name=value` pair (everything before the first `=`).
#[inline]
pub(crate) fn param_name(pair: &str) -> &str {
    pair.split_once('=').map_or(pair, |(name, _)| name)
}

/// Appends the rewritten `query` (percent-normalized, without `?`) to `out`, preceded by `?`
/// unless the policy drops it as empty.
pub(crate) fn write(query: &str, policy: &Policy, out: &mut String) {
    if !policy.edits_query() {
        if !(query.is_empty() && policy.drop_empty_query) {
            out.push('?');
            out.push_str(query);
        }
        return;
    }
    let mut pairs: Vec<&str> = query
        .split('&')
        .filter(|pair| !pair.is_empty() && !policy.drops_param(param_name(pair)))
        .collect();
    if policy.sort_query {
        // `sort_by_key` is stable: repeated names keep their order, which often matters.
        pairs.sort_by_key(|pair| param_name(pair));
    }
    if pairs.is_empty() && policy.drop_empty_query {
        return;
    }
    out.push('?');
    for (i, pair) in pairs.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        out.push_str(pair);
    }
}
