//! The Redis segment store against a real redis-server: exactly-once admission across
//! processes and connections, parameter mismatches, Redis killed in the middle of batches,
//! snapshots to and from memory, and agreement with the in-memory store.

use std::borrow::Borrow;
use std::collections::HashSet;
use std::io::Write;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use proptest::prelude::*;
use url_dedup_bloom::{HashKey, SipHash13, Xxh3};
use url_dedup_redis::testing::RedisServer;
use url_dedup_redis::{Error, RedisSegmentStore, StoreOptions, Uncertain, WriteMode};
use url_dedup_segmented::{Layout, MemoryStore, Placement, SegmentedBloomFilter};

mod common;
use common::{KEY, create, urls};

/// What one racer admitted: each URL with the round it was admitted in. Rounds are the racers'
/// shared clock: every racer starts round `r` only once all of them have finished round `r - 1`.
type Admitted = Vec<(usize, String)>;

/// One racer: walks all of `urls`, in the same order as every other racer, one batch per
/// round, waiting at `barrier(round)` before each, so all racers check and insert the same
/// batch at the same moment.
fn race(
    filter: &SegmentedBloomFilter<SipHash13, RedisSegmentStore>,
    urls: &[String],
    batch: usize,
    mut barrier: impl FnMut(usize),
) -> Admitted {
    let mut admitted = Vec::new();
    for (round, batch) in urls.chunks(batch).enumerate() {
        barrier(round);
        let new = filter.try_check_and_insert_batch(batch).unwrap();
        admitted.extend(
            batch
                .iter()
                .zip(new)
                .filter(|(_, n)| *n)
                .map(|(u, _)| (round, u.clone())),
        );
    }
    admitted
}

/// As [`race`], for racer `me` of threads that take turns to lead a round: the round's
/// leader checks and inserts the round's first URL alone, then the others start. On a busy
/// machine the scheduler could otherwise let one racer lose every round (a batch goes whole
/// to the first to commit), and the test would prove nothing about it; the rest of each
/// round is a free race.
fn race_in_turns(
    filter: &SegmentedBloomFilter<SipHash13, RedisSegmentStore>,
    urls: &[String],
    batch: usize,
    me: usize,
    rounds: &Rounds,
    led: &[std::sync::atomic::AtomicBool],
) -> Admitted {
    use std::sync::atomic::Ordering;
    let mut admitted = Vec::new();
    for (round, batch) in urls.chunks(batch).enumerate() {
        rounds.wait(round);
        if round % rounds.parties == me {
            if filter.try_check_and_insert_batch(&batch[..1]).unwrap()[0] {
                admitted.push((round, batch[0].clone()));
            }
            led[round].store(true, Ordering::Release);
        } else {
            while !led[round].load(Ordering::Acquire) {
                std::thread::yield_now();
            }
        }
        let new = filter.try_check_and_insert_batch(batch).unwrap();
        admitted.extend(
            batch
                .iter()
                .zip(new)
                .filter(|(_, n)| *n)
                .map(|(u, _)| (round, u.clone())),
        );
    }
    admitted
}

/// The racers raced and admitted each of `total` URLs at most once: every racer admitted some
/// URLs and their admission windows (first to last round) intersect, so the admissions were
/// interleaved rather than one racer's after another's; no URL was admitted twice; and fewer
/// than `max_missed` (false positives) were admitted by no one.
fn assert_raced_exactly_once(racers: &[Admitted], total: usize, max_missed: usize) {
    for (r, admitted) in racers.iter().enumerate() {
        assert!(!admitted.is_empty(), "racer {r} admitted nothing: no race");
    }
    let latest_start = racers.iter().map(|a| a[0].0).max().unwrap();
    let earliest_end = racers.iter().map(|a| a[a.len() - 1].0).min().unwrap();
    assert!(
        latest_start <= earliest_end,
        "the racers admitted one after another (a racer's first admission in round \
         {latest_start}, another's last in round {earliest_end})"
    );
    let mut unique = HashSet::new();
    let doubles: Vec<&String> = racers
        .iter()
        .flatten()
        .map(|(_, u)| u)
        .filter(|u| !unique.insert(*u))
        .collect();
    assert!(doubles.is_empty(), "URLs admitted twice: {doubles:?}");
    let missed = total - unique.len();
    assert!(
        missed < max_missed,
        "{missed} URLs never admitted: far more than false positives explain"
    );
}

