//! `--state FILE`: the deduplicator's snapshot across runs, and the journal that bounds what a
//! killed run reprints.
//!
//! Files, all created readable by their owner only and never written through a symbolic link
//! (the snapshot holds the hash key; see [`crate::private_file`]):
//!
//! * `FILE`: the whole state, replaced atomically (written to `FILE.tmp.<random>`, synced,
//!   renamed) at the end of a run and whenever the journal grows past the state's size.
//! * `FILE.journal`: keys decided since `FILE` was written, appended in blocks after the
//!   output they cover was flushed (see [`crate::journal`]). It is also the run's lock: a
//!   second run on the same state is refused while the first holds it.
//!
//! Opening a state, before any input is read: refuse a path that is a link or no regular
//! file, take the lock (so the directory is known to be writable and no other run is using
//! the files), delete temporary files a killed run left, read `FILE` (refusing trailing bytes
//! and another configuration), replay the journal (saying what a damaged part of it costs),
//! and if it held anything, save `FILE` whole and empty the journal, so every run starts
//! clean.

use std::fs;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use url_dedup::bloom::snapshot::Limits;
use url_dedup::{Builder, UrlDedup};

use crate::journal::{Journal, PendingKeys, Replayed};
use crate::private_file;

/// A state file in use by this run.
#[derive(Debug)]
pub(crate) struct State {
    path: PathBuf,
    journal: Journal,
    pending: PendingKeys,
    every: Option<Duration>,
    last_checkpoint: Instant,
    /// Size of the last whole save: once the journal is larger, saving whole is cheaper than
    /// replaying it.
    saved_bytes: u64,
}

impl State {
    /// Opens the state at `path` and the deduplicator it holds (or a fresh one from
    /// `builder`), replaying the journal of a run that did not finish.
    pub(crate) fn open(
        path: &Path,
        builder: Builder,
        every: Option<Duration>,
    ) -> Result<(Self, UrlDedup), String> {
        let journal_path = suffixed(path, ".journal");
        // Before anything is created: `--state /dev/null` once made `/dev/null.journal`.
        private_file::check_path(path)?;
        let journal_file = private_file::open_or_create(&journal_path)?;
        match journal_file.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => {
                return Err(format!(
                    "state file {} is in use by another url-dedup run",
                    path.display()
                ));
            }
            Err(fs::TryLockError::Error(e)) => {
                return Err(format!("cannot lock {}: {e}", journal_path.display()));
            }
        }
        private_file::remove_stale_temporaries(path);

        let (dedup, saved_bytes) = load(path, builder)?;
        let (journal, replayed) = Journal::open(journal_file, |keys| {
            // A key that fails now failed then too and was never journaled; a store error
            // (Redis gone) stops the run before anything is printed.
            for result in dedup.check_and_insert_batch_bytes(keys.iter().copied()) {
                match result {
                    Ok(_) | Err(url_dedup::Error::InvalidUrl(_) | url_dedup::Error::NotUtf8) => {}
                    Err(e) => return Err(e.to_string()),
                }
            }
            Ok(())
        })
        .map_err(|e| format!("cannot replay {}: {e}", journal_path.display()))?;
        let mut state = Self {
            path: path.to_owned(),
            journal,
            pending: PendingKeys::default(),
            every,
            last_checkpoint: Instant::now(),
            saved_bytes,
        };
        report(&journal_path, &replayed);
        if replayed.bytes > 0 {
            state.save(&dedup)?;
        }
        Ok((state, dedup))
    }

    /// Notes a key this run decided (kept or folded); it reaches the journal at the next
    /// checkpoint.
    pub(crate) fn record(&mut self, key: &[u8]) {
        self.pending.push(key);
    }

    /// Whether a checkpoint is due: the interval has passed, or many keys are waiting.
    pub(crate) fn checkpoint_due(&self) -> bool {
        !self.pending.is_empty()
            && (self.pending.is_large()
                || self
                    .every
                    .is_some_and(|every| self.last_checkpoint.elapsed() >= every))
    }

    /// Appends the waiting keys to the journal. Call only after the output they belong to was
    /// flushed: a key in the journal is never printed again.
    pub(crate) fn checkpoint(&mut self, dedup: &UrlDedup) -> Result<(), String> {
        self.last_checkpoint = Instant::now();
        self.journal.append(&mut self.pending).map_err(|e| {
            format!(
                "cannot append to the journal of {}: {e}; the output so far is complete, and \
                 the next run will print again what this one printed since its last checkpoint",
                self.path.display()
            )
        })?;
        if self.journal.len() > self.saved_bytes.max(64 << 20) {
            self.save(dedup)?;
        }
        Ok(())
    }

    /// The run is complete: saves the state whole and empties the journal. Call only after
    /// the output was flushed.
    ///
    /// The keys since the last checkpoint go to the journal first: if the whole save fails (a
    /// full disk), the journal still holds every key this run decided, and the next run
    /// replays it instead of printing them again. The journal's block is smaller than the
    /// state, so it may fit where the state did not.
    pub(crate) fn finish(mut self, dedup: &UrlDedup) -> Result<(), String> {
        let journaled = self.journal.append(&mut self.pending);
        let journal = suffixed(&self.path, ".journal");
        match (self.save(dedup), journaled) {
            (Ok(()), _) => Ok(()),
            (Err(e), Ok(())) => Err(format!(
                "{e}; every URL this run decided is in {}, which the next run replays",
                journal.display()
            )),
            (Err(e), Err(j)) => Err(format!(
                "{e}; nor could {} take the last keys ({j}): the next run will print again \
                 what this one printed since its last checkpoint",
                journal.display()
            )),
        }
    }

    /// The output was closed early (`| head`): what this run printed may not have been read,
    /// so the state stays as it was when the run started and the next run prints it all again.
    pub(crate) fn abandon(mut self) -> Result<(), String> {
        self.journal
            .truncate()
            .map_err(|e| format!("cannot reset the journal of {}: {e}", self.path.display()))
    }

    /// Writes the whole state next to the file, syncs it, renames it into place and empties
    /// the journal, so a crash at any point leaves a usable state.
    fn save(&mut self, dedup: &UrlDedup) -> Result<(), String> {
        let written = private_file::replace(&self.path, |out| {
            dedup.write_to(out).map_err(io::Error::other)
        });
        match written {
            Ok(bytes) => {
                self.saved_bytes = bytes;
                self.journal.truncate().map_err(|e| {
                    format!("cannot reset the journal of {}: {e}", self.path.display())
                })
            }
            Err(e) => Err(format!(
                "cannot save state file {}: {e}",
                self.path.display()
            )),
        }
    }
}

