//! The incremental crawl (`--every`): when the run queue is drained, the next period starts
//! once its time comes. The first process there schedules it (a revisit of every known page,
//! with the validators stored for a conditional GET, and of every seed); the others wait for
//! it.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;
use url_dedup_redis::NewTask;

use super::SharedBackend;
use super::setup::task_of;
use crate::error::CrawlError;
use crate::fetch::Validators;
use crate::job::{Job, JobKind};

/// The period this process is in, and when it began here.
#[derive(Debug)]
pub(crate) struct Period {
    current: Option<u64>,
    began: Instant,
}

impl Default for Period {
    fn default() -> Self {
        Self {
            current: None,
            began: Instant::now(),
        }
    }
}

/// The crawl's current period (0 before the first revisit).
async fn current(b: &SharedBackend) -> Result<u64, CrawlError> {
    let p: Option<u64> = b
        .query("read the period", redis::cmd("GET").arg(&b.keys.period))
        .await?;
    Ok(p.unwrap_or(0))
}

/// Notes the period the crawl is in when this process joins; its time runs from now.
pub(crate) async fn begin(b: &SharedBackend) -> Result<(), CrawlError> {
    let now = current(b).await?;
    let mut p = b.period.lock().await;
    p.current = Some(now);
    p.began = Instant::now();
    Ok(())
}

/// The run queue is drained: waits until the period's time is up, then starts the next one
/// (or waits for another process to). Returns early when the stop flag is raised.
pub(crate) async fn next(b: &SharedBackend, every: Duration) -> Result<(), CrawlError> {
    let mut p = b.period.lock().await;
    let now_period = match p.current {
        Some(n) => n,
        None => current(b).await?,
    };
    b.logger
        .info(&format!("period {now_period} done; next in {every:?}"));
    let due = p.began + every;
    let nap = Duration::from_millis(100);
    loop {
        if super::coordination::stop_raised(b).await? {
            // The next beat stops the crawl.
            tokio::time::sleep(nap).await;
            return Ok(());
        }
        let now = Instant::now();
        if now >= due {
            break;
        }
        tokio::time::sleep((due - now).min(nap)).await;
    }
    let next = now_period + 1;
    let scheduling = format!("{}:{next}", b.keys.period);
    loop {
        if super::coordination::stop_raised(b).await? {
            return Ok(());
        }
        let now = current(b).await?;
        if now > now_period {
            p.current = Some(now);
            p.began = Instant::now();
            return Ok(());
        }
        // The claim expires, so a scheduler that dies half way is replaced.
        let claim = redis::cmd("SET")
            .arg(&scheduling)
            .arg(b.me.as_str())
            .arg("NX")
            .arg("PX")
            .arg(60_000)
            .clone();
        let won: Option<String> = b.query("claim the next period", &claim).await?;
        if won.is_some() {
            let revisits = schedule_revisits(b).await?;
            let set = redis::cmd("SET").arg(&b.keys.period).arg(next).clone();
            let () = b.query("start the next period", &set).await?;
            b.logger
                .info(&format!("period {next}: {revisits} revisits scheduled"));
            p.current = Some(next);
            p.began = Instant::now();
            return Ok(());
        }
        tokio::time::sleep(nap).await;
    }
}

/// Queues every known page and every seed again, with the validators stored for it (they are
/// in the done set, so they bypass it); returns how many.
async fn schedule_revisits(b: &SharedBackend) -> Result<u64, CrawlError> {
    let mut known: HashMap<String, Option<Validators>> =
        b.seeds.iter().map(|u| (u.clone(), None)).collect();
    let mut cursor = String::from("0");
    loop {
        let scan = redis::cmd("HSCAN")
            .arg(&b.keys.known)
            .arg(&cursor)
            .arg("COUNT")
            .arg(1000)
            .clone();
        let (next, flat): (String, Vec<String>) = b.query("list known pages", &scan).await?;
        for pair in flat.chunks(2) {
            if let [url, validators] = pair {
                known.insert(url.clone(), Validators::decode(validators));
            }
        }
        if next == "0" {
            break;
        }
        cursor = next;
    }
    let mut by_stripe: HashMap<usize, Vec<NewTask>> = HashMap::new();
    for (url, validators) in known {
        let mut job = Job::new(&url, 0, 0, JobKind::Page);
        job.revisit = validators;
        if let Ok(task) = task_of(&job) {
            by_stripe
                .entry(b.stripe_of(task.host()))
                .or_default()
                .push(task);
        }
    }
    let mut n = 0;
    let store = b.store();
    for (s, tasks) in by_stripe {
        b.called(1);
        store.stripes[s].push(&tasks).await?;
        n += tasks.len() as u64;
    }
    Ok(n)
}
