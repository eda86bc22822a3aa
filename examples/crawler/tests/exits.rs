//! How a run ends when something goes wrong, and what its exit status says: a fetch task that
//! fails with a bug loses no URL and fails the run; options out of range are usage errors;
//! a summary that cannot be written is an error, not a crash; a crawl that fetched nothing
//! says so. docs/crawler.md, "Exit status", lists the codes.

mod common;

use std::process::Stdio;

use common::{Reply, Site, crawl_ending, crawler, skipped_for, temp_out};

/// A fetch task that panics (a bug; here the debug build's test failpoint) records its URL as
/// `internal-error` in the skip report and the run exits 3, where it once said "crawl
/// complete" with exit 0 and the URL fetched by nobody.
#[test]
fn a_fetch_task_that_panics_is_recorded_and_fails_the_run() {
    let site = Site::start(|target, _| match target {
        "/" => Reply::html(r#"<a href="/boom">boom</a><a href="/ok">ok</a>"#),
        "/ok" => Reply::html("ok"),
        _ => Reply::not_found(),
    });
    let (_tmp, out) = temp_out();
    let output = crawler(&out)
        .arg(site.url("/"))
        .args(["--ignore-robots"])
        .env("CRAWLER_TEST_PANIC_ON", "/boom")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3), "{output:?}");
    assert_eq!(skipped_for(&out, "internal-error"), [site.url("/boom")]);
    assert_eq!(site.hit("/ok"), 1);
    let summary = String::from_utf8_lossy(&output.stdout);
    assert!(
        summary.contains("1 fetch tasks failed with an internal error"),
        "{summary}"
    );
}

/// Rates nobody means are usage errors (exit 2), before anything is fetched: `--rate 1e-300`
/// once panicked in the pacer and lost the seed.
#[test]
fn rates_out_of_range_are_usage_errors() {
    let (_tmp, out) = temp_out();
    for rate in ["1e-300", "-1", "NaN", "inf", "1e9"] {
        let rate = format!("--rate={rate}");
        let output = crawler(&out)
            .args(["http://127.0.0.1:9/", &rate])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{rate}: {output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("--rate"), "{rate}: {stderr}");
    }
}

/// A summary written to a closed or full standard output is an error (exit 1, a message on
/// standard error), not a panic (exit 101).
#[test]
fn a_closed_or_full_stdout_is_an_error_not_a_crash() {
    let site = Site::start(|_, _| Reply::html("page"));
    let closed = {
        let (_tmp, out) = temp_out();
        let mut child = crawler(&out)
            .args([site.url("/").as_str(), "--ignore-robots"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The reading end is closed before the summary is written.
        drop(child.stdout.take());
        child.wait_with_output().unwrap()
    };
    let full = {
        let (_tmp, out) = temp_out();
        let dev_full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        crawler(&out)
            .args([site.url("/").as_str(), "--ignore-robots"])
            .stdout(dev_full)
            .output()
            .unwrap()
    };
    for output in [closed, full] {
        assert_eq!(output.status.code(), Some(1), "{output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("writing the summary"), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

/// A crawl that could fetch nothing (a seed nobody answers, or a seed answering 404) exits
/// 4, as `wget` exits non-zero; a crawl that fetched its pages exits 0.
#[test]
fn a_crawl_that_fetched_nothing_says_so() {
    let site = Site::start(|target, _| match target {
        "/" => Reply::html("home"),
        _ => Reply::not_found(),
    });
    let (_tmp, out) = temp_out();
    crawl_ending(&out, "http://127.0.0.1:1/", &["--ignore-robots"], 4);
    let (_tmp, out) = temp_out();
    crawl_ending(&out, &site.url("/missing"), &["--ignore-robots"], 4);
    let (_tmp, out) = temp_out();
    crawl_ending(&out, &site.url("/"), &["--ignore-robots"], 0);
    // Run again on a finished crawl: nothing left to fetch, and nothing wrong.
    crawl_ending(&out, &site.url("/"), &["--ignore-robots"], 0);
}
