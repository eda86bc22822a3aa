//! Work done before deciding, on any thread: canonicalizing a URL and hashing its key.
//!
//! Deciding a batch in input order is one thread's work (the answers depend on the order);
//! canonicalizing and hashing are not, and together they are most of a URL's cost. A
//! [`Preparer`] does them wherever the caller likes (a pool of workers, the thread that read
//! the line), and [`UrlDedup::check_and_insert_prepared`](crate::UrlDedup::check_and_insert_prepared)
//! then only probes the filter.

use std::borrow::Cow;

use url_dedup_bloom::hash::{Digest, HashKey, ItemHasher, SipHash13};
use url_dedup_canon::Canonicalizer;

use crate::Error;

/// Canonicalizes and hashes URLs exactly as the [`UrlDedup`](crate::UrlDedup) it came from
/// would, on any thread. Cheap to clone; holds no reference to the deduplicator.
///
/// # Examples
///
/// ```
/// use url_dedup::UrlDedup;
///
/// let dedup = UrlDedup::builder().build()?;
/// let preparer = dedup.preparer();
/// // On worker threads:
/// let lines: [&[u8]; 3] = [b"https://example.com/a", b"HTTPS://EXAMPLE.com/a", b"https://example.com/b"];
/// let prepared: Vec<_> = lines.iter().map(|l| preparer.prepare(l)).collect::<Result<_, _>>()?;
/// // On the deciding thread:
/// let decided = dedup.check_and_insert_prepared(prepared.iter().map(|(k, d)| (&**k, *d)));
/// let new: Vec<bool> = decided.iter().map(|r| r.as_ref().unwrap().0.is_new()).collect();
/// assert_eq!(new, [true, false, true]);
/// # Ok::<(), url_dedup::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Preparer {
    pub(crate) canonicalizer: Option<Canonicalizer>,
    hasher: SipHash13,
    owner: u64,
    /// The similarity filter's feature hasher, when the deduplicator has one.
    #[cfg(feature = "similarity")]
    features: Option<url_dedup_similarity::FeatureHasher>,
    /// Learned rewrite rules, applied to the canonical form.
    #[cfg(feature = "rules")]
    rules: Option<std::sync::Arc<url_dedup_rules::Rules>>,
}

/// The exact filter's digest of a canonical key, made by a [`Preparer`]. Only the
/// deduplicator whose preparer made it uses it as it is; any other hashes the key again.
///
/// # Examples
///
/// ```
/// let dedup = url_dedup::UrlDedup::builder().build()?;
/// let digest = dedup.preparer().digest(b"https://example.com/");
/// assert_eq!(digest, dedup.preparer().digest(b"https://example.com/"));
/// # Ok::<(), url_dedup::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KeyDigest {
    digest: Digest,
    owner: u64,
}

impl Preparer {
    pub(crate) fn new(canonicalizer: Option<Canonicalizer>, key: HashKey) -> Self {
        Self {
            canonicalizer,
            hasher: SipHash13::new(key),
            owner: owner_of(key),
            #[cfg(feature = "similarity")]
            features: None,
            #[cfg(feature = "rules")]
            rules: None,
        }
    }

    /// This preparer, also rewriting canonical forms with `rules`.
    #[cfg(feature = "rules")]
    pub(crate) fn with_rules(
        mut self,
        rules: Option<std::sync::Arc<url_dedup_rules::Rules>>,
    ) -> Self {
        self.rules = rules;
        self
    }

