//! The status page's HTTP endpoint, and the rules that keep other web pages out of it.
//!
//! A page the person has open in the same browser can send requests to a loopback address,
//! and a DNS-rebinding page can even read the answers. So:
//!
//! * every request must name the bound address in `Host` (its IP, or `localhost` for a
//!   loopback address; any IP for an unspecified one), with the bound port; a name that DNS
//!   could point here gets 421 Misdirected Request and no data;
//! * a request that changes the crawl (`POST /rate`) must come from this page's own origin
//!   (`Origin`, `Sec-Fetch-Site`; 403 otherwise) and carry the run's token (401 otherwise),
//!   in `Authorization: Bearer TOKEN` or the form's `token` field; its values are
//!   range-checked (400);
//! * a CORS preflight (`OPTIONS`) is answered without any `Access-Control-Allow-*`, so no
//!   other origin may send a request with a token header, or read an answer;
//! * every answer forbids framing, sniffing, caching and referrers.
//!
//! The token is drawn at start (256 random bits), printed on standard error next to the
//! address, and written to a file in `--out` that only its owner can read.

use std::io::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{RawQuery, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;

use super::{Monitor, check_rate, page};
use crate::error::CrawlError;

/// What every answer carries: no framing, no sniffing, no caching, no referrer, no script.
const HARDENING: [(&str, &str); 5] = [
    ("cache-control", "no-store"),
    ("x-content-type-options", "nosniff"),
    ("x-frame-options", "DENY"),
    ("referrer-policy", "no-referrer"),
    (
        "content-security-policy",
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; \
         frame-ancestors 'none'; base-uri 'none'",
    ),
];

/// The rules of one served page: its address and its run's token.
#[derive(Debug)]
pub(crate) struct Guard {
    bound: SocketAddr,
    token: String,
}

impl Guard {
    /// Whether `host` (a `Host` header) names the bound address.
    fn host_ok(&self, host: &str) -> bool {
        let (name, port) = match host.rsplit_once(':') {
            // An IPv6 literal without a port ends with its bracket.
            Some((name, port)) if !port.contains(']') => (name, port.parse::<u16>().ok()),
            _ => (host, Some(80)),
        };
        if port != Some(self.bound.port()) {
            return false;
        }
        let bound = self.bound.ip();
        if name.eq_ignore_ascii_case("localhost") {
            return bound.is_loopback() || bound.is_unspecified();
        }
        // A name is refused even when it resolves here: DNS rebinding uses exactly that.
        let ip = match name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
            Some(v6) => v6.parse::<std::net::Ipv6Addr>().map(IpAddr::V6),
            None => name.parse::<std::net::Ipv4Addr>().map(IpAddr::V4),
        };
        ip.is_ok_and(|ip| ip == bound || bound.is_unspecified())
    }

    /// Whether a request comes from this page's own origin (or from no page at all: a
    /// command-line client sends neither header). `host` was checked.
    fn same_origin(&self, headers: &HeaderMap, host: &str) -> Result<(), String> {
        if let Some(site) = headers.get("sec-fetch-site") {
            let site = site.to_str().unwrap_or("?");
            if !matches!(site, "same-origin" | "none") {
                return Err(format!(
                    "this request came from another site (Sec-Fetch-Site: {site}); only the \
                     status page itself, or a client outside the browser, may change the crawl"
                ));
            }
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("?");
            if !origin.eq_ignore_ascii_case(&format!("http://{host}")) {
                return Err(format!(
                    "this request came from {origin}; only http://{host} may change the crawl"
                ));
            }
        }
        Ok(())
    }

    /// Whether `given` is the run's token, compared in constant time.
    fn token_ok(&self, given: Option<&str>) -> bool {
        let Some(given) = given else {
            return false;
        };
        let (a, b) = (given.trim().as_bytes(), self.token.as_bytes());
        a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }
}

/// What the handlers share.
#[derive(Debug)]
struct Served {
    monitor: Arc<Monitor>,
    guard: Guard,
}

/// Serves the status page on `addr` in the background, with a new token written to `out`,
/// and says where on standard error (`status page: http://ADDR/ ...`; port 0 picks a free
/// port).
pub(crate) async fn start(
    monitor: Arc<Monitor>,
    addr: SocketAddr,
    out: &Path,
) -> Result<(), CrawlError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(CrawlError::io("binding status address", addr.to_string()))?;
    let bound = listener
        .local_addr()
        .map_err(CrawlError::io("binding status address", addr.to_string()))?;
    let token = new_token()?;
    let file = out.join(if monitor.shared {
        format!("status-token-{}", monitor.process)
    } else {
        "status-token".to_owned()
    });
    write_token(&file, &token)?;
    eprintln!(
        "status page: http://{bound}/ (token for changes: {token}, also in {})",
        file.display()
    );
    monitor
        .logger
        .info(&format!("status page at http://{bound}/"));
    let _ = monitor.served_at.set(bound);
    let served = Arc::new(Served {
        monitor,
        guard: Guard { bound, token },
    });
    let app = axum::Router::new()
        .route("/", get(html))
        .route("/status.json", get(json))
        .route("/rate", get(rate_form).post(rate))
        .layer(middleware::from_fn_with_state(served.clone(), guard))
        .with_state(served);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(())
}

