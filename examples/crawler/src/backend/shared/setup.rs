//! What a process of a shared crawl sets up: the crawl's hash key, drawn once per crawl;
//! whether this process started the crawl or joined it; the run queue's stripes and the done
//! set; and how a job travels as a task of the shared run queue.

use std::path::Path;
use std::sync::Arc;

use url_dedup_bloom::HashKey;
use url_dedup_redis::{ClaimedTask, Frontier, FrontierSettings, Link, Namespace, NewTask};

use crate::done::{DoneSet, FilterSize, SharedFilter};
use crate::error::CrawlError;
use crate::fetch::Validators;
use crate::files::Access;
use crate::job::{Job, JobKind};

/// Separates the fields of a task's data; no header value or number holds it.
const FIELD: char = '\u{1f}';

/// The file of an output directory that names the shared crawl whose processes wrote there.
const SHARED_CRAWL_FILE: &str = "shared-crawl.txt";

/// How a process came to a shared crawl.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Arrival {
    /// The crawl was not in Redis: this process started it.
    Started,
    /// Another process started it.
    Joined,
    /// The crawl was not in Redis, yet the output directory holds an earlier run of it:
    /// Redis lost it between runs (a restart without persistence), and it starts again from
    /// the seeds.
    LostEarlierRun,
}

impl Arrival {
    /// How a process that drew the crawl's key (`started`) or not arrives, given whether `out`
    /// named this crawl before; names it there.
    pub(crate) fn of(started: bool, out: &Path, name: &str) -> Result<Self, CrawlError> {
        let named_before = name_crawl_in(out, name)?;
        Ok(match (started, named_before) {
            (false, _) => Self::Joined,
            (true, false) => Self::Started,
            (true, true) => Self::LostEarlierRun,
        })
    }
}

/// Names the shared crawl `name` in `out`; whether it was named there already, by an earlier
/// process of this crawl (another crawl's does not count).
fn name_crawl_in(out: &Path, name: &str) -> Result<bool, CrawlError> {
    let path = out.join(SHARED_CRAWL_FILE);
    let before = std::fs::read_to_string(&path).is_ok_and(|s| s.trim_end() == name);
    if !before {
        let line = format!("{name}\n");
        crate::files::write(
            out,
            Path::new(SHARED_CRAWL_FILE),
            line.as_bytes(),
            Access::Private,
        )
        .map_err(CrawlError::io("writing", &path))?;
    }
    Ok(before)
}

