//! Command-line options, and the crawl configuration they produce.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use url::Url;

use crate::canonical::Canonicalizer;
use crate::error::CrawlError;
use crate::fetch::FetchPolicy;
use crate::scope::{Scope, ScopeKind};
use crate::state::FilterSize;
use crate::traps::TrapRules;

/// The done set's rate in one process when `--false-positive-rate` is not given (a shared
/// crawl takes the shared filter's, `url_dedup_redis::DEFAULT_SHARED_FPR`).
const DEFAULT_FPR: f64 = 1e-6;

/// The product token robots.txt groups are matched against.
pub(crate) const AGENT_TOKEN: &str = "url-dedup-crawler";

/// A polite, duplicate-free, resumable crawler (document 002 of url-dedup).
///
/// Crawls breadth-first from the seeds, writes a WARC file and an offline mirror to --out, and
/// checkpoints so that running the same command again after a crash or kill continues the crawl.
#[derive(Debug, Parser)]
#[command(name = "crawler", version, about, long_about = None)]
pub(crate) struct Options {
    /// Start URLs (http or https).
    #[arg(required_unless_present_any = ["demo", "stop", "seeds_file"])]
    pub(crate) seeds: Vec<String>,

    /// Read more start URLs from FILE, one per line (`-` for standard input); blank lines and
    /// lines starting with `#` are skipped.
    #[arg(long, value_name = "FILE")]
    pub(crate) seeds_file: Option<PathBuf>,

    /// Crawl an embedded demo site on loopback with the default rules and explain what each
    /// mechanism did. Takes no other option but --quiet.
    #[arg(long)]
    pub(crate) demo: bool,

    /// Output directory: WARC, mirror, skip report, checkpoint. Reusing it resumes the crawl.
    #[arg(long, short, default_value = "crawl")]
    pub(crate) out: PathBuf,

    /// Which URLs belong to the crawl.
    #[arg(long, value_enum, default_value_t = ScopeKind::Host)]
    pub(crate) scope: ScopeKind,

    /// URL prefix for --scope prefix (repeatable; default: each seed's directory, as wget -np).
    #[arg(long)]
    pub(crate) prefix: Vec<String>,

    /// Follow only links whose canonical URL matches this regular expression (repeatable: any
    /// one matching is enough). Seeds and page requisites are always fetched.
    #[arg(long, value_name = "REGEX")]
    pub(crate) accept_regex: Vec<String>,

    /// Never follow links whose canonical URL matches this regular expression (repeatable).
    /// Seeds and page requisites are always fetched.
    #[arg(long, value_name = "REGEX")]
    pub(crate) reject_regex: Vec<String>,

    /// Deepest link distance from a seed that is fetched: a backstop only, far beyond real
    /// navigation chains (traps are stopped by what their URLs look like, see
    /// --template-budget and --max-segment-repeats).
    #[arg(long, default_value_t = 1000)]
    pub(crate) max_depth: u32,

    /// Stop after fetching this many pages (over all runs of this output directory).
    #[arg(long)]
    pub(crate) max_pages: Option<u64>,

    /// Trap rule: skip URLs longer than this many bytes.
    #[arg(long, default_value_t = 1024)]
    pub(crate) max_url_length: usize,

    /// Trap rule: skip URLs with more `/` than this (the `//` after the scheme included).
    #[arg(long, default_value_t = 24)]
    pub(crate) max_slashes: usize,

    /// Trap rule: skip URLs in whose path one segment occurs more than this many times
    /// (`/a/b/a/b/a/b/a/`: a relative link resolving against itself).
    #[arg(long, default_value_t = 3)]
    pub(crate) max_segment_repeats: usize,

    /// Trap rule: admit at most this many URLs of one template (site, path with numbers as
    /// `{int}`, query parameter names) from pages of that same template: the months of a
    /// calendar, the levels of a generated tree, a query growing by one character or parameter
    /// at a time. Links from other pages (an index, a list, a sitemap) are not counted.
    #[arg(long, default_value_t = 256)]
    pub(crate) template_budget: u64,

