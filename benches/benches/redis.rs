//! URLs per second and Redis bytes per URL for check-and-insert through one local Redis, next
//! to the common alternatives, in the same run on the same server:
//!
//! * `sadd-8B`: `SADD` of an 8-byte keyed hash per URL (scrapy-redis style; exact, ~56 B/URL);
//! * `sadd-url`: `SADD` of the URL itself (what a crawler that shares its seen set writes);
//! * `bitfield/url`: one `BITFIELD key SET u1 o1 1 ... SET u1 ok 1` per URL on one key;
//! * `setbit×k`: k separate `SETBIT`s per URL (Redisson style; not atomic across clients);
//! * `redis codec`: our store's `BITFIELD` commands (the same layout, one command per data key
//!   and at most 256 bits), sent through the same connection layer ([`Link`]) but packed as
//!   `redis::Cmd`s and decoded by the `redis` crate's parser: what the store would cost
//!   without its own packing and reply decoder. It skips the store's header reads, batch
//!   counter and cache, so it does less than `ours: no cache`.
//!
//! Every method pipelines a whole batch per round trip, with 1 and 4 clients (threads, one
//! connection each) and batches of 100 and 1,000 URLs. The bench starts its own redis-server
//! (see `url_dedup_redis::testing`). Run it with
//!
//! ```text
//! cargo bench -p url-dedup-benches --bench redis
//! ```
//!
//! `URL_DEDUP_BENCH_URLS` (default 200000) and `URL_DEDUP_BENCH_RUNS` (default 3) size it; the
//! figures printed are medians over the runs. `URL_DEDUP_BENCH_DEPLOYMENTS=single,cluster`
//! also runs `SADD` (into sets spread over the slots) and our store on a Redis Cluster of three
//! masters on loopback; Redis CPU and memory are then summed over the masters. `client us/URL`
//! is this process's CPU time (client threads and the layer's I/O thread) per URL.
//!
//! `shared:` methods are the growing `SharedFilter` that `url-dedup --redis`, the facade's
//! Redis mode and the crawler open, each client opening it as a process would.
//! `URL_DEDUP_BENCH_SHARED` lists its configurations as `rate:hashes:first` separated by
//! commas: `hashes` a count or `default`, `first` the first layer's capacity as a fraction of
//! the URLs (`1` holds them all; `0.125` grows three times). Default
//! `1e-9:default:1,1e-9:default:0.125`.

use std::time::{Duration, Instant};

use redis::{Connection, RedisResult};
use url_dedup_benches::env_usize;
use url_dedup_bloom::hash::{HashKey, ItemHasher, SipHash13};
use url_dedup_bloom::sizing;
use url_dedup_redis::testing::{RedisCluster, RedisServer};
use url_dedup_redis::{Link, RedisSegmentStore, SharedFilter, StoreOptions, WriteMode};
use url_dedup_segmented::{Layout, SegmentedBloomFilter};

const FPR: f64 = 0.01;

/// One way of asking Redis "new?" for a batch of URLs, from one client.
trait Method: Send {
    fn check_and_insert(&mut self, batch: &[String], new: &mut Vec<bool>) -> RedisResult<()>;
}

type Factory<'a> = dyn Fn(&str, u64) -> Box<dyn Method> + Sync + 'a;

struct Sadd {
    conn: Connection,
    hasher: SipHash13,
}

impl Method for Sadd {
    fn check_and_insert(&mut self, batch: &[String], new: &mut Vec<bool>) -> RedisResult<()> {
        let mut pipe = redis::pipe();
        for url in batch {
            let h = self.hasher.hash(url.as_bytes()).h1.to_le_bytes();
            pipe.cmd("SADD").arg("seen").arg(&h[..]);
        }
        let added: Vec<i64> = pipe.query(&mut self.conn)?;
        new.extend(added.iter().map(|&a| a == 1));
        Ok(())
    }
}

/// `SADD` of the URL itself into one set.
struct SaddUrl {
    conn: Connection,
}

