//! The WARC files the crawler writes, read back record by record: every record's
//! `WARC-Block-Digest` and every response's `WARC-Payload-Digest` are checked here, in both
//! modes, and by `warcio check` (an independent WARC reader, Python) when it is installed
//! (`scripts/install-test-deps.sh` puts it in `target/warcio`; `WARCIO=path` overrides).

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{Reply, Site, temp_out, warc_files};
use flate2::Compression;
use flate2::write::GzEncoder;
use url_dedup_redis::testing::RedisServer;

/// One WARC record: its header fields and its block.
struct Record {
    fields: Vec<(String, String)>,
    block: Vec<u8>,
}

impl Record {
    fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn kind(&self) -> &str {
        self.field("WARC-Type").unwrap_or("")
    }
}

/// Every record of a WARC file, checking its framing.
fn records(path: &Path) -> Vec<Record> {
    let data = std::fs::read(path).unwrap();
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < data.len() {
        let end = pos
            + data[pos..]
                .windows(4)
                .position(|w| w == b"\r\n\r\n")
                .expect("a record header");
        let head = std::str::from_utf8(&data[pos..end]).unwrap();
        let mut lines = head.split("\r\n");
        assert_eq!(lines.next(), Some("WARC/1.1"), "at {pos}");
        let fields: Vec<(String, String)> = lines
            .map(|l| {
                let (n, v) = l.split_once(':').expect("a field");
                (n.trim().to_owned(), v.trim().to_owned())
            })
            .collect();
        let len: usize = fields
            .iter()
            .find(|(n, _)| n == "Content-Length")
            .unwrap()
            .1
            .parse()
            .unwrap();
        let block = data[end + 4..end + 4 + len].to_vec();
        pos = end + 4 + len;
        assert_eq!(&data[pos..pos + 4], b"\r\n\r\n", "record end at {pos}");
        pos += 4;
        out.push(Record { fields, block });
    }
    out
}

/// The SHA-1 a `sha1:BASE32` digest names, decoded from base32 (RFC 4648).
fn sha1_of_digest(digest: &str) -> Vec<u8> {
    let text = digest.strip_prefix("sha1:").expect("a sha1 digest");
    assert_eq!(text.len(), 32, "{digest}");
    let mut bits = 0u64;
    let mut n = 0;
    let mut out = Vec::new();
    for c in text.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'2'..=b'7' => c - b'2' + 26,
            _ => panic!("not base32: {digest}"),
        };
        bits = (bits << 5) | u64::from(v);
        n += 5;
        if n >= 8 {
            n -= 8;
            out.push((bits >> n) as u8);
        }
    }
    out
}

fn sha1(data: &[u8]) -> Vec<u8> {
    sha1_smol::Sha1::from(data).digest().bytes().to_vec()
}

/// Checks every digest of every WARC file in `out`; returns the records.
fn check_digests(out: &Path) -> Vec<Record> {
    let mut all = Vec::new();
    for file in warc_files(out) {
        for r in records(&file) {
            let block = r
                .field("WARC-Block-Digest")
                .expect("every record has a block digest");
            assert_eq!(sha1_of_digest(block), sha1(&r.block), "{}", r.kind());
            if r.kind() == "response" {
                let payload = r.field("WARC-Payload-Digest").expect("a payload digest");
                let body_at = r
                    .block
                    .windows(4)
                    .position(|w| w == b"\r\n\r\n")
                    .expect("an HTTP head")
                    + 4;
                assert_eq!(sha1_of_digest(payload), sha1(&r.block[body_at..]));
            }
            all.push(r);
        }
        warcio_check(&file);
    }
    all
}

/// Runs `warcio check` on `file` when warcio is installed.
fn warcio_check(file: &Path) {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let warcio = std::env::var_os("WARCIO")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("target/warcio/bin/warcio"));
    if !warcio.exists() {
        eprintln!(
            "warcio not installed ({}): digests checked here only",
            warcio.display()
        );
        return;
    }
    let output = Command::new(&warcio)
        .arg("check")
        .arg("-v")
        .arg(file)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "warcio check failed on {}:\n{report}{}",
        file.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(report.contains("digest pass"), "{report}");
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// Pages plain and compressed, a redirect, a missing page, an image.
fn site() -> Site {
    Site::start(|target, _| match target {
        "/" => Reply::html(
            r#"<a href="/gz">gz</a><a href="/moved">m</a><a href="/gone">g</a><img src="/i.png">"#,
        ),
        "/gz" => Reply::new(200, "text/html", gzip(b"<a href=\"/\">home</a> compressed"))
            .header("content-encoding", "gzip"),
        "/moved" => Reply::redirect("/"),
        "/i.png" => Reply::new(200, "image/png", vec![0x89, b'P', b'N', b'G', 0, 1, 2]),
        _ => Reply::not_found(),
    })
}

#[test]
fn every_digest_of_a_single_process_crawl_verifies() {
    let site = site();
    let (_tmp, out) = temp_out();
    common::crawl(&out, &site.url("/"), &["--ignore-robots"]);
    let records = check_digests(&out);
    let kinds: Vec<&str> = records.iter().map(Record::kind).collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "response").count(),
        5,
        "{kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| **k == "request").count(),
        5,
        "{kinds:?}"
    );
    assert_eq!(kinds[0], "warcinfo");
}

#[test]
fn a_shared_crawl_writes_verifiable_records_and_revisits_for_unchanged_pages() {
    let Some(redis) = RedisServer::start_or_skip("warc revisits") else {
        return;
    };
    let answers = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let a = answers.clone();
    let site = Site::start(move |target, headers| {
        a.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let etag = "\"v1\"";
        if headers
            .get("if-none-match")
            .is_some_and(|h| h.to_str().unwrap_or("") == etag)
        {
            return Reply::new(304, "text/html", Vec::new()).header("etag", etag);
        }
        match target {
            "/" => Reply::html(r#"<a href="/a">a</a>"#).header("etag", etag),
            "/a" => Reply::html("leaf").header("etag", etag),
            _ => Reply::not_found(),
        }
    });
    let (_tmp, out) = temp_out();
    let mut child = common::crawler(&out)
        .args([
            "--redis",
            &redis.url(),
            "--crawl-name",
            "revisits",
            "--ignore-robots",
        ])
        .args(["--every", "1s"])
        .arg(site.url("/"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Two pages, then both again, unchanged.
    common::wait_until(Duration::from_secs(30), || {
        answers.load(std::sync::atomic::Ordering::SeqCst) >= 4
    });
    let stopped = common::crawler(&out)
        .args([
            "--redis",
            &redis.url(),
            "--crawl-name",
            "revisits",
            "--stop",
        ])
        .status()
        .unwrap();
    assert!(stopped.success());
    assert!(common::wait_exit(&mut child, Duration::from_secs(30)).success());
    let records = check_digests(&out);
    let count = |kind: &str| records.iter().filter(|r| r.kind() == kind).count();
    assert_eq!(count("response"), 2);
    assert!(count("revisit") >= 2, "{}", count("revisit"));
    for r in records.iter().filter(|r| r.kind() == "revisit") {
        assert_eq!(
            r.field("WARC-Profile"),
            Some("http://netpreserve.org/warc/1.1/revisit/server-not-modified")
        );
        assert_eq!(
            r.field("WARC-Refers-To-Target-URI"),
            r.field("WARC-Target-URI")
        );
        assert!(r.field("WARC-Payload-Digest").is_none());
    }
}
