//! What happens to one admitted URL: fetch, redirect or parse, store, offer its links to the
//! done set, commit.

use std::sync::Arc;

use reqwest::header;
use url::Url;

use crate::budget::Cut;
use crate::canonical::Canonicalizer;
use crate::crawl::Shared;
use crate::fetch::{BodyLimit, Exchange};
use crate::frontier::{Job, JobKind};
use crate::kernel::{Kernel, Response};
use crate::links::{LinkKind, Rewrite};
use crate::mirror;
use crate::options::CrawlConfig;
use crate::records::Records;
use crate::skip::SkipReason;
use crate::state::Admission;
use crate::template::Lineage;

/// A link found while processing a job, before canonicalization.
pub(crate) struct Candidate {
    pub(crate) url: Url,
    pub(crate) depth: u32,
    pub(crate) hops: u32,
    pub(crate) kind: JobKind,
}

/// Fetches and processes `job`; everything it finds is admitted (or reported) and routed.
///
/// `host_slot` is dropped as soon as the response is in: politeness limits requests to the
/// host, and parsing and storing need not hold the host's slot, so the host's next request
/// overlaps with this page's processing.
pub(crate) async fn process<S: Send>(shared: Arc<Shared>, job: Job, host_slot: S) {
    let config = &shared.config;
    let Ok(url) = Url::parse(&job.url) else {
        shared.give_up(&job, None);
        return;
    };
    shared.monitor.pacer.wait().await;
    // A revisit (`--every`) asks only for a changed page.
    let known = job.claim.as_ref().and_then(|c| c.known.as_ref());
    // A seed is fetched whatever its type, so a feed or a sitemap given as a seed is read by
    // its kernel; links are refused on their headers when their type is not accepted.
    let filter_type = job.kind == JobKind::Page && job.depth > 0;
    let fetched = shared
        .fetcher
        .get_if_changed(
            &url,
            BodyLimit::Refuse(config.fetch.max_body),
            filter_type,
            known,
        )
        .await;
    drop(host_slot);
    let exchange = match fetched {
        Ok(x) => x,
        Err(failure) => {
            shared.give_up(&job, Some((failure.reason, failure.detail)));
            return;
        }
    };
    let mut candidates = Vec::new();
    let mut problem = None;
    let mut body_for_dedup = None;
    if exchange.status.is_redirection() && exchange.headers.contains_key(header::LOCATION) {
        match exchange
            .header(header::LOCATION)
            .and_then(|l| url.join(l.trim()).ok())
        {
            Some(target) if matches!(target.scheme(), "http" | "https") => {
                if job.hops >= config.max_redirects {
                    problem = Some((SkipReason::TooManyRedirects, format!("to {target}")));
                } else {
                    candidates.push(Candidate {
                        url: target,
                        depth: job.depth,
                        hops: job.hops + 1,
                        kind: job.kind,
                    });
                }
            }
            _ => {
                problem = Some((
                    SkipReason::BadRedirect,
                    "Location is not an http(s) URL".into(),
                ))
            }
        }
    } else if exchange.status.is_success() {
        let encoding = exchange.header(header::CONTENT_ENCODING);
        match crate::content_coding::decode(encoding, &exchange.body, config.max_decoded) {
            Err(e) => problem = Some((e.reason, e.detail)),
            Ok(body) => {
                let decoded = encoding.is_some_and(|e| !e.eq_ignore_ascii_case("identity"));
                let (stored, cut) = match job.kind {
                    JobKind::Page => {
                        read_page(&shared, &url, &job, &exchange, &body, &mut candidates)
                    }
                    JobKind::Requisite => (
                        read_requisite(&shared, &url, &job, &exchange, &body, &mut candidates),
                        None,
                    ),
                    JobKind::Sitemap => {
                        // Listed as a sitemap: read as one whatever its declared type.
                        let response = Response::new(&url, "application/xml", &body);
                        let map = shared.kernels.feed().read(&response, None);
                        // Sitemap entries stand at the sitemap's own depth.
                        push_links(&mut candidates, map.follow, map.follow_feeds, job.depth);
                        (None, map.cut)
                    }
                };
                if let Some(cut) = cut {
                    problem = Some((SkipReason::ParseLimit, cut.to_string()));
                }
                let as_kind = match job.kind {
                    JobKind::Page => Some(LinkKind::Page),
                    JobKind::Requisite => Some(LinkKind::Requisite),
                    JobKind::Sitemap => None,
                };
                if let (true, Some(kind)) = (config.mirror, as_kind) {
                    let path = config.out.join("mirror").join(mirror::path_as(&url, kind));
                    let data = stored.as_deref().unwrap_or(&body);
                    if let Err(e) = write_file(&path, data) {
                        shared.fail(crate::error::CrawlError::io("writing mirror file", &path)(
                            e,
                        ));
                    }
                }
                body_for_dedup = Some((xxhash_rust::xxh3::xxh3_64(&body), decoded));
            }
        }
    }
    shared.commit_exchange(&job, &exchange, candidates, problem, body_for_dedup);
}

