//! The threads of a run. One thread reads the inputs in blocks of whole lines; workers split
//! each block into lines, canonicalize them and hash their keys, on every core; the caller
//! receives the results in input order and decides them (the filter's answers depend on the
//! order, so deciding stays on one thread, where only the filter's probes are left to do).
//!
//! Blocks wait in one queue, numbered in input order, and any free thread takes the oldest:
//! a worker, or the deciding thread itself when the block it must decide next is not ready.
//! Results are put back in order by their numbers. Blocks in flight are bounded, so memory
//! stays a few blocks per thread however large the input. A reader that has no whole line
//! left hands out what it has at once, so a slow producer (`tail -f log | url-dedup`) gets
//! its answers without waiting for more input.

use std::borrow::Cow;
use std::collections::{BTreeMap, VecDeque};
use std::fs::File;
use std::io::{self, Read};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use url_dedup::similarity::{FeatureHashes, HashedUrl};
use url_dedup::{KeyDigest, Preparer};

use crate::lines::{Block, BlockReader, Line};

/// Bytes per block read from a regular file: large enough that handing a block from thread
/// to thread (which wakes the receiving thread, a few microseconds) costs nothing per line,
/// small enough that the blocks in flight stay in the cache.
const BLOCK_BYTES: usize = 1 << 19;

/// What to read, and how to turn lines into keys.
pub(crate) struct Plan {
    /// The inputs, in order (`None` is standard input).
    pub(crate) sources: Vec<Option<PathBuf>>,
    /// Lines longer than this are not URLs.
    pub(crate) max_len: usize,
    /// Lines are read exactly (`--raw`, see [`Block::exact_lines`]) rather than as URLs.
    pub(crate) exact: bool,
    /// Canonicalizes text lines into their keys (or keeps each line as its own key) and
    /// hashes the keys, as the deduplicator that decides them would.
    pub(crate) preparer: Preparer,
    /// Threads that split, canonicalize and hash blocks (the deciding thread does too, when
    /// the block it must decide next is not ready; with none, it does all of them).
    pub(crate) workers: usize,
    /// Whether the workers also hash each key's similarity features (when the deduplicator
    /// has a similarity filter), which the deciding thread does itself otherwise.
    pub(crate) hash_features: bool,
}

/// What comes out of the pipeline, in input order.
pub(crate) enum Message {
    /// The lines of one block of input `source` (boxed: a block's bookkeeping is a few
    /// hundred bytes, passed from thread to thread once per half megabyte of input).
    Parsed(Box<Parsed>),
    /// An input could not be opened or read (why, as shown to the user); nothing of it and
    /// of the inputs after it follows.
    Failed(String),
    /// Every input was read.
    End,
}

/// One block of input, split into lines, each text line with the key it is decided on.
pub(crate) struct Parsed {
    /// The input's index in [`Plan::sources`].
    pub(crate) source: usize,
    /// The lines, as read.
    pub(crate) block: Block,
    /// Canonical forms that differ from their lines, back to back.
    pub(crate) canonical: Vec<u8>,
    /// Every line, in order.
    pub(crate) entries: Vec<Entry>,
    /// With a similarity filter, the feature hashes of every text line whose key is UTF-8
    /// (hashed here, on a worker: the deciding thread only tests and sets their bits).
    pub(crate) features: Option<FeatureHashes>,
}

/// One line of a [`Parsed`] block.
#[derive(Debug)]
pub(crate) enum Entry {
    /// A text line (its place in the block's bytes), its key and where its key's feature
    /// hashes are in [`Parsed::features`].
    Text(Range<usize>, Key, Option<u32>),
    /// Nothing but white space.
    Empty,
    /// Longer than the limit: its length.
    TooLong(usize),
    /// Holds a NUL or a bare carriage return: that byte.
    Control(u8),
}

