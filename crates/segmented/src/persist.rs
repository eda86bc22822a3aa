//! Snapshots, segment exports and incremental checkpoints of the in-memory filter, in the
//! workspace's shared format (`url_dedup_bloom::snapshot`).
//!
//! Both kinds share one parameter block:
//!
//! ```text
//! segments u64 | segment_bits u64 | shape u32 | hash algorithm u16 | key [u8; 16] | expected_items u64
//! ```
//!
//! `shape` holds the hash count in its low 16 bits and the [`Placement`] code in its high 16
//! bits; snapshots written before placements existed hold only the hash count, which reads as
//! scattered.
//!
//! * `Kind::SEGMENTED` (whole filter): then the payload is every word, segment after segment.
//! * `Kind::SEGMENTS` (some segments): the block continues with `count u64`, and the payload is
//!   `count` records of `[segment index, segment words...]`, indexes strictly increasing.
//!
//! Words are the in-memory words of [`bit_order`](crate::bit_order), stored little-endian like
//! every snapshot payload. Readers validate the header (checksum, kind, limits, geometry)
//! before allocating for the payload, read the payload into memory that grows only with the
//! data actually present, verify its checksum and every segment index, and only then build or
//! change a filter: damaged input yields an [`Error`] and leaves the filter as it was.

use std::io::{Read, Write};

use url_dedup_bloom::hash::{HashAlgorithm, HashKey, ItemHasher};
use url_dedup_bloom::snapshot::{self, Header, Kind, Limits, Params, SnapshotError};

use crate::{Error, Layout, MemoryStore, Placement, SegmentedBloomFilter};

struct Stored {
    layout: Layout,
    key: HashKey,
    expected_items: u64,
}

fn params<H: ItemHasher>(filter: &SegmentedBloomFilter<H, MemoryStore>) -> Params {
    let layout = filter.layout();
    let mut p = Params::new();
    p.put_u64(layout.segments())
        .put_u64(layout.segment_bits())
        .put_u32(layout.hashes() | u32::from(layout.placement().code()) << 16)
        .put_u16(H::ALGORITHM.0)
        .put_bytes(&filter.key().to_bytes())
        .put_u64(filter.expected_items());
    p
}

fn read_params<H: ItemHasher>(
    r: &mut url_dedup_bloom::snapshot::ParamsReader<'_>,
) -> Result<Stored, Error> {
    let segments = r.u64()?;
    let segment_bits = r.u64()?;
    let shape = r.u32()?;
    let algorithm = HashAlgorithm(r.u16()?);
    let key = HashKey::from_bytes(r.bytes()?);
    let expected_items = r.u64()?;
    if algorithm != H::ALGORITHM {
        return Err(Error::Incompatible(
            "written with a different hash algorithm",
        ));
    }
    let placement = Placement::from_code((shape >> 16) as u16)
        .ok_or(SnapshotError::InvalidParameters("unknown bit placement"))?;
    let layout = Layout::with_placement(segments, segment_bits, shape & 0xffff, placement)
        .map_err(|_| SnapshotError::InvalidParameters("invalid segmented filter geometry"))?;
    Ok(Stored {
        layout,
        key,
        expected_items,
    })
}

impl<H: ItemHasher> SegmentedBloomFilter<H, MemoryStore> {
    /// Writes the whole filter as a `SEGMENTED` snapshot.
    ///
    /// Each segment is copied under its lock, so other threads may keep inserting while the
    /// snapshot is written. The snapshot is also a **checkpoint base**: copying a segment
    /// clears its dirty bit, so the next [`checkpoint`](Self::checkpoint) holds exactly the
    /// segments changed after they were copied here. If writing fails, every segment is marked
    /// dirty again.
    ///
    /// # Errors
    ///
    /// [`Error::Snapshot`] when the writer fails.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_segmented::SegmentedBloomFilter;
    ///
    /// let f = SegmentedBloomFilter::builder().expected_items(1_000).build()?;
    /// f.insert("https://example.com/");
    /// let mut bytes = Vec::new();
    /// f.write_to(&mut bytes)?;
    /// let g: SegmentedBloomFilter = SegmentedBloomFilter::read_from(&bytes[..])?;
    /// assert!(g.contains("https://example.com/"));
    /// assert_eq!(g.key(), f.key());
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn write_to<W: Write>(&self, out: W) -> Result<(), Error> {
        let layout = self.layout();
        let words = SegmentWords::new(&self.store);
        let result = snapshot::write(
            out,
            Kind::SEGMENTED,
            params(self).as_bytes(),
            layout.words(),
            words,
        );
        if result.is_err() {
            self.store.mark_all_dirty();
        }
        Ok(result?)
    }

