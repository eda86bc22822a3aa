//! Command-line options.

use std::path::PathBuf;

use clap::{Parser, ValueEnum};

/// Deduplicate URL lists: print each URL the first time its page is seen, in input order.
///
/// URLs are canonicalized first (case, default ports, dot segments, percent-encoding, sorted
/// query, tracking and session parameters removed, fragment dropped), so spellings of one page
/// count once. Memory is bounded by the filter, not by the input: 10 million URLs at 0.1%
/// false positives take about 19 MiB.
#[derive(Debug, Parser)]
#[command(
    name = "url-dedup",
    version,
    after_help = "\
Examples:
  url-dedup urls.txt > unique.txt                 dedup a file
  cat *.txt | url-dedup --stats > unique.txt      from stdin, with counts on stderr
  url-dedup --state seen.udd new.txt              print only URLs not seen in earlier runs (like anew)
  url-dedup --similar crawler --explain=dropped.tsv urls.txt
                                                  also fold near-duplicates, say why each was dropped
  url-dedup --raw urls.txt                        byte-exact, no canonicalization
  url-dedup --redis redis://10.0.0.5:6379/ part-1.txt
                                                  share the seen set with other machines

Exit status: 0 on success (invalid lines are reported, not fatal), 1 on an I/O error, an
unusable state file or a filter store (Redis) that stopped answering, 2 on a usage error."
)]
pub(crate) struct Args {
    /// Files to read, in order; none or `-` reads standard input.
    #[arg(value_name = "FILE")]
    pub(crate) files: Vec<PathBuf>,

    /// Distinct URLs to size the filter for [default: estimated from the input size, at least
    /// one million; 10 million for a pipe].
    #[arg(short = 'n', long, value_name = "N")]
    pub(crate) expected: Option<u64>,

    /// False-positive rate: the fraction of new URLs wrongly dropped as seen, at the expected
    /// count.
    #[arg(short = 'p', long, value_name = "RATE", default_value_t = 0.001)]
    pub(crate) fpr: f64,

    /// Also drop URLs similar to ones seen before (patent document 004); PRESET is `crawler`
    /// (folds pages that differ only in query values) or `document004` (the four features of
    /// the document, much more aggressive).
    #[arg(long, value_name = "PRESET", num_args = 0..=1, default_missing_value = "crawler")]
    pub(crate) similar: Option<SimilarPreset>,

    /// Remember seen URLs in FILE across runs: loaded if it exists, saved (atomically) when the
    /// run completes, so only URLs new to all runs are printed.
    #[arg(long, value_name = "FILE")]
    pub(crate) state: Option<PathBuf>,

    /// Keep the seen-URL filter in Redis at URL (e.g. redis://127.0.0.1:6379/) so several
    /// runs, processes or machines share it: each URL is printed by exactly one of them.
    #[arg(long, value_name = "URL")]
    pub(crate) redis: Option<String>,

    /// Key prefix of the shared filter in Redis.
    #[arg(
        long,
        value_name = "NAME",
        default_value = "url-dedup",
        requires = "redis"
    )]
    pub(crate) redis_prefix: String,

    /// Print counts per outcome, memory per URL and throughput to stderr at the end.
    #[arg(long)]
    pub(crate) stats: bool,

    /// Say why each dropped line was dropped, as tab-separated lines, to stderr or to FILE.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    pub(crate) explain: Option<PathBuf>,

    /// Print the canonical form of each kept URL instead of the line as given.
    #[arg(long)]
    pub(crate) canonical: bool,

    /// No canonicalization: compare lines byte for byte and accept any text.
    #[arg(long, conflicts_with_all = ["canonical"])]
    pub(crate) raw: bool,

    /// Keep `#fragments` (by default they are removed: they never reach the server).
    #[arg(long)]
    pub(crate) keep_fragment: bool,

    /// Keep the query parameters' order (by default they are sorted).
    #[arg(long)]
    pub(crate) keep_query_order: bool,

    /// Keep an empty `?` (by default it is dropped).
    #[arg(long)]
    pub(crate) keep_empty_query: bool,

    /// Keep tracking parameters such as utm_*, gclid, fbclid.
    #[arg(long)]
    pub(crate) keep_tracking: bool,

    /// Keep session parameters such as jsessionid, phpsessid, sid.
    #[arg(long)]
    pub(crate) keep_session: bool,

    /// Also remove this query parameter (repeatable).
    #[arg(long = "strip-param", value_name = "NAME")]
    pub(crate) strip_params: Vec<String>,

    /// Treat `www.example.com` and `example.com` as one host.
    #[arg(long)]
    pub(crate) fold_www: bool,

    /// Treat `http://` and `https://` as one scheme.
    #[arg(long)]
    pub(crate) fold_scheme: bool,

    /// Compare paths case-insensitively.
    #[arg(long)]
    pub(crate) lowercase_path: bool,

    /// Trailing slash policy for paths.
    #[arg(long, value_enum, default_value_t = SlashPolicy::Keep)]
    pub(crate) trailing_slash: SlashPolicy,

    /// Longest line accepted, in bytes; longer lines are reported as invalid.
    #[arg(long, value_name = "BYTES", default_value_t = 8192)]
    pub(crate) max_len: usize,

    /// Never show a progress bar.
    #[arg(short, long)]
    pub(crate) quiet: bool,
}

/// Similarity presets.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum SimilarPreset {
    /// Site-scoped features plus query names, path template and extension.
    Crawler,
    /// Exactly the four features of document 004.
    Document004,
}

/// Trailing slash policies.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum SlashPolicy {
    /// `/docs` and `/docs/` stay different.
    Keep,
    /// Remove trailing slashes (except the root's).
    Remove,
    /// Add a slash to paths whose last segment has no dot.
    Add,
}
