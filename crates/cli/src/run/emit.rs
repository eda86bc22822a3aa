//! Writing decisions: kept lines to the output, reasons to `--explain` (or the first few
//! invalid lines to stderr), counts to `--stats`, decided keys to the state's journal. A
//! block's lines are decided in calls of [`BATCH_LINES`] keys and written in input order, as
//! if each line had been decided and written in turn.

use std::borrow::Cow;
use std::io::{self, Write};

use url_dedup::{Decision, Outcome, UrlDedup};

use super::pipeline::{Entry, Key, Parsed};
use crate::Failure;
use crate::explain::{Explainer, Place};
use crate::state::State;
use crate::stats::Stats;

/// How many invalid lines are shown on stderr without `--explain`.
pub(super) const SHOWN_INVALID: u64 = 5;

/// Keys decided with one call to the deduplicator. With `--redis` every call is a network
/// round trip, so batches of 1,024 turn a thousand round trips into one; in memory the
/// segmented filter overlaps the cache misses of a batch. Past a thousand the round trip is
/// already a small share of the cost.
const BATCH_LINES: usize = 1_024;

/// Whether to go on after writing a batch's results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Flow {
    Go,
    /// Standard output was closed by its reader (`url-dedup urls.txt | head`).
    PipeClosed,
}

/// What is printed for a kept URL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Shown {
    /// The input line, as it was.
    Line,
    /// Its canonical form (`--canonical`; the SURT key with `--surt`).
    Canonical,
}

/// Where decisions go: kept lines to `out`, the reasons for the others to `explain` (or the
/// first few invalid lines to stderr), counts to `stats`, decided keys to the state.
pub(super) struct Emitter<O, X> {
    pub(super) out: O,
    pub(super) explain: Option<Explainer<X>>,
    pub(super) shown: Shown,
    pub(super) stats: Stats,
}

impl<O: Write, X: Write> Emitter<O, X> {
    /// Decides a block's lines from input `name`, the first of them line `number`, in calls
    /// of up to [`BATCH_LINES`] keys, and writes the results.
    pub(super) fn decide(
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
    pub(super) fn flush(&mut self) -> Result<Flow, Failure> {
        if let Err(e) = self.out.flush() {
            return output_failed(e);
        }
        if let Some(ex) = self.explain.as_mut() {
            ex.flush().map_err(write_err)?;
        }
        Ok(Flow::Go)
    }

    /// When a checkpoint is due: flushes the output, then journals the keys it covers.
    pub(super) fn checkpoint(
        &mut self,
        dedup: &UrlDedup,
        state: Option<&mut State>,
    ) -> Result<Flow, Failure> {
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

pub(super) fn write_err(e: io::Error) -> Failure {
    Failure::Run(format!("cannot write: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explain::Memory;
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
        // A fixed key: the counts below would break on a random key's false positive.
        let mut dedup = UrlDedup::builder()
            .expected_urls(10_000)
            .hash_key(url_dedup::bloom::HashKey::from_bytes([9; 16]))
            .build()
            .unwrap();
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
}
