//! A writing batch whose connection breaks: the retry must know whether the lost attempt ran.
//! A proxy between the store and a real redis-server cuts the connection that carries a batch
//! (a transaction on first layers, a script call on grown keys), either before the batch
//! reaches Redis or after Redis ran it and before its reply returns.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use url_dedup_bloom::{HashKey, SipHash13};
use url_dedup_redis::testing::RedisServer;
use url_dedup_redis::{RedisSegmentStore, SharedFilter, StoreOptions, Uncertain};

/// Where the proxy cuts the next connection that sends a transaction.
const PASS: u8 = 0;
const BEFORE_RUN: u8 = 1;
const AFTER_RUN: u8 = 2;

/// What the proxy cuts: a transaction (`MULTI` ... `EXEC`), or a script call.
const TRANSACTION: &[&[u8]] = &[b"MULTI", b"EXEC"];
const SCRIPT: &[&[u8]] = &[b"EVALSHA"];

/// Forwards loopback connections to `upstream`; the first request holding every one of
/// `needles` seen after `cut` is set is cut as `cut` says, once.
fn proxy(upstream: u16, cut: Arc<AtomicU8>, needles: &'static [&'static [u8]]) -> u16 {
    let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(mut client) = client else { return };
            let mut server = TcpStream::connect(("127.0.0.1", upstream)).unwrap();
            let (mut client_rx, mut server_tx) =
                (client.try_clone().unwrap(), server.try_clone().unwrap());
            let cut = cut.clone();
            let (client_close, server_close) =
                (client.try_clone().unwrap(), server.try_clone().unwrap());
            // Set before a transaction that is cut after it ran: its reply is not forwarded.
            let mute = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let muted = mute.clone();
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 1 << 16];
                let mut seen = Vec::new();
                while let Ok(n) = client_rx.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    seen.extend_from_slice(&buf[..n]);
                    let transaction = needles.iter().all(|n| contains(&seen, n));
                    let mode = cut.load(Ordering::SeqCst);
                    if transaction && mode == BEFORE_RUN {
                        cut.store(PASS, Ordering::SeqCst);
                        let _ = client_close.shutdown(Shutdown::Both);
                        let _ = server_close.shutdown(Shutdown::Both);
                        return;
                    }
                    if transaction && mode == AFTER_RUN {
                        mute.store(true, Ordering::SeqCst);
                    }
                    if server_tx.write_all(&buf[..n]).is_err() {
                        break;
                    }
                    if transaction && mode == AFTER_RUN {
                        cut.store(PASS, Ordering::SeqCst);
                        // Let Redis run it, then drop the reply with the connection.
                        std::thread::sleep(std::time::Duration::from_millis(200));
                        let _ = client_close.shutdown(Shutdown::Both);
                        let _ = server_close.shutdown(Shutdown::Both);
                        return;
                    }
                    if transaction {
                        seen.clear();
                    }
                }
            });
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 1 << 16];
                while let Ok(n) = server.read(&mut buf) {
                    if n == 0 || muted.load(Ordering::SeqCst) {
                        break;
                    }
                    if client.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            });
        }
    });
    port
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn urls(range: std::ops::Range<u32>) -> Vec<String> {
    range.map(|i| format!("https://lost.example/{i}")).collect()
}

/// URLs another client admitted are sent again by a client whose connection is cut: cut before
/// Redis ran the batch, the retry's answers are exact (all seen); cut after, nobody can know
/// what the lost attempt answered, and `Uncertain::AssumeNew` reports them new.
#[test]
fn a_retry_knows_whether_the_lost_attempt_ran() {
    let Some(server) = RedisServer::start_or_skip("lost replies") else {
        return;
    };
    let key = HashKey::from_bytes([3; 16]);
    let layout = RedisSegmentStore::layout_for(100_000, 0.01).unwrap();
    let direct = RedisSegmentStore::create_filter(
        &server.url(),
        StoreOptions::new("lost"),
        layout,
        SipHash13::new(key),
        100_000,
    )
    .unwrap();
    let cut = Arc::new(AtomicU8::new(PASS));
    let port = proxy(server.port(), cut.clone(), TRANSACTION);
    let options = StoreOptions {
        uncertain: Uncertain::AssumeNew,
        // Every bit goes to Redis: the client's own cache would answer the repeats.
        known_bits_limit: 0,
        ..StoreOptions::new("lost")
    };
    let proxied =
        RedisSegmentStore::join::<SipHash13>(&format!("redis://127.0.0.1:{port}/"), options)
            .unwrap();
    // A first batch through the proxy opens its connections.
    assert!(
        proxied
            .try_check_and_insert_batch(&urls(0..10))
            .unwrap()
            .iter()
            .all(|&n| n)
    );

    let before = urls(100..200);
    assert!(
        direct
            .try_check_and_insert_batch(&before)
            .unwrap()
            .iter()
            .all(|&n| n)
    );
    cut.store(BEFORE_RUN, Ordering::SeqCst);
    let answers = proxied.try_check_and_insert_batch(&before).unwrap();
    assert_eq!(cut.load(Ordering::SeqCst), PASS, "the proxy never cut");
    assert!(
        answers.iter().all(|&n| !n),
        "cut before it ran: exact answers"
    );

    let after = urls(200..300);
    assert!(
        direct
            .try_check_and_insert_batch(&after)
            .unwrap()
            .iter()
            .all(|&n| n)
    );
    cut.store(AFTER_RUN, Ordering::SeqCst);
    let answers = proxied.try_check_and_insert_batch(&after).unwrap();
    assert_eq!(cut.load(Ordering::SeqCst), PASS, "the proxy never cut");
    assert!(
        answers.iter().all(|&n| n),
        "cut after it ran: Uncertain::AssumeNew: {answers:?}"
    );
}

