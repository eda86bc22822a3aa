//! End-to-end behaviour of the `crawler` binary against local sites.

mod common;

use std::collections::BTreeSet;
use std::io::Write;
use std::time::Duration;

use common::{
    Gate, Reply, Site, crawl, crawl_ending, skipped, skipped_for, temp_out, warc_responses,
};
use flate2::Compression;
use flate2::write::GzEncoder;

/// A site of `n` pages; page i links to i+1, i*2 and i*3 (mod n), each in several spellings.
fn web(n: u32) -> Site {
    Site::start(move |target, _| {
        if target == "/robots.txt" {
            return Reply::not_found();
        }
        let path = target.split('?').next().unwrap();
        let Some(i) = path
            .strip_prefix("/p/")
            .and_then(|s| s.parse::<u32>().ok())
            .or((path == "/").then_some(0))
        else {
            return Reply::not_found();
        };
        if i >= n {
            return Reply::not_found();
        }
        let mut body = String::from("<html><body>");
        for j in [(i + 1) % n, (i * 2) % n, (i * 3) % n] {
            body.push_str(&format!(
                "<a href=\"/p/{j}\">a</a><a href=\"/p/{j}#x\">b</a><a href=\"/p/{j}?utm_source=t\">c</a><a href=\"/q/../p/{j}\">d</a>"
            ));
        }
        body.push_str("<script>var next = \"/p/999999\";</script></body></html>");
        Reply::html(body)
    })
}

#[test]
fn every_page_once_with_warc_and_a_browsable_mirror() {
    let n = 150;
    let site = web(n);
    let (_tmp, out) = temp_out();
    let output = crawl(&out, &site.url("/"), &[]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("crawl complete"), "{stdout}");

    let hits = site.hits();
    // "/" is page 0 and links to "/p/0" too: n + 1 distinct URLs.
    let mut want: BTreeSet<String> = (0..n).map(|i| format!("/p/{i}")).collect();
    want.insert("/".into());
    want.insert("/robots.txt".into());
    assert_eq!(hits.keys().cloned().collect::<BTreeSet<_>>(), want);
    assert!(
        hits.values().all(|&c| c == 1),
        "fetched twice: {:?}",
        hits.iter().filter(|(_, c)| **c > 1).collect::<Vec<_>>()
    );
    assert_eq!(
        site.max_in_flight(),
        1,
        "one request at a time per host by default"
    );

    let responses = warc_responses(&out);
    assert_eq!(responses.len(), n as usize + 1);
    assert_eq!(
        responses.iter().collect::<BTreeSet<_>>().len(),
        n as usize + 1
    );

    // Every link in the mirror points at a file that exists.
    let host_dir = out
        .join("mirror")
        .join("http")
        .join(site.origin.trim_start_matches("http://").replace(':', "+"));
    let page = std::fs::read_to_string(host_dir.join("p").join("7.html")).unwrap();
    assert!(
        page.contains("href=\"8.html\"") && page.contains("href=\"8.html#x\""),
        "{page}"
    );
    for entry in std::fs::read_dir(host_dir.join("p")).unwrap() {
        let path = entry.unwrap().path();
        let html = std::fs::read_to_string(&path).unwrap();
        for href in html
            .split("href=\"")
            .skip(1)
            .map(|s| s.split(['"', '#']).next().unwrap())
        {
            assert!(
                path.parent().unwrap().join(href).exists(),
                "{} links to missing {href}",
                path.display()
            );
        }
    }
    assert!(skipped(&out).is_empty(), "{:?}", skipped(&out));
}

#[test]
fn per_host_concurrency_is_an_explicit_option() {
    let site = Site::start(|target, _| {
        if target == "/" {
            Reply::html(
                (0..12)
                    .map(|i| format!("<a href=\"/s/{i}\">x</a>"))
                    .collect::<String>(),
            )
        } else if target.starts_with("/s/") {
            Reply::html("slow").delayed(Duration::from_millis(150))
        } else {
            Reply::not_found()
        }
    });
    let (_tmp, out) = temp_out();
    crawl(&out, &site.url("/"), &["--per-host", "4", "--no-warc"]);
    assert!(
        (2..=4).contains(&site.max_in_flight()),
        "max in flight {}",
        site.max_in_flight()
    );
}