/// What a text line is decided on, with the filter's digest of it.
#[derive(Debug)]
pub(crate) enum Key {
    /// The line itself: raw lines, and lines already canonical.
    Line(KeyDigest),
    /// Its canonical form, at this place in [`Parsed::canonical`].
    Canonical(Range<usize>, KeyDigest),
    /// Nothing: the line is no URL the policy accepts. Boxed: an error is larger than a
    /// key and its digest, and the deciding thread reads every line's entry.
    Invalid(Box<url_dedup::Error>),
}

impl Parsed {
    /// The bytes of a text line.
    pub(crate) fn line(&self, range: &Range<usize>) -> &[u8] {
        self.block.bytes.get(range.clone()).unwrap_or_default()
    }

    /// The feature hashes at `index` in [`features`](Self::features).
    pub(crate) fn hashed(&self, index: Option<u32>) -> Option<HashedUrl<'_>> {
        self.features.as_ref()?.get(usize::try_from(index?).ok()?)
    }

    /// The key of a text line and its digest, or `None` when it has none.
    pub(crate) fn key<'a>(
        &'a self,
        range: &Range<usize>,
        key: &Key,
    ) -> Option<(&'a [u8], KeyDigest)> {
        match key {
            Key::Line(d) => Some((self.line(range), *d)),
            Key::Canonical(c, d) => Some((self.canonical.get(c.clone()).unwrap_or_default(), *d)),
            Key::Invalid(_) => None,
        }
    }

    /// Splits `block` into lines and finds each text line's key; with `hash_features`, also
    /// hashes each key's similarity features (when the deduplicator has a similarity
    /// filter), which the deciding thread does itself otherwise.
    pub(crate) fn new(
        source: usize,
        block: Block,
        (max_len, exact): (usize, bool),
        preparer: &Preparer,
        hash_features: bool,
    ) -> Self {
        let mut canonical = Vec::new();
        let mut features = preparer.feature_hashes().filter(|_| hash_features);
        let base = block.bytes.as_ptr() as usize;
        let lines = match exact {
            true => block.exact_lines(max_len),
            false => block.lines(max_len),
        };
        let entries = lines
            .map(|line| {
                let (text, prepared) = match line {
                    Line::Text(text) => (text.as_bytes(), preparer.prepare_str(text)),
                    // Lines read exactly, and text in another encoding: a key byte for byte
                    // without canonicalization; canonicalizing, only the safe-browsing
                    // convention reads them, and the preparer refuses them otherwise.
                    Line::Bytes(bytes) => (bytes, preparer.prepare(bytes)),
                    Line::Empty => return Entry::Empty,
                    Line::TooLong(len) => return Entry::TooLong(len),
                    Line::Control(byte) => return Entry::Control(byte),
                };
                let key = key(prepared, &mut canonical);
                let hashed = features.as_mut().and_then(|f| {
                    let form = match &key {
                        Key::Line(_) => text,
                        Key::Canonical(c, _) => canonical.get(c.clone()).unwrap_or_default(),
                        Key::Invalid(_) => return None,
                    };
                    let index = f.push(std::str::from_utf8(form).ok()?);
                    u32::try_from(index).ok()
                });
                // The line is a slice of the block's bytes: its place in them.
                let start = text.as_ptr() as usize - base;
                Entry::Text(start..start + text.len(), key, hashed)
            })
            .collect();
        Self {
            source,
            block,
            canonical,
            entries,
            features,
        }
    }
}

