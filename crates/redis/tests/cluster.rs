//! Every shared structure on a real Redis Cluster: 3 masters with a replica each, on loopback.

use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use url_dedup_bloom::SipHash13;
use url_dedup_redis::cluster::key_slot;
use url_dedup_redis::testing::{RedisCluster, runtime};
use url_dedup_redis::{
    Error, Frontier, GlobalIds, LeaderLease, Link, Membership, Namespace, NewTask, SharedConfig,
    SharedFilter, StoreOptions, Uncertain, WorkerId,
};

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
/// filter of a cluster with `uncertain`: every URL admitted once, every client admitting some.
fn race(
    url: &str,
    prefix: &str,
    uncertain: Uncertain,
    all: &[String],
    clients: usize,
    between: impl Fn(usize) + Sync,
) -> (Vec<Vec<usize>>, u64) {
    let start = Barrier::new(clients);
    // Clients take turns to lead a round: the others start once its leader has admitted the
    // round's first URL, so every client wins some however the machine schedules them.
    let led: Vec<AtomicBool> = all.chunks(200).map(|_| AtomicBool::new(false)).collect();
    std::thread::scope(|s| {
        let racers: Vec<_> = (0..clients)
            .map(|c| {
                let (start, led) = (&start, &led);
                let between = &between;
                s.spawn(move || {
                    let options = StoreOptions {
                        uncertain,
                        ..StoreOptions::new(prefix)
                    };
                    let seen: Filter = SharedFilter::join(url, options).unwrap();
                    let mut mine = Vec::new();
                    for (round, batch) in all.chunks(200).enumerate() {
                        if c == 0 {
                            between(round);
                        }
                        start.wait();
                        if round % clients == c {
                            if seen.try_check_and_insert_batch(&batch[..1]).unwrap()[0] {
                                mine.push(round * 200);
                            }
                            led[round].store(true, Ordering::Release);
                        } else {
                            while !led[round].load(Ordering::Acquire) {
                                std::thread::yield_now();
                            }
                        }
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
    let (admitted, _) = race(&url, "seen", Uncertain::AssumeNew, &all, 4, |_| {});
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
        // The master removed last closes its connections, and a pipeline then in flight to it
        // is in doubt: `AssumeNew` would report its URLs new (at-least-once, as documented).
        // Its commands never ran (the master had handed its slots over first), so the clients
        // trust what the retry sees, and every URL must still be admitted exactly once.
        let admitted = race(&url, "moving", Uncertain::TrustRedis, &all, 3, |round| {
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
            // WAIT returns once a replica acknowledged: a long bound costs nothing, and a busy
            // machine's replica may take seconds.
            timeout: std::time::Duration::from_secs(60),
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

/// Drains `ns`'s frontier with `workers` workers, each on its own link, until it is empty
/// and `more` is false; returns the URLs each acknowledged.
async fn drain(
    url: &str,
    ns: &Namespace,
    workers: usize,
    more: &'static AtomicBool,
) -> Vec<String> {
    let mut handles = Vec::new();
    for w in 0..workers {
        let (url, ns) = (url.to_owned(), ns.clone());
        handles.push(tokio::spawn(async move {
            let link = Link::connect(&url).await.unwrap();
            let frontier = Frontier::new(link.clone(), ns.clone());
            let me = WorkerId::new(&format!("w{w}")).unwrap();
            let members = Membership::new(link, ns);
            members.join(&me).await.unwrap();
            let mut done = Vec::new();
            loop {
                assert!(members.heartbeat(&me).await.unwrap(), "membership lost");
                let more = more.load(Ordering::Acquire);
                let Some(task) = frontier
                    .claim_wait(&me, Duration::from_millis(300))
                    .await
                    .unwrap()
                else {
                    if more {
                        continue;
                    }
                    break;
                };
                // A worker that takes a moment per page, so that slots move under a crawl.
                tokio::time::sleep(Duration::from_millis(2)).await;
                assert!(frontier.ack(&task).await.unwrap(), "a task acked twice");
                done.push(task.url().to_owned());
            }
            done
        }));
    }
    let mut all = Vec::new();
    for h in handles {
        all.extend(h.await.unwrap());
    }
    all
}

fn tasks(hosts: usize, per_host: usize) -> Vec<NewTask> {
    (0..per_host)
        .flat_map(|i| {
            (0..hosts).map(move |h| {
                NewTask::from_url(&format!("https://site{h}.example/page/{i}")).unwrap()
            })
        })
        .collect()
}

fn assert_each_once(done: Vec<String>, pushed: &[NewTask]) {
    let mut done = done;
    done.sort();
    let mut expected: Vec<String> = pushed.iter().map(|t| t.url().to_owned()).collect();
    expected.sort();
    assert_eq!(done, expected, "a task lost or done twice");
}

/// The coordination structures (ids, membership, leader lease, shared config, frontier) run
/// unchanged on a cluster, named by its seeds or by any one node.
#[test]
fn coordination_runs_on_a_cluster() {
    let Some(cluster) = RedisCluster::start_or_skip("cluster coordination", 3, 0) else {
        return;
    };
    runtime().block_on(async {
        let link = Link::connect(&cluster.url()).await.unwrap();
        assert!(link.connection().is_cluster());
        let one = format!("redis://127.0.0.1:{}/", cluster.masters()[1].port);
        assert!(Link::connect(&one).await.unwrap().connection().is_cluster());

        let ns = Namespace::new("coord").unwrap();
        let ids = GlobalIds::new(link.clone(), ns.clone());
        assert!(ids.next().await.unwrap() < ids.next().await.unwrap());
        let me = WorkerId::new("w0").unwrap();
        let members = Membership::new(link.clone(), ns.clone());
        members.join(&me).await.unwrap();
        assert_eq!(members.live().await.unwrap(), vec![me.clone()]);
        let lease = LeaderLease::new(link.clone(), ns.clone());
        let epoch = lease.try_acquire(&me).await.unwrap().expect("leader");
        assert_eq!(lease.current().await.unwrap(), Some((me.clone(), epoch)));
        let config = SharedConfig::new(link.clone(), ns.clone());
        config.set_fenced(epoch, &[("delay", "250")]).await.unwrap();
        assert_eq!(config.snapshot().await.unwrap().get("delay"), Some("250"));

        let pushed = tasks(20, 10);
        Frontier::new(link, ns.clone()).push(&pushed).await.unwrap();
        static NO_MORE: AtomicBool = AtomicBool::new(false);
        assert_each_once(drain(&cluster.url(), &ns, 3, &NO_MORE).await, &pushed);
    });
}

/// A crawl's frontier, membership, leader lease, ids and config live in one slot, and its
/// master dies. Calls made after it died, while its replica takes over, wait for the new
/// master and succeed: the layer reads the slot map again after each failure and follows
/// `MOVED`. Every task is done once.
#[test]
fn coordination_rides_out_a_failover() {
    let Some(mut cluster) = RedisCluster::start_or_skip("coordination failover", 3, 1) else {
        return;
    };
    runtime().block_on(async {
        let link = Link::connect(&cluster.url()).await.unwrap();
        let ns = Namespace::new("failover").unwrap();
        let frontier = Frontier::new(link.clone(), ns.clone());
        let members = Membership::new(link.clone(), ns.clone());
        let lease = LeaderLease::new(link.clone(), ns.clone());
        let ids = GlobalIds::new(link.clone(), ns.clone());
        let config = SharedConfig::new(link.clone(), ns.clone());
        let me = WorkerId::new("w0").unwrap();
        members.join(&me).await.unwrap();
        let epoch = lease.try_acquire(&me).await.unwrap().expect("leader");
        let pushed = tasks(10, 20);
        frontier.push(&pushed).await.unwrap();
        let first_id = ids.next().await.unwrap();
        // Everything so far is on the replica before the master dies: the failover loses
        // nothing (replication is asynchronous).
        let generation = ns.key("generation");
        let (_, replicas): (i64, i64) = link
            .run("wait for the replica", |mut conn| {
                let mut pipe = redis::pipe();
                pipe.cmd("EXISTS")
                    .arg(&generation)
                    .cmd("WAIT")
                    .arg(1)
                    .arg(10_000);
                async move { pipe.query_async(&mut conn).await }
            })
            .await
            .unwrap();
        assert_eq!(replicas, 1);
        let masters = cluster.masters().len();
        let victim = cluster.master_of(key_slot(generation.as_bytes())).unwrap();
        // The victim also serves slot 0, where commands without a key go: they must find the
        // new master too.
        assert_eq!(cluster.master_of(0), Some(victim));
        let before = link.stats();
        cluster.kill_node(victim);
        let pinger = link.clone();
        let calls = tokio::spawn(async move {
            pinger.ping().await.unwrap();
            assert!(members.heartbeat(&me).await.unwrap(), "membership lost");
            assert!(lease.renew(&me, epoch).await.unwrap(), "leadership lost");
            assert!(ids.next().await.unwrap() > first_id);
            config
                .set_fenced(epoch, &[("after", "failover")])
                .await
                .unwrap();
            let mut done = Vec::new();
            while let Some(task) = frontier
                .claim_wait(&me, Duration::from_millis(100))
                .await
                .unwrap()
            {
                assert!(frontier.ack(&task).await.unwrap(), "a task acked twice");
                done.push(task.url().to_owned());
            }
            assert_eq!(frontier.pending().await.unwrap(), 0);
            done
        });
        cluster.await_failover(victim, masters).unwrap();
        assert_each_once(calls.await.unwrap(), &pushed);
        // The calls met the dead master, and none gave up.
        assert!(link.stats().failed_attempts > before.failed_attempts);
        assert_eq!(link.stats().unavailable, before.unavailable);
    });
}

/// A frontier's slot moves to another master while workers claim and acknowledge, then to
/// a master added for it, which is then removed; tasks are pushed before, during and after
/// the moves: every task is done once.
#[test]
fn a_frontier_keeps_its_tasks_while_its_slot_moves() {
    let Some(mut cluster) = RedisCluster::start_or_skip("cluster frontier moves", 3, 0) else {
        return;
    };
    let ns = Namespace::new("moving-queue").unwrap();
    let slot = key_slot(ns.key("ready").as_bytes());
    let url = cluster.url();
    let pushed = tasks(40, 30);
    let (first, rest) = pushed.split_at(400);
    let (during, after) = rest.split_at(400);
    let push = |tasks: &[NewTask]| {
        runtime().block_on(async {
            let link = Link::connect(&url).await.unwrap();
            Frontier::new(link, ns.clone()).push(tasks).await.unwrap();
        })
    };
    push(first);
    static MORE: AtomicBool = AtomicBool::new(true);
    let (owner, done) = std::thread::scope(|s| {
        let mover = s.spawn(|| {
            let slots_of = |cluster: &RedisCluster, port: u16| {
                cluster
                    .masters()
                    .iter()
                    .find(|m| m.port == port)
                    .map_or(0, |m| m.slots)
            };
            let owner = cluster.master_of(slot).unwrap();
            let other = cluster
                .masters()
                .into_iter()
                .find(|m| m.port != owner)
                .unwrap();
            cluster
                .reshard(owner, other.port, slots_of(&cluster, owner))
                .unwrap();
            push(during);
            let added = cluster.add_master().unwrap();
            cluster
                .reshard(other.port, added, slots_of(&cluster, other.port))
                .unwrap();
            assert_eq!(cluster.master_of(slot), Some(added));
            cluster.remove_master(added).unwrap();
            push(after);
            MORE.store(false, Ordering::Release);
            cluster.master_of(slot)
        });
        let done = runtime().block_on(drain(&url, &ns, 4, &MORE));
        (mover.join().unwrap(), done)
    });
    assert!(owner.is_some());
    assert_each_once(done, &pushed);
}

/// A master dies before its replica got its last writes (replication is asynchronous and
/// here cut on purpose), and that replica takes over: a client that saw those writes is told
/// the store went back ([`Error::StoreReset`]) instead of admitting their URLs again.
#[test]
fn a_promoted_replica_that_missed_writes_is_detected() {
    let Some(mut cluster) = RedisCluster::start_or_skip("cluster lost writes", 3, 1) else {
        return;
    };
    let url = cluster.url();
    let seen: Filter =
        SharedFilter::open(&url, StoreOptions::new("lagging"), 50_000, 1e-6).unwrap();
    let blind_options = StoreOptions {
        known_bits_limit: 0,
        ..StoreOptions::new("lagging")
    };
    let blind: Filter = SharedFilter::join(&url, blind_options).unwrap();
    let admit = |filter: &Filter, urls: &[String]| filter.try_check_and_insert_batch(urls);
    // The master of slot 0 holds the first data keys; its replica is cut off below.
    let victim = cluster.master_of(0).unwrap();
    let before = urls(0..1_000);
    assert!(admit(&seen, &before).unwrap().iter().all(|&n| n));
    // Both clients connect to every master before the cut (new logins fail after it).
    assert!(admit(&blind, &before).unwrap().iter().all(|&n| !n));
    // The replica holds all of it, then replication is cut: the replica cannot log in again.
    let master = redis::Client::open(format!("redis://127.0.0.1:{victim}/")).unwrap();
    let mut admin = master.get_connection().unwrap();
    let caught_up = (0..200).any(|_| {
        let info: String = redis::cmd("INFO")
            .arg("replication")
            .query(&mut admin)
            .unwrap();
        let field = |name: &str| {
            info.lines()
                .find_map(|l| l.strip_prefix(name))
                .map(str::trim)
        };
        let offset = field("master_repl_offset:").unwrap_or("?").to_owned();
        let replica = field("slave0:").unwrap_or("");
        std::thread::sleep(Duration::from_millis(50));
        replica.contains("state=online") && replica.contains(&format!("offset={offset},"))
    });
    assert!(caught_up, "the replica never caught up");
    let () = redis::cmd("CONFIG")
        .arg(&["SET", "requirepass", "cut-off"][..])
        .query(&mut admin)
        .unwrap();
    let _: i64 = redis::cmd("CLIENT")
        .arg(&["KILL", "TYPE", "replica"][..])
        .query(&mut admin)
        .unwrap();
    let missed = urls(1_000..2_000);
    assert!(admit(&seen, &missed).unwrap().iter().all(|&n| n));
    assert!(admit(&blind, &missed).unwrap().iter().all(|&n| !n));
    cluster.kill_and_fail_over(victim).unwrap();
    // A client that joins now admits many URLs: the keys' write counts climb past what the
    // first clients saw, and only the bits they set tell the loss.
    let late: Filter = SharedFilter::join(&url, StoreOptions::new("lagging")).unwrap();
    for part in urls(2_000..12_000).chunks(200) {
        admit(&late, part).unwrap();
    }
    // A client whose cache knows every bit it asks for reads one key's header a second,
    // every key in turn: it hears of the reset within a pass over the keys.
    let mut detected = false;
    for _ in 0..seen.store().data_keys() * 2 {
        match admit(&seen, &missed) {
            Err(Error::StoreReset { detail, .. }) => {
                eprintln!("detected: {detail}");
                assert!(detail.contains("is 0 again"), "{detail}");
                detected = true;
                break;
            }
            Ok(new) => assert!(new.iter().all(|&n| !n)),
            Err(e) => panic!("{e}"),
        }
        std::thread::sleep(Duration::from_millis(1_050));
    }
    assert!(detected, "the cached client never heard of the reset");
    // A client without a cache meets its witnesses in its next batch.
    match admit(&blind, &missed) {
        Err(Error::StoreReset { detail, .. }) => {
            eprintln!("detected: {detail}");
            assert!(detail.contains("is 0 again"), "{detail}");
        }
        other => panic!("a promoted replica that missed writes went unnoticed: {other:?}"),
    }
}

/// The master that holds a shared filter's metadata dies, and its only replica takes over:
/// clients go on with the promoted replica, which holds the metadata (written long before
/// the kill), rather than taking the filter for reset.
#[test]
fn a_failover_of_the_metadatas_master_is_no_reset() {
    let Some(mut cluster) = RedisCluster::start_or_skip("failover of the metadata", 3, 1) else {
        return;
    };
    let url = cluster.url();
    let seen: Filter =
        SharedFilter::open(&url, StoreOptions::new("meta-failover"), 20_000, 1e-6).unwrap();
    let before = urls(0..2_000);
    assert!(
        seen.try_check_and_insert_batch(&before)
            .unwrap()
            .iter()
            .all(|&n| n)
    );
    // The metadata's master, once its replica has it.
    let meta_slot = key_slot(b"meta-failover:meta");
    let victim = cluster.master_of(meta_slot).unwrap();
    cluster.await_replication().unwrap();
    cluster.kill_and_fail_over(victim).unwrap();
    let after = seen
        .try_check_and_insert_batch(&urls(2_000..3_000))
        .unwrap();
    assert!(after.iter().all(|&n| n));
    let again = seen.try_check_and_insert_batch(&before).unwrap();
    assert!(again.iter().all(|&n| !n), "a URL admitted twice");
}
