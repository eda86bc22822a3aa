//! Candidate rules from two URLs of one page: what would map the one onto the other.

use crate::parts::{is_separator, param_name, path_query_fragment};
use crate::{PathPattern, RuleKind, SubstitutionPattern};

/// A candidate and how general it is (0 is the most general): among candidates with the same
/// evidence, the most general is tried first, and the narrower ones only if it is rejected.
pub(crate) type Candidate = (RuleKind, u8);

/// The scopes of a rule learned on `path`: every path, the path's template, the path itself.
fn scopes(path: &str) -> Vec<(PathPattern, u8)> {
    let mut out = vec![(PathPattern::any(), 0)];
    let template = PathPattern::template_of(path);
    let exact = PathPattern::exact(path);
    if template != exact {
        out.push((template, 1));
    }
    out.push((exact, 2));
    out
}

/// Whether byte offset `i` of `s` is a token boundary.
fn boundary(s: &[u8], i: usize) -> bool {
    i == 0 || i == s.len() || is_separator(s[i - 1]) || is_separator(s[i])
}

/// Looks like a value that changes between URLs (a session token, an id): it has a digit
/// and is at least six characters, or is at least sixteen.
fn is_variable_token(t: &str) -> bool {
    (t.len() >= 6 && t.bytes().any(|b| b.is_ascii_digit())) || t.len() >= 16
}

/// How much of a variable token is a fixed name before its value: up to a `-`, `_`, `~` or
/// `:` near its start, then letters that are not hex digits (`sid-`, `session_`, `~v`).
fn fixed_prefix(token: &str) -> usize {
    let mut keep = token
        .char_indices()
        .take(12)
        .find(|(_, c)| matches!(c, '-' | '_' | '~' | ':'))
        .map_or(0, |(k, _)| k + 1);
    keep += token[keep..]
        .bytes()
        .take_while(|b| b.is_ascii_alphabetic() && !b.is_ascii_hexdigit())
        .count();
    if keep >= token.len() { 0 } else { keep }
}

/// `from` with its variable tokens made `*` (a token `sid-9f8e7d6c` keeps its `sid-`);
/// `None` when nothing is variable or the result is not a valid pattern.
fn generalized(from: &str, to: &str) -> Option<SubstitutionPattern> {
    let bytes = from.as_bytes();
    let mut out = String::with_capacity(from.len());
    let mut changed = false;
    let mut i = 0;
    while i < bytes.len() {
        if is_separator(bytes[i]) {
            out.push(bytes[i] as char);
            i += 1;
            continue;
        }
        let end = bytes[i..]
            .iter()
            .position(|&b| is_separator(b))
            .map_or(bytes.len(), |e| i + e);
        let token = &from[i..end];
        if is_variable_token(token) && !to.contains(token) {
            let keep = fixed_prefix(token);
            out.push_str(&token[..keep]);
            out.push('*');
            changed = true;
        } else {
            out.push_str(token);
        }
        i = end;
    }
    if !changed {
        return None;
    }
    out.parse().ok()
}

/// The candidates that would map `a` onto `b` or `b` onto `a` (path, query and fragment of
/// two URLs of one host and one page), into `out`.
pub(crate) fn candidates(a: &str, b: &str, out: &mut Vec<Candidate>) {
    let start = out.len();
    candidates_unsorted(a, b, out);
    // One kind once, at its most general rank.
    let mut mine: Vec<Candidate> = out.drain(start..).collect();
    mine.sort_by(|x, y| x.0.cmp(&y.0).then(x.1.cmp(&y.1)));
    mine.dedup_by(|x, y| x.0 == y.0);
    mine.sort_by_key(|c| c.1);
    out.extend(mine);
}

