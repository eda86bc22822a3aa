//! The growing shared filter keeps its promises past any estimate: nothing lost, the rate
//! kept, each URL admitted once by racing clients while keys grow, and exact answers from a
//! client that did not see a key grow.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};

use url_dedup_bloom::{HashKey, ItemHasher, SipHash13};
use url_dedup_redis::testing::RedisServer;
use url_dedup_redis::{Error, SharedFilter, StoreOptions};

type Filter = SharedFilter<SipHash13>;

fn urls(range: std::ops::Range<u32>) -> Vec<String> {
    range
        .map(|i| format!("https://example.com/page/{i}"))
        .collect()
}

/// Options with a fixed key, which every client brings (the metadata keeps only its check
/// value): which URLs collide depends on the key, so with a random one the counts the tests
/// bound would be random too.
fn keyed(prefix: &str) -> StoreOptions {
    StoreOptions {
        key: Some(HashKey::from_bytes(*b"shared filter 16")),
        ..StoreOptions::new(prefix)
    }
}

fn open(server: &RedisServer, first: u64, fpr: f64) -> Filter {
    SharedFilter::open(&server.url(), keyed("seen"), first, fpr).unwrap()
}

/// A filter sized for 1,000 URLs that took 5,000 (its keys grew), and a plain connection to
/// its server.
fn grown(server: &RedisServer) -> (Filter, redis::Connection) {
    let seen = open(server, 1_000, 0.01);
    seen.try_check_and_insert_batch(&urls(0..5_000)).unwrap();
    assert!(seen.layers().unwrap() >= 2);
    let client = redis::Client::open(server.url()).unwrap();
    (seen, client.get_connection().unwrap())
}

#[test]
fn a_shared_filter_grows_past_its_estimate_and_keeps_its_rate() {
    let Some(server) = RedisServer::start_or_skip("shared grows") else {
        return;
    };
    const TARGET: f64 = 0.01;
    let seen = open(&server, 1_000, TARGET);
    let all = urls(0..50_000);
    let admitted = seen
        .try_check_and_insert_batch(&all)
        .unwrap()
        .iter()
        .filter(|&&n| n)
        .count();
    assert!(seen.layers().unwrap() >= 5);
    // Below the target at every moment: fewer than 1% of 50,000 taken for seen.
    assert!(admitted > 49_500, "{admitted}");
    let present = seen.try_contains_batch(&all).unwrap();
    assert!(present.iter().all(|&p| p), "a false negative");
    let probes = urls(50_000..100_000);
    let hits = seen
        .try_contains_batch(&probes)
        .unwrap()
        .iter()
        .filter(|&&p| p)
        .count() as f64;
    let measured = hits / probes.len() as f64;
    let sigma = (TARGET * (1.0 - TARGET) / probes.len() as f64).sqrt();
    assert!(measured <= TARGET + 4.0 * sigma, "measured {measured}");
}

#[test]
fn racing_clients_admit_each_url_once_while_keys_grow() {
    let Some(server) = RedisServer::start_or_skip("shared race") else {
        return;
    };
    const CLIENTS: usize = 4;
    let all = Arc::new(urls(0..12_000));
    let url = server.url();
    open(&server, 500, 0.001);
    let start = Arc::new(Barrier::new(CLIENTS));
    let led: Arc<Vec<AtomicBool>> =
        Arc::new(all.chunks(100).map(|_| AtomicBool::new(false)).collect());
    let racers: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let (all, start, url, led) = (all.clone(), start.clone(), url.clone(), led.clone());
            std::thread::spawn(move || {
                let seen: Filter = SharedFilter::join(&url, keyed("seen")).unwrap();
                let mut mine = Vec::new();
                for (round, batch) in all.chunks(100).enumerate() {
                    // Every client decides the same batch at the same moment, once the
                    // round's leader (each in turn) has admitted its first URL: however the
                    // machine schedules them, every client wins some.
                    start.wait();
                    if round % CLIENTS == c {
                        if seen.try_check_and_insert_batch(&batch[..1]).unwrap()[0] {
                            mine.push(round * 100);
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
                            .map(|i| round * 100 + i),
                    );
                }
                mine
            })
        })
        .collect();
    let admitted: Vec<Vec<usize>> = racers.into_iter().map(|r| r.join().unwrap()).collect();
    let mut every: Vec<usize> = admitted.iter().flatten().copied().collect();
    every.sort_unstable();
    let total = every.len();
    every.dedup();
    assert_eq!(every.len(), total, "a URL admitted by two clients");
    assert!(total > 11_950, "only {total} of 12,000 admitted");
    assert!(admitted.iter().all(|a| !a.is_empty()), "a client never won");
    let seen: Filter = SharedFilter::join(&url, keyed("seen")).unwrap();
    assert!(seen.layers().unwrap() >= 4, "the race must span growth");
}

