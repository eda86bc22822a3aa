//! Writes the fuzz targets' starting corpus: a few small valid inputs per target, in
//! `fuzz/starting-corpus/<target>/`. Deterministic (fixed keys and items), so running it again
//! rewrites the same files.
//!
//! `cargo run --manifest-path fuzz/Cargo.toml --example starting_corpus`

use std::fs;
use std::path::Path;

use url_dedup_bloom::{BloomFilter, HashKey, SipHash13, Xxh3};
use url_dedup_partition::{NodeId, PartitionTable, RouteKey, ShardTransfer, VirtualNode};
use url_dedup_segmented::{Layout, Placement, SegmentedBloomFilter};
use url_dedup_similarity::{Preset, RegionSizing, SimilarityFilter};
use url_dedup_two_tier::{Flag, Frame, UrlSet};

const KEY: HashKey = HashKey::from_bytes(*b"fuzz-corpus-key!");

fn urls(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("https://site{}.example/page/{i}?ref={}", i % 7, i * 3))
        .collect()
}

fn bloom() -> Vec<(&'static str, Vec<u8>)> {
    let mut empty = BloomFilter::builder()
        .expected_items(16)
        .key(KEY)
        .build()
        .unwrap();
    let mut full = BloomFilter::builder()
        .expected_items(64)
        .key(KEY)
        .build()
        .unwrap();
    for u in urls(64) {
        full.insert(&u);
    }
    empty.insert("https://example.com/");
    // Another hash algorithm: the reader must refuse it, not misread it.
    let mut other = BloomFilter::builder()
        .expected_items(16)
        .hasher(Xxh3::new(KEY))
        .build()
        .unwrap();
    other.insert("https://example.com/");
    let inputs = vec![
        ("one-url", empty.to_bytes()),
        ("64-urls", full.to_bytes()),
        ("xxh3", other.to_bytes()),
    ];
    for (_, bytes) in &inputs[..2] {
        BloomFilter::<SipHash13>::from_bytes(bytes).expect("a valid snapshot");
    }
    inputs
}

fn segmented(layout: Layout, items: usize) -> SegmentedBloomFilter<SipHash13> {
    let f = SegmentedBloomFilter::builder()
        .layout(layout)
        .key(KEY)
        .build()
        .unwrap();
    for u in urls(items) {
        f.insert(&u);
    }
    f
}

fn segmented_snapshots() -> Vec<(&'static str, Vec<u8>)> {
    let split = Layout::with_placement(4, 512, 8, Placement::Split).unwrap();
    let inputs = vec![
        (
            "scattered",
            segmented(Layout::new(4, 128, 3).unwrap(), 20).to_bytes(),
        ),
        ("split", segmented(split, 40).to_bytes()),
        (
            "one-segment",
            segmented(Layout::new(1, 64, 2).unwrap(), 5).to_bytes(),
        ),
    ];
    for (_, bytes) in &inputs {
        SegmentedBloomFilter::<SipHash13>::from_bytes(bytes).expect("a valid snapshot");
    }
    inputs
}

/// `segment_import`'s first byte picks the mode: odd imports the rest as given.
fn segment_exports() -> Vec<(&'static str, Vec<u8>)> {
    // The target's own geometry and key, so exports of these are accepted.
    let f = SegmentedBloomFilter::<SipHash13>::builder()
        .layout(Layout::new(4, 128, 3).unwrap())
        .key(HashKey::from_bytes([0; 16]))
        .build()
        .unwrap();
    for u in urls(30) {
        f.insert(&u);
    }
    let export = |segments: &[u64]| {
        let mut out = vec![1];
        f.export_segments(&mut out, segments).unwrap();
        out
    };
    vec![
        ("one-segment", export(&[2])),
        ("all-segments", export(&[0, 1, 2, 3])),
        ("none", export(&[])),
        // Even: a genuine export of segments 0 and 2 of a filter holding these items.
        ("generated", b"\x0aabcdefghijklmnop".to_vec()),
    ]
}

