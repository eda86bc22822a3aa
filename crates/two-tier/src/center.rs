//! The center host: admits its hosts' frames (flag 1), asks the other hosts (flag 2), removes
//! what their answers (flag 3) mark, does the same with the other networks, answers other
//! networks' requests, and hands the survivors out through `task_URL`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::IpAddr;
use std::sync::Arc;

use redis::Value;
use tokio::sync::watch;
use tokio::time::Instant;
use url_dedup_redis::Link;

use crate::error::{Error, FrameError, Result};
use crate::frame::{Flag, Frame};
use crate::keys::Keys;
use crate::mailbox::{Body, Delivery, Mailbox, Peer, scripts};
use crate::settings::Settings;
use crate::stats::{Counters, Loop, Stats, counted};
use crate::topology::Topology;

/// Where a frame is in its life at this center.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Our host's frame, waiting for the other hosts of our network (`local_reduce_pool`).
    Lan,
    /// Our network's frame, waiting for the other networks' centers (`dist_reduce_pool`).
    Dist,
    /// Another network's request, waiting for our hosts (`dist_reduce_pool`).
    Foreign,
}

#[derive(Debug)]
struct Pending {
    phase: Phase,
    /// The frame as stored in its pool (flag 2).
    frame: Frame,
    waiting: BTreeSet<IpAddr>,
    deadline: Instant,
}

/// Everything one batch of work changes: pool writes go out first in one `MULTI`, then the
/// frames, grouped per receiver.
#[derive(Default)]
struct Effects {
    writes: redis::Pipeline,
    write_count: usize,
    sends: BTreeMap<IpAddr, Vec<Arc<[u8]>>>,
}

impl Effects {
    /// Queues `frame` for every receiver in `to`, encoded once and shared (a frame of 1,000
    /// URLs goes to every host of a network).
    fn send(&mut self, to: impl IntoIterator<Item = IpAddr>, frame: &Frame) {
        let bytes: Arc<[u8]> = frame.encode().into();
        for ip in to {
            self.sends.entry(ip).or_default().push(Arc::clone(&bytes));
        }
    }
}

/// A center of the paper: owns `task_URL`, `local_reduce_pool` and `dist_reduce_pool` in its
/// own Redis and the counter that numbers its network's frames.
///
/// The same role serves as "the other network's center" for every other network: a
/// request (flag 2) from another center is asked of all local hosts and answered with
/// their marks (flag 3).
///
/// # Examples
///
/// ```
/// # use url_dedup_two_tier::testing::Cluster;
/// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
/// # let Some(cluster) = Cluster::launch(&[1], Default::default()).await? else { return Ok(()) };
/// # let (topology, ip) = (cluster.topology().clone(), cluster.center_ip(0));
/// use url_dedup_two_tier::{Center, Settings};
///
/// let center = Center::connect(&topology, ip, Settings::default()).await?;
/// let (stop, stopped) = tokio::sync::watch::channel(false);
/// let running = tokio::spawn(async move { center.run(stopped).await });
/// stop.send(true).unwrap();
/// running.await.unwrap()?;
/// # Ok::<(), url_dedup_two_tier::Error>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct Center {
    ip: IpAddr,
    keys: Keys,
    link: Link,
    redis: String,
    hosts: BTreeMap<IpAddr, Peer>,
    centers: BTreeMap<IpAddr, Peer>,
    settings: Settings,
    counters: Arc<Counters>,
}

