//! Document 003's Monitor: live counters of one process, its page rate limit, and a small HTTP
//! status endpoint (HTML at `/`, JSON at `/status.json`, `POST /rate?pages_per_sec=N`) that also
//! shows the crawl's shared log stream.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use tokio::time::Instant;

use crate::logger::Logger;

/// Counters of one process, updated without a lock by every spider.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// Responses received (any status, 304 included).
    pub(crate) fetched: AtomicU64,
    /// Responses 304 Not Modified (incremental revisits).
    pub(crate) not_modified: AtomicU64,
    /// New URLs this process pushed to the shared frontier.
    pub(crate) queued: AtomicU64,
    /// Links the shared filter had already seen.
    pub(crate) duplicates: AtomicU64,
    /// Links refused by the trap rules (length, slashes, depth).
    pub(crate) traps: AtomicU64,
    /// Links out of scope, URLs refused by robots.txt, unusable redirects.
    pub(crate) skipped: AtomicU64,
    /// Failed fetches.
    pub(crate) errors: AtomicU64,
    /// Body bytes received.
    pub(crate) bytes: AtomicU64,
    /// Epoch of the partition table this process works by.
    pub(crate) table_epoch: AtomicU64,
    /// Virtual nodes (shards) of the table this process owns now, and the most it owned.
    pub(crate) shards: AtomicU64,
    pub(crate) most_shards: AtomicU64,
}

impl Counters {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }
}

/// A per-process pace: at most `pages_per_sec` fetch starts per second (0: unlimited).
#[derive(Debug)]
pub(crate) struct Pacer {
    per_sec: AtomicU64,
    next: std::sync::Mutex<Instant>,
}

impl Pacer {
    pub(crate) fn new(per_sec: f64) -> Self {
        Self {
            per_sec: AtomicU64::new(per_sec.max(0.0).to_bits()),
            next: std::sync::Mutex::new(Instant::now()),
        }
    }

    pub(crate) fn rate(&self) -> f64 {
        f64::from_bits(self.per_sec.load(Ordering::Relaxed))
    }

    /// Changes the rate; takes effect at the next fetch start.
    pub(crate) fn set_rate(&self, per_sec: f64) {
        self.per_sec.store(per_sec.to_bits(), Ordering::Relaxed);
    }

    /// Waits for this process's next fetch slot.
    pub(crate) async fn wait(&self) {
        if let Some(start) = self.book(Instant::now()) {
            tokio::time::sleep_until(start).await;
        }
    }

    /// Books the next fetch slot at or after `now`; `None` when there is no limit.
    fn book(&self, now: Instant) -> Option<Instant> {
        let rate = self.rate();
        if rate <= 0.0 {
            return None;
        }
        let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
        // A slot not used for a while is not saved up: no burst after an idle spell.
        let start = (*next).max(now);
        *next = start + Duration::from_secs_f64(1.0 / rate);
        Some(start)
    }
}

/// What the status endpoint shows.
#[derive(Debug)]
pub(crate) struct Monitor {
    pub(crate) process: String,
    pub(crate) crawl: String,
    pub(crate) counters: Counters,
    pub(crate) pacer: Pacer,
    pub(crate) logger: Logger,
    pub(crate) started: Instant,
}

#[derive(Debug, serde::Serialize)]
struct Status {
    process: String,
    crawl: String,
    uptime_secs: f64,
    fetched: u64,
    not_modified: u64,
    queued: u64,
    duplicates: u64,
    traps: u64,
    skipped: u64,
    errors: u64,
    bytes: u64,
    pages_per_sec: f64,
    rate_limit: f64,
    table_epoch: u64,
    shards: u64,
    log: Vec<crate::logger::Entry>,
}

impl Monitor {
    async fn status(&self) -> Status {
        let c = &self.counters;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let uptime = self.started.elapsed().as_secs_f64();
        let fetched = load(&c.fetched);
        Status {
            process: self.process.clone(),
            crawl: self.crawl.clone(),
            uptime_secs: uptime,
            fetched,
            not_modified: load(&c.not_modified),
            queued: load(&c.queued),
            duplicates: load(&c.duplicates),
            traps: load(&c.traps),
            skipped: load(&c.skipped),
            errors: load(&c.errors),
            bytes: load(&c.bytes),
            pages_per_sec: if uptime > 0.0 {
                fetched as f64 / uptime
            } else {
                0.0
            },
            rate_limit: self.pacer.rate(),
            table_epoch: load(&c.table_epoch),
            shards: load(&c.shards),
            log: self.logger.recent(20).await,
        }
    }
}

