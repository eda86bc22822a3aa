//! The crawl's durable state behind one lock: the done set, the run queue, the journal, the
//! WARC file and the skip report.
//!
//! The run queue is on disk ([`QueueFile`]): memory holds the jobs handed to workers (at most
//! the hand-out window), so a crawl of any size runs in bounded memory.
//!
//! Admission and completion happen under this lock, so the done-set check is exact
//! (check-and-insert, never two workers admitting one URL), and every change reaches the journal
//! in the order it happened. The lock is taken once per fetched page, not once per link.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::checkpoint::{self, Checkpoint, CheckpointRef};
pub(crate) use crate::done::FilterSize;
use crate::done::{DoneSet, Verdict};
use crate::error::CrawlError;
use crate::job::Job;
use crate::journal::{self, Event, Journal};
use crate::queue_file::{self, QueueFile};
use crate::template::{self, Lineage};

/// How the previous run left the output directory.
#[derive(Debug, Default, Clone)]
pub(crate) struct Resumed {
    pub(crate) pending: usize,
    pub(crate) pages_done: u64,
    pub(crate) from_checkpoint: bool,
    pub(crate) journal_events: usize,
    /// The checkpoint's journal was missing: what happened after the checkpoint is forgotten.
    pub(crate) journal_missing: bool,
    /// What the run found wrong with the state it resumed and went on from (said on stderr
    /// and in the summary).
    pub(crate) warnings: Vec<String>,
}

/// Jobs handed to workers and not done, in admission order.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    by_seq: BTreeMap<u64, Job>,
    seq_of: HashMap<Arc<str>, u64>,
    next: u64,
}

impl Pending {
    pub(crate) fn push(&mut self, job: Job) {
        if self.seq_of.contains_key(&job.url) {
            return;
        }
        self.seq_of.insert(job.url.clone(), self.next);
        self.by_seq.insert(self.next, job);
        self.next += 1;
    }

