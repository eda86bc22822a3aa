//! Making a filter in Redis, and checking, whenever a connection is opened again, that the
//! filter there is still the one this client opened.

use std::time::Duration;

use redis::RedisResult;

use super::RedisSegmentStore;
use super::header::HEADER_BITS;
use super::meta::Meta;
use super::options::StoreOptions;
use crate::connection::Connection;
use crate::link::Failure;

/// How long a creator may hold the creation lock (it holds it while it sizes the data keys).
const CREATION_LOCK_MS: u64 = 60_000;

/// The metadata of the filter at `meta_key`, creating the filter first if there is none.
///
/// Creation holds a lock (`<meta>:creating`, `SET NX` with a deadline) while it writes every
/// data key (header, then full size, replacing whatever a reset left) and only then the
/// metadata: whoever sees the metadata finds every key ready, and of two processes creating
/// the same filter one creates and the other waits and reads what it made.
pub(crate) async fn create_or_read(
    mut conn: Connection,
    options: &StoreOptions,
    meta_key: &str,
    wanted: &Meta,
) -> RedisResult<Vec<(String, String)>> {
    let lock = format!("{meta_key}:creating");
    let deadline = tokio::time::Instant::now() + Duration::from_millis(CREATION_LOCK_MS);
    loop {
        let stored: Vec<(String, String)> = redis::cmd("HGETALL")
            .arg(meta_key)
            .query_async(&mut conn)
            .await?;
        if !stored.is_empty() {
            return Ok(stored);
        }
        let token = format!("{:016x}", crate::namespace::random_u64());
        let locked: Option<String> = redis::cmd("SET")
            .arg(&lock)
            .arg(&token)
            .arg("NX")
            .arg("PX")
            .arg(CREATION_LOCK_MS)
            .query_async(&mut conn)
            .await?;
        if locked.is_none() {
            if tokio::time::Instant::now() > deadline {
                return Err(redis::RedisError::from((
                    redis::ErrorKind::Client,
                    "another process holds the filter's creation lock",
                    lock,
                )));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        }
        let result = create_locked(&mut conn, options, meta_key, wanted).await;
        let release = redis::Script::new(
            "if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end return 0",
        );
        let _ = release
            .key(&lock)
            .arg(&token)
            .invoke_async::<i64>(&mut conn)
            .await;
        return result;
    }
}

/// The creation itself, under the lock: every data key, then the metadata.
async fn create_locked(
    conn: &mut Connection,
    options: &StoreOptions,
    meta_key: &str,
    wanted: &Meta,
) -> RedisResult<Vec<(String, String)>> {
    let stored: Vec<(String, String)> = redis::cmd("HGETALL")
        .arg(meta_key)
        .query_async(conn)
        .await?;
    if !stored.is_empty() {
        return Ok(stored);
    }
    let header = wanted.header_bytes();
    for index in 0..wanted.data_keys() {
        let key = options.data_key(index, wanted.data_keys());
        let bytes = HEADER_BITS / 8 + wanted.key_segments(index) * wanted.layout.segment_bytes();
        // SETRANGE on a missing key allocates exactly `offset + 1` bytes (SETBIT and BITFIELD
        // grow strings in doubling steps).
        redis::pipe()
            .atomic()
            .cmd("DEL")
            .arg(&key)
            .ignore()
            .cmd("SETRANGE")
            .arg(&key)
            .arg(bytes - 1)
            .arg(&b"\0"[..])
            .ignore()
            .cmd("SETRANGE")
            .arg(&key)
            .arg(0)
            .arg(&header[..])
            .ignore()
            .query_async::<()>(conn)
            .await?;
    }
    let mut hset = redis::cmd("HSET");
    hset.arg(meta_key);
    for (field, value) in wanted.fields() {
        hset.arg(field).arg(value);
    }
    hset.query_async::<()>(conn).await?;
    redis::cmd("HGETALL").arg(meta_key).query_async(conn).await
}

impl RedisSegmentStore {
    /// Before a request to `node`: connects if needed and returns the connection's
    /// generation. A connection the store has not met yet may lead to a Redis that restarted
    /// and lost bits, so the cache of known bits is emptied, and when it serves the metadata,
    /// the metadata is checked again.
    pub(crate) async fn ready(&self, conn: &Connection, node: &str) -> Result<u64, Failure> {
        let generation = conn.ready(node).await?;
        if self.known.new_connection(generation) {
            // Only after connecting, so no bit learned from an older server outlives this.
            self.known.clear();
            let checked = if conn.node_of(self.meta_key.as_bytes()) == node {
                self.check_meta(conn.clone()).await
            } else {
                Ok(())
            };
            if let Err(e) = checked {
                // Checked again on the next attempt.
                self.known.unchecked(generation);
                return Err(e);
            }
        }
        Ok(generation)
    }

    /// Checks that the metadata is still the one this store opened: missing or of another
    /// generation, the filter was reset, and carrying on would admit again what it had
    /// admitted.
    async fn check_meta(&self, mut conn: Connection) -> Result<(), Failure> {
        let stored: Vec<(String, String)> = redis::cmd("HGETALL")
            .arg(&self.meta_key)
            .query_async(&mut conn)
            .await?;
        if stored.is_empty() {
            return Err(self.reset("its metadata is gone").into());
        }
        let stored = Meta::parse(&self.meta_key, &stored, Some(self.meta.key))?;
        self.meta.check_against(&stored)?;
        if stored.generation != self.meta.generation {
            return Err(self
                .reset(&format!(
                    "it was re-created (generation {}, opened as {})",
                    stored.generation, self.meta.generation
                ))
                .into());
        }
        Ok(())
    }
}
