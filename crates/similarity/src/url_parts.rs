//! A URL split the way document 004 reads it: `url = u1/u2/.../un`.

/// The pieces of one URL that features look at, borrowed from the URL string.
///
/// `u1` is the site (host and port, without scheme or user info); `u2 .. un` are the path
/// segments. A trailing slash does not add an empty segment (`/docs/` and `/docs` have the
/// same pieces), so the root URL has depth `n = 1`. The fragment is ignored. Splitting is
/// purely textual and never fails: feed canonical URLs (`url-dedup-canon`) so that equal
/// resources split equally.
///
/// # Examples
///
/// ```
/// use url_dedup_similarity::UrlParts;
///
/// let p = UrlParts::parse("https://example.com:8443/news/2024/story.html?id=7#top");
/// assert_eq!(p.site(), "example.com:8443");
/// assert_eq!(p.depth(), 4);
/// assert_eq!(p.first_directory(), Some("news"));
/// assert_eq!(p.last_segment(), Some("story.html"));
/// assert_eq!(p.query(), Some("id=7"));
///
/// let root = UrlParts::parse("https://example.com/");
/// assert_eq!((root.depth(), root.first_directory()), (1, None));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UrlParts<'a> {
    site: &'a str,
    path: &'a str,
    query: Option<&'a str>,
    /// Whether the site has no ASCII capital (always, for a canonical URL): scoped features
    /// copy the site into every value, and lower-casing each copy was a tenth of their work.
    site_is_lowercase: bool,
}

impl<'a> UrlParts<'a> {
    /// Splits `url`. A string without `://` is read as `site/path...` (the document's own
    /// notation).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_similarity::UrlParts;
    ///
    /// let p = UrlParts::parse("example.com/a/b/");
    /// assert_eq!((p.site(), p.depth(), p.last_segment()), ("example.com", 3, Some("b")));
    /// ```
    pub fn parse(url: &'a str) -> Self {
        // Every delimiter is ASCII, so the byte positions found below are character
        // boundaries. memchr searches a word or a vector at a time: splitting was a seventh of
        // a similarity check with byte loops, and the string-pattern machinery cost more.
        let b = url.as_bytes();
        let end = memchr::memchr(b'#', b).unwrap_or(b.len());
        let b = &b[..end];
        // The first `://`: the first `:` followed by `//`.
        let start = memchr::memchr_iter(b':', b)
            .find(|&at| b.get(at + 1..at + 3) == Some(b"//"))
            .map_or(0, |at| at + 3);
        let rest = &b[start..];
        let auth_len = memchr::memchr2(b'/', b'?', rest).unwrap_or(rest.len());
        let site_start = memchr::memrchr(b'@', &rest[..auth_len]).map_or(0, |at| at + 1);
        let after = &rest[auth_len..];
        let (path_len, query) = match memchr::memchr(b'?', after) {
            Some(at) => (at, Some(start + auth_len + at + 1..end)),
            None => (after.len(), None),
        };
        // Trailing slashes add no segment: `/docs/` has the pieces of `/docs`.
        let mut path_end = path_len;
        while path_end > 0 && after[path_end - 1] == b'/' {
            path_end -= 1;
        }
        let path_start = start + auth_len;
        let text = |range: std::ops::Range<usize>| url.get(range).unwrap_or_default();
        let site = text(start + site_start..path_start);
        let path = text(path_start..path_start + path_end);
        Self {
            site,
            path,
            query: query.map(text),
            site_is_lowercase: !site.bytes().any(|b| b.is_ascii_uppercase()),
        }
    }

