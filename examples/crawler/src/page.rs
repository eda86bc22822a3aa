//! What happens to one admitted URL: fetch, redirect or parse, store, offer its links to the
//! done set, commit.

use std::sync::Arc;

use reqwest::header;
use url::Url;

use crate::crawl::Shared;
use crate::fetch::Exchange;
use crate::frontier::{Job, JobKind};
use crate::links::{self, ExtractOptions};
use crate::skip::SkipReason;
use crate::state::Admission;
use crate::{mirror, sitemap};

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
    let fetched = shared
        .fetcher
        .get(&url, config.fetch.max_body, job.kind == JobKind::Page)
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
                let stored = match job.kind {
                    JobKind::Page => {
                        read_page(&shared, &url, &job, &exchange, &body, &mut candidates)
                    }
                    JobKind::Sitemap => {
                        let map = sitemap::parse(&body, &url);
                        let kind = if map.is_index {
                            JobKind::Sitemap
                        } else {
                            JobKind::Page
                        };
                        candidates.extend(map.locs.into_iter().map(|u| Candidate {
                            url: u,
                            depth: job.depth,
                            hops: 0,
                            kind,
                        }));
                        None
                    }
                };
                if config.mirror && job.kind == JobKind::Page {
                    let path = config.out.join("mirror").join(mirror::path(&url));
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

/// Extracts the links of a page (rewriting them when mirroring); returns the rewritten page.
fn read_page(
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
    if !(ct.starts_with("text/html") || ct.starts_with("application/xhtml+xml")) {
        return None;
    }
    let config = &shared.config;
    let local = |target: &Url| {
        let canonical = shared.canon.canonicalize(target).ok()?;
        config.scope.contains(&canonical).then(|| {
            let mut rel = mirror::relative(url, &canonical);
            if let Some(f) = target.fragment() {
                rel.push('#');
                rel.push_str(f);
            }
            rel
        })
    };
    let opts = ExtractOptions {
        respect_nofollow: config.respect_nofollow,
        rewrite: config
            .mirror
            .then_some(&local as &dyn Fn(&Url) -> Option<String>),
    };
    match links::extract(body, url, &opts) {
        Ok(found) => {
            shared.count_nofollow(found.nofollow as u64);
            candidates.extend(found.links.into_iter().map(|u| Candidate {
                url: u,
                depth: job.depth + 1,
                hops: 0,
                kind: JobKind::Page,
            }));
            found.rewritten
        }
        // lol_html gives up only on pathological input (its memory limit); the page is kept as is.
        Err(_) => None,
    }
}

fn write_file(path: &std::path::Path, data: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(path, data)
}

/// Turns candidates into jobs and offers them to the done set. Called with the state locked.
pub(crate) fn admit_all(
    shared: &Shared,
    state: &mut crate::state::CrawlState,
    candidates: Vec<Candidate>,
) -> Result<Vec<Job>, crate::error::CrawlError> {
    let mut admitted = Vec::new();
    for c in candidates {
        let url = match shared.canon.canonicalize(&c.url) {
            Ok(url) => url,
            Err(reason) => {
                state.skip(reason, c.url.as_str(), "no canonical form")?;
                continue;
            }
        };
        if url.as_str() != c.url.as_str() {
            state.stats.canonicalized += 1;
        }
        if !shared.config.scope.contains(&url) {
            state.skip(SkipReason::OutOfScope, url.as_str(), "")?;
            continue;
        }
        if let Err(reason) = shared.config.traps.check(&url, c.depth) {
            state.skip(reason, url.as_str(), &format!("depth {}", c.depth))?;
            continue;
        }
        let job = Job {
            url: url.as_str().into(),
            depth: c.depth,
            hops: c.hops,
            kind: c.kind,
        };
        if let Admission::Admitted(job) = state.admit(job)? {
            admitted.push(job);
        }
    }
    Ok(admitted)
}