fn candidates_unsorted(a: &str, b: &str, out: &mut Vec<Candidate>) {
    let (pa, qa, _) = path_query_fragment(a);
    let (pb, qb, _) = path_query_fragment(b);
    if pa == pb {
        // The queries differ: each parameter whose values differ may not matter.
        let (xa, xb) = (sorted_params(qa), sorted_params(qb));
        let mut names: Vec<&str> = Vec::new();
        // Parameters one URL has and the other lacks entirely: maybe only that value does
        // not matter (`page=1`).
        let mut values: Vec<&str> = Vec::new();
        for (mine, theirs) in [(&xa, &xb), (&xb, &xa)] {
            for p in mine.iter().filter(|p| !theirs.contains(p)) {
                let n = param_name(p);
                if n.is_empty() || n.contains(['*', ' ', '"', '/', '#', '?']) {
                    continue;
                }
                if !names.contains(&n) {
                    names.push(n);
                }
                if !theirs.iter().any(|t| param_name(t) == n)
                    && p.len() > n.len()
                    && !p[n.len() + 1..].contains(['=', ' ', '"', '#'])
                    && !values.contains(p)
                {
                    values.push(p);
                }
            }
        }
        for n in names {
            for (path, rank) in scopes(pa) {
                out.push((
                    RuleKind::IgnoreParam {
                        name: n.to_owned(),
                        value: None,
                        path,
                    },
                    rank,
                ));
            }
        }
        for p in values {
            let (n, v) = p.split_at(param_name(p).len());
            for (path, rank) in scopes(pa) {
                out.push((
                    RuleKind::IgnoreParam {
                        name: n.to_owned(),
                        value: Some(v[1..].to_owned()),
                        path,
                    },
                    rank + 1,
                ));
            }
        }
        return;
    }
    // The shorter spelling is the one kept.
    let (long, short) = if (a.len(), a) > (b.len(), b) {
        (a, b)
    } else {
        (b, a)
    };
    let (pl, ql, _) = path_query_fragment(long);
    let (ps, qs, _) = path_query_fragment(short);
    if ql == qs {
        if pl.len() == ps.len() + 1 && pl.ends_with('/') && pl.starts_with(ps) && !ps.is_empty() {
            for (path, rank) in scopes(ps) {
                out.push((RuleKind::TrailingSlash { add: false, path }, rank));
            }
            return;
        }
        if ps.ends_with('/') && pl.starts_with(ps) && !pl[ps.len()..].contains('/') {
            let name = &pl[ps.len()..];
            if !name.contains(['*', ' ', '"', '&', '=', '#']) {
                for (path, rank) in scopes(ps) {
                    out.push((
                        RuleKind::DefaultDocument {
                            name: name.to_owned(),
                            path,
                        },
                        rank,
                    ));
                }
            }
            return;
        }
    }
    substitutions(long, short, out);
}

fn sorted_params(q: Option<&str>) -> Vec<&str> {
    let mut v: Vec<&str> = q.map(|q| q.split('&').collect()).unwrap_or_default();
    v.sort_unstable();
    v
}