/// A client that last met a key before it grew writes to its first layer only; the reply
/// says the key grew, and the answer is still exact, whichever client comes first.
#[test]
fn a_client_that_missed_a_growth_still_answers_exactly() {
    let Some(server) = RedisServer::start_or_skip("stale client") else {
        return;
    };
    let grower = open(&server, 1_000, 0.001);
    let stale = open(&server, 1_000, 0.001);
    let other_stale = open(&server, 1_000, 0.001);
    // Both stale clients meet the key while it has one layer.
    assert!(
        stale
            .try_check_and_insert("https://seed.example/1")
            .unwrap()
    );
    assert!(
        other_stale
            .try_check_and_insert("https://seed.example/2")
            .unwrap()
    );
    grower.try_check_and_insert_batch(&urls(0..5_000)).unwrap();
    assert!(grower.layers().unwrap() >= 2);

    // The stale client first: its first-layer write makes the URL present; the grown path
    // must not admit it again.
    assert!(
        stale
            .try_check_and_insert("https://late.example/a")
            .unwrap()
    );
    assert!(
        !grower
            .try_check_and_insert("https://late.example/a")
            .unwrap()
    );
    // The grown path first: the stale client's write finds the URL in a newer layer.
    assert!(
        grower
            .try_check_and_insert("https://late.example/b")
            .unwrap()
    );
    assert!(
        !other_stale
            .try_check_and_insert("https://late.example/b")
            .unwrap()
    );
    // Both have learned the growth, and agree on everything.
    for url in urls(0..5_000).iter().take(100) {
        assert!(stale.try_contains(url).unwrap());
        assert!(other_stale.try_contains(url).unwrap());
    }
}

#[test]
fn a_grown_filter_that_lost_its_data_is_a_reset() {
    let Some(server) = RedisServer::start_or_skip("grown reset") else {
        return;
    };
    let (seen, mut conn) = grown(&server);
    redis::cmd("FLUSHALL").query::<()>(&mut conn).unwrap();
    match seen.try_check_and_insert_batch(&urls(5_000..5_100)) {
        Err(Error::StoreReset { .. }) => {}
        other => panic!("expected a reset, got {other:?}"),
    }
}

#[test]
fn a_fixed_filter_is_not_opened_as_a_growing_one() {
    let Some(server) = RedisServer::start_or_skip("fixed vs growing") else {
        return;
    };
    let layout = url_dedup_redis::RedisSegmentStore::layout_for(1_000, 0.01).unwrap();
    url_dedup_redis::RedisSegmentStore::create_filter(
        &server.url(),
        StoreOptions::new("fixed"),
        layout,
        SipHash13::random(),
        1_000,
    )
    .unwrap();
    assert!(matches!(
        Filter::join(&server.url(), StoreOptions::new("fixed")),
        Err(Error::Mismatch {
            field: "growth",
            ..
        })
    ));
}

/// A filter of one bit per URL and layer (half of Redis's work per URL of the default at 1%)
/// keeps its rate as it grows, and a client that joins it finds the same choice in the
/// metadata.
#[test]
fn a_filter_of_one_hash_grows_and_keeps_its_rate() {
    use url_dedup_segmented::SegmentStore;
    let Some(server) = RedisServer::start_or_skip("few hashes") else {
        return;
    };
    const TARGET: f64 = 0.01;
    let options = StoreOptions {
        hashes: Some(1),
        ..keyed("lean")
    };
    let seen: Filter = SharedFilter::open(&server.url(), options, 2_000, TARGET).unwrap();
    assert_eq!(seen.store().layout().hashes(), 1);
    let all = urls(0..40_000);
    let admitted = seen
        .try_check_and_insert_batch(&all)
        .unwrap()
        .iter()
        .filter(|&&n| n)
        .count();
    assert!(seen.layers().unwrap() >= 4);
    assert!(admitted > 39_600, "{admitted}");
    let joined: Filter = SharedFilter::join(&server.url(), keyed("lean")).unwrap();
    assert_eq!(joined.store().layout().hashes(), 1);
    assert!(joined.try_contains_batch(&all).unwrap().iter().all(|&p| p));
    let strangers = urls(1_000_000..1_020_000);
    let false_positives = joined
        .try_contains_batch(&strangers)
        .unwrap()
        .iter()
        .filter(|&&p| p)
        .count();
    assert!(false_positives < 300, "{false_positives} of 20,000");
}

/// Commands the server processed since the last call (the `INFO` itself left out).
fn commands(conn: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("stats").query(conn).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("total_commands_processed:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap()
}

/// Once a key has grown, a URL whose first-layer bits the client has seen set is a duplicate
/// (the script would find it in that layer): it is answered from the known-bits cache, as in
/// a filter that never grew, and not with a script call per batch. A filter sized a little
/// short would otherwise cost a round trip for every URL seen again.
#[test]
fn urls_seen_before_a_key_grew_are_answered_without_a_round_trip() {
    let Some(server) = RedisServer::start_or_skip("grown known bits") else {
        return;
    };
    let (seen, mut conn) = grown(&server);
    // The first 500 were admitted in parts of a batch, before any key reached 7/8 of its
    // share: into first layers, bits this client set.
    let early = urls(0..500);
    let before = commands(&mut conn);
    for chunk in early.chunks(50) {
        assert!(
            seen.try_check_and_insert_batch(chunk)
                .unwrap()
                .iter()
                .all(|&n| !n)
        );
        assert!(seen.try_contains_batch(chunk).unwrap().iter().all(|&p| p));
    }
    let sent = commands(&mut conn) - before - 1;
    // At most a header check, once a second.
    assert!(sent <= 2, "{sent} commands for URLs the client knows");

    // A reset is still noticed: the cache is checked against a header once a second.
    redis::cmd("FLUSHALL").query::<()>(&mut conn).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1_100));
    match seen.try_check_and_insert_batch(&early[..50]) {
        Err(Error::StoreReset { .. }) => {}
        other => panic!("expected a reset, got {other:?}"),
    }
}
