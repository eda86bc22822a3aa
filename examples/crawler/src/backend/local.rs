//! The single-process backend: the run queue, the done set and the budgets in this process,
//! with a journal and checkpoints in the output directory ([`CrawlState`]), so a crawl killed
//! at any point goes on where it was.

use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use super::{Backend, BackendReport, Commit, Take};
use crate::done::Verdict;
use crate::error::CrawlError;
use crate::logger::Logger;
use crate::records::Records;
pub(crate) use crate::state::Resumed;
use crate::state::{CrawlState, FilterSize};

/// Most jobs of a local crawl handed to the workers and not done: the rest of the run queue
/// waits on disk.
const MIN_WINDOW: usize = 4096;

/// The WARC file of a single-process crawl.
const WARC: &str = "crawl.warc";

/// Files of a crawl's state and records, as the output directory names them: what
/// `--restart` moves aside.
fn crawl_file(name: &str) -> bool {
    name == "checkpoint"
        || name == WARC
        || name == "skipped.tsv"
        || name == crate::dust::RULES_FILE
        || name == crate::dust::PAGES_FILE
        || (name.starts_with("journal-") && name.ends_with(".log"))
        || (name.starts_with("queue-") && name.ends_with(".txt"))
}

/// Why `dir` holds an earlier crawl that cannot be resumed, if it does: its records or later
/// generations of its state are there, but not the checkpoint they belong to. (A crawl killed
/// before its first checkpoint has its generation-0 journal and resumes from it.)
fn orphaned(dir: &Path) -> Result<Option<String>, CrawlError> {
    if dir.join("checkpoint").exists() || crate::journal::path(dir, 0).exists() {
        return Ok(None);
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(CrawlError::io("reading output directory", dir)(e)),
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let size = entry.metadata().map_or(0, |m| m.len());
        let state = name.starts_with("journal-") || name.starts_with("queue-");
        if (name == WARC && size > 0) || (state && crawl_file(&name)) {
            found.push(name);
        }
    }
    found.sort();
    Ok((!found.is_empty()).then(|| {
        format!(
            "{} holds an earlier crawl ({}) but not its checkpoint: it cannot be resumed, and \
             starting over would overwrite its WARC file",
            dir.display(),
            found.join(", ")
        )
    }))
}

/// With `--restart`, moves the earlier crawl's files to `dir/previous-<time>/` and says so;
/// otherwise stops with `why` and what to do.
fn restart_or_refuse(dir: &Path, restart: bool, why: &str) -> Result<(), CrawlError> {
    if !restart {
        return Err(CrawlError::DamagedState(format!(
            "{why}. Run with --restart to move the earlier crawl's files aside and start anew \
             (nothing is deleted), or restore the missing file."
        )));
    }
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let aside = dir.join(format!("previous-{stamp}"));
    std::fs::create_dir(&aside).map_err(CrawlError::io("creating", &aside))?;
    let entries =
        std::fs::read_dir(dir).map_err(CrawlError::io("reading output directory", dir))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        if crawl_file(&name.to_string_lossy()) {
            let to = aside.join(&name);
            std::fs::rename(entry.path(), &to).map_err(CrawlError::io("moving aside", &to))?;
        }
    }
    eprintln!(
        "crawler: {why}; --restart: its files are in {}, and a new crawl starts",
        aside.display()
    );
    Ok(())
}

/// The run queue and done set of a single-process crawl.
#[derive(Debug)]
pub(crate) struct LocalBackend {
    /// Admission and completion happen under this lock, so every change reaches the journal
    /// in the order it happened.
    state: Mutex<CrawlState>,
    resumed: Resumed,
    pages_before: u64,
    window: usize,
    checkpoint_every: Duration,
    process: String,
    /// SimHashes of the pages fetched (`--learn`).
    near: Mutex<crate::dust::NearPages>,
}