#[test]
fn robots_rules_crawl_delay_and_sitemaps() {
    let site = Site::start(|target, _| {
        match target {
        "/robots.txt" => Reply::new(
            200,
            "text/plain",
            b"User-agent: other-bot\nDisallow: /\n\nUser-agent: *\nDisallow: /private/\nAllow: /private/ok\nCrawl-delay: 0.2\nSitemap: /sitemap.xml\n".to_vec(),
        ),
        "/sitemap.xml" => Reply::new(200, "application/xml", b"<urlset><url><loc>/orphan</loc></url></urlset>".to_vec()),
        "/" => Reply::html(r#"<a href="/private/x">x</a><a href="/private/ok">ok</a><a href="/public">p</a>"#),
        "/private/ok" | "/public" | "/orphan" => Reply::html("leaf"),
        _ => Reply::not_found(),
    }
    });
    let (_tmp, out) = temp_out();
    let start = std::time::Instant::now();
    crawl(&out, &site.url("/"), &[]);
    let elapsed = start.elapsed();
    assert_eq!(site.hit("/private/x"), 0);
    for p in ["/", "/private/ok", "/public", "/orphan", "/sitemap.xml"] {
        assert_eq!(site.hit(p), 1, "{p}");
    }
    assert_eq!(
        skipped_for(&out, "robots-disallowed"),
        [site.url("/private/x")]
    );
    // Five requests after robots.txt, 0.2 s apart.
    assert!(
        elapsed >= Duration::from_millis(800),
        "crawl-delay not honoured: {elapsed:?}"
    );
}

/// A robots.txt of `size` bytes: its first group disallows `/secret`, the rest is comments.
fn huge_robots(size: usize) -> Vec<u8> {
    let mut txt = b"User-agent: *\nDisallow: /secret\n".to_vec();
    while txt.len() < size {
        txt.extend_from_slice(b"# padding, still a valid robots.txt line\n");
    }
    txt
}

#[test]
fn an_oversized_robots_txt_is_parsed_as_far_as_read_never_allow_all() {
    // RFC 9309 section 2.5: crawlers parse at least the first 500 KiB.
    let plain = huge_robots(10 << 20);
    let compressed = gzip(&plain);
    for encoding in ["identity", "gzip"] {
        let body = if encoding == "gzip" {
            compressed.clone()
        } else {
            plain.clone()
        };
        let site = Site::start(move |target, _| match target {
            "/robots.txt" => {
                Reply::new(200, "text/plain", body.clone()).header("content-encoding", encoding)
            }
            "/" => Reply::html(r#"<a href="/secret/a.html">s</a><a href="/public">p</a>"#),
            "/public" | "/secret/a.html" => Reply::html("leaf"),
            _ => Reply::not_found(),
        });
        let (_tmp, out) = temp_out();
        crawl(&out, &site.url("/"), &[]);
        assert_eq!(site.hit("/secret/a.html"), 0, "{encoding}");
        assert_eq!(site.hit("/public"), 1, "{encoding}");
        assert_eq!(
            skipped_for(&out, "robots-disallowed"),
            [site.url("/secret/a.html")],
            "{encoding}"
        );
    }
}

#[test]
fn unreachable_robots_txt_means_disallow_all() {
    let site = Site::start(|target, _| match target {
        "/robots.txt" => Reply::new(503, "text/plain", Vec::new()),
        _ => Reply::html("page"),
    });
    let (_tmp, out) = temp_out();
    // Nothing could be fetched: the exit status says so.
    crawl_ending(&out, &site.url("/"), &[], 4);
    assert_eq!(site.hits().keys().collect::<Vec<_>>(), ["/robots.txt"]);
    assert_eq!(skipped_for(&out, "robots-unreachable"), [site.url("/")]);
}

#[test]
fn redirects_are_deduplicated_bounded_and_loops_end() {
    let site = Site::start(|target, _| match target {
        "/" => Reply::html(
            r#"<a href="/r1">chain</a><a href="/long/0">long</a><a href="/loop/a">loop</a><a href="/away">away</a><a href="/target">direct</a><a href="/bad">bad</a>"#,
        ),
        "/r1" => Reply::redirect("/r2"),
        "/r2" => Reply::redirect("/target"),
        "/target" => Reply::html("target"),
        "/loop/a" => Reply::redirect("/loop/b"),
        "/loop/b" => Reply::redirect("/loop/a"),
        "/away" => Reply::redirect("http://127.0.0.2:9/elsewhere"),
        "/bad" => Reply::redirect("javascript:alert(1)"),
        t if t.starts_with("/long/") => {
            let i: u32 = t[6..].parse().unwrap();
            Reply::redirect(format!("/long/{}", i + 1))
        }
        _ => Reply::not_found(),
    });
    let (_tmp, out) = temp_out();
    crawl(&out, &site.url("/"), &["--max-redirects", "3"]);
    let hits = site.hits();
    assert!(hits.values().all(|&c| c == 1), "{hits:?}");
    assert_eq!(
        site.hit("/target"),
        1,
        "a redirect target and a link to it are one URL"
    );
    assert_eq!(site.hit("/loop/a") + site.hit("/loop/b"), 2);
    // /long/0 plus three redirects, then the fourth target is refused.
    assert_eq!(hits.keys().filter(|k| k.starts_with("/long/")).count(), 4);
    assert_eq!(
        skipped_for(&out, "too-many-redirects"),
        [site.url("/long/3")]
    );
    assert_eq!(
        skipped_for(&out, "out-of-scope"),
        ["http://127.0.0.2:9/elsewhere"]
    );
    assert_eq!(skipped_for(&out, "bad-redirect"), [site.url("/bad")]);
}

#[test]
fn trap_rules_stop_endless_sites_and_say_why() {
    let site = Site::start(|target, _| {
        let path = target.split('?').next().unwrap();
        if path == "/" {
            return Reply::html(
                r#"<a href="/cal/0">c</a><a href="/deep/">d</a><a href="/search?q=a">s</a><a href="/loop/">l</a>"#,
            );
        }
        if let Some(i) = path.strip_prefix("/cal/") {
            let i: u32 = i.parse().unwrap();
            return Reply::html(format!("<a href=\"/cal/{}\">next</a>", i + 1));
        }
        if path.starts_with("/deep/") {
            let level = path.matches('/').count();
            return Reply::html(format!("<a href=\"d{level}/\">deeper</a>"));
        }
        if path.starts_with("/loop/") {
            return Reply::html(r#"<a href="x/">again</a>"#);
        }
        if path == "/search" {
            let q = target.split("q=").nth(1).unwrap_or("a");
            return Reply::html(format!("<a href=\"/search?q={q}{q}\">more</a>"));
        }
        Reply::not_found()
    });
    let (_tmp, out) = temp_out();
    crawl(
        &out,
        &site.url("/"),
        &[
            "--max-depth",
            "6",
            "--max-slashes",
            "8",
            "--max-url-length",
            "80",
            "--max-segment-repeats",
            "2",
        ],
    );
    let hits = site.hits();
    // Depth: / is 0, /cal/0 is 1 ... /cal/5 is 6; /cal/6 would be 7.
    assert_eq!(hits.keys().filter(|k| k.starts_with("/cal/")).count(), 6);
    assert_eq!(skipped_for(&out, "too-deep"), [site.url("/cal/6")]);
    // http://127.0.0.1:P/deep/d2/d3/d4/d5/ has 8 slashes.
    assert_eq!(
        skipped_for(&out, "too-many-slashes"),
        [site.url("/deep/d2/d3/d4/d5/d6/")]
    );
    assert_eq!(
        skipped_for(&out, "repeated-segment"),
        [site.url("/loop/x/x/x/")]
    );
    assert_eq!(skipped_for(&out, "url-too-long").len(), 1);
    assert!(hits.keys().all(|k| site.url(k).len() <= 80));

    let (_tmp2, out2) = temp_out();
    crawl(&out2, &site.url("/"), &["--host-budget", "5"]);
    assert_eq!(
        site.hits().values().sum::<u32>() - hits.values().sum::<u32>(),
        5 + 1,
        "five pages and robots.txt"
    );
    assert!(!skipped_for(&out2, "host-budget").is_empty());
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::best());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

#[test]
fn oversize_bodies_and_gzip_bombs_are_refused() {
    let bomb = gzip(&vec![0; 64 << 20]);
    assert!(bomb.len() < 100_000);
    let page = gzip(b"<a href=\"/after\">after</a>");
    let served = page.clone();
    let site = Site::start(move |target, headers| match target {
        "/" => Reply::html(
            r#"<a href="/big">big</a><a href="/bomb">bomb</a><a href="/gz">gz</a><a href="/lying">lying</a>"#,
        ),
        "/big" => Reply::html("x".repeat(300_000)),
        "/bomb" => Reply::new(200, "text/html", bomb.clone()).header("content-encoding", "gzip"),
        "/gz" => {
            assert!(
                common::header_value(headers, axum::http::header::ACCEPT_ENCODING).contains("gzip")
            );
            Reply::new(200, "text/html", served.clone()).header("content-encoding", "gzip")
        }
        "/lying" => Reply::new(200, "text/html", b"not gzip at all".to_vec())
            .header("content-encoding", "gzip"),
        "/after" => Reply::html("after"),
        _ => Reply::not_found(),
    });
    let (_tmp, out) = temp_out();
    crawl(
        &out,
        &site.url("/"),
        &["--max-body", "200000", "--max-decoded", "1000000"],
    );
    assert_eq!(skipped_for(&out, "body-too-large"), [site.url("/big")]);
    assert_eq!(skipped_for(&out, "decoded-too-large"), [site.url("/bomb")]);
    assert_eq!(skipped_for(&out, "bad-encoding"), [site.url("/lying")]);
    assert_eq!(site.hit("/after"), 1, "links of a gzip page are followed");
    // The WARC keeps the compressed bytes the server sent.
    let warc = std::fs::read(out.join("crawl.warc")).unwrap();
    assert!(warc.windows(page.len()).any(|w| w == page.as_slice()));
}

#[test]
fn a_deflate_body_over_the_decode_cap_is_reported_as_over_the_cap() {
    use flate2::write::{DeflateEncoder, ZlibEncoder};
    let mut zlib = ZlibEncoder::new(Vec::new(), Compression::best());
    zlib.write_all(&vec![b' '; 4 << 20]).unwrap();
    let zlib = zlib.finish().unwrap();
    let mut raw = DeflateEncoder::new(Vec::new(), Compression::best());
    raw.write_all(&vec![b' '; 4 << 20]).unwrap();
    let raw = raw.finish().unwrap();
    let mut small = DeflateEncoder::new(Vec::new(), Compression::best());
    small.write_all(b"<a href=\"/after\">after</a>").unwrap();
    let small = small.finish().unwrap();
    let site = Site::start(move |target, _| {
        let deflated = |body: &Vec<u8>| {
            Reply::new(200, "text/html", body.clone()).header("content-encoding", "deflate")
        };
        match target {
            "/" => {
                Reply::html(r#"<a href="/zlib">z</a><a href="/raw">r</a><a href="/small">s</a>"#)
            }
            "/zlib" => deflated(&zlib),
            "/raw" => deflated(&raw),
            "/small" => deflated(&small),
            "/after" => Reply::html("after"),
            _ => Reply::not_found(),
        }
    });
    let (_tmp, out) = temp_out();
    crawl(&out, &site.url("/"), &["--max-decoded", "1000000"]);
    let mut over = skipped_for(&out, "decoded-too-large");
    over.sort();
    assert_eq!(over, [site.url("/raw"), site.url("/zlib")]);
    assert!(skipped_for(&out, "bad-encoding").is_empty());
    assert_eq!(
        site.hit("/after"),
        1,
        "raw deflate (no zlib header) still decodes"
    );
}

#[test]
fn long_fields_in_the_skip_report_are_cut_with_a_marker() {
    let long = format!("/x?q={}", "a".repeat(9 << 20));
    let page = format!("<a href=\"/ok\">ok</a><a href=\"{long}\">long</a>");
    let site = Site::start(move |target, _| match target {
        "/" => Reply::html(page.clone()),
        "/ok" => Reply::html("ok"),
        _ => Reply::not_found(),
    });
    let (_tmp, out) = temp_out();
    // A parse budget (the body cap) large enough to read a 9 MiB attribute.
    let output = crawl(&out, &site.url("/"), &["--max-body", "40000000"]);
    assert_eq!(site.hit("/ok"), 1);
    let report = std::fs::read_to_string(out.join("skipped.tsv")).unwrap();
    assert!(report.len() < 16 << 10, "{} bytes", report.len());
    let line = report
        .lines()
        .find(|l| l.starts_with("url-too-long\t"))
        .unwrap();
    let url = line.split('\t').nth(2).unwrap();
    assert!(url.starts_with(&site.url("/x?q=aaaa")), "{url}");
    assert!(url.ends_with(" bytes]"), "{url}");
    assert!(String::from_utf8_lossy(&output.stdout).len() < 16 << 10);
}

/// A page that never comes is given up after `--timeout-ms` (and its retries): the crawl ends
/// (its answer is held behind a gate never opened, so the crawl could not end otherwise). A
/// server error is tried again `--retries` times, then recorded as a broken link.
#[test]
fn slow_and_failing_servers() {
    let never = Gate::default();
    let site = Site::start(move |target, _| match target {
        "/" => Reply::html(
            r#"<a href="/slow">slow</a><a href="/boom">boom</a><a href="/ok">ok</a><a href="http://127.0.0.1:1/refused">refused</a>"#,
        ),
        "/slow" => Reply::html("late").held(&never),
        "/boom" => Reply::new(500, "text/html", b"internal error".to_vec()),
        "/ok" => Reply::html("ok"),
        _ => Reply::not_found(),
    });
    let (_tmp, out) = temp_out();
    let output = crawl(
        &out,
        &site.url("/"),
        &[
            "--timeout-ms",
            "400",
            "--scope",
            "domain",
            "--connect-timeout-ms",
            "400",
            "--ignore-robots",
            "--retry-wait-ms",
            "1",
        ],
    );
    assert_eq!(skipped_for(&out, "timeout"), [site.url("/slow")]);
    assert_eq!(
        site.hit("/slow"),
        3,
        "a timeout is tried again, twice by default"
    );
    assert_eq!(
        skipped_for(&out, "fetch-failed"),
        ["http://127.0.0.1:1/refused"]
    );
    assert_eq!(site.hit("/boom"), 3, "tried again twice, then given up");
    assert_eq!(skipped_for(&out, "http-error"), [site.url("/boom")]);
    assert_eq!(site.hit("/ok"), 1);
    assert!(warc_responses(&out).contains(&site.url("/boom")));
    assert!(String::from_utf8_lossy(&output.stdout).contains("500: 1"));
}

/// wget and Scrapy users expect retries: a passing failure (503, 429, a timeout) is tried
/// again with a growing wait, or the wait the server's `Retry-After` asks; a 404 is a broken
/// link at once, in the skip report. A single 503 once lost a page for the run.
#[test]
fn passing_failures_are_tried_again_and_broken_links_are_listed() {
    use std::sync::atomic::{AtomicU32, Ordering};
    let flaky = std::sync::Arc::new(AtomicU32::new(0));
    let later = std::sync::Arc::new(AtomicU32::new(0));
    let (f, l) = (flaky.clone(), later.clone());
    let site = Site::start(move |target, _| match target {
        "/" => Reply::html(
            r#"<a href="/flaky">f</a><a href="/later">l</a><a href="/gone">g</a><a href="/busy">b</a>"#,
        ),
        // Two 503s, then the page.
        "/flaky" if f.fetch_add(1, Ordering::SeqCst) < 2 => {
            Reply::new(503, "text/html", b"busy".to_vec())
        }
        "/flaky" => Reply::html("flaky page"),
        // One 429 asking for a second.
        "/later" if l.fetch_add(1, Ordering::SeqCst) < 1 => {
            Reply::new(429, "text/html", b"slow down".to_vec()).header("retry-after", "1")
        }
        "/later" => Reply::html("later page"),
        "/busy" => Reply::new(503, "text/html", b"busy".to_vec()),
        _ => Reply::not_found(),
    });
    let (_tmp, out) = temp_out();
    let begin = std::time::Instant::now();
    let output = crawl(
        &out,
        &site.url("/"),
        &["--ignore-robots", "--retries", "3", "--retry-wait-ms", "10"],
    );
    // Retry-After: 1 was waited for.
    assert!(begin.elapsed() >= Duration::from_secs(1));
    assert_eq!(site.hit("/flaky"), 3);
    assert_eq!(site.hit("/later"), 2);
    assert_eq!(site.hit("/gone"), 1, "a 404 is not tried again");
    assert_eq!(site.hit("/busy"), 4, "tried again --retries times");
    let mut broken = skipped_for(&out, "http-error");
    broken.sort();
    assert_eq!(broken, [site.url("/busy"), site.url("/gone")]);
    let responses = warc_responses(&out);
    assert!(responses.contains(&site.url("/flaky")));
    let summary = String::from_utf8_lossy(&output.stdout);
    assert!(
        summary.contains("  retries          6 fetches tried again"),
        "{summary}"
    );
}

#[test]
fn only_accepted_content_types_and_only_html_is_parsed() {
    let site = Site::start(|target, _| match target {
        "/" => Reply::html(
            r#"<a href="/doc.pdf">pdf</a><a href="/logo.png">png</a><a href="/notes.txt">txt</a><a href="mailto:a@b">m</a><a href="ftp://h/f">f</a>"#,
        ),
        "/doc.pdf" => Reply::new(
            200,
            "application/pdf",
            b"%PDF <a href=\"/from-pdf\">".to_vec(),
        ),
        "/logo.png" => Reply::new(200, "image/png", b"\x89PNG <a href=\"/from-png\">".to_vec()),
        "/notes.txt" => Reply::new(200, "text/plain", b"<a href=\"/from-text\">".to_vec()),
        _ => Reply::not_found(),
    });
    let (_tmp, out) = temp_out();
    let output = crawl(
        &out,
        &site.url("/"),
        &[
            "--accept",
            "text/html",
            "--accept",
            "image/",
            "--accept",
            "text/plain",
        ],
    );
    assert_eq!(skipped_for(&out, "content-type"), [site.url("/doc.pdf")]);
    // mailto: and ftp: links are counted as not followed, not dropped silently.
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("not web links    2 links"), "{stdout}");
    for p in ["/from-pdf", "/from-png", "/from-text"] {
        assert_eq!(site.hit(p), 0, "{p} is not a link in HTML");
    }
    let host_dir = out
        .join("mirror")
        .join("http")
        .join(site.origin.trim_start_matches("http://").replace(':', "+"));
    assert!(host_dir.join("logo.png").exists());
    assert!(!host_dir.join("doc.pdf").exists());
}

#[test]
fn nofollow_and_base_href() {
    let site = Site::start(|target, _| match target {
        "/" => Reply::html(
            r#"<base href="/sub/"><a href="page">p</a><a rel="nofollow" href="/nf">nf</a><iframe src="frame"></iframe>"#,
        ),
        "/sub/page" | "/sub/frame" | "/nf" => Reply::html("leaf"),
        _ => Reply::not_found(),
    });
    let (_tmp, out) = temp_out();
    crawl(&out, &site.url("/"), &["--respect-nofollow"]);
    assert_eq!(site.hit("/sub/page"), 1);
    assert_eq!(site.hit("/sub/frame"), 1);
    assert_eq!(site.hit("/nf"), 0);
}

#[test]
fn max_pages_stops_and_a_rerun_continues() {
    let site = web(40);
    let (_tmp, out) = temp_out();
    let first = crawl(&out, &site.url("/"), &["--max-pages", "10"]);
    assert!(String::from_utf8_lossy(&first.stdout).contains("--max-pages"));
    assert_eq!(
        site.hits().keys().filter(|k| *k != "/robots.txt").count(),
        10
    );
    crawl(&out, &site.url("/"), &[]);
    let hits = site.hits();
    assert_eq!(hits.keys().filter(|k| *k != "/robots.txt").count(), 41);
    assert!(
        hits.iter()
            .filter(|(k, _)| *k != "/robots.txt")
            .all(|(_, &c)| c == 1),
        "{hits:?}"
    );
    assert_eq!(warc_responses(&out).len(), 41);
}

#[test]
fn bad_input_is_a_clear_error() {
    let (_tmp, out) = temp_out();
    let o = common::crawler(&out)
        .arg("ftp://example.com/")
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("not an absolute http(s) URL"));

    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("checkpoint"), b"URLDEDUP garbage").unwrap();
    let o = common::crawler(&out)
        .arg("http://127.0.0.1:1/")
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("checkpoint"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        std::fs::read(out.join("checkpoint")).unwrap(),
        b"URLDEDUP garbage",
        "a damaged checkpoint is left as it was"
    );
}

#[test]
fn hosts_run_in_parallel_each_one_request_at_a_time() {
    let slow_site = || {
        Site::start(|target, _| match target {
            "/" => Reply::html(
                (0..6)
                    .map(|i| format!("<a href=\"/s/{i}\">x</a>"))
                    .collect::<String>(),
            ),
            t if t.starts_with("/s/") => Reply::html("leaf").delayed(Duration::from_millis(100)),
            _ => Reply::not_found(),
        })
    };
    let (a, b) = (slow_site(), slow_site());
    let (_tmp, out) = temp_out();
    let output = common::crawler(&out)
        .arg(a.url("/"))
        .arg(b.url("/"))
        .output()
        .unwrap();
    assert!(output.status.success());
    for site in [&a, &b] {
        assert_eq!(site.hits().len(), 8, "robots.txt, / and six pages");
        assert_eq!(site.max_in_flight(), 1);
    }
    // Some request to one host was answered while a request to the other was open.
    let overlap = a
        .served()
        .iter()
        .any(|&(s1, e1)| b.served().iter().any(|&(s2, e2)| s1 < e2 && s2 < e1));
    assert!(overlap, "the two hosts were crawled one after the other");
}

#[test]
fn similar_urls_are_skipped_when_asked() {
    let site = Site::start(|target, _| match target {
        "/" => Reply::html(
            r#"<a href="/list?sort=price&page=1">a</a><a href="/list?sort=name&page=1">b</a><a href="/item/17">c</a>"#,
        ),
        t if t.starts_with("/list") || t.starts_with("/item/") => Reply::html("leaf"),
        _ => Reply::not_found(),
    });
    let (_tmp, out) = temp_out();
    crawl(&out, &site.url("/"), &["--similar"]);
    assert_eq!(site.hit("/list?page=1&sort=price"), 1);
    assert_eq!(site.hit("/item/17"), 1);
    assert_eq!(site.hit("/list?page=1&sort=name"), 0);
    assert_eq!(
        skipped_for(&out, "similar"),
        [site.url("/list?page=1&sort=name")]
    );

    let (_tmp2, plain) = temp_out();
    crawl(&plain, &site.url("/"), &[]);
    assert_eq!(
        site.hit("/list?page=1&sort=name"),
        1,
        "without --similar every distinct URL is fetched"
    );
}

#[test]
fn the_status_page_is_served_by_a_single_process_crawl_too() {
    let gate = common::Gate::default();
    let g = gate.clone();
    let site = Site::start(move |target, _| match target {
        "/" => Reply::html(
            r#"<a href="/a">a</a><a href="/a#x">a</a><a href="/b">b</a><a href="/held">h</a><a href="http://127.0.0.2:9/">away</a>"#,
        ),
        "/a" | "/b" => Reply::html("leaf"),
        "/held" => Reply::html("late").held(&g),
        _ => Reply::not_found(),
    });
    let (_tmp, out) = temp_out();
    let mut child = common::crawler(&out)
        .arg(site.url("/"))
        .args(["--status", "127.0.0.1:0", "--rate", "1000"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = common::Lines::new(child.stderr.take().unwrap());
    let page = common::StatusPage::announced(&mut stderr);
    common::wait_until(Duration::from_secs(60), || site.hit("/held") > 0);
    // robots.txt is not a page; /, /a and /b are fetched, /held is in flight: the figures
    // stand still once they are counted.
    common::wait_until(Duration::from_secs(60), || {
        let s = page.status();
        s["fetched"] == 3 && s["skipped"] == 1
    });
    let status = page.status();
    assert_eq!(status["fetched"], 3, "{status}");
    assert_eq!(status["queued"], 4, "{status}");
    assert_eq!(status["duplicates"], 1, "{status}");
    assert_eq!(status["skipped"], 1, "{status}");
    assert_eq!(status["rate_limit"], 1000.0, "{status}");
    let html = page.get("/");
    assert_eq!(html.status, 200);
    assert!(html.body.contains("duplicates avoided"), "{}", html.body);
    // A rate nobody means is refused, and the limit stays as it was.
    for absurd in ["1e-300", "-1", "1e9", "NaN", "inf", "", "fast"] {
        let a = page.set_rate(absurd);
        assert_eq!(a.status, 400, "{absurd}: {}", a.body);
    }
    assert_eq!(page.status()["rate_limit"], 1000.0);
    assert_eq!(page.set_rate("0").status, 200);
    let status = page.status();
    assert_eq!(status["rate_limit"], 0.0, "{status}");
    gate.open();
    assert!(common::wait_exit(&mut child, Duration::from_secs(60)).success());
}

/// The demo crawls its own site with its own options: an option given with it would be
/// ignored without a word, so the run is refused, naming it, before anything starts.
#[test]
fn options_given_with_the_demo_are_refused_by_name() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_crawler"))
        .args(["--demo", "--similar", "--workers", "2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--similar") && stderr.contains("--workers"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn character_references_in_links_are_decoded() {
    // DokuWiki and MediaWiki write `&amp;` between query parameters, as HTML requires.
    let site = Site::start(|target, _| match target {
        "/" => Reply::html(
            "<a href=\"/doku.php?id=a&amp;do=edit\">edit</a>\
             <a href=\"/doku.php?id=b&#38;rev=1\">old</a>\
             <a href=\"/list?a=1&copy=2\">as written</a>",
        ),
        _ => Reply::html("page"),
    });
    let (_tmp, out) = temp_out();
    crawl(&out, &site.url("/"), &["--no-warc", "--no-mirror"]);
    let hits = site.hits();
    assert_eq!(
        site.hit("/doku.php?do=edit&id=a") + site.hit("/doku.php?id=a&do=edit"),
        1,
        "{hits:?}"
    );
    assert_eq!(
        site.hit("/doku.php?id=b&rev=1") + site.hit("/doku.php?rev=1&id=b"),
        1,
        "{hits:?}"
    );
    assert_eq!(site.hit("/list?a=1&copy=2"), 1, "{hits:?}");
    assert!(
        !hits.keys().any(|k| k.contains("amp;") || k.contains('#')),
        "{hits:?}"
    );
}
