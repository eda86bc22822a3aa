//! The deduplication loop: inputs are read, canonicalized and hashed on every core (see
//! [`pipeline`]), then each block is decided in input order with one call, printed,
//! explained, and journaled.

mod pipeline;

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use url_dedup::{Decision, Outcome, UrlDedup};

use self::pipeline::{Entry, Key, Message, Parsed, Plan};
use crate::Failure;
use crate::args::{Args, FeatureHashing};
use crate::config;
use crate::explain::{Explainer, Memory, Place};
use crate::state::{self, State};
use crate::stats::Stats;

/// How many invalid lines are shown on stderr without `--explain`.
const SHOWN_INVALID: u64 = 5;

/// Keys decided with one call to the deduplicator. With `--redis` every call is a network
/// round trip, so batches of 1,024 turn a thousand round trips into one; in memory the
/// segmented filter overlaps the cache misses of a batch. Past a thousand the round trip is
/// already a small share of the cost.
const BATCH_LINES: usize = 1_024;

/// Runs the command.
pub(crate) fn run(args: Args) -> Result<(), Failure> {
    let sources = sources(&args.files);
    refuse_writing_inputs(&args, &sources)?;
    config::check_combinations(&args)?;
    let input_bytes = input_size(&sources);
    let mut builder = config::builder(&args, estimated_lines(&sources));
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
    let similar_fpr = args.similar_fpr.unwrap_or(args.fpr);
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

/// Whether to go on after writing a batch's results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flow {
    Go,
    /// Standard output was closed by its reader (`url-dedup urls.txt | head`).
    PipeClosed,
}

/// What is printed for a kept URL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shown {
    /// The input line, as it was.
    Line,
    /// Its canonical form (`--canonical`; the SURT key with `--surt`).
    Canonical,
}

/// Where decisions go: kept lines to `out`, the reasons for the others to `explain` (or the
/// first few invalid lines to stderr), counts to `stats`, decided keys to the state.
struct Emitter<O, X> {
    out: O,
    explain: Option<Explainer<X>>,
    shown: Shown,
    stats: Stats,
}

impl<O: Write, X: Write> Emitter<O, X> {
    /// Decides a block's lines from input `name`, the first of them line `number`, in calls
    /// of up to [`BATCH_LINES`] keys, and writes the results.
    fn decide(
        &mut self,
        dedup: &mut UrlDedup,
        name: &str,
        number: u64,
        parsed: &Parsed,
        mut state: Option<&mut State>,
    ) -> Result<Flow, Failure> {
        let entries = &parsed.entries;
        let mut start = 0;
        let mut keys = Vec::with_capacity(BATCH_LINES.min(entries.len()));
        let new_before = self.stats.new;
        if self.stats.rate_counted.is_none() {
            self.stats.rate_counted = Some(dedup.false_positive_rate());
        }
        while start < entries.len() {
            keys.clear();
            let mut end = start;
            while let Some(entry) = entries.get(end)
                && keys.len() < BATCH_LINES
            {
                if let Entry::Text(range, key, hashed) = entry
                    && let Some((key, digest)) = parsed.key(range, key)
                {
                    keys.push((key, digest, parsed.hashed(*hashed)));
                }
                end += 1;
            }
            let decided = if keys.is_empty() {
                Vec::new()
            } else if parsed.features.is_some() {
                dedup.check_and_insert_prepared_with_features_mut(keys.iter().copied())
            } else {
                dedup.check_and_insert_prepared_mut(keys.iter().map(|&(k, d, _)| (k, d)))
            };
            let flow = self.emit(
                (name, number + start as u64),
                parsed,
                &entries[start..end],
                decided,
                state.as_deref_mut(),
            );
            if !matches!(flow, Ok(Flow::Go)) {
                self.count_expected_drops(dedup, new_before);
                return flow.map(|_| Flow::PipeClosed);
            }
            start = end;
        }
        self.count_expected_drops(dedup, new_before);
        Ok(Flow::Go)
    }

