//! serde for [`PartitionTable`]: the same canonical form as the snapshot, validated on the way
//! in.

use serde::{Deserialize, Deserializer, Serialize, Serializer, de::Error as _};
use url_dedup_bloom::hash::{HashKey, ItemHasher};

use crate::{NodeId, PartitionTable, RouteKey};

#[derive(Serialize, Deserialize)]
struct Repr {
    epoch: u64,
    route_key: RouteKey,
    algorithm: u16,
    key: HashKey,
    nodes: Vec<(NodeId, u32)>,
    owners: Vec<u32>,
    previous: Vec<Option<NodeId>>,
}

impl<H: ItemHasher> Serialize for PartitionTable<H> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (nodes, owners) = self.canonical();
        Repr {
            epoch: self.epoch,
            route_key: self.route_key,
            algorithm: H::ALGORITHM.0,
            key: self.hasher.key(),
            nodes,
            owners,
            previous: self.previous.to_vec(),
        }
        .serialize(serializer)
    }
}

impl<'de, H: ItemHasher> Deserialize<'de> for PartitionTable<H> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let r = Repr::deserialize(deserializer)?;
        if r.algorithm != H::ALGORITHM.0 {
            return Err(D::Error::custom(
                "partition table was serialized with another hash algorithm",
            ));
        }
        PartitionTable::from_canonical(
            H::from_key(r.key),
            r.route_key,
            r.epoch,
            &r.nodes,
            &r.owners,
            r.previous,
        )
        .map_err(D::Error::custom)
    }
}