/// A barrier for racing threads that gives up after a minute, so a racer that failed fails the
/// test instead of leaving the others waiting for it forever.
struct Rounds {
    parties: usize,
    /// How many threads wait in the current round, and how many rounds were completed.
    state: Mutex<(usize, usize)>,
    next: Condvar,
}

impl Rounds {
    fn new(parties: usize) -> Self {
        Self {
            parties,
            state: Mutex::new((0, 0)),
            next: Condvar::new(),
        }
    }

    fn wait(&self, round: usize) {
        let mut state = self.state.lock().unwrap();
        let completed = state.1;
        state.0 += 1;
        if state.0 == self.parties {
            *state = (0, completed + 1);
            self.next.notify_all();
            return;
        }
        let (_state, wait) = self
            .next
            .wait_timeout_while(state, Duration::from_secs(60), |s| s.1 == completed)
            .unwrap();
        assert!(
            !wait.timed_out(),
            "the other racers never reached round {round}"
        );
    }
}

/// A barrier across processes, in Redis: each of `parties` racers counts itself in for
/// `round`; the last one releases the others, who block on a list until it does.
fn redis_barrier(conn: &mut redis::Connection, parties: usize, round: usize) {
    let arrived: usize = redis::cmd("INCR")
        .arg(format!("race:arrived:{round}"))
        .query(conn)
        .unwrap();
    let go = format!("race:go:{round}");
    if arrived == parties {
        let _: usize = redis::cmd("RPUSH")
            .arg(&go)
            .arg(vec![1; parties - 1])
            .query(conn)
            .unwrap();
    } else {
        let released: Option<(String, u8)> =
            redis::cmd("BLPOP").arg(&go).arg(60).query(conn).unwrap();
        assert!(
            released.is_some(),
            "the other racers never reached round {round}"
        );
    }
}

const CHILD_ENV: &str = "URL_DEDUP_REDIS_RACE_CHILD";
const RACERS: usize = 3;

/// Runs only as a child of `processes_race_and_admit_each_url_once`: races the others through
/// a Redis barrier and writes the URLs it was told were new, with their rounds, to a file.
#[test]
#[ignore = "helper process, started by its parent test"]
fn race_child() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let (url, out) = spec.split_once('|').unwrap();
    let filter = RedisSegmentStore::join::<SipHash13>(url, StoreOptions::new("race")).unwrap();
    let mut conn = redis::Client::open(url)
        .and_then(|c| c.get_connection())
        .unwrap();
    let admitted = race(&filter, &urls(20_000), 250, |round| {
        redis_barrier(&mut conn, RACERS, round)
    });
    let mut file = std::io::BufWriter::new(std::fs::File::create(out).unwrap());
    for (round, u) in admitted {
        writeln!(file, "{round} {u}").unwrap();
    }
}

