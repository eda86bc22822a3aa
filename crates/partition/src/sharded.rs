//! A deduplication filter split into one shard per virtual node, whose shards move with their
//! virtual nodes.

use url_dedup_bloom::hash::{Digest, ItemHasher, SipHash13};

use crate::{Error, Migration, NodeId, PartitionTable, Shard, ShardTransfer, VirtualNode};

/// The answer for one URL at one node.
///
/// # Examples
///
/// ```
/// use url_dedup_partition::{NodeId, Verdict};
///
/// assert_ne!(Verdict::New, Verdict::Forward(NodeId(2)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// The URL was not seen before (it is now recorded): crawl it.
    New,
    /// The URL was seen before (or is a false positive): drop it.
    Seen,
    /// The URL belongs to another node (document 000, step 7): send it there.
    Forward(NodeId),
    /// The URL belongs here, but its virtual node's shard is still on its way from the previous
    /// owner: hold the URL and ask again after [`ShardedFilter::import`]. Answering without
    /// the shard could admit a URL a second time.
    Pending(VirtualNode),
}

enum Slot<S> {
    Absent,
    Ready(S),
    Pending { from: NodeId },
}

/// One node's part of a partitioned deduplication filter: a [`Shard`] for each virtual node the
/// node owns (document 000, steps 1–14), moved with its virtual node when the table changes.
///
/// A URL is hashed once: the table routes it (by URL or by host) and, if it belongs here, its
/// virtual node's shard checks and records it. On a membership change every node calls
/// [`begin_migration`](Self::begin_migration) with the [`Migration`] and the new table: the
/// node exports the shards it gives away as [`ShardTransfer`]s (bytes for the network) and
/// waits for the shards it receives; [`import`](Self::import) installs each one. No URL is
/// admitted twice across a migration: until its shard arrives, a virtual node answers
/// [`Verdict::Pending`].
///
/// The classic [`BloomFilter`](url_dedup_bloom::BloomFilter) is the shard here; the segmented
/// filter implements [`Shard`] as well.
///
/// # Examples
///
/// ```
/// use url_dedup_partition::{BloomShardParams, NodeId, PartitionTable, ShardedFilter, Verdict};
/// use url_dedup_bloom::{BloomFilter, hash::HashKey};
///
/// let key = HashKey::from_bytes(*b"shared-secret-16");
/// let mut table = PartitionTable::builder().virtual_nodes(64).key(key).nodes([NodeId(1)]).build()?;
/// let params = BloomShardParams::for_total(10_000, 64, 0.01, key);
/// let mut one: ShardedFilter<BloomFilter> = ShardedFilter::bootstrap(table.clone(), NodeId(1), params)?;
/// assert_eq!(one.check_and_insert("https://example.com/"), Verdict::New);
///
/// // Node 2 joins: half the shards travel (as bytes) from node 1 to node 2.
/// let mut two: ShardedFilter<BloomFilter> = ShardedFilter::joining(table.clone(), NodeId(2), params)?;
/// let migration = table.join(NodeId(2))?;
/// let transfers = one.begin_migration(&migration, &table)?;
/// two.begin_migration(&migration, &table)?;
/// for t in &transfers {
///     two.import(t)?;
/// }
///
/// // Whoever owns the URL now still knows it.
/// let owner = table.route("https://example.com/").1;
/// let node = if owner == NodeId(1) { &mut one } else { &mut two };
/// assert_eq!(node.check_and_insert("https://example.com/"), Verdict::Seen);
/// # Ok::<(), url_dedup_partition::Error>(())
/// ```
pub struct ShardedFilter<S: Shard, H: ItemHasher = SipHash13> {
    node: NodeId,
    table: PartitionTable<H>,
    params: S::Params,
    shards: Vec<Slot<S>>,
}

impl<S: Shard, H: ItemHasher> ShardedFilter<S, H> {
    /// The filter of `node` in a cluster that starts now: an empty shard for every virtual node
    /// it owns.
    ///
    /// Use it only when the cluster's filters start empty; a node that joins a running
    /// cluster starts with [`joining`](Self::joining) and receives its shards.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownNode`] if `node` is not in `table`; [`Error::Shard`] if a shard cannot be
    /// created.
    ///
    /// # Examples
    ///
    /// See [`ShardedFilter`].
    pub fn bootstrap(
        table: PartitionTable<H>,
        node: NodeId,
        params: S::Params,
    ) -> Result<Self, Error> {
        if !table.contains_node(node) {
            return Err(Error::UnknownNode(node));
        }
        let mut shards = Vec::with_capacity(table.virtual_nodes() as usize);
        for owner in table.owners() {
            shards.push(if owner == node {
                Slot::Ready(S::create(&params).map_err(shard_error)?)
            } else {
                Slot::Absent
            });
        }
        Ok(Self {
            node,
            table,
            params,
            shards,
        })
    }

