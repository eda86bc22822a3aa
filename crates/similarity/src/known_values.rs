//! Feature values a filter has already found recorded, remembered so that testing them again
//! costs one small-table lookup instead of building and testing their bits.
//!
//! Most feature values a crawl sees are old: a site's name, its depths, directories, path
//! templates and extensions come back on nearly every URL of the site, and only one or two
//! values of a new URL (its page, its query) are new. Testing an old value at the rates a
//! crawler uses (79 bits per value at one in a billion) means computing every offset into
//! word masks and comparing a block: most of the filter's own work per URL.
//!
//! A value's bits depend only on where its block is and on its seed ([`Located`]), and a
//! filter's bits are only ever added, never removed (except by [`clear`], which forgets this
//! table too). So once a value's bits were all found set, they stay set, and the value can be
//! answered "seen" from a table holding its exact block and seed: the verdict and the bits
//! are the same as testing it. A value enters the table the second time it is met (when its
//! test finds it set), not when it is first recorded, so that the many values seen only once
//! do not evict the few that recur.
//!
//! The table is direct-mapped (one slot per hash of the value, the newest value wins) and
//! small next to the filter: a slot for every eight blocks, at most 32,768 slots (512 KiB), and
//! only in filters whose values set [`REMEMBER_FROM_HASHES`] bits or more (rates of about 10^-4
//! and below), where a test costs more than a lookup.
//!
//! [`clear`]: crate::SimilarityFilter::clear

use url_dedup_bloom::hash::reduce;

use crate::filter::Located;

/// Most slots in a table: 512 KiB, within a core's second-level cache on current CPUs.
const MAX_SLOTS: usize = 1 << 15;

/// Fewest slots in a table with any.
const MIN_SLOTS: usize = 64;

/// Fewest bits per value for which a filter keeps a table. Testing a value of a few bits (six
/// at 1%) costs little more than the lookup: on the similarity bench's in-cache row (1%, a
/// generated list whose sites recur too far apart for a table to catch) a table cost 11%; at
/// 10^-9 (79 bits) it saved 21% on the real lists and cost nothing on the generated list
/// (docs/benchmarks.md). 12 bits is about 10^-4; rates between were timed only in trial runs.
pub(crate) const REMEMBER_FROM_HASHES: u32 = 12;

/// Blocks of the filter per slot of its table.
const BLOCKS_PER_SLOT: usize = 8;

/// The values of one filter known to be recorded in it.
#[derive(Clone, Debug, Default)]
pub(crate) struct KnownValues {
    /// A value found set, as its block's first word plus one and its seed; `[0, 0]` is an
    /// empty slot (no block starts at word `usize::MAX`). Sixteen bytes, four to a line.
    slots: Vec<[u64; 2]>,
}

impl KnownValues {
    /// A table for a filter of `blocks` blocks whose values set `hashes` bits each; empty
    /// (remembering nothing) when `blocks` is zero or `hashes` below [`REMEMBER_FROM_HASHES`].
    pub(crate) fn for_blocks(blocks: usize, hashes: u32) -> Self {
        let slots = match blocks {
            0 => 0,
            _ if hashes < REMEMBER_FROM_HASHES => 0,
            _ => (blocks / BLOCKS_PER_SLOT).clamp(MIN_SLOTS, MAX_SLOTS),
        };
        Self {
            slots: vec![[0; 2]; slots],
        }
    }

    /// The slot of `at`: its seed (already a uniform hash) with its block folded into the high
    /// bits, so that two features' values with one seed land apart, reduced to the table by the
    /// workspace's multiply-shift.
    #[inline(always)]
    fn slot(&self, at: &Located) -> usize {
        reduce(
            at.seed ^ (at.word as u64).rotate_left(32),
            self.slots.len() as u64,
        ) as usize
    }

    /// Whether the table remembers nothing (its filter's tests are as cheap as a lookup):
    /// callers then skip it altogether.
    #[inline(always)]
    pub(crate) fn is_off(&self) -> bool {
        self.slots.is_empty()
    }

    /// Whether `at`'s bits were found all set before.
    #[inline(always)]
    pub(crate) fn contains(&self, at: &Located) -> bool {
        self.slots.get(self.slot(at)) == Some(&entry(at))
    }

    /// Remembers that `at`'s bits are all set.
    #[inline(always)]
    pub(crate) fn insert(&mut self, at: Located) {
        #[cfg(test)]
        if tests::FORGETFUL.with(std::cell::Cell::get) {
            return;
        }
        let slot = self.slot(&at);
        if let Some(known) = self.slots.get_mut(slot) {
            *known = entry(&at);
        }
    }

    /// Bytes the table holds.
    pub(crate) fn memory_bytes(&self) -> u64 {
        (self.slots.len() * size_of::<[u64; 2]>()) as u64
    }