#[derive(Debug, serde::Deserialize)]
struct RateChange {
    pages_per_sec: f64,
}

/// Binds `addr` and serves the status endpoint in the background; returns the bound address.
pub(crate) async fn serve(monitor: Arc<Monitor>, addr: SocketAddr) -> std::io::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let app = axum::Router::new()
        .route("/", get(html))
        .route("/status.json", get(json))
        .route("/rate", post(rate))
        .with_state(monitor);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(bound)
}

async fn json(State(m): State<Arc<Monitor>>) -> impl IntoResponse {
    let body = serde_json::to_string(&m.status().await).unwrap_or_else(|e| format!("{e}"));
    ([(header::CONTENT_TYPE, "application/json")], body)
}

async fn rate(
    State(m): State<Arc<Monitor>>,
    Query(change): Query<RateChange>,
) -> impl IntoResponse {
    if !(change.pages_per_sec.is_finite() && change.pages_per_sec >= 0.0) {
        return (
            StatusCode::BAD_REQUEST,
            "pages_per_sec must be a number >= 0\n".to_owned(),
        );
    }
    m.pacer.set_rate(change.pages_per_sec);
    m.logger.info(&format!(
        "rate limit set to {} pages/s",
        change.pages_per_sec
    ));
    (
        StatusCode::OK,
        format!("rate limit: {} pages/s\n", change.pages_per_sec),
    )
}

async fn html(State(m): State<Arc<Monitor>>) -> impl IntoResponse {
    let s = m.status().await;
    let mut page = format!(
        "<!doctype html><meta charset=utf-8><meta http-equiv=refresh content=2>\
         <title>crawler {p}</title><h1>{p} <small>crawl {c}</small></h1><table>",
        p = escape(&s.process),
        c = escape(&s.crawl)
    );
    let rows: [(&str, String); 13] = [
        ("partition epoch", s.table_epoch.to_string()),
        ("virtual nodes owned", s.shards.to_string()),
        ("fetched", s.fetched.to_string()),
        ("not modified (304)", s.not_modified.to_string()),
        ("queued", s.queued.to_string()),
        ("duplicates avoided", s.duplicates.to_string()),
        ("traps skipped", s.traps.to_string()),
        ("other skips", s.skipped.to_string()),
        ("errors", s.errors.to_string()),
        ("bytes", s.bytes.to_string()),
        ("pages/s", format!("{:.1}", s.pages_per_sec)),
        (
            "rate limit",
            if s.rate_limit > 0.0 {
                format!("{} pages/s", s.rate_limit)
            } else {
                "none".into()
            },
        ),
        ("uptime", format!("{:.0} s", s.uptime_secs)),
    ];
    for (name, value) in rows {
        page.push_str(&format!("<tr><th align=left>{name}<td align=right>{value}"));
    }
    page.push_str(
        "</table><p><small>Change the rate limit (0 = none): \
         <code>curl -X POST 'http://ADDR/rate?pages_per_sec=N'</code>.</small>\
         <h2>log (every process, newest first)</h2><pre>",
    );
    for e in &s.log {
        page.push_str(&escape(&format!(
            "{} {} {}: {}\n",
            e.id, e.level, e.process, e.message
        )));
    }
    page.push_str("</pre>");
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], page)
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pacer_spaces_slots_and_follows_changes() {
        let p = Pacer::new(10.0);
        let t0 = Instant::now();
        let slots: Vec<_> = (0..5).map(|_| p.book(t0).unwrap() - t0).collect();
        let step = Duration::from_millis(100);
        assert_eq!(slots, [0, 1, 2, 3, 4].map(|i| step * i));
        // Idle time is not saved up.
        let later = t0 + Duration::from_secs(5);
        assert_eq!(p.book(later), Some(later));
        p.set_rate(0.0);
        assert_eq!(p.book(later), None);
        p.set_rate(2.0);
        assert_eq!(p.book(later), Some(later + step));
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(escape("<a&b>"), "&lt;a&amp;b&gt;");
    }
}
