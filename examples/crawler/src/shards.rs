//! The shared frontier split into the partition table's virtual nodes (document 003's
//! Coordinator with `url_dedup_partition`): each virtual node is one `url_dedup_redis::Frontier`,
//! a host's URLs always go to the virtual node its name hashes to, and a process claims only
//! from the virtual nodes the current table gives it.
//!
//! The leader (`LeaderLease`, fencing epoch) watches membership, applies the partition table's
//! `join` / `leave` for processes that came or went, and publishes the new table and its epoch
//! through `SharedConfig` (fenced, so a deposed leader cannot publish). Every process reads the
//! owners at each heartbeat. A moved virtual node's URLs stay queued in Redis: the old owner
//! stops claiming from it and acknowledges what it already holds, the new owner starts
//! claiming, so a migration moves no data and fetches no page twice. A dead process's claims
//! are requeued per virtual node once its membership lease expires.

use std::collections::{BTreeSet, HashMap};
use std::sync::RwLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use redis::aio::ConnectionManager;
use url_dedup_bloom::HashKey;
use url_dedup_partition::{NodeId, PartitionTable};
use url_dedup_redis::{
    Claim, ClaimedTask, Epoch, Frontier, FrontierSettings, LeaderLease, Link, Membership,
    Namespace, NewTask, SharedConfig, WorkerId,
};

use crate::error::CrawlError;

/// Virtual nodes of a shared crawl: the most processes that can share it, and the unit that
/// moves when one joins or leaves.
pub(crate) const VIRTUAL_NODES: u32 = 16;

struct Shard {
    frontier: Frontier,
    members: Membership,
}

/// This process's share of the current table.
#[derive(Clone, Debug, Default)]
pub(crate) struct Assignment {
    /// The table's epoch (0: no table published yet).
    pub(crate) epoch: u64,
    pub(crate) owned: Vec<usize>,
}

/// The partitioned frontier, as one process sees it.
pub(crate) struct ShardedFrontier {
    shards: Vec<Shard>,
    /// A one-node table with the crawl's key: only its routing of names to virtual nodes is
    /// used, which does not depend on the owners.
    router: PartitionTable,
    key: HashKey,
    me: WorkerId,
    id: NodeId,
    main: Membership,
    lease: LeaderLease,
    config: SharedConfig,
    conn: ConnectionManager,
    ids_key: String,
    assignment: RwLock<Assignment>,
    leader: tokio::sync::Mutex<Option<(Epoch, Option<PartitionTable>)>>,
    next: AtomicUsize,
}

impl ShardedFrontier {
    /// Opens the shards of crawl `name` and registers this process (not yet a member).
    pub(crate) async fn open(
        link: &Link,
        name: &str,
        me: WorkerId,
        ttl: Duration,
        key: HashKey,
        settings: FrontierSettings,
    ) -> Result<Self, CrawlError> {
        let ns = Namespace::new(name)?;
        let shards = (0..VIRTUAL_NODES)
            .map(|v| {
                let ns = Namespace::new(&format!("{name}-v{v}"))?;
                Ok(Shard {
                    frontier: Frontier::with_settings(link.clone(), ns.clone(), settings),
                    members: Membership::with_ttl(link.clone(), ns, ttl),
                })
            })
            .collect::<Result<Vec<_>, url_dedup_redis::Error>>()?;
        let router = PartitionTable::builder()
            .virtual_nodes(u64::from(VIRTUAL_NODES))
            .key(key)
            .nodes([NodeId(0)])
            .build()?;
        let mut conn = link.connection();
        let ids_key = ns.key("node-ids");
        // A small, stable number per process for the partition table.
        let id: u32 = redis::cmd("INCR")
            .arg(ns.key("node-seq"))
            .query_async(&mut conn)
            .await?;
        let () = redis::cmd("HSET")
            .arg(&ids_key)
            .arg(me.as_str())
            .arg(id)
            .query_async(&mut conn)
            .await
            .map(|_: u64| ())?;
        Ok(Self {
            shards,
            router,
            key,
            main: Membership::with_ttl(link.clone(), ns.clone(), ttl),
            lease: LeaderLease::with_ttl(link.clone(), ns.clone(), ttl),
            config: SharedConfig::new(link.clone(), ns),
            me,
            id: NodeId(id),
            conn,
            ids_key,
            assignment: RwLock::new(Assignment::default()),
            leader: tokio::sync::Mutex::new(None),
            next: AtomicUsize::new(0),
        })
    }

