//! A local test site (axum on 127.0.0.1, port 0) that records every request, and a runner for
//! the real `crawler` binary.
#![allow(dead_code, unreachable_pub)]

pub mod shared;

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
    /// The reply is sent only once this gate is open.
    pub hold: Option<Gate>,
}

/// A gate replies can wait behind: closed until [`Gate::open`], then open for good.
#[derive(Clone)]
pub struct Gate(Arc<tokio::sync::watch::Sender<bool>>);

impl Default for Gate {
    fn default() -> Self {
        Self(Arc::new(tokio::sync::watch::Sender::new(false)))
    }
}

impl Gate {
    pub fn open(&self) {
        self.0.send_replace(true);
    }

    async fn passed(&self) {
        let mut open = self.0.subscribe();
        let _ = open.wait_for(|o| *o).await;
    }
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
            hold: None,
        }
    }
    pub fn redirect(to: impl Into<String>) -> Self {
        Self {
            status: 301,
            headers: vec![("location", to.into())],
            body: Vec::new(),
            delay: Duration::ZERO,
            hold: None,
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
    /// Sent only once `gate` is open.
    pub fn held(mut self, gate: &Gate) -> Self {
        self.hold = Some(gate.clone());
        self
    }
}

type Handler = dyn Fn(&str, &HeaderMap) -> Reply + Send + Sync;

/// A running test site.
pub struct Site {
    pub origin: String,
    /// Every listening address, `origin` first ([`Site::start_ports`]).
    pub origins: Vec<String>,
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
        Self::start_ports(1, handler)
    }

    /// [`Site::start`] on `ports` ports at once, each a host of its own to a crawler (hosts
    /// are `address:port`); the handler sees the `Host` header among the headers.
    pub fn start_ports(
        ports: usize,
        handler: impl Fn(&str, &HeaderMap) -> Reply + Send + Sync + 'static,
    ) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let listeners: Vec<_> = (0..ports)
            .map(|_| {
                runtime
                    .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
                    .unwrap()
            })
            .collect();
        let origins: Vec<String> = listeners
            .iter()
            .map(|l| format!("http://{}", l.local_addr().unwrap()))
            .collect();
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
                if let Some(gate) = &reply.hold {
                    gate.passed().await;
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
        for listener in listeners {
            let app = app.clone();
            runtime.spawn(async move { axum::serve(listener, app).await });
        }
        Self {
            origin: origins[0].clone(),
            origins,
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
    /// Requests received and not yet answered.
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

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

/// Runs a crawl of `seed` with extra `args` to its end, which must be a success.
pub fn crawl(out: &Path, seed: &str, args: &[&str]) -> Output {
    crawl_ending(out, seed, args, 0)
}

/// Runs a crawl of `seed` with extra `args` to its end, which must be exit status `code`.
pub fn crawl_ending(out: &Path, seed: &str, args: &[&str], code: i32) -> Output {
    let output = crawler(out).arg(seed).args(args).output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(code),
        "crawler ended otherwise: {}\n{}",
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

/// The files of `dir` whose names start with `prefix`, sorted.
pub fn files_starting(dir: &Path, prefix: &str) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
        })
        .collect();
    files.sort();
    files
}

/// Skipped URLs with `reason`.
pub fn skipped_for(out: &Path, reason: &str) -> Vec<String> {
    skipped(out)
        .into_iter()
        .filter(|(r, _)| r == reason)
        .map(|(_, u)| u)
        .collect()
}

/// The WARC files of `out`: `crawl.warc` of a single-process crawl, `crawl-PROCESS.warc` of
/// a process of a shared one.
pub fn warc_files(out: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with("crawl") && name.ends_with(".warc")
        })
        .collect();
    files.sort();
    files
}

/// Target URIs of the WARC response records, in order, over every WARC file of `out`.
pub fn warc_responses(out: &Path) -> Vec<String> {
    let files = warc_files(out);
    assert!(!files.is_empty(), "no WARC file in {}", out.display());
    files
        .iter()
        .flat_map(|f| warc_responses_in(&std::fs::read(f).unwrap()))
        .collect()
}

