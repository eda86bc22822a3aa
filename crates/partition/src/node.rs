//! The two kinds of node: real crawler nodes and the virtual nodes the key space is cut into.

use std::fmt;

/// A real crawler node (a machine or process), named by a number the application chooses.
///
/// Ids only need to be unique within one table; every tie between nodes is broken by the id,
/// so the same history of changes yields the same table in every process.
///
/// # Examples
///
/// ```
/// use url_dedup_partition::NodeId;
///
/// assert!(NodeId(1) < NodeId(2));
/// assert_eq!(NodeId(7).to_string(), "node 7");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct NodeId(pub u32);

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "node {}", self.0)
    }
}

/// One of the N fixed slices of the key space (document 000's "virtual crawl node").
///
/// A key's virtual node never changes; only the real node that owns it does. The number is in
/// `0..N`.
///
/// # Examples
///
/// ```
/// use url_dedup_partition::VirtualNode;
///
/// assert_eq!(VirtualNode(3).index(), 3);
/// assert_eq!(VirtualNode(3).to_string(), "virtual node 3");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct VirtualNode(pub u32);

impl VirtualNode {
    /// The number as an index into per-virtual-node arrays.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(url_dedup_partition::VirtualNode(9).index(), 9usize);
    /// ```
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for VirtualNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "virtual node {}", self.0)
    }
}
