//! Arbitrary bytes into the partition table's snapshot reader and the shard-transfer parser:
//! an error or a value, never a panic. An accepted table, however unbalanced, must round-trip
//! and survive a join, a leave and a planner batch.
//!
//! Raw bytes rarely get past the header checksum, so the input is also framed into a
//! well-formed snapshot whose lengths agree, with the fuzzer choosing every id, weight, owner
//! index and previous owner: that reaches the table's own validation and the rebalancing code.
#![no_main]

use libfuzzer_sys::fuzz_target;
use url_dedup_bloom::SipHash13;
use url_dedup_bloom::snapshot::{self, Kind, Limits, Params};
use url_dedup_partition::{Change, NodeId, PartitionTable, ShardTransfer};

fn exercise(bytes: &[u8]) {
    let limits = Limits { max_payload_bytes: 1 << 24 };
    let Ok(table) = PartitionTable::<SipHash13>::read_from_with_limits(bytes, limits) else {
        return;
    };
    let again = PartitionTable::<SipHash13>::from_bytes(&table.to_bytes()).expect("round trip");
    assert_eq!(again, table);
    let _ = table.route(bytes);
    let first = table.nodes()[0].id;
    let mut a = table.clone();
    let _ = a.join(NodeId(u32::MAX));
    let _ = a.leave(first);
    let mut b = table.clone();
    if b.apply([Change::leave(first), Change::join_weighted(NodeId(u32::MAX), 3)]).is_ok() {
        let total: u64 = b.nodes().iter().map(|n| u64::from(n.virtual_nodes)).sum();
        assert_eq!(total, u64::from(b.virtual_nodes()));
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(t) = ShardTransfer::from_bytes(data) {
        assert_eq!(ShardTransfer::from_bytes(&t.to_bytes()).expect("round trip"), t);
    }
    exercise(data);

    let [shape, members, route, rest @ ..] = data else {
        return;
    };
    let n = 1u32 << (shape % 9);
    let members = u32::from(*members) % (n + 2);
    let mut p = Params::new();
    p.put_u32(n)
        .put_u64(7)
        .put_u16(u16::from(route % 3))
        .put_u16(1)
        .put_bytes(&[5; 16])
        .put_u32(members);
    let words = members as usize + (n as usize).div_ceil(4) + n as usize;
    let mut source = rest.chunks(8).cycle();
    let payload = (0..words).map(|_| {
        let mut w = [0u8; 8];
        if let Some(c) = source.next() {
            w[..c.len()].copy_from_slice(c);
        }
        u64::from_le_bytes(w)
    });
    let mut framed = Vec::new();
    snapshot::write(&mut framed, Kind::PARTITION_TABLE, p.as_bytes(), words as u64, payload)
        .expect("writing to a Vec");
    exercise(&framed);
});
