//! The end-of-run report: what was fetched, what each mechanism did, what was skipped and why.

use std::fmt;
use std::time::Duration;

use crate::options::CrawlConfig;
use crate::skip::SkipReason;
use crate::state::{CrawlState, Resumed, Stats};

/// Why the run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The run queue is empty: the crawl is complete.
    Finished,
    /// --max-pages was reached; running again with a larger limit continues.
    MaxPages,
    /// Ctrl-C; running again continues.
    Interrupted,
}

/// What a run did.
#[derive(Debug)]
pub(crate) struct Summary {
    pub(crate) stop: Stop,
    pub(crate) elapsed: Duration,
    pub(crate) resumed: Resumed,
    pub(crate) stats: Stats,
    pub(crate) pages_total: u64,
    pub(crate) pending: usize,
    pub(crate) skips: Vec<(SkipReason, u64, Vec<String>)>,
    pub(crate) filter_bits: u64,
    pub(crate) filter_items: u64,
    pub(crate) filter_hashes: u32,
    pub(crate) filter_expected: u64,
    pub(crate) warc_records: u64,
    pub(crate) out: std::path::PathBuf,
    pub(crate) warc: bool,
    pub(crate) mirror: bool,
}

impl Summary {
    pub(crate) fn new(
        config: &CrawlConfig,
        state: &mut CrawlState,
        resumed: Resumed,
        stop: Stop,
        elapsed: Duration,
    ) -> Self {
        let skips = state
            .skips
            .counts()
            .iter()
            .map(|(r, n)| (*r, *n, state.skips.examples(*r).to_vec()))
            .collect();
        let filter = state.filter();
        let (filter_bits, filter_items, filter_hashes, filter_expected) = (
            filter.bits(),
            filter.len(),
            filter.hashes(),
            filter.expected_items(),
        );
        Self {
            stop,
            elapsed,
            resumed,
            stats: std::mem::take(&mut state.stats),
            pages_total: state.pages_done(),
            pending: state.pending_len(),
            skips,
            filter_bits,
            filter_items,
            filter_hashes,
            filter_expected,
            warc_records: state.warc_records(),
            out: config.out.clone(),
            warc: config.warc,
            mirror: config.mirror,
        }
    }

    /// Distinct URLs skipped for `reason`.
    pub(crate) fn skipped(&self, reason: SkipReason) -> u64 {
        self.skips
            .iter()
            .find(|(r, _, _)| *r == reason)
            .map_or(0, |(_, n, _)| *n)
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.stats;
        let secs = self.elapsed.as_secs_f64().max(1e-9);
        let how = match self.stop {
            Stop::Finished => "complete: the run queue is empty",
            Stop::MaxPages => "stopped at --max-pages; run again to continue",
            Stop::Interrupted => "interrupted; run the same command again to continue",
        };
        writeln!(f, "crawl {how}")?;
        if self.resumed.from_checkpoint || self.resumed.journal_events > 0 {
            writeln!(
                f,
                "  resumed          {} pages done before, {} URLs still queued (checkpoint + {} journal events)",
                self.resumed.pages_done, self.resumed.pending, self.resumed.journal_events
            )?;
        }
        writeln!(
            f,
            "  fetched          {} responses in {:.2} s ({:.0}/s), {:.1} KiB on the wire; {} pages over all runs",
            s.fetched,
            secs,
            s.fetched as f64 / secs,
            s.wire_bytes as f64 / 1024.0,
            self.pages_total
        )?;
        let statuses: Vec<String> = s
            .by_status
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        writeln!(f, "  status codes     {}", statuses.join(", "))?;
        writeln!(
            f,
            "  done set         {} URLs admitted, {} duplicate links dropped, {} links respelled by canonicalization",
            s.admitted, s.duplicate_links, s.canonicalized
        )?;
        writeln!(
            f,
            "                   Bloom filter: {} URLs; {} KiB sized for {} URLs ({:.1} bits/URL, {} hashes)",
            self.filter_items,
            self.filter_bits / 8 / 1024,
            self.filter_expected,
            self.filter_bits as f64 / self.filter_expected.max(1) as f64,
            self.filter_hashes
        )?;
        writeln!(
            f,
            "  redirects        {} followed (each target through the done set)",
            s.redirects
        )?;
        writeln!(
            f,
            "  identical pages  {} bodies equal to an earlier page's",
            s.identical_bodies
        )?;
        writeln!(f, "  decompressed     {} responses", s.decoded)?;
        writeln!(f, "  sitemaps         {} page URLs listed", s.sitemap_urls)?;
        writeln!(f, "  nofollow         {} links not followed", s.nofollow)?;
        if self.skips.is_empty() {
            writeln!(f, "  skipped          nothing")?;
        } else {
            writeln!(f, "  skipped (distinct URLs, see skipped.tsv):")?;
            for (reason, n, examples) in &self.skips {
                let example = examples.first().map(String::as_str).unwrap_or_default();
                let example = crate::clip::clip(example, 120);
                writeln!(f, "    {:<20} {n:>6}  e.g. {example}", reason.name())?;
            }
        }
        if self.warc {
            writeln!(
                f,
                "  WARC             {} ({} records this run)",
                self.out.join("crawl.warc").display(),
                self.warc_records
            )?;
        }
        if self.mirror {
            writeln!(
                f,
                "  mirror           {} ({} files this run)",
                self.out.join("mirror").display(),
                s.mirror_files
            )?;
        }
        if self.pending > 0 {
            writeln!(
                f,
                "  still queued     {} URLs (in the checkpoint)",
                self.pending
            )?;
        }
        Ok(())
    }
}