    /// Trap rule: admit at most this many URLs per host.
    #[arg(long, default_value_t = 1_000_000)]
    pub(crate) host_budget: u64,

    /// Requests in flight per host. Keep 1 (the polite default) for sites you do not run.
    #[arg(long, default_value_t = 1)]
    pub(crate) per_host: usize,

    /// Minimum time between two requests to one host, in milliseconds (robots.txt Crawl-delay
    /// raises it).
    #[arg(long, default_value_t = 0)]
    pub(crate) delay_ms: u64,

    /// Workers; hosts are assigned to workers by a hash of the host.
    #[arg(long, default_value_t = 4)]
    pub(crate) workers: usize,

    /// Ignore robots.txt (only for sites you run yourself).
    #[arg(long)]
    pub(crate) ignore_robots: bool,

    /// Do not read the sitemaps listed in robots.txt.
    #[arg(long)]
    pub(crate) no_sitemaps: bool,

    /// Do not follow links marked rel="nofollow" (or on pages whose robots meta tag says
    /// nofollow).
    #[arg(long)]
    pub(crate) respect_nofollow: bool,

    /// How to reach whoever runs this crawl (URL or e-mail), added to the User-Agent.
    #[arg(long, conflicts_with = "user_agent")]
    pub(crate) contact: Option<String>,

    /// The User-Agent header, in place of `url-dedup-crawler/VERSION`. robots.txt rules are
    /// then read for its product token (what comes before the first `/` or space).
    #[arg(long, value_name = "STRING")]
    pub(crate) user_agent: Option<String>,

    /// Keep `user:password@` in URLs: the page is then fetched with that `Authorization`
    /// (recorded in the WARC request record). By default it is dropped, so no password
    /// reaches the WARC file or the done set.
    #[arg(long)]
    pub(crate) keep_userinfo: bool,

    /// Times a fetch that failed for a passing reason (a timeout, a refused or reset
    /// connection, 429, 500, 502, 503, 504) is tried again, waiting --retry-wait-ms, then twice
    /// that, and so on, or what the server's `Retry-After` asks (up to 10 minutes).
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub(crate) retries: u32,

    /// The first wait before a retry, in milliseconds.
    #[arg(long, default_value_t = 1000, value_name = "MS")]
    pub(crate) retry_wait_ms: u64,

    /// Whole-request timeout in milliseconds.
    #[arg(long, default_value_t = 30_000)]
    pub(crate) timeout_ms: u64,

    /// Connect timeout in milliseconds.
    #[arg(long, default_value_t = 10_000)]
    pub(crate) connect_timeout_ms: u64,

    /// Redirects followed from one link (each target is deduplicated like a link).
    #[arg(long, default_value_t = 5)]
    pub(crate) max_redirects: u32,

    /// Largest body read from the network, in bytes.
    #[arg(long, default_value_t = 10 << 20)]
    pub(crate) max_body: u64,

    /// Largest body after decompression, in bytes.
    #[arg(long, default_value_t = 20 << 20)]
    pub(crate) max_decoded: u64,

    /// Accepted content types of pages: exact (text/html), prefix (image/) or `*`. Repeatable.
    #[arg(long = "accept", default_values_t = ["text/html".to_owned(), "application/xhtml+xml".to_owned(), "text/css".to_owned(), "image/".to_owned()])]
    pub(crate) accept: Vec<String>,

    /// Also skip URLs that the similarity filter of document 004 (`url-dedup-similarity`,
    /// crawler preset) finds similar to earlier ones, such as `?sort=` variants of a list.
    #[arg(long)]
    pub(crate) similar: bool,

    /// Learn, host by host, which URLs serve the same page (session tokens, print views, sort
    /// orders, `index.html`), check each rule by fetching a few URLs it predicts, then skip the
    /// URLs the rules map onto a page already fetched. Rules are kept in `--out`.
    #[arg(long)]
    pub(crate) learn: bool,

