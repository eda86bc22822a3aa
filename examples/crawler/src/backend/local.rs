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
        let (state, resumed) = CrawlState::open(dir, size)?;
        let warc = config.warc.then_some(("crawl.warc", state.warc_len()));
        let records = Records::open(dir, warc, software)?;
        let backend = Self {
            pages_before: state.pages_done(),
            state: Mutex::new(state),
            resumed,
            window: (config.workers * config.per_host * 64).max(MIN_WINDOW),
            checkpoint_every: config.checkpoint_every,
            process: format!("crawler-{}", std::process::id()),
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
