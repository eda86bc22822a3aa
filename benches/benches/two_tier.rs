//! The two-tier protocol of document 001 beside the shared-filter mode, on the same workload
//! in the same run: URLs per second end to end, Redis round trips and commands per URL,
//! Redis bytes per remembered URL, URLs crawled twice and URLs lost.
//!
//! Workload: every host finds `URL_DEDUP_BENCH_URLS_PER_HOST` URLs (default 5,000); a fifth of
//! them are also found by the next host, and 30% of all URLs were crawled before by some
//! host (any host, in either network). "End to end" runs from the crawler handing its found
//! URLs to the system until every surviving URL sits in a host's `task_pool`.
//!
//! * **two-tier** ([`url_dedup_two_tier`]): `N` networks of `H` hosts, every node on its own
//!   redis-server, roles as tokio tasks; hosts `discover` their URLs (into `URL_pool`), the
//!   protocol runs, the centers fill the `task_pool`s. Round trips are counted by the roles
//!   (every script, command or pipeline is one); idle nodes' polls are included.
//! * **shared filter** (`RedisSegmentStore` of `url-dedup-redis`): one redis-server holds one
//!   segmented Bloom filter (1% false positives); each host (a thread with its own
//!   connection) checks and inserts a batch of 1,000 URLs in one round trip and pushes the new
//!   ones to the `task_pool` on its own redis-server (one round trip).
//!
//! Redis commands are summed from `INFO commandstats` over all servers (commands run inside
//! scripts included, the harness's own idle checks and `INFO` excluded).
//!
//! ```text
//! cargo bench -p url-dedup-benches --bench two_tier
//! ```
//!
//! `URL_DEDUP_BENCH_RUNS` (default 3) sets the runs; figures are medians over them.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::time::{Duration, Instant};

use redis::Commands;
use url_dedup_benches::{env_usize, median};
use url_dedup_bloom::hash::{HashKey, SipHash13};
use url_dedup_redis::testing::RedisServer;
use url_dedup_redis::{RedisSegmentStore, StoreOptions};
use url_dedup_two_tier::Settings;
use url_dedup_two_tier::testing::Cluster;

const BATCH: usize = 1_000;
const FPR: f64 = 0.01;

/// What each host finds, and what was crawled where.
struct Workload {
    found: Vec<Vec<String>>,
    crawled: Vec<Vec<String>>,
    /// Distinct found URLs that nobody crawled: what should reach the task pools, once each.
    expected: BTreeSet<String>,
    crawled_all: BTreeSet<String>,
}

fn workload(hosts: usize, per_host: usize, seed: u64) -> Workload {
    let all = url_dedup_benches::urls(hosts * per_host, seed);
    let shared = per_host / 5;
    let found: Vec<Vec<String>> = (0..hosts)
        .map(|h| {
            let mut mine = all[h * per_host..(h + 1) * per_host].to_vec();
            // The next host's first fifth: found by two hosts at about the same time.
            let next = (h + 1) % hosts;
            if next != h {
                mine[per_host - shared..]
                    .clone_from_slice(&all[next * per_host..next * per_host + shared]);
            }
            mine
        })
        .collect();
    let distinct: BTreeSet<&String> = found.iter().flatten().collect();
    let mut crawled = vec![Vec::new(); hosts];
    let mut crawled_all = BTreeSet::new();
    let mut expected = BTreeSet::new();
    for (i, url) in distinct.into_iter().enumerate() {
        let r = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32;
        if r % 10 < 3 {
            crawled[(r >> 8) as usize % hosts].push(url.clone());
            crawled_all.insert(url.clone());
        } else {
            expected.insert(url.clone());
        }
    }
    Workload {
        found,
        crawled,
        expected,
        crawled_all,
    }
}

#[derive(Clone, Debug, Default)]
struct Outcome {
    seconds: f64,
    urls: usize,
    round_trips: u64,
    commands: u64,
    bytes_per_remembered: f64,
    twice: usize,
    lost: usize,
    finished_admitted: usize,
}

/// Commands the server has run, `INFO` itself left out.
fn commandstats(conn: &mut redis::Connection) -> u64 {
    url_dedup_redis::testing::command_calls(conn, |name| name != "info").expect("INFO")
}

fn judge(tasks: Vec<String>, w: &Workload, out: &mut Outcome) {
    let distinct: BTreeSet<&String> = tasks.iter().collect();
    out.twice = tasks.len() - distinct.len();
    out.lost = w.expected.iter().filter(|u| !distinct.contains(u)).count();
    out.finished_admitted = distinct
        .iter()
        .filter(|u| w.crawled_all.contains(**u))
        .count();
}

