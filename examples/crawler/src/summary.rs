//! The end-of-run report: what was fetched, what each mechanism did, what was skipped and why.

use std::fmt;
use std::time::Duration;

use crate::options::CrawlConfig;
use crate::records::Stats;
use crate::skip::SkipReason;
use crate::state::{CrawlState, Resumed};

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
    /// Per reason: distinct URLs, why (with the limit that applied), examples.
    pub(crate) skips: Vec<(SkipReason, u64, String, Vec<String>)>,
    /// Bytes of done-set state.
    pub(crate) filter_bytes: u64,
    /// Estimated distinct URLs in the done set (NaN when it lives in Redis).
    pub(crate) filter_items: f64,
    /// Its false-positive rate now (NaN when it lives in Redis).
    pub(crate) filter_fpr: f64,
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
            .records
            .skips
            .counts()
            .iter()
            .map(|(r, n)| {
                (
                    *r,
                    *n,
                    why(*r, config),
                    state.records.skips.examples(*r).to_vec(),
                )
            })
            .collect();
        let done = state.done_set();
        let (filter_bytes, filter_items, filter_fpr, filter_expected) = (
            done.memory_bytes(),
            done.estimated_urls(),
            done.false_positive_rate(),
            done.expected_urls(),
        );
        Self {
            stop,
            elapsed,
            resumed,
            stats: std::mem::take(&mut state.records.stats),
            pages_total: state.pages_done(),
            pending: state.pending_len(),
            skips,
            filter_bytes,
            filter_items,
            filter_fpr,
            filter_expected,
            warc_records: state.records.warc_records(),
            out: config.out.clone(),
            warc: config.warc,
            mirror: config.mirror,
        }
    }

    /// Distinct URLs skipped for `reason`.
    pub(crate) fn skipped(&self, reason: SkipReason) -> u64 {
        self.skips
            .iter()
            .find(|(r, ..)| *r == reason)
            .map_or(0, |(_, n, ..)| *n)
    }
}

/// Why URLs were not followed (or fetches failed) for `reason`, with the limit that applied.
fn why(reason: SkipReason, config: &CrawlConfig) -> String {
    let t = &config.traps;
    match reason {
        SkipReason::OutOfScope => format!("outside the crawl's --scope ({})", config.scope.kind()),
        SkipReason::UrlTooLong => format!("longer than --max-url-length ({} bytes)", t.max_url_len),
        SkipReason::TooManySlashes => format!("more '/' than --max-slashes ({})", t.max_slashes),
        SkipReason::RepeatedSegment => format!(
            "a path segment repeated more than --max-segment-repeats ({}) times: a looping relative link",
            t.max_segment_repeats
        ),
        SkipReason::TooDeep => format!(
            "links found more than --max-depth ({}) links from a seed",
            t.max_depth
        ),
        SkipReason::HostBudget => format!("past the host's --host-budget ({} URLs)", t.host_budget),
        SkipReason::TemplateBudget => format!(
            "found on a page of their own template once it had --template-budget ({}) such URLs: a calendar, tree or growing query",
            t.template_budget
        ),
        SkipReason::RobotsDisallowed => "disallowed by the host's robots.txt".to_owned(),
        SkipReason::RobotsUnreachable => {
            "robots.txt unreachable (5xx, 429, network): RFC 9309 disallows all".to_owned()
        }
        SkipReason::TooManyRedirects => {
            format!(
                "more redirects than --max-redirects ({})",
                config.max_redirects
            )
        }
        SkipReason::ContentType => "a content type not in --accept".to_owned(),
        SkipReason::BodyTooLarge => {
            format!("body over --max-body ({} bytes)", config.fetch.max_body)
        }
        SkipReason::DecodedTooLarge => {
            format!(
                "decoded body over --max-decoded ({} bytes)",
                config.max_decoded
            )
        }
        SkipReason::BadEncoding => "a Content-Encoding that does not decode".to_owned(),
        SkipReason::Timeout => format!(
            "no complete answer within --timeout-ms ({} ms)",
            config.fetch.timeout.as_millis()
        ),
        SkipReason::FetchFailed => "connection or protocol failure".to_owned(),
        SkipReason::BadRedirect => "a redirect without an http(s) Location".to_owned(),
        SkipReason::BadUrl => "no canonical form".to_owned(),
        SkipReason::Similar => "similar to earlier URLs (--similar)".to_owned(),
        SkipReason::ParseLimit => format!(
            "pages whose parse reached its memory bound (--max-body, {} bytes): later links not followed",
            config.fetch.max_body
        ),
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
            "                   url-dedup filter: about {:.0} URLs in {} KiB (first sized for {} URLs, grows as needed); false-positive rate now {:.1e}",
            self.filter_items,
            self.filter_bytes / 1024,
            self.filter_expected,
            self.filter_fpr
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
        writeln!(
            f,
            "  not web links    {} links not followed: no http(s) URL (mailto:, javascript:, ...)",
            s.not_web
        )?;
        if self.skips.is_empty() {
            writeln!(f, "  skipped          nothing")?;
        } else {
            writeln!(f, "  skipped (distinct URLs, see skipped.tsv):")?;
            for (reason, n, why, examples) in &self.skips {
                let example = examples.first().map(String::as_str).unwrap_or_default();
                let example = crate::clip::clip(example, 120);
                writeln!(f, "    {:<20} {n:>6}  {why}", reason.name())?;
                writeln!(f, "    {:<20} {:>6}  e.g. {example}", "", "")?;
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
