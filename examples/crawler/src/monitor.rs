//! Document 003's Monitor: live counters of one process, its page rate limit, and a small HTTP
//! status endpoint (HTML at `/`, JSON at `/status.json`, `POST /rate?pages_per_sec=N`) that also
//! shows the crawl's shared log stream. A single-process crawl serves it too (`--status`
//! without `--redis`): its figures live in the crawl state and are copied in when a status is
//! served.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::error::CrawlError;
use crate::logger::Logger;
use crate::skip::{SkipClass, SkipReason};

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
    /// Links left out for `nofollow`.
    pub(crate) nofollow: AtomicU64,
    /// Links that are no http(s) URL (`mailto:`, `javascript:`, unparsable).
    pub(crate) not_web: AtomicU64,
    /// Links refused by the trap rules (length, slashes, depth).
    pub(crate) traps: AtomicU64,
    /// Links out of scope, URLs refused by robots.txt, unusable redirects.
    pub(crate) skipped: AtomicU64,
    /// Failed fetches.
    pub(crate) errors: AtomicU64,
    /// Body bytes received.
    pub(crate) bytes: AtomicU64,
    /// URLs not followed and failed fetches, per reason (`traps`, `skipped` and `errors` are
    /// its sums by class).
    pub(crate) by_reason: Mutex<BTreeMap<SkipReason, u64>>,
}

impl Counters {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// Replaces the per-reason counts (and their sums) with `counts`.
    pub(crate) fn set_skips(&self, counts: &BTreeMap<SkipReason, u64>) {
        for class in [&self.traps, &self.skipped, &self.errors] {
            class.store(0, Ordering::Relaxed);
        }
        for (&reason, &n) in counts {
            Self::add(self.class(reason), n);
        }
        *self.by_reason.lock().unwrap_or_else(|p| p.into_inner()) = counts.clone();
    }

    fn class(&self, reason: SkipReason) -> &AtomicU64 {
        match reason.class() {
            SkipClass::Trap => &self.traps,
            SkipClass::Error => &self.errors,
            SkipClass::Other => &self.skipped,
        }
    }

    /// The per-reason counts, by reason name.
    pub(crate) fn skips(&self) -> BTreeMap<&'static str, u64> {
        self.by_reason
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(r, n)| (r.name(), *n))
            .collect()
    }
}

/// The largest rate limit accepted, in pages per second: beyond it, a limit limits nothing.
pub(crate) const MAX_RATE: f64 = 1_000_000.0;
/// The smallest rate limit accepted other than 0 (no limit): one page every 1,000 seconds.
pub(crate) const MIN_RATE: f64 = 0.001;

/// Checks a page rate limit (`--rate`, the status page's `POST /rate`): 0 for none, or
/// between [`MIN_RATE`] and [`MAX_RATE`] pages per second.
pub(crate) fn check_rate(per_sec: f64) -> Result<f64, String> {
    if per_sec == 0.0 || (MIN_RATE..=MAX_RATE).contains(&per_sec) {
        Ok(per_sec)
    } else {
        Err(format!(
            "{per_sec} is not a rate limit: give 0 (no limit) or a number of pages per second \
             from {MIN_RATE} to {MAX_RATE}"
        ))
    }
}

/// A per-process pace: at most `pages_per_sec` fetch starts per second (0: unlimited).
#[derive(Debug)]
pub(crate) struct Pacer {
    per_sec: AtomicU64,
    next: Mutex<Instant>,
    /// Wakes the fetches waiting for a slot when the rate changes.
    changed: Notify,
}

impl Pacer {
    pub(crate) fn new(per_sec: f64) -> Self {
        Self {
            per_sec: AtomicU64::new(per_sec.max(0.0).to_bits()),
            next: Mutex::new(Instant::now()),
            changed: Notify::new(),
        }
    }

    pub(crate) fn rate(&self) -> f64 {
        f64::from_bits(self.per_sec.load(Ordering::Relaxed))
    }

    /// Changes the rate at once: slots booked at the old rate are given up, and the fetches
    /// waiting for them book again at the new one (so lifting a limit of one page a minute does
    /// not leave the waiting fetches asleep for minutes).
    pub(crate) fn set_rate(&self, per_sec: f64) {
        self.per_sec.store(per_sec.to_bits(), Ordering::Relaxed);
        *self.next.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
        self.changed.notify_waiters();
    }

