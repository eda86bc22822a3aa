//! The crawl's durable state behind one lock: the done set, the run queue, the journal, the
//! WARC file and the skip report.
//!
//! The run queue is on disk ([`QueueFile`]): memory holds the jobs handed to workers (at most
//! the hand-out window), so a crawl of any size runs in bounded memory.
//!
//! Admission and completion happen under this lock, so the done-set check is exact
//! (check-and-insert, never two workers admitting one URL), and every change reaches the journal
//! in the order it happened. The lock is taken once per fetched page, not once per link.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::checkpoint::{self, Checkpoint, CheckpointRef};
pub(crate) use crate::done::FilterSize;
use crate::done::{DoneSet, Verdict};
use crate::error::CrawlError;
use crate::fetch::Exchange;
use crate::frontier::{Job, Pending};
use crate::journal::{self, Event, Journal};
use crate::queue_file::{self, QueueFile};
use crate::records::Records;
use crate::skip::SkipReason;
use crate::template::{self, Lineage};
use crate::traps::TrapRules;

/// What the done set said about a link.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Admission {
    Admitted(Job),
    Duplicate,
    Skipped(SkipReason),
}

/// How the previous run left the output directory.
#[derive(Debug, Default)]
pub(crate) struct Resumed {
    pub(crate) pending: usize,
    pub(crate) pages_done: u64,
    pub(crate) from_checkpoint: bool,
    pub(crate) journal_events: usize,
}

#[derive(Debug)]
pub(crate) struct CrawlState {
    dir: PathBuf,
    done: DoneSet,
    /// Admitted jobs not handed to a worker yet, in admission order.
    queue: QueueFile,
    /// Jobs handed to workers and not done, in admission order.
    handed: Pending,
    /// URLs done since the checkpoint that may still be read from the queue file (a resumed
    /// crawl's file holds what was pending at the checkpoint): skipped when read.
    done_since: HashSet<Arc<str>>,
    host_admitted: HashMap<String, u64>,
    host_budget: u64,
    /// URLs admitted per template budget key (`crate::template`).
    template_admitted: HashMap<String, u64>,
    template_budget: u64,
    generation: u64,
    journal: Journal,
    /// WARC length committed by the journal.
    warc_len: u64,
    pages_done: u64,
    /// The WARC file, the skip report and the counters of this run.
    pub(crate) records: Records,
}

impl CrawlState {
    /// Opens the state in `dir`: a fresh crawl, or the checkpoint and journal of an interrupted
    /// one.
    pub(crate) fn open(
        dir: &Path,
        size: FilterSize,
        traps: &TrapRules,
        warc: bool,
        software: &str,
    ) -> Result<(Self, Resumed), CrawlError> {
        let mut resumed = Resumed::default();
        let start = match checkpoint::read(dir, size)? {
            Some(c) => {
                resumed.from_checkpoint = true;
                c
            }
            None => Checkpoint {
                generation: 0,
                pages_done: 0,
                warc_len: 0,
                queue_len: 0,
                host_admitted: HashMap::new(),
                template_admitted: HashMap::new(),
                done: DoneSet::local(size)?,
            },
        };
        let Checkpoint {
            generation,
            mut pages_done,
            mut warc_len,
            queue_len,
            mut host_admitted,
            mut template_admitted,
            done,
        } = start;
        let queue_path = queue_file::path(dir, generation);
        let mut queue = QueueFile::open(dir, generation, queue_len)
            .map_err(CrawlError::io("opening the run queue", &queue_path))?;
        let mut done_since = HashSet::new();
        let journal_path = journal::path(dir, generation);
        let (events, valid) = journal::replay(&journal_path)
            .map_err(CrawlError::io("reading journal", &journal_path))?;
        resumed.journal_events = events.len();
        for event in events {
            match event {
                Event::Admitted(job, lineage) => {
                    // Replayed in admission order, so the similarity filter sees what it saw.
                    done.admit(&job.url)?;
                    *host_admitted.entry(host_key(&job.url)).or_default() += 1;
                    if let Some(lineage) = lineage {
                        *template_admitted
                            .entry(template::key(&job.url, lineage))
                            .or_default() += 1;
                    }
                    queue
                        .push(&job)
                        .map_err(CrawlError::io("writing the run queue", &queue_path))?;
                }
                Event::Done {
                    url,
                    warc_len: len,
                    fetched,
                } => {
                    done_since.insert(Arc::from(url));
                    warc_len = warc_len.max(len);
                    pages_done += u64::from(fetched);
                }
            }
        }
        resumed.pending = (queue.unread() as usize).saturating_sub(done_since.len());
        resumed.pages_done = pages_done;
        let journal = Journal::open(dir, generation, valid)
            .map_err(CrawlError::io("opening journal", &journal_path))?;
        let records = Records::open(dir, warc.then_some(("crawl.warc", warc_len)), software)?;
        if warc {
            warc_len = records.warc_offset();
        }
        let state = Self {
            dir: dir.to_owned(),
            done,
            queue,
            handed: Pending::default(),
            done_since,
            host_admitted,
            host_budget: traps.host_budget,
            template_admitted,
            template_budget: traps.template_budget,
            generation,
            journal,
            warc_len,
            pages_done,
            records,
        };
        Ok((state, resumed))
    }

