//! A [`SimilarityFilter`] that adds layers as it fills, as the workspace's growing exact
//! filter does, so that a wrong guess of the number of URLs costs memory, not folds.

use url_dedup_bloom::sizing::Growth;

use crate::filter::{Scratch, check_and_insert_layers};
use crate::{Error, Explanation, FeatureHasher, HashedUrl, Matches, SimilarityFilter, Verdict};

/// A similarity filter in layers: when the newest layer has recorded the URLs it was sized
/// for, a layer of `factor` times the size at `tightening` times the rate is added, so the
/// rates of all layers add up to less than the target however many URLs arrive.
///
/// A feature matches when its value's bits are set in any layer; a new URL is recorded in
/// the newest layer only. With one layer it answers exactly as the [`SimilarityFilter`] it
/// holds. Older layers cost one more memory access per feature of a URL.
///
/// A fixed-size filter handed far more URLs than it was sized for fills up, and a URL that
/// differs from earlier ones in one feature only is folded by chance more and more often
/// (see [`SimilarityFilter::measured_false_positive_rate`]); this one keeps the rate.
///
/// # Examples
///
/// ```
/// use url_dedup_similarity::{GrowingSimilarityFilter, SimilarityFilter};
///
/// // Sized for 100 URLs, handed 5,000 distinct pages.
/// let first = SimilarityFilter::builder().expected_items(100).false_positive_rate(0.005).build()?;
/// let mut f = GrowingSimilarityFilter::new(first);
/// for i in 0..5_000 {
///     let url = format!("https://site{i}.example/dir{i}/page{i}");
///     assert!(f.check_and_insert(&url).is_new(), "{url}");
/// }
/// assert!(f.layers() > 5);
/// assert!(f.measured_false_positive_rate() < 0.01);
/// assert!(f.check_and_insert("https://site7.example/dir7/page7").is_similar());
/// # Ok::<(), url_dedup_similarity::Error>(())
/// ```
#[derive(Clone)]
pub struct GrowingSimilarityFilter {
    /// Oldest first; never empty.
    layers: Vec<SimilarityFilter>,
    growth: Growth,
    /// Set when a layer could not be added (out of memory): the newest layer then keeps
    /// taking URLs past its size.
    stalled: bool,
    scratch: Scratch,
}

impl GrowingSimilarityFilter {
    /// Grows from `first`, with [`Growth::default`] (layers of twice the size at 0.3 times
    /// the rate). Size `first` at 70% of the rate the whole filter should keep
    /// (`Growth::default().layer(n, target, 0)`): the layers' rates add up to at most the
    /// first's divided by 0.7.
    ///
    /// # Examples
    ///
    /// See [`GrowingSimilarityFilter`].
    pub fn new(first: SimilarityFilter) -> Self {
        Self::from_layers(vec![first]).unwrap_or_else(|_| unreachable!("one layer is enough"))
    }

    /// Rebuilds a filter from its layers, oldest first (as [`layer`](Self::layer) gives
    /// them, for instance read back from snapshots).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameters`] for no layer, or layers with other features, keys,
    /// feature hashes or region sizings than the first's.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_similarity::{GrowingSimilarityFilter, SimilarityFilter};
    ///
    /// let mut f = GrowingSimilarityFilter::new(SimilarityFilter::builder().expected_items(10).build()?);
    /// for i in 0..100 {
    ///     f.check_and_insert(&format!("https://s{i}.example/p{i}"));
    /// }
    /// let mut snapshots = Vec::new();
    /// for i in 0..f.layers() {
    ///     let mut bytes = Vec::new();
    ///     f.layer(i).unwrap().write_to(&mut bytes)?;
    ///     snapshots.push(bytes);
    /// }
    /// let layers = snapshots
    ///     .iter()
    ///     .map(|b| SimilarityFilter::read_from(&b[..]))
    ///     .collect::<Result<Vec<_>, _>>()?;
    /// let back = GrowingSimilarityFilter::from_layers(layers)?;
    /// assert_eq!(back.len(), 100);
    /// assert!(back.check("https://s42.example/p42").is_similar());
    /// assert!(GrowingSimilarityFilter::from_layers(Vec::new()).is_err());
    /// # Ok::<(), url_dedup_similarity::Error>(())
    /// ```
    pub fn from_layers(layers: Vec<SimilarityFilter>) -> Result<Self, Error> {
        let Some(first) = layers.first() else {
            return Err(Error::InvalidParameters(
                "a growing filter has at least one layer",
            ));
        };
        let alike = |l: &SimilarityFilter| {
            l.features().eq(first.features())
                && l.hash_key() == first.hash_key()
                && l.feature_hash() == first.feature_hash()
                && l.region_sizing() == first.region_sizing()
        };
        if !layers.iter().all(alike) {
            return Err(Error::InvalidParameters(
                "the layers of a growing filter differ in features, key, hash or sizing",
            ));
        }
        Ok(Self {
            layers,
            growth: Growth::default(),
            stalled: false,
            scratch: Scratch::default(),
        })
    }