fn warc_responses_in(data: &[u8]) -> Vec<String> {
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

/// Sends signal `name` (`INT`, `TERM`) to a running process.
pub fn signal(child: &std::process::Child, name: &str) {
    let status = Command::new("kill")
        .arg(format!("-{name}"))
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(status.success(), "kill -{name} failed");
}

/// The lines a child writes to a pipe, read on a thread as they come.
pub struct Lines {
    rx: std::sync::mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Lines {
    pub fn new(pipe: impl std::io::Read + Send + 'static) -> Self {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufRead::lines(std::io::BufReader::new(pipe)) {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            rx,
            seen: Vec::new(),
        }
    }

    /// Waits (at most `limit`, a guard against hangs) for a line containing `needle`.
    pub fn wait_for(&mut self, needle: &str, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(l) = self.seen.iter().find(|l| l.contains(needle)) {
                return l.clone();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(line) => self.seen.push(line),
                Err(_) => panic!("no line with {needle:?} within {limit:?}: {:?}", self.seen),
            }
        }
    }

    /// Every line read so far and until the pipe closes.
    pub fn all(mut self) -> String {
        self.seen.extend(self.rx.iter());
        self.seen.join("\n")
    }
}

/// Waits for a child to exit, killing it and failing when it has not after `limit` (a guard
/// against hangs, not a timing assertion).
pub fn wait_exit(child: &mut std::process::Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the crawler did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Polls `done` until it holds, failing after `limit` (a guard against hangs).
pub fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(
            Instant::now() < deadline,
            "condition not reached in {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// One HTTP/1.1 request to `addr`; the status code and the body.
pub fn http(addr: &str, method: &str, path: &str) -> (u16, String) {
    let a = request(addr, method, path, addr, &[], "");
    (a.status, a.body)
}

/// An HTTP answer.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    /// Header lines, names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One HTTP/1.1 request to `addr` naming `host` in `Host`, with `headers` and `body`.
pub fn request(
    addr: &str,
    method: &str,
    path: &str,
    host: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Answer {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    s.write_all(head.as_bytes()).unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Answer {
        status,
        headers,
        body: body.to_owned(),
    }
}

/// A crawler's status page: where it is served and the run's token.
#[derive(Debug, Clone)]
pub struct StatusPage {
    pub addr: String,
    pub token: String,
    pub token_file: PathBuf,
}

impl StatusPage {
    /// Waits for the crawler's announcement on its standard error:
    /// `status page: http://ADDR/ (token for changes: TOKEN, also in FILE)`.
    pub fn announced(stderr: &mut Lines) -> Self {
        let line = stderr.wait_for("status page: http://", Duration::from_secs(60));
        let rest = line.split("http://").nth(1).unwrap();
        let (addr, rest) = rest.split_once('/').unwrap();
        let token = rest.split("token for changes: ").nth(1).unwrap();
        let (token, file) = token.split_once(", also in ").unwrap();
        Self {
            addr: addr.to_owned(),
            token: token.to_owned(),
            token_file: PathBuf::from(file.trim_end_matches(')')),
        }
    }

    /// The page served on `addr` by the process writing to `out`, its token read from the
    /// `status-token*` file there (waited for).
    pub fn in_dir(addr: &str, out: &Path) -> Self {
        let mut found = None;
        wait_until(Duration::from_secs(60), || {
            found = std::fs::read_dir(out).ok().and_then(|entries| {
                entries.filter_map(Result::ok).map(|e| e.path()).find(|p| {
                    p.file_name()
                        .unwrap()
                        .to_string_lossy()
                        .starts_with("status-token")
                })
            });
            found
                .as_ref()
                .is_some_and(|f| std::fs::read_to_string(f).is_ok_and(|t| t.ends_with('\n')))
        });
        let token_file = found.unwrap();
        Self {
            addr: addr.to_owned(),
            token: std::fs::read_to_string(&token_file)
                .unwrap()
                .trim()
                .to_owned(),
            token_file,
        }
    }

    /// A GET as a browser of this page sends it.
    pub fn get(&self, path: &str) -> Answer {
        request(&self.addr, "GET", path, &self.addr, &[], "")
    }

    /// `/status.json`, which must answer.
    pub fn status(&self) -> serde_json::Value {
        let a = self.get("/status.json");
        assert_eq!(a.status, 200, "{}", a.body);
        serde_json::from_str(&a.body).unwrap()
    }

    /// `POST /rate?pages_per_sec=VALUE` with the token, as a command-line client sends it.
    pub fn set_rate(&self, value: &str) -> Answer {
        let bearer = format!("Bearer {}", self.token);
        request(
            &self.addr,
            "POST",
            &format!("/rate?pages_per_sec={value}"),
            &self.addr,
            &[("Authorization", &bearer)],
            "",
        )
    }
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
