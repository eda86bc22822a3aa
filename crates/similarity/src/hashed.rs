//! Feature values hashed away from the filter: on the threads that read and canonicalize URLs,
//! so that the one thread that decides in order only tests and sets bits.

use std::fmt;
use std::sync::Arc;

use url_dedup_bloom::HashKey;
use url_dedup_bloom::hash::{ItemHasher, SipHash13};

use crate::feature_hash::{Hashed, ValueHasher};
use crate::{Feature, FeatureHash, UrlParts};

/// Hashes URLs' feature values exactly as the [`SimilarityFilter`](crate::SimilarityFilter)
/// it came from does, on any thread. Cheap to clone (the features are shared).
///
/// A filter's verdict needs every feature's value of a URL, hashed with the filter's key:
/// splitting a URL and hashing its values (seven in the crawler preset) is most of a check's
/// work when the filter's blocks are in the cache, and none of it depends on what was recorded
/// before. Hash on worker threads into
/// [`FeatureHashes`], then decide in order with
/// [`check_and_insert_hashed`](crate::SimilarityFilter::check_and_insert_hashed).
///
/// # Examples
///
/// ```
/// use url_dedup_similarity::{FeatureHashes, SimilarityFilter};
///
/// let mut filter = SimilarityFilter::builder().build()?;
/// let hasher = filter.feature_hasher();
/// let hashed = std::thread::spawn(move || {
///     let mut hashed = FeatureHashes::new(&hasher);
///     hashed.push("https://shop.example/item/42?color=red");
///     hashed.push("https://shop.example/item/42?color=blue");
///     hashed
/// })
/// .join()
/// .unwrap();
/// let verdicts = filter.check_and_insert_hashed(&hashed.urls().collect::<Vec<_>>())?;
/// assert!(verdicts[0].is_new() && verdicts[1].is_similar());
/// # Ok::<(), url_dedup_similarity::Error>(())
/// ```
#[derive(Clone)]
pub struct FeatureHasher {
    features: Arc<[Arc<dyn Feature>]>,
    hasher: ValueHasher,
    origin: u64,
}

impl FeatureHasher {
    pub(crate) fn new(
        features: &[Arc<dyn Feature>],
        hash: FeatureHash,
        key: Option<HashKey>,
    ) -> Self {
        Self {
            features: features.into(),
            hasher: ValueHasher::new(hash, key),
            origin: origin(features, hash, key),
        }
    }

    /// Appends the hash of each feature's value of `url` to `out`, in feature order;
    /// `value` is scratch space. The one place a URL's features are hashed, for the filter's
    /// own calls and for [`FeatureHashes`].
    #[inline]
    pub(crate) fn hash_into(&self, url: &str, value: &mut Vec<u8>, out: &mut Vec<Hashed>) {
        let parts = UrlParts::parse(url);
        for feature in self.features.iter() {
            value.clear();
            feature.write_value(&parts, value);
            out.push(self.hasher.hash(value));
        }
    }

    /// The features, in order.
    pub(crate) fn features_of(&self) -> &[Arc<dyn Feature>] {
        &self.features
    }

    /// The number of features: hashes per URL.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_similarity::SimilarityFilter::builder().build()?;
    /// assert_eq!(f.feature_hasher().features(), 7);
    /// # Ok::<(), url_dedup_similarity::Error>(())
    /// ```
    pub fn features(&self) -> usize {
        self.features.len()
    }

    /// What the hashes depend on, folded into one number: filters that agree on it hash
    /// alike, so a filter accepts hashes only from a hasher with its own origin.
    pub(crate) fn origin(&self) -> u64 {
        self.origin
    }
}

impl fmt::Debug for FeatureHasher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.features.iter().map(|f| f.name()).collect();
        f.debug_struct("FeatureHasher")
            .field("features", &names)
            .finish_non_exhaustive()
    }
}

/// Everything a feature value's hash depends on (the feature hash, the key and the features'
/// names, which snapshots also use to tell features apart), hashed with a fixed key.
fn origin(features: &[Arc<dyn Feature>], hash: FeatureHash, key: Option<HashKey>) -> u64 {
    let mut bytes = Vec::with_capacity(64);
    bytes.extend_from_slice(&hash.id().to_le_bytes());
    match key {
        Some(key) => {
            bytes.push(1);
            bytes.extend_from_slice(&key.to_bytes());
        }
        None => bytes.push(0),
    }
    for feature in features {
        let name = feature.name().as_bytes();
        bytes.extend_from_slice(&(name.len() as u64).to_le_bytes());
        bytes.extend_from_slice(name);
    }
    SipHash13::new(HashKey::from_bytes([0; 16])).hash(&bytes).h1
}