/// Extracts the links of a page (rewriting them when mirroring); returns the rewritten page
/// and what the parse's memory budget cut.
fn read_page(
    shared: &Shared,
    url: &Url,
    job: &Job,
    exchange: &Exchange,
    body: &[u8],
    candidates: &mut Vec<Candidate>,
) -> (Option<Vec<u8>>, Option<Cut>) {
    let ct = exchange
        .header(header::CONTENT_TYPE)
        .unwrap_or("")
        .to_ascii_lowercase();
    let response = Response::new(url, &ct, body);
    let Some(kernel) = shared.kernels.for_response(&response) else {
        return (None, None);
    };
    let config = &shared.config;
    let local =
        |target: &Url, kind: LinkKind| local_path(shared, (url, LinkKind::Page), target, kind);
    let rewrite = config.mirror.then_some(&local as Rewrite<'_>);
    let harvest = kernel.read(&response, rewrite);
    shared.count_unfollowed(harvest.nofollow as u64, harvest.not_web as u64);
    push_links(
        candidates,
        harvest.follow,
        harvest.follow_feeds,
        job.depth + 1,
    );
    if config.requisites {
        // A page's requisites stand at its own depth: the page is shown whole even at the
        // depth limit.
        push_requisites(candidates, harvest.requisites, job.depth);
    }
    (harvest.stored, harvest.cut)
}

/// Reads a fetched requisite: a stylesheet's own references (`url(...)`, `@import`) are
/// requisites too, rewritten to their local copies when mirroring; anything else is stored as
/// it is. Returns the rewritten stylesheet.
fn read_requisite(
    shared: &Shared,
    url: &Url,
    job: &Job,
    exchange: &Exchange,
    body: &[u8],
    candidates: &mut Vec<Candidate>,
) -> Option<Vec<u8>> {
    let ct = exchange
        .header(header::CONTENT_TYPE)
        .unwrap_or("")
        .to_ascii_lowercase();
    let is_css = ct.starts_with("text/css") || (ct.is_empty() && url.path().ends_with(".css"));
    let css = is_css.then(|| std::str::from_utf8(body).ok()).flatten()?;
    let mut found = Vec::new();
    let (rewritten, _) = crate::css::rewrite(css, |reference| {
        let target = url.join(reference.trim()).ok()?;
        if !matches!(target.scheme(), "http" | "https") {
            return None;
        }
        let local = shared.config.mirror.then(|| {
            local_path(
                shared,
                (url, LinkKind::Requisite),
                &target,
                LinkKind::Requisite,
            )
        });
        found.push(target);
        local.flatten()
    });
    push_requisites(candidates, found, job.depth);
    shared.config.mirror.then(|| rewritten.into_bytes())
}

/// The relative path from the mirrored file of `from` to the local copy of `target` (a page
/// or a requisite), with the target's fragment; `None` when `target` is not mirrored (outside
/// the crawl's scope, or without a canonical form).
fn local_path(
    shared: &Shared,
    from: (&Url, LinkKind),
    target: &Url,
    kind: LinkKind,
) -> Option<String> {
    let canonical = shared.canon.canonicalize(target).ok()?;
    shared.config.scope.contains(&canonical).then(|| {
        let mut rel = mirror::relative_as(from, (&canonical, kind));
        if let Some(f) = target.fragment() {
            rel.push('#');
            rel.push_str(f);
        }
        rel
    })
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

fn write_file(path: &std::path::Path, data: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, data)
}

/// Why a discovered link is not offered to the done set.
pub(crate) enum Rejected {
    /// It has no canonical form.
    NoCanonical(SkipReason),
    /// Its canonical form is outside the crawl's scope.
    OutOfScope(Url),
    /// Its canonical form trips a trap rule at this depth.
    Trap(SkipReason, Url),
}

/// The canonical form of `link` if the crawl may follow it at `depth`: canonicalization, then
/// scope, then trap rules, in that order for the local and the shared crawl alike.
pub(crate) fn vet(
    canon: &Canonicalizer,
    config: &CrawlConfig,
    link: &Url,
    depth: u32,
) -> Result<Url, Rejected> {
    let url = canon.canonicalize(link).map_err(Rejected::NoCanonical)?;
    if !config.scope.contains(&url) {
        return Err(Rejected::OutOfScope(url));
    }
    if let Err(reason) = config.traps.check(&url, depth) {
        return Err(Rejected::Trap(reason, url));
    }
    Ok(url)
}

/// Vets candidates found on the page `from` (none for the seeds and robots.txt sitemaps):
/// canonical form, scope and trap rules, each refusal recorded in `records`. Returns the jobs
/// to offer to the done set, with how each continues the template of `from`.
pub(crate) fn vet_all(
    shared: &Shared,
    records: &mut Records,
    from: Option<&str>,
    candidates: Vec<Candidate>,
) -> Result<Vec<(Job, Option<Lineage>)>, crate::error::CrawlError> {
    let mut jobs = Vec::with_capacity(candidates.len());
    for c in candidates {
        let url = match vet(&shared.canon, &shared.config, &c.url, c.depth) {
            Ok(url) => url,
            Err(Rejected::NoCanonical(reason)) => {
                records.skip(reason, c.url.as_str(), "no canonical form")?;
                continue;
            }
            Err(Rejected::OutOfScope(url)) => {
                records.skip(SkipReason::OutOfScope, url.as_str(), "")?;
                continue;
            }
            Err(Rejected::Trap(reason, url)) => {
                records.skip(reason, url.as_str(), &format!("depth {}", c.depth))?;
                continue;
            }
        };
        if url.as_str() != c.url.as_str() {
            records.stats.canonicalized += 1;
        }
        let job = Job::new(url.as_str(), c.depth, c.hops, c.kind);
        // Requisites are not links of the page's template: they never count against a
        // template budget.
        let lineage = from
            .filter(|_| c.kind != JobKind::Requisite)
            .and_then(|page| Lineage::of(page, &job.url));
        jobs.push((job, lineage));
    }
    Ok(jobs)
}

/// Vets candidates found on the page `from` and offers them to the local done set; returns
/// the ones admitted. Called with the state locked.
pub(crate) fn admit_all(
    shared: &Shared,
    state: &mut crate::state::CrawlState,
    from: Option<&str>,
    candidates: Vec<Candidate>,
) -> Result<Vec<Job>, crate::error::CrawlError> {
    let mut admitted = Vec::new();
    for (job, lineage) in vet_all(shared, &mut state.records, from, candidates)? {
        if let Admission::Admitted(job) = state.admit(job, lineage)? {
            admitted.push(job);
        }
    }
    Ok(admitted)
}
