//! The near-duplicate index in Redis: the permuted tables of [`NearIndex`] as Redis sets,
//! shared by the processes of a crawl.
//!
//! Table `t` is the sets `{name}:near:t:B`, one per bucket `B` (the top 16 bits of the table's
//! key, in hex); a set holds the fingerprints of its bucket as 16 hex digits. A query reads
//! the query's bucket of every table and checks distances in a Lua script, which also inserts
//! when asked: of several processes inserting near duplicates at once, exactly one is told
//! "none near". All keys carry the hash tag `{name}`, so the index lives in one slot of a
//! Redis Cluster and the script is legal there. Redis holds about 16 bytes per fingerprint per
//! table in its small-set encoding, plus a fixed cost per bucket set.

use redis::Script;
use url_dedup_redis::Link;

use crate::{IndexError, NearIndex, SimHash};

/// Bits of a table key that name a bucket set.
const BUCKET_BITS: u32 = 16;

const SCRIPT: &str = r"
-- KEYS: one bucket per table, then the count. ARGV: k, fingerprint (16 hex digits), mode
-- ('find', 'add' to insert when none is near, 'put' to insert unless present).
local k = tonumber(ARGV[1])
local q = ARGV[2]
local qh = tonumber(string.sub(q, 1, 8), 16)
local ql = tonumber(string.sub(q, 9, 16), 16)
local function ones(x)
  local c = 0
  while x ~= 0 do
    x = bit.band(x, x - 1)
    c = c + 1
  end
  return c
end
local tables = #KEYS - 1
local best, bestd = false, 65
if ARGV[3] ~= 'put' then
  for i = 1, tables do
    for _, m in ipairs(redis.call('SMEMBERS', KEYS[i])) do
      local d = ones(bit.bxor(tonumber(string.sub(m, 1, 8), 16), qh))
        + ones(bit.bxor(tonumber(string.sub(m, 9, 16), 16), ql))
      if d <= k and (d < bestd or (d == bestd and m < best)) then
        best, bestd = m, d
      end
    end
  end
end
if ARGV[3] == 'find' or best then
  return best
end
local added = 0
for i = 1, tables do
  added = redis.call('SADD', KEYS[i], q)
end
if added == 1 then
  redis.call('INCR', KEYS[#KEYS])
end
if ARGV[3] == 'put' then
  return added
end
return false
";

fn script() -> &'static Script {
    static SCRIPT_CELL: std::sync::OnceLock<Script> = std::sync::OnceLock::new();
    SCRIPT_CELL.get_or_init(|| Script::new(SCRIPT))
}

/// A [`NearIndex`] in Redis, shared by every process that opens it by the same name.
///
/// # Examples
///
/// ```
/// # use url_dedup_redis::testing::RedisServer;
/// # let Some(server) = RedisServer::start_or_skip("RedisNearIndex example") else { return };
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use url_dedup_fingerprint::{RedisNearIndex, SimHash};
/// use url_dedup_redis::Link;
///
/// let link = Link::connect(&server.url()).await?;
/// let index = RedisNearIndex::open(link, "crawl-1", 3, 4).await?;
/// assert_eq!(index.check_and_insert(SimHash(0xff00)).await?, None);
/// assert_eq!(index.check_and_insert(SimHash(0xff07)).await?, Some(SimHash(0xff00)));
/// assert_eq!(index.len().await?, 1);
/// # Ok::<(), url_dedup_fingerprint::IndexError>(())
/// # }).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct RedisNearIndex {
    link: Link,
    name: String,
    shape: NearIndex,
}

impl RedisNearIndex {
    /// Opens (creating it when new) the index `name` with the shape of
    /// [`NearIndex::with_blocks`]. Every process must ask for the same shape.
    ///
    /// # Errors
    ///
    /// [`IndexError::Shape`] for a shape [`NearIndex::with_blocks`] refuses, or one that
    /// differs from the shape the index was created with; [`IndexError::Redis`] when Redis
    /// fails.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("RedisNearIndex open example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_fingerprint::RedisNearIndex;
    /// use url_dedup_redis::Link;
    ///
    /// let link = Link::connect(&server.url()).await?;
    /// RedisNearIndex::open(link.clone(), "pages", 3, 4).await?;
    /// assert!(RedisNearIndex::open(link, "pages", 3, 6).await.is_err());
    /// # Ok::<(), url_dedup_fingerprint::IndexError>(())
    /// # }).unwrap();
    /// ```
    pub async fn open(
        link: Link,
        name: &str,
        max_distance: u32,
        blocks: u32,
    ) -> Result<Self, IndexError> {
        let shape = NearIndex::with_blocks(max_distance, blocks)?;
        let index = Self {
            link,
            name: name.to_owned(),
            shape,
        };
        let wanted = format!("near-index 1 distance {max_distance} blocks {blocks}");
        let key = index.key("shape");
        let found: String = index
            .link
            .run("open near index", |mut conn| {
                let (key, wanted) = (key.clone(), wanted.clone());
                async move {
                    let _: () = redis::cmd("SET")
                        .arg(&key)
                        .arg(&wanted)
                        .arg("NX")
                        .query_async(&mut conn)
                        .await?;
                    redis::cmd("GET").arg(&key).query_async(&mut conn).await
                }
            })
            .await?;
        if found != wanted {
            return Err(IndexError::Shape(format!(
                "index `{name}` in Redis is `{found}`, not `{wanted}`"
            )));
        }
        Ok(index)
    }

