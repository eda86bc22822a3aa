//! The shared run queue: claims from the stripes, the done set's calls, and the commit
//! script that queues a batch's new URLs and acknowledges its pages in one round trip.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::setup::{job_of, task_of};
use super::{SharedBackend, StripeWork, micros_since_epoch};
use crate::backend::Commit;
use crate::done::Verdict;
use crate::error::CrawlError;
use crate::job::Job;

impl SharedBackend {
    pub(super) fn stripe_of(&self, host: &str) -> usize {
        let (vnode, _) = self.table.route(host.as_bytes());
        vnode.index() % self.build.stripes
    }

    /// Claims up to `max` URLs, rotating over the stripes. With `wait`, an idle process waits
    /// up to that long for a URL to be queued (woken through pub/sub); a busy one never waits
    /// here: its own commits free the slots it is waiting for. A process whose membership
    /// lapsed (Redis was paused or unreachable longer than the lease) joins again and claims.
    pub(super) async fn claim(
        &self,
        max: usize,
        wait: Option<Duration>,
    ) -> Result<Vec<Job>, CrawlError> {
        match self.claim_once(max, wait).await {
            Err(CrawlError::Shared(url_dedup_redis::Error::NotMember(_))) => {
                self.logger
                    .warn("membership lease lapsed (Redis paused or unreachable?); joined again")
                    .await;
                self.join().await?;
                self.claim_once(max, wait).await
            }
            other => other,
        }
    }

    pub(super) async fn claim_once(
        &self,
        max: usize,
        wait: Option<Duration>,
    ) -> Result<Vec<Job>, CrawlError> {
        let store = self.store();
        let n = store.stripes.len();
        let start = self.next_stripe.fetch_add(1, Ordering::Relaxed);
        let mut tasks = Vec::new();
        for i in 0..n {
            let s = (start + i) % n;
            self.called(1);
            let got = store.stripes[s].claim_batch(&self.me, max).await?;
            if !got.is_empty() {
                tasks = got.into_iter().map(|t| (s, t)).collect();
                break;
            }
        }
        if let (true, Some(wait)) = (tasks.is_empty(), wait) {
            let s = start % n;
            self.called(1);
            tasks = store.stripes[s]
                .claim_batch_wait(&self.me, max, wait / n as u32)
                .await?
                .into_iter()
                .map(|t| (s, t))
                .collect();
        }
        let mut claims = self.claims();
        Ok(tasks
            .into_iter()
            .map(|(stripe, task)| {
                let job = job_of(&task);
                claims.insert(job.url.clone(), (stripe, task));
                job
            })
            .collect())
    }

    /// Whether every stripe is empty with nothing claimed by any process.
    pub(super) async fn drained(&self) -> Result<bool, CrawlError> {
        for f in &self.store().stripes {
            self.called(2);
            if f.pending().await? > 0 || f.in_flight().await? > 0 {
                return Ok(false);
            }
        }
        Ok(true)
    }

    pub(super) async fn seen_once(&self, urls: Vec<String>) -> Result<Vec<bool>, CrawlError> {
        let done = self.store().done.clone();
        self.called(1);
        tokio::task::spawn_blocking(move || done.contains_batch(&urls))
            .await
            .map_err(|e| CrawlError::Options(format!("done set task: {e}")))?
    }

    pub(super) async fn admit_once(&self, urls: Vec<String>) -> Result<Vec<Verdict>, CrawlError> {
        let done = self.store().done.clone();
        self.called(1);
        tokio::task::spawn_blocking(move || done.admit_batch(&urls))
            .await
            .map_err(|e| CrawlError::Options(format!("done set task: {e}")))?
    }

    /// Queues and acknowledges one commit on the current store.
    pub(super) async fn commit_once(&self, commit: &Commit) -> Result<Vec<bool>, CrawlError> {
        let offered_at = micros_since_epoch();
        let store = self.store();
        // Per stripe: the new URLs of its hosts, and the claims taken from it.
        let mut work: HashMap<usize, StripeWork> = HashMap::new();
        for (i, (job, _)) in commit.queue.iter().enumerate() {
            let task = task_of(job)?;
            let w = work.entry(self.stripe_of(task.host())).or_default();
            w.0.push(i);
            w.1.push(task);
        }
        {
            let claims = self.claims();
            for done in &commit.done {
                // A job claimed under a store since lost has no claim left to give back.
                if let Some((stripe, task)) = claims.get(&done.job.url) {
                    work.entry(*stripe).or_default().2.push(task.clone());
                }
            }
        }
        let remember: Vec<_> = commit
            .done
            .iter()
            .filter(|_| self.every.is_some())
            .filter_map(|d| d.validators.as_ref().map(|v| (&*d.job.url, v.encode())))
            .collect();
        if !remember.is_empty() {
            let mut cmd = redis::cmd("HSET");
            cmd.arg(&self.keys.known);
            for (url, validators) in &remember {
                cmd.arg(*url).arg(validators);
            }
            let _: u64 = self.query("remember validators", &cmd).await?;
        }
        let mut queued = vec![false; commit.queue.len()];
        for (s, (indices, tasks, acks)) in work {
            self.called(1);
            let answer = store.stripes[s]
                .commit(&self.me, &tasks, commit.host_budget, &acks)
                .await?;
            let decided_at = micros_since_epoch();
            for (i, ok) in indices.into_iter().zip(answer) {
                queued[i] = ok;
                if ok {
                    let url = &commit.queue[i].0.url;
                    self.admitted
                        .write(format_args!("{offered_at}\t{decided_at}\t{url}"))?;
                }
            }
        }
        Ok(queued)
    }
}
