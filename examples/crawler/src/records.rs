//! What one process writes about its fetches, the same in a single-process and a shared crawl:
//! the WARC file, the skip report (`skipped.tsv`), the counters of the run and the hashes of
//! the bodies seen.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::CrawlError;
use crate::fetch::Exchange;
use crate::skip::{SkipLog, SkipReason};
use crate::warc::WarcWriter;

/// Counters of this run.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    /// Responses received (any status).
    pub(crate) fetched: u64,
    /// Responses 304 Not Modified (revisits of `--every`).
    pub(crate) not_modified: u64,
    /// Body bytes received on the wire.
    pub(crate) wire_bytes: u64,
    pub(crate) by_status: BTreeMap<u16, u64>,
    /// URLs admitted to the run queue.
    pub(crate) admitted: u64,
    /// Links (after canonicalization) that the done set had already seen.
    pub(crate) duplicate_links: u64,
    /// Links whose canonical form differs from their spelling on the page.
    pub(crate) canonicalized: u64,
    /// Redirect responses whose target was handed to the done set.
    pub(crate) redirects: u64,
    /// Pages whose decoded body equals an earlier page's.
    pub(crate) identical_bodies: u64,
    pub(crate) nofollow: u64,
    /// Links that are no http(s) URL (`mailto:`, `javascript:`, unparsable).
    pub(crate) not_web: u64,
    /// Compressed responses decoded.
    pub(crate) decoded: u64,
    /// Page URLs found in sitemaps.
    pub(crate) sitemap_urls: u64,
    pub(crate) mirror_files: u64,
    /// Fetches tried again after a passing failure (`--retries`).
    pub(crate) retries: u64,
}

/// The records of one process.
pub(crate) struct Records {
    dir: PathBuf,
    warc_path: PathBuf,
    warc: Option<WarcWriter>,
    /// The XXH3 hashes of the bodies seen, in a growing filter (a few bytes per page, where a
    /// set of hashes would take some 30): a false positive counts a page as identical to an
    /// earlier one once in a million.
    body_hashes: url_dedup::UrlDedup,
    pub(crate) skips: SkipLog,
    pub(crate) stats: Stats,
}

impl Records {
    /// Opens the records in `dir`: the WARC file `warc_name` (when writing one) cut to its
    /// `committed` length, and the skip report, appended to.
    pub(crate) fn open(
        dir: &Path,
        warc: Option<(&str, u64)>,
        software: &str,
    ) -> Result<Self, CrawlError> {
        let warc_path = dir.join(warc.map_or("crawl.warc", |(name, _)| name));
        let writer = match warc {
            Some((name, committed)) => Some(
                WarcWriter::open(dir, name, committed, software)
                    .map_err(CrawlError::io("opening WARC", &warc_path))?,
            ),
            None => None,
        };
        let skips = SkipLog::open(dir).map_err(CrawlError::io(
            "opening skip report",
            dir.join("skipped.tsv"),
        ))?;
        let body_hashes = url_dedup::UrlDedup::builder()
            .no_canonicalization()
            .expected_urls(65_536)
            .false_positive_rate(1e-6)
            .build()?;
        Ok(Self {
            dir: dir.to_owned(),
            warc_path,
            warc: writer,
            body_hashes,
            skips,
            stats: Stats::default(),
        })
    }

    /// Length of the WARC file written so far (0 without one).
    pub(crate) fn warc_offset(&self) -> u64 {
        self.warc.as_ref().map_or(0, WarcWriter::offset)
    }

    /// The WARC file's path.
    pub(crate) fn warc_path(&self) -> &Path {
        &self.warc_path
    }

    /// WARC records written by this run.
    pub(crate) fn warc_records(&self) -> u64 {
        self.warc.as_ref().map_or(0, WarcWriter::records)
    }

    /// Records a skip in the report.
    pub(crate) fn skip(
        &mut self,
        reason: SkipReason,
        url: &str,
        detail: &str,
    ) -> Result<(), CrawlError> {
        self.skips
            .record(reason, url, detail)
            .map_err(CrawlError::io(
                "writing skip report",
                self.dir.join("skipped.tsv"),
            ))
    }

    /// Counts a response and writes its WARC records; returns the WARC length after them.
    pub(crate) fn exchange(&mut self, url: &str, x: &Exchange) -> Result<u64, CrawlError> {
        self.stats.fetched += 1;
        self.stats.wire_bytes += x.body.len() as u64;
        *self.stats.by_status.entry(x.status.as_u16()).or_default() += 1;
        match &mut self.warc {
            Some(w) => w
                .write_exchange(url, None, x)
                .map_err(CrawlError::io("writing WARC", &self.warc_path)),
            None => Ok(0),
        }
    }

    /// Counts a page whose decoded body (by its XXH3 `hash`) equals an earlier page's: the same
    /// content under another URL, which no URL rule can see.
    pub(crate) fn body_seen_hash(&mut self, hash: u64) {
        let key = hash.to_le_bytes();
        let seen = self.body_hashes.check_and_insert_batch_bytes([&key[..]]);
        if matches!(seen.first(), Some(Ok((outcome, _))) if !outcome.is_new()) {
            self.stats.identical_bodies += 1;
        }
    }

    /// Pushes the skip report's buffer to the OS (the WARC is flushed at every record).
    pub(crate) fn flush_skips(&mut self) {
        let _ = self.skips.flush();
    }

    /// Pushes everything to the OS, for a process about to exit without a checkpoint. Best
    /// effort: the next run recovers from any torn tail.
    pub(crate) fn flush(&mut self) {
        let _ = self.skips.flush();
        if let Some(w) = &mut self.warc {
            let _ = w.flush();
        }
    }
}

impl std::fmt::Debug for Records {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Records")
            .field("dir", &self.dir)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}
