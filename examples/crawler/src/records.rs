//! What one process writes about its fetches, the same in a single-process and a shared crawl:
//! the WARC file, the skip report (`skipped.tsv`), the counters of the run and the hashes of
//! the bodies seen.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::CrawlError;
use crate::fetch::Exchange;
use crate::skip::{SkipLog, SkipReason};
use crate::warc::{Original, WarcWriter};

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
    /// Responses written as revisits of an identical payload (`--learn`).
    pub(crate) revisits: u64,
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
    /// With `--learn`: the first response record of each payload digest, so that a later
    /// identical payload is written as a revisit of it.
    payloads: Option<HashMap<String, Original>>,
    /// With `--learn`: the log of the pages fingerprinted.
    pages: Option<(PathBuf, BufWriter<File>)>,
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
            payloads: None,
            pages: None,
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
        let Some(w) = &mut self.warc else {
            return Ok(0);
        };
        let key = match &self.payloads {
            Some(_) if x.status.is_success() && !x.truncated && !x.body.is_empty() => {
                Some(crate::warc::digest(&[&x.body]))
            }
            _ => None,
        };
        let same = match (&self.payloads, &key) {
            (Some(p), Some(k)) => p.get(k),
            _ => None,
        };
        let revisit = same.is_some();
        let len = w
            .write_exchange(url, None, x, same)
            .map_err(CrawlError::io("writing WARC", &self.warc_path))?;
        if revisit {
            self.stats.revisits += 1;
        } else if let (Some(p), Some(k), Some(last)) = (&mut self.payloads, key, w.last()) {
            p.insert(k, last.clone());
        }
        Ok(len)
    }

    /// Writes identical payloads as revisit records, and logs the pages fingerprinted to
    /// `pages` in the output directory (appended to): what `--learn` adds.
    pub(crate) fn learn(&mut self, pages: &str) -> Result<(), CrawlError> {
        self.payloads = Some(HashMap::new());
        let path = self.dir.join(pages);
        let file = crate::files::open(
            &self.dir,
            Path::new(pages),
            crate::files::Open::Append,
            crate::files::Access::Private,
        )
        .map_err(CrawlError::io("opening page log", &path))?;
        self.pages = Some((path, BufWriter::new(file)));
        Ok(())
    }

    /// Logs a page fingerprinted: its URL, fingerprints, and the URL of a near duplicate.
    pub(crate) fn page(
        &mut self,
        url: &str,
        fp: &url_dedup_fingerprint::PageFingerprint,
        near: Option<&str>,
    ) -> Result<(), CrawlError> {
        let Some((path, out)) = &mut self.pages else {
            return Ok(());
        };
        let clean = |s: &str| s.replace(['\t', '\n', '\r'], " ");
        writeln!(
            out,
            "{}\t{}\t{}\t{}\t{}",
            clean(url),
            fp.exact,
            fp.simhash,
            fp.words,
            clean(near.unwrap_or(""))
        )
        .map_err(CrawlError::io("writing page log", path.as_path()))
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
        if let Some((_, out)) = &mut self.pages {
            let _ = out.flush();
        }
    }

    /// Pushes everything to the OS, for a process about to exit without a checkpoint. Best
    /// effort: the next run recovers from any torn tail.
    pub(crate) fn flush(&mut self) {
        let _ = self.skips.flush();
        if let Some((_, out)) = &mut self.pages {
            let _ = out.flush();
        }
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