    /// Apply the rules of FILE (the text `url-dedup learn` writes) to every link: a URL they
    /// map onto a page already fetched or queued is skipped. With --learn, learning adds to them.
    #[arg(long, value_name = "FILE")]
    pub(crate) rules: Option<PathBuf>,

    /// Do not write the WARC file.
    #[arg(long)]
    pub(crate) no_warc: bool,

    /// Do not write the offline mirror.
    #[arg(long)]
    pub(crate) no_mirror: bool,

    /// Do not fetch page requisites (images, scripts, stylesheets and what they use, icons),
    /// which are otherwise fetched for the mirror and the WARC like `wget -p`.
    #[arg(long)]
    pub(crate) no_requisites: bool,

    /// URLs the done-set filter is sized for.
    #[arg(long, default_value_t = 1_000_000)]
    pub(crate) expected_urls: u64,

    /// False-positive rate of the done-set filter at --expected-urls (a false positive is a
    /// page silently not crawled) [default: 1e-6; 1e-5 with --redis, where each bit of a URL
    /// costs Redis CPU: one page in 100,000 not crawled].
    #[arg(long)]
    pub(crate) false_positive_rate: Option<f64>,

    /// Seconds between checkpoints (the journal covers the time between them). A shared crawl
    /// keeps its state in Redis and has no checkpoints.
    #[arg(long, default_value_t = 30, conflicts_with = "redis")]
    pub(crate) checkpoint_secs: u64,

    /// Start a new crawl in an output directory that holds an earlier one the crawler cannot
    /// resume (its checkpoint is gone, or its WARC file was cut): the earlier crawl's files
    /// are moved to `OUT/previous-<time>/`, nothing is deleted.
    #[arg(long, conflicts_with = "redis")]
    pub(crate) restart: bool,

    /// Print the end-of-run summary as one JSON object (counters, skips per reason; a shared
    /// crawl's process name and Redis figures) instead of text.
    #[arg(long)]
    pub(crate) json: bool,

    /// No progress lines on stderr.
    #[arg(long, short)]
    pub(crate) quiet: bool,

    /// Share the crawl with other processes through this Redis (`redis://host:port`): one
    /// frontier, one seen-filter, leases and heartbeats (see docs/distributed.md).
    #[arg(long, value_name = "URL")]
    pub(crate) redis: Option<String>,

    /// Name of the shared crawl in Redis; processes with the same name cooperate.
    #[arg(long, default_value = "crawl", value_name = "NAME", requires = "redis")]
    pub(crate) crawl_name: String,

    /// Membership lease of a process sharing a crawl: after this long without a heartbeat, its
    /// claimed URLs go back to the frontier for the others.
    #[arg(long, default_value_t = 10_000, value_name = "MS", requires = "redis")]
    pub(crate) lease_ms: u64,

    /// Raise the stop flag of the shared crawl (--redis, --crawl-name): every process finishes
    /// its requests in flight and exits. Nothing is crawled.
    #[arg(long, requires = "redis")]
    pub(crate) stop: bool,

    /// Serve the status page (HTML at `/`, JSON at `/status.json`, `POST /rate?pages_per_sec=N`)
    /// on this address, e.g. 127.0.0.1:8080 (port 0 picks a free one). The address is printed
    /// with this run's token, which changes need (also in --out, file status-token).
    #[arg(long, value_name = "ADDR")]
    pub(crate) status: Option<std::net::SocketAddr>,

    /// Most pages per second this process starts (0: no limit); changeable at run time through
    /// the status page.
    #[arg(long, default_value_t = 0.0, value_name = "N")]
    pub(crate) rate: f64,

    /// Incremental crawl of a shared crawl (--redis): every DURATION (`90s`, `15m`, `6h`, `1d`,
    /// `500ms`) the seeds are imported again and every known page is revisited with a
    /// conditional GET (ETag / Last-Modified stored per URL); unchanged pages answer 304.
    /// Runs until the stop flag is raised.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "redis")]
    pub(crate) every: Option<Duration>,

    /// Frontiers the shared run queue is split into, each in one Redis Cluster hash slot (a
    /// host's URLs stay in one); more than one only helps to spread a crawl over the nodes of
    /// a cluster.
    #[arg(long, default_value_t = 1, value_name = "N", requires = "redis")]
    pub(crate) queue_stripes: usize,

