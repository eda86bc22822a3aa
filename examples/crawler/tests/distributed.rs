//! Several real `crawler` processes sharing one crawl through a real `redis-server`.

mod common;

use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use common::shared::{Forest, finish, finish_summary, spawn};
use common::{Gate, Reply, Site, StatusPage, wait_until};
use url_dedup_redis::testing::RedisServer;

/// A site of `pages` pages `/p/{i}`; page i links to 2i+1 and 2i+2 (a binary tree) and to the
/// root, so most links are duplicates.
fn tree_site(pages: usize, delay: Duration) -> Site {
    Site::start(move |path, _| {
        let Some(i) = path
            .strip_prefix("/p/")
            .and_then(|n| n.parse::<usize>().ok())
        else {
            return Reply::not_found();
        };
        if i >= pages {
            return Reply::not_found();
        }
        let mut body = String::from("<a href=\"/p/0\">root</a>");
        for child in [2 * i + 1, 2 * i + 2] {
            if child < pages {
                body.push_str(&format!("<a href=\"/p/{child}\">{child}</a>"));
            }
        }
        Reply::html(body).delayed(delay)
    })
}

fn page_hits(site: &Site, pages: usize) -> Vec<u32> {
    (0..pages).map(|i| site.hit(&format!("/p/{i}"))).collect()
}

/// What one racer admitted: `(offered, decided, url)` per URL, times in microseconds.
fn admissions(dir: &Path) -> Vec<(u128, u128, String)> {
    let log = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("admitted-"))
        })
        .expect("an admission log");
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (
                f[0].parse().unwrap(),
                f[1].parse().unwrap(),
                f[2].to_owned(),
            )
        })
        .collect()
}

/// Holds every Redis write until `release`: processes started meanwhile block on their first
/// write (`CLIENT PAUSE WRITE`), so they leave the gate together.
struct StartGate(redis::Connection);

impl StartGate {
    fn close(redis: &str) -> Self {
        let mut conn = redis::Client::open(redis)
            .unwrap()
            .get_connection()
            .unwrap();
        let () = redis::cmd("CLIENT")
            .arg("PAUSE")
            .arg(60_000)
            .arg("WRITE")
            .query(&mut conn)
            .unwrap();
        Self(conn)
    }

