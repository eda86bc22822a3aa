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
        // Trailing slashes add no segment: `/docs/` has the pieces of `/docs`.
        let path = path.trim_end_matches('/');
        Self { site, path, query }
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
        1 + self.segments().count()
    }

    /// `u2`, the first path segment, when there is one.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(url_dedup_similarity::UrlParts::parse("http://a.b/x/y").first_directory(), Some("x"));
    /// ```
    pub fn first_directory(&self) -> Option<&'a str> {
        self.segments().next()
    }

    /// `un` for `n >= 2`, the last path segment.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(url_dedup_similarity::UrlParts::parse("http://a.b/x/y.html").last_segment(), Some("y.html"));
    /// ```
    pub fn last_segment(&self) -> Option<&'a str> {
        self.segments().next_back()
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
        self.path.rsplit_once('/').map_or("", |(dir, _)| dir)
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
