//! A throwaway Redis Cluster for tests: real `redis-server` nodes with `--cluster-enabled
//! yes` on free loopback ports, joined by `redis-cli --cluster create`, and the operations a
//! test needs to change it under running clients: add a master, move slots (`reshard`,
//! `rebalance`), remove a master, kill one and wait for its replica to take over.
//!
//! Each node is a [`RedisServer`], so it dies with the test process however that ends.

use std::io;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use super::RedisServer;

/// How long a cluster may take to agree on its slots after a change.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(60);

/// A running Redis Cluster of loopback nodes.
///
/// # Examples
///
/// ```no_run
/// use url_dedup_redis::testing::RedisCluster;
///
/// let mut cluster = RedisCluster::start(3, 1)?; // three masters with a replica each
/// let seeds = cluster.url();                     // "redis://127.0.0.1:P1/,redis://..."
/// let new_master = cluster.add_master()?;
/// cluster.rebalance()?;                          // slots move to the new master
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct RedisCluster {
    nodes: Vec<RedisServer>,
    cli: PathBuf,
}

/// One line of `CLUSTER NODES`, as far as the tests need it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterNode {
    /// The node's id.
    pub id: String,
    /// Its client port on 127.0.0.1.
    pub port: u16,
    /// Whether it is a master (else a replica).
    pub master: bool,
    /// Whether the cluster has marked it failed.
    pub failed: bool,
    /// How many slots it serves.
    pub slots: usize,
    /// The ranges of slots it serves.
    pub ranges: Vec<std::ops::RangeInclusive<u16>>,
}

