//! What a [`UrlDedup`] holds: its sizing figures and its state snapshot ([`UrlDedup::write_to`];
//! [`crate::Builder::restore`] reads one back).

use std::io::Write;

use url_dedup_bloom::snapshot::{self, Kind, Params};

use crate::dedup::STATE_LAYOUT;
#[cfg(feature = "similarity")]
use crate::dedup::lock;
use crate::{Error, UrlDedup};

impl UrlDedup {
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