/// Three processes insert the same 20,000 URLs in the same order, starting each batch
/// together: they all admit some, no URL is admitted by two of them, and all but false
/// positives are admitted by one.
#[test]
fn processes_race_and_admit_each_url_once() {
    let Some(server) = RedisServer::start_or_skip("processes_race") else {
        return;
    };
    let layout = RedisSegmentStore::layout_for(20_000, 0.01).unwrap();
    RedisSegmentStore::create::<SipHash13>(
        &server.url(),
        StoreOptions::new("race"),
        layout,
        KEY,
        20_000,
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let children: Vec<_> = (0..RACERS)
        .map(|c| {
            let out = dir.path().join(format!("admitted-{c}"));
            let child = std::process::Command::new(std::env::current_exe().unwrap())
                .args(["--exact", "race_child", "--ignored", "--nocapture"])
                .env(CHILD_ENV, format!("{}|{}", server.url(), out.display()))
                // The child's own test summary would read like one of ours.
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap();
            (child, out)
        })
        .collect();
    let racers: Vec<Admitted> = children
        .into_iter()
        .map(|(mut child, out)| {
            assert!(child.wait().unwrap().success());
            std::fs::read_to_string(out)
                .unwrap()
                .lines()
                .map(|line| {
                    let (round, u) = line.split_once(' ').unwrap();
                    (round.parse().unwrap(), u.to_owned())
                })
                .collect()
        })
        .collect();
    assert_raced_exactly_once(&racers, 20_000, 200);
}

/// Four threads, each with its own connection, race on the same URLs, in both write modes.
fn threads_race(mode: WriteMode) {
    let Some(server) = RedisServer::start_or_skip("threads_race") else {
        return;
    };
    let layout = RedisSegmentStore::layout_for(10_000, 0.01).unwrap();
    let options = StoreOptions {
        mode,
        ..StoreOptions::new("threads")
    };
    RedisSegmentStore::create::<SipHash13>(&server.url(), options.clone(), layout, KEY, 10_000)
        .unwrap();
    let url = server.url();
    assert_each_url_admitted_once(|| {
        RedisSegmentStore::join::<SipHash13>(&url, options.clone()).unwrap()
    });
}

/// Four threads check and insert the same 10,000 URLs in the same order, in batches of 100
/// that they start together, each through the filter `open` gives it, taking turns to lead a
/// round ([`race_in_turns`]): they all admit some, no URL is admitted twice, and all but a
/// few (false positives) are admitted.
fn assert_each_url_admitted_once<F>(open: impl Fn() -> F + Sync)
where
    F: Borrow<SegmentedBloomFilter<SipHash13, RedisSegmentStore>>,
{
    const THREADS: usize = 4;
    let all = urls(10_000);
    let rounds = Rounds::new(THREADS);
    let led: Vec<std::sync::atomic::AtomicBool> =
        all.chunks(100).map(|_| Default::default()).collect();
    let racers: Vec<Admitted> = std::thread::scope(|s| {
        let racers: Vec<_> = (0..THREADS)
            .map(|me| {
                let (open, all, rounds, led) = (&open, &all, &rounds, &led);
                s.spawn(move || {
                    let owned = open();
                    race_in_turns(owned.borrow(), all, 100, me, rounds, led)
                })
            })
            .collect();
        racers.into_iter().map(|r| r.join().unwrap()).collect()
    });
    assert_raced_exactly_once(&racers, 10_000, 100);
}

#[test]
fn threads_race_bitfield() {
    threads_race(WriteMode::Bitfield);
}

#[test]
fn threads_race_optimistic() {
    threads_race(WriteMode::Optimistic);
}

/// Opening a prefix with other parameters, another key or another hash algorithm is a clear
/// error, and leaves the stored filter intact.
#[test]
fn parameter_mismatch_is_an_error() {
    let Some(server) = RedisServer::start_or_skip("parameter_mismatch") else {
        return;
    };
    let url = server.url();
    let filter = create(&url, StoreOptions::new("p"), 50_000);
    let layout = filter.layout();
    assert!(
        filter
            .try_check_and_insert("https://kept.example/")
            .unwrap()
    );

    let other_layout = Layout::new(
        layout.segments(),
        layout.segment_bits(),
        layout.hashes() + 1,
    )
    .unwrap();
    let err = RedisSegmentStore::create::<SipHash13>(
        &url,
        StoreOptions::new("p"),
        other_layout,
        KEY,
        50_000,
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Mismatch {
                field: "hashes",
                ..
            }
        ),
        "{err}"
    );

    // Same size and hash count, other placement: other bits, so it is refused too.
    let scattered = Layout::new(64, 4096, 4).unwrap();
    let split = Layout::with_placement(64, 4096, 4, Placement::Split).unwrap();
    RedisSegmentStore::create::<SipHash13>(&url, StoreOptions::new("q"), scattered, KEY, 1_000)
        .unwrap();
    let err =
        RedisSegmentStore::create::<SipHash13>(&url, StoreOptions::new("q"), split, KEY, 1_000)
            .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Mismatch {
                field: "placement",
                ..
            }
        ),
        "{err}"
    );

    let other_size = RedisSegmentStore::layout_for(60_000, 0.01).unwrap();
    let err = RedisSegmentStore::create::<SipHash13>(
        &url,
        StoreOptions::new("p"),
        other_size,
        KEY,
        60_000,
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Mismatch {
                field: "segments",
                ..
            }
        ),
        "{err}"
    );

    let err = RedisSegmentStore::create::<SipHash13>(
        &url,
        StoreOptions::new("p"),
        layout,
        HashKey::from_bytes([0; 16]),
        50_000,
    )
    .unwrap_err();
    assert!(matches!(err, Error::Mismatch { field: "key", .. }), "{err}");
    assert!(
        !err.to_string().contains("segment-store"),
        "the key must not leak into messages"
    );

    let err = RedisSegmentStore::join::<Xxh3>(&url, StoreOptions::new("p")).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Mismatch {
                field: "algorithm",
                ..
            }
        ),
        "{err}"
    );

    let packed = StoreOptions {
        segments_per_key: Some(1),
        ..StoreOptions::new("p")
    };
    let err = RedisSegmentStore::join::<SipHash13>(&url, packed).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Mismatch {
                field: "segments_per_key",
                ..
            }
        ),
        "{err}"
    );

    let same = RedisSegmentStore::join::<SipHash13>(&url, StoreOptions::new("p")).unwrap();
    assert!(!same.try_check_and_insert("https://kept.example/").unwrap());
}

