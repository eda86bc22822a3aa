use std::borrow::Cow;
use std::io::{Read, Write};
#[cfg(feature = "similarity")]
use std::sync::{Mutex, MutexGuard};

use url_dedup_bloom::HashKey;
use url_dedup_bloom::snapshot::{self, Kind, Limits, Params};
use url_dedup_canon::{Canonicalizer, Policy};
#[cfg(feature = "similarity")]
use url_dedup_similarity::{FeatureHash, Preset, SimilarityFilter};

#[cfg(feature = "similarity")]
use crate::Explanation;
use crate::exact::Exact;
use crate::{Error, FilterKind, Outcome};

/// Layout of the state snapshot's parameter block; bump when it changes.
const STATE_LAYOUT: u16 = 1;

/// Deduplicates URLs: canonicalize, check the exact filter, optionally fold similar URLs.
///
/// Every method takes `&self` and the type is `Send + Sync`: share one behind an `Arc` between
/// crawler threads or tasks.
///
/// # Examples
///
/// ```
/// use url_dedup::{Outcome, UrlDedup};
///
/// let dedup = UrlDedup::builder()
///     .expected_urls(1_000_000)
///     .false_positive_rate(0.001)
///     .build()?;
///
/// assert_eq!(dedup.check_and_insert("https://example.com/?b=2&a=1")?, Outcome::New);
/// // Same page: host case, default port, parameter order and tracking parameters differ.
/// assert_eq!(
///     dedup.check_and_insert("https://EXAMPLE.com:443/?a=1&utm_source=x&b=2")?,
///     Outcome::Duplicate
/// );
/// assert!(dedup.check_and_insert("mailto:someone@example.com").is_err());
/// # Ok::<(), url_dedup::Error>(())
/// ```
pub struct UrlDedup {
    canonicalizer: Option<Canonicalizer>,
    exact: Exact,
    #[cfg(feature = "similarity")]
    similarity: Option<Mutex<SimilarityFilter>>,
}

/// Configures a [`UrlDedup`].
///
/// # Examples
///
/// ```
/// use url_dedup::{UrlDedup, canon::Policy};
///
/// let mut policy = Policy::default();
/// policy.fold_www = true;
/// let dedup = UrlDedup::builder()
///     .expected_urls(50_000)
///     .false_positive_rate(0.01)
///     .canonicalization(policy)
///     .build()?;
/// assert!(dedup.check_and_insert("https://www.example.com/")?.is_new());
/// assert!(!dedup.check_and_insert("https://example.com/")?.is_new());
/// # Ok::<(), url_dedup::Error>(())
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct Builder {
    expected_urls: u64,
    fpr: f64,
    policy: Option<Policy>,
    key: Option<HashKey>,
    filter: FilterKind,
    #[cfg(feature = "redis")]
    redis: Option<(String, String)>,
    #[cfg(feature = "similarity")]
    similarity: Option<Preset>,
}

impl Default for Builder {
    fn default() -> Self {
        Self {
            expected_urls: 1_000_000,
            fpr: 0.001,
            policy: Some(Policy::default()),
            key: None,
            filter: FilterKind::default(),
            #[cfg(feature = "redis")]
            redis: None,
            #[cfg(feature = "similarity")]
            similarity: None,
        }
    }
}

impl Builder {
    /// How many distinct URLs to size for (default one million). Over that, the false-positive
    /// rate rises; [`UrlDedup::is_over_capacity`] tells when.
    ///
    /// # Examples
    ///
    /// ```
    /// let d = url_dedup::UrlDedup::builder().expected_urls(10).build()?;
    /// assert_eq!(d.expected_urls(), 10);
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    pub fn expected_urls(mut self, urls: u64) -> Self {
        self.expected_urls = urls;
        self
    }

