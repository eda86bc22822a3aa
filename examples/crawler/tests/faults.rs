//! The shared crawl's fault contract (docs/distributed.md, "Faults"), against real Redis
//! servers: a pause or outage shorter than `--redis-give-up-ms` is ridden out by every
//! process, with only the pages in flight fetched twice; a cluster failover likewise; an
//! outage longer than the budget ends every process with one clear error.
//!
//! Each site holds the crawl mid-way (its later pages wait behind a gate), so the fault
//! strikes while both processes hold claims, however fast or slow the machine.

mod common;

use std::process::{Child, Command};
use std::time::{Duration, Instant};

use common::Gate;
use common::shared::{Forest, finish, spawn};
use url_dedup_redis::testing::{RedisCluster, RedisServer};

const PAGES: usize = 300;
const HOSTS: usize = 8;
/// Pages from this one on wait behind the gate.
const HELD: usize = 100;
const PROCESSES: usize = 2;
const WORKERS: &str = "2";

/// A forest whose pages from [`HELD`] on wait until `gate` opens. Pages 100 to 199 have
/// their parents before the gate and fall on every host, so the crawl comes to the gate.
fn held_forest(gate: &Gate) -> Forest {
    let gate = gate.clone();
    Forest::start_held(HOSTS, PAGES, Duration::from_millis(10), move |i, _| {
        (i >= HELD).then(|| gate.clone())
    })
}