    /// Checks `url` against every layer and records it in the newest when it is new.
    ///
    /// # Examples
    ///
    /// See [`GrowingSimilarityFilter`].
    pub fn check_and_insert(&mut self, url: &str) -> Verdict {
        let mut scratch = std::mem::take(&mut self.scratch);
        self.layers[0].hash_features(url, &mut scratch);
        let verdict = self.check_and_insert_scratch(&mut scratch);
        self.scratch = scratch;
        verdict
    }

    /// Checks the URL whose hashes are in `scratch` against every layer, records it in the
    /// newest when it is new, and grows when that fills the newest.
    fn check_and_insert_scratch(&mut self, scratch: &mut Scratch) -> Verdict {
        let older = self.layers.len().saturating_sub(1);
        let seen = self.layers[..older]
            .iter_mut()
            .fold(0, |seen, layer| seen | layer.found_mut(scratch));
        let verdict = match self.layers.last_mut() {
            Some(newest) => newest.check_and_insert_scratch(seen, scratch),
            None => Verdict::New(Matches::new(seen, 0)),
        };
        if verdict.is_new() {
            self.grow_if_full();
        }
        verdict
    }

    /// [`check_and_insert`](Self::check_and_insert) for many URLs: the same verdicts and
    /// bits as one call each, in order. The URLs up to the newest layer's size are decided
    /// together, their blocks in every layer requested from memory a few URLs ahead.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_similarity::{GrowingSimilarityFilter, SimilarityFilter};
    ///
    /// let mut f = GrowingSimilarityFilter::new(SimilarityFilter::builder().expected_items(2).build()?);
    /// let urls: Vec<String> = (0..10).map(|i| format!("https://s{i}.example/p")).collect();
    /// assert!(f.check_and_insert_batch(&urls).iter().all(|v| v.is_new()));
    /// assert!(f.layers() > 1);
    /// assert!(f.check_and_insert_batch(&urls).iter().all(|v| v.is_similar()));
    /// # Ok::<(), url_dedup_similarity::Error>(())
    /// ```
    pub fn check_and_insert_batch<S: AsRef<str>>(&mut self, urls: &[S]) -> Vec<Verdict> {
        self.batch(urls, |filter, url, scratch| {
            filter.hash_features(url.as_ref(), scratch);
        })
    }

