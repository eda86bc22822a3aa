//! A worker: the hosts routed to it, each with its own queue, pace and robots.txt.
//!
//! Document 002's "same site serial": a host ([`crate::job::host_of`]) has at most
//! `--per-host` requests in flight (one by default) and waits `max(--delay-ms, Crawl-delay)`
//! between the starts of two requests. robots.txt is read per origin (RFC 9309), before the
//! origin's first page. Different hosts run in parallel, within a worker and across workers.
//!
//! A finished job goes to the engine's committer as a value ([`Outbox`]); the worker never
//! records or admits anything itself.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tokio::time::{Duration, Instant};
use url::Url;

use crate::admission::{self, Candidate, FetchBudget};
use crate::aliases::FetchedAliases;
use crate::backend::Backend;
use crate::job::{Job, JobKind};
use crate::outbox::Outbox;
use crate::page::{self, Context, Fetched};
use crate::robots::RobotsRules;
use crate::skip::SkipReason;

/// Whether the crawl goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Halt {
    Run,
    /// Start no new fetch; finish the ones in flight.
    Drain,
    /// Stop at once (a fatal error): fetches in flight are abandoned.
    Abort,
}

/// What every worker of a crawl shares.
pub(crate) struct Crew<B> {
    pub(crate) ctx: Arc<Context>,
    pub(crate) backend: Arc<B>,
    pub(crate) budget: Arc<FetchBudget>,
    pub(crate) outbox: Outbox,
    /// Raised to stop the crawl (here: when `--max-pages` is used up).
    pub(crate) halt: Arc<watch::Sender<Halt>>,
    /// Aliases of fetched pages, queued before their rule was confirmed.
    pub(crate) aliases: FetchedAliases,
}

impl<B> Clone for Crew<B> {
    fn clone(&self) -> Self {
        Self {
            ctx: self.ctx.clone(),
            backend: self.backend.clone(),
            budget: self.budget.clone(),
            outbox: self.outbox.clone(),
            halt: self.halt.clone(),
            aliases: self.aliases.clone(),
        }
    }
}

#[derive(Debug)]
enum Robots {
    Fetching,
    Ready(Arc<RobotsRules>),
}

#[derive(Debug)]
struct Host {
    queue: VecDeque<Job>,
    /// Requests waiting for their response (robots.txt included).
    in_flight: usize,
    /// Pages fetched or being fetched and not yet handed to the committer: at most twice
    /// `--per-host`, so a slow parser cannot pile up bodies.
    unfinished: usize,
    next_start: Instant,
    delay: Duration,
    /// robots.txt of each origin of this host seen so far.
    robots: HashMap<String, Robots>,
}

/// What a finished task tells its worker.
enum Finished {
    Robots {
        host: String,
        origin: String,
        rules: RobotsRules,
    },
    Page(String),
}

/// A request slot of a host, given back to the worker when dropped (also when processing a
/// page panics).
struct HostSlot {
    host: String,
    free: mpsc::UnboundedSender<String>,
}

impl Drop for HostSlot {
    fn drop(&mut self) {
        let _ = self.free.send(std::mem::take(&mut self.host));
    }
}

/// Runs a worker until the crawl stops and its own requests have finished.
pub(crate) async fn run<B: Backend>(
    crew: Crew<B>,
    mut inbox: mpsc::UnboundedReceiver<Job>,
    mut stop: watch::Receiver<Halt>,
) {
    let mut hosts: HashMap<String, Host> = HashMap::new();
    let mut tasks: JoinSet<Finished> = JoinSet::new();
    let (free, mut freed) = mpsc::unbounded_channel::<String>();
    loop {
        let halt = *stop.borrow_and_update();
        let stopping = halt != Halt::Run;
        let wake = if stopping {
            None
        } else {
            dispatch(&crew, &mut hosts, &mut tasks, &free)
        };
        // Jobs routed here and not started are given back by the backend when this process
        // leaves (or stay in the checkpoint's run queue); so are the ones abandoned here.
        if halt == Halt::Abort || (stopping && tasks.is_empty()) {
            break;
        }
        let sleep = tokio::time::sleep_until(wake.unwrap_or_else(Instant::now));
        tokio::select! {
            Some(job) = inbox.recv(), if !stopping => enqueue(&crew, &mut hosts, job),
            Some(host) = freed.recv() => {
                if let Some(h) = hosts.get_mut(&host) {
                    h.in_flight -= 1;
                }
            }
            Some(done) = tasks.join_next(), if !tasks.is_empty() => match done {
                Ok(Finished::Page(host)) => {
                    if let Some(h) = hosts.get_mut(&host) {
                        h.unfinished -= 1;
                    }
                }
                Ok(Finished::Robots { host, origin, rules }) => {
                    robots_ready(&crew, &mut hosts, &host, origin, rules);
                }
                // The tasks catch their own panics (see `start_page`).
                Err(_) => {}
            },
            () = sleep, if wake.is_some() => {}
            _ = stop.changed() => {}
        }
    }
}