    /// The rate at which a new URL is wrongly reported as seen, at the expected count
    /// (default 0.1%).
    ///
    /// # Examples
    ///
    /// ```
    /// let loose = url_dedup::UrlDedup::builder().false_positive_rate(0.01).build()?;
    /// let tight = url_dedup::UrlDedup::builder().false_positive_rate(0.0001).build()?;
    /// assert!(loose.memory_bytes() * 2 < tight.memory_bytes());
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    pub fn false_positive_rate(mut self, fpr: f64) -> Self {
        self.fpr = fpr;
        self
    }

    /// The canonicalization policy (default: [`Policy::default`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup::{UrlDedup, canon::Policy};
    ///
    /// let d = UrlDedup::builder().canonicalization(Policy::rfc3986()).build()?;
    /// d.check_and_insert("https://example.com/?utm_source=x")?;
    /// // RFC 3986 alone keeps tracking parameters: a different URL.
    /// assert!(d.check_and_insert("https://example.com/")?.is_new());
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    pub fn canonicalization(mut self, policy: Policy) -> Self {
        self.policy = Some(policy);
        self
    }

    /// Compares URLs byte for byte, without canonicalization or validation.
    ///
    /// # Examples
    ///
    /// ```
    /// let d = url_dedup::UrlDedup::builder().no_canonicalization().build()?;
    /// d.check_and_insert("https://example.com/")?;
    /// assert!(d.check_and_insert("https://EXAMPLE.com/")?.is_new());
    /// assert!(d.check_and_insert("not even a URL")?.is_new());
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    pub fn no_canonicalization(mut self) -> Self {
        self.policy = None;
        self
    }

    /// Keys the filters' hashes explicitly (default: a random key), for reproducible runs or
    /// state shared between processes.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup::{UrlDedup, bloom::HashKey};
    ///
    /// let d = UrlDedup::builder().hash_key(HashKey::from_bytes([7; 16])).build()?;
    /// assert!(d.check_and_insert("https://example.com/")?.is_new());
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    pub fn hash_key(mut self, key: HashKey) -> Self {
        self.key = Some(key);
        self
    }

    /// Chooses the exact filter (default [`FilterKind::Segmented`], exactly-once under
    /// concurrency).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup::{FilterKind, UrlDedup};
    ///
    /// let d = UrlDedup::builder().filter(FilterKind::Classic).expected_urls(1_000).build()?;
    /// assert!(d.memory_bytes() < 2_000);
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    pub fn filter(mut self, kind: FilterKind) -> Self {
        self.filter = kind;
        self
    }

    /// Keeps the exact filter in Redis at `url` (for example `redis://127.0.0.1:6379/`), under
    /// the key prefix `prefix`, so several processes or machines share one state: each URL is
    /// admitted once across all of them. The first process creates the filter (sized by this
    /// builder); later ones adopt its size and key. The similarity filter, if any, stays local.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("facade redis example") else { return Ok(()) };
    /// use url_dedup::UrlDedup;
    ///
    /// let a = UrlDedup::builder().redis(&server.url(), "crawl").build()?;
    /// let b = UrlDedup::builder().redis(&server.url(), "crawl").build()?;
    /// assert!(a.check_and_insert("https://example.com/")?.is_new());
    /// assert!(!b.check_and_insert("https://EXAMPLE.com")?.is_new());
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    #[cfg(feature = "redis")]
    pub fn redis(mut self, url: &str, prefix: &str) -> Self {
        self.redis = Some((url.to_owned(), prefix.to_owned()));
        self
    }

    /// Also folds URLs that are *similar* to ones seen before (document 004), with a preset of
    /// features. Off by default.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup::{Outcome, UrlDedup, similarity::Preset};
    ///
    /// let d = UrlDedup::builder().similarity(Preset::Crawler).build()?;
    /// d.check_and_insert("https://example.com/list?sort=price")?;
    /// assert!(matches!(d.check_and_insert("https://example.com/list?sort=name")?, Outcome::Similar(_)));
    /// // A value with digits identifies another page: not folded.
    /// assert!(d.check_and_insert("https://example.com/list?page=2")?.is_new());
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    #[cfg(feature = "similarity")]
    pub fn similarity(mut self, preset: Preset) -> Self {
        self.similarity = Some(preset);
        self
    }

