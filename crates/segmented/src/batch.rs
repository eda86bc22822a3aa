//! How batches are cut.
//!
//! A batch is processed in chunks: hash every item of the chunk and touch its segment, then
//! test-and-set. The chunk must be long enough that the first segment has arrived by the time
//! the last one is requested (about 250 ns of memory latency against ~25 ns of SipHash per
//! item: 10 items), and short enough that its segments still sit in L1 when they are used and
//! the probes fit in a stack array. 32 measured best on the benchmark machine (see
//! [`docs/benchmarks.md`](https://github.com/url-dedup/url-dedup/blob/main/docs/benchmarks.md)); the outcome is identical for any value.

/// Items per chunk of a batch.
pub(crate) const CHUNK: usize = 32;
