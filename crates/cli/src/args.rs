//! Command-line options.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// Deduplicate URL lists: print each URL the first time its page is seen, in input order.
///
/// URLs are canonicalized first (case, default ports, dot segments, percent-encoding, sorted
/// query, tracking parameters and session tokens removed, fragment dropped), so spellings of
/// one page count once. Seen URLs are kept in a filter that grows with the input: a new URL is
/// taken for a seen one with probability below --fpr (one in a billion by default, so a list
/// of 100 million URLs loses a distinct URL with probability about 0.1). At the default rate
/// the filter took 9 to 11 bytes per distinct URL on lists of 50 thousand to 5 million; --stats
/// prints what a run takes. --exact keeps 128-bit fingerprints instead: no loss in practice,
/// 19-39 bytes per URL.
#[derive(Debug, Parser)]
#[command(
    name = "url-dedup",
    version,
    args_conflicts_with_subcommands = true,
    after_help = "\
Examples:
  url-dedup urls.txt > unique.txt                 dedup a file
  cat *.txt | url-dedup --stats > unique.txt      from stdin, with counts on stderr
  url-dedup --state seen.udd new.txt              print only URLs not seen in earlier runs (like anew)
  url-dedup --similar --explain=dropped.tsv urls.txt
                                                  also fold near-duplicates, say why each was dropped
  url-dedup --raw urls.txt                        lines compared exactly, as awk '!seen[$0]++'
  url-dedup --surt cdx-urls.txt                   SURT keys, as the surt package gives them
  url-dedup --redis redis://10.0.0.5:6379/ part-1.txt
                                                  share the seen set with other machines
  url-dedup learn crawl.warc.gz -o site.rules     learn which URLs are one page from a crawl
  url-dedup --rules site.rules urls.txt           fold the URLs the rules map onto one page

With --state, the decided URLs are also appended to FILE.journal about once a second
(--checkpoint-every), so a run that is killed or runs out of disk reprints at most the last
second or so of its output when run again; the state itself is saved whole at the end. A
damaged journal block is reported with the URLs it costs (they are printed again), and the
blocks after it are still read. The state records the canonicalization and similarity
options and is refused by a run with other ones (--force-state overrides). State and journal
hold the hash key: they are created readable by their owner only, saved through a temporary
file of a random name, and never written through a symbolic link (a link, or a path that is
not a regular file such as /dev/null, is refused).

Exit status: 0 on success (invalid lines are reported, not fatal), 1 on an I/O error, an
unusable state file or a filter store (Redis) that stopped answering, 2 on a usage error."
)]
pub(crate) struct Args {
    /// Another task than deduplicating.
    #[command(subcommand)]
    pub(crate) command: Option<Command>,

    /// Files to read, in order; none or `-` reads standard input (a file named `learn` is
    /// given as `./learn`).
    #[arg(value_name = "FILE")]
    pub(crate) files: Vec<PathBuf>,

    /// Distinct URLs the filter's first layer holds [default: a quarter of the lines estimated
    /// from the input size, between 65,536 and 4,000,000; 1,000,000 for a pipe; with --redis,
    /// all the lines, between 1,000,000 and 4,000,000]. Only a starting point: the filter
    /// grows past it without losing its rate. The first process of a shared filter sizes it.
    #[arg(short = 'n', long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) expected: Option<u64>,

    /// Largest chance that a new URL is wrongly dropped as seen, at any moment of the run,
    /// however many URLs arrive [default: 1e-9; 1e-5 with --redis, where each bit of a URL
    /// costs Redis CPU: a lower rate costs Redis more CPU and memory per URL].
    #[arg(short = 'p', long, value_name = "RATE", value_parser = rate)]
    pub(crate) fpr: Option<f64>,

    /// No false positives in practice: keep a keyed 128-bit fingerprint per distinct URL
    /// (19-39 bytes per URL) instead of the filter (9 to 11 bytes per URL at the default rate,
    /// as measured; --stats prints a run's own figure).
    #[arg(long)]
    pub(crate) exact: bool,

