//! Which worker crawls which host: document 002's `Key = Transfer(host(url)) mod n`.
//!
//! Every URL of a host goes to one worker, so that worker alone paces the host (one request at
//! a time by default, the delay, robots.txt) without any lock shared with other workers.
//! `Transfer` is the workspace's SipHash-1-3 with a fixed key, reduced by multiply-shift: a
//! stable assignment, uniform over hosts.

use tokio::sync::mpsc::UnboundedSender;
use url_dedup_bloom::hash::{HashKey, ItemHasher, SipHash13, reduce};

use crate::frontier::Job;

/// Sends jobs to the worker that owns their host.
#[derive(Debug)]
pub(crate) struct Router {
    workers: Vec<UnboundedSender<Job>>,
    hasher: SipHash13,
}

impl Router {
    pub(crate) fn new(workers: Vec<UnboundedSender<Job>>) -> Self {
        Self {
            workers,
            hasher: SipHash13::new(HashKey::from_bytes(*b"url-dedup-router")),
        }
    }

    /// The worker of `host`.
    pub(crate) fn worker_of(&self, host: &str) -> usize {
        owner(&self.hasher, host, self.workers.len())
    }

    /// Queues `job` at its host's worker.
    pub(crate) fn route(&self, job: Job) {
        let host = crate::state::host_key(&job.url);
        // A worker only goes away when the crawl is stopping; its jobs stay in the checkpoint.
        let _ = self.workers[self.worker_of(&host)].send(job);
    }
}

fn owner(hasher: &SipHash13, host: &str, workers: usize) -> usize {
    reduce(hasher.hash(host.as_bytes()).h1, workers as u64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_spread_over_workers() {
        let h = SipHash13::new(HashKey::from_bytes(*b"url-dedup-router"));
        let mut load = [0u32; 4];
        for i in 0..4000 {
            load[owner(&h, &format!("host{i}.example:80"), 4)] += 1;
        }
        assert!(load.iter().all(|&n| (800..1200).contains(&n)), "{load:?}");
        assert_eq!(owner(&h, "a:80", 4), owner(&h, "a:80", 4));
    }
}
