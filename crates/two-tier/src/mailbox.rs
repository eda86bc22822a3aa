//! How frames travel: the sender pushes into `inbox:<sender>` in the receiver's Redis; the
//! receiver drains its inboxes with one script and blocks on a wake list when they are empty.
//!
//! The inbox a frame arrives through names its sender, the way a socket names its peer in
//! the paper's network: the frame itself keeps exactly the paper's four fields. Lists are
//! durable, so a receiver that is down finds its frames when it comes back.

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use redis::{Script, Value};
use url_dedup_redis::Link;

use crate::error::{Error, Result};
use crate::keys::Keys;
use crate::stats::{Counters, counted};

/// Frames per send script: keeps one script call short for Redis.
const SEND_CHUNK: usize = 256;

pub(crate) struct Scripts {
    pub(crate) send: Script,
    pub(crate) receive: Script,
    pub(crate) admit: Script,
    pub(crate) take: Script,
    pub(crate) discover: Script,
}

pub(crate) fn scripts() -> &'static Scripts {
    static SCRIPTS: OnceLock<Scripts> = OnceLock::new();
    SCRIPTS.get_or_init(|| Scripts {
        send: Script::new(include_str!("lua/send.lua")),
        receive: Script::new(include_str!("lua/receive.lua")),
        admit: Script::new(include_str!("lua/admit.lua")),
        take: Script::new(include_str!("lua/take.lua")),
        discover: Script::new(include_str!("lua/discover.lua")),
    })
}

/// Another node, as seen by a sender: its Redis and our inbox in it.
#[derive(Clone, Debug)]
pub(crate) struct Peer {
    pub(crate) ip: IpAddr,
    pub(crate) link: Link,
    pub(crate) keys: Keys,
    inbox: String,
    wake: String,
    counters: Arc<Counters>,
}

impl Peer {
    pub(crate) async fn connect(
        ip: IpAddr,
        redis: &str,
        me: IpAddr,
        keys: &Keys,
        settings: &crate::Settings,
        counters: Arc<Counters>,
    ) -> Result<Self> {
        let link = Link::connect_with(redis, settings.backoff).await?;
        Ok(Self {
            ip,
            link,
            keys: keys.clone(),
            inbox: keys.inbox(me),
            wake: keys.wake(),
            counters,
        })
    }

    /// Delivers encoded frames, in order.
    pub(crate) async fn send(&self, frames: &[impl AsRef<[u8]> + Sync]) -> Result<()> {
        for chunk in frames.chunks(SEND_CHUNK) {
            counted(&self.counters, &self.link, "send frames", |mut conn| {
                let mut call = scripts().send.prepare_invoke();
                call.key(&self.inbox).key(&self.wake);
                for frame in chunk {
                    call.arg(frame.as_ref());
                }
                async move { call.invoke_async::<u64>(&mut conn).await }
            })
            .await?;
            self.counters.add_frames_sent(chunk.len() as u64);
        }
        Ok(())
    }
}

/// What one inbox delivered.
#[derive(Debug)]
pub(crate) struct Delivery {
    pub(crate) from: IpAddr,
    pub(crate) body: Body,
}

#[derive(Debug)]
pub(crate) enum Body {
    Frame(Vec<u8>),
    /// Longer than the limit; popped and dropped inside Redis.
    TooLarge(usize),
}

/// This node's inboxes, one per node allowed to send to it.
#[derive(Debug)]
pub(crate) struct Mailbox {
    link: Link,
    /// A connection of its own: `BLPOP` would stall every other call on a multiplexed one.
    waiter: Link,
    senders: Vec<IpAddr>,
    inboxes: Vec<String>,
    wake: String,
    batch: usize,
    max_bytes: usize,
    next: AtomicUsize,
    counters: Arc<Counters>,
}

impl Mailbox {
    pub(crate) async fn open(
        link: Link,
        redis: &str,
        keys: &Keys,
        senders: Vec<IpAddr>,
        settings: &crate::Settings,
        counters: Arc<Counters>,
    ) -> Result<Self> {
        let waiter = Link::connect_with(redis, settings.backoff).await?;
        Ok(Self {
            link,
            waiter,
            inboxes: senders.iter().map(|&s| keys.inbox(s)).collect(),
            senders,
            wake: keys.wake(),
            batch: settings.receive_batch,
            max_bytes: settings.limits.max_bytes,
            next: AtomicUsize::new(0),
            counters,
        })
    }

    /// How many frames one [`receive`](Self::receive) returns at most.
    pub(crate) fn batch(&self) -> usize {
        self.batch
    }

    /// Takes up to `batch` frames, round-robin over the inboxes.
    pub(crate) async fn receive(&self) -> Result<Vec<Delivery>> {
        if self.inboxes.is_empty() {
            return Ok(Vec::new());
        }
        let start = self.next.fetch_add(1, Ordering::Relaxed) % self.inboxes.len();
        let raw: Vec<Value> = counted(&self.counters, &self.link, "receive frames", |mut conn| {
            let mut call = scripts().receive.prepare_invoke();
            call.key(&self.wake);
            for inbox in &self.inboxes {
                call.key(inbox);
            }
            call.arg(self.batch).arg(self.max_bytes).arg(start);
            async move { call.invoke_async(&mut conn).await }
        })
        .await?;
        let corrupt = |detail: &str| Error::Corrupt {
            key: self.wake.clone(),
            detail: format!("receive script returned {detail}"),
        };
        let mut out = Vec::with_capacity(raw.len() / 2);
        let mut items = raw.into_iter();
        while let Some(index) = items.next() {
            let Value::Int(i) = index else {
                return Err(corrupt("a non-integer inbox index"));
            };
            let from = *usize::try_from(i)
                .ok()
                .and_then(|i| self.senders.get(i))
                .ok_or_else(|| corrupt("an inbox index out of range"))?;
            let body = match items.next() {
                Some(Value::BulkString(bytes)) => Body::Frame(bytes),
                Some(Value::Int(len)) => Body::TooLarge(usize::try_from(len).unwrap_or(usize::MAX)),
                _ => return Err(corrupt("an index without a frame")),
            };
            out.push(Delivery { from, body });
        }
        self.counters.add_frames_received(out.len() as u64);
        Ok(out)
    }

    /// Blocks until a sender rings or `max` passes.
    pub(crate) async fn wait(&self, max: Duration) -> Result<()> {
        wait_on(&self.waiter, &self.wake, max, &self.counters).await
    }
}

/// `BLPOP` on a wake list for at most `max` (at least a millisecond).
pub(crate) async fn wait_on(
    waiter: &Link,
    key: &str,
    max: Duration,
    counters: &Counters,
) -> Result<()> {
    let seconds = max.as_secs_f64().max(0.001);
    counted(counters, waiter, "wait for frames", |mut conn| async move {
        redis::cmd("BLPOP")
            .arg(key)
            .arg(seconds)
            .query_async::<Option<(String, String)>>(&mut conn)
            .await
    })
    .await?;
    Ok(())
}
