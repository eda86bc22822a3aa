//! Whole systems in one process: several networks of hosts, each node with its own
//! throwaway `redis-server` (from [`url_dedup_redis::testing`]) and its role running as a
//! tokio task. For tests, the benchmark and the `demo` command.
//!
//! Addresses follow one scheme: network `n` (from 0) has hosts `10.(n+1).0.(h+1)` and its
//! center at `10.(n+1).0.254`.
//!
//! # Examples
//!
//! ```
//! # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
//! use std::time::Duration;
//! use url_dedup_two_tier::testing::Cluster;
//!
//! // Two networks of two hosts; `None` (with a notice) when redis-server is not installed.
//! let Some(mut cluster) = Cluster::launch(&[2, 2], Default::default()).await? else { return Ok(()) };
//! cluster.start_all().await?;
//! let a = cluster.local_host(cluster.host_ip(0, 0)).await?;
//! let b = cluster.local_host(cluster.host_ip(1, 1)).await?;
//! b.finish(&["https://example.com/old"]).await?;
//! a.discover(&["https://example.com/old", "https://example.com/new"]).await?;
//! assert!(cluster.wait_idle(Duration::from_secs(20)).await?);
//! assert_eq!(cluster.all_tasks().await?, ["https://example.com/new"]);
//! cluster.shutdown().await?;
//! # Ok::<(), url_dedup_two_tier::Error>(())
//! # }).unwrap();
//! ```

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use url_dedup_redis::Link;
use url_dedup_redis::testing::RedisServer;

use crate::center::Center;
use crate::error::{Error, Result};
use crate::host::LocalHost;
use crate::keys::Keys;
use crate::settings::Settings;
use crate::stats::{Counters, Stats};
use crate::topology::{Network, Node, Topology};

/// Settings for tests: short idle waits and small frames, so a suite stays fast, but timeouts
/// long enough that an answer is never late on a busy machine (a test that counts timeouts
/// then counts only those of silent nodes).
///
/// # Examples
///
/// ```
/// use url_dedup_two_tier::testing::quick_settings;
///
/// quick_settings().validate()?;
/// # Ok::<(), url_dedup_two_tier::Error>(())
/// ```
pub fn quick_settings() -> Settings {
    Settings {
        urls_per_frame: 100,
        lan_timeout: Duration::from_secs(4),
        wan_timeout: Duration::from_secs(8),
        idle_wait: Duration::from_millis(50),
        seen_ttl: Duration::from_secs(600),
        ..Settings::default()
    }
}

struct Running {
    task: JoinHandle<Result<()>>,
    counters: Arc<Counters>,
    stop: watch::Sender<bool>,
}

/// A system of networks whose every node has its own `redis-server`; roles run as tasks.
///
/// # Examples
///
/// See the [module documentation](self).
pub struct Cluster {
    topology: Topology,
    settings: Settings,
    servers: BTreeMap<IpAddr, RedisServer>,
    links: BTreeMap<IpAddr, Link>,
    running: BTreeMap<IpAddr, Running>,
    finished: Stats,
    probes: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("topology", &self.topology)
            .field("running", &self.running.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Roles must not outlive their servers and spin on dead connections.
        for r in self.running.values() {
            let _ = r.stop.send(true);
        }
    }
}

