//! The partition table: virtual node -> real node, versioned by an epoch.

use std::collections::BTreeMap;

use url_dedup_bloom::hash::{Digest, ItemHasher, SipHash13};

use crate::builder::Builder;
use crate::{Change, Error, Migration, Move, NodeId, RouteKey, VirtualNode, document, planner};

/// A real node as the table records it.
///
/// # Examples
///
/// ```
/// use url_dedup_partition::{NodeId, PartitionTable};
///
/// let table = PartitionTable::builder().virtual_nodes(8).nodes([NodeId(1), NodeId(2)]).build()?;
/// let info = table.nodes();
/// assert_eq!(info[0].id, NodeId(1));
/// assert_eq!(info[0].weight, 1);
/// assert_eq!(info[0].virtual_nodes + info[1].virtual_nodes, 8);
/// # Ok::<(), url_dedup_partition::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NodeInfo {
    /// The node.
    pub id: NodeId,
    /// Its capacity weight.
    pub weight: u32,
    /// How many virtual nodes it owns.
    pub virtual_nodes: u32,
}

/// A member's record, kept sorted by id.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Member {
    pub(crate) id: NodeId,
    pub(crate) weight: u32,
    pub(crate) count: u32,
}

/// Maps every key to one of N virtual nodes, and every virtual node to the real node that owns
/// it ([document 000][source]).
///
/// [source]: https://github.com/url-dedup/url-dedup/blob/main/docs/sources.md#document-000
///
/// * **Routing** is one keyed hash and one array read: the low `log2 N` bits of the hash pick
///   the virtual node (N is a power of two, so this is a mask), and a 4-byte entry per virtual
///   node names its owner. With N = 16384 the routing array is 64 KiB and stays in cache. (A
///   2-byte index into a member list halves that but adds a dependent load; measured, the
///   single load routes 30–40% faster, see
///   [`docs/decisions.md`](https://github.com/url-dedup/url-dedup/blob/main/docs/decisions.md).)
/// * **Changes** bump the [`epoch`](Self::epoch) and return a [`Migration`]. [`join`](Self::join)
///   and [`leave`](Self::leave) are document 000's algorithms, step for step;
///   [`apply`](Self::apply) is the planner that adds weights, batches and rejoin reclaim.
/// * **Determinism**: every decision depends only on the history of changes, virtual-node
///   numbers and node ids, so every process replaying the same changes holds the same table.
///
/// # Examples
///
/// ```
/// use url_dedup_partition::{NodeId, PartitionTable, RouteKey};
///
/// let mut table = PartitionTable::builder()
///     .nodes([NodeId(1), NodeId(2), NodeId(3)])
///     .route_by(RouteKey::Host)
///     .build()?;
/// assert_eq!(table.virtual_nodes(), 16384);
///
/// let (vnode, node) = table.route("https://example.com/a");
/// // Host routing: every page of a site goes to the same crawler.
/// assert_eq!(table.route("https://example.com/b"), (vnode, node));
///
/// let migration = table.leave(node)?;
/// assert_eq!(migration.to_epoch(), table.epoch());
/// assert_ne!(table.route("https://example.com/a").1, node);
/// # Ok::<(), url_dedup_partition::Error>(())
/// ```
#[derive(Clone)]
pub struct PartitionTable<H = SipHash13> {
    pub(crate) hasher: H,
    pub(crate) route_key: RouteKey,
    pub(crate) mask: u64,
    pub(crate) epoch: u64,
    /// Owner of each virtual node: the one array routing reads.
    pub(crate) owners: Box<[NodeId]>,
    /// Members sorted by id.
    pub(crate) members: Vec<Member>,
    /// The owner each virtual node had before it last moved, for homecoming.
    pub(crate) previous: Box<[Option<NodeId>]>,
}

impl PartitionTable<SipHash13> {
    /// A builder for a table routed by keyed SipHash-1-3.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{NodeId, PartitionTable};
    ///
    /// let table = PartitionTable::builder().nodes([NodeId(1)]).build()?;
    /// assert_eq!(table.node_count(), 1);
    /// # Ok::<(), url_dedup_partition::Error>(())
    /// ```
    pub fn builder() -> Builder<SipHash13> {
        Builder::default()
    }
}

