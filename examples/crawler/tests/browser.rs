//! The status page in a real browser: Debian's headless Chromium loads it from a running
//! crawl, takes a screenshot (kept as `target/tmp/status-page.png` for a person to look at)
//! and dumps the DOM it rendered, which must hold the figures, the charts and the rows.
//!
//! Chromium comes from `bash scripts/install-test-deps.sh`; without it the test is skipped
//! with a notice, except under `CI`, where it fails.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use common::{Gate, Lines, Reply, Site, StatusPage, temp_out};
use url_dedup_redis::testing::program_or_skip;

const TEST: &str = "status page in a browser";

/// Runs Chromium headless on `url` with `extra` flags, in a new profile, as this machine
/// needs it (no sandbox as root, no network but loopback); returns what it printed.
fn chromium(binary: &Path, extra: &[&str], url: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let mut child = Command::new(binary)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--window-size=1280,2000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = Lines::new(child.stdout.take().unwrap());
    // A guard against a hung browser, not a timing assertion.
    let status = common::wait_exit(&mut child, Duration::from_secs(300));
    assert!(status.success(), "chromium {extra:?} failed: {status}");
    stdout.all()
}

/// The width and height a PNG file declares.
fn png_size(png: &[u8]) -> (u32, u32) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    let be = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
    (be(16), be(20))
}

#[test]
fn the_status_page_renders_in_a_browser() {
    let Some(browser) = program_or_skip(
        TEST,
        "chromium",
        "bash scripts/install-test-deps.sh installs Debian's chromium",
    ) else {
        return;
    };
    let gate = Gate::default();
    let held = gate.clone();
    let origins: Arc<OnceLock<Vec<String>>> = Arc::default();
    let known = origins.clone();
    // Two hosts: the first links to the second, and one page of the first waits for the
    // test, so the crawl stands still while the browser looks.
    let site = Site::start_ports(2, move |target, headers| {
        let second = common::header_value(headers, axum::http::header::HOST)
            .ends_with(&known.get().unwrap()[1][7..]);
        match (second, target) {
            (false, "/") => Reply::html(format!(
                r#"<a href="/a">a</a><a href="/b">b</a><a href="/missing">m</a>
                   <a href="/broken">x</a><a href="/held">h</a><a href="{}/">two</a>"#,
                known.get().unwrap()[1]
            )),
            (false, "/a" | "/b") => Reply::html(r#"<a href="/">home</a>"#),
            (false, "/broken") => Reply::new(500, "text/html", b"down".to_vec()),
            (false, "/held") => Reply::html("late").held(&held),
            (true, "/") => {
                Reply::html(r#"<a href="/c">c</a><a href="/d">d</a><a href="/gone">g</a>"#)
            }
            (true, "/c" | "/d") => Reply::html("leaf"),
            _ => Reply::not_found(),
        }
    });
    origins.set(site.origins.clone()).unwrap();
    let (_tmp, out) = temp_out();
    // A third seed nobody listens on: a failed fetch.
    let refused = "http://127.0.0.1:1/nothing";
    let mut child = common::crawler(&out)
        .args([&site.url("/"), &format!("{}/", site.origins[1]), refused])
        .args([
            "--status",
            "127.0.0.1:0",
            "--ignore-robots",
            "--timeout-ms",
            "60000",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let page = StatusPage::announced(&mut Lines::new(child.stderr.take().unwrap()));
    // Everything but the held page is fetched (9 answers, the 500 after its retries, and a
    // refusal: 4 errors with the two 404s), and the history has enough samples to draw lines.
    common::wait_until(Duration::from_secs(120), || {
        let s = page.status();
        s["fetched"] == 9 && s["errors"] == 4 && s["history"].as_array().unwrap().len() >= 3
    });
    let url = format!("http://{}/", page.addr);
    let shot: PathBuf = Path::new(env!("CARGO_TARGET_TMPDIR")).join("status-page.png");
    let _ = std::fs::remove_file(&shot);
    chromium(
        &browser,
        &[&format!("--screenshot={}", shot.display())],
        &url,
    );
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(png_size(&png), (1280, 2000));
    let dom = chromium(&browser, &["--dump-dom"], &url);
    gate.open();
    assert!(common::wait_exit(&mut child, Duration::from_secs(60)).success());

    // The figures at a glance.
    for figure in [
        "pages fetched",
        "pages / s",
        "queue",
        "errors",
        "duplicates avoided",
    ] {
        assert!(
            dom.contains(&format!(r#"data-figure="{figure}""#)),
            "{figure}: {dom}"
        );
    }
    assert!(dom.contains(r#"<span class="value">9</span>"#), "{dom}");
    // Three charts, each with a line of several points.
    for series in ["pages/s", "queue", "errors"] {
        let chart = dom
            .split(&format!(r#"data-series="{series}""#))
            .nth(1)
            .unwrap_or_else(|| panic!("no {series} chart: {dom}"));
        let chart = &chart[..chart.find("</svg>").unwrap()];
        let line = chart.split(r#"class="line" points=""#).nth(1).unwrap();
        let points = line[..line.find('"').unwrap()].split(' ').count();
        assert!(points >= 2, "{series}: {chart}");
    }
    // A row per host, the last errors, the log.
    let table = |id: &str| {
        let t = dom
            .split(&format!(r#"<table id="{id}">"#))
            .nth(1)
            .unwrap_or_else(|| panic!("no {id} table: {dom}"));
        t[..t.find("</table>").unwrap()].to_owned()
    };
    let hosts = table("hosts");
    for origin in &site.origins {
        assert!(hosts.contains(&origin[7..]), "{origin}: {hosts}");
    }
    assert!(hosts.contains("127.0.0.1:1<"), "{hosts}");
    let errors = table("errors");
    for what in [
        "404 Not Found",
        "500 Internal Server Error",
        "http-error",
        "fetch-failed",
    ] {
        assert!(errors.contains(what), "{what}: {errors}");
    }
    assert!(
        errors.contains("/missing") && errors.contains("/gone"),
        "{errors}"
    );
    assert!(table("log").contains("status page at"), "{dom}");
    assert!(dom.contains("What the figures mean"), "{dom}");
    eprintln!("status page screenshot: {}", shot.display());
}