/// Redis (fsync-always AOF) is killed while two clients insert batches and restarted 300 ms
/// later. The calls wait it out; with `Uncertain::AssumeNew` no URL is lost: each is admitted
/// at least once, and all are in the filter afterwards.
#[test]
fn restart_in_the_middle_of_batches_loses_no_url() {
    let Some(server) = RedisServer::start_durable_or_skip("restart_mid_batch") else {
        return;
    };
    let url = server.url();
    let layout = RedisSegmentStore::layout_for(20_000, 0.01).unwrap();
    RedisSegmentStore::create::<SipHash13>(&url, StoreOptions::new("crash"), layout, KEY, 20_000)
        .unwrap();
    let server = Arc::new(Mutex::new(server));
    let batches = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let admitted = Arc::new(Mutex::new(Vec::new()));
    let all = urls(20_000);
    std::thread::scope(|s| {
        {
            let (server, batches) = (server.clone(), batches.clone());
            s.spawn(move || {
                while batches.load(std::sync::atomic::Ordering::SeqCst) < 20 {
                    std::thread::sleep(Duration::from_millis(1));
                }
                let mut server = server.lock().unwrap();
                server.kill();
                std::thread::sleep(Duration::from_millis(300));
                server.restart().unwrap();
            });
        }
        for half in all.chunks(10_000) {
            let (url, batches, admitted) = (url.clone(), batches.clone(), admitted.clone());
            s.spawn(move || {
                let options = StoreOptions {
                    uncertain: Uncertain::AssumeNew,
                    ..StoreOptions::new("crash")
                };
                let filter = RedisSegmentStore::join::<SipHash13>(&url, options).unwrap();
                for batch in half.chunks(500) {
                    let new = filter
                        .try_check_and_insert_batch(batch)
                        .expect("waits out the restart");
                    batches.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    admitted.lock().unwrap().extend(
                        batch
                            .iter()
                            .zip(new)
                            .filter(|(_, n)| *n)
                            .map(|(u, _)| u.clone()),
                    );
                }
            });
        }
    });
    let admitted: HashSet<String> = admitted.lock().unwrap().iter().cloned().collect();
    let filter = RedisSegmentStore::join::<SipHash13>(&url, StoreOptions::new("crash")).unwrap();
    let present = filter.try_contains_batch(&all).unwrap();
    assert!(present.iter().all(|&p| p), "a URL's bits were lost");
    // Distinct URLs only reach "never admitted" by being false positives.
    let missed = all.iter().filter(|u| !admitted.contains(*u)).count();
    assert!(missed < 200, "{missed} URLs never admitted");
}