    /// Waits until `n` clients are held at the gate, then opens it.
    fn release_when_waiting(mut self, n: usize) {
        wait_until(Duration::from_secs(60), || {
            let info: String = redis::cmd("INFO")
                .arg("clients")
                .query(&mut self.0)
                .unwrap();
            info.lines()
                .find_map(|l| l.strip_prefix("blocked_clients:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .is_some_and(|b| b >= n)
        });
        let () = redis::cmd("CLIENT")
            .arg("UNPAUSE")
            .query(&mut self.0)
            .unwrap();
    }
}

/// A site of `pages` pages on `hosts` ports, page i on port i % hosts: page i links to the
/// root, to 2i+1 and 2i+2 (a binary tree, so every page is reachable) and to i+1, so most pages
/// have two parents, often fetched by different processes.
fn racecourse(pages: usize, hosts: usize, delay: Duration) -> Site {
    let origins: Arc<OnceLock<Vec<String>>> = Arc::default();
    let o = origins.clone();
    let site = Site::start_ports(hosts, move |path, headers| {
        let origins = o.get().unwrap();
        let host = common::header_value(headers, axum::http::header::HOST);
        let Some(h) = origins.iter().position(|o| o.ends_with(host)) else {
            return Reply::not_found();
        };
        if let Some(r) = path.strip_prefix("/entry/") {
            // A racer's own seed, on the host of its number.
            let own = r.parse::<usize>().is_ok_and(|r| r % hosts == h);
            return match own {
                true => Reply::html(format!("<a href=\"{}/p/0\">root</a>", origins[0])),
                false => Reply::not_found(),
            };
        }
        let Some(i) = path
            .strip_prefix("/p/")
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|&i| i < pages && i % hosts == h)
        else {
            return Reply::not_found();
        };
        let body: String = [0, 2 * i + 1, 2 * i + 2, i + 1]
            .into_iter()
            .filter(|&j| j < pages)
            .map(|j| format!("<a href=\"{}/p/{j}\">{j}</a>", origins[j % hosts]))
            .collect();
        Reply::html(body).delayed(delay)
    });
    origins.set(site.origins.clone()).unwrap();
    site
}

/// Three processes race on the same URLs: started together (every Redis write held until all
/// three wait at it), given the same seeds in the same order, then crawling a site whose pages
/// mostly have two parents. Every URL is admitted by exactly one of them and fetched once.
///
/// Each racer also has a seed of its own (an entry page linking to the root), which only it
/// offers: so each admits at least that one URL whatever the machine's load, and a racer's
/// admissions that went missing show up. Which racer wins which shared URL is up to the
/// scheduler, so the test asserts nothing about the shares.
#[test]
fn racing_processes_admit_each_url_exactly_once() {
    let Some(redis) = RedisServer::start_or_skip("racing_processes_admit_each_url_exactly_once")
    else {
        return;
    };
    const PAGES: usize = 600;
    const HOSTS: usize = 24;
    const RACERS: usize = 3;
    let site = racecourse(PAGES, HOSTS, Duration::from_millis(5));
    let seeds: Vec<String> = (0..HOSTS)
        .map(|h| format!("{}/p/{h}", site.origins[h]))
        .collect();
    let entry = |r: usize| format!("{}/entry/{r}", site.origins[r % HOSTS]);
    let dirs: Vec<_> = (0..RACERS).map(|_| tempfile::tempdir().unwrap()).collect();
    let gate = StartGate::close(&redis.url());
    let children: Vec<_> = dirs
        .iter()
        .enumerate()
        .map(|(r, d)| {
            let own = entry(r);
            let mut args = vec!["--workers", "2"];
            args.extend(seeds[1..].iter().map(String::as_str));
            args.push(&own);
            spawn(d.path(), &redis.url(), "race", &seeds[0], &args)
        })
        .collect();
    gate.release_when_waiting(RACERS);
    let fetched: Vec<u64> = children
        .into_iter()
        .map(|c| finish(c, Duration::from_secs(300)))
        .collect();
    assert_eq!(
        page_hits(&site, PAGES),
        vec![1; PAGES],
        "each page fetched once"
    );
    assert_eq!(
        fetched.iter().sum::<u64>(),
        (PAGES + RACERS) as u64,
        "{fetched:?}"
    );

    let logs: Vec<_> = dirs.iter().map(|d| admissions(d.path())).collect();
    let counts: Vec<usize> = logs.iter().map(Vec::len).collect();
    // Zero double admissions: every URL once, over all racers.
    let mut all: Vec<&String> = logs.iter().flatten().map(|(_, _, u)| u).collect();
    all.sort();
    let admitted = all.len();
    all.dedup();
    assert_eq!(admitted, all.len(), "a URL admitted twice: {counts:?}");
    assert_eq!(all.len(), PAGES + RACERS, "{counts:?}");
    for (r, log) in logs.iter().enumerate() {
        assert!(
            log.iter().any(|(_, _, u)| *u == entry(r)),
            "racer {r} did not admit its own seed: {counts:?}"
        );
    }
}

#[test]
fn a_killed_process_loses_no_page() {
    let Some(redis) = RedisServer::start_or_skip("a_killed_process_loses_no_page") else {
        return;
    };
    const PAGES: usize = 120;
    const WORKERS: u32 = 3;
    let forest = Forest::start(4, PAGES, Duration::from_millis(40));
    let seeds = forest.seeds();
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut args = vec!["--workers", "3", "--lease-ms", "600"];
    args.extend(seeds[1..].iter().map(String::as_str));
    let mut victim = spawn(a.path(), &redis.url(), "kill", &seeds[0], &args);
    wait_until(Duration::from_secs(30), || forest.total() >= 20);
    // The victim has every spider busy (four hosts, three spiders, slow pages): it dies
    // holding claims.
    victim.kill().unwrap();
    let _ = victim.wait();
    let survivor = spawn(b.path(), &redis.url(), "kill", &seeds[0], &args);
    finish(survivor, Duration::from_secs(60));
    let hits = forest.hits();
    assert!(hits.iter().all(|&h| h >= 1), "a page was lost: {hits:?}");
    // Only what the killed process held (one URL per spider) can be fetched twice.
    let repeated: u32 = hits.iter().map(|h| h - 1).sum();
    assert!(repeated <= WORKERS, "{repeated} repeated fetches: {hits:?}");
    // The survivor said so in the shared log stream.
    let log = url_dedup_redis::Namespace::new("kill").unwrap().key("log");
    let mut conn = redis::Client::open(redis.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let entries: Vec<(String, Vec<(String, String)>)> = redis::cmd("XRANGE")
        .arg(&log)
        .arg("-")
        .arg("+")
        .query(&mut conn)
        .unwrap();
    assert!(
        entries.iter().any(|(_, fields)| fields
            .iter()
            .any(|(k, v)| k == "message" && v.contains("of a dead process"))),
        "{entries:?}"
    );
}

/// A process that joins a crawl under way takes a share of it at once: no process owns
/// hosts. The site makes sure the share is there to take on any machine: once the first
/// process has fetched 20 pages, its next answers wait until the second process has asked for
/// a page. The first holds at most `--workers` URLs (one per host), so the second always finds
/// hosts free to claim from.
#[test]
fn a_process_joining_mid_crawl_takes_a_share() {
    let Some(redis) = RedisServer::start_or_skip("a_process_joining_mid_crawl_takes_a_share")
    else {
        return;
    };
    const PAGES: usize = 160;
    let joined = Gate::default();
    let first_served = Arc::new(AtomicUsize::new(0));
    let forest = {
        let (joined, first_served) = (joined.clone(), first_served.clone());
        Forest::start_held(16, PAGES, Duration::from_millis(25), move |_, headers| {
            let agent = common::header_value(headers, axum::http::header::USER_AGENT);
            if agent.contains("(+second)") {
                joined.open();
                None
            } else {
                let n = first_served.fetch_add(1, Ordering::SeqCst);
                (n >= 20).then(|| joined.clone())
            }
        })
    };
    let seeds = forest.seeds();
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // A long lease: heartbeats while the first process waits would count as calls per page.
    let args = |who: &'static str| {
        let mut args = vec!["--workers", "4", "--lease-ms", "60000", "--contact", who];
        args.extend(seeds[1..].iter().map(String::as_str));
        args
    };
    let first = spawn(a.path(), &redis.url(), "join", &seeds[0], &args("first"));
    wait_until(Duration::from_secs(60), || forest.total() >= 20);
    let second = spawn(b.path(), &redis.url(), "join", &seeds[0], &args("second"));
    let first = finish_summary(first, Duration::from_secs(300));
    let second = finish_summary(second, Duration::from_secs(300));
    let fetched = |s: &serde_json::Value| s["fetched"].as_u64().unwrap();
    // No process owns hosts: the one that joined claims from the same queue at once.
    assert!(fetched(&second) > 0, "the joining process fetched nothing");
    assert_eq!(fetched(&first) + fetched(&second), PAGES as u64);
    assert_eq!(forest.hits(), vec![1; PAGES]);
    // Claims and commits are batched: a few calls per page (the engine before batching made
    // about 33). An idle process polls while the other finishes, so the bound leaves room.
    for s in [&first, &second] {
        let calls = s["redis_calls_per_page"].as_f64().unwrap();
        assert!(calls < 16.0, "{calls} Redis calls per page: {s}");
    }
}

/// SIGTERM (or Ctrl-C) makes a process of a shared crawl finish its fetches, acknowledge them
/// and leave; the crawl goes on with the next process, and no page is fetched twice.
#[test]
fn a_signalled_process_drains_and_the_crawl_resumes_without_a_repeat() {
    let Some(redis) = RedisServer::start_or_skip("a_signalled_process_drains") else {
        return;
    };
    const PAGES: usize = 200;
    let site = tree_site(PAGES, Duration::from_millis(20));
    let seed = site.url("/p/0");
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let args = ["--workers", "3"];
    let mut first = spawn(a.path(), &redis.url(), "signal", &seed, &args);
    let mut stderr = common::Lines::new(first.stderr.take().unwrap());
    wait_until(Duration::from_secs(30), || {
        page_hits(&site, PAGES).iter().sum::<u32>() >= 20
    });
    common::signal(&first, "TERM");
    stderr.wait_for("interrupted (SIGTERM)", Duration::from_secs(30));
    let before = finish(first, Duration::from_secs(30));
    let served: u32 = page_hits(&site, PAGES).iter().sum();
    assert!(
        before < PAGES as u64,
        "the first process was not stopped early"
    );
    assert_eq!(
        u64::from(served),
        before,
        "every fetch it started was finished"
    );
    let second = spawn(b.path(), &redis.url(), "signal", &seed, &args);
    let after = finish(second, Duration::from_secs(60));
    assert_eq!(before + after, PAGES as u64);
    assert_eq!(page_hits(&site, PAGES), vec![1; PAGES]);
}

#[test]
fn the_stop_flag_ends_every_process() {
    let Some(redis) = RedisServer::start_or_skip("the_stop_flag_ends_every_process") else {
        return;
    };
    const PAGES: usize = 400;
    let site = tree_site(PAGES, Duration::from_millis(50));
    let seed = site.url("/p/0");
    let dirs: Vec<_> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let children: Vec<_> = dirs
        .iter()
        .map(|d| spawn(d.path(), &redis.url(), "stop", &seed, &[]))
        .collect();
    wait_until(Duration::from_secs(30), || {
        site.hits().values().sum::<u32>() >= 8
    });
    let out = tempfile::tempdir().unwrap();
    let status = Command::new(env!("CARGO_BIN_EXE_crawler"))
        .arg("--out")
        .arg(out.path())
        .args(["--redis", &redis.url(), "--crawl-name", "stop", "--stop"])
        .status()
        .unwrap();
    assert!(status.success());
    let fetched: u64 = children
        .into_iter()
        .map(|c| finish(c, Duration::from_secs(20)))
        .sum();
    let hits = page_hits(&site, PAGES);
    assert!(fetched < PAGES as u64, "the crawl ran to its end");
    assert_eq!(u64::from(hits.iter().sum::<u32>()), fetched);
}

#[test]
fn the_status_page_reports_counters_and_changes_the_rate() {
    let Some(redis) = RedisServer::start_or_skip("status page") else {
        return;
    };
    const PAGES: usize = 60;
    let site = tree_site(PAGES, Duration::ZERO);
    let seed = site.url("/p/0");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let out = tempfile::tempdir().unwrap();
    let child = spawn(
        out.path(),
        &redis.url(),
        "status",
        &seed,
        &["--status", &addr, "--rate", "1"],
    );
    wait_until(Duration::from_secs(20), || {
        TcpStream::connect(&addr).is_ok()
    });
    let page = StatusPage::in_dir(&addr, out.path());
    let status = |field: &str| -> f64 { page.status()[field].as_f64().unwrap() };
    wait_until(Duration::from_secs(20), || status("fetched") >= 3.0);
    // Counters follow the crawl: at most the fetch in flight differs from the site's count.
    let reported = status("fetched") as u32;
    let served: u32 = page_hits(&site, PAGES).iter().sum();
    assert!(
        served >= reported && served <= reported + 1,
        "{reported} vs {served}"
    );
    assert_eq!(status("rate_limit"), 1.0);
    let html = page.get("/");
    assert_eq!(html.status, 200);
    assert!(html.body.contains("duplicates avoided"), "{}", html.body);
    // Lifting the limit reaches the pacer of the running process (that the waiting fetches
    // then start at once is the pacer's own test, on a virtual clock).
    assert_eq!(page.set_rate("0").status, 200);
    assert_eq!(page.set_rate("-1").status, 400);
    assert_eq!(status("rate_limit"), 0.0);
    let fetched = finish(child, Duration::from_secs(120));
    assert_eq!(fetched, PAGES as u64);
    assert_eq!(page_hits(&site, PAGES), vec![1; PAGES]);
}

#[test]
fn a_second_period_fetches_only_changed_pages() {
    use std::sync::{Arc, Mutex};
    let Some(redis) = RedisServer::start_or_skip("a_second_period_fetches_only_changed_pages")
    else {
        return;
    };
    const PAGES: usize = 20;
    let versions = Arc::new(Mutex::new(vec![1u32; PAGES]));
    let answers: Arc<Mutex<Vec<(usize, u16)>>> = Arc::default();
    let (v, a) = (versions.clone(), answers.clone());
    let site = Site::start(move |path, headers| {
        let Some(i) = path
            .strip_prefix("/p/")
            .and_then(|n| n.parse::<usize>().ok())
        else {
            return Reply::not_found();
        };
        if i >= PAGES {
            return Reply::not_found();
        }
        let etag = format!("\"v{}\"", v.lock().unwrap()[i]);
        let unchanged = headers
            .get("if-none-match")
            .is_some_and(|h| h.to_str().unwrap_or("") == etag);
        a.lock()
            .unwrap()
            .push((i, if unchanged { 304 } else { 200 }));
        if unchanged {
            return Reply::new(304, "text/html", Vec::new()).header("etag", etag);
        }
        let next = (i + 1) % PAGES;
        Reply::html(format!("<a href=\"/p/{next}\">next</a>")).header("etag", etag)
    });
    let seed = site.url("/p/0");
    let dirs: Vec<_> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let children: Vec<_> = dirs
        .iter()
        .map(|d| {
            let args = ["--every", "2s"];
            spawn(d.path(), &redis.url(), "every", &seed, &args)
        })
        .collect();
    let served = || answers.lock().unwrap().len();
    wait_until(Duration::from_secs(30), || served() >= PAGES);
    {
        let mut v = versions.lock().unwrap();
        v[3] += 1;
        v[5] += 1;
    }
    wait_until(Duration::from_secs(30), || served() >= 2 * PAGES);
    let out = tempfile::tempdir().unwrap();
    let stopped = Command::new(env!("CARGO_BIN_EXE_crawler"))
        .arg("--out")
        .arg(out.path())
        .args(["--redis", &redis.url(), "--crawl-name", "every", "--stop"])
        .status()
        .unwrap();
    assert!(stopped.success());
    for c in children {
        finish(c, Duration::from_secs(20));
    }
    let answers = answers.lock().unwrap().clone();
    let (first, second) = answers.split_at(PAGES);
    assert!(first.iter().all(|&(_, s)| s == 200), "{first:?}");
    let mut second = second[..PAGES].to_vec();
    second.sort_unstable();
    let expected: Vec<(usize, u16)> = (0..PAGES)
        .map(|i| (i, if i == 3 || i == 5 { 200 } else { 304 }))
        .collect();
    assert_eq!(second, expected);
}

#[test]
fn a_feed_seed_is_read_by_the_feed_kernel() {
    let Some(redis) = RedisServer::start_or_skip("a_feed_seed_is_read_by_the_feed_kernel") else {
        return;
    };
    let site = Site::start(|path, _| {
        match path {
        "/feed.xml" => Reply::new(
            200,
            "application/rss+xml",
            b"<rss><channel><item><link>/a</link></item><item><link>/b</link></item></channel></rss>"
                .to_vec(),
        ),
        "/a" => Reply::html("<a href=/c>c</a>"),
        "/b" | "/c" => Reply::html("leaf"),
        _ => Reply::not_found(),
    }
    });
    let out = tempfile::tempdir().unwrap();
    let child = spawn(
        out.path(),
        &redis.url(),
        "feed",
        &site.url("/feed.xml"),
        &[],
    );
    assert_eq!(finish(child, Duration::from_secs(30)), 4);
    for p in ["/feed.xml", "/a", "/b", "/c"] {
        assert_eq!(site.hit(p), 1, "{p}");
    }
}

/// Flushes the Redis of `url` (as a restart without persistence would leave it).
fn flush_all(url: &str) {
    let mut conn = redis::Client::open(url).unwrap().get_connection().unwrap();
    let () = redis::cmd("FLUSHALL").query(&mut conn).unwrap();
}

/// A Redis that lost the crawl's data stops the crawl with what it means, instead of taking an
/// empty queue for a finished crawl; with `--after-redis-reset continue` the crawl goes on from
/// the seeds, says so in the shared log, and fetches every page.
#[test]
fn a_redis_that_lost_the_crawl_stops_it_or_it_goes_on_from_the_seeds_when_asked() {
    let Some(redis) = RedisServer::start_or_skip("a_redis_that_lost_the_crawl") else {
        return;
    };
    const PAGES: usize = 150;
    let site = tree_site(PAGES, Duration::from_millis(20));
    let seed = site.url("/p/0");
    let out = tempfile::tempdir().unwrap();
    let child = spawn(out.path(), &redis.url(), "reset", &seed, &[]);
    wait_until(Duration::from_secs(30), || {
        page_hits(&site, PAGES).iter().sum::<u32>() >= 10
    });
    flush_all(&redis.url());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains("Redis lost the shared crawl's data"),
        "{stderr}"
    );
    assert!(
        page_hits(&site, PAGES).iter().sum::<u32>() < PAGES as u32,
        "stopped, not finished"
    );