    /// Each URL found new since the count was `new_before` was a lookup that could have been
    /// a false positive at the rate of the moment; summed, the expected number of distinct
    /// URLs dropped by mistake. Counted once per block, each new URL at the mean of the rates
    /// before and after the block: the rate grows with the URLs held, faster as the filter
    /// fills, so the mean is above the true sum and close to it. Reading the rate sums a
    /// model over the filter's layers, which once per batch of keys took 2% of the deciding
    /// thread.
    fn count_expected_drops(&mut self, dedup: &UrlDedup, new_before: u64) {
        let new = self.stats.new - new_before;
        if new > 0 {
            let after = dedup.false_positive_rate();
            let before = self.stats.rate_counted.unwrap_or(after);
            if after.is_finite() && before.is_finite() {
                self.stats.expected_false_drops += new as f64 * (before + after) / 2.0;
            }
            self.stats.rate_counted = Some(after);
        }
    }

    /// Writes the results of `entries` of a block, the first of them line `number` of input
    /// `name`, in input order, one entry of `decided` per line with a key, as if each line
    /// had been decided and written in turn; records every decided key.
    fn emit(
        &mut self,
        (name, number): (&str, u64),
        parsed: &Parsed,
        entries: &[Entry],
        decided: Vec<Decision<Cow<'_, [u8]>>>,
        mut state: Option<&mut State>,
    ) -> Result<Flow, Failure> {
        let mut decided = decided.into_iter();
        for (number, entry) in (number..).zip(entries) {
            self.stats.lines += 1;
            let place = Place {
                source: parsed.source,
                line: number,
            };
            let (reason, line) = match entry {
                Entry::Empty => {
                    self.stats.empty += 1;
                    continue;
                }
                Entry::TooLong(len) => (format!("line is {len} bytes, over --max-len"), None),
                Entry::Control(0) => ("contains a NUL byte".to_owned(), None),
                Entry::Control(_) => (
                    "contains a carriage return inside the line".to_owned(),
                    None,
                ),
                Entry::Text(range, Key::Invalid(e), _) => (e.to_string(), Some(parsed.line(range))),
                Entry::Text(range, ..) => {
                    let text = parsed.line(range);
                    let result = decided.next().unwrap_or_else(|| {
                        Err(url_dedup::Error::Store("no answer for this line".into()))
                    });
                    match result {
                        Ok((Outcome::Duplicate, key)) => {
                            self.stats.duplicate += 1;
                            if let Some(ex) = self.explain.as_mut() {
                                ex.duplicate(place, text, &key).map_err(write_err)?;
                            }
                            continue;
                        }
                        Ok((Outcome::Similar(why), key)) => {
                            self.stats.similar += 1;
                            if let Some(state) = state.as_deref_mut() {
                                state.record(&key);
                            }
                            if let Some(ex) = self.explain.as_mut() {
                                ex.similar(place, text, &key, &why.to_string())
                                    .map_err(write_err)?;
                            }
                            continue;
                        }
                        // `New`, and outcomes added in later versions: kept, never lost.
                        Ok((_, key)) => {
                            self.stats.new += 1;
                            if let Err(e) = self.write_kept(text, &key) {
                                return output_failed(e);
                            }
                            // Recorded once written: a key in the journal is never printed
                            // again, so it must not get there before its line did.
                            if let Some(state) = state.as_deref_mut() {
                                state.record(&key);
                            }
                            if let Some(ex) = self.explain.as_mut() {
                                ex.kept(place, &key);
                            }
                            continue;
                        }
                        Err(e @ (url_dedup::Error::InvalidUrl(_) | url_dedup::Error::NotUtf8)) => {
                            (e.to_string(), Some(text))
                        }
                        Err(e) => {
                            // The filter could not answer (a shared Redis went away for longer
                            // than the retry budget): skipping the line would drop a URL that
                            // may be new, so stop here. What was printed is complete up to
                            // the line before this one.
                            let _ = self.out.flush();
                            return Err(Failure::Run(format!(
                                "{name}:{number}: {e}; stopped here, the lines before were decided and written"
                            )));
                        }
                    }
                }
            };
            self.stats.invalid += 1;
            if let Some(ex) = self.explain.as_mut() {
                ex.invalid(place, line, &reason).map_err(write_err)?;
            } else if self.stats.invalid <= SHOWN_INVALID {
                eprintln!("url-dedup: {name}:{number}: skipped: {reason}");
            }
        }
        Ok(Flow::Go)
    }

