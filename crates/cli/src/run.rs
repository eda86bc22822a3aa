//! The deduplication loop: inputs are read, canonicalized and hashed on every core (see
//! [`pipeline`]), then each block is decided in input order with one call, printed,
//! explained, and journaled.

mod emit;
mod pipeline;

use std::fs::File;
use std::io::{self, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use self::emit::{Emitter, Flow, SHOWN_INVALID, Shown, write_err};
use self::pipeline::{Message, Plan};
use crate::Failure;
use crate::args::{Args, FeatureHashing};
use crate::config;
use crate::explain::{Explainer, Memory};
use crate::state::{self, State};
use crate::stats::Stats;

/// Runs the command.
pub(crate) fn run(args: Args) -> Result<(), Failure> {
    let sources = sources(&args.files);
    refuse_writing_inputs(&args, &sources)?;
    config::check_combinations(&args)?;
    let input_bytes = input_size(&sources);
    let mut builder = config::builder(&args, estimated_lines(&sources));
    if let Some(path) = &args.rules {
        builder = builder.rules(crate::learn::load_rules(path)?);
    }
    if let Some(key) = hash_key(&args)? {
        builder = builder.hash_key(key);
    }
    let every =
        (args.checkpoint_every > 0.0).then(|| Duration::from_secs_f64(args.checkpoint_every));
    let (mut state, mut dedup) = match &args.state {
        Some(path) => {
            let (state, dedup) = State::open(path, builder, every).map_err(Failure::Run)?;
            (Some(state), dedup)
        }
        None => (None, builder.build().map_err(build_failure)?),
    };
    if let (Some(url), Some(true)) = (&args.redis, dedup.created_shared_filter()) {
        // A run after others that finds no filter is looking at a Redis that lost it (a
        // restart without persistence): every URL is new again, which must not go unsaid.
        eprintln!(
            "url-dedup: created the shared filter `{}` at {url}, empty: if earlier runs used \
             it, Redis has lost what they saw (restarted without persistence?) and their URLs \
             are printed again",
            args.redis_prefix
        );
    }

    let names: Vec<String> = sources
        .iter()
        .map(|s| {
            s.as_deref()
                .map_or("<stdin>".into(), |p| p.display().to_string())
        })
        .collect();
    let stdout = io::stdout();
    let mut emit = Emitter {
        out: io::BufWriter::with_capacity(1 << 16, stdout.lock()),
        explain: open_explain(args.explain.as_deref())?.map(|out| explainer(out, &args, &names)),
        // `--surt`'s key is the surt convention's canonical form.
        shown: if args.surt || args.canonical {
            Shown::Canonical
        } else {
            Shown::Line
        },
        stats: Stats::default(),
    };
    let progress = progress_bar(&args, input_bytes);

    let started = Instant::now();
    let decider_start = crate::stats::ThreadTimes::now();
    let mut results = pipeline::start(Plan {
        sources,
        max_len: args.max_len,
        exact: args.raw,
        // The workers canonicalize and hash as the deduplicator would: it is left only the
        // probes, on the one thread that decides in input order.
        preparer: dedup.preparer(),
        workers: workers(),
        hash_features: hash_features_on_workers(args.feature_hashing),
    });
    // Where the current input is: its index, the line number of the next line, and the bytes
    // of the inputs before it.
    let (mut source, mut number, mut done_bytes, mut source_bytes) = (0, 1u64, 0u64, 0u64);
    let mut pipe_closed = false;
    loop {
        let parsed = match results.next() {
            Message::Parsed(parsed) => *parsed,
            Message::Failed(error) => {
                // The lines read before the failure were decided, shown and journaled all
                // the same.
                emit.flush()?;
                if let Some(state) = state.as_mut() {
                    state.checkpoint(&dedup).map_err(Failure::Run)?;
                }
                return Err(Failure::Run(error));
            }
            Message::End => break,
        };
        if parsed.source != source {
            (source, number) = (parsed.source, 1);
            done_bytes += source_bytes;
        }
        source_bytes = parsed.block.consumed;
        let name = names.get(source).map_or("<stdin>", String::as_str);
        let mut flow = emit.decide(&mut dedup, name, number, &parsed, state.as_mut())?;
        number += parsed.entries.len() as u64;
        // A slow producer (`tail -f log | url-dedup`): show what has arrived now.
        if parsed.block.waiting && flow == Flow::Go {
            flow = emit.flush()?;
        }
        if flow == Flow::Go {
            flow = emit.checkpoint(&dedup, state.as_mut())?;
        }
        if let Some(bar) = &progress {
            bar.set_position(done_bytes + source_bytes);
        }
        results.recycle(parsed);
        if flow == Flow::PipeClosed {
            pipe_closed = true;
            break;
        }
    }
    if let Some(bar) = progress {
        bar.finish_and_clear();
    }
    let Emitter {
        mut out,
        mut explain,
        mut stats,
        ..
    } = emit;
    if !pipe_closed {
        match out.flush() {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => pipe_closed = true,
            other => other.map_err(write_err)?,
        }
    }
    if let Some(ex) = explain.as_mut() {
        ex.flush().map_err(write_err)?;
    }
    let elapsed = started.elapsed();
    stats.decider = crate::stats::ThreadTimes::now()
        .zip(decider_start)
        .map(|(end, start)| end.since(start));

    if stats.invalid > SHOWN_INVALID && args.explain.is_none() {
        eprintln!(
            "url-dedup: {} invalid lines in all ({} shown; --explain lists every one)",
            stats.invalid, SHOWN_INVALID
        );
    }
    let similar_fpr = args.similar_fpr.unwrap_or(args.fpr());
    if let Some(rate) = dedup.similarity_false_positive_rate()
        && rate > 10.0 * similar_fpr
    {
        // The similarity filter grows; its rate passes the target only if a layer could not
        // be allocated, and then URLs that differ from earlier ones in one feature only start
        // to be folded by chance. Say so, with the fix.
        eprintln!(
            "url-dedup: warning: the similarity filter could not grow (out of memory?): a URL \
             that differs from earlier ones in a single feature is now folded by chance with \
             probability {rate:.1e} (asked: {similar_fpr:.1e}); give -n the number of distinct \
             URLs ({} now) or a looser --similar-fpr",
            dedup.expected_urls(),
        );
    }
    if dedup.is_over_capacity() {
        eprintln!(
            "url-dedup: warning: the filter could not grow (out of memory?) and holds more URLs \
             than it was sized for; false positives are now above the requested rate"
        );
    }
    if let Some(state) = state {
        if pipe_closed {
            eprintln!("url-dedup: output closed early; state left as it was, so no URL is lost");
            state.abandon().map_err(Failure::Run)?;
        } else {
            state.finish(&dedup).map_err(Failure::Run)?;
        }
    }
    if args.stats {
        eprint!("{}", stats.report(&dedup, elapsed));
    }
    Ok(())
}

/// The hash key of `--key-file` or `URL_DEDUP_KEY`, if either is given.
fn hash_key(args: &Args) -> Result<Option<url_dedup::bloom::HashKey>, Failure> {
    let (text, from) = match (&args.key_file, std::env::var("URL_DEDUP_KEY")) {
        (Some(path), _) => (
            std::fs::read_to_string(path).map_err(|e| {
                Failure::Run(format!("cannot read key file {}: {e}", path.display()))
            })?,
            format!("key file {}", path.display()),
        ),
        (None, Ok(text)) => (text, "URL_DEDUP_KEY".to_owned()),
        (None, Err(_)) => return Ok(None),
    };
    text.parse()
        .map(Some)
        .map_err(|_| Failure::Usage(format!("{from} does not hold 32 hex digits")))
}

/// A deduplicator that could not be built: out-of-range options are a usage error, anything
/// else (an unreachable Redis, no memory) a failed run.
fn build_failure(e: url_dedup::Error) -> Failure {
    use url_dedup::Error;
    match e {
        Error::Filter(url_dedup::bloom::Error::InvalidParameters(_))
        | Error::Segmented(url_dedup::segmented::Error::InvalidParameters(_)) => {
            Failure::Usage(e.to_string())
        }
        e => Failure::Run(e.to_string()),
    }
}

/// Refuses an output path (`--explain=FILE`, `--state FILE` and its companions) that is one
/// of the input files: writing it would destroy the input before it is read.
fn refuse_writing_inputs(args: &Args, sources: &[Option<PathBuf>]) -> Result<(), Failure> {
    let inputs: Vec<FileId> = sources
        .iter()
        .filter_map(|s| FileId::of(s.as_deref().unwrap_or(Path::new("/dev/stdin"))))
        .collect();
    let explain = args
        .explain
        .iter()
        .filter(|p| p.as_os_str() != "-")
        .map(|p| ("--explain", p.clone()));
    let state = args.state.iter().flat_map(|p| {
        [
            ("--state", p.clone()),
            ("--state", state::suffixed(p, ".journal")),
        ]
    });
    for (option, path) in explain.chain(state) {
        if FileId::of(&path).is_some_and(|id| inputs.contains(&id)) {
            return Err(Failure::Usage(format!(
                "{option} {} is also an input file; refusing to write over it",
                path.display()
            )));
        }
    }
    Ok(())
}

/// What identifies a file whatever the path that names it.
#[derive(Debug, PartialEq, Eq)]
struct FileId(#[cfg(unix)] (u64, u64), #[cfg(not(unix))] PathBuf);

impl FileId {
    fn of(path: &Path) -> Option<Self> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let m = std::fs::metadata(path).ok()?;
            // Terminals, pipes and /dev/null are not files anyone would lose.
            m.is_file().then(|| Self((m.dev(), m.ino())))
        }
        #[cfg(not(unix))]
        {
            path.canonicalize().ok().map(Self)
        }
    }
}