fn enqueue<B: Backend>(crew: &Crew<B>, hosts: &mut HashMap<String, Host>, job: Job) {
    let host = hosts.entry(job.host()).or_insert_with(|| Host {
        queue: VecDeque::new(),
        in_flight: 0,
        unfinished: 0,
        next_start: Instant::now(),
        // A backend that paces hosts spaces the claims of a host's URLs over all processes;
        // pacing them here again would bunch requests of different processes together.
        delay: if crew.backend.paces_hosts() {
            Duration::ZERO
        } else {
            crew.ctx.config.delay
        },
        robots: HashMap::new(),
    });
    host.queue.push_back(job);
}

/// The origin (`scheme://host:port`) whose robots.txt rules `url`.
fn origin_of(url: &Url) -> String {
    url.origin().ascii_serialization()
}

fn robots_ready<B: Backend>(
    crew: &Crew<B>,
    hosts: &mut HashMap<String, Host>,
    key: &str,
    origin: String,
    rules: RobotsRules,
) {
    let Some(host) = hosts.get_mut(key) else {
        return;
    };
    host.in_flight -= 1;
    if let (Some(d), false) = (rules.crawl_delay(), crew.backend.paces_hosts()) {
        host.delay = host.delay.max(d);
        host.next_start = Instant::now() + host.delay;
    }
    if crew.ctx.config.sitemaps {
        let base = Url::parse(&origin).ok();
        let candidates: Vec<Candidate> = rules
            .sitemaps()
            .iter()
            .filter_map(|s| match &base {
                Some(b) => b.join(s).ok(),
                None => Url::parse(s).ok(),
            })
            .map(|url| Candidate {
                url,
                depth: 1,
                hops: 0,
                kind: JobKind::Sitemap,
            })
            .collect();
        if !candidates.is_empty() {
            crew.outbox.offer(candidates);
        }
    }
    host.robots.insert(origin, Robots::Ready(Arc::new(rules)));
}

/// Starts what may start now; returns when the next host becomes ready, if one is waiting.
fn dispatch<B: Backend>(
    crew: &Crew<B>,
    hosts: &mut HashMap<String, Host>,
    tasks: &mut JoinSet<Finished>,
    free: &mpsc::UnboundedSender<String>,
) -> Option<Instant> {
    let config = &crew.ctx.config;
    let now = Instant::now();
    let mut wake: Option<Instant> = None;
    for (key, host) in hosts.iter_mut() {
        while host.in_flight < config.per_host
            && host.unfinished < 2 * config.per_host
            && now >= host.next_start
        {
            let Some(job) = host.queue.front() else {
                break;
            };
            let Some(origin) = Url::parse(&job.url).ok().map(|u| origin_of(&u)) else {
                let job = host.queue.pop_front().expect("a front job");
                crew.outbox
                    .finished(Fetched::failed(job, SkipReason::BadUrl, String::new()));
                continue;
            };
            let rules = match host.robots.get(&origin) {
                Some(Robots::Ready(rules)) => rules.clone(),
                Some(Robots::Fetching) => break,
                None if !config.robots => {
                    let all = Arc::new(RobotsRules::AllowAll);
                    host.robots.insert(origin, Robots::Ready(all.clone()));
                    all
                }
                None => {
                    host.robots.insert(origin.clone(), Robots::Fetching);
                    host.in_flight += 1;
                    tasks.spawn(fetch_robots(crew.clone(), key.clone(), origin));
                    break;
                }
            };
            let job = host.queue.pop_front().expect("a front job");
            if let Some((reason, detail)) = admission::at_dispatch(&rules, &crew.aliases, &job) {
                crew.outbox.finished(Fetched::failed(job, reason, detail));
                continue;
            }
            if !crew.budget.take() {
                host.queue.push_front(job);
                crew.halt.send_if_modified(|h| {
                    let drain = *h == Halt::Run;
                    if drain {
                        *h = Halt::Drain;
                    }
                    drain
                });
                return None;
            }
            host.in_flight += 1;
            host.unfinished += 1;
            host.next_start = now + host.delay;
            let slot = HostSlot {
                host: key.clone(),
                free: free.clone(),
            };
            tasks.spawn(start_page(crew.clone(), key.clone(), job, slot));
        }
        if !host.queue.is_empty() && host.in_flight < config.per_host && host.next_start > now {
            wake = Some(wake.map_or(host.next_start, |w| w.min(host.next_start)));
        }
    }
    wake
}

