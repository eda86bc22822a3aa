//! A URL cut where the rules need it: the origin (scheme and authority), the host the rules
//! are filed under, the path and the query.

/// The characters that separate the tokens of a URL's path and query: a substitution starts
/// and ends at one of them, and a `*` never crosses one.
pub(crate) const SEPARATORS: &[u8] = b"/?&=;";

#[inline]
pub(crate) fn is_separator(b: u8) -> bool {
    SEPARATORS.contains(&b)
}

/// An absolute URL, cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Parts<'a> {
    /// `https://user@host:8080`: everything before the path.
    pub(crate) origin: &'a str,
    /// `host:8080`: the authority without user information.
    pub(crate) host: &'a str,
    /// The path, the query and the fragment: `/a/b?x=1#f`.
    pub(crate) rest: &'a str,
}

/// Cuts `url`; `None` when it has no `scheme://authority`.
pub(crate) fn split(url: &str) -> Option<Parts<'_>> {
    let scheme_end = url.find("://")?;
    if scheme_end == 0
        || !url[..scheme_end]
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
    {
        return None;
    }
    let after = scheme_end + 3;
    let end = url.as_bytes()[after..]
        .iter()
        .position(|&b| matches!(b, b'/' | b'?' | b'#'))
        .map_or(url.len(), |i| after + i);
    let authority = &url[after..end];
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if host.is_empty() {
        return None;
    }
    Some(Parts {
        origin: &url[..end],
        host,
        rest: &url[end..],
    })
}

/// `rest` cut into path, query (without `?`, `None` when absent) and fragment (with `#`, or
/// empty).
pub(crate) fn path_query_fragment(rest: &str) -> (&str, Option<&str>, &str) {
    let (before, fragment) = match rest.find('#') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    match before.find('?') {
        Some(i) => (&before[..i], Some(&before[i + 1..]), fragment),
        None => (before, None, fragment),
    }
}

/// The name of a `name=value` query parameter.
pub(crate) fn param_name(param: &str) -> &str {
    param.split_once('=').map_or(param, |(n, _)| n)
}

/// Whether a path segment looks like a value that changes from page to page (a number, an
/// identifier, a slug) rather than a fixed part of the site's layout.
pub(crate) fn is_variable_segment(segment: &str) -> bool {
    segment.bytes().any(|b| b.is_ascii_digit())
        || segment.len() > 24
        || segment.bytes().filter(|&b| b == b'-' || b == b'_').count() >= 2
        || segment.contains('%')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_cut() {
        let p = split("https://u:p@Example.com:8080/a/b?x=1#f").unwrap();
        assert_eq!(p.origin, "https://u:p@Example.com:8080");
        assert_eq!(p.host, "Example.com:8080");
        assert_eq!(p.rest, "/a/b?x=1#f");
        assert_eq!(split("http://h").unwrap().rest, "");
        assert_eq!(split("http://h?q").unwrap().rest, "?q");
        assert!(split("/relative").is_none());
        assert!(split("http:///x").is_none());
        assert!(split("://x").is_none());
        assert_eq!(
            path_query_fragment("/a?b=1&c#d"),
            ("/a", Some("b=1&c"), "#d")
        );
        assert_eq!(path_query_fragment("/a"), ("/a", None, ""));
    }

    #[test]
    fn variable_segments() {
        for s in [
            "42",
            "item-7",
            "my-first-post",
            "a%20b",
            "x".repeat(30).as_str(),
        ] {
            assert!(is_variable_segment(s), "{s}");
        }
        for s in ["wiki", "index.php", "print", "user_guide"] {
            assert!(!is_variable_segment(s), "{s}");
        }
    }
}
