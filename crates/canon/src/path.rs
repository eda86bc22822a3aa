//! Path rewriting after the WHATWG parser: session path parameters, dot segments those
//! removals expose, and the trailing-slash policy.

use crate::query::split_pair;
use crate::{Policy, TrailingSlash};

/// Rewrites the path that occupies `out[start..]` (already percent-normalized, starting
/// with `/`) in place.
pub(crate) fn apply_policy(out: &mut String, start: usize, policy: &Policy) {
    if policy.remove_session_params && out[start..].contains(';') {
        let mut path = out.split_off(start);
        remove_session_params(&mut path, policy);
        out.push_str(&path);
    }
    if policy.remove_session_params && out[start..].contains("/(") {
        let path = out.split_off(start);
        out.push_str(&remove_cookieless_segments(&path));
    }
    let path = out;
    match policy.trailing_slash {
        TrailingSlash::Keep => {}
        TrailingSlash::Remove => {
            // All of them: removing one at a time would not be idempotent for `/a//`.
            while path.len() > start + 1 && path.ends_with('/') {
                path.pop();
            }
        }
        TrailingSlash::AddToDirectories => {
            if looks_like_directory_without_slash(&path[start..]) {
                path.push('/');
            }
        }
    }
}

/// Whether the last segment is non-empty and has no dot (`/docs`, not `/docs/` or `/a.html`).
pub(crate) fn looks_like_directory_without_slash(path: &str) -> bool {
    let last = path.rsplit('/').next().unwrap_or_default();
    !last.is_empty() && !last.contains('.')
}

/// Drops `;name=value` path parameters that are session ids under the policy, from every
/// segment, then resolves any `.` or `..` segment this exposed (`/a/..;jsessionid=1/b`
/// was opaque to the parser but is `/a/../b` now, which a second pass would resolve).
fn remove_session_params(path: &mut String, policy: &Policy) {
    let mut out = String::with_capacity(path.len());
    let mut exposed_dots = false;
    for (i, segment) in path.split('/').enumerate() {
        if i > 0 {
            out.push('/');
        }
        let mut params = segment.split(';');
        let head = params.next().unwrap_or_default();
        out.push_str(head);
        let mut removed = false;
        for param in params {
            let (name, value) = split_pair(param);
            if policy.drops_session_param(name, value) {
                removed = true;
            } else {
                out.push(';');
                out.push_str(param);
            }
        }
        let kept = out.rsplit('/').next().unwrap_or_default();
        exposed_dots |= removed && (kept == "." || kept == "..");
    }
    if exposed_dots {
        out = remove_dot_segments(&out);
    }
    *path = out;
}

/// Drops ASP.NET's cookieless session segments (`/(S(lit3py55t21z5v55vlm25s55))/page.aspx`,
/// also with the anonymous-id and forms tickets: `(S(...)A(...)F(...))`): the server puts the
/// session in the path when a browser takes no cookies, so every visitor sees other URLs for
/// the same pages.
fn remove_cookieless_segments(path: &str) -> String {
    let kept: Vec<&str> = path.split('/').filter(|s| !is_cookieless(s)).collect();
    match kept.join("/") {
        p if p.is_empty() => "/".to_owned(),
        p => p,
    }
}

/// Whether `segment` is `(` then one or more `X(value)` tickets (`X` an ASCII upper-case
/// letter, `value` without parentheses), then `)`.
fn is_cookieless(segment: &str) -> bool {
    let Some(mut rest) = segment.strip_prefix('(').and_then(|s| s.strip_suffix(')')) else {
        return false;
    };
    let mut tickets = 0;
    while !rest.is_empty() {
        let mut chars = rest.chars();
        let (Some(letter), Some('(')) = (chars.next(), chars.next()) else {
            return false;
        };
        if !letter.is_ascii_uppercase() {
            return false;
        }
        let Some(end) = rest[2..].find(')') else {
            return false;
        };
        if rest[2..2 + end].contains('(') {
            return false;
        }
        rest = &rest[2 + end + 1..];
        tickets += 1;
    }
    tickets > 0
}

/// RFC 3986 section 5.2.4 on an absolute path, segment by segment.
fn remove_dot_segments(path: &str) -> String {
    let mut stack: Vec<&str> = Vec::new();
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    let last = segments.len().saturating_sub(1);
    let mut trailing_dir = false;
    for (i, seg) in segments.iter().enumerate() {
        match *seg {
            "." => trailing_dir = i == last,
            ".." => {
                stack.pop();
                trailing_dir = i == last;
            }
            s => {
                stack.push(s);
                trailing_dir = false;
            }
        }
    }
    let mut out = String::with_capacity(path.len());
    for seg in &stack {
        out.push('/');
        out.push_str(seg);
    }
    if trailing_dir || out.is_empty() {
        out.push('/');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_segments_follow_rfc_3986_section_5_2_4() {
        assert_eq!(remove_dot_segments("/a/b/c/./../../g"), "/a/g");
        assert_eq!(remove_dot_segments("/a/.."), "/");
        assert_eq!(remove_dot_segments("/a/b/.."), "/a/");
        assert_eq!(remove_dot_segments("/../x"), "/x");
        assert_eq!(remove_dot_segments("/a//b"), "/a//b");
    }

    #[test]
    fn asp_net_cookieless_segments_are_removed() {
        let policy = Policy::default();
        for (input, want) in [
            (
                "http://a/(S(lit3py55t21z5v55vlm25s55))/default.aspx",
                "http://a/default.aspx",
            ),
            (
                "http://a/app/(S(x1)A(y2)F(z3))/page.aspx",
                "http://a/app/page.aspx",
            ),
            ("http://a/(S(abc))/", "http://a/"),
            // Not a cookieless segment: kept.
            ("http://a/(notes)/x", "http://a/(notes)/x"),
            ("http://a/(s(abc))/x", "http://a/(s(abc))/x"),
            ("http://a/(S(a(b)))/x", "http://a/(S(a(b)))/x"),
        ] {
            let mut p = input.to_owned();
            apply_policy(&mut p, 8, &policy);
            assert_eq!(p, want, "{input}");
        }
    }

    #[test]
    fn session_path_params_are_removed_and_dots_resolved() {
        let policy = Policy::default();
        let mut p = "http://a/shop;JSESSIONID=ab12;color=red/item".to_owned();
        apply_policy(&mut p, 8, &policy);
        assert_eq!(p, "http://a/shop;color=red/item");
        let mut p = "http://a/a/..;jsessionid=1/b".to_owned();
        apply_policy(&mut p, 8, &policy);
        assert_eq!(p, "http://a/b");
    }
}
