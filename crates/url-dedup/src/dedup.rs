use std::borrow::Cow;
use std::io::{Read, Write};
#[cfg(feature = "similarity")]
use std::sync::{Mutex, MutexGuard};

use url_dedup_bloom::HashKey;
use url_dedup_bloom::hash::Digest;
use url_dedup_bloom::snapshot::{self, Kind, Limits, Params, SnapshotError};
use url_dedup_canon::{Canonicalizer, Policy};
#[cfg(feature = "similarity")]
use url_dedup_similarity::{
    FeatureHash, GrowingSimilarityFilter, HashedUrl, Preset, SimilarityFilter,
};
/// Without similarity there are no feature hashes: the type the batch paths pass instead.
#[cfg(not(feature = "similarity"))]
type HashedUrl<'h> = std::marker::PhantomData<&'h ()>;

use crate::Explanation;
use crate::exact::Exact;
use crate::{Error, FilterKind, KeyDigest, Outcome, Preparer};

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
const STATE_LAYOUT: u16 = 2;

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
    preparer: Preparer,
    exact: Exact,
    #[cfg(feature = "similarity")]
    similarity: Option<Mutex<GrowingSimilarityFilter>>,
    /// The configuration a state snapshot records ([`Builder::config_text`]).
    config: String,
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
    #[cfg(feature = "redis")]
    redis_backoff: url_dedup_redis::Backoff,
    #[cfg(feature = "redis")]
    redis_hashes: Option<u32>,
    #[cfg(feature = "redis")]
    redis_acknowledge: Option<url_dedup_redis::Acknowledge>,
    #[cfg(feature = "similarity")]
    similarity: Option<Preset>,
    #[cfg(feature = "similarity")]
    similarity_fpr: Option<f64>,
    #[cfg(feature = "rules")]
    rules: Option<std::sync::Arc<url_dedup_rules::Rules>>,
    accept_config_change: bool,
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
            #[cfg(feature = "redis")]
            redis_backoff: url_dedup_redis::Backoff::default(),
            #[cfg(feature = "redis")]
            redis_hashes: None,
            #[cfg(feature = "redis")]
            redis_acknowledge: None,
            #[cfg(feature = "similarity")]
            similarity: None,
            #[cfg(feature = "similarity")]
            similarity_fpr: None,
            #[cfg(feature = "rules")]
            rules: None,
            accept_config_change: false,
        }
    }
}

impl Builder {
    /// How many distinct URLs to size for (default one million). A guess is fine with the
    /// default [`FilterKind::Growing`], which adds capacity as needed (a good guess saves a
    /// little memory and a cache miss per older layer); past it, a fixed-size kind's
    /// false-positive rate rises, and [`UrlDedup::is_over_capacity`] tells when.
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

    /// The rate at which a new URL may be wrongly reported as seen (default 0.1%). The default
    /// [`FilterKind::Growing`] never exceeds it, however many URLs arrive; the fixed-size
    /// kinds reach it at the expected count and exceed it past that.
    ///
    /// # Examples
    ///
    /// ```
    /// let loose = url_dedup::UrlDedup::builder().false_positive_rate(0.01).build()?;
    /// let tight = url_dedup::UrlDedup::builder().false_positive_rate(0.000_001).build()?;
    /// assert!(loose.memory_bytes() * 2 < tight.memory_bytes());
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    pub fn false_positive_rate(mut self, fpr: f64) -> Self {
        self.fpr = fpr;
        self
    }

