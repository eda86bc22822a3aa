//! The shared crawl's fault contract, measured: two `crawler --redis` processes crawl the
//! benchmark site while Redis is paused, killed and restarted, failed over or gone for good.
//! Prints, per fault, each process's exit status, the seconds from the fault to its exit,
//! the pages lost and the pages fetched twice, as a markdown table.
//!
//! Run it through `benches/faults.sh`, which builds the crawler and the site:
//!
//! ```sh
//! bash benches/faults.sh            # 6,000 pages, 150 pages/s per process
//! ```

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use url_dedup_redis::testing::{RedisCluster, RedisServer};

const HOSTS: u32 = 8;
const PROCESSES: usize = 2;

struct Run {
    crawler: PathBuf,
    site: PathBuf,
    pages: usize,
    rate: u32,
}

/// What a fault does to Redis, and the Redis it is done to.
enum Target {
    One(RedisServer),
    Cluster(RedisCluster),
}

impl Target {
    fn url(&self) -> String {
        match self {
            Target::One(r) => r.url(),
            Target::Cluster(c) => c.url(),
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let usage = "usage: crawl-faults CRAWLER SITE [PAGES] [RATE]";
    let run = Run {
        crawler: args.next().expect(usage).into(),
        site: args.next().expect(usage).into(),
        pages: args.next().map_or(6_000, |p| p.parse().expect(usage)),
        rate: args.next().map_or(150, |r| r.parse().expect(usage)),
    };
    println!(
        "{} pages on {HOSTS} loopback hosts, {PROCESSES} processes at --rate {} each, \
         --redis-give-up-ms 30000 (10000 for the last row); load {}",
        run.pages,
        run.rate,
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    println!();
    println!(
        "| fault | exit statuses | seconds from the fault to each exit | pages lost | fetched twice |"
    );
    println!("|---|---|---|---|---|");
    for fault in [
        "pause 10 s",
        "kill -9, restart on AOF",
        "cluster failover",
        "gone",
    ] {
        run.fault(fault);
    }
}

impl Run {
    fn fault(&self, fault: &str) {
        let mut target = match fault {
            "cluster failover" => Target::Cluster(RedisCluster::start(3, 2).expect("cluster")),
            "kill -9, restart on AOF" => {
                Target::One(RedisServer::start_durable().expect("redis-server"))
            }
            _ => Target::One(RedisServer::start().expect("redis-server")),
        };
        let (mut site, seeds) = self.site();
        let out = tempdir();
        let mut extra = vec![];
        if fault == "gone" {
            extra.extend(["--redis-give-up-ms", "10000"]);
        }
        if fault == "cluster failover" {
            extra.extend(["--redis-acknowledge", "1", "--queue-stripes", "4"]);
        }
        let name = "faults";
        let mut children: Vec<Child> = (0..PROCESSES)
            .map(|p| {
                self.crawler(
                    &out.join(format!("p{p}")),
                    &target.url(),
                    name,
                    &seeds,
                    &extra,
                )
            })
            .collect();
        // The fault lands a quarter of the way in.
        while fetched_lines(&out) < self.pages / 4 {
            if children.iter_mut().any(|c| c.try_wait().unwrap().is_some()) {
                panic!("a process ended before the fault");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let at = Instant::now();
        match (&mut target, fault) {
            (Target::One(r), "pause 10 s") => {
                r.pause().unwrap();
                std::thread::sleep(Duration::from_secs(10));
                r.resume().unwrap();
            }
            (Target::One(r), "kill -9, restart on AOF") => {
                r.kill();
                std::thread::sleep(Duration::from_secs(2));
                r.restart().unwrap();
            }
            (Target::One(r), "gone") => r.kill(),
            (Target::Cluster(c), _) => {
                let key = url_dedup_redis::Namespace::new(name).unwrap().key("stop");
                let slot = keyslot(&c.masters()[0].port, &key);
                let victim = c.master_of(slot).unwrap();
                c.await_replication().unwrap();
                c.kill_and_fail_over(victim).unwrap();
            }
            _ => unreachable!(),
        }
        let mut codes = vec![];
        let mut seconds = vec![];
        for mut c in children {
            let status = c.wait().unwrap();
            seconds.push(format!("{:.1}", at.elapsed().as_secs_f64()));
            codes.push(status.code().map_or("signal".into(), |c| c.to_string()));
        }
        let _ = site.kill();
        let (distinct, lines) = fetched(&out);
        let lost = if fault == "gone" {
            "(stopped)".to_owned()
        } else {
            (self.pages - distinct).to_string()
        };
        println!(
            "| {fault} | {} | {} | {lost} | {} |",
            codes.join(", "),
            seconds.join(", "),
            lines - distinct
        );
        let _ = std::fs::remove_dir_all(&out);
    }

    /// Starts the site on a free port; returns it and its seeds (one per host).
    fn site(&self) -> (Child, Vec<String>) {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let mut site = Command::new(&self.site)
            .args([self.pages.to_string(), HOSTS.to_string(), port.to_string()])
            .stdout(Stdio::piped())
            .spawn()
            .expect("the site binary");
        let mut lines = BufReader::new(site.stdout.take().unwrap()).lines();
        let seeds = (0..HOSTS).map(|_| lines.next().unwrap().unwrap()).collect();
        (site, seeds)
    }

    fn crawler(
        &self,
        out: &Path,
        redis: &str,
        name: &str,
        seeds: &[String],
        extra: &[&str],
    ) -> Child {
        Command::new(&self.crawler)
            .args(["--quiet", "--out"])
            .arg(out)
            .args(["--redis", redis, "--crawl-name", name, "--ignore-robots"])
            .args(["--delay-ms", "0", "--no-mirror", "--no-warc", "--json"])
            .args(["--rate", &self.rate.to_string()])
            .args(["--expected-urls", &(self.pages * 2).to_string()])
            .args(extra)
            .args(seeds)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the crawler binary")
    }
}

fn keyslot(port: &u16, key: &str) -> u16 {
    let mut conn = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .unwrap()
        .get_connection()
        .unwrap();
    redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(key)
        .query(&mut conn)
        .unwrap()
}

fn tempdir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("crawl-faults-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Lines in every process's fetched TSV so far.
fn fetched_lines(out: &Path) -> usize {
    fetched(out).1
}

/// Distinct URLs and lines over every process's `fetched-*.tsv`.
fn fetched(out: &Path) -> (usize, usize) {
    let mut urls = std::collections::HashSet::new();
    let mut lines = 0;
    for p in std::fs::read_dir(out).into_iter().flatten().flatten() {
        for f in std::fs::read_dir(p.path()).into_iter().flatten().flatten() {
            let name = f.file_name().to_string_lossy().into_owned();
            if name.starts_with("fetched") && name.ends_with(".tsv") {
                let text = std::fs::read_to_string(f.path()).unwrap_or_default();
                for line in text.lines() {
                    if let Some(url) = line.split('\t').nth(1) {
                        lines += 1;
                        urls.insert(url.to_owned());
                    }
                }
            }
        }
    }
    (urls.len(), lines)
}
