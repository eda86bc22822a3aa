//! The done set: "was this canonical URL admitted to the crawl already?", answered by the
//! workspace's facade `url_dedup::UrlDedup`, the same type every embedding crawler uses.
//!
//! In a single-process crawl the facade's filter lives in this process and its whole state is
//! part of each checkpoint (the journal covers the admissions after it); in a shared crawl it
//! lives in Redis (`Builder::redis`), so of two processes finding one new URL, exactly one
//! admits it. Either way the crawler asks in batches, one call per page.

use std::io::{Read, Write};

use url_dedup::bloom::HashKey;
use url_dedup::similarity::Preset;
use url_dedup::{Outcome, UrlDedup};

use crate::error::CrawlError;

/// Sizing and options of the done set.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FilterSize {
    pub(crate) expected_urls: u64,
    pub(crate) false_positive_rate: f64,
    /// Also fold similar URLs (document 004's similarity filter, crawler preset).
    pub(crate) similar: bool,
}

/// What the done set said about one canonical URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Never seen; now recorded.
    New,
    /// Seen before.
    Duplicate,
    /// Not seen, but similar to earlier URLs (the features seen before); now recorded, so the
    /// next link to it is a plain duplicate.
    Similar(String),
}

/// What the summary shows of a done set.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DoneFigures {
    /// Bytes of filter state.
    pub(crate) bytes: u64,
    /// Estimated distinct URLs recorded (NaN when the filter lives in Redis).
    pub(crate) estimated: f64,
    /// The false-positive rate now (NaN when the filter lives in Redis).
    pub(crate) fpr: f64,
    /// URLs the filter was first sized for.
    pub(crate) expected: u64,
}

impl Default for DoneFigures {
    fn default() -> Self {
        Self {
            bytes: 0,
            estimated: f64::NAN,
            fpr: f64::NAN,
            expected: 0,
        }
    }
}

/// The crawl's done set.
pub(crate) struct DoneSet {
    dedup: UrlDedup,
}

impl std::fmt::Debug for DoneSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DoneSet")
            .field("expected_urls", &self.dedup.expected_urls())
            .finish_non_exhaustive()
    }
}

/// Where a shared done set lives.
#[derive(Clone, Debug)]
pub(crate) struct SharedFilter {
    pub(crate) redis: String,
    pub(crate) prefix: String,
    /// Every process of the crawl brings the same key.
    pub(crate) key: HashKey,
    pub(crate) backoff: url_dedup_redis::Backoff,
    /// Replicas that must have each batch (Redis `WAIT`).
    pub(crate) acknowledge: Option<u32>,
}

fn builder(size: FilterSize) -> url_dedup::Builder {
    let b = UrlDedup::builder()
        .expected_urls(size.expected_urls)
        .false_positive_rate(size.false_positive_rate);
    if size.similar {
        b.similarity(Preset::Crawler)
    } else {
        b
    }
}

impl DoneSet {
    /// An empty done set in this process.
    pub(crate) fn local(size: FilterSize) -> Result<Self, CrawlError> {
        Ok(Self {
            dedup: builder(size).build()?,
        })
    }

    /// A done set in this process, read from a state written by [`write_to`](Self::write_to).
    /// A state written with another `--similar` is refused: the facade cannot add or drop a
    /// similarity filter after the fact, and silently changing what counts as seen would
    /// refetch or lose pages.
    pub(crate) fn restore(size: FilterSize, input: impl Read) -> Result<Self, CrawlError> {
        match builder(size).restore(input) {
            Ok(dedup) => Ok(Self { dedup }),
            Err(
                e @ (url_dedup::Error::ConfigMismatch { .. } | url_dedup::Error::StateMismatch(_)),
            ) => Err(CrawlError::Options(format!(
                "this output directory was crawled with other done-set options (--similar must \
                 stay as it was when the crawl started): {e}"
            ))),
            Err(e) => Err(e.into()),
        }
    }

    /// The done set shared in Redis. Blocking: call it off the async runtime.
    pub(crate) fn shared(size: FilterSize, at: &SharedFilter) -> Result<Self, CrawlError> {
        let mut b = builder(size)
            .redis(&at.redis, &at.prefix)
            .redis_backoff(at.backoff)
            .hash_key(at.key);
        if let Some(replicas) = at.acknowledge {
            b = b.redis_acknowledge(url_dedup_redis::Acknowledge {
                replicas,
                timeout: at.backoff.give_up_after,
            });
        }
        Ok(Self { dedup: b.build()? })
    }