    /// Reads a filter written by [`write_to`](Self::write_to), accepting payloads up to the
    /// default [`Limits`] (64 GiB).
    ///
    /// # Errors
    ///
    /// [`Error::Snapshot`] for damaged, truncated or oversized input, [`Error::Incompatible`]
    /// for a snapshot of another hash algorithm, [`Error::OutOfMemory`].
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::SipHash13;
    /// use url_dedup_segmented::SegmentedBloomFilter;
    ///
    /// assert!(SegmentedBloomFilter::<SipHash13>::read_from(&b"garbage"[..]).is_err());
    /// ```
    pub fn read_from<R: Read>(input: R) -> Result<Self, Error> {
        Self::read_from_with_limits(input, Limits::default())
    }

    /// [`read_from`](Self::read_from) with explicit size limits, for input from the network.
    ///
    /// # Errors
    ///
    /// As [`read_from`](Self::read_from); [`SnapshotError::TooLarge`] beyond `limits`.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::{snapshot::Limits, SipHash13};
    /// use url_dedup_segmented::SegmentedBloomFilter;
    ///
    /// let f = SegmentedBloomFilter::builder().expected_items(100_000).build()?;
    /// let bytes = f.to_bytes();
    /// let tight = Limits { max_payload_bytes: 1024 };
    /// assert!(SegmentedBloomFilter::<SipHash13>::read_from_with_limits(&bytes[..], tight).is_err());
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn read_from_with_limits<R: Read>(mut input: R, limits: Limits) -> Result<Self, Error> {
        let header = snapshot::read_header(&mut input, Kind::SEGMENTED, limits)?;
        let mut r = header.params();
        let stored = read_params::<H>(&mut r)?;
        if header.payload_words() != stored.layout.words() {
            return Err(SnapshotError::InvalidParameters(
                "payload length does not match the filter size",
            )
            .into());
        }
        let mut store = MemoryStore::new(stored.layout)?;
        read_into_stores(&header, &mut input, &mut [&mut store])?;
        Ok(Self::with_store(
            store,
            H::from_key(stored.key),
            stored.expected_items,
        ))
    }