fn two_tier(networks: usize, hosts: usize, w: &Workload) -> Outcome {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let settings = Settings::default();
        let Some(mut cluster) = Cluster::launch(&vec![hosts; networks], settings)
            .await
            .expect("cluster")
        else {
            panic!("no redis-server");
        };
        let ips: Vec<IpAddr> = (0..networks)
            .flat_map(|n| (0..hosts).map(move |h| (n, h)))
            .map(|(n, h)| cluster.host_ip(n, h))
            .collect();
        let mut handles = Vec::new();
        for (i, &ip) in ips.iter().enumerate() {
            let h = cluster.local_host(ip).await.expect("host");
            h.finish(&w.crawled[i]).await.expect("finish");
            handles.push(h);
        }
        let mut conns: Vec<redis::Connection> = cluster
            .nodes()
            .iter()
            .map(|&ip| {
                let url = cluster.topology().node(ip).expect("node").redis.clone();
                redis::Client::open(url)
                    .and_then(|c| c.get_connection())
                    .expect("conn")
            })
            .collect();
        cluster.start_all().await.expect("start");
        cluster
            .wait_idle(Duration::from_secs(60))
            .await
            .expect("idle");
        let probes_before = cluster.probe_commands();
        let commands_before: u64 = conns.iter_mut().map(commandstats).sum();
        let trips_before = cluster.stats().round_trips
            + handles.iter().map(|h| h.stats().round_trips).sum::<u64>();

        let start = tokio::time::Instant::now();
        let discovering = handles.iter().zip(&w.found).map(|(h, found)| async move {
            for chunk in found.chunks(BATCH) {
                h.discover(chunk).await.expect("discover");
            }
        });
        futures_util::future::join_all(discovering).await;
        let done = cluster
            .idle_since(Duration::from_secs(300))
            .await
            .expect("idle")
            .expect("the protocol did not settle");
        let seconds = done.duration_since(start).as_secs_f64();

        let trips = cluster.stats().round_trips
            + handles.iter().map(|h| h.stats().round_trips).sum::<u64>()
            - trips_before;
        let commands = conns.iter_mut().map(commandstats).sum::<u64>()
            - commands_before
            - (cluster.probe_commands() - probes_before);
        let mut out = Outcome {
            seconds,
            urls: w.found.iter().map(Vec::len).sum(),
            round_trips: trips,
            commands,
            ..Outcome::default()
        };
        // What the hosts remember: finish_URL sets (the crawled URLs), bytes per member.
        let key = cluster.keys().finish_url();
        let (mut bytes, mut members) = (0u64, 0u64);
        for ip in &ips {
            let url = &cluster.topology().node(*ip).expect("node").redis;
            let mut c = redis::Client::open(url.as_str())
                .and_then(|c| c.get_connection())
                .expect("conn");
            let b: Option<u64> = redis::cmd("MEMORY")
                .arg("USAGE")
                .arg(&key)
                .arg("SAMPLES")
                .arg(0)
                .query(&mut c)
                .expect("MEMORY USAGE");
            bytes += b.unwrap_or(0);
            members += c.scard::<_, u64>(&key).expect("SCARD");
        }
        out.bytes_per_remembered = bytes as f64 / members.max(1) as f64;
        judge(cluster.all_tasks().await.expect("tasks"), w, &mut out);
        cluster.shutdown().await.expect("shutdown");
        out
    })
}

