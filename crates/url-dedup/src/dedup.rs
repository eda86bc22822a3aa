use std::borrow::Cow;
#[cfg(feature = "similarity")]
use std::sync::{Mutex, MutexGuard};

use url_dedup_bloom::hash::Digest;
#[cfg(feature = "similarity")]
use url_dedup_similarity::{GrowingSimilarityFilter, HashedUrl};
/// Without similarity there are no feature hashes: the type the batch paths pass instead.
#[cfg(not(feature = "similarity"))]
type HashedUrl<'h> = std::marker::PhantomData<&'h ()>;

use crate::Explanation;
use crate::exact::Exact;
use crate::{Builder, Error, KeyDigest, Outcome, Preparer};

/// One URL's outcome and the canonical form it was decided on, or why it could not be
/// decided: an item of the batch methods' answers, such as
/// [`UrlDedup::check_and_insert_batch_canonical`].
///
/// # Examples
///
/// ```
/// use url_dedup::{Decision, Outcome, UrlDedup};
///
/// let d = UrlDedup::builder().build()?;
/// let answers: Vec<Decision<_>> = d.check_and_insert_batch_canonical(["https://a.example"]);
/// assert!(matches!(&answers[0], Ok((Outcome::New, c)) if c == "https://a.example/"));
/// # Ok::<(), url_dedup::Error>(())
/// ```
pub type Decision<C> = Result<(Outcome, C), Error>;

/// Layout of the state snapshot's parameter block; bump when it changes. Layout 1 did not
/// record the configuration (see [`Builder::accept_config_change`]).
pub(crate) const STATE_LAYOUT: u16 = 2;

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
    /// Canonicalizes and hashes as this deduplicator does; holds its canonicalizer.
    pub(crate) preparer: Preparer,
    pub(crate) exact: Exact,
    #[cfg(feature = "similarity")]
    pub(crate) similarity: Option<Mutex<GrowingSimilarityFilter>>,
    /// The configuration a state snapshot records ([`Builder::config_text`]).
    pub(crate) config: String,
}