    /// A shared crawl's Redis unreachable at the start: give up after this long.
    #[arg(long, default_value_t = 3_000, value_name = "MS", requires = "redis")]
    pub(crate) redis_first_contact_ms: u64,

    /// Wait until N Redis replicas have each batch of the shared done set's writes (Redis
    /// `WAIT`), so a failover to a replica loses no admission: without it, a URL admitted just
    /// before a master dies may be admitted, and fetched, again.
    #[arg(long, value_name = "N", requires = "redis", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) redis_acknowledge: Option<u32>,

    /// A shared crawl's Redis unreachable during the crawl: retry for this long, then stop.
    #[arg(long, default_value_t = 30_000, value_name = "MS", requires = "redis")]
    pub(crate) redis_give_up_ms: u64,

    /// What a shared crawl does when Redis lost its data (a restart without persistence, a
    /// flush): stop (the default), or continue from the seeds, saying in the shared log that
    /// every page fetched before may be fetched again.
    #[arg(long, value_enum, default_value_t = AfterReset::Stop, requires = "redis")]
    pub(crate) after_redis_reset: AfterReset,

    /// Longest entry count of the shared log stream in Redis (warnings and errors of every
    /// process).
    #[arg(long, default_value_t = 1000, value_name = "N", requires = "redis")]
    pub(crate) log_cap: u64,
}

/// What a shared crawl does when Redis lost its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum AfterReset {
    /// Stop, saying what happened.
    Stop,
    /// Start the run queue again from the seeds; pages fetched before may be fetched again.
    Continue,
}

/// Everything a crawl needs to know, checked.
#[derive(Clone, Debug)]
pub(crate) struct CrawlConfig {
    pub(crate) seeds: Vec<Url>,
    pub(crate) out: PathBuf,
    pub(crate) scope: Scope,
    pub(crate) traps: TrapRules,
    pub(crate) max_pages: Option<u64>,
    pub(crate) per_host: usize,
    pub(crate) delay: Duration,
    pub(crate) workers: usize,
    pub(crate) robots: bool,
    pub(crate) sitemaps: bool,
    pub(crate) respect_nofollow: bool,
    pub(crate) fetch: FetchPolicy,
    pub(crate) max_redirects: u32,
    pub(crate) max_decoded: u64,
    pub(crate) warc: bool,
    pub(crate) mirror: bool,
    /// Fetch page requisites (only when a mirror or a WARC file is written).
    pub(crate) requisites: bool,
    pub(crate) filter: FilterSize,
    pub(crate) checkpoint_every: Duration,
    /// Move an earlier crawl that cannot be resumed aside and start anew.
    pub(crate) restart: bool,
    /// The product token robots.txt rules are read for.
    pub(crate) robots_agent: String,
    /// Link patterns (`--accept-regex`, `--reject-regex`).
    pub(crate) patterns: crate::scope::Patterns,
    /// Keep `user:password@` in URLs.
    pub(crate) keep_userinfo: bool,
    /// How failed fetches are tried again.
    pub(crate) retry: crate::fetch::Retry,
    pub(crate) progress: bool,
    /// Where to serve the status page, if anywhere.
    pub(crate) status: Option<std::net::SocketAddr>,
    /// Most pages per second this process starts (0: no limit).
    pub(crate) rate: f64,
    /// Learn rules while crawling (`--learn`).
    pub(crate) learn: bool,
    /// Rules given with `--rules`, all trusted.
    pub(crate) rules: Option<url_dedup_rules::RuleSet>,
}

/// `500ms`, `90s`, `15m`, `6h`, `1d`: a whole number and a unit.
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{s:?}: expected a number and a unit (ms, s, m, h, d)"))?;
    let ms = match unit {
        "ms" => Some(n),
        "s" => n.checked_mul(1000),
        "m" => n.checked_mul(60_000),
        "h" => n.checked_mul(3_600_000),
        "d" => n.checked_mul(86_400_000),
        _ => return Err(format!("{s:?}: the unit must be ms, s, m, h or d")),
    };
    match ms {
        Some(ms) if ms > 0 => Ok(Duration::from_millis(ms)),
        Some(_) => Err(format!("{s:?}: must be longer than zero")),
        None => Err(format!("{s:?}: too long")),
    }
}