impl Center {
    /// Connects the center `ip` of `topology` to its Redis, its hosts' and the other centers'.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownNode`] when `ip` is not a center of the topology, [`Error::Topology`]
    /// for an invalid topology or settings, [`Error::Redis`] when a Redis cannot be reached.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_two_tier::testing::Cluster;
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// # let Some(cluster) = Cluster::launch(&[1], Default::default()).await? else { return Ok(()) };
    /// use url_dedup_two_tier::{Center, Error, Settings};
    ///
    /// let host = cluster.host_ip(0, 0);
    /// let err = Center::connect(cluster.topology(), host, Settings::default()).await.unwrap_err();
    /// assert!(matches!(err, Error::UnknownNode(ip) if ip == host));
    /// # Ok::<(), url_dedup_two_tier::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn connect(topology: &Topology, ip: IpAddr, settings: Settings) -> Result<Self> {
        topology.validate()?;
        settings.validate()?;
        let net = topology
            .networks
            .iter()
            .find(|n| n.center.ip == ip)
            .ok_or(Error::UnknownNode(ip))?;
        let keys = Keys::new(topology.namespace()?);
        let counters = Arc::new(Counters::default());
        let link = Link::connect_with(&net.center.redis, settings.backoff).await?;
        let mut hosts = BTreeMap::new();
        for h in &net.hosts {
            let peer = Peer::connect(h.ip, &h.redis, ip, &keys, &settings, counters.clone());
            hosts.insert(h.ip, peer.await?);
        }
        let mut centers = BTreeMap::new();
        for other in topology.networks.iter().filter(|n| n.center.ip != ip) {
            let c = &other.center;
            let peer = Peer::connect(c.ip, &c.redis, ip, &keys, &settings, counters.clone());
            centers.insert(c.ip, peer.await?);
        }
        Ok(Self {
            ip,
            keys,
            link,
            redis: net.center.redis.clone(),
            hosts,
            centers,
            settings,
            counters,
        })
    }

    /// This center's address.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_two_tier::testing::Cluster;
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// # let Some(cluster) = Cluster::launch(&[1], Default::default()).await? else { return Ok(()) };
    /// let center = url_dedup_two_tier::Center::connect(cluster.topology(), cluster.center_ip(0), Default::default()).await?;
    /// assert_eq!(center.ip(), cluster.center_ip(0));
    /// # Ok::<(), url_dedup_two_tier::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn ip(&self) -> IpAddr {
        self.ip
    }

    /// What this center did so far.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_two_tier::testing::Cluster;
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// # let Some(cluster) = Cluster::launch(&[1], Default::default()).await? else { return Ok(()) };
    /// let center = url_dedup_two_tier::Center::connect(cluster.topology(), cluster.center_ip(0), Default::default()).await?;
    /// assert_eq!(center.stats().completed, 0);
    /// # Ok::<(), url_dedup_two_tier::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn stats(&self) -> Stats {
        self.counters.snapshot()
    }

    pub(crate) fn counters(&self) -> Arc<Counters> {
        self.counters.clone()
    }

    /// Runs the center until `stop` turns true (or its sender is dropped).
    ///
    /// On start it picks up the frames its pools still hold (from a previous run) and asks
    /// again for their answers, with fresh deadlines; hosts that answered before ignore the
    /// repeated request, so such a frame completes at its deadline at the latest.
    ///
    /// # Errors
    ///
    /// [`Error::Redis`] when a Redis stays unreachable for the whole backoff budget; the
    /// center's state stays in its Redis, and a new `run` continues from there.
    ///
    /// # Examples
    ///
    /// See [`Center`].
    pub async fn run(&self, mut stop: watch::Receiver<bool>) -> Result<()> {
        let mailbox = Mailbox::open(
            self.link.clone(),
            &self.redis,
            &self.keys,
            self.hosts
                .keys()
                .chain(self.centers.keys())
                .copied()
                .collect(),
            &self.settings,
            self.counters.clone(),
        )
        .await?;
        let mut pending = HashMap::new();
        let mut undispatched = self.recover(&mut pending).await?;
        let mut rotation = 0usize;
        while !*stop.borrow() {
            self.counters.round(Loop::Main);
            let deliveries = mailbox.receive().await?;
            let full = deliveries.len() >= mailbox.batch();
            let mut fx = Effects::default();
            if !deliveries.is_empty() {
                self.handle(&mut pending, deliveries, &mut fx, &mut undispatched)
                    .await?;
            }
            self.expire(&mut pending, &mut fx, &mut undispatched);
            self.flush(fx).await?;
            while undispatched >= self.settings.dispatch_chunk || (!full && undispatched > 0) {
                undispatched = self.dispatch(&mut rotation).await?;
            }
            if !full {
                let now = Instant::now();
                let next = pending.values().map(|p| p.deadline).min();
                let wait = next
                    .map_or(self.settings.idle_wait, |d| {
                        d.saturating_duration_since(now)
                    })
                    .min(self.settings.idle_wait);
                if !wait.is_zero() {
                    tokio::select! {
                        // A dropped sender can never say "stop": treat it as saying so.
                        changed = stop.changed() => if changed.is_err() { break },
                        waited = mailbox.wait(wait) => waited?,
                    }
                }
            }
        }
        Ok(())
    }

    /// Loads the frames left in the pools and asks for their answers again.
    async fn recover(&self, pending: &mut HashMap<u64, Pending>) -> Result<usize> {
        let (local, dist, queued): (Vec<Vec<u8>>, Vec<Vec<u8>>, usize) =
            counted(&self.counters, &self.link, "recover pools", |mut conn| {
                let mut pipe = redis::pipe();
                pipe.cmd("HVALS")
                    .arg(self.keys.local_reduce_pool())
                    .cmd("HVALS")
                    .arg(self.keys.dist_reduce_pool())
                    .cmd("LLEN")
                    .arg(self.keys.task_url());
                async move { pipe.query_async(&mut conn).await }
            })
            .await?;
        let mut fx = Effects::default();
        let pools = [
            (self.keys.local_reduce_pool(), local),
            (self.keys.dist_reduce_pool(), dist),
        ];
        for (pool, frames) in pools {
            for bytes in frames {
                let frame = match Frame::decode(&bytes, &self.settings.limits) {
                    Ok(f) => f,
                    Err(e) => {
                        tracing::error!(center = %self.ip, %pool, error = %e, "unreadable frame left in pool");
                        continue;
                    }
                };
                let phase = if pool == self.keys.local_reduce_pool() {
                    Phase::Lan
                } else if frame.ip == self.ip {
                    Phase::Dist
                } else {
                    Phase::Foreign
                };
                tracing::info!(center = %self.ip, number = frame.number, ?phase, "resuming frame");
                self.start(pending, phase, frame, &mut fx);
            }
        }
        self.flush(fx).await?;
        Ok(queued)
    }

    /// Starts waiting for answers to `frame` (already stored in its pool): sends the
    /// requests and sets the deadline.
    fn start(
        &self,
        pending: &mut HashMap<u64, Pending>,
        phase: Phase,
        frame: Frame,
        fx: &mut Effects,
    ) {
        let (waiting, timeout): (BTreeSet<IpAddr>, _) = match phase {
            // The submitting host is not asked: it dropped its finished URLs already.
            Phase::Lan => (
                self.hosts
                    .keys()
                    .copied()
                    .filter(|&h| h != frame.ip)
                    .collect(),
                self.settings.lan_timeout,
            ),
            Phase::Dist => (
                self.centers.keys().copied().collect(),
                self.settings.wan_timeout,
            ),
            Phase::Foreign => (
                self.hosts.keys().copied().collect(),
                self.settings.lan_timeout,
            ),
        };
        fx.send(waiting.iter().copied(), &frame);
        pending.insert(
            frame.number,
            Pending {
                phase,
                frame,
                waiting,
                deadline: Instant::now() + timeout,
            },
        );
    }

    async fn handle(
        &self,
        pending: &mut HashMap<u64, Pending>,
        deliveries: Vec<Delivery>,
        fx: &mut Effects,
        undispatched: &mut usize,
    ) -> Result<()> {
        let mut admissions = Vec::new();
        let mut answers = Vec::new();
        for d in deliveries {
            let from = d.from;
            match self.classify(d) {
                Ok(Incoming::Admit(phase, frame)) => admissions.push((phase, frame)),
                Ok(Incoming::Answer(phase, frame)) => answers.push((from, phase, frame)),
                Err(e) => {
                    tracing::error!(center = %self.ip, error = %e, "rejected frame");
                    self.counters.rejected();
                }
            }
        }
        if !admissions.is_empty() {
            let admitted = self.admit(&admissions).await?;
            for ((phase, frame), fresh) in admissions.into_iter().zip(admitted) {
                if !fresh {
                    tracing::debug!(center = %self.ip, number = frame.number, "frame delivered again; ignored");
                    self.counters.duplicate();
                    continue;
                }
                let number = frame.number;
                tracing::debug!(center = %self.ip, number, ?phase, urls = frame.url_set.len(), "frame admitted");
                self.start(pending, phase, frame, fx);
                self.maybe_complete(pending, number, fx, undispatched);
            }
        }
        for (from, phase, answer) in answers {
            self.apply(pending, from, phase, &answer, fx, undispatched);
        }
        Ok(())
    }

    /// Checks a delivery against the paper's rules for who may send what to a center.
    fn classify(&self, d: Delivery) -> Result<Incoming, FrameError> {
        let bytes = match d.body {
            Body::Frame(bytes) => bytes,
            Body::TooLarge(bytes) => {
                return Err(FrameError::TooLarge {
                    bytes,
                    max: self.settings.limits.max_bytes,
                });
            }
        };
        let mut frame = Frame::decode(&bytes, &self.settings.limits)?;
        let from_host = self.hosts.contains_key(&d.from);
        let misrouted = |frame: &Frame, reason| FrameError::Misrouted {
            number: frame.number,
            flag: frame.flag.code(),
            sender: d.from,
            reason,
        };
        match frame.flag {
            Flag::Submit if from_host && frame.ip == d.from => {
                // The paper's frame enters local_reduce_pool as a request: flag 2, all 0.
                frame.flag = Flag::Request;
                frame.url_set.clear_marks();
                Ok(Incoming::Admit(Phase::Lan, frame))
            }
            Flag::Submit => Err(misrouted(
                &frame,
                "flag 1 must come from a local host with its own IP",
            )),
            Flag::Request if !from_host && frame.ip == d.from => {
                Ok(Incoming::Admit(Phase::Foreign, frame))
            }
            Flag::Request => Err(misrouted(
                &frame,
                "flag 2 must come from another network's center with its own IP",
            )),
            Flag::Answer if from_host && self.hosts.contains_key(&frame.ip) => {
                Ok(Incoming::Answer(Phase::Lan, frame))
            }
            Flag::Answer if from_host && self.centers.contains_key(&frame.ip) => {
                Ok(Incoming::Answer(Phase::Foreign, frame))
            }
            Flag::Answer if !from_host && frame.ip == self.ip => {
                Ok(Incoming::Answer(Phase::Dist, frame))
            }
            Flag::Answer => Err(misrouted(&frame, "an answer's IP must be the requester's")),
        }
    }

    /// Stores each frame in its pool unless its number was seen before; one round trip.
    async fn admit(&self, frames: &[(Phase, Frame)]) -> Result<Vec<bool>> {
        let ttl = self.settings.seen_ttl.as_millis() as u64;
        let encoded: Vec<Vec<u8>> = frames.iter().map(|(_, f)| f.encode()).collect();
        let reply: Vec<i64> = counted(&self.counters, &self.link, "admit frames", |mut conn| {
            let mut call = scripts().admit.prepare_invoke();
            call.arg(ttl);
            for ((phase, frame), bytes) in frames.iter().zip(&encoded) {
                call.key(self.keys.seen(frame.ip, frame.number))
                    .key(self.pool(*phase))
                    .arg(frame.number)
                    .arg(bytes.as_slice());
            }
            async move { call.invoke_async(&mut conn).await }
        })
        .await?;
        if reply.len() != frames.len() {
            return Err(Error::Corrupt {
                key: self.keys.local_reduce_pool(),
                detail: "admit script reply count".into(),
            });
        }
        Ok(reply.into_iter().map(|r| r == 1).collect())
    }

    fn pool(&self, phase: Phase) -> String {
        match phase {
            Phase::Lan => self.keys.local_reduce_pool(),
            Phase::Dist | Phase::Foreign => self.keys.dist_reduce_pool(),
        }
    }

    /// Applies one answer, at most once per answerer and only while its frame still waits
    /// in the phase the answer belongs to.
    fn apply(
        &self,
        pending: &mut HashMap<u64, Pending>,
        from: IpAddr,
        phase: Phase,
        answer: &Frame,
        fx: &mut Effects,
        undispatched: &mut usize,
    ) {
        let number = answer.number;
        let Some(p) = pending.get_mut(&number).filter(|p| p.phase == phase) else {
            // Completed already (by its deadline, usually), or never ours.
            tracing::debug!(center = %self.ip, number, %from, "late answer ignored");
            self.counters.late_answer();
            return;
        };
        if p.frame.ip != answer.ip {
            tracing::error!(center = %self.ip, number, %from, "answer names another requester; rejected");
            self.counters.rejected();
            return;
        }
        if !p.waiting.remove(&from) {
            tracing::debug!(center = %self.ip, number, %from, "answer delivered again; ignored");
            self.counters.duplicate();
            return;
        }
        let changed = match phase {
            // Marked URLs are known elsewhere: they leave the frame.
            Phase::Lan | Phase::Dist => {
                let removed = p.frame.url_set.remove_marked(&answer.url_set);
                self.counters.add_removed_by_answers(removed as u64);
                removed
            }
            // Another network's request goes back with every mark our hosts set.
            Phase::Foreign => p.frame.url_set.merge_marks(&answer.url_set),
        };
        if changed > 0 && !p.waiting.is_empty() {
            let bytes = p.frame.encode();
            fx.writes
                .cmd("HSET")
                .arg(self.pool(phase))
                .arg(number)
                .arg(bytes)
                .ignore();
            fx.write_count += 1;
        }
        self.maybe_complete(pending, number, fx, undispatched);
    }

    /// Completes every frame whose deadline passed, with the answers it has.
    fn expire(
        &self,
        pending: &mut HashMap<u64, Pending>,
        fx: &mut Effects,
        undispatched: &mut usize,
    ) {
        let now = Instant::now();
        let due: Vec<u64> = pending
            .iter()
            .filter(|(_, p)| p.deadline <= now)
            .map(|(&n, _)| n)
            .collect();
        for number in due {
            if let Some(p) = pending.get(&number) {
                tracing::warn!(center = %self.ip, number, phase = ?p.phase, missing = ?p.waiting, "deadline passed; completing with the answers received");
            }
            self.counters.timeout();
            self.complete(pending, number, fx, undispatched);
        }
    }

    fn maybe_complete(
        &self,
        pending: &mut HashMap<u64, Pending>,
        number: u64,
        fx: &mut Effects,
        undispatched: &mut usize,
    ) {
        if pending.get(&number).is_some_and(|p| p.waiting.is_empty()) {
            self.complete(pending, number, fx, undispatched);
        }
    }

    fn complete(
        &self,
        pending: &mut HashMap<u64, Pending>,
        number: u64,
        fx: &mut Effects,
        undispatched: &mut usize,
    ) {
        let Some(p) = pending.remove(&number) else {
            return;
        };
        tracing::debug!(center = %self.ip, number, phase = ?p.phase, urls = p.frame.url_set.len(), "frame completed");
        let pool = self.pool(p.phase);
        fx.writes.cmd("HDEL").arg(&pool).arg(number).ignore();
        fx.write_count += 1;
        let mut frame = p.frame;
        match p.phase {
            Phase::Lan if !frame.url_set.is_empty() && !self.centers.is_empty() => {
                // On to the other networks, under this center's IP so answers find their way
                // back (the paper's "dis_reduce_pool").
                frame.ip = self.ip;
                fx.writes
                    .cmd("HSET")
                    .arg(self.keys.dist_reduce_pool())
                    .arg(number)
                    .arg(frame.encode())
                    .ignore();
                fx.write_count += 1;
                self.start(pending, Phase::Dist, frame, fx);
                return;
            }
            Phase::Lan | Phase::Dist => {
                if !frame.url_set.is_empty() {
                    let cmd = fx.writes.cmd("RPUSH").arg(self.keys.task_url());
                    for url in frame.url_set.urls() {
                        cmd.arg(url);
                    }
                    cmd.ignore();
                    fx.write_count += 1;
                    *undispatched += frame.url_set.len();
                }
            }
            Phase::Foreign => {
                frame.flag = Flag::Answer;
                fx.send([frame.ip], &frame);
            }
        }
        self.counters.completed();
    }

    /// Writes first (a crash then re-sends rather than forgets), then the frames, one round
    /// trip per receiver, all receivers at once.
    async fn flush(&self, fx: Effects) -> Result<()> {
        if fx.write_count > 0 {
            let mut pipe = fx.writes;
            pipe.atomic();
            counted(&self.counters, &self.link, "write pools", |mut conn| {
                let pipe = pipe.clone();
                async move { pipe.query_async::<()>(&mut conn).await }
            })
            .await?;
        }
        let sends = fx.sends.iter().filter_map(|(to, frames)| {
            let peer = self.hosts.get(to).or_else(|| self.centers.get(to))?;
            Some(peer.send(frames))
        });
        futures_util::future::try_join_all(sends).await?;
        Ok(())
    }

    /// Moves up to `dispatch_chunk` URLs from `task_URL` into the hosts' `task_pool`s, an
    /// equal share each, starting with the next host in turn; returns what is left.
    async fn dispatch(&self, rotation: &mut usize) -> Result<usize> {
        let chunk = self.settings.dispatch_chunk;
        let (urls, len): (Vec<String>, usize) =
            counted(&self.counters, &self.link, "read task_URL", |mut conn| {
                let mut pipe = redis::pipe();
                pipe.cmd("LRANGE")
                    .arg(self.keys.task_url())
                    .arg(0)
                    .arg(chunk - 1)
                    .cmd("LLEN")
                    .arg(self.keys.task_url());
                async move { pipe.query_async(&mut conn).await }
            })
            .await?;
        if urls.is_empty() {
            return Ok(0);
        }
        let hosts: Vec<&Peer> = self.hosts.values().collect();
        let share = urls.len().div_ceil(hosts.len());
        let pushes = urls.chunks(share).enumerate().map(|(i, part)| {
            let peer = hosts[(*rotation + i) % hosts.len()];
            let key = peer.keys.task_pool();
            counted(
                &self.counters,
                &peer.link,
                "fill task_pool",
                move |mut conn| {
                    let mut cmd = redis::cmd("RPUSH");
                    cmd.arg(&key).arg(part);
                    async move { cmd.query_async::<Value>(&mut conn).await }
                },
            )
        });
        futures_util::future::try_join_all(pushes).await?;
        *rotation = rotation.wrapping_add(1);
        counted(&self.counters, &self.link, "trim task_URL", |mut conn| {
            let key = self.keys.task_url();
            let from = urls.len();
            async move {
                redis::cmd("LTRIM")
                    .arg(key)
                    .arg(from)
                    .arg(-1)
                    .query_async::<()>(&mut conn)
                    .await
            }
        })
        .await?;
        self.counters.add_dispatched(urls.len() as u64);
        tracing::debug!(center = %self.ip, urls = urls.len(), left = len.saturating_sub(urls.len()), "task_URL dispatched");
        Ok(len.saturating_sub(urls.len()))
    }
}

enum Incoming {
    Admit(Phase, Frame),
    Answer(Phase, Frame),
}
