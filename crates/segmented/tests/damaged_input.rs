//! Damaged, truncated, forged or foreign snapshots and exports: a clear error, never a panic,
//! and the filter they were imported into is left unchanged.

use url_dedup_bloom::snapshot::{Kind, Limits, SnapshotError};
use url_dedup_bloom::{HashKey, Xxh3};
use url_dedup_segmented::{Error, Placement, SegmentedBloomFilter};

type Filter = SegmentedBloomFilter<url_dedup_bloom::SipHash13>;

fn filled(key: u8) -> SegmentedBloomFilter {
    let f = SegmentedBloomFilter::builder()
        .expected_items(2_000)
        .key(HashKey::from_bytes([key; 16]))
        .build()
        .unwrap();
    for i in 0..1_000 {
        f.insert(format!("https://example.com/{i}"));
    }
    f
}

fn export(f: &SegmentedBloomFilter) -> Vec<u8> {
    let mut out = Vec::new();
    f.export_segments(&mut out, &[0, 3, 7]).unwrap();
    out
}

#[test]
fn every_byte_flip_and_truncation_of_a_snapshot_is_an_error() {
    let good = filled(1).to_bytes();
    assert!(Filter::from_bytes(&good).is_ok());
    for pos in (0..good.len()).step_by(7).chain([good.len() - 1]) {
        let mut bad = good.clone();
        bad[pos] ^= 0x04;
        assert!(Filter::from_bytes(&bad).is_err(), "flip at {pos}");
    }
    for len in (0..good.len()).step_by(13) {
        assert!(Filter::from_bytes(&good[..len]).is_err(), "cut at {len}");
    }
}

#[test]
fn damaged_exports_change_nothing() {
    let source = filled(2);
    let good = export(&source);
    let target = filled(2);
    let before = target.to_bytes();
    for pos in (0..good.len()).step_by(5) {
        let mut bad = good.clone();
        bad[pos] ^= 0x20;
        assert!(target.import_segments(&bad[..]).is_err(), "flip at {pos}");
    }
    for len in 0..good.len() {
        assert!(
            target.import_segments(&good[..len]).is_err(),
            "cut at {len}"
        );
    }
    assert_eq!(target.to_bytes(), before);
}

#[test]
fn exports_of_other_filters_are_incompatible() {
    let other_key = export(&filled(3));
    let target = filled(4);
    assert!(matches!(
        target.import_segments(&other_key[..]),
        Err(Error::Incompatible(_))
    ));
    let other_size = SegmentedBloomFilter::builder()
        .expected_items(50_000)
        .key(HashKey::from_bytes([4; 16]))
        .build()
        .unwrap();
    assert!(matches!(
        target.import_segments(&export(&other_size)[..]),
        Err(Error::Incompatible(_))
    ));
    // A snapshot of another hash algorithm is refused too.
    let bytes = filled(5).to_bytes();
    assert!(matches!(
        SegmentedBloomFilter::<Xxh3>::from_bytes(&bytes),
        Err(Error::Incompatible(_))
    ));
    // And a whole snapshot is not a segment export.
    assert!(matches!(
        target.import_segments(&bytes[..]),
        Err(Error::Snapshot(SnapshotError::WrongKind { .. }))
    ));
}

#[test]
fn limits_bound_what_is_read() {
    let bytes = filled(6).to_bytes();
    let tight = Limits {
        max_payload_bytes: 64,
    };
    assert!(matches!(
        Filter::read_from_with_limits(&bytes[..], tight),
        Err(Error::Snapshot(SnapshotError::TooLarge { .. }))
    ));
}

#[test]
fn bad_export_requests_are_errors() {
    let f = filled(7);
    let mut out = Vec::new();
    assert!(f.export_segments(&mut out, &[3, 3]).is_err());
    assert!(f.export_segments(&mut out, &[5, 1]).is_err());
    assert!(f.export_segments(&mut out, &[f.segments()]).is_err());
    assert!(f.export_segments(&mut out, &[]).is_ok());
}

