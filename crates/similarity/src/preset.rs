//! Named sets of features.

use std::sync::Arc;

use crate::Feature;
use crate::builtin::{
    Depth, Extension, FirstDirectory, LastPage, LastSegment, PathTemplate, QueryKey, Scope, Scoped,
    Site,
};

/// A named set of features.
///
/// # Examples
///
/// ```
/// use url_dedup_similarity::Preset;
///
/// let names: Vec<String> =
///     Preset::Document004.features().iter().map(|f| f.name().to_owned()).collect();
/// assert_eq!(names, ["site", "depth", "first_dir", "last_page"]);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Preset {
    /// Exactly the four features of document 004: site `u1`, depth `n`, first directory `u2`
    /// and last page `un`, each compared against every URL seen so far, on any site.
    ///
    /// Measured in [`docs/similarity.md`](https://github.com/url-dedup/url-dedup/blob/main/docs/similarity.md): it folds many genuinely different pages, because a
    /// URL is "similar" as soon as each of its four values was seen *somewhere*.
    Document004,
    /// The recommended crawler preset: the document's features scoped to the site, plus what
    /// they miss. A URL is similar only when, on the same site, its directory already had a
    /// page of this name (`dir:last_segment`), the same path was seen with the same query key
    /// (`path:query_key`: every parameter but the known presentation ones, whose word values
    /// are dropped; ids, page numbers, search terms and word values such as `?ring=caern` all
    /// count), and its path template (`/item/{int}`), depth, first directory and file extension
    /// were all seen before. In practice it folds URLs that differ only in presentation
    /// parameters (`?ref=rss`, `?sort=name`, `?color=red`) and keeps pages told apart by any
    /// other parameter.
    #[default]
    Crawler,
    /// The crawler preset's deciding feature alone: the site and the whole path with the
    /// query key (`path:query_key`). A URL is similar when the same page was seen with the
    /// same identifying parameters, which is when [`Crawler`](Self::Crawler) finds it similar,
    /// chance aside: each of the crawler preset's six other values is read from the site and
    /// the path (the depth, the first directory, the directory's page, the path template, the
    /// extension), so a URL whose page and query key were truly seen matches all of them too.
    ///
    /// One value per URL instead of seven: a seventh of the memory and of the hashing. The
    /// price is in chance folds: here a new URL is taken for similar with probability `P`; in
    /// the crawler preset a URL with a new path must match two or more new values by chance
    /// (`P^2`), though one with a new query on a known page also needs only one (`P`). At the
    /// command's default `P` of one in a billion both are negligible; at 1% measure first
    /// ([`docs/similarity.md`](https://github.com/url-dedup/url-dedup/blob/main/docs/similarity.md)).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_similarity::{Preset, SimilarityFilter};
    ///
    /// let mut page = SimilarityFilter::builder().false_positive_rate(1e-9).preset(Preset::Page).build()?;
    /// let mut crawler = SimilarityFilter::builder().false_positive_rate(1e-9).build()?;
    /// for url in [
    ///     "https://shop.example/item/42?color=red",
    ///     "https://shop.example/item/42?color=blue", // presentation: similar
    ///     "https://shop.example/item/43?color=red",  // another item: new
    ///     "https://shop.example/item/42?page=2",     // another page of it: new
    /// ] {
    ///     assert_eq!(page.check_and_insert(url).is_similar(), crawler.check_and_insert(url).is_similar());
    /// }
    /// assert_eq!(page.len(), 3);
    /// assert_eq!(crawler.bits() / page.bits(), 7);
    /// # Ok::<(), url_dedup_similarity::Error>(())
    /// ```
    Page,
}

impl Preset {
    /// The preset's features, in order (the order of [`Matches`](crate::Matches)).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(url_dedup_similarity::Preset::Crawler.features().len(), 7);
    /// ```
    pub fn features(self) -> Vec<Arc<dyn Feature>> {
        match self {
            Self::Document004 => vec![
                Arc::new(Site),
                Arc::new(Depth),
                Arc::new(FirstDirectory),
                Arc::new(LastPage),
            ],
            Self::Crawler => vec![
                Arc::new(Site),
                Arc::new(Scoped::new(Scope::Site, Depth)),
                Arc::new(Scoped::new(Scope::Site, FirstDirectory)),
                Arc::new(Scoped::new(Scope::Directory, LastSegment)),
                Arc::new(Scoped::new(Scope::Path, QueryKey::default())),
                Arc::new(Scoped::new(Scope::Site, PathTemplate)),
                Arc::new(Scoped::new(Scope::Site, Extension)),
            ],
            Self::Page => vec![Arc::new(Scoped::new(Scope::Path, QueryKey::default()))],
        }
    }
}