    /// The snapshot as bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_segmented::SegmentedBloomFilter;
    ///
    /// let f = SegmentedBloomFilter::builder().expected_items(100).build()?;
    /// let g: SegmentedBloomFilter = SegmentedBloomFilter::from_bytes(&f.to_bytes())?;
    /// assert_eq!(g.layout(), f.layout());
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.layout().words() as usize * 8 + 128);
        // Writing into a Vec cannot fail.
        let _ = self.write_to(&mut out);
        out
    }

    /// Reads a snapshot from bytes.
    ///
    /// # Errors
    ///
    /// As [`read_from`](Self::read_from).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::SipHash13;
    /// use url_dedup_segmented::SegmentedBloomFilter;
    ///
    /// let f = SegmentedBloomFilter::builder().expected_items(100).build()?;
    /// f.insert("a");
    /// let g = SegmentedBloomFilter::<SipHash13>::from_bytes(&f.to_bytes())?;
    /// assert!(g.contains("a"));
    /// assert!(SegmentedBloomFilter::<SipHash13>::from_bytes(&[0; 8]).is_err());
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        Self::read_from(bytes)
    }

    /// Writes the given segments as a `SEGMENTS` export: the unit for moving part of a filter
    /// to another node or backing it up. Dirty bits are not touched.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidParameters`] for an out-of-range or repeated index (indexes must be
    /// strictly increasing), [`Error::Snapshot`] when the writer fails.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_segmented::SegmentedBloomFilter;
    /// use url_dedup_bloom::HashKey;
    ///
    /// let key = HashKey::from_bytes([5; 16]);
    /// let a = SegmentedBloomFilter::builder().expected_items(1_000).key(key).build()?;
    /// let b = SegmentedBloomFilter::builder().expected_items(1_000).key(key).build()?;
    /// a.insert("https://example.com/");
    /// let segment = a.probe("https://example.com/").segment;
    ///
    /// let mut export = Vec::new();
    /// a.export_segments(&mut export, &[segment])?;
    /// assert_eq!(b.import_segments(&export[..])?, 1);
    /// assert!(b.contains("https://example.com/"));
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn export_segments<W: Write>(&self, out: W, segments: &[u64]) -> Result<(), Error> {
        if segments.windows(2).any(|w| w[0] >= w[1])
            || segments.last().is_some_and(|&s| s >= self.segments())
        {
            return Err(Error::InvalidParameters(
                "segment indexes must be strictly increasing and in range",
            ));
        }
        let mut payload = Vec::new();
        for &segment in segments {
            payload.push(segment);
            self.store.read_segment(segment, &mut payload)?;
        }
        self.write_segments(out, segments.len() as u64, &payload)
    }

    fn write_segments<W: Write>(&self, out: W, count: u64, payload: &[u64]) -> Result<(), Error> {
        let mut p = params(self);
        p.put_u64(count);
        snapshot::write(
            out,
            Kind::SEGMENTS,
            p.as_bytes(),
            payload.len() as u64,
            payload.iter().copied(),
        )?;
        Ok(())
    }

    /// Writes an **incremental checkpoint**: a `SEGMENTS` export of the segments changed since
    /// the last checkpoint or [`write_to`](Self::write_to), clearing their dirty bits. Returns
    /// how many segments it holds.
    ///
    /// Importing a base snapshot and then every checkpoint in order rebuilds the filter; other
    /// threads may keep inserting meanwhile (their changes land in the next checkpoint). If
    /// writing fails, the segments are marked dirty again, so nothing is lost from the next one.
    ///
    /// # Errors
    ///
    /// [`Error::Snapshot`] when the writer fails.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_segmented::SegmentedBloomFilter;
    ///
    /// let live = SegmentedBloomFilter::builder().expected_items(10_000).build()?;
    /// live.insert("a");
    /// let base = live.to_bytes(); // full snapshot, also the checkpoint base
    ///
    /// live.insert("b");
    /// let mut delta = Vec::new();
    /// assert_eq!(live.checkpoint(&mut delta)?, 1);
    ///
    /// let restored: SegmentedBloomFilter = SegmentedBloomFilter::from_bytes(&base)?;
    /// restored.import_segments(&delta[..])?;
    /// assert!(restored.contains("a") && restored.contains("b"));
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn checkpoint<W: Write>(&self, out: W) -> Result<u64, Error> {
        let dirty = self.store.dirty_segments();
        let mut payload =
            Vec::with_capacity(dirty.len() * (1 + self.layout().segment_words() as usize));
        for &segment in &dirty {
            payload.push(segment);
            self.store.take_segment(segment, &mut payload)?;
        }
        let result = self.write_segments(out, dirty.len() as u64, &payload);
        if result.is_err() {
            self.store.remark_dirty(dirty.iter().copied());
        }
        result.map(|()| dirty.len() as u64)
    }

    /// Merges (ORs) the segments of a `SEGMENTS` export or checkpoint into this filter;
    /// returns how many segments it held. Default [`Limits`].
    ///
    /// The whole input is read and validated first (checksums, geometry, hash algorithm and key,
    /// every index), so damaged input changes nothing.
    ///
    /// # Errors
    ///
    /// [`Error::Snapshot`] for damaged or oversized input, [`Error::Incompatible`] for an
    /// export of another filter (geometry, algorithm or key).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::HashKey;
    /// use url_dedup_segmented::SegmentedBloomFilter;
    ///
    /// let key = HashKey::from_bytes([6; 16]);
    /// let live = SegmentedBloomFilter::builder().expected_items(1_000).key(key).build()?;
    /// let copy = SegmentedBloomFilter::builder().expected_items(1_000).key(key).build()?;
    /// live.insert("https://example.com/");
    /// let mut delta = Vec::new();
    /// live.checkpoint(&mut delta)?;
    /// assert_eq!(copy.import_segments(&delta[..])?, 1);
    /// assert!(copy.contains("https://example.com/"));
    /// assert!(copy.import_segments(&delta[..10]).is_err());
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn import_segments<R: Read>(&self, input: R) -> Result<u64, Error> {
        self.import_segments_with_limits(input, Limits::default())
    }

    /// [`import_segments`](Self::import_segments) with explicit size limits.
    ///
    /// # Errors
    ///
    /// As [`import_segments`](Self::import_segments).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::snapshot::Limits;
    /// use url_dedup_segmented::SegmentedBloomFilter;
    ///
    /// let f = SegmentedBloomFilter::builder().expected_items(1_000).build()?;
    /// let limits = Limits { max_payload_bytes: 1 << 20 };
    /// assert!(f.import_segments_with_limits(&[0u8; 40][..], limits).is_err());
    /// # Ok::<(), url_dedup_segmented::Error>(())
    /// ```
    pub fn import_segments_with_limits<R: Read>(
        &self,
        mut input: R,
        limits: Limits,
    ) -> Result<u64, Error> {
        let header = snapshot::read_header(&mut input, Kind::SEGMENTS, limits)?;
        let count = self.check_export_header(&header)?;
        let payload = header.read_payload(&mut input)?;
        let record = 1 + self.layout().segment_words() as usize;
        let mut previous = None;
        for chunk in payload.chunks_exact(record) {
            let segment = chunk[0];
            if segment >= self.segments() || previous.is_some_and(|p| p >= segment) {
                return Err(SnapshotError::InvalidParameters(
                    "segment index out of range or out of order",
                )
                .into());
            }
            previous = Some(segment);
        }
        for chunk in payload.chunks_exact(record) {
            self.store.merge_segment(chunk[0], &chunk[1..])?;
        }
        Ok(count)
    }

    fn check_export_header(&self, header: &Header) -> Result<u64, Error> {
        let mut r = header.params();
        let stored = read_params::<H>(&mut r)?;
        let count = r.u64()?;
        if stored.layout != self.layout() {
            return Err(Error::Incompatible(
                "export of a filter of another geometry",
            ));
        }
        if stored.key != self.key() {
            return Err(Error::Incompatible(
                "export of a filter with another hash key",
            ));
        }
        let record = 1 + self.layout().segment_words();
        if count.checked_mul(record) != Some(header.payload_words()) || count > self.segments() {
            return Err(SnapshotError::InvalidParameters(
                "payload length does not match the segment count",
            )
            .into());
        }
        Ok(count)
    }
}