    /// Admits `url` (canonical) if it is new.
    pub(crate) fn admit(&self, url: &str) -> Result<Verdict, CrawlError> {
        let (outcome, _) = self.dedup.check_and_insert_canonical(url)?;
        Ok(verdict(outcome))
    }

    /// Admits each URL that is new, in order (a URL repeated in the batch is new once): one
    /// call to the filter for the whole batch, one round trip in Redis. Blocking in Redis mode.
    pub(crate) fn admit_batch(&self, urls: &[String]) -> Result<Vec<Verdict>, CrawlError> {
        self.dedup
            .check_and_insert_batch_canonical(urls.iter().map(String::as_str))
            .into_iter()
            .map(|d| d.map(|(o, _)| verdict(o)).map_err(CrawlError::from))
            .collect()
    }

    /// Whether each URL was admitted, without admitting it: one call to the filter, one round
    /// trip in Redis.
    pub(crate) fn contains_batch(&self, urls: &[String]) -> Result<Vec<bool>, CrawlError> {
        self.dedup
            .contains_batch(urls.iter().map(String::as_str))
            .into_iter()
            .map(|found| found.map_err(CrawlError::from))
            .collect()
    }

    /// Writes the whole state (filters and their keys) as one snapshot.
    pub(crate) fn write_to(&self, out: impl Write) -> Result<(), url_dedup::Error> {
        self.dedup.write_to(out)
    }

    /// What the summary shows of it.
    pub(crate) fn figures(&self) -> DoneFigures {
        DoneFigures {
            bytes: self.dedup.memory_bytes(),
            estimated: self.dedup.estimated_urls(),
            fpr: self.dedup.false_positive_rate(),
            expected: self.dedup.expected_urls(),
        }
    }
}

fn verdict(outcome: Outcome) -> Verdict {
    match outcome {
        Outcome::New => Verdict::New,
        Outcome::Similar(why) => Verdict::Similar(why.to_string()),
        // `Outcome` may grow; anything else is not new.
        _ => Verdict::Duplicate,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIZE: FilterSize = FilterSize {
        expected_urls: 1000,
        false_positive_rate: 1e-6,
        similar: false,
    };

    #[test]
    fn admission_is_exact_in_and_across_batches() {
        let d = DoneSet::local(SIZE).unwrap();
        let batch: Vec<String> = ["http://h/a", "http://h/b", "http://h/a"]
            .map(String::from)
            .into();
        assert_eq!(
            d.admit_batch(&batch).unwrap(),
            [Verdict::New, Verdict::New, Verdict::Duplicate]
        );
        assert_eq!(d.admit("http://h/b").unwrap(), Verdict::Duplicate);
        assert_eq!(
            d.contains_batch(&["http://h/a".into(), "http://h/c".into()])
                .unwrap(),
            [true, false]
        );
    }

    #[test]
    fn a_state_restores_only_under_the_same_similar_option() {
        let d = DoneSet::local(SIZE).unwrap();
        d.admit("http://h/a").unwrap();
        let mut state = Vec::new();
        d.write_to(&mut state).unwrap();
        let back = DoneSet::restore(SIZE, &state[..]).unwrap();
        assert_eq!(back.admit("http://h/a").unwrap(), Verdict::Duplicate);
        let similar = FilterSize {
            similar: true,
            ..SIZE
        };
        let refused = DoneSet::restore(similar, &state[..]).unwrap_err();
        assert!(refused.to_string().contains("--similar"), "{refused}");
    }

    #[test]
    fn similar_urls_are_recorded_and_explained() {
        let d = DoneSet::local(FilterSize {
            similar: true,
            ..SIZE
        })
        .unwrap();
        assert_eq!(d.admit("http://h/list?sort=price").unwrap(), Verdict::New);
        let Verdict::Similar(why) = d.admit("http://h/list?sort=name").unwrap() else {
            panic!("expected similar")
        };
        assert!(why.starts_with("seen:"), "{why}");
        assert_eq!(
            d.admit("http://h/list?sort=name").unwrap(),
            Verdict::Duplicate
        );
    }
}
