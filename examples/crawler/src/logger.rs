//! Document 003's Logger: every process's warnings and errors, collected in one capped Redis
//! stream (`XADD key MAXLEN ~ N`), so one status page shows what went wrong anywhere. Each entry
//! also goes to this process's structured log (`tracing`).

use url_dedup_redis::Connection;

/// One entry of the shared log stream.
#[derive(Clone, Debug, serde::Serialize)]
pub(crate) struct Entry {
    /// Stream id (milliseconds-sequence), so entries sort by time across processes.
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
        }
    }

    pub(crate) fn info(&self, message: &str) {
        tracing::info!(process = %self.process, "{message}");
    }

    pub(crate) async fn warn(&self, message: &str) {
        tracing::warn!(process = %self.process, "{message}");
        self.append("WARN", message).await;
    }

    pub(crate) async fn error(&self, message: &str) {
        tracing::error!(process = %self.process, "{message}");
        self.append("ERROR", message).await;
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

    /// The newest `count` entries of the shared stream, newest first.
    pub(crate) async fn recent(&self, count: usize) -> Vec<Entry> {
        let Some((conn, key)) = &self.stream else {
            return Vec::new();
        };
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
        raw.unwrap_or_default()
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
            .collect()
    }
}
