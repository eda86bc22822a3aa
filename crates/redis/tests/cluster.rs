//! Every shared structure on a real Redis Cluster: 3 masters with a replica each, on loopback.

use std::sync::Barrier;

use url_dedup_bloom::SipHash13;
use url_dedup_redis::cluster::key_slot;
use url_dedup_redis::testing::RedisCluster;
use url_dedup_redis::{SharedFilter, StoreOptions};

#[test]
fn the_test_cluster_starts_and_reshards() {
    let Some(mut cluster) = RedisCluster::start_or_skip("cluster harness", 3, 1) else {
        return;
    };
    let masters = cluster.masters();
    assert_eq!(masters.len(), 3);
    assert_eq!(masters.iter().map(|m| m.slots).sum::<usize>(), 16_384);
    let port = cluster.add_master().unwrap();
    cluster.rebalance().unwrap();
    assert_eq!(cluster.masters().len(), 4);
    cluster.remove_master(port).unwrap();
    assert_eq!(cluster.masters().len(), 3);
    let victim = cluster.masters()[0].port;
    cluster.kill_and_fail_over(victim).unwrap();
}

type Filter = SharedFilter<SipHash13>;

fn urls(range: std::ops::Range<u32>) -> Vec<String> {
    range
        .map(|i| format!("https://example.com/page/{i}"))
        .collect()
}

/// Clients race on the same URLs, in batches they start together, each admitting into the
/// filter of a cluster: every URL admitted once, every client admitting some.
fn race(
    url: &str,
    prefix: &str,
    all: &[String],
    clients: usize,
    between: impl Fn(usize) + Sync,
) -> (Vec<Vec<usize>>, u64) {
    let start = Barrier::new(clients);
    std::thread::scope(|s| {
        let racers: Vec<_> = (0..clients)
            .map(|c| {
                let start = &start;
                let between = &between;
                s.spawn(move || {
                    let seen: Filter = SharedFilter::join(url, StoreOptions::new(prefix)).unwrap();
                    let mut mine = Vec::new();
                    for (round, batch) in all.chunks(200).enumerate() {
                        if c == 0 {
                            between(round);
                        }
                        start.wait();
                        let new = seen.try_check_and_insert_batch(batch).unwrap();
                        mine.extend(
                            (0..batch.len())
                                .filter(|&i| new[i])
                                .map(|i| round * 200 + i),
                        );
                    }
                    (mine, seen.store().redirections())
                })
            })
            .collect();
        let results: Vec<(Vec<usize>, u64)> =
            racers.into_iter().map(|r| r.join().unwrap()).collect();
        let redirections = results.iter().map(|r| r.1).sum();
        (results.into_iter().map(|r| r.0).collect(), redirections)
    })
}

fn assert_once(admitted: &[Vec<usize>], expected: usize) {
    let mut every: Vec<usize> = admitted.iter().flatten().copied().collect();
    every.sort_unstable();
    let total = every.len();
    every.dedup();
    assert_eq!(every.len(), total, "a URL admitted twice");
    assert!(
        total + 10 >= expected,
        "only {total} of {expected} admitted"
    );
    assert!(admitted.iter().all(|a| !a.is_empty()), "a client never won");
}

#[test]
fn clients_on_a_cluster_admit_each_url_once() {
    let Some(cluster) = RedisCluster::start_or_skip("cluster race", 3, 1) else {
        return;
    };
    let url = cluster.url();
    let seen: Filter = SharedFilter::open(&url, StoreOptions::new("seen"), 2_000, 1e-6).unwrap();
    // Its keys are spread over every master.
    let masters = cluster.masters().len();
    assert_eq!(masters, 3);
    let all = urls(0..10_000);
    let (admitted, _) = race(&url, "seen", &all, 4, |_| {});
    assert_once(&admitted, all.len());
    assert!(seen.layers().unwrap() >= 2, "the race spans growth");
    assert!(seen.try_contains_batch(&all).unwrap().iter().all(|&p| p));
    let _ = key_slot(b"");
}

