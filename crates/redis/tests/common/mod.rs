//! The segment store tests' fixture: one fixed key, a filter at 1%, and a URL list.

use url_dedup_bloom::{HashKey, SipHash13};
use url_dedup_redis::{RedisSegmentStore, StoreOptions};
use url_dedup_segmented::SegmentedBloomFilter;

/// The tests' fixed hash key, so which URLs collide is the same in every run.
pub(crate) const KEY: HashKey = HashKey::from_bytes(*b"segment-store-ky");

/// A filter for `items` URLs at 1% under `options`, hashed with the tests' fixed key.
pub(crate) fn create(
    url: &str,
    options: StoreOptions,
    items: u64,
) -> SegmentedBloomFilter<SipHash13, RedisSegmentStore> {
    let layout = RedisSegmentStore::layout_for(items, 0.01).unwrap();
    RedisSegmentStore::create_filter(url, options, layout, SipHash13::new(KEY), items).unwrap()
}

/// `n` URLs over 97 hosts.
pub(crate) fn urls(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("https://site{}.example/path/{i}", i % 97))
        .collect()
}
