//! The [`SimilarityFilter`] and its [`Builder`].

use std::fmt;
use std::sync::Arc;

use url_dedup_bloom::HashKey;
use url_dedup_bloom::sizing;
use url_dedup_segmented::{Layout, Probe};

use crate::feature_hash::Hashed;
use crate::hashed::{FeatureHasher, HashedUrl};
use crate::known_values::KnownValues;
use crate::region_sizing::Regions;
use crate::words::Words;
use crate::{Error, Explanation, Feature, FeatureHash, Matches, Preset, RegionSizing, Verdict};

/// The most features one filter can have (one bit of a `u64` mask each).
pub const MAX_FEATURES: usize = 64;

/// The feature-similarity filter of document 004.
///
/// Each feature owns a region of `N` bits. For a URL, every feature's value is hashed with
/// MD5 (prefixed with a secret key unless the filter is [unkeyed](Builder::unkeyed)) or
/// keyed SipHash ([`FeatureHash`]); the digest selects the value's bits in its region (the
/// optimal number of a blocked Bloom filter, all in one cache line, under
/// [`RegionSizing::Blocked`]; of a classic one under [`RegionSizing::PerFeature`]; one bit,
/// `MD5 mod N`, under [`RegionSizing::Document004`]). A feature matches when all its bits
/// are set. If every feature matches the URL is [`Verdict::Similar`]; otherwise it is
/// [`Verdict::New`] and [`check_and_insert`](Self::check_and_insert) sets the bits.
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
    pub(crate) regions: Regions,
    pub(crate) sizing: RegionSizing,
    words: Words,
    pub(crate) key: Option<HashKey>,
    pub(crate) hash: FeatureHash,
    /// Hashes the feature values; it holds the features.
    hasher: FeatureHasher,
    pub(crate) expected_items: u64,
    pub(crate) fpr: f64,
    pub(crate) items: u64,
    scratch: Scratch,
    /// Values whose bits were found set: answered without testing them again.
    known: KnownValues,
}

/// Buffers a check reuses from URL to URL: the feature value being hashed, and where each
/// value's bits are (a block per value for [`line_blocks`](SimilarityFilter::line_blocks),
/// every bit position otherwise).
#[derive(Clone, Debug, Default)]
pub(crate) struct Scratch {
    value: Vec<u8>,
    /// The hash of each feature's value, in feature order.
    hashed: Vec<Hashed>,
    located: Vec<Located>,
    positions: Vec<u64>,
    /// Each located value's bits as word masks of its block, features one after the other.
    masks: Vec<u64>,
}

impl Scratch {
    /// Takes a URL's hashes made elsewhere, as [`hash_features`](SimilarityFilter::hash_features)
    /// would have left them.
    #[inline]
    pub(crate) fn load(&mut self, url: &HashedUrl<'_>) {
        self.hashed.clear();
        self.hashed.extend_from_slice(url.hashed);
    }
}

/// URLs of a [batch](SimilarityFilter::check_and_insert_batch) whose values are hashed and
/// whose blocks are requested together, ahead of their tests: seven features each makes 56
/// cache lines in flight, about what a core's miss buffers hold.
const BATCH_CHUNK: usize = 8;

/// Where a feature value's bits are in a blocked region: the first word of its block, and
/// the seed its offsets in the block come from.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Located {
    pub(crate) word: usize,
    pub(crate) seed: u64,
}

/// Builds a [`SimilarityFilter`] from the two numbers document 004 asks of its user.
///
/// Defaults: one million expected URLs, false-positive rate 0.01, [`Preset::Crawler`],
/// [`RegionSizing::Blocked`], [`FeatureHash::Md5`], a random key.
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
/// // Each region is a blocked filter for 10^6 values at 0.1%, one cache line per value.
/// assert!(filter.expected_false_positive_rate() <= 0.001);
/// assert_eq!(filter.block_bits(), Some(512));
/// # Ok::<(), url_dedup_similarity::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Builder {
    expected_items: u64,
    fpr: f64,
    features: Vec<Arc<dyn Feature>>,
    key: Option<HashKey>,
    region_bits: Option<u64>,
    sizing: RegionSizing,
    hash: FeatureHash,
}