/// The key of a text line as the preparer made it; a canonical form that differs from the
/// line is appended to `canonical`. The error is the one the deduplicator gives for the same
/// line.
fn key(
    prepared: Result<(Cow<'_, [u8]>, KeyDigest), url_dedup::Error>,
    canonical: &mut Vec<u8>,
) -> Key {
    match prepared {
        Ok((Cow::Borrowed(_), digest)) => Key::Line(digest),
        Ok((Cow::Owned(form), digest)) => {
            let start = canonical.len();
            canonical.extend_from_slice(&form);
            Key::Canonical(start..canonical.len(), digest)
        }
        Err(e) => Key::Invalid(Box::new(e)),
    }
}

/// What the reader hands out.
enum Work {
    Block(usize, Block),
    Failed(String),
    End,
}

impl Work {
    /// Splits, canonicalizes and hashes a block, on whichever thread took it.
    fn process(self, plan: &Shared) -> Message {
        match self {
            Work::Block(source, block) => Message::Parsed(Box::new(Parsed::new(
                source,
                block,
                (plan.max_len, plan.exact),
                &plan.preparer,
                plan.hash_features,
            ))),
            Work::Failed(error) => Message::Failed(error),
            Work::End => Message::End,
        }
    }
}

/// What the threads of a pipeline share: one queue of blocks in input order, taken by
/// whichever thread is free, and the results waiting to be decided.
///
/// Any thread takes the oldest block: a worker the scheduler has descheduled (other
/// processes on the cores) holds up one block, not every block dealt to it, and the deciding
/// thread, rather than wait for that block, parses the next ones itself. With a fixed turn
/// and queues of their own, one descheduled worker stopped the others (their queues full)
/// and the deciding thread (waiting for its turn), and a run on two busy cores took several
/// times its CPU time.
struct Shared {
    queue: Mutex<Queue>,
    /// A block was queued, or the reader is done: for idle workers.
    queued: Condvar,
    /// The next block to decide is ready, or a block was queued that the deciding thread
    /// may parse itself.
    ready: Condvar,
    /// Blocks in flight fell below [`Shared::capacity`]: for the reader.
    room: Condvar,
    /// Blocks read but not yet decided, at most.
    capacity: usize,
    max_len: usize,
    exact: bool,
    preparer: Preparer,
    hash_features: bool,
}

/// The state behind [`Shared::queue`].
#[derive(Default)]
struct Queue {
    /// Blocks read and not yet taken, oldest first, with their numbers in input order.
    waiting: VecDeque<(u64, Work)>,
    /// Blocks being parsed.
    parsing: usize,
    /// Results not yet decided, by number.
    finished: BTreeMap<u64, Message>,
    /// The number of the next block read.
    read: u64,
    /// The number of the next block to decide.
    next: u64,
    /// The reader queued its last work.
    closed: bool,
    /// The receiving end is gone: every thread stops.
    stopped: bool,
    /// A worker stopped before its block was parsed (a bug): the run cannot go on.
    broken: bool,
}

impl Queue {
    fn in_flight(&self) -> usize {
        self.waiting.len() + self.parsing + self.finished.len()
    }
}

impl Shared {
    /// The queue, even if a thread panicked while holding it: every change to it is made
    /// whole under the lock.
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues work for any thread, waiting while the pipeline is full; false once the
    /// receiving end is gone.
    fn push(&self, work: Work) -> bool {
        let mut queue = self.lock();
        while queue.in_flight() >= self.capacity && !queue.stopped {
            queue = self
                .room
                .wait(queue)
                .unwrap_or_else(PoisonError::into_inner);
        }
        if queue.stopped {
            return false;
        }
        let number = queue.read;
        queue.read += 1;
        queue.waiting.push_back((number, work));
        drop(queue);
        self.queued.notify_one();
        // The deciding thread may be waiting with nothing to do but this block.
        self.ready.notify_one();
        true
    }

    /// The reader is done: idle workers stop once the queue is empty.
    fn close(&self) {
        self.lock().closed = true;
        self.queued.notify_all();
    }
}

/// Starts the reader and the workers; their results arrive, in input order, through the
/// returned [`Results`]. The threads stop on their own once the inputs are read, or once the
/// receiver is dropped (the reader at its next block: a reader waiting on a slow producer
/// goes when the process does).
pub(crate) fn start(plan: Plan) -> Results {
    let shared = Arc::new(Shared {
        queue: Mutex::new(Queue::default()),
        queued: Condvar::new(),
        ready: Condvar::new(),
        room: Condvar::new(),
        capacity: IN_FLIGHT_PER_THREAD * (plan.workers + 1),
        max_len: plan.max_len,
        exact: plan.exact,
        preparer: plan.preparer,
        hash_features: plan.hash_features,
    });
    for _ in 0..plan.workers {
        let shared = Arc::clone(&shared);
        std::thread::spawn(move || work(&shared));
    }
    let (used, spares) = sync_channel(SPARE_BLOCKS);
    let reader = Arc::clone(&shared);
    std::thread::spawn(move || read(&plan.sources, &reader, &spares));
    Results { shared, used }
}

/// Blocks in flight per parsing thread (the workers and the deciding thread): enough that
/// a thread finds the next block queued when it is done with one, few enough that the
/// blocks stay in the cache.
const IN_FLIGHT_PER_THREAD: usize = 3;

/// Used blocks on their way back to the reader.
const SPARE_BLOCKS: usize = 8;

/// The pipeline's output end.
pub(crate) struct Results {
    shared: Arc<Shared>,
    /// Where used blocks go back to the reader.
    used: SyncSender<Vec<u8>>,
}

impl Results {
    /// The next message in input order. When the block it waits for is still queued, or
    /// held by a worker while later ones are queued, this thread parses them itself rather
    /// than wait.
    pub(crate) fn next(&mut self) -> Message {
        let shared = &*self.shared;
        let mut queue = shared.lock();
        loop {
            let next = queue.next;
            if let Some(message) = queue.finished.remove(&next) {
                queue.next += 1;
                drop(queue);
                shared.room.notify_one();
                return message;
            }
            if let Some((number, work)) = queue.waiting.pop_front() {
                queue.parsing += 1;
                drop(queue);
                let message = work.process(shared);
                queue = shared.lock();
                queue.parsing -= 1;
                queue.finished.insert(number, message);
                continue;
            }
            if queue.broken {
                return Message::Failed("a worker thread stopped unexpectedly".to_owned());
            }
            queue = shared
                .ready
                .wait(queue)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Hands a block that was decided back to the reader, which reads into its buffer again
    /// (see [`BlockReader::recycle`]). Never waits: a reader with enough spares drops it.
    pub(crate) fn recycle(&self, parsed: Parsed) {
        let _ = self.used.try_send(parsed.block.bytes);
    }
}

impl Drop for Results {
    fn drop(&mut self) {
        self.shared.lock().stopped = true;
        self.shared.queued.notify_all();
        self.shared.room.notify_all();
    }
}

/// A worker: parses the oldest queued block, until the reader is done and the queue empty.
fn work(shared: &Shared) {
    /// Tells the deciding thread if this worker dies holding a block, which would otherwise
    /// wait for it forever.
    struct Holding<'a>(&'a Shared);
    impl Drop for Holding<'_> {
        fn drop(&mut self) {
            if std::thread::panicking() {
                self.0.lock().broken = true;
                self.0.ready.notify_all();
            }
        }
    }
    let mut queue = shared.lock();
    loop {
        if queue.stopped {
            return;
        }
        if let Some((number, work)) = queue.waiting.pop_front() {
            queue.parsing += 1;
            drop(queue);
            let message = {
                let _holding = Holding(shared);
                work.process(shared)
            };
            queue = shared.lock();
            queue.parsing -= 1;
            queue.finished.insert(number, message);
            if number == queue.next {
                shared.ready.notify_one();
            }
            continue;
        }
        if queue.closed {
            return;
        }
        queue = shared
            .queued
            .wait(queue)
            .unwrap_or_else(PoisonError::into_inner);
    }
}

/// The reader: every input in order, in blocks, queued for whichever thread is free.
fn read(sources: &[Option<PathBuf>], shared: &Shared, spares: &Receiver<Vec<u8>>) {
    let max_len = shared.max_len;
    let finish = |work: Work| {
        shared.push(work);
        shared.close();
    };
    for (index, source) in sources.iter().enumerate() {
        let (input, streaming) = match open(source.as_deref()) {
            Ok(opened) => opened,
            Err(error) => return finish(Work::Failed(error)),
        };
        let mut blocks = BlockReader::new(input, streaming, BLOCK_BYTES, max_len);
        loop {
            while let Ok(spare) = spares.try_recv() {
                blocks.recycle(spare);
            }
            match blocks.next_block() {
                Ok(Some(block)) => {
                    if !shared.push(Work::Block(index, block)) {
                        return;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    let name = source
                        .as_deref()
                        .map_or("<stdin>".into(), |p| p.display().to_string());
                    return finish(Work::Failed(format!("cannot read {name}: {e}")));
                }
            }
        }
    }
    finish(Work::End);
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

#[cfg(test)]
mod tests {
    use super::*;
    use url_dedup::UrlDedup;

    fn parsed(text: &[u8], canonicalizing: bool) -> Parsed {
        let block = Block {
            bytes: text.to_vec(),
            at_start: true,
            ..Block::default()
        };
        let b = UrlDedup::builder();
        let dedup = if canonicalizing {
            b
        } else {
            b.no_canonicalization()
        };
        Parsed::new(
            0,
            block,
            (100, false),
            &dedup.build().unwrap().preparer(),
            true,
        )
    }

    #[test]
    fn keys_are_the_lines_or_their_canonical_forms() {
        let p = parsed(
            b"https://a.example/\n\nHTTPS://A.example\n\xff\n/relative\n",
            true,
        );
        let keys: Vec<String> = p
            .entries
            .iter()
            .map(|e| match e {
                Entry::Text(range, key, _) => match p.key(range, key) {
                    Some((k, _)) => String::from_utf8_lossy(k).into_owned(),
                    None => format!("invalid: {key:?}"),
                },
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(keys[0], "https://a.example/");
        assert_eq!(keys[1], "Empty");
        assert_eq!(keys[2], "https://a.example/");
        assert!(
            keys[3].starts_with("invalid: Invalid(NotUtf8)"),
            "{}",
            keys[3]
        );
        assert!(
            keys[4].starts_with("invalid: Invalid(InvalidUrl"),
            "{}",
            keys[4]
        );
        assert!(matches!(p.entries[0], Entry::Text(_, Key::Line(_), _)));

        let raw = parsed(b"HTTPS://A.example\n\xff\n", false);
        assert!(
            raw.entries
                .iter()
                .all(|e| matches!(e, Entry::Text(_, Key::Line(_), _)))
        );
    }

    /// Several blocks, parsed by whichever thread is free, come back in input order; with no
    /// worker at all the deciding thread parses every block itself.
    #[test]
    fn results_come_in_input_order_from_every_worker() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in.txt");
        let text: String = (0..100_000)
            .map(|i| format!("https://example.com/{i}\n"))
            .collect();
        assert!(text.len() > 4 * BLOCK_BYTES);
        std::fs::write(&path, &text).unwrap();
        for workers in [0, 1, 2, 3] {
            let mut results = start(Plan {
                sources: vec![Some(path.clone()), Some(dir.path().join("missing"))],
                max_len: 100,
                exact: false,
                preparer: UrlDedup::builder()
                    .no_canonicalization()
                    .build()
                    .unwrap()
                    .preparer(),
                workers,
                hash_features: workers == 2,
            });
            let mut lines = Vec::new();
            let failed = loop {
                match results.next() {
                    Message::Parsed(p) => {
                        for e in &p.entries {
                            if let Entry::Text(range, ..) = e {
                                lines.push(String::from_utf8_lossy(p.line(range)).into_owned());
                            }
                        }
                    }
                    Message::Failed(error) => break error,
                    Message::End => panic!("the missing input was not reported"),
                }
            };
            assert_eq!(lines.len(), 100_000);
            assert!(lines.iter().zip(text.lines()).all(|(a, b)| a == b));
            assert!(failed.contains("missing"), "{failed}");
        }
    }
}
