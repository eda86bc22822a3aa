//! Damaged, truncated, forged or foreign snapshots and exports: a clear error, never a panic,
//! and the filter they were imported into is left unchanged.

use url_dedup_bloom::snapshot::{Limits, SnapshotError};
use url_dedup_bloom::{HashKey, Xxh3};
use url_dedup_segmented::{Error, SegmentedBloomFilter};

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

#[test]
fn well_checksummed_exports_with_bad_structure_are_rejected() {
    // Exports forged with valid checksums: only the structural checks stand between them and
    // the filter.
    use url_dedup_bloom::snapshot::{self, Kind, Params};
    let target = filled(9);
    let before = target.to_bytes();
    let layout = target.layout();
    let forge = |count: u64, records: &[(u64, u64)]| {
        let mut p = Params::new();
        p.put_u64(layout.segments())
            .put_u64(layout.segment_bits())
            .put_u32(layout.hashes())
            .put_u16(1)
            .put_bytes(&target.key().to_bytes())
            .put_u64(target.expected_items())
            .put_u64(count);
        let mut payload = Vec::new();
        for &(index, fill) in records {
            payload.push(index);
            payload.extend(std::iter::repeat_n(fill, layout.segment_words() as usize));
        }
        let mut out = Vec::new();
        snapshot::write(
            &mut out,
            Kind::SEGMENTS,
            p.as_bytes(),
            payload.len() as u64,
            payload.into_iter(),
        )
        .unwrap();
        out
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