    /// Also drop URLs similar to ones seen before (patent document 004): `--similar` or
    /// `--similar=page` folds pages that differ only in presentation parameters, from the
    /// site, path and query key; `--similar=crawler` folds the same pages from seven features
    /// (seven times the memory and hashing; a URL with a new path needs two chance matches
    /// instead of one to be folded by chance); `--similar=document004` uses the four features
    /// of the document, much more aggressive.
    #[arg(
        long,
        value_name = "PRESET",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "page"
    )]
    pub(crate) similar: Option<SimilarPreset>,

    /// With --similar: the chance that a value of one URL feature is taken for seen (default:
    /// --fpr). A URL is folded by chance only if every feature it does not share with earlier
    /// URLs matches by chance; a looser rate takes less memory and time (the similarity filter
    /// keeps about 80 bits per URL per feature at 1e-9, 29 at 1e-5).
    #[arg(long, value_name = "RATE", value_parser = rate, requires = "similar")]
    pub(crate) similar_fpr: Option<f64>,

    /// With --similar: which threads split URLs and hash their features. `decider`: the
    /// thread that decides in input order, for the URLs it calls new; `workers`: the threads
    /// that canonicalize, for every line (duplicates too), leaving the decider only the tests
    /// of bits; `auto`: workers on three cores or more. The output is the same.
    #[arg(
        long,
        value_name = "WHERE",
        value_enum,
        default_value = "auto",
        requires = "similar"
    )]
    pub(crate) feature_hashing: FeatureHashing,

    /// Rewrite each canonical URL with the rules in FILE (written by `url-dedup learn`, or by
    /// hand) before deciding, so the URLs they map onto one page count once. Every rule of
    /// the file applies, candidate or confirmed; a host's rules apply in order.
    #[arg(long, value_name = "FILE")]
    pub(crate) rules: Option<PathBuf>,

    /// Remember seen URLs in FILE across runs, so only URLs new to all runs are printed: loaded
    /// if it exists, journaled while the run goes (FILE.journal), saved whole at the end.
    /// FILE must be a regular file or not exist yet; a symbolic link is refused.
    #[arg(long, value_name = "FILE")]
    pub(crate) state: Option<PathBuf>,

    /// Use a state file written with other canonicalization or similarity options, or by an
    /// older version that did not record them. Its URLs were recorded in another form, so
    /// some "seen" answers will be wrong.
    #[arg(long, requires = "state")]
    pub(crate) force_state: bool,

    /// Append the URLs decided so far to the state's journal every SECONDS (0: only save at
    /// the end). A run killed before its end reprints about this much output next time.
    #[arg(long, value_name = "SECONDS", default_value_t = 1.0, requires = "state", value_parser = seconds)]
    pub(crate) checkpoint_every: f64,

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

    /// Read the hash key from FILE (32 hex digits) instead of drawing a random one; the
    /// URL_DEDUP_KEY environment variable does the same. With --redis the key is then kept out
    /// of Redis, and every process sharing the filter must bring the same one. The key keeps
    /// crafted URLs from aiming at the filter: keep it secret.
    #[arg(long, value_name = "FILE")]
    pub(crate) key_file: Option<PathBuf>,

    /// Wait until N replicas have the filter's writes before a batch counts as decided
    /// (Redis `WAIT`), so that a failover to a replica loses no URL printed; without it a URL
    /// written just before a master dies may be printed again after the failover.
    #[arg(long, value_name = "N", requires = "redis", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) redis_acknowledge: Option<u32>,

    /// How long to keep retrying a Redis that stops answering before the run stops with an
    /// error (the first connection gives up after at most 3 seconds).
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0, requires = "redis", value_parser = seconds)]
    pub(crate) redis_timeout: f64,

    /// Print to stderr at the end: counts per outcome, the URLs expected lost, the filter's
    /// bytes per URL, the time and lines per second, and where the deciding thread's time went
    /// (running, waiting for a core, waiting for input or output).
    #[arg(long)]
    pub(crate) stats: bool,

    /// Say why each dropped line was dropped: `--explain` to stderr, `--explain=FILE` to FILE
    /// (never one of the input files). One tab-separated row per line: `duplicate`, `similar`
    /// or `invalid`; where it is (`FILE:LINE`); the line; the earlier line it was folded into
    /// (`FILE:LINE`, `-` when none in this input); the reason. Tabs, line breaks, other
    /// control bytes, `\` and bytes that are not UTF-8 in a field are escaped (`\t`, `\n`,
    /// `\r`, `\xHH`, `\\`). Remembering the earlier lines takes about 30 bytes per distinct
    /// URL.
    #[arg(
        long,
        value_name = "FILE",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "-"
    )]
    pub(crate) explain: Option<PathBuf>,

    /// Print the canonical form of each kept URL instead of the line as given.
    #[arg(long)]
    pub(crate) canonical: bool,

    /// Deduplicate on the SURT key of the `surt` Python package (`org,example)/path?query`,
    /// as web-archive CDX indexes sort them) and print the key instead of the line. The same
    /// as `--policy surt --canonical`: `http://www.example.com/a` and `https://example.com/a/`
    /// have one key; `dns:`, `filedesc:`, `warcinfo:`, `whois:` and `mailto:` records are
    /// keyed as the package keys them. Takes no other --policy and no canonicalization switch.
    #[arg(long, conflicts_with_all = ["canonical", "raw"])]
    pub(crate) surt: bool,

    /// Canonicalization convention [default: crawler]: `crawler` (the default rules, adjusted
    /// by the switches below), `rfc3986` (RFC 3986 section 6 only, adjusted by the switches),
    /// `w3lib` (Scrapy's canonicalize_url), `safe-browsing` (Google Safe Browsing; lines that
    /// are not UTF-8 are canonicalized too), `ia` (the Internet Archive's canonicalizer),
    /// `surt` (its SURT key, any scheme). The last four reproduce those projects exactly and
    /// take no switch.
    #[arg(long, value_name = "NAME", conflicts_with = "raw")]
    pub(crate) policy: Option<url_dedup::canon::Convention>,

    /// No canonicalization: compare lines exactly as `awk '!seen[$0]++'` does. A line is
    /// every byte up to `\n`: white space, `\r`, a byte order mark, NUL and other bytes
    /// included, any encoding; an empty line is a line. Lines longer than --max-len are
    /// reported as invalid, not compared (raise --max-len to compare them). Takes no
    /// canonicalization option.
    #[arg(long, conflicts_with_all = [
        "canonical", "keep_fragment", "keep_query_order", "keep_empty_query", "keep_tracking",
        "keep_session", "strip_params", "fold_www", "fold_scheme", "lowercase_path",
        "trailing_slash",
    ])]
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

    /// Keep session parameters: jsessionid, phpsessid and the like, and sid or s when their
    /// value is shaped like a session token (by default removed; a sid that names a story
    /// is always kept).
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

    /// Trailing slash policy for paths (`keep`: the convention's own rule).
    #[arg(long, value_enum, default_value_t = SlashPolicy::Keep)]
    pub(crate) trailing_slash: SlashPolicy,

    /// Longest line accepted, in bytes; longer lines are reported as invalid (with --raw too).
    #[arg(long, value_name = "BYTES", default_value_t = 8192)]
    pub(crate) max_len: usize,

    /// Never show a progress bar.
    #[arg(short, long)]
    pub(crate) quiet: bool,
}

