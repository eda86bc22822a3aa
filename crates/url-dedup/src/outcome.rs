use std::fmt;

/// What [`UrlDedup::check_and_insert`](crate::UrlDedup::check_and_insert) decided about a URL.
///
/// # Examples
///
/// ```
/// use url_dedup::{Outcome, UrlDedup};
///
/// let dedup = UrlDedup::builder().expected_urls(1_000).build()?;
/// assert_eq!(dedup.check_and_insert("https://example.com/a")?, Outcome::New);
/// assert_eq!(dedup.check_and_insert("https://EXAMPLE.com/a#top")?, Outcome::Duplicate);
/// # Ok::<(), url_dedup::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// Never seen: crawl it. It is now recorded.
    New,
    /// The same canonical URL was seen before (or, with the filter's false-positive rate, a
    /// URL that hashes like it).
    Duplicate,
    /// A different URL, but every similarity feature of it was seen before: probably the same
    /// kind of page. Recorded as seen, so a repeat is a `Duplicate`.
    Similar(Explanation),
}

impl Outcome {
    /// Whether the URL should be crawled.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(url_dedup::Outcome::New.is_new());
    /// assert!(!url_dedup::Outcome::Duplicate.is_new());
    /// ```
    pub fn is_new(&self) -> bool {
        matches!(self, Self::New)
    }

    /// A short lower-case name: `new`, `duplicate` or `similar`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(url_dedup::Outcome::Duplicate.name(), "duplicate");
    /// ```
    pub fn name(&self) -> &'static str {
        match self {
            Self::New => "new",
            Self::Duplicate => "duplicate",
            Self::Similar(_) => "similar",
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Similar(why) => write!(f, "similar ({why})"),
            other => f.write_str(other.name()),
        }
    }
}

/// Which similarity features of a URL had been seen before.
///
/// # Examples
///
/// ```
/// use url_dedup::{Outcome, UrlDedup, similarity::Preset};
///
/// let dedup = UrlDedup::builder().expected_urls(1_000).similarity(Preset::Crawler).build()?;
/// dedup.check_and_insert("https://shop.example/list?sort=price")?;
/// match dedup.check_and_insert("https://shop.example/list?sort=name")? {
///     Outcome::Similar(why) => assert!(why.features().all(|(_, seen)| seen)),
///     other => panic!("expected similar, got {other}"),
/// }
/// # Ok::<(), url_dedup::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Explanation {
    pub(crate) features: Vec<(String, bool)>,
}

impl Explanation {
    /// Each feature's name and whether its value had been seen.
    ///
    /// # Examples
    ///
    /// See [`Explanation`].
    pub fn features(&self) -> impl Iterator<Item = (&str, bool)> {
        self.features.iter().map(|(n, seen)| (n.as_str(), *seen))
    }
}

impl fmt::Display for Explanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let seen: Vec<&str> = self
            .features
            .iter()
            .filter(|(_, s)| *s)
            .map(|(n, _)| n.as_str())
            .collect();
        write!(f, "seen: {}", seen.join(", "))
    }
}
