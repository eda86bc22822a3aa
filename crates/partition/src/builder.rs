//! Configuration of a new [`PartitionTable`].

use std::collections::BTreeMap;

use url_dedup_bloom::hash::{HashKey, ItemHasher, SipHash13};

use crate::{Error, NodeId, PartitionTable, RouteKey};

/// The default number of virtual nodes: Redis Cluster's 16384 slots. Large enough that
/// balance is within 1% up to 160 nodes, small enough (64 KiB of 4-byte owners) to stay in
/// the L1/L2 cache while routing.
pub const DEFAULT_VIRTUAL_NODES: u32 = 16384;

/// Builds a [`PartitionTable`]: number of virtual nodes, initial members and weights, hash key
/// and key function.
///
/// Every process of a cluster must use the same key: it decides which virtual node a URL
/// belongs to. A random key (the default) suits a single process or a table that is shipped to
/// the others as a snapshot.
///
/// # Examples
///
/// ```
/// use url_dedup_partition::{NodeId, PartitionTable, RouteKey};
/// use url_dedup_bloom::hash::HashKey;
///
/// let table = PartitionTable::builder()
///     .virtual_nodes(4096)
///     .key(HashKey::from_bytes(*b"cluster-secret-1"))
///     .route_by(RouteKey::Host)
///     .nodes([NodeId(1), NodeId(2)])
///     .weighted_node(NodeId(3), 2)
///     .build()?;
/// let counts: Vec<u32> = table.nodes().iter().map(|n| n.virtual_nodes).collect();
/// assert_eq!(counts, [1024, 1024, 2048]);
/// # Ok::<(), url_dedup_partition::Error>(())
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct Builder<H = SipHash13> {
    virtual_nodes: u64,
    route_key: RouteKey,
    hasher: Option<H>,
    nodes: Vec<(NodeId, u32)>,
}

impl Default for Builder<SipHash13> {
    fn default() -> Self {
        Self {
            virtual_nodes: u64::from(DEFAULT_VIRTUAL_NODES),
            route_key: RouteKey::Url,
            hasher: None,
            nodes: Vec::new(),
        }
    }
}

impl<H: ItemHasher> Builder<H> {
    /// The number of virtual nodes N: a power of two, fixed for the table's life.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{Error, NodeId, PartitionTable};
    ///
    /// let err = PartitionTable::builder().virtual_nodes(1000).nodes([NodeId(1)]).build();
    /// assert!(matches!(err, Err(Error::InvalidVirtualNodes(1000))));
    /// ```
    pub fn virtual_nodes(mut self, n: u64) -> Self {
        self.virtual_nodes = n;
        self
    }

    /// What is hashed for routing: the whole URL (default) or its host.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{NodeId, PartitionTable, RouteKey};
    ///
    /// let t = PartitionTable::builder().route_by(RouteKey::Host).nodes([NodeId(1)]).build()?;
    /// assert_eq!(t.route_key(), RouteKey::Host);
    /// # Ok::<(), url_dedup_partition::Error>(())
    /// ```
    pub fn route_by(mut self, key: RouteKey) -> Self {
        self.route_key = key;
        self
    }

    /// The routing hash key, shared by every process of the cluster.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{NodeId, PartitionTable};
    /// use url_dedup_bloom::hash::HashKey;
    ///
    /// let b = PartitionTable::builder().key(HashKey::from_bytes([1; 16])).nodes([NodeId(1), NodeId(2)]);
    /// assert_eq!(b.clone().build()?.route("x"), b.build()?.route("x"));
    /// # Ok::<(), url_dedup_partition::Error>(())
    /// ```
    pub fn key(mut self, key: HashKey) -> Self {
        self.hasher = Some(H::from_key(key));
        self
    }

    /// Another hasher, for example [`Xxh3`](url_dedup_bloom::Xxh3) for trusted input.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{NodeId, PartitionTable};
    /// use url_dedup_bloom::hash::{HashKey, Xxh3};
    ///
    /// let t = PartitionTable::builder().hasher(Xxh3::new(HashKey::from_bytes([0; 16]))).nodes([NodeId(1)]).build()?;
    /// assert_eq!(t.route("x").1, NodeId(1));
    /// # Ok::<(), url_dedup_partition::Error>(())
    /// ```
    pub fn hasher<H2: ItemHasher>(self, hasher: H2) -> Builder<H2> {
        Builder {
            virtual_nodes: self.virtual_nodes,
            route_key: self.route_key,
            hasher: Some(hasher),
            nodes: self.nodes,
        }
    }

    /// Adds members of weight 1.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{NodeId, PartitionTable};
    ///
    /// let t = PartitionTable::builder().nodes((1..=3).map(NodeId)).build()?;
    /// assert_eq!(t.node_count(), 3);
    /// # Ok::<(), url_dedup_partition::Error>(())
    /// ```
    pub fn nodes(mut self, nodes: impl IntoIterator<Item = NodeId>) -> Self {
        self.nodes.extend(nodes.into_iter().map(|n| (n, 1)));
        self
    }

    /// Adds a member with a capacity weight.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{NodeId, PartitionTable};
    ///
    /// let t = PartitionTable::builder().virtual_nodes(8).weighted_node(NodeId(1), 3).weighted_node(NodeId(2), 1).build()?;
    /// assert_eq!(t.nodes()[0].virtual_nodes, 6);
    /// # Ok::<(), url_dedup_partition::Error>(())
    /// ```
    pub fn weighted_node(mut self, node: NodeId, weight: u32) -> Self {
        self.nodes.push((node, weight));
        self
    }

    /// Builds the table at epoch 0, every member at its weighted share, virtual nodes dealt
    /// round-robin so each node's are spread over the key space.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidVirtualNodes`], [`Error::NoNodes`], [`Error::DuplicateNode`],
    /// [`Error::ZeroWeight`] or [`Error::TooManyNodes`].
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{Error, NodeId, PartitionTable};
    ///
    /// assert!(matches!(PartitionTable::builder().build(), Err(Error::NoNodes)));
    /// let twice = PartitionTable::builder().nodes([NodeId(1), NodeId(1)]).build();
    /// assert!(matches!(twice, Err(Error::DuplicateNode(NodeId(1)))));
    /// ```
    pub fn build(self) -> Result<PartitionTable<H>, Error> {
        let mut members = BTreeMap::new();
        for (node, weight) in self.nodes {
            if members.insert(node, weight).is_some() {
                return Err(Error::DuplicateNode(node));
            }
        }
        let hasher = self.hasher.unwrap_or_else(H::random);
        crate::table::check_virtual_nodes(self.virtual_nodes)?;
        PartitionTable::assemble(hasher, self.route_key, self.virtual_nodes as u32, &members)
    }
}