impl RedisCluster {
    /// The `redis-cli` binary: `$REDIS_CLI` if set, else next to `redis-server`, else the first
    /// on `PATH`.
    fn cli() -> Option<PathBuf> {
        if let Some(explicit) = std::env::var_os("REDIS_CLI") {
            return Some(PathBuf::from(explicit));
        }
        let beside = RedisServer::binary()?.with_file_name("redis-cli");
        if beside.is_file() {
            return Some(beside);
        }
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|dir| dir.join("redis-cli"))
            .find(|c| c.is_file())
    }

    /// Starts `masters` masters with `replicas` replicas each and joins them into a cluster
    /// whose 16,384 slots are spread evenly over the masters.
    ///
    /// # Errors
    ///
    /// No binaries, a node that does not start, or a cluster that does not settle within a
    /// minute.
    ///
    /// # Examples
    ///
    /// See [`RedisCluster`].
    pub fn start(masters: usize, replicas: usize) -> io::Result<Self> {
        let cli = Self::cli()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no redis-cli binary"))?;
        let nodes = (0..masters * (1 + replicas))
            .map(|_| RedisServer::launch(false, true))
            .collect::<io::Result<Vec<_>>>()?;
        let cluster = Self { nodes, cli };
        let mut args = vec!["--cluster".to_owned(), "create".to_owned()];
        args.extend(
            cluster
                .nodes
                .iter()
                .map(|n| format!("127.0.0.1:{}", n.port())),
        );
        args.extend([
            "--cluster-replicas".to_owned(),
            replicas.to_string(),
            "--cluster-yes".to_owned(),
        ]);
        cluster.run_cli(&args)?;
        cluster.settle(masters)?;
        // A replica still in its first sync holds nothing: a failover then would lose what the
        // master held, which no test means.
        cluster.await_replication()?;
        Ok(cluster)
    }

    /// [`start`](Self::start), or `None` with a loud notice when the binaries are missing and
    /// the `CI` variable is not set.
    ///
    /// # Panics
    ///
    /// When the cluster cannot start, or the binaries are missing under `CI`: this is test
    /// support.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use url_dedup_redis::testing::RedisCluster;
    ///
    /// let Some(cluster) = RedisCluster::start_or_skip("my test", 3, 1) else { return };
    /// assert_eq!(cluster.masters().len(), 3);
    /// ```
    pub fn start_or_skip(test: &str, masters: usize, replicas: usize) -> Option<Self> {
        if RedisServer::binary().is_none() || Self::cli().is_none() {
            if std::env::var_os("CI").is_some() {
                panic!("{test}: no redis-server or redis-cli under CI");
            }
            super::skipped(test, "no redis-server or redis-cli on PATH");
            return None;
        }
        match Self::start(masters, replicas) {
            Ok(cluster) => Some(cluster),
            Err(e) => panic!("{test}: cannot start a Redis Cluster: {e}"),
        }
    }

    /// Every node's URL, comma-separated: the form the facade, the command and the crawler
    /// take for a cluster (any one of them would do; more survive a dead seed).
    ///
    /// # Examples
    ///
    /// See [`RedisCluster`].
    pub fn url(&self) -> String {
        self.running()
            .map(RedisServer::url)
            .collect::<Vec<_>>()
            .join(",")
    }

    fn running(&self) -> impl Iterator<Item = &RedisServer> {
        self.nodes.iter().filter(|n| n.child.is_some())
    }

    /// The cluster's nodes as a live node sees them.
    ///
    /// # Examples
    ///
    /// See [`start_or_skip`](Self::start_or_skip).
    pub fn nodes(&self) -> Vec<ClusterNode> {
        for server in self.running() {
            if let Ok(text) = query::<String>(server.port(), &["CLUSTER", "NODES"]) {
                return parse_nodes(&text);
            }
        }
        Vec::new()
    }

    /// The masters that serve slots.
    ///
    /// # Examples
    ///
    /// See [`start_or_skip`](Self::start_or_skip).
    pub fn masters(&self) -> Vec<ClusterNode> {
        self.nodes()
            .into_iter()
            .filter(|n| n.master && !n.failed && n.slots > 0)
            .collect()
    }

    /// The port of the master serving `slot`, as a live node sees it.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let cluster = url_dedup_redis::testing::RedisCluster::start(3, 0)?;
    /// let slot = url_dedup_redis::cluster::key_slot(b"{crawl}:ready");
    /// assert!(cluster.master_of(slot).is_some());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn master_of(&self, slot: u16) -> Option<u16> {
        self.masters()
            .into_iter()
            .find(|m| m.ranges.iter().any(|r| r.contains(&slot)))
            .map(|m| m.port)
    }

    /// Starts a new empty master and joins it to the cluster; returns its port. It serves no
    /// slot until [`reshard`](Self::reshard) or [`rebalance`](Self::rebalance) gives it some.
    ///
    /// # Errors
    ///
    /// The node does not start or join.
    ///
    /// # Examples
    ///
    /// See [`RedisCluster`].
    pub fn add_master(&mut self) -> io::Result<u16> {
        let node = RedisServer::launch(false, true)?;
        let port = node.port();
        let existing = self.any_port()?;
        self.run_cli(&[
            "--cluster".into(),
            "add-node".into(),
            format!("127.0.0.1:{port}"),
            format!("127.0.0.1:{existing}"),
        ])?;
        self.nodes.push(node);
        self.settle(0)?;
        Ok(port)
    }

    /// Moves `slots` slots from the master on port `from` to the master on port `to`, with
    /// `redis-cli --cluster reshard` (keys move one by one with `MIGRATE` while clients go on).
    ///
    /// # Errors
    ///
    /// Unknown ports, or `redis-cli` failing.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let mut cluster = url_dedup_redis::testing::RedisCluster::start(3, 0)?;
    /// let masters = cluster.masters();
    /// cluster.reshard(masters[0].port, masters[1].port, 100)?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn reshard(&self, from: u16, to: u16, slots: usize) -> io::Result<()> {
        let nodes = self.nodes();
        let id = |port: u16| {
            nodes
                .iter()
                .find(|n| n.port == port)
                .map(|n| n.id.clone())
                .ok_or_else(|| io::Error::other(format!("no node on port {port}")))
        };
        self.run_cli(&[
            "--cluster".into(),
            "reshard".into(),
            format!("127.0.0.1:{from}"),
            "--cluster-from".into(),
            id(from)?,
            "--cluster-to".into(),
            id(to)?,
            "--cluster-slots".into(),
            slots.to_string(),
            "--cluster-yes".into(),
        ])?;
        self.settle(0)
    }

    /// Spreads the slots evenly over every master, empty ones included.
    ///
    /// # Errors
    ///
    /// `redis-cli` failing.
    ///
    /// # Examples
    ///
    /// See [`RedisCluster`].
    pub fn rebalance(&self) -> io::Result<()> {
        let port = self.any_port()?;
        self.run_cli(&[
            "--cluster".into(),
            "rebalance".into(),
            format!("127.0.0.1:{port}"),
            "--cluster-use-empty-masters".into(),
            "--cluster-yes".into(),
        ])?;
        self.settle(0)
    }

    /// Moves every slot of the master on `port` to the other masters, then removes it from
    /// the cluster and stops it.
    ///
    /// # Errors
    ///
    /// `redis-cli` failing.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let mut cluster = url_dedup_redis::testing::RedisCluster::start(3, 0)?;
    /// let gone = cluster.masters()[2].port;
    /// cluster.remove_master(gone)?;
    /// assert_eq!(cluster.masters().len(), 2);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn remove_master(&mut self, port: u16) -> io::Result<()> {
        let others: Vec<ClusterNode> = self
            .masters()
            .into_iter()
            .filter(|n| n.port != port)
            .collect();
        let mine = self
            .nodes()
            .into_iter()
            .find(|n| n.port == port)
            .ok_or_else(|| io::Error::other(format!("no node on port {port}")))?;
        if !others.is_empty() && mine.slots > 0 {
            let share = mine.slots.div_ceil(others.len());
            for other in &others {
                let left = self
                    .nodes()
                    .into_iter()
                    .find(|n| n.port == port)
                    .map_or(0, |n| n.slots);
                if left == 0 {
                    break;
                }
                self.reshard(port, other.port, share.min(left))?;
            }
        }
        let existing = others
            .first()
            .map(|n| n.port)
            .ok_or_else(|| io::Error::other("no other master"))?;
        self.run_cli(&[
            "--cluster".into(),
            "del-node".into(),
            format!("127.0.0.1:{existing}"),
            mine.id,
        ])?;
        if let Some(node) = self.nodes.iter_mut().find(|n| n.port() == port) {
            node.kill();
        }
        self.settle(0)
    }

    /// Kills (SIGKILL) the master on `port` and waits until a replica serves its slots.
    ///
    /// # Errors
    ///
    /// No failover within a minute (a master without a replica never fails over).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let mut cluster = url_dedup_redis::testing::RedisCluster::start(3, 1)?;
    /// let victim = cluster.masters()[0].port;
    /// cluster.kill_and_fail_over(victim)?;
    /// assert!(cluster.masters().iter().all(|m| m.port != victim));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn kill_and_fail_over(&mut self, port: u16) -> io::Result<()> {
        let masters = self.masters().len();
        self.kill_node(port);
        self.await_failover(port, masters)
    }

    /// Kills (SIGKILL) the node on `port` and returns at once: if it was a master, its slots
    /// are served by nobody until [`await_failover`](Self::await_failover) says a replica
    /// took over.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let mut cluster = url_dedup_redis::testing::RedisCluster::start(3, 1)?;
    /// let victim = cluster.masters()[0].port;
    /// cluster.kill_node(victim);
    /// // Clients meet a dead master here.
    /// cluster.await_failover(victim, 3)?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn kill_node(&mut self, port: u16) {
        if let Some(node) = self.nodes.iter_mut().find(|n| n.port() == port) {
            node.kill();
        }
    }

    /// Waits until `masters` masters, none on `gone`, serve every slot and every live node
    /// agrees.
    ///
    /// # Errors
    ///
    /// No failover within a minute.
    ///
    /// # Examples
    ///
    /// See [`kill_node`](Self::kill_node).
    pub fn await_failover(&self, gone: u16, masters: usize) -> io::Result<()> {
        let deadline = Instant::now() + SETTLE_TIMEOUT;
        loop {
            let live = self.masters();
            if live.len() == masters && live.iter().all(|m| m.port != gone) && self.state_ok() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(io::Error::other(format!(
                    "no replica took over: {:?}",
                    self.nodes()
                )));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until every replica has applied everything its master wrote (replication is
    /// asynchronous: a master killed before its replica caught up takes its last writes with
    /// it).
    ///
    /// # Errors
    ///
    /// Replicas still behind after a minute.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # let mut cluster = url_dedup_redis::testing::RedisCluster::start(3, 1)?;
    /// cluster.await_replication()?;
    /// let victim = cluster.masters()[0].port;
    /// cluster.kill_and_fail_over(victim)?; // loses nothing written before
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn await_replication(&self) -> io::Result<()> {
        let deadline = Instant::now() + SETTLE_TIMEOUT;
        // Per master: its replicas online, and whether each has applied the master's offset.
        let replicas_of = |port: u16| -> Option<(usize, bool)> {
            let info = query::<String>(port, &["INFO", "replication"]).ok()?;
            let offset = info
                .lines()
                .find_map(|l| l.strip_prefix("master_repl_offset:"))?
                .trim()
                .to_owned();
            // `slaveN:ip=...,port=...,state=online,offset=N,lag=0`
            let online: Vec<&str> = info
                .lines()
                .filter(|l| l.starts_with("slave") && l.contains("state=online"))
                .collect();
            let caught_up = online
                .iter()
                .all(|l| l.split(',').any(|f| f == format!("offset={offset}")));
            Some((online.len(), caught_up))
        };
        loop {
            let replicas = self.nodes().iter().filter(|n| !n.master).count();
            let masters: Vec<Option<(usize, bool)>> =
                self.masters().iter().map(|m| replicas_of(m.port)).collect();
            let online: usize = masters.iter().flatten().map(|(n, _)| n).sum();
            if online == replicas && masters.iter().all(|m| m.is_some_and(|(_, c)| c)) {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(io::Error::other(format!(
                    "replicas did not catch up: {online} of {replicas} online"
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn any_port(&self) -> io::Result<u16> {
        self.running()
            .map(RedisServer::port)
            .next()
            .ok_or_else(|| io::Error::other("no node runs"))
    }

    /// Whether every live node says the cluster is ok and they all see the same nodes with
    /// the same slots (gossip takes a moment to spread a change).
    fn state_ok(&self) -> bool {
        let mut views = self.running().map(|n| {
            let ok = query::<String>(n.port(), &["CLUSTER", "INFO"])
                .is_ok_and(|info| info.contains("cluster_state:ok"));
            let mut view: Vec<(String, bool, usize)> =
                query::<String>(n.port(), &["CLUSTER", "NODES"])
                    .map(|text| parse_nodes(&text))
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|n| !n.failed)
                    .map(|n| (n.id, n.master, n.slots))
                    .collect();
            view.sort();
            ok.then_some(view)
        });
        let Some(Some(first)) = views.next() else {
            return false;
        };
        views.all(|v| v.as_ref() == Some(&first))
    }

    /// Waits until every live node agrees that all 16,384 slots are served (and, when
    /// `masters` is not 0, by that many masters).
    fn settle(&self, masters: usize) -> io::Result<()> {
        let deadline = Instant::now() + SETTLE_TIMEOUT;
        loop {
            let served: usize = self.masters().iter().map(|m| m.slots).sum();
            let enough = masters == 0 || self.masters().len() == masters;
            if served == 16_384 && enough && self.state_ok() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(io::Error::other(format!(
                    "the cluster did not settle: {:?}",
                    self.nodes()
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn run_cli(&self, args: &[String]) -> io::Result<()> {
        let out = Command::new(&self.cli).args(args).output()?;
        if !out.status.success() {
            return Err(io::Error::other(format!(
                "redis-cli {} failed: {}{}",
                args.join(" "),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        Ok(())
    }
}

/// One command to the node on `port`.
fn query<T: redis::FromRedisValue>(port: u16, args: &[&str]) -> redis::RedisResult<T> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/"))?;
    let mut conn = client.get_connection_with_timeout(Duration::from_secs(1))?;
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query(&mut conn)
}

/// The lines of `CLUSTER NODES`: `<id> <ip:port@cport> <flags> <master> <ping> <pong>
/// <epoch> <link> <slot ranges...>`.
fn parse_nodes(text: &str) -> Vec<ClusterNode> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let address = fields.get(1)?;
            let port = address
                .split('@')
                .next()?
                .rsplit(':')
                .next()?
                .parse()
                .ok()?;
            let flags = fields.get(2)?;
            // Slots being imported or migrated (`[slot->-id]`) are not served yet.
            let ranges: Vec<std::ops::RangeInclusive<u16>> = fields
                .iter()
                .skip(8)
                .filter(|f| !f.starts_with('['))
                .filter_map(|range| match range.split_once('-') {
                    Some((a, b)) => Some(a.parse().ok()?..=b.parse().ok()?),
                    None => {
                        let slot = range.parse().ok()?;
                        Some(slot..=slot)
                    }
                })
                .collect();
            let slots = ranges.iter().map(|r| r.clone().count()).sum();
            Some(ClusterNode {
                id: (*fields.first()?).to_owned(),
                port,
                master: flags.contains("master"),
                failed: flags.contains("fail") && !flags.contains("pfail"),
                slots,
                ranges,
            })
        })
        .collect()
}
