//! `kill -9` in the middle of a crawl, then the same command again: the final page set is
//! complete and exact, and only requests in flight at a kill were made twice.

mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use common::{Reply, Site, crawl, crawler, skipped, temp_out, warc_responses};

const PAGES: u32 = 240;

fn site() -> Site {
    Site::start(|target, _| {
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
        Reply::html(format!("<html><body>{links}</body></html>")).delayed(Duration::from_millis(3))
    })
}

fn pages_fetched(site: &Site) -> usize {
    site.hits().keys().filter(|k| k.starts_with("/p/")).count()
}

/// Starts a crawl, kills it with SIGKILL once the site has served `after` pages.
fn crawl_and_kill(site: &Site, out: &std::path::Path, after: usize, per_host: &str) {
    let mut child = crawler(out)
        .arg(site.url("/"))
        .args(["--per-host", per_host, "--checkpoint-secs", "1"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while pages_fetched(site) < after {
        assert!(Instant::now() < deadline, "crawl made no progress");
        if let Some(status) = child.try_wait().unwrap() {
            panic!("crawler ended before it could be killed: {status}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL: no destructor, no final checkpoint
    child.wait().unwrap();
}

fn kill_twice_then_finish(per_host: usize) {
    let site = site();
    let (_tmp, out) = temp_out();
    crawl_and_kill(&site, &out, 60, &per_host.to_string());
    // Let at least one periodic checkpoint happen in the second run, so both the checkpoint
    // and the journal after it are replayed.
    crawl_and_kill(&site, &out, 170, &per_host.to_string());
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
    assert!(
        twice.len() <= 2 * per_host,
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
