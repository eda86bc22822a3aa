//! Verdicts, and which features each one matched.

use std::fmt;

/// Which of a filter's features (by index, at most 64) had their bit already set.
///
/// # Examples
///
/// ```
/// use url_dedup_similarity::{Preset, SimilarityFilter};
///
/// let mut f = SimilarityFilter::builder().expected_items(100).preset(Preset::Document004).build()?;
/// f.check_and_insert("http://a.example/news/1.html");
/// let v = f.check_and_insert("http://a.example/blog/1.html");
/// assert!(v.is_new());
/// // site, depth and last page matched; the first directory did not.
/// assert_eq!(v.matches().iter().collect::<Vec<_>>(), [true, true, false, true]);
/// # Ok::<(), url_dedup_similarity::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Matches {
    mask: u64,
    features: u8,
}

impl Matches {
    pub(crate) fn new(mask: u64, features: usize) -> Self {
        Self {
            mask,
            features: features as u8,
        }
    }

    /// Whether feature `index` matched.
    ///
    /// # Examples
    ///
    /// See [`Matches`].
    pub fn matched(&self, index: usize) -> bool {
        index < usize::from(self.features) && self.mask >> index & 1 == 1
    }

    /// Whether every feature matched.
    ///
    /// # Examples
    ///
    /// See [`Verdict::is_similar`].
    pub fn all(&self) -> bool {
        self.count() == usize::from(self.features)
    }

    /// How many features matched.
    ///
    /// # Examples
    ///
    /// See [`Matches`].
    pub fn count(&self) -> usize {
        self.mask.count_ones() as usize
    }

    /// Whether each feature matched, in the filter's feature order.
    ///
    /// # Examples
    ///
    /// See [`Matches`].
    pub fn iter(&self) -> impl ExactSizeIterator<Item = bool> + use<> {
        let mask = self.mask;
        (0..usize::from(self.features)).map(move |i| mask >> i & 1 == 1)
    }
}

/// The answer for one URL.
///
/// # Examples
///
/// ```
/// use url_dedup_similarity::{SimilarityFilter, Verdict};
///
/// let mut f = SimilarityFilter::builder().expected_items(100).build()?;
/// assert!(matches!(f.check_and_insert("http://a.example/x"), Verdict::New(_)));
/// assert!(matches!(f.check_and_insert("http://a.example/x"), Verdict::Similar(_)));
/// # Ok::<(), url_dedup_similarity::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// Some feature had not been seen: the URL is new (and `check_and_insert` recorded it).
    New(Matches),
    /// Every feature had been seen: the URL is similar to what came before.
    Similar(Matches),
}

impl Verdict {
    /// Whether the URL is new.
    ///
    /// # Examples
    ///
    /// See [`Verdict::is_similar`].
    pub fn is_new(&self) -> bool {
        matches!(self, Self::New(_))
    }

    /// Whether the URL is similar to one seen before.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = url_dedup_similarity::SimilarityFilter::builder().expected_items(10).build()?;
    /// assert!(f.check_and_insert("http://a.example/").is_new());
    /// let again = f.check_and_insert("http://a.example/");
    /// assert!(again.is_similar() && again.matches().all());
    /// # Ok::<(), url_dedup_similarity::Error>(())
    /// ```
    pub fn is_similar(&self) -> bool {
        matches!(self, Self::Similar(_))
    }

    /// Which features matched.
    ///
    /// # Examples
    ///
    /// See [`Matches`].
    pub fn matches(&self) -> Matches {
        match *self {
            Self::New(m) | Self::Similar(m) => m,
        }
    }
}

/// A verdict with the names of its features, for logs: `similar (site=yes depth=yes ...)`.
///
/// # Examples
///
/// ```
/// let mut f = url_dedup_similarity::SimilarityFilter::builder()
///     .expected_items(10)
///     .preset(url_dedup_similarity::Preset::Document004)
///     .build()?;
/// let v = f.check_and_insert("http://a.example/x");
/// assert_eq!(
///     f.explain(&v).to_string(),
///     "new (site=no depth=no first_dir=no last_page=no)",
/// );
/// # Ok::<(), url_dedup_similarity::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Explanation<'a> {
    pub(crate) verdict: Verdict,
    pub(crate) names: Vec<&'a str>,
}

impl Explanation<'_> {
    /// Each feature's name and whether it matched.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = url_dedup_similarity::SimilarityFilter::builder().expected_items(10).build()?;
    /// let v = f.check_and_insert("http://a.example/x");
    /// assert!(f.explain(&v).features().all(|(_, matched)| !matched));
    /// # Ok::<(), url_dedup_similarity::Error>(())
    /// ```
    pub fn features(&self) -> impl Iterator<Item = (&str, bool)> {
        self.names
            .iter()
            .copied()
            .zip(self.verdict.matches().iter())
    }
}

impl fmt::Display for Explanation<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.verdict.is_similar() {
            "similar ("
        } else {
            "new ("
        })?;
        for (i, (name, matched)) in self.features().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{name}={}", if matched { "yes" } else { "no" })?;
        }
        f.write_str(")")
    }
}
