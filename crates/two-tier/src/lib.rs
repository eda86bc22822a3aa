//! The two-tier URL dedup protocol of document 001 ("a Redis-based URL dedup protocol for
//! distributed crawlers"), faithfully, over Redis.
//!
//! A crawler system is split into networks. Each network has **local hosts**, which crawl,
//! and one **center**, which coordinates dedup inside the network and speaks for it to the
//! **other networks' centers**. Every node owns its own Redis:
//!
//! | node | pools (the paper's names) |
//! |---|---|
//! | local host | `finish_URL` (digests of crawled URLs), `task_pool` (URLs to crawl), `URL_pool` (newly found URLs) |
//! | center | `task_URL` (URLs that passed dedup), `local_reduce_pool`, `dist_reduce_pool` (frames awaiting answers) |
//!
//! Nodes exchange one kind of message, the [`Frame`] `{URL_set, IP, number, flag}` in JSON:
//!
//! 1. **Local dedup** ([`LocalHost`]): a host takes a batch from `URL_pool`, drops the URLs
//!    whose digest is in its `finish_URL`, and sends the rest as `{url: 0, ...}` with a
//!    system-wide unique `number`, its own `IP` and `flag = 1` to its center.
//! 2. **LAN dedup** ([`Center`]): the center stores the frame in `local_reduce_pool` with
//!    `flag = 2` and sends it to every other host of the network. Each host sets to 1 the URLs
//!    it finished and answers with `flag = 3`. The center deletes every URL an answer marks;
//!    when all hosts answered, or the LAN timeout passed, the frame moves on.
//! 3. **Distributed dedup**: the center moves the frame to `dist_reduce_pool`, puts its own
//!    `IP` in it and sends it (`flag = 2`) to the other networks' centers. Each of those asks
//!    all of its hosts, collects their marks and sends the frame back (`flag = 3`). The first
//!    center deletes the marked URLs; when every network answered, or the WAN timeout passed,
//!    the survivors go to `task_URL`, from which the center fills its hosts' `task_pool`s.
//!
//! [`docs/two-tier.md`](https://github.com/url-dedup/url-dedup/blob/main/docs/two-tier.md) in the repository maps every step to the paper's text and states what
//! was chosen where the paper is silent; the main choices are listed below.
//!
//! # Example
//!
//! ```
//! # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
//! use std::time::Duration;
//! use url_dedup_two_tier::testing::{Cluster, quick_settings};
//!
//! // Two networks with two hosts each, every node on its own redis-server.
//! let Some(mut cluster) = Cluster::launch(&[2, 2], quick_settings()).await? else { return Ok(()) };
//! cluster.start_all().await?;
//!
//! let crawled_elsewhere = cluster.local_host(cluster.host_ip(1, 0)).await?;
//! crawled_elsewhere.finish(&["https://example.com/a"]).await?;
//!
//! let here = cluster.local_host(cluster.host_ip(0, 0)).await?;
//! here.discover(&["https://example.com/a", "https://example.com/b"]).await?;
//!
//! assert!(cluster.wait_idle(Duration::from_secs(20)).await?);
//! assert_eq!(cluster.all_tasks().await?, ["https://example.com/b"]);
//! cluster.shutdown().await?;
//! # Ok::<(), url_dedup_two_tier::Error>(())
//! # }).unwrap();
//! ```
//!
//! # Choices where the paper is silent
//!
//! * **Transport.** A frame for node B is pushed onto the list `inbox:<sender IP>` in B's
//!   Redis; B drains its inboxes with one script and blocks on a wake list when idle. The
//!   list a frame arrives through names the sender (as a socket would), so the frame keeps
//!   exactly the paper's four fields. Frames wait in Redis while their receiver is down.
//! * **`IP`.** The requester's address: the submitting host's while the frame is in its
//!   network, the center's once it travels to other networks (the paper's "若IP為本機IP").
//!   Answers keep the request's `IP`.
//! * **`number`.** `(id << 10) | network`, with `id` from an `INCRBY` counter on the
//!   network's center ([`FrameNumber`]); hosts reserve ids in blocks.
//! * **Marks from other networks.** The paper's text says a center answering another
//!   network's request sets a URL to 1 when a host's answer holds 0 there; read literally,
//!   every URL nobody crawled would be dropped. Here a URL is set to 1 when any host marked
//!   it, which is what the requesting network then deletes.
//! * **Timeouts.** A frame whose answers do not all arrive in time completes with those that
//!   did; URLs nobody answered for are kept (crawled, rather than lost). Answers arriving
//!   later are ignored: they no longer find their frame in the phase they belong to.
//! * **Exactly once.** A center admits a frame number once (a seen-marker and the pool write
//!   in one script); a host answers a request once; an answer counts once per answerer.
//! * **Malformed frames** (bad JSON, unknown fields, flags outside 1–3, marks other than 0/1,
//!   repeated URLs, over-long URLs, too many URLs, oversized frames, a sender not allowed to
//!   send that flag) are logged with `tracing::error!`, counted in [`Stats::rejected`] and
//!   change nothing. Oversized frames are dropped inside Redis and never transferred.
//! * **What the paper's dedup does not catch.** Two hosts that find the same new URL at the
//!   same time both pass it: the protocol checks against *finished* URLs only. The shared
//!   filter of `url-dedup-redis` admits each URL once; [`docs/two-tier.md`](https://github.com/url-dedup/url-dedup/blob/main/docs/two-tier.md) measures both.
//!
//! # Running it
//!
//! The `url-dedup-two-tier` binary runs one role per process from a topology file
//! ([`Topology`] as JSON): `url-dedup-two-tier --topology t.json center --ip 10.1.0.254`,
//! `... host --ip 10.1.0.1`. Built with the `testing` feature, `url-dedup-two-tier demo` runs
//! two networks in one process on throwaway `redis-server`s; `testing::Cluster` does the
//! same for tests.
//!
//! # Features
//!
//! * `testing`: `testing::Cluster`.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod center;
mod error;
mod frame;
mod host;
mod keys;
mod mailbox;
mod number;
mod settings;
mod stats;
#[cfg(feature = "testing")]
pub mod testing;
mod topology;

pub use center::Center;
pub use error::{Error, FrameError, Result};
pub use frame::{Flag, Frame, FrameLimits, UrlSet};
pub use host::LocalHost;
pub use keys::Keys;
pub use number::FrameNumber;
pub use settings::Settings;
pub use stats::Stats;
pub use topology::{MAX_NETWORKS, Network, Node, Topology};
