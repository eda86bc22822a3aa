//! A Redis that loses its data must never be taken for a Redis that has seen nothing: the
//! shared filter notices a restart without persistence, `FLUSHALL`, a re-creation under its
//! prefix and a key that went back in time, on the round trip that meets it, and says so
//! with [`Error::StoreReset`] instead of admitting again what it had admitted.

use std::time::{Duration, Instant};

use url_dedup_bloom::{HashKey, ItemHasher, SipHash13};
use url_dedup_redis::testing::RedisServer;
use url_dedup_redis::{Backoff, Error, RedisSegmentStore, StoreOptions};
use url_dedup_segmented::SegmentedBloomFilter;

type Shared = SegmentedBloomFilter<SipHash13, RedisSegmentStore>;

fn quick(prefix: &str) -> StoreOptions {
    StoreOptions {
        backoff: Backoff::giving_up_after(Duration::from_secs(5)),
        ..StoreOptions::new(prefix)
    }
}

fn create(server: &RedisServer, prefix: &str) -> Shared {
    let layout = RedisSegmentStore::layout_for(10_000, 0.01).unwrap();
    let hasher = SipHash13::new(HashKey::from_bytes([5; 16]));
    RedisSegmentStore::create_filter(&server.url(), quick(prefix), layout, hasher, 10_000).unwrap()
}

fn urls(range: std::ops::Range<u32>) -> Vec<String> {
    range.map(|i| format!("https://e.example/{i}")).collect()
}

fn redis(server: &RedisServer, args: &[&str]) -> redis::Value {
    let client = redis::Client::open(server.url()).unwrap();
    let mut conn = client.get_connection().unwrap();
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query(&mut conn).unwrap()
}

fn assert_reset<T: std::fmt::Debug>(result: Result<T, Error>) {
    match result {
        Err(Error::StoreReset { what: "filter", .. }) => {}
        other => panic!("expected a reset filter, got {other:?}"),
    }
}

/// `url-dedup --redis` once printed 368,064 URLs twice in one run: after `FLUSHALL` the store
/// re-created its metadata and carried on.
#[test]
fn a_flushed_redis_is_a_reset_not_an_empty_filter() {
    let Some(server) = RedisServer::start_or_skip("flushall") else {
        return;
    };
    let seen = create(&server, "crawl");
    assert!(
        seen.try_check_and_insert_batch(&urls(0..100))
            .unwrap()
            .iter()
            .all(|&n| n)
    );
    redis(&server, &["FLUSHALL"]);
    assert_reset(seen.try_check_and_insert_batch(&urls(100..200)));
    // It stays reset: nothing is quietly re-created.
    assert_reset(seen.try_check_and_insert_batch(&urls(0..100)));
    assert!(matches!(
        RedisSegmentStore::join::<SipHash13>(&server.url(), quick("crawl")),
        Err(Error::NoFilter { .. })
    ));
}

