//! The local host: local dedup of `URL_pool` against `finish_URL`, submission to the center
//! (flag 1), and answers (flag 3) to the center's dedup requests (flag 2).

use std::net::IpAddr;
use std::sync::Arc;

use redis::Value;
use tokio::sync::watch;
use url_dedup_bloom::hash::{HashKey, ItemHasher, SipHash13};
use url_dedup_redis::{GlobalIds, Link};

use crate::error::{Error, FrameError, Result};
use crate::frame::{Flag, Frame, UrlSet, check_url};
use crate::keys::Keys;
use crate::mailbox::{Body, Delivery, Mailbox, Peer, scripts, wait_on};
use crate::number::FrameNumber;
use crate::settings::Settings;
use crate::stats::{Counters, Loop, Stats, counted};
use crate::topology::Topology;

/// A local host of the paper: owns `finish_URL`, `task_pool` and `URL_pool` in its own Redis.
///
/// A crawler on the host adds the links it finds with [`discover`](Self::discover), takes
/// work with [`take_tasks`](Self::take_tasks) and records crawled pages with
/// [`finish`](Self::finish); [`run`](Self::run) does the protocol: it repeatedly takes a
/// batch from `URL_pool`, drops URLs whose digest is in `finish_URL`, sends the rest to the
/// center as a flag-1 frame, and answers the center's requests.
///
/// `finish_URL` holds 16-byte keyed SipHash-1-3 digests. The key is the host's own, kept in
/// its Redis and never sent anywhere, so nobody can craft URLs that collide in it.
///
/// # Examples
///
/// ```
/// # use url_dedup_two_tier::testing::Cluster;
/// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
/// # let Some(cluster) = Cluster::launch(&[1], Default::default()).await? else { return Ok(()) };
/// # let (topology, ip) = (cluster.topology().clone(), cluster.host_ip(0, 0));
/// use url_dedup_two_tier::{LocalHost, Settings};
///
/// let host = LocalHost::connect(&topology, ip, Settings::default()).await?;
/// host.finish(&["https://example.com/"]).await?;
/// assert_eq!(host.discover(&["https://example.com/", "https://example.com/new"]).await?, 2);
/// assert!(host.take_tasks(10).await?.is_empty()); // nothing passed dedup yet
/// # Ok::<(), url_dedup_two_tier::Error>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct LocalHost {
    ip: IpAddr,
    keys: Keys,
    link: Link,
    redis: String,
    center: Peer,
    numbers: FrameNumber,
    hasher: SipHash13,
    settings: Settings,
    counters: Arc<Counters>,
}

impl LocalHost {
    /// Connects the host `ip` of `topology` to its Redis and its center's.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownNode`] when `ip` is not a host of the topology, [`Error::Topology`] for
    /// an invalid topology or settings, [`Error::Redis`] when a Redis cannot be reached.
    ///
    /// # Examples
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_two_tier::{Error, LocalHost, Settings, Topology};
    ///
    /// let t = Topology { namespace: "c".into(), networks: vec![] };
    /// let err = LocalHost::connect(&t, "10.0.0.1".parse().unwrap(), Settings::default()).await;
    /// assert!(matches!(err, Err(Error::Topology(_))));
    /// # });
    /// ```
    pub async fn connect(topology: &Topology, ip: IpAddr, settings: Settings) -> Result<Self> {
        topology.validate()?;
        settings.validate()?;
        let network = topology.network_of(ip).ok_or(Error::UnknownNode(ip))?;
        let net = &topology.networks[network];
        let me = net
            .hosts
            .iter()
            .find(|h| h.ip == ip)
            .ok_or(Error::UnknownNode(ip))?;
        let keys = Keys::new(topology.namespace()?);
        let counters = Arc::new(Counters::default());
        let link = Link::connect_with(&me.redis, settings.backoff).await?;
        let center = Peer::connect(
            net.center.ip,
            &net.center.redis,
            ip,
            &keys,
            &settings,
            counters.clone(),
        )
        .await?;
        let numbers = FrameNumber::new(
            GlobalIds::new(center.link.clone(), keys.namespace().clone()),
            network,
            settings.numbers_per_reservation,
        )
        .with_counters(counters.clone());
        let hasher = SipHash13::new(host_key(&link, &keys, &counters).await?);
        Ok(Self {
            ip,
            keys,
            link,
            redis: me.redis.clone(),
            center,
            numbers,
            hasher,
            settings,
            counters,
        })
    }