    /// Prints a kept URL as `--canonical`/`--surt` ask.
    fn write_kept(&mut self, line: &[u8], key: &[u8]) -> io::Result<()> {
        let shown = match self.shown {
            Shown::Line => line,
            Shown::Canonical => key,
        };
        self.out.write_all(shown)?;
        self.out.write_all(b"\n")
    }

    /// Pushes out what was written so far, so a reader of a slow stream sees it now.
    fn flush(&mut self) -> Result<Flow, Failure> {
        if let Err(e) = self.out.flush() {
            return output_failed(e);
        }
        if let Some(ex) = self.explain.as_mut() {
            ex.flush().map_err(write_err)?;
        }
        Ok(Flow::Go)
    }

    /// When a checkpoint is due: flushes the output, then journals the keys it covers.
    fn checkpoint(&mut self, dedup: &UrlDedup, state: Option<&mut State>) -> Result<Flow, Failure> {
        let Some(state) = state.filter(|s| s.checkpoint_due()) else {
            return Ok(Flow::Go);
        };
        let flow = self.flush()?;
        if flow == Flow::Go {
            state.checkpoint(dedup).map_err(Failure::Run)?;
        }
        Ok(flow)
    }
}

/// A write to standard output failed: a reader that went away (`| head`) ends the run
/// quietly, anything else is an error.
fn output_failed(e: io::Error) -> Result<Flow, Failure> {
    if e.kind() == io::ErrorKind::BrokenPipe {
        return Ok(Flow::PipeClosed);
    }
    Err(Failure::Run(format!("cannot write output: {e}")))
}