    /// [`check_and_insert_batch`](Self::check_and_insert_batch) for URLs whose features a
    /// [`FeatureHasher`](crate::FeatureHasher) of this filter hashed, on any thread (every
    /// layer hashes alike, so the hasher stays valid as the filter grows).
    ///
    /// # Errors
    ///
    /// [`Error::ForeignHashes`] (and nothing recorded) if a URL was hashed by the hasher of a
    /// filter with other features, key or feature hash.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_similarity::{FeatureHashes, GrowingSimilarityFilter, SimilarityFilter};
    ///
    /// let mut f = GrowingSimilarityFilter::new(SimilarityFilter::builder().expected_items(2).build()?);
    /// let mut hashed = FeatureHashes::new(&f.feature_hasher());
    /// for i in 0..10 {
    ///     hashed.push(&format!("https://s{i}.example/p"));
    /// }
    /// let urls: Vec<_> = hashed.urls().collect();
    /// assert!(f.check_and_insert_hashed(&urls)?.iter().all(|v| v.is_new()));
    /// assert!(f.check_and_insert_hashed(&urls)?.iter().all(|v| v.is_similar()));
    ///
    /// let other = SimilarityFilter::builder().build()?;
    /// let mut foreign = FeatureHashes::new(&other.feature_hasher());
    /// foreign.push("https://s0.example/p");
    /// assert!(f.check_and_insert_hashed(&foreign.urls().collect::<Vec<_>>()).is_err());
    /// # Ok::<(), url_dedup_similarity::Error>(())
    /// ```
    pub fn check_and_insert_hashed(
        &mut self,
        urls: &[HashedUrl<'_>],
    ) -> Result<Vec<Verdict>, Error> {
        self.layers[0].check_origin(urls)?;
        Ok(self.batch(urls, |_, url, scratch| scratch.load(url)))
    }

    /// Hashes this filter's URLs as it does, on any thread: see
    /// [`FeatureHasher`](crate::FeatureHasher).
    ///
    /// # Examples
    ///
    /// See [`check_and_insert_hashed`](Self::check_and_insert_hashed).
    pub fn feature_hasher(&self) -> FeatureHasher {
        self.layers[0].feature_hasher()
    }

    /// Decides `urls` in order, `hash` leaving each one's feature hashes in the scratch
    /// space.
    fn batch<T>(
        &mut self,
        urls: &[T],
        hash: impl Fn(&SimilarityFilter, &T, &mut Scratch) + Copy,
    ) -> Vec<Verdict> {
        let mut out = Vec::with_capacity(urls.len());
        let mut scratch = std::mem::take(&mut self.scratch);
        let mut rest = urls;
        while !rest.is_empty() {
            match &self.layers[..] {
                // Room in the newest layer: at most the URLs it can still record, batched
                // (each URL records at most one, so the layer cannot pass its size mid-batch).
                [.., newest] if !newest.is_over_capacity() => {
                    let room = newest.expected_items().saturating_sub(newest.len()).max(1);
                    let (now, later) = rest.split_at(rest.len().min(room as usize));
                    let batched = check_and_insert_layers(
                        &mut self.layers,
                        now,
                        hash,
                        &mut scratch,
                        &mut out,
                    );
                    if !batched {
                        for url in now {
                            hash(&self.layers[0], url, &mut scratch);
                            out.push(self.check_and_insert_scratch(&mut scratch));
                        }
                    }
                    rest = later;
                    self.grow_if_full();
                }
                _ => {
                    let (url, later) = rest.split_at(1);
                    for url in url {
                        hash(&self.layers[0], url, &mut scratch);
                        out.push(self.check_and_insert_scratch(&mut scratch));
                    }
                    rest = later;
                }
            }
        }
        self.scratch = scratch;
        out
    }

    /// Checks `url` against every layer without recording it.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_similarity::{GrowingSimilarityFilter, SimilarityFilter};
    ///
    /// let mut f = GrowingSimilarityFilter::new(SimilarityFilter::builder().build()?);
    /// assert!(f.check("https://a.example/").is_new());
    /// f.check_and_insert("https://a.example/");
    /// assert!(f.check("https://a.example/").is_similar());
    /// # Ok::<(), url_dedup_similarity::Error>(())
    /// ```
    pub fn check(&self, url: &str) -> Verdict {
        let mut scratch = Scratch::default();
        self.layers[0].hash_features(url, &mut scratch);
        let seen = self.seen_in_older(&mut scratch);
        match self.layers.last() {
            Some(newest) => newest.verdict(newest.found(&mut scratch) | seen),
            None => Verdict::New(Matches::new(seen, 0)),
        }
    }

    /// The features of the URL whose hashes are in `scratch` (hashed once: every layer has
    /// the same features, key and hash) whose values are in a layer older than the newest,
    /// as a mask.
    fn seen_in_older(&self, scratch: &mut Scratch) -> u64 {
        let older = &self.layers[..self.layers.len().saturating_sub(1)];
        older
            .iter()
            .fold(0, |seen, layer| seen | layer.found(scratch))
    }

    /// Adds a layer once the newest has recorded the URLs it was sized for.
    fn grow_if_full(&mut self) {
        let Some(newest) = self.layers.last() else {
            return;
        };
        if self.stalled || !newest.is_over_capacity() {
            return;
        }
        let index = self.layers.len() as u32;
        let first = &self.layers[0];
        // The first layer holds `tightening`-less share of the target: target = its rate /
        // (1 - tightening), and layer i gets target (1 - t) t^i, as the exact filter's do.
        let target = first.fpr / (1.0 - self.growth.tightening);
        let (capacity, rate) = self.growth.layer(first.expected_items(), target, index);
        match newest.empty_like(capacity, rate) {
            Ok(layer) => self.layers.push(layer),
            Err(_) => self.stalled = true,
        }
    }

    /// The verdict with feature names (every layer has the same features).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_similarity::{GrowingSimilarityFilter, SimilarityFilter};
    ///
    /// let mut f = GrowingSimilarityFilter::new(SimilarityFilter::builder().build()?);
    /// let v = f.check_and_insert("https://a.example/x");
    /// assert!(f.explain(&v).to_string().starts_with("new"));
    /// # Ok::<(), url_dedup_similarity::Error>(())
    /// ```
    pub fn explain(&self, verdict: &Verdict) -> Explanation<'_> {
        self.layers[0].explain(verdict)
    }