    pub(crate) fn assignment(&self) -> Assignment {
        self.assignment
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Joins the crawl's and every shard's membership.
    pub(crate) async fn join(&self) -> Result<(), CrawlError> {
        self.main.join(&self.me).await?;
        for s in &self.shards {
            s.members.join(&self.me).await?;
        }
        Ok(())
    }

    /// Renews every lease; rejoins where one was lost. Returns whether all were still held.
    pub(crate) async fn heartbeat(&self) -> Result<bool, CrawlError> {
        let mut held = self.main.heartbeat(&self.me).await?;
        if !held {
            self.main.join(&self.me).await?;
        }
        for s in &self.shards {
            if !s.members.heartbeat(&self.me).await? {
                held = false;
                s.members.join(&self.me).await?;
            }
        }
        Ok(held)
    }

    /// Gives back what this process holds and leaves.
    pub(crate) async fn leave(&self) -> Result<(), CrawlError> {
        for s in &self.shards {
            s.frontier.requeue_worker(&self.me).await?;
            s.members.leave(&self.me).await?;
        }
        self.main.leave(&self.me).await?;
        let mut leader = self.leader.lock().await;
        if let Some((epoch, _)) = leader.take() {
            self.lease.release(&self.me, epoch).await?;
        }
        Ok(())
    }

    /// Requeues the claims of dead processes in every shard.
    pub(crate) async fn requeue_dead(&self) -> Result<u64, CrawlError> {
        let mut n = 0;
        for s in &self.shards {
            n += s.frontier.requeue_dead().await?;
        }
        Ok(n)
    }

    fn shard_of(&self, task: &NewTask) -> usize {
        self.router.route(task.host()).0.index()
    }

    /// Pushes tasks, each to its host's virtual node.
    pub(crate) async fn push(&self, tasks: Vec<NewTask>) -> Result<(), CrawlError> {
        let mut by_shard: HashMap<usize, Vec<NewTask>> = HashMap::new();
        for t in tasks {
            by_shard.entry(self.shard_of(&t)).or_default().push(t);
        }
        for (v, tasks) in by_shard {
            for chunk in tasks.chunks(1000) {
                self.shards[v].frontier.push(chunk).await?;
            }
        }
        Ok(())
    }

    /// Claims a URL from one of this process's virtual nodes, starting from a rotating one.
    pub(crate) async fn claim(&self) -> Result<Option<(usize, ClaimedTask)>, CrawlError> {
        let owned = self.assignment().owned;
        if owned.is_empty() {
            return Ok(None);
        }
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        for i in 0..owned.len() {
            let v = owned[(start + i) % owned.len()];
            if let Claim::Task(t) = self.shards[v].frontier.claim(&self.me).await? {
                return Ok(Some((v, t)));
            }
        }
        Ok(None)
    }

    /// [`claim`](Self::claim); when nothing is ready, waits up to `timeout` on one of this
    /// process's virtual nodes (a different one each time), woken by its pub/sub signal when a
    /// URL is pushed there. Sleeps `timeout` when this process owns none.
    pub(crate) async fn claim_wait(
        &self,
        timeout: Duration,
    ) -> Result<Option<(usize, ClaimedTask)>, CrawlError> {
        if let Some(found) = self.claim().await? {
            return Ok(Some(found));
        }
        let owned = self.assignment().owned;
        if owned.is_empty() {
            tokio::time::sleep(timeout).await;
            return Ok(None);
        }
        let v = owned[self.next.fetch_add(1, Ordering::Relaxed) % owned.len()];
        let task = self.shards[v]
            .frontier
            .claim_wait(&self.me, timeout)
            .await?;
        Ok(task.map(|t| (v, t)))
    }

    pub(crate) async fn ack(&self, shard: usize, task: &ClaimedTask) -> Result<(), CrawlError> {
        self.shards[shard].frontier.ack(task).await?;
        Ok(())
    }

    pub(crate) async fn release(&self, shard: usize, task: &ClaimedTask) -> Result<(), CrawlError> {
        self.shards[shard].frontier.release(task).await?;
        Ok(())
    }

    /// Whether every shard is empty with nothing claimed anywhere.
    pub(crate) async fn drained(&self) -> Result<bool, CrawlError> {
        for s in &self.shards {
            if s.frontier.pending().await? > 0 || s.frontier.in_flight().await? > 0 {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Reads the published owners into this process's assignment; returns it when it changed.
    pub(crate) async fn refresh(&self) -> Result<Option<Assignment>, CrawlError> {
        let snap = self.config.snapshot().await?;
        let epoch = snap
            .get("table-epoch")
            .and_then(|e| e.parse().ok())
            .unwrap_or(0);
        let owned: Vec<usize> = snap
            .get("owners")
            .unwrap_or("")
            .split(',')
            .enumerate()
            .filter(|(_, o)| o.parse::<u32>().ok() == Some(self.id.0))
            .map(|(v, _)| v)
            .collect();
        let mut a = self.assignment.write().unwrap_or_else(|p| p.into_inner());
        if a.epoch == epoch && a.owned == owned {
            return Ok(None);
        }
        *a = Assignment { epoch, owned };
        Ok(Some(a.clone()))
    }

    /// The leader's duty, tried by every process at each heartbeat: apply joins and leaves to
    /// the table and publish it. Returns a description of the change it published, if any.
    pub(crate) async fn coordinate(&self) -> Result<Option<String>, CrawlError> {
        let mut leader = self.leader.lock().await;
        let epoch = match leader.as_ref() {
            Some((e, _)) if self.lease.renew(&self.me, *e).await? => *e,
            _ => match self.lease.try_acquire(&self.me).await? {
                Some(e) => {
                    // A new term starts from the published table.
                    let table = self.config.snapshot().await?.get("table").and_then(|hex| {
                        let bytes = unhex(hex)?;
                        PartitionTable::from_bytes(&bytes).ok()
                    });
                    *leader = Some((e, table));
                    e
                }
                None => {
                    *leader = None;
                    return Ok(None);
                }
            },
        };
        let Some((_, table)) = leader.as_mut() else {
            return Ok(None);
        };
        let live: BTreeSet<String> = self
            .main
            .live()
            .await?
            .iter()
            .map(|w| w.to_string())
            .collect();
        let mut conn = self.conn.clone();
        let ids: HashMap<String, u32> = redis::cmd("HGETALL")
            .arg(&self.ids_key)
            .query_async(&mut conn)
            .await?;
        let live_ids: BTreeSet<NodeId> = live
            .iter()
            .filter_map(|w| ids.get(w).map(|&i| NodeId(i)))
            .collect();
        if live_ids.is_empty() {
            return Ok(None);
        }
        let mut changes = Vec::new();
        let t = match table {
            Some(t) => t,
            None => {
                let first: Vec<NodeId> = live_ids
                    .iter()
                    .copied()
                    .take(VIRTUAL_NODES as usize)
                    .collect();
                changes.push(format!("table created for {} processes", first.len()));
                table.insert(
                    PartitionTable::builder()
                        .virtual_nodes(u64::from(VIRTUAL_NODES))
                        .key(self.key)
                        .nodes(first)
                        .build()?,
                )
            }
        };
        for id in &live_ids {
            if !t.contains_node(*id) && t.node_count() < VIRTUAL_NODES as usize {
                let m = t.join(*id)?;
                changes.push(format!("{id} joined: {} virtual nodes moved", m.len()));
            }
        }
        let gone: Vec<NodeId> = t
            .nodes()
            .iter()
            .map(|n| n.id)
            .filter(|id| !live_ids.contains(id))
            .collect();
        for id in gone {
            if t.node_count() > 1 {
                let m = t.leave(id)?;
                changes.push(format!("{id} left: {} virtual nodes moved", m.len()));
            }
        }
        if changes.is_empty() {
            return Ok(None);
        }
        let owners: Vec<String> = t.owners().map(|o| o.0.to_string()).collect();
        let table_epoch = (t.epoch() + 1).to_string();
        let hex: String = t.to_bytes().iter().map(|b| format!("{b:02x}")).collect();
        self.config
            .set_fenced(
                epoch,
                &[
                    ("table", &hex),
                    ("table-epoch", &table_epoch),
                    ("owners", &owners.join(",")),
                ],
            )
            .await?;
        Ok(Some(format!(
            "partition epoch {table_epoch}: {}",
            changes.join("; ")
        )))
    }
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.is_ascii() {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn hex_round_trips(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64)) {
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            proptest::prop_assert_eq!(unhex(&hex), Some(bytes));
        }
    }

    #[test]
    fn bad_hex_is_refused() {
        for bad in ["a", "zz", "0g", "é0"] {
            assert_eq!(unhex(bad), None, "{bad}");
        }
    }
}