/// Redis -> memory -> snapshot file -> memory -> another Redis prefix: the same URLs are in,
/// with one data key and with segments spread over several keys (3 segments per key).
#[test]
fn snapshot_round_trip_through_a_file() {
    let Some(server) = RedisServer::start_or_skip("snapshot_round_trip") else {
        return;
    };
    let url = server.url();
    for (tag, segments_per_key) in [("one", None), ("three", Some(3))] {
        let options = |name: &str| StoreOptions {
            segments_per_key,
            ..StoreOptions::new(format!("{tag}-{name}"))
        };
        let shared = create(&url, options("a"), 5_000);
        let (layout, hasher) = (shared.layout(), SipHash13::new(KEY));
        let inserted = urls(3_000);
        shared.try_check_and_insert_batch(&inserted).unwrap();

        let memory = SegmentedBloomFilter::with_store(
            shared.store().to_memory().unwrap(),
            hasher.clone(),
            5_000,
        );
        assert!(inserted.iter().all(|u| memory.contains(u)));
        let mut file = Vec::new();
        memory.write_to(&mut file).unwrap();
        let restored: SegmentedBloomFilter = SegmentedBloomFilter::read_from(&file[..]).unwrap();
        assert_eq!(restored.count_ones(), memory.count_ones());

        let copy =
            RedisSegmentStore::create_filter(&url, options("b"), layout, hasher, 5_000).unwrap();
        assert!(copy.store().merge_from_memory(restored.store()).unwrap() > 0);
        assert_eq!(
            copy.store().to_memory().unwrap().count_ones(),
            memory.count_ones()
        );
        assert!(
            copy.try_contains_batch(&inserted)
                .unwrap()
                .iter()
                .all(|&p| p)
        );
        let fresh = urls(4_000)[3_000..].to_vec();
        let expected = restored.check_and_insert_batch(&fresh);
        assert_eq!(copy.try_check_and_insert_batch(&fresh).unwrap(), expected);
    }
}

/// One server for every case of the property test. A `static` is never dropped; the harness
/// kills the server when this test process ends.
fn shared_server() -> Option<&'static (RedisServer, String)> {
    static SERVER: std::sync::OnceLock<Option<(RedisServer, String)>> = std::sync::OnceLock::new();
    SERVER
        .get_or_init(|| {
            RedisServer::start_or_skip("agrees_with_memory").map(|s| {
                let url = s.url();
                (s, url)
            })
        })
        .as_ref()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Any batch, with repeats, gets the same answers from Redis as from the in-memory store
    /// (the segmented crate's reference), in both write modes; `contains` agrees afterwards.
    #[test]
    fn agrees_with_memory(
        items in prop::collection::vec(0u32..400, 1..300),
        optimistic: bool,
        split: bool,
        segments_per_key in 1u64..5,
        case in any::<u64>(),
    ) {
        let Some((_, url)) = shared_server() else { return Ok(()) };
        // A split layout of eight 64-bit lanes is the one the in-memory store computes with
        // vector instructions; Redis must set the very same bits from `Layout::offsets`.
        let layout = if split {
            Layout::with_placement(6, 512, 8, Placement::Split).unwrap()
        } else {
            Layout::new(6, 512, 5).unwrap()
        };
        let items: Vec<String> = items.iter().map(|i| format!("u{i}")).collect();
        let hasher = SipHash13::new(KEY);
        let options = StoreOptions {
            mode: if optimistic { WriteMode::Optimistic } else { WriteMode::Bitfield },
            segments_per_key: Some(segments_per_key),
            ..StoreOptions::new(format!("prop{case}"))
        };
        let redis = RedisSegmentStore::create_filter(url, options, layout, hasher.clone(), 100).unwrap();
        let memory = SegmentedBloomFilter::with_store(MemoryStore::new(layout).unwrap(), hasher, 100);
        let (first, second) = items.split_at(items.len() / 2);
        for part in [first, second] {
            prop_assert_eq!(redis.try_check_and_insert_batch(part).unwrap(), memory.check_and_insert_batch(part));
        }
        let probe: Vec<String> = (0..450).map(|i| format!("u{i}")).collect();
        prop_assert_eq!(redis.try_contains_batch(&probe).unwrap(), memory.contains_batch(&probe));
        let mut words = Vec::new();
        let mut reference = Vec::new();
        for segment in 0..layout.segments() {
            url_dedup_segmented::SegmentStore::read_segment(redis.store(), segment, &mut words).unwrap();
            memory.store().read_segment(segment, &mut reference).unwrap();
        }
        prop_assert_eq!(words, reference);
    }
}

/// The same store shared by four threads (one connection, whose batches they pipeline, and
/// one cache, learned and read concurrently) admits each URL once.
#[test]
fn threads_share_a_store_and_admit_each_url_once() {
    let Some(server) = RedisServer::start_or_skip("threads_share_a_store") else {
        return;
    };
    let filter = create(&server.url(), StoreOptions::new("shared"), 10_000);
    assert_each_url_admitted_once(|| &filter);
    assert!(filter.store().known_bits_stats().skipped > 0);
}
