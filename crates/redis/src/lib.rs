//! Distributed URL deduplication and crawl coordination on Redis (document 003 of the
//! url-dedup workspace).
//!
//! When one machine is not enough, crawlers on many machines share their work and their
//! "seen" state through one Redis. Document 003 used ZooKeeper for coordination and Redis for
//! the queue and the filter; here Redis serves every role, so one engine is enough:
//!
//! | role (document 003) | here | Redis mechanism |
//! |---|---|---|
//! | distributed segmented Bloom filter | [`RedisSegmentStore`] | one `BITFIELD key SET u1 o 1 ...` per key and batch |
//! | distributed URL task queue | [`Frontier`] | per-host lists, a ready sorted set, per-worker processing hashes, Lua scripts |
//! | node membership (ephemeral nodes) | [`Membership`] | heartbeat keys with `PX` TTL |
//! | coordinator election | [`LeaderLease`] | `SET NX PX` lease, fencing [`Epoch`] from `INCR` |
//! | dynamic configuration (watched node) | [`SharedConfig`] | hash + version counter + pub/sub |
//! | waking sleeping spiders | [`Frontier::claim_wait`] | pub/sub channel, polling fallback |
//! | global URL ids (sequential nodes) | [`GlobalIds`] | `INCR`/`INCRBY` |
//!
//! [`docs/redis.md`](https://github.com/url-dedup/url-dedup/blob/main/docs/redis.md) in the repository explains the mapping and its failure cases in detail.
//!
//! # The shared filter
//!
//! [`RedisSegmentStore`] keeps the segments of a
//! [`SegmentedBloomFilter`](url_dedup_segmented::SegmentedBloomFilter) in Redis strings. An
//! item's bits all lie in one segment, so one `BITFIELD` command tests and sets them
//! atomically: of several processes inserting the same new URL at once, exactly one is told
//! "new", with no lock. A batch is one pipelined round trip; the metadata key refuses a
//! process that would compute other bits ([`Error::Mismatch`]).
//!
//! ```
//! # use url_dedup_redis::testing::RedisServer;
//! # let Some(server) = RedisServer::start_or_skip("crate filter example") else { return Ok(()) };
//! # let url = server.url();
//! use url_dedup_bloom::{HashKey, SipHash13};
//! use url_dedup_redis::{RedisSegmentStore, StoreOptions};
//!
//! // 10 million URLs at 1%: k = 2, about 2.5 bytes per URL in Redis.
//! let layout = RedisSegmentStore::layout_for(10_000_000, 0.01)?;
//! let hasher = SipHash13::new(HashKey::from_bytes(*b"keep this secret"));
//! let seen = RedisSegmentStore::create_filter(&url, StoreOptions::new("seen"), layout, hasher, 10_000_000)?;
//! let new = seen.try_check_and_insert_batch(&["https://example.com/", "https://example.com/", "https://example.com/a"])?;
//! assert_eq!(new, [true, false, true]);
//! # Ok::<(), url_dedup_redis::Error>(())
//! ```
//!
//! The growing [`SharedFilter`] is what the tools use. At its default rate,
//! [`DEFAULT_SHARED_FPR`] (10⁻⁵, 3 bits per URL), `url-dedup --redis` cost Redis 0.50 and 0.58
//! times the CPU per line of `SADD` of the URL with 1 and 4 clients, at 43 and 21 bytes per URL
//! against 127 (2 million lines, random read 560 ns, load 7 to 8; `benches/redis-vs-sadd.sh`,
//! command and figures in [`docs/redis.md`](https://github.com/url-dedup/url-dedup/blob/main/docs/redis.md)).
//!
//! # A Redis Cluster
//!
//! Every structure runs on a cluster unchanged: name it by comma-separated seed URLs, or by
//! the URL of any one node. The filter's data keys spread over the slots, batches go to each
//! master in one pipeline and follow `MOVED` and `ASK` while slots move, and
//! [`StoreOptions::acknowledge`] waits for replicas (`WAIT`) where a failover must not lose
//! admissions. See [`docs/redis.md`](https://github.com/url-dedup/url-dedup/blob/main/docs/redis.md), "Redis Cluster".
//!
//! # The frontier
//!
//! ```
//! # use url_dedup_redis::testing::RedisServer;
//! # let Some(server) = RedisServer::start_or_skip("crate example") else { return };
//! # let url = server.url();
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use std::time::Duration;
//! use url_dedup_redis::{Frontier, Link, Membership, Namespace, NewTask, WorkerId};
//!
//! let link = Link::connect(&url).await?;            // reconnects with backoff by itself
//! let ns = Namespace::new("news-crawl")?;
//! let frontier = Frontier::new(link.clone(), ns.clone());
//! let members = Membership::new(link, ns);
//!
//! frontier.push(&[NewTask::from_url("https://example.com/")?]).await?;
//!
//! let me = WorkerId::random("spider");
//! members.join(&me).await?;                          // heartbeat at least every ttl / 3
//! while let Some(task) = frontier.claim_wait(&me, Duration::from_millis(100)).await? {
//!     println!("crawl {} (id {})", task.url(), task.id());
//!     frontier.ack(&task).await?;                     // or release() to retry later
//! }
//! members.leave(&me).await?;
//! # Ok::<(), url_dedup_redis::Error>(())
//! # }).unwrap();
//! ```
//!
//! # Guarantees
//!
//! * **At-least-once, never lost.** A task is always in exactly one place: its host's queue or
//!   one worker's processing hash; every move between the two is one Lua script. A worker that
//!   dies holding tasks loses its membership lease, and [`Frontier::requeue_dead`] puts its
//!   tasks back at the front of their queues.
//! * **One worker per host.** A claimed task's host leaves the ready set until the task is
//!   acknowledged or released, so a site is crawled serially (document 002), with an optional
//!   politeness delay measured on the Redis clock.
//! * **Redis restarts and outages.** Every call, of every structure, runs through [`Link`],
//!   which reconnects and retries with exponential backoff ([`Backoff`]). Once Redis has been
//!   unreachable for the give-up budget, counted from its first failure and shared by every
//!   link and shared filter of the process on the same Redis, calls return
//!   [`Error::Unavailable`] at once; nothing panics. Each operation is safe to repeat when a reply was lost: pushes and claims
//!   carry tokens, acknowledgements are idempotent. What survives a Redis *crash* is Redis's
//!   persistence setting: with `appendfsync always`, every acknowledged push survives (tested).
//! * **Bounded input.** Task URLs are limited ([`FrontierSettings::max_url_len`]), names are
//!   validated, and data read back that does not have the expected shape is reported as
//!   [`Error::Corrupt`], not trusted.
//!
//! # Redis Cluster
//!
//! Every key of a [`Namespace`] carries the hash tag `{name}`, so a namespace lives in one
//! slot and the scripts' multi-key steps are legal on a cluster. Separate crawls (namespaces)
//! spread over the cluster.
//!
//! # Features
//!
//! * `testing`: `testing::RedisServer`, a throwaway `redis-server` on a free loopback port,
//!   and `testing::RedisCluster`, a throwaway Redis Cluster of such servers,
//!   for the tests of this crate and of crates built on it.
//!
//! # Choices
//!
//! * One connection layer for everything: one pipelined connection per node, owned by a
//!   thread of its own, serves the async structures (tokio) and the synchronous segment store
//!   alike (the segmented filter's `SegmentStore` trait is synchronous: call it through
//!   `spawn_blocking` from async code). Timeouts, retries, redirections, failover and giving
//!   up are decided once, in [`Link`].
//! * The segment store packs its batches and decodes their replies itself (`BITFIELD` answers
//!   one integer per bit; the `redis` crate's generic reply tree costs more client time than
//!   the commands cost Redis) and picks layouts with few hashes, since each hash is one
//!   operation Redis parses and answers. Other replies go through the `redis` crate's parser.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod blocking;
pub mod cluster;
mod connection;
mod deployment;
mod error;
mod frontier;
mod health;
mod ids;
mod io;
mod leader;
mod link;
mod membership;
mod namespace;
mod node;
mod resp;
mod retry;
mod segment_store;
mod shared_config;
mod shared_filter;
mod signal;
mod task;
#[cfg(feature = "testing")]
pub mod testing;
mod wire;

pub use connection::Connection;
pub use error::{Error, Result};
pub use frontier::{Claim, Frontier, FrontierSettings};
pub use health::LinkStats;
pub use ids::GlobalIds;
pub use leader::{Epoch, LeaderLease};
pub use link::Link;
pub use membership::Membership;
pub use namespace::{Namespace, WorkerId};
pub use retry::Backoff;
pub use segment_store::{
    Acknowledge, KnownBitsStats, REDIS_SIZE_FOR_SPEED, RedisSegmentStore, SHARED_SIZE_FOR_SPEED,
    StoreOptions, Uncertain, WriteMode,
};
pub use shared_config::{ConfigSnapshot, SharedConfig};
pub use shared_filter::{DEFAULT_SHARED_FPR, SharedFilter};
pub use task::{ClaimedTask, MAX_HOST_LEN, NewTask};
