//! The plan a membership change produces: which virtual nodes move, from whom, to whom.

use crate::{NodeId, VirtualNode};

/// One virtual node changing owner.
///
/// # Examples
///
/// ```
/// use url_dedup_partition::{Move, NodeId, VirtualNode};
///
/// let m = Move { vnode: VirtualNode(5), from: NodeId(1), to: NodeId(2) };
/// assert_eq!(m.to_string(), "virtual node 5: node 1 -> node 2");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Move {
    /// The virtual node that moves, with its filter shard.
    pub vnode: VirtualNode,
    /// Its owner at the migration's starting epoch.
    pub from: NodeId,
    /// Its owner at the migration's final epoch.
    pub to: NodeId,
}

impl std::fmt::Display for Move {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {} -> {}", self.vnode, self.from, self.to)
    }
}

/// Everything that changes owner between two epochs of a table, in ascending virtual-node
/// order.
///
/// A node applies its part: it exports the shards of [`outgoing`](Self::outgoing) moves and
/// waits for those of [`incoming`](Self::incoming) moves (see
/// [`ShardedFilter`](crate::ShardedFilter)).
///
/// # Examples
///
/// ```
/// use url_dedup_partition::{NodeId, PartitionTable};
///
/// let mut table = PartitionTable::builder()
///     .virtual_nodes(16)
///     .nodes([NodeId(1), NodeId(2)])
///     .build()?;
/// let m = table.join(NodeId(3))?;
/// assert_eq!((m.from_epoch(), m.to_epoch()), (0, 1));
/// assert_eq!(m.len(), 16 / 3); // average = floor(N / M)
/// assert!(m.moves().iter().all(|mv| mv.to == NodeId(3)));
/// assert_eq!(m.incoming(NodeId(3)).count(), m.len());
/// # Ok::<(), url_dedup_partition::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Migration {
    from_epoch: u64,
    to_epoch: u64,
    moves: Vec<Move>,
}

impl Migration {
    pub(crate) fn new(from_epoch: u64, to_epoch: u64, mut moves: Vec<Move>) -> Self {
        moves.sort_unstable_by_key(|m| m.vnode);
        Self {
            from_epoch,
            to_epoch,
            moves,
        }
    }

    /// The table's epoch before the change.
    ///
    /// # Examples
    ///
    /// See [`Migration`].
    pub fn from_epoch(&self) -> u64 {
        self.from_epoch
    }

    /// The table's epoch after the change.
    ///
    /// # Examples
    ///
    /// See [`Migration`].
    pub fn to_epoch(&self) -> u64 {
        self.to_epoch
    }

    /// Every move, in ascending virtual-node order.
    ///
    /// # Examples
    ///
    /// See [`Migration`].
    pub fn moves(&self) -> &[Move] {
        &self.moves
    }

    /// Number of virtual nodes that change owner.
    ///
    /// # Examples
    ///
    /// See [`Migration`].
    pub fn len(&self) -> usize {
        self.moves.len()
    }

    /// Whether nothing moves.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{Change, NodeId, PartitionTable};
    ///
    /// let mut table = PartitionTable::builder().virtual_nodes(8).nodes([NodeId(1)]).build()?;
    /// assert!(table.apply([])?.is_empty());
    /// # Ok::<(), url_dedup_partition::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.moves.is_empty()
    }

    /// The moves whose shard `node` must send away.
    ///
    /// # Examples
    ///
    /// See [`Migration`].
    pub fn outgoing(&self, node: NodeId) -> impl Iterator<Item = &Move> + '_ {
        self.moves.iter().filter(move |m| m.from == node)
    }

    /// The moves whose shard `node` will receive.
    ///
    /// # Examples
    ///
    /// See [`Migration`].
    pub fn incoming(&self, node: NodeId) -> impl Iterator<Item = &Move> + '_ {
        self.moves.iter().filter(move |m| m.to == node)
    }

    /// The fraction of the key space that changes owner: `len / virtual_nodes`.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{NodeId, PartitionTable};
    ///
    /// let mut table = PartitionTable::builder()
    ///     .virtual_nodes(1024)
    ///     .nodes((1..=4).map(NodeId))
    ///     .build()?;
    /// let m = table.leave(NodeId(2))?;
    /// assert_eq!(m.fraction_moved(table.virtual_nodes()), 0.25);
    /// # Ok::<(), url_dedup_partition::Error>(())
    /// ```
    pub fn fraction_moved(&self, virtual_nodes: u32) -> f64 {
        self.moves.len() as f64 / f64::from(virtual_nodes.max(1))
    }
}
