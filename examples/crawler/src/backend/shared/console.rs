//! The shared crawl's console: every process publishes its status-page row to Redis every
//! couple of seconds, so the status page of any one of them shows them all.
//!
//! A row is a hash per process, `{crawl}:console:PROCESS` (`redis-cli HGETALL` reads it),
//! that expires [`ROW_TTL`] after its last publication: a process that died or left drops
//! off the page by itself. The sorted set `{crawl}:console` names the processes by time of
//! publication, so a reader needs no `SCAN`. One pipeline publishes; a reader adds one to read
//! the rows and one call per queue stripe for the queue's size. Each attempt is made once
//! and bounded by [`ATTEMPT`]: the status page must never hold up the crawl.

use std::collections::HashMap;
use std::time::Duration;

use url_dedup_redis::Namespace;

use super::SharedBackend;
use crate::monitor::{CrawlView, ProcessRow};

/// How long a row outlives its last publication.
const ROW_TTL: Duration = Duration::from_secs(10);

/// Longest wait for Redis per publication or read.
const ATTEMPT: Duration = Duration::from_secs(1);

/// Publishes `mine`; when `look`, reads every live process's row and the queue's size.
pub(super) async fn view(b: &SharedBackend, mine: ProcessRow, look: bool) -> CrawlView {
    let read = async {
        publish(b, &mine).await?;
        if !look {
            return Ok(CrawlView::default());
        }
        let processes = read_rows(b).await?;
        let mut queued = 0;
        for stripe in &b.store().stripes {
            b.called(1);
            queued += stripe.pending().await?;
        }
        Ok::<_, crate::error::CrawlError>(CrawlView {
            processes,
            queued: Some(queued),
        })
    };
    match tokio::time::timeout(ATTEMPT * (2 + b.build.stripes as u32), read).await {
        Ok(Ok(view)) if look => view,
        Ok(Err(e)) => {
            tracing::debug!("status rows unavailable: {e}");
            alone(mine)
        }
        Err(_) => {
            tracing::debug!("status rows unavailable: Redis did not answer in time");
            alone(mine)
        }
        Ok(Ok(_)) => alone(mine),
    }
}

fn alone(mine: ProcessRow) -> CrawlView {
    CrawlView {
        processes: vec![mine],
        queued: None,
    }
}

/// The crawl's console keys: the index and the row of `process`.
fn keys(b: &SharedBackend, process: &str) -> Result<(String, String), crate::error::CrawlError> {
    let ns = Namespace::new(&b.name)?;
    Ok((ns.key("console"), ns.key(&format!("console:{process}"))))
}

/// The fields of a row, as `HSET` writes them.
fn fields(row: &ProcessRow) -> Vec<(&'static str, String)> {
    vec![
        ("status_page", row.status_page.clone().unwrap_or_default()),
        ("fetched", row.fetched.to_string()),
        ("errors", row.errors.to_string()),
        ("bytes", row.bytes.to_string()),
        ("queued", row.queued.to_string()),
        ("pages_per_sec", format!("{:.3}", row.pages_per_sec)),
        ("rate_limit", row.rate_limit.to_string()),
        ("uptime_secs", format!("{:.1}", row.uptime_secs)),
    ]
}

/// A row read back: `fields` from `HGETALL`, `ttl_ms` from `PTTL` (its age is what the TTL
/// lost, measured on Redis's clock, so clocks of other machines do not matter).
fn row_of(process: &str, fields: &HashMap<String, String>, ttl_ms: i64) -> Option<ProcessRow> {
    if fields.is_empty() || ttl_ms < 0 {
        return None;
    }
    let number = |name: &str| fields.get(name).and_then(|v| v.parse::<f64>().ok());
    let count = |name: &str| fields.get(name).and_then(|v| v.parse::<u64>().ok());
    Some(ProcessRow {
        process: process.to_owned(),
        status_page: fields.get("status_page").filter(|p| !p.is_empty()).cloned(),
        fetched: count("fetched")?,
        errors: count("errors").unwrap_or(0),
        bytes: count("bytes").unwrap_or(0),
        queued: count("queued").unwrap_or(0),
        pages_per_sec: number("pages_per_sec").unwrap_or(0.0),
        rate_limit: number("rate_limit").unwrap_or(0.0),
        uptime_secs: number("uptime_secs").unwrap_or(0.0),
        age_secs: (ROW_TTL.as_millis() as i64 - ttl_ms).max(0) as f64 / 1000.0,
    })
}