    let site = tree_site(PAGES, Duration::from_millis(20));
    let seed = site.url("/p/0");
    let args = ["--after-redis-reset", "continue"];
    let child = spawn(out.path(), &redis.url(), "goes-on", &seed, &args);
    wait_until(Duration::from_secs(30), || {
        page_hits(&site, PAGES).iter().sum::<u32>() >= 10
    });
    flush_all(&redis.url());
    let summary = finish_summary(child, Duration::from_secs(60));
    let hits = page_hits(&site, PAGES);
    assert!(hits.iter().all(|&h| h >= 1), "a page was lost: {hits:?}");
    assert!(
        hits.iter().any(|&h| h > 1),
        "the pages before the reset are fetched again"
    );
    assert!(
        summary["fetched"].as_u64() > Some(PAGES as u64),
        "{summary}"
    );
    let log = url_dedup_redis::Namespace::new("goes-on")
        .unwrap()
        .key("log");
    let mut conn = redis::Client::open(redis.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let entries: Vec<(String, Vec<(String, String)>)> = redis::cmd("XRANGE")
        .arg(&log)
        .arg("-")
        .arg("+")
        .query(&mut conn)
        .unwrap();
    assert!(
        entries.iter().any(|(_, fields)| fields
            .iter()
            .any(|(k, v)| k == "message" && v.contains("may be fetched again"))),
        "{entries:?}"
    );
}

/// A Redis emptied between two runs of a crawl (a restart without persistence, while no
/// process was connected): the next run finds no crawl, starts it again from the seeds and
/// fetches every page again, and says why instead of taking it for a first run.
#[test]
fn a_crawl_that_redis_lost_between_runs_says_so() {
    let Some(redis) = RedisServer::start_or_skip("a_crawl_that_redis_lost_between_runs") else {
        return;
    };
    const PAGES: usize = 20;
    let site = tree_site(PAGES, Duration::ZERO);
    let seed = site.url("/p/0");
    let out = tempfile::tempdir().unwrap();
    let run = || {
        let output = spawn(out.path(), &redis.url(), "lost", &seed, &[])
            .wait_with_output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(output.status.success(), "{stderr}");
        stderr
    };
    let said = |stderr: &str| stderr.contains("Redis lost the crawl");
    let first = run();
    assert!(!said(&first), "a first run is no loss: {first}");
    assert_eq!(page_hits(&site, PAGES), vec![1; PAGES]);
    // Redis still holds the crawl: a second run fetches nothing and has nothing to say.
    let second = run();
    assert!(!said(&second), "{second}");
    assert_eq!(page_hits(&site, PAGES), vec![1; PAGES]);

    flush_all(&redis.url());
    let third = run();
    assert!(said(&third), "{third}");
    assert_eq!(
        page_hits(&site, PAGES),
        vec![2; PAGES],
        "fetched again, from the seeds"
    );
}

/// A host's `Crawl-delay` holds for every process of a shared crawl: two processes with four
/// request slots per host each still space their requests to it by the delay.
#[test]
fn a_crawl_delay_holds_for_every_process() {
    use std::sync::Mutex;
    let Some(redis) = RedisServer::start_or_skip("a_crawl_delay_holds_for_every_process") else {
        return;
    };
    let starts: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let s = starts.clone();
    let site = common::Site::start(move |path, _| {
        if path == "/robots.txt" {
            return Reply::new(
                200,
                "text/plain",
                b"User-agent: *\nCrawl-delay: 1\n".to_vec(),
            );
        }
        s.lock().unwrap().push(Instant::now());
        match path {
            "/" => Reply::html(
                (1..=8)
                    .map(|i| format!("<a href=\"/{i}\">{i}</a>"))
                    .collect::<String>(),
            ),
            _ => Reply::html("leaf"),
        }
    });
    let dirs: Vec<_> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let children: Vec<_> = dirs
        .iter()
        .map(|d| {
            Command::new(env!("CARGO_BIN_EXE_crawler"))
                .args(["--quiet", "--json"])
                .arg("--out")
                .arg(d.path())
                .args(["--redis", &redis.url(), "--crawl-name", "delay"])
                .args(["--per-host", "4"])
                .arg(site.url("/"))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let fetched: u64 = children
        .into_iter()
        .map(|c| finish(c, Duration::from_secs(60)))
        .sum();
    assert_eq!(fetched, 9);
    let mut starts = starts.lock().unwrap().clone();
    starts.sort();
    let gaps: Vec<Duration> = starts.windows(2).map(|w| w[1] - w[0]).collect();
    // The delay is kept on Redis's clock, between claims; a request may leave its process a
    // little later than its claim, so half the delay is left for that.
    assert!(
        gaps.iter().all(|g| *g >= Duration::from_millis(500)),
        "requests closer than the crawl delay: {gaps:?}"
    );
}

/// The run queue split into several stripes (each its own frontier, as on a Redis Cluster)
/// still fetches every page once, and the hosts spread over the stripes.
#[test]
fn a_queue_in_several_stripes_fetches_every_page_once() {
    let Some(redis) = RedisServer::start_or_skip("a_queue_in_several_stripes") else {
        return;
    };
    const PAGES: usize = 200;
    let forest = Forest::start(8, PAGES, Duration::from_millis(5));
    let seeds = forest.seeds();
    let dirs: Vec<_> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let children: Vec<_> = dirs
        .iter()
        .map(|d| {
            let mut args = vec!["--queue-stripes", "4"];
            args.extend(seeds[1..].iter().map(String::as_str));
            spawn(d.path(), &redis.url(), "stripes", &seeds[0], &args)
        })
        .collect();
    let fetched: Vec<u64> = children
        .into_iter()
        .map(|c| finish(c, Duration::from_secs(60)))
        .collect();
    assert_eq!(forest.hits(), vec![1; PAGES]);
    assert_eq!(fetched.iter().sum::<u64>(), PAGES as u64);
    // The hosts' queues are spread over the stripes.
    let mut conn = redis::Client::open(redis.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let used = (0..4)
        .filter(|s| {
            let acked: Option<u64> = redis::cmd("GET")
                .arg(
                    url_dedup_redis::Namespace::new(&format!("stripes-s{s}"))
                        .unwrap()
                        .key("acked"),
                )
                .query(&mut conn)
                .unwrap();
            acked.unwrap_or(0) > 0
        })
        .count();
    assert!(used >= 2, "{used} stripes used");
}

/// An unreachable Redis is reported once `--redis-first-contact-ms` is spent, not after
/// `--redis-give-up-ms`, the budget of a Redis lost during the crawl. The two budgets are
/// set far apart (a second against ten minutes), so no load on the machine blurs them.
#[test]
fn an_unreachable_redis_is_reported_within_the_first_contact_budget() {
    // A port nothing listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = tempfile::tempdir().unwrap();
    let begin = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_crawler"))
        .arg("--out")
        .arg(out.path())
        .args(["--redis", &format!("redis://127.0.0.1:{port}")])
        .args(["--redis-first-contact-ms", "1000"])
        .args(["--redis-give-up-ms", "600000"])
        .arg("http://127.0.0.1:1/")
        .output()
        .unwrap();
    let elapsed = begin.elapsed();
    assert!(!output.status.success());
    assert!(elapsed < Duration::from_secs(300), "{elapsed:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("shared crawl"), "{stderr}");
}

/// Two processes crawl through a Redis Cluster named by its seeds while a master is added,
/// the slots rebalanced onto it, and the master removed again: the run queues and the done
/// set move with their slots, and every page is fetched once.
///
/// The site holds the crawl at each step: pages from 200 on wait until the new master has
/// joined, then pages go on being fetched and committed while the slots move onto it; pages
/// from 400 on wait until that move is over, and pages from 500 on until the master has left.
/// So both moves happen mid-crawl on any machine, and the fetches held meanwhile get a
/// timeout longer than any move.
#[test]
fn a_crawl_on_a_cluster_goes_on_while_masters_come_and_go() {
    let Some(mut cluster) =
        url_dedup_redis::testing::RedisCluster::start_or_skip("crawl on a cluster", 3, 0)
    else {
        return;
    };
    const PAGES: usize = 600;
    let gates: Vec<Gate> = (0..3).map(|_| Gate::default()).collect();
    let held = gates.clone();
    // A page's parent has a smaller number: the pages before a closed gate are all reachable.
    let forest = Forest::start_held(8, PAGES, Duration::from_millis(20), move |i, _| {
        [200, 400, 500]
            .iter()
            .zip(&held)
            .rev()
            .find(|(first, _)| i >= **first)
            .map(|(_, gate)| gate.clone())
    });
    let seeds = forest.seeds();
    let url = cluster.url();
    let dirs: Vec<_> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut children: Vec<_> = dirs
        .iter()
        .map(|d| {
            let mut args = vec!["--queue-stripes", "4", "--timeout-ms", "3600000"];
            args.extend(seeds[1..].iter().map(String::as_str));
            spawn(d.path(), &url, "moving", &seeds[0], &args)
        })
        .collect();
    let mut running = |step: &str| {
        for c in &mut children {
            if let Some(status) = c.try_wait().unwrap() {
                panic!("a process ended ({status}) before {step}");
            }
        }
    };
    let added = cluster.add_master().unwrap();
    gates[0].open();
    cluster.rebalance().unwrap();
    running("the slots moved onto the new master");
    gates[1].open();
    cluster.remove_master(added).unwrap();
    running("the slots moved off the leaving master");
    gates[2].open();
    let fetched: Vec<u64> = children
        .into_iter()
        .map(|c| finish(c, Duration::from_secs(600)))
        .collect();
    assert_eq!(
        forest.hits(),
        vec![1; PAGES],
        "a page fetched twice or never"
    );
    assert_eq!(fetched.iter().sum::<u64>(), PAGES as u64);
}

/// Every process of a shared crawl publishes its figures to Redis; the status page of any one
/// of them shows a row per live process, its own and the others', and the crawl's queue.
#[test]
fn the_status_page_shows_a_row_per_process() {
    let Some(redis) = RedisServer::start_or_skip("status rows per process") else {
        return;
    };
    const PAGES: usize = 40;
    let gate = Gate::default();
    let held = gate.clone();
    // Page 30 waits for the test: neither process can finish before the rows are read.
    let forest = Forest::start_held(4, PAGES, Duration::ZERO, move |i, _| {
        (i == 30).then(|| held.clone())
    });
    let seeds = forest.seeds();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let dirs: Vec<_> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    // Every host is a seed, so every host is in scope.
    let mut args: Vec<&str> = seeds[1..].iter().map(String::as_str).collect();
    let other = spawn(dirs[1].path(), &redis.url(), "rows", &seeds[0], &args);
    args.extend(["--status", &addr]);
    let serving = spawn(dirs[0].path(), &redis.url(), "rows", &seeds[0], &args);
    wait_until(Duration::from_secs(60), || {
        TcpStream::connect(&addr).is_ok()
    });
    let page = StatusPage::in_dir(&addr, dirs[0].path());
    // The other process publishes within a couple of seconds of its start.
    wait_until(Duration::from_secs(60), || {
        page.status()["processes"].as_array().unwrap().len() == 2
    });
    let status = page.status();
    let rows = status["processes"].as_array().unwrap().clone();
    let me = status["process"].as_str().unwrap();
    let (mine, theirs): (Vec<_>, Vec<_>) = rows.iter().partition(|r| r["process"] == me);
    assert_eq!(mine.len(), 1, "{status}");
    assert_eq!(
        mine[0]["status_page"],
        format!("http://{addr}/"),
        "{status}"
    );
    assert!(theirs[0]["status_page"].is_null(), "{status}");
    assert!(theirs[0]["age_secs"].as_f64().unwrap() <= 10.0, "{status}");
    // The crawl's queue is known (here: nothing waits but what the held page will bring).
    assert!(status["queue"].is_u64(), "{status}");
    let html = page.get("/");
    for row in &rows {
        let name = row["process"].as_str().unwrap();
        assert!(html.body.contains(name), "{name} has no row: {}", html.body);
    }
    assert!(html.body.contains("id=processes"), "{}", html.body);
    // The log holds the shared stream's entries and this process's own notes.
    let log = status["log"].as_array().unwrap();
    assert!(
        log.iter()
            .any(|e| e["message"].as_str().unwrap().contains("status page at")),
        "{status}"
    );
    assert!(html.body.contains("Redis calls per page"), "{}", html.body);
    gate.open();
    let summaries = [
        finish_summary(serving, Duration::from_secs(120)),
        finish_summary(other, Duration::from_secs(120)),
    ];
    let mut names: Vec<_> = summaries.iter().map(|s| s["process"].clone()).collect();
    let mut listed: Vec<_> = rows.iter().map(|r| r["process"].clone()).collect();
    names.sort_by_key(|v| v.to_string());
    listed.sort_by_key(|v| v.to_string());
    assert_eq!(names, listed);
    let fetched: u64 = summaries
        .iter()
        .map(|s| s["fetched"].as_u64().unwrap())
        .sum();
    assert_eq!(fetched, PAGES as u64);
    assert_eq!(forest.hits(), vec![1; PAGES]);
}