    /// Waits for this process's next fetch slot.
    pub(crate) async fn wait(&self) {
        loop {
            // Registered before booking, so a change between booking and sleeping still wakes
            // this fetch.
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let Some(start) = self.book(Instant::now()) else {
                return;
            };
            tokio::select! {
                () = tokio::time::sleep_until(start) => return,
                () = &mut changed => {}
            }
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
        *next = start + interval(rate);
        Some(start)
    }
}

/// The time between two fetch starts at `rate` pages per second, for any positive rate: a rate
/// checked by [`check_rate`] gives 1 µs to 1,000 s, and anything else is held to that range
/// rather than overflowing a `Duration`.
fn interval(rate: f64) -> Duration {
    let secs = (1.0 / rate).clamp(1.0 / MAX_RATE, 1.0 / MIN_RATE);
    Duration::try_from_secs_f64(secs).unwrap_or(Duration::from_secs(1000))
}

/// Copies the run's figures (kept in its records) into the counters.
pub(crate) type Refresh = Box<dyn Fn(&Counters) + Send + Sync>;

/// What the status endpoint shows.
pub(crate) struct Monitor {
    pub(crate) process: String,
    pub(crate) crawl: String,
    /// Whether this process shares its crawl through Redis (it then has a partition table).
    pub(crate) shared: bool,
    pub(crate) counters: Counters,
    pub(crate) pacer: Arc<Pacer>,
    pub(crate) logger: Logger,
    /// What the backend adds (a shared crawl's Redis figures), refreshed every few seconds.
    backend: Mutex<serde_json::Value>,
    pub(crate) started: Instant,
    /// Copies the run's figures into `counters` before a status is served.
    pub(crate) refresh: OnceLock<Refresh>,
}

impl std::fmt::Debug for Monitor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Monitor")
            .field("process", &self.process)
            .field("crawl", &self.crawl)
            .field("shared", &self.shared)
            .field("counters", &self.counters)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, serde::Serialize)]
struct Status {
    process: String,
    crawl: String,
    mode: &'static str,
    uptime_secs: f64,
    fetched: u64,
    not_modified: u64,
    queued: u64,
    duplicates: u64,
    nofollow: u64,
    not_web: u64,
    traps: u64,
    skipped: u64,
    errors: u64,
    bytes: u64,
    pages_per_sec: f64,
    rate_limit: f64,
    /// What the backend adds: a shared crawl's Redis commands run per page (crawl-wide,
    /// those inside scripts included) and this process's calls to Redis per page.
    #[serde(flatten)]
    backend: serde_json::Map<String, serde_json::Value>,
    /// Distinct URLs not followed and failed fetches, per reason.
    skips: BTreeMap<&'static str, u64>,
    log: Vec<crate::logger::Entry>,
}

impl Monitor {
    /// A monitor for this process, pacing fetches at `rate` pages per second (0: no limit);
    /// `shared` when it shares its crawl through Redis.
    pub(crate) fn new(
        process: String,
        crawl: String,
        shared: bool,
        rate: f64,
        logger: Logger,
    ) -> Self {
        Self {
            process,
            crawl,
            shared,
            counters: Counters::default(),
            pacer: Arc::new(Pacer::new(rate)),
            logger,
            backend: Mutex::new(serde_json::json!({})),
            started: Instant::now(),
            refresh: OnceLock::new(),
        }
    }

    /// Records the backend's latest figures (a JSON object), shown on the status page.
    pub(crate) fn set_backend_figures(&self, figures: serde_json::Value) {
        *self.backend.lock().unwrap_or_else(|p| p.into_inner()) = figures;
    }

    async fn status(&self) -> Status {
        if let Some(refresh) = self.refresh.get() {
            refresh(&self.counters);
        }
        let c = &self.counters;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let uptime = self.started.elapsed().as_secs_f64();
        let fetched = load(&c.fetched);
        let backend = match &*self.backend.lock().unwrap_or_else(|p| p.into_inner()) {
            serde_json::Value::Object(m) => m.clone(),
            _ => serde_json::Map::new(),
        };
        Status {
            process: self.process.clone(),
            crawl: self.crawl.clone(),
            mode: if self.shared { "shared" } else { "local" },
            uptime_secs: uptime,
            fetched,
            not_modified: load(&c.not_modified),
            queued: load(&c.queued),
            duplicates: load(&c.duplicates),
            nofollow: load(&c.nofollow),
            not_web: load(&c.not_web),
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
            backend,
            skips: c.skips(),
            log: self.logger.recent(20).await,
        }
    }
}

#[derive(Debug, serde::Deserialize)]
struct RateChange {
    pages_per_sec: f64,
}

/// Serves the status endpoint on `addr` in the background and says where on standard error
/// (`status page: http://ADDR/`; port 0 picks a free port).
pub(crate) async fn start(monitor: Arc<Monitor>, addr: SocketAddr) -> Result<(), CrawlError> {
    let bound = serve(monitor, addr)
        .await
        .map_err(CrawlError::io("binding status address", addr.to_string()))?;
    eprintln!("status page: http://{bound}/");
    Ok(())
}

