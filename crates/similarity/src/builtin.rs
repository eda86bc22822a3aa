//! The built-in features: the four of document 004 and the recommended additions.
//!
//! | name | value |
//! |---|---|
//! | `site` | `u1`: host and port, ASCII lower-cased |
//! | `depth` | `n`, in decimal |
//! | `first_dir` | `u2`, empty when `n = 1` |
//! | `last_page` | `un` with the query (`un` is `u1` when `n = 1`), as in document 004 |
//! | `last_segment` | `un` without the query; empty when `n = 1` |
//! | `query_names` | `?` and the sorted, distinct parameter names, or empty without a query |
//! | `query_key` | `?` and the sorted parameters that identify content (all but presentation parameters with word values), or empty if none |
//! | `path_template` | the path with digit runs written `{int}`: `/item/{int}/page-{int}.html` |
//! | `extension` | the last segment's extension, lower-cased (`html`), or empty |
//!
//! [`Scoped`] prefixes any of them with the site (`site:last_segment`), the site and the
//! page's directory (`dir:last_segment`) or the site and the whole path (`path:query_key`), so
//! that a value seen on one site or path says nothing about another.

use std::sync::Arc;

use crate::{Feature, UrlParts};

/// `u1`, the site: host and port.
///
/// # Examples
///
/// ```
/// use url_dedup_similarity::{Feature, UrlParts, builtin::Site};
///
/// let mut v = Vec::new();
/// Site.write_value(&UrlParts::parse("https://Example.com:81/a"), &mut v);
/// assert_eq!(v, b"example.com:81");
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Site;

impl Feature for Site {
    fn name(&self) -> &str {
        "site"
    }
    fn write_value(&self, url: &UrlParts<'_>, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(url.site().as_bytes());
        if !url.site_is_lowercase() {
            out[start..].make_ascii_lowercase();
        }
    }
}

/// `n`, the depth: one plus the number of path segments.
///
/// # Examples
///
/// ```
/// use url_dedup_similarity::{Feature, UrlParts, builtin::Depth};
///
/// let mut v = Vec::new();
/// Depth.write_value(&UrlParts::parse("https://example.com/a/b"), &mut v);
/// assert_eq!(v, b"3");
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Depth;

impl Feature for Depth {
    fn name(&self) -> &str {
        "depth"
    }
    fn write_value(&self, url: &UrlParts<'_>, out: &mut Vec<u8>) {
        push_decimal(out, url.depth());
    }
}

/// `u2`, the first directory (empty for the root).
///
/// # Examples
///
/// ```
/// use url_dedup_similarity::{Feature, UrlParts, builtin::FirstDirectory};
///
/// let mut v = Vec::new();
/// FirstDirectory.write_value(&UrlParts::parse("https://example.com/news/1"), &mut v);
/// assert_eq!(v, b"news");
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct FirstDirectory;

impl Feature for FirstDirectory {
    fn name(&self) -> &str {
        "first_dir"
    }
    fn write_value(&self, url: &UrlParts<'_>, out: &mut Vec<u8>) {
        out.extend_from_slice(url.first_directory().unwrap_or_default().as_bytes());
    }
}

/// `un`, the last page, as document 004 defines it: the last piece of `u1/u2/.../un`, so the
/// query belongs to it and the root's last page is the site.
///
/// # Examples
///
/// ```
/// use url_dedup_similarity::{Feature, UrlParts, builtin::LastPage};
///
/// let mut v = Vec::new();
/// LastPage.write_value(&UrlParts::parse("https://example.com/a/list.php?p=2"), &mut v);
/// assert_eq!(v, b"list.php?p=2");
/// v.clear();
/// LastPage.write_value(&UrlParts::parse("https://example.com/"), &mut v);
/// assert_eq!(v, b"example.com");
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct LastPage;

impl Feature for LastPage {
    fn name(&self) -> &str {
        "last_page"
    }
    fn write_value(&self, url: &UrlParts<'_>, out: &mut Vec<u8>) {
        match url.last_segment() {
            Some(last) => out.extend_from_slice(last.as_bytes()),
            None => Site.write_value(url, out),
        }
        if let Some(query) = url.query() {
            out.push(b'?');
            out.extend_from_slice(query.as_bytes());
        }
    }
}