/// 256 random bits, as hex.
fn new_token() -> Result<String, CrawlError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|e| CrawlError::Options(format!("no randomness for the status token: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Writes the token to `path`, readable by its owner only. A file of an earlier run is
/// removed first (removing a symbolic link removes the link, not its target); the new file is
/// created with `O_CREAT | O_EXCL`, which fails on any existing path, a symbolic link
/// included, so nothing is ever written through a link.
fn write_token(path: &Path, token: &str) -> Result<PathBuf, CrawlError> {
    let fail = CrawlError::io("writing the status token", path);
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(fail(e)),
        _ => {}
    }
    create_private(path, format!("{token}\n").as_bytes())
        .map_err(CrawlError::io("writing the status token", path))?;
    Ok(path.to_owned())
}

/// Creates `path` with `contents`, mode 0600; fails if anything is there already, a symbolic
/// link included (`O_EXCL` does not follow links), so a link planted meanwhile is an error,
/// not a write elsewhere.
fn create_private(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(contents)
}

/// The rules every request meets first: the `Host` check, the answer to a preflight, and the
/// hardening headers.
async fn guard(State(s): State<Arc<Served>>, request: Request, next: Next) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    let mut response = if !s.guard.host_ok(host) {
        (
            StatusCode::MISDIRECTED_REQUEST,
            format!(
                "this status page answers to http://{}/ only (the Host header named {host:?})\n",
                s.guard.bound
            ),
        )
            .into_response()
    } else if request.method() == Method::OPTIONS {
        // A preflight: allowed methods, and no Access-Control-Allow-* at all.
        (
            StatusCode::NO_CONTENT,
            [(header::ALLOW, "GET, HEAD, POST, OPTIONS")],
        )
            .into_response()
    } else {
        next.run(request).await
    };
    let headers = response.headers_mut();
    for (name, value) in HARDENING {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

async fn json(State(s): State<Arc<Served>>) -> impl IntoResponse {
    let body = serde_json::to_string(&s.monitor.status().await).unwrap_or_else(|e| format!("{e}"));
    ([(header::CONTENT_TYPE, "application/json")], body)
}

async fn html(State(s): State<Arc<Served>>) -> impl IntoResponse {
    let page = page::render(&s.monitor.status().await);
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], page)
}

async fn rate_form(State(s): State<Arc<Served>>) -> impl IntoResponse {
    let page = page::rate_form(&s.monitor.status().await);
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], page)
}