/// Reads the state at `path` with `builder`'s configuration, or builds a fresh one when there
/// is no file yet; returns it and the file's size.
fn load(path: &Path, builder: Builder) -> Result<(UrlDedup, u64), String> {
    let Some(file) = private_file::open_existing(path)? else {
        return builder.build().map(|d| (d, 0)).map_err(|e| e.to_string());
    };
    let unusable =
        |e: &dyn std::fmt::Display| format!("cannot use state file {}: {e}", path.display());
    let size = file.metadata().map_err(|e| unusable(&e))?.len();
    let mut input = BufReader::new(file);
    // Nothing in the file can announce more than the file holds.
    let limits = Limits {
        max_payload_bytes: size,
    };
    let dedup = builder
        .restore_with_limits(&mut input, limits)
        .map_err(|e| match e {
            url_dedup::Error::ConfigMismatch {
                recorded,
                configured,
            } => format!(
                "state file {} was written with other options:\n{}(pass --force-state to use \
                 it anyway: its URLs were recorded in another form, so some \"seen\" answers \
                 would be wrong)",
                path.display(),
                crate::mismatch::describe(&recorded, &configured),
            ),
            e => unusable(&e),
        })?;
    let mut rest = 0u64;
    let mut buf = [0u8; 4096];
    loop {
        match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => rest += n as u64,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(unusable(&e)),
        }
    }
    if rest > 0 {
        return Err(unusable(&format!(
            "{rest} bytes follow the state; the file is damaged or not a url-dedup state"
        )));
    }
    Ok((dedup, size))
}

/// `path` with `suffix` appended to its file name.
pub(crate) fn suffixed(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(suffix);
    path.with_file_name(name)
}

/// Says what replaying a journal recovered, and what a damaged part of it cost: those URLs
/// are printed again by this run.
fn report(journal: &Path, replayed: &Replayed) {
    if replayed.keys > 0 {
        eprintln!(
            "url-dedup: {} URLs of an unfinished run recovered from {}",
            replayed.keys,
            journal.display()
        );
    }
    for damage in &replayed.damage {
        eprintln!(
            "url-dedup: warning: {}: {damage}; they will be printed again{}",
            journal.display(),
            match replayed.blocks {
                0 => String::new(),
                n => format!(" ({n} whole blocks read)"),
            }
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run whose final save fails (a full disk; here the state's path is taken by a
    /// directory, which a file cannot be renamed over) keeps every URL it decided in the
    /// journal, and the next run replays them: none is printed again.
    #[test]
    fn a_failed_final_save_leaves_the_runs_urls_to_the_next_run() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seen.udd");
        let builder = || UrlDedup::builder().expected_urls(1_000);
        let urls = ["https://a.example/", "https://b.example/x?id=1"];

        // No checkpoint: the keys are still pending when the run ends.
        let (mut state, dedup) = State::open(&path, builder(), None).unwrap();
        for url in urls {
            assert!(dedup.check_and_insert(url).unwrap().is_new());
            state.record(dedup.canonicalize(url).unwrap().as_bytes());
        }
        fs::create_dir(&path).unwrap();
        fs::write(path.join("in the way"), b"").unwrap();
        let error = state.finish(&dedup).unwrap_err();
        assert!(error.contains("cannot save state file"), "{error}");
        assert!(error.contains("the next run replays"), "{error}");
        fs::remove_dir_all(&path).unwrap();
        // No temporary file is left behind.
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);

        let (_, next) = State::open(&path, builder(), None).unwrap();
        for url in urls {
            assert!(next.contains(url).unwrap(), "{url} would be printed again");
        }
    }
}
