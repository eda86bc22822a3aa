//! The crawl's one seam: where the run queue, the done set, the admission budgets and the
//! coordination of processes live.
//!
//! The engine ([`crate::engine`]) drives a crawl the same way whatever the backend: it takes
//! jobs to fetch, and after each batch of finished pages it asks the admission rules
//! ([`crate::admission`]) what to queue, then commits the batch. Two backends implement it:
//!
//! * [`local::LocalBackend`]: in this process, with a journal and checkpoints in the output
//!   directory, so `kill -9` loses nothing;
//! * [`shared::SharedBackend`]: in Redis, shared with any number of processes (document 003).
//!
//! A backend decides nothing about which URLs to crawl: it stores what the admission rules
//! decided, atomically where several processes race (the done set, the host budget).

pub(crate) mod local;
pub(crate) mod shared;

use std::future::Future;
use std::time::Duration;

use crate::done::{DoneFigures, Verdict};
use crate::error::CrawlError;
use crate::fetch::Validators;
use crate::job::Job;
use crate::monitor::{CrawlView, ProcessRow};
use crate::template::Lineage;

/// What [`Backend::take`] found.
#[derive(Debug)]
pub(crate) enum Take {
    /// Jobs to fetch, handed to this process until committed.
    Jobs(Vec<Job>),
    /// Nothing to fetch now; more may come (this process's commits, or another process's).
    Idle,
    /// The crawl is complete: nothing queued and nothing held, here or anywhere.
    Finished,
    /// The shared crawl's data was lost and it goes on from its seeds
    /// (`--after-redis-reset continue`): the engine offers them again.
    Restart,
}

/// A job this process finished: fetched (with the length of the WARC file after its records)
/// or given up.
#[derive(Debug)]
pub(crate) struct Done {
    pub(crate) job: Job,
    /// Whether a response came (it counts as a page fetched).
    pub(crate) fetched: bool,
    /// The response's status, when one came.
    pub(crate) status: Option<u16>,
    /// The WARC file's committed length after this job's records.
    pub(crate) warc_len: u64,
    /// What to send when the page is revisited (`--every`), for a page that answered 2xx.
    pub(crate) validators: Option<Validators>,
}

/// One commit: the new jobs the admission rules let through, then the jobs finished.
#[derive(Debug, Default)]
pub(crate) struct Commit {
    /// New jobs, each with its host and how it continues its page's template.
    pub(crate) queue: Vec<(Job, Option<Lineage>)>,
    /// At most this many jobs queued per host over the whole crawl (`--host-budget`).
    pub(crate) host_budget: u64,
    pub(crate) done: Vec<Done>,
}

/// What the summary and the status page show of a backend.
#[derive(Debug, Default)]
pub(crate) struct BackendReport {
    /// Pages fetched over all runs of this crawl (this process's, in a shared crawl).
    pub(crate) pages_total: u64,
    /// URLs queued and not done (0 when unknown).
    pub(crate) pending: usize,
    pub(crate) done: DoneFigures,
    /// How the previous run left the output directory (a single-process crawl).
    pub(crate) resumed: Option<crate::backend::local::Resumed>,
    /// What a shared crawl adds to the JSON summary (process name, Redis figures).
    pub(crate) extra: serde_json::Value,
}