/// The feature hashes of many URLs, in the order they were pushed: what a
/// [`FeatureHasher`] makes on a worker thread and a filter decides from. One allocation for
/// the batch, 24 bytes per feature per URL (168 for the crawler preset).
///
/// # Examples
///
/// ```
/// use url_dedup_similarity::{FeatureHashes, SimilarityFilter};
///
/// let filter = SimilarityFilter::builder().build()?;
/// let mut hashed = FeatureHashes::new(&filter.feature_hasher());
/// assert_eq!(hashed.push("https://a.example/x"), 0);
/// assert_eq!(hashed.push("https://a.example/y"), 1);
/// assert_eq!(hashed.len(), 2);
/// assert!(hashed.get(1).is_some() && hashed.get(2).is_none());
/// # Ok::<(), url_dedup_similarity::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct FeatureHashes {
    hasher: FeatureHasher,
    hashed: Vec<Hashed>,
    value: Vec<u8>,
}

impl FeatureHashes {
    /// An empty batch for URLs hashed by `hasher`.
    ///
    /// # Examples
    ///
    /// See [`FeatureHashes`].
    pub fn new(hasher: &FeatureHasher) -> Self {
        Self {
            hasher: hasher.clone(),
            hashed: Vec::new(),
            value: Vec::new(),
        }
    }

    /// Hashes `url`'s features and appends them; returns the URL's index in the batch.
    ///
    /// # Examples
    ///
    /// See [`FeatureHashes`].
    pub fn push(&mut self, url: &str) -> usize {
        let index = self.len();
        self.hasher
            .hash_into(url, &mut self.value, &mut self.hashed);
        index
    }

    /// The number of URLs.
    ///
    /// # Examples
    ///
    /// See [`FeatureHashes`].
    pub fn len(&self) -> usize {
        self.hashed.len() / self.hasher.features().max(1)
    }

    /// Whether no URL was pushed.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_similarity::SimilarityFilter::builder().build()?;
    /// let mut hashed = url_dedup_similarity::FeatureHashes::new(&f.feature_hasher());
    /// assert!(hashed.is_empty());
    /// hashed.push("https://a.example/");
    /// hashed.clear();
    /// assert!(hashed.is_empty());
    /// # Ok::<(), url_dedup_similarity::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.hashed.is_empty()
    }

    /// Forgets every URL, keeping the memory.
    ///
    /// # Examples
    ///
    /// See [`is_empty`](Self::is_empty).
    pub fn clear(&mut self) {
        self.hashed.clear();
    }

    /// The hashes of the URL at `index`.
    ///
    /// # Examples
    ///
    /// See [`FeatureHashes`].
    pub fn get(&self, index: usize) -> Option<HashedUrl<'_>> {
        let n = self.hasher.features();
        let start = index.checked_mul(n)?;
        Some(HashedUrl {
            hashed: self.hashed.get(start..start.checked_add(n)?)?,
            origin: self.hasher.origin(),
        })
    }

    /// The hashes of every URL, in order.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_similarity::SimilarityFilter::builder().build()?;
    /// let mut hashed = url_dedup_similarity::FeatureHashes::new(&f.feature_hasher());
    /// hashed.push("https://a.example/");
    /// hashed.push("https://b.example/");
    /// assert_eq!(hashed.urls().count(), 2);
    /// # Ok::<(), url_dedup_similarity::Error>(())
    /// ```
    pub fn urls(&self) -> impl ExactSizeIterator<Item = HashedUrl<'_>> {
        let origin = self.hasher.origin();
        self.hashed
            .chunks_exact(self.hasher.features().max(1))
            .map(move |hashed| HashedUrl { hashed, origin })
    }
}

/// The feature hashes of one URL, borrowed from [`FeatureHashes`].
///
/// # Examples
///
/// ```
/// use url_dedup_similarity::{FeatureHashes, SimilarityFilter};
///
/// let filter = SimilarityFilter::builder().build()?;
/// let mut hashed = FeatureHashes::new(&filter.feature_hasher());
/// hashed.push("https://a.example/x");
/// let url = hashed.get(0).unwrap();
/// assert_eq!(url.features(), 7);
/// # Ok::<(), url_dedup_similarity::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct HashedUrl<'a> {
    pub(crate) hashed: &'a [Hashed],
    pub(crate) origin: u64,
}

impl HashedUrl<'_> {
    /// The number of feature hashes.
    ///
    /// # Examples
    ///
    /// See [`HashedUrl`].
    pub fn features(&self) -> usize {
        self.hashed.len()
    }
}
