//! The protocol end to end: two networks of hosts, every node on its own redis-server.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use url_dedup_redis::testing::runtime;
use url_dedup_two_tier::testing::{Cluster, quick_settings};
use url_dedup_two_tier::{Flag, Frame, FrameLimits, UrlSet};

const IDLE: Duration = Duration::from_secs(30);

/// Pops every frame waiting in `at`'s inbox for `from`.
async fn drain(cluster: &Cluster, at: IpAddr, from: IpAddr) -> Vec<Frame> {
    let key = cluster.keys().inbox(from);
    let raw: Vec<Vec<u8>> = cluster
        .redis(at)
        .run("drain", |mut conn| {
            let key = key.clone();
            async move {
                let mut pipe = redis::pipe();
                pipe.cmd("LRANGE")
                    .arg(&key)
                    .arg(0)
                    .arg(-1)
                    .cmd("DEL")
                    .arg(&key)
                    .ignore();
                let (v,): (Vec<Vec<u8>>,) = pipe.query_async(&mut conn).await?;
                Ok(v)
            }
        })
        .await
        .unwrap();
    raw.iter()
        .map(|b| Frame::decode(b, &FrameLimits::default()).unwrap())
        .collect()
}

/// The property of the issue: whatever was finished on whichever host of either network never
/// reaches a task_pool, and every other discovered URL does (nothing is lost).
#[test]
fn finished_urls_never_reach_a_task_pool() {
    runtime().block_on(async {
        let Some(mut cluster) = Cluster::launch(&[3, 2], quick_settings()).await.unwrap() else {
            return;
        };
        cluster.start_all().await.unwrap();
        let hosts: Vec<IpAddr> = (0..3)
            .map(|h| cluster.host_ip(0, h))
            .chain((0..2).map(|h| cluster.host_ip(1, h)))
            .collect();
        let mut handles = Vec::new();
        for &ip in &hosts {
            handles.push(cluster.local_host(ip).await.unwrap());
        }
        // (discovering host, finishing host or none) for each URL.
        let case = proptest::collection::vec((0..5usize, proptest::option::of(0..5usize)), 1..150);
        let mut runner = TestRunner::new(Config {
            cases: 6,
            failure_persistence: None,
            ..Config::default()
        });
        let round = std::cell::Cell::new(0);
        let shared = tokio::sync::Mutex::new(cluster);
        runner
            .run(&case, |urls| {
                round.set(round.get() + 1);
                let round = round.get();
                let result: Result<(), TestCaseError> = tokio::task::block_in_place(|| {
                    tokio::runtime::Handle::current().block_on(async {
                        let mut finished = BTreeSet::new();
                        let mut expected = BTreeSet::new();
                        let mut found = vec![Vec::new(); hosts.len()];
                        let mut done = vec![Vec::new(); hosts.len()];
                        for (i, (by, fin)) in urls.iter().enumerate() {
                            let url = format!("https://r{round}.example/{i}");
                            found[*by].push(url.clone());
                            match fin {
                                Some(f) => {
                                    done[*f].push(url.clone());
                                    finished.insert(url);
                                }
                                None => {
                                    expected.insert(url);
                                }
                            }
                        }
                        for (h, urls) in done.iter().enumerate() {
                            handles[h].finish(urls).await.unwrap();
                        }
                        for (h, urls) in found.iter().enumerate() {
                            if !urls.is_empty() {
                                handles[h].discover(urls).await.unwrap();
                            }
                        }
                        prop_assert!(shared.lock().await.wait_idle(IDLE).await.unwrap());
                        let mut got = BTreeSet::new();
                        for h in &handles {
                            got.extend(h.take_tasks(10_000).await.unwrap());
                        }
                        prop_assert!(
                            got.is_disjoint(&finished),
                            "{:?}",
                            got.intersection(&finished).collect::<Vec<_>>()
                        );
                        prop_assert_eq!(got, expected);
                        Ok(())
                    })
                });
                result
            })
            .unwrap();
        let cluster = shared.into_inner();
        let stats = cluster.stats();
        assert_eq!(stats.rejected, 0);
        assert_eq!(
            stats.timeouts, 0,
            "every node answered, no frame should time out"
        );
        cluster.shutdown().await.unwrap();
    });
}