    /// Hands up to `room` more jobs to the workers, in admission order (fewer when the window
    /// of `window` jobs handed and not done is full). An empty answer with nothing handed out
    /// means the run queue is empty: the crawl is complete.
    pub(crate) fn hand_out(&mut self, window: usize) -> Result<Vec<Job>, CrawlError> {
        let mut out = Vec::new();
        while self.handed.len() < window {
            let next = self.queue.pop().map_err(CrawlError::io(
                "reading the run queue",
                queue_file::path(&self.dir, self.generation),
            ))?;
            let Some(job) = next else { break };
            if self.done_since.contains(&job.url) {
                continue;
            }
            self.handed.push(job.clone());
            out.push(job);
        }
        Ok(out)
    }

    /// Jobs handed out and not done.
    pub(crate) fn handed_len(&self) -> usize {
        self.handed.len()
    }

    /// Admitted URLs not done: handed out, or waiting in the queue file.
    pub(crate) fn pending_len(&self) -> usize {
        self.handed.len() + self.queue.unread() as usize
    }

    /// What the summary reads: the records, the done set, the pages fetched over all runs and
    /// the URLs still queued.
    pub(crate) fn for_summary(&mut self) -> (&mut Records, &DoneSet, (u64, usize)) {
        let totals = (self.pages_done, self.pending_len());
        (&mut self.records, &self.done, totals)
    }

    /// Pages fetched over all runs.
    pub(crate) fn pages_done(&self) -> u64 {
        self.pages_done
    }

    /// Offers `job` to the done set: admitted (and journaled) when new and within its host's
    /// budget and, when it continues the template of the page it was found on (`lineage`),
    /// within that template's budget.
    pub(crate) fn admit(
        &mut self,
        job: Job,
        lineage: Option<Lineage>,
    ) -> Result<Admission, CrawlError> {
        if self.done.contains(&job.url)? {
            self.records.stats.duplicate_links += 1;
            return Ok(Admission::Duplicate);
        }
        let host = host_key(&job.url);
        let count = self.host_admitted.get(&host).copied().unwrap_or(0);
        if count >= self.host_budget {
            self.skip(SkipReason::HostBudget, &job.url, "")?;
            return Ok(Admission::Skipped(SkipReason::HostBudget));
        }
        let template = lineage.map(|l| template::key(&job.url, l));
        if let Some(key) = &template
            && self.template_admitted.get(key).copied().unwrap_or(0) >= self.template_budget
        {
            // Not put in the done set: a link from another page may still admit it.
            self.skip(SkipReason::TemplateBudget, &job.url, key)?;
            return Ok(Admission::Skipped(SkipReason::TemplateBudget));
        }
        match self.done.admit(&job.url)? {
            Verdict::New => {}
            // Only a false positive of the filter gets here after `contains` said no.
            Verdict::Duplicate => {
                self.records.stats.duplicate_links += 1;
                return Ok(Admission::Duplicate);
            }
            // Kept in the done set, so the next link to it is a plain duplicate.
            Verdict::Similar(why) => {
                self.skip(SkipReason::Similar, &job.url, &why)?;
                return Ok(Admission::Skipped(SkipReason::Similar));
            }
        }
        self.host_admitted.insert(host, count + 1);
        if let Some(key) = template {
            *self.template_admitted.entry(key).or_default() += 1;
        }
        self.journal
            .admitted(&job, lineage)
            .map_err(self.journal_error())?;
        self.queue.push(&job).map_err(CrawlError::io(
            "writing the run queue",
            queue_file::path(&self.dir, self.generation),
        ))?;
        self.records.stats.admitted += 1;
        Ok(Admission::Admitted(job))
    }

    /// Records a skip in the report.
    pub(crate) fn skip(
        &mut self,
        reason: SkipReason,
        url: &str,
        detail: &str,
    ) -> Result<(), CrawlError> {
        self.records.skip(reason, url, detail)
    }