/// The last path segment without the query (empty for the root).
///
/// # Examples
///
/// ```
/// use url_dedup_similarity::{Feature, UrlParts, builtin::LastSegment};
///
/// let mut v = Vec::new();
/// LastSegment.write_value(&UrlParts::parse("https://example.com/a/list.php?p=2"), &mut v);
/// assert_eq!(v, b"list.php");
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct LastSegment;

impl Feature for LastSegment {
    fn name(&self) -> &str {
        "last_segment"
    }
    fn write_value(&self, url: &UrlParts<'_>, out: &mut Vec<u8>) {
        out.extend_from_slice(url.last_segment().unwrap_or_default().as_bytes());
    }
}

/// The set of query-parameter names: `?` followed by the distinct names in sorted order,
/// joined by `&`; empty when the URL has no query.
///
/// # Examples
///
/// ```
/// use url_dedup_similarity::{Feature, UrlParts, builtin::QueryNames};
///
/// let mut v = Vec::new();
/// QueryNames.write_value(&UrlParts::parse("https://e.com/s?q=rust&page=2&q=go"), &mut v);
/// assert_eq!(v, b"?page&q");
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct QueryNames;

impl Feature for QueryNames {
    fn name(&self) -> &str {
        "query_names"
    }
    fn write_value(&self, url: &UrlParts<'_>, out: &mut Vec<u8>) {
        let Some(query) = url.query() else {
            return;
        };
        let mut names: Vec<&str> = query
            .split('&')
            .filter(|pair| !pair.is_empty())
            .map(|pair| pair.split_once('=').map_or(pair, |(name, _)| name))
            .collect();
        names.sort_unstable();
        names.dedup();
        out.push(b'?');
        for (i, name) in names.iter().enumerate() {
            if i > 0 {
                out.push(b'&');
            }
            out.extend_from_slice(name.as_bytes());
        }
    }
}

/// The query reduced to the parameters that identify content: `?` followed by those
/// `name=value` pairs in sorted order, or empty when there are none. Parameters that only
/// change presentation are dropped, so `/item/7?color=red` has the key of `/item/7`.
///
/// By default ([`QueryKey::default`]) a parameter identifies content unless its name is a known
/// presentation parameter (referral tags, sort order, display options, highlighting:
/// [`QueryKey::PRESENTATION_PARAMS`]) and its value has no digit. So bare keys
/// (`/bugs/?50414`), ids, page numbers and dates (`id=42`, `page=2`), and words, slugs and
/// names (`ring=caern`, `pet_name=rex`, `command=open`, `q=bloom`) all identify pages: a word
/// that varies across otherwise-equal URLs names a page as often as an id does, and folding it
/// loses the page, where keeping a presentation variant costs one fetch. Repeated identical
/// pairs count once; empty values identify nothing.
///
/// [`QueryKey::new`] keeps the older, more folding rule: word values count only for the
/// parameters it lists.
///
/// # Examples
///
/// ```
/// use url_dedup_similarity::{Feature, UrlParts, builtin::QueryKey};
///
/// let mut v = Vec::new();
/// QueryKey::default().write_value(&UrlParts::parse("https://e.com/s?ref=rss&q=bloom&id=7"), &mut v);
/// assert_eq!(v, b"?id=7&q=bloom");
/// v.clear();
/// QueryKey::default().write_value(&UrlParts::parse("https://e.com/hub?ring=caern&sort=name"), &mut v);
/// assert_eq!(v, b"?ring=caern");
/// v.clear();
/// QueryKey::default().write_value(&UrlParts::parse("https://e.com/s?sort=name"), &mut v);
/// assert!(v.is_empty());
/// ```
#[derive(Clone, Debug)]
pub struct QueryKey {
    words: WordValues,
    name: String,
}

/// Which parameters with a word value (no digit) count.
#[derive(Clone, Debug)]
enum WordValues {
    /// Every one but these presentation parameters.
    AllBut(Vec<Box<str>>),
    /// Only these content parameters.
    Only(Vec<Box<str>>),
}

