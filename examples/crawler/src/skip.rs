//! Why a URL was not fetched, and the record of every such decision.

use std::collections::BTreeMap;
use std::fmt;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use url_dedup::UrlDedup;

use crate::clip::{REPORT_FIELD, clip};

/// The reason a URL was left out, or a fetch gave no page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum SkipReason {
    /// Outside the crawl's scope (host, domain or prefix).
    OutOfScope,
    /// Longer than the URL length limit (document 002's trap rule).
    UrlTooLong,
    /// More `/` than the limit (document 002's trap rule).
    TooManySlashes,
    /// A path segment repeated more often than the limit (a relative link looping).
    RepeatedSegment,
    /// Deeper than the depth limit.
    TooDeep,
    /// Its host has used up its page budget.
    HostBudget,
    /// Found on a page of its own template, which has used up its budget (a calendar, a tree,
    /// a growing query).
    TemplateBudget,
    /// Disallowed by the host's robots.txt.
    RobotsDisallowed,
    /// The host's robots.txt could not be fetched (5xx or network error): RFC 9309 says to
    /// assume everything is disallowed.
    RobotsUnreachable,
    /// Reached through more redirects than allowed.
    TooManyRedirects,
    /// A content type the crawl does not accept.
    ContentType,
    /// The body on the wire is larger than the limit.
    BodyTooLarge,
    /// The decompressed body is larger than the limit (a decompression bomb, or just too big).
    DecodedTooLarge,
    /// A content encoding that is not supported or a body that does not decode.
    BadEncoding,
    /// The server did not answer in time.
    Timeout,
    /// Connection or protocol failure.
    FetchFailed,
    /// A redirect without a usable `Location`.
    BadRedirect,
    /// A URL without a canonical form (unsupported by the canonicalizer).
    BadUrl,
    /// New to the done set but similar to earlier URLs by document 004's features (`--similar`).
    Similar,
    /// A learned or given rule (`--learn`, `--rules`) rewrites the URL onto a page already
    /// fetched or queued; the detail names the rule and the URL it maps onto.
    DustRule,
    /// A fetched page or sitemap whose parse reached its memory bound: links after that point
    /// (or beyond the links' share) were not followed. The detail says which.
    ParseLimit,
    /// The link does not match `--accept-regex`, or matches `--reject-regex`.
    Pattern,
    /// The server answered with an error status (4xx, 5xx; after the retries for a passing
    /// one): a broken link. The detail is the status.
    HttpError,
    /// Fetching or reading the URL failed with an internal error (a bug): the detail holds
    /// its message, and the crawl ends with a non-zero exit status.
    InternalError,
}

/// The groups the status page sums skip counts into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SkipClass {
    /// A trap rule refused the URL.
    Trap,
    /// The fetch failed.
    Error,
    /// Scope, robots.txt, content type, redirects and the rest.
    Other,
}

impl SkipReason {
    /// Which group of the status page this reason counts in.
    pub(crate) fn class(self) -> SkipClass {
        match self {
            Self::UrlTooLong
            | Self::TooManySlashes
            | Self::RepeatedSegment
            | Self::TooDeep
            | Self::HostBudget
            | Self::TemplateBudget => SkipClass::Trap,
            Self::Timeout
            | Self::FetchFailed
            | Self::BodyTooLarge
            | Self::DecodedTooLarge
            | Self::BadEncoding
            | Self::HttpError
            | Self::InternalError => SkipClass::Error,
            Self::OutOfScope
            | Self::RobotsDisallowed
            | Self::RobotsUnreachable
            | Self::TooManyRedirects
            | Self::ContentType
            | Self::BadRedirect
            | Self::BadUrl
            | Self::Similar
            | Self::DustRule
            | Self::Pattern
            | Self::ParseLimit => SkipClass::Other,
        }
    }

