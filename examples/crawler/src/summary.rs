//! The end-of-run report: what was fetched, what each mechanism did, what was skipped and why.

use std::fmt;
use std::time::Duration;

use crate::backend::BackendReport;
use crate::backend::local::Resumed;
use crate::options::CrawlConfig;
use crate::records::{Records, Stats};
use crate::skip::SkipReason;

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

/// Where the run ended, for the summary's wording.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ending {
    pub(crate) stop: Stop,
    /// The crawl was shared through Redis (the others may carry on).
    pub(crate) shared: bool,
    pub(crate) elapsed: Duration,
    /// Fetch tasks that failed with an internal error (a panic).
    pub(crate) panics: u64,
}

/// What a run did.
#[derive(Debug)]
pub(crate) struct Summary {
    pub(crate) stop: Stop,
    pub(crate) shared: bool,
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
    pub(crate) warc_path: std::path::PathBuf,
    pub(crate) out: std::path::PathBuf,
    pub(crate) warc: bool,
    pub(crate) mirror: bool,
    pub(crate) panics: u64,
    /// What URL rules did (`--learn`, `--rules`), when the run had any.
    pub(crate) rules: Option<RuleFigures>,
}

/// The figures of URL rules the status page shows, at the end of a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RuleFigures {
    /// Rules applied (confirmed, or given with `--rules`).
    pub(crate) applied: u64,
    /// Links skipped because a rule maps them onto a page already fetched or queued.
    pub(crate) saved: u64,
    /// Fetches that checked a candidate rule.
    pub(crate) checks: u64,
    /// Candidates removed by a wrong prediction.
    pub(crate) rejected: u64,
}

impl Summary {
    /// The summary of a run: its records (their counters are taken), and what the backend
    /// reports (the done set, the pages fetched over all runs, the URLs still queued).
    pub(crate) fn new(
        config: &CrawlConfig,
        records: &mut Records,
        report: &BackendReport,
        ending: Ending,
        rules: Option<RuleFigures>,
    ) -> Self {
        let skips = records
            .skips
            .counts()
            .iter()
            .map(|(r, n)| (*r, *n, why(*r, config), records.skips.examples(*r).to_vec()))
            .collect();
        let done = report.done;
        Self {
            stop: ending.stop,
            shared: ending.shared,
            elapsed: ending.elapsed,
            resumed: report.resumed.clone().unwrap_or_default(),
            stats: std::mem::take(&mut records.stats),
            pages_total: report.pages_total,
            pending: report.pending,
            skips,
            filter_bytes: done.bytes,
            filter_items: done.estimated,
            filter_fpr: done.fpr,
            filter_expected: done.expected,
            warc_records: records.warc_records(),
            warc_path: records.warc_path().to_owned(),
            out: config.out.clone(),
            warc: config.warc,
            mirror: config.mirror,
            panics: ending.panics,
            rules,
        }
    }

    /// The exit status (docs/crawler.md, "Exit status"): 0 when the crawl did its job, 3 when
    /// a fetch task failed with an internal error, 4 when a single-process crawl has fetched
    /// no page at all (every seed failed).
    pub(crate) fn exit_code(&self) -> u8 {
        if self.panics > 0 {
            3
        } else if !self.shared && self.pages_total_ok() == 0 {
            4
        } else {
            0
        }
    }

    /// Pages that answered 2xx or 304 in this run, or pages done in earlier runs.
    fn pages_total_ok(&self) -> u64 {
        let this_run: u64 = self
            .stats
            .by_status
            .iter()
            .filter(|(s, _)| (200..300).contains(*s) || **s == 304)
            .map(|(_, n)| n)
            .sum();
        let before = self.pages_total.saturating_sub(self.stats.fetched);
        this_run + before
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
        SkipReason::DustRule => {
            "a rule (--learn, --rules) maps them onto a page already fetched or queued".to_owned()
        }
        SkipReason::ParseLimit => format!(
            "pages whose parse reached its memory bound (--max-body, {} bytes): later links not followed",
            config.fetch.max_body
        ),
        SkipReason::Pattern => "links --accept-regex or --reject-regex leave out".to_owned(),
        SkipReason::HttpError => format!(
            "answered with an error status (broken links; passing ones after --retries, {})",
            config.retry.times
        ),
        SkipReason::InternalError => {
            "fetching or reading failed with an internal error (a bug; the detail says where)"
                .to_owned()
        }
    }
}