    /// Builds an empty deduplicator.
    ///
    /// # Errors
    ///
    /// [`Error::Filter`] or [`Error::Similarity`] for out-of-range sizes or rates.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(url_dedup::UrlDedup::builder().false_positive_rate(2.0).build().is_err());
    /// ```
    pub fn build(self) -> Result<UrlDedup, Error> {
        let exact = self.exact(None)?;
        #[cfg(feature = "similarity")]
        let similarity = match self.similarity {
            Some(preset) => {
                // Document 004 keeps its MD5; the crawler preset hashes seven features per URL,
                // where the workspace's keyed SipHash is about three times faster.
                let hash = match preset {
                    Preset::Document004 => FeatureHash::Md5,
                    _ => FeatureHash::SipHash13,
                };
                let mut b = SimilarityFilter::builder()
                    .expected_items(self.expected_urls)
                    .false_positive_rate(self.fpr)
                    .preset(preset)
                    .feature_hash(hash);
                if let Some(key) = self.key {
                    b = b.hash_key(key);
                }
                Some(Mutex::new(b.build()?))
            }
            None => None,
        };
        Ok(UrlDedup {
            canonicalizer: self.policy.map(Canonicalizer::new),
            exact,
            #[cfg(feature = "similarity")]
            similarity,
        })
    }

    /// Rebuilds a deduplicator from a snapshot written by [`UrlDedup::write_to`].
    ///
    /// Filter sizes and keys come from the snapshot; the canonicalization policy comes from
    /// this builder (it is configuration, not state). The snapshot must have a similarity
    /// filter exactly when this builder asks for one.
    ///
    /// # Errors
    ///
    /// [`Error::Snapshot`] or [`Error::Filter`] for damaged input, [`Error::StateMismatch`] when
    /// the components differ.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup::UrlDedup;
    ///
    /// let d = UrlDedup::builder().expected_urls(1_000).build()?;
    /// d.check_and_insert("https://example.com/")?;
    /// let mut state = Vec::new();
    /// d.write_to(&mut state)?;
    ///
    /// let restored = UrlDedup::builder().restore(&state[..])?;
    /// assert!(!restored.check_and_insert("https://example.com/")?.is_new());
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    pub fn restore<R: Read>(self, mut input: R) -> Result<UrlDedup, Error> {
        let header = snapshot::read_header(&mut input, Kind::DEDUP_STATE, Limits::default())?;
        let mut p = header.params();
        if p.u16()? != STATE_LAYOUT {
            return Err(Error::StateMismatch("unknown state layout version"));
        }
        let tag = p.u16()?;
        let has_similarity = p.u16()? == 1;
        if header.payload_words() != 0 {
            return Err(Error::StateMismatch(
                "unexpected payload in the state header",
            ));
        }
        // Drain the (empty) payload so its checksum is verified.
        header.read_payload(&mut input)?;
        let exact = self.exact(Some((tag, &mut input)))?;
        #[cfg(feature = "similarity")]
        let similarity = match (has_similarity, self.similarity.is_some()) {
            (true, true) => Some(Mutex::new(SimilarityFilter::read_from(&mut input)?)),
            (false, false) => None,
            (true, false) => {
                return Err(Error::StateMismatch(
                    "snapshot has a similarity filter but none was configured",
                ));
            }
            (false, true) => {
                return Err(Error::StateMismatch(
                    "a similarity filter was configured but the snapshot has none",
                ));
            }
        };
        #[cfg(not(feature = "similarity"))]
        if has_similarity {
            return Err(Error::StateMismatch(
                "snapshot has a similarity filter; enable the `similarity` feature",
            ));
        }
        Ok(UrlDedup {
            canonicalizer: self.policy.map(Canonicalizer::new),
            exact,
            #[cfg(feature = "similarity")]
            similarity,
        })
    }
}

