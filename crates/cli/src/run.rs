//! The deduplication loop: read, decide, print, explain.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use url_dedup::canon::{Policy, TrailingSlash};
use url_dedup::similarity::Preset;
use url_dedup::{Outcome, UrlDedup};

use crate::args::{Args, SimilarPreset, SlashPolicy};
use crate::lines::{Line, LineReader};
use crate::state;
use crate::stats::Stats;

/// How many invalid lines are shown on stderr without `--explain`.
const SHOWN_INVALID: u64 = 5;

/// Runs the command; `Err` carries the message for exit status 1.
pub(crate) fn run(args: Args) -> Result<(), String> {
    let sources = sources(&args.files);
    let input_bytes = input_size(&sources);
    let builder = builder(&args, input_bytes);
    let dedup = state::load_or_build(builder, args.state.as_deref())?;

    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut explain = open_explain(args.explain.as_deref())?;
    let progress = progress_bar(&args, input_bytes);

    let started = Instant::now();
    let mut stats = Stats::default();
    let mut done_bytes = 0u64;
    let mut pipe_closed = false;
    'sources: for source in &sources {
        let reader: Box<dyn BufRead> = match source {
            None => Box::new(io::stdin().lock()),
            Some(path) => Box::new(BufReader::with_capacity(
                1 << 16,
                File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?,
            )),
        };
        let name = source
            .as_deref()
            .map_or("<stdin>".into(), |p| p.display().to_string());
        let mut lines = LineReader::new(reader, args.max_len);
        let mut number = 0u64;
        loop {
            let line = lines
                .next_line()
                .map_err(|e| format!("cannot read {name}: {e}"))?;
            let Some(line) = line else { break };
            number += 1;
            stats.lines += 1;
            let reason = match line {
                Line::Empty => {
                    stats.empty += 1;
                    continue;
                }
                Line::TooLong(len) => format!("line is {len} bytes, over --max-len"),
                Line::NotUtf8 => "not valid UTF-8".to_owned(),
                Line::Text(text) => match dedup.check_and_insert_canonical(text) {
                    Ok((Outcome::New, canonical)) => {
                        stats.new += 1;
                        let shown = if args.canonical { &*canonical } else { text };
                        if let Err(e) = writeln!(out, "{shown}") {
                            if e.kind() == io::ErrorKind::BrokenPipe {
                                pipe_closed = true;
                                break 'sources;
                            }
                            return Err(format!("cannot write output: {e}"));
                        }
                        continue;
                    }
                    Ok((Outcome::Duplicate, _)) => {
                        stats.duplicate += 1;
                        if let Some(ex) = explain.as_mut() {
                            writeln!(ex, "duplicate\t{text}").map_err(write_err)?;
                        }
                        continue;
                    }
                    Ok((Outcome::Similar(why), _)) => {
                        stats.similar += 1;
                        if let Some(ex) = explain.as_mut() {
                            writeln!(ex, "similar\t{text}\t{why}").map_err(write_err)?;
                        }
                        continue;
                    }
                    Ok((other, _)) => {
                        // Outcomes added in later versions count as kept, never as lost.
                        stats.new += 1;
                        writeln!(out, "{text}").map_err(write_err)?;
                        let _ = other;
                        continue;
                    }
                    Err(e) => e.to_string(),
                },
            };
            stats.invalid += 1;
            if let Some(ex) = explain.as_mut() {
                writeln!(ex, "invalid\t{name}:{number}\t{reason}").map_err(write_err)?;
            } else if stats.invalid <= SHOWN_INVALID {
                eprintln!("url-dedup: {name}:{number}: skipped: {reason}");
            }
            if stats.lines % 65_536 == 0
                && let Some(bar) = &progress
            {
                bar.set_position(done_bytes + lines.consumed());
            }
        }
        done_bytes += lines.consumed();
    }
    if let Some(bar) = progress {
        bar.finish_and_clear();
    }
    state::flush_quietly(&mut out).map_err(write_err)?;
    if let Some(ex) = explain.as_mut() {
        ex.flush().map_err(write_err)?;
    }
    let elapsed = started.elapsed();

    if stats.invalid > SHOWN_INVALID && args.explain.is_none() {
        eprintln!(
            "url-dedup: {} invalid lines in all ({} shown; --explain lists every one)",
            stats.invalid, SHOWN_INVALID
        );
    }
    if dedup.is_over_capacity() {
        eprintln!(
            "url-dedup: warning: more distinct URLs than the filter was sized for ({}); \
             false positives are now above the requested rate: pass a larger --expected",
            dedup.expected_urls()
        );
    }
    if let Some(path) = &args.state {
        if pipe_closed {
            eprintln!("url-dedup: output closed early; state not saved, so no URL is lost");
        } else {
            state::save(&dedup, path)?;
        }
    }
    if args.stats {
        eprint!(
            "{}",
            stats.report(dedup.memory_bytes(), dedup.expected_urls(), elapsed)
        );
    }
    Ok(())
}

