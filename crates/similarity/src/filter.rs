//! The [`SimilarityFilter`] and its [`Builder`].

use std::fmt;
use std::sync::Arc;

use md5::{Digest as _, Md5};
use url_dedup_bloom::HashKey;
use url_dedup_bloom::sizing;

use crate::{Error, Explanation, Feature, Matches, Preset, UrlParts, Verdict};

/// The most features one filter can have (one bit of a `u64` mask each).
pub const MAX_FEATURES: usize = 64;

/// The feature-similarity filter of document 004.
///
/// Each feature owns a region of `N` bits. For a URL, every feature's value is hashed with
/// MD5 (prefixed with a secret key unless the filter is [unkeyed](Builder::unkeyed)) and
/// reduced mod `N` to one bit of its region. If all those bits are already set the URL is
/// [`Verdict::Similar`]; otherwise it is [`Verdict::New`] and
/// [`check_and_insert`](Self::check_and_insert) sets them.
///
/// # Examples
///
/// ```
/// use url_dedup_similarity::{Preset, SimilarityFilter};
///
/// let mut filter = SimilarityFilter::builder()
///     .expected_items(100_000)
///     .false_positive_rate(0.01)
///     .preset(Preset::Crawler)
///     .build()?;
/// assert!(filter.check_and_insert("https://shop.example/item/42?color=red").is_new());
/// // Same page, other query values: similar.
/// assert!(filter.check_and_insert("https://shop.example/item/42?color=blue").is_similar());
/// // Another item: new.
/// assert!(filter.check_and_insert("https://shop.example/item/43?color=red").is_new());
/// # Ok::<(), url_dedup_similarity::Error>(())
/// ```
#[derive(Clone)]
pub struct SimilarityFilter {
    pub(crate) features: Vec<Arc<dyn Feature>>,
    pub(crate) region_bits: u64,
    pub(crate) words: Vec<u64>,
    pub(crate) key: Option<HashKey>,
    /// MD5 state after absorbing the key: cloned per feature value.
    keyed: Md5,
    pub(crate) expected_items: u64,
    pub(crate) fpr: f64,
    pub(crate) items: u64,
    scratch: Vec<u8>,
}

/// Builds a [`SimilarityFilter`] from the two numbers document 004 asks of its user.
///
/// Defaults: false-positive rate 0.01, [`Preset::Crawler`], a random key.
///
/// # Examples
///
/// ```
/// use url_dedup_similarity::{Preset, SimilarityFilter};
///
/// let filter = SimilarityFilter::builder()
///     .expected_items(1_000_000)
///     .false_positive_rate(0.001)
///     .preset(Preset::Document004)
///     .build()?;
/// assert_eq!(filter.features().count(), 4);
/// assert!(filter.expected_false_positive_rate() <= 0.001);
/// # Ok::<(), url_dedup_similarity::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Builder {
    expected_items: u64,
    fpr: f64,
    features: Vec<Arc<dyn Feature>>,
    key: Option<HashKey>,
    region_bits: Option<u64>,
}

impl Default for Builder {
    fn default() -> Self {
        Self {
            expected_items: 1_000_000,
            fpr: 0.01,
            features: Preset::Crawler.features(),
            key: Some(HashKey::random()),
            region_bits: None,
        }
    }
}

impl Builder {
    /// `k`: how many URLs the filter will see (default one million).
    ///
    /// # Examples
    ///
    /// See [`Builder`].
    pub fn expected_items(mut self, items: u64) -> Self {
        self.expected_items = items;
        self
    }

    /// `P`: the acceptable rate of URLs judged similar only because of hash collisions
    /// (default 0.01).
    ///
    /// # Examples
    ///
    /// See [`Builder`].
    pub fn false_positive_rate(mut self, fpr: f64) -> Self {
        self.fpr = fpr;
        self
    }

    /// Use a preset's features.
    ///
    /// # Examples
    ///
    /// See [`Builder`].
    pub fn preset(mut self, preset: Preset) -> Self {
        self.features = preset.features();
        self
    }

    /// Use these features, in this order.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use url_dedup_similarity::{SimilarityFilter, builtin};
    ///
    /// let f = SimilarityFilter::builder()
    ///     .features(vec![Arc::new(builtin::Site), Arc::new(builtin::PathTemplate)])
    ///     .build()?;
    /// assert_eq!(f.features().collect::<Vec<_>>(), ["site", "path_template"]);
    /// # Ok::<(), url_dedup_similarity::Error>(())
    /// ```
    pub fn features(mut self, features: Vec<Arc<dyn Feature>>) -> Self {
        self.features = features;
        self
    }

