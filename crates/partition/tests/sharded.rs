//! Shards that move: no URL is ever admitted twice across joins and leaves, with shards
//! crossing "process" boundaries as bytes.

use std::collections::BTreeMap;

use proptest::prelude::*;
use url_dedup_bloom::hash::HashKey;
use url_dedup_bloom::{AtomicBloomFilter, BloomFilter};
use url_dedup_partition::{
    BloomShardParams, Change, Error, NodeId, PartitionTable, RouteKey, SegmentedShardParams, Shard,
    ShardTransfer, ShardedFilter, Verdict,
};

const KEY: HashKey = HashKey::from_bytes(*b"cluster-key-0001");

/// A cluster simulated in one test: every node has its own filter and its own copy of the
/// table, and shards travel between them only as bytes.
struct Cluster<S: Shard> {
    table: PartitionTable,
    nodes: BTreeMap<NodeId, ShardedFilter<S>>,
    params: S::Params,
}

impl<S: Shard> Cluster<S> {
    fn new(n: u64, members: u32, route: RouteKey, params: S::Params) -> Self {
        let table = PartitionTable::builder()
            .virtual_nodes(n)
            .key(KEY)
            .route_by(route)
            .nodes((1..=members).map(NodeId))
            .build()
            .unwrap();
        let nodes = (1..=members)
            .map(|i| {
                let f = ShardedFilter::bootstrap(table.clone(), NodeId(i), params.clone()).unwrap();
                (NodeId(i), f)
            })
            .collect();
        Self {
            table,
            nodes,
            params,
        }
    }

    /// Sends a URL to whichever node owns it, following forwards like real crawlers.
    fn submit(&mut self, url: &str) -> Verdict {
        let mut at = *self.nodes.keys().next().unwrap();
        for _ in 0..3 {
            match self.nodes.get_mut(&at).unwrap().check_and_insert(url) {
                Verdict::Forward(owner) => at = owner,
                v => return v,
            }
        }
        panic!("forwarded in circles");
    }

    fn change(&mut self, change: Change, document: bool) -> Result<(), Error> {
        let mut next = self.table.clone();
        let migration = match (change, document) {
            (Change::Join { node, .. }, true) => next.join(node)?,
            (Change::Leave { node }, true) => next.leave(node)?,
            (c, _) => next.apply([c])?,
        };
        if let Change::Join { node, .. } = change {
            let f = ShardedFilter::joining(self.table.clone(), node, self.params.clone())?;
            self.nodes.insert(node, f);
        }
        let mut wire = Vec::new();
        for f in self.nodes.values_mut() {
            for t in f.begin_migration(&migration, &next)? {
                wire.push(t.to_bytes());
            }
        }
        for bytes in wire {
            let t = ShardTransfer::from_bytes(&bytes)?;
            self.nodes.get_mut(&t.to).unwrap().import(&t)?;
        }
        if let Change::Leave { node } = change {
            let gone = self.nodes.remove(&node).unwrap();
            assert_eq!(gone.shard_count(), 0);
        }
        for f in self.nodes.values() {
            assert!(f.pending().is_empty());
            assert_eq!(f.shard_count(), next.virtual_nodes_of(f.node()).len());
        }
        self.table = next;
        Ok(())
    }
}

fn bloom_params() -> BloomShardParams {
    BloomShardParams::new(200, 0.001, KEY)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// After any sequence of joins and leaves, every URL inserted before is still seen: zero
    /// re-admissions.
    #[test]
    fn no_url_is_admitted_twice(
        history in prop::collection::vec((any::<bool>(), any::<usize>(), any::<bool>()), 1..12),
        host_routing in any::<bool>(),
    ) {
        let route = if host_routing { RouteKey::Host } else { RouteKey::Url };
        let mut c: Cluster<BloomFilter> = Cluster::new(64, 3, route, bloom_params());
        let mut inserted = Vec::new();
        let mut next_id = 100;
        for (round, (join, pick, document)) in history.into_iter().enumerate() {
            for i in 0..150 {
                let url = format!("https://site{}.example/{round}/{i}", i % 17);
                prop_assert_eq!(c.submit(&url), Verdict::New);
                inserted.push(url);
            }
            let change = if join || c.nodes.len() == 1 {
                next_id += 1;
                Change::join(NodeId(next_id))
            } else {
                let ids: Vec<NodeId> = c.nodes.keys().copied().collect();
                Change::leave(ids[pick % ids.len()])
            };
            c.change(change, document).unwrap();
            for url in &inserted {
                prop_assert_eq!(c.submit(url), Verdict::Seen, "{} re-admitted", url);
            }
        }
    }
}

#[test]
fn segmented_shards_move_too() {
    let params = SegmentedShardParams::new(200, 0.001, 512, KEY);
    let mut c: Cluster<url_dedup_segmented::SegmentedBloomFilter> =
        Cluster::new(32, 2, RouteKey::Url, params);
    let urls: Vec<String> = (0..2_000)
        .map(|i| format!("https://site{}.example/{i}", i % 23))
        .collect();
    for u in &urls {
        assert_eq!(c.submit(u), Verdict::New);
    }
    c.change(Change::join(NodeId(3)), true).unwrap();
    c.change(Change::join(NodeId(4)), false).unwrap();
    c.change(Change::leave(NodeId(1)), true).unwrap();
    for u in &urls {
        assert_eq!(c.submit(u), Verdict::Seen, "{u} re-admitted");
    }
}

