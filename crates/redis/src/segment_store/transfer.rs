//! Moving whole segments between Redis and memory: snapshots out (`GETRANGE`), seeds and
//! merges in (`SETRANGE` into a scratch key, then `BITOP OR`).

use url_dedup_segmented::{MAX_SEGMENT_BITS, MemoryStore, Probe, bit_order};

use super::RedisSegmentStore;
use super::header::HEADER_BITS;
use super::meta::corrupt;
use crate::error::{Error, Result};

/// Bytes per `GETRANGE`/`SETRANGE` when moving whole segments, so no single reply is huge.
const TRANSFER_CHUNK: u64 = 1 << 20;
/// Largest segment the store reads back ([`MAX_SEGMENT_BITS`] / 8: a Redis string's limit).
const MAX_SEGMENT_BYTES: u64 = MAX_SEGMENT_BITS / 8;

impl RedisSegmentStore {
    /// Copies every segment into a new in-memory store (`GETRANGE` in 1 MiB pieces). Wrap it
    /// with [`SegmentedBloomFilter::with_store`](url_dedup_segmented::SegmentedBloomFilter::with_store)
    /// and the hasher to write a snapshot file.
    ///
    /// Segments are read one after another, not at one instant: bits set during the copy may
    /// or may not be in it, as with any online backup of a filter that only gains bits.
    ///
    /// # Errors
    ///
    /// [`Error::Segmented`] if the memory cannot be allocated; [`Error::Unavailable`] when Redis
    /// stays unreachable; [`Error::Corrupt`] if a segment key holds more than a segment.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("to_memory example") else { return Ok(()) };
    /// use url_dedup_bloom::{ItemHasher, SipHash13};
    /// use url_dedup_redis::{RedisSegmentStore, StoreOptions};
    /// use url_dedup_segmented::SegmentedBloomFilter;
    ///
    /// let layout = RedisSegmentStore::layout_for(1_000, 0.01)?;
    /// let hasher = SipHash13::random();
    /// let shared = RedisSegmentStore::create_filter(&server.url(), StoreOptions::new("b"), layout, hasher.clone(), 1_000)?;
    /// shared.try_check_and_insert("https://example.com/")?;
    ///
    /// let copy = SegmentedBloomFilter::with_store(shared.store().to_memory()?, hasher, 1_000);
    /// assert!(copy.contains("https://example.com/"));
    /// let mut file = Vec::new();
    /// copy.write_to(&mut file)?; // the workspace's checksummed snapshot format
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_memory(&self) -> Result<MemoryStore> {
        let memory = MemoryStore::new(self.meta.layout)?;
        let per_segment = self.meta.layout.segment_words() as usize;
        let mut words = Vec::new();
        // One key at a time: a key's segments are one contiguous byte range in Redis.
        for index in 0..self.data_keys() {
            let first = index * self.meta.segments_per_key;
            words.clear();
            self.read_segments(first, self.key_segments(index), &mut words)?;
            for (segment, part) in (first..).zip(words.chunks(per_segment)) {
                memory.merge_segment(segment, part)?;
            }
        }
        Ok(memory)
    }