/// Streams a filter's words segment by segment, each copied under its lock (and marked clean).
/// Reads a snapshot's payload straight into fresh stores, one after the other, so a restore
/// holds the filter once rather than the payload and the filter side by side. The stores end
/// clean (they equal the snapshot). On error their contents are undefined: callers drop them.
pub(crate) fn read_into_stores<R: Read>(
    header: &Header,
    input: R,
    stores: &mut [&mut MemoryStore],
) -> Result<(), Error> {
    let expected: u64 = stores.iter().map(|s| s.layout().words()).sum();
    if header.payload_words() != expected {
        return Err(SnapshotError::InvalidParameters(
            "payload length does not match the filter size",
        )
        .into());
    }
    let mut targets = stores.iter_mut().flat_map(|s| s.words_mut().iter_mut());
    header.read_payload_with(input, |chunk| {
        // `chunk` leads the zip: a zip advances its first iterator before finding the second
        // exhausted, and a target word taken that way would be skipped.
        for (&word, target) in chunk.iter().zip(&mut targets) {
            *target.get_mut() = word;
        }
    })?;
    for store in stores.iter_mut() {
        store.clear_dirty();
    }
    Ok(())
}

/// The words of a store, segment after segment, each segment copied under its lock (and its
/// dirty bit cleared), as a snapshot payload.
pub(crate) struct SegmentWords<'a> {
    store: &'a MemoryStore,
    segments: u64,
    next: u64,
    buf: Vec<u64>,
    pos: usize,
}

impl<'a> SegmentWords<'a> {
    pub(crate) fn new(store: &'a MemoryStore) -> Self {
        let layout = store.layout();
        Self {
            store,
            segments: layout.segments(),
            next: 0,
            buf: Vec::with_capacity(layout.segment_words().min(1 << 16) as usize),
            pos: 0,
        }
    }
}

impl Iterator for SegmentWords<'_> {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        if self.pos == self.buf.len() {
            if self.next == self.segments {
                return None;
            }
            self.buf.clear();
            self.pos = 0;
            // The index is in range by construction; an error would end the stream early and
            // `snapshot::write` reports the short payload.
            self.store.take_segment(self.next, &mut self.buf).ok()?;
            self.next += 1;
        }
        let word = self.buf.get(self.pos).copied();
        self.pos += 1;
        word
    }
}