impl UrlDedup {
    /// A builder with the defaults: one million URLs, 0.1% false positives, default
    /// canonicalization, the growing segmented filter in memory, no similarity folding, a random hash
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
        let outcome = self.after_exact(new, canonical.as_bytes());
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
    pub fn check_and_insert_batch_canonical<'a, I>(&self, urls: I) -> Vec<Decision<Cow<'a, str>>>
    where
        I: IntoIterator<Item = &'a str>,
    {
        let canonical = urls.into_iter().map(|u| self.canonicalize(u)).collect();
        self.decide_batch(canonical, |c: &Cow<'a, str>| c.as_bytes())
    }

    /// [`check_and_insert_batch_canonical`](Self::check_and_insert_batch_canonical) for raw
    /// lines of bytes. Without canonicalization any bytes are a key, compared byte for byte
    /// (binary or text in another encoding); with it, a line must be UTF-8 (but for the
    /// safe-browsing convention, which reads bytes) and is canonicalized as a URL. The
    /// canonical form comes back as bytes.
    ///
    /// # Errors
    ///
    /// Per item: [`Error::NotUtf8`] for bytes that are not UTF-8 when canonicalization is on,
    /// then as [`check_and_insert_batch_canonical`](Self::check_and_insert_batch_canonical).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup::{Error, UrlDedup};
    ///
    /// let raw = UrlDedup::builder().no_canonicalization().build()?;
    /// let latin1: &[u8] = b"http://example.com/caf\xe9";
    /// let results = raw.check_and_insert_batch_bytes([latin1, latin1]);
    /// assert!(results[0].as_ref().unwrap().0.is_new());
    /// assert!(!results[1].as_ref().unwrap().0.is_new());
    ///
    /// let canonicalizing = UrlDedup::builder().build()?;
    /// let results = canonicalizing.check_and_insert_batch_bytes([latin1, b"HTTP://Example.com"]);
    /// assert!(matches!(results[0], Err(Error::NotUtf8)));
    /// assert_eq!(&*results[1].as_ref().unwrap().1, b"http://example.com/");
    ///
    /// // Safe Browsing's rules read bytes: the octet is escaped.
    /// let blocklist = UrlDedup::builder()
    ///     .canonicalization(url_dedup::canon::Policy::safe_browsing())
    ///     .build()?;
    /// let results = blocklist.check_and_insert_batch_bytes([latin1]);
    /// assert_eq!(&*results[0].as_ref().unwrap().1, b"http://example.com/caf%E9");
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    pub fn check_and_insert_batch_bytes<'a, I>(&self, items: I) -> Vec<Decision<Cow<'a, [u8]>>>
    where
        I: IntoIterator<Item = &'a [u8]>,
    {
        let canonical = items
            .into_iter()
            .map(|item| self.preparer.key(item))
            .collect();
        self.decide_batch(canonical, |c: &Cow<'a, [u8]>| c)
    }

    /// Canonicalizes and hashes as this deduplicator does, on any thread: the part of a
    /// URL's cost that does not depend on the order of decisions. See [`Preparer`].
    ///
    /// # Examples
    ///
    /// ```
    /// let dedup = url_dedup::UrlDedup::builder().build()?;
    /// let preparer = dedup.preparer();
    /// let prepared = std::thread::spawn(move || preparer.prepare(b"HTTPS://example.com").map(|(k, d)| (k.into_owned(), d)))
    ///     .join()
    ///     .unwrap()?;
    /// let decided = dedup.check_and_insert_prepared([(&prepared.0[..], prepared.1)]);
    /// assert!(decided[0].as_ref().unwrap().0.is_new());
    /// assert!(!dedup.check_and_insert("https://example.com/")?.is_new());
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    pub fn preparer(&self) -> Preparer {
        self.preparer.clone()
    }

    /// [`check_and_insert_batch_bytes`](Self::check_and_insert_batch_bytes) for keys a
    /// [`Preparer`] of this deduplicator made, each with its digest: only the filter's probes
    /// are left to do, with one call for the batch. A digest made by another deduplicator's
    /// preparer is not trusted: its key is hashed again. Each key comes back borrowed.
    ///
    /// # Errors
    ///
    /// Per item, as [`check_and_insert_batch_canonical`](Self::check_and_insert_batch_canonical)
    /// (canonicalization errors were [`Preparer::prepare`]'s).
    ///
    /// # Examples
    ///
    /// ```
    /// let dedup = url_dedup::UrlDedup::builder().build()?;
    /// let p = dedup.preparer();
    /// let a = p.prepare(b"https://example.com/a")?;
    /// let b = p.prepare(b"https://example.com/A")?;
    /// let decided = dedup.check_and_insert_prepared([(&*a.0, a.1), (&*b.0, b.1), (&*a.0, a.1)]);
    /// let new: Vec<bool> = decided.iter().map(|r| r.as_ref().unwrap().0.is_new()).collect();
    /// assert_eq!(new, [true, true, false]);
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    pub fn check_and_insert_prepared<'a, I>(&self, items: I) -> Vec<Decision<Cow<'a, [u8]>>>
    where
        I: IntoIterator<Item = (&'a [u8], KeyDigest)>,
    {
        let (keys, digests, _) =
            self.trusted_digests(items.into_iter().map(|(key, digest)| (key, digest, None)));
        let answers = self.exact.check_and_insert_digests(&keys, &digests);
        self.settle_prepared(keys, answers, &[])
    }

    /// [`check_and_insert_prepared`](Self::check_and_insert_prepared) for a deduplicator one
    /// thread owns: the same answers, with the in-memory filters written without locks (on
    /// x86 a locked write waits for every earlier load, so each lookup would wait out its own
    /// cache miss before the next could start). The path a single deciding thread takes, as
    /// the `url-dedup` command's does.
    ///
    /// # Errors
    ///
    /// As [`check_and_insert_prepared`](Self::check_and_insert_prepared).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut dedup = url_dedup::UrlDedup::builder().build()?;
    /// let p = dedup.preparer();
    /// let a = p.prepare(b"https://example.com/a")?;
    /// let b = p.prepare(b"https://example.com/A")?;
    /// let decided = dedup.check_and_insert_prepared_mut([(&*a.0, a.1), (&*b.0, b.1), (&*a.0, a.1)]);
    /// let new: Vec<bool> = decided.iter().map(|r| r.as_ref().unwrap().0.is_new()).collect();
    /// assert_eq!(new, [true, true, false]);
    /// assert!(!dedup.check_and_insert("https://example.com/a")?.is_new());
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    pub fn check_and_insert_prepared_mut<'a, I>(&mut self, items: I) -> Vec<Decision<Cow<'a, [u8]>>>
    where
        I: IntoIterator<Item = (&'a [u8], KeyDigest)>,
    {
        let (keys, digests, _) =
            self.trusted_digests(items.into_iter().map(|(key, digest)| (key, digest, None)));
        let answers = self.exact.check_and_insert_digests_mut(&keys, &digests);
        self.settle_prepared(keys, answers, &[])
    }

    /// [`check_and_insert_prepared`](Self::check_and_insert_prepared) for keys whose
    /// similarity features were hashed where they were prepared, into the
    /// [`FeatureHashes`](crate::similarity::FeatureHashes) of
    /// [`Preparer::feature_hashes`]: the same answers, with the URLs the exact filter calls
    /// new only tested against the similarity filter, not split and hashed again. A batch in
    /// which a new key has no hashes (`None`), or hashes another deduplicator's preparer made,
    /// is split and hashed here whole.
    ///
    /// # Errors
    ///
    /// As [`check_and_insert_prepared`](Self::check_and_insert_prepared).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup::{UrlDedup, similarity::Preset};
    ///
    /// let dedup = UrlDedup::builder().similarity(Preset::Crawler).build()?;
    /// let p = dedup.preparer();
    /// // On a worker thread:
    /// let mut hashes = p.feature_hashes().unwrap();
    /// let lines: [&[u8]; 2] = [b"https://shop.example/item/7?ref=rss", b"https://shop.example/item/7"];
    /// let mut prepared = Vec::new();
    /// for line in lines {
    ///     let (key, digest) = p.prepare(line)?;
    ///     let at = hashes.push(std::str::from_utf8(&key).unwrap());
    ///     prepared.push((key, digest, at));
    /// }
    /// // On the deciding thread:
    /// let decided = dedup.check_and_insert_prepared_with_features(
    ///     prepared.iter().map(|(k, d, at)| (&**k, *d, hashes.get(*at))),
    /// );
    /// assert!(decided[0].as_ref().unwrap().0.is_new());
    /// assert!(!decided[1].as_ref().unwrap().0.is_new()); // similar: only `ref` differs
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    #[cfg(feature = "similarity")]
    pub fn check_and_insert_prepared_with_features<'a, 'h, I>(
        &self,
        items: I,
    ) -> Vec<Decision<Cow<'a, [u8]>>>
    where
        I: IntoIterator<Item = (&'a [u8], KeyDigest, Option<HashedUrl<'h>>)>,
    {
        let (keys, digests, hashes) = self.trusted_digests(items);
        let answers = self.exact.check_and_insert_digests(&keys, &digests);
        self.settle_prepared(keys, answers, &hashes)
    }

    /// [`check_and_insert_prepared_with_features`](Self::check_and_insert_prepared_with_features)
    /// for a deduplicator one thread owns, as
    /// [`check_and_insert_prepared_mut`](Self::check_and_insert_prepared_mut): the path the
    /// `url-dedup` command's deciding thread takes with `--similar`.
    ///
    /// # Errors
    ///
    /// As [`check_and_insert_prepared`](Self::check_and_insert_prepared).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup::{UrlDedup, similarity::Preset};
    ///
    /// let mut dedup = UrlDedup::builder().similarity(Preset::Crawler).build()?;
    /// let p = dedup.preparer();
    /// let mut hashes = p.feature_hashes().unwrap();
    /// let (key, digest) = p.prepare(b"https://shop.example/item/7")?;
    /// let at = hashes.push(std::str::from_utf8(&key).unwrap());
    /// let decided = dedup.check_and_insert_prepared_with_features_mut([(&*key, digest, hashes.get(at))]);
    /// assert!(decided[0].as_ref().unwrap().0.is_new());
    /// assert!(!dedup.check_and_insert("https://shop.example/item/7?ref=rss")?.is_new());
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    #[cfg(feature = "similarity")]
    pub fn check_and_insert_prepared_with_features_mut<'a, 'h, I>(
        &mut self,
        items: I,
    ) -> Vec<Decision<Cow<'a, [u8]>>>
    where
        I: IntoIterator<Item = (&'a [u8], KeyDigest, Option<HashedUrl<'h>>)>,
    {
        let (keys, digests, hashes) = self.trusted_digests(items);
        let answers = self.exact.check_and_insert_digests_mut(&keys, &digests);
        self.settle_prepared(keys, answers, &hashes)
    }

    /// Splits prepared items into keys, digests and feature hashes, hashing again a key whose
    /// digest another deduplicator's preparer made.
    #[allow(clippy::type_complexity)]
    fn trusted_digests<'a, 'h>(
        &self,
        items: impl IntoIterator<Item = (&'a [u8], KeyDigest, Option<HashedUrl<'h>>)>,
    ) -> (Vec<&'a [u8]>, Vec<Digest>, Vec<Option<HashedUrl<'h>>>) {
        let items = items.into_iter();
        let mut keys = Vec::with_capacity(items.size_hint().0);
        let mut digests = Vec::with_capacity(items.size_hint().0);
        let mut hashes = Vec::with_capacity(items.size_hint().0);
        for (key, digest, hashed) in items {
            keys.push(key);
            digests.push(self.preparer.digest_of(key, digest));
            hashes.push(hashed);
        }
        (keys, digests, hashes)
    }

    /// [`settle`](Self::settle) for prepared keys, which come back borrowed; `hashes` holds
    /// each key's feature hashes, or is empty.
    fn settle_prepared<'a>(
        &self,
        keys: Vec<&'a [u8]>,
        answers: Result<Vec<bool>, Error>,
        hashes: &[Option<HashedUrl<'_>>],
    ) -> Vec<Decision<Cow<'a, [u8]>>> {
        let answers = answers_of(answers);
        let similar = self.similar_to_new(keys.iter().map(|&k| Some(k)), &answers, hashes);
        let keys = keys.into_iter().map(|k| Ok(Cow::Borrowed(k)));
        settled(keys, &answers, similar)
    }

    /// Decides canonical forms with one call to the exact filter, in order; items that
    /// failed before stay failed.
    fn decide_batch<C>(
        &self,
        canonical: Vec<Result<C, Error>>,
        bytes: impl Fn(&C) -> &[u8],
    ) -> Vec<Decision<C>> {
        let valid: Vec<&[u8]> = canonical
            .iter()
            .filter_map(|c| c.as_ref().ok().map(&bytes))
            .collect();
        // One call for the whole batch: the segmented filter prefetches, Redis answers in one
        // round trip. If the store fails, every valid URL of the batch gets the error.
        let answers = self.exact.check_and_insert_batch(&valid);
        self.settle(canonical, answers, bytes, &[])
    }

    /// Pairs the exact filter's `answers` (one per valid item, in order) with the items, and
    /// finishes each verdict; items that failed before stay failed. If the store failed,
    /// every valid item carries its failure. `hashes` holds each item's feature hashes made
    /// where it was prepared, or is empty.
    fn settle<C>(
        &self,
        canonical: Vec<Result<C, Error>>,
        answers: Result<Vec<bool>, Error>,
        bytes: impl Fn(&C) -> &[u8],
        hashes: &[Option<HashedUrl<'_>>],
    ) -> Vec<Decision<C>> {
        let answers = answers_of(answers);
        let valid = canonical.iter().map(|c| c.as_ref().ok().map(&bytes));
        let similar = self.similar_to_new(valid, &answers, hashes);
        settled(canonical.into_iter(), &answers, similar)
    }

    /// The similarity filter's answers for the items the exact filter called new, in order,
    /// in one batch as one call each would give them. `keys` holds each item's key, `None`
    /// for an item that failed before (and has no answer); `hashes`, each item's feature
    /// hashes made where it was prepared, or nothing.
    fn similar_to_new<'k>(
        &self,
        keys: impl Iterator<Item = Option<&'k [u8]>>,
        answers: &Answers,
        hashes: &[Option<HashedUrl<'_>>],
    ) -> std::vec::IntoIter<Option<Explanation>> {
        let mut new = answers.as_deref().unwrap_or_default().iter();
        self.similar_batch(keys.enumerate().filter_map(|(i, key)| {
            let key = key?;
            new.next()
                .is_some_and(|&new| new)
                .then(|| (key, hashes.get(i).copied().flatten()))
        }))
        .into_iter()
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

    /// [`contains`](Self::contains) for a batch, one answer per URL in order: one call to the
    /// exact filter (one round trip to Redis) for the whole batch. An invalid URL gets its
    /// error; if the store fails, every valid URL gets the failure ([`Error::Store`], or
    /// [`Error::Reset`] when the store lost its data).
    ///
    /// # Examples
    ///
    /// ```
    /// let dedup = url_dedup::UrlDedup::builder().build()?;
    /// dedup.check_and_insert("https://example.com/a")?;
    /// let found = dedup.contains_batch(["https://EXAMPLE.com/a", "https://example.com/b", "nope"]);
    /// assert_eq!(found[0].as_ref().ok(), Some(&true));
    /// assert_eq!(found[1].as_ref().ok(), Some(&false));
    /// assert!(found[2].is_err());
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    pub fn contains_batch<'a, I>(&self, urls: I) -> Vec<Result<bool, Error>>
    where
        I: IntoIterator<Item = &'a str>,
    {
        let canonical: Vec<Result<Cow<'a, str>, Error>> =
            urls.into_iter().map(|u| self.canonicalize(u)).collect();
        let valid: Vec<&[u8]> = canonical
            .iter()
            .filter_map(|c| c.as_ref().ok().map(|c| c.as_bytes()))
            .collect();
        let answers = answers_of(self.exact.contains_batch(&valid));
        paired(canonical.into_iter(), &answers, |found, _| found)
    }

    /// The canonical form of a URL under this deduplicator's policy (the input itself when
    /// canonicalization is off), rewritten by its rules ([`Builder::rules`]).
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
        self.preparer.canonical_str(url)
    }

    /// The verdict once the exact filter has answered `new` for `canonical`.
    #[cfg_attr(not(feature = "similarity"), allow(unused_variables))]
    /// Raw keys that are not UTF-8 have no URL features: only the exact filter judges them.
    fn after_exact(&self, new: bool, canonical: &[u8]) -> Outcome {
        if !new {
            return Outcome::Duplicate;
        }
        #[cfg(feature = "similarity")]
        // One URL: the filter's own call, without a batch's buffers.
        if let Some(sim) = &self.similarity
            && let Ok(canonical) = std::str::from_utf8(canonical)
        {
            let mut sim = lock(sim);
            let verdict = sim.check_and_insert(canonical);
            return explained(&sim, verdict).map_or(Outcome::New, Outcome::Similar);
        }
        Outcome::New
    }

    /// Asks the similarity filter about URLs the exact filter called new, in order, in one
    /// batch: for each, the explanation when it is similar to an earlier one, `None` when it
    /// is not (or its key is not UTF-8). Without a similarity filter, no answers at all: the
    /// callers read a missing answer as `None`.
    fn similar_batch<'k, 'h>(
        &self,
        new: impl IntoIterator<Item = (&'k [u8], Option<HashedUrl<'h>>)>,
    ) -> Vec<Option<Explanation>> {
        #[cfg(feature = "similarity")]
        if let Some(sim) = &self.similarity {
            let new: Vec<(&[u8], Option<HashedUrl<'h>>)> = new.into_iter().collect();
            let mut sim = lock(sim);
            // Every URL hashed where it was prepared: only the tests and writes are left.
            let hashed: Option<Vec<HashedUrl<'h>>> = new.iter().map(|(_, h)| *h).collect();
            if let Some(hashed) = hashed
                && let Ok(verdicts) = sim.check_and_insert_hashed(&hashed)
            {
                return verdicts.into_iter().map(|v| explained(&sim, v)).collect();
            }
            // Some URL without hashes, or hashes from another deduplicator's preparer
            // (refused, nothing recorded): split and hash them all here. Checking UTF-8
            // costs a pass over every new key, so only with a similarity filter.
            let keys: Vec<Option<&str>> = new
                .iter()
                .map(|(c, _)| std::str::from_utf8(c).ok())
                .collect();
            let text: Vec<&str> = keys.iter().flatten().copied().collect();
            let mut verdicts = sim.check_and_insert_batch(&text).into_iter();
            return keys
                .iter()
                .map(|k| explained(&sim, k.and_then(|_| verdicts.next())?))
                .collect();
        }
        // Nothing to ask: no answer is `None` for every URL, and nothing is allocated.
        drop(new);
        Vec::new()
    }
}

/// The explanation of a similar verdict, with the filter's feature names; `None` when new.
#[cfg(feature = "similarity")]
fn explained(
    sim: &GrowingSimilarityFilter,
    verdict: url_dedup_similarity::Verdict,
) -> Option<Explanation> {
    verdict.is_similar().then(|| Explanation {
        features: sim
            .explain(&verdict)
            .features()
            .map(|(name, seen)| (name.to_owned(), seen))
            .collect(),
    })
}

/// A poisoned lock only means another thread panicked while holding it; the filter's bits are
/// still valid (a partially set item is at worst re-admitted once), so keep going.
#[cfg(feature = "similarity")]
pub(crate) fn lock(m: &Mutex<GrowingSimilarityFilter>) -> MutexGuard<'_, GrowingSimilarityFilter> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl std::fmt::Debug for UrlDedup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("UrlDedup");
        d.field("canonicalizer", &self.preparer.canonicalizer)
            .field("exact", &self.exact);
        #[cfg(feature = "similarity")]
        d.field("similarity", &self.similarity.is_some());
        d.finish()
    }
}

/// The exact filter's answers for the valid items of a batch, in order, or how it failed:
/// its kind, and the store's message.
type Answers = Result<Vec<bool>, (Failure, String)>;

/// How a store failed, kept for every item of a batch.
#[derive(Clone, Copy, Debug)]
enum Failure {
    Reset,
    Unavailable,
    Other,
}

/// [`Answers`] from the exact filter's result, its failure kept as text for every item.
fn answers_of(result: Result<Vec<bool>, Error>) -> Answers {
    result.map_err(|e| {
        let kind = if e.is_reset() {
            Failure::Reset
        } else if e.is_unavailable() {
            Failure::Unavailable
        } else {
            Failure::Other
        };
        (kind, e.to_string())
    })
}

/// Each item of a batch with the exact filter's answer for it (one answer per valid item, in
/// order), through `finish`; an item that failed before stays failed, and if the store failed
/// every valid item carries its failure.
fn paired<C, T>(
    items: impl Iterator<Item = Result<C, Error>>,
    answers: &Answers,
    mut finish: impl FnMut(bool, C) -> T,
) -> Vec<Result<T, Error>> {
    let mut answer = answers.as_deref().unwrap_or_default().iter().copied();
    items
        .map(|item| {
            let item = item?;
            match (answers, answer.next()) {
                (Ok(_), Some(answer)) => Ok(finish(answer, item)),
                (Ok(_), None) => Err(Error::Store("missing answer".into())),
                (Err(failure), _) => Err(batch_error(failure)),
            }
        })
        .collect()
}

/// The decisions for a batch's items: duplicates where the exact filter found them, and for
/// the URLs it called new, the similarity filter's answers (`similar`, in order; none without
/// one).
fn settled<C>(
    items: impl Iterator<Item = Result<C, Error>>,
    answers: &Answers,
    mut similar: std::vec::IntoIter<Option<Explanation>>,
) -> Vec<Decision<C>> {
    paired(items, answers, |new, item| {
        let outcome = if !new {
            Outcome::Duplicate
        } else {
            similar
                .next()
                .flatten()
                .map_or(Outcome::New, Outcome::Similar)
        };
        (outcome, item)
    })
}

/// What each URL of a batch carries when the store failed: its kind, and the store's message.
fn batch_error(&(kind, ref message): &(Failure, String)) -> Error {
    match kind {
        Failure::Reset => Error::Reset(message.clone()),
        Failure::Unavailable => Error::Unavailable(message.clone()),
        Failure::Other => Error::Store(message.clone()),
    }
}
