//! Virtual-node partitioning of URLs across crawler nodes, with rebalancing that moves the
//! least possible and filter shards that travel with their virtual nodes ([document
//! 000][source], patent CN102663058B).
//!
//! [source]: https://github.com/url-dedup/url-dedup/blob/main/docs/sources.md#document-000
//!
//! A crawl cluster must agree on which node deduplicates (and crawls) each URL, and must keep
//! agreeing while nodes join and leave, without forgetting a single URL. This crate cuts the key
//! space into N fixed **virtual nodes** (16384 by default), maps each to a real node in a small
//! **table**, and changes only that mapping when membership changes.
//!
//! # Quick start
//!
//! ```
//! use url_dedup_partition::{Change, NodeId, PartitionTable, RouteKey};
//!
//! let mut table = PartitionTable::builder()
//!     .nodes((1..=10).map(NodeId))
//!     .route_by(RouteKey::Host) // one site, one crawler
//!     .build()?;
//!
//! let (vnode, node) = table.route("https://example.com/page");
//! println!("{vnode} belongs to {node}");
//!
//! // Document 000's algorithms: only the leaver's virtual nodes move.
//! let migration = table.leave(NodeId(3))?;
//! assert!(migration.moves().iter().all(|m| m.from == NodeId(3)));
//!
//! // The planner: weights, batches, and a returning node gets its virtual nodes back.
//! let back = table.apply([Change::join(NodeId(3))])?;
//! assert_eq!(back.len(), migration.len() - 1); // all but one rounding unit come home
//! # Ok::<(), url_dedup_partition::Error>(())
//! ```
//!
//! # What is inside
//!
//! * [`PartitionTable`]: routing (`route`, `route_digest`, `route_hash`), membership and the
//!   [`epoch`](PartitionTable::epoch); [`join`](PartitionTable::join) and
//!   [`leave`](PartitionTable::leave) exactly as document 000 (steps 16–33),
//!   [`apply`](PartitionTable::apply) for the planner; snapshots in the workspace format and
//!   serde.
//! * [`Migration`]: the [`Move`]s (virtual node, from, to) between two epochs.
//! * [`ShardedFilter`]: a filter shard per virtual node; shards are exported as
//!   [`ShardTransfer`]s and imported by their new owner, in one process or across processes.
//! * [`Shard`]: the small trait a filter implements to be a shard (done here for
//!   [`BloomFilter`](url_dedup_bloom::BloomFilter) and
//!   [`AtomicBloomFilter`](url_dedup_bloom::AtomicBloomFilter) with [`BloomShardParams`], and
//!   for the cache-line segmented filter with [`SegmentedShardParams`], whose shards use the
//!   split placement unless [`with_placement`](SegmentedShardParams::with_placement) says
//!   otherwise: faster single calls on shards that fit the cache, for 2% more bits).
//!
//! # Design choices
//!
//! * **Routing is a mask.** N is a power of two; the virtual node is the low `log2 N` bits of
//!   the keyed 64-bit hash `h1`, the owner a 4-byte entry of a 64 KiB array (N = 16384). From a
//!   precomputed hash a lookup costs 1–1.6 ns, an order of magnitude less than jump
//!   consistent hashing, hash rings and rendezvous hashing (see
//!   [`docs/benchmarks.md`](https://github.com/url-dedup/url-dedup/blob/main/docs/benchmarks.md)).
//! * **Keyed hashing**: the table's SipHash-1-3 key is the cluster's secret, so nobody can
//!   craft URLs that all land on one node.
//! * **"average = N/M" is `floor(N / M)`** (integer division): the smallest share that keeps
//!   the newcomer within one virtual node of the others, so a join moves the minimum.
//! * **Ties are broken by node id and virtual-node number**, never by memory layout or hash
//!   order, so every process replaying the same changes computes the same table.
//! * **The planner** ([`apply`](PartitionTable::apply)) computes weighted targets by
//!   largest-remainder apportionment (each node within one virtual node of its exact share),
//!   moves exactly what is needed to reach them, and prefers sending a virtual node back to
//!   the node that held it before. A node that leaves and rejoins therefore recovers its
//!   virtual nodes: net movement near zero instead of 2/M. A batch of changes is one plan: a
//!   replaced node's share goes straight to its replacement.
//! * **M ≤ N** is enforced ([`Error::TooManyNodes`]): a node without a virtual node could
//!   never receive work.
//! * **No URL is admitted twice across a migration**: a virtual node whose shard has not yet
//!   arrived answers [`Verdict::Pending`] rather than guessing.
//!
//! # Features
//!
//! * `serde`: `Serialize`/`Deserialize` for tables (validated on the way in), migrations,
//!   changes, transfers and ids (tested with postcard and bincode 2).
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod apportion;
mod builder;
mod change;
mod document;
mod error;
mod migration;
mod node;
mod planner;
mod route_key;
#[cfg(feature = "serde")]
mod serde_impl;
mod shard;
mod sharded;
mod table;
mod table_snapshot;
mod transfer;

pub use builder::{Builder, DEFAULT_VIRTUAL_NODES};
pub use change::Change;
pub use error::Error;
pub use migration::{Migration, Move};
pub use node::{NodeId, VirtualNode};
pub use route_key::RouteKey;
pub use shard::{BloomShardParams, SegmentedShardParams, Shard};
pub use sharded::{ShardedFilter, Verdict};
pub use table::{NodeInfo, PartitionTable};
pub use transfer::ShardTransfer;

/// The largest number of virtual nodes a table accepts (2^20): 4 MiB of owners, and
/// a million virtual nodes already balance a thousand nodes within 0.1%.
pub const MAX_VIRTUAL_NODES: u32 = 1 << 20;

/// The largest number of real nodes a table holds (snapshots store owners as 16-bit member
/// indexes).
pub const MAX_NODES: usize = 1 << 16;