impl Method for SaddUrl {
    fn check_and_insert(&mut self, batch: &[String], new: &mut Vec<bool>) -> RedisResult<()> {
        let mut pipe = redis::pipe();
        for url in batch {
            pipe.cmd("SADD").arg("seen").arg(url);
        }
        let added: Vec<i64> = pipe.query(&mut self.conn)?;
        new.extend(added.iter().map(|&a| a == 1));
        Ok(())
    }
}

/// The growing shared filter, as `SharedFilter::open` makes or joins it.
struct Shared {
    filter: SharedFilter<SipHash13>,
}

impl Method for Shared {
    fn check_and_insert(&mut self, batch: &[String], new: &mut Vec<bool>) -> RedisResult<()> {
        let answers = self.filter.try_check_and_insert_batch(batch).map_err(|e| {
            redis::RedisError::from((redis::ErrorKind::Client, "shared", e.to_string()))
        })?;
        new.extend(answers);
        Ok(())
    }
}

/// The shared filter's configurations of `URL_DEDUP_BENCH_SHARED` (see the module
/// documentation), as named methods.
fn shared(key: HashKey) -> Vec<(String, Box<Factory<'static>>, bool)> {
    let spec = std::env::var("URL_DEDUP_BENCH_SHARED")
        .unwrap_or_else(|_| "1e-9:default:1,1e-9:default:0.125".into());
    spec.split(',')
        .filter_map(|config| {
            let mut parts = config.trim().split(':');
            let rate: f64 = parts.next()?.parse().ok()?;
            let hashes: Option<u32> = parts.next().and_then(|h| h.parse().ok());
            let first: f64 = parts.next().and_then(|f| f.parse().ok()).unwrap_or(1.0);
            let name = format!(
                "shared: p={rate:e} k={} first={first}",
                hashes.map_or("default".into(), |k| k.to_string())
            );
            let factory = move |url: &str, n: u64| -> Box<dyn Method> {
                let options = StoreOptions {
                    key: Some(key),
                    hashes,
                    ..StoreOptions::new("shared")
                };
                let capacity = ((n as f64 * first) as u64).max(1);
                let filter = SharedFilter::open(url, options, capacity, rate)
                    .expect("open the shared filter");
                Box::new(Shared { filter })
            };
            Some((name, Box::new(factory) as Box<Factory<'static>>, true))
        })
        .collect()
}

/// `SADD` on a cluster: one set per slot (the hash picks it), so the sets spread over every
/// master, as a scrapy-redis user sharding its dupefilter by hand would.
struct ShardedSadd {
    conn: redis::cluster::ClusterConnection,
    hasher: SipHash13,
}

impl Method for ShardedSadd {
    fn check_and_insert(&mut self, batch: &[String], new: &mut Vec<bool>) -> RedisResult<()> {
        let mut pipe = redis::cluster::cluster_pipe();
        for url in batch {
            let h = self.hasher.hash(url.as_bytes()).h1;
            let tag = url_dedup_redis::cluster::slot_tag((h % 16_384) as u16);
            pipe.cmd("SADD")
                .arg(format!("seen:{{{tag}}}"))
                .arg(&h.to_le_bytes()[..]);
        }
        let added: Vec<i64> = pipe.query(&mut self.conn)?;
        new.extend(added.iter().map(|&a| a == 1));
        Ok(())
    }
}

struct BitfieldPerUrl {
    conn: Connection,
    hasher: SipHash13,
    bits: u64,
    hashes: u32,
}

impl Method for BitfieldPerUrl {
    fn check_and_insert(&mut self, batch: &[String], new: &mut Vec<bool>) -> RedisResult<()> {
        let mut pipe = redis::pipe();
        for url in batch {
            let cmd = pipe.cmd("BITFIELD").arg("bloom");
            for offset in self
                .hasher
                .hash(url.as_bytes())
                .indexes(self.hashes, self.bits)
            {
                cmd.arg("SET").arg("u1").arg(offset).arg(1);
            }
        }
        let olds: Vec<Vec<i64>> = pipe.query(&mut self.conn)?;
        new.extend(olds.iter().map(|old| old.contains(&0)));
        Ok(())
    }
}

struct SetbitK {
    conn: Connection,
    hasher: SipHash13,
    bits: u64,
    hashes: u32,
}

impl Method for SetbitK {
    fn check_and_insert(&mut self, batch: &[String], new: &mut Vec<bool>) -> RedisResult<()> {
        let mut pipe = redis::pipe();
        for url in batch {
            for offset in self
                .hasher
                .hash(url.as_bytes())
                .indexes(self.hashes, self.bits)
            {
                pipe.cmd("SETBIT").arg("bloom").arg(offset).arg(1);
            }
        }
        let olds: Vec<i64> = pipe.query(&mut self.conn)?;
        new.extend(
            olds.chunks(self.hashes as usize)
                .map(|old| old.contains(&0)),
        );
        Ok(())
    }
}

/// Creates the one-key bit array at its final size (as Redisson and scrapy-redis-bloomfilter
/// users size it up front), so its growth is not timed and its memory is not over-counted.
fn bit_array(url: &str, bits: u64) -> Connection {
    let mut conn = connect(url);
    let exists: bool = redis::cmd("EXISTS")
        .arg("bloom")
        .query(&mut conn)
        .expect("EXISTS");
    if !exists {
        redis::cmd("SETRANGE")
            .arg("bloom")
            .arg(bits.div_ceil(8) - 1)
            .arg(&b"\0"[..])
            .exec(&mut conn)
            .expect("SETRANGE");
    }
    conn
}

/// Every method's connection disables Nagle's algorithm, as ours does: otherwise a
/// pipeline's tail waits for a delayed acknowledgement and batches of 1,000 look slow.
fn connect(url: &str) -> Connection {
    use redis::IntoConnectionInfo;
    use redis::io::tcp::TcpSettings;
    let info = url
        .into_connection_info()
        .expect("url")
        .set_tcp_settings(TcpSettings::default().set_nodelay(true));
    redis::Client::open(info)
        .and_then(|c| c.get_connection())
        .expect("connect to the bench's redis-server")
}

fn used_memory(conn: &mut Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("memory").query(conn).expect("INFO");
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("used_memory in INFO")
}

struct Run {
    elapsed: Duration,
    /// Redis's own CPU time (user + system) during the run: parsing, commands, replies.
    redis_cpu: Duration,
    /// This process's CPU time during the run: packing, decoding, sockets.
    client_cpu: Duration,
    bytes: u64,
    admitted: usize,
}

/// Where the bench runs: one server, or a cluster whose masters share the work.
enum Deployment {
    Single(RedisServer),
    Cluster(RedisCluster),
}

impl Deployment {
    fn name(&self) -> &'static str {
        match self {
            Self::Single(_) => "single",
            Self::Cluster(_) => "cluster",
        }
    }

    /// What clients connect to: a URL, or the cluster's seeds.
    fn url(&self) -> String {
        match self {
            Self::Single(server) => server.url(),
            Self::Cluster(cluster) => cluster.url(),
        }
    }

    /// An admin connection to every node that holds data.
    fn masters(&self) -> Vec<Connection> {
        match self {
            Self::Single(server) => vec![connect(&server.url())],
            Self::Cluster(cluster) => cluster
                .masters()
                .iter()
                .map(|m| connect(&format!("redis://127.0.0.1:{}/", m.port)))
                .collect(),
        }
    }
}

fn run_once(
    deployment: &Deployment,
    factory: &Factory<'_>,
    urls: &[String],
    clients: usize,
    batch: usize,
) -> Run {
    let url = &deployment.url();
    let mut admins = deployment.masters();
    for admin in &mut admins {
        redis::cmd("FLUSHALL").exec(admin).expect("FLUSHALL");
    }
    let before: u64 = admins.iter_mut().map(used_memory).sum();
    let cpu_before: Duration = admins.iter_mut().map(redis_cpu).sum();
    let mut methods: Vec<Box<dyn Method>> = (0..clients)
        .map(|_| factory(url, urls.len() as u64))
        .collect();
    let share = urls.len().div_ceil(clients);
    let client_before = cpu_time::ProcessTime::now();
    let start = Instant::now();
    let admitted: usize = std::thread::scope(|s| {
        let handles: Vec<_> = methods
            .iter_mut()
            .zip(urls.chunks(share))
            .map(|(method, mine)| {
                s.spawn(move || {
                    let mut new = Vec::with_capacity(mine.len());
                    for chunk in mine.chunks(batch) {
                        method
                            .check_and_insert(chunk, &mut new)
                            .expect("bench batch");
                    }
                    new.iter().filter(|&&n| n).count()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("client")).sum()
    });
    let elapsed = start.elapsed();
    let client_cpu = client_before.elapsed();
    let redis_cpu = admins
        .iter_mut()
        .map(redis_cpu)
        .sum::<Duration>()
        .saturating_sub(cpu_before);
    // Client buffers are not the filter: close the clients before measuring.
    drop(methods);
    std::thread::sleep(Duration::from_millis(50));
    let after: u64 = admins.iter_mut().map(used_memory).sum();
    Run {
        elapsed,
        redis_cpu,
        client_cpu,
        bytes: after.saturating_sub(before),
        admitted,
    }
}

fn redis_cpu(conn: &mut Connection) -> Duration {
    let info: String = redis::cmd("INFO").arg("cpu").query(conn).expect("INFO");
    let seconds: f64 = info
        .lines()
        .filter_map(|l| {
            l.strip_prefix("used_cpu_user:")
                .or_else(|| l.strip_prefix("used_cpu_sys:"))
        })
        .filter_map(|v| v.trim().parse::<f64>().ok())
        .sum();
    Duration::from_secs_f64(seconds)
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` would pass nothing and expects a
    // quick exit, so only a real bench run does the work.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let n = env_usize("URL_DEDUP_BENCH_URLS", 200_000);
    let runs = env_usize("URL_DEDUP_BENCH_RUNS", 3).max(1);
    let urls = url_dedup_benches::urls(n, 42);
    let key = HashKey::from_bytes(*b"bench-redis-key!");
    let classic = sizing::Sizing::classic(n as u64, FPR).expect("sizing");
    let (bits, hashes) = (classic.bits, classic.hashes);
    let wanted = std::env::var("URL_DEDUP_BENCH_DEPLOYMENTS").unwrap_or_else(|_| "single".into());
    let mut deployments = Vec::new();
    if wanted.contains("single") {
        let Some(server) = RedisServer::start_or_skip("redis bench") else {
            return;
        };
        deployments.push(Deployment::Single(server));
    }
    if wanted.contains("cluster") {
        let Some(cluster) = RedisCluster::start_or_skip("redis cluster bench", 3, 0) else {
            return;
        };
        deployments.push(Deployment::Cluster(cluster));
    }

    let single_key = |deployment: &Deployment| matches!(deployment, Deployment::Single(_));
    let mut methods: Vec<(String, Box<Factory<'_>>, bool)> = vec![
        (
            "sadd-url".into(),
            Box::new(move |url: &str, _| -> Box<dyn Method> {
                Box::new(SaddUrl { conn: connect(url) })
            }),
            true,
        ),
        (
            "sadd-8B".into(),
            Box::new(move |url: &str, _| -> Box<dyn Method> {
                Box::new(Sadd {
                    conn: connect(url),
                    hasher: SipHash13::new(key),
                })
            }),
            true,
        ),
        (
            "sadd-8B sharded".into(),
            Box::new(move |url: &str, _| -> Box<dyn Method> {
                let seeds: Vec<&str> = url.split(',').collect();
                let conn = redis::cluster::ClusterClient::new(seeds)
                    .and_then(|c| c.get_connection())
                    .expect("connect to the bench's cluster");
                Box::new(ShardedSadd {
                    conn,
                    hasher: SipHash13::new(key),
                })
            }),
            false,
        ),
        (
            "bitfield/url".into(),
            Box::new(move |url: &str, _| -> Box<dyn Method> {
                Box::new(BitfieldPerUrl {
                    conn: bit_array(url, bits),
                    hasher: SipHash13::new(key),
                    bits,
                    hashes,
                })
            }),
            true,
        ),
        (
            "setbit×k".into(),
            Box::new(move |url: &str, _| -> Box<dyn Method> {
                Box::new(SetbitK {
                    conn: bit_array(url, bits),
                    hasher: SipHash13::new(key),
                    bits,
                    hashes,
                })
            }),
            true,
        ),
    ];
    methods.extend(ours(key));
    methods.extend(shared(key));
    methods.push((
        "redis codec".to_owned(),
        Box::new(move |url: &str, n: u64| -> Box<dyn Method> {
            Box::new(RedisCodec::new(url, n, SipHash13::new(key)))
        }),
        true,
    ));
    if let Ok(only) = std::env::var("URL_DEDUP_BENCH_METHODS") {
        methods.retain(|(name, _, _)| only.split(',').any(|o| name.contains(o)));
    }

    for deployment in &deployments {
        let url = deployment.url();
        println!(
            "{}: redis-server {} ({} master(s)); {n} URLs, {runs} runs each, medians",
            deployment.name(),
            server_version(url.split(',').next().unwrap_or(&url)),
            deployment.masters().len(),
        );
    }
    println!("classic sizing for the per-URL methods: {bits} bits, k = {hashes}");
    println!("before: {}\n", url_dedup_benches::machine_state());
    println!(
        "{:<22} {:>10} {:>7} {:>6} {:>12} {:>10} {:>10} {:>14} {:>15}",
        "method",
        "deployment",
        "clients",
        "batch",
        "URLs/s",
        "B/URL",
        "admitted",
        "redis us/URL",
        "client us/URL"
    );
    let clients_list: Vec<usize> = std::env::var("URL_DEDUP_BENCH_CLIENTS")
        .ok()
        .map(|v| v.split(',').filter_map(|c| c.parse().ok()).collect())
        .unwrap_or_else(|| vec![1, 4]);
    let batches: Vec<usize> = std::env::var("URL_DEDUP_BENCH_BATCHES")
        .ok()
        .map(|v| v.split(',').filter_map(|c| c.parse().ok()).collect())
        .unwrap_or_else(|| vec![100, 1_000]);
    for &clients in &clients_list {
        for &batch in &batches {
            // Runs alternate between methods and deployments, so a burst of load from other
            // processes on a shared machine hits every one alike; the first round only warms
            // Redis up. Methods that need a single server's one key (or a cluster's
            // sharding) run only there.
            let cases: Vec<(&Deployment, usize)> = deployments
                .iter()
                .flat_map(|d| {
                    methods
                        .iter()
                        .enumerate()
                        .filter(move |(_, (name, _, single))| {
                            // The optimistic mode's transactions need one server.
                            let ours = name.starts_with("ours")
                                && (single_key(d) || !name.contains("optimistic"));
                            *single == single_key(d) || ours
                        })
                        .map(move |(m, _)| (d, m))
                })
                .collect();
            let mut results: Vec<Vec<Run>> = cases.iter().map(|_| Vec::new()).collect();
            for round in 0..=runs {
                for (&(deployment, m), times) in cases.iter().zip(&mut results) {
                    let factory = methods[m].1.as_ref();
                    let run = run_once(deployment, factory, &urls, clients, batch);
                    if round > 0 {
                        times.push(run);
                    }
                }
            }
            for (&(deployment, m), mut times) in cases.iter().zip(results) {
                times.sort_by_key(|r| r.elapsed);
                let median = &times[times.len() / 2];
                let mut cpu: Vec<Duration> = times.iter().map(|r| r.redis_cpu).collect();
                cpu.sort();
                let mut client: Vec<Duration> = times.iter().map(|r| r.client_cpu).collect();
                client.sort();
                println!(
                    "{:<22} {:>10} {:>7} {:>6} {:>12.0} {:>10.2} {:>10} {:>14.2} {:>15.2}",
                    methods[m].0,
                    deployment.name(),
                    clients,
                    batch,
                    n as f64 / median.elapsed.as_secs_f64(),
                    median.bytes as f64 / n as f64,
                    median.admitted,
                    cpu[cpu.len() / 2].as_secs_f64() * 1e6 / n as f64,
                    client[client.len() / 2].as_secs_f64() * 1e6 / n as f64,
                );
            }
        }
    }
    println!("after: {}", url_dedup_benches::machine_state());
    let Some(first) = deployments.first() else {
        return;
    };
    let url = first.url();
    design_load(&url, key);
    let mut admin = connect(url.split(',').next().unwrap_or(&url));
    let info: String = redis::cmd("INFO")
        .arg("memory")
        .query(&mut admin)
        .expect("INFO");
    let stats: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut admin)
        .expect("INFO");
    println!("\nRedis time per command over the whole bench (INFO commandstats):");
    for line in stats.lines().filter(|l| l.starts_with("cmdstat_")) {
        println!("  {line}");
    }
    println!("\nINFO memory after the last run:");
    for line in info
        .lines()
        .filter(|l| l.starts_with("used_memory") || l.starts_with("mem_fragmentation_ratio"))
    {
        println!("  {line}");
    }
}

fn server_version(url: &str) -> String {
    let mut conn = connect(url);
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query(&mut conn)
        .expect("INFO");
    info.lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .unwrap_or("?")
        .trim()
        .to_owned()
}

struct Ours {
    filter: SegmentedBloomFilter<SipHash13, RedisSegmentStore>,
}

impl Method for Ours {
    fn check_and_insert(&mut self, batch: &[String], new: &mut Vec<bool>) -> RedisResult<()> {
        let answers = self.filter.try_check_and_insert_batch(batch).map_err(|e| {
            redis::RedisError::from((redis::ErrorKind::Client, "store", e.to_string()))
        })?;
        new.extend(answers);
        Ok(())
    }
}

/// Our store (by default two bits per URL at 1%), in its two write modes, with four bits and
/// one bit per URL (`layout_for_hashes`), and the
/// `BITFIELD` mode without its cache of known bits (`StoreOptions::known_bits_limit = 0`:
/// every bit of every URL goes to Redis).
fn ours(key: HashKey) -> Vec<(String, Box<Factory<'static>>, bool)> {
    let factory = move |mode: WriteMode, known_bits_limit: u64, hashes: Option<u32>| {
        move |url: &str, n: u64| -> Box<dyn Method> {
            let layout = match hashes {
                Some(k) => RedisSegmentStore::layout_for_hashes(n, FPR, k),
                None => RedisSegmentStore::layout_for(n, FPR),
            }
            .expect("layout");
            let options = StoreOptions {
                mode,
                known_bits_limit,
                ..StoreOptions::new("seen")
            };
            let filter =
                RedisSegmentStore::create_filter(url, options, layout, SipHash13::new(key), n)
                    .expect("open the shared filter");
            Box::new(Ours { filter })
        }
    };
    let default_limit = StoreOptions::new("seen").known_bits_limit;
    vec![
        (
            "ours: bitfield/key".into(),
            Box::new(factory(WriteMode::Bitfield, default_limit, None)),
            true,
        ),
        (
            "ours: k=4".into(),
            Box::new(factory(WriteMode::Bitfield, default_limit, Some(4))),
            true,
        ),
        (
            "ours: k=1".into(),
            Box::new(factory(WriteMode::Bitfield, default_limit, Some(1))),
            true,
        ),
        (
            "ours: no cache".into(),
            Box::new(factory(WriteMode::Bitfield, 0, None)),
            true,
        ),
        (
            "ours: optimistic".into(),
            Box::new(factory(WriteMode::Optimistic, default_limit, None)),
            true,
        ),
    ]
}

/// Our filter's memory at design load for larger crawls: its strings are allocated in full
/// when the filter is created, so creating it measures what it will hold.
fn design_load(url: &str, key: HashKey) {
    println!("\nours at design load, 1% FPR (memory is allocated up front):");
    for items in [1_000_000u64, 10_000_000] {
        let mut admin = connect(url);
        redis::cmd("FLUSHALL").exec(&mut admin).expect("FLUSHALL");
        let before = used_memory(&mut admin);
        let layout = RedisSegmentStore::layout_for(items, FPR).expect("layout");
        let filter = RedisSegmentStore::create_filter(
            url,
            StoreOptions::new("design"),
            layout,
            SipHash13::new(key),
            items,
        )
        .expect("create");
        drop(filter);
        let after = used_memory(&mut admin);
        println!(
            "  {items:>10} URLs: k = {}, {} segments of {} bits, {:.3} bytes/URL in Redis, expected FPR {:.4}",
            layout.hashes(),
            layout.segments(),
            layout.segment_bits(),
            (after - before) as f64 / items as f64,
            layout.false_positive_rate(items),
        );
    }
}

/// Our store's `BITFIELD` commands through our connection layer, but packed and decoded by
/// the `redis` crate (see the module documentation).
struct RedisCodec {
    runtime: tokio::runtime::Runtime,
    link: Link,
    hasher: SipHash13,
    layout: Layout,
    per_key: u64,
}

impl RedisCodec {
    /// At most this many bits per command, as the store sends.
    const MAX_OPS: usize = 256;

    fn new(url: &str, n: u64, hasher: SipHash13) -> Self {
        let layout = RedisSegmentStore::layout_for(n, FPR).expect("layout");
        // The store's keys on one server: just under 1 MiB each.
        let per_key = ((1u64 << 20) - 64) / layout.segment_bytes();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let link = runtime.block_on(Link::connect(url)).expect("connect");
        let mut admin = connect(url);
        for key in 0..layout.segments().div_ceil(per_key) {
            redis::cmd("SETRANGE")
                .arg(format!("codec:{key}"))
                .arg(per_key * layout.segment_bytes() - 1)
                .arg(&b"\0"[..])
                .exec(&mut admin)
                .expect("SETRANGE");
        }
        Self {
            runtime,
            link,
            hasher,
            layout,
            per_key,
        }
    }
}

impl Method for RedisCodec {
    fn check_and_insert(&mut self, batch: &[String], new: &mut Vec<bool>) -> RedisResult<()> {
        let layout = self.layout;
        let k = layout.hashes() as usize;
        // Per item: its data key and bit offsets in it; items grouped by key, batch order
        // inside a key, as the store plans them.
        let items: Vec<(u64, Vec<u64>)> = batch
            .iter()
            .map(|url| {
                let probe = layout.probe(self.hasher.hash(url.as_bytes()));
                let key = probe.segment / self.per_key;
                let base = probe.segment % self.per_key * layout.segment_bits();
                (key, layout.offsets(probe).map(|o| base + o).collect())
            })
            .collect();
        let mut order: Vec<usize> = (0..items.len()).collect();
        order.sort_by_key(|&i| items[i].0);
        let mut pipe = redis::pipe();
        let mut commands: Vec<Vec<usize>> = Vec::new();
        let mut last: Option<u64> = None;
        for &i in &order {
            let (key, offsets) = &items[i];
            let full = commands
                .last()
                .is_none_or(|c| (c.len() + 1) * k > Self::MAX_OPS);
            if last != Some(*key) || full {
                pipe.cmd("BITFIELD").arg(format!("codec:{key}"));
                commands.push(Vec::new());
                last = Some(*key);
            }
            for &offset in offsets {
                pipe.arg("SET").arg("u1").arg(offset).arg(1);
            }
            if let Some(c) = commands.last_mut() {
                c.push(i);
            }
        }
        let olds: Vec<Vec<i64>> = self
            .runtime
            .block_on(self.link.run("bench", |mut conn| {
                let pipe = &pipe;
                async move { pipe.query_async(&mut conn).await }
            }))
            .map_err(|e| {
                redis::RedisError::from((redis::ErrorKind::Client, "run", e.to_string()))
            })?;
        let mut answers = vec![false; batch.len()];
        for (members, olds) in commands.iter().zip(&olds) {
            for (&i, old) in members.iter().zip(olds.chunks(k)) {
                answers[i] = old.contains(&0);
            }
        }
        new.extend(answers);
        Ok(())
    }
}