/// When the cache of known bits answered every URL, the client never asked Redis and never
/// noticed that it was empty: now it checks a key at least once a second.
#[test]
fn a_client_that_knows_every_url_still_notices_a_reset() {
    let Some(server) = RedisServer::start_or_skip("cached reset") else {
        return;
    };
    let seen = create(&server, "crawl");
    let known = urls(0..50);
    seen.try_check_and_insert_batch(&known).unwrap();
    redis(&server, &["FLUSHALL"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match seen.try_check_and_insert_batch(&known) {
            Ok(new) => assert!(new.iter().all(|&n| !n), "a known URL admitted again"),
            Err(e) => {
                assert_reset::<()>(Err(e));
                break;
            }
        }
        assert!(Instant::now() < deadline, "the reset was never noticed");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_restart_without_persistence_is_a_reset_and_one_with_it_is_not() {
    let Some(mut server) = RedisServer::start_or_skip("restart empty") else {
        return;
    };
    let seen = create(&server, "crawl");
    seen.try_check_and_insert_batch(&urls(0..100)).unwrap();
    server.restart().unwrap();
    assert_reset(seen.try_check_and_insert_batch(&urls(100..200)));

    let Some(mut durable) = RedisServer::start_durable_or_skip("restart durable") else {
        return;
    };
    let seen = create(&durable, "crawl");
    seen.try_check_and_insert_batch(&urls(0..100)).unwrap();
    durable.restart().unwrap();
    let again = seen.try_check_and_insert_batch(&urls(50..150)).unwrap();
    assert!(
        again[..50].iter().all(|&n| !n),
        "admitted again after a clean restart"
    );
    assert!(again[50..].iter().all(|&n| n));
}

#[test]
fn a_filter_re_created_under_the_prefix_is_a_reset() {
    let Some(server) = RedisServer::start_or_skip("re-created") else {
        return;
    };
    let seen = create(&server, "crawl");
    seen.try_check_and_insert_batch(&urls(0..100)).unwrap();
    redis(&server, &["FLUSHALL"]);
    let fresh = create(&server, "crawl");
    assert_ne!(fresh.store().generation(), seen.store().generation());
    assert_reset(seen.try_check_and_insert_batch(&urls(100..200)));
    // The new one works, on its own empty state.
    assert!(
        fresh
            .try_check_and_insert_batch(&urls(0..10))
            .unwrap()
            .iter()
            .all(|&n| n)
    );
}

/// A failover to a replica that missed writes leaves every key in place with older contents:
/// the header's write count going back shows it.
#[test]
fn a_key_that_lost_writes_is_a_reset() {
    let Some(server) = RedisServer::start_or_skip("lost writes") else {
        return;
    };
    let options = StoreOptions {
        segments_per_key: Some(1_000_000),
        ..quick("crawl")
    };
    let layout = RedisSegmentStore::layout_for(10_000, 0.01).unwrap();
    let seen = RedisSegmentStore::create_filter(
        &server.url(),
        options,
        layout,
        SipHash13::random(),
        10_000,
    )
    .unwrap();
    seen.try_check_and_insert_batch(&urls(0..10)).unwrap();
    // What a replica that stopped replicating here would hold.
    let client = redis::Client::open(server.url()).unwrap();
    let mut conn = client.get_connection().unwrap();
    let old: Vec<u8> = redis::cmd("DUMP").arg("crawl:0").query(&mut conn).unwrap();
    seen.try_check_and_insert_batch(&urls(10..100)).unwrap();
    redis::cmd("RESTORE")
        .arg("crawl:0")
        .arg(0)
        .arg(old)
        .arg("REPLACE")
        .query::<()>(&mut conn)
        .unwrap();
    assert_reset(seen.try_check_and_insert_batch(&urls(100..110)));
}

/// The same loss, after which other clients' writes raise the key's write count past what
/// the first client saw: only the bits it set tell the loss (a client that knew only the
/// count once carried on and admitted its lost URLs again).
#[test]
fn lost_writes_show_after_others_wrote_over_them() {
    let Some(server) = RedisServer::start_or_skip("lost writes masked") else {
        return;
    };
    // One data key (the filter is far under 1 MiB), no cache of known bits.
    let options = || StoreOptions {
        known_bits_limit: 0,
        ..quick("masked")
    };
    let layout = RedisSegmentStore::layout_for(100_000, 0.01).unwrap();
    let hasher = SipHash13::new(HashKey::from_bytes([9; 16]));
    let first = RedisSegmentStore::create_filter(&server.url(), options(), layout, hasher, 100_000)
        .unwrap();
    first.try_check_and_insert_batch(&urls(0..10)).unwrap();
    let client = redis::Client::open(server.url()).unwrap();
    let mut conn = client.get_connection().unwrap();
    let old: Vec<u8> = redis::cmd("DUMP").arg("masked:0").query(&mut conn).unwrap();
    first.try_check_and_insert_batch(&urls(10..100)).unwrap();
    redis::cmd("RESTORE")
        .arg("masked:0")
        .arg(0)
        .arg(old)
        .arg("REPLACE")
        .query::<()>(&mut conn)
        .unwrap();
    let other = RedisSegmentStore::join::<SipHash13>(&server.url(), options()).unwrap();
    for i in 0..20u32 {
        other
            .try_check_and_insert_batch(&urls(1_000 * (i + 1)..1_000 * (i + 1) + 10))
            .unwrap();
    }
    match first.try_check_and_insert_batch(&urls(10..100)) {
        Err(Error::StoreReset { detail, .. }) => assert!(detail.contains("is 0 again"), "{detail}"),
        other => panic!("lost writes went unnoticed: {other:?}"),
    }
}

/// Opening a filter on a Redis that is not there once blocked for about 30 s.
#[test]
fn an_unreachable_redis_is_reported_within_the_first_contact_budget() {
    let err = RedisSegmentStore::join::<SipHash13>("redis://127.0.0.1:1/", StoreOptions::new("x"))
        .unwrap_err();
    // The first contact gives up after its own budget, 3 s, not the 30 s of a running crawl
    // (the error says which budget it spent; the clock would race a busy machine).
    match &err {
        Error::Unavailable { budget, .. } => assert_eq!(*budget, Duration::from_secs(3), "{err}"),
        other => panic!("{other}"),
    }
}

/// A shared crawl may keep its hash key out of Redis: the metadata then holds only a check
/// value, and each process brings the key (from the environment or a key file).
#[test]
fn a_key_kept_out_of_redis_is_required_and_checked() {
    let Some(server) = RedisServer::start_or_skip("secret key") else {
        return;
    };
    let key = HashKey::from_bytes(*b"a secret crawl k");
    let options = |key| StoreOptions {
        key,
        ..quick("secret")
    };
    let layout = RedisSegmentStore::layout_for(1_000, 0.01).unwrap();
    let seen = RedisSegmentStore::create_filter(
        &server.url(),
        options(Some(key)),
        layout,
        SipHash13::new(key),
        1_000,
    )
    .unwrap();
    assert!(seen.try_check_and_insert("https://a.example/").unwrap());
    let fields = redis(&server, &["HGETALL", "secret:meta"]);
    let text = format!("{fields:?}");
    assert!(!text.contains("\"key\""), "{text}");
    assert!(text.contains("key_check"), "{text}");
    assert!(matches!(
        RedisSegmentStore::join::<SipHash13>(&server.url(), options(None)),
        Err(Error::KeyRequired { .. })
    ));
    assert!(matches!(
        RedisSegmentStore::join::<SipHash13>(
            &server.url(),
            options(Some(HashKey::from_bytes([0; 16])))
        ),
        Err(Error::Mismatch { field: "key", .. })
    ));
    let other = RedisSegmentStore::join::<SipHash13>(&server.url(), options(Some(key))).unwrap();
    assert!(!other.try_check_and_insert("https://a.example/").unwrap());
}