/// Where the run queue, the done set and the budgets live.
///
/// Every method may be called from any task; the engine commits from one task only, so a
/// backend sees commits in order.
pub(crate) trait Backend: Send + Sync + 'static {
    /// This process's name in logs and output file names.
    fn process(&self) -> String;

    /// `e`, a fatal error, said so that a user knows what happened and what it means.
    fn explain(&self, e: CrawlError) -> CrawlError {
        e
    }

    /// Pages fetched before this run started (counted against `--max-pages`).
    fn pages_before(&self) -> u64;

    /// Most jobs this process holds (taken, not committed) at once.
    fn room(&self) -> usize;

    /// Whether the backend paces each host itself (the shared run queue spaces its claims),
    /// so the workers must not add their own delay.
    fn paces_hosts(&self) -> bool;

    /// Whether each of `urls` (canonical) is in the done set, without adding it.
    fn seen(&self, urls: Vec<String>)
    -> impl Future<Output = Result<Vec<bool>, CrawlError>> + Send;

    /// Adds `delta` (one more URL, or one given back) to the count of each template budget
    /// key; returns each count after.
    fn count_templates(
        &self,
        keys: Vec<String>,
        delta: i64,
    ) -> impl Future<Output = Result<Vec<u64>, CrawlError>> + Send;

    /// Adds each of `urls` (canonical) to the done set, in order: exactly one caller over all
    /// processes is told [`Verdict::New`] for a URL.
    fn admit(
        &self,
        urls: Vec<String>,
    ) -> impl Future<Output = Result<Vec<Verdict>, CrawlError>> + Send;

    /// Queues `commit.queue` (each within its host's budget) and completes `commit.done`, in
    /// that order, so a finished page's links are queued before it counts as done. Returns,
    /// per queued job, whether its host's budget let it in.
    fn commit(&self, commit: Commit) -> impl Future<Output = Result<Vec<bool>, CrawlError>> + Send;

    /// Takes up to `max` jobs to fetch. `idle` says this process holds nothing: a shared
    /// backend may then wait a little for work, and either may find the crawl complete.
    fn take(&self, max: usize, idle: bool)
    -> impl Future<Output = Result<Take, CrawlError>> + Send;

    /// How often [`housekeep`](Self::housekeep) runs.
    fn housekeeping_period(&self) -> Duration;

    /// Periodic duties: a checkpoint, or heartbeats and the leader's work. Returns whether the
    /// crawl was asked to stop (the shared stop flag).
    fn housekeep(&self) -> impl Future<Output = Result<bool, CrawlError>> + Send;

    /// Gives a host its robots.txt `Crawl-delay` for every process (a shared backend paces
    /// hosts itself).
    fn share_host_delay(
        &self,
        host: String,
        delay: Duration,
    ) -> impl Future<Output = Result<(), CrawlError>> + Send;

    /// Ends this process's part: a final checkpoint, or leaving the shared crawl (what it
    /// still holds goes back to the others). After a `fatal` error, only what is safe: no
    /// checkpoint of a state that may be incomplete, no wait for a Redis that is gone.
    fn finish(
        &self,
        fatal: Option<&CrawlError>,
    ) -> impl Future<Output = Result<(), CrawlError>> + Send;

    /// Pushes what is written to the OS, for a process about to exit at once (a second
    /// signal). Best effort; never blocks on the network.
    fn abort(&self);

    /// Figures for the summary and the status page.
    fn report(&self) -> impl Future<Output = BackendReport> + Send;

    /// The name of this process's own file `stem.ext` in the output directory (the processes
    /// of a shared crawl may share one).
    fn file_name(&self, stem: &str, ext: &str) -> String {
        format!("{stem}.{ext}")
    }

    /// Records the SimHash `simhash` of the page fetched at `url`; returns the URL of a page
    /// fetched before whose SimHash is within [`crate::dust::NEAR_BITS`] bits, if any (over
    /// every process of a shared crawl).
    fn near_page(
        &self,
        simhash: u64,
        url: &str,
    ) -> impl Future<Output = Result<Option<String>, CrawlError>> + Send;

    /// The confirmed rules other processes of a shared crawl published: each host with the
    /// text of its rules. A single-process crawl has none.
    fn shared_rules(
        &self,
    ) -> impl Future<Output = Result<Vec<(String, String)>, CrawlError>> + Send {
        async { Ok(Vec::new()) }
    }

    /// Publishes this process's confirmed rules of some hosts (each host with the text of its
    /// rules) for the other processes of a shared crawl.
    fn share_rules(
        &self,
        rules: Vec<(String, String)>,
    ) -> impl Future<Output = Result<(), CrawlError>> + Send {
        let _ = rules;
        async { Ok(()) }
    }

    /// Publishes this process's row of the status page for the crawl's other processes and,
    /// when `look`, returns what the status page shows of the whole crawl. Best effort: a
    /// failure leaves the page with this process's figures only, never stops the crawl.
    fn crawl_view(&self, mine: ProcessRow, look: bool) -> impl Future<Output = CrawlView> + Send {
        let _ = look;
        async move {
            CrawlView {
                processes: vec![mine],
                queued: None,
            }
        }
    }
}
