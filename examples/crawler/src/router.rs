//! Which worker crawls which host: document 002's `Key = Transfer(host(url)) mod n`, done by
//! the workspace's partition table (document 000) with one node per worker.
//!
//! Every URL of a host goes to one worker, so that worker alone paces the host (one request at
//! a time by default, the delay, robots.txt) without any lock shared with other workers. The
//! table routes by host (`RouteKey::Host`: the authority without user information or port)
//! through keyed SipHash and 16384 virtual nodes, so hosts spread evenly over the workers and
//! nobody can craft host names that pile onto one worker.

use tokio::sync::mpsc::UnboundedSender;
use url_dedup_partition::{NodeId, PartitionTable, RouteKey};

use crate::job::Job;

/// Sends jobs to the worker that owns their host.
#[derive(Debug)]
pub(crate) struct Router {
    workers: Vec<UnboundedSender<Job>>,
    table: PartitionTable,
}

impl Router {
    pub(crate) fn new(
        workers: Vec<UnboundedSender<Job>>,
    ) -> Result<Self, url_dedup_partition::Error> {
        let table = table(workers.len())?;
        Ok(Self { workers, table })
    }

    /// Queues `job` at its host's worker.
    pub(crate) fn route(&self, job: Job) {
        let (_, node) = self.table.route(job.url.as_bytes());
        // A worker only goes away when the crawl is stopping; its jobs stay in the checkpoint.
        let _ = self.workers[node.0 as usize].send(job);
    }
}

fn table(workers: usize) -> Result<PartitionTable, url_dedup_partition::Error> {
    PartitionTable::builder()
        .nodes((0..workers as u32).map(NodeId))
        .route_by(RouteKey::Host)
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_spread_over_workers_and_stay_put() {
        let t = table(4).unwrap();
        let mut load = [0u32; 4];
        for i in 0..4000 {
            let (_, node) = t.route(format!("http://host{i}.example/a"));
            load[node.0 as usize] += 1;
        }
        assert!(load.iter().all(|&n| (800..1200).contains(&n)), "{load:?}");
        assert_eq!(
            t.route("http://a.example/x").1,
            t.route("https://a.example:8080/y?z").1
        );
    }
}