/// What a retry needs is one key per connection, not one per batch: a client that sent a
/// hundred writing batches leaves one counter key in Redis (each batch once left a token key
/// for a minute, 110 bytes a batch: a Scrapy process admitting one request per call kept a
/// key per request).
#[test]
fn batches_leave_one_key_per_connection() {
    let Some(server) = RedisServer::start_or_skip("one key per connection") else {
        return;
    };
    let layout = RedisSegmentStore::layout_for(100_000, 0.01).unwrap();
    let filter = RedisSegmentStore::create_filter(
        &server.url(),
        StoreOptions::new("count"),
        layout,
        SipHash13::new(HashKey::from_bytes([4; 16])),
        100_000,
    )
    .unwrap();
    for i in 0..100 {
        filter
            .try_check_and_insert_batch(&urls(i * 10..i * 10 + 10))
            .unwrap();
    }
    let mut conn = redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let keys: Vec<String> = redis::cmd("KEYS").arg("count:*").query(&mut conn).unwrap();
    let counters = keys.iter().filter(|k| k.starts_with("count:conn:")).count();
    assert_eq!(counters, 1, "{keys:?}");
    // The metadata, the one data key and the counter.
    assert_eq!(keys.len(), 3, "{keys:?}");
}

/// The same on keys that grew, where a batch is a script call: cut before the script ran, the
/// retry's answers are exact; cut after, the retry finds the call's number in its stamp key
/// and does not run it twice (which would call every URL it admitted a duplicate).
#[test]
fn a_retried_script_on_a_grown_key_knows_whether_it_ran() {
    let Some(server) = RedisServer::start_or_skip("lost script replies") else {
        return;
    };
    // A first layer large enough that a batch of 100 is one part (a batch goes in parts of at
    // most 1/128 of the first layer), so one script call carries it.
    let direct: SharedFilter<SipHash13> =
        SharedFilter::open(&server.url(), StoreOptions::new("grown"), 16_000, 1e-6).unwrap();
    direct.try_check_and_insert_batch(&urls(0..40_000)).unwrap();
    assert!(direct.layers().unwrap() >= 2);
    let cut = Arc::new(AtomicU8::new(PASS));
    let port = proxy(server.port(), cut.clone(), SCRIPT);
    let options = StoreOptions {
        uncertain: Uncertain::AssumeNew,
        known_bits_limit: 0,
        ..StoreOptions::new("grown")
    };
    let proxied: SharedFilter<SipHash13> =
        SharedFilter::open(&format!("redis://127.0.0.1:{port}/"), options, 16_000, 1e-6).unwrap();
    // Meets every key, and learns that each grew.
    proxied.try_check_and_insert_batch(&urls(0..2_000)).unwrap();

    for (range, mode, want_new) in [
        (100_000..100_100, BEFORE_RUN, false),
        (200_000..200_100, AFTER_RUN, true),
    ] {
        let batch = urls(range);
        assert!(
            direct
                .try_check_and_insert_batch(&batch)
                .unwrap()
                .iter()
                .all(|&n| n)
        );
        cut.store(mode, Ordering::SeqCst);
        let answers = proxied.try_check_and_insert_batch(&batch).unwrap();
        assert_eq!(cut.load(Ordering::SeqCst), PASS, "the proxy never cut");
        assert!(
            answers.iter().all(|&n| n == want_new),
            "mode {mode}: {answers:?}"
        );
    }
}

/// Scripts on grown keys use the connection's counter key too: no key per call.
#[test]
fn scripts_on_grown_keys_leave_no_key_per_call() {
    let Some(server) = RedisServer::start_or_skip("grown keys per call") else {
        return;
    };
    let filter: SharedFilter<SipHash13> =
        SharedFilter::open(&server.url(), StoreOptions::new("calls"), 1_000, 0.01).unwrap();
    for i in 0..500 {
        filter
            .try_check_and_insert_batch(&urls(i * 10..i * 10 + 10))
            .unwrap();
    }
    assert!(filter.layers().unwrap() >= 2);
    let mut conn = redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let keys: Vec<String> = redis::cmd("KEYS").arg("calls:*").query(&mut conn).unwrap();
    let tokens: Vec<&String> = keys.iter().filter(|k| k.contains(":t:")).collect();
    assert!(
        tokens.is_empty(),
        "{} token keys: {:?}",
        tokens.len(),
        &tokens[..tokens.len().min(5)]
    );
    assert_eq!(
        keys.iter().filter(|k| k.starts_with("calls:conn:")).count(),
        1,
        "{keys:?}"
    );
}