    /// The filter of a node about to join: no shards yet, at the epoch of `table` (the table
    /// before the join). Its shards arrive through the join's migration.
    ///
    /// # Errors
    ///
    /// [`Error::DuplicateNode`] if `node` is already in `table` (its shards exist elsewhere
    /// already and must not be replaced by empty ones).
    ///
    /// # Examples
    ///
    /// See [`ShardedFilter`].
    pub fn joining(
        table: PartitionTable<H>,
        node: NodeId,
        params: S::Params,
    ) -> Result<Self, Error> {
        if table.contains_node(node) {
            return Err(Error::DuplicateNode(node));
        }
        let shards = (0..table.virtual_nodes()).map(|_| Slot::Absent).collect();
        Ok(Self {
            node,
            table,
            params,
            shards,
        })
    }

    /// The node this filter belongs to.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{BloomShardParams, NodeId, PartitionTable, ShardedFilter};
    /// use url_dedup_bloom::{BloomFilter, hash::HashKey};
    ///
    /// let table = PartitionTable::builder().virtual_nodes(4).nodes([NodeId(1)]).build()?;
    /// let p = BloomShardParams::new(100, 0.01, HashKey::from_bytes([0; 16]));
    /// let f: ShardedFilter<BloomFilter> = ShardedFilter::bootstrap(table, NodeId(1), p)?;
    /// assert_eq!(f.node(), NodeId(1));
    /// assert_eq!(f.shard_count(), 4);
    /// # Ok::<(), url_dedup_partition::Error>(())
    /// ```
    pub fn node(&self) -> NodeId {
        self.node
    }

    /// The table this filter routes by.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{BloomShardParams, NodeId, PartitionTable, ShardedFilter};
    /// use url_dedup_bloom::{BloomFilter, hash::HashKey};
    ///
    /// let table = PartitionTable::builder().virtual_nodes(4).nodes([NodeId(1)]).build()?;
    /// let p = BloomShardParams::new(100, 0.01, HashKey::from_bytes([0; 16]));
    /// let f: ShardedFilter<BloomFilter> = ShardedFilter::bootstrap(table.clone(), NodeId(1), p)?;
    /// assert_eq!(f.table(), &table);
    /// # Ok::<(), url_dedup_partition::Error>(())
    /// ```
    pub fn table(&self) -> &PartitionTable<H> {
        &self.table
    }

    /// Number of shards held here.
    ///
    /// # Examples
    ///
    /// See [`node`](Self::node).
    pub fn shard_count(&self) -> usize {
        self.shards
            .iter()
            .filter(|s| matches!(s, Slot::Ready(_)))
            .count()
    }

    /// The virtual nodes whose shards this node still waits for.
    ///
    /// # Examples
    ///
    /// See [`begin_migration`](Self::begin_migration).
    pub fn pending(&self) -> Vec<VirtualNode> {
        self.shards
            .iter()
            .enumerate()
            .filter(|(_, s)| matches!(s, Slot::Pending { .. }))
            .map(|(v, _)| VirtualNode(v as u32))
            .collect()
    }

    /// Checks a URL and records it if it is new and belongs here.
    ///
    /// # Examples
    ///
    /// See [`ShardedFilter`].
    pub fn check_and_insert(&mut self, url: impl AsRef<[u8]>) -> Verdict {
        let (route, item) = self.digests(url.as_ref());
        self.check_and_insert_digests(route, item)
    }

    /// [`check_and_insert`](Self::check_and_insert) for precomputed digests: `route` from
    /// [`PartitionTable::digest`], `item` the URL's digest under the table's hasher (the same
    /// digest when routing by whole URL).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{BloomShardParams, NodeId, PartitionTable, ShardedFilter, Verdict};
    /// use url_dedup_bloom::{BloomFilter, hash::{HashKey, ItemHasher}};
    ///
    /// let table = PartitionTable::builder().virtual_nodes(4).nodes([NodeId(1)]).build()?;
    /// let p = BloomShardParams::new(100, 0.01, table.hasher().key());
    /// let mut f: ShardedFilter<BloomFilter> = ShardedFilter::bootstrap(table, NodeId(1), p)?;
    /// let d = f.table().digest("https://example.com/");
    /// assert_eq!(f.check_and_insert_digests(d, d), Verdict::New);
    /// assert_eq!(f.check_and_insert("https://example.com/"), Verdict::Seen);
    /// # Ok::<(), url_dedup_partition::Error>(())
    /// ```
    pub fn check_and_insert_digests(&mut self, route: Digest, item: Digest) -> Verdict {
        let (vnode, owner) = self.table.route_digest(route);
        if owner != self.node {
            return Verdict::Forward(owner);
        }
        match &mut self.shards[vnode.index()] {
            Slot::Ready(shard) => {
                if shard.check_and_insert_digest(item) {
                    Verdict::New
                } else {
                    Verdict::Seen
                }
            }
            _ => Verdict::Pending(vnode),
        }
    }

