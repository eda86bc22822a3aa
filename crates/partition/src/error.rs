use url_dedup_bloom::snapshot::SnapshotError;

use crate::{NodeId, VirtualNode};

/// Everything that can go wrong building, changing, restoring or migrating a partition.
///
/// Every error is returned before anything changes: a rejected change leaves the table (and a
/// sharded filter) exactly as it was.
///
/// # Examples
///
/// ```
/// use url_dedup_partition::{Error, NodeId, PartitionTable};
///
/// let mut table = PartitionTable::builder().virtual_nodes(4).nodes([NodeId(1)]).build()?;
/// let err = table.leave(NodeId(9)).unwrap_err();
/// assert!(matches!(err, Error::UnknownNode(NodeId(9))));
/// # Ok::<(), Error>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The number of virtual nodes is not a power of two in the supported range.
    #[error(
        "{0} virtual nodes: the count must be a power of two between 1 and {max}",
        max = crate::MAX_VIRTUAL_NODES
    )]
    InvalidVirtualNodes(u64),
    /// More real nodes than virtual nodes: some node would own nothing.
    #[error("{nodes} real nodes cannot share {virtual_nodes} virtual nodes (M must not exceed N)")]
    TooManyNodes {
        /// Real nodes the change would leave in the table.
        nodes: usize,
        /// Virtual nodes in the table.
        virtual_nodes: u32,
    },
    /// A table needs at least one real node.
    #[error("a partition table needs at least one real node")]
    NoNodes,
    /// The node is not in the table.
    #[error("{0} is not in the partition table")]
    UnknownNode(NodeId),
    /// The node is already in the table (or named twice in one batch).
    #[error("{0} is already in the partition table")]
    DuplicateNode(NodeId),
    /// The change would remove the last real node.
    #[error("{0} is the last node: the table would have no owner for its virtual nodes")]
    LastNode(NodeId),
    /// A weight of zero: a node with no capacity should leave instead.
    #[error("{0} has weight 0; weights must be at least 1")]
    ZeroWeight(NodeId),
    /// A migration or transfer belongs to another epoch than the table it is applied to.
    #[error("migration goes from epoch {found}, but the table is at epoch {expected}")]
    StaleEpoch {
        /// The epoch the receiver is at.
        expected: u64,
        /// The epoch the migration or transfer names.
        found: u64,
    },
    /// The table is at the last epoch, `u64::MAX`, and can change no more: the epoch would
    /// wrap to 0, where stale migrations and shard transfers would pass for current ones. Only
    /// a table restored from a forged or damaged snapshot gets here; it still routes.
    #[error("the table is at epoch {0}, the last one: it cannot change any more")]
    EpochExhausted(u64),
    /// A migration does not describe the difference between two tables, or a transfer does not
    /// match a shard the receiver waits for.
    #[error("migration does not match the tables: {0}")]
    MigrationMismatch(&'static str),
    /// A shard is still on its way from an earlier migration.
    #[error("{0} is still waiting for its shard from an earlier migration")]
    ShardPending(VirtualNode),
    /// A shard could not be created, exported or imported.
    #[error("filter shard failed: {0}")]
    Shard(#[source] Box<dyn std::error::Error + Send + Sync + 'static>),
    /// A snapshot or transfer could not be read or written, or is damaged.
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Self::Snapshot(SnapshotError::Io(e))
    }
}