fn shared_filter(hosts: usize, w: &Workload) -> Outcome {
    let filter_server = RedisServer::start().expect("redis-server");
    let host_servers: Vec<RedisServer> = (0..hosts)
        .map(|_| RedisServer::start().expect("redis-server"))
        .collect();
    let total: u64 = w.found.iter().map(|f| f.len() as u64).sum::<u64>()
        + w.crawled.iter().map(|c| c.len() as u64).sum::<u64>();
    let layout = RedisSegmentStore::layout_for(total, FPR).expect("layout");
    let key = HashKey::from_bytes(*b"two-tier bench k");
    let open = || {
        RedisSegmentStore::create_filter(
            &filter_server.url(),
            StoreOptions::new("seen"),
            layout,
            SipHash13::new(key),
            total,
        )
        .expect("filter")
    };
    let seed = open();
    for crawled in &w.crawled {
        for chunk in crawled.chunks(BATCH) {
            seed.try_check_and_insert_batch(chunk).expect("seed");
        }
    }
    let mut conns: Vec<redis::Connection> = std::iter::once(&filter_server)
        .chain(&host_servers)
        .map(|s| {
            redis::Client::open(s.url())
                .and_then(|c| c.get_connection())
                .expect("conn")
        })
        .collect();
    let filters: Vec<_> = (0..hosts).map(|_| open()).collect();
    let commands_before: u64 = conns.iter_mut().map(commandstats).sum();
    let start = Instant::now();
    let trips: u64 = std::thread::scope(|s| {
        let workers: Vec<_> = filters
            .iter()
            .zip(&w.found)
            .zip(&host_servers)
            .map(|((filter, found), server)| {
                s.spawn(move || {
                    let mut conn = redis::Client::open(server.url())
                        .and_then(|c| c.get_connection())
                        .expect("conn");
                    let mut trips = 0u64;
                    for chunk in found.chunks(BATCH) {
                        let new = filter.try_check_and_insert_batch(chunk).expect("batch");
                        trips += 1;
                        let fresh: Vec<&String> = chunk
                            .iter()
                            .zip(&new)
                            .filter(|(_, n)| **n)
                            .map(|(u, _)| u)
                            .collect();
                        if !fresh.is_empty() {
                            let _: u64 = conn.rpush("task_pool", fresh).expect("rpush");
                            trips += 1;
                        }
                    }
                    trips
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().expect("worker")).sum()
    });
    let seconds = start.elapsed().as_secs_f64();
    let commands = conns.iter_mut().map(commandstats).sum::<u64>() - commands_before;
    let mut tasks = Vec::new();
    for c in conns.iter_mut().skip(1) {
        tasks.extend(
            c.lrange::<_, Vec<String>>("task_pool", 0, -1)
                .expect("lrange"),
        );
    }
    let mut out = Outcome {
        seconds,
        urls: w.found.iter().map(Vec::len).sum(),
        round_trips: trips,
        commands,
        bytes_per_remembered: layout.bits() as f64 / 8.0 / total as f64,
        ..Outcome::default()
    };
    judge(tasks, w, &mut out);
    out
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is not supported.
    if RedisServer::binary().is_none() {
        eprintln!("two_tier bench: no redis-server on PATH; skipped");
        return;
    }
    let per_host = env_usize("URL_DEDUP_BENCH_URLS_PER_HOST", 5_000);
    let runs = env_usize("URL_DEDUP_BENCH_RUNS", 3).max(1);
    // (label, networks, hosts per network) for the protocol; the shared filter gets the
    // same total number of hosts.
    let configs: [(usize, usize); 6] = [(1, 2), (2, 1), (1, 4), (2, 2), (1, 8), (2, 4)];
    let mut results: BTreeMap<(usize, String), Vec<Outcome>> = BTreeMap::new();
    for run in 0..runs {
        for &(networks, per_network) in &configs {
            let hosts = networks * per_network;
            let w = workload(hosts, per_host, 17 + run as u64);
            let label = format!("two-tier {networks}×{per_network}");
            let o = two_tier(networks, per_network, &w);
            eprintln!("run {run} {label}: {o:?}");
            results.entry((hosts, label)).or_default().push(o);
            if networks == 1 {
                let o = shared_filter(hosts, &w);
                eprintln!("run {run} shared filter: {o:?}");
                results
                    .entry((hosts, "shared filter".into()))
                    .or_default()
                    .push(o);
            }
        }
    }
    println!("\n{per_host} URLs per host, {BATCH} per frame/batch, medians of {runs} runs\n");
    println!(
        "| hosts | mode | URLs/s | round trips/URL | Redis commands/URL | Redis bytes/remembered URL | crawled twice | lost | finished admitted |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for ((hosts, label), outs) in &results {
        let med = |f: &dyn Fn(&Outcome) -> f64| median(outs.iter().map(f).collect());
        println!(
            "| {hosts} | {label} | {:.0} | {:.4} | {:.3} | {:.1} | {:.0} | {:.0} | {:.0} |",
            med(&|o| o.urls as f64 / o.seconds),
            med(&|o| o.round_trips as f64 / o.urls as f64),
            med(&|o| o.commands as f64 / o.urls as f64),
            med(&|o| o.bytes_per_remembered),
            med(&|o| o.twice as f64),
            med(&|o| o.lost as f64),
            med(&|o| o.finished_admitted as f64),
        );
    }
}