/// A host that never answers delays a frame until the LAN timeout, no longer; the frame keeps
/// what that host would have marked; its answer, once it comes, is ignored.
#[test]
fn a_silent_host_delays_a_frame_only_until_the_timeout() {
    runtime().block_on(async {
        let settings = quick_settings();
        let Some(mut cluster) = Cluster::launch(&[3], settings).await.unwrap() else {
            return;
        };
        let (a, b, silent) = (
            cluster.host_ip(0, 0),
            cluster.host_ip(0, 1),
            cluster.host_ip(0, 2),
        );
        cluster.start(cluster.center_ip(0)).await.unwrap();
        cluster.start(a).await.unwrap();
        cluster.start(b).await.unwrap();
        cluster
            .local_host(b)
            .await
            .unwrap()
            .finish(&["https://x/by-b"])
            .await
            .unwrap();
        cluster
            .local_host(silent)
            .await
            .unwrap()
            .finish(&["https://x/by-silent"])
            .await
            .unwrap();

        let started = Instant::now();
        let urls = ["https://x/by-b", "https://x/by-silent", "https://x/new"];
        cluster
            .local_host(a)
            .await
            .unwrap()
            .discover(&urls)
            .await
            .unwrap();
        assert!(cluster.wait_idle(IDLE).await.unwrap());
        let elapsed = started.elapsed();
        // Cannot finish early: the silent host never answers, so only the deadline ends it.
        assert!(elapsed >= settings.lan_timeout, "{elapsed:?}");
        assert!(elapsed < IDLE);
        assert_eq!(cluster.node_stats(cluster.center_ip(0)).timeouts, 1);
        assert_eq!(
            cluster.all_tasks().await.unwrap(),
            ["https://x/by-silent", "https://x/new"]
        );

        // The silent host wakes up, finds the request and answers: too late, ignored.
        cluster.start(silent).await.unwrap();
        assert!(cluster.wait_idle(IDLE).await.unwrap());
        assert_eq!(cluster.node_stats(cluster.center_ip(0)).late_answers, 1);
        assert_eq!(
            cluster.all_tasks().await.unwrap(),
            ["https://x/by-silent", "https://x/new"]
        );
        cluster.shutdown().await.unwrap();
    });
}

/// Another network whose center does not answer delays a frame until the WAN timeout.
#[test]
fn a_silent_network_delays_a_frame_only_until_the_timeout() {
    runtime().block_on(async {
        let settings = quick_settings();
        let Some(mut cluster) = Cluster::launch(&[1, 1], settings).await.unwrap() else {
            return;
        };
        cluster.start(cluster.center_ip(0)).await.unwrap();
        cluster.start(cluster.host_ip(0, 0)).await.unwrap();
        let started = Instant::now();
        let host = cluster.local_host(cluster.host_ip(0, 0)).await.unwrap();
        host.discover(&["https://x/1", "https://x/2"])
            .await
            .unwrap();
        assert!(cluster.wait_idle(IDLE).await.unwrap());
        assert!(started.elapsed() >= settings.wan_timeout);
        assert_eq!(cluster.node_stats(cluster.center_ip(0)).timeouts, 1);
        assert_eq!(
            cluster.all_tasks().await.unwrap(),
            ["https://x/1", "https://x/2"]
        );
        cluster.shutdown().await.unwrap();
    });
}