/// A snapshot of `kind` for `f`'s geometry and key, with valid checksums, whose parameter block
/// holds `shape` as its hash-count word, `extra` after the shared fields, and `payload`.
fn forge(
    f: &SegmentedBloomFilter,
    kind: url_dedup_bloom::snapshot::Kind,
    shape: u32,
    extra: &[u64],
    payload: Vec<u64>,
) -> Vec<u8> {
    use url_dedup_bloom::snapshot::{self, Params};
    let layout = f.layout();
    let mut p = Params::new();
    p.put_u64(layout.segments())
        .put_u64(layout.segment_bits())
        .put_u32(shape)
        .put_u16(1)
        .put_bytes(&f.key().to_bytes())
        .put_u64(f.expected_items());
    for &word in extra {
        p.put_u64(word);
    }
    let mut out = Vec::new();
    snapshot::write(
        &mut out,
        kind,
        p.as_bytes(),
        payload.len() as u64,
        payload.into_iter(),
    )
    .unwrap();
    out
}

#[test]
fn well_checksummed_exports_with_bad_structure_are_rejected() {
    // Exports forged with valid checksums: only the structural checks stand between them and
    // the filter.
    let target = filled(9);
    let before = target.to_bytes();
    let layout = target.layout();
    let forge = |count: u64, records: &[(u64, u64)]| {
        let mut payload = Vec::new();
        for &(index, fill) in records {
            payload.push(index);
            payload.extend(std::iter::repeat_n(fill, layout.segment_words() as usize));
        }
        forge(&target, Kind::SEGMENTS, layout.hashes(), &[count], payload)
    };
    // The forger itself is right: a well-formed export is accepted.
    assert!(filled(9).import_segments(&forge(1, &[(2, 0)])[..]).is_ok());
    let out_of_range = forge(1, &[(layout.segments(), u64::MAX)]);
    let out_of_order = forge(2, &[(5, u64::MAX), (3, u64::MAX)]);
    let repeated = forge(2, &[(4, u64::MAX), (4, u64::MAX)]);
    let wrong_count = forge(3, &[(1, u64::MAX), (2, u64::MAX)]);
    for bad in [out_of_range, out_of_order, repeated, wrong_count] {
        assert!(target.import_segments(&bad[..]).is_err());
    }
    assert_eq!(target.to_bytes(), before);
}

#[test]
fn the_placement_travels_with_snapshots_and_exports() {
    let split = SegmentedBloomFilter::builder()
        .expected_items(2_000)
        .placement(Placement::Split)
        .key(HashKey::from_bytes([5; 16]))
        .build()
        .unwrap();
    for i in 0..1_000 {
        split.insert(format!("https://example.com/{i}"));
    }
    let back = Filter::from_bytes(&split.to_bytes()).unwrap();
    assert_eq!(back.layout(), split.layout());
    assert!((0..1_000).all(|i| back.contains(format!("https://example.com/{i}"))));

    // Segments of a split filter do not mean the same bits in a scattered filter of the same
    // size and key, so the import is refused and changes nothing.
    let scattered = SegmentedBloomFilter::builder()
        .layout(
            url_dedup_segmented::Layout::new(
                split.segments(),
                split.segment_bits(),
                split.hashes(),
            )
            .unwrap(),
        )
        .key(split.key())
        .build()
        .unwrap();
    let before = scattered.to_bytes();
    assert!(matches!(
        scattered.import_segments(&export(&split)[..]),
        Err(Error::Incompatible(_))
    ));
    assert_eq!(scattered.to_bytes(), before);
}

#[test]
fn snapshots_without_a_placement_read_as_scattered_and_unknown_ones_are_refused() {
    let f = filled(6);
    let layout = f.layout();
    let mut words = Vec::new();
    for s in 0..f.segments() {
        f.store().read_segment(s, &mut words).unwrap();
    }
    // The shape word as written before placements existed (the hash count alone), and with a
    // placement code nobody knows.
    let whole = |shape: u32| forge(&f, Kind::SEGMENTED, shape, &[], words.clone());
    let old = Filter::from_bytes(&whole(layout.hashes())).unwrap();
    assert_eq!(old.layout(), layout);
    assert_eq!(old.to_bytes(), f.to_bytes());
    assert!(Filter::from_bytes(&whole(layout.hashes() | 7 << 16)).is_err());
}