    /// Key the MD5 hashes with `key` (for a filter shared between processes); the default is
    /// a random key, so that nobody can craft URLs that collide in the filter.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_similarity::SimilarityFilter;
    /// use url_dedup_bloom::HashKey;
    ///
    /// let f = SimilarityFilter::builder().hash_key(HashKey::from_bytes([1; 16])).build()?;
    /// assert_eq!(f.hash_key(), Some(HashKey::from_bytes([1; 16])));
    /// # Ok::<(), url_dedup_similarity::Error>(())
    /// ```
    pub fn hash_key(mut self, key: HashKey) -> Self {
        self.key = Some(key);
        self
    }

    /// Hash feature values with plain MD5, exactly as document 004 does. Bit positions are
    /// then predictable: use only for trusted input or to reproduce the document.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_similarity::SimilarityFilter::builder().unkeyed().build()?;
    /// assert_eq!(f.hash_key(), None);
    /// # Ok::<(), url_dedup_similarity::Error>(())
    /// ```
    pub fn unkeyed(mut self) -> Self {
        self.key = None;
        self
    }

    /// Set the region size `N` directly instead of deriving it from `k` and `P`.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_similarity::SimilarityFilter::builder().region_bits(1024).build()?;
    /// assert_eq!(f.region_bits(), 1024);
    /// # Ok::<(), url_dedup_similarity::Error>(())
    /// ```
    pub fn region_bits(mut self, bits: u64) -> Self {
        self.region_bits = Some(bits);
        self
    }

    /// Builds the filter.
    ///
    /// # Errors
    ///
    /// [`Error::Sizing`] when `k` is zero or `P` is not strictly between 0 and 1;
    /// [`Error::InvalidParameters`] for no features, more than [`MAX_FEATURES`], or a zero
    /// region; [`Error::OutOfMemory`] when the bits cannot be allocated.
    ///
    /// # Examples
    ///
    /// See [`Builder`].
    pub fn build(self) -> Result<SimilarityFilter, Error> {
        let f = check_feature_count(self.features.len())?;
        let region_bits = match self.region_bits {
            Some(bits) => {
                // Still validates `k` and `P`, which are recorded.
                sizing::optimal_bits(self.expected_items, self.fpr)?;
                bits
            }
            None => region_bits_for(self.expected_items, self.fpr, f)?,
        };
        let words = words_for(region_bits, f)?;
        let mut bits = Vec::new();
        bits.try_reserve_exact(words as usize)
            .map_err(|_| Error::OutOfMemory { bytes: words * 8 })?;
        bits.resize(words as usize, 0);
        Ok(SimilarityFilter::from_parts(
            self.features,
            region_bits,
            bits,
            self.key,
            self.expected_items,
            self.fpr,
            0,
        ))
    }
}

pub(crate) fn check_feature_count(count: usize) -> Result<u32, Error> {
    if count == 0 {
        return Err(Error::InvalidParameters("at least one feature is needed"));
    }
    if count > MAX_FEATURES {
        return Err(Error::InvalidParameters(
            "at most 64 features are supported",
        ));
    }
    Ok(count as u32)
}

/// Words needed for `features` regions of `region_bits` bits.
pub(crate) fn words_for(region_bits: u64, features: u32) -> Result<u64, Error> {
    if region_bits == 0 {
        return Err(Error::InvalidParameters(
            "region size must be at least one bit",
        ));
    }
    region_bits
        .checked_mul(u64::from(features))
        .map(|bits| bits.div_ceil(64))
        .filter(|&words| words <= usize::MAX as u64 / 8)
        .ok_or(Error::InvalidParameters("filter would be too large"))
}

/// The region size `N` for `items` URLs at rate `fpr` with `features` regions.
///
/// Document 004 computes `M = -k ln P / (ln 2)^2` bits and derives `N` from `M`; with `F`
/// regions that is `N = M / F`. That `M` is optimal only when each item sets
/// `k = M / n ln 2` bits, so with a fixed `F` it misses the target (4 features at 1% give
/// 1.35%). Starting from `M / F`, `N` grows until the partitioned filter's rate
/// `(1 - e^(-k/N))^F`, which is the shared classic formula at `F` hashes and `F N` bits, meets
/// `P`.
pub(crate) fn region_bits_for(items: u64, fpr: f64, features: u32) -> Result<u64, Error> {
    let m = sizing::optimal_bits(items, fpr)?;
    let f = u64::from(features);
    let rate = |n: u64| sizing::false_positive_rate(n.saturating_mul(f), features, items);
    let mut lo = m.div_ceil(f).max(1);
    if rate(lo) <= fpr {
        return Ok(lo);
    }
    let mut hi = lo;
    while rate(hi) > fpr {
        if hi > u64::MAX / 4 {
            return Err(Error::InvalidParameters("filter would be too large"));
        }
        lo = hi;
        hi *= 2;
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if rate(mid) <= fpr { hi = mid } else { lo = mid }
    }
    Ok(hi)
}