/// Starts the processes of crawl `name` and waits until the crawl stands still: each process
/// has as many requests held at the gate as it may hold claims (`--workers`, one request per
/// host at a time), and the rest of the pages are queued.
fn start_crawl(forest: &Forest, redis: &str, name: &str, extra: &[&str]) -> Vec<Child> {
    let seeds = forest.seeds();
    let dirs: Vec<_> = (0..PROCESSES)
        .map(|_| tempfile::tempdir().unwrap().keep())
        .collect();
    let children = dirs
        .iter()
        .map(|d| {
            let mut args = vec!["--workers", WORKERS, "--timeout-ms", "3600000"];
            args.extend(extra);
            args.extend(seeds[1..].iter().map(String::as_str));
            spawn(d, redis, name, &seeds[0], &args)
        })
        .collect();
    let mut children: Vec<Child> = children;
    let begin = Instant::now();
    while forest.in_flight() < in_flight_at_most() {
        for c in &mut children {
            if let Some(status) = c.try_wait().unwrap() {
                panic!("a process ended ({status}) before the fault");
            }
        }
        assert!(
            begin.elapsed() < Duration::from_secs(300),
            "the crawl did not come to the gate: {} in flight, hits {:?}",
            forest.in_flight(),
            forest.hits()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    children
}

/// Requests in flight over all processes at most: each holds at most `--workers` claims.
fn in_flight_at_most() -> usize {
    PROCESSES * WORKERS.parse::<usize>().unwrap()
}

/// Every page fetched, and only pages that were in flight fetched twice.
fn assert_every_page_once_but_in_flight(forest: &Forest) {
    let hits = forest.hits();
    assert!(hits.iter().all(|&h| h >= 1), "a page was lost: {hits:?}");
    let repeated: usize = hits.iter().map(|&h| h as usize - 1).sum();
    assert!(
        repeated <= in_flight_at_most(),
        "{repeated} pages fetched twice: {hits:?}"
    );
}

/// The process id of the Redis server at `url` (for signals).
fn redis_pid(url: &str) -> String {
    let mut conn = redis::Client::open(url).unwrap().get_connection().unwrap();
    let info: String = redis::cmd("INFO").arg("server").query(&mut conn).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("process_id:"))
        .unwrap()
        .trim()
        .to_owned()
}

fn signal(pid: &str, sig: &str) {
    let status = Command::new("kill").args([sig, pid]).status().unwrap();
    assert!(status.success(), "kill {sig} {pid}");
}

/// Redis stopped (SIGSTOP) for three leases while the pages in flight are answered: every
/// membership lease lapses meanwhile. Both processes join again and finish the crawl.
#[test]
fn a_redis_pause_longer_than_the_lease_is_ridden_out() {
    let Some(redis) = RedisServer::start_or_skip("a_redis_pause_is_ridden_out") else {
        return;
    };
    let gate = Gate::default();
    let forest = held_forest(&gate);
    let lease = ["--lease-ms", "1000", "--redis-give-up-ms", "120000"];
    let children = start_crawl(&forest, &redis.url(), "pause", &lease);
    let pid = redis_pid(&redis.url());
    signal(&pid, "-STOP");
    gate.open();
    // The fault itself: Redis stays paused for three leases.
    std::thread::sleep(Duration::from_secs(3));
    signal(&pid, "-CONT");
    let fetched: u64 = children
        .into_iter()
        .map(|c| finish(c, Duration::from_secs(600)))
        .sum();
    assert_every_page_once_but_in_flight(&forest);
    assert!(fetched >= PAGES as u64, "{fetched}");
}

/// Redis killed (SIGKILL) and started again on its append-only file while pages are in flight.
#[test]
fn a_redis_killed_and_restarted_with_its_aof_is_ridden_out() {
    let Some(mut redis) = RedisServer::start_durable_or_skip("a_redis_restart_is_ridden_out")
    else {
        return;
    };
    let gate = Gate::default();
    let forest = held_forest(&gate);
    let budget = ["--lease-ms", "2000", "--redis-give-up-ms", "120000"];
    let children = start_crawl(&forest, &redis.url(), "restart", &budget);
    redis.kill();
    gate.open();
    redis.restart().unwrap();
    for c in children {
        finish(c, Duration::from_secs(600));
    }
    assert_every_page_once_but_in_flight(&forest);
}

/// A master of a cluster with replicas killed mid-crawl: a replica takes over, and both
/// processes carry on, their done set waiting for a replica of each batch
/// (`--redis-acknowledge 1`). The master killed serves the crawl's own keys (membership, leader
/// lease, stop flag), the ones a failover once stopped processes on.
#[test]
fn a_cluster_failover_is_ridden_out() {
    // Two replicas per master: after the failover, the promoted one still has a replica to
    // acknowledge the done set's writes.
    let Some(mut cluster) = RedisCluster::start_or_skip("a_cluster_failover", 3, 2) else {
        return;
    };
    let gate = Gate::default();
    let forest = held_forest(&gate);
    let url = cluster.url();
    // The done set waits for a replica of each batch (`--redis-acknowledge`).
    let extra = [
        "--queue-stripes",
        "4",
        "--redis-give-up-ms",
        "120000",
        "--redis-acknowledge",
        "1",
    ];
    let children = start_crawl(&forest, &url, "failover", &extra);
    let key = url_dedup_redis::Namespace::new("failover")
        .unwrap()
        .key("stop");
    let any = cluster.masters()[0].port;
    let mut conn = redis::Client::open(format!("redis://127.0.0.1:{any}/"))
        .unwrap()
        .get_connection()
        .unwrap();
    let slot: u16 = redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(&key)
        .query(&mut conn)
        .unwrap();
    let victim = cluster.master_of(slot).unwrap();
    // Replication is asynchronous: what a master wrote last may die with it. The crawl stands
    // still here, so its replicas catch up, as they do within milliseconds in a live crawl.
    cluster.await_replication().unwrap();
    cluster.kill_and_fail_over(victim).unwrap();
    gate.open();
    for c in children {
        finish(c, Duration::from_secs(600));
    }
    assert_every_page_once_but_in_flight(&forest);
}

/// Redis gone for good: every process stops once `--redis-give-up-ms` is spent, with a
/// non-zero status and one error naming the shared crawl's Redis.
#[test]
fn redis_gone_for_good_ends_every_process_with_one_clear_error() {
    let Some(mut redis) = RedisServer::start_or_skip("redis_gone_for_good") else {
        return;
    };
    let gate = Gate::default();
    let forest = held_forest(&gate);
    let budget = ["--lease-ms", "1000", "--redis-give-up-ms", "2000"];
    let children = start_crawl(&forest, &redis.url(), "gone", &budget);
    let gone = Instant::now();
    redis.kill();
    gate.open();
    for child in children {
        let output = wait_with_limit(child, Duration::from_secs(300));
        // The budget is spent before anyone gives up.
        assert!(gone.elapsed() >= Duration::from_secs(2));
        assert_eq!(output.status.code(), Some(1), "{output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        let errors: Vec<&str> = stderr
            .lines()
            .filter(|l| l.starts_with("crawler:"))
            .collect();
        assert_eq!(errors.len(), 1, "{stderr}");
        assert!(errors[0].contains("shared crawl"), "{stderr}");
    }
}

/// Waits for a process, killing it after `limit` (a hang is a failure).
fn wait_with_limit(mut child: Child, limit: Duration) -> std::process::Output {
    let begin = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if begin.elapsed() > limit {
            let _ = child.kill();
            panic!("the process did not stop within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// A process of a shared crawl killed with `kill -9` has recorded every page it committed in
/// `fetched-PROCESS.tsv` (it once listed 448 of 597 pages its WARC file held).
#[test]
fn a_killed_process_has_recorded_every_page_it_committed() {
    let Some(redis) = RedisServer::start_or_skip("a_killed_process_has_recorded") else {
        return;
    };
    let gate = Gate::default();
    let forest = held_forest(&gate);
    let seeds = forest.seeds();
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec!["--workers", WORKERS, "--timeout-ms", "3600000"];
    args.extend(seeds[1..].iter().map(String::as_str));
    let mut child = spawn(dir.path(), &redis.url(), "records", &seeds[0], &args);
    // The crawl stands still at the gate: everything fetched before it is committed.
    let begin = Instant::now();
    while forest.in_flight() < WORKERS.parse::<usize>().unwrap() {
        assert!(begin.elapsed() < Duration::from_secs(300), "no standstill");
        std::thread::sleep(Duration::from_millis(10));
    }
    let committed = || {
        let path = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("fetched-")
            })
            .unwrap();
        std::fs::read_to_string(path).unwrap().lines().count()
    };
    // Committing the last pages fetched before the standstill may take a moment.
    let fetched: u32 = forest.hits().iter().sum::<u32>() - forest.in_flight() as u32;
    while committed() < fetched as usize {
        assert!(
            begin.elapsed() < Duration::from_secs(300),
            "{} of {fetched}",
            committed()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    gate.open();
    let responses = common::warc_responses(dir.path()).len();
    assert_eq!(committed(), responses);
}
