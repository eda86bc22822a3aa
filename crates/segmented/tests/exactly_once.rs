//! Many threads racing on the same URLs at the same moment: every distinct URL is admitted
//! exactly once, except genuine false positives, which are identified and counted, and every
//! race is checked to have been one (each thread admitted URLs, interleaved with the others).

use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};

use url_dedup_bloom::{HashKey, SipHash13};
use url_dedup_segmented::{Layout, Placement, SegmentedBloomFilter};

fn urls(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("https://site{}.example.com/page/{i}?ref={}", i % 97, i * 7))
        .collect()
}

/// How a racer checks and inserts.
#[derive(Clone, Copy, Debug)]
enum Path {
    /// `check_and_insert`, one URL at a time.
    Single,
    /// `check_and_insert_batch`, 100 URLs at a time.
    Batch,
    /// `try_check_and_insert_batch`, the path every store shares, 64 URLs at a time.
    Generic,
}

/// URLs per round: each racer checks and inserts a round's URLs, then waits for the others.
const ROUND: usize = 100;

/// When one racer admitted URLs. The racers' shared clock is the round (or, in lockstep, the
/// URL): no racer starts round `r` before every racer has finished round `r - 1`.
#[derive(Debug, Default)]
struct Racer {
    admitted: usize,
    first: Option<usize>,
    last: usize,
}

impl Racer {
    fn admit(&mut self, round: usize) {
        self.admitted += 1;
        self.first.get_or_insert(round);
        self.last = round;
    }
}

/// The racers really raced: each admitted some URLs, and their admission windows (first to
/// last round) intersect, so the admissions were interleaved, not one racer's after another's.
/// Without a common start, most racers in these tests admitted nothing: one or two threads had
/// inserted every URL before the others were scheduled.
fn assert_overlapped(racers: &[Racer]) {
    for (r, racer) in racers.iter().enumerate() {
        assert!(racer.admitted > 0, "racer {r} admitted nothing: no race");
    }
    let latest_start = racers.iter().filter_map(|r| r.first).max().unwrap();
    let earliest_end = racers.iter().map(|r| r.last).min().unwrap();
    assert!(
        latest_start <= earliest_end,
        "the racers admitted one after another (a racer's first admission in round \
         {latest_start}, another's last in round {earliest_end})"
    );
}

/// Runs `threads` threads over `urls`, all in the same order, in rounds of [`ROUND`] URLs
/// that they start together (a barrier), so they race on the same URLs at the same moment.
/// Asserts that they raced ([`assert_overlapped`]) and returns the admissions per URL.
///
/// Each round has a leader, in turn: the others start once it has inserted the round's first
/// URL. On a busy machine the scheduler could otherwise let one racer win every round, and
/// "each racer admitted some" would hang on luck; the rest of the round is a free race.
fn admissions(
    filter: &SegmentedBloomFilter,
    urls: &[String],
    threads: usize,
    path: Path,
) -> Vec<u8> {
    let counts: Vec<AtomicU8> = urls.iter().map(|_| AtomicU8::new(0)).collect();
    // A plain barrier: between two waits a racer only calls the in-memory filter, which does
    // not fail, so no racer leaves the others waiting.
    let barrier = Barrier::new(threads);
    let led: Vec<AtomicBool> = urls.chunks(ROUND).map(|_| AtomicBool::new(false)).collect();
    let racers: Vec<Racer> = std::thread::scope(|s| {
        let racers: Vec<_> = (0..threads)
            .map(|me| {
                let (counts, barrier, led) = (&counts, &barrier, &led);
                s.spawn(move || {
                    let mut racer = Racer::default();
                    for (round, chunk) in urls.chunks(ROUND).enumerate() {
                        barrier.wait();
                        if round % threads == me {
                            if filter.check_and_insert(&chunk[0]) {
                                counts[round * ROUND].fetch_add(1, Ordering::Relaxed);
                                racer.admit(round);
                            }
                            led[round].store(true, Ordering::Release);
                        } else {
                            while !led[round].load(Ordering::Acquire) {
                                std::thread::yield_now();
                            }
                        }
                        let new: Vec<bool> = match path {
                            Path::Single => {
                                chunk.iter().map(|u| filter.check_and_insert(u)).collect()
                            }
                            Path::Batch => chunk
                                .chunks(100)
                                .flat_map(|b| filter.check_and_insert_batch(b))
                                .collect(),
                            Path::Generic => chunk
                                .chunks(64)
                                .flat_map(|b| filter.try_check_and_insert_batch(b).unwrap())
                                .collect(),
                        };
                        for (i, _) in new.iter().enumerate().filter(|(_, n)| **n) {
                            counts[round * ROUND + i].fetch_add(1, Ordering::Relaxed);
                            racer.admit(round);
                        }
                    }
                    racer
                })
            })
            .collect();
        racers.into_iter().map(|r| r.join().unwrap()).collect()
    });
    assert_overlapped(&racers);
    counts.into_iter().map(AtomicU8::into_inner).collect()
}