impl<H: ItemHasher> PartitionTable<H> {
    /// A table of `virtual_nodes` with the given members, filled by the planner.
    pub(crate) fn assemble(
        hasher: H,
        route_key: RouteKey,
        virtual_nodes: u32,
        members: &BTreeMap<NodeId, u32>,
    ) -> Result<Self, Error> {
        check_virtual_nodes(u64::from(virtual_nodes))?;
        check_members(members, virtual_nodes)?;
        let n = virtual_nodes as usize;
        let mut table = Self {
            hasher,
            route_key,
            mask: u64::from(virtual_nodes) - 1,
            epoch: 0,
            owners: vec![NodeId(0); n].into_boxed_slice(),
            members: members
                .iter()
                .map(|(&id, &weight)| Member {
                    id,
                    weight,
                    count: 0,
                })
                .collect(),
            previous: vec![None; n].into_boxed_slice(),
        };
        // The targets sum to N, so the plan assigns every virtual node.
        for (v, _, to) in planner::plan(&vec![None; n], &table.previous, members) {
            table.owners[v as usize] = to;
        }
        table.recount();
        Ok(table)
    }

    /// Routes a key (a URL, or a host with [`RouteKey::Host`]): its virtual node and the real
    /// node that owns it.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{NodeId, PartitionTable};
    ///
    /// let table = PartitionTable::builder().virtual_nodes(64).nodes([NodeId(1), NodeId(2)]).build()?;
    /// let (vnode, node) = table.route("https://example.com/");
    /// assert!(vnode.0 < 64);
    /// assert_eq!(table.owner(vnode), Some(node));
    /// # Ok::<(), url_dedup_partition::Error>(())
    /// ```
    #[inline]
    pub fn route(&self, key: impl AsRef<[u8]>) -> (VirtualNode, NodeId) {
        self.route_digest(self.digest(key))
    }

    /// Routes a key already hashed with [`digest`](Self::digest).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{NodeId, PartitionTable};
    ///
    /// let table = PartitionTable::builder().nodes([NodeId(1), NodeId(2)]).build()?;
    /// let d = table.digest("https://example.com/");
    /// assert_eq!(table.route_digest(d), table.route("https://example.com/"));
    /// # Ok::<(), url_dedup_partition::Error>(())
    /// ```
    #[inline]
    pub fn route_digest(&self, digest: Digest) -> (VirtualNode, NodeId) {
        self.route_hash(digest.h1)
    }

    /// Routes a precomputed 64-bit hash: its low `log2 N` bits are the virtual node.
    ///
    /// The bits are taken from the bottom so that a filter shard, which derives positions from
    /// the high bits of `h1` by multiply-shift, still sees uniformly spread values.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{NodeId, PartitionTable, VirtualNode};
    ///
    /// let table = PartitionTable::builder().virtual_nodes(16).nodes([NodeId(1)]).build()?;
    /// assert_eq!(table.route_hash(0x1234_5673), (VirtualNode(3), NodeId(1)));
    /// # Ok::<(), url_dedup_partition::Error>(())
    /// ```
    #[inline]
    pub fn route_hash(&self, hash: u64) -> (VirtualNode, NodeId) {
        let v = (hash & self.mask) as usize;
        (VirtualNode(v as u32), self.owners[v])
    }

    /// Hashes the routed part of a key (see [`RouteKey`]) with the table's keyed hasher.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{NodeId, PartitionTable, RouteKey};
    ///
    /// let table = PartitionTable::builder().nodes([NodeId(1)]).route_by(RouteKey::Host).build()?;
    /// assert_eq!(table.digest("https://a.example/x"), table.digest("https://a.example/y"));
    /// # Ok::<(), url_dedup_partition::Error>(())
    /// ```
    #[inline]
    pub fn digest(&self, key: impl AsRef<[u8]>) -> Digest {
        self.hasher.hash(self.route_key.select(key.as_ref()))
    }

    /// The table's hasher (its key must be shared by every process of a cluster).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{NodeId, PartitionTable};
    /// use url_dedup_bloom::hash::{HashKey, ItemHasher};
    ///
    /// let key = HashKey::from_bytes([3; 16]);
    /// let table = PartitionTable::builder().key(key).nodes([NodeId(1)]).build()?;
    /// assert_eq!(table.hasher().key(), key);
    /// # Ok::<(), url_dedup_partition::Error>(())
    /// ```
    pub fn hasher(&self) -> &H {
        &self.hasher
    }

