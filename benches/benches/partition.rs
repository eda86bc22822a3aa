//! Partitioning schemes side by side: document 000's virtual-node table (this workspace's
//! `url-dedup-partition`) against jump consistent hash, hash rings with 100 and 256 virtual
//! nodes per node, and rendezvous hashing.
//!
//! The peers are reference implementations written here, each faithful to its paper or its
//! best-known implementation (no maintained crate offers all of them behind one interface):
//!
//! * jump consistent hash: Lamping and Veach (2014), the published loop verbatim; removing a
//!   node other than the last moves the last bucket's node into its place (the usual remedy).
//! * hash ring: ketama-style, V points per node at `mix(node, replica)`, sorted `Vec`, binary
//!   search for the first point at or after the key's hash, wrapping.
//! * rendezvous (highest random weight): `argmax over nodes of mix(key ^ seed(node))`.
//!
//! Every scheme routes the same keyed SipHash-1-3 64-bit hash of the key, so "from a string"
//! includes the same hashing cost for all, and "from a hash" compares only the schemes.
//!
//! Run: `cargo bench -p url-dedup-benches --bench partition -- --warm-up-time 1 --measurement-time 3`.
//! The quality tables (load and movement, not timings) are printed first; set
//! `PARTITION_QUALITY_ONLY=1` to print only them.

use std::collections::BTreeMap;
use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group};
use url_dedup_bloom::BloomFilter;
use url_dedup_bloom::hash::{HashKey, ItemHasher, SipHash13, mix64 as splitmix};
use url_dedup_partition::{
    BloomShardParams, Change, NodeId, PartitionTable, RouteKey, Shard, ShardedFilter, Verdict,
};

const KEY: HashKey = HashKey::from_bytes(*b"bench-partition!");
const HOSTS: usize = 1_000_000;

fn hosts(count: usize) -> Vec<String> {
    (0..count)
        .map(|i| {
            format!(
                "www.site{}.example-{}.com",
                splitmix(i as u64) % 100_000_000,
                i % 97
            )
        })
        .collect()
}

/// Jump consistent hash (Lamping and Veach 2014), over an explicit node list.
#[derive(Clone)]
struct Jump {
    nodes: Vec<u32>,
}

impl Jump {
    #[inline]
    fn bucket(mut key: u64, buckets: i64) -> i64 {
        let (mut b, mut j) = (-1i64, 0i64);
        while j < buckets {
            b = j;
            key = key.wrapping_mul(2_862_933_555_777_941_757).wrapping_add(1);
            j = ((b + 1) as f64 * ((1u64 << 31) as f64 / ((key >> 33) + 1) as f64)) as i64;
        }
        b
    }

    #[inline]
    fn route(&self, h: u64) -> u32 {
        self.nodes[Self::bucket(h, self.nodes.len() as i64) as usize]
    }

    fn join(&mut self, node: u32) {
        self.nodes.push(node);
    }

    fn leave(&mut self, node: u32) {
        let i = self.nodes.iter().position(|&n| n == node).unwrap();
        self.nodes.swap_remove(i);
    }
}

/// A consistent-hash ring with `replicas` points per node.
#[derive(Clone)]
struct Ring {
    replicas: u32,
    points: Vec<u64>,
    owners: Vec<u32>,
}

impl Ring {
    fn new(nodes: &[u32], replicas: u32) -> Self {
        let mut r = Self {
            replicas,
            points: Vec::new(),
            owners: Vec::new(),
        };
        r.rebuild(nodes);
        r
    }

    fn rebuild(&mut self, nodes: &[u32]) {
        let mut pts: Vec<(u64, u32)> = nodes
            .iter()
            .flat_map(|&n| {
                (0..self.replicas).map(move |i| (splitmix(u64::from(n) << 32 | u64::from(i)), n))
            })
            .collect();
        pts.sort_unstable();
        self.points = pts.iter().map(|p| p.0).collect();
        self.owners = pts.iter().map(|p| p.1).collect();
    }

    fn nodes(&self) -> Vec<u32> {
        let mut n = self.owners.clone();
        n.sort_unstable();
        n.dedup();
        n
    }

    #[inline]
    fn route(&self, h: u64) -> u32 {
        let i = self.points.partition_point(|&p| p < h);
        self.owners[if i == self.points.len() { 0 } else { i }]
    }

    fn join(&mut self, node: u32) {
        let mut n = self.nodes();
        n.push(node);
        self.rebuild(&n);
    }

    fn leave(&mut self, node: u32) {
        let n: Vec<u32> = self.nodes().into_iter().filter(|&x| x != node).collect();
        self.rebuild(&n);
    }
}

/// Rendezvous (highest random weight) hashing.
#[derive(Clone)]
struct Rendezvous {
    nodes: Vec<(u64, u32)>,
}

