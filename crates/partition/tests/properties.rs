//! Property tests over random histories of joins and leaves.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use url_dedup_bloom::hash::{HashKey, ItemHasher};
use url_dedup_partition::{Change, Error, Migration, NodeId, PartitionTable};

/// One step of a history: `Join` picks a fresh id, `Leave(i)` the i-th member (mod M).
#[derive(Clone, Debug)]
enum Step {
    Join,
    Leave(usize),
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(
        prop_oneof![Just(Step::Join), any::<usize>().prop_map(Step::Leave)],
        1..40,
    )
}

fn table(n: u64, nodes: u32, key: u8) -> PartitionTable {
    PartitionTable::builder()
        .virtual_nodes(n)
        .key(HashKey::from_bytes([key; 16]))
        .nodes((1..=nodes).map(NodeId))
        .build()
        .unwrap()
}

fn counts(t: &PartitionTable) -> Vec<u32> {
    t.nodes().iter().map(|n| n.virtual_nodes).collect()
}

fn spread(t: &PartitionTable) -> u32 {
    let c = counts(t);
    c.iter().max().unwrap() - c.iter().min().unwrap()
}

/// Checks that `m` explains exactly the difference between `before` and `after`.
fn check_moves(before: &[NodeId], after: &[NodeId], m: &Migration) {
    let moved: BTreeSet<u32> = m.moves().iter().map(|mv| mv.vnode.0).collect();
    assert_eq!(moved.len(), m.len(), "a virtual node moves twice");
    for (v, (a, b)) in before.iter().zip(after).enumerate() {
        assert_eq!(a != b, moved.contains(&(v as u32)), "vnode {v}");
    }
    for mv in m.moves() {
        assert_eq!(before[mv.vnode.index()], mv.from);
        assert_eq!(after[mv.vnode.index()], mv.to);
    }
}

/// Applies one step with either the document's algorithm or the planner, checking the
/// movement properties of that step. Returns the migration (or None if the step was skipped).
fn step(t: &mut PartitionTable, s: &Step, next_id: &mut u32, planner: bool) -> Option<Migration> {
    let before: Vec<NodeId> = t.owners().collect();
    let n = t.virtual_nodes();
    match *s {
        Step::Join => {
            if t.node_count() as u32 >= n {
                let err = if planner {
                    t.apply([Change::join(NodeId(*next_id))])
                } else {
                    t.join(NodeId(*next_id))
                };
                assert!(matches!(err, Err(Error::TooManyNodes { .. })));
                return None;
            }
            let id = NodeId(*next_id);
            *next_id += 1;
            let m = if planner {
                t.apply([Change::join(id)]).unwrap()
            } else {
                t.join(id).unwrap()
            };
            let after: Vec<NodeId> = t.owners().collect();
            check_moves(&before, &after, &m);
            // Only the newcomer receives; what moves is exactly what it owns, floor(N / M).
            assert!(m.moves().iter().all(|mv| mv.to == id));
            assert_eq!(m.len(), t.virtual_nodes_of(id).len());
            assert_eq!(m.len() as u32, n / t.node_count() as u32);
            Some(m)
        }
        Step::Leave(i) => {
            let nodes = t.nodes();
            if nodes.len() == 1 {
                let id = nodes[0].id;
                assert!(matches!(t.leave(id), Err(Error::LastNode(_))));
                return None;
            }
            let leaver = nodes[i % nodes.len()];
            let m = if planner {
                t.apply([Change::leave(leaver.id)]).unwrap()
            } else {
                t.leave(leaver.id).unwrap()
            };
            let after: Vec<NodeId> = t.owners().collect();
            check_moves(&before, &after, &m);
            // Only the leaver's virtual nodes move.
            assert!(m.moves().iter().all(|mv| mv.from == leaver.id));
            assert_eq!(m.len() as u32, leaver.virtual_nodes);
            Some(m)
        }
    }
}

