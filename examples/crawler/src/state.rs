//! The crawl's durable state behind one lock: the done set, the run queue, the journal, the
//! WARC file and the skip report.
//!
//! Admission and completion happen under this lock, so the done-set check is exact
//! (check-and-insert, never two workers admitting one URL), and every change reaches the journal
//! in the order it happened. The lock is taken once per fetched page, not once per link.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::checkpoint::{self, Checkpoint, CheckpointRef};
pub(crate) use crate::done::FilterSize;
use crate::done::{DoneSet, Verdict};
use crate::error::CrawlError;
use crate::fetch::Exchange;
use crate::frontier::{Job, Pending};
use crate::journal::{self, Event, Journal};
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
    pending: Pending,
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
                pending: Vec::new(),
                host_admitted: HashMap::new(),
                template_admitted: HashMap::new(),
                done: DoneSet::local(size)?,
            },
        };
        let Checkpoint {
            generation,
            mut pages_done,
            mut warc_len,
            pending: queued,
            mut host_admitted,
            mut template_admitted,
            done,
        } = start;
        let mut pending = Pending::default();
        queued.into_iter().for_each(|j| pending.push(j));
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
                    pending.push(job);
                }
                Event::Done {
                    url,
                    warc_len: len,
                    fetched,
                } => {
                    pending.remove(&url);
                    warc_len = warc_len.max(len);
                    pages_done += u64::from(fetched);
                }
            }
        }
        resumed.pending = pending.len();
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
            pending,
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

    /// The run queue, in admission order.
    pub(crate) fn pending(&self) -> impl Iterator<Item = &Job> {
        self.pending.iter()
    }

    pub(crate) fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// Pages fetched over all runs.
    pub(crate) fn pages_done(&self) -> u64 {
        self.pages_done
    }

    pub(crate) fn done_set(&self) -> &DoneSet {
        &self.done
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
        self.pending.push(job.clone());
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
    /// WARC length covers them. Returns whether the run queue is now empty.
    pub(crate) fn complete(
        &mut self,
        job: &Job,
        exchange: Option<&Exchange>,
    ) -> Result<bool, CrawlError> {
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
        self.pending.remove(&job.url);
        Ok(self.pending.is_empty())
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
        checkpoint::write(
            &self.dir,
            CheckpointRef {
                generation: next,
                pages_done: self.pages_done,
                warc_len: self.warc_len,
                pending: self.pending.iter(),
                host_admitted: &self.host_admitted,
                template_admitted: &self.template_admitted,
                done: &self.done,
            },
        )?;
        let old = journal::path(&self.dir, self.generation);
        self.journal = Journal::open(&self.dir, next, 0).map_err(CrawlError::io(
            "opening journal",
            journal::path(&self.dir, next),
        ))?;
        self.generation = next;
        let _ = std::fs::remove_file(old);
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
        assert_eq!(
            s.pending().map(|j| &*j.url).collect::<Vec<_>>(),
            ["http://h/c"]
        );
        for u in ["http://h/a", "http://h/b", "http://h/c"] {
            assert_eq!(s.admit(job(u), None).unwrap(), Admission::Duplicate, "{u}");
        }
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