fn write_err(e: io::Error) -> String {
    format!("cannot write: {e}")
}

/// `None` stands for standard input.
fn sources(files: &[PathBuf]) -> Vec<Option<PathBuf>> {
    if files.is_empty() {
        return vec![None];
    }
    files
        .iter()
        .map(|f| (f.as_os_str() != "-").then(|| f.clone()))
        .collect()
}

/// Total input size when every source is a regular file (stdin redirected from a file counts).
fn input_size(sources: &[Option<PathBuf>]) -> Option<u64> {
    sources
        .iter()
        .map(|s| {
            let path = s.as_deref().unwrap_or(Path::new("/dev/stdin"));
            std::fs::metadata(path)
                .ok()
                .filter(|m| m.is_file())
                .map(|m| m.len())
        })
        .sum()
}

fn builder(args: &Args, input_bytes: Option<u64>) -> url_dedup::Builder {
    // Short URLs average ~60 bytes; sizing for bytes/32 lines errs on the roomy side.
    let expected = args
        .expected
        .unwrap_or_else(|| input_bytes.map_or(10_000_000, |b| (b / 32).max(1_000_000)));
    let mut b = UrlDedup::builder()
        .expected_urls(expected)
        .false_positive_rate(args.fpr);
    b = if args.raw {
        b.no_canonicalization()
    } else {
        b.canonicalization(policy(args))
    };
    if let Some(url) = &args.redis {
        b = b.redis(url, &args.redis_prefix);
    }
    if let Some(preset) = args.similar {
        b = b.similarity(match preset {
            SimilarPreset::Crawler => Preset::Crawler,
            SimilarPreset::Document004 => Preset::Document004,
        });
    }
    b
}

fn policy(args: &Args) -> Policy {
    let mut p = Policy::default();
    p.remove_fragment = !args.keep_fragment;
    p.sort_query = !args.keep_query_order;
    p.drop_empty_query = !args.keep_empty_query;
    p.remove_tracking_params = !args.keep_tracking || !args.strip_params.is_empty();
    if args.keep_tracking {
        p.tracking_params = url_dedup::canon::ParamList::new(Vec::<String>::new());
    }
    for name in &args.strip_params {
        p.tracking_params.push(name);
    }
    p.remove_session_params = !args.keep_session;
    p.fold_www = args.fold_www;
    p.fold_scheme = args.fold_scheme;
    p.lowercase_path = args.lowercase_path;
    p.trailing_slash = match args.trailing_slash {
        SlashPolicy::Keep => TrailingSlash::Keep,
        SlashPolicy::Remove => TrailingSlash::Remove,
        SlashPolicy::Add => TrailingSlash::AddToDirectories,
    };
    p.max_len = args.max_len;
    p
}

fn open_explain(path: Option<&Path>) -> Result<Option<Box<dyn Write>>, String> {
    Ok(match path {
        None => None,
        Some(p) if p.as_os_str() == "-" => Some(Box::new(BufWriter::new(io::stderr()))),
        Some(p) => Some(Box::new(BufWriter::new(File::create(p).map_err(|e| {
            format!("cannot create explain file {}: {e}", p.display())
        })?))),
    })
}

fn progress_bar(args: &Args, input_bytes: Option<u64>) -> Option<ProgressBar> {
    let total = input_bytes?;
    if args.quiet || !io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    Some(bar)
}