impl Rendezvous {
    fn new(nodes: &[u32]) -> Self {
        Self {
            nodes: nodes
                .iter()
                .map(|&n| (splitmix(u64::from(n) ^ 0xabcdef), n))
                .collect(),
        }
    }

    #[inline]
    fn route(&self, h: u64) -> u32 {
        let mut best = (0u64, 0u32);
        for &(seed, n) in &self.nodes {
            let score = splitmix(h ^ seed);
            if score >= best.0 {
                best = (score, n);
            }
        }
        best.1
    }

    fn join(&mut self, node: u32) {
        self.nodes
            .push((splitmix(u64::from(node) ^ 0xabcdef), node));
    }

    fn leave(&mut self, node: u32) {
        self.nodes.retain(|&(_, n)| n != node);
    }
}

/// The keys are hosts already, so the table hashes them whole, exactly like the peers.
fn table(m: u32, n: u64) -> PartitionTable {
    PartitionTable::builder()
        .virtual_nodes(n)
        .key(KEY)
        .route_by(RouteKey::Url)
        .nodes((1..=m).map(NodeId))
        .build()
        .unwrap()
}

fn assign(route: impl Fn(u64) -> u32, hashes: &[u64]) -> Vec<u32> {
    hashes.iter().map(|&h| route(h)).collect()
}

fn max_over_mean(assignment: &[u32]) -> f64 {
    let mut load: BTreeMap<u32, u64> = BTreeMap::new();
    for &n in assignment {
        *load.entry(n).or_default() += 1;
    }
    let max = *load.values().max().unwrap() as f64;
    max / (assignment.len() as f64 / load.len() as f64)
}

fn moved(a: &[u32], b: &[u32]) -> f64 {
    a.iter().zip(b).filter(|(x, y)| x != y).count() as f64 / a.len() as f64
}

struct Row {
    name: String,
    load: f64,
    join: f64,
    leave: f64,
}

fn quality_rows(m: u32, hashes: &[u64]) -> Vec<Row> {
    let ids: Vec<u32> = (1..=m).collect();
    let (newcomer, leaver) = (m + 1, m / 2);
    let mut rows = Vec::new();

    for n in [16384u64, 1024] {
        for planner in [false, true] {
            let t = table(m, n);
            let base = assign(|h| t.route_hash(h).1.0, hashes);
            let mut j = t.clone();
            let mut l = t.clone();
            if planner {
                j.apply([Change::join(NodeId(newcomer))]).unwrap();
                l.apply([Change::leave(NodeId(leaver))]).unwrap();
            } else {
                j.join(NodeId(newcomer)).unwrap();
                l.leave(NodeId(leaver)).unwrap();
            }
            rows.push(Row {
                name: format!(
                    "virtual-node table N={n} ({})",
                    if planner { "planner" } else { "document 000" }
                ),
                load: max_over_mean(&base),
                join: moved(&base, &assign(|h| j.route_hash(h).1.0, hashes)),
                leave: moved(&base, &assign(|h| l.route_hash(h).1.0, hashes)),
            });
        }
    }

    let jump = Jump { nodes: ids.clone() };
    let base = assign(|h| jump.route(h), hashes);
    let (mut j, mut l) = (jump.clone(), jump.clone());
    j.join(newcomer);
    l.leave(leaver);
    rows.push(Row {
        name: "jump consistent hash".into(),
        load: max_over_mean(&base),
        join: moved(&base, &assign(|h| j.route(h), hashes)),
        leave: moved(&base, &assign(|h| l.route(h), hashes)),
    });

    for replicas in [100, 256] {
        let ring = Ring::new(&ids, replicas);
        let base = assign(|h| ring.route(h), hashes);
        let (mut j, mut l) = (ring.clone(), ring.clone());
        j.join(newcomer);
        l.leave(leaver);
        rows.push(Row {
            name: format!("hash ring, {replicas} vnodes/node"),
            load: max_over_mean(&base),
            join: moved(&base, &assign(|h| j.route(h), hashes)),
            leave: moved(&base, &assign(|h| l.route(h), hashes)),
        });
    }

    let hrw = Rendezvous::new(&ids);
    let base = assign(|h| hrw.route(h), hashes);
    let (mut j, mut l) = (hrw.clone(), hrw.clone());
    j.join(newcomer);
    l.leave(leaver);
    rows.push(Row {
        name: "rendezvous (HRW)".into(),
        load: max_over_mean(&base),
        join: moved(&base, &assign(|h| j.route(h), hashes)),
        leave: moved(&base, &assign(|h| l.route(h), hashes)),
    });
    rows
}

