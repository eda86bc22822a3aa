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
        }
    }
}
