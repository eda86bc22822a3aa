//! Up to its expected count the shared filter keeps one layer in every data key, however the
//! items spread over the keys; keys add layers only once more items arrive. The default
//! configuration is the one measured against `SADD` (docs/benchmarks.md).

use std::sync::Arc;

use url_dedup_bloom::{HashKey, SipHash13};
use url_dedup_redis::testing::RedisServer;
use url_dedup_redis::{DEFAULT_SHARED_FPR, SharedFilter, StoreOptions};

type Filter = SharedFilter<SipHash13>;

fn urls(range: std::ops::Range<u32>) -> Vec<String> {
    range
        .map(|i| format!("https://example.com/page/{i}"))
        .collect()
}

/// Options with a fixed key, and keys of `segments_per_key` segments so that a small filter
/// spreads over several data keys.
fn options(prefix: &str, segments_per_key: Option<u64>) -> StoreOptions {
    StoreOptions {
        key: Some(HashKey::from_bytes([23; 16])),
        segments_per_key,
        ..StoreOptions::new(prefix)
    }
}

/// The layer count in every data key's header (an `i64` at bit 128), read without the
/// library.
fn layers_in_redis(server: &RedisServer, prefix: &str) -> Vec<i64> {
    let mut conn = redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let keys: u64 = redis::cmd("HGET")
        .arg(format!("{prefix}:meta"))
        .arg("segments")
        .query::<u64>(&mut conn)
        .unwrap()
        .div_ceil(
            redis::cmd("HGET")
                .arg(format!("{prefix}:meta"))
                .arg("segments_per_key")
                .query::<u64>(&mut conn)
                .unwrap(),
        );
    (0..keys)
        .map(|i| {
            let got: Vec<i64> = redis::cmd("BITFIELD_RO")
                .arg(format!("{prefix}:{i}"))
                .arg("GET")
                .arg("i64")
                .arg(128)
                .query(&mut conn)
                .unwrap();
            got[0]
        })
        .collect()
}

#[test]
fn at_the_expected_count_no_key_adds_a_layer() {
    let Some(server) = RedisServer::start_or_skip("shared expected count") else {
        return;
    };
    const N: u32 = 50_000;
    for (prefix, fpr, per_key) in [
        ("default", DEFAULT_SHARED_FPR, Some(16)),
        ("loose", 0.01, Some(4)),
        ("one-key", DEFAULT_SHARED_FPR, None),
    ] {
        let seen = Filter::open(&server.url(), options(prefix, per_key), N.into(), fpr).unwrap();
        seen.try_check_and_insert_batch(&urls(0..N)).unwrap();
        let layers = layers_in_redis(&server, prefix);
        if per_key.is_some() {
            assert!(layers.len() >= 4, "{prefix}: {} keys", layers.len());
        }
        assert!(layers.iter().all(|&l| l == 1), "{prefix}: {layers:?}");
        assert_eq!(seen.layers().unwrap(), 1, "{prefix}");

        // A quarter more than expected fills every key past its share: they grow.
        seen.try_check_and_insert_batch(&urls(N..N + N / 4))
            .unwrap();
        let layers = layers_in_redis(&server, prefix);
        assert!(layers.iter().all(|&l| l == 2), "{prefix}: {layers:?}");
    }
}

#[test]
fn clients_sharing_the_expected_count_add_no_layer() {
    let Some(server) = RedisServer::start_or_skip("shared expected count, 4 clients") else {
        return;
    };
    const N: u32 = 40_000;
    const CLIENTS: u32 = 4;
    Filter::open(&server.url(), options("four", Some(16)), N.into(), 1e-5).unwrap();
    let url = Arc::new(server.url());
    let clients: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let url = url.clone();
            std::thread::spawn(move || {
                let seen = Filter::join(&url, options("four", None)).unwrap();
                let mine = urls(c * N / CLIENTS..(c + 1) * N / CLIENTS);
                for batch in mine.chunks(1_000) {
                    seen.try_check_and_insert_batch(batch).unwrap();
                }
            })
        })
        .collect();
    for client in clients {
        client.join().unwrap();
    }
    let layers = layers_in_redis(&server, "four");
    assert!(layers.len() >= 4, "{} keys", layers.len());
    assert!(layers.iter().all(|&l| l == 1), "{layers:?}");
}

#[test]
fn a_fresh_shared_filter_has_the_default_configuration() {
    let Some(server) = RedisServer::start_or_skip("shared default configuration") else {
        return;
    };
    const N: u64 = 100_000;
    let seen: Filter =
        SharedFilter::open(&server.url(), StoreOptions::new("d"), N, DEFAULT_SHARED_FPR).unwrap();
    assert_eq!(DEFAULT_SHARED_FPR, 1e-5);
    assert_eq!(seen.false_positive_rate(), 1e-5);
    assert_eq!(seen.hashes().unwrap(), 3);
    // About 20 bytes per URL at the expected count; `SADD` of a URL keeps about 127.
    let per_url = seen.bytes().unwrap() as f64 / N as f64;
    assert!((18.0..24.0).contains(&per_url), "{per_url}");

    // What the metadata records, for every process that joins.
    let mut conn = redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let meta: std::collections::HashMap<String, String> = redis::cmd("HGETALL")
        .arg("d:meta")
        .query(&mut conn)
        .unwrap();
    assert_eq!(meta["hashes"], "3");
    assert_eq!(meta["growth_target"].parse::<f64>().unwrap(), 1e-5);
    assert_eq!(meta["version"], "3");

    // Other rates take the fewest hashes within 8 times the optimal size.
    for (prefix, fpr, k) in [("r2", 0.01, 2), ("r6", 1e-6, 4), ("r9", 1e-9, 5)] {
        let other: Filter =
            SharedFilter::open(&server.url(), StoreOptions::new(prefix), N, fpr).unwrap();
        assert_eq!(other.hashes().unwrap(), k, "at {fpr}");
    }
}