    /// Whether a URL was seen, without recording it: [`Verdict::New`] means "not seen".
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{BloomShardParams, NodeId, PartitionTable, ShardedFilter, Verdict};
    /// use url_dedup_bloom::{BloomFilter, hash::HashKey};
    ///
    /// let table = PartitionTable::builder().virtual_nodes(4).nodes([NodeId(1)]).build()?;
    /// let p = BloomShardParams::new(100, 0.01, HashKey::from_bytes([0; 16]));
    /// let mut f: ShardedFilter<BloomFilter> = ShardedFilter::bootstrap(table, NodeId(1), p)?;
    /// assert_eq!(f.contains("https://example.com/"), Verdict::New);
    /// f.check_and_insert("https://example.com/");
    /// assert_eq!(f.contains("https://example.com/"), Verdict::Seen);
    /// # Ok::<(), url_dedup_partition::Error>(())
    /// ```
    pub fn contains(&self, url: impl AsRef<[u8]>) -> Verdict {
        let (route, item) = self.digests(url.as_ref());
        let (vnode, owner) = self.table.route_digest(route);
        if owner != self.node {
            return Verdict::Forward(owner);
        }
        match &self.shards[vnode.index()] {
            Slot::Ready(shard) if shard.contains_digest(item) => Verdict::Seen,
            Slot::Ready(_) => Verdict::New,
            _ => Verdict::Pending(vnode),
        }
    }

    fn digests(&self, url: &[u8]) -> (Digest, Digest) {
        let item = self.table.hasher().hash(url);
        let route = match self.table.route_key() {
            crate::RouteKey::Url => item,
            _ => self.table.digest(url),
        };
        (route, item)
    }

