//! Errors that stop a crawl (as opposed to a page that fails, which is reported and skipped).

use std::path::PathBuf;

/// What can stop the crawler.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum CrawlError {
    /// Reading or writing the output directory failed.
    #[error("{what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    /// The checkpoint is damaged or was written by an incompatible build.
    #[error("checkpoint {}: {reason}", path.display())]
    Checkpoint { path: PathBuf, reason: String },
    /// The output directory holds crawl state that is damaged or incomplete, and going on
    /// would lose or overwrite records: the message says what and what to do.
    #[error("{0}")]
    DamagedState(String),
    /// A seed is not an absolute http(s) URL.
    #[error("seed {0:?} is not an absolute http(s) URL")]
    BadSeed(String),
    /// An option is out of range or contradicts another: a usage error (exit status 2).
    #[error("{0}")]
    Usage(String),
    /// The options contradict each other or are out of range.
    #[error("{0}")]
    Options(String),
    /// The HTTP client could not be built.
    #[error("HTTP client: {0}")]
    Client(#[from] reqwest::Error),
    /// The host-to-worker table could not be built.
    #[error("partition table: {0}")]
    Partition(#[from] url_dedup_partition::Error),
    /// The done-set filter could not be built.
    #[error("dedup filter: {0}")]
    Filter(#[from] url_dedup_bloom::Error),
    /// The done set (the facade `url_dedup::UrlDedup`) failed or refused.
    #[error("done set: {0}")]
    Done(#[from] url_dedup::Error),
    /// The shared crawl's Redis failed or refused (after its retries).
    #[error("shared crawl: {0}")]
    Shared(#[from] url_dedup_redis::Error),
    /// A Redis command of the shared crawl failed.
    #[error("shared crawl: {0}")]
    Redis(#[from] redis::RedisError),
}

impl CrawlError {
    /// The process's exit status for this error: 2 for a usage error, 1 otherwise.
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            Self::Usage(_) | Self::BadSeed(_) => 2,
            _ => 1,
        }
    }

    pub(crate) fn io(
        what: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io { what, path, source }
    }
}