    /// Marks `job` done. With an exchange, its records go to the WARC first, so the journaled
    /// WARC length covers them.
    pub(crate) fn complete(
        &mut self,
        job: &Job,
        exchange: Option<&Exchange>,
    ) -> Result<(), CrawlError> {
        if let Some(x) = exchange {
            let offset = self.records.exchange(&job.url, x)?;
            self.warc_len = self.warc_len.max(offset);
            self.pages_done += 1;
        }
        self.journal
            .done(&job.url, self.warc_len, exchange.is_some())
            .map_err(self.journal_error())?;
        self.journal.flush().map_err(self.journal_error())?;
        self.records.flush_skips();
        self.handed.remove(&job.url);
        Ok(())
    }

    /// Pushes everything written so far to the OS (the journal and the WARC are already
    /// flushed at every commit; the skip report is buffered), for a process about to exit
    /// without a checkpoint. Best effort: the next run recovers from any torn tail.
    pub(crate) fn flush(&mut self) {
        let _ = self.journal.flush();
        self.records.flush();
    }

    /// Writes a checkpoint and starts the next journal generation.
    pub(crate) fn checkpoint(&mut self) -> Result<(), CrawlError> {
        self.journal.sync().map_err(self.journal_error())?;
        self.records.flush_warc()?;
        let next = self.generation + 1;
        // The next generation's queue file: what is pending now, handed-out jobs first.
        let queue = self
            .queue
            .rotate(&self.dir, next, self.handed.iter(), &self.done_since)
            .map_err(CrawlError::io(
                "writing the run queue",
                queue_file::path(&self.dir, next),
            ))?;
        checkpoint::write(
            &self.dir,
            CheckpointRef {
                generation: next,
                pages_done: self.pages_done,
                warc_len: self.warc_len,
                queue_len: queue.len(),
                host_admitted: &self.host_admitted,
                template_admitted: &self.template_admitted,
                done: &self.done,
            },
        )?;
        let old = (
            journal::path(&self.dir, self.generation),
            queue_file::path(&self.dir, self.generation),
        );
        self.journal = Journal::open(&self.dir, next, 0).map_err(CrawlError::io(
            "opening journal",
            journal::path(&self.dir, next),
        ))?;
        self.queue = queue;
        self.done_since.clear();
        self.generation = next;
        let _ = std::fs::remove_file(old.0);
        let _ = std::fs::remove_file(old.1);
        Ok(())
    }

    fn journal_error(&self) -> impl FnOnce(std::io::Error) -> CrawlError {
        CrawlError::io("writing journal", journal::path(&self.dir, self.generation))
    }
}

