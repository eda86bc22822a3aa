//! A worker: the hosts routed to it, each with its own queue, pace and robots.txt.
//!
//! Document 002's "same site serial": a host has at most `--per-host` requests in flight (one by
//! default) and waits `max(--delay-ms, Crawl-delay)` between the starts of two requests. Its
//! robots.txt is fetched before its first page. Different hosts run in parallel, within a
//! worker and across workers.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tokio::time::{Duration, Instant};
use url::Url;

use crate::crawl::Shared;
use crate::frontier::{Job, JobKind};
use crate::page::{self, Candidate};
use crate::robots::RobotsRules;

#[derive(Debug)]
enum Robots {
    Unknown,
    Fetching,
    Ready(Arc<RobotsRules>),
}

#[derive(Debug)]
struct Host {
    queue: VecDeque<Job>,
    /// Requests waiting for their response.
    in_flight: usize,
    /// Pages fetched or being fetched and not yet committed: at most twice `--per-host`, so a
    /// slow parser cannot pile up bodies, and a kill repeats at most that many fetches.
    unfinished: usize,
    next_start: Instant,
    delay: Duration,
    robots: Robots,
}

/// What a finished task tells its worker.
enum Finished {
    Robots(String, RobotsRules),
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
pub(crate) async fn run(
    shared: Arc<Shared>,
    mut inbox: mpsc::UnboundedReceiver<Job>,
    mut stop: watch::Receiver<bool>,
) {
    let mut hosts: HashMap<String, Host> = HashMap::new();
    let mut tasks: JoinSet<Finished> = JoinSet::new();
    let (free, mut freed) = mpsc::unbounded_channel::<String>();
    loop {
        let stopping = *stop.borrow_and_update();
        let wake = if stopping {
            None
        } else {
            dispatch(&shared, &mut hosts, &mut tasks, &free)
        };
        if stopping && tasks.is_empty() {
            break;
        }
        let sleep = tokio::time::sleep_until(wake.unwrap_or_else(Instant::now));
        tokio::select! {
            Some(job) = inbox.recv(), if !stopping => enqueue(&shared, &mut hosts, job),
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
                Ok(Finished::Robots(host, rules)) => robots_ready(&shared, &mut hosts, host, rules),
                // Only the outer wrapper could fail here, and it does not panic.
                Err(_) => {}
            },
            () = sleep, if wake.is_some() => {}
            _ = stop.changed() => {}
        }
    }
}

fn enqueue(shared: &Shared, hosts: &mut HashMap<String, Host>, job: Job) {
    let key = crate::state::host_key(&job.url);
    let host = hosts.entry(key).or_insert_with(|| Host {
        queue: VecDeque::new(),
        in_flight: 0,
        unfinished: 0,
        next_start: Instant::now(),
        // A shared crawl's host delay is held in Redis: claims of the host's URLs start that
        // far apart over all processes, and pacing them here again would bunch requests of
        // different processes together.
        delay: if shared.shared_queue().is_some() {
            Duration::ZERO
        } else {
            shared.config.delay
        },
        robots: if shared.config.robots {
            Robots::Unknown
        } else {
            Robots::Ready(Arc::new(RobotsRules::AllowAll))
        },
    });
    host.queue.push_back(job);
}

fn robots_ready(
    shared: &Arc<Shared>,
    hosts: &mut HashMap<String, Host>,
    key: String,
    rules: RobotsRules,
) {
    let Some(host) = hosts.get_mut(&key) else {
        return;
    };
    host.in_flight -= 1;
    // A shared crawl's host delay is in Redis (shared when robots.txt was read).
    if let (Some(d), None) = (rules.crawl_delay(), shared.shared_queue()) {
        host.delay = host.delay.max(d);
        host.next_start = Instant::now() + host.delay;
    }
    if shared.config.sitemaps {
        let base = host.queue.front().and_then(|j| Url::parse(&j.url).ok());
        let candidates = rules
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
            .collect::<Vec<_>>();
        if !candidates.is_empty() {
            shared.offer(candidates);
        }
    }
    host.robots = Robots::Ready(Arc::new(rules));
}

/// Starts what may start now; returns when the next host becomes ready, if one is waiting.
fn dispatch(
    shared: &Arc<Shared>,
    hosts: &mut HashMap<String, Host>,
    tasks: &mut JoinSet<Finished>,
    free: &mpsc::UnboundedSender<String>,
) -> Option<Instant> {
    let now = Instant::now();
    let mut wake: Option<Instant> = None;
    for (key, host) in hosts.iter_mut() {
        if host.queue.is_empty() {
            continue;
        }
        let rules = match &host.robots {
            Robots::Fetching => continue,
            Robots::Unknown => {
                let Some(origin) = host.queue.front().and_then(|j| Url::parse(&j.url).ok()) else {
                    continue;
                };
                host.robots = Robots::Fetching;
                host.in_flight += 1;
                let (shared, key) = (shared.clone(), key.clone());
                tasks.spawn(async move {
                    let fetch = {
                        let (shared, origin) = (shared.clone(), origin.clone());
                        async move {
                            RobotsRules::fetch(
                                &shared.fetcher,
                                &origin,
                                crate::options::AGENT_TOKEN,
                            )
                            .await
                        }
                    };
                    let rules = tokio::spawn(fetch).await.unwrap_or_else(|e| {
                        RobotsRules::Unreachable(format!("internal error: {e}"))
                    });
                    // In a shared crawl the host's Crawl-delay holds for every process: it is
                    // in Redis before this process sends the host its first page request.
                    if let Some(d) = rules.crawl_delay() {
                        shared.share_host_delay(origin.as_str(), d).await;
                    }
                    Finished::Robots(key, rules)
                });
                continue;
            }
            Robots::Ready(rules) => rules.clone(),
        };
        while host.in_flight < shared.config.per_host
            && host.unfinished < 2 * shared.config.per_host
            && now >= host.next_start
        {
            let Some(job) = host.queue.pop_front() else {
                break;
            };
            if let Some(reason) = rules.verdict(&job.url) {
                let detail = match &*rules {
                    RobotsRules::Unreachable(why) => why.clone(),
                    _ => String::new(),
                };
                shared.give_up(&job, Some((reason, detail)));
                continue;
            }
            if !shared.claim_fetch() {
                host.queue.push_front(job);
                return None;
            }
            host.in_flight += 1;
            host.unfinished += 1;
            host.next_start = now + host.delay;
            let (shared, task_key) = (shared.clone(), key.clone());
            let slot = HostSlot {
                host: key.clone(),
                free: free.clone(),
            };
            tasks.spawn(async move {
                // A bug in processing one page must not hang the crawl: its URL is reported
                // and completed, so the run queue still drains.
                let processing = page::process(shared.clone(), job.clone(), slot);
                if let Err(e) = tokio::spawn(processing).await {
                    let why = format!("internal error: {e}");
                    shared.give_up(&job, Some((crate::skip::SkipReason::FetchFailed, why)));
                }
                Finished::Page(task_key)
            });
        }
        if !host.queue.is_empty()
            && host.in_flight < shared.config.per_host
            && host.next_start > now
        {
            wake = Some(wake.map_or(host.next_start, |w| w.min(host.next_start)));
        }
    }
    wake
}
