//! Bytes into the partition table's snapshot reader, as they are and resealed (see
//! `url_dedup_fuzz::reseal`), and into the shard-transfer parser: an error or a value, never a
//! panic. An accepted table, however unbalanced, must round-trip and survive a join, a leave
//! and a planner batch.
#![no_main]

use libfuzzer_sys::fuzz_target;
use url_dedup_bloom::SipHash13;
use url_dedup_bloom::snapshot::Limits;
use url_dedup_partition::{Change, NodeId, PartitionTable, ShardTransfer};

fn exercise(bytes: &[u8]) {
    let limits = Limits {
        max_payload_bytes: 1 << 24,
    };
    let Ok(table) = PartitionTable::<SipHash13>::read_from_with_limits(bytes, limits) else {
        return;
    };
    let again = PartitionTable::<SipHash13>::from_bytes(&table.to_bytes()).expect("round trip");
    assert_eq!(again, table);
    let _ = table.route(bytes);
    // A table read near the last epoch refuses the change that would pass u64::MAX with an
    // error (`regressions/partition_snapshot/` holds such a table, found by this target).
    let first = table.nodes()[0].id;
    let mut a = table.clone();
    let _ = a.join(NodeId(u32::MAX));
    let _ = a.leave(first);
    let mut b = table.clone();
    if b.apply([
        Change::leave(first),
        Change::join_weighted(NodeId(u32::MAX), 3),
    ])
    .is_ok()
    {
        let total: u64 = b.nodes().iter().map(|n| u64::from(n.virtual_nodes)).sum();
        assert_eq!(total, u64::from(b.virtual_nodes()));
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(t) = ShardTransfer::from_bytes(data) {
        assert_eq!(
            ShardTransfer::from_bytes(&t.to_bytes()).expect("round trip"),
            t
        );
    }
    exercise(data);
    exercise(&url_dedup_fuzz::reseal(data));
});
