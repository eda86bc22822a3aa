//! Which part of a URL decides its virtual node.

/// The part of a key that is hashed for routing.
///
/// * [`RouteKey::Url`] spreads every URL independently: the most even load.
/// * [`RouteKey::Host`] sends every URL of a host to the same virtual node, hence the same
///   crawler, so a site is crawled serially and politely (document 002) and its URLs are
///   deduplicated in one place.
///
/// Routing hashes the bytes as given: canonicalize URLs first (scheme and host case, default
/// ports) so that equivalent URLs route alike.
///
/// With [`RouteKey::Host`] a virtual node's load is the size of the sites that hash to it, not
/// an even share: a [`ShardedFilter`](crate::ShardedFilter) routed by host needs shards sized
/// for its largest sites.
///
/// # Examples
///
/// ```
/// use url_dedup_partition::RouteKey;
///
/// assert_eq!(RouteKey::Host.select(b"https://user@Example.com:8080/a?b"), b"Example.com");
/// assert_eq!(RouteKey::Url.select(b"https://example.com/a"), b"https://example.com/a");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum RouteKey {
    /// The whole key (URL) is hashed.
    #[default]
    Url,
    /// Only the URL's host is hashed: no scheme, user information, port, path or query.
    Host,
}

impl RouteKey {
    pub(crate) fn code(self) -> u16 {
        match self {
            Self::Url => 0,
            Self::Host => 1,
        }
    }

    pub(crate) fn from_code(code: u16) -> Option<Self> {
        match code {
            0 => Some(Self::Url),
            1 => Some(Self::Host),
            _ => None,
        }
    }

    /// The bytes of `key` that are hashed.
    ///
    /// For [`RouteKey::Host`], the authority after `scheme://` without user information and
    /// port (an IPv6 literal keeps its brackets). A key whose first `:` does not start `://` is
    /// taken to be a host already and used whole, so host lists and URLs route alike.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::RouteKey;
    ///
    /// assert_eq!(RouteKey::Host.select(b"http://[::1]:80/x"), b"[::1]");
    /// assert_eq!(RouteKey::Host.select(b"example.com"), b"example.com");
    /// assert_eq!(RouteKey::Host.select(b"https://example.com#frag"), b"example.com");
    /// ```
    pub fn select(self, key: &[u8]) -> &[u8] {
        match self {
            Self::Url => key,
            Self::Host => host(key),
        }
    }
}

fn host(url: &[u8]) -> &[u8] {
    // A scheme ends at the first ':' (schemes cannot contain one); only "scheme://" starts an
    // authority. One byte search instead of a window scan keeps host routing cheap.
    let Some(colon) = url.iter().position(|&b| b == b':') else {
        return url;
    };
    let Some(rest) = url[colon + 1..].strip_prefix(b"//") else {
        return url;
    };
    let end = rest
        .iter()
        .position(|b| matches!(b, b'/' | b'?' | b'#'))
        .unwrap_or(rest.len());
    let authority = &rest[..end];
    let authority = match authority.iter().rposition(|&b| b == b'@') {
        Some(at) => &authority[at + 1..],
        None => authority,
    };
    if authority.first() == Some(&b'[') {
        // IPv6 literal: the port, if any, follows the closing bracket.
        return match authority.iter().position(|&b| b == b']') {
            Some(close) => &authority[..=close],
            None => authority,
        };
    }
    match authority.iter().rposition(|&b| b == b':') {
        Some(colon) => &authority[..colon],
        None => authority,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_forms() {
        let cases: [(&[u8], &[u8]); 9] = [
            (b"https://example.com/", b"example.com"),
            (b"https://example.com", b"example.com"),
            (b"https://a:b@example.com:443/p", b"example.com"),
            (b"https://example.com?q=1", b"example.com"),
            (b"http://[2001:db8::1]:8080/", b"[2001:db8::1]"),
            (b"http://[2001:db8::1/", b"[2001:db8::1"),
            (b"", b""),
            (b"https://", b""),
            (b"example.com:8080", b"example.com:8080"),
        ];
        for (url, want) in cases {
            assert_eq!(
                RouteKey::Host.select(url),
                want,
                "{:?}",
                String::from_utf8_lossy(url)
            );
        }
    }

    #[test]
    fn codes_round_trip() {
        for k in [RouteKey::Url, RouteKey::Host] {
            assert_eq!(RouteKey::from_code(k.code()), Some(k));
        }
        assert_eq!(RouteKey::from_code(9), None);
    }
}