impl Default for QueryKey {
    fn default() -> Self {
        Self::with_presentation_params(Self::PRESENTATION_PARAMS)
    }
}

fn lower_names<I, S>(names: I) -> Vec<Box<str>>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    names
        .into_iter()
        .map(|s| s.as_ref().to_ascii_lowercase().into_boxed_str())
        .collect()
}

impl QueryKey {
    /// The default presentation parameters, whose word values do not tell pages apart:
    /// referral tags (`ref`, `referer`, `referrer`, `ref_src`, `via`, `share`, `shared`), sort
    /// order (`sort`, `sortby`, `sort_by`, `order`, `orderby`, `order_by`, `direction`),
    /// display options (`layout`, `skin`, `style`, `color`, `colour`, `print`, `printable`,
    /// `logo`, `labelcolor`) and search-term highlighting (`highlight`, `hilite`).
    ///
    /// Left out on purpose, because their word values often do name pages: `source` and
    /// `from` (`from=en&to=de`), `dir` (a directory browser's path), `view`, `mode`, `tab`,
    /// `action` (`action=history` is another page than `action=view`), `format`, and `theme`
    /// (a news portal's topic: `NewsLink.htm?Theme=Windows+NT`).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_similarity::builtin::QueryKey;
    ///
    /// assert!(QueryKey::PRESENTATION_PARAMS.contains(&"sort"));
    /// assert!(!QueryKey::PRESENTATION_PARAMS.contains(&"action"));
    /// ```
    pub const PRESENTATION_PARAMS: [&'static str; 25] = [
        "ref",
        "referer",
        "referrer",
        "ref_src",
        "via",
        "share",
        "shared",
        "sort",
        "sortby",
        "sort_by",
        "order",
        "orderby",
        "order_by",
        "direction",
        "layout",
        "skin",
        "style",
        "color",
        "colour",
        "print",
        "printable",
        "logo",
        "labelcolor",
        "highlight",
        "hilite",
    ];

    /// A query key where every word value counts except those of `presentation_params`
    /// (compared without regard to ASCII case); digit-bearing values always count.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_similarity::{Feature, UrlParts, builtin::QueryKey};
    ///
    /// let key = QueryKey::with_presentation_params(["tab"]);
    /// let mut v = Vec::new();
    /// key.write_value(&UrlParts::parse("https://e.com/?tab=code&sort=name"), &mut v);
    /// assert_eq!(v, b"?sort=name");
    /// // A custom list is part of the name, so snapshots cannot mix the two up.
    /// assert_eq!(key.name(), "query_key[except:tab]");
    /// assert_eq!(QueryKey::default().name(), "query_key");
    /// ```
    pub fn with_presentation_params<I, S>(presentation_params: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let params = lower_names(presentation_params);
        let name = if params.iter().map(|p| &**p).eq(Self::PRESENTATION_PARAMS) {
            "query_key".to_owned()
        } else {
            format!("query_key[except:{}]", params.join(","))
        };
        Self {
            words: WordValues::AllBut(params),
            name,
        }
    }

    /// A query key whose word values count only for the parameters in `content_params`
    /// (compared without regard to ASCII case); digit-bearing values always count. This
    /// folds more than the default, including pages told apart by an unlisted word-valued
    /// parameter (`?ring=caern`, `?ring=vtes`): use it for sites whose parameters are known.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_similarity::{Feature, UrlParts, builtin::QueryKey};
    ///
    /// let mut v = Vec::new();
    /// QueryKey::new(["tab"]).write_value(&UrlParts::parse("https://e.com/?tab=code&q=x"), &mut v);
    /// assert_eq!(v, b"?tab=code");
    /// assert_eq!(QueryKey::new(["tab"]).name(), "query_key[tab]");
    /// ```
    pub fn new<I, S>(content_params: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let params = lower_names(content_params);
        let name = format!("query_key[{}]", params.join(","));
        Self {
            words: WordValues::Only(params),
            name,
        }
    }