    fn key(&self, what: &str) -> String {
        format!("{{{}}}:near:{what}", self.name)
    }

    async fn call(&self, f: SimHash, mode: &'static str) -> Result<redis::Value, IndexError> {
        let mut keys: Vec<String> = self
            .shape
            .buckets(f, BUCKET_BITS)
            .into_iter()
            .enumerate()
            .map(|(t, b)| self.key(&format!("{t}:{b:x}")))
            .collect();
        keys.push(self.key("count"));
        let fp = f.to_string();
        let k = self.shape.max_distance();
        let value = self
            .link
            .run("near index", |mut conn| {
                let mut call = script().prepare_invoke();
                for key in &keys {
                    call.key(key);
                }
                call.arg(k).arg(&fp).arg(mode);
                async move { call.invoke_async(&mut conn).await }
            })
            .await?;
        Ok(value)
    }

    fn found(value: redis::Value) -> Result<Option<SimHash>, IndexError> {
        match value {
            redis::Value::Nil | redis::Value::Boolean(false) | redis::Value::Int(0) => Ok(None),
            redis::Value::BulkString(b) => std::str::from_utf8(&b)
                .ok()
                .and_then(|s| s.parse().ok())
                .map(Some)
                .ok_or_else(|| IndexError::Corrupt("a member that is not 16 hex digits")),
            _ => Err(IndexError::Corrupt("an unexpected reply")),
        }
    }

    /// The nearest fingerprint within the distance, as [`NearIndex::nearest`].
    ///
    /// # Errors
    ///
    /// [`IndexError::Redis`] when Redis fails; [`IndexError::Corrupt`] when a set holds
    /// something this crate did not write.
    ///
    /// # Examples
    ///
    /// See [`RedisNearIndex`].
    pub async fn nearest(&self, fingerprint: SimHash) -> Result<Option<SimHash>, IndexError> {
        Self::found(self.call(fingerprint, "find").await?)
    }

    /// [`NearIndex::check_and_insert`], atomically for every process sharing the index.
    ///
    /// # Errors
    ///
    /// As [`nearest`](Self::nearest).
    ///
    /// # Examples
    ///
    /// See [`RedisNearIndex`].
    pub async fn check_and_insert(
        &self,
        fingerprint: SimHash,
    ) -> Result<Option<SimHash>, IndexError> {
        Self::found(self.call(fingerprint, "add").await?)
    }

    /// Adds `fingerprint` whatever is near it; `false` when it was held already.
    ///
    /// # Errors
    ///
    /// As [`nearest`](Self::nearest).
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("RedisNearIndex insert example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_fingerprint::{RedisNearIndex, SimHash};
    /// let link = url_dedup_redis::Link::connect(&server.url()).await?;
    /// let index = RedisNearIndex::open(link, "pages", 3, 4).await?;
    /// assert!(index.insert(SimHash(1)).await?);
    /// assert!(index.insert(SimHash(3)).await?);
    /// assert!(!index.insert(SimHash(3)).await?);
    /// assert_eq!(index.len().await?, 2);
    /// # Ok::<(), url_dedup_fingerprint::IndexError>(())
    /// # }).unwrap();
    /// ```
    pub async fn insert(&self, fingerprint: SimHash) -> Result<bool, IndexError> {
        match self.call(fingerprint, "put").await? {
            redis::Value::Int(n) => Ok(n == 1),
            _ => Err(IndexError::Corrupt("an unexpected reply")),
        }
    }

    /// The number of fingerprints held.
    ///
    /// # Errors
    ///
    /// As [`nearest`](Self::nearest).
    ///
    /// # Examples
    ///
    /// See [`RedisNearIndex`].
    pub async fn len(&self) -> Result<u64, IndexError> {
        let key = self.key("count");
        let n: Option<u64> = self
            .link
            .run("near index count", |mut conn| {
                let key = key.clone();
                async move { redis::cmd("GET").arg(&key).query_async(&mut conn).await }
            })
            .await?;
        Ok(n.unwrap_or(0))
    }

    /// Whether the index holds nothing.
    ///
    /// # Errors
    ///
    /// As [`nearest`](Self::nearest).
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("RedisNearIndex is_empty example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let link = url_dedup_redis::Link::connect(&server.url()).await?;
    /// let index = url_dedup_fingerprint::RedisNearIndex::open(link, "pages", 3, 4).await?;
    /// assert!(index.is_empty().await?);
    /// # Ok::<(), url_dedup_fingerprint::IndexError>(())
    /// # }).unwrap();
    /// ```
    pub async fn is_empty(&self) -> Result<bool, IndexError> {
        Ok(self.len().await? == 0)
    }

    /// The shape every process of this index uses.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("RedisNearIndex shape example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let link = url_dedup_redis::Link::connect(&server.url()).await?;
    /// let index = url_dedup_fingerprint::RedisNearIndex::open(link, "pages", 3, 4).await?;
    /// assert_eq!((index.max_distance(), index.blocks()), (3, 4));
    /// # Ok::<(), url_dedup_fingerprint::IndexError>(())
    /// # }).unwrap();
    /// ```
    pub fn max_distance(&self) -> u32 {
        self.shape.max_distance()
    }

    /// The number of blocks.
    ///
    /// # Examples
    ///
    /// See [`max_distance`](Self::max_distance).
    pub fn blocks(&self) -> u32 {
        self.shape.blocks()
    }
}
