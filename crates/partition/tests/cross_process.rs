//! Shards crossing a real process boundary: a child process plays node 2, records URLs, leaves
//! the cluster and writes its outgoing shards to a file; this process plays node 1, replays the
//! same change, imports the shards from the file, and must still know every URL.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use url_dedup_bloom::BloomFilter;
use url_dedup_bloom::hash::HashKey;
use url_dedup_partition::{
    BloomShardParams, NodeId, PartitionTable, ShardTransfer, ShardedFilter, Verdict,
};

const KEY: HashKey = HashKey::from_bytes(*b"cross-process-ok");
const DIR_VAR: &str = "URL_DEDUP_PARTITION_CHILD_DIR";

fn params() -> BloomShardParams {
    BloomShardParams::for_total(20_000, 64, 0.001, KEY)
}

fn urls() -> Vec<String> {
    (0..5_000)
        .map(|i| format!("https://site{}.example/page/{i}", i % 31))
        .collect()
}

/// Writes length-prefixed frames.
fn write_frames(path: &Path, frames: &[Vec<u8>]) {
    let mut out = Vec::new();
    for f in frames {
        out.extend_from_slice(&(f.len() as u64).to_le_bytes());
        out.extend_from_slice(f);
    }
    fs::write(path, out).unwrap();
}

fn read_frames(path: &Path) -> Vec<Vec<u8>> {
    let bytes = fs::read(path).unwrap();
    let mut rest = &bytes[..];
    let mut frames = Vec::new();
    while !rest.is_empty() {
        let (len, tail) = rest.split_at(8);
        let len = u64::from_le_bytes(len.try_into().unwrap()) as usize;
        frames.push(tail[..len].to_vec());
        rest = &tail[len..];
    }
    frames
}

/// The child's side. In a normal test run the variable is unset and this returns at once; the
/// parent test below runs this binary again with the variable set.
#[test]
fn child_node_two() {
    let Some(dir) = std::env::var_os(DIR_VAR).map(PathBuf::from) else {
        return;
    };
    let mut table: PartitionTable =
        PartitionTable::from_bytes(&fs::read(dir.join("table")).unwrap()).unwrap();
    let mut me: ShardedFilter<BloomFilter> =
        ShardedFilter::bootstrap(table.clone(), NodeId(2), params()).unwrap();
    let mut mine = 0;
    for url in urls() {
        match me.check_and_insert(&url) {
            Verdict::New => mine += 1,
            Verdict::Forward(NodeId(1)) => {}
            other => panic!("{url}: {other:?}"),
        }
    }
    assert!(mine > 1_000);
    let migration = table.leave(NodeId(2)).unwrap();
    let frames: Vec<Vec<u8>> = me
        .begin_migration(&migration, &table)
        .unwrap()
        .iter()
        .map(ShardTransfer::to_bytes)
        .collect();
    write_frames(&dir.join("transfers"), &frames);
}

#[test]
fn shards_cross_a_process_boundary() {
    let dir = std::env::temp_dir().join(format!("url-dedup-partition-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    let mut table = PartitionTable::builder()
        .virtual_nodes(64)
        .key(KEY)
        .nodes([NodeId(1), NodeId(2)])
        .build()
        .unwrap();
    fs::write(dir.join("table"), table.to_bytes()).unwrap();
    let mut me: ShardedFilter<BloomFilter> =
        ShardedFilter::bootstrap(table.clone(), NodeId(1), params()).unwrap();

    let status = Command::new(std::env::current_exe().unwrap())
        .args(["child_node_two", "--exact", "--test-threads=1", "--quiet"])
        .env(DIR_VAR, &dir)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "child process failed");

    // Node 1 replays the same change, independently, and receives node 2's shards.
    let migration = table.leave(NodeId(2)).unwrap();
    assert!(me.begin_migration(&migration, &table).unwrap().is_empty());
    let frames = read_frames(&dir.join("transfers"));
    assert_eq!(frames.len(), 32);
    for frame in frames {
        me.import(&ShardTransfer::from_bytes(&frame).unwrap())
            .unwrap();
    }
    assert!(me.pending().is_empty());
    // Every URL the child recorded is known here now; none is admitted again.
    let before: PartitionTable =
        PartitionTable::from_bytes(&fs::read(dir.join("table")).unwrap()).unwrap();
    let (child_urls, own_urls): (Vec<String>, Vec<String>) = urls()
        .into_iter()
        .partition(|u| before.route(u).1 == NodeId(2));
    assert!(me.table().virtual_nodes_of(NodeId(1)).len() == 64);
    for u in &child_urls {
        assert_eq!(
            me.check_and_insert(u),
            Verdict::Seen,
            "{u} lost in the move"
        );
    }
    // Node 1's own URLs were never recorded in this test: they are (almost all) new.
    let new = own_urls
        .iter()
        .filter(|u| me.check_and_insert(u) == Verdict::New)
        .count();
    assert!(new + 2 >= own_urls.len(), "{new} of {}", own_urls.len());
    fs::remove_dir_all(&dir).ok();
}
