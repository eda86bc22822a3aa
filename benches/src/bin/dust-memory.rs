//! Memory per page of `--learn`, counted by the allocator: `dust-memory [ARTICLES] [N]`.
//!
//! Fingerprints every URL of a generated site of ARTICLES articles (default 7,500; seed 99,
//! as `benches/dust.sh`'s learning time) and counts the heap bytes of each structure the
//! crawler keeps per page: the SimHash index (`NearIndex`), the learner's evidence
//! (`Learner::add`), the crawler's maps of URLs (fingerprint by URL, the URLs of each host,
//! the contents of each host, the URL of each SimHash), and what the dispatcher keeps once the
//! host has confirmed rules (each URL fetched and its rewrite, `src/aliases.rs`). Then the index
//! alone with N (default 1,000,000) random fingerprints. Last, the learning time of the
//! crawler's schedule on that evidence: learned after 20 pages, then each time the pages grew
//! by a quarter or 16 duplicate fetches no learned rule rewrites came (1/64 of the pages, past
//! 1,024). Prints Markdown tables.

// Counting what the allocator holds takes a `GlobalAlloc`, whose methods are unsafe.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicI64, Ordering};

use url_dedup_fingerprint::{Fingerprinter, NearIndex, PageFingerprint, SimHash, feature_hash};
use url_dedup_rules::{LearnOptions, Learner, Rules};

/// The system allocator, counting the bytes held.
struct Counting;

static HELD: AtomicI64 = AtomicI64::new(0);

// SAFETY: every call is passed on to the system allocator unchanged; only a counter is kept.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        HELD.fetch_add(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        HELD.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        HELD.fetch_add(new_size as i64 - layout.size() as i64, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn held() -> i64 {
    HELD.load(Ordering::Relaxed)
}