/// What the planner adds, measured against the literal algorithm on the same table.
fn beyond_document(m: u32, hashes: &[u64]) {
    let t = table(m, 16384);
    let base = assign(|h| t.route_hash(h).1.0, hashes);
    let x = NodeId(m / 2);

    let mut doc = t.clone();
    doc.leave(x).unwrap();
    doc.join(x).unwrap();
    let mut plan = t.clone();
    plan.apply([Change::leave(x)]).unwrap();
    plan.apply([Change::join(x)]).unwrap();
    println!(
        "| M={m} | leave then rejoin: keys whose owner differs from before | {:.3}% | {:.3}% |",
        100.0 * moved(&base, &assign(|h| doc.route_hash(h).1.0, hashes)),
        100.0 * moved(&base, &assign(|h| plan.route_hash(h).1.0, hashes)),
    );

    let mut doc = t.clone();
    let a = doc.leave(x).unwrap().len() + doc.join(NodeId(m + 1)).unwrap().len();
    let mut plan = t.clone();
    let b = plan
        .apply([Change::leave(x), Change::join(NodeId(m + 1))])
        .unwrap()
        .len();
    println!(
        "| M={m} | replace a node (leave + join): virtual nodes moved | {a} ({:.2}%) | {b} ({:.2}%) |",
        100.0 * a as f64 / 16384.0,
        100.0 * b as f64 / 16384.0,
    );

    // Weights 1, 2, 3, 4 repeating: the document cannot express them.
    let mut builder = PartitionTable::builder().virtual_nodes(16384).key(KEY);
    for i in 1..=m {
        builder = builder.weighted_node(NodeId(i), 1 + (i - 1) % 4);
    }
    let w = builder.build().unwrap();
    let total: u32 = w.nodes().iter().map(|n| n.weight).sum();
    let worst = w
        .nodes()
        .iter()
        .map(|n| {
            (f64::from(n.virtual_nodes) - 16384.0 * f64::from(n.weight) / f64::from(total)).abs()
        })
        .fold(0.0, f64::max);
    let assignment = assign(|h| w.route_hash(h).1.0, hashes);
    let mut load: BTreeMap<u32, u64> = BTreeMap::new();
    for &n in &assignment {
        *load.entry(n).or_default() += 1;
    }
    let worst_load = w
        .nodes()
        .iter()
        .map(|n| {
            load[&n.id.0] as f64 / (hashes.len() as f64 * f64::from(n.weight) / f64::from(total))
        })
        .fold(0.0, f64::max);
    println!(
        "| M={m} | weights 1..4: worst distance of a count from its exact share; worst load over weighted share | n/a | {worst:.2} vnodes, {worst_load:.3} |"
    );
}

fn print_quality() {
    let hasher = SipHash13::new(KEY);
    let hashes: Vec<u64> = hosts(HOSTS)
        .iter()
        .map(|h| hasher.hash(h.as_bytes()).h1)
        .collect();
    println!("\nPartitioning quality over {HOSTS} hosts (max/mean load; fraction of keys moved)");
    for m in [10u32, 100] {
        println!(
            "\nM = {m} (join adds node {}, leave removes node {}; ideal join {:.4}, leave {:.4})",
            m + 1,
            m / 2,
            1.0 / f64::from(m + 1),
            1.0 / f64::from(m)
        );
        println!("| scheme | max/mean load | moved on join | moved on leave |");
        println!("|---|---|---|---|");
        for r in quality_rows(m, &hashes) {
            println!(
                "| {} | {:.4} | {:.4} | {:.4} |",
                r.name, r.load, r.join, r.leave
            );
        }
    }
    println!("\nBeyond the document (N = 16384)");
    println!("| M | measure | document 000 | planner |");
    println!("|---|---|---|---|");
    for m in [10u32, 100] {
        beyond_document(m, &hashes);
    }
    println!();
}

const BATCH: usize = 1024;

