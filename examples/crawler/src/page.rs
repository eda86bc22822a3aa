//! What happens to one job: fetch, then follow the redirect or read the page (its links and
//! requisites, its mirror copy). The answer is a value ([`Fetched`]); recording it and
//! admitting its links is the engine's next step, so a page never calls back into the crawl.

use reqwest::header;
use url::Url;

use crate::admission::{Candidate, Rules};
use crate::budget::Cut;
use crate::canonical::Canonicalizer;
use crate::charset::{self, Syntax};
use crate::error::CrawlError;
use crate::fetch::{BodyLimit, Exchange, Fetcher, Retry};
use crate::job::{Job, JobKind};
use crate::kernel::{Kernel, Kernels, Response};
use crate::links::{LinkKind, Rewrite};
use crate::mirror;
use crate::monitor::Pacer;
use crate::options::CrawlConfig;
use crate::skip::SkipReason;

/// What fetching and reading a page needs; shared by every fetch task.
pub(crate) struct Context {
    pub(crate) config: CrawlConfig,
    pub(crate) canon: Canonicalizer,
    pub(crate) fetcher: Fetcher,
    pub(crate) kernels: Kernels,
    /// This process's page rate limit.
    pub(crate) pacer: std::sync::Arc<Pacer>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// What came of one job: the response (none when the fetch failed), the links found, and
/// what went wrong. The engine records it and offers the links to the admission rules.
#[derive(Debug)]
pub(crate) struct Fetched {
    pub(crate) job: Job,
    pub(crate) exchange: Option<Exchange>,
    pub(crate) links: Vec<Candidate>,
    /// Why the job gave no page, or what of it was cut.
    pub(crate) problem: Option<(SkipReason, String)>,
    /// The decoded body's XXH3 hash, and whether it had to be decoded.
    pub(crate) body: Option<(u64, bool)>,
    /// Links left out for `nofollow`, and for being no web URL.
    pub(crate) unfollowed: (u64, u64),
    /// A copy was written to the mirror.
    pub(crate) mirrored: bool,
    /// A failure that stops the crawl (the mirror cannot be written).
    pub(crate) fatal: Option<CrawlError>,
    /// Times the fetch was tried again after a passing failure.
    pub(crate) retries: u32,
    /// The page's fingerprints, for an HTML page of a crawl that learns (`--learn`).
    pub(crate) fingerprint: Option<url_dedup_fingerprint::PageFingerprint>,
}

impl Fetched {
    /// A job that gave no response.
    pub(crate) fn failed(job: Job, reason: SkipReason, detail: String) -> Self {
        Self {
            job,
            exchange: None,
            links: Vec::new(),
            problem: Some((reason, detail)),
            body: None,
            unfollowed: (0, 0),
            mirrored: false,
            fatal: None,
            retries: 0,
            fingerprint: None,
        }
    }
}

/// Fetches and reads `job`.
///
/// `host_slot` is dropped as soon as the response is in: politeness limits requests to the
/// host, and parsing and storing need not hold the host's slot, so the host's next request
/// overlaps with this page's processing.
pub(crate) async fn process<S: Send>(ctx: &Context, job: Job, host_slot: S) -> Fetched {
    let config = &ctx.config;
    let Ok(url) = Url::parse(&job.url) else {
        return Fetched::failed(job, SkipReason::BadUrl, "does not parse".into());
    };
    failpoint(&job);
    ctx.pacer.wait().await;
    // A seed is fetched whatever its type, so a feed or a sitemap given as a seed is read by
    // its kernel; links are refused on their headers when their type is not accepted.
    let filter_type = job.kind == JobKind::Page && job.depth > 0;
    // A passing failure is tried again after a wait, holding the host's slot: a server that
    // answered 503 or 429 gets no other request from this crawl meanwhile.
    let retry = config.retry;
    let mut retries = 0;
    let fetched = loop {
        let fetched = ctx
            .fetcher
            .get_if_changed(
                &url,
                BodyLimit::Refuse(config.fetch.max_body),
                filter_type,
                job.revisit.as_ref(),
            )
            .await;
        let again = match &fetched {
            _ if retries >= retry.times => None,
            Err(f) if f.transient => Some(retry.wait(retries, None)),
            Ok(x) if Retry::transient(x.status) => Some(retry.wait(retries, Retry::after(x))),
            _ => None,
        };
        match again {
            Some(wait) => {
                retries += 1;
                tokio::time::sleep(wait).await;
            }
            None => break fetched,
        }
    };
    drop(host_slot);
    let exchange = match fetched {
        Ok(x) => x,
        Err(failure) => {
            let mut failed = Fetched::failed(job, failure.reason, failure.detail);
            failed.retries = retries;
            return failed;
        }
    };
    let mut out = Fetched {
        job,
        exchange: None,
        links: Vec::new(),
        problem: None,
        body: None,
        unfollowed: (0, 0),
        mirrored: false,
        fatal: None,
        retries,
        fingerprint: None,
    };
    if exchange.status.is_client_error() || exchange.status.is_server_error() {
        // A broken link: the response goes to the WARC, the URL to the skip report.
        let status = exchange.status;
        let reason = status.canonical_reason().unwrap_or("");
        out.problem = Some((
            SkipReason::HttpError,
            format!("{} {reason}", status.as_u16()),
        ));
    }
    let job = &out.job;
    if exchange.status.is_redirection() && exchange.headers.contains_key(header::LOCATION) {
        match exchange
            .header(header::LOCATION)
            .and_then(|l| url.join(l.trim()).ok())
        {
            Some(target) if matches!(target.scheme(), "http" | "https") => {
                if job.hops >= config.max_redirects {
                    out.problem = Some((SkipReason::TooManyRedirects, format!("to {target}")));
                } else {
                    if config.mirror && job.kind == JobKind::Page {
                        let rel = std::path::Path::new("mirror").join(mirror::path(&url));
                        let stub = redirect_stub(ctx, &url, job.depth, &target);
                        let shared = crate::files::Access::Shared;
                        match crate::files::write(&config.out, &rel, stub.as_bytes(), shared) {
                            Ok(()) => out.mirrored = true,
                            Err(e) => {
                                let path = config.out.join(&rel);
                                out.fatal = Some(CrawlError::io("writing mirror file", path)(e));
                            }
                        }
                    }
                    out.links.push(Candidate {
                        url: target,
                        depth: job.depth,
                        hops: job.hops + 1,
                        kind: job.kind,
                    });
                }
            }
            _ => {
                out.problem = Some((
                    SkipReason::BadRedirect,
                    "Location is not an http(s) URL".into(),
                ))
            }
        }
    } else if exchange.status.is_success() {
        let encoding = exchange.header(header::CONTENT_ENCODING);
        match crate::content_coding::decode(encoding, &exchange.body, config.max_decoded) {
            Err(e) => out.problem = Some((e.reason, e.detail)),
            Ok(body) => {
                let decoded = encoding.is_some_and(|e| !e.eq_ignore_ascii_case("identity"));
                let (kind, depth) = (job.kind, job.depth);
                let (stored, cut) = match kind {
                    JobKind::Page => read_page(ctx, &url, depth, &exchange, &body, &mut out),
                    JobKind::Requisite => (
                        read_requisite(ctx, &url, depth, &exchange, &body, &mut out.links),
                        None,
                    ),
                    JobKind::Sitemap => {
                        // Listed as a sitemap: read as one whatever its declared type.
                        let response = Response::new(&url, "application/xml", &body);
                        let map = ctx.kernels.feed().read(&response, None);
                        // Sitemap entries stand at the sitemap's own depth.
                        push_links(&mut out.links, map.follow, map.follow_feeds, depth);
                        (None, map.cut)
                    }
                };
                if let Some(cut) = cut {
                    out.problem = Some((SkipReason::ParseLimit, cut.to_string()));
                }
                // A page and a requisite of one URL share one file; a sitemap has none.
                if config.mirror && kind != JobKind::Sitemap {
                    let rel = std::path::Path::new("mirror").join(mirror::path(&url));
                    let data = stored.as_deref().unwrap_or(&body);
                    let shared = crate::files::Access::Shared;
                    match crate::files::write(&config.out, &rel, data, shared) {
                        Ok(()) => out.mirrored = true,
                        Err(e) => {
                            let path = config.out.join(&rel);
                            out.fatal = Some(CrawlError::io("writing mirror file", path)(e));
                        }
                    }
                }
                out.body = Some((xxhash_rust::xxh3::xxh3_64(&body), decoded));
                if config.learn && kind == JobKind::Page && is_html(&exchange) {
                    out.fingerprint =
                        Some(url_dedup_fingerprint::Fingerprinter::new().fingerprint(&body));
                }
            }
        }
    }
    out.exchange = Some(exchange);
    out
}

/// Whether a response is an HTML page (by its declared type): what `--learn` fingerprints.
fn is_html(exchange: &Exchange) -> bool {
    let ct = exchange.header(header::CONTENT_TYPE).unwrap_or("");
    let ct = ct.split(';').next().unwrap_or("").trim();
    ct.eq_ignore_ascii_case("text/html") || ct.eq_ignore_ascii_case("application/xhtml+xml")
}

/// Tests of debug builds make a fetch task fail with a bug: a job whose URL contains the
/// value of `CRAWLER_TEST_PANIC_ON` panics here. Release builds have no such hook.
fn failpoint(job: &Job) {
    #[cfg(debug_assertions)]
    if let Some(marker) = std::env::var_os("CRAWLER_TEST_PANIC_ON")
        && job.url.contains(&*marker.to_string_lossy())
    {
        panic!("test failpoint on {}", job.url);
    }
    let _ = job;
}

/// Extracts the links of a page (rewriting them when mirroring); returns the rewritten page
/// and what the parse's memory budget cut.
fn read_page(
    ctx: &Context,
    url: &Url,
    depth: u32,
    exchange: &Exchange,
    body: &[u8],
    out: &mut Fetched,
) -> (Option<Vec<u8>>, Option<Cut>) {
    let ct = exchange
        .header(header::CONTENT_TYPE)
        .unwrap_or("")
        .to_ascii_lowercase();
    let response = Response::new(url, &ct, body);
    let Some(kernel) = ctx.kernels.for_response(&response) else {
        return (None, None);
    };
    let config = &ctx.config;
    let local = |target: &Url, kind: LinkKind| local_path(ctx, url, depth, target, kind);
    let rewrite = config.mirror.then_some(&local as Rewrite<'_>);
    let harvest = kernel.read(&response, rewrite);
    out.unfollowed = (harvest.nofollow as u64, harvest.not_web as u64);
    push_links(
        &mut out.links,
        harvest.follow,
        harvest.follow_feeds,
        depth + 1,
    );
    if config.requisites {
        // A page's requisites stand at its own depth: the page is shown whole even at the
        // depth limit.
        push_requisites(&mut out.links, harvest.requisites, depth);
    }
    (harvest.stored, harvest.cut)
}

/// Reads a fetched requisite: a stylesheet's own references (`url(...)`, `@import`) are
/// requisites too, rewritten to their local copies when mirroring; anything else is stored as
/// it is. Returns the rewritten stylesheet (in UTF-8 when it was decoded from another
/// encoding).
fn read_requisite(
    ctx: &Context,
    url: &Url,
    depth: u32,
    exchange: &Exchange,
    body: &[u8],
    links: &mut Vec<Candidate>,
) -> Option<Vec<u8>> {
    let ct = exchange
        .header(header::CONTENT_TYPE)
        .unwrap_or("")
        .to_ascii_lowercase();
    let is_css = ct.starts_with("text/css") || (ct.is_empty() && url.path().ends_with(".css"));
    if !is_css {
        return None;
    }
    let cap = usize::try_from(ctx.config.fetch.max_body).unwrap_or(usize::MAX);
    let decoded = charset::decode(body, &ct, Syntax::Css, cap);
    if decoded.cut_at.is_some() {
        // Its UTF-8 form outgrows the bound: stored as fetched, its references not read.
        return None;
    }
    let css = String::from_utf8_lossy(&decoded.utf8);
    let mut found = Vec::new();
    let (rewritten, _) = crate::css::rewrite(&css, |reference| {
        let target = url.join(reference.trim()).ok()?;
        if !matches!(target.scheme(), "http" | "https") {
            return None;
        }
        let local = ctx
            .config
            .mirror
            .then(|| local_path(ctx, url, depth, &target, LinkKind::Requisite));
        found.push(target);
        local.flatten()
    });
    push_requisites(links, found, depth);
    if !ctx.config.mirror {
        return None;
    }
    if !decoded.transcoded() {
        return Some(rewritten.into_bytes());
    }
    // A copy in UTF-8, as for pages: a byte order mark, and `@charset` saying so.
    let mut copy = b"\xEF\xBB\xBF".to_vec();
    copy.extend_from_slice(charset::declare_utf8_css(&rewritten).as_bytes());
    Some(copy)
}

/// The relative path from the mirrored file of `from` (at `depth`) to the local copy of
/// `target` (a page or a requisite found on it), with the target's fragment; `None` when the
/// admission rules would not fetch `target` (no canonical form, a page outside the crawl's
/// scope, a trap), so the link stays absolute.
fn local_path(
    ctx: &Context,
    from: &Url,
    depth: u32,
    target: &Url,
    kind: LinkKind,
) -> Option<String> {
    let (depth, kind) = match kind {
        LinkKind::Page => (depth + 1, JobKind::Page),
        LinkKind::Requisite => (depth, JobKind::Requisite),
    };
    let rules = Rules {
        canon: &ctx.canon,
        config: &ctx.config,
        dust: None,
    };
    let canonical = rules.vet(target, depth, kind, false).ok()?;
    let mut rel = mirror::relative(from, &canonical);
    if let Some(f) = target.fragment() {
        rel.push('#');
        rel.push_str(f);
    }
    Some(rel)
}

/// The mirror's copy of a page that redirects (at `depth`) to `target`: a page that sends
/// the browser on, to the target's local copy when the crawl fetches it, to the target itself
/// otherwise, so the local links to a redirecting URL (`/docs` to `/docs/`, `http` to
/// `https`) lead somewhere.
fn redirect_stub(ctx: &Context, url: &Url, depth: u32, target: &Url) -> String {
    let rules = Rules {
        canon: &ctx.canon,
        config: &ctx.config,
        dust: None,
    };
    let to = match rules.vet(target, depth, JobKind::Page, false) {
        Ok(canonical) => mirror::relative(url, &canonical),
        Err(_) => target.to_string(),
    };
    let to = to
        .replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;");
    format!(
        "<!doctype html><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" \
         content=\"0; url={to}\"><title>Moved</title><p>Moved to <a href=\"{to}\">{to}</a>.</p>\n"
    )
}

/// Adds `urls` as requisite candidates at `depth`.
fn push_requisites(out: &mut Vec<Candidate>, urls: Vec<Url>, depth: u32) {
    out.extend(urls.into_iter().map(|url| Candidate {
        url,
        depth,
        hops: 0,
        kind: JobKind::Requisite,
    }));
}

/// Adds `links` as candidates at `depth`: sitemaps or feeds when the document said its links
/// are (`follow_feeds`), pages otherwise.
fn push_links(out: &mut Vec<Candidate>, links: Vec<Url>, follow_feeds: bool, depth: u32) {
    let kind = if follow_feeds {
        JobKind::Sitemap
    } else {
        JobKind::Page
    };
    out.extend(links.into_iter().map(|url| Candidate {
        url,
        depth,
        hops: 0,
        kind,
    }));
}