    /// This host's address.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_two_tier::testing::Cluster;
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// # let Some(cluster) = Cluster::launch(&[1], Default::default()).await? else { return Ok(()) };
    /// let host = cluster.local_host(cluster.host_ip(0, 0)).await?;
    /// assert_eq!(host.ip(), cluster.host_ip(0, 0));
    /// # Ok::<(), url_dedup_two_tier::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn ip(&self) -> IpAddr {
        self.ip
    }

    /// What this handle did so far.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_two_tier::testing::Cluster;
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// # let Some(cluster) = Cluster::launch(&[1], Default::default()).await? else { return Ok(()) };
    /// let host = cluster.local_host(cluster.host_ip(0, 0)).await?;
    /// host.discover(&["https://a.example/"]).await?;
    /// assert!(host.stats().round_trips >= 1);
    /// # Ok::<(), url_dedup_two_tier::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn stats(&self) -> Stats {
        self.counters.snapshot()
    }

    pub(crate) fn counters(&self) -> Arc<Counters> {
        self.counters.clone()
    }

    /// Adds newly found URLs to `URL_pool` and wakes the host's protocol loop; returns how
    /// many were not in the pool yet.
    ///
    /// # Errors
    ///
    /// [`Error::Frame`] with [`FrameError::BadUrl`] when a URL is empty, longer than
    /// `limits.max_url_len` or holds control characters (nothing is added then);
    /// [`Error::Redis`] when Redis stays unreachable.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_two_tier::testing::Cluster;
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// # let Some(cluster) = Cluster::launch(&[1], Default::default()).await? else { return Ok(()) };
    /// let host = cluster.local_host(cluster.host_ip(0, 0)).await?;
    /// assert_eq!(host.discover(&["https://a.example/", "https://a.example/"]).await?, 1);
    /// assert!(host.discover(&[""]).await.is_err());
    /// # Ok::<(), url_dedup_two_tier::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn discover<S: AsRef<str>>(&self, urls: &[S]) -> Result<u64> {
        for url in urls {
            check_url(url.as_ref(), &self.settings.limits)?;
        }
        let mut added = 0;
        for chunk in urls.chunks(self.settings.urls_per_frame) {
            added += counted(&self.counters, &self.link, "discover", |mut conn| {
                let mut call = scripts().discover.prepare_invoke();
                call.key(self.keys.url_pool()).key(self.keys.pool_wake());
                for url in chunk {
                    call.arg(url.as_ref());
                }
                async move { call.invoke_async::<u64>(&mut conn).await }
            })
            .await?;
        }
        Ok(added)
    }

    /// Records crawled URLs in `finish_URL`.
    ///
    /// # Errors
    ///
    /// [`Error::Redis`] when Redis stays unreachable.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_two_tier::testing::Cluster;
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// # let Some(cluster) = Cluster::launch(&[1], Default::default()).await? else { return Ok(()) };
    /// let host = cluster.local_host(cluster.host_ip(0, 0)).await?;
    /// host.finish(&["https://a.example/"]).await?;
    /// assert_eq!(host.finished(&["https://a.example/", "https://b.example/"]).await?, [true, false]);
    /// # Ok::<(), url_dedup_two_tier::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn finish<S: AsRef<str>>(&self, urls: &[S]) -> Result<()> {
        for chunk in urls.chunks(self.settings.urls_per_frame) {
            let digests: Vec<[u8; 16]> = chunk.iter().map(|u| self.digest(u.as_ref())).collect();
            counted(&self.counters, &self.link, "finish", |mut conn| {
                let mut cmd = redis::cmd("SADD");
                cmd.arg(self.keys.finish_url());
                for d in &digests {
                    cmd.arg(&d[..]);
                }
                async move { cmd.query_async::<u64>(&mut conn).await }
            })
            .await?;
        }
        Ok(())
    }

    /// Whether each URL is in `finish_URL`.
    ///
    /// # Errors
    ///
    /// [`Error::Redis`] when Redis stays unreachable.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_two_tier::testing::Cluster;
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// # let Some(cluster) = Cluster::launch(&[1], Default::default()).await? else { return Ok(()) };
    /// let host = cluster.local_host(cluster.host_ip(0, 0)).await?;
    /// assert_eq!(host.finished(&["https://a.example/"]).await?, [false]);
    /// # Ok::<(), url_dedup_two_tier::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn finished<S: AsRef<str>>(&self, urls: &[S]) -> Result<Vec<bool>> {
        let digests: Vec<[u8; 16]> = urls.iter().map(|u| self.digest(u.as_ref())).collect();
        self.lookup(&digests).await
    }

    /// Takes up to `max` URLs to crawl from `task_pool`.
    ///
    /// # Errors
    ///
    /// [`Error::Redis`] when Redis stays unreachable.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_two_tier::testing::Cluster;
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// # let Some(cluster) = Cluster::launch(&[1], Default::default()).await? else { return Ok(()) };
    /// let host = cluster.local_host(cluster.host_ip(0, 0)).await?;
    /// assert!(host.take_tasks(100).await?.is_empty());
    /// # Ok::<(), url_dedup_two_tier::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn take_tasks(&self, max: usize) -> Result<Vec<String>> {
        if max == 0 {
            return Ok(Vec::new());
        }
        let urls: Option<Vec<String>> =
            counted(&self.counters, &self.link, "take tasks", |mut conn| {
                let key = self.keys.task_pool();
                async move {
                    redis::cmd("LPOP")
                        .arg(key)
                        .arg(max)
                        .query_async(&mut conn)
                        .await
                }
            })
            .await?;
        Ok(urls.unwrap_or_default())
    }

    /// One round of local dedup: takes up to `urls_per_frame` URLs from `URL_pool`, drops
    /// those in `finish_URL` and submits the rest to the center (flag 1). Returns how many
    /// URLs it took; 0 means the pool was empty.
    ///
    /// The batch stays in Redis (`URL_pool:sending`) until the next round, so a host that
    /// crashes before its frame reached the center sends the batch again when it restarts.
    ///
    /// # Errors
    ///
    /// [`Error::Redis`] when a Redis stays unreachable; the batch is then kept for the next
    /// [`run`](Self::run).
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_two_tier::testing::Cluster;
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// # let Some(cluster) = Cluster::launch(&[1], Default::default()).await? else { return Ok(()) };
    /// let host = cluster.local_host(cluster.host_ip(0, 0)).await?;
    /// host.finish(&["https://a.example/"]).await?;
    /// host.discover(&["https://a.example/", "https://b.example/"]).await?;
    /// assert_eq!(host.submit_once().await?, 2);
    /// assert_eq!(host.stats().dropped_locally, 1);
    /// assert_eq!(host.stats().frames_sent, 1);
    /// assert_eq!(host.submit_once().await?, 0);
    /// # Ok::<(), url_dedup_two_tier::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn submit_once(&self) -> Result<usize> {
        let urls: Vec<String> = counted(&self.counters, &self.link, "take URL_pool", |mut conn| {
            let mut call = scripts().take.prepare_invoke();
            call.key(self.keys.url_pool())
                .key(self.keys.sending())
                .arg(self.settings.urls_per_frame);
            async move { call.invoke_async(&mut conn).await }
        })
        .await?;
        self.submit(&urls).await?;
        Ok(urls.len())
    }

    /// Submits a batch left in `URL_pool:sending` by a run that stopped before its frame
    /// reached the center.
    async fn resume(&self) -> Result<()> {
        let urls: Vec<String> = counted(&self.counters, &self.link, "resume", |mut conn| {
            let key = self.keys.sending();
            async move { redis::cmd("SMEMBERS").arg(key).query_async(&mut conn).await }
        })
        .await?;
        if !urls.is_empty() {
            tracing::info!(host = %self.ip, urls = urls.len(), "resubmitting an unsent batch");
            self.submit(&urls).await?;
        }
        Ok(())
    }

    async fn submit(&self, urls: &[String]) -> Result<()> {
        let limits = &self.settings.limits;
        let valid: Vec<&str> = urls
            .iter()
            .map(String::as_str)
            .filter(|url| match check_url(url, limits) {
                Ok(()) => true,
                Err(e) => {
                    // Written into URL_pool behind `discover`'s back: it cannot travel.
                    tracing::error!(host = %self.ip, error = %e, "dropping a URL from URL_pool");
                    self.counters.rejected();
                    false
                }
            })
            .collect();
        if valid.is_empty() {
            return Ok(());
        }
        let digests: Vec<[u8; 16]> = valid.iter().map(|u| self.digest(u)).collect();
        let finished = self.lookup(&digests).await?;
        let fresh: Vec<&str> = valid
            .iter()
            .zip(&finished)
            .filter(|(_, done)| !**done)
            .map(|(u, _)| *u)
            .collect();
        self.counters
            .add_dropped_locally((valid.len() - fresh.len()) as u64);
        if fresh.is_empty() {
            return Ok(());
        }
        let frame = Frame {
            url_set: UrlSet::from_urls(fresh),
            ip: self.ip,
            number: self.numbers.next().await?,
            flag: Flag::Submit,
        };
        tracing::debug!(host = %self.ip, number = frame.number, urls = frame.url_set.len(), "submitting");
        self.center.send(&[frame.encode()]).await
    }

    async fn lookup(&self, digests: &[[u8; 16]]) -> Result<Vec<bool>> {
        if digests.is_empty() {
            return Ok(Vec::new());
        }
        counted(
            &self.counters,
            &self.link,
            "look up finish_URL",
            |mut conn| {
                let mut cmd = redis::cmd("SMISMEMBER");
                cmd.arg(self.keys.finish_url());
                for d in digests {
                    cmd.arg(&d[..]);
                }
                async move { cmd.query_async(&mut conn).await }
            },
        )
        .await
    }

    fn digest(&self, url: &str) -> [u8; 16] {
        let d = self.hasher.hash(url.as_bytes());
        let mut out = [0; 16];
        out[..8].copy_from_slice(&d.h1.to_le_bytes());
        out[8..].copy_from_slice(&d.h2.to_le_bytes());
        out
    }

    /// Answers a batch of deliveries from the center: every well-formed request (flag 2) not
    /// seen before gets its answer (flag 3); everything else is logged and dropped.
    async fn answer(&self, deliveries: Vec<Delivery>) -> Result<()> {
        let mut requests = Vec::new();
        for d in deliveries {
            match self.check_request(d) {
                Ok(Some(frame)) => requests.push(frame),
                Ok(None) => {}
                Err(e) => {
                    tracing::error!(host = %self.ip, error = %e, "rejected frame");
                    self.counters.rejected();
                }
            }
        }
        if requests.is_empty() {
            return Ok(());
        }
        // One round trip for every request: its seen-marker, then its lookups.
        let all_digests: Vec<Vec<[u8; 16]>> = requests
            .iter()
            .map(|f| f.url_set.urls().map(|u| self.digest(u)).collect())
            .collect();
        let ttl = self.settings.seen_ttl.as_millis() as u64;
        let replies: Vec<Value> = counted(
            &self.counters,
            &self.link,
            "look up requests",
            |mut conn| {
                let mut pipe = redis::pipe();
                for (frame, digests) in requests.iter().zip(&all_digests) {
                    pipe.cmd("SET")
                        .arg(self.keys.seen(frame.ip, frame.number))
                        .arg(1)
                        .arg("NX")
                        .arg("PX")
                        .arg(ttl);
                    let cmd = pipe.cmd("SMISMEMBER").arg(self.keys.finish_url());
                    for d in digests {
                        cmd.arg(&d[..]);
                    }
                }
                async move { pipe.query_async(&mut conn).await }
            },
        )
        .await?;
        let corrupt = |detail: &str| Error::Corrupt {
            key: self.keys.finish_url(),
            detail: detail.to_owned(),
        };
        if replies.len() != requests.len() * 2 {
            return Err(corrupt("pipeline reply count"));
        }
        let mut answers = Vec::new();
        for (mut frame, pair) in requests.into_iter().zip(replies.chunks(2)) {
            if matches!(pair[0], Value::Nil) {
                tracing::debug!(host = %self.ip, number = frame.number, "request delivered again; ignored");
                self.counters.duplicate();
                continue;
            }
            let finished: Vec<bool> = redis::from_redis_value_ref(&pair[1])
                .map_err(|e| corrupt(&format!("SMISMEMBER reply: {e}")))?;
            let marked: Vec<String> = frame
                .url_set
                .urls()
                .zip(&finished)
                .filter(|(_, done)| **done)
                .map(|(u, _)| u.to_owned())
                .collect();
            for url in &marked {
                frame.url_set.mark(url);
            }
            frame.flag = Flag::Answer;
            answers.push(frame.encode());
        }
        if !answers.is_empty() {
            tracing::debug!(host = %self.ip, answers = answers.len(), "answering");
            self.center.send(&answers).await?;
        }
        Ok(())
    }

    /// A request to answer, `None` for one of our own frames (the paper: "丟棄" – discard).
    fn check_request(&self, d: Delivery) -> Result<Option<Frame>, FrameError> {
        let bytes = match d.body {
            Body::Frame(bytes) => bytes,
            Body::TooLarge(bytes) => {
                return Err(FrameError::TooLarge {
                    bytes,
                    max: self.settings.limits.max_bytes,
                });
            }
        };
        let frame = Frame::decode(&bytes, &self.settings.limits)?;
        let misrouted = |reason| FrameError::Misrouted {
            number: frame.number,
            flag: frame.flag.code(),
            sender: d.from,
            reason,
        };
        if frame.flag != Flag::Request {
            return Err(misrouted("a host only answers requests (flag 2)"));
        }
        if frame.ip == self.ip {
            tracing::debug!(host = %self.ip, number = frame.number, "own frame discarded");
            return Ok(None);
        }
        Ok(Some(frame))
    }

    /// Runs the host until `stop` turns true (or its sender is dropped): local dedup and
    /// submissions in one task, answers to the center's requests in another.
    ///
    /// # Errors
    ///
    /// [`Error::Redis`] when a Redis stays unreachable for the whole backoff budget; the
    /// host's state stays in Redis, and a new `run` continues where this one stopped.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_two_tier::testing::Cluster;
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// # let Some(cluster) = Cluster::launch(&[1], Default::default()).await? else { return Ok(()) };
    /// let host = cluster.local_host(cluster.host_ip(0, 0)).await?;
    /// let (stop, stopped) = tokio::sync::watch::channel(false);
    /// let running = tokio::spawn(async move { host.run(stopped).await });
    /// stop.send(true).unwrap();
    /// running.await.unwrap()?;
    /// # Ok::<(), url_dedup_two_tier::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn run(&self, stop: watch::Receiver<bool>) -> Result<()> {
        let mailbox = Mailbox::open(
            self.link.clone(),
            &self.redis,
            &self.keys,
            vec![self.center.ip],
            &self.settings,
            self.counters.clone(),
        )
        .await?;
        let pool_waiter = Link::connect_with(&self.redis, self.settings.backoff).await?;
        tokio::try_join!(
            self.answer_loop(&mailbox, stop.clone()),
            self.submit_loop(&pool_waiter, stop),
        )?;
        Ok(())
    }

    async fn answer_loop(&self, mailbox: &Mailbox, mut stop: watch::Receiver<bool>) -> Result<()> {
        while !*stop.borrow() {
            self.counters.round(Loop::Main);
            let deliveries = mailbox.receive().await?;
            let full = deliveries.len() >= mailbox.batch();
            if !deliveries.is_empty() {
                self.answer(deliveries).await?;
            }
            if !full {
                tokio::select! {
                    changed = stop.changed() => if changed.is_err() { break },
                    waited = mailbox.wait(self.settings.idle_wait) => waited?,
                }
            }
        }
        Ok(())
    }

    async fn submit_loop(&self, waiter: &Link, mut stop: watch::Receiver<bool>) -> Result<()> {
        self.resume().await?;
        let wake = self.keys.pool_wake();
        while !*stop.borrow() {
            self.counters.round(Loop::Submit);
            if self.submit_once().await? == 0 {
                tokio::select! {
                    changed = stop.changed() => if changed.is_err() { break },
                    waited = wait_on(waiter, &wake, self.settings.idle_wait, &self.counters) => waited?,
                }
            }
        }
        Ok(())
    }
}

/// The host's secret key for `finish_URL` digests: created once, kept in its Redis, so a
/// restarted host reads its old digests with the same key.
async fn host_key(link: &Link, keys: &Keys, counters: &Counters) -> Result<HashKey> {
    let fresh = HashKey::random().to_bytes();
    let stored: Option<Vec<u8>> = counted(counters, link, "host hash key", |mut conn| {
        let key = keys.hash_key();
        async move {
            redis::cmd("SET")
                .arg(key)
                .arg(&fresh[..])
                .arg("NX")
                .arg("GET")
                .query_async(&mut conn)
                .await
        }
    })
    .await?;
    match stored {
        None => Ok(HashKey::from_bytes(fresh)),
        Some(bytes) => {
            let bytes: [u8; 16] = bytes.try_into().map_err(|b: Vec<u8>| Error::Corrupt {
                key: keys.hash_key(),
                detail: format!("{} bytes, expected 16", b.len()),
            })?;
            Ok(HashKey::from_bytes(bytes))
        }
    }
}