    /// The number of layers.
    ///
    /// # Examples
    ///
    /// See [`GrowingSimilarityFilter`].
    pub fn layers(&self) -> usize {
        self.layers.len()
    }

    /// Layer `index`, oldest first.
    ///
    /// # Examples
    ///
    /// See [`from_layers`](Self::from_layers).
    pub fn layer(&self, index: usize) -> Option<&SimilarityFilter> {
        self.layers.get(index)
    }

    /// URLs recorded, in all layers.
    ///
    /// # Examples
    ///
    /// See [`from_layers`](Self::from_layers).
    pub fn len(&self) -> u64 {
        self.layers.iter().map(SimilarityFilter::len).sum()
    }

    /// Whether no URL was recorded.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_similarity::{GrowingSimilarityFilter, SimilarityFilter};
    ///
    /// assert!(GrowingSimilarityFilter::new(SimilarityFilter::builder().build()?).is_empty());
    /// # Ok::<(), url_dedup_similarity::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bits in all layers.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_similarity::{GrowingSimilarityFilter, SimilarityFilter};
    ///
    /// let first = SimilarityFilter::builder().build()?;
    /// let bits = first.bits();
    /// assert_eq!(GrowingSimilarityFilter::new(first).bits(), bits);
    /// # Ok::<(), url_dedup_similarity::Error>(())
    /// ```
    pub fn bits(&self) -> u64 {
        self.layers.iter().map(SimilarityFilter::bits).sum()
    }

    /// Bytes of memory every layer holds ([`SimilarityFilter::memory_bytes`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_similarity::{GrowingSimilarityFilter, SimilarityFilter};
    ///
    /// let first = SimilarityFilter::builder().build()?;
    /// let bytes = first.memory_bytes();
    /// assert_eq!(GrowingSimilarityFilter::new(first).memory_bytes(), bytes);
    /// # Ok::<(), url_dedup_similarity::Error>(())
    /// ```
    pub fn memory_bytes(&self) -> u64 {
        self.layers.iter().map(SimilarityFilter::memory_bytes).sum()
    }

    /// The chance, read from the bits of every layer, that a never-seen value is taken for
    /// seen: the sum over the layers of each one's
    /// [`measured_false_positive_rate`](SimilarityFilter::measured_false_positive_rate).
    ///
    /// # Examples
    ///
    /// See [`GrowingSimilarityFilter`].
    pub fn measured_false_positive_rate(&self) -> f64 {
        self.layers
            .iter()
            .map(SimilarityFilter::measured_false_positive_rate)
            .sum()
    }

    /// Whether a layer could not be added (out of memory) and the newest holds more URLs than
    /// it was sized for.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_similarity::{GrowingSimilarityFilter, SimilarityFilter};
    ///
    /// let mut f = GrowingSimilarityFilter::new(SimilarityFilter::builder().expected_items(1).build()?);
    /// f.check_and_insert("https://a.example/1");
    /// f.check_and_insert("https://b.example/2");
    /// assert!(!f.is_over_capacity());
    /// # Ok::<(), url_dedup_similarity::Error>(())
    /// ```
    pub fn is_over_capacity(&self) -> bool {
        self.stalled
            && self
                .layers
                .last()
                .is_some_and(SimilarityFilter::is_over_capacity)
    }

    /// The URLs the first layer was sized for.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_similarity::{GrowingSimilarityFilter, SimilarityFilter};
    ///
    /// let f = GrowingSimilarityFilter::new(SimilarityFilter::builder().expected_items(7).build()?);
    /// assert_eq!(f.expected_items(), 7);
    /// # Ok::<(), url_dedup_similarity::Error>(())
    /// ```
    pub fn expected_items(&self) -> u64 {
        self.layers[0].expected_items()
    }
}

impl PartialEq for GrowingSimilarityFilter {
    fn eq(&self, other: &Self) -> bool {
        self.layers == other.layers
    }
}

impl std::fmt::Debug for GrowingSimilarityFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrowingSimilarityFilter")
            .field("layers", &self.layers)
            .field("stalled", &self.stalled)
            .finish()
    }
}