/// Threads that split and canonicalize input: one per core. The deciding thread and the
/// reader each leave part of a core idle, which the scheduler hands to a worker; with one
/// worker fewer than cores that time went unused (on 2 cores the canonicalizing run of the
/// 10M-line benchmark list took 1.60 s with one worker, 1.48-1.55 s with two: see
/// docs/benchmarks.md).
fn workers() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// Whether the workers hash the similarity features of every line (`--similar`), leaving the
/// deciding thread only the tests of their bits. Splitting a URL and hashing the crawler
/// preset's seven values is most of a similarity check; the deciding thread does it for the URLs it
/// calls new, the workers for every line, duplicates included. It pays where the workers have
/// cores to spare; on two cores both ways take the same time, and hashing on the workers
/// takes more CPU time (docs/benchmarks.md, "--feature-hashing").
fn hash_features_on_workers(choice: FeatureHashing) -> bool {
    match choice {
        FeatureHashing::Workers => true,
        FeatureHashing::Decider => false,
        FeatureHashing::Auto => workers() >= 3,
    }
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

/// Lines in the inputs when every one is a regular file, from the size of each and the
/// length of the lines in its first 64 KiB.
fn estimated_lines(sources: &[Option<PathBuf>]) -> Option<u64> {
    sources
        .iter()
        .map(|s| {
            let path = s.as_deref().unwrap_or(Path::new("/dev/stdin"));
            let size = std::fs::metadata(path).ok().filter(|m| m.is_file())?.len();
            let mut head = Vec::with_capacity(1 << 16);
            File::open(path)
                .ok()?
                .take(1 << 16)
                .read_to_end(&mut head)
                .ok()?;
            let lines = head.iter().filter(|&&b| b == b'\n').count().max(1) as u64;
            Some(size / (head.len() as u64 / lines).max(1))
        })
        .sum()
}

/// `--explain`'s rows for the inputs `names`, as the options decide lines.
fn explainer<W: Write>(out: W, args: &Args, names: &[String]) -> Explainer<W> {
    let memory = match (&args.redis, &args.state) {
        (Some(_), _) => Memory::Shared,
        (None, Some(_)) => Memory::State,
        (None, None) => Memory::ThisRun,
    };
    let same = match (args.raw, args.surt) {
        (true, _) => "same line",
        (false, true) => "same SURT key",
        (false, false) => "same canonical form",
    };
    Explainer::new(out, names, memory, same, config::preset(args))
}

fn open_explain(path: Option<&Path>) -> Result<Option<Box<dyn Write>>, Failure> {
    Ok(match path {
        None => None,
        Some(p) if p.as_os_str() == "-" => Some(Box::new(io::BufWriter::new(io::stderr()))),
        Some(p) => Some(Box::new(io::BufWriter::new(File::create(p).map_err(
            |e| Failure::Run(format!("cannot create explain file {}: {e}", p.display())),
        )?))),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_estimated_from_the_first_of_each_file() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, "https://a.example/0123456789\n".repeat(10_000)).unwrap();
        std::fs::write(&b, "https://b.example/\n".repeat(3)).unwrap();
        assert_eq!(estimated_lines(&[Some(a), Some(b)]), Some(10_003));
    }
}