/// The crawl's hash key: drawn by the first process (or `keep`, the key of a crawl going on
/// after Redis lost its data), read by the others. Also says whether this process drew it.
pub(crate) async fn crawl_key(
    link: &Link,
    ns: &Namespace,
    keep: Option<HashKey>,
) -> Result<(HashKey, bool), CrawlError> {
    let name = ns.key("hash-key");
    let fresh: String = keep
        .unwrap_or_else(HashKey::random)
        .to_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    // Sent twice after a lost reply, `SET NX` still leaves the first key drawn.
    let set = redis::cmd("SET").arg(&name).arg(&fresh).arg("NX").clone();
    let _: Option<String> = link
        .run("draw the crawl's key", |mut conn| {
            let set = &set;
            async move { set.query_async(&mut conn).await }
        })
        .await?;
    let get = redis::cmd("GET").arg(&name).clone();
    let stored: String = link
        .run("read the crawl's key", |mut conn| {
            let get = &get;
            async move { get.query_async(&mut conn).await }
        })
        .await?;
    let bad = || CrawlError::Options(format!("{name} in Redis is not a 32-digit hex key"));
    if stored.len() != 32 || !stored.is_ascii() {
        return Err(bad());
    }
    let mut bytes = [0u8; 16];
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = u8::from_str_radix(&stored[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
    }
    // Keys are random: the stored one is this process's only if its `SET NX` took.
    Ok((HashKey::from_bytes(bytes), stored == fresh))
}

/// The namespace of stripe `s` of crawl `name`.
pub(crate) fn stripe_name(name: &str, s: usize) -> String {
    format!("{name}-s{s}")
}

/// The run queue's stripes and the done set of one generation of the crawl's data in Redis.
pub(crate) struct Store {
    pub(crate) stripes: Vec<Frontier>,
    pub(crate) done: Arc<DoneSet>,
}

/// How a [`Store`] is made.
pub(crate) struct StoreBuild {
    pub(crate) link: Link,
    pub(crate) name: String,
    pub(crate) stripes: usize,
    pub(crate) frontier: FrontierSettings,
    pub(crate) filter: SharedFilter,
    pub(crate) size: FilterSize,
}

impl StoreBuild {
    /// Opens the stripes and the done set (creating them when Redis has none).
    pub(crate) async fn store(&self) -> Result<Store, CrawlError> {
        let (size, at) = (self.size, self.filter.clone());
        let done = tokio::task::spawn_blocking(move || DoneSet::shared(size, &at))
            .await
            .map_err(|e| CrawlError::Options(format!("done set setup: {e}")))??;
        let stripes = (0..self.stripes)
            .map(|s| {
                let ns = Namespace::new(&stripe_name(&self.name, s))?;
                Ok(Frontier::with_settings(
                    self.link.clone(),
                    ns,
                    self.frontier,
                ))
            })
            .collect::<Result<Vec<_>, url_dedup_redis::Error>>()?;
        Ok(Store {
            stripes,
            done: Arc::new(done),
        })
    }
}

/// The job a claimed task stands for: its URL and the depth, hops, kind and validators it was
/// pushed with.
pub(crate) fn job_of(task: &ClaimedTask) -> Job {
    let (kind, depth, hops, revisit) = read_data(task.data());
    Job {
        url: task.url().into(),
        depth,
        hops,
        kind,
        revisit,
    }
}

/// The inverse of [`task_of`]'s data; a task pushed without data is a page at depth 0.
fn read_data(data: &str) -> (JobKind, u32, u32, Option<Validators>) {
    let mut fields = data.split(FIELD);
    let mut head = fields.next().unwrap_or("").split(' ');
    let kind = head
        .next()
        .and_then(JobKind::from_code)
        .unwrap_or(JobKind::Page);
    let mut number = || head.next().and_then(|n| n.parse().ok()).unwrap_or(0);
    let (depth, hops) = (number(), number());
    let known = match (fields.next(), fields.next()) {
        (Some(etag), Some(modified)) => Validators::decode(&format!("{etag}\n{modified}")),
        _ => None,
    };
    (kind, depth, hops, known)
}

/// The task a job is pushed as, under its host (`crate::job::host_of`): `kind depth hops`,
/// then the validators of a revisit.
pub(crate) fn task_of(job: &Job) -> Result<NewTask, url_dedup_redis::Error> {
    let mut data = format!("{} {} {}", job.kind.code(), job.depth, job.hops);
    if let Some(v) = &job.revisit {
        let (etag, modified) = (
            v.etag.as_deref().unwrap_or(""),
            v.last_modified.as_deref().unwrap_or(""),
        );
        if !etag.contains(FIELD) && !modified.contains(FIELD) {
            data.push_str(&format!("{FIELD}{etag}{FIELD}{modified}"));
        }
    }
    NewTask::new(job.host(), &*job.url)?.with_data(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jobs_depth_hops_kind_and_validators_travel_with_its_task() {
        let mut job = Job::new("http://h.example/a", 7, 2, JobKind::Sitemap);
        let known = Validators {
            etag: Some("\"v1\"".into()),
            last_modified: None,
        };
        job.revisit = Some(known.clone());
        let task = task_of(&job).unwrap();
        assert_eq!(task.url(), "http://h.example/a");
        assert_eq!(task.host(), "h.example");
        assert_eq!(
            read_data(task.data()),
            (JobKind::Sitemap, 7, 2, Some(known))
        );
        job.revisit = None;
        let plain = task_of(&job).unwrap();
        assert_eq!(read_data(plain.data()), (JobKind::Sitemap, 7, 2, None));
        assert_eq!(read_data(""), (JobKind::Page, 0, 0, None));
    }

    #[test]
    fn a_task_is_queued_under_the_crawls_one_host() {
        for (url, host) in [
            ("http://h.example/", "h.example"),
            ("https://h.example/", "h.example"),
            ("http://h.example:8080/", "h.example:8080"),
        ] {
            let task = task_of(&Job::new(url, 0, 0, JobKind::Page)).unwrap();
            assert_eq!(task.host(), host, "{url}");
        }
    }
}
