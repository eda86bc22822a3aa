//! Shared inputs for the url-dedup benchmarks: URL-like keys that look like a crawl's.
//!
//! Every bench target draws its keys from here, so figures across targets compare like with
//! like.
#![forbid(unsafe_code)]

pub mod near_pages;
pub mod peers;

/// `count` distinct URL-like keys of 48 to 90 bytes, deterministic for a given `seed`.
///
/// # Examples
///
/// ```
/// let urls = url_dedup_benches::urls(3, 1);
/// assert_eq!(urls.len(), 3);
/// assert!(urls.iter().all(|u| u.starts_with("https://")));
/// assert_eq!(urls, url_dedup_benches::urls(3, 1));
/// ```
pub fn urls(count: usize, seed: u64) -> Vec<String> {
    let mut state = seed ^ 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        // splitmix64: fast, deterministic, and good enough to vary URL parts.
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        url_dedup_bloom::hash::mix64(state)
    };
    const SECTIONS: [&str; 8] = [
        "news",
        "products",
        "blog/archive",
        "docs/api",
        "catalog/items",
        "forum/t",
        "wiki",
        "m",
    ];
    (0..count)
        .map(|i| {
            let r = next();
            let host = r % 5_000;
            let section = SECTIONS[(r >> 20) as usize % SECTIONS.len()];
            let page = next() % 100_000_000;
            let query = if r >> 40 & 1 == 1 {
                format!("?id={}&ref=list", next() % 1_000_000)
            } else {
                String::new()
            };
            format!("https://www.site{host}.example.com/{section}/{i}/page-{page}.html{query}")
        })
        .collect()
}

/// A crawl-like list: each line a new URL of [`urls`] or, with a given probability, an exact
/// repeat of an earlier line, so every tool under comparison finds the same duplicates.
/// Deterministic for a given seed: what `gen-urls` prints.
///
/// # Examples
///
/// ```
/// use url_dedup_benches::CrawlList;
///
/// let list = CrawlList::new(1_000, 0.5, 7);
/// let lines: Vec<&str> = list.lines().collect();
/// assert_eq!(lines.len(), 1_000);
/// let distinct: std::collections::HashSet<_> = lines.iter().collect();
/// assert_eq!(distinct.len(), list.distinct());
/// assert!((400..=600).contains(&list.distinct()));
/// assert!(CrawlList::new(1_000, 0.5, 7).lines().eq(list.lines()));
/// ```
#[derive(Debug)]
pub struct CrawlList {
    fresh: Vec<String>,
    /// Index into `fresh` of every line.
    order: Vec<usize>,
}

impl CrawlList {
    /// `count` lines, each a repeat with probability `duplicates`, from [`urls`]`(…, seed)`.
    ///
    /// # Examples
    ///
    /// See [`CrawlList`].
    pub fn new(count: usize, duplicates: f64, seed: u64) -> Self {
        let distinct = ((count as f64) * (1.0 - duplicates)).ceil() as usize;
        let fresh = urls(distinct, seed);
        let mut state = seed | 1;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let (mut emitted, threshold) = (0usize, (duplicates * u64::MAX as f64) as u64);
        let mut order = Vec::with_capacity(count);
        for _ in 0..count {
            let repeat = emitted > 0 && (next() < threshold || emitted == distinct);
            order.push(if repeat {
                (next() % emitted as u64) as usize
            } else {
                emitted += 1;
                emitted - 1
            });
        }
        Self { fresh, order }
    }

    /// Every line, in order.
    ///
    /// # Examples
    ///
    /// See [`CrawlList`].
    pub fn lines(&self) -> impl Iterator<Item = &str> {
        self.order.iter().map(|&i| self.fresh[i].as_str())
    }

    /// How many distinct lines the list has.
    ///
    /// # Examples
    ///
    /// See [`CrawlList`].
    pub fn distinct(&self) -> usize {
        self.order.iter().max().map_or(0, |&m| m + 1)
    }
}

/// Keys in one contiguous buffer, as a crawler holds URLs it read from a page or a file: what
/// the head-to-head bench times filters on. (A `Vec<String>` puts every key in its own heap
/// block, and reading a key then costs a pointer chase that says more about the allocator
/// than about the filter.)
///
/// # Examples
///
/// ```
/// let keys = url_dedup_benches::KeyBuffer::urls(3, 1);
/// assert_eq!(keys.as_slice().len(), 3);
/// assert_eq!(keys.as_slice(), url_dedup_benches::urls(3, 1));
/// ```
#[derive(Debug)]
pub struct KeyBuffer {
    text: String,
    ends: Vec<usize>,
}

impl KeyBuffer {
    /// The keys of [`urls`]`(count, seed)`, back to back.
    ///
    /// # Examples
    ///
    /// See [`KeyBuffer`].
    pub fn urls(count: usize, seed: u64) -> Self {
        let mut text = String::new();
        let mut ends = Vec::with_capacity(count);
        for url in urls(count, seed) {
            text.push_str(&url);
            ends.push(text.len());
        }
        Self { text, ends }
    }

    /// Every key, borrowed from the buffer, in order.
    ///
    /// # Examples
    ///
    /// See [`KeyBuffer`].
    pub fn as_slice(&self) -> Vec<&str> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(&self.ends)
            .map(|(start, &end)| &self.text[start..end])
            .collect()
    }
}

