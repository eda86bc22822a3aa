//! Distributed URL deduplication and crawl coordination on Redis (documents 003 and 001 of
//! the url-dedup workspace).
//!
//! When one machine is not enough, crawlers on many machines share their work and their
//! "seen" state through one Redis. Document 003 used ZooKeeper for coordination and Redis for
//! the queue and the filter; here Redis serves every role, so one engine is enough:
//!
//! | role (document 003) | here | Redis mechanism |
//! |---|---|---|
//! | distributed URL task queue | [`Frontier`] | per-host lists, a ready sorted set, per-worker processing hashes, Lua scripts |
//! | node membership (ephemeral nodes) | [`Membership`] | heartbeat keys with `PX` TTL |
//! | coordinator election | [`LeaderLease`] | `SET NX PX` lease, fencing [`Epoch`] from `INCR` |
//! | dynamic configuration (watched node) | [`SharedConfig`] | hash + version counter + pub/sub |
//! | waking sleeping spiders | [`Frontier::claim_wait`] | pub/sub channel, polling fallback |
//! | global URL ids (sequential nodes) | [`GlobalIds`] | `INCR`/`INCRBY` |
//!
//! `docs/redis.md` in the repository explains the mapping and its failure cases in detail.
//!
//! # Quick start
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
//! * **Redis restarts and outages.** Every call runs through [`Link`], which reconnects and
//!   retries with exponential backoff ([`Backoff`]) and then returns [`Error::Unavailable`];
//!   nothing panics. Each operation is safe to repeat when a reply was lost: pushes and claims
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
//! * `testing`: [`testing::RedisServer`], a throwaway `redis-server` on a free loopback port,
//!   for the tests of this crate and of crates built on it.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod error;
mod frontier;
mod ids;
mod leader;
mod link;
mod membership;
mod namespace;
mod resp;
mod segment_store;
mod shared_config;
mod signal;
mod task;
#[cfg(feature = "testing")]
pub mod testing;
mod wire;

pub use error::{Error, Result};
pub use frontier::{Claim, Frontier, FrontierSettings};
pub use ids::GlobalIds;
pub use leader::{Epoch, LeaderLease};
pub use link::{Backoff, Link};
pub use membership::Membership;
pub use namespace::{Namespace, WorkerId};
pub use segment_store::{RedisSegmentStore, StoreOptions, Uncertain, WriteMode};
pub use shared_config::{ConfigSnapshot, SharedConfig};
pub use task::{ClaimedTask, MAX_HOST_LEN, NewTask};
