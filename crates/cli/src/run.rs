//! The deduplication loop: read a batch of lines, decide it with one call, print, explain.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, IsTerminal, Read, Write};
use std::ops::Range;
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

/// Input lines decided with one call to the deduplicator. With `--redis` every call is a
/// network round trip, so batches of 1,024 turn a thousand round trips into one; in memory the
/// segmented filter overlaps the cache misses of a batch. Past a thousand the round trip is
/// already a small share of the cost, while a batch's lines (up to `--max-len` bytes each) are
/// held in memory until it is decided.
const BATCH_LINES: usize = 1_024;

/// Bytes read from an input at a time.
const READ_BUFFER: usize = 1 << 16;

/// Runs the command; `Err` carries the message for exit status 1.
pub(crate) fn run(args: Args) -> Result<(), String> {
    let sources = sources(&args.files);
    let input_bytes = input_size(&sources);
    let builder = builder(&args, input_bytes);
    let dedup = state::load_or_build(builder, args.state.as_deref())?;

    let stdout = io::stdout();
    let mut emit = Emitter {
        out: io::BufWriter::with_capacity(1 << 16, stdout.lock()),
        explain: open_explain(args.explain.as_deref())?,
        canonical: args.canonical,
        stats: Stats::default(),
    };
    let progress = progress_bar(&args, input_bytes);

    let started = Instant::now();
    let mut batch = Batch::default();
    let mut done_bytes = 0u64;
    let mut pipe_closed = false;
    'sources: for source in &sources {
        let (reader, streaming) = open(source.as_deref())?;
        let name = source
            .as_deref()
            .map_or("<stdin>".into(), |p| p.display().to_string());
        let mut lines = LineReader::new(reader, READ_BUFFER, args.max_len);
        let mut number = 0u64;
        loop {
            // A slow producer (`tail -f log | url-dedup`): decide and show what has arrived
            // rather than wait for a full batch.
            let waiting = streaming && !batch.is_empty() && !lines.next_line_is_buffered();
            if batch.len() >= BATCH_LINES || waiting {
                let mut flow = emit.decide(&dedup, &name, &batch)?;
                batch.clear();
                if waiting && flow == Flow::Go {
                    flow = emit.flush()?;
                }
                if let Some(bar) = &progress {
                    bar.set_position(done_bytes + lines.consumed());
                }
                if flow == Flow::PipeClosed {
                    pipe_closed = true;
                    break 'sources;
                }
            }
            let line = match lines.next_line() {
                Ok(line) => line,
                Err(e) => {
                    // The lines read before the failure are decided and shown all the same.
                    emit.decide(&dedup, &name, &batch)?;
                    return Err(format!("cannot read {name}: {e}"));
                }
            };
            let Some(line) = line else { break };
            number += 1;
            batch.push(number, &line);
        }
        let flow = emit.decide(&dedup, &name, &batch)?;
        batch.clear();
        if flow == Flow::PipeClosed {
            pipe_closed = true;
            break 'sources;
        }
        done_bytes += lines.consumed();
        if let Some(bar) = &progress {
            bar.set_position(done_bytes);
        }
    }
    if let Some(bar) = progress {
        bar.finish_and_clear();
    }
    let Emitter {
        mut out,
        mut explain,
        stats,
        ..
    } = emit;
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

/// Opens one input (`None` is standard input). The flag tells whether it may be a slow
/// stream (a pipe, a terminal, a socket) rather than a regular file, which never makes a
/// reader wait.
fn open(source: Option<&Path>) -> Result<(Box<dyn Read>, bool), String> {
    let streaming = |m: io::Result<std::fs::Metadata>| !m.is_ok_and(|m| m.is_file());
    Ok(match source {
        None => (
            Box::new(io::stdin().lock()),
            streaming(std::fs::metadata("/dev/stdin")),
        ),
        Some(path) => {
            let file =
                File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let streaming = streaming(file.metadata());
            (Box::new(file), streaming)
        }
    })
}

/// Lines read and not yet decided, in input order.
#[derive(Debug, Default)]
struct Batch {
    /// The text of every [`Kind::Text`] line, back to back.
    text: String,
    lines: Vec<Pending>,
}

/// One line of a [`Batch`] and its line number in its input.
#[derive(Debug)]
struct Pending {
    number: u64,
    kind: Kind,
}

/// [`Line`] with its text moved into the batch.
#[derive(Debug)]
enum Kind {
    Text(Range<usize>),
    Empty,
    TooLong(usize),
    NotUtf8,
}

