//! A local test site (axum on 127.0.0.1, port 0) that records every request, and a runner for
//! the real `crawler` binary.
#![allow(dead_code, unreachable_pub)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{HeaderMap, Response, StatusCode, Uri, header};

/// What a handler returns.
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
    pub delay: Duration,
}

impl Reply {
    pub fn html(body: impl Into<String>) -> Self {
        Self::new(200, "text/html; charset=utf-8", body.into().into_bytes())
    }
    pub fn new(status: u16, content_type: &str, body: Vec<u8>) -> Self {
        Self {
            status,
            headers: vec![("content-type", content_type.to_owned())],
            body,
            delay: Duration::ZERO,
        }
    }
    pub fn redirect(to: impl Into<String>) -> Self {
        Self {
            status: 301,
            headers: vec![("location", to.into())],
            body: Vec::new(),
            delay: Duration::ZERO,
        }
    }
    pub fn not_found() -> Self {
        Self::new(404, "text/html", b"not found".to_vec())
    }
    pub fn header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }
    pub fn delayed(mut self, d: Duration) -> Self {
        self.delay = d;
        self
    }
}

type Handler = dyn Fn(&str, &HeaderMap) -> Reply + Send + Sync;

/// A running test site.
pub struct Site {
    pub origin: String,
    hits: Arc<Mutex<BTreeMap<String, u32>>>,
    in_flight: Arc<AtomicUsize>,
    max_in_flight: Arc<AtomicUsize>,
    served: Arc<Mutex<Vec<(Instant, Instant)>>>,
    _runtime: tokio::runtime::Runtime,
}

impl Site {
    /// Serves `handler(path_and_query, headers)`; `{origin}` is not known to the handler, so
    /// links are relative or built from [`Site::origin`] afterwards.
    pub fn start(handler: impl Fn(&str, &HeaderMap) -> Reply + Send + Sync + 'static) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let origin = format!("http://{}", listener.local_addr().unwrap());
        let hits: Arc<Mutex<BTreeMap<String, u32>>> = Arc::default();
        let in_flight = Arc::new(AtomicUsize::new(0));
        let max_in_flight = Arc::new(AtomicUsize::new(0));
        let served: Arc<Mutex<Vec<(Instant, Instant)>>> = Arc::default();
        let handler: Arc<Handler> = Arc::new(handler);
        let (h, f, m, sv) = (
            hits.clone(),
            in_flight.clone(),
            max_in_flight.clone(),
            served.clone(),
        );
        let app = axum::Router::new().fallback(move |uri: Uri, headers: HeaderMap| {
            let (handler, hits, in_flight, max, served) =
                (handler.clone(), h.clone(), f.clone(), m.clone(), sv.clone());
            async move {
                let began = Instant::now();
                let target = uri
                    .path_and_query()
                    .map_or("/".to_owned(), |p| p.as_str().to_owned());
                *hits.lock().unwrap().entry(target.clone()).or_default() += 1;
                let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                max.fetch_max(now, Ordering::SeqCst);
                let reply = handler(&target, &headers);
                if !reply.delay.is_zero() {
                    tokio::time::sleep(reply.delay).await;
                }
                in_flight.fetch_sub(1, Ordering::SeqCst);
                served.lock().unwrap().push((began, Instant::now()));
                let mut r = Response::builder().status(StatusCode::from_u16(reply.status).unwrap());
                for (name, value) in &reply.headers {
                    r = r.header(*name, value);
                }
                r.body(Body::from(reply.body)).unwrap()
            }
        });
        runtime.spawn(async move { axum::serve(listener, app).await });
        Self {
            origin,
            hits,
            in_flight,
            max_in_flight,
            served,
            _runtime: runtime,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.origin)
    }

    /// Requests per path-and-query.
    pub fn hits(&self) -> BTreeMap<String, u32> {
        self.hits.lock().unwrap().clone()
    }

    pub fn hit(&self, path: &str) -> u32 {
        self.hits().get(path).copied().unwrap_or(0)
    }

    /// When each request was received and answered.
    pub fn served(&self) -> Vec<(Instant, Instant)> {
        self.served.lock().unwrap().clone()
    }

    /// Most requests the site served at once.
    pub fn max_in_flight(&self) -> usize {
        self.max_in_flight.load(Ordering::SeqCst)
    }
}

/// The `crawler` binary with quiet output, writing to `out`.
pub fn crawler(out: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_crawler"));
    c.arg("--quiet").arg("--out").arg(out);
    c
}

/// Runs a crawl of `seed` with extra `args` to its end.
pub fn crawl(out: &Path, seed: &str, args: &[&str]) -> Output {
    let output = crawler(out).arg(seed).args(args).output().unwrap();
    assert!(
        output.status.success(),
        "crawler failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// `skipped.tsv` as (reason, url) pairs.
pub fn skipped(out: &Path) -> Vec<(String, String)> {
    std::fs::read_to_string(out.join("skipped.tsv"))
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f[0].to_owned(), f[2].to_owned())
        })
        .collect()
}

/// Skipped URLs with `reason`.
pub fn skipped_for(out: &Path, reason: &str) -> Vec<String> {
    skipped(out)
        .into_iter()
        .filter(|(r, _)| r == reason)
        .map(|(_, u)| u)
        .collect()
}

/// Target URIs of the WARC response records, in order.
pub fn warc_responses(out: &Path) -> Vec<String> {
    let data = std::fs::read(out.join("crawl.warc")).unwrap();
    let mut uris = Vec::new();
    let mut pos = 0;
    while pos < data.len() {
        let head_end = find(&data[pos..], b"\r\n\r\n").expect("WARC header") + pos;
        let head = std::str::from_utf8(&data[pos..head_end]).unwrap();
        assert!(
            head.starts_with("WARC/1.1\r\n"),
            "record at {pos} starts with {:?}",
            &head[..head.len().min(20)]
        );
        let field = |name: &str| {
            head.lines()
                .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_owned()))
        };
        let len: usize = field("Content-Length:").unwrap().parse().unwrap();
        if field("WARC-Type:").as_deref() == Some("response") {
            uris.push(field("WARC-Target-URI:").unwrap());
        }
        pos = head_end + 4 + len;
        assert_eq!(&data[pos..pos + 4], b"\r\n\r\n");
        pos += 4;
    }
    uris
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

pub fn temp_out() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    (dir, out)
}

pub fn header_value(headers: &HeaderMap, name: header::HeaderName) -> &str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}