fn similarity() -> Vec<(&'static str, Vec<u8>)> {
    let mut out = Vec::new();
    for (name, preset, sizing) in [
        (
            "document004",
            Preset::Document004,
            RegionSizing::Document004,
        ),
        ("crawler", Preset::Crawler, RegionSizing::PerFeature),
    ] {
        let mut f = SimilarityFilter::builder()
            .preset(preset)
            .region_sizing(sizing)
            .expected_items(8)
            .hash_key(KEY)
            .build()
            .unwrap();
        for u in urls(8) {
            f.check_and_insert(&u);
        }
        let mut bytes = Vec::new();
        f.write_to(&mut bytes).unwrap();
        SimilarityFilter::read_from(&bytes[..]).expect("a valid snapshot");
        out.push((name, bytes));
    }
    let mut unkeyed = Vec::new();
    SimilarityFilter::builder()
        .preset(Preset::Document004)
        .expected_items(4)
        .unkeyed()
        .build()
        .unwrap()
        .write_to(&mut unkeyed)
        .unwrap();
    out.push(("unkeyed", unkeyed));
    out
}

fn partition() -> Vec<(&'static str, Vec<u8>)> {
    let table = || {
        PartitionTable::builder()
            .virtual_nodes(16)
            .key(KEY)
            .nodes((1..=3).map(NodeId))
    };
    let plain = table().build().unwrap();
    let mut joined = table().build().unwrap();
    // A join leaves previous owners on the moved virtual nodes.
    joined.join(NodeId(9)).unwrap();
    let weighted = PartitionTable::builder()
        .virtual_nodes(8)
        .key(KEY)
        .route_by(RouteKey::Host)
        .weighted_node(NodeId(4), 3)
        .weighted_node(NodeId(7), 1)
        .build()
        .unwrap();
    for t in [&plain, &joined] {
        assert_eq!(&PartitionTable::from_bytes(&t.to_bytes()).unwrap(), t);
    }
    let transfer = ShardTransfer {
        vnode: VirtualNode(5),
        from: NodeId(1),
        to: NodeId(2),
        epoch: 3,
        shard: plain.to_bytes()[..40].to_vec(),
    };
    vec![
        ("three-nodes", plain.to_bytes()),
        ("after-join", joined.to_bytes()),
        ("weighted-by-host", weighted.to_bytes()),
        ("shard-transfer", transfer.to_bytes()),
    ]
}

fn canonicalize() -> Vec<(&'static str, Vec<u8>)> {
    [
        ("plain", "https://example.com/a/b?x=1#top"),
        (
            "messy",
            "HTTP://User@WWW.Example.COM:80/a/./b/../%7ec/?b=2&a=1&utm_source=x",
        ),
        ("ipv6", "http://[::1]:8080/%e2%82%ac/index.html?"),
        ("relative-dots", "https://example.com/../../a//b/"),
    ]
    .into_iter()
    .map(|(name, url)| (name, url.as_bytes().to_vec()))
    .collect()
}

fn mirror_names() -> Vec<(&'static str, Vec<u8>)> {
    [
        ("page-and-html", "/a\n/a.html"),
        ("directory-and-index", "/d/\nindex.html"),
        ("index-without-extension", "/d/index\n/d/"),
        ("file-and-directory", "/v1.2\n/v1.2/x.png"),
        ("schemes", "https://h.example/a?x=1\nhttp://h.example/a?x=1"),
        ("ports", "http://[::1]:8080/%2e%2e/.x\nhttp://h.example:8080//_index.html"),
    ]
    .into_iter()
    .map(|(name, pair)| (name, pair.as_bytes().to_vec()))
    .collect()
}

fn two_tier() -> Vec<(&'static str, Vec<u8>)> {
    let mut answer = UrlSet::from_urls(["https://a.example/1", "https://b.example/2"]);
    answer.mark("https://a.example/1");
    [
        (
            "submit",
            UrlSet::from_urls(["https://example.com/"]),
            Flag::Submit,
        ),
        ("request", UrlSet::from_urls(urls(3)), Flag::Request),
        ("answer", answer, Flag::Answer),
    ]
    .into_iter()
    .map(|(name, url_set, flag)| {
        let frame = Frame {
            url_set,
            ip: "10.1.0.1".parse().unwrap(),
            number: 1025,
            flag,
        };
        (name, frame.encode())
    })
    .collect()
}

fn main() -> std::io::Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("starting-corpus");
    let targets = [
        ("bloom_snapshot", bloom()),
        ("segmented_snapshot", segmented_snapshots()),
        ("segment_import", segment_exports()),
        ("similarity_snapshot", similarity()),
        ("partition_snapshot", partition()),
        ("canonicalize", canonicalize()),
        ("mirror_names", mirror_names()),
        ("two_tier_frame", two_tier()),
    ];
    for (target, inputs) in targets {
        let dir = root.join(target);
        fs::create_dir_all(&dir)?;
        for (name, bytes) in inputs {
            fs::write(dir.join(name), bytes)?;
        }
    }
    Ok(())
}