/// The rate of the in-memory filter when `--fpr` is not given.
const DEFAULT_FPR: f64 = 1e-9;

impl Args {
    /// The filter's target rate: `--fpr`, else the default of the filter in use (the shared
    /// filter's with `--redis`).
    pub(crate) fn fpr(&self) -> f64 {
        self.fpr.unwrap_or(if self.redis.is_some() {
            url_dedup::redis::DEFAULT_SHARED_FPR
        } else {
            DEFAULT_FPR
        })
    }
}

/// Tasks other than deduplicating.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Learn which URLs of each site are one page from what a crawl fetched, and write the
    /// rules that map them onto one URL (for `--rules`).
    ///
    /// Reads WARC files (`.warc`, `.warc.gz`: response, revisit and resource records; HTML
    /// pages are fingerprinted by their main content, so a clock or a menu that changed does
    /// not make two fetches of one page different; other payloads by their payload digest)
    /// or CDX files (`urlkey timestamp original mimetype statuscode digest ...`, or the
    /// columns a ` CDX` legend line names). URLs are canonicalized with --policy before
    /// learning: apply the rules with the same policy. Only 2xx answers are used.
    ///
    /// A rule is kept when it maps URLs of at least --min-pages pages onto another URL of their
    /// page, or saves at least --min-urls fetches, and never maps two different pages onto one
    /// URL. The summary goes to stderr.
    #[command(after_help = "\