    /// ORs every non-empty segment of `memory` into Redis (a union: nothing already admitted
    /// is forgotten). Returns how many segments were written. Use it to seed a shared filter
    /// from a snapshot file.
    ///
    /// # Errors
    ///
    /// [`Error::Mismatch`] when `memory` has another layout; [`Error::Unavailable`] when Redis
    /// stays unreachable.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("merge_from_memory example") else { return Ok(()) };
    /// use url_dedup_bloom::{ItemHasher, SipHash13};
    /// use url_dedup_redis::{RedisSegmentStore, StoreOptions};
    /// use url_dedup_segmented::{MemoryStore, SegmentedBloomFilter};
    ///
    /// let layout = RedisSegmentStore::layout_for(1_000, 0.01)?;
    /// let hasher = SipHash13::random();
    /// let local = SegmentedBloomFilter::with_store(MemoryStore::new(layout)?, hasher.clone(), 1_000);
    /// local.check_and_insert("https://seed.example/");
    ///
    /// let shared = RedisSegmentStore::create_filter(&server.url(), StoreOptions::new("s"), layout, hasher, 1_000)?;
    /// assert_eq!(shared.store().merge_from_memory(local.store())?, 1);
    /// assert!(!shared.try_check_and_insert("https://seed.example/")?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn merge_from_memory(&self, memory: &MemoryStore) -> Result<u64> {
        if memory.layout() != self.meta.layout {
            return Err(Error::Mismatch {
                field: "layout",
                stored: format!("{:?}", self.meta.layout),
                expected: format!("{:?}", memory.layout()),
            });
        }
        let per_segment = self.meta.layout.segment_words() as usize;
        let mut words = Vec::new();
        let mut written = 0;
        // One merge per key, not per segment: each merge writes a helper string as long as the
        // key and ORs the whole key, so per-segment merges cost a key's length each.
        for index in 0..self.data_keys() {
            let first = index * self.meta.segments_per_key;
            words.clear();
            for segment in first..first + self.key_segments(index) {
                memory.read_segment(segment, &mut words)?;
            }
            let nonzero = words
                .chunks(per_segment)
                .filter(|part| part.iter().any(|&w| w != 0))
                .count();
            if nonzero > 0 {
                self.merge_segments(first, &words)?;
                written += nonzero as u64;
            }
        }
        Ok(written)
    }

    /// The data key index and the key's first bit of `count` (at least 1) consecutive
    /// segments from `first`: an error unless all are in range and in one data key.
    pub(crate) fn span(&self, first: u64, count: u64) -> Result<(u64, u64)> {
        let last = first.saturating_add(count.max(1) - 1);
        self.check_probes(&[first, last].map(|segment| Probe { segment, seed: 0 }))?;
        let (index, base_bits) = self.locate(first);
        if self.locate(last).0 != index {
            return Err(Error::Segmented(
                url_dedup_segmented::Error::InvalidParameters("segments span two data keys"),
            ));
        }
        Ok((index, base_bits))
    }

    /// Appends the words of `count` consecutive segments from `first`, all in one data key,
    /// read with `GETRANGE` in chunks.
    pub(crate) fn read_segments(&self, first: u64, count: u64, out: &mut Vec<u64>) -> Result<()> {
        let (index, base_bits) = self.span(first, count)?;
        let bytes = (self.meta.layout.segment_bytes() * count).min(MAX_SEGMENT_BYTES);
        let data = self.read_region(index, (HEADER_BITS + base_bits) / 8, bytes)?;
        let mut words = vec![0u64; (self.meta.layout.segment_words() * count) as usize];
        bit_order::bytes_to_words(&data, &mut words)?;
        out.extend_from_slice(&words);
        Ok(())
    }

    /// `bytes` bytes of data key `index` from byte `start`, read with `GETRANGE` in chunks;
    /// fewer when the string is shorter (the rest reads as zeros, as in Redis).
    pub(crate) fn read_region(&self, index: u64, start: u64, bytes: u64) -> Result<Vec<u8>> {
        let key = self.data_key(index);
        let mut data = Vec::with_capacity(bytes.min(MAX_SEGMENT_BYTES) as usize);
        while (data.len() as u64) < bytes {
            let from = start + data.len() as u64;
            let to = (from + TRANSFER_CHUNK).min(start + bytes) - 1;
            let piece: Vec<u8> = self.with_key("read segment", key, |mut conn| {
                let cmd = redis::cmd("GETRANGE").arg(key).arg(from).arg(to).clone();
                async move { Ok(cmd.query_async(&mut conn).await?) }
            })?;
            if piece.is_empty() {
                break;
            }
            data.extend_from_slice(&piece);
        }
        if data.len() as u64 > bytes {
            return Err(corrupt(key, "GETRANGE returned more than asked"));
        }
        Ok(data)
    }

    /// ORs `words` into consecutive segments from `first`, all in one data key.
    pub(crate) fn merge_segments(&self, first: u64, words: &[u64]) -> Result<()> {
        let per_segment = self.meta.layout.segment_words();
        let count = (words.len() as u64).div_ceil(per_segment);
        let (index, base_bits) = self.span(first, count)?;
        self.merge_region(
            index,
            (HEADER_BITS + base_bits) / 8,
            &bit_order::words_to_bytes(words),
        )
    }

    /// ORs `bytes` into data key `index` from byte `start`, in one transaction: the bytes go
    /// to a helper key at the same offsets, then `BITOP OR`.
    pub(crate) fn merge_region(&self, index: u64, start: u64, bytes: &[u8]) -> Result<()> {
        let key = self.data_key(index);
        // The helper key shares the data key's hash tag, so the transaction stays in one slot.
        let scratch = format!("{key}:merge");
        let start = start as usize;
        self.with_key("merge segment", key, |mut conn| {
            let mut pipe = redis::pipe();
            pipe.atomic();
            pipe.cmd("DEL").arg(&scratch).ignore();
            for (n, piece) in bytes.chunks(TRANSFER_CHUNK as usize).enumerate() {
                let at = start + n * TRANSFER_CHUNK as usize;
                pipe.cmd("SETRANGE")
                    .arg(&scratch)
                    .arg(at)
                    .arg(piece)
                    .ignore();
            }
            // OR in place: bits already set stay set, so merging never loses an admission.
            pipe.cmd("BITOP")
                .arg("OR")
                .arg(key)
                .arg(key)
                .arg(&scratch)
                .ignore();
            pipe.cmd("DEL").arg(&scratch).ignore();
            async move { Ok(pipe.query_async::<()>(&mut conn).await?) }
        })
    }
}
