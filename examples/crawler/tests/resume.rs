//! `kill -9` in the middle of a crawl, then the same command again: the final page set is
//! complete and exact, and only requests in flight at a kill were made twice.

mod common;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Gate, Reply, Site, crawl, crawler, skipped, temp_out, warc_responses};

const PAGES: u32 = 240;

/// Holds the site's pages from a given request on behind a gate, so a crawl stands still where
/// the test wants to kill it, however fast or slow the machine.
#[derive(Clone, Default)]
struct Valve {
    served: Arc<AtomicUsize>,
    /// Pages from this request on wait for `gate`.
    limit: Arc<AtomicUsize>,
    gate: Arc<Mutex<Gate>>,
}

impl Valve {
    /// Holds every page request after the first `n` (counted from the site's start).
    fn hold_after(&self, n: usize) {
        *self.gate.lock().unwrap() = Gate::default();
        self.limit.store(n, Ordering::SeqCst);
    }

    /// Lets every page through, the held ones too.
    fn open(&self) {
        self.limit.store(usize::MAX, Ordering::SeqCst);
        self.gate.lock().unwrap().open();
    }
}

fn site(valve: &Valve) -> Site {
    let valve = valve.clone();
    valve.open();
    Site::start(move |target, _| {
        if target == "/robots.txt" {
            return Reply::new(200, "text/plain", b"User-agent: *\nAllow: /\n".to_vec());
        }
        let i = match target
            .strip_prefix("/p/")
            .and_then(|s| s.parse::<u32>().ok())
        {
            Some(i) if i < PAGES => i,
            _ if target == "/" => 0,
            _ => return Reply::not_found(),
        };
        let links: String = [1, 2, 3, 7, 11]
            .iter()
            .map(|d| {
                format!(
                    "<a href=\"/p/{}\">n</a><a href=\"/p/{}?utm_medium=x\">n</a>",
                    (i + d) % PAGES,
                    (i * d) % PAGES
                )
            })
            .collect();
        let reply = Reply::html(format!("<html><body>{links}</body></html>"));
        let n = valve.served.fetch_add(1, Ordering::SeqCst);
        if n >= valve.limit.load(Ordering::SeqCst) {
            reply.held(&valve.gate.lock().unwrap())
        } else {
            reply
        }
    })
}

/// The newest generation of the crawl's state in `out` (its queue files are numbered).
fn generation(out: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(out) else {
        return 0;
    };
    entries
        .filter_map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            name.strip_prefix("queue-")?
                .strip_suffix(".txt")?
                .parse()
                .ok()
        })
        .max()
        .unwrap_or(0)
}

/// Starts a crawl and kills it with SIGKILL once it stands still with `after` pages served
/// and the next ones held in flight (and, with `checkpointed`, once it has written a
/// checkpoint after the one it started from).
fn crawl_and_kill(
    site: &Site,
    valve: &Valve,
    out: &std::path::Path,
    after: usize,
    per_host: usize,
    checkpointed: bool,
) {
    let before = generation(out);
    valve.hold_after(after);
    let mut child = crawler(out)
        .arg(site.url("/"))
        .args([
            "--per-host",
            &per_host.to_string(),
            "--checkpoint-secs",
            "1",
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(300);
    while site.in_flight() < per_host || (checkpointed && generation(out) <= before) {
        assert!(Instant::now() < deadline, "crawl made no progress");
        if let Some(status) = child.try_wait().unwrap() {
            panic!("crawler ended before it could be killed: {status}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL: no destructor, no final checkpoint
    child.wait().unwrap();
    valve.open();
}

fn kill_twice_then_finish(per_host: usize) {
    let valve = Valve::default();
    let site = site(&valve);
    let (_tmp, out) = temp_out();
    crawl_and_kill(&site, &valve, &out, 60, per_host, false);
    // At least one periodic checkpoint happens in the second run, so both the checkpoint
    // and the journal after it are replayed.
    crawl_and_kill(&site, &valve, &out, 170, per_host, true);
    let output = crawl(&out, &site.url("/"), &["--per-host", &per_host.to_string()]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("crawl complete") && stdout.contains("resumed"),
        "{stdout}"
    );

    let hits = site.hits();
    let want: BTreeSet<String> = (0..PAGES)
        .map(|i| format!("/p/{i}"))
        .chain(["/".to_owned()])
        .collect();
    let got: BTreeSet<String> = hits
        .keys()
        .filter(|k| *k != "/robots.txt")
        .cloned()
        .collect();
    assert_eq!(got, want, "every page, and nothing else");
    let twice: Vec<_> = hits
        .iter()
        .filter(|(k, c)| *k != "/robots.txt" && **c > 1)
        .collect();
    assert!(twice.iter().all(|(_, c)| **c == 2), "{twice:?}");
    // At each kill, per host: the requests waiting for their answer (`--per-host`) and as
    // many answers not yet committed (docs/crawler.md, "Resume semantics").
    assert!(
        twice.len() <= 2 * 2 * per_host,
        "only requests in flight at the two kills repeat: {twice:?}"
    );

    // The WARC holds each page exactly once: records of uncommitted fetches were cut away.
    let responses = warc_responses(&out);
    assert_eq!(responses.len(), want.len());
    assert_eq!(responses.iter().collect::<BTreeSet<_>>().len(), want.len());
    assert!(skipped(&out).is_empty(), "{:?}", skipped(&out));
}

#[test]
fn kill_9_then_resume_one_request_per_host() {
    kill_twice_then_finish(1);
}

#[test]
fn kill_9_then_resume_four_requests_per_host() {
    kill_twice_then_finish(4);
}