/// The same submission delivered twice (also after it completed) is admitted once; the same
/// answer delivered twice counts once; the same request delivered twice is answered once.
#[test]
fn frames_delivered_twice_are_processed_once() {
    runtime().block_on(async {
        let Some(mut cluster) = Cluster::launch(&[3], quick_settings()).await.unwrap() else {
            return;
        };
        let center = cluster.center_ip(0);
        let (a, b, manual) = (
            cluster.host_ip(0, 0),
            cluster.host_ip(0, 1),
            cluster.host_ip(0, 2),
        );
        cluster.start(center).await.unwrap();
        cluster.start(b).await.unwrap();

        // A submission from host a, delivered twice at once.
        let submit = Frame {
            url_set: UrlSet::from_urls(["https://d/1", "https://d/2", "https://d/3"]),
            ip: a,
            number: 77 << 10,
            flag: Flag::Submit,
        };
        for _ in 0..2 {
            cluster
                .deliver_raw(center, a, &submit.encode())
                .await
                .unwrap();
        }

        // Host `manual` answers by hand, twice, marking d/2 as finished.
        let request = loop {
            let mut frames = drain(&cluster, manual, center).await;
            if let Some(f) = frames.pop() {
                assert!(frames.is_empty(), "the request was sent more than once");
                break f;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        assert_eq!(request.flag, Flag::Request);
        assert_eq!(request.number, submit.number);
        let mut answer = request.clone();
        answer.flag = Flag::Answer;
        answer.url_set.mark("https://d/2");
        for _ in 0..2 {
            cluster
                .deliver_raw(center, manual, &answer.encode())
                .await
                .unwrap();
        }
        assert!(cluster.wait_idle(IDLE).await.unwrap());
        assert_eq!(
            cluster.all_tasks().await.unwrap(),
            ["https://d/1", "https://d/3"]
        );

        // And once more after it completed.
        cluster
            .deliver_raw(center, a, &submit.encode())
            .await
            .unwrap();
        assert!(cluster.wait_idle(IDLE).await.unwrap());
        assert_eq!(
            cluster.all_tasks().await.unwrap(),
            ["https://d/1", "https://d/3"]
        );
        let stats = cluster.node_stats(center);
        assert_eq!(
            stats.timeouts, 0,
            "both answers arrived, no deadline needed"
        );
        assert_eq!(stats.completed, 1);
        // Second submission, second answer (duplicate), third submission; the late copy of
        // the answer counts as late or duplicate depending on when it was read.
        assert!(stats.duplicates + stats.late_answers >= 3, "{stats:?}");
        assert!(stats.duplicates >= 2, "{stats:?}");

        // A request delivered twice to a running host is answered once.
        let request = Frame {
            number: 78 << 10,
            ..request
        };
        cluster
            .deliver_raw(b, center, &request.encode())
            .await
            .unwrap();
        cluster
            .deliver_raw(b, center, &request.encode())
            .await
            .unwrap();
        assert!(cluster.wait_idle(IDLE).await.unwrap());
        assert_eq!(cluster.node_stats(b).duplicates, 1);
        cluster.shutdown().await.unwrap();
    });
}

/// A center that restarts while a frame waits for answers picks the frame up from
/// `local_reduce_pool`, asks again, and completes it with the answer that comes in.
#[test]
fn a_restarted_center_resumes_its_frames() {
    runtime().block_on(async {
        let settings = url_dedup_two_tier::Settings {
            lan_timeout: Duration::from_secs(5),
            wan_timeout: Duration::from_secs(5),
            ..quick_settings()
        };
        let Some(mut cluster) = Cluster::launch(&[2], settings).await.unwrap() else {
            return;
        };
        let (center, a, b) = (
            cluster.center_ip(0),
            cluster.host_ip(0, 0),
            cluster.host_ip(0, 1),
        );
        cluster.start(center).await.unwrap();
        cluster.start(a).await.unwrap();
        cluster
            .local_host(b)
            .await
            .unwrap()
            .finish(&["https://r/old"])
            .await
            .unwrap();
        let urls = ["https://r/old", "https://r/new"];
        cluster
            .local_host(a)
            .await
            .unwrap()
            .discover(&urls)
            .await
            .unwrap();

        // Wait until the frame sits in local_reduce_pool, waiting for the silent host b.
        let pool = cluster.keys().local_reduce_pool();
        let link = cluster.redis(center).clone();
        let waiting = || async {
            link.run("HLEN", |mut conn| {
                let pool = pool.clone();
                async move {
                    redis::cmd("HLEN")
                        .arg(pool)
                        .query_async::<u64>(&mut conn)
                        .await
                }
            })
            .await
            .unwrap()
        };
        while waiting().await == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        cluster.stop(center).await.unwrap();
        assert_eq!(waiting().await, 1, "the frame must survive the center");

        cluster.start(center).await.unwrap();
        cluster.start(b).await.unwrap();
        assert!(cluster.wait_idle(IDLE).await.unwrap());
        assert_eq!(cluster.all_tasks().await.unwrap(), ["https://r/new"]);
        let stats = cluster.node_stats(center);
        assert_eq!(
            stats.timeouts, 0,
            "the answer, not the deadline, completed the frame: {stats:?}"
        );
        assert_eq!(stats.completed, 1);
        // b got the request twice (before and after the restart) and answered once.
        assert_eq!(cluster.node_stats(b).duplicates, 1);
        cluster.shutdown().await.unwrap();
    });
}
