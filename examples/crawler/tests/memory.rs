//! Memory per page: a hostile page of deeply nested tags at the body cap costs the crawler a
//! bounded amount of memory (docs/crawler.md: at most four times `--max-body` per page being
//! parsed), measured as the growth of the real process's peak resident size (`VmHWM`).

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::{Gate, Reply, Site, crawler, temp_out, wait_exit, wait_until};

const GUARD: Duration = Duration::from_secs(300);
const MAX_BODY: usize = 10 << 20;

/// The peak resident set size of process `pid`, in bytes.
fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap();
    kib << 10
}

/// A page of `MAX_BODY` bytes: a link to `/after`, then `unit` repeated, never closed.
fn nested(unit: &str) -> Vec<u8> {
    let mut page = b"<html><body><a href=\"/after\">after</a>".to_vec();
    while page.len() + unit.len() <= MAX_BODY {
        page.extend_from_slice(unit.as_bytes());
    }
    page
}

/// Serves `page` as `/nested`, held until the test has read the crawler's peak RSS; `/after`
/// (linked from it) is held until the test has read the peak again, after the page was parsed.
fn growth_for(page: Vec<u8>) -> u64 {
    let (before, after) = (Gate::default(), Gate::default());
    let page = std::sync::Arc::new(page);
    let (b, a) = (before.clone(), after.clone());
    let site = Site::start(move |target, _| match target {
        "/" => Reply::html(r#"<a href="/nested">n</a>"#),
        "/nested" => Reply::new(200, "text/html", page.to_vec()).held(&b),
        "/after" => Reply::html("after").held(&a),
        _ => Reply::not_found(),
    });
    let (_tmp, out) = temp_out();
    let mut child = crawler(&out)
        .arg(site.url("/"))
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    wait_until(GUARD, || site.hit("/nested") > 0);
    let base = peak_rss(child.id());
    before.open();
    wait_until(GUARD, || site.hit("/after") > 0);
    let peak = peak_rss(child.id());
    after.open();
    assert!(wait_exit(&mut child, GUARD).success());
    // What the bound cut is reported with the page.
    assert_eq!(
        common::skipped_for(&out, "parse-limit"),
        [site.url("/nested")]
    );
    peak.saturating_sub(base)
}

#[test]
fn deeply_nested_tags_at_the_body_cap_stay_within_the_page_bound() {
    let bound = 4 * MAX_BODY as u64;
    for unit in [
        "<div>",
        "<b><i>",
        "<div><a href=#t>",
        "<custom-element-name>",
    ] {
        let growth = growth_for(nested(unit));
        eprintln!("{unit}: peak RSS grew by {} KiB", growth >> 10);
        assert!(
            growth < bound,
            "{unit}: {} MiB over the {} MiB bound",
            growth >> 20,
            bound >> 20
        );
    }
}