/// The item counts the filter benchmarks run at, as `(label, n)`: from 10,000 (a shard of a
/// partitioned filter, in L1 and L2) through 100,000 and 1,000,000 to 10,000,000 (far larger
/// than L2, larger than most L3 caches' share of one core).
///
/// Set `URL_DEDUP_BENCH_SIZES` to a comma-separated subset of the labels (`10K`, `100K`, `1M`,
/// `10M`) to run fewer; generating 10M keys takes a few seconds and about 1 GB.
///
/// # Examples
///
/// ```
/// let sizes = url_dedup_benches::sizes();
/// assert!(sizes.iter().all(|&(_, n)| n >= 10_000));
/// ```
pub fn sizes() -> Vec<(&'static str, usize)> {
    sizes_or(&["100K", "10M"])
}

/// Like [`sizes`], but when `URL_DEDUP_BENCH_SIZES` is unset only the labels in `default`.
///
/// # Examples
///
/// ```
/// // Unless URL_DEDUP_BENCH_SIZES says otherwise:
/// if std::env::var("URL_DEDUP_BENCH_SIZES").is_err() {
///     assert_eq!(url_dedup_benches::sizes_or(&["10M"]), [("10M", 10_000_000)]);
/// }
/// ```
pub fn sizes_or(default: &[&str]) -> Vec<(&'static str, usize)> {
    let all = [
        ("10K", 10_000),
        ("100K", 100_000),
        ("1M", 1_000_000),
        ("10M", 10_000_000),
    ];
    let wanted = std::env::var("URL_DEDUP_BENCH_SIZES")
        .map(|list| list.split(',').map(|w| w.trim().to_string()).collect())
        .unwrap_or_else(|_| default.iter().map(|w| w.to_string()).collect::<Vec<_>>());
    all.into_iter()
        .filter(|(label, _)| wanted.iter().any(|w| w == label))
        .collect()
}

/// Target false-positive rates from `URL_DEDUP_BENCH_RATES` (comma-separated), else `default`.
///
/// # Examples
///
/// ```
/// if std::env::var("URL_DEDUP_BENCH_RATES").is_err() {
///     assert_eq!(url_dedup_benches::rates(&[0.01]), [0.01]);
/// }
/// ```
pub fn rates(default: &[f64]) -> Vec<f64> {
    match std::env::var("URL_DEDUP_BENCH_RATES") {
        Ok(list) => list
            .split(',')
            .filter_map(|r| r.trim().parse().ok())
            .collect(),
        Err(_) => default.to_vec(),
    }
}

/// A count from environment variable `name`, else `default`.
///
/// # Examples
///
/// ```
/// assert_eq!(url_dedup_benches::env_usize("URL_DEDUP_BENCH_NO_SUCH_VARIABLE", 7), 7);
/// ```
pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// The latency of a random memory read, in ns: a chain of pointers followed through `mib`
/// mebibytes in a random cyclic order (one pointer per cache line, so no read is predicted or
/// prefetched), median of `rounds` rounds of 2^22 reads after one that warms the TLB. What a
/// filter's cache miss costs, and so what every speed ratio of a filter depends on.
///
/// # Examples
///
/// ```
/// let ns = url_dedup_benches::random_read_ns(1, 1);
/// assert!(ns > 0.0);
/// ```
pub fn random_read_ns(mib: usize, rounds: usize) -> f64 {
    let slots = ((mib << 20) / std::mem::size_of::<usize>() / 8).max(2);
    let mut order: Vec<usize> = (0..slots).collect();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    // Sattolo's shuffle: a single cycle through every line.
    for i in (1..slots).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        order.swap(i, (state % i as u64) as usize);
    }
    let mut next = vec![0usize; slots * 8];
    for (k, &line) in order.iter().enumerate() {
        next[line * 8] = order[(k + 1) % slots] * 8;
    }
    const STEPS: usize = 1 << 22;
    let mut at = 0;
    let times: Vec<f64> = (0..=rounds.max(1))
        .map(|_| {
            let start = std::time::Instant::now();
            for _ in 0..STEPS {
                at = next[at];
            }
            start.elapsed().as_nanos() as f64 / STEPS as f64
        })
        .skip(1)
        .collect();
    std::hint::black_box(at);
    median(times)
}

/// One line for a benchmark's report: the random read latency over 256 MiB
/// ([`random_read_ns`]) and the load average, which every ratio should be read with.
///
/// # Examples
///
/// ```no_run
/// println!("{}", url_dedup_benches::machine_state());
/// ```
pub fn machine_state() -> String {
    let load = std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into());
    format!(
        "random read latency over 256 MiB: {:.0} ns; load average: {load}",
        random_read_ns(256, 5)
    )
}

/// The median of `xs` (the mean of the middle two for an even count); NaN when empty.
///
/// # Examples
///
/// ```
/// assert_eq!(url_dedup_benches::median(vec![3.0, 1.0, 2.0]), 2.0);
/// assert_eq!(url_dedup_benches::median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
/// ```
pub fn median(mut xs: Vec<f64>) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.sort_by(f64::total_cmp);
    let mid = xs.len() / 2;
    if xs.len().is_multiple_of(2) {
        (xs[mid - 1] + xs[mid]) / 2.0
    } else {
        xs[mid]
    }
}