    /// Moves this node to the table after `migration`: exports and removes the shards it gives
    /// away (returned, to be sent to their new owners) and marks the shards it receives as
    /// pending until [`import`](Self::import)ed.
    ///
    /// Every node of the cluster calls it with the same migration and table, including nodes
    /// that neither give nor receive (they only switch tables) and the node that leaves (it
    /// gives everything away).
    ///
    /// # Errors
    ///
    /// Nothing changes on error. [`Error::StaleEpoch`] if the migration does not start at this
    /// filter's epoch; [`Error::MigrationMismatch`] if `next` is not the table the migration
    /// leads to; [`Error::ShardPending`] if shards of an earlier migration have not arrived;
    /// [`Error::Shard`] if a shard cannot be exported.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{BloomShardParams, NodeId, PartitionTable, ShardedFilter, Verdict};
    /// use url_dedup_bloom::{BloomFilter, hash::HashKey};
    ///
    /// let key = HashKey::from_bytes([9; 16]);
    /// let mut table = PartitionTable::builder().virtual_nodes(8).key(key).nodes([NodeId(1), NodeId(2)]).build()?;
    /// let p = BloomShardParams::new(100, 0.01, key);
    /// let mut one: ShardedFilter<BloomFilter> = ShardedFilter::bootstrap(table.clone(), NodeId(1), p)?;
    /// let mut two: ShardedFilter<BloomFilter> = ShardedFilter::bootstrap(table.clone(), NodeId(2), p)?;
    ///
    /// let migration = table.leave(NodeId(2))?;
    /// let outgoing = two.begin_migration(&migration, &table)?;
    /// assert!(one.begin_migration(&migration, &table)?.is_empty());
    /// assert_eq!(one.pending().len(), 4);
    /// for transfer in outgoing {
    ///     // Across processes: send transfer.to_bytes(), receive ShardTransfer::from_bytes.
    ///     one.import(&transfer)?;
    /// }
    /// assert!(one.pending().is_empty());
    /// assert_eq!(one.shard_count(), 8);
    /// # Ok::<(), url_dedup_partition::Error>(())
    /// ```
    pub fn begin_migration(
        &mut self,
        migration: &Migration,
        next: &PartitionTable<H>,
    ) -> Result<Vec<ShardTransfer>, Error> {
        if migration.from_epoch() != self.table.epoch() {
            return Err(Error::StaleEpoch {
                expected: self.table.epoch(),
                found: migration.from_epoch(),
            });
        }
        if next.epoch() != migration.to_epoch() {
            return Err(Error::MigrationMismatch(
                "the new table is not at the migration's final epoch",
            ));
        }
        if next.virtual_nodes() != self.table.virtual_nodes()
            || next.route_key() != self.table.route_key()
            || next.hasher().key() != self.table.hasher().key()
        {
            return Err(Error::MigrationMismatch(
                "the new table routes differently (size, key function or hash key)",
            ));
        }
        let mut moved = vec![false; self.shards.len()];
        for mv in migration.moves() {
            let Some(flag) = moved.get_mut(mv.vnode.index()) else {
                return Err(Error::MigrationMismatch(
                    "a move names a virtual node out of range",
                ));
            };
            if *flag {
                return Err(Error::MigrationMismatch("a virtual node moves twice"));
            }
            *flag = true;
            if self.table.owner(mv.vnode) != Some(mv.from) || next.owner(mv.vnode) != Some(mv.to) {
                return Err(Error::MigrationMismatch(
                    "a move's owners differ from the tables' owners",
                ));
            }
        }
        let unexplained = self
            .table
            .owners()
            .zip(next.owners())
            .zip(&moved)
            .any(|((a, b), &m)| a != b && !m);
        if unexplained {
            return Err(Error::MigrationMismatch(
                "the tables differ in a virtual node the migration does not move",
            ));
        }
        if let Some(v) = self
            .shards
            .iter()
            .position(|s| matches!(s, Slot::Pending { .. }))
        {
            return Err(Error::ShardPending(VirtualNode(v as u32)));
        }
        let mut transfers = Vec::new();
        for mv in migration.outgoing(self.node) {
            let Slot::Ready(shard) = &self.shards[mv.vnode.index()] else {
                return Err(Error::MigrationMismatch(
                    "this node lacks a shard it must send",
                ));
            };
            transfers.push(ShardTransfer {
                vnode: mv.vnode,
                from: mv.from,
                to: mv.to,
                epoch: migration.to_epoch(),
                shard: shard.export().map_err(shard_error)?,
            });
        }
        for mv in migration.outgoing(self.node) {
            self.shards[mv.vnode.index()] = Slot::Absent;
        }
        for mv in migration.incoming(self.node) {
            self.shards[mv.vnode.index()] = Slot::Pending { from: mv.from };
        }
        self.table = next.clone();
        Ok(transfers)
    }

    /// Installs a shard sent by its previous owner during the current migration.
    ///
    /// # Errors
    ///
    /// Nothing changes on error. [`Error::MigrationMismatch`] if the transfer is addressed to
    /// another node or this node does not wait for that shard from that sender;
    /// [`Error::StaleEpoch`] if it belongs to another migration; [`Error::Shard`] if the bytes
    /// are damaged or the shard was built with other parameters.
    ///
    /// # Examples
    ///
    /// See [`begin_migration`](Self::begin_migration).
    pub fn import(&mut self, transfer: &ShardTransfer) -> Result<(), Error> {
        if transfer.to != self.node {
            return Err(Error::MigrationMismatch(
                "the shard is addressed to another node",
            ));
        }
        if transfer.epoch != self.table.epoch() {
            return Err(Error::StaleEpoch {
                expected: self.table.epoch(),
                found: transfer.epoch,
            });
        }
        match self.shards.get(transfer.vnode.index()) {
            Some(Slot::Pending { from }) if *from == transfer.from => {}
            _ => {
                return Err(Error::MigrationMismatch(
                    "this node does not wait for that shard from that sender",
                ));
            }
        }
        let shard = S::import(&transfer.shard, &self.params).map_err(shard_error)?;
        self.shards[transfer.vnode.index()] = Slot::Ready(shard);
        Ok(())
    }
}

fn shard_error<E: std::error::Error + Send + Sync + 'static>(e: E) -> Error {
    Error::Shard(Box::new(e))
}

impl<S: Shard, H: ItemHasher> std::fmt::Debug for ShardedFilter<S, H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardedFilter")
            .field("node", &self.node)
            .field("epoch", &self.table.epoch())
            .field("shards", &self.shard_count())
            .field("pending", &self.pending().len())
            .finish()
    }
}