fn n_strategy() -> impl Strategy<Value = u64> {
    prop_oneof![Just(8u64), Just(64), Just(1024), Just(16384)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Document 000's algorithms keep counts within one of each other and move the minimum.
    #[test]
    fn document_algorithms_balance_and_move_minimum(n in n_strategy(), start in 1u32..8, history in steps()) {
        let mut t = table(n, start.min(n as u32), 1);
        let mut next = 1000;
        for s in &history {
            step(&mut t, s, &mut next, false);
            prop_assert!(spread(&t) <= 1, "counts {:?}", counts(&t));
        }
    }

    /// The planner does the same with equal weights.
    #[test]
    fn planner_balances_and_moves_minimum(n in n_strategy(), start in 1u32..8, history in steps()) {
        let mut t = table(n, start.min(n as u32), 1);
        let mut next = 1000;
        for s in &history {
            step(&mut t, s, &mut next, true);
            prop_assert!(spread(&t) <= 1, "counts {:?}", counts(&t));
        }
    }

    /// Mixing both keeps balance too (they share the table).
    #[test]
    fn mixed_algorithms_balance(n in n_strategy(), history in steps(), choice in prop::collection::vec(any::<bool>(), 40)) {
        let mut t = table(n, 3.min(n as u32), 1);
        let mut next = 1000;
        for (s, &p) in history.iter().zip(&choice) {
            step(&mut t, s, &mut next, p);
            prop_assert!(spread(&t) <= 1);
        }
    }

    /// Two processes that replay the same history (with different routing keys, even) hold the
    /// same table, and a table restored from a snapshot midway continues identically.
    #[test]
    fn replay_is_deterministic(n in n_strategy(), history in steps(), planner in any::<bool>()) {
        let mut a = table(n, 4.min(n as u32), 1);
        let mut b = table(n, 4.min(n as u32), 2);
        let key = HashKey::from_bytes([1; 16]);
        let (mut na, mut nb) = (1000, 1000);
        for (i, s) in history.iter().enumerate() {
            let ma = step(&mut a, s, &mut na, planner);
            let mb = step(&mut b, s, &mut nb, planner);
            prop_assert_eq!(ma, mb);
            prop_assert!(a.owners().eq(b.owners()));
            prop_assert_eq!(a.epoch(), b.epoch());
            if i == history.len() / 2 {
                a = PartitionTable::from_bytes(&a.to_bytes()).unwrap();
            }
        }
        let c: PartitionTable = PartitionTable::from_bytes(&b.to_bytes()).unwrap();
        prop_assert_eq!(c.hasher().key(), HashKey::from_bytes([2; 16]));
        let _ = key;
        for i in 0..100u32 {
            let url = format!("https://example.com/{i}");
            prop_assert_eq!(c.route(&url), b.route(&url));
        }
    }

    /// Weighted targets: every node within one virtual node of its exact share, after any
    /// sequence of weighted joins, leaves and reweights.
    #[test]
    fn weighted_targets_are_proportional(
        n in n_strategy(),
        weights in prop::collection::vec(1u32..20, 1..6),
        changes in prop::collection::vec((0u8..3, any::<usize>(), 1u32..20), 0..20),
    ) {
        let mut builder = PartitionTable::builder().virtual_nodes(n);
        for (i, &w) in weights.iter().enumerate() {
            builder = builder.weighted_node(NodeId(i as u32), w);
        }
        let Ok(mut t) = builder.build() else {
            prop_assert!(weights.len() as u64 > n);
            return Ok(());
        };
        let check = |t: &PartitionTable| {
            let nodes = t.nodes();
            let total: u64 = nodes.iter().map(|x| u64::from(x.weight)).sum();
            for x in &nodes {
                let exact = n as f64 * f64::from(x.weight) / total as f64;
                assert!((f64::from(x.virtual_nodes) - exact).abs() < 1.0, "{x:?} exact {exact}");
            }
            assert_eq!(nodes.iter().map(|x| u64::from(x.virtual_nodes)).sum::<u64>(), n);
        };
        check(&t);
        let mut next = 100;
        for (kind, pick, w) in changes {
            let nodes = t.nodes();
            let change = match kind {
                0 => { next += 1; Change::join_weighted(NodeId(next), w) }
                1 => Change::leave(nodes[pick % nodes.len()].id),
                _ => Change::reweight(nodes[pick % nodes.len()].id, w),
            };
            let before: Vec<NodeId> = t.owners().collect();
            match t.apply([change]) {
                Ok(m) => check_moves(&before, &t.owners().collect::<Vec<_>>(), &m),
                Err(Error::LastNode(_) | Error::TooManyNodes { .. }) => {}
                Err(e) => panic!("{e}"),
            }
            check(&t);
        }
    }

    /// A batch is one migration to a balanced table; its moves are at most what applying the
    /// same changes one by one moves, and a rejected batch changes nothing.
    #[test]
    fn batches_are_one_balanced_migration(n in prop_oneof![Just(64u64), Just(1024)], start in 2u32..10, leaves in prop::collection::btree_set(1u32..10, 0..4), joins in 0u32..4) {
        let t0 = table(n, start, 1);
        let mut changes: Vec<Change> = leaves.iter().filter(|&&i| i <= start).map(|&i| Change::leave(NodeId(i))).collect();
        changes.extend((0..joins).map(|j| Change::join(NodeId(500 + j))));
        let mut batch = t0.clone();
        let mut one_by_one = t0.clone();
        match batch.apply(changes.clone()) {
            Ok(m) => {
                prop_assert_eq!(batch.epoch(), 1);
                prop_assert!(spread(&batch) <= 1);
                check_moves(&t0.owners().collect::<Vec<_>>(), &batch.owners().collect::<Vec<_>>(), &m);
                let mut sequential = 0;
                for c in changes {
                    sequential += one_by_one.apply([c]).unwrap().len();
                }
                prop_assert!(m.len() <= sequential, "batch {} > sequential {}", m.len(), sequential);
            }
            Err(Error::LastNode(_)) => prop_assert_eq!(&batch, &t0),
            Err(e) => panic!("{e}"),
        }
    }
}

/// M > N is refused with a clear error, and nothing changes.
#[test]
fn more_nodes_than_virtual_nodes_is_rejected() {
    let mut t = table(4, 4, 1);
    let before = t.clone();
    let err = t.join(NodeId(9)).unwrap_err();
    assert!(matches!(
        err,
        Error::TooManyNodes {
            nodes: 5,
            virtual_nodes: 4
        }
    ));
    assert!(err.to_string().contains("M must not exceed N"));
    assert!(t.apply([Change::join(NodeId(9))]).is_err());
    assert_eq!(t, before);
    assert!(
        PartitionTable::builder()
            .virtual_nodes(2)
            .nodes((1..=3).map(NodeId))
            .build()
            .is_err()
    );
}

/// Invalid batches are rejected as a whole.
#[test]
fn invalid_batches_change_nothing() {
    let mut t = table(64, 3, 1);
    let before = t.clone();
    for batch in [
        vec![Change::join(NodeId(9)), Change::leave(NodeId(42))],
        vec![Change::join(NodeId(1))],
        vec![
            Change::leave(NodeId(1)),
            Change::leave(NodeId(2)),
            Change::leave(NodeId(3)),
        ],
        vec![Change::join_weighted(NodeId(9), 0)],
        vec![Change::reweight(NodeId(7), 2)],
    ] {
        assert!(t.apply(batch).is_err());
        assert_eq!(t, before);
    }
}

fn net_moved(a: &PartitionTable, b: &PartitionTable) -> usize {
    a.owners().zip(b.owners()).filter(|(x, y)| x != y).count()
}

/// Leave-then-rejoin at M = 100: the planner returns the node's virtual nodes (net movement
/// under 1% of keys); the document's algorithm gives it a fresh share (about 2/M).
#[test]
fn rejoin_reclaims_previous_virtual_nodes() {
    let start = table(16384, 100, 1);
    let mut worst_planner = 0.0f64;
    let mut worst_document = 0.0f64;
    let mut best_document = 1.0f64;
    for leaver in [1, 37, 50, 100] {
        let node = NodeId(leaver);
        let mut p = start.clone();
        p.apply([Change::leave(node)]).unwrap();
        p.apply([Change::join(node)]).unwrap();
        let mut d = start.clone();
        d.leave(node).unwrap();
        d.join(node).unwrap();
        worst_planner = worst_planner.max(net_moved(&start, &p) as f64 / 16384.0);
        let doc = net_moved(&start, &d) as f64 / 16384.0;
        worst_document = worst_document.max(doc);
        best_document = best_document.min(doc);
        // The document's leave and the planner's leave move the same amount.
        assert_eq!(p.epoch(), 2);
    }
    assert!(worst_planner < 0.01, "planner net movement {worst_planner}");
    assert!(
        worst_planner < 0.001,
        "planner should return all but rounding: {worst_planner}"
    );
    assert!(
        best_document > 0.015,
        "document net movement {best_document}"
    );
    let _ = worst_document;
}

/// Replacing a node in one batch moves its share once; one by one it moves about twice.
#[test]
fn batch_replacement_moves_once() {
    let start = table(16384, 10, 1);
    let mut batch = start.clone();
    let m = batch
        .apply([Change::leave(NodeId(3)), Change::join(NodeId(11))])
        .unwrap();
    // All of node 3's share leaves it; all but the rounding unit goes straight to node 11.
    assert!(m.moves().iter().all(|mv| mv.from == NodeId(3)));
    assert!(m.moves().iter().filter(|mv| mv.to != NodeId(11)).count() <= 1);
    let mut seq = start.clone();
    let a = seq.leave(NodeId(3)).unwrap().len();
    let b = seq.join(NodeId(11)).unwrap().len();
    assert!(a + b > m.len() * 19 / 10);
}

/// Each node's virtual nodes are spread over the key space, not one block.
#[test]
fn initial_assignment_interleaves() {
    let t = table(16, 4, 1);
    let owners: Vec<u32> = t.owners().map(|n| n.0).collect();
    assert_eq!(owners, [1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4]);
    let mut load: BTreeMap<NodeId, u32> = BTreeMap::new();
    for i in 0..100_000u32 {
        *load.entry(t.route(i.to_le_bytes()).1).or_default() += 1;
    }
    assert!(
        load.values().all(|&c| (23_000..27_000).contains(&c)),
        "{load:?}"
    );
}