    /// Removes `url`; whether it was pending.
    pub(crate) fn remove(&mut self, url: &str) -> bool {
        match self.seq_of.remove(url) {
            Some(seq) => self.by_seq.remove(&seq).is_some(),
            None => false,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.by_seq.len()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Job> {
        self.by_seq.values()
    }
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
    /// URLs queued per host (`crate::job::host_of`).
    host_admitted: HashMap<String, u64>,
    /// URLs counted per template budget key (`crate::template`).
    template_admitted: HashMap<String, u64>,
    generation: u64,
    journal: Journal,
    /// WARC length committed by the journal.
    warc_len: u64,
    pages_done: u64,
}

impl CrawlState {
    /// Opens the state in `dir`: a fresh crawl, or the checkpoint and journal of an interrupted
    /// one. Also returns how the previous run left it, and the committed length of the WARC
    /// file.
    pub(crate) fn open(dir: &Path, size: FilterSize) -> Result<(Self, Resumed), CrawlError> {
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
        resumed.journal_missing = resumed.from_checkpoint && !journal_path.exists();
        let (events, valid) = journal::replay(&journal_path)
            .map_err(CrawlError::io("reading journal", &journal_path))?;
        resumed.journal_events = events.len();
        for event in events {
            match event {
                Event::Admitted(job, lineage) => {
                    // Replayed in admission order, so the similarity filter sees what it saw.
                    done.admit(&job.url)?;
                    *host_admitted.entry(job.host()).or_default() += 1;
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
        let state = Self {
            dir: dir.to_owned(),
            done,
            queue,
            handed: Pending::default(),
            done_since,
            host_admitted,
            template_admitted,
            generation,
            journal,
            warc_len,
            pages_done,
        };
        Ok((state, resumed))
    }

    /// The WARC file's committed length: the next run cuts it back to this.
    pub(crate) fn warc_len(&self) -> u64 {
        self.warc_len
    }

    /// Hands up to `max` more jobs to the workers, in admission order.
    pub(crate) fn hand_out(&mut self, max: usize) -> Result<Vec<Job>, CrawlError> {
        let mut out = Vec::new();
        while out.len() < max {
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

    /// The done set.
    pub(crate) fn done_set(&self) -> &DoneSet {
        &self.done
    }

    /// Pages fetched over all runs.
    pub(crate) fn pages_done(&self) -> u64 {
        self.pages_done
    }

    /// Whether each URL is in the done set.
    pub(crate) fn seen(&self, urls: &[String]) -> Result<Vec<bool>, CrawlError> {
        self.done.contains_batch(urls)
    }

    /// Adds `delta` to the count of each template budget key; each count after.
    pub(crate) fn count_templates(&mut self, keys: &[String], delta: i64) -> Vec<u64> {
        keys.iter()
            .map(|k| {
                let n = self.template_admitted.entry(k.clone()).or_default();
                *n = n.saturating_add_signed(delta);
                *n
            })
            .collect()
    }

    /// Adds each URL to the done set.
    pub(crate) fn admit(&mut self, urls: &[String]) -> Result<Vec<Verdict>, CrawlError> {
        self.done.admit_batch(urls)
    }

    /// Queues `job` (journaled with how it continues its page's template, so a replay counts
    /// its template again) when its host has had fewer than `host_budget` URLs queued;
    /// whether it was.
    pub(crate) fn queue(
        &mut self,
        job: &Job,
        lineage: Option<Lineage>,
        host_budget: u64,
    ) -> Result<bool, CrawlError> {
        let count = self.host_admitted.entry(job.host()).or_default();
        if *count >= host_budget {
            return Ok(false);
        }
        *count += 1;
        self.journal
            .admitted(job, lineage)
            .map_err(self.journal_error())?;
        self.queue.push(job).map_err(CrawlError::io(
            "writing the run queue",
            queue_file::path(&self.dir, self.generation),
        ))?;
        Ok(true)
    }

    /// Marks `job` done (fetched or not) with the WARC file committed up to `warc_len`.
    pub(crate) fn complete(
        &mut self,
        job: &Job,
        fetched: bool,
        warc_len: u64,
    ) -> Result<(), CrawlError> {
        self.warc_len = self.warc_len.max(warc_len);
        self.pages_done += u64::from(fetched);
        self.journal
            .done(&job.url, self.warc_len, fetched)
            .map_err(self.journal_error())?;
        self.handed.remove(&job.url);
        Ok(())
    }

    /// Pushes the journal's buffer to the OS: every commit ends with it.
    pub(crate) fn flush(&mut self) -> Result<(), CrawlError> {
        self.journal.flush().map_err(self.journal_error())
    }

    /// Writes a checkpoint and starts the next journal generation.
    pub(crate) fn checkpoint(&mut self) -> Result<(), CrawlError> {
        self.journal.sync().map_err(self.journal_error())?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::JobKind;

    const SIZE: FilterSize = FilterSize {
        expected_urls: 1000,
        false_positive_rate: 1e-6,
        similar: false,
    };

    fn job(u: &str) -> Job {
        Job::new(u, 0, 0, JobKind::Page)
    }

    /// Queues `u` as the admission rules would once the done set said it is new.
    fn queue(s: &mut CrawlState, u: &str) {
        assert_eq!(s.admit(&[u.into()]).unwrap(), [Verdict::New], "{u}");
        assert!(s.queue(&job(u), None, u64::MAX).unwrap(), "{u}");
    }

    #[test]
    fn reopening_replays_checkpoint_and_journal() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (mut s, _) = CrawlState::open(dir.path(), SIZE).unwrap();
            queue(&mut s, "http://h/a");
            queue(&mut s, "http://h/b");
            assert_eq!(s.hand_out(10).unwrap().len(), 2);
            s.complete(&job("http://h/a"), false, 0).unwrap();
            s.checkpoint().unwrap();
            queue(&mut s, "http://h/c");
            s.complete(&job("http://h/b"), false, 0).unwrap();
            s.flush().unwrap();
            // dropped without a final checkpoint, as after kill -9
        }
        let (mut s, resumed) = CrawlState::open(dir.path(), SIZE).unwrap();
        assert!(resumed.from_checkpoint);
        assert_eq!(resumed.journal_events, 2);
        let pending: Vec<String> = s
            .hand_out(10)
            .unwrap()
            .iter()
            .map(|j| j.url.to_string())
            .collect();
        assert_eq!(pending, ["http://h/c"]);
        let all = ["http://h/a", "http://h/b", "http://h/c"].map(String::from);
        assert_eq!(s.seen(&all).unwrap(), [true; 3]);
    }

    /// A run queue far longer than the hand-out window waits on disk, in admission order, and
    /// comes back whole after a checkpoint and a kill: handed-out jobs not done first.
    #[test]
    fn a_long_run_queue_waits_on_disk_and_survives_a_kill() {
        let dir = tempfile::tempdir().unwrap();
        let url = |i: usize| format!("http://h/{i}");
        {
            let (mut s, _) = CrawlState::open(dir.path(), SIZE).unwrap();
            for i in 0..20_000 {
                assert!(s.queue(&job(&url(i)), None, u64::MAX).unwrap());
            }
            let first = s.hand_out(100).unwrap();
            assert_eq!(first.len(), 100);
            assert_eq!(s.handed_len(), 100);
            assert_eq!(s.pending_len(), 20_000);
            for j in &first[..60] {
                s.complete(j, false, 0).unwrap();
            }
            assert_eq!(
                s.hand_out(100).unwrap().first().map(|j| j.url.to_string()),
                Some(url(100))
            );
            s.checkpoint().unwrap();
            s.complete(&job(&url(60)), false, 0).unwrap();
            s.flush().unwrap();
            // kill -9
        }
        let (mut s, resumed) = CrawlState::open(dir.path(), SIZE).unwrap();
        assert_eq!(resumed.pending, 19_939);
        let mut order = Vec::new();
        loop {
            let batch = s.hand_out(1000).unwrap();
            if batch.is_empty() {
                break;
            }
            for j in &batch {
                s.complete(j, false, 0).unwrap();
            }
            order.extend(batch.into_iter().map(|j| j.url.to_string()));
        }
        let want: Vec<String> = (61..20_000).map(url).collect();
        assert_eq!(order, want);
    }

    /// The host budget counts per host (its name and a port other than the default), and the
    /// counts come back from the journal.
    #[test]
    fn host_budgets_count_per_host_and_survive_a_kill() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (mut s, _) = CrawlState::open(dir.path(), SIZE).unwrap();
            assert!(s.queue(&job("http://h/a"), None, 2).unwrap());
            // http and https of one host are one host.
            assert!(s.queue(&job("https://h/b"), None, 2).unwrap());
            assert!(!s.queue(&job("http://h/c"), None, 2).unwrap());
            assert!(s.queue(&job("http://h:8080/c"), None, 2).unwrap());
            s.flush().unwrap();
        }
        let (mut s, _) = CrawlState::open(dir.path(), SIZE).unwrap();
        assert!(!s.queue(&job("http://h/d"), None, 2).unwrap());
        assert!(s.queue(&job("http://h:8080/d"), None, 2).unwrap());
    }
}
