//! Document 000's leave (steps 16–24) and join (steps 26–33), replayed by hand on a small table
//! through the public API.

use url_dedup_partition::{Move, NodeId, PartitionTable, VirtualNode};

fn owners(t: &PartitionTable) -> Vec<u32> {
    t.owners().map(|n| n.0).collect()
}

fn mv(v: u32, from: u32, to: u32) -> Move {
    Move {
        vnode: VirtualNode(v),
        from: NodeId(from),
        to: NodeId(to),
    }
}

#[test]
fn leave_then_join_step_by_step() {
    let mut t = PartitionTable::builder()
        .virtual_nodes(16)
        .nodes([NodeId(1), NodeId(2), NodeId(3)])
        .build()
        .unwrap();
    // Dealt round-robin: node 1 holds 6, nodes 2 and 3 hold 5.
    assert_eq!(owners(&t), [1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1]);

    // Node 2 leaves. (16) S = {1, 4, 7, 10, 13}, vz = 5. (17) Remaining by ascending count:
    // node 3 (5), node 1 (6); rz = 2. (18)–(24) S is dealt 3, 1, 3, 1, 3.
    let m = t.leave(NodeId(2)).unwrap();
    assert_eq!((m.from_epoch(), m.to_epoch()), (0, 1));
    assert_eq!(
        m.moves(),
        [
            mv(1, 2, 3),
            mv(4, 2, 1),
            mv(7, 2, 3),
            mv(10, 2, 1),
            mv(13, 2, 3)
        ]
    );
    assert_eq!(owners(&t), [1, 3, 3, 1, 1, 3, 1, 3, 3, 1, 1, 3, 1, 3, 3, 1]);

    // Node 4 joins. (26) average = 16 / 3 = 5 (integer division). (27) Existing by descending
    // count, ties by id: node 1 (8), node 3 (8). (28)–(33) One virtual node at a time, each
    // donor giving its highest-numbered: 15 from 1, 14 from 3, 12 from 1, 13 from 3, 10 from 1.
    let m = t.join(NodeId(4)).unwrap();
    assert_eq!(
        m.moves(),
        [
            mv(10, 1, 4),
            mv(12, 1, 4),
            mv(13, 3, 4),
            mv(14, 3, 4),
            mv(15, 1, 4)
        ]
    );
    let counts: Vec<u32> = t.nodes().iter().map(|n| n.virtual_nodes).collect();
    assert_eq!(counts, [5, 6, 5]);
    assert_eq!(t.epoch(), 2);
}

/// Step 23: i wraps when S outnumbers the remaining nodes; step 32: s wraps at M - 1.
#[test]
fn counters_wrap() {
    let mut t = PartitionTable::builder()
        .virtual_nodes(8)
        .nodes([NodeId(1), NodeId(2)])
        .build()
        .unwrap();
    let m = t.leave(NodeId(1)).unwrap();
    assert_eq!(m.len(), 4);
    assert!(m.moves().iter().all(|mv| mv.to == NodeId(2)));
    let m = t.join(NodeId(3)).unwrap();
    // average = 8 / 2 = 4, all from the single donor (s wraps to 0 every step).
    assert_eq!(
        m.moves().iter().map(|mv| mv.vnode.0).collect::<Vec<_>>(),
        [4, 5, 6, 7]
    );
}
