//! Ctrl-C (SIGINT) and SIGTERM sent to a real crawler: the first drains and checkpoints, a
//! second ends the process at once; either way the next run resumes, losing nothing and
//! fetching again at most what was in flight.

mod common;

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

use common::{
    Gate, Lines, Reply, Site, crawl, crawler, signal, temp_out, wait_exit, wait_until,
    warc_responses,
};

const PAGES: u32 = 200;
/// The page whose response the test holds back, so that a signal finds it in flight.
const HELD: u32 = 40;
const GUARD: Duration = Duration::from_secs(120);

/// Pages `/p/0` .. `/p/199`, each linking to a few others; `/p/40` waits behind `gate`.
fn site(gate: &Gate) -> Site {
    let gate = gate.clone();
    Site::start(move |target, _| {
        if target == "/robots.txt" {
            return Reply::not_found();
        }
        let Some(i) = target
            .strip_prefix("/p/")
            .and_then(|s| s.parse::<u32>().ok())
            .filter(|&i| i < PAGES)
        else {
            return Reply::not_found();
        };
        let links: String = [1, 2, 5, 13]
            .iter()
            .map(|d| format!("<a href=\"/p/{}\">n</a>", (i + d) % PAGES))
            .collect();
        let reply = Reply::html(links).delayed(Duration::from_millis(2));
        if i == HELD { reply.held(&gate) } else { reply }
    })
}

fn page_hits(site: &Site) -> BTreeMap<String, u32> {
    site.hits()
        .into_iter()
        .filter(|(k, _)| k.starts_with("/p/"))
        .collect()
}

/// Starts a crawl and waits until the held page is requested (so it is in flight).
fn start_until_held(site: &Site, out: &std::path::Path) -> (std::process::Child, Lines) {
    let mut child = crawler(out)
        .arg(site.url("/p/0"))
        // Nothing but a signal can end the held request.
        .args(["--timeout-ms", "600000", "--checkpoint-secs", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = Lines::new(child.stderr.take().unwrap());
    wait_until(GUARD, || site.hit(&format!("/p/{HELD}")) > 0);
    (child, stderr)
}

/// Resumes to the end; checks that every page was fetched, each once over both runs except the
/// `refetched` ones (in flight when the first run ended), and that the WARC holds each once.
fn resume_and_check(site: &Site, out: &std::path::Path, refetched: &[String]) {
    let output = crawl(out, &site.url("/p/0"), &[]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("crawl complete") && stdout.contains("resumed"),
        "{stdout}"
    );
    let hits = page_hits(site);
    assert_eq!(hits.len(), PAGES as usize, "every page, and nothing lost");
    let twice: Vec<&String> = hits
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(k, _)| k)
        .collect();
    assert_eq!(twice, refetched.iter().collect::<Vec<_>>(), "{hits:?}");
    assert!(hits.values().all(|&n| n <= 2), "{hits:?}");
    let responses = warc_responses(out);
    assert_eq!(responses.len(), PAGES as usize);
}

fn drains_on(name: &str) {
    let gate = Gate::default();
    let site = site(&gate);
    let (_tmp, out) = temp_out();
    let (mut child, mut stderr) = start_until_held(&site, &out);
    signal(&child, name);
    stderr.wait_for("interrupted", GUARD);
    // The request in flight finishes after the signal, and is committed.
    gate.open();
    let status = wait_exit(&mut child, GUARD);
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut stdout).unwrap();
    let stderr = stderr.all();
    assert!(status.success(), "{status:?}\n{stdout}\n{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stdout.contains("crawl interrupted"), "{stdout}");
    assert!(
        page_hits(&site).len() < PAGES as usize,
        "the crawl was not cut short"
    );
    resume_and_check(&site, &out, &[]);
}

#[test]
fn ctrl_c_drains_checkpoints_and_the_next_run_resumes() {
    drains_on("INT");
}

#[test]
fn sigterm_drains_checkpoints_and_the_next_run_resumes() {
    drains_on("TERM");
}

fn second_signal_exits_at_once(name: &str, code: i32) {
    let gate = Gate::default();
    let site = site(&gate);
    let (_tmp, out) = temp_out();
    let (mut child, mut stderr) = start_until_held(&site, &out);
    signal(&child, name);
    stderr.wait_for("interrupted", GUARD);
    // The held request would keep a draining crawl waiting for ten minutes.
    signal(&child, name);
    let status = wait_exit(&mut child, GUARD);
    let stderr = stderr.all();
    assert_eq!(status.code(), Some(code), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    gate.open();
    resume_and_check(&site, &out, &[format!("/p/{HELD}")]);
}

#[test]
fn a_second_ctrl_c_exits_at_once_and_the_next_run_resumes() {
    second_signal_exits_at_once("INT", 130);
}

#[test]
fn a_second_sigterm_exits_at_once_and_the_next_run_resumes() {
    second_signal_exits_at_once("TERM", 143);
}