impl Builder {
    /// The exact filter: fresh, or read from a state snapshot (`tag` and the input after the
    /// state header). A Redis builder opens the shared filter first and merges the snapshot in.
    fn exact(&self, from: Option<(u16, &mut dyn Read)>) -> Result<Exact, Error> {
        #[cfg(feature = "redis")]
        if let Some((url, prefix)) = &self.redis {
            let shared = Exact::redis(url, prefix, self.expected_urls, self.fpr, self.key)?;
            return match from {
                Some((tag, mut input)) => Exact::read(tag, &mut input, Some(shared)),
                None => Ok(shared),
            };
        }
        match from {
            Some((tag, mut input)) => Exact::read(tag, &mut input, None),
            None => Exact::build(self.filter, self.expected_urls, self.fpr, self.key),
        }
    }
}

impl UrlDedup {
    /// A builder with the defaults: one million URLs, 0.1% false positives, default
    /// canonicalization, the segmented filter in memory, no similarity folding, a random hash
    /// key.
    ///
    /// # Examples
    ///
    /// ```
    /// let dedup = url_dedup::UrlDedup::builder().build()?;
    /// assert_eq!(dedup.expected_urls(), 1_000_000);
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// The one call a crawler makes per discovered URL.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidUrl`] when canonicalization is on and the input is not an absolute
    /// http(s) URL; nothing is recorded then.
    ///
    /// # Examples
    ///
    /// ```
    /// let dedup = url_dedup::UrlDedup::builder().expected_urls(100).build()?;
    /// assert!(dedup.check_and_insert("https://example.com/a")?.is_new());
    /// assert!(!dedup.check_and_insert("https://example.com/a")?.is_new());
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    pub fn check_and_insert(&self, url: &str) -> Result<Outcome, Error> {
        self.check_and_insert_canonical(url)
            .map(|(outcome, _)| outcome)
    }