/// `host:port` of a canonical URL string, the unit of the per-host budget.
pub(crate) fn host_key(url: &str) -> String {
    url::Url::parse(url)
        .ok()
        .map(|u| {
            format!(
                "{}:{}",
                u.host_str().unwrap_or_default(),
                u.port_or_known_default().unwrap_or(0)
            )
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frontier::JobKind;

    fn job(u: &str) -> Job {
        Job {
            url: u.into(),
            depth: 0,
            hops: 0,
            kind: JobKind::Page,
            claim: None,
        }
    }

    fn budgets(host: u64, template: u64) -> TrapRules {
        TrapRules {
            max_url_len: 1024,
            max_slashes: 24,
            max_segment_repeats: 3,
            max_depth: 1000,
            host_budget: host,
            template_budget: template,
        }
    }

    const SIZE: FilterSize = FilterSize {
        expected_urls: 1000,
        false_positive_rate: 1e-6,
        similar: false,
    };

    #[test]
    fn admission_is_exact_and_budgeted() {
        let dir = tempfile::tempdir().unwrap();
        let (mut s, _) = CrawlState::open(dir.path(), SIZE, &budgets(2, 100), false, "t").unwrap();
        assert!(matches!(
            s.admit(job("http://h/a"), None).unwrap(),
            Admission::Admitted(_)
        ));
        assert_eq!(
            s.admit(job("http://h/a"), None).unwrap(),
            Admission::Duplicate
        );
        assert!(matches!(
            s.admit(job("http://h/b"), None).unwrap(),
            Admission::Admitted(_)
        ));
        assert_eq!(
            s.admit(job("http://h/c"), None).unwrap(),
            Admission::Skipped(SkipReason::HostBudget)
        );
        assert!(matches!(
            s.admit(job("http://g/c"), None).unwrap(),
            Admission::Admitted(_)
        ));
        assert_eq!(s.pending_len(), 3);
    }

    #[test]
    fn reopening_replays_checkpoint_and_journal() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (mut s, _) =
                CrawlState::open(dir.path(), SIZE, &budgets(100, 100), false, "t").unwrap();
            s.admit(job("http://h/a"), None).unwrap();
            s.admit(job("http://h/b"), None).unwrap();
            assert_eq!(s.hand_out(10).unwrap().len(), 2);
            s.complete(&job("http://h/a"), None).unwrap();
            s.checkpoint().unwrap();
            s.admit(job("http://h/c"), None).unwrap();
            s.complete(&job("http://h/b"), None).unwrap();
            // dropped without a final checkpoint, as after kill -9
        }
        let (mut s, resumed) =
            CrawlState::open(dir.path(), SIZE, &budgets(100, 100), false, "t").unwrap();
        assert!(resumed.from_checkpoint);
        assert_eq!(resumed.journal_events, 2);
        let pending: Vec<String> = s
            .hand_out(10)
            .unwrap()
            .iter()
            .map(|j| j.url.to_string())
            .collect();
        assert_eq!(pending, ["http://h/c"]);
        for u in ["http://h/a", "http://h/b", "http://h/c"] {
            assert_eq!(s.admit(job(u), None).unwrap(), Admission::Duplicate, "{u}");
        }
    }

    /// A run queue far longer than the hand-out window waits on disk, in admission order, and
    /// comes back whole after a checkpoint and a kill: handed-out jobs not done first.
    #[test]
    fn a_long_run_queue_waits_on_disk_and_survives_a_kill() {
        let dir = tempfile::tempdir().unwrap();
        let url = |i: usize| format!("http://h/{i}");
        {
            let (mut s, _) =
                CrawlState::open(dir.path(), SIZE, &budgets(1 << 20, 100), false, "t").unwrap();
            for i in 0..20_000 {
                s.admit(job(&url(i)), None).unwrap();
            }
            let first = s.hand_out(100).unwrap();
            assert_eq!(first.len(), 100);
            assert_eq!(s.handed_len(), 100);
            assert_eq!(s.pending_len(), 20_000);
            for j in &first[..60] {
                s.complete(j, None).unwrap();
            }
            assert_eq!(
                s.hand_out(100).unwrap().first().map(|j| j.url.to_string()),
                Some(url(100))
            );
            s.checkpoint().unwrap();
            s.complete(&job(&url(60)), None).unwrap();
            // kill -9
        }
        let (mut s, resumed) =
            CrawlState::open(dir.path(), SIZE, &budgets(1 << 20, 100), false, "t").unwrap();
        assert_eq!(resumed.pending, 19_939);
        let mut order = Vec::new();
        loop {
            let batch = s.hand_out(1000).unwrap();
            if batch.is_empty() {
                break;
            }
            for j in &batch {
                s.complete(j, None).unwrap();
            }
            order.extend(batch.into_iter().map(|j| j.url.to_string()));
        }
        let want: Vec<String> = (61..20_000).map(url).collect();
        assert_eq!(order, want);
    }

    #[test]
    fn template_budgets_count_only_their_lineage_and_survive_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let open = || CrawlState::open(dir.path(), SIZE, &budgets(100, 2), false, "t").unwrap();
        let month = |m: u32| job(&format!("http://h/cal/2026/{m}"));
        {
            let (mut s, _) = open();
            // Linked from elsewhere: not counted.
            assert!(matches!(
                s.admit(month(1), None).unwrap(),
                Admission::Admitted(_)
            ));
            for m in 2..=3 {
                let a = s.admit(month(m), Some(Lineage::Template)).unwrap();
                assert!(matches!(a, Admission::Admitted(_)), "{m}");
            }
            s.checkpoint().unwrap();
            assert_eq!(
                s.admit(month(4), Some(Lineage::Template)).unwrap(),
                Admission::Skipped(SkipReason::TemplateBudget)
            );
            // Another template has its own budget.
            let other = job("http://h/tree/0/1/");
            assert!(matches!(
                s.admit(other, Some(Lineage::Template)).unwrap(),
                Admission::Admitted(_)
            ));
        }
        let (mut s, _) = open();
        assert_eq!(
            s.admit(month(5), Some(Lineage::Template)).unwrap(),
            Admission::Skipped(SkipReason::TemplateBudget)
        );
        // A budget-skipped URL stays out of the done set: linked from elsewhere, it is admitted.
        assert!(matches!(
            s.admit(month(4), None).unwrap(),
            Admission::Admitted(_)
        ));
        assert!(matches!(
            s.admit(job("http://h/tree/0/1/2/"), Some(Lineage::Template))
                .unwrap(),
            Admission::Admitted(_)
        ));
        assert_eq!(
            s.admit(job("http://h/tree/0/1/2/0/"), Some(Lineage::Template))
                .unwrap(),
            Admission::Skipped(SkipReason::TemplateBudget),
            "replayed from the journal"
        );
    }
}