    /// Which part of a key is routed.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{NodeId, PartitionTable, RouteKey};
    ///
    /// let table = PartitionTable::builder().nodes([NodeId(1)]).build()?;
    /// assert_eq!(table.route_key(), RouteKey::Url);
    /// # Ok::<(), url_dedup_partition::Error>(())
    /// ```
    pub fn route_key(&self) -> RouteKey {
        self.route_key
    }

    /// The number of virtual nodes N.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{NodeId, PartitionTable};
    ///
    /// let table = PartitionTable::builder().virtual_nodes(1024).nodes([NodeId(1)]).build()?;
    /// assert_eq!(table.virtual_nodes(), 1024);
    /// # Ok::<(), url_dedup_partition::Error>(())
    /// ```
    pub fn virtual_nodes(&self) -> u32 {
        (self.mask + 1) as u32
    }

    /// The version of the table: 0 when built, plus one for every change.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{NodeId, PartitionTable};
    ///
    /// let mut table = PartitionTable::builder().nodes([NodeId(1)]).build()?;
    /// table.join(NodeId(2))?;
    /// assert_eq!(table.epoch(), 1);
    /// # Ok::<(), url_dedup_partition::Error>(())
    /// ```
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The owner of a virtual node, or `None` if the number is out of range.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{NodeId, PartitionTable, VirtualNode};
    ///
    /// let table = PartitionTable::builder().virtual_nodes(4).nodes([NodeId(5)]).build()?;
    /// assert_eq!(table.owner(VirtualNode(3)), Some(NodeId(5)));
    /// assert_eq!(table.owner(VirtualNode(4)), None);
    /// # Ok::<(), url_dedup_partition::Error>(())
    /// ```
    pub fn owner(&self, vnode: VirtualNode) -> Option<NodeId> {
        self.owners.get(vnode.index()).copied()
    }