impl LocalBackend {
    /// Opens the crawl state in `dir` (a fresh crawl, or the checkpoint and journal of an
    /// interrupted one), and this process's records there: the WARC file `crawl.warc` cut back
    /// to its committed length, and the skip report.
    pub(crate) fn open(
        dir: &Path,
        config: &crate::options::CrawlConfig,
        software: &str,
    ) -> Result<(Self, Records), CrawlError> {
        let size: FilterSize = config.filter;
        if let Some(why) = orphaned(dir)? {
            restart_or_refuse(dir, config.restart, &why)?;
        }
        let (mut state, mut resumed) = CrawlState::open(dir, size)?;
        let warc_file = std::fs::symlink_metadata(dir.join(WARC));
        // A link in the WARC file's place is refused when the file is opened.
        let linked = warc_file.as_ref().is_ok_and(|m| m.file_type().is_symlink());
        if config.warc && !linked {
            let on_disk = warc_file.map_or(0, |m| m.len());
            if on_disk < state.warc_len() {
                let why = format!(
                    "{} holds {on_disk} bytes, but the crawl had written {} bytes of records to \
                     it: it was cut or replaced, and the records of pages fetched before are \
                     gone. Resuming would write after a cut record",
                    dir.join(WARC).display(),
                    state.warc_len()
                );
                drop(state);
                restart_or_refuse(dir, config.restart, &why)?;
                (state, resumed) = CrawlState::open(dir, size)?;
            } else if resumed.journal_missing && on_disk > state.warc_len() {
                resumed.warnings.push(format!(
                    "the journal after the last checkpoint is missing: what was admitted and \
                     fetched since that checkpoint is forgotten, its pages will be fetched again, \
                     and the {} bytes of WARC records written meanwhile are cut",
                    on_disk - state.warc_len()
                ));
            }
        } else if resumed.journal_missing {
            resumed.warnings.push(
                "the journal after the last checkpoint is missing: the pages fetched since that \
                 checkpoint, if any, will be fetched again"
                    .into(),
            );
        }
        for w in &resumed.warnings {
            eprintln!("crawler: warning: {w}");
        }
        let warc = config.warc.then_some((WARC, state.warc_len()));
        let records = Records::open(dir, warc, software)?;
        let backend = Self {
            pages_before: state.pages_done(),
            state: Mutex::new(state),
            resumed,
            window: (config.workers * config.per_host * 64).max(MIN_WINDOW),
            checkpoint_every: config.checkpoint_every,
            process: format!("crawler-{}", std::process::id()),
            near: Mutex::new(crate::dust::NearPages::new()),
        };
        Ok((backend, records))
    }

    /// The state; a panic elsewhere while it was held leaves it usable (it is only ever
    /// changed through methods that keep it consistent line by line).
    fn state(&self) -> MutexGuard<'_, CrawlState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Where warnings go: this process's log only.
    pub(crate) fn logger(&self) -> Logger {
        Logger::new(self.process.clone(), None, 1)
    }
}

impl Backend for LocalBackend {
    fn process(&self) -> String {
        self.process.clone()
    }

    fn pages_before(&self) -> u64 {
        self.pages_before
    }

    fn room(&self) -> usize {
        self.window
    }

    fn paces_hosts(&self) -> bool {
        false
    }

    async fn seen(&self, urls: Vec<String>) -> Result<Vec<bool>, CrawlError> {
        self.state().seen(&urls)
    }

    async fn count_templates(&self, keys: Vec<String>, delta: i64) -> Result<Vec<u64>, CrawlError> {
        Ok(self.state().count_templates(&keys, delta))
    }

    async fn admit(&self, urls: Vec<String>) -> Result<Vec<Verdict>, CrawlError> {
        self.state().admit(&urls)
    }

    async fn commit(&self, commit: Commit) -> Result<Vec<bool>, CrawlError> {
        let mut state = self.state();
        let mut queued = Vec::with_capacity(commit.queue.len());
        for (job, lineage) in &commit.queue {
            queued.push(state.queue(job, *lineage, commit.host_budget)?);
        }
        for done in &commit.done {
            state.complete(&done.job, done.fetched, done.warc_len)?;
        }
        state.flush()?;
        Ok(queued)
    }

    async fn take(&self, max: usize, idle: bool) -> Result<Take, CrawlError> {
        let mut state = self.state();
        let jobs = state.hand_out(max)?;
        Ok(if !jobs.is_empty() {
            Take::Jobs(jobs)
        } else if idle && state.handed_len() == 0 {
            Take::Finished
        } else {
            Take::Idle
        })
    }

    fn housekeeping_period(&self) -> Duration {
        self.checkpoint_every
    }

    async fn housekeep(&self) -> Result<bool, CrawlError> {
        self.state().checkpoint()?;
        Ok(false)
    }

    async fn near_page(&self, simhash: u64, url: &str) -> Result<Option<String>, CrawlError> {
        let mut near = self.near.lock().unwrap_or_else(|p| p.into_inner());
        Ok(near.check_and_insert(simhash, url))
    }

    async fn share_host_delay(&self, _host: String, _delay: Duration) -> Result<(), CrawlError> {
        // The worker that owns the host paces it.
        Ok(())
    }

    async fn finish(&self, fatal: Option<&CrawlError>) -> Result<(), CrawlError> {
        // After a fatal error the journal holds everything committed; the next run replays it.
        match fatal {
            None => self.state().checkpoint(),
            Some(_) => self.state().flush(),
        }
    }

    fn abort(&self) {
        let mut state = self.state();
        let _ = state.flush();
        // Never released: no other writer starts a journal line before the process is gone.
        std::mem::forget(state);
    }

    async fn report(&self) -> BackendReport {
        let state = self.state();
        BackendReport {
            pages_total: state.pages_done(),
            pending: state.pending_len(),
            done: state.done_set().figures(),
            resumed: Some(self.resumed.clone()),
            extra: serde_json::json!({}),
        }
    }
}