    /// `key` rewritten by the rules, when there are rules and `key` is UTF-8.
    fn rewritten<'a>(&self, key: Cow<'a, [u8]>) -> Cow<'a, [u8]> {
        #[cfg(feature = "rules")]
        if let Some(rules) = &self.rules
            && let Ok(text) = std::str::from_utf8(&key)
            && let Cow::Owned(new) = rules.apply(text)
        {
            return Cow::Owned(new.into_bytes());
        }
        key
    }

    /// The canonical form of a URL, rewritten by the rules: the text a line is decided on.
    pub(crate) fn canonical_str<'a>(&self, url: &'a str) -> Result<Cow<'a, str>, Error> {
        let canonical = match &self.canonicalizer {
            Some(c) => c.canonicalize(url)?,
            None => Cow::Borrowed(url),
        };
        #[cfg(feature = "rules")]
        if let Some(rules) = &self.rules
            && let Cow::Owned(new) = rules.apply(&canonical)
        {
            return Ok(Cow::Owned(new));
        }
        Ok(canonical)
    }

    /// This preparer, also hashing the features of the similarity filter `features` hashes
    /// for.
    #[cfg(feature = "similarity")]
    pub(crate) fn with_features(
        mut self,
        features: Option<url_dedup_similarity::FeatureHasher>,
    ) -> Self {
        self.features = features;
        self
    }

    /// An empty batch of the similarity filter's feature hashes, when the deduplicator folds
    /// similar URLs (`None` otherwise): push each key (the canonical form [`prepare`](Self::prepare)
    /// gave) into it on the thread that prepared the key, and hand the hashes to
    /// [`UrlDedup::check_and_insert_prepared_with_features`](crate::UrlDedup::check_and_insert_prepared_with_features),
    /// so that the deciding thread does not split URLs and hash their values itself (seven
    /// values each with [`Preset::Crawler`](crate::similarity::Preset::Crawler)).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup::{UrlDedup, similarity::Preset};
    ///
    /// let d = UrlDedup::builder().similarity(Preset::Crawler).build()?;
    /// let mut hashes = d.preparer().feature_hashes().unwrap();
    /// assert_eq!(hashes.push("https://example.com/a"), 0);
    /// assert!(UrlDedup::builder().build()?.preparer().feature_hashes().is_none());
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    #[cfg(feature = "similarity")]
    pub fn feature_hashes(&self) -> Option<url_dedup_similarity::FeatureHashes> {
        self.features
            .as_ref()
            .map(url_dedup_similarity::FeatureHashes::new)
    }

    /// The key a line is decided on (its canonical form, or the line itself when the
    /// deduplicator does not canonicalize; borrowed from the line when they are the same)
    /// and its digest.
    ///
    /// # Errors
    ///
    /// [`Error::NotUtf8`] for a line that is not UTF-8 when canonicalization is on (but for
    /// the safe-browsing convention, which reads bytes);
    /// [`Error::InvalidUrl`] as in [`UrlDedup::check_and_insert`](crate::UrlDedup::check_and_insert).
    ///
    /// # Examples
    ///
    /// ```
    /// let dedup = url_dedup::UrlDedup::builder().build()?;
    /// let (key, _) = dedup.preparer().prepare(b"HTTP://Example.com:80")?;
    /// assert_eq!(&*key, b"http://example.com/");
    /// assert!(dedup.preparer().prepare(b"not a url").is_err());
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    pub fn prepare<'a>(&self, line: &'a [u8]) -> Result<(Cow<'a, [u8]>, KeyDigest), Error> {
        let key = self.key(line)?;
        let digest = self.digest(&key);
        Ok((key, digest))
    }

    /// [`prepare`](Self::prepare) for a line known to be UTF-8, which is not checked again.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidUrl`] as in [`UrlDedup::check_and_insert`](crate::UrlDedup::check_and_insert).
    ///
    /// # Examples
    ///
    /// ```
    /// let dedup = url_dedup::UrlDedup::builder().build()?;
    /// let p = dedup.preparer();
    /// assert_eq!(p.prepare_str("HTTP://Example.com")?, p.prepare(b"HTTP://Example.com")?);
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    pub fn prepare_str<'a>(&self, line: &'a str) -> Result<(Cow<'a, [u8]>, KeyDigest), Error> {
        let key = self.key_of_str(line)?;
        let digest = self.digest(&key);
        Ok((key, digest))
    }

    /// The key a line is decided on: [`prepare`](Self::prepare) without the digest.
    pub(crate) fn key<'a>(&self, line: &'a [u8]) -> Result<Cow<'a, [u8]>, Error> {
        let Some(c) = &self.canonicalizer else {
            return Ok(self.rewritten(Cow::Borrowed(line)));
        };
        match std::str::from_utf8(line) {
            Ok(text) => self.key_of_str(text),
            // Safe Browsing's rules read bytes; the others refuse them.
            Err(_) => c
                .canonicalize_bytes(line)
                .map(|key| self.rewritten(key))
                .map_err(|e| match e {
                    url_dedup_canon::CanonError::NotUtf8 => Error::NotUtf8,
                    e => Error::InvalidUrl(e),
                }),
        }
    }

    fn key_of_str<'a>(&self, line: &'a str) -> Result<Cow<'a, [u8]>, Error> {
        Ok(match self.canonical_str(line)? {
            Cow::Borrowed(b) => Cow::Borrowed(b.as_bytes()),
            Cow::Owned(o) => Cow::Owned(o.into_bytes()),
        })
    }

    /// The digest of a key that is canonical already (the first half of
    /// [`prepare`](Self::prepare)'s work was done elsewhere).
    ///
    /// # Examples
    ///
    /// ```
    /// let dedup = url_dedup::UrlDedup::builder().build()?;
    /// let p = dedup.preparer();
    /// assert_eq!(p.prepare(b"https://example.com/")?.1, p.digest(b"https://example.com/"));
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    #[inline]
    pub fn digest(&self, key: &[u8]) -> KeyDigest {
        KeyDigest {
            digest: self.hasher.hash(key),
            owner: self.owner,
        }
    }

    /// The digest for the deduplicator whose preparer this is: `digest` when it came from
    /// this preparer's key, else `key` hashed again.
    #[inline]
    pub(crate) fn digest_of(&self, key: &[u8], digest: KeyDigest) -> Digest {
        if digest.owner == self.owner {
            digest.digest
        } else {
            self.hasher.hash(key)
        }
    }
}

/// Names a hash key without revealing it: digests made under one key are never taken for
/// another's (a collision of two keys' names is a 2^-64 event, and then the answers are those
/// of the other key's positions, not a panic).
fn owner_of(key: HashKey) -> u64 {
    SipHash13::new(key)
        .hash(b"url-dedup: digests made under this key")
        .h1
}