impl Options {
    /// How long the shared crawl's Redis calls retry (--redis-first-contact-ms,
    /// --redis-give-up-ms).
    pub(crate) fn redis_backoff(&self) -> url_dedup_redis::Backoff {
        let give_up = Duration::from_millis(self.redis_give_up_ms.max(1));
        url_dedup_redis::Backoff {
            give_up_after: give_up,
            first_contact: Duration::from_millis(self.redis_first_contact_ms.max(1)).min(give_up),
            ..url_dedup_redis::Backoff::default()
        }
    }

    /// The demo's options: default rules around the demo site's home page.
    pub(crate) fn parse_demo(origin: &str, out: &std::path::Path, user: &Options) -> Options {
        let mut options = Options::parse_from([
            std::ffi::OsString::from("crawler"),
            format!("{origin}/").into(),
            "--out".into(),
            out.as_os_str().to_owned(),
        ]);
        options.quiet = user.quiet;
        options
    }

    /// Checks the options and resolves the seeds (from the command line, then `--seeds-file`).
    pub(crate) fn config(&self) -> Result<CrawlConfig, CrawlError> {
        let canon = &Canonicalizer::keeping_userinfo(self.keep_userinfo);
        let parse = |s: &String| -> Result<Url, CrawlError> {
            let url = Url::parse(s).map_err(|_| CrawlError::BadSeed(s.clone()))?;
            if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
                return Err(CrawlError::BadSeed(s.clone()));
            }
            canon
                .canonicalize(&url)
                .map_err(|_| CrawlError::BadSeed(s.clone()))
        };
        let mut given = self.seeds.clone();
        if let Some(file) = &self.seeds_file {
            given.extend(read_seeds(file)?);
        }
        if given.is_empty() {
            return Err(CrawlError::Usage(
                "no seeds: give start URLs, or a --seeds-file that lists some".into(),
            ));
        }
        let seeds = given.iter().map(parse).collect::<Result<Vec<_>, _>>()?;
        let prefixes = self
            .prefix
            .iter()
            .map(parse)
            .collect::<Result<Vec<_>, _>>()?;
        if self.per_host == 0 || self.workers == 0 {
            return Err(CrawlError::Usage(
                "--per-host and --workers must be at least 1".into(),
            ));
        }
        crate::monitor::check_rate(self.rate)
            .map_err(|e| CrawlError::Usage(format!("--rate: {e}")))?;
        let false_positive_rate = self.false_positive_rate.unwrap_or(if self.redis.is_some() {
            url_dedup_redis::DEFAULT_SHARED_FPR
        } else {
            DEFAULT_FPR
        });
        if !(false_positive_rate > 0.0 && false_positive_rate < 1.0) {
            return Err(CrawlError::Usage(
                "--false-positive-rate must be between 0 and 1".into(),
            ));
        }
        let user_agent = match &self.user_agent {
            Some(agent) if agent.trim().is_empty() || agent.contains(['\r', '\n']) => {
                return Err(CrawlError::Usage(
                    "--user-agent must be one line of text".into(),
                ));
            }
            Some(agent) => agent.trim().to_owned(),
            None => {
                let mut agent = format!("{AGENT_TOKEN}/{}", env!("CARGO_PKG_VERSION"));
                if let Some(contact) = &self.contact {
                    agent.push_str(&format!(" (+{contact})"));
                }
                agent
            }
        };
        // robots.txt names crawlers by product token: `mybot` in `mybot/2.0 (ops@example.org)`.
        let robots_agent = user_agent
            .split(['/', ' '])
            .next()
            .filter(|t| !t.is_empty())
            .unwrap_or(AGENT_TOKEN)
            .to_owned();
        let patterns = crate::scope::Patterns::new(&self.accept_regex, &self.reject_regex)
            .map_err(CrawlError::Usage)?;
        let rules = match &self.rules {
            Some(file) => {
                let text = std::fs::read_to_string(file)
                    .map_err(CrawlError::io("reading rules from", file))?;
                let set = url_dedup_rules::RuleSet::parse(&text)
                    .map_err(|e| CrawlError::Usage(format!("--rules {}: {e}", file.display())))?;
                Some(crate::dust::trusted(set))
            }
            None => None,
        };
        if self.retry_wait_ms == 0 && self.retries > 0 {
            return Err(CrawlError::Usage(
                "--retry-wait-ms must be at least 1 when --retries is not 0".into(),
            ));
        }
        Ok(CrawlConfig {
            scope: Scope::new(self.scope, &seeds, &prefixes),
            seeds,
            out: self.out.clone(),
            traps: TrapRules {
                max_url_len: self.max_url_length,
                max_slashes: self.max_slashes,
                max_segment_repeats: self.max_segment_repeats,
                max_depth: self.max_depth,
                host_budget: self.host_budget,
                template_budget: self.template_budget,
            },
            max_pages: self.max_pages,
            per_host: self.per_host,
            delay: Duration::from_millis(self.delay_ms),
            workers: self.workers,
            robots: !self.ignore_robots,
            sitemaps: !self.no_sitemaps,
            respect_nofollow: self.respect_nofollow,
            fetch: FetchPolicy {
                user_agent,
                timeout: Duration::from_millis(self.timeout_ms),
                connect_timeout: Duration::from_millis(self.connect_timeout_ms),
                max_body: self.max_body,
                accept: self
                    .accept
                    .iter()
                    .map(|a| a.trim().to_ascii_lowercase())
                    .collect(),
            },
            max_redirects: self.max_redirects,
            max_decoded: self.max_decoded,
            warc: !self.no_warc,
            mirror: !self.no_mirror,
            // Requisites serve the mirror and the WARC file; with neither, nothing would keep them.
            requisites: !self.no_requisites && (!self.no_warc || !self.no_mirror),
            filter: FilterSize {
                similar: self.similar,
                expected_urls: self.expected_urls,
                false_positive_rate,
            },
            checkpoint_every: Duration::from_secs(self.checkpoint_secs.max(1)),
            restart: self.restart,
            robots_agent,
            patterns,
            keep_userinfo: self.keep_userinfo,
            retry: crate::fetch::Retry {
                times: self.retries,
                first_wait: Duration::from_millis(self.retry_wait_ms),
            },
            progress: !self.quiet,
            status: self.status,
            rate: self.rate,
            learn: self.learn,
            rules,
        })
    }
}

