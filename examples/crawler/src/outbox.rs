//! What the fetch tasks hand to the engine's committer, and how much of it is outstanding.
//!
//! Every job taken from the backend and every offer sent counts as held until the committer
//! has committed it: the engine takes no more than the backend's room, and a crawl is only
//! complete when nothing is held.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{Notify, mpsc};

use crate::admission::Candidate;
use crate::page::Fetched;

/// One message to the committer.
#[derive(Debug)]
pub(crate) enum Message {
    /// A job finished (fetched, or given up).
    Fetched(Box<Fetched>),
    /// Links found outside of a page: the seeds, sitemaps named by robots.txt.
    Offer(Vec<Candidate>),
    /// A warning for the crawl's log.
    Warn(String),
}

impl Message {
    /// How many held units the message settles once committed.
    pub(crate) fn held(&self) -> u64 {
        match self {
            Self::Fetched(_) | Self::Offer(_) => 1,
            Self::Warn(_) => 0,
        }
    }
}

#[derive(Debug, Default)]
struct Held {
    count: AtomicU64,
    changed: Notify,
}

/// The sending side, cloned into every task; [`close`](Outbox::close) ends the committer once
/// it has committed everything sent before.
#[derive(Clone, Debug)]
pub(crate) struct Outbox {
    tx: Arc<Mutex<Option<mpsc::UnboundedSender<Message>>>>,
    held: Arc<Held>,
    panics: Arc<AtomicU64>,
}

impl Outbox {
    /// An outbox and the committer's end of it.
    pub(crate) fn new() -> (Self, mpsc::UnboundedReceiver<Message>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let outbox = Self {
            tx: Arc::new(Mutex::new(Some(tx))),
            held: Arc::default(),
            panics: Arc::default(),
        };
        (outbox, rx)
    }

    fn send(&self, message: Message) {
        // A closed outbox means the crawl is ending: what was not sent stays in the run queue
        // (journaled as pending, or claimed in Redis and given back when this process leaves).
        if let Some(tx) = &*self.tx.lock().unwrap_or_else(|p| p.into_inner()) {
            let _ = tx.send(message);
        }
    }

    /// Hands a finished job to the committer (it was counted as held when taken).
    pub(crate) fn finished(&self, fetched: Fetched) {
        self.send(Message::Fetched(Box::new(fetched)));
    }

    /// Offers links found outside of a page.
    pub(crate) fn offer(&self, candidates: Vec<Candidate>) {
        self.hold(1);
        self.send(Message::Offer(candidates));
    }

    /// Logs a warning through the committer.
    pub(crate) fn warn(&self, message: String) {
        self.send(Message::Warn(message));
    }

    /// Counts a fetch task that panicked.
    pub(crate) fn panicked(&self) {
        self.panics.fetch_add(1, Ordering::Relaxed);
    }

    /// Fetch tasks that panicked so far.
    pub(crate) fn panics(&self) -> u64 {
        self.panics.load(Ordering::Relaxed)
    }

    /// Counts `n` more units held (jobs taken).
    pub(crate) fn hold(&self, n: u64) {
        self.held.count.fetch_add(n, Ordering::SeqCst);
    }

    /// Settles `n` held units (committed) and wakes whoever waits for room.
    pub(crate) fn settle(&self, n: u64) {
        self.held.count.fetch_sub(n, Ordering::SeqCst);
        self.held.changed.notify_waiters();
    }

    /// Units held now.
    pub(crate) fn held(&self) -> u64 {
        self.held.count.load(Ordering::SeqCst)
    }

    /// Resolves when a commit settles something; create it before reading [`held`](Self::held)
    /// so a commit in between is not missed.
    pub(crate) fn settled(&self) -> tokio::sync::futures::Notified<'_> {
        self.held.changed.notified()
    }

    /// No more messages: the committer ends once it has committed what was sent before.
    pub(crate) fn close(&self) {
        self.tx.lock().unwrap_or_else(|p| p.into_inner()).take();
    }
}