/// Slots move while clients admit: `redis-cli --cluster reshard` migrates keys one by one, and
/// clients meet `ASK` and `MOVED` on the way. No URL is admitted twice, none is lost.
#[test]
fn resharding_while_clients_admit_doubles_and_loses_nothing() {
    let Some(mut cluster) = RedisCluster::start_or_skip("cluster reshard", 3, 0) else {
        return;
    };
    let url = cluster.url();
    let seen: Filter = SharedFilter::open(&url, StoreOptions::new("moving"), 40_000, 1e-6).unwrap();
    let all = urls(0..40_000);
    let rounds = all.len().div_ceil(200);
    let moving = std::sync::atomic::AtomicBool::new(true);
    let admitted = std::thread::scope(|s| {
        let mover = s.spawn(|| {
            let masters = cluster.masters();
            cluster
                .reshard(masters[0].port, masters[1].port, 3_000)
                .unwrap();
            let added = cluster.add_master().unwrap();
            cluster.rebalance().unwrap();
            cluster.remove_master(added).unwrap();
            moving.store(false, std::sync::atomic::Ordering::Release);
        });
        // Rounds are paced to span the moves, and the last waits for them to end: batches run
        // during every migration and after it, on slot maps gone stale.
        let admitted = race(&url, "moving", &all, 3, |round| {
            while moving.load(std::sync::atomic::Ordering::Acquire) {
                std::thread::sleep(std::time::Duration::from_millis(25));
                if round + 1 < rounds {
                    break;
                }
            }
        });
        mover.join().unwrap();
        admitted
    });
    let (admitted, redirections) = admitted;
    // The clients really met the moving slots.
    assert!(
        redirections > 0,
        "no redirection: the slots moved after the race"
    );
    assert_once(&admitted, all.len());
    assert!(
        seen.try_contains_batch(&all).unwrap().iter().all(|&p| p),
        "a URL lost"
    );
}

/// A master dies and its replica takes over. Replication is asynchronous, so only writes a
/// replica acknowledged are sure to survive: with `acknowledge`, every URL admitted before the
/// kill is still known after the failover, and the client goes on with the new master.
#[test]
fn a_failover_keeps_what_replicas_acknowledged() {
    let Some(mut cluster) = RedisCluster::start_or_skip("cluster failover", 3, 2) else {
        return;
    };
    let options = || StoreOptions {
        acknowledge: Some(url_dedup_redis::Acknowledge {
            replicas: 1,
            timeout: std::time::Duration::from_secs(2),
        }),
        ..StoreOptions::new("durable")
    };
    let url = cluster.url();
    let seen: Filter = SharedFilter::open(&url, options(), 20_000, 1e-6).unwrap();
    let before = urls(0..5_000);
    let new = seen.try_check_and_insert_batch(&before).unwrap();
    assert!(new.iter().all(|&n| n));
    let victim = cluster.masters()[0].port;
    cluster.kill_and_fail_over(victim).unwrap();
    // The client that saw the master die cannot tell whether its first commands to it ran
    // before it died (their answers follow `Uncertain`); what it can tell is what is stored.
    let kept = seen.try_contains_batch(&before).unwrap();
    let lost = kept.iter().filter(|&&k| !k).count();
    assert_eq!(lost, 0, "acknowledged admissions lost in a failover");
    let after = seen
        .try_check_and_insert_batch(&urls(5_000..6_000))
        .unwrap();
    assert!(after.iter().all(|&n| n));
    // A client that opens the filter now finds every URL admitted before and after.
    let late: Filter = SharedFilter::open(&url, options(), 20_000, 1e-6).unwrap();
    let again = late.try_check_and_insert_batch(&urls(0..6_000)).unwrap();
    assert!(again.iter().all(|&n| !n), "a URL admitted twice");
}