impl SimilarityFilter {
    /// A builder with the defaults documented on [`Builder`].
    ///
    /// # Examples
    ///
    /// See [`Builder`].
    pub fn builder() -> Builder {
        Builder::default()
    }

    pub(crate) fn from_parts(
        features: Vec<Arc<dyn Feature>>,
        region_bits: u64,
        words: Vec<u64>,
        key: Option<HashKey>,
        expected_items: u64,
        fpr: f64,
        items: u64,
    ) -> Self {
        let mut keyed = Md5::new();
        if let Some(key) = key {
            keyed.update(key.to_bytes());
        }
        Self {
            features,
            region_bits,
            words,
            key,
            keyed,
            expected_items,
            fpr,
            items,
            scratch: Vec::with_capacity(256),
        }
    }

    /// Checks `url` and records it when it is new.
    ///
    /// # Examples
    ///
    /// See [`SimilarityFilter`].
    pub fn check_and_insert(&mut self, url: &str) -> Verdict {
        let mut scratch = std::mem::take(&mut self.scratch);
        let mut positions = [0u64; MAX_FEATURES];
        let verdict = self.probe(url, &mut scratch, &mut positions);
        self.scratch = scratch;
        if verdict.is_new() {
            for &bit in &positions[..self.features.len()] {
                self.words[(bit / 64) as usize] |= 1 << (bit % 64);
            }
            self.items += 1;
        }
        verdict
    }

    /// Checks `url` without recording it.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = url_dedup_similarity::SimilarityFilter::builder().build()?;
    /// assert!(f.check("https://a.example/").is_new());
    /// assert!(f.check("https://a.example/").is_new());
    /// f.check_and_insert("https://a.example/");
    /// assert!(f.check("https://a.example/").is_similar());
    /// # Ok::<(), url_dedup_similarity::Error>(())
    /// ```
    pub fn check(&self, url: &str) -> Verdict {
        let mut scratch = Vec::with_capacity(128);
        self.probe(url, &mut scratch, &mut [0u64; MAX_FEATURES])
    }

    fn probe(&self, url: &str, scratch: &mut Vec<u8>, positions: &mut [u64; 64]) -> Verdict {
        let parts = UrlParts::parse(url);
        let mut mask = 0u64;
        for (i, feature) in self.features.iter().enumerate() {
            scratch.clear();
            feature.write_value(&parts, scratch);
            let digest = self.keyed.clone().chain_update(&*scratch).finalize();
            let value = u128::from_be_bytes(digest.into());
            // Document 004: the 128-bit MD5 value mod N selects the bit.
            let bit = i as u64 * self.region_bits + (value % u128::from(self.region_bits)) as u64;
            positions[i] = bit;
            mask |= u64::from(self.words[(bit / 64) as usize] >> (bit % 64) & 1) << i;
        }
        let matches = Matches::new(mask, self.features.len());
        if matches.all() {
            Verdict::Similar(matches)
        } else {
            Verdict::New(matches)
        }
    }