/// Writes this process's row and names it in the index; forgets the rows that expired.
async fn publish(b: &SharedBackend, row: &ProcessRow) -> Result<(), crate::error::CrawlError> {
    let (index, key) = keys(b, &row.process)?;
    let now = unix_ms();
    let mut pipe = redis::pipe();
    pipe.cmd("HSET").arg(&key);
    for (name, value) in fields(row) {
        pipe.arg(name).arg(value);
    }
    pipe.ignore()
        .cmd("PEXPIRE")
        .arg(&key)
        .arg(ROW_TTL.as_millis() as u64)
        .ignore()
        .cmd("ZADD")
        .arg(&index)
        .arg(now)
        .arg(&row.process)
        .ignore()
        .cmd("ZREMRANGEBYSCORE")
        .arg(&index)
        .arg("-inf")
        .arg(now.saturating_sub(ROW_TTL.as_millis() as u64 * 6))
        .ignore()
        // The index itself goes when every process is gone.
        .cmd("PEXPIRE")
        .arg(&index)
        .arg(ROW_TTL.as_millis() as u64 * 6)
        .ignore();
    let mut conn = b.build.link.connection();
    b.called(1);
    let () = pipe.query_async(&mut conn).await?;
    Ok(())
}

/// Every live process's row, by process name.
async fn read_rows(b: &SharedBackend) -> Result<Vec<ProcessRow>, crate::error::CrawlError> {
    let (index, _) = keys(b, "")?;
    let mut conn = b.build.link.connection();
    b.called(1);
    let names: Vec<String> = redis::cmd("ZRANGE")
        .arg(&index)
        .arg(0)
        .arg(-1)
        .query_async(&mut conn)
        .await?;
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let mut pipe = redis::pipe();
    for name in &names {
        let (_, key) = keys(b, name)?;
        pipe.cmd("HGETALL").arg(&key).cmd("PTTL").arg(&key);
    }
    b.called(1);
    let answers: Vec<redis::Value> = pipe.query_async(&mut conn).await?;
    let mut rows = Vec::new();
    for (name, pair) in names.iter().zip(answers.chunks(2)) {
        let [fields, ttl] = pair else { continue };
        let fields: HashMap<String, String> =
            redis::from_redis_value(fields.clone()).unwrap_or_default();
        let ttl: i64 = redis::from_redis_value(ttl.clone()).unwrap_or(-2);
        rows.extend(row_of(name, &fields, ttl));
    }
    rows.sort_by(|a, b| a.process.cmp(&b.process));
    Ok(rows)
}

fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_reads_back_as_it_was_published() {
        let row = ProcessRow {
            process: "crawler-1".into(),
            status_page: Some("http://127.0.0.1:8080/".into()),
            fetched: 120,
            errors: 3,
            bytes: 4096,
            queued: 300,
            pages_per_sec: 12.5,
            rate_limit: 20.0,
            uptime_secs: 61.5,
            age_secs: 0.0,
        };
        let fields: HashMap<String, String> = fields(&row)
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        let back = row_of("crawler-1", &fields, ROW_TTL.as_millis() as i64 - 1500).unwrap();
        assert_eq!(
            back,
            ProcessRow {
                age_secs: 1.5,
                ..row
            }
        );
        // Gone, or expiring as it was read: no row.
        assert_eq!(row_of("crawler-1", &HashMap::new(), -2), None);
        assert_eq!(row_of("crawler-1", &fields, -2), None);
    }
}
