//! The segment store's cache of known bits against a real redis-server: it changes no
//! answer, spares Redis the URLs it knows, and is emptied when a connection is opened again.

use url_dedup_bloom::SipHash13;
use url_dedup_redis::testing::RedisServer;
use url_dedup_redis::{RedisSegmentStore, StoreOptions, WriteMode};
use url_dedup_segmented::{Layout, MemoryStore, Placement, SegmentedBloomFilter};

mod common;
use common::{KEY, create, urls};

/// A small deterministic generator (xorshift), so the known-bits tests replay exactly.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Two clients with the cache of known bits (one store each, same prefix), one without it
/// (another prefix) and the in-memory filter get the same batches, with many repeats inside
/// and across batches, `check_and_insert` and `contains` in turn: every answer agrees. The
/// small layout fills up, so most bits end up known and many items are answered locally.
#[test]
fn known_bits_change_no_answer() {
    let Some(server) = RedisServer::start_or_skip("known_bits_change_no_answer") else {
        return;
    };
    let url = server.url();
    for (layout, pool) in [
        (Layout::new(8, 512, 4).unwrap(), 900),
        (
            Layout::with_placement(8, 512, 8, Placement::Split).unwrap(),
            900,
        ),
        (RedisSegmentStore::layout_for(3_000, 0.01).unwrap(), 4_000),
    ] {
        let hasher = SipHash13::new(KEY);
        let prefix = format!(
            "known{}-{}-{:?}",
            layout.bits(),
            layout.hashes(),
            layout.placement()
        );
        let cached = RedisSegmentStore::create_filter(
            &url,
            StoreOptions {
                segments_per_key: Some(3),
                ..StoreOptions::new(prefix.as_str())
            },
            layout,
            hasher.clone(),
            3_000,
        )
        .unwrap();
        let other =
            RedisSegmentStore::join::<SipHash13>(&url, StoreOptions::new(prefix.as_str())).unwrap();
        let plain = RedisSegmentStore::create_filter(
            &url,
            StoreOptions {
                known_bits_limit: 0,
                segments_per_key: Some(3),
                ..StoreOptions::new(format!("{prefix}-plain"))
            },
            layout,
            hasher.clone(),
            3_000,
        )
        .unwrap();
        let memory =
            SegmentedBloomFilter::with_store(MemoryStore::new(layout).unwrap(), hasher, 3_000);
        assert!(cached.store().known_bits_stats().bytes > 0);
        assert_eq!(plain.store().known_bits_stats().bytes, 0);

        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for round in 0..120 {
            let size = [1, 2, 7, 64, 300, 1_000][round % 6];
            let batch: Vec<String> = (0..size)
                .map(|_| format!("https://h{}.example/", rng.below(pool)))
                .collect();
            let client = if round % 3 == 0 { &other } else { &cached };
            let expected = memory.check_and_insert_batch(&batch);
            assert_eq!(
                client.try_check_and_insert_batch(&batch).unwrap(),
                expected,
                "round {round}"
            );
            assert_eq!(plain.try_check_and_insert_batch(&batch).unwrap(), expected);
            let probe: Vec<String> = (0..size)
                .map(|_| format!("https://h{}.example/", rng.below(pool + pool / 4)))
                .collect();
            let expected = memory.contains_batch(&probe);
            assert_eq!(client.try_contains_batch(&probe).unwrap(), expected);
            assert_eq!(plain.try_contains_batch(&probe).unwrap(), expected);
        }
        let stats = cached.store().known_bits_stats();
        assert!(
            stats.skipped > stats.sent,
            "the cache should answer most bits here: {stats:?}"
        );
        assert_eq!(plain.store().known_bits_stats().skipped, 0);
        // And Redis holds the same bits either way.
        let (mut a, mut b, mut m) = (Vec::new(), Vec::new(), Vec::new());
        for segment in 0..layout.segments() {
            url_dedup_segmented::SegmentStore::read_segment(cached.store(), segment, &mut a)
                .unwrap();
            url_dedup_segmented::SegmentStore::read_segment(plain.store(), segment, &mut b)
                .unwrap();
            memory.store().read_segment(segment, &mut m).unwrap();
        }
        assert_eq!(a, m);
        assert_eq!(b, m);
    }
}

fn bitfield_calls(url: &str) -> u64 {
    let mut conn = redis::Client::open(url).unwrap().get_connection().unwrap();
    url_dedup_redis::testing::command_calls(&mut conn, |name| {
        name == "bitfield" || name == "bitfield_ro"
    })
    .unwrap()
}