/// Fetches an origin's robots.txt; in a crawl whose backend paces hosts, its `Crawl-delay`
/// is given to the backend before the host's first page request.
async fn fetch_robots<B: Backend>(crew: Crew<B>, host: String, origin: String) -> Finished {
    let rules = match Url::parse(&origin) {
        Ok(url) => {
            let ctx = crew.ctx.clone();
            let fetch = async move {
                RobotsRules::fetch(&ctx.fetcher, &url, &ctx.config.robots_agent).await
            };
            // A panic while reading robots.txt must not leave the host waiting forever.
            tokio::spawn(fetch)
                .await
                .unwrap_or_else(|e| RobotsRules::Unreachable(format!("internal error: {e}")))
        }
        Err(_) => RobotsRules::AllowAll,
    };
    if let (Some(d), true) = (rules.crawl_delay(), crew.backend.paces_hosts()) {
        let delay = d.max(crew.ctx.config.delay);
        if let Err(e) = crew.backend.share_host_delay(host.clone(), delay).await {
            crew.outbox
                .warn(format!("{host}: cannot share its crawl delay: {e}"));
        }
    }
    Finished::Robots {
        host,
        origin,
        rules,
    }
}

/// Fetches and reads one job and hands the result to the committer. A panic while doing so
/// (a bug) is caught: the job is recorded as failed (`internal-error` in the skip report) and
/// the crawl ends with an error, rather than the job vanishing from the run queue.
async fn start_page<B: Backend>(crew: Crew<B>, host: String, job: Job, slot: HostSlot) -> Finished {
    let ctx = crew.ctx.clone();
    let processing = {
        let job = job.clone();
        async move { page::process(&ctx, job, slot).await }
    };
    let fetched = match tokio::spawn(processing).await {
        Ok(fetched) => fetched,
        Err(e) => {
            let why = match e.try_into_panic() {
                Ok(payload) => panic_message(payload.as_ref()),
                Err(e) => e.to_string(),
            };
            crew.outbox.panicked();
            Fetched::failed(job, SkipReason::InternalError, why)
        }
    };
    crew.outbox.finished(fetched);
    Finished::Page(host)
}

/// The message of a panic's payload.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        format!("panicked: {s}")
    } else if let Some(s) = payload.downcast_ref::<String>() {
        format!("panicked: {s}")
    } else {
        "panicked".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::host_of;

    #[test]
    fn robots_txt_is_per_origin_and_politeness_per_host() {
        let a = Url::parse("http://a.example/x").unwrap();
        let b = Url::parse("https://a.example/y").unwrap();
        assert_eq!(host_of(&a), host_of(&b));
        assert_ne!(origin_of(&a), origin_of(&b));
    }

    #[test]
    fn a_panic_says_what_it_was() {
        let caught = std::panic::catch_unwind(|| panic!("boom {}", 7)).unwrap_err();
        assert_eq!(panic_message(caught.as_ref()), "panicked: boom 7");
        let caught = std::panic::catch_unwind(|| panic!("plain")).unwrap_err();
        assert_eq!(panic_message(caught.as_ref()), "panicked: plain");
    }
}