    /// The rate at which a value of one feature of the similarity filter may be taken for
    /// seen (default: [`false_positive_rate`](Self::false_positive_rate)). A URL is folded by
    /// chance only if every feature it does not share with earlier URLs matches by chance, so
    /// this bounds such folds per URL; a looser rate than the exact filter's costs fewer bits
    /// (seven regions of about 80 bits a URL at 10^-9, 29 at 10^-5) and less time. Without
    /// [`similarity`](Self::similarity), nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup::{UrlDedup, similarity::Preset};
    ///
    /// let strict = UrlDedup::builder().false_positive_rate(1e-9).similarity(Preset::Crawler).build()?;
    /// let loose = UrlDedup::builder()
    ///     .false_positive_rate(1e-9)
    ///     .similarity(Preset::Crawler)
    ///     .similarity_false_positive_rate(1e-5)
    ///     .build()?;
    /// assert!(loose.memory_bytes() * 2 < strict.memory_bytes());
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    #[cfg(feature = "similarity")]
    pub fn similarity_false_positive_rate(mut self, fpr: f64) -> Self {
        self.similarity_fpr = Some(fpr);
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
    /// state shared between processes. The key is what keeps crafted URLs from aiming at the
    /// filter's bits: treat it as a secret (state snapshots hold it; write them where only
    /// their owner reads). With `redis` (feature `redis`), a key given here is kept out of Redis:
    /// every process that shares the filter must give the same one.
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

    /// How long to wait for a Redis that does not answer: the first connection gives up after
    /// [`Backoff::first_contact`](url_dedup_redis::Backoff::first_contact) (3 s by default),
    /// later calls retry a server that stops answering for
    /// [`Backoff::give_up_after`](url_dedup_redis::Backoff::give_up_after) (30 s) before they
    /// fail with [`Error::Redis`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use url_dedup::{UrlDedup, redis::Backoff};
    ///
    /// // Nothing listens on port 1.
    /// let started = Instant::now();
    /// let err = UrlDedup::builder()
    ///     .redis("redis://127.0.0.1:1/", "crawl")
    ///     .redis_backoff(Backoff::giving_up_after(Duration::from_millis(300)))
    ///     .build()
    ///     .unwrap_err();
    /// assert!(started.elapsed() < Duration::from_secs(3), "{err}");
    /// ```
    #[cfg(feature = "redis")]
    pub fn redis_backoff(mut self, backoff: url_dedup_redis::Backoff) -> Self {
        self.redis_backoff = backoff;
        self
    }

    /// For a shared filter this process creates: `k` bits per URL and layer. Each bit is one
    /// operation for Redis, so its CPU per URL falls with `k` while the filter takes more
    /// memory for the same rate: at 1%, `k = 4` takes about 1.5 bytes per URL, the default
    /// `k = 2` about 2.5 and `k = 1` about 12.7 (a quarter of a `SADD` set of 8-byte hashes).
    /// See [`docs/redis.md`](https://github.com/url-dedup/url-dedup/blob/main/docs/redis.md). A filter that exists keeps the `k` it was made with.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("facade max hashes example") else { return Ok(()) };
    /// use url_dedup::UrlDedup;
    ///
    /// let lean = UrlDedup::builder()
    ///     .false_positive_rate(0.01)
    ///     .redis(&server.url(), "lean")
    ///     .redis_hashes(1)
    ///     .build()?;
    /// assert!(lean.check_and_insert("https://example.com/")?.is_new());
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    #[cfg(feature = "redis")]
    pub fn redis_hashes(mut self, k: u32) -> Self {
        self.redis_hashes = Some(k);
        self
    }

    /// Waits after every batch that admits URLs until `ack.replicas` replicas of each master
    /// it wrote to hold its writes (`WAIT`), so that a failover to a replica loses no
    /// admission (see [`StoreOptions::acknowledge`](url_dedup_redis::StoreOptions::acknowledge)).
    /// A batch not acknowledged within `ack.timeout` is tried again, and fails with
    /// [`Error::Redis`] once the give-up budget is spent: run masters with more replicas than
    /// `ack.replicas`.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("facade acknowledge example") else { return Ok(()) };
    /// use std::time::Duration;
    /// use url_dedup::{UrlDedup, redis::{Acknowledge, Backoff}};
    ///
    /// // This server has no replica: a batch that waits for one is never acknowledged.
    /// let waiting = UrlDedup::builder()
    ///     .redis(&server.url(), "acked")
    ///     .redis_backoff(Backoff::giving_up_after(Duration::from_millis(300)))
    ///     .redis_acknowledge(Acknowledge { replicas: 1, timeout: Duration::from_millis(20) })
    ///     .build()?;
    /// assert!(waiting.check_and_insert("https://example.com/").is_err());
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    #[cfg(feature = "redis")]
    pub fn redis_acknowledge(mut self, ack: url_dedup_redis::Acknowledge) -> Self {
        self.redis_acknowledge = Some(ack);
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

    /// Rewrites each canonical URL with learned rules ([`rules`](crate::rules), crate
    /// `url-dedup-rules`) before it is decided on, so that the URLs the rules map onto one
    /// page count once. Rules apply after canonicalization and cost about what their index
    /// finds for a URL (none for a host without rules). They are not recorded in a state
    /// snapshot: a crawl that learns more rules restores its state with the new ones.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup::{UrlDedup, rules::{Rules, RuleSet}};
    ///
    /// let set = RuleSet::parse("rules-format 1\nhost \"wiki.example\"\nreplace \"/print/\" \"/\"\n")?;
    /// let d = UrlDedup::builder().rules(Rules::new(&set)).build()?;
    /// assert!(d.check_and_insert("https://wiki.example/print/Main")?.is_new());
    /// assert!(!d.check_and_insert("https://WIKI.example/Main")?.is_new());
    /// assert_eq!(d.canonicalize("https://wiki.example/print/Main")?, "https://wiki.example/Main");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "rules")]
    pub fn rules(mut self, rules: url_dedup_rules::Rules) -> Self {
        self.rules = Some(std::sync::Arc::new(rules));
        self
    }

    /// Lets [`restore`](Self::restore) use a snapshot written under another configuration
    /// (canonicalization policy, similarity preset, filter kind), or by a version that did not
    /// record it. Off by default: a state built without canonicalization and read by a
    /// canonicalizing deduplicator would call distinct pages "seen", since their canonical
    /// forms were never recorded, and nothing would say so.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup::UrlDedup;
    ///
    /// let raw = UrlDedup::builder().no_canonicalization().build()?;
    /// let mut state = Vec::new();
    /// raw.write_to(&mut state)?;
    /// assert!(UrlDedup::builder().restore(&state[..]).is_err());
    /// assert!(UrlDedup::builder().accept_config_change().restore(&state[..]).is_ok());
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    pub fn accept_config_change(mut self) -> Self {
        self.accept_config_change = true;
        self
    }

    /// What a state snapshot records of this configuration, one `name: value` line each.
    fn config_text(&self) -> String {
        let policy = match &self.policy {
            Some(p) => format!("{p:?}"),
            None => "none (byte for byte)".to_owned(),
        };
        #[cfg(feature = "similarity")]
        let similarity = match self.similarity {
            Some(preset) => format!("{preset:?}"),
            None => "off".to_owned(),
        };
        #[cfg(not(feature = "similarity"))]
        let similarity = "off";
        format!("canonicalization: {policy}\nsimilarity: {similarity}\n")
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
        let exact = self.exact(None, Limits::default())?;
        #[cfg(feature = "similarity")]
        let similarity = match self.similarity {
            Some(preset) => {
                // Document 004 keeps its MD5; the crawler preset hashes seven features per URL,
                // where the workspace's keyed SipHash is about three times faster.
                let hash = match preset {
                    Preset::Document004 => FeatureHash::Md5,
                    _ => FeatureHash::SipHash13,
                };
                // It grows as the exact filter does: its first layer at the share of the rate
                // that leaves room for every later one.
                let target = self.similarity_fpr.unwrap_or(self.fpr);
                let (_, first_rate) =
                    url_dedup_bloom::sizing::Growth::default().layer(self.expected_urls, target, 0);
                let mut b = SimilarityFilter::builder()
                    .expected_items(self.expected_urls)
                    .false_positive_rate(first_rate)
                    .preset(preset)
                    .feature_hash(hash);
                if let Some(key) = self.key {
                    b = b.hash_key(key);
                }
                Some(Mutex::new(GrowingSimilarityFilter::new(b.build()?)))
            }
            None => None,
        };
        let config = self.config_text();
        let preparer = Preparer::new(self.policy.map(Canonicalizer::new), exact.key());
        #[cfg(feature = "similarity")]
        let preparer = preparer.with_features(feature_hasher(similarity.as_ref()));
        #[cfg(feature = "rules")]
        let preparer = preparer.with_rules(self.rules.clone());
        Ok(UrlDedup {
            preparer,
            exact,
            #[cfg(feature = "similarity")]
            similarity,
            config,
        })
    }

    /// Rebuilds a deduplicator from a snapshot written by [`UrlDedup::write_to`].
    ///
    /// Filter sizes and keys come from the snapshot. The snapshot records the configuration it
    /// was written under (canonicalization policy, similarity preset, filter kind); this
    /// builder must ask for the same, or the restore is refused with
    /// [`Error::ConfigMismatch`] saying what differs (see
    /// [`accept_config_change`](Self::accept_config_change)).
    ///
    /// # Errors
    ///
    /// [`Error::Snapshot`] or [`Error::Filter`] for damaged input, [`Error::ConfigMismatch`] or
    /// [`Error::StateMismatch`] when the configuration or the components differ.
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
    pub fn restore<R: Read>(self, input: R) -> Result<UrlDedup, Error> {
        self.restore_with_limits(input, Limits::default())
    }

    /// [`restore`](Self::restore) with explicit size limits on every component: pass the
    /// input's length when it is known (a file), so that a damaged or forged snapshot
    /// announcing more than the input holds is refused before anything is allocated.
    ///
    /// # Errors
    ///
    /// As [`restore`](Self::restore).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup::{UrlDedup, bloom::snapshot::Limits};
    ///
    /// let mut state = Vec::new();
    /// UrlDedup::builder().expected_urls(100_000).build()?.write_to(&mut state)?;
    /// let tight = Limits { max_payload_bytes: 1_000 };
    /// assert!(UrlDedup::builder().restore_with_limits(&state[..], tight).is_err());
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    pub fn restore_with_limits<R: Read>(
        self,
        mut input: R,
        limits: Limits,
    ) -> Result<UrlDedup, Error> {
        let header = snapshot::read_header(&mut input, Kind::DEDUP_STATE, limits)?;
        let mut p = header.params();
        let layout = p.u16()?;
        if layout != STATE_LAYOUT && layout != 1 {
            return Err(Error::StateMismatch("unknown state layout version"));
        }
        let tag = p.u16()?;
        // Layers of the similarity filter (states before it grew hold 0 or 1).
        let similarity_layers = p.u16()?;
        let has_similarity = similarity_layers > 0;
        let recorded = match layout {
            1 => None,
            _ => Some(String::from_utf8_lossy(p.field()?).into_owned()),
        };
        if header.payload_words() != 0 || !p.is_empty() {
            return Err(
                SnapshotError::InvalidParameters("unexpected bytes in the state header").into(),
            );
        }
        // Drain the (empty) payload so its checksum is verified.
        header.read_payload(&mut input)?;
        let configured = self.config_text();
        let kind = Exact::kind_of_tag(tag);
        #[cfg(feature = "redis")]
        let kind_matters = self.redis.is_none();
        #[cfg(not(feature = "redis"))]
        let kind_matters = true;
        if !self.accept_config_change {
            let recorded_kind = kind.map_or("unknown".to_owned(), |k| format!("{k:?}"));
            let recorded_text = match &recorded {
                Some(text) => format!("{text}filter: {recorded_kind}\n"),
                None => "not recorded (written by an older version)\n".to_owned(),
            };
            // Among the filters, only exactness is configuration: a Bloom state of any kind
            // restores as itself, but a run that asked for no false positives must not get a
            // Bloom filter, nor the reverse.
            let exact = |k: Option<FilterKind>| k == Some(FilterKind::Exact);
            let configured_kind = if kind_matters && exact(Some(self.filter)) != exact(kind) {
                format!("{:?}", self.filter)
            } else {
                recorded_kind
            };
            let configured_text = format!("{configured}filter: {configured_kind}\n");
            if recorded_text != configured_text {
                return Err(Error::ConfigMismatch {
                    recorded: recorded_text,
                    configured: configured_text,
                });
            }
        }
        let exact = self.exact(Some((tag, &mut input)), limits)?;
        #[cfg(feature = "similarity")]
        let similarity = match (has_similarity, self.similarity.is_some()) {
            (true, true) => {
                // Layers double: 64 of them would be 2^63 times the first's size.
                if similarity_layers > 64 {
                    return Err(Error::StateMismatch("more similarity layers than can be"));
                }
                let layers = (0..similarity_layers)
                    .map(|_| SimilarityFilter::read_from(&mut input))
                    .collect::<Result<Vec<_>, _>>()?;
                Some(Mutex::new(GrowingSimilarityFilter::from_layers(layers)?))
            }
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
        let preparer = Preparer::new(self.policy.map(Canonicalizer::new), exact.key());
        #[cfg(feature = "similarity")]
        let preparer = preparer.with_features(feature_hasher(similarity.as_ref()));
        #[cfg(feature = "rules")]
        let preparer = preparer.with_rules(self.rules.clone());
        Ok(UrlDedup {
            preparer,
            exact,
            #[cfg(feature = "similarity")]
            similarity,
            config: configured,
        })
    }
}

impl Builder {
    /// The exact filter: fresh, or read from a state snapshot (`tag` and the input after the
    /// state header). A Redis builder opens the shared filter first and merges the snapshot in.
    fn exact(&self, from: Option<(u16, &mut dyn Read)>, limits: Limits) -> Result<Exact, Error> {
        #[cfg(feature = "redis")]
        if let Some((url, prefix)) = &self.redis {
            // A key given by the caller stays out of Redis: processes that share the filter
            // bring it themselves. Without one, the first process's random key is shared
            // through the metadata.
            let options = url_dedup_redis::StoreOptions {
                backoff: self.redis_backoff,
                key: self.key,
                hashes: self.redis_hashes,
                acknowledge: self.redis_acknowledge,
                ..url_dedup_redis::StoreOptions::new(prefix.as_str())
            };
            let shared = Exact::redis(url, options, self.expected_urls, self.fpr)?;
            return match from {
                Some((tag, mut input)) => Exact::read(tag, &mut input, Some(shared), limits),
                None => Ok(shared),
            };
        }
        match from {
            Some((tag, mut input)) => Exact::read(tag, &mut input, None, limits),
            None => Exact::build(self.filter, self.expected_urls, self.fpr, self.key),
        }
    }
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

    /// With `Builder::redis` (feature `redis`): `Some(true)` when building this deduplicator created the
    /// shared filter in Redis, `Some(false)` when it found one there (another process's, or an
    /// earlier run's); `None` for filters in memory. A job that ran before and finds `true`
    /// is looking at a Redis that lost its data between runs (a restart without persistence,
    /// a `FLUSHALL`), and will admit every URL again: the `url-dedup` command says so.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup::UrlDedup;
    ///
    /// assert_eq!(UrlDedup::builder().build()?.created_shared_filter(), None);
    /// # #[cfg(feature = "redis")] {
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("facade created example") else { return Ok(()) };
    /// let open = || UrlDedup::builder().redis(&server.url(), "jobs").build();
    /// assert_eq!(open()?.created_shared_filter(), Some(true));
    /// assert_eq!(open()?.created_shared_filter(), Some(false));
    /// # }
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    pub fn created_shared_filter(&self) -> Option<bool> {
        self.exact.created_in_redis()
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

    /// The chance, now, that a new URL would be taken for one already seen: the exact
    /// filter's false-positive rate at its current fill (for [`FilterKind::Exact`], the chance
    /// that any two URLs so far share a fingerprint). Similar-URL folding is on purpose and is
    /// not counted. NaN when the filter lives in Redis.
    ///
    /// Summed over the new URLs of a run, it is the expected number of distinct URLs the run
    /// dropped by mistake.
    ///
    /// # Examples
    ///
    /// ```
    /// let d = url_dedup::UrlDedup::builder().expected_urls(1_000).false_positive_rate(0.01).build()?;
    /// assert_eq!(d.false_positive_rate(), 0.0);
    /// for i in 0..10_000 {
    ///     d.check_and_insert(&format!("https://example.com/{i}"))?;
    /// }
    /// // Ten times the expected count, and the filter still keeps its promise.
    /// assert!(d.false_positive_rate() < 0.01);
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    pub fn false_positive_rate(&self) -> f64 {
        self.exact.false_positive_rate()
    }

    /// With a similarity filter, the chance, read from its bits now, that a never-seen value
    /// of a feature is taken for seen (the sum over its layers of
    /// [`SimilarityFilter::measured_false_positive_rate`](url_dedup_similarity::SimilarityFilter::measured_false_positive_rate)).
    /// The similarity filter grows as the exact filter does and keeps this below the requested
    /// rate; it rises above only if a layer could not be added (out of memory), when URLs that
    /// differ from earlier ones in a single feature start to be folded by chance. `None`
    /// without a similarity filter. Reads all of its bits.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup::{UrlDedup, similarity::Preset};
    ///
    /// let d = UrlDedup::builder().expected_urls(100).false_positive_rate(0.01).similarity(Preset::Crawler).build()?;
    /// for i in 0..5_000 {
    ///     d.check_and_insert(&format!("https://site{i}.example/dir{i}/page{i}"))?;
    /// }
    /// // Fifty times its first size: both filters grew and kept their rates.
    /// assert!(d.false_positive_rate() < 0.01);
    /// assert!(d.similarity_false_positive_rate().unwrap() < 0.02);
    /// assert_eq!(UrlDedup::builder().build()?.similarity_false_positive_rate(), None);
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    pub fn similarity_false_positive_rate(&self) -> Option<f64> {
        #[cfg(feature = "similarity")]
        if let Some(sim) = &self.similarity {
            return Some(lock(sim).measured_false_positive_rate());
        }
        None
    }

    /// Bytes of filter state (in this process, or in Redis for a shared filter).
    ///
    /// # Examples
    ///
    /// ```
    /// let d = url_dedup::UrlDedup::builder().expected_urls(1_000_000).false_positive_rate(0.01).build()?;
    /// // 10.9 bits per URL: the first layer of the growing filter, at 70% of the rate so
    /// // that later layers fit under it, plus its locks and checkpoint marks.
    /// assert_eq!(d.memory_bytes(), 1_360_656);
    /// # Ok::<(), url_dedup::Error>(())
    /// ```
    pub fn memory_bytes(&self) -> u64 {
        let exact = self.exact.state_bytes();
        #[cfg(feature = "similarity")]
        if let Some(sim) = &self.similarity {
            return exact + lock(sim).memory_bytes();
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
        let similarity_layers = self.similarity.as_ref().map_or(0, |s| lock(s).layers());
        #[cfg(not(feature = "similarity"))]
        let similarity_layers = 0;
        let mut p = Params::new();
        p.put_u16(STATE_LAYOUT)
            .put_u16(self.exact.tag())
            .put_u16(u16::try_from(similarity_layers).unwrap_or(u16::MAX))
            .put_field(self.config.as_bytes());
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
            let sim = lock(sim);
            for layer in (0..sim.layers()).filter_map(|i| sim.layer(i)) {
                layer.write_to(&mut out)?;
            }
        }
        Ok(())
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

/// The feature hasher of a deduplicator's similarity filter, for its [`Preparer`].
#[cfg(feature = "similarity")]
fn feature_hasher(
    similarity: Option<&Mutex<GrowingSimilarityFilter>>,
) -> Option<url_dedup_similarity::FeatureHasher> {
    similarity.map(|s| lock(s).feature_hasher())
}

/// A poisoned lock only means another thread panicked while holding it; the filter's bits are
/// still valid (a partially set item is at worst re-admitted once), so keep going.
#[cfg(feature = "similarity")]
fn lock(m: &Mutex<GrowingSimilarityFilter>) -> MutexGuard<'_, GrowingSimilarityFilter> {
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