/// `replace` candidates from the part where `long` and `short` differ, cut at token
/// boundaries: the bare difference, its generalization, and the difference with one more
/// token of context before it.
fn substitutions(long: &str, short: &str, out: &mut Vec<Candidate>) {
    let (l, s) = (long.as_bytes(), short.as_bytes());
    let max = s.len();
    let mut p = l.iter().zip(s).take_while(|(x, y)| x == y).count();
    let mut q = l
        .iter()
        .rev()
        .zip(s.iter().rev())
        .take_while(|(x, y)| x == y)
        .count()
        .min(max - p);
    while p > 0 && !(boundary(l, p) && boundary(s, p) && long.is_char_boundary(p)) {
        p -= 1;
    }
    while q > 0 && !(boundary(l, l.len() - q) && boundary(s, s.len() - q)) {
        q -= 1;
    }
    let mut push = |start: usize, rank: u8| {
        let mut from = &long[start..long.len() - q];
        let mut to = &short[start..short.len() - q];
        // A separator on either side makes the pattern readable and anchors it.
        let (mut f, mut t) = (String::new(), String::new());
        if start > 0
            && !from.starts_with(|c: char| c.is_ascii() && is_separator(c as u8))
            && is_separator(l[start - 1])
        {
            f.push(l[start - 1] as char);
            t.push(l[start - 1] as char);
        }
        f.push_str(from);
        t.push_str(to);
        let after = long.len() - q;
        if q > 0
            && !from.ends_with(|c: char| c.is_ascii() && is_separator(c as u8))
            && is_separator(l[after])
        {
            f.push(l[after] as char);
            t.push(l[after] as char);
        }
        (from, to) = (&f, &t);
        if from.is_empty() || from.contains(['*', '#']) || to.contains(['*', '#']) || from == to {
            return;
        }
        if let Some(g) = generalized(from, to) {
            out.push((
                RuleKind::Replace {
                    from: g,
                    to: to.to_owned(),
                },
                rank,
            ));
        }
        if let Ok(lit) = from.parse::<SubstitutionPattern>() {
            out.push((
                RuleKind::Replace {
                    from: lit,
                    to: to.to_owned(),
                },
                rank + 1,
            ));
        }
    };
    push(p, 0);
    // One more token of context before the difference.
    if p > 0 {
        let mut c = p - 1;
        while c > 0 && !is_separator(l[c - 1]) {
            c -= 1;
        }
        push(c, 2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(a: &str, b: &str) -> Vec<String> {
        let mut out = Vec::new();
        candidates(a, b, &mut out);
        out.into_iter().map(|(k, r)| format!("{r} {k}")).collect()
    }

    #[test]
    fn parameters() {
        assert_eq!(
            kinds("/list/7?page=1&sort=name", "/list/7?page=1"),
            [
                "0 ignore-param \"sort\" in \"/**\"",
                "1 ignore-param \"sort\" in \"/list/*\"",
                "1 ignore-param \"sort=name\" in \"/**\"",
                "2 ignore-param \"sort\" in \"/list/7\"",
                "2 ignore-param \"sort=name\" in \"/list/*\"",
                "3 ignore-param \"sort=name\" in \"/list/7\""
            ]
        );
        assert_eq!(
            kinds("/a?x=1", "/a?x=2"),
            [
                "0 ignore-param \"x\" in \"/**\"",
                "2 ignore-param \"x\" in \"/a\""
            ]
        );
    }

    #[test]
    fn substitutions_at_token_boundaries() {
        assert_eq!(
            kinds("/print/article/5", "/article/5"),
            ["1 replace \"/print/\" \"/\""]
        );
        assert_eq!(
            kinds("/w/index.php?title=Main", "/w/index.php/Main"),
            [
                "1 replace \"?title=\" \"/\"",
                "3 replace \"/index.php?title=\" \"/index.php/\""
            ]
        );
        assert_eq!(
            kinds("/sid-9f8e7d6c/article/5", "/article/5"),
            [
                "0 replace \"/sid-*/\" \"/\"",
                "1 replace \"/sid-9f8e7d6c/\" \"/\""
            ]
        );
    }

    #[test]
    fn default_documents_and_trailing_slashes() {
        assert_eq!(
            kinds("/docs/index.html", "/docs/"),
            [
                "0 default-document \"index.html\" in \"/**\"",
                "2 default-document \"index.html\" in \"/docs/\""
            ]
        );
        assert_eq!(
            kinds("/docs/intro/", "/docs/intro"),
            [
                "0 trailing-slash remove in \"/**\"",
                "2 trailing-slash remove in \"/docs/intro\""
            ]
        );
    }

    #[test]
    fn generalization_keeps_a_leading_word() {
        assert_eq!(
            generalized("/s/abc123def/", "/").unwrap().to_string(),
            "/s/*/"
        );
        assert_eq!(
            generalized("/session_ab12cd34/", "/").unwrap().to_string(),
            "/session_*/"
        );
        assert!(generalized("/print/", "/").is_none());
        // A token that the replacement keeps is not variable.
        assert!(generalized("/x/abc123/", "/abc123/").is_none());
    }
}