impl Default for Builder {
    fn default() -> Self {
        Self {
            expected_items: 1_000_000,
            fpr: 0.01,
            features: Preset::Crawler.features(),
            key: Some(HashKey::random()),
            region_bits: None,
            sizing: RegionSizing::Blocked,
            hash: FeatureHash::Md5,
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

    /// How regions are sized (default [`RegionSizing::Blocked`]).
    ///
    /// # Examples
    ///
    /// See [`RegionSizing`].
    pub fn region_sizing(mut self, sizing: RegionSizing) -> Self {
        self.sizing = sizing;
        self
    }

    /// The hash applied to feature values (default [`FeatureHash::Md5`], the document's).
    ///
    /// # Examples
    ///
    /// See [`FeatureHash`].
    pub fn feature_hash(mut self, hash: FeatureHash) -> Self {
        self.hash = hash;
        self
    }

    /// Set the region size `N` directly instead of deriving it from `k` and `P` (rounded up
    /// to whole blocks when the regions are [blocked](RegionSizing::Blocked)).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_similarity::{RegionSizing, SimilarityFilter};
    ///
    /// let f = SimilarityFilter::builder().region_bits(1000).build()?;
    /// assert_eq!(f.region_bits(), 1024);
    /// let f = SimilarityFilter::builder()
    ///     .region_sizing(RegionSizing::PerFeature)
    ///     .region_bits(1000)
    ///     .build()?;
    /// assert_eq!(f.region_bits(), 1000);
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
        let regions = match self.region_bits {
            Some(bits) => {
                // Still validates `k` and `P`, which are recorded.
                sizing::optimal_bits(self.expected_items, self.fpr)?;
                self.sizing.with_bits(bits, self.expected_items)?
            }
            None => self.sizing.size(self.expected_items, self.fpr, f)?,
        };
        let words = Words::zeroed(words_for(regions.bits, f)? as usize)?;
        Ok(SimilarityFilter::from_parts(
            self.features,
            (regions, self.sizing),
            words,
            (self.key, self.hash),
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

/// Decides `urls` in order across `layers` (oldest first: one for a plain filter, several
/// for a [`GrowingSimilarityFilter`](crate::GrowingSimilarityFilter)), recording new ones in
/// the last, which must have room for all of them. Each URL's features are hashed once and
/// its blocks in every layer requested from memory a few URLs ahead of its tests, so that the
/// misses of one URL overlap the work on the others. `false` (nothing done) unless every
/// layer tests whole words of blocks.
pub(crate) fn check_and_insert_layers<T>(
    layers: &mut [SimilarityFilter],
    urls: &[T],
    hash: impl Fn(&SimilarityFilter, &T, &mut Scratch),
    scratch: &mut Scratch,
    out: &mut Vec<Verdict>,
) -> bool {
    let Some(layouts) = layers
        .iter()
        .map(SimilarityFilter::line_blocks)
        .collect::<Option<Vec<_>>>()
    else {
        return false;
    };
    let (Some(first), Some(newest_index)) = (layers.first(), layers.len().checked_sub(1)) else {
        return false;
    };
    let features = first.feature_list().len().max(1);
    let locate = |layers: &[SimilarityFilter],
                  chunk: &[T],
                  located: &mut [Vec<Located>],
                  scratch: &mut Scratch| {
        located.iter_mut().for_each(Vec::clear);
        for url in chunk {
            hash(&layers[0], url, scratch);
            for ((layer, &layout), into) in layers.iter().zip(&layouts).zip(&mut *located) {
                layer.locate(layout, &scratch.hashed, into);
            }
        }
    };
    let mut masks = Vec::new();
    let mut ready = vec![Vec::new(); layers.len()];
    let mut next = ready.clone();
    let mut chunks = urls.chunks(BATCH_CHUNK);
    let first = chunks.next().unwrap_or_default();
    locate(layers, first, &mut ready, scratch);
    while !ready[0].is_empty() {
        locate(
            layers,
            chunks.next().unwrap_or_default(),
            &mut next,
            scratch,
        );
        let (older, newest) = layers.split_at_mut(newest_index);
        let Some(newest) = newest.first_mut() else {
            break;
        };
        for at in (0..ready[0].len()).step_by(features) {
            let span = at..at + features;
            let seen =
                older
                    .iter_mut()
                    .zip(&layouts)
                    .zip(&ready)
                    .fold(0, |seen, ((l, &layout), r)| {
                        seen | l.matched_here(layout, &r[span.clone()], &mut masks)
                    });
            let layout = layouts[newest_index];
            let located = &ready[newest_index][span];
            let matched = newest.matched_here(layout, located, &mut masks) | seen;
            let verdict = newest.verdict(matched);
            if verdict.is_new() {
                newest.set_blocks(layout, located, &masks);
                newest.items += 1;
            }
            out.push(verdict);
        }
        std::mem::swap(&mut ready, &mut next);
    }
    true
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
        (regions, sizing): (Regions, RegionSizing),
        words: Words,
        (key, hash): (Option<HashKey>, FeatureHash),
        expected_items: u64,
        fpr: f64,
        items: u64,
    ) -> Self {
        let mut filter = Self {
            hasher: FeatureHasher::new(&features, hash, key),
            regions,
            sizing,
            words,
            key,
            hash,
            expected_items,
            fpr,
            items,
            scratch: Scratch::default(),
            known: KnownValues::default(),
        };
        let blocks = filter.line_blocks().map_or(0, |layout| {
            filter.words.as_slice().len() / (layout.segment_bits() / 64).max(1) as usize
        });
        filter.known = KnownValues::for_blocks(blocks, filter.regions.hashes);
        filter
    }

    /// An empty filter with this one's features, key, feature hash and region sizing, sized
    /// for `expected_items` URLs at rate `fpr`: the next layer of a
    /// [`GrowingSimilarityFilter`](crate::GrowingSimilarityFilter).
    pub(crate) fn empty_like(&self, expected_items: u64, fpr: f64) -> Result<Self, Error> {
        Builder {
            expected_items,
            fpr,
            features: self.feature_list().to_vec(),
            key: self.key,
            region_bits: None,
            sizing: self.sizing,
            hash: self.hash,
        }
        .build()
    }

    /// Checks `url` and records it when it is new.
    ///
    /// # Examples
    ///
    /// See [`SimilarityFilter`].
    pub fn check_and_insert(&mut self, url: &str) -> Verdict {
        let mut scratch = std::mem::take(&mut self.scratch);
        self.hash_features(url, &mut scratch);
        let verdict = self.check_and_insert_scratch(0, &mut scratch);
        self.scratch = scratch;
        verdict
    }

    /// Hashes each feature's value of `url` into `scratch.hashed`. Filters with the same
    /// features, key and feature hash (the layers of a
    /// [`GrowingSimilarityFilter`](crate::GrowingSimilarityFilter)) get the same hashes, so a
    /// URL is split and hashed once for all of them.
    pub(crate) fn hash_features(&self, url: &str, scratch: &mut Scratch) {
        scratch.hashed.clear();
        self.hasher
            .hash_into(url, &mut scratch.value, &mut scratch.hashed);
    }

    /// Hashes URLs' feature values as this filter does, on any thread: see
    /// [`FeatureHasher`] and [`check_and_insert_hashed`](Self::check_and_insert_hashed).
    ///
    /// # Examples
    ///
    /// See [`FeatureHasher`].
    pub fn feature_hasher(&self) -> FeatureHasher {
        self.hasher.clone()
    }

    /// The features, in order.
    pub(crate) fn feature_list(&self) -> &[Arc<dyn Feature>] {
        self.hasher.features_of()
    }

    /// Refuses hashes that another filter's hasher made (other features, key or feature
    /// hash): their bits would be meaningless here.
    pub(crate) fn check_origin(&self, urls: &[HashedUrl<'_>]) -> Result<(), Error> {
        let origin = self.hasher.origin();
        match urls.iter().all(|u| u.origin == origin) {
            true => Ok(()),
            false => Err(Error::ForeignHashes),
        }
    }

    /// Which features of the URL whose hashes [`hash_features`](Self::hash_features) left in
    /// `scratch` have their values' bits all set in this filter, as a mask (bit `i` for
    /// feature `i`); leaves where the values' bits are in `scratch`, for
    /// [`record`](Self::record).
    pub(crate) fn found(&self, scratch: &mut Scratch) -> u64 {
        scratch.located.clear();
        match self.line_blocks() {
            Some(layout) => {
                self.locate(layout, &scratch.hashed, &mut scratch.located);
                self.tested_here(layout, &scratch.located, &mut scratch.masks)
            }
            None => self.probe(&scratch.hashed, &mut scratch.positions),
        }
    }

    /// [`found`](Self::found), remembering the values found set for the next URLs that have
    /// them.
    pub(crate) fn found_mut(&mut self, scratch: &mut Scratch) -> u64 {
        let here = self.found(scratch);
        self.remember(&scratch.located, here);
        here
    }

    /// Checks the URL whose feature hashes [`hash_features`](Self::hash_features) left in
    /// `scratch`, the features in `seen` (bit `i` for feature `i`) counted as matched (they
    /// matched in an older layer of a [`GrowingSimilarityFilter`](crate::GrowingSimilarityFilter)),
    /// and records it when not all features matched.
    pub(crate) fn check_and_insert_scratch(&mut self, seen: u64, scratch: &mut Scratch) -> Verdict {
        let found = self.found_mut(scratch);
        let verdict = self.verdict(found | seen);
        if verdict.is_new() {
            self.record(scratch);
        }
        verdict
    }

    /// Sets the bits [`found`](Self::found) left in `scratch` and counts the URL.
    fn record(&mut self, scratch: &Scratch) {
        match self.line_blocks() {
            Some(layout) => self.set_blocks(layout, &scratch.located, &scratch.masks),
            None => {
                let words = self.words.as_mut_slice();
                for &bit in &scratch.positions {
                    if let Some(word) = words.get_mut((bit / 64) as usize) {
                        *word |= 1 << (bit % 64);
                    }
                }
            }
        }
        self.items += 1;
    }

    /// [`check_and_insert`](Self::check_and_insert) for many URLs: the same verdicts and bits
    /// as one call per URL in order, faster on large filters. The values of a few URLs are
    /// hashed and their blocks requested from memory while the URLs before them are decided,
    /// so that the misses of one URL's features overlap the work on the others.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = url_dedup_similarity::SimilarityFilter::builder().build()?;
    /// let verdicts = f.check_and_insert_batch(&[
    ///     "https://shop.example/item/42?color=red",
    ///     "https://shop.example/item/42?color=blue",
    ///     "https://shop.example/item/43?color=red",
    /// ]);
    /// let similar: Vec<bool> = verdicts.iter().map(|v| v.is_similar()).collect();
    /// assert_eq!(similar, [false, true, false]);
    /// assert_eq!(f.len(), 2);
    /// # Ok::<(), url_dedup_similarity::Error>(())
    /// ```
    pub fn check_and_insert_batch<S: AsRef<str>>(&mut self, urls: &[S]) -> Vec<Verdict> {
        self.batch(urls, |filter, url, scratch| {
            filter.hash_features(url.as_ref(), scratch);
        })
    }

    /// Decides `urls` in order, `hash` leaving each one's feature hashes in the scratch
    /// space: a few URLs ahead when the regions test whole words, one at a time otherwise.
    fn batch<T>(
        &mut self,
        urls: &[T],
        hash: impl Fn(&SimilarityFilter, &T, &mut Scratch) + Copy,
    ) -> Vec<Verdict> {
        let mut out = Vec::with_capacity(urls.len());
        let mut scratch = std::mem::take(&mut self.scratch);
        let batched = check_and_insert_layers(
            std::slice::from_mut(self),
            urls,
            hash,
            &mut scratch,
            &mut out,
        );
        if !batched {
            for url in urls {
                hash(self, url, &mut scratch);
                out.push(self.check_and_insert_scratch(0, &mut scratch));
            }
        }
        self.scratch = scratch;
        out
    }

    /// [`check_and_insert_batch`](Self::check_and_insert_batch) for URLs whose features a
    /// [`FeatureHasher`] of this filter hashed, on any thread: the same verdicts and bits,
    /// with only the tests and writes left to this call.
    ///
    /// # Errors
    ///
    /// [`Error::ForeignHashes`] (and nothing recorded) if a URL was hashed by the hasher of a
    /// filter with other features, key or feature hash.
    ///
    /// # Examples
    ///
    /// See [`FeatureHasher`].
    pub fn check_and_insert_hashed(
        &mut self,
        urls: &[HashedUrl<'_>],
    ) -> Result<Vec<Verdict>, Error> {
        self.check_origin(urls)?;
        Ok(self.batch(urls, |_, url, scratch| scratch.load(url)))
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
        let mut scratch = Scratch::default();
        self.hash_features(url, &mut scratch);
        self.verdict(self.found(&mut scratch))
    }

    /// The layout of blocked regions whose blocks are whole words (every block the default
    /// sizing makes): their values are tested and set a word at a time, in place, without a
    /// list of bit positions.
    #[inline]
    fn line_blocks(&self) -> Option<Layout> {
        self.regions
            .blocks
            .filter(|l| l.segment_bits().is_multiple_of(64) && self.regions.bits.is_multiple_of(64))
    }

    /// Appends where each feature value lies, from the values' hashes (one [`Located`] per
    /// feature, in order), and asks the CPU for its block's cache lines.
    fn locate(&self, layout: Layout, hashed: &[Hashed], located: &mut Vec<Located>) {
        let words = self.words.as_slice();
        let region_words = self.regions.bits / 64;
        let block_words = layout.segment_bits() / 64;
        for (i, hashed) in hashed.iter().enumerate() {
            let probe = layout.probe(hashed.halves);
            let word = (i as u64 * region_words + probe.segment * block_words) as usize;
            for line in (0..block_words as usize).step_by(8) {
                if let Some(w) = words.get(word + line) {
                    url_dedup_segmented::prefetch_line(w);
                }
            }
            located.push(Located {
                word,
                seed: probe.seed,
            });
        }
    }

    /// The verdict for a URL whose features in `mask` matched.
    #[inline]
    pub(crate) fn verdict(&self, mask: u64) -> Verdict {
        let matches = Matches::new(mask, self.feature_list().len());
        if matches.all() {
            Verdict::Similar(matches)
        } else {
            Verdict::New(matches)
        }
    }

    /// [`tested_here`](Self::tested_here), remembering the values it found set.
    #[inline]
    fn matched_here(&mut self, layout: Layout, located: &[Located], masks: &mut Vec<u64>) -> u64 {
        let here = self.tested_here(layout, located, masks);
        self.remember(located, here);
        here
    }

    /// Remembers the [`locate`](Self::locate)d values whose features are in `here` as set (see
    /// [`KnownValues`]); nothing for a filter without blocks (no `located`) or a table.
    #[inline]
    fn remember(&mut self, located: &[Located], here: u64) {
        if self.known.is_off() {
            return;
        }
        // Values answered from the table are written to it again: telling them apart from
        // the ones tested (a second mask out of `tested_here`) measured 3% slower on the
        // real-list bench, against one store to a slot the lookup just read.
        for (i, at) in located.iter().enumerate() {
            if here >> i & 1 == 1 {
                self.known.insert(*at);
            }
        }
    }

    /// Which of one URL's [`locate`](Self::locate)d values (one per feature) have all their
    /// bits set in this filter, as a mask. A value [known](KnownValues) to be set is not
    /// tested again (its masks stay zero: its bits need no writing); the others' offsets are
    /// gathered into word masks of their blocks (left in `masks` for
    /// [`set_blocks`](Self::set_blocks)), then tested a word at a time, so the offsets are
    /// computed once for the test and the write.
    #[inline]
    fn tested_here(&self, layout: Layout, located: &[Located], masks: &mut Vec<u64>) -> u64 {
        let words = self.words.as_slice();
        let block_words = (layout.segment_bits() / 64) as usize;
        masks.clear();
        masks.resize(located.len() * block_words, 0);
        let mut mask = 0;
        let known = (!self.known.is_off()).then_some(&self.known);
        for ((i, at), value) in located
            .iter()
            .enumerate()
            .zip(masks.chunks_exact_mut(block_words.max(1)))
        {
            if known.is_some_and(|known| known.contains(at)) {
                mask |= 1 << i;
                continue;
            }
            let probe = Probe {
                segment: 0,
                seed: at.seed,
            };
            layout.fold_offsets(probe, (), |(), offset| {
                if let Some(w) = value.get_mut((offset / 64) as usize) {
                    *w |= 1 << (offset % 64);
                }
            });
            let block = words
                .get(at.word..at.word + block_words)
                .unwrap_or_default();
            let all_set =
                block.len() == value.len() && block.iter().zip(&*value).all(|(w, m)| w & m == *m);
            mask |= u64::from(all_set) << i;
        }
        mask
    }

    /// Sets the bits of the values [`locate`](Self::locate) found, from the masks
    /// [`tested_here`](Self::tested_here) left.
    fn set_blocks(&mut self, layout: Layout, located: &[Located], masks: &[u64]) {
        let block_words = (layout.segment_bits() / 64) as usize;
        let words = self.words.as_mut_slice();
        for (at, value) in located.iter().zip(masks.chunks_exact(block_words.max(1))) {
            if let Some(block) = words.get_mut(at.word..at.word + block_words) {
                for (w, m) in block.iter_mut().zip(value) {
                    *w |= m;
                }
            }
        }
    }

    /// Computes every feature's bit positions into `positions`; which features matched, as a
    /// mask.
    ///
    /// All positions come first, the tests after: the tests' loads do not depend on one
    /// another, so the memory accesses of every feature are in flight together instead of
    /// each waiting behind the hashing of the next value.
    fn probe(&self, hashed: &[Hashed], positions: &mut Vec<u64>) -> u64 {
        positions.clear();
        let Regions {
            bits: region_bits,
            hashes,
            blocks,
        } = self.regions;
        let mut ends = [0usize; MAX_FEATURES];
        for ((i, hashed), end) in hashed.iter().enumerate().zip(&mut ends) {
            let base = i as u64 * region_bits;
            match blocks {
                Some(layout) => {
                    let probe = layout.probe(hashed.halves);
                    let block = base + probe.segment * layout.segment_bits();
                    layout.fold_offsets(probe, (), |(), offset| positions.push(block + offset));
                }
                None if hashes == 1 => positions.push(base + hashed.bit(region_bits)),
                None => positions.extend(
                    hashed
                        .halves
                        .indexes(hashes, region_bits)
                        .map(|bit| base + bit),
                ),
            }
            *end = positions.len();
        }
        let words = self.words.as_slice();
        let is_set = |&bit: &u64| {
            words
                .get((bit / 64) as usize)
                .is_some_and(|w| w >> (bit % 64) & 1 == 1)
        };
        let mut mask = 0;
        let mut start = 0;
        for (i, &end) in ends.iter().enumerate().take(self.feature_list().len()) {
            let matched = positions[start..end].iter().all(is_set);
            mask |= u64::from(matched) << i;
            start = end;
        }
        mask
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
        self.feature_list().iter().map(|f| f.name())
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
        self.regions.bits
    }

    /// Bits each feature value sets in its region (1 under [`RegionSizing::Document004`]).
    ///
    /// # Examples
    ///
    /// See [`RegionSizing`].
    pub fn hashes(&self) -> u32 {
        self.regions.hashes
    }

    /// Bits per block of a [blocked](RegionSizing::Blocked) region (512, one cache line, at
    /// everyday rates), `None` for the other sizings.
    ///
    /// # Examples
    ///
    /// See [`RegionSizing`].
    pub fn block_bits(&self) -> Option<u64> {
        self.regions.blocks.map(|l| l.segment_bits())
    }

    /// How the regions were sized.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_similarity::{RegionSizing, SimilarityFilter};
    ///
    /// let f = SimilarityFilter::builder().build()?;
    /// assert_eq!(f.region_sizing(), RegionSizing::Blocked);
    /// # Ok::<(), url_dedup_similarity::Error>(())
    /// ```
    pub fn region_sizing(&self) -> RegionSizing {
        self.sizing
    }

    /// Total size in bits.
    ///
    /// # Examples
    ///
    /// See [`SimilarityFilter::region_bits`].
    pub fn bits(&self) -> u64 {
        self.regions.bits * self.feature_list().len() as u64
    }

    /// Bytes of memory the filter holds: its bits, and the table of values it found set,
    /// which answers recurring values without testing them (a sixteen-byte slot for every
    /// eight blocks, at most 512 KiB; none for regions that are not whole-word blocks, nor at
    /// rates above about 10^-4, where a value's test is as cheap as the lookup).
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_similarity::SimilarityFilter::builder()
    ///     .expected_items(1_000_000)
    ///     .false_positive_rate(1e-9)
    ///     .build()?;
    /// assert!(f.memory_bytes() > f.bits() / 8);
    /// assert!(f.memory_bytes() <= f.bits() / 8 + 512 * 1024);
    /// # Ok::<(), url_dedup_similarity::Error>(())
    /// ```
    pub fn memory_bytes(&self) -> u64 {
        self.bits().div_ceil(8) + self.known.memory_bytes()
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

    /// The probability that one never-seen feature value is taken for seen once `k` distinct
    /// values filled its region: the classic rate of one region, `(1 - e^(-h k/N))^h` with
    /// `h` bits per value, or the blocked one (which counts the uneven load of blocks).
    ///
    /// # Examples
    ///
    /// See [`RegionSizing`].
    pub fn expected_false_positive_rate(&self) -> f64 {
        match self.regions.blocks {
            Some(layout) => layout.false_positive_rate(self.expected_items),
            None => sizing::false_positive_rate(
                self.regions.bits,
                self.regions.hashes,
                self.expected_items,
            ),
        }
    }

    /// The probability, read from the bits now set, that a never-seen value of the fullest
    /// region is taken for seen: for each region the mean over its blocks of (fill of the
    /// block)^`h` (blocked), or (fill of the region)^`h` (the others), `h` bits per value;
    /// the largest over the regions.
    ///
    /// Unlike [`expected_false_positive_rate`](Self::expected_false_positive_rate), which
    /// assumes every URL brought a new value to every region, this counts what the regions
    /// hold: a site feature's region fills with sites, not URLs. It tells whether a filter
    /// handed more URLs than it was sized for still keeps its rate. Reads every word.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut f = url_dedup_similarity::SimilarityFilter::builder()
    ///     .expected_items(100)
    ///     .false_positive_rate(0.01)
    ///     .build()?;
    /// assert_eq!(f.measured_false_positive_rate(), 0.0);
    /// for i in 0..100 {
    ///     f.check_and_insert(&format!("https://site{i}.example/dir{i}/page{i}?q{i}=1"));
    /// }
    /// // At the size it was built for: about its target.
    /// assert!(f.measured_false_positive_rate() < 0.02);
    /// for i in 100..2_000 {
    ///     f.check_and_insert(&format!("https://site{i}.example/dir{i}/page{i}?q{i}=1"));
    /// }
    /// // Twenty times its size: the regions are nearly full.
    /// assert!(f.measured_false_positive_rate() > 0.5);
    /// # Ok::<(), url_dedup_similarity::Error>(())
    /// ```
    pub fn measured_false_positive_rate(&self) -> f64 {
        let words = self.words.as_slice();
        let hashes = i32::try_from(self.regions.hashes).unwrap_or(i32::MAX);
        // The share of set bits in `bits` bits from bit `from`; a word at a time where the
        // range is whole words (blocked regions always are).
        let fill = |from: u64, bits: u64| -> f64 {
            let ones: u64 = if from.is_multiple_of(64) && bits.is_multiple_of(64) {
                let range = (from / 64) as usize..((from + bits) / 64) as usize;
                let set = words.get(range).unwrap_or_default();
                set.iter().map(|w| u64::from(w.count_ones())).sum()
            } else {
                (from..from + bits)
                    .map(|b| {
                        words
                            .get((b / 64) as usize)
                            .map_or(0, |w| w >> (b % 64) & 1)
                    })
                    .sum()
            };
            ones as f64 / bits.max(1) as f64
        };
        (0..self.feature_list().len() as u64)
            .map(|i| {
                let base = i * self.regions.bits;
                match self.regions.blocks {
                    Some(layout) => {
                        let (block, blocks) = (layout.segment_bits(), layout.segments());
                        (0..blocks)
                            .map(|b| fill(base + b * block, block).powi(hashes))
                            .sum::<f64>()
                            / blocks.max(1) as f64
                    }
                    None => fill(base, self.regions.bits).powi(hashes),
                }
            })
            .fold(0.0, f64::max)
    }

    /// The hash applied to feature values.
    ///
    /// # Examples
    ///
    /// See [`FeatureHash`].
    pub fn feature_hash(&self) -> FeatureHash {
        self.hash
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
        self.words.as_mut_slice().fill(0);
        self.known.clear();
        self.items = 0;
    }

    pub(crate) fn raw_words(&self) -> &[u64] {
        self.words.as_slice()
    }
}

impl fmt::Debug for SimilarityFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimilarityFilter")
            .field("features", &self.features().collect::<Vec<_>>())
            .field("region_bits", &self.regions.bits)
            .field("hashes", &self.regions.hashes)
            .field("block_bits", &self.block_bits())
            .field("items", &self.items)
            .field("expected_items", &self.expected_items)
            .field("keyed", &self.key.is_some())
            .field("hash", &self.hash)
            .finish_non_exhaustive()
    }
}

impl PartialEq for SimilarityFilter {
    fn eq(&self, other: &Self) -> bool {
        self.features().eq(other.features())
            && self.regions == other.regions
            && self.sizing == other.sizing
            && self.key == other.key
            && self.hash == other.hash
            && self.expected_items == other.expected_items
            && self.fpr.to_bits() == other.fpr.to_bits()
            && self.items == other.items
            && self.raw_words() == other.raw_words()
    }
}

#[cfg(test)]
mod tests {
    use md5::{Digest as _, Md5};

    use super::*;

    fn bit(words: &[u64], i: u64) -> bool {
        words[(i / 64) as usize] >> (i % 64) & 1 == 1
    }

    #[test]
    fn document_layout_is_plain_md5_mod_n_per_region() {
        let mut f = SimilarityFilter::builder()
            .expected_items(1_000)
            .false_positive_rate(0.01)
            .preset(Preset::Document004)
            .region_sizing(RegionSizing::Document004)
            .unkeyed()
            .build()
            .unwrap();
        // M = ceil(-1000 ln 0.01 / ln2^2) = 9586 bits, N = M / 4.
        assert_eq!(f.region_bits(), 9586_u64.div_ceil(4));
        f.check_and_insert("http://a.example/news/2024/story.html");
        let n = f.region_bits();
        let values: [&[u8]; 4] = [b"a.example", b"4", b"news", b"story.html"];
        for (i, value) in values.iter().enumerate() {
            let md5 = u128::from_be_bytes(Md5::digest(value).into());
            let expected = i as u64 * n + (md5 % u128::from(n)) as u64;
            assert!(bit(f.raw_words(), expected), "feature {i}");
        }
        assert_eq!(f.raw_words().iter().map(|w| w.count_ones()).sum::<u32>(), 4);
    }

    #[test]
    fn keyed_filters_use_other_bits() {
        let build = |key| {
            let mut f = SimilarityFilter::builder()
                .expected_items(1_000)
                .preset(Preset::Document004)
                .hash_key(HashKey::from_bytes([key; 16]))
                .build()
                .unwrap();
            f.check_and_insert("http://a.example/x");
            f.raw_words().to_vec()
        };
        assert_ne!(build(1), build(2));
    }

    /// `check_and_insert` through the list of every bit position, the path of regions that
    /// are not whole words of blocks, whatever the filter's regions.
    fn insert_by_positions(f: &mut SimilarityFilter, url: &str) -> Verdict {
        let mut scratch = Scratch::default();
        f.hash_features(url, &mut scratch);
        let verdict = f.verdict(f.probe(&scratch.hashed, &mut scratch.positions));
        if verdict.is_new() {
            let words = f.words.as_mut_slice();
            for &bit in &scratch.positions {
                words[(bit / 64) as usize] |= 1 << (bit % 64);
            }
            f.items += 1;
        }
        verdict
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

        /// Blocked regions tested and set a word at a time give the verdicts and bits of the
        /// list of every bit position (the path of the other region sizings), for blocks of
        /// one to eight cache lines and any rate.
        #[test]
        fn whole_word_blocks_set_the_positions_bits(
            urls in proptest::collection::vec("https://[a-c]\\.example/[a-d]{0,2}/[a-d]{1,3}(\\?[a-c]=[0-9])?", 1..120),
            block_bits in proptest::sample::select(vec![512u64, 1024, 2048, 4096]),
            fpr in proptest::sample::select(vec![0.1, 0.01, 1e-6, 1e-9]),
        ) {
            let mut fast = SimilarityFilter::builder()
                .expected_items(40)
                .false_positive_rate(fpr)
                .hash_key(HashKey::from_bytes([7; 16]))
                .feature_hash(FeatureHash::SipHash13)
                .build()
                .unwrap();
            let layout = Layout::for_items(40, fpr, block_bits).unwrap();
            fast.regions = Regions {
                bits: layout.bits(),
                hashes: layout.hashes(),
                blocks: Some(layout),
            };
            fast.words = Words::zeroed(words_for(layout.bits(), 7).unwrap() as usize).unwrap();
            let mut slow = fast.clone();
            let mut batched = fast.clone();
            proptest::prop_assert!(fast.line_blocks().is_some());
            let mut verdicts = Vec::new();
            for url in &urls {
                let checked = fast.check(url);
                let by_positions = insert_by_positions(&mut slow, url);
                proptest::prop_assert_eq!(checked, by_positions);
                proptest::prop_assert_eq!(fast.check_and_insert(url), by_positions);
                proptest::prop_assert_eq!(fast.raw_words(), slow.raw_words());
                verdicts.push(by_positions);
            }
            // A batch, cut anywhere, decides as one call per URL in order.
            let cut = urls.len() / 3;
            let mut from_batches = batched.check_and_insert_batch(&urls[..cut]);
            from_batches.extend(batched.check_and_insert_batch(&urls[cut..]));
            proptest::prop_assert_eq!(from_batches, verdicts);
            proptest::prop_assert_eq!(batched.raw_words(), fast.raw_words());
            proptest::prop_assert_eq!(batched.len(), fast.len());
        }
    }
}
