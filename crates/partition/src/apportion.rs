//! How many virtual nodes each real node should own: largest-remainder apportionment.
//!
//! A node of weight `w` out of a total `W` is entitled to the quota `N * w / W` virtual nodes.
//! Each node first gets the integer part of its quota; the `N - sum` virtual nodes left over
//! (fewer than the number of nodes) go one each to the largest fractional parts (Hamilton's
//! method). Every target is therefore within one virtual node of the exact quota, and with equal
//! weights the targets are `floor(N / M)` and `ceil(N / M)`.
//!
//! Ties between equal fractional parts (always the case with equal weights) go to the node that
//! already owns more virtual nodes, so that the rounding itself moves nothing, then to the lower
//! node id, so every process rounds alike.

use crate::NodeId;

/// A node as the apportionment sees it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Claim {
    pub(crate) node: NodeId,
    pub(crate) weight: u32,
    pub(crate) owned: u32,
}

/// Targets in the order of `claims`; they sum to `virtual_nodes`.
///
/// `claims` must be non-empty with weights of at least 1.
pub(crate) fn targets(virtual_nodes: u32, claims: &[Claim]) -> Vec<u32> {
    let total: u64 = claims.iter().map(|c| u64::from(c.weight)).sum();
    if total == 0 {
        return vec![0; claims.len()];
    }
    let n = u64::from(virtual_nodes);
    // N <= 2^20 and w < 2^32, so N * w fits in 52 bits and the arithmetic is exact.
    let mut targets: Vec<u32> = claims
        .iter()
        .map(|c| (n * u64::from(c.weight) / total) as u32)
        .collect();
    let given: u64 = targets.iter().map(|&t| u64::from(t)).sum();
    let mut order: Vec<usize> = (0..claims.len()).collect();
    order.sort_unstable_by(|&a, &b| {
        let rem = |i: usize| n * u64::from(claims[i].weight) % total;
        rem(b)
            .cmp(&rem(a))
            .then(claims[b].owned.cmp(&claims[a].owned))
            .then(claims[a].node.cmp(&claims[b].node))
    });
    for &i in order.iter().take((n - given) as usize) {
        targets[i] += 1;
    }
    targets
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(node: u32, weight: u32, owned: u32) -> Claim {
        Claim {
            node: NodeId(node),
            weight,
            owned,
        }
    }

    #[test]
    fn equal_weights_floor_and_ceil() {
        let claims: Vec<Claim> = (0..7).map(|i| claim(i, 1, 0)).collect();
        let t = targets(100, &claims);
        assert_eq!(t.iter().sum::<u32>(), 100);
        assert_eq!(t, [15, 15, 14, 14, 14, 14, 14]);
    }

    #[test]
    fn ties_favour_current_owners() {
        let claims = [claim(1, 1, 3), claim(2, 1, 4), claim(3, 1, 0)];
        assert_eq!(targets(10, &claims), [3, 4, 3]);
    }

    #[test]
    fn weights_are_proportional() {
        let claims = [claim(1, 1, 0), claim(2, 2, 0), claim(3, 5, 0)];
        let t = targets(16384, &claims);
        assert_eq!(t.iter().sum::<u32>(), 16384);
        for (c, t) in claims.iter().zip(&t) {
            let exact = 16384.0 * f64::from(c.weight) / 8.0;
            assert!((f64::from(*t) - exact).abs() < 1.0);
        }
    }
}
