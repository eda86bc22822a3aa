//! Membership changes that [`PartitionTable::apply`](crate::PartitionTable::apply) takes in
//! batches.

use crate::NodeId;

/// One membership change.
///
/// # Examples
///
/// ```
/// use url_dedup_partition::{Change, NodeId};
///
/// assert_eq!(Change::join(NodeId(4)), Change::Join { node: NodeId(4), weight: 1 });
/// assert_eq!(Change::leave(NodeId(4)).node(), NodeId(4));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum Change {
    /// A node joins with a capacity weight (its share of virtual nodes is proportional).
    Join {
        /// The new node.
        node: NodeId,
        /// Its capacity, at least 1.
        weight: u32,
    },
    /// A node leaves; its virtual nodes are handed to the others.
    Leave {
        /// The departing node.
        node: NodeId,
    },
    /// A node's capacity changes.
    Reweight {
        /// The node.
        node: NodeId,
        /// Its new capacity, at least 1.
        weight: u32,
    },
}

impl Change {
    /// A join with weight 1.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{Change, NodeId};
    ///
    /// assert!(matches!(Change::join(NodeId(1)), Change::Join { weight: 1, .. }));
    /// ```
    pub fn join(node: NodeId) -> Self {
        Self::Join { node, weight: 1 }
    }

    /// A join with an explicit weight.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{Change, NodeId};
    ///
    /// assert!(matches!(Change::join_weighted(NodeId(1), 3), Change::Join { weight: 3, .. }));
    /// ```
    pub fn join_weighted(node: NodeId, weight: u32) -> Self {
        Self::Join { node, weight }
    }

    /// A leave.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{Change, NodeId};
    ///
    /// assert_eq!(Change::leave(NodeId(2)), Change::Leave { node: NodeId(2) });
    /// ```
    pub fn leave(node: NodeId) -> Self {
        Self::Leave { node }
    }

    /// A new weight for a member.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{Change, NodeId};
    ///
    /// assert_eq!(Change::reweight(NodeId(2), 5).node(), NodeId(2));
    /// ```
    pub fn reweight(node: NodeId, weight: u32) -> Self {
        Self::Reweight { node, weight }
    }

    /// The node the change is about.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{Change, NodeId};
    ///
    /// assert_eq!(Change::join(NodeId(8)).node(), NodeId(8));
    /// ```
    pub fn node(&self) -> NodeId {
        match *self {
            Self::Join { node, .. } | Self::Leave { node } | Self::Reweight { node, .. } => node,
        }
    }
}