/// Every URL admitted at most once; every URL never admitted must be a genuine false positive:
/// the URLs that were admitted (it excluded) set all of its bits.
fn check(filter: &SegmentedBloomFilter, urls: &[String], counts: &[u8]) -> usize {
    let twice = counts.iter().filter(|&&c| c > 1).count();
    assert_eq!(twice, 0, "{twice} URLs admitted more than once");
    let reference = SegmentedBloomFilter::builder()
        .layout(filter.layout())
        .key(filter.key())
        .build()
        .unwrap();
    for (url, &c) in urls.iter().zip(counts) {
        if c == 1 {
            reference.insert(url);
        }
    }
    let mut false_positives = 0;
    for (url, &c) in urls.iter().zip(counts) {
        if c == 0 {
            assert!(
                reference.contains(url),
                "{url} was never admitted but is not a false positive"
            );
            false_positives += 1;
        }
    }
    false_positives
}

fn filter(items: u64, fpr: f64, segment_bits: u64) -> SegmentedBloomFilter {
    SegmentedBloomFilter::builder()
        .expected_items(items)
        .false_positive_rate(fpr)
        .segment_bits(segment_bits)
        .key(HashKey::from_bytes([11; 16]))
        .build()
        .unwrap()
}

#[test]
fn racing_threads_admit_each_url_once() {
    let urls = urls(60_000);
    for (threads, path) in [(2, Path::Single), (4, Path::Single), (3, Path::Batch)] {
        let f = filter(60_000, 0.01, 512);
        let counts = admissions(&f, &urls, threads, path);
        let fp = check(&f, &urls, &counts);
        // Expected ~0.5% on average over the fill; far below 2%.
        assert!(fp < urls.len() / 50, "{fp} false positives");
        let admitted = counts.iter().filter(|&&c| c == 1).count();
        assert_eq!(admitted + fp, urls.len());
    }
}

#[test]
fn exactly_once_holds_with_heavy_false_positive_pressure() {
    // An overfull filter: many genuine false positives, and every one must be explained.
    let urls = urls(30_000);
    let f = filter(5_000, 0.05, 512);
    let counts = admissions(&f, &urls, 4, Path::Single);
    let fp = check(&f, &urls, &counts);
    assert!(
        fp > 100,
        "an overfull filter should show false positives, saw {fp}"
    );
}

#[test]
fn exactly_once_holds_for_small_and_large_segments() {
    let urls = urls(20_000);
    for segment_bits in [64, 256, 1 << 16] {
        let f = filter(20_000, 0.01, segment_bits);
        let counts = admissions(&f, &urls, 4, Path::Single);
        check(&f, &urls, &counts);
    }
}

#[test]
fn split_segments_admit_each_url_once() {
    let urls = urls(40_000);
    for path in [Path::Single, Path::Batch] {
        let f = SegmentedBloomFilter::builder()
            .expected_items(40_000)
            .placement(Placement::Split)
            .key(HashKey::from_bytes([12; 16]))
            .build()
            .unwrap();
        let counts = admissions(&f, &urls, 4, path);
        let fp = check(&f, &urls, &counts);
        assert!(fp < urls.len() / 50, "{fp} false positives");
    }
}

#[test]
fn few_segments_many_threads() {
    // Eight segments: every insert contends on the same few locks.
    let f = SegmentedBloomFilter::builder()
        .layout(Layout::new(8, 1 << 15, 4).unwrap())
        .key(HashKey::from_bytes([2; 16]))
        .build()
        .unwrap();
    let urls = urls(24_000);
    let counts = admissions(&f, &urls, 6, Path::Single);
    check(&f, &urls, &counts);
}

#[test]
fn generic_store_path_is_exactly_once_too() {
    let urls = urls(20_000);
    let f = filter(20_000, 0.01, 512);
    let counts = admissions(&f, &urls, 3, Path::Generic);
    let fp = check(&f, &urls, &counts);
    let admitted = counts.iter().filter(|&&c| c == 1).count();
    assert_eq!(admitted + fp, urls.len());
    let _: &SegmentedBloomFilter<SipHash13> = &f;
}

#[test]
fn lockstep_rounds_on_the_same_new_items() {
    // Two threads meet at a spinning rendezvous before every URL and then insert it at the same
    // instant: the tightest race there is, and the one a filter setting its words with separate
    // `fetch_or`s loses (it double-admits here; checked by replacing the lock with that).
    let urls = urls(30_000);
    let f = filter(30_000, 0.01, 512);
    let arrived = [AtomicUsize::new(0), AtomicUsize::new(0)];
    let counts: Vec<AtomicU8> = urls.iter().map(|_| AtomicU8::new(0)).collect();
    let racers: Vec<Racer> = std::thread::scope(|s| {
        let racers: Vec<_> = (0..2)
            .map(|me| {
                let (arrived, counts, urls, f) = (&arrived, &counts, &urls, &f);
                s.spawn(move || {
                    let mut racer = Racer::default();
                    for (i, url) in urls.iter().enumerate() {
                        arrived[me].store(i + 1, Ordering::Release);
                        let mut spins = 0u32;
                        while arrived[1 - me].load(Ordering::Acquire) < i + 1 {
                            spins += 1;
                            if spins > 1_000 {
                                std::thread::yield_now();
                            } else {
                                std::hint::spin_loop();
                            }
                        }
                        if f.check_and_insert(url) {
                            counts[i].fetch_add(1, Ordering::Relaxed);
                            racer.admit(i);
                        }
                    }
                    racer
                })
            })
            .collect();
        racers.into_iter().map(|r| r.join().unwrap()).collect()
    });
    assert_overlapped(&racers);
    let counts: Vec<u8> = counts.into_iter().map(AtomicU8::into_inner).collect();
    check(&f, &urls, &counts);
}
