//! [`Builder`]: the options of a [`UrlDedup`], and building one, fresh or from a state
//! snapshot.

use std::io::Read;
#[cfg(feature = "similarity")]
use std::sync::Mutex;

use url_dedup_bloom::HashKey;
use url_dedup_bloom::snapshot::{self, Kind, Limits, SnapshotError};
use url_dedup_canon::{Canonicalizer, Policy};
#[cfg(feature = "similarity")]
use url_dedup_similarity::{FeatureHash, GrowingSimilarityFilter, Preset, SimilarityFilter};

use crate::dedup::STATE_LAYOUT;
use crate::exact::Exact;
use crate::{Error, FilterKind, Preparer, UrlDedup};

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
    fpr: Option<f64>,
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
            fpr: None,
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

    /// The rate at which a new URL may be wrongly reported as seen (default 0.1%; with
    /// [`redis`](Self::redis), [`DEFAULT_SHARED_FPR`](url_dedup_redis::DEFAULT_SHARED_FPR),
    /// 10⁻⁵, as the command and the crawler use). The default [`FilterKind::Growing`] never
    /// exceeds it, however many URLs arrive; the fixed-size kinds reach it at the expected
    /// count and exceed it past that.
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
        self.fpr = Some(fpr);
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
    /// The exact filter's false-positive rate: the one set, or the default of where the filter
    /// lives. A shared filter's bits cost network and Redis memory for every process, so it
    /// defaults to the rate the command and the crawler measured with.
    fn rate(&self) -> f64 {
        #[cfg(feature = "redis")]
        if self.redis.is_some() {
            return self.fpr.unwrap_or(url_dedup_redis::DEFAULT_SHARED_FPR);
        }
        self.fpr.unwrap_or(0.001)
    }

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
                let target = self.similarity_fpr.unwrap_or(self.rate());
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
            let shared = Exact::redis(url, options, self.expected_urls, self.rate())?;
            return match from {
                Some((tag, mut input)) => Exact::read(tag, &mut input, Some(shared), limits),
                None => Ok(shared),
            };
        }
        match from {
            Some((tag, mut input)) => Exact::read(tag, &mut input, None, limits),
            None => Exact::build(self.filter, self.expected_urls, self.rate(), self.key),
        }
    }
}

/// The feature hasher of a deduplicator's similarity filter, for its [`Preparer`].
#[cfg(feature = "similarity")]
fn feature_hasher(
    similarity: Option<&Mutex<GrowingSimilarityFilter>>,
) -> Option<url_dedup_similarity::FeatureHasher> {
    similarity.map(|s| crate::dedup::lock(s).feature_hasher())
}