/// Binds `addr` and serves the status endpoint in the background; returns the bound address.
async fn serve(monitor: Arc<Monitor>, addr: SocketAddr) -> std::io::Result<SocketAddr> {
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
    let per_sec = match check_rate(change.pages_per_sec) {
        Ok(r) => r,
        Err(e) => return (StatusCode::BAD_REQUEST, format!("pages_per_sec: {e}\n")),
    };
    m.pacer.set_rate(per_sec);
    m.logger
        .info(&format!("rate limit set to {per_sec} pages/s"));
    (StatusCode::OK, format!("rate limit: {per_sec} pages/s\n"))
}

async fn html(State(m): State<Arc<Monitor>>) -> impl IntoResponse {
    let s = m.status().await;
    let mut page = format!(
        "<!doctype html><meta charset=utf-8><meta http-equiv=refresh content=2>\
         <title>crawler {p}</title><h1>{p} <small>crawl {c}</small></h1><table>",
        p = escape(&s.process),
        c = escape(&s.crawl)
    );
    let mut rows: Vec<(&str, String)> = Vec::new();
    if m.shared {
        let figure = |key: &str| {
            s.backend
                .get(key)
                .and_then(serde_json::Value::as_f64)
                .map_or("not known yet".to_owned(), |n| format!("{n:.2}"))
        };
        rows.push((
            "Redis calls per page (this process, one round trip each)",
            figure("redis_calls_per_page"),
        ));
        rows.push((
            "Redis commands run per page (crawl-wide, inside scripts too)",
            figure("redis_commands_per_page"),
        ));
    }
    rows.extend([
        ("fetched", s.fetched.to_string()),
        ("not modified (304)", s.not_modified.to_string()),
        ("queued", s.queued.to_string()),
        ("duplicates avoided", s.duplicates.to_string()),
        ("nofollow links", s.nofollow.to_string()),
        ("links to no web URL", s.not_web.to_string()),
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
    ]);
    for (name, value) in rows {
        page.push_str(&format!("<tr><th align=left>{name}<td align=right>{value}"));
    }
    for (reason, n) in &s.skips {
        page.push_str(&format!("<tr><td>&nbsp;&nbsp;{reason}<td align=right>{n}"));
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
        // A change gives up the slots booked at the old rate.
        p.set_rate(2.0);
        assert_eq!(p.book(later), Some(later));
        assert_eq!(p.book(later), Some(later + step * 5));
    }

    impl Pacer {
        /// When the last booked slot ends.
        fn booked_until(&self) -> Instant {
            *self.next.lock().unwrap()
        }
    }

    /// A fetch waiting for its slot at the old rate starts at the new one: no (virtual) time
    /// passes when the limit is lifted, or raised, while it waits.
    #[tokio::test(start_paused = true)]
    async fn a_rate_change_reaches_the_fetches_already_waiting() {
        for new_rate in [0.0, 50.0] {
            let p = Arc::new(Pacer::new(0.01)); // one start per 100 s
            p.wait().await;
            let t0 = Instant::now();
            let waiter = tokio::spawn({
                let p = p.clone();
                async move {
                    p.wait().await;
                    Instant::now()
                }
            });
            // The waiter has booked its slot 100 s out and sleeps.
            while p.booked_until() < t0 + Duration::from_secs(200) {
                tokio::task::yield_now().await;
            }
            p.set_rate(new_rate);
            assert_eq!(waiter.await.unwrap(), t0, "rate {new_rate}");
        }
    }

    proptest::proptest! {
        /// Any rate at all, checked or not, books slots without panicking and no further
        /// apart than the slowest rate accepted; a rate the checks refuse never reaches here
        /// from an option or the status page.
        #[test]
        fn the_pacer_takes_any_rate(rate in proptest::num::f64::ANY) {
            let p = Pacer::new(rate);
            let t0 = Instant::now();
            if let (Some(a), Some(b)) = (p.book(t0), p.book(t0)) {
                proptest::prop_assert!(b - a <= Duration::from_secs(1000));
                proptest::prop_assert!(b > a);
            }
            p.set_rate(rate);
            let _ = p.book(t0);
            let accepted = check_rate(rate).is_ok();
            proptest::prop_assert_eq!(
                accepted,
                rate == 0.0 || (MIN_RATE..=MAX_RATE).contains(&rate)
            );
        }
    }

    #[test]
    fn extreme_rates_are_refused_with_the_range() {
        for bad in [1e-300, -1.0, f64::NAN, f64::INFINITY, 1e7, 1e-4] {
            let e = check_rate(bad).unwrap_err();
            assert!(e.contains("from 0.001 to 1000000"), "{bad}: {e}");
        }
        for good in [0.0, 0.001, 1.0, 1e6] {
            assert_eq!(check_rate(good), Ok(good));
        }
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(escape("<a&b>"), "&lt;a&amp;b&gt;");
    }
}