    fn identifies(&self, name: &str, value: &str) -> bool {
        let listed = |params: &[Box<str>]| {
            params
                .iter()
                .any(|p| p.as_bytes().eq_ignore_ascii_case(name.as_bytes()))
        };
        value.bytes().any(|b| b.is_ascii_digit())
            || match &self.words {
                WordValues::AllBut(presentation) => !value.is_empty() && !listed(presentation),
                WordValues::Only(content) => listed(content),
            }
    }
}

impl Feature for QueryKey {
    fn name(&self) -> &str {
        &self.name
    }
    fn write_value(&self, url: &UrlParts<'_>, out: &mut Vec<u8>) {
        let Some(query) = url.query() else {
            return;
        };
        let mut pairs: Vec<(&str, &str)> = query
            .split('&')
            .filter(|pair| !pair.is_empty())
            .filter_map(|pair| match pair.split_once('=') {
                Some((name, value)) => self.identifies(name, value).then_some((name, value)),
                // A bare key (`/bugs/?50414`, `/wiki?Main_Page`) is the whole address.
                None => Some((pair, "")),
            })
            .collect();
        if pairs.is_empty() {
            return;
        }
        pairs.sort_unstable();
        pairs.dedup();
        out.push(b'?');
        for (i, (name, value)) in pairs.iter().enumerate() {
            if i > 0 {
                out.push(b'&');
            }
            out.extend_from_slice(name.as_bytes());
            if !value.is_empty() {
                out.push(b'=');
                out.extend_from_slice(value.as_bytes());
            }
        }
    }
}

/// The path with every run of ASCII digits replaced by `{int}`: `/item/42/page-7.html` is
/// `/item/{int}/page-{int}.html`. Pages generated from one template share it.
///
/// # Examples
///
/// ```
/// use url_dedup_similarity::{Feature, UrlParts, builtin::PathTemplate};
///
/// let mut v = Vec::new();
/// PathTemplate.write_value(&UrlParts::parse("https://e.com/item/42/page-7.html"), &mut v);
/// assert_eq!(v, b"/item/{int}/page-{int}.html");
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct PathTemplate;

impl Feature for PathTemplate {
    fn name(&self) -> &str {
        "path_template"
    }
    fn write_value(&self, url: &UrlParts<'_>, out: &mut Vec<u8>) {
        // Runs of non-digits are copied whole, each run of digits becomes one `{int}`.
        let mut rest = url.path().as_bytes();
        while !rest.is_empty() {
            let plain = rest
                .iter()
                .position(u8::is_ascii_digit)
                .unwrap_or(rest.len());
            out.extend_from_slice(&rest[..plain]);
            rest = &rest[plain..];
            let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
            if digits > 0 {
                out.extend_from_slice(b"{int}");
                rest = &rest[digits..];
            }
        }
    }
}

/// The last segment's file extension, lower-cased; empty when it has none (or it is longer
/// than 10 characters, which is a name with a dot rather than an extension).
///
/// # Examples
///
/// ```
/// use url_dedup_similarity::{Feature, UrlParts, builtin::Extension};
///
/// let mut v = Vec::new();
/// Extension.write_value(&UrlParts::parse("https://e.com/a/report.PDF"), &mut v);
/// assert_eq!(v, b"pdf");
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Extension;

impl Feature for Extension {
    fn name(&self) -> &str {
        "extension"
    }
    fn write_value(&self, url: &UrlParts<'_>, out: &mut Vec<u8>) {
        let last = url.last_segment().unwrap_or_default().as_bytes();
        if let Some(dot) = last.iter().rposition(|&b| b == b'.')
            && last.len() - dot - 1 <= 10
        {
            let start = out.len();
            out.extend_from_slice(&last[dot + 1..]);
            out[start..].make_ascii_lowercase();
        }
    }
}

/// What a [`Scoped`] feature's value is prefixed with.
///
/// # Examples
///
/// ```
/// use url_dedup_similarity::builtin::{LastSegment, Scope, Scoped};
/// use url_dedup_similarity::Feature;
///
/// assert_eq!(Scoped::new(Scope::Directory, LastSegment).name(), "dir:last_segment");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Scope {
    /// The site (`u1`): values count as seen only on the same site.
    Site,
    /// The site and the page's directory (the path without its last segment).
    Directory,
    /// The site and the whole path: values count as seen only on the same page.
    Path,
}

