//! A crawl cluster in one process: four nodes deduplicate 200,000 URLs, then one node joins
//! and another leaves while shards travel between them as bytes. Prints what moved and checks
//! that no URL is admitted twice.
//!
//! Run: `cargo run --release -p url-dedup-partition --example cluster`

use std::collections::BTreeMap;

use url_dedup_bloom::BloomFilter;
use url_dedup_bloom::hash::HashKey;
use url_dedup_partition::{
    BloomShardParams, Change, Error, NodeId, PartitionTable, RouteKey, ShardTransfer,
    ShardedFilter, Verdict,
};

type Node = ShardedFilter<BloomFilter>;

fn urls(count: usize) -> Vec<String> {
    (0..count)
        .map(|i| format!("https://www.site{}.example/section/{i}.html", i % 997))
        .collect()
}

/// Offers a URL to the cluster the way crawlers do: to any node, following forwards.
fn offer(nodes: &mut BTreeMap<NodeId, Node>, url: &str) -> Verdict {
    let mut at = *nodes.keys().next().expect("a node");
    loop {
        match nodes
            .get_mut(&at)
            .expect("owner is a member")
            .check_and_insert(url)
        {
            Verdict::Forward(owner) => at = owner,
            verdict => return verdict,
        }
    }
}

/// Applies one membership change everywhere, shipping shards as bytes.
fn migrate(
    table: &mut PartitionTable,
    nodes: &mut BTreeMap<NodeId, Node>,
    change: Change,
    params: BloomShardParams,
) -> Result<(), Error> {
    let before = table.clone();
    let migration = table.apply([change])?;
    if let Change::Join { node, .. } = change {
        nodes.insert(node, ShardedFilter::joining(before, node, params)?);
    }
    let mut wire: Vec<Vec<u8>> = Vec::new();
    for node in nodes.values_mut() {
        for transfer in node.begin_migration(&migration, table)? {
            wire.push(transfer.to_bytes());
        }
    }
    let bytes: usize = wire.iter().map(Vec::len).sum();
    for frame in &wire {
        let transfer = ShardTransfer::from_bytes(frame)?;
        nodes
            .get_mut(&transfer.to)
            .expect("receiver")
            .import(&transfer)?;
    }
    if let Change::Leave { node } = change {
        nodes.remove(&node);
    }
    println!(
        "epoch {} -> {}: {:?}: {} virtual nodes moved ({:.1}% of keys), {} shards, {:.1} KiB on the wire",
        migration.from_epoch(),
        migration.to_epoch(),
        change,
        migration.len(),
        100.0 * migration.fraction_moved(table.virtual_nodes()),
        wire.len(),
        bytes as f64 / 1024.0
    );
    Ok(())
}

fn main() -> Result<(), Error> {
    let key = HashKey::random();
    let mut table = PartitionTable::builder()
        .key(key)
        // Whole-URL routing spreads URLs evenly over the shards, which are sized for an even
        // share. With RouteKey::Host a shard holds whole sites and must be sized for them.
        .route_by(RouteKey::Url)
        .nodes((1..=4).map(NodeId))
        .build()?;
    let params = BloomShardParams::for_total(1_000_000, table.virtual_nodes(), 0.01, key);
    let mut nodes: BTreeMap<NodeId, Node> = (1..=4)
        .map(|i| {
            Ok((
                NodeId(i),
                ShardedFilter::bootstrap(table.clone(), NodeId(i), params)?,
            ))
        })
        .collect::<Result<_, Error>>()?;

    let urls = urls(200_000);
    let new = urls
        .iter()
        .filter(|u| offer(&mut nodes, u) == Verdict::New)
        .count();
    println!("{new} of {} URLs admitted on 4 nodes", urls.len());

    migrate(&mut table, &mut nodes, Change::join(NodeId(5)), params)?;
    migrate(&mut table, &mut nodes, Change::leave(NodeId(2)), params)?;
    migrate(&mut table, &mut nodes, Change::join(NodeId(2)), params)?;

    let again = urls
        .iter()
        .filter(|u| offer(&mut nodes, u) == Verdict::New)
        .count();
    println!("after the changes, {again} URLs admitted a second time");
    for info in table.nodes() {
        println!("  {}: {} virtual nodes", info.id, info.virtual_nodes);
    }
    assert_eq!(again, 0);
    Ok(())
}