impl Summary {
    /// The summary as one JSON object (`--json`): the counters, the skips per reason, and
    /// `extra` (a shared crawl's process name and Redis figures).
    pub(crate) fn json(&self, extra: serde_json::Value) -> String {
        let s = &self.stats;
        let skips: std::collections::BTreeMap<&str, u64> =
            self.skips.iter().map(|(r, n, ..)| (r.name(), *n)).collect();
        let class = |c: crate::skip::SkipClass| -> u64 {
            self.skips
                .iter()
                .filter(|(r, ..)| r.class() == c)
                .map(|(_, n, ..)| n)
                .sum()
        };
        let mut out = serde_json::json!({
            "internal_errors": self.panics,
            "warnings": self.resumed.warnings,
            "stop": match self.stop {
                Stop::Finished => "finished",
                Stop::MaxPages => "max-pages",
                Stop::Interrupted => "interrupted",
            },
            "fetched": s.fetched,
            "not_modified": s.not_modified,
            "queued": s.admitted,
            "duplicates": s.duplicate_links,
            "nofollow": s.nofollow,
            "not_web": s.not_web,
            "traps": class(crate::skip::SkipClass::Trap),
            "skipped": class(crate::skip::SkipClass::Other),
            "errors": class(crate::skip::SkipClass::Error),
            "bytes": s.wire_bytes,
            "retries": s.retries,
            "warc_records": self.warc_records,
            "mirror_files": s.mirror_files,
            "pages_total": self.pages_total,
            "still_queued": self.pending,
            "seconds": self.elapsed.as_secs_f64(),
            "skips": skips,
        });
        // The names of `/status.json`.
        let r = self.rules.unwrap_or_default();
        for (name, value) in [
            ("rules", r.applied),
            ("saved", r.saved),
            ("rule_checks", r.checks),
            ("rules_rejected", r.rejected),
        ] {
            out[name] = value.into();
        }
        if let (Some(out), serde_json::Value::Object(extra)) = (out.as_object_mut(), extra) {
            out.extend(extra);
        }
        out.to_string()
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.stats;
        let secs = self.elapsed.as_secs_f64().max(1e-9);
        let how = match (self.stop, self.shared) {
            (Stop::Finished, false) => "complete: the run queue is empty",
            (Stop::MaxPages, false) => "stopped at --max-pages; run again to continue",
            (Stop::Interrupted, false) => "interrupted; run the same command again to continue",
            (Stop::Finished, true) => {
                "complete: every queue of the shared crawl is empty and nothing is claimed"
            }
            (Stop::MaxPages, true) => {
                "left the shared crawl at --max-pages; what this process held is queued again"
            }
            (Stop::Interrupted, true) => {
                "left the shared crawl (a signal or the stop flag); the others carry on until stopped"
            }
        };
        writeln!(f, "crawl {how}")?;
        for w in &self.resumed.warnings {
            writeln!(f, "  WARNING          {w}")?;
        }
        if self.panics > 0 {
            writeln!(
                f,
                "  INTERNAL ERRORS  {} fetch tasks failed with an internal error (a bug): their URLs are in skipped.tsv (internal-error)",
                self.panics
            )?;
        }
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
            "                   url-dedup filter: {} in {} KiB{} (first sized for {} URLs{}); false-positive rate now {}",
            if self.filter_items.is_finite() {
                format!("about {:.0} URLs", self.filter_items)
            } else {
                "shared".to_owned()
            },
            self.filter_bytes / 1024,
            if self.shared { " of Redis" } else { "" },
            self.filter_expected,
            if self.shared { "" } else { ", grows as needed" },
            if self.filter_fpr.is_finite() {
                format!("{:.1e}", self.filter_fpr)
            } else {
                "known to Redis only".to_owned()
            }
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
        writeln!(
            f,
            "  retries          {} fetches tried again after a passing failure (--retries)",
            s.retries
        )?;
        if let Some(r) = self.rules {
            writeln!(
                f,
                "  rules            {} applied: {} fetches saved, {} checks, {} rejected",
                r.applied, r.saved, r.checks, r.rejected
            )?;
        }
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
                self.warc_path.display(),
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