Examples:
  url-dedup learn crawl.warc.gz -o site.rules     rules from a crawl, for review
  url-dedup learn index.cdx > site.rules          from a CDX index (digests only)
  url-dedup --rules site.rules urls.txt           apply them

Exit status: 0 on success, 1 on an unreadable or malformed input or output, 2 on a usage
error.")]
    Learn(LearnArgs),
}

/// `url-dedup learn`'s options.
#[derive(Debug, clap::Args)]
pub(crate) struct LearnArgs {
    /// WARC or CDX files, read in order.
    #[arg(value_name = "FILE", required = true)]
    pub(crate) files: Vec<PathBuf>,

    /// Write the rules to FILE (replaced whole, never through a symbolic link) instead of
    /// standard output.
    #[arg(short, long, value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,

    /// What the files are.
    #[arg(long, value_enum, default_value = "auto")]
    pub(crate) format: InputFormat,

    /// The fewest pages whose URLs a rule must fold, rightly, to be kept.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) min_pages: u64,

    /// A rule backed by fewer pages is still kept when it saves at least N fetches: URLs it
    /// puts with another URL of their page (a sign-in form linked with every article as its
    /// return address).
    #[arg(long, value_name = "N", default_value_t = 12, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) min_urls: u64,

    /// HTML pages whose SimHashes are at most BITS apart neither support nor contradict a
    /// rule (a page whose text holds a counter); 0 tells every content apart.
    #[arg(long, value_name = "BITS", default_value_t = 3, value_parser = clap::value_parser!(u32).range(0..=8))]
    pub(crate) max_distance: u32,

    /// Mark the rules confirmed: trust the crawl's evidence without the checks a crawler
    /// makes (the rules otherwise start as candidates; `--rules` applies both).
    #[arg(long)]
    pub(crate) confirmed: bool,

    /// Canonicalization convention the URLs are learned in [default: crawler]; use the one
    /// the rules will be applied with.
    #[arg(long, value_name = "NAME")]
    pub(crate) policy: Option<url_dedup::canon::Convention>,
}

/// What `url-dedup learn` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum InputFormat {
    /// WARC when the file's first bytes (ungzipped) are `WARC/`, else CDX.
    Auto,
    /// WARC records, gzipped or not.
    Warc,
    /// A CDX index.
    Cdx,
}

/// A rate strictly between 0 and 1.
fn rate(text: &str) -> Result<f64, String> {
    let rate: f64 = text.parse().map_err(|e| format!("{e}"))?;
    if rate > 0.0 && rate < 1.0 {
        Ok(rate)
    } else {
        Err("must be strictly between 0 and 1 (for example 1e-9)".to_owned())
    }
}

/// A non-negative, finite number of seconds.
fn seconds(text: &str) -> Result<f64, String> {
    let secs: f64 = text.parse().map_err(|e| format!("{e}"))?;
    if secs.is_finite() && secs >= 0.0 {
        Ok(secs)
    } else {
        Err("must be a number of seconds, 0 or more".to_owned())
    }
}

/// Similarity presets.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum SimilarPreset {
    /// The crawler preset's deciding feature alone: site, path and query key.
    Page,
    /// Site-scoped features plus query names, path template and extension.
    Crawler,
    /// Exactly the four features of document 004.
    Document004,
}

/// Where `--similar`'s features are hashed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum FeatureHashing {
    /// On the workers with three cores or more, else on the deciding thread.
    Auto,
    /// On the worker threads, for every line.
    Workers,
    /// On the deciding thread, for the URLs it calls new.
    Decider,
}

/// Trailing slash policies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum SlashPolicy {
    /// `/docs` and `/docs/` stay different.
    Keep,
    /// Remove trailing slashes (except the root's).
    Remove,
    /// Add a slash to paths whose last segment has no dot.
    Add,
}
