//! The learner of `--learn`: a thread of its own that learns each host's rules from the
//! evidence the committer hands it, so relearning a large host never holds a commit.
//!
//! ```text
//!   committer ──evidence──▶ learner ──rules learned──▶ (next commit) admission
//! ```
//!
//! The committer sends what [`crate::dust::Dust`] gathered (each page's URL and fingerprints,
//! and the hosts whose time to learn has come); the learner adds it to each host's
//! [`Learner`] and learns the hosts due, once each however many times they were asked for.
//! What it learns waits in a channel; each commit takes it in before admitting links
//! ([`Learning::learned`]). The learner reads nothing of the crawl and calls nothing of it.

use std::collections::HashMap;
use std::sync::mpsc;

use tokio::sync::mpsc as tokio_mpsc;
use url_dedup_rules::{LearnOptions, Learner, RuleSet};

use crate::error::CrawlError;

/// What the committer hands the learner.
#[derive(Debug)]
pub(crate) enum Evidence {
    /// A page fetched (or fetched by an earlier run): its canonical URL and fingerprints.
    Page {
        host: String,
        url: String,
        exact: u128,
        simhash: u64,
    },
    /// Learn this host's rules again from all its evidence.
    Learn(String),
}

/// The learner's state: the evidence of each host.
#[derive(Debug, Default)]
pub(crate) struct Study {
    hosts: HashMap<String, Learner>,
}

impl Study {
    /// Takes in a batch of evidence; returns the rules of each host the batch asked to learn,
    /// learned once from all the evidence so far.
    pub(crate) fn take(&mut self, batch: Vec<Evidence>) -> Vec<RuleSet> {
        let mut due: Vec<String> = Vec::new();
        for e in batch {
            match e {
                Evidence::Page {
                    host,
                    url,
                    exact,
                    simhash,
                } => {
                    let learner = self
                        .hosts
                        .entry(host)
                        .or_insert_with(|| Learner::new(LearnOptions::default()));
                    // The URL is a canonical one the crawl parsed: always absolute.
                    let _ = learner.add(&url, exact, Some(simhash));
                }
                Evidence::Learn(host) => {
                    if !due.contains(&host) {
                        due.push(host);
                    }
                }
            }
        }
        due.iter()
            .filter_map(|host| self.hosts.get(host))
            .map(|learner| {
                hold_for_test();
                learner.learn().rules
            })
            .collect()
    }
}

/// The learner thread, seen from the engine.
#[derive(Debug)]
pub(crate) struct Learning {
    evidence: Option<mpsc::Sender<Vec<Evidence>>>,
    learned: tokio_mpsc::UnboundedReceiver<RuleSet>,
    thread: Option<tokio::task::JoinHandle<()>>,
}

impl Learning {
    /// Starts the learner (on the runtime's blocking threads).
    pub(crate) fn start() -> Self {
        let (evidence, inbox) = mpsc::channel::<Vec<Evidence>>();
        let (results, learned) = tokio_mpsc::unbounded_channel();
        let thread = tokio::task::spawn_blocking(move || {
            let mut study = Study::default();
            while let Ok(mut batch) = inbox.recv() {
                // Everything sent meanwhile goes in one round: a host asked for twice is
                // learned once, from the newest evidence.
                batch.extend(inbox.try_iter().flatten());
                for set in study.take(batch) {
                    if results.send(set).is_err() {
                        return;
                    }
                }
            }
        });
        Self {
            evidence: Some(evidence),
            learned,
            thread: Some(thread),
        }
    }

    /// Hands the learner a batch of evidence; never waits.
    pub(crate) fn send(&self, batch: Vec<Evidence>) {
        if batch.is_empty() {
            return;
        }
        if let Some(tx) = &self.evidence {
            // A learner that is gone ended with a panic, reported by `finish`.
            let _ = tx.send(batch);
        }
    }

    /// The rules learned since the last call; never waits.
    pub(crate) fn learned(&mut self) -> Vec<RuleSet> {
        let mut out = Vec::new();
        while let Ok(set) = self.learned.try_recv() {
            out.push(set);
        }
        out
    }

    /// Lets the learner finish the evidence it has; returns what it learned since the last
    /// [`learned`](Self::learned).
    pub(crate) async fn finish(&mut self) -> Result<Vec<RuleSet>, CrawlError> {
        self.evidence = None;
        if let Some(thread) = self.thread.take()
            && let Err(e) = thread.await
            && e.is_panic()
        {
            let why = match e.try_into_panic() {
                Ok(p) => crate::worker::panic_message(p.as_ref()),
                Err(e) => e.to_string(),
            };
            return Err(CrawlError::Options(format!(
                "internal error in the crawl's learner: {why}"
            )));
        }
        Ok(self.learned())
    }
}

/// Tests of debug builds hold the learner: with `CRAWLER_TEST_HOLD_LEARNING` set to an
/// `http://host:port/path` URL, each learning first waits for the answer to a GET of it. The
/// test's server answers once it has seen what it waits for. Release builds have no such hook.
fn hold_for_test() {
    #[cfg(debug_assertions)]
    if let Some(url) = std::env::var_os("CRAWLER_TEST_HOLD_LEARNING")
        && let Ok(url) = url::Url::parse(&url.to_string_lossy())
        && let (Some(host), Some(port)) = (url.host_str(), url.port())
    {
        use std::io::{Read, Write};
        if let Ok(mut s) = std::net::TcpStream::connect((host, port)) {
            let ask = format!("GET {} HTTP/1.0\r\nHost: {host}:{port}\r\n\r\n", url.path());
            let mut answer = Vec::new();
            let _ = s
                .write_all(ask.as_bytes())
                .and_then(|()| s.read_to_end(&mut answer));
        }
    }
}