    /// [`check_and_insert`](Self::check_and_insert) that also returns the canonical form it
    /// decided on (borrowed from the input when it was already canonical).
    ///
    /// # Errors
    ///
    /// As [`check_and_insert`](Self::check_and_insert).
    ///
    /// # Examples
    ///
    /// ```
    /// let dedup = url_dedup::UrlDedup::builder().build()?;
    /// let (outcome, canonical) = dedup.check_and_insert_canonical("HTTPS://Example.COM:443/a/./b")?;
    /// assert!(outcome.is_new());
    /// assert_eq!(canonical, "https://example.com/a/b");
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    pub fn check_and_insert_canonical<'a>(
        &self,
        url: &'a str,
    ) -> Result<(Outcome, Cow<'a, str>), Error> {
        let canonical = self.canonicalize(url)?;
        let new = self.exact.check_and_insert(canonical.as_bytes())?;
        let outcome = self.after_exact(new, &canonical);
        Ok((outcome, canonical))
    }

    /// Checks many URLs; one result per input, in order.
    ///
    /// # Examples
    ///
    /// ```
    /// let dedup = url_dedup::UrlDedup::builder().build()?;
    /// let results = dedup.check_and_insert_batch(["https://a.example/", "https://a.example/", "x"]);
    /// assert!(results[0].as_ref().unwrap().is_new());
    /// assert!(!results[1].as_ref().unwrap().is_new());
    /// assert!(results[2].is_err());
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    pub fn check_and_insert_batch<I>(&self, urls: I) -> Vec<Result<Outcome, Error>>
    where
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        let urls: Vec<I::Item> = urls.into_iter().collect();
        self.check_and_insert_batch_canonical(urls.iter().map(AsRef::as_ref))
            .into_iter()
            .map(|r| r.map(|(outcome, _)| outcome))
            .collect()
    }

    /// [`check_and_insert_batch`](Self::check_and_insert_batch) that also returns the canonical
    /// form of each URL, as [`check_and_insert_canonical`](Self::check_and_insert_canonical)
    /// does for one (borrowed from the input when it was already canonical).
    ///
    /// One result per input, in order, exactly as calling `check_and_insert_canonical` on each
    /// in turn: a URL repeated within the batch is new the first time and a duplicate after.
    /// The exact filter is asked once for the whole batch (one round trip to Redis).
    ///
    /// # Errors
    ///
    /// Per URL: [`Error::InvalidUrl`] as in [`check_and_insert`](Self::check_and_insert); if
    /// the filter's store fails, every valid URL of the batch gets [`Error::Store`].
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup::{Outcome, UrlDedup};
    ///
    /// let dedup = UrlDedup::builder().build()?;
    /// let results = dedup.check_and_insert_batch_canonical([
    ///     "HTTPS://Example.COM:443/a/./b",
    ///     "https://example.com/a/b#top",
    ///     "not a URL",
    /// ]);
    /// let (outcome, canonical) = results[0].as_ref().unwrap();
    /// assert_eq!((outcome, &**canonical), (&Outcome::New, "https://example.com/a/b"));
    /// let (outcome, canonical) = results[1].as_ref().unwrap();
    /// assert_eq!((outcome, &**canonical), (&Outcome::Duplicate, "https://example.com/a/b"));
    /// assert!(results[2].is_err());
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    pub fn check_and_insert_batch_canonical<'a, I>(
        &self,
        urls: I,
    ) -> Vec<Result<(Outcome, Cow<'a, str>), Error>>
    where
        I: IntoIterator<Item = &'a str>,
    {
        let canonical: Vec<Result<Cow<'a, str>, Error>> =
            urls.into_iter().map(|u| self.canonicalize(u)).collect();
        let valid: Vec<&[u8]> = canonical
            .iter()
            .filter_map(|c| c.as_ref().ok().map(|c| c.as_bytes()))
            .collect();
        // One call for the whole batch: the segmented filter prefetches, Redis answers in one
        // round trip. If the store fails, every valid URL of the batch gets the error.
        let answers = self
            .exact
            .check_and_insert_batch(&valid)
            .map_err(|e| e.to_string());
        let mut new = answers.as_deref().unwrap_or_default().iter().copied();
        canonical
            .into_iter()
            .map(|c| {
                let c = c?;
                let new = match (&answers, new.next()) {
                    (Ok(_), Some(new)) => new,
                    (Ok(_), None) => return Err(Error::Store("missing answer".into())),
                    (Err(message), _) => return Err(Error::Store(message.clone())),
                };
                let outcome = self.after_exact(new, &c);
                Ok((outcome, c))
            })
            .collect()
    }

    /// Whether a URL was seen (exact filter only), without recording it.
    ///
    /// # Errors
    ///
    /// As [`check_and_insert`](Self::check_and_insert).
    ///
    /// # Examples
    ///
    /// ```
    /// let dedup = url_dedup::UrlDedup::builder().build()?;
    /// dedup.check_and_insert("https://example.com/")?;
    /// assert!(dedup.contains("https://example.com")?);
    /// assert!(!dedup.contains("https://example.com/other")?);
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    pub fn contains(&self, url: &str) -> Result<bool, Error> {
        self.exact.contains(self.canonicalize(url)?.as_bytes())
    }

    /// The canonical form of a URL under this deduplicator's policy (the input itself when
    /// canonicalization is off).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidUrl`] as in [`check_and_insert`](Self::check_and_insert).
    ///
    /// # Examples
    ///
    /// ```
    /// let dedup = url_dedup::UrlDedup::builder().build()?;
    /// assert_eq!(dedup.canonicalize("http://Example.com:80")?, "http://example.com/");
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    pub fn canonicalize<'a>(&self, url: &'a str) -> Result<Cow<'a, str>, Error> {
        match &self.canonicalizer {
            Some(c) => Ok(c.canonicalize(url)?),
            None => Ok(Cow::Borrowed(url)),
        }
    }

    /// The verdict once the exact filter has answered `new` for `canonical`.
    #[cfg_attr(not(feature = "similarity"), allow(unused_variables))]
    fn after_exact(&self, new: bool, canonical: &str) -> Outcome {
        if !new {
            return Outcome::Duplicate;
        }
        #[cfg(feature = "similarity")]
        if let Some(sim) = &self.similarity {
            let mut sim = lock(sim);
            let verdict = sim.check_and_insert(canonical);
            if verdict.is_similar() {
                let explanation = sim.explain(&verdict);
                return Outcome::Similar(Explanation {
                    features: explanation
                        .features()
                        .map(|(name, seen)| (name.to_owned(), seen))
                        .collect(),
                });
            }
        }
        Outcome::New
    }

    /// The number of distinct URLs the filters were sized for.
    ///
    /// # Examples
    ///
    /// ```
    /// let d = url_dedup::UrlDedup::builder().expected_urls(5).build()?;
    /// assert_eq!(d.expected_urls(), 5);
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    pub fn expected_urls(&self) -> u64 {
        self.exact.expected_items()
    }

    /// Estimated number of distinct URLs recorded so far.
    ///
    /// # Examples
    ///
    /// ```
    /// let d = url_dedup::UrlDedup::builder().expected_urls(1_000).build()?;
    /// for i in 0..100 {
    ///     d.check_and_insert(&format!("https://example.com/{i}"))?;
    /// }
    /// assert!((d.estimated_urls() - 100.0).abs() < 10.0);
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    ///
    /// NaN when the filter lives in Redis: its bits are not in this process to count.
    pub fn estimated_urls(&self) -> f64 {
        self.exact.estimated_items()
    }

    /// Whether more URLs were recorded than the filters were sized for.
    ///
    /// # Examples
    ///
    /// ```
    /// let d = url_dedup::UrlDedup::builder().expected_urls(10).build()?;
    /// assert!(!d.is_over_capacity());
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    pub fn is_over_capacity(&self) -> bool {
        self.exact.is_over_capacity()
    }

    /// Bytes of filter state (in this process, or in Redis for a shared filter).
    ///
    /// # Examples
    ///
    /// ```
    /// let d = url_dedup::UrlDedup::builder().expected_urls(1_000_000).false_positive_rate(0.01).build()?;
    /// assert_eq!(d.memory_bytes(), 1_253_376); // 10.03 bits per URL
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    pub fn memory_bytes(&self) -> u64 {
        let exact = self.exact.state_bytes();
        #[cfg(feature = "similarity")]
        if let Some(sim) = &self.similarity {
            return exact + lock(sim).bits().div_ceil(8);
        }
        exact
    }

    /// Writes the whole state (exact filter, and similarity filter if any) as one snapshot:
    /// a header of kind [`Kind::DEDUP_STATE`] followed by each component's own checksummed
    /// snapshot. URLs checked while the write runs may or may not be included.
    ///
    /// # Errors
    ///
    /// [`Error::Snapshot`] when writing fails.
    ///
    /// # Examples
    ///
    /// See [`Builder::restore`].
    pub fn write_to<W: Write>(&self, mut out: W) -> Result<(), Error> {
        #[cfg(feature = "similarity")]
        let has_similarity = self.similarity.is_some();
        #[cfg(not(feature = "similarity"))]
        let has_similarity = false;
        let mut p = Params::new();
        p.put_u16(STATE_LAYOUT)
            .put_u16(self.exact.tag())
            .put_u16(u16::from(has_similarity));
        snapshot::write(
            &mut out,
            Kind::DEDUP_STATE,
            p.as_bytes(),
            0,
            std::iter::empty(),
        )?;
        self.exact.write_to(&mut out)?;
        #[cfg(feature = "similarity")]
        if let Some(sim) = &self.similarity {
            lock(sim).write_to(&mut out)?;
        }
        Ok(())
    }
}

/// A poisoned lock only means another thread panicked while holding it; the filter's bits are
/// still valid (a partially set item is at worst re-admitted once), so keep going.
#[cfg(feature = "similarity")]
fn lock(m: &Mutex<SimilarityFilter>) -> MutexGuard<'_, SimilarityFilter> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl std::fmt::Debug for UrlDedup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("UrlDedup");
        d.field("canonicalizer", &self.canonicalizer)
            .field("exact", &self.exact);
        #[cfg(feature = "similarity")]
        d.field("similarity", &self.similarity.is_some());
        d.finish()
    }
}