impl Batch {
    fn push(&mut self, number: u64, line: &Line<'_>) {
        let kind = match *line {
            Line::Text(text) => {
                let start = self.text.len();
                self.text.push_str(text);
                Kind::Text(start..self.text.len())
            }
            Line::Empty => Kind::Empty,
            Line::TooLong(len) => Kind::TooLong(len),
            Line::NotUtf8 => Kind::NotUtf8,
        };
        self.lines.push(Pending { number, kind });
    }

    fn len(&self) -> usize {
        self.lines.len()
    }

    fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// The text lines, in order: what the deduplicator decides.
    fn texts(&self) -> impl Iterator<Item = &str> {
        self.lines.iter().filter_map(|p| match &p.kind {
            Kind::Text(range) => Some(&self.text[range.clone()]),
            _ => None,
        })
    }

    fn clear(&mut self) {
        self.text.clear();
        self.lines.clear();
    }
}

/// Whether to go on after writing a batch's results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flow {
    Go,
    /// Standard output was closed by its reader (`url-dedup urls.txt | head`).
    PipeClosed,
}

/// Where decisions go: kept lines to `out`, the reasons for the others to `explain` (or the
/// first few invalid lines to stderr), counts to `stats`.
struct Emitter<O, X> {
    out: O,
    explain: Option<X>,
    /// `--canonical`: print the canonical form of a kept URL rather than the line.
    canonical: bool,
    stats: Stats,
}

impl<O: Write, X: Write> Emitter<O, X> {
    /// Decides the batch's lines from input `name` with one call and writes the results.
    fn decide(&mut self, dedup: &UrlDedup, name: &str, batch: &Batch) -> Result<Flow, String> {
        if batch.is_empty() {
            return Ok(Flow::Go);
        }
        let decided = dedup.check_and_insert_batch_canonical(batch.texts());
        self.emit(name, batch, decided)
    }

