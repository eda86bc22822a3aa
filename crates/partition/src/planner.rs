//! The rebalancing planner behind [`PartitionTable::apply`](crate::PartitionTable::apply):
//! document 000's idea generalised to weights, batches and returning nodes.
//!
//! 1. **Targets** come from the nodes' weights by largest-remainder apportionment
//!    ([`crate::apportion`]): each node's target is within one virtual node of its exact share.
//! 2. **The pool** holds what must move, and nothing else: every virtual node of a departing
//!    node, plus, from each node above its target, just enough virtual nodes to bring it down to
//!    the target. A node at or below its target gives nothing.
//! 3. **Homecoming first**: a virtual node in the pool whose previous owner is a node below
//!    target goes back to it. Donors above target prefer to release such virtual nodes. So a
//!    node that leaves and rejoins gets back the virtual nodes it held (and their shards' keys
//!    are back where they were), instead of a fresh random share.
//! 4. **The rest** is dealt round-robin over the nodes still below target, smallest first, as
//!    the document deals a leaver's virtual nodes.
//!
//! Every node ends exactly at its target, and the number of moves is the sum of the deficits,
//! which is the least any plan reaching those targets can move. Ties are broken by virtual-node
//! number and node id only, so the plan is the same in every process.

use std::collections::{BTreeMap, VecDeque};

use crate::NodeId;
use crate::apportion::{self, Claim};

/// A planned move; `from` is `None` only when a table is first built.
pub(crate) type PlannedMove = (u32, Option<NodeId>, NodeId);

/// Plans the moves that bring `owners` to the targets of `members` (node -> weight).
///
/// `members` must be non-empty, weights at least 1.
pub(crate) fn plan(
    owners: &[Option<NodeId>],
    previous: &[Option<NodeId>],
    members: &BTreeMap<NodeId, u32>,
) -> Vec<PlannedMove> {
    let mut held: BTreeMap<NodeId, Vec<u32>> = members.keys().map(|&m| (m, Vec::new())).collect();
    let mut pool: Vec<(u32, Option<NodeId>)> = Vec::new();
    for (v, owner) in owners.iter().enumerate() {
        match owner.and_then(|o| held.get_mut(&o)) {
            Some(list) => list.push(v as u32),
            None => pool.push((v as u32, *owner)),
        }
    }
    let claims: Vec<Claim> = members
        .iter()
        .map(|(&node, &weight)| Claim {
            node,
            weight,
            owned: held[&node].len() as u32,
        })
        .collect();
    let targets = apportion::targets(owners.len() as u32, &claims);

    let mut deficit: BTreeMap<NodeId, u32> = BTreeMap::new();
    for (c, &target) in claims.iter().zip(&targets) {
        if c.owned < target {
            deficit.insert(c.node, target - c.owned);
        }
    }
    let goes_home = |v: u32| previous[v as usize].is_some_and(|p| deficit.contains_key(&p));
    for (c, &target) in claims.iter().zip(&targets) {
        let surplus = c.owned.saturating_sub(target) as usize;
        if surplus == 0 {
            continue;
        }
        let list = &held[&c.node];
        let homeward = list.iter().copied().filter(|&v| goes_home(v));
        let others = list.iter().rev().copied().filter(|&v| !goes_home(v));
        pool.extend(
            homeward
                .chain(others)
                .take(surplus)
                .map(|v| (v, Some(c.node))),
        );
    }
    pool.sort_unstable_by_key(|&(v, _)| v);

    let mut moves = Vec::with_capacity(pool.len());
    let mut rest = Vec::new();
    for (v, from) in pool {
        let home = previous[v as usize].filter(|p| Some(*p) != from);
        match home.and_then(|p| deficit.get_mut(&p).filter(|d| **d > 0).map(|d| (p, d))) {
            Some((p, d)) => {
                *d -= 1;
                moves.push((v, from, p));
            }
            None => rest.push((v, from)),
        }
    }
    let mut receivers: Vec<(u32, NodeId, u32)> = claims
        .iter()
        .filter_map(|c| {
            let left = deficit.get(&c.node).copied().unwrap_or(0);
            (left > 0).then_some((c.owned, c.node, left))
        })
        .collect();
    receivers.sort_unstable();
    let mut turn: VecDeque<(NodeId, u32)> = receivers.into_iter().map(|(_, n, d)| (n, d)).collect();
    for (v, from) in rest {
        let Some((to, left)) = turn.pop_front() else {
            break;
        };
        moves.push((v, from, to));
        if left > 1 {
            turn.push_back((to, left - 1));
        }
    }
    moves
}