    /// The owner of every virtual node, in order.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{NodeId, PartitionTable};
    ///
    /// let table = PartitionTable::builder().virtual_nodes(4).nodes([NodeId(1), NodeId(2)]).build()?;
    /// let owners: Vec<NodeId> = table.owners().collect();
    /// assert_eq!(owners.len(), 4);
    /// # Ok::<(), url_dedup_partition::Error>(())
    /// ```
    pub fn owners(&self) -> impl ExactSizeIterator<Item = NodeId> + '_ {
        self.owners.iter().copied()
    }

    /// The members, by ascending id, with weight and virtual-node count.
    ///
    /// # Examples
    ///
    /// See [`NodeInfo`].
    pub fn nodes(&self) -> Vec<NodeInfo> {
        self.members
            .iter()
            .map(|m| NodeInfo {
                id: m.id,
                weight: m.weight,
                virtual_nodes: m.count,
            })
            .collect()
    }

    /// Number of real nodes M.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{NodeId, PartitionTable};
    ///
    /// let table = PartitionTable::builder().nodes([NodeId(1), NodeId(2)]).build()?;
    /// assert_eq!(table.node_count(), 2);
    /// # Ok::<(), url_dedup_partition::Error>(())
    /// ```
    pub fn node_count(&self) -> usize {
        self.members.len()
    }

    /// Whether `node` is a member.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{NodeId, PartitionTable};
    ///
    /// let table = PartitionTable::builder().nodes([NodeId(1)]).build()?;
    /// assert!(table.contains_node(NodeId(1)) && !table.contains_node(NodeId(2)));
    /// # Ok::<(), url_dedup_partition::Error>(())
    /// ```
    pub fn contains_node(&self, node: NodeId) -> bool {
        self.member(node).is_some()
    }

    /// The virtual nodes `node` owns, ascending (empty for a non-member).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{NodeId, PartitionTable, VirtualNode};
    ///
    /// let table = PartitionTable::builder().virtual_nodes(4).nodes([NodeId(1), NodeId(2)]).build()?;
    /// assert_eq!(table.virtual_nodes_of(NodeId(1)).len(), 2);
    /// assert!(table.virtual_nodes_of(NodeId(3)).is_empty());
    /// # Ok::<(), url_dedup_partition::Error>(())
    /// ```
    pub fn virtual_nodes_of(&self, node: NodeId) -> Vec<VirtualNode> {
        (0..self.owners.len() as u32)
            .filter(|&v| self.owners[v as usize] == node)
            .map(VirtualNode)
            .collect()
    }

    /// A node leaves: document 000, steps 16–24. Its virtual nodes are dealt round-robin over
    /// the remaining nodes sorted by ascending count (ties by id); nothing else moves.
    ///
    /// The literal algorithm balances counts, not weights: in a weighted table use
    /// [`apply`](Self::apply) with [`Change::leave`].
    ///
    /// # Errors
    ///
    /// [`Error::UnknownNode`] if `node` is not a member, [`Error::LastNode`] if it is the only
    /// one, [`Error::EpochExhausted`] if the table is at epoch `u64::MAX`. The table is
    /// unchanged on error.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{NodeId, PartitionTable};
    ///
    /// let mut table = PartitionTable::builder().virtual_nodes(16).nodes((1..=4).map(NodeId)).build()?;
    /// let m = table.leave(NodeId(4))?;
    /// assert_eq!(m.len(), 4);
    /// assert!(m.moves().iter().all(|mv| mv.from == NodeId(4)));
    /// let counts: Vec<u32> = table.nodes().iter().map(|n| n.virtual_nodes).collect();
    /// assert_eq!(counts, [6, 5, 5]);
    /// # Ok::<(), url_dedup_partition::Error>(())
    /// ```
    pub fn leave(&mut self, node: NodeId) -> Result<Migration, Error> {
        if self.member(node).is_none() {
            return Err(Error::UnknownNode(node));
        }
        if self.node_count() == 1 {
            return Err(Error::LastNode(node));
        }
        let moves = document::leave(&self.owners, &self.member_ids(), node);
        self.commit(&moves, &[], &[node])
    }

    /// A node joins: document 000, steps 26–33. It takes `floor(N / M)` virtual nodes, one at a
    /// time, round-robin from the existing nodes sorted by descending count (ties by id), each
    /// donor giving its highest-numbered virtual node. The newcomer gets weight 1.
    ///
    /// # Errors
    ///
    /// [`Error::DuplicateNode`] if `node` is already a member, [`Error::TooManyNodes`] if the
    /// table would have more real nodes than virtual nodes, [`Error::EpochExhausted`] if the
    /// table is at epoch `u64::MAX`. The table is unchanged on error.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{Error, NodeId, PartitionTable};
    ///
    /// let mut table = PartitionTable::builder().virtual_nodes(2).nodes([NodeId(1)]).build()?;
    /// assert_eq!(table.join(NodeId(2))?.len(), 1);
    /// assert!(matches!(table.join(NodeId(3)), Err(Error::TooManyNodes { .. })));
    /// # Ok::<(), url_dedup_partition::Error>(())
    /// ```
    pub fn join(&mut self, node: NodeId) -> Result<Migration, Error> {
        if self.member(node).is_some() {
            return Err(Error::DuplicateNode(node));
        }
        let nodes = self.node_count() + 1;
        if nodes > self.owners.len() || nodes > crate::MAX_NODES {
            return Err(Error::TooManyNodes {
                nodes,
                virtual_nodes: self.virtual_nodes(),
            });
        }
        let moves = document::join(&self.owners, &self.member_ids(), node);
        self.commit(&moves, &[(node, 1)], &[])
    }

    /// Applies a batch of membership changes as one migration, with the planner: weighted
    /// targets, only the necessary moves, and virtual nodes returned to the node that held them
    /// before when that costs no balance.
    ///
    /// The changes are validated in order against the evolving membership (a node may leave
    /// and rejoin in one batch); then one plan takes the table from the old membership to the
    /// new one, and the epoch increases by one. Each node ends within one virtual node of its
    /// weighted share; with equal weights, counts differ by at most one.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownNode`], [`Error::DuplicateNode`], [`Error::ZeroWeight`],
    /// [`Error::LastNode`] (the batch removes everyone), [`Error::TooManyNodes`] or
    /// [`Error::EpochExhausted`] (the table is at epoch `u64::MAX`). The table is unchanged on
    /// error.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{Change, NodeId, PartitionTable};
    ///
    /// let mut table = PartitionTable::builder().nodes((1..=4).map(NodeId)).build()?;
    /// // Replace node 4 by a machine twice as large, in one step.
    /// let m = table.apply([Change::leave(NodeId(4)), Change::join_weighted(NodeId(5), 2)])?;
    /// assert_eq!(table.epoch(), 1);
    /// let five = table.nodes().into_iter().find(|n| n.id == NodeId(5)).unwrap();
    /// assert!((f64::from(five.virtual_nodes) - 16384.0 * 2.0 / 5.0).abs() < 1.0);
    /// // Node 4's share went straight to node 5; the rest only what node 5 needed beyond it.
    /// assert_eq!(m.len(), five.virtual_nodes as usize);
    /// # Ok::<(), url_dedup_partition::Error>(())
    /// ```
    pub fn apply(&mut self, changes: impl IntoIterator<Item = Change>) -> Result<Migration, Error> {
        let before: BTreeMap<NodeId, u32> = self.members.iter().map(|m| (m.id, m.weight)).collect();
        let mut after = before.clone();
        for change in changes {
            match change {
                Change::Join { node, weight } => {
                    if weight == 0 {
                        return Err(Error::ZeroWeight(node));
                    }
                    if after.insert(node, weight).is_some() {
                        return Err(Error::DuplicateNode(node));
                    }
                }
                Change::Leave { node } => {
                    if after.remove(&node).is_none() {
                        return Err(Error::UnknownNode(node));
                    }
                    if after.is_empty() {
                        return Err(Error::LastNode(node));
                    }
                }
                Change::Reweight { node, weight } => {
                    if weight == 0 {
                        return Err(Error::ZeroWeight(node));
                    }
                    match after.get_mut(&node) {
                        Some(w) => *w = weight,
                        None => return Err(Error::UnknownNode(node)),
                    }
                }
            }
        }
        check_members(&after, self.virtual_nodes())?;
        let owners: Vec<Option<NodeId>> = self.owners().map(Some).collect();
        let moves: Vec<Move> = planner::plan(&owners, &self.previous, &after)
            .into_iter()
            .filter_map(|(v, from, to)| {
                from.map(|from| Move {
                    vnode: VirtualNode(v),
                    from,
                    to,
                })
            })
            .collect();
        let joined: Vec<(NodeId, u32)> = after
            .iter()
            .filter(|(id, w)| before.get(id) != Some(w))
            .map(|(&id, &w)| (id, w))
            .collect();
        let left: Vec<NodeId> = before
            .keys()
            .filter(|id| !after.contains_key(id))
            .copied()
            .collect();
        self.commit(&moves, &joined, &left)
    }

    /// Adds or reweights `joined`, applies `moves`, removes `left`, bumps the epoch.
    ///
    /// The epoch is checked before anything changes, so a refused change leaves the table as
    /// it was. It never wraps: a table back at epoch 0 would accept a stale migration or shard
    /// transfer as current.
    fn commit(
        &mut self,
        moves: &[Move],
        joined: &[(NodeId, u32)],
        left: &[NodeId],
    ) -> Result<Migration, Error> {
        let from = self.epoch;
        let to = from.checked_add(1).ok_or(Error::EpochExhausted(from))?;
        for &(id, weight) in joined {
            match self.member(id) {
                Some(i) => self.members[i].weight = weight,
                None => {
                    let at = self.members.partition_point(|m| m.id < id);
                    self.members.insert(
                        at,
                        Member {
                            id,
                            weight,
                            count: 0,
                        },
                    );
                }
            }
        }
        for mv in moves {
            self.owners[mv.vnode.index()] = mv.to;
            self.previous[mv.vnode.index()] = Some(mv.from);
        }
        self.members.retain(|m| !left.contains(&m.id));
        self.recount();
        self.epoch = to;
        Ok(Migration::new(from, to, moves.to_vec()))
    }

    /// Index of a member in `members`.
    fn member(&self, id: NodeId) -> Option<usize> {
        self.members.binary_search_by_key(&id, |m| m.id).ok()
    }

    fn member_ids(&self) -> Vec<NodeId> {
        self.members.iter().map(|m| m.id).collect()
    }

    pub(crate) fn recount(&mut self) {
        let mut counts = vec![0u32; self.members.len()];
        for &owner in self.owners.iter() {
            if let Some(i) = self.member(owner) {
                counts[i] += 1;
            }
        }
        for (m, c) in self.members.iter_mut().zip(counts) {
            m.count = c;
        }
    }

    /// Members by ascending id with weights, and the owner of each vnode as an index into that
    /// list: the canonical form snapshots and serde write.
    pub(crate) fn canonical(&self) -> (Vec<(NodeId, u32)>, Vec<u32>) {
        let nodes: Vec<(NodeId, u32)> = self.members.iter().map(|m| (m.id, m.weight)).collect();
        let owners = self
            .owners
            .iter()
            .map(|&owner| self.member(owner).unwrap_or(0) as u32)
            .collect();
        (nodes, owners)
    }

    /// Rebuilds a table from its canonical form, validating everything.
    pub(crate) fn from_canonical(
        hasher: H,
        route_key: RouteKey,
        epoch: u64,
        nodes: &[(NodeId, u32)],
        owners: &[u32],
        previous: Vec<Option<NodeId>>,
    ) -> Result<Self, Error> {
        let n = owners.len() as u64;
        check_virtual_nodes(n)?;
        if previous.len() != owners.len() {
            return Err(Error::Snapshot(
                url_dedup_bloom::snapshot::SnapshotError::InvalidParameters(
                    "previous owners and owners differ in length",
                ),
            ));
        }
        if nodes.windows(2).any(|w| w[0].0 >= w[1].0) {
            return Err(Error::Snapshot(
                url_dedup_bloom::snapshot::SnapshotError::InvalidParameters(
                    "node ids are not strictly ascending",
                ),
            ));
        }
        let members: BTreeMap<NodeId, u32> = nodes.iter().copied().collect();
        check_members(&members, n as u32)?;
        if owners.iter().any(|&o| o as usize >= nodes.len()) {
            return Err(Error::Snapshot(
                url_dedup_bloom::snapshot::SnapshotError::InvalidParameters(
                    "a virtual node names an owner that is not a member",
                ),
            ));
        }
        let mut table = Self {
            hasher,
            route_key,
            mask: n - 1,
            epoch,
            owners: owners.iter().map(|&o| nodes[o as usize].0).collect(),
            members: nodes
                .iter()
                .map(|&(id, weight)| Member {
                    id,
                    weight,
                    count: 0,
                })
                .collect(),
            previous: previous.into_boxed_slice(),
        };
        table.recount();
        Ok(table)
    }
}

