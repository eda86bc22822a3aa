//! Table snapshots and serde: round trips, and damaged input rejected with an error.

use url_dedup_bloom::hash::{HashAlgorithm, HashKey, Xxh3};
use url_dedup_bloom::snapshot::{self, Kind, Limits, Params, SnapshotError};
use url_dedup_partition::{Change, Error, NodeId, PartitionTable, RouteKey};

fn sample() -> PartitionTable {
    let mut t = PartitionTable::builder()
        .virtual_nodes(256)
        .key(HashKey::from_bytes([4; 16]))
        .route_by(RouteKey::Host)
        .nodes((1..=5).map(NodeId))
        .weighted_node(NodeId(9), 3)
        .build()
        .unwrap();
    t.leave(NodeId(2)).unwrap();
    t.apply([Change::join(NodeId(2)), Change::reweight(NodeId(9), 1)])
        .unwrap();
    t
}

#[test]
fn round_trip_keeps_everything() {
    let t = sample();
    let back: PartitionTable = PartitionTable::from_bytes(&t.to_bytes()).unwrap();
    assert_eq!(back, t);
    assert_eq!(back.epoch(), 2);
    assert_eq!(back.route_key(), RouteKey::Host);
    // The restored table evolves exactly like the original (previous owners survive).
    let (mut a, mut b) = (t.clone(), back);
    a.apply([Change::leave(NodeId(3))]).unwrap();
    b.apply([Change::leave(NodeId(3))]).unwrap();
    a.apply([Change::join(NodeId(3))]).unwrap();
    b.apply([Change::join(NodeId(3))]).unwrap();
    assert_eq!(a, b);
}

#[test]
fn every_damage_is_an_error() {
    let good = sample().to_bytes();
    for pos in (0..good.len()).step_by(7) {
        let mut bad = good.clone();
        bad[pos] ^= 0x20;
        assert!(
            PartitionTable::<url_dedup_bloom::SipHash13>::from_bytes(&bad).is_err(),
            "flip at {pos}"
        );
    }
    for len in (0..good.len()).step_by(13) {
        assert!(PartitionTable::<url_dedup_bloom::SipHash13>::from_bytes(&good[..len]).is_err());
    }
}

#[test]
fn other_hash_algorithm_is_refused() {
    let bytes = sample().to_bytes();
    let err = PartitionTable::<Xxh3>::from_bytes(&bytes).unwrap_err();
    assert!(err.to_string().contains("another hash algorithm"), "{err}");
}

/// Well-formed snapshots (valid checksums) with inconsistent content are refused.
#[test]
fn inconsistent_content_is_refused() {
    let forge = |n: u32, members: &[(u32, u32)], owner: u16, extra_words: usize| {
        let mut p = Params::new();
        p.put_u32(n)
            .put_u64(0)
            .put_u16(0)
            .put_u16(1)
            .put_bytes(&[0; 16])
            .put_u32(members.len() as u32);
        let mut words: Vec<u64> = members
            .iter()
            .map(|&(id, w)| u64::from(id) | u64::from(w) << 32)
            .collect();
        let owner_word = (0..4).fold(0u64, |w, i| w | u64::from(owner) << (16 * i));
        words.extend(std::iter::repeat_n(owner_word, (n as usize).div_ceil(4)));
        words.extend(std::iter::repeat_n(0, n as usize + extra_words));
        let mut out = Vec::new();
        snapshot::write(
            &mut out,
            Kind::PARTITION_TABLE,
            p.as_bytes(),
            words.len() as u64,
            words.into_iter(),
        )
        .unwrap();
        PartitionTable::<url_dedup_bloom::SipHash13>::from_bytes(&out)
    };
    assert!(forge(8, &[(1, 1)], 0, 0).is_ok());
    assert!(matches!(
        forge(6, &[(1, 1)], 0, 0),
        Err(Error::InvalidVirtualNodes(6))
    ));
    assert!(forge(8, &[(1, 1)], 1, 0).is_err(), "owner out of range");
    assert!(
        forge(8, &[(2, 1), (1, 1)], 0, 0).is_err(),
        "ids not ascending"
    );
    assert!(forge(8, &[(1, 0)], 0, 0).is_err(), "zero weight");
    assert!(forge(8, &[], 0, 0).is_err(), "no members");
    assert!(forge(8, &[(1, 1)], 0, 1).is_err(), "payload too long");
    // A header claiming 2^30 virtual nodes is refused before any payload is read.
    let mut p = Params::new();
    p.put_u32(1 << 30)
        .put_u64(0)
        .put_u16(0)
        .put_u16(1)
        .put_bytes(&[0; 16])
        .put_u32(1);
    let mut out = Vec::new();
    snapshot::write(
        &mut out,
        Kind::PARTITION_TABLE,
        p.as_bytes(),
        0,
        std::iter::empty(),
    )
    .unwrap();
    assert!(matches!(
        PartitionTable::<url_dedup_bloom::SipHash13>::from_bytes(&out),
        Err(Error::InvalidVirtualNodes(_))
    ));
    // A wrong kind is named.
    let bloom = url_dedup_bloom::BloomFilter::builder()
        .expected_items(10)
        .build()
        .unwrap();
    assert!(matches!(
        PartitionTable::<url_dedup_bloom::SipHash13>::from_bytes(&bloom.to_bytes()),
        Err(Error::Snapshot(SnapshotError::WrongKind { .. }))
    ));
}