/// The seeds listed in `file` (`-`: standard input): one per line, blank lines and `#`
/// comments skipped.
fn read_seeds(file: &std::path::Path) -> Result<Vec<String>, CrawlError> {
    let text = if file.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin())
            .map_err(CrawlError::io("reading seeds from", "standard input"))?
    } else {
        std::fs::read_to_string(file).map_err(CrawlError::io("reading seeds from", file))?
    };
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect())
}

/// With `--demo`, the options `matches` got from the command line besides `--demo` and
/// `--quiet`, by their long names (or ids for positionals): the demo crawls its own site with
/// its own options, so these would be ignored without a word.
pub(crate) fn demo_extras(matches: &clap::ArgMatches) -> Vec<String> {
    use clap::CommandFactory;
    Options::command()
        .get_arguments()
        .filter(|arg| !matches!(arg.get_id().as_str(), "demo" | "quiet"))
        .filter(|arg| {
            matches.value_source(arg.get_id().as_str())
                == Some(clap::parser::ValueSource::CommandLine)
        })
        .map(|arg| match arg.get_long() {
            Some(long) => format!("--{long}"),
            None => arg.get_id().to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse_duration("1d"), Ok(Duration::from_secs(86_400)));
        for bad in ["", "s", "10", "0s", "1.5s", "3w", "99999999999999999999d"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    /// Options of one mode are refused in the other, with clap's message naming what is
    /// missing or in conflict.
    #[test]
    fn options_of_one_mode_are_refused_in_the_other() {
        for args in [
            &["crawler", "http://h/", "--every", "1h"][..],
            &["crawler", "http://h/", "--lease-ms", "500"],
            &["crawler", "http://h/", "--log-cap", "10"],
            &["crawler", "http://h/", "--queue-stripes", "4"],
            &["crawler", "http://h/", "--crawl-name", "x"],
            &["crawler", "http://h/", "--redis-give-up-ms", "10"],
            &[
                "crawler",
                "http://h/",
                "--redis",
                "redis://r",
                "--checkpoint-secs",
                "5",
            ],
        ] {
            let refused = Options::try_parse_from(args).unwrap_err().to_string();
            assert!(
                refused.contains("--redis") || refused.contains("cannot be used"),
                "{args:?}: {refused}"
            );
        }
        assert!(Options::try_parse_from(["crawler", "http://h/", "--redis", "redis://r"]).is_ok());
    }

    /// The demo takes only `--quiet`: anything else given with it is named, to be refused.
    #[test]
    fn options_given_with_the_demo_are_named() {
        use clap::CommandFactory;
        let extras = |args: &[&str]| demo_extras(&Options::command().get_matches_from(args));
        assert!(extras(&["crawler", "--demo"]).is_empty());
        assert!(extras(&["crawler", "--demo", "-q"]).is_empty());
        assert_eq!(extras(&["crawler", "--demo", "--similar"]), ["--similar"]);
        assert_eq!(
            extras(&["crawler", "--demo", "--workers", "2", "http://h/"]),
            ["seeds", "--workers"]
        );
    }

    #[test]
    fn bad_seeds_and_options_are_errors() {
        for args in [
            &["crawler", "ftp://h/"][..],
            &["crawler", "not a url"],
            &["crawler", "http://h/", "--per-host", "0"],
            &["crawler", "http://h/", "--false-positive-rate", "1"],
            &["crawler", "http://h/", "--accept-regex", "("],
            &["crawler", "http://h/", "--user-agent", " "],
        ] {
            assert!(Options::parse_from(args).config().is_err(), "{args:?}");
        }
        // Options that cannot go together are refused when the command line is read.
        for args in [
            &[
                "crawler",
                "http://h/",
                "--user-agent",
                "x/1",
                "--contact",
                "a@b",
            ][..],
            &["crawler", "http://h/", "--restart", "--redis", "redis://h/"],
        ] {
            assert!(Options::try_parse_from(args).is_err(), "{args:?}");
        }
        let c = Options::parse_from(["crawler", "http://h/#x", "--contact", "ops@example.com"])
            .config()
            .unwrap();
        assert_eq!(c.seeds[0].as_str(), "http://h/");
        assert!(c.fetch.user_agent.ends_with("(+ops@example.com)"));
        assert_eq!(c.per_host, 1);
    }

    #[test]
    fn seeds_come_from_the_command_line_and_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("seeds.txt");
        std::fs::write(
            &file,
            "# start here\nhttp://a.example/\n\n  http://b.example/x \n",
        )
        .unwrap();
        let c = Options::parse_from([
            "crawler",
            "http://h/",
            "--seeds-file",
            file.to_str().unwrap(),
        ])
        .config()
        .unwrap();
        let seeds: Vec<&str> = c.seeds.iter().map(|u| u.as_str()).collect();
        assert_eq!(
            seeds,
            ["http://h/", "http://a.example/", "http://b.example/x"]
        );
        let only_file = Options::parse_from(["crawler", "--seeds-file", file.to_str().unwrap()])
            .config()
            .unwrap();
        assert_eq!(only_file.seeds.len(), 2);
        std::fs::write(&file, "# nothing\n").unwrap();
        let none =
            Options::parse_from(["crawler", "--seeds-file", file.to_str().unwrap()]).config();
        assert!(none.unwrap_err().to_string().contains("no seeds"));
    }
}