/// Once a client has inserted or seen URLs, asking about them again sends Redis nothing:
/// neither `check_and_insert` nor `contains`, in this client or in one that only read them.
#[test]
fn known_urls_cost_redis_nothing() {
    let Some(server) = RedisServer::start_or_skip("known_urls_cost_redis_nothing") else {
        return;
    };
    let url = server.url();
    let writer = create(&url, StoreOptions::new("cost"), 10_000);
    let layout = writer.layout();
    let all = urls(5_000);
    assert!(
        writer
            .try_check_and_insert_batch(&all)
            .unwrap()
            .iter()
            .filter(|&&n| n)
            .count()
            > 4_950
    );
    let k = u64::from(layout.hashes());
    let stats = writer.store().known_bits_stats();
    assert_eq!(stats.sent + stats.skipped, 5_000 * k);

    let calls = bitfield_calls(&url);
    assert!(
        writer
            .try_check_and_insert_batch(&all)
            .unwrap()
            .iter()
            .all(|&n| !n)
    );
    assert!(writer.try_contains_batch(&all).unwrap().iter().all(|&p| p));
    assert_eq!(writer.store().known_bits_stats().sent, stats.sent);
    assert_eq!(
        writer.store().known_bits_stats().skipped,
        stats.skipped + 2 * 5_000 * k
    );
    assert_eq!(
        bitfield_calls(&url),
        calls,
        "Redis was asked about known bits"
    );

    // A second client learns from what `contains` answered, then answers alone.
    let reader = RedisSegmentStore::join::<SipHash13>(&url, StoreOptions::new("cost")).unwrap();
    assert!(reader.try_contains_batch(&all).unwrap().iter().all(|&p| p));
    let sent = reader.store().known_bits_stats().sent;
    assert_eq!(sent, 5_000 * k);
    let calls = bitfield_calls(&url);
    assert!(
        reader
            .try_check_and_insert_batch(&all)
            .unwrap()
            .iter()
            .all(|&n| !n)
    );
    assert_eq!(reader.store().known_bits_stats().sent, sent);
    assert_eq!(bitfield_calls(&url), calls);

    // Limits: a filter larger than the limit, or the optimistic mode, keeps no cache.
    let small = RedisSegmentStore::join::<SipHash13>(
        &url,
        StoreOptions {
            known_bits_limit: layout.bits() / 8 - 1,
            ..StoreOptions::new("cost")
        },
    )
    .unwrap();
    assert_eq!(small.store().known_bits_stats().bytes, 0);
    let optimistic = RedisSegmentStore::join::<SipHash13>(
        &url,
        StoreOptions {
            mode: WriteMode::Optimistic,
            ..StoreOptions::new("cost")
        },
    )
    .unwrap();
    assert_eq!(optimistic.store().known_bits_stats().bytes, 0);
}

/// A reconnect empties the cache of known bits: a restarted server (here one that kept its
/// data, so the filter goes on) is asked again, and the cache is learned anew from it.
#[test]
fn a_reconnect_empties_the_known_bits() {
    let Some(mut server) = RedisServer::start_durable_or_skip("a_reconnect_empties_the_known_bits")
    else {
        return;
    };
    // Room for far more URLs than these, so that none of them is a false positive.
    let filter = create(&server.url(), StoreOptions::new("kept"), 200_000);
    let old = urls(2_000);
    assert!(
        filter
            .try_check_and_insert_batch(&old)
            .unwrap()
            .iter()
            .all(|&n| n)
    );
    assert_eq!(filter.store().known_bits_stats().invalidations, 0);

    server.restart().unwrap();
    let mut mixed = old.clone();
    mixed.push("https://fresh.example/".to_owned());
    let answers = filter.try_check_and_insert_batch(&mixed).unwrap();
    assert!(
        answers[..2_000].iter().all(|&n| !n),
        "a URL admitted again after the restart"
    );
    assert!(answers[2_000], "the fresh URL");
    assert_eq!(filter.store().known_bits_stats().invalidations, 1);
    // Relearned from the restarted server: nothing to ask now.
    let sent = filter.store().known_bits_stats().sent;
    assert!(
        filter
            .try_check_and_insert_batch(&mixed)
            .unwrap()
            .iter()
            .all(|&n| !n)
    );
    assert_eq!(filter.store().known_bits_stats().sent, sent);

    // `contains` reaches Redis the same way when it has something to ask.
    server.restart().unwrap();
    let mut probe = old.clone();
    probe.push("https://other.example/".to_owned());
    let present = filter.try_contains_batch(&probe).unwrap();
    assert!(present[..2_000].iter().all(|&p| p));
    assert!(!present[2_000]);
    assert_eq!(filter.store().known_bits_stats().invalidations, 2);
}