    /// A short stable name, used in `skipped.tsv` and the summary.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::OutOfScope => "out-of-scope",
            Self::UrlTooLong => "url-too-long",
            Self::TooManySlashes => "too-many-slashes",
            Self::RepeatedSegment => "repeated-segment",
            Self::TooDeep => "too-deep",
            Self::HostBudget => "host-budget",
            Self::TemplateBudget => "template-budget",
            Self::RobotsDisallowed => "robots-disallowed",
            Self::RobotsUnreachable => "robots-unreachable",
            Self::TooManyRedirects => "too-many-redirects",
            Self::ContentType => "content-type",
            Self::BodyTooLarge => "body-too-large",
            Self::DecodedTooLarge => "decoded-too-large",
            Self::BadEncoding => "bad-encoding",
            Self::Timeout => "timeout",
            Self::FetchFailed => "fetch-failed",
            Self::BadRedirect => "bad-redirect",
            Self::BadUrl => "bad-url",
            Self::Similar => "similar",
            Self::DustRule => "dust-rule",
            Self::ParseLimit => "parse-limit",
            Self::InternalError => "internal-error",
            Self::Pattern => "pattern",
            Self::HttpError => "http-error",
        }
    }
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How many examples of each reason the summary keeps.
const EXAMPLES: usize = 3;

/// Every skip of the crawl: counted, the first few kept as examples, and all written to
/// `skipped.tsv` (`reason<TAB>detail<TAB>url`, each field cut to [`REPORT_FIELD`] bytes with a
/// marker).
///
/// A URL linked from a thousand pages is skipped a thousand times; a small growing filter (the
/// facade, comparing raw keys) keeps each (reason, URL) pair to one line and one count, so the
/// report counts distinct URLs.
pub(crate) struct SkipLog {
    out: BufWriter<File>,
    reported: UrlDedup,
    counts: BTreeMap<SkipReason, u64>,
    examples: BTreeMap<SkipReason, Vec<String>>,
}

impl SkipLog {
    /// Opens (appending) `skipped.tsv` in `dir`.
    pub(crate) fn open(dir: &Path) -> io::Result<Self> {
        let file = crate::files::open(
            dir,
            Path::new("skipped.tsv"),
            crate::files::Open::Append,
            crate::files::Access::Shared,
        )?;
        // Sized small: it grows with the skips, and most crawls skip few distinct URLs.
        let reported = UrlDedup::builder()
            .no_canonicalization()
            .expected_urls(16_384)
            .false_positive_rate(1e-4)
            .build()
            .map_err(io::Error::other)?;
        Ok(Self {
            out: BufWriter::new(file),
            reported,
            counts: BTreeMap::new(),
            examples: BTreeMap::new(),
        })
    }

    /// Records that `url` was skipped for `reason`; `detail` says more (a content type, a limit).
    pub(crate) fn record(&mut self, reason: SkipReason, url: &str, detail: &str) -> io::Result<()> {
        let mut key = Vec::with_capacity(url.len() + 1);
        key.push(reason as u8);
        key.extend_from_slice(url.as_bytes());
        let first = self.reported.check_and_insert_batch_bytes([&key[..]]);
        if !matches!(first.first(), Some(Ok((o, _))) if o.is_new()) {
            return Ok(());
        }
        *self.counts.entry(reason).or_default() += 1;
        let (url, detail) = (clip(url, REPORT_FIELD), clip(detail, REPORT_FIELD));
        let examples = self.examples.entry(reason).or_default();
        if examples.len() < EXAMPLES {
            examples.push(if detail.is_empty() {
                url.clone().into_owned()
            } else {
                format!("{url} ({detail})")
            });
        }
        writeln!(self.out, "{reason}\t{detail}\t{url}")
    }

    /// Distinct URLs skipped per reason in this run.
    pub(crate) fn counts(&self) -> &BTreeMap<SkipReason, u64> {
        &self.counts
    }

    /// The first few skipped URLs per reason.
    pub(crate) fn examples(&self, reason: SkipReason) -> &[String] {
        self.examples.get(&reason).map_or(&[], Vec::as_slice)
    }

    pub(crate) fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

impl std::fmt::Debug for SkipLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkipLog")
            .field("counts", &self.counts)
            .finish_non_exhaustive()
    }
}