impl Cluster {
    /// Starts one `redis-server` per node for networks of `hosts_per_network[n]` hosts; no
    /// role runs yet (see [`start_all`](Self::start_all), [`start`](Self::start)). `None`
    /// with a notice when no `redis-server` is installed and `CI` is unset.
    ///
    /// # Errors
    ///
    /// [`Error::Topology`] for no network or an empty one; [`Error::Redis`] when a server
    /// does not answer.
    ///
    /// # Panics
    ///
    /// When a server cannot start, or under `CI` without a binary (as
    /// [`RedisServer::start_or_skip`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_two_tier::testing::Cluster;
    ///
    /// let Some(cluster) = Cluster::launch(&[3], Default::default()).await? else { return Ok(()) };
    /// assert_eq!(cluster.topology().networks[0].hosts.len(), 3);
    /// # Ok::<(), url_dedup_two_tier::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn launch(hosts_per_network: &[usize], settings: Settings) -> Result<Option<Self>> {
        if RedisServer::binary().is_none() {
            // Let the redis crate print its notice (or fail under CI).
            let _ = RedisServer::start_or_skip("two-tier cluster");
            return Ok(None);
        }
        let mut servers = BTreeMap::new();
        let mut networks = Vec::new();
        for (n, &hosts) in hosts_per_network.iter().enumerate() {
            let mut node = |last: u8| {
                let ip = IpAddr::V4(Ipv4Addr::new(10, n as u8 + 1, 0, last));
                let server = RedisServer::start_or_skip("two-tier cluster")
                    .ok_or_else(|| Error::Topology("redis-server missing".into()))?;
                let node = Node::new(ip, server.url());
                servers.insert(ip, server);
                Ok::<_, Error>(node)
            };
            let center = node(254)?;
            let hosts = (0..hosts)
                .map(|h| node(h as u8 + 1))
                .collect::<Result<Vec<_>>>()?;
            networks.push(Network { center, hosts });
        }
        let topology = Topology {
            namespace: "two-tier".into(),
            networks,
        };
        topology.validate()?;
        let mut links = BTreeMap::new();
        for (&ip, server) in &servers {
            links.insert(
                ip,
                Link::connect_with(&server.url(), settings.backoff).await?,
            );
        }
        Ok(Some(Self {
            topology,
            settings,
            servers,
            links,
            running: BTreeMap::new(),
            finished: Stats::default(),
            probes: std::sync::atomic::AtomicU64::new(0),
        }))
    }

    /// The topology, for connecting more handles.
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// # use url_dedup_two_tier::testing::Cluster;
    /// let Some(cluster) = Cluster::launch(&[1, 1], Default::default()).await? else { return Ok(()) };
    /// assert_eq!(cluster.topology().networks.len(), 2);
    /// # Ok::<(), url_dedup_two_tier::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// Address of host `host` of network `network`.
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// # use url_dedup_two_tier::testing::Cluster;
    /// let Some(cluster) = Cluster::launch(&[1, 1], Default::default()).await? else { return Ok(()) };
    /// assert_eq!(cluster.host_ip(1, 0).to_string(), "10.2.0.1");
    /// # Ok::<(), url_dedup_two_tier::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn host_ip(&self, network: usize, host: usize) -> IpAddr {
        self.topology.networks[network].hosts[host].ip
    }

    /// Address of the center of network `network`.
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// # use url_dedup_two_tier::testing::Cluster;
    /// let Some(cluster) = Cluster::launch(&[1], Default::default()).await? else { return Ok(()) };
    /// assert_eq!(cluster.center_ip(0).to_string(), "10.1.0.254");
    /// # Ok::<(), url_dedup_two_tier::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn center_ip(&self, network: usize) -> IpAddr {
        self.topology.networks[network].center.ip
    }

    /// Every node's address: centers and hosts.
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// # use url_dedup_two_tier::testing::Cluster;
    /// let Some(cluster) = Cluster::launch(&[2, 1], Default::default()).await? else { return Ok(()) };
    /// assert_eq!(cluster.nodes().len(), 5);
    /// # Ok::<(), url_dedup_two_tier::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn nodes(&self) -> Vec<IpAddr> {
        self.servers.keys().copied().collect()
    }

    /// A raw connection to node `ip`'s Redis, for inspecting pools or delivering hand-made
    /// frames.
    ///
    /// # Panics
    ///
    /// When `ip` is not a node of the cluster.
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// # use url_dedup_two_tier::testing::Cluster;
    /// let Some(cluster) = Cluster::launch(&[1], Default::default()).await? else { return Ok(()) };
    /// cluster.redis(cluster.center_ip(0)).ping().await?;
    /// # Ok::<(), url_dedup_two_tier::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn redis(&self, ip: IpAddr) -> &Link {
        &self.links[&ip]
    }

    /// The key names of the cluster's namespace.
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// # use url_dedup_two_tier::testing::Cluster;
    /// let Some(cluster) = Cluster::launch(&[1], Default::default()).await? else { return Ok(()) };
    /// assert_eq!(cluster.keys().task_pool(), "{two-tier}:task_pool");
    /// # Ok::<(), url_dedup_two_tier::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn keys(&self) -> Keys {
        // The namespace was validated in `launch`.
        Keys::new(self.topology.namespace().unwrap_or_else(|_| unreachable!()))
    }

    /// Pushes raw bytes into `to`'s inbox for `from`, exactly as `from`'s transport would: how
    /// a test delivers forged, malformed or repeated frames.
    ///
    /// # Errors
    ///
    /// [`Error::Redis`] if `to`'s Redis does not take the push.
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// # use url_dedup_two_tier::testing::Cluster;
    /// let Some(cluster) = Cluster::launch(&[1], Default::default()).await? else { return Ok(()) };
    /// let (center, host) = (cluster.center_ip(0), cluster.host_ip(0, 0));
    /// cluster.deliver_raw(center, host, b"not a frame").await?;
    /// # Ok::<(), url_dedup_two_tier::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn deliver_raw(
        &self,
        to: IpAddr,
        from: IpAddr,
        bytes: impl AsRef<[u8]>,
    ) -> Result<()> {
        let (key, bytes) = (self.keys().inbox(from), bytes.as_ref());
        self.redis(to)
            .run("deliver", |mut conn| {
                let (key, bytes) = (key.clone(), bytes.to_vec());
                async move {
                    redis::cmd("RPUSH")
                        .arg(key)
                        .arg(bytes)
                        .query_async::<u64>(&mut conn)
                        .await
                }
            })
            .await?;
        Ok(())
    }

    /// A handle on host `ip` for a crawler's calls (discover, finish, take tasks), separate
    /// from the running role.
    ///
    /// # Errors
    ///
    /// As for [`LocalHost::connect`].
    ///
    /// # Examples
    ///
    /// See the [module documentation](self).
    pub async fn local_host(&self, ip: IpAddr) -> Result<LocalHost> {
        LocalHost::connect(&self.topology, ip, self.settings).await
    }

    /// Starts every role that is not running.
    ///
    /// # Errors
    ///
    /// As for [`start`](Self::start).
    ///
    /// # Examples
    ///
    /// See the [module documentation](self).
    pub async fn start_all(&mut self) -> Result<()> {
        for ip in self.nodes() {
            if !self.running.contains_key(&ip) {
                self.start(ip).await?;
            }
        }
        Ok(())
    }

    /// Starts node `ip`'s role (center or host) as a task.
    ///
    /// # Errors
    ///
    /// As for [`Center::connect`] or [`LocalHost::connect`].
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// # use url_dedup_two_tier::testing::Cluster;
    /// let Some(mut cluster) = Cluster::launch(&[2], Default::default()).await? else { return Ok(()) };
    /// cluster.start(cluster.center_ip(0)).await?; // the hosts stay silent
    /// cluster.shutdown().await?;
    /// # Ok::<(), url_dedup_two_tier::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn start(&mut self, ip: IpAddr) -> Result<()> {
        let (stop, stopped) = watch::channel(false);
        let running = if self.topology.is_center(ip) {
            let center = Center::connect(&self.topology, ip, self.settings).await?;
            let counters = center.counters();
            let task = tokio::spawn(async move { center.run(stopped).await });
            Running {
                task,
                counters,
                stop,
            }
        } else {
            let host = LocalHost::connect(&self.topology, ip, self.settings).await?;
            let counters = host.counters();
            let task = tokio::spawn(async move { host.run(stopped).await });
            Running {
                task,
                counters,
                stop,
            }
        };
        self.running.insert(ip, running);
        Ok(())
    }

    /// Stops node `ip`'s role (if it runs) and waits for it; its Redis keeps running, and
    /// [`start`](Self::start) starts the role again, as a restarted process would.
    ///
    /// # Errors
    ///
    /// The error the role returned.
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// # use url_dedup_two_tier::testing::Cluster;
    /// let Some(mut cluster) = Cluster::launch(&[1], Default::default()).await? else { return Ok(()) };
    /// cluster.start_all().await?;
    /// cluster.stop(cluster.center_ip(0)).await?;
    /// cluster.start(cluster.center_ip(0)).await?;
    /// cluster.shutdown().await?;
    /// # Ok::<(), url_dedup_two_tier::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn stop(&mut self, ip: IpAddr) -> Result<()> {
        let Some(r) = self.running.remove(&ip) else {
            return Ok(());
        };
        let _ = r.stop.send(true);
        let result = r
            .task
            .await
            .map_err(|e| Error::Topology(format!("role {ip} panicked: {e}")))?;
        self.finished += r.counters.snapshot();
        result
    }

    /// What the running roles did so far, summed (roles already shut down included).
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// # use url_dedup_two_tier::testing::Cluster;
    /// let Some(cluster) = Cluster::launch(&[1], Default::default()).await? else { return Ok(()) };
    /// assert_eq!(cluster.stats().frames_sent, 0);
    /// # Ok::<(), url_dedup_two_tier::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn stats(&self) -> Stats {
        let mut total = self.finished;
        for r in self.running.values() {
            total += r.counters.snapshot();
        }
        total
    }

    /// What node `ip`'s role did so far (zero if it never ran).
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// # use url_dedup_two_tier::testing::Cluster;
    /// let Some(cluster) = Cluster::launch(&[1], Default::default()).await? else { return Ok(()) };
    /// assert_eq!(cluster.node_stats(cluster.center_ip(0)).completed, 0);
    /// # Ok::<(), url_dedup_two_tier::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn node_stats(&self, ip: IpAddr) -> Stats {
        self.running
            .get(&ip)
            .map(|r| r.counters.snapshot())
            .unwrap_or_default()
    }

    /// Whether nothing is left to do: on every node whose role runs, no URL waiting in
    /// `URL_pool`, no frame in an inbox or a pool, nothing in `task_URL`, and the roles' counters unchanged over a few idle
    /// waits (a frame popped but not yet handled shows up there). Polls until `timeout`.
    ///
    /// # Errors
    ///
    /// [`Error::Redis`] when a server stays unreachable, or a role task that failed.
    ///
    /// # Examples
    ///
    /// See the [module documentation](self).
    pub async fn wait_idle(&mut self, timeout: Duration) -> Result<bool> {
        Ok(self.idle_since(timeout).await?.is_some())
    }

    /// As [`wait_idle`](Self::wait_idle), but returns when the quiet stretch began: the
    /// moment the work was done, give or take one poll (5 ms plus a round trip per node).
    ///
    /// # Errors
    ///
    /// As for [`wait_idle`](Self::wait_idle).
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// # use std::time::Duration;
    /// # use url_dedup_two_tier::testing::{Cluster, quick_settings};
    /// let Some(mut cluster) = Cluster::launch(&[1], quick_settings()).await? else { return Ok(()) };
    /// cluster.start_all().await?;
    /// let since = cluster.idle_since(Duration::from_secs(10)).await?.expect("idle");
    /// assert!(since <= tokio::time::Instant::now());
    /// # Ok::<(), url_dedup_two_tier::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn idle_since(&mut self, timeout: Duration) -> Result<Option<Instant>> {
        let deadline = Instant::now() + timeout;
        let settle = self.settings.idle_wait * 3;
        let mut quiet_since: Option<(Instant, Stats, Vec<[u64; 2]>)> = None;
        loop {
            self.check_tasks().await?;
            let now = Instant::now();
            // Idle nodes still poll, so round trips keep growing: compare the rest.
            let stats = Stats {
                round_trips: 0,
                ..self.stats()
            };
            let rounds = self.rounds();
            if self.queues_empty().await? {
                match &quiet_since {
                    Some((since, before, at_start)) if *before == stats => {
                        // Quiet for a while is not enough on a busy machine: a role may have
                        // taken a frame and not run since. Every loop must also have begun a
                        // new round, so it finished with what it took before the quiet began.
                        if now.duration_since(*since) >= settle
                            && every_loop_went_round(at_start, &rounds)
                        {
                            return Ok(Some(*since));
                        }
                    }
                    _ => quiet_since = Some((now, stats, rounds)),
                }
            } else {
                quiet_since = None;
            }
            if now >= deadline {
                return Ok(None);
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Rounds begun by each running role's loops, in node order.
    fn rounds(&self) -> Vec<[u64; 2]> {
        self.running.values().map(|r| r.counters.rounds()).collect()
    }

    /// Fails with the error of a role task that stopped on its own.
    async fn check_tasks(&mut self) -> Result<()> {
        let done: Vec<IpAddr> = self
            .running
            .iter()
            .filter(|(_, r)| r.task.is_finished())
            .map(|(&ip, _)| ip)
            .collect();
        for ip in done {
            if let Some(r) = self.running.remove(&ip) {
                self.finished += r.counters.snapshot();
                match r.task.await {
                    Ok(result) => result?,
                    Err(e) => return Err(Error::Topology(format!("role {ip} panicked: {e}"))),
                }
            }
        }
        Ok(())
    }

    async fn queues_empty(&self) -> Result<bool> {
        let keys = self.keys();
        // A node whose role is not running keeps what it is sent: that is not pending work.
        for (&ip, link) in self
            .links
            .iter()
            .filter(|(ip, _)| self.running.contains_key(ip))
        {
            let senders: Vec<IpAddr> = self.nodes().into_iter().filter(|&s| s != ip).collect();
            let counts: Vec<u64> = link
                .run("idle check", |mut conn| {
                    let mut pipe = redis::pipe();
                    pipe.cmd("SCARD")
                        .arg(keys.url_pool())
                        .cmd("HLEN")
                        .arg(keys.local_reduce_pool())
                        .cmd("HLEN")
                        .arg(keys.dist_reduce_pool())
                        .cmd("LLEN")
                        .arg(keys.task_url());
                    for &s in &senders {
                        pipe.cmd("LLEN").arg(keys.inbox(s));
                    }
                    async move { pipe.query_async(&mut conn).await }
                })
                .await?;
            self.probes
                .fetch_add(counts.len() as u64, std::sync::atomic::Ordering::Relaxed);
            if counts.iter().any(|&c| c > 0) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// How many Redis commands the idle checks of [`wait_idle`](Self::wait_idle) issued,
    /// summed over the nodes: to subtract from server-side command counts.
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// # use std::time::Duration;
    /// # use url_dedup_two_tier::testing::{Cluster, quick_settings};
    /// let Some(mut cluster) = Cluster::launch(&[1], quick_settings()).await? else { return Ok(()) };
    /// cluster.start_all().await?;
    /// cluster.wait_idle(Duration::from_secs(10)).await?;
    /// assert!(cluster.probe_commands() > 0);
    /// # Ok::<(), url_dedup_two_tier::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn probe_commands(&self) -> u64 {
        self.probes.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Every URL in every host's `task_pool`, sorted, duplicates kept.
    ///
    /// # Errors
    ///
    /// [`Error::Redis`] when a server stays unreachable.
    ///
    /// # Examples
    ///
    /// See the [module documentation](self).
    pub async fn all_tasks(&self) -> Result<Vec<String>> {
        let mut all = Vec::new();
        for net in &self.topology.networks {
            for h in &net.hosts {
                all.extend(self.tasks_of(h.ip).await?);
            }
        }
        all.sort();
        Ok(all)
    }

    /// The URLs in host `ip`'s `task_pool`, in order.
    ///
    /// # Errors
    ///
    /// [`Error::Redis`] when the server stays unreachable.
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// # use url_dedup_two_tier::testing::Cluster;
    /// let Some(cluster) = Cluster::launch(&[1], Default::default()).await? else { return Ok(()) };
    /// assert!(cluster.tasks_of(cluster.host_ip(0, 0)).await?.is_empty());
    /// # Ok::<(), url_dedup_two_tier::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn tasks_of(&self, ip: IpAddr) -> Result<Vec<String>> {
        let key = self.keys().task_pool();
        Ok(self.links[&ip]
            .run("read task_pool", |mut conn| {
                let key = key.clone();
                async move {
                    redis::cmd("LRANGE")
                        .arg(key)
                        .arg(0)
                        .arg(-1)
                        .query_async(&mut conn)
                        .await
                }
            })
            .await?)
    }

    /// Stops every role and waits for them.
    ///
    /// # Errors
    ///
    /// The first error a role returned.
    ///
    /// # Examples
    ///
    /// See the [module documentation](self).
    pub async fn shutdown(mut self) -> Result<()> {
        for r in self.running.values() {
            let _ = r.stop.send(true);
        }
        let mut first = Ok(());
        for (ip, r) in std::mem::take(&mut self.running) {
            let result = match r.task.await {
                Ok(result) => result,
                Err(e) => Err(Error::Topology(format!("role {ip} panicked: {e}"))),
            };
            if first.is_ok() {
                first = result;
            }
        }
        first
    }
}

/// Whether every loop that ran at `before` has begun a round since (a loop a role does not
/// run stays at zero). Roles started or stopped in between change the list: not yet.
fn every_loop_went_round(before: &[[u64; 2]], now: &[[u64; 2]]) -> bool {
    before.len() == now.len()
        && before
            .iter()
            .zip(now)
            .all(|(b, n)| b.iter().zip(n).all(|(b, n)| n > b || (*b == 0 && *n == 0)))
}