/// `POST /rate`: `pages_per_sec` in the query or a form body, the token in
/// `Authorization: Bearer` or the form's `token` field.
async fn rate(
    State(s): State<Arc<Served>>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Response {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    if let Err(why) = s.guard.same_origin(&headers, host) {
        return (StatusCode::FORBIDDEN, format!("{why}\n")).into_response();
    }
    let form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|t| t.to_str().ok())
        .is_some_and(|t| t.starts_with("application/x-www-form-urlencoded"));
    let mut fields: Vec<(String, String)> = query
        .as_deref()
        .map(|q| {
            url::form_urlencoded::parse(q.as_bytes())
                .into_owned()
                .collect()
        })
        .unwrap_or_default();
    if form {
        fields.extend(url::form_urlencoded::parse(&body).into_owned());
    }
    let field = |name: &str| {
        fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if !s.guard.token_ok(bearer.or(field("token"))) {
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "changing the crawl needs this run's token (printed at start, and in the \
             status-token file of the output directory): send it as \
             'Authorization: Bearer TOKEN'\n",
        )
            .into_response();
    }
    let Some(value) = field("pages_per_sec") else {
        return (StatusCode::BAD_REQUEST, "pages_per_sec: missing\n").into_response();
    };
    let per_sec = match value
        .trim()
        .parse::<f64>()
        .map_err(|e| e.to_string())
        .and_then(check_rate)
    {
        Ok(r) => r,
        Err(e) => {
            return (StatusCode::BAD_REQUEST, format!("pages_per_sec: {e}\n")).into_response();
        }
    };
    s.monitor.pacer.set_rate(per_sec);
    s.monitor
        .logger
        .info(&format!("rate limit set to {per_sec} pages/s"));
    if form {
        // Back to the console, which shows the new limit.
        Redirect::to("/").into_response()
    } else {
        (StatusCode::OK, format!("rate limit: {per_sec} pages/s\n")).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(bound: &str) -> Guard {
        Guard {
            bound: bound.parse().unwrap(),
            token: "ab".repeat(32),
        }
    }

    /// The `Host` header must name the bound address; names (which DNS can point anywhere)
    /// never pass, except `localhost` for a loopback address.
    #[test]
    fn only_the_bound_address_passes_the_host_check() {
        let cases: [(&str, &[&str], &[&str]); 4] = [
            (
                "127.0.0.1:8080",
                &["127.0.0.1:8080", "localhost:8080", "LOCALHOST:8080"],
                &[
                    "evil.example:8080",
                    "127.0.0.1:8081",
                    "127.0.0.2:8080",
                    "127.0.0.1",
                    "",
                    "localhost",
                    "127.0.0.1.nip.io:8080",
                ],
            ),
            (
                "[::1]:9000",
                &["[::1]:9000", "localhost:9000"],
                &["[::2]:9000", "::1:9000", "evil.example:9000"],
            ),
            (
                "0.0.0.0:8080",
                &["192.0.2.7:8080", "localhost:8080", "127.0.0.1:8080"],
                &["crawler.example:8080", "192.0.2.7:80"],
            ),
            (
                "192.0.2.7:80",
                &["192.0.2.7", "192.0.2.7:80"],
                &["localhost", "192.0.2.8", "evil.example"],
            ),
        ];
        for (bound, good, bad) in cases {
            let g = guard(bound);
            for host in good {
                assert!(g.host_ok(host), "{bound}: {host} refused");
            }
            for host in bad {
                assert!(!g.host_ok(host), "{bound}: {host} let through");
            }
        }
    }

    #[test]
    fn only_the_pages_own_origin_may_change_the_crawl() {
        let g = guard("127.0.0.1:8080");
        let host = "127.0.0.1:8080";
        let with = |pairs: &[(&'static str, &'static str)]| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.insert(*k, HeaderValue::from_static(v));
            }
            g.same_origin(&h, host)
        };
        assert!(with(&[]).is_ok(), "a client outside the browser");
        assert!(
            with(&[
                ("origin", "http://127.0.0.1:8080"),
                ("sec-fetch-site", "same-origin")
            ])
            .is_ok()
        );
        assert!(
            with(&[("sec-fetch-site", "none")]).is_ok(),
            "typed by the person"
        );
        for refused in [
            vec![("origin", "http://evil.example")],
            vec![("origin", "null")],
            vec![("origin", "https://127.0.0.1:8080")],
            vec![("sec-fetch-site", "cross-site")],
            vec![("sec-fetch-site", "same-site")],
            vec![
                ("origin", "http://127.0.0.1:8080"),
                ("sec-fetch-site", "cross-site"),
            ],
        ] {
            assert!(with(&refused).is_err(), "{refused:?}");
        }
    }

    #[test]
    fn the_token_must_match_exactly() {
        let g = guard("127.0.0.1:8080");
        assert!(g.token_ok(Some(&"ab".repeat(32))));
        assert!(g.token_ok(Some(&format!("{}\n", "ab".repeat(32)))));
        for wrong in [
            "",
            "ab",
            &"ab".repeat(31),
            &format!("{}ac", "ab".repeat(31)),
            &"ab".repeat(33),
        ] {
            assert!(!g.token_ok(Some(wrong)), "{wrong}");
        }
        assert!(!g.token_ok(None));
    }

    #[test]
    fn tokens_are_new_each_time_and_written_for_the_owner_only() {
        use std::os::unix::fs::{PermissionsExt, symlink};
        let (a, b) = (new_token().unwrap(), new_token().unwrap());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("status-token");
        write_token(&path, &a).unwrap();
        // The next run replaces it.
        write_token(&path, &b).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), format!("{b}\n"));
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        // A link planted at the name is removed, and its target left alone.
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, "keep").unwrap();
        std::fs::remove_file(&path).unwrap();
        symlink(&target, &path).unwrap();
        write_token(&path, &a).unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        assert!(
            !std::fs::symlink_metadata(&path)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        // A link planted between the removal and the creation makes the creation fail,
        // whether it points at a file or at nothing.
        for (name, to) in [
            ("live", target.clone()),
            ("dangling", dir.path().join("nothing")),
        ] {
            let link = dir.path().join(name);
            symlink(&to, &link).unwrap();
            let e = create_private(&link, b"secret").unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists, "{name}");
        }
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        assert!(!dir.path().join("nothing").exists());
    }
}