    /// `u1`: host and port, as written (lower-case when the URL is canonical).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(url_dedup_similarity::UrlParts::parse("http://u:p@a.b:81/").site(), "a.b:81");
    /// ```
    pub fn site(&self) -> &'a str {
        self.site
    }

    /// The path segments `u2 .. un`, without the leading and trailing slashes.
    ///
    /// # Examples
    ///
    /// ```
    /// let p = url_dedup_similarity::UrlParts::parse("http://a.b/x//y/");
    /// assert_eq!(p.segments().collect::<Vec<_>>(), ["x", "", "y"]);
    /// ```
    pub fn segments(&self) -> impl DoubleEndedIterator<Item = &'a str> + Clone + use<'a> {
        // The path is empty or starts with `/`.
        self.path
            .strip_prefix('/')
            .into_iter()
            .flat_map(|tail| tail.split('/'))
    }

    /// The path without trailing slashes (`""` for the root).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(url_dedup_similarity::UrlParts::parse("http://a.b/x/y/").path(), "/x/y");
    /// ```
    pub fn path(&self) -> &'a str {
        self.path
    }

    /// `n`: one for the site plus one per path segment. The root URL has depth 1.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(url_dedup_similarity::UrlParts::parse("http://a.b/x/y").depth(), 3);
    /// ```
    pub fn depth(&self) -> usize {
        // The path is empty or starts with `/`, one per segment.
        1 + self.path.bytes().filter(|&b| b == b'/').count()
    }

    /// `u2`, the first path segment, when there is one.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(url_dedup_similarity::UrlParts::parse("http://a.b/x/y").first_directory(), Some("x"));
    /// ```
    pub fn first_directory(&self) -> Option<&'a str> {
        let tail = self.path.strip_prefix('/')?;
        Some(memchr::memchr(b'/', tail.as_bytes()).map_or(tail, |at| &tail[..at]))
    }

    /// `un` for `n >= 2`, the last path segment.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(url_dedup_similarity::UrlParts::parse("http://a.b/x/y.html").last_segment(), Some("y.html"));
    /// ```
    pub fn last_segment(&self) -> Option<&'a str> {
        let at = memchr::memrchr(b'/', self.path.as_bytes())?;
        Some(&self.path[at + 1..])
    }

    /// The path up to (not including) the last segment: the page's directory.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(url_dedup_similarity::UrlParts::parse("http://a.b/x/y/z").directory(), "/x/y");
    /// assert_eq!(url_dedup_similarity::UrlParts::parse("http://a.b/").directory(), "");
    /// ```
    pub fn directory(&self) -> &'a str {
        let at = memchr::memrchr(b'/', self.path.as_bytes());
        at.map_or("", |at| &self.path[..at])
    }

    /// Whether [`site`](Self::site) has no ASCII capital letter.
    pub(crate) fn site_is_lowercase(&self) -> bool {
        self.site_is_lowercase
    }

    /// The query, without `?`, when there is one (possibly empty).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(url_dedup_similarity::UrlParts::parse("http://a.b/?").query(), Some(""));
    /// assert_eq!(url_dedup_similarity::UrlParts::parse("http://a.b/").query(), None);
    /// ```
    pub fn query(&self) -> Option<&'a str> {
        self.query
    }
}

#[cfg(test)]
mod tests {
    use proptest::prop_assert_eq;

    use super::*;

    /// The splitting rules spelled out with string patterns, to check the byte scan against.
    fn model(url: &str) -> (&str, &str, Option<&str>) {
        let url = url.split_once('#').map_or(url, |(before, _)| before);
        let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
        let auth_end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, rest) = rest.split_at(auth_end);
        let site = authority
            .rsplit_once('@')
            .map_or(authority, |(_, host)| host);
        let (path, query) = match rest.split_once('?') {
            Some((path, query)) => (path, Some(query)),
            None => (rest, None),
        };
        (site, path.trim_end_matches('/'), query)
    }

    proptest::proptest! {
        #[test]
        fn the_byte_scan_splits_as_the_rules_say(
            url in "(https?://|[a-z]{0,3}:/?/?)?([a-zé@:.]{0,6})([/?#@:]{1,2}[a-zé0-9./]{0,4}){0,6}"
        ) {
            let p = UrlParts::parse(&url);
            let (site, path, query) = model(&url);
            proptest::prop_assert_eq!((p.site(), p.path(), p.query()), (site, path, query));
            let segments: Vec<&str> = p.segments().collect();
            proptest::prop_assert_eq!(p.depth(), 1 + segments.len());
            proptest::prop_assert_eq!(p.first_directory(), segments.first().copied());
            proptest::prop_assert_eq!(p.last_segment(), segments.last().copied());
            proptest::prop_assert_eq!(
                p.directory(),
                p.path().rsplit_once('/').map_or("", |(dir, _)| dir)
            );
        }

        /// Every built-in value that holds the site holds it lower-cased, whatever the case
        /// it was written in: the check that skips lower-casing a lower-case site must not
        /// skip a site with a capital anywhere.
        #[test]
        fn sites_are_lower_cased_in_every_value(
            site in "[a-zA-Z0-9.-]{1,12}(:[0-9]{1,3})?",
            path in "(/[a-zA-Z0-9.]{0,5}){0,4}",
        ) {
            let written = format!("https://{site}{path}");
            let lower = format!("https://{}{path}", site.to_ascii_lowercase());
            let (written, lower) = (UrlParts::parse(&written), UrlParts::parse(&lower));
            prop_assert_eq!(written.site_is_lowercase(), site == site.to_ascii_lowercase());
            for feature in crate::Preset::Crawler.features() {
                let value = |parts: &UrlParts<'_>| {
                    let mut out = Vec::new();
                    feature.write_value(parts, &mut out);
                    out
                };
                prop_assert_eq!(value(&written), value(&lower), "{}", feature.name());
            }
        }
    }
}