    /// Writes the results of a batch in input order, one entry of `decided` per text line, as
    /// if each line had been decided and written in turn.
    fn emit(
        &mut self,
        name: &str,
        batch: &Batch,
        decided: Vec<Result<(Outcome, Cow<'_, str>), url_dedup::Error>>,
    ) -> Result<Flow, String> {
        let mut decided = decided.into_iter();
        for line in &batch.lines {
            self.stats.lines += 1;
            let reason = match &line.kind {
                Kind::Empty => {
                    self.stats.empty += 1;
                    continue;
                }
                Kind::TooLong(len) => format!("line is {len} bytes, over --max-len"),
                Kind::NotUtf8 => "not valid UTF-8".to_owned(),
                Kind::Text(range) => {
                    let text = &batch.text[range.clone()];
                    let result = decided.next().unwrap_or_else(|| {
                        Err(url_dedup::Error::Store("no answer for this line".into()))
                    });
                    match result {
                        Ok((Outcome::Duplicate, _)) => {
                            self.stats.duplicate += 1;
                            if let Some(ex) = self.explain.as_mut() {
                                writeln!(ex, "duplicate\t{text}").map_err(write_err)?;
                            }
                            continue;
                        }
                        Ok((Outcome::Similar(why), _)) => {
                            self.stats.similar += 1;
                            if let Some(ex) = self.explain.as_mut() {
                                writeln!(ex, "similar\t{text}\t{why}").map_err(write_err)?;
                            }
                            continue;
                        }
                        // `New`, and outcomes added in later versions: kept, never lost.
                        Ok((_, canonical)) => {
                            self.stats.new += 1;
                            let shown = if self.canonical { &*canonical } else { text };
                            if let Err(e) = writeln!(self.out, "{shown}") {
                                return output_failed(e);
                            }
                            continue;
                        }
                        Err(e @ url_dedup::Error::InvalidUrl(_)) => e.to_string(),
                        Err(e) => {
                            // The filter could not answer (a shared Redis went away for longer
                            // than the retry budget): skipping the line would drop a URL that
                            // may be new, so stop here. What was printed is complete up to
                            // the line before this one.
                            let number = line.number;
                            let _ = self.out.flush();
                            return Err(format!(
                                "{name}:{number}: {e}; stopped here, the lines before were decided and written"
                            ));
                        }
                    }
                }
            };
            self.stats.invalid += 1;
            let number = line.number;
            if let Some(ex) = self.explain.as_mut() {
                writeln!(ex, "invalid\t{name}:{number}\t{reason}").map_err(write_err)?;
            } else if self.stats.invalid <= SHOWN_INVALID {
                eprintln!("url-dedup: {name}:{number}: skipped: {reason}");
            }
        }
        Ok(Flow::Go)
    }

    /// Pushes out what was written so far, so a reader of a slow stream sees it now.
    fn flush(&mut self) -> Result<Flow, String> {
        if let Err(e) = self.out.flush() {
            return output_failed(e);
        }
        if let Some(ex) = self.explain.as_mut() {
            ex.flush().map_err(write_err)?;
        }
        Ok(Flow::Go)
    }
}

/// A write to standard output failed: a reader that went away (`| head`) ends the run
/// quietly, anything else is an error.
fn output_failed(e: io::Error) -> Result<Flow, String> {
    if e.kind() == io::ErrorKind::BrokenPipe {
        return Ok(Flow::PipeClosed);
    }
    Err(format!("cannot write output: {e}"))
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
        Some(p) if p.as_os_str() == "-" => Some(Box::new(io::BufWriter::new(io::stderr()))),
        Some(p) => Some(Box::new(io::BufWriter::new(File::create(p).map_err(
            |e| format!("cannot create explain file {}: {e}", p.display()),
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

    fn emitter() -> Emitter<Vec<u8>, Vec<u8>> {
        Emitter {
            out: Vec::new(),
            explain: Some(Vec::new()),
            canonical: false,
            stats: Stats::default(),
        }
    }

    fn batch(lines: &[Line<'_>]) -> Batch {
        let mut batch = Batch::default();
        for (i, line) in lines.iter().enumerate() {
            batch.push(i as u64 + 1, line);
        }
        batch
    }

    #[test]
    fn a_batch_is_written_in_input_order() {
        let dedup = UrlDedup::builder().expected_urls(100).build().unwrap();
        let batch = batch(&[
            Line::Text("https://a.example/"),
            Line::Empty,
            Line::Text("https://A.example"),
            Line::NotUtf8,
            Line::Text("/relative"),
            Line::TooLong(9_000),
            Line::Text("https://b.example/"),
        ]);
        assert_eq!(batch.texts().count(), 4);
        let mut emit = emitter();
        assert_eq!(emit.decide(&dedup, "in.txt", &batch), Ok(Flow::Go));
        assert_eq!(
            String::from_utf8(emit.out).unwrap(),
            "https://a.example/\nhttps://b.example/\n"
        );
        let explain = String::from_utf8(emit.explain.unwrap()).unwrap();
        let explain: Vec<&str> = explain.lines().collect();
        assert_eq!(explain[0], "duplicate\thttps://A.example");
        assert_eq!(explain[1], "invalid\tin.txt:4\tnot valid UTF-8");
        assert!(explain[2].starts_with("invalid\tin.txt:5\tinvalid URL"));
        assert_eq!(
            explain[3],
            "invalid\tin.txt:6\tline is 9000 bytes, over --max-len"
        );
        let s = &emit.stats;
        assert_eq!(
            (s.lines, s.new, s.duplicate, s.invalid, s.empty),
            (7, 2, 1, 3, 1)
        );
    }

    #[test]
    fn a_failed_store_stops_at_its_first_line_after_writing_the_lines_before() {
        let batch = batch(&[
            Line::Text("https://a.example/"),
            Line::Text("nonsense"),
            Line::Text("https://b.example/"),
            Line::Text("https://c.example/"),
        ]);
        let dedup = UrlDedup::builder().build().unwrap();
        let decide = |url: &'static str| {
            dedup
                .check_and_insert_canonical(url)
                .map(|(o, _)| (o, Cow::Borrowed(url)))
        };
        let store_failed = || Err(url_dedup::Error::Store("server went away".into()));
        let mut emit = emitter();
        let flow = emit.emit(
            "<stdin>",
            &batch,
            vec![
                decide("https://a.example/"),
                decide("nonsense"),
                store_failed(),
                store_failed(),
            ],
        );
        let message = flow.unwrap_err();
        assert!(
            message.starts_with("<stdin>:3: filter store failed: server went away"),
            "{message}"
        );
        assert_eq!(String::from_utf8(emit.out).unwrap(), "https://a.example/\n");
        let explain = String::from_utf8(emit.explain.unwrap()).unwrap();
        assert!(
            explain.starts_with("invalid\t<stdin>:2\tinvalid URL"),
            "{explain}"
        );
        assert_eq!(explain.lines().count(), 1);
        assert_eq!((emit.stats.new, emit.stats.invalid), (1, 1));
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
        let dedup = UrlDedup::builder().expected_urls(100).build().unwrap();
        let mut emit = Emitter {
            out: Closed,
            explain: None::<Vec<u8>>,
            canonical: false,
            stats: Stats::default(),
        };
        let batch = batch(&[
            Line::Text("https://a.example/"),
            Line::Text("https://b.example/"),
        ]);
        assert_eq!(emit.decide(&dedup, "-", &batch), Ok(Flow::PipeClosed));
        assert_eq!(emit.stats.lines, 1);
        assert_eq!(emit.flush(), Ok(Flow::PipeClosed));
    }
}