/// A feature whose value is qualified by the site, or by the site and directory.
///
/// Document 004 compares each feature against every URL ever seen: a page called `2.html`
/// anywhere on the web makes `2.html` "seen" on every site. Scoping removes that coupling.
///
/// # Examples
///
/// ```
/// use url_dedup_similarity::builtin::{Depth, Scope, Scoped};
/// use url_dedup_similarity::{Feature, UrlParts};
///
/// let mut v = Vec::new();
/// Scoped::new(Scope::Site, Depth).write_value(&UrlParts::parse("https://e.com/a"), &mut v);
/// assert_eq!(v, b"e.com\x002");
/// ```
#[derive(Debug)]
pub struct Scoped<F> {
    scope: Scope,
    inner: F,
    name: String,
}

impl<F: Feature> Scoped<F> {
    /// `inner`, qualified by `scope`.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_similarity::builtin::{QueryNames, Scope, Scoped};
    /// use url_dedup_similarity::Feature;
    ///
    /// assert_eq!(Scoped::new(Scope::Site, QueryNames).name(), "site:query_names");
    /// ```
    pub fn new(scope: Scope, inner: F) -> Self {
        let prefix = match scope {
            Scope::Site => "site",
            Scope::Directory => "dir",
            Scope::Path => "path",
        };
        let name = format!("{prefix}:{}", inner.name());
        Self { scope, inner, name }
    }
}

impl<F: Feature> Feature for Scoped<F> {
    fn name(&self) -> &str {
        &self.name
    }
    fn write_value(&self, url: &UrlParts<'_>, out: &mut Vec<u8>) {
        Site.write_value(url, out);
        match self.scope {
            Scope::Site => {}
            Scope::Directory => out.extend_from_slice(url.directory().as_bytes()),
            Scope::Path => out.extend_from_slice(url.path().as_bytes()),
        }
        // NUL cannot occur in a URL, so the prefix and the value cannot run together.
        out.push(0);
        self.inner.write_value(url, out);
    }
}

/// The built-in feature called `name` (as [`Feature::name`] reports it), for reopening
/// snapshots.
///
/// # Examples
///
/// ```
/// use url_dedup_similarity::builtin::by_name;
///
/// assert_eq!(by_name("dir:last_segment").unwrap().name(), "dir:last_segment");
/// assert!(by_name("colour").is_none());
/// ```
pub fn by_name(name: &str) -> Option<Arc<dyn Feature>> {
    fn plain(name: &str) -> Option<Arc<dyn Feature>> {
        Some(match name {
            "site" => Arc::new(Site),
            "depth" => Arc::new(Depth),
            "first_dir" => Arc::new(FirstDirectory),
            "last_page" => Arc::new(LastPage),
            "last_segment" => Arc::new(LastSegment),
            "query_names" => Arc::new(QueryNames),
            "query_key" => Arc::new(QueryKey::default()),
            "path_template" => Arc::new(PathTemplate),
            "extension" => Arc::new(Extension),
            _ => return None,
        })
    }
    fn scoped<F: Feature>(scope: Scope, inner: F) -> Arc<dyn Feature> {
        Arc::new(Scoped::new(scope, inner))
    }
    let (scope, inner) = match name.split_once(':') {
        None => return plain(name),
        Some(("site", inner)) => (Scope::Site, inner),
        Some(("dir", inner)) => (Scope::Directory, inner),
        Some(("path", inner)) => (Scope::Path, inner),
        Some(_) => return None,
    };
    Some(match inner {
        "site" => scoped(scope, Site),
        "depth" => scoped(scope, Depth),
        "first_dir" => scoped(scope, FirstDirectory),
        "last_page" => scoped(scope, LastPage),
        "last_segment" => scoped(scope, LastSegment),
        "query_names" => scoped(scope, QueryNames),
        "query_key" => scoped(scope, QueryKey::default()),
        "path_template" => scoped(scope, PathTemplate),
        "extension" => scoped(scope, Extension),
        _ => return None,
    })
}

fn push_decimal(out: &mut Vec<u8>, mut n: usize) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}
