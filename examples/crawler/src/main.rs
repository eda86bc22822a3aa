//! `crawler`: the reference crawler of url-dedup, document 002 end to end in one process.
//!
//! Point it at a site and get a polite, complete, duplicate-free crawl that survives `kill -9`
//! and can be browsed offline:
//!
//! ```text
//! crawler https://docs.example.org/ --out docs-crawl --contact ops@example.org
//! crawler --demo          # an embedded site on loopback, no network needed
//! ```
//!
//! # How a URL travels
//!
//! 1. **Extraction** ([`links`]): a page is decoded by its declared charset ([`charset`]), then
//!    one streaming `lol_html` pass takes links only from `a`, `area`, `link` (`href`) and
//!    `frame`, `iframe` (`src`), honours `<base href>` and, optionally, `rel="nofollow"`; the
//!    same pass rewrites links for the offline mirror.
//! 2. **Canonicalization** ([`canonical`], backed by `url_dedup_canon`): one spelling per page
//!    (fragments, tracking and session parameters, query order, case, default ports, dot
//!    segments, percent-encoding).
//! 3. **Admission** ([`admission`], one set of rules for both modes): scope ([`scope`]),
//!    link patterns, trap rules ([`traps`], [`template`]) and budgets, then the done set
//!    ([`done`]): document 002's "is this URL already done?" is the facade
//!    `url_dedup::UrlDedup`, the type every embedding crawler uses; exactly one caller is told
//!    a URL is new; with `--similar`, its similarity filter (document 004) may also skip it.
//!    Every skip is reported with its reason ([`skip`], `skipped.tsv`).
//! 4. **Run queue** ([`backend`]): in this process ([`backend::local`], a journal and
//!    checkpoints) or in Redis ([`backend::shared`]), breadth-first.
//! 5. **Politeness** ([`router`], [`worker`]): hosts ([`job::host_of`]) are assigned to workers
//!    by `url_dedup_partition`'s table (document 002's `Transfer(host) mod n`); each host gets
//!    one request at a time (`--per-host`), a delay, and its robots.txt rules ([`robots`]),
//!    including `Crawl-delay` and `Sitemap` ([`sitemap`]).
//! 6. **Fetch** ([`fetch`], [`content_coding`]): reqwest over rustls, timeouts, no automatic
//!    redirects (each target goes back through steps 2-4, up to `--max-redirects`), a cap on the
//!    body, a content-type filter decided on the headers, gzip/deflate decoded with a cap,
//!    passing failures tried again ([`page`]).
//! 7. **Output** ([`warc`], [`mirror`], [`files`]): WARC request and response records, and a
//!    mirror directory with rewritten links, never written through a link planted in `--out`.
//! 8. **Resume** ([`journal`], [`checkpoint`]): every admission and completion is journaled
//!    before it takes effect; periodic checkpoints (run queue and filter snapshot, written then
//!    renamed) bound the journal. After `kill -9`, the same command continues: no URL lost, only
//!    the ones in flight fetched again.
//!
//! # Several processes, one crawl (document 003)
//!
//! One engine ([`engine`]) runs both modes; only its backend ([`backend`]) differs, and one set
//! of admission rules ([`admission`]) decides for both. With `--redis URL`, the run queue and
//! the done set live in Redis ([`backend::shared`], backed by `url_dedup_redis` and the
//! facade's Redis mode): processes join and leave at any time and share even one site
//! (each host's politeness budget is held in Redis for all of them), a killed one's URLs are
//! requeued by the others, `--every` revisits known pages with conditional GET, warnings and
//! errors of every process go to one capped Redis stream ([`logger`]), and `--stop` ends them
//! all. WARC, mirror, traps, budgets, `--similar` and `--status` ([`monitor`]) work the same
//! in both modes. What a response means is decided by a spider kernel ([`kernel`]): HTML link
//! following, sitemaps and feeds. See [`docs/distributed.md`](https://github.com/url-dedup/url-dedup/blob/main/docs/distributed.md).
//!
//! See [`docs/crawler.md`](https://github.com/url-dedup/url-dedup/blob/main/docs/crawler.md) for the options, output formats and politeness defaults.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod admission;
mod aliases;
mod backend;
mod budget;
mod canonical;
mod charset;
mod checkpoint;
mod clip;
mod content_coding;
mod css;
mod demo;
mod done;
mod dust;
mod engine;
mod entities;
mod error;
mod fetch;
mod files;
mod job;
mod journal;
mod kernel;
mod learner;
mod links;
mod logger;
mod mirror;
mod monitor;
mod options;
mod outbox;
mod page;
mod queue_file;
mod records;
mod robots;
mod router;
mod scope;
mod signals;
mod sitemap;
mod skip;
mod state;
mod summary;
mod template;
mod traps;
mod warc;
mod worker;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

use crate::options::Options;

fn main() -> ExitCode {
    let matches = Options::command().get_matches();
    let options = match Options::from_arg_matches(&matches) {
        Ok(options) => options,
        Err(e) => e.exit(),
    };
    if options.demo {
        let extras = options::demo_extras(&matches);
        if !extras.is_empty() {
            eprintln!(
                "crawler: --demo crawls its own site with its own options and takes only --quiet; \
                 remove {}",
                extras.join(", ")
            );
            return ExitCode::from(2);
        }
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("crawler: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        if options.demo {
            return demo::run(&options).await.map(|()| 0);
        }
        let sharing = match &options.redis {
            Some(redis) => {
                if options.stop {
                    return backend::shared::raise_stop(redis, &options.crawl_name)
                        .await
                        .map(|()| 0);
                }
                let level = if options.quiet {
                    tracing::Level::WARN
                } else {
                    tracing::Level::INFO
                };
                tracing_subscriber::fmt()
                    .with_writer(std::io::stderr)
                    .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
                    .with_max_level(level)
                    .init();
                Some(backend::shared::SharedSettings {
                    redis: redis.clone(),
                    name: options.crawl_name.clone(),
                    lease: std::time::Duration::from_millis(options.lease_ms.max(100)),
                    log_cap: options.log_cap,
                    every: options.every,
                    backoff: options.redis_backoff(),
                    acknowledge: options.redis_acknowledge,
                    stripes: options.queue_stripes,
                    continue_after_reset: options.after_redis_reset
                        == options::AfterReset::Continue,
                })
            }
            None => None,
        };
        let config = options.config()?;
        let report = engine::run(config, sharing).await?;
        print_summary(&report.render(options.json))?;
        Ok(report.exit_code())
    });
    // Fetches still running after a fatal error are not waited for.
    runtime.shutdown_background();
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("crawler: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

/// Writes the summary to standard output; a closed or full output is an error, not a panic.
fn print_summary(text: &str) -> Result<(), error::CrawlError> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")
        .and_then(|()| out.flush())
        .map_err(error::CrawlError::io(
            "writing the summary to",
            "standard output",
        ))
}
