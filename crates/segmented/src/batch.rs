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

/// Runs `apply` on every item of a batch, in order, with the memory of one chunk requested
/// while the previous chunk is applied: `locate` turns an item into what `apply` needs (a
/// probe, a digest) and asks for its cache lines, so that a chunk's misses overlap instead of
/// following one another.
///
/// `filter` is `&mut &Filter` for the shared paths and `&mut Filter` for the exclusive ones;
/// `locate` only reads it, `apply` may write.
#[inline]
pub(crate) fn pipelined<F, T, L: Copy + Default>(
    filter: &mut F,
    items: &[T],
    locate: impl Fn(&F, &T) -> L,
    mut apply: impl FnMut(&mut F, L),
) {
    let locate_chunk = |filter: &F, chunk: &[T], out: &mut [L; CHUNK]| {
        for (located, item) in out.iter_mut().zip(chunk) {
            *located = locate(filter, item);
        }
        chunk.len().min(CHUNK)
    };
    let mut ready = [L::default(); CHUNK];
    let mut next = [L::default(); CHUNK];
    let mut chunks = items.chunks(CHUNK);
    let mut ready_len = match chunks.next() {
        Some(chunk) => locate_chunk(filter, chunk, &mut ready),
        None => return,
    };
    for chunk in chunks {
        let next_len = locate_chunk(filter, chunk, &mut next);
        ready[..ready_len].iter().for_each(|&l| apply(filter, l));
        std::mem::swap(&mut ready, &mut next);
        ready_len = next_len;
    }
    ready[..ready_len].iter().for_each(|&l| apply(filter, l));
}