/// The heap bytes `build` leaves held, with what it built (kept alive by the caller).
fn counted<T>(build: impl FnOnce() -> T) -> (T, i64) {
    let before = held();
    let t = build();
    (t, held() - before)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let articles: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(7500);
    let n: u64 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);

    let site = url_dedup_rules::testing::Site::generate(99, articles);
    let fingerprinter = Fingerprinter::new();
    let pages: Vec<(String, PageFingerprint)> = site
        .urls()
        .iter()
        .filter_map(|u| {
            let html = site.html(&u.url, 1)?;
            Some((u.url.clone(), fingerprinter.fingerprint(html.as_bytes())))
        })
        .collect();
    let urls = pages.len() as f64;

    let (index, index_bytes) = counted(|| {
        let mut index = NearIndex::new(3).expect("3 bits of 64");
        for (_, fp) in &pages {
            index.check_and_insert(fp.simhash);
        }
        index
    });
    let fingerprints = index.len() as f64;
    let (learner, learner_bytes) = counted(|| {
        let mut learner = Learner::new(LearnOptions::default());
        for (url, fp) in &pages {
            learner
                .add(url, fp.exact.0, Some(fp.simhash.0))
                .expect("absolute URLs");
        }
        learner
    });
    // The crawler's own maps (examples/crawler/src/dust.rs): the fingerprint of each URL
    // fetched, the URLs of each host in the order fetched, its contents, and a URL for each
    // SimHash.
    let (maps, maps_bytes) = counted(|| {
        let mut by_url: HashMap<String, PageFingerprint> = HashMap::new();
        let mut of_host: Vec<String> = Vec::new();
        let mut contents: HashSet<u128> = HashSet::new();
        let mut near_urls: HashMap<u64, String> = HashMap::new();
        for (url, fp) in &pages {
            by_url.insert(url.clone(), *fp);
            of_host.push(url.clone());
            contents.insert(fp.exact.0);
            near_urls.entry(fp.simhash.0).or_insert_with(|| url.clone());
        }
        (by_url, of_host, contents, near_urls)
    });
    // The dispatcher's set (examples/crawler/src/aliases.rs), with the site's rules confirmed.
    let rules = Rules::new(&learner.learn().rules);
    let (aliases, aliases_bytes) = counted(|| {
        let mut keys: HashSet<String> = HashSet::new();
        for (url, _) in &pages {
            keys.insert(url.clone());
            if let std::borrow::Cow::Owned(k) = rules.apply(url) {
                keys.insert(k);
            }
        }
        keys
    });
    let mean_url = pages.iter().map(|(u, _)| u.len()).sum::<usize>() as f64 / urls;

    let (big, big_bytes) = counted(|| {
        let mut index = NearIndex::new(3).expect("3 bits of 64");
        for i in 0..n {
            index.insert(SimHash(feature_hash(i)));
        }
        index
    });

    println!(
        "{} URLs of a generated site ({} articles), mean URL {mean_url:.0} bytes; {} distinct SimHashes:",
        pages.len(),
        articles,
        index.len()
    );
    println!();
    println!("| structure | heap bytes | per URL fetched | per fingerprint |");
    println!("|---|---|---|---|");
    let row = |name: &str, bytes: i64, per_fp: bool| {
        println!(
            "| {name} | {bytes} | {:.0} | {} |",
            bytes as f64 / urls,
            match per_fp {
                true => format!("{:.0}", bytes as f64 / fingerprints),
                false => String::new(),
            }
        );
    };
    row("`NearIndex` (4 tables, k = 3)", index_bytes, true);
    row("`Learner` evidence", learner_bytes, false);
    row(
        "the crawler's maps (fingerprint by URL, URLs by host, URL by SimHash)",
        maps_bytes,
        false,
    );
    row(
        "the dispatcher's fetched URLs and rewrites, once a host has confirmed rules",
        aliases_bytes,
        false,
    );
    row(
        "all of `--learn`",
        index_bytes + learner_bytes + maps_bytes + aliases_bytes,
        false,
    );
    println!();
    println!(
        "`NearIndex` with {n} random fingerprints: {big_bytes} heap bytes, {:.1} per fingerprint \
         (its own count, `memory_bytes`: {:.1})",
        big_bytes as f64 / big.len() as f64,
        big.memory_bytes() as f64 / big.len() as f64
    );
    drop((index, learner, maps, aliases, big));

    // The crawler's schedule (examples/crawler/src/dust.rs: LEARN_AFTER, a quarter more, or
    // DUPLICATES_TO_LEARN duplicate fetches).
    let mut learner = Learner::new(LearnOptions::default());
    let (mut next, mut rounds, mut total) = (20usize, 0, std::time::Duration::ZERO);
    let mut last = std::time::Duration::ZERO;
    let (mut seen, mut duplicates) = (HashSet::new(), 0usize);
    let mut rules = Rules::default();
    for (i, (url, fp)) in pages.iter().enumerate() {
        learner
            .add(url, fp.exact.0, Some(fp.simhash.0))
            .expect("absolute URLs");
        // Duplicates no learned rule rewrites.
        let explained = matches!(rules.apply(url), std::borrow::Cow::Owned(_));
        if !seen.insert(fp.exact.0) && !explained {
            duplicates += 1;
        }
        let many = i + 1 >= 20 && duplicates >= 16usize.max((i + 1) / 64);
        if i + 1 >= next || many || i + 1 == pages.len() {
            next = ((i + 1) * 5 / 4).max(i + 2);
            duplicates = 0;
            let begin = std::time::Instant::now();
            let learned = std::hint::black_box(learner.learn());
            last = begin.elapsed();
            rules = Rules::new(&learned.rules);
            total += last;
            rounds += 1;
        }
    }
    let distinct: std::collections::HashSet<u128> = pages.iter().map(|(_, f)| f.exact.0).collect();
    let per10k = |d: std::time::Duration| d.as_secs_f64() * 10_000.0 / distinct.len() as f64;
    println!();
    println!(
        "Learning {} URLs of {} pages: the last learning {:.2} s ({:.2} s per 10,000 pages); \
         the crawler's {rounds} learnings {:.2} s ({:.2} s per 10,000 pages), on its own thread",
        pages.len(),
        distinct.len(),
        last.as_secs_f64(),
        per10k(last),
        total.as_secs_f64(),
        per10k(total)
    );
}
