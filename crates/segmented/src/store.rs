//! The `SegmentStore` trait: where segments live, and the one atomic step a store must offer.

use crate::{Layout, Probe};

/// Storage for the segments of a segmented filter.
///
/// The filter logic — which segment an item goes to and which bits inside it
/// ([`Layout::probe`], [`Layout::offsets`]) — is the same for every store; a store only keeps
/// segments and applies probes to them. Implementations: [`MemoryStore`](crate::MemoryStore)
/// here, a Redis store (one Redis string per segment, one `BITFIELD key SET u1 <offset> 1 ...`
/// per probe, one pipeline per batch) elsewhere.
///
/// # Contract
///
/// * **Atomic per probe.** [`check_and_insert`](Self::check_and_insert) tests and sets *all*
///   of a probe's bits as one indivisible step with respect to every other call on the same
///   segments, through any handle, from any thread or machine. Then, of all callers inserting
///   the same new item concurrently, exactly one sees a bit that was zero — the exactly-once
///   guarantee of the filter rests on this alone.
/// * **Batches in order.** Probes are applied in slice order, so a batch reports what the same
///   probes one call at a time would; a repeat inside a batch is new at most once.
/// * **One answer per probe**, appended to the output vector, `true` meaning "at least one bit
///   was zero" (for [`check_and_insert`](Self::check_and_insert): "new, and now inserted"; for
///   [`contains`](Self::contains): "some bit is zero", i.e. *absent*, is `false`).
/// * **Bit numbering** follows [`bit_order`](crate::bit_order): offset `o` of a segment is bit
///   `7 - o % 8` of byte `o / 8` (Redis's numbering); in `u64` words, word `o / 64` under mask
///   `1 << (63 - o % 64)`. [`read_segment`](Self::read_segment) and
///   [`merge_segment`](Self::merge_segment) exchange words in that convention, so segments
///   move between stores of different kinds unchanged.
/// * On error, answers already appended may be partial; bits set before the error stay set
///   (a Bloom filter only ever gains bits, so a retry is safe: at worst a retried new item is
///   reported as a duplicate, never the reverse).
///
/// # Examples
///
/// A toy store over one mutex, to show what an implementation does:
///
/// ```
/// use std::sync::Mutex;
/// use url_dedup_segmented::{bit_order, Layout, Probe, SegmentStore, SegmentedBloomFilter};
/// use url_dedup_bloom::{ItemHasher, SipHash13};
///
/// struct Locked {
///     layout: Layout,
///     words: Mutex<Vec<u64>>,
/// }
///
/// impl SegmentStore for Locked {
///     type Error = std::convert::Infallible;
///
///     fn layout(&self) -> Layout {
///         self.layout
///     }
///
///     fn check_and_insert(&self, probes: &[Probe], new: &mut Vec<bool>) -> Result<(), Self::Error> {
///         let mut words = self.words.lock().unwrap();
///         for &p in probes {
///             let base = (p.segment * self.layout.segment_words()) as usize;
///             let mut fresh = false;
///             for offset in self.layout.offsets(p) {
///                 let (w, mask) = bit_order::locate(offset);
///                 fresh |= words[base + w] & mask == 0;
///                 words[base + w] |= mask;
///             }
///             new.push(fresh);
///         }
///         Ok(())
///     }
///
///     fn contains(&self, probes: &[Probe], found: &mut Vec<bool>) -> Result<(), Self::Error> {
///         let words = self.words.lock().unwrap();
///         for &p in probes {
///             let base = (p.segment * self.layout.segment_words()) as usize;
///             found.push(self.layout.offsets(p).all(|o| {
///                 let (w, mask) = bit_order::locate(o);
///                 words[base + w] & mask != 0
///             }));
///         }
///         Ok(())
///     }
///
///     fn read_segment(&self, segment: u64, out: &mut Vec<u64>) -> Result<(), Self::Error> {
///         let n = self.layout.segment_words() as usize;
///         let start = segment as usize * n;
///         out.extend_from_slice(&self.words.lock().unwrap()[start..start + n]);
///         Ok(())
///     }
///
///     fn merge_segment(&self, segment: u64, data: &[u64]) -> Result<(), Self::Error> {
///         let n = self.layout.segment_words() as usize;
///         let mut words = self.words.lock().unwrap();
///         for (w, d) in words[segment as usize * n..][..n].iter_mut().zip(data) {
///             *w |= d;
///         }
///         Ok(())
///     }
/// }
///
/// let layout = Layout::for_items(1_000, 0.01, 512)?;
/// let store = Locked { layout, words: Mutex::new(vec![0; layout.words() as usize]) };
/// let filter = SegmentedBloomFilter::with_store(store, SipHash13::random(), 1_000);
/// assert!(filter.try_check_and_insert("https://example.com/")?);
/// assert!(!filter.try_check_and_insert("https://example.com/")?);
/// assert_eq!(filter.try_check_and_insert_batch(&["a", "b", "a"])?, [true, true, false]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait SegmentStore: Send + Sync {
    /// What can go wrong talking to the store (`Infallible` for memory).
    type Error: std::error::Error + Send + Sync + 'static;

    /// The geometry the store was created for.
    fn layout(&self) -> Layout;

    /// For each probe in order, atomically sets its bits and appends whether any was zero.
    ///
    /// # Errors
    ///
    /// The store's error; see the trait-level contract for what stays set.
    fn check_and_insert(&self, probes: &[Probe], new: &mut Vec<bool>) -> Result<(), Self::Error>;

    /// For each probe in order, appends whether all its bits are set.
    ///
    /// # Errors
    ///
    /// The store's error.
    fn contains(&self, probes: &[Probe], found: &mut Vec<bool>) -> Result<(), Self::Error>;

    /// Appends the `segment_words` words of `segment` to `out`.
    ///
    /// # Errors
    ///
    /// The store's error, or an out-of-range segment reported as one.
    fn read_segment(&self, segment: u64, out: &mut Vec<u64>) -> Result<(), Self::Error>;

    /// ORs `words` into `segment`: the union, so merging never loses an admitted item, and
    /// replaying a segment export over an older copy yields the newer one.
    ///
    /// # Errors
    ///
    /// The store's error, or an out-of-range segment reported as one.
    fn merge_segment(&self, segment: u64, words: &[u64]) -> Result<(), Self::Error>;
}
