//! The join and leave algorithms of document 000 (CN102663058B, steps 15–33), step for step.
//!
//! Both work on the owner of every virtual node and return the moves; the table applies them.
//! The document leaves three things open, fixed here so that every process computes the same
//! moves:
//!
//! * **Order of S** (step 16): the leaver's virtual nodes in ascending number.
//! * **Ties in the sorts** (steps 17 and 27): equal counts are ordered by ascending node id.
//! * **Which virtual node a donor gives** (step 30): its highest-numbered one.
//! * **"average = N/M"** (step 26): integer division, `floor(N / M)`. With the existing nodes
//!   within one virtual node of each other, the newcomer then ends within one of them too (the
//!   property tests check it), and floor is the smallest share that does, so the join moves the
//!   minimum.

use std::collections::BTreeMap;

use crate::{Move, NodeId, VirtualNode};

fn counts(owners: &[NodeId], members: &[NodeId]) -> BTreeMap<NodeId, u32> {
    let mut counts: BTreeMap<NodeId, u32> = members.iter().map(|&m| (m, 0)).collect();
    for owner in owners {
        if let Some(c) = counts.get_mut(owner) {
            *c += 1;
        }
    }
    counts
}

/// Steps 16–24: the leaver's virtual nodes are dealt round-robin over the remaining nodes,
/// sorted by ascending count.
///
/// `members` are the nodes before the leave, the leaver among them; at least one must remain.
pub(crate) fn leave(owners: &[NodeId], members: &[NodeId], leaver: NodeId) -> Vec<Move> {
    // (16) S: the leaver's virtual nodes; vz = |S|.
    let s: Vec<u32> = (0..owners.len() as u32)
        .filter(|&v| owners[v as usize] == leaver)
        .collect();
    // (17) The remaining nodes by ascending count; rz of them.
    let mut remaining: Vec<(u32, NodeId)> = counts(owners, members)
        .into_iter()
        .filter(|&(node, _)| node != leaver)
        .map(|(node, count)| (count, node))
        .collect();
    remaining.sort_unstable();
    let rz = remaining.len();
    if rz == 0 {
        return Vec::new();
    }
    // (18) i over the sorted nodes, j over S.
    let (mut i, mut j) = (0, 0);
    let mut moves = Vec::with_capacity(s.len());
    // (19) until j = vz:
    while j < s.len() {
        // (20) the (j+1)-th virtual node of S goes to the (i+1)-th node.
        moves.push(Move {
            vnode: VirtualNode(s[j]),
            from: leaver,
            to: remaining[i].1,
        });
        // (21)
        i += 1;
        j += 1;
        // (22), (23) wrap i.
        if i == rz {
            i = 0;
        }
    }
    moves
}

/// Steps 26–33: the newcomer takes `average = floor(N / M)` virtual nodes, one at a time,
/// round-robin from the existing nodes sorted by descending count.
///
/// `members` are the nodes before the join (at least one), without the newcomer.
pub(crate) fn join(owners: &[NodeId], members: &[NodeId], newcomer: NodeId) -> Vec<Move> {
    let n = owners.len();
    let m = members.len() + 1;
    // (26) average = N / M; Q starts empty.
    let average = n / m;
    // (27) Existing nodes by descending count, each with its virtual nodes (ascending, so the
    // highest is at the end).
    let mut held: BTreeMap<NodeId, Vec<u32>> = members.iter().map(|&id| (id, Vec::new())).collect();
    for (v, owner) in owners.iter().enumerate() {
        if let Some(list) = held.get_mut(owner) {
            list.push(v as u32);
        }
    }
    let mut donors: Vec<(NodeId, Vec<u32>)> = held.into_iter().collect();
    donors.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
    // (28) s over the donors; t = |Q|.
    let (mut s, mut t) = (0, 0);
    let mut moves = Vec::with_capacity(average);
    let mut idle_rounds = 0;
    // (29) until t = average:
    while t < average {
        // (30) one virtual node of donor s+1 goes into Q. A donor with nothing left is skipped
        // (the document assumes it cannot happen; it cannot with M <= N and balanced counts).
        let (donor, list) = &mut donors[s];
        if let Some(v) = list.pop() {
            moves.push(Move {
                vnode: VirtualNode(v),
                from: *donor,
                to: newcomer,
            });
            t += 1;
            idle_rounds = 0;
        } else {
            idle_rounds += 1;
            if idle_rounds == donors.len() {
                break;
            }
        }
        s += 1;
        // (31), (32) wrap s at M - 1.
        if s == m - 1 {
            s = 0;
        }
    }
    moves
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(raw: &[u32]) -> Vec<NodeId> {
        raw.iter().map(|&i| NodeId(i)).collect()
    }

    /// N = 8, nodes A=1 (3 vnodes), B=2 (3), C=3 (2); C leaves.
    #[test]
    fn leave_replays_steps_16_to_24() {
        let owners = ids(&[1, 2, 3, 1, 2, 3, 1, 2]);
        let moves = leave(&owners, &ids(&[1, 2, 3]), NodeId(3));
        // S = {2, 5}; remaining ascending by count, ties by id: A(3), B(3) -> A, B.
        assert_eq!(
            moves,
            [
                Move {
                    vnode: VirtualNode(2),
                    from: NodeId(3),
                    to: NodeId(1)
                },
                Move {
                    vnode: VirtualNode(5),
                    from: NodeId(3),
                    to: NodeId(2)
                },
            ]
        );
    }

    /// Round-robin wraps (step 23) when S is larger than the number of remaining nodes, and the
    /// smallest node is served first.
    #[test]
    fn leave_wraps_round_robin() {
        // Node 9 holds 5 of 8; nodes 1 (2 vnodes) and 2 (1 vnode) remain.
        let owners = ids(&[9, 1, 9, 2, 9, 1, 9, 9]);
        let moves = leave(&owners, &ids(&[1, 2, 9]), NodeId(9));
        let to: Vec<u32> = moves.iter().map(|m| m.to.0).collect();
        // Sorted ascending: 2 (1), 1 (2); S = {0, 2, 4, 6, 7}.
        assert_eq!(to, [2, 1, 2, 1, 2]);
        assert_eq!(moves[0].vnode, VirtualNode(0));
    }

    /// N = 10, nodes 1 (4), 2 (3), 3 (3); node 4 joins: average = 10 / 4 = 2.
    #[test]
    fn join_replays_steps_26_to_33() {
        let owners = ids(&[1, 2, 3, 1, 2, 3, 1, 2, 3, 1]);
        let moves = join(&owners, &ids(&[1, 2, 3]), NodeId(4));
        // Descending by count, ties by id: 1 (4), 2 (3), 3 (3). Takes the highest of 1, then
        // of 2.
        assert_eq!(
            moves,
            [
                Move {
                    vnode: VirtualNode(9),
                    from: NodeId(1),
                    to: NodeId(4)
                },
                Move {
                    vnode: VirtualNode(7),
                    from: NodeId(2),
                    to: NodeId(4)
                },
            ]
        );
    }

    /// Step 32: s wraps at M - 1 when average exceeds the number of donors.
    #[test]
    fn join_wraps_over_donors() {
        let owners = ids(&[1; 16]);
        let moves = join(&owners, &ids(&[1]), NodeId(2));
        assert_eq!(moves.len(), 8);
        let v: Vec<u32> = moves.iter().map(|m| m.vnode.0).collect();
        assert_eq!(v, [15, 14, 13, 12, 11, 10, 9, 8]);
    }
}