pub(crate) fn check_virtual_nodes(n: u64) -> Result<(), Error> {
    if n == 0 || !n.is_power_of_two() || n > crate::MAX_VIRTUAL_NODES as u64 {
        return Err(Error::InvalidVirtualNodes(n));
    }
    Ok(())
}

pub(crate) fn check_members(
    members: &BTreeMap<NodeId, u32>,
    virtual_nodes: u32,
) -> Result<(), Error> {
    if members.is_empty() {
        return Err(Error::NoNodes);
    }
    if let Some((&id, _)) = members.iter().find(|(_, w)| **w == 0) {
        return Err(Error::ZeroWeight(id));
    }
    if members.len() > virtual_nodes as usize || members.len() > crate::MAX_NODES {
        return Err(Error::TooManyNodes {
            nodes: members.len(),
            virtual_nodes,
        });
    }
    Ok(())
}

impl<H: ItemHasher> PartialEq for PartitionTable<H> {
    /// Tables are equal when they route alike and will evolve alike: same hasher, key
    /// function, epoch, members and weights, owners and previous owners.
    fn eq(&self, other: &Self) -> bool {
        self.hasher.key() == other.hasher.key()
            && self.route_key == other.route_key
            && self.epoch == other.epoch
            && self.nodes() == other.nodes()
            && self.owners().eq(other.owners())
            && self.previous == other.previous
    }
}

impl<H: ItemHasher> Eq for PartitionTable<H> {}

impl<H: ItemHasher> std::fmt::Debug for PartitionTable<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartitionTable")
            .field("virtual_nodes", &self.virtual_nodes())
            .field("epoch", &self.epoch)
            .field("route_key", &self.route_key)
            .field("nodes", &self.nodes())
            .field("hasher", &self.hasher)
            .finish()
    }
}