fn bench_route(c: &mut Criterion) {
    let hasher = SipHash13::new(KEY);
    let keys = hosts(BATCH);
    let hashes: Vec<u64> = keys.iter().map(|k| hasher.hash(k.as_bytes()).h1).collect();
    for m in [10u32, 100] {
        let ids: Vec<u32> = (1..=m).collect();
        let ours = table(m, 16384);
        let jump = Jump { nodes: ids.clone() };
        let ring100 = Ring::new(&ids, 100);
        let ring256 = Ring::new(&ids, 256);
        let hrw = Rendezvous::new(&ids);

        let mut g = c.benchmark_group(format!("route_hash/M={m}"));
        g.throughput(Throughput::Elements(BATCH as u64));
        macro_rules! scheme {
            ($name:expr, $route:expr) => {
                g.bench_function(BenchmarkId::from_parameter($name), |b| {
                    b.iter(|| {
                        let mut acc = 0u32;
                        for &h in black_box(&hashes) {
                            acc = acc.wrapping_add($route(h));
                        }
                        acc
                    })
                });
            };
        }
        scheme!("vnode-table-16384", |h| ours.route_hash(h).1.0);
        scheme!("jump", |h| jump.route(h));
        scheme!("ring-100", |h| ring100.route(h));
        scheme!("ring-256", |h| ring256.route(h));
        scheme!("rendezvous", |h| hrw.route(h));
        g.finish();

        let mut g = c.benchmark_group(format!("route_string/M={m}"));
        g.throughput(Throughput::Elements(BATCH as u64));
        macro_rules! scheme_str {
            ($name:expr, $route:expr) => {
                g.bench_function(BenchmarkId::from_parameter($name), |b| {
                    b.iter(|| {
                        let mut acc = 0u32;
                        for k in black_box(&keys) {
                            acc = acc.wrapping_add($route(k));
                        }
                        acc
                    })
                });
            };
        }
        scheme_str!("vnode-table-16384", |k: &String| ours.route(k).1.0);
        scheme_str!("jump", |k: &String| jump
            .route(hasher.hash(k.as_bytes()).h1));
        scheme_str!("ring-100", |k: &String| ring100
            .route(hasher.hash(k.as_bytes()).h1));
        scheme_str!("ring-256", |k: &String| ring256
            .route(hasher.hash(k.as_bytes()).h1));
        scheme_str!("rendezvous", |k: &String| hrw
            .route(hasher.hash(k.as_bytes()).h1));
        g.finish();
    }
}

/// What sharding costs a node: one node owning all 16384 shards (1M URLs at 1%) against one
/// classic filter of the same capacity, both queried by the same URLs.
fn bench_sharded(c: &mut Criterion) {
    const URLS: usize = 1_000_000;
    let inserted = url_dedup_benches::urls(URLS, 1);
    let absent = url_dedup_benches::urls(BATCH, 2);
    let hits: Vec<&String> = inserted.iter().step_by(URLS / BATCH).take(BATCH).collect();

    let table = table(1, 16384);
    let params = BloomShardParams::for_total(URLS as u64, 16384, 0.01, KEY);
    let mut sharded: ShardedFilter<BloomFilter> =
        ShardedFilter::bootstrap(table, NodeId(1), params).unwrap();
    let mut single = BloomFilter::builder()
        .expected_items(URLS as u64)
        .false_positive_rate(0.01)
        .key(KEY)
        .build()
        .unwrap();
    for u in &inserted {
        sharded.check_and_insert(u);
        single.check_and_insert(u);
    }
    let shard: BloomFilter = Shard::create(&params).unwrap();
    let sharded_bits = shard.memory_bytes() as f64 * 8.0 * 16384.0 / URLS as f64;
    let single_bits = single.memory_bytes() as f64 * 8.0 / URLS as f64;
    let fp = url_dedup_benches::urls(100_000, 3)
        .iter()
        .filter(|u| sharded.contains(u) == Verdict::Seen)
        .count();
    // Each shard also costs its struct (size, hasher, vector header) and one heap block.
    let per_shard = std::mem::size_of::<BloomFilter>() as f64;
    let overhead_bits = per_shard * 8.0 * 16384.0 / URLS as f64;
    let single_fp = url_dedup_benches::urls(100_000, 3)
        .iter()
        .filter(|u| single.contains(u))
        .count();
    println!(
        "sharded filter: {sharded_bits:.2} bits/URL in shard bits + {overhead_bits:.2} bits/URL of per-shard structs ({per_shard} B each), measured FPR {:.3}%; single classic filter: {single_bits:.2} bits/URL, measured FPR {:.3}%",
        fp as f64 / 1000.0,
        single_fp as f64 / 1000.0
    );

    let mut g = c.benchmark_group("filter_1M");
    g.throughput(Throughput::Elements(BATCH as u64));
    g.bench_function("sharded-16384/hit", |b| {
        b.iter(|| {
            hits.iter()
                .filter(|u| sharded.contains(u) == Verdict::Seen)
                .count()
        })
    });
    g.bench_function("single-classic/hit", |b| {
        b.iter(|| hits.iter().filter(|u| single.contains(u)).count())
    });
    g.bench_function("sharded-16384/miss", |b| {
        b.iter(|| {
            absent
                .iter()
                .filter(|u| sharded.contains(u) == Verdict::Seen)
                .count()
        })
    });
    g.bench_function("single-classic/miss", |b| {
        b.iter(|| absent.iter().filter(|u| single.contains(u)).count())
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench_route, bench_sharded
}

fn main() {
    let listing = std::env::args().any(|a| a == "--list");
    if !listing {
        print_quality();
    }
    if std::env::var_os("PARTITION_QUALITY_ONLY").is_some() {
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