fn write_err(e: io::Error) -> Failure {
    Failure::Run(format!("cannot write: {e}"))
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
    use crate::lines::{Block, BlockReader, Line};
    use url_dedup::canon::{Canonicalizer, Policy};
    use url_dedup::similarity::Preset;

    /// Decides the one text line of `parsed` (given raw, with no canonicalizer) through a
    /// canonicalizing deduplicator, as the command did before it had workers.
    fn dedup_line(dedup: &UrlDedup, parsed: &Parsed) -> Vec<Decision<Cow<'static, [u8]>>> {
        parsed
            .entries
            .iter()
            .filter_map(|e| match e {
                Entry::Text(range, ..) => Some(parsed.line(range)),
                _ => None,
            })
            .flat_map(|line| dedup.check_and_insert_batch_bytes([line]))
            .map(|d| d.map(|(outcome, key)| (outcome, Cow::Owned(key.into_owned()))))
            .collect()
    }

    /// An emitter of input `name` that explains to memory.
    fn emitter(name: &str) -> Emitter<Vec<u8>, Vec<u8>> {
        let names = [name.to_owned()];
        Emitter {
            out: Vec::new(),
            explain: Some(Explainer::new(
                Vec::new(),
                &names,
                Memory::ThisRun,
                "same",
                None,
            )),
            shown: Shown::Line,
            stats: Stats::default(),
        }
    }

    /// What was explained.
    fn explained(emit: Emitter<Vec<u8>, Vec<u8>>) -> String {
        String::from_utf8(emit.explain.unwrap().into_inner()).unwrap()
    }

    /// A block of `text`, split and canonicalized as the workers do, with `--max-len` 8192.
    fn parsed(text: &[u8], dedup: &UrlDedup) -> Parsed {
        let block = Block {
            bytes: text.to_vec(),
            at_start: true,
            ..Block::default()
        };
        Parsed::new(0, block, (8192, false), &dedup.preparer(), true)
    }

    #[test]
    fn a_batch_is_written_in_input_order() {
        let mut dedup = UrlDedup::builder().expected_urls(100).build().unwrap();
        let mut text =
            b"https://a.example/\n\nhttps://A.example\nhttps://\xff.example/\n/relative\n".to_vec();
        text.extend([b'x'; 9_000]);
        text.extend(b"\n\0\nhttps://b.example/\n");
        let parsed = parsed(&text, &dedup);
        assert_eq!(parsed.entries.len(), 8);
        let mut emit = emitter("in.txt");
        assert_eq!(
            emit.decide(&mut dedup, "in.txt", 1, &parsed, None),
            Ok(Flow::Go)
        );
        assert_eq!(
            String::from_utf8(emit.out.clone()).unwrap(),
            "https://a.example/\nhttps://b.example/\n"
        );
        let s = &emit.stats;
        let counts = (s.lines, s.new, s.duplicate, s.invalid, s.empty);
        let expected_false_drops = s.expected_false_drops;
        let explain = explained(emit);
        let explain: Vec<&str> = explain.lines().collect();
        assert_eq!(
            explain[0],
            "duplicate\tin.txt:3\thttps://A.example\tin.txt:1\tsame"
        );
        assert!(
            explain[1].starts_with("invalid\tin.txt:4\thttps://\\xFF.example/\t-\tnot valid UTF-8")
        );
        assert!(explain[2].starts_with("invalid\tin.txt:5\t/relative\t-\tinvalid URL"));
        assert_eq!(
            explain[3],
            "invalid\tin.txt:6\t-\t-\tline is 9000 bytes, over --max-len"
        );
        assert_eq!(explain[4], "invalid\tin.txt:7\t-\t-\tcontains a NUL byte");
        assert_eq!(counts, (8, 2, 1, 4, 1));
        assert!(expected_false_drops > 0.0 && expected_false_drops < 1e-6);
    }

    /// The expected loss is counted once per block; it must stay the sum, over the new URLs,
    /// of the rate when each was looked up, give or take what a block's growth adds. Both
    /// filters share one fixed hash key, so a false positive drops the same URL from both
    /// sums: with random keys, about one run in eight had a URL new to one filter only.
    #[test]
    fn the_expected_loss_is_the_rate_summed_over_new_urls() {
        let build = || {
            UrlDedup::builder()
                .expected_urls(2_000)
                .false_positive_rate(1e-3)
                .hash_key(url_dedup::bloom::HashKey::from_bytes([7; 16]))
                .build()
                .unwrap()
        };
        let (one_at_a_time, mut dedup) = (build(), build());
        let mut reference = 0.0;
        let mut emit = emitter("in.txt");
        for block in 0..6 {
            let urls: Vec<String> = (0..1_000)
                .map(|i| format!("https://example.com/{block}/{i}"))
                .collect();
            for url in &urls {
                let rate = one_at_a_time.false_positive_rate();
                if one_at_a_time.check_and_insert(url).unwrap().is_new() {
                    reference += rate;
                }
            }
            let text: String = urls.iter().map(|u| format!("{u}\n")).collect();
            let parsed = parsed(text.as_bytes(), &dedup);
            assert_eq!(
                emit.decide(&mut dedup, "in.txt", 1, &parsed, None),
                Ok(Flow::Go)
            );
        }
        let counted = emit.stats.expected_false_drops;
        assert!(
            reference <= counted && counted <= 1.2 * reference,
            "counted {counted:e}, one URL at a time {reference:e}"
        );
    }

    #[test]
    fn a_block_is_decided_in_calls_of_bounded_size_with_its_line_numbers() {
        let mut dedup = UrlDedup::builder().expected_urls(10_000).build().unwrap();
        let mut text = String::new();
        for i in 0..2_500 {
            text.push_str(&format!("https://example.com/{}\n", i % 2_000));
            if i % 1_000 == 999 {
                text.push_str("nonsense\n");
            }
        }
        let parsed = parsed(text.as_bytes(), &dedup);
        let mut emit = emitter("in");
        assert_eq!(
            emit.decide(&mut dedup, "in", 101, &parsed, None),
            Ok(Flow::Go)
        );
        assert_eq!(
            String::from_utf8(emit.out.clone()).unwrap().lines().count(),
            2_000
        );
        assert_eq!((emit.stats.new, emit.stats.duplicate), (2_000, 500));
        let explain = explained(emit);
        let invalid: Vec<&str> = explain
            .lines()
            .filter(|l| l.starts_with("invalid"))
            .collect();
        assert_eq!(invalid.len(), 2);
        assert!(
            invalid[0].starts_with("invalid\tin:1101\t"),
            "{}",
            invalid[0]
        );
        assert!(
            invalid[1].starts_with("invalid\tin:2102\t"),
            "{}",
            invalid[1]
        );
        // A duplicate names the line it repeats: line 2,103 is the second
        // `https://example.com/0`, the first was line 101.
        assert!(
            explain.contains("duplicate\tin:2103\thttps://example.com/0\tin:101\tsame\n"),
            "{explain}"
        );
    }

    #[test]
    fn a_failed_store_stops_at_its_first_line_after_writing_the_lines_before() {
        let dedup = UrlDedup::builder().build().unwrap();
        let parsed = parsed(
            b"https://a.example/\nnonsense\nhttps://b.example/\nhttps://c.example/\n",
            &dedup,
        );
        let decide = |url: &'static [u8]| dedup.check_and_insert_batch_bytes([url]).remove(0);
        let store_failed = || Err(url_dedup::Error::Store("server went away".into()));
        let mut emit = emitter("<stdin>");
        let flow = emit.emit(
            ("<stdin>", 1),
            &parsed,
            &parsed.entries,
            vec![
                decide(b"https://a.example/"),
                store_failed(),
                store_failed(),
            ],
            None,
        );
        let Err(Failure::Run(message)) = flow else {
            panic!("expected a run failure, got {flow:?}");
        };
        assert!(
            message.starts_with("<stdin>:3: filter store failed: server went away"),
            "{message}"
        );
        assert_eq!(
            String::from_utf8(emit.out.clone()).unwrap(),
            "https://a.example/\n"
        );
        assert_eq!((emit.stats.new, emit.stats.invalid), (1, 1));
        let explain = explained(emit);
        assert!(
            explain.starts_with("invalid\t<stdin>:2\tnonsense\t-\tinvalid URL"),
            "{explain}"
        );
        assert_eq!(explain.lines().count(), 1);
    }

    #[test]
    fn a_closed_output_stops_the_batch() {
        struct Closed;
        impl Write for Closed {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> io::Result<()> {
                Err(io::ErrorKind::BrokenPipe.into())
            }
        }
        let mut dedup = UrlDedup::builder().expected_urls(100).build().unwrap();
        let mut emit = Emitter {
            out: Closed,
            explain: None::<Explainer<Vec<u8>>>,
            shown: Shown::Line,
            stats: Stats::default(),
        };
        let parsed = parsed(b"https://a.example/\nhttps://b.example/\n", &dedup);
        assert_eq!(
            emit.decide(&mut dedup, "-", 1, &parsed, None),
            Ok(Flow::PipeClosed)
        );
        assert_eq!(emit.stats.lines, 1);
        assert_eq!(emit.flush(), Ok(Flow::PipeClosed));
    }

    /// Random lines of every kind the command meets: canonical and messy spellings of a few
    /// pages (so repeats are common), invalid URLs, other encodings, control bytes, blank and
    /// too-long lines, `\r\n` endings.
    fn random_input(seed: u64, lines: usize) -> Vec<u8> {
        let mut state = seed;
        let mut next = move |n: u64| {
            state = url_dedup::bloom::hash::mix64(state);
            state % n
        };
        let mut input = Vec::new();
        for _ in 0..lines {
            let page = next(40);
            let line = match next(13) {
                0..=4 => format!("https://site{}.example/p/{page}", page % 3),
                // Similar to the line above (a presentation parameter) under `--similar`.
                12 => format!("https://site{}.example/p/{page}?sort=name", page % 3),
                5 => format!("HTTPS://Site{}.EXAMPLE:443/p/./{page}#top", page % 3),
                6 => format!("https://site{}.example/p/{page}?utm_source=x", page % 3),
                7 => "not a url".to_owned(),
                8 => "   ".to_owned(),
                9 => "x".repeat(70),
                10 => format!("https://site.example/caf\u{e9}{page}"),
                _ => format!("https://a.example/{page}\0"),
            };
            input.extend_from_slice(line.as_bytes());
            if next(5) == 0 {
                input.extend_from_slice(b"\xff");
            }
            input.extend_from_slice(if next(3) == 0 { b"\r\n" } else { b"\n" });
        }
        input
    }

    /// What the command printed and explained, and its counts.
    type Run = (String, String, (u64, u64, u64, u64, u64));

    fn outcome(emit: Emitter<Vec<u8>, Vec<u8>>) -> Run {
        let s = &emit.stats;
        let counts = (s.lines, s.new, s.duplicate, s.invalid, s.empty);
        (
            String::from_utf8_lossy(&emit.out).into_owned(),
            emit.explain
                .map(|e| String::from_utf8_lossy(&e.into_inner()).into_owned())
                .unwrap_or_default(),
            counts,
        )
    }

    #[test]
    fn the_pipeline_decides_exactly_as_one_line_at_a_time() {
        const MAX_LEN: usize = 60;
        let key = url_dedup::bloom::HashKey::from_bytes([7; 16]);
        let mut policy = Policy::default();
        policy.max_len = MAX_LEN;
        let canon = Canonicalizer::new(policy);
        // Splits lines without canonicalizing: `dedup_line` gives each line to the
        // deduplicator whole.
        let raw = UrlDedup::builder()
            .no_canonicalization()
            .build()
            .unwrap()
            .preparer();
        // With similarity, its filter sized for a few URLs so that it grows: the features are
        // hashed on the workers and only tested on the deciding thread.
        let build = |similar: bool| {
            let b = UrlDedup::builder()
                .hash_key(key)
                .canonicalization(canon.policy().clone());
            match similar {
                true => b.similarity(Preset::Crawler).expected_urls(8),
                false => b,
            }
            .build()
            .unwrap()
        };
        for (seed, similar) in (0..40).map(|seed| (seed, seed % 2 == 1)) {
            let input = random_input(seed, 400);
            // One line at a time, through a deduplicator that canonicalizes.
            let one_by_one = build(similar);
            let mut emit = emitter("in");
            let whole = Block {
                bytes: input.clone(),
                at_start: true,
                ..Block::default()
            };
            for (number, line) in (1..).zip(whole.lines(MAX_LEN)) {
                let mut bytes = match line {
                    Line::Text(t) => t.as_bytes().to_vec(),
                    Line::Bytes(b) => b.to_vec(),
                    Line::Empty => b" ".to_vec(),
                    Line::TooLong(len) => "x".repeat(len).into_bytes(),
                    Line::Control(c) => vec![b'a', c],
                };
                bytes.push(b'\n');
                let one = Parsed::new(
                    0,
                    Block {
                        bytes,
                        at_start: true,
                        ..Block::default()
                    },
                    (MAX_LEN, false),
                    &raw,
                    false,
                );
                let decided = dedup_line(&one_by_one, &one);
                emit.emit(("in", number), &one, &one.entries, decided, None)
                    .unwrap();
            }
            let want = outcome(emit);

            // Blocks of random sizes, canonicalized and hashed apart, decided on the canonical
            // forms and their digests.
            let mut blocks = build(similar);
            let mut emit = emitter("in");
            let mut reader = BlockReader::new(&input[..], false, 1 + seed as usize * 37, MAX_LEN);
            let mut number = 1;
            while let Some(block) = reader.next_block().unwrap() {
                // Features hashed by the workers for some blocks and by the deciding thread
                // for the others: either way gives the same answers.
                let hash_features = number % 3 != 0;
                let parsed = Parsed::new(
                    0,
                    block,
                    (MAX_LEN, false),
                    &blocks.preparer(),
                    hash_features,
                );
                emit.decide(&mut blocks, "in", number, &parsed, None)
                    .unwrap();
                number += parsed.entries.len() as u64;
            }
            if similar {
                assert!(want.1.contains("similar"), "seed {seed} folds nothing");
            }
            assert_eq!(outcome(emit), want, "seed {seed}");
        }
    }

    #[test]
    fn lines_are_estimated_from_the_first_of_each_file() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, "https://a.example/0123456789\n".repeat(10_000)).unwrap();
        std::fs::write(&b, "https://b.example/\n".repeat(3)).unwrap();
        assert_eq!(estimated_lines(&[Some(a), Some(b)]), Some(10_003));
    }
}