    /// The verdict with feature names, for logs and debugging.
    ///
    /// # Examples
    ///
    /// See [`Explanation`].
    pub fn explain(&self, verdict: &Verdict) -> Explanation<'_> {
        Explanation {
            verdict: *verdict,
            names: self.features().collect(),
        }
    }

    /// The features' names, in order.
    ///
    /// # Examples
    ///
    /// See [`Builder::features`].
    pub fn features(&self) -> impl ExactSizeIterator<Item = &str> {
        self.features.iter().map(|f| f.name())
    }

    /// Region size `N` in bits (one region per feature).
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_similarity::SimilarityFilter::builder()
    ///     .expected_items(1_000)
    ///     .preset(url_dedup_similarity::Preset::Document004)
    ///     .build()?;
    /// assert_eq!(f.bits(), 4 * f.region_bits());
    /// # Ok::<(), url_dedup_similarity::Error>(())
    /// ```
    pub fn region_bits(&self) -> u64 {
        self.region_bits
    }

    /// Total size in bits.
    ///
    /// # Examples
    ///
    /// See [`SimilarityFilter::region_bits`].
    pub fn bits(&self) -> u64 {
        self.region_bits * self.features.len() as u64
    }

    /// How many URLs were recorded as new.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = url_dedup_similarity::SimilarityFilter::builder().build()?;
    /// f.check_and_insert("https://a.example/");
    /// f.check_and_insert("https://a.example/");
    /// assert_eq!(f.len(), 1);
    /// # Ok::<(), url_dedup_similarity::Error>(())
    /// ```
    pub fn len(&self) -> u64 {
        self.items
    }

    /// Whether no URL was recorded.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(url_dedup_similarity::SimilarityFilter::builder().build()?.is_empty());
    /// # Ok::<(), url_dedup_similarity::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.items == 0
    }

    /// The expected count `k` the filter was sized for.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_similarity::SimilarityFilter::builder().expected_items(5).build()?;
    /// assert_eq!(f.expected_items(), 5);
    /// # Ok::<(), url_dedup_similarity::Error>(())
    /// ```
    pub fn expected_items(&self) -> u64 {
        self.expected_items
    }

    /// Whether more URLs were recorded than the filter was sized for.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = url_dedup_similarity::SimilarityFilter::builder().expected_items(1).build()?;
    /// f.check_and_insert("https://a.example/1");
    /// f.check_and_insert("https://b.example/2");
    /// assert!(f.is_over_capacity());
    /// # Ok::<(), url_dedup_similarity::Error>(())
    /// ```
    pub fn is_over_capacity(&self) -> bool {
        self.items > self.expected_items
    }

    /// The rate of collisions-only "similar" verdicts at `k` distinct values per feature:
    /// `(1 - e^(-k/N))^F`.
    ///
    /// # Examples
    ///
    /// See [`Builder`].
    pub fn expected_false_positive_rate(&self) -> f64 {
        sizing::false_positive_rate(self.bits(), self.features.len() as u32, self.expected_items)
    }

    /// The hash key, or `None` for an unkeyed (document-exact MD5) filter.
    ///
    /// # Examples
    ///
    /// See [`Builder::hash_key`].
    pub fn hash_key(&self) -> Option<HashKey> {
        self.key
    }

    /// Forgets every URL, keeping size, features and key.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = url_dedup_similarity::SimilarityFilter::builder().build()?;
    /// f.check_and_insert("https://a.example/");
    /// f.clear();
    /// assert!(f.is_empty() && f.check("https://a.example/").is_new());
    /// # Ok::<(), url_dedup_similarity::Error>(())
    /// ```
    pub fn clear(&mut self) {
        self.words.fill(0);
        self.items = 0;
    }

    pub(crate) fn raw_words(&self) -> &[u64] {
        &self.words
    }
}

impl fmt::Debug for SimilarityFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimilarityFilter")
            .field("features", &self.features().collect::<Vec<_>>())
            .field("region_bits", &self.region_bits)
            .field("items", &self.items)
            .field("expected_items", &self.expected_items)
            .field("keyed", &self.key.is_some())
            .finish_non_exhaustive()
    }
}

impl PartialEq for SimilarityFilter {
    fn eq(&self, other: &Self) -> bool {
        self.features().eq(other.features())
            && self.region_bits == other.region_bits
            && self.key == other.key
            && self.expected_items == other.expected_items
            && self.fpr.to_bits() == other.fpr.to_bits()
            && self.items == other.items
            && self.words == other.words
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn region_sizing_meets_the_target_the_document_misses() {
        let (k, p) = (1_000_000u64, 0.01);
        let m = sizing::optimal_bits(k, p).unwrap();
        let document_n = m.div_ceil(4);
        let document_rate = sizing::false_positive_rate(4 * document_n, 4, k);
        assert!(document_rate > 0.013, "{document_rate}");
        let n = region_bits_for(k, p, 4).unwrap();
        assert!(sizing::false_positive_rate(4 * n, 4, k) <= p);
        assert!(sizing::false_positive_rate(4 * (n - 1), 4, k) > p);
        // With the optimal number of regions (7 at 1%), the document's N is within 0.1%
        // (k = 7 is rounded from 6.64, hence the small correction).
        let n7 = region_bits_for(k, p, 7).unwrap();
        assert!(n7 >= m.div_ceil(7) && n7 < m.div_ceil(7) * 1001 / 1000);
    }
}