#[cfg(feature = "serde")]
#[test]
fn serde_round_trips() {
    let t = sample();
    let bytes = postcard::to_allocvec(&t).unwrap();
    let back: PartitionTable = postcard::from_bytes(&bytes).unwrap();
    assert_eq!(back, t);

    let config = bincode2::config::standard();
    let bytes = bincode2::serde::encode_to_vec(&t, config).unwrap();
    let (back, _): (PartitionTable, usize) =
        bincode2::serde::decode_from_slice(&bytes, config).unwrap();
    assert_eq!(back, t);

    let mut t2 = t.clone();
    let m = t2.apply([Change::leave(NodeId(1))]).unwrap();
    let bytes = postcard::to_allocvec(&m).unwrap();
    assert_eq!(
        postcard::from_bytes::<url_dedup_partition::Migration>(&bytes).unwrap(),
        m
    );
    let change = Change::join_weighted(NodeId(3), 2);
    let bytes = postcard::to_allocvec(&change).unwrap();
    assert_eq!(postcard::from_bytes::<Change>(&bytes).unwrap(), change);
}

#[cfg(feature = "serde")]
#[test]
fn serde_validates() {
    let t = sample();
    let mut value = postcard::to_allocvec(&t).unwrap();
    // Corrupt the owner list: postcard varints, so flip the last owner byte to a huge index.
    let n = value.len();
    // previous owners (256 x None = 256 zero bytes) follow the owners; the byte before them
    // is the last owner index.
    value[n - 257] = 0x7f;
    assert!(postcard::from_bytes::<PartitionTable>(&value).is_err());
    let xxh: Result<PartitionTable<Xxh3>, _> =
        postcard::from_bytes(&postcard::to_allocvec(&t).unwrap());
    assert!(xxh.is_err());
}

/// A table read at the next-to-last epoch takes one more change, then refuses every change
/// with an error and stays as it was: the epoch never wraps back to 0 (where a stale migration
/// could pass for a new one) and never panics.
#[test]
fn last_epoch_refuses_changes() {
    let built = PartitionTable::builder()
        .virtual_nodes(16)
        .key(HashKey::from_bytes([4; 16]))
        .nodes((1..=3).map(NodeId))
        .build()
        .unwrap();
    // The built table's own payload, behind a header that names another epoch.
    let body = built.to_bytes();
    let mut input = &body[..];
    let header =
        snapshot::read_header(&mut input, Kind::PARTITION_TABLE, Limits::default()).unwrap();
    let words = header.read_payload(&mut input).unwrap();
    let mut p = Params::new();
    p.put_u32(16)
        .put_u64(u64::MAX - 1)
        .put_u16(0) // RouteKey::Url
        .put_u16(HashAlgorithm::SIPHASH13.0)
        .put_bytes(&[4; 16])
        .put_u32(3);
    let mut out = Vec::new();
    snapshot::write(
        &mut out,
        Kind::PARTITION_TABLE,
        p.as_bytes(),
        words.len() as u64,
        words.into_iter(),
    )
    .unwrap();
    let mut table = PartitionTable::<url_dedup_bloom::SipHash13>::from_bytes(&out).unwrap();
    assert_eq!(table.epoch(), u64::MAX - 1);

    let last = table.join(NodeId(4)).unwrap();
    assert_eq!(
        (last.from_epoch(), last.to_epoch()),
        (u64::MAX - 1, u64::MAX)
    );
    let before = table.clone();
    assert!(matches!(
        table.join(NodeId(5)),
        Err(Error::EpochExhausted(u64::MAX))
    ));
    assert!(matches!(
        table.leave(NodeId(1)),
        Err(Error::EpochExhausted(u64::MAX))
    ));
    assert!(matches!(
        table.apply([Change::reweight(NodeId(2), 2)]),
        Err(Error::EpochExhausted(u64::MAX))
    ));
    assert_eq!(table, before);
    // It still routes, and its snapshot still reads.
    assert_eq!(
        table.route("https://example.com/"),
        before.route("https://example.com/")
    );
    assert_eq!(
        PartitionTable::from_bytes(&table.to_bytes()).unwrap(),
        table
    );
}

/// Shard parameters serialized before they had a placement (JSON, which names its fields)
/// read as scattered; with a placement they round-trip.
#[cfg(feature = "serde")]
#[test]
fn shard_params_without_a_placement_read_as_scattered() {
    use url_dedup_bloom::hash::HashKey;
    use url_dedup_partition::SegmentedShardParams;
    use url_dedup_segmented::Placement;

    let split = SegmentedShardParams::new(1_000, 0.01, 512, HashKey::from_bytes([3; 16]))
        .with_placement(Placement::Split);
    let mut json: serde_json::Value = serde_json::to_value(split).unwrap();
    assert_eq!(
        serde_json::from_value::<SegmentedShardParams>(json.clone()).unwrap(),
        split
    );
    json.as_object_mut().unwrap().remove("placement");
    let old: SegmentedShardParams = serde_json::from_value(json).unwrap();
    assert_eq!(old.placement, Placement::Scattered);
    assert_eq!(
        old,
        SegmentedShardParams {
            placement: Placement::Scattered,
            ..split
        }
    );
}
