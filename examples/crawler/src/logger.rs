//! Document 003's Logger: every process's warnings and errors, collected in one capped Redis
//! stream (`XADD key MAXLEN ~ N`), so one status page shows what went wrong anywhere. Each entry
//! also goes to this process's structured log (`tracing`), and the newest [`KEPT`] entries of
//! this process, notes included, stay in memory: the log a single-process crawl's status page
//! shows, and a shared one's when Redis cannot be read.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use url_dedup_redis::Connection;

/// Entries of this process kept in memory.
pub(crate) const KEPT: usize = 100;

/// One entry of the shared log stream.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub(crate) struct Entry {
    /// Stream id (milliseconds-sequence, the milliseconds since the Unix epoch), so entries
    /// sort by time across processes; an entry kept in memory is named the same way.
    pub(crate) id: String,
    pub(crate) process: String,
    pub(crate) level: String,
    pub(crate) message: String,
}

/// Writes to the shared stream; without Redis, only to the local log.
#[derive(Clone)]
pub(crate) struct Logger {
    process: String,
    stream: Option<(Connection, String)>,
    cap: u64,
    /// The newest entries of this process, newest first, and how many were ever kept.
    kept: Arc<Mutex<(VecDeque<Entry>, u64)>>,
}

impl std::fmt::Debug for Logger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Logger")
            .field("process", &self.process)
            .field("stream", &self.stream.as_ref().map(|(_, k)| k))
            .finish()
    }
}

impl Logger {
    pub(crate) fn new(process: String, stream: Option<(Connection, String)>, cap: u64) -> Self {
        Self {
            process,
            stream,
            cap: cap.max(1),
            kept: Arc::default(),
        }
    }

    /// Something worth knowing that is no problem: this process's log and memory only.
    pub(crate) fn info(&self, message: &str) {
        tracing::info!(process = %self.process, "{message}");
        self.keep("INFO", message);
    }

    pub(crate) async fn warn(&self, message: &str) {
        tracing::warn!(process = %self.process, "{message}");
        self.keep("WARN", message);
        self.append("WARN", message).await;
    }

    pub(crate) async fn error(&self, message: &str) {
        tracing::error!(process = %self.process, "{message}");
        self.keep("ERROR", message);
        self.append("ERROR", message).await;
    }

    /// Keeps an entry in memory, dropping the oldest past [`KEPT`].
    fn keep(&self, level: &str, message: &str) {
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        let (entries, count) = &mut *kept;
        if entries.len() == KEPT {
            entries.pop_back();
        }
        entries.push_front(Entry {
            id: format!("{ms}-{count}"),
            process: self.process.clone(),
            level: level.to_owned(),
            message: crate::clip::clip(message, crate::clip::REPORT_FIELD).into_owned(),
        });
        *count += 1;
    }

    /// The newest `count` entries kept in memory, newest first.
    fn kept(&self, count: usize) -> Vec<Entry> {
        let kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        kept.0.iter().take(count).cloned().collect()
    }

    async fn append(&self, level: &str, message: &str) {
        let Some((conn, key)) = &self.stream else {
            return;
        };
        let mut conn = conn.clone();
        // Bounded entries: a page can produce a long error text.
        let message = crate::clip::clip(message, crate::clip::REPORT_FIELD);
        let sent: redis::RedisResult<String> = redis::cmd("XADD")
            .arg(key)
            .arg("MAXLEN")
            .arg("~")
            .arg(self.cap)
            .arg("*")
            .arg("process")
            .arg(&self.process)
            .arg("level")
            .arg(level)
            .arg("message")
            .arg(&*message)
            .query_async(&mut conn)
            .await;
        if let Err(e) = sent {
            // Logging must not stop the crawl; the local log still has the entry.
            tracing::debug!("log stream unavailable: {e}");
        }
    }

    /// The newest `count` entries, newest first: the shared stream's (every process's
    /// warnings and errors) with this process's notes, or without a stream (or when it cannot
    /// be read) this process's entries kept in memory.
    pub(crate) async fn recent(&self, count: usize) -> Vec<Entry> {
        let Some(shared) = self.shared(count).await else {
            return self.kept(count);
        };
        let notes = self.kept(KEPT).into_iter().filter(|e| e.level == "INFO");
        let mut all: Vec<Entry> = shared.into_iter().chain(notes).collect();
        all.sort_by_key(|e| std::cmp::Reverse(order(&e.id)));
        all.truncate(count);
        all
    }

    /// The newest `count` entries of the shared stream, newest first; `None` without one or
    /// when it cannot be read.
    async fn shared(&self, count: usize) -> Option<Vec<Entry>> {
        let (conn, key) = self.stream.as_ref()?;
        let mut conn = conn.clone();
        type Raw = Vec<(String, Vec<(String, String)>)>;
        let raw: redis::RedisResult<Raw> = redis::cmd("XREVRANGE")
            .arg(key)
            .arg("+")
            .arg("-")
            .arg("COUNT")
            .arg(count)
            .query_async(&mut conn)
            .await;
        let entries = raw
            .ok()?
            .into_iter()
            .map(|(id, fields)| {
                let get = |name: &str| {
                    fields
                        .iter()
                        .find(|(f, _)| f == name)
                        .map(|(_, v)| v.clone())
                        .unwrap_or_default()
                };
                Entry {
                    id,
                    process: get("process"),
                    level: get("level"),
                    message: get("message"),
                }
            })
            .collect();
        Some(entries)
    }
}

/// An entry id's place in time: milliseconds, then sequence.
fn order(id: &str) -> (u64, u64) {
    let (ms, seq) = id.split_once('-').unwrap_or((id, "0"));
    (ms.parse().unwrap_or(0), seq.parse().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without Redis, the log is this process's own: notes, warnings and errors, newest
    /// first, the oldest dropped past [`KEPT`].
    #[tokio::test]
    async fn a_process_without_redis_keeps_its_recent_entries() {
        let log = Logger::new("p".into(), None, 1);
        assert!(log.recent(10).await.is_empty());
        log.info("status page at http://127.0.0.1:1/");
        log.warn("a.example: cannot share its crawl delay").await;
        log.clone().error("stopped").await;
        let levels: Vec<_> = log.recent(10).await.into_iter().map(|e| e.level).collect();
        assert_eq!(levels, ["ERROR", "WARN", "INFO"]);
        for i in 0..KEPT {
            log.info(&format!("note {i}"));
        }
        let recent = log.recent(KEPT + 10).await;
        assert_eq!(recent.len(), KEPT);
        assert_eq!(recent[0].message, format!("note {}", KEPT - 1));
        assert_eq!(recent[KEPT - 1].message, "note 0");
        // Ids sort by time, then by order within a millisecond.
        let (ms, seq) = recent[0].id.split_once('-').unwrap();
        assert!(ms.parse::<u64>().unwrap() > 1_600_000_000_000);
        assert_eq!(seq, (KEPT + 2).to_string());
    }
}