    /// Forgets every value (the filter's bits were cleared).
    pub(crate) fn clear(&mut self) {
        self.slots.fill([0; 2]);
    }
}

/// The slot contents for `at`.
#[inline(always)]
fn entry(at: &Located) -> [u64; 2] {
    [(at.word as u64).wrapping_add(1), at.seed]
}

#[cfg(test)]
pub(crate) mod tests {
    use proptest::prelude::*;
    use url_dedup_bloom::HashKey;

    use super::*;
    use crate::{FeatureHash, GrowingSimilarityFilter, RegionSizing, SimilarityFilter, Verdict};

    thread_local! {
        /// Set while a test runs filters that remember nothing, to compare against.
        pub(crate) static FORGETFUL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    /// What the filters built by `build` decide and record for `urls` (cleared before URL
    /// `clear_at`), in single calls and in batches of 7, with the table on or off.
    fn run(
        forgetful: bool,
        urls: &[String],
        clear_at: usize,
        expected: u64,
    ) -> (
        Vec<Verdict>,
        SimilarityFilter,
        GrowingSimilarityFilter,
        Vec<Verdict>,
        SimilarityFilter,
    ) {
        FORGETFUL.with(|f| f.set(forgetful));
        let build = || {
            SimilarityFilter::builder()
                .expected_items(expected)
                .false_positive_rate(1e-6)
                .hash_key(HashKey::from_bytes([3; 16]))
                .region_sizing(RegionSizing::Blocked)
                .feature_hash(FeatureHash::SipHash13)
                .build()
                .unwrap()
        };
        let (mut plain, mut growing) = (build(), GrowingSimilarityFilter::new(build()));
        let mut verdicts = Vec::new();
        for (i, url) in urls.iter().enumerate() {
            if i == clear_at {
                plain.clear();
            }
            verdicts.push(plain.check_and_insert(url));
            verdicts.push(growing.check_and_insert(url));
        }
        let mut batched = build();
        let mut batch_verdicts = Vec::new();
        for chunk in urls.chunks(7) {
            batch_verdicts.extend(batched.check_and_insert_batch(chunk));
            batch_verdicts.push(plain.check(&chunk[0]));
        }
        FORGETFUL.with(|f| f.set(false));
        (verdicts, plain, growing, batch_verdicts, batched)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Remembering values found set changes no verdict and no bit, in plain and growing
        /// filters, single calls and batches, across a clear.
        #[test]
        fn remembered_values_decide_as_tested_ones(
            items in proptest::collection::vec(0u64..120, 0..300),
            clear_at in 0usize..300,
            expected in 1u64..60,
        ) {
            // Few sites and directories, so most values recur and are remembered.
            let urls: Vec<String> = items
                .iter()
                .map(|i| format!("https://s{}.example/d{}/p{}.html?id={}", i % 3, i % 5, i / 2, i % 4))
                .collect();
            let remembering = run(false, &urls, clear_at, expected);
            let forgetful = run(true, &urls, clear_at, expected);
            prop_assert_eq!(&remembering.0, &forgetful.0);
            prop_assert!(remembering.1 == forgetful.1);
            prop_assert!(remembering.2 == forgetful.2);
            prop_assert_eq!(&remembering.3, &forgetful.3);
            prop_assert!(remembering.4 == forgetful.4);
        }
    }

    #[test]
    fn a_value_is_known_once_inserted_until_cleared_or_evicted() {
        let mut known = KnownValues::for_blocks(1 << 20, REMEMBER_FROM_HASHES);
        let at = Located { word: 8, seed: 42 };
        assert!(!known.contains(&at));
        known.insert(at);
        assert!(known.contains(&at));
        // Same seed in another block, another seed in the same block: other values.
        assert!(!known.contains(&Located { word: 16, seed: 42 }));
        assert!(!known.contains(&Located { word: 8, seed: 43 }));
        known.clear();
        assert!(!known.contains(&at));
    }

    #[test]
    fn a_filter_without_blocks_remembers_nothing() {
        let mut known = KnownValues::for_blocks(0, REMEMBER_FROM_HASHES);
        let at = Located { word: 0, seed: 1 };
        known.insert(at);
        assert!(!known.contains(&at));
    }

    #[test]
    fn tables_are_sized_from_the_filter_within_bounds() {
        let hashes = REMEMBER_FROM_HASHES;
        assert_eq!(KnownValues::for_blocks(1, hashes).slots.len(), MIN_SLOTS);
        assert_eq!(KnownValues::for_blocks(8 * 1000, hashes).slots.len(), 1000);
        assert_eq!(
            KnownValues::for_blocks(1 << 30, hashes).slots.len(),
            MAX_SLOTS
        );
        assert!(
            KnownValues::for_blocks(1 << 30, hashes - 1)
                .slots
                .is_empty()
        );
    }
}
