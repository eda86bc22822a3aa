//! Shared crawls in tests: a forest of test sites on several ports, and `crawler` processes
//! that share a crawl through Redis.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use axum::http::HeaderMap;

use super::{Gate, Reply, Site};

/// The same tree spread over `hosts` sites (ports), page i on site i % hosts, so several
/// spiders work at once (the frontier leases one host to one spider at a time).
pub struct Forest {
    sites: Vec<Site>,
    pages: usize,
}

impl Forest {
    pub fn start(hosts: usize, pages: usize, delay: Duration) -> Self {
        Self::start_held(hosts, pages, delay, |_, _| None)
    }

    /// A forest whose page `i`, asked for with `headers`, is answered only once the gate
    /// `hold(i, headers)` names is open: the crawl cannot end, or cannot go on, before the
    /// test opens it, however fast or slow the machine.
    pub fn start_held(
        hosts: usize,
        pages: usize,
        delay: Duration,
        hold: impl Fn(usize, &HeaderMap) -> Option<Gate> + Send + Sync + 'static,
    ) -> Self {
        let hold = Arc::new(hold);
        let origins: Arc<OnceLock<Vec<String>>> = Arc::default();
        let sites = (0..hosts)
            .map(|h| {
                let origins = origins.clone();
                let hold = hold.clone();
                Site::start(move |path, headers| {
                    let Some(i) = path
                        .strip_prefix("/p/")
                        .and_then(|n| n.parse::<usize>().ok())
                    else {
                        return Reply::not_found();
                    };
                    if i >= pages || i % hosts != h {
                        return Reply::not_found();
                    }
                    let origins = origins.get().unwrap();
                    let mut body = String::new();
                    for j in [0, 2 * i + 1, 2 * i + 2] {
                        if j < pages {
                            body.push_str(&format!(
                                "<a href=\"{}/p/{j}\">{j}</a>",
                                origins[j % hosts]
                            ));
                        }
                    }
                    let reply = Reply::html(body).delayed(delay);
                    match hold(i, headers) {
                        Some(gate) => reply.held(&gate),
                        None => reply,
                    }
                })
            })
            .collect::<Vec<_>>();
        origins
            .set(sites.iter().map(|s| s.origin.clone()).collect())
            .unwrap();
        Self { sites, pages }
    }

    pub fn seeds(&self) -> Vec<String> {
        (0..self.sites.len())
            .map(|h| self.sites[h].url(&format!("/p/{h}")))
            .collect()
    }

    pub fn hits(&self) -> Vec<u32> {
        let n = self.sites.len();
        (0..self.pages)
            .map(|i| self.sites[i % n].hit(&format!("/p/{i}")))
            .collect()
    }

    /// Requests received and not yet answered, over every site.
    pub fn in_flight(&self) -> usize {
        self.sites.iter().map(Site::in_flight).sum()
    }

    pub fn total(&self) -> u32 {
        self.sites
            .iter()
            .map(|s| s.hits().values().sum::<u32>())
            .sum()
    }
}

/// Starts a `crawler` process of the shared crawl `crawl` on `redis` (quiet, JSON summary,
/// robots.txt ignored), writing to `out`.
pub fn spawn(out: &Path, redis: &str, crawl: &str, seed: &str, extra: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_crawler"))
        .args(["--quiet", "--json"])
        .arg("--out")
        .arg(out)
        .args(["--redis", redis, "--crawl-name", crawl, "--ignore-robots"])
        .args(extra)
        .arg(seed)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits for a process (bounded), asserts success, returns its summary's `fetched`.
pub fn finish(child: Child, limit: Duration) -> u64 {
    finish_summary(child, limit)["fetched"].as_u64().unwrap()
}

/// Waits for a process (bounded), asserts success, returns its summary.
pub fn finish_summary(child: Child, limit: Duration) -> serde_json::Value {
    let begin = Instant::now();
    let mut child = child;
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if begin.elapsed() > limit {
            let _ = child.kill();
            let output = child.wait_with_output().unwrap();
            panic!(
                "crawler did not finish within {limit:?}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "crawler failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap()
}