#[test]
fn atomic_shards_move_too() {
    let mut c: Cluster<AtomicBloomFilter> = Cluster::new(32, 2, RouteKey::Url, bloom_params());
    let urls: Vec<String> = (0..500)
        .map(|i| format!("https://example.com/{i}"))
        .collect();
    for u in &urls {
        assert_eq!(c.submit(u), Verdict::New);
    }
    c.change(Change::join(NodeId(3)), false).unwrap();
    c.change(Change::leave(NodeId(1)), true).unwrap();
    for u in &urls {
        assert_eq!(c.submit(u), Verdict::Seen);
    }
}

fn two_nodes() -> (
    PartitionTable,
    ShardedFilter<BloomFilter>,
    ShardedFilter<BloomFilter>,
) {
    let table = PartitionTable::builder()
        .virtual_nodes(8)
        .key(KEY)
        .nodes([NodeId(1), NodeId(2)])
        .build()
        .unwrap();
    let one = ShardedFilter::bootstrap(table.clone(), NodeId(1), bloom_params()).unwrap();
    let two = ShardedFilter::bootstrap(table.clone(), NodeId(2), bloom_params()).unwrap();
    (table, one, two)
}

/// A URL whose shard is in flight is held, not guessed; bad transfers are refused and change
/// nothing.
#[test]
fn pending_shards_and_bad_transfers() {
    let (mut table, mut one, mut two) = two_nodes();
    let url = (0..)
        .map(|i| format!("https://example.com/{i}"))
        .find(|u| table.route(u).1 == NodeId(2))
        .unwrap();
    assert_eq!(two.check_and_insert(&url), Verdict::New);
    let migration = table.leave(NodeId(2)).unwrap();

    // Wrong table for the migration.
    let stale = PartitionTable::builder()
        .virtual_nodes(8)
        .key(KEY)
        .nodes([NodeId(1)])
        .build()
        .unwrap();
    assert!(matches!(
        one.begin_migration(&migration, &stale),
        Err(Error::MigrationMismatch(_))
    ));
    assert_eq!(one.table().epoch(), 0);

    let transfers = two.begin_migration(&migration, &table).unwrap();
    one.begin_migration(&migration, &table).unwrap();
    let vnode = table.route(&url).0;
    assert_eq!(one.check_and_insert(&url), Verdict::Pending(vnode));
    assert_eq!(two.check_and_insert(&url), Verdict::Forward(NodeId(1)));

    // A second migration cannot start while shards are in flight.
    let mut later = table.clone();
    let m2 = later.join(NodeId(3)).unwrap();
    assert!(matches!(
        one.begin_migration(&m2, &later),
        Err(Error::ShardPending(_))
    ));

    let t = transfers.iter().find(|t| t.vnode == vnode).unwrap();
    // Damaged on the wire.
    let mut bytes = t.to_bytes();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x40;
    assert!(ShardTransfer::from_bytes(&bytes).is_err());
    // Damaged inside (shard checksum) yet correctly framed.
    let mut inner = t.clone();
    let last = inner.shard.len() - 3;
    inner.shard[last] ^= 1;
    assert!(matches!(one.import(&inner), Err(Error::Shard(_))));
    // Wrong addressee, wrong epoch, wrong sender.
    assert!(
        one.import(&ShardTransfer {
            to: NodeId(9),
            ..t.clone()
        })
        .is_err()
    );
    assert!(matches!(
        one.import(&ShardTransfer {
            epoch: 7,
            ..t.clone()
        }),
        Err(Error::StaleEpoch { .. })
    ));
    assert!(
        one.import(&ShardTransfer {
            from: NodeId(5),
            ..t.clone()
        })
        .is_err()
    );
    // Built with other parameters.
    let foreign = BloomFilter::builder()
        .expected_items(10)
        .key(KEY)
        .build()
        .unwrap();
    assert!(
        one.import(&ShardTransfer {
            shard: foreign.to_bytes(),
            ..t.clone()
        })
        .is_err()
    );
    assert_eq!(one.check_and_insert(&url), Verdict::Pending(vnode));

    for t in &transfers {
        one.import(t).unwrap();
    }
    // Importing twice is refused.
    assert!(one.import(&transfers[0]).is_err());
    assert_eq!(one.check_and_insert(&url), Verdict::Seen);
    assert_eq!(one.shard_count(), 8);
}

#[test]
fn joining_a_member_or_bootstrapping_a_stranger_is_refused() {
    let (table, _, _) = two_nodes();
    assert!(matches!(
        ShardedFilter::<BloomFilter>::joining(table.clone(), NodeId(1), bloom_params()),
        Err(Error::DuplicateNode(_))
    ));
    assert!(matches!(
        ShardedFilter::<BloomFilter>::bootstrap(table, NodeId(5), bloom_params()),
        Err(Error::UnknownNode(_))
    ));
}

#[test]
fn stale_migrations_are_refused() {
    let (mut table, mut one, _) = two_nodes();
    let first = table.join(NodeId(3)).unwrap();
    let after_first = table.clone();
    let second = table.join(NodeId(4)).unwrap();
    assert!(matches!(
        one.begin_migration(&second, &table),
        Err(Error::StaleEpoch {
            expected: 0,
            found: 1
        })
    ));
    // The right migration with a table from a later epoch.
    assert!(matches!(
        one.begin_migration(&first, &table),
        Err(Error::MigrationMismatch(_))
    ));
    one.begin_migration(&first, &after_first).unwrap();
}
