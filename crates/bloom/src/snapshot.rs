//! The binary snapshot format shared by every persistent structure in the workspace.
//!
//! ```text
//! offset  size  field
//! 0       8     magic "URLDEDUP"
//! 8       2     format version (little-endian u16), currently 1
//! 10      2     kind: which structure follows (Kind)
//! 12      4     length P of the parameter block, at most MAX_PARAMS_LEN
//! 16      P     parameters, little-endian fields defined by the kind
//! 16+P    8     payload length W in 64-bit words
//! 24+P    8     XXH3-64 of bytes 0 .. 24+P (the header checksum)
//! 32+P    8W    payload: W little-endian u64 words
//! 32+P+8W 8     XXH3-64 of the payload bytes
//! ```
//!
//! The header is checked before anything is allocated for the payload, and the payload is read
//! in bounded chunks, so a snapshot that claims 2^60 bits costs one error, not an allocation
//! failure: either the claimed size exceeds the caller's [`Limits`], or the input ends long
//! before the claim is met. Each kind additionally checks that the payload length matches its
//! parameters. The payload is bulk words, not per-element encoding, so writing and reading run
//! at memory speed.
//!
//! # Examples
//!
//! ```
//! use url_dedup_bloom::snapshot::{self, Kind, Limits, Params};
//!
//! let mut params = Params::new();
//! params.put_u64(1234).put_u32(7);
//! let words = [1u64, 2, 3];
//!
//! let mut buf = Vec::new();
//! snapshot::write(&mut buf, Kind::BLOOM, params.as_bytes(), words.len() as u64, words.iter().copied())?;
//!
//! let mut input = &buf[..];
//! let header = snapshot::read_header(&mut input, Kind::BLOOM, Limits::default())?;
//! let mut p = header.params();
//! assert_eq!((p.u64()?, p.u32()?), (1234, 7));
//! let payload = header.read_payload(&mut input)?;
//! assert_eq!(payload, words);
//! # Ok::<(), url_dedup_bloom::snapshot::SnapshotError>(())
//! ```

use std::io::{self, Read, Write};

use xxhash_rust::xxh3::{Xxh3, xxh3_64};

/// The eight bytes every snapshot starts with.
pub const MAGIC: [u8; 8] = *b"URLDEDUP";
/// The format version this crate writes and reads.
pub const FORMAT_VERSION: u16 = 1;
/// The largest parameter block a reader accepts.
pub const MAX_PARAMS_LEN: u32 = 64 * 1024;

const CHUNK_WORDS: usize = 8 * 1024;

/// What went wrong reading or writing a snapshot.
///
/// # Examples
///
/// ```
/// use url_dedup_bloom::snapshot::{self, Kind, Limits, SnapshotError};
///
/// let err = snapshot::read_header(&mut &b"not a snapshot"[..], Kind::BLOOM, Limits::default());
/// assert!(matches!(err, Err(SnapshotError::Truncated) | Err(SnapshotError::BadMagic)));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// The underlying reader or writer failed.
    #[error("snapshot I/O failed: {0}")]
    Io(#[from] io::Error),
    /// The input does not start with [`MAGIC`].
    #[error("not a url-dedup snapshot (bad magic bytes)")]
    BadMagic,
    /// The snapshot was written by a newer or unknown format version.
    #[error("unsupported snapshot format version {found} (this build reads version {supported})")]
    UnsupportedVersion {
        /// The version in the snapshot.
        found: u16,
        /// The version this build reads.
        supported: u16,
    },
    /// The snapshot holds another kind of structure.
    #[error("snapshot holds a {found} but a {expected} was expected")]
    WrongKind {
        /// The kind the caller asked for.
        expected: Kind,
        /// The kind in the snapshot.
        found: Kind,
    },
    /// The input ended before the snapshot did.
    #[error("snapshot is truncated")]
    Truncated,
    /// The header's checksum does not match: the header is damaged.
    #[error("snapshot header checksum mismatch (damaged header)")]
    HeaderChecksum,
    /// The payload's checksum does not match: the data is damaged.
    #[error("snapshot payload checksum mismatch (damaged data)")]
    PayloadChecksum,
    /// The snapshot claims more data than the caller allows.
    #[error("snapshot claims {claimed} bytes, more than the limit of {limit} bytes")]
    TooLarge {
        /// Bytes the snapshot claims.
        claimed: u64,
        /// The caller's limit.
        limit: u64,
    },
    /// The parameters are inconsistent with each other or with the payload.
    #[error("snapshot parameters are invalid: {0}")]
    InvalidParameters(&'static str),
}

/// Identifies the structure a snapshot holds.
///
/// # Examples
///
/// ```
/// use url_dedup_bloom::snapshot::Kind;
///
/// assert_eq!(Kind::BLOOM.to_string(), "classic Bloom filter");
/// assert_eq!(Kind(77).to_string(), "structure of kind 77");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Kind(pub u16);

impl Kind {
    /// A classic Bloom filter (`url-dedup-bloom`), plain or atomic.
    pub const BLOOM: Self = Self(1);
    /// A whole segmented Bloom filter (`url-dedup-segmented`).
    pub const SEGMENTED: Self = Self(2);
    /// One segment, or a set of segments, of a segmented filter (`url-dedup-segmented`).
    pub const SEGMENTS: Self = Self(3);
    /// A virtual-node partition table (`url-dedup-partition`).
    pub const PARTITION_TABLE: Self = Self(4);
    /// A feature-similarity filter (`url-dedup-similarity`).
    pub const SIMILARITY: Self = Self(5);
    /// The whole state of a `url-dedup` facade.
    pub const DEDUP_STATE: Self = Self(6);
    /// A growing segmented filter, all its layers (`url-dedup-segmented`).
    pub const GROWING: Self = Self(7);
    /// A set of keyed 128-bit fingerprints (the `url-dedup` facade's exact mode).
    pub const FINGERPRINTS: Self = Self(8);
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match *self {
            Self::BLOOM => "classic Bloom filter",
            Self::SEGMENTED => "segmented Bloom filter",
            Self::SEGMENTS => "segment export",
            Self::PARTITION_TABLE => "partition table",
            Self::SIMILARITY => "similarity filter",
            Self::DEDUP_STATE => "url-dedup state",
            Self::GROWING => "growing segmented filter",
            Self::FINGERPRINTS => "fingerprint set",
            Kind(other) => return write!(f, "structure of kind {other}"),
        };
        f.write_str(name)
    }
}

/// Bounds on what a reader accepts.
///
/// # Examples
///
/// ```
/// use url_dedup_bloom::snapshot::Limits;
///
/// let small = Limits { max_payload_bytes: 1 << 20 };
/// assert!(small.max_payload_bytes < Limits::default().max_payload_bytes);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The largest payload, in bytes, a reader will accept. The default, 64 GiB, is above any
    /// filter one machine holds in memory and far below what a lying header can claim.
    pub max_payload_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_payload_bytes: 64 << 30,
        }
    }
}

/// A little-endian parameter block under construction.
///
/// # Examples
///
/// ```
/// use url_dedup_bloom::snapshot::Params;
///
/// let mut p = Params::new();
/// p.put_u16(1).put_u32(2).put_u64(3).put_bytes(&[4; 16]);
/// assert_eq!(p.as_bytes().len(), 2 + 4 + 8 + 16);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Params(Vec<u8>);

impl Params {
    /// An empty block.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(url_dedup_bloom::snapshot::Params::new().as_bytes().is_empty());
    /// ```
    pub fn new() -> Self {
        Self(Vec::new())
    }

    /// Appends a `u16`.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut p = url_dedup_bloom::snapshot::Params::new();
    /// assert_eq!(p.put_u16(0x0102).as_bytes(), &[2, 1]);
    /// ```
    pub fn put_u16(&mut self, v: u16) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// Appends a `u32`.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut p = url_dedup_bloom::snapshot::Params::new();
    /// assert_eq!(p.put_u32(1).as_bytes(), &[1, 0, 0, 0]);
    /// ```
    pub fn put_u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// Appends a `u64`.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut p = url_dedup_bloom::snapshot::Params::new();
    /// assert_eq!(p.put_u64(1).as_bytes().len(), 8);
    /// ```
    pub fn put_u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// Appends raw bytes (fixed-length fields such as a hash key).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut p = url_dedup_bloom::snapshot::Params::new();
    /// assert_eq!(p.put_bytes(b"ab").as_bytes(), b"ab");
    /// ```
    pub fn put_bytes(&mut self, v: &[u8]) -> &mut Self {
        self.0.extend_from_slice(v);
        self
    }

    /// Appends a variable-length field: its length as a `u32`, then the bytes (read back by
    /// [`ParamsReader::field`]). A field past `u32::MAX` bytes is cut there; the whole block is
    /// limited to [`MAX_PARAMS_LEN`] anyway.
    ///
    /// # Examples
    ///
    /// See [`ParamsReader::field`].
    pub fn put_field(&mut self, bytes: &[u8]) -> &mut Self {
        let len = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
        self.put_u32(len).put_bytes(&bytes[..len as usize])
    }

    /// The encoded block.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut p = url_dedup_bloom::snapshot::Params::new();
    /// p.put_u16(7);
    /// assert_eq!(p.as_bytes(), &[7, 0]);
    /// ```
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

/// Reads fields back from a parameter block, failing cleanly when it is too short.
///
/// # Examples
///
/// ```
/// use url_dedup_bloom::snapshot::{Params, ParamsReader};
///
/// let mut p = Params::new();
/// p.put_u32(9);
/// let mut r = ParamsReader::new(p.as_bytes());
/// assert_eq!(r.u32()?, 9);
/// assert!(r.u32().is_err());
/// # Ok::<(), url_dedup_bloom::snapshot::SnapshotError>(())
/// ```
#[derive(Clone, Debug)]
pub struct ParamsReader<'a>(&'a [u8]);

impl<'a> ParamsReader<'a> {
    /// Reads from `bytes`.
    ///
    /// # Examples
    ///
    /// ```
    /// let r = url_dedup_bloom::snapshot::ParamsReader::new(&[]);
    /// assert!(r.is_empty());
    /// ```
    pub fn new(bytes: &'a [u8]) -> Self {
        Self(bytes)
    }

    /// Takes the next `N` bytes.
    ///
    /// # Errors
    ///
    /// [`SnapshotError::InvalidParameters`] when fewer than `N` bytes are left.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut r = url_dedup_bloom::snapshot::ParamsReader::new(b"abc");
    /// assert_eq!(r.bytes::<2>()?, *b"ab");
    /// assert!(r.bytes::<2>().is_err());
    /// # Ok::<(), url_dedup_bloom::snapshot::SnapshotError>(())
    /// ```
    pub fn bytes<const N: usize>(&mut self) -> Result<[u8; N], SnapshotError> {
        let Some((head, rest)) = self.0.split_first_chunk::<N>() else {
            return Err(SnapshotError::InvalidParameters(
                "parameter block too short",
            ));
        };
        self.0 = rest;
        Ok(*head)
    }

    /// Takes a `u16`.
    ///
    /// # Errors
    ///
    /// [`SnapshotError::InvalidParameters`] when the block is exhausted.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut r = url_dedup_bloom::snapshot::ParamsReader::new(&[1, 0]);
    /// assert_eq!(r.u16()?, 1);
    /// # Ok::<(), url_dedup_bloom::snapshot::SnapshotError>(())
    /// ```
    pub fn u16(&mut self) -> Result<u16, SnapshotError> {
        self.bytes().map(u16::from_le_bytes)
    }

    /// Takes a `u32`.
    ///
    /// # Errors
    ///
    /// [`SnapshotError::InvalidParameters`] when the block is exhausted.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut r = url_dedup_bloom::snapshot::ParamsReader::new(&[1, 0, 0, 0]);
    /// assert_eq!(r.u32()?, 1);
    /// # Ok::<(), url_dedup_bloom::snapshot::SnapshotError>(())
    /// ```
    pub fn u32(&mut self) -> Result<u32, SnapshotError> {
        self.bytes().map(u32::from_le_bytes)
    }

    /// Takes a `u64`.
    ///
    /// # Errors
    ///
    /// [`SnapshotError::InvalidParameters`] when the block is exhausted.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut r = url_dedup_bloom::snapshot::ParamsReader::new(&[2, 0, 0, 0, 0, 0, 0, 0]);
    /// assert_eq!(r.u64()?, 2);
    /// # Ok::<(), url_dedup_bloom::snapshot::SnapshotError>(())
    /// ```
    pub fn u64(&mut self) -> Result<u64, SnapshotError> {
        self.bytes().map(u64::from_le_bytes)
    }

    /// Takes a field written by [`Params::put_field`]: a `u32` length, then that many bytes.
    ///
    /// # Errors
    ///
    /// [`SnapshotError::InvalidParameters`] when the block holds fewer bytes than announced.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::snapshot::{Params, ParamsReader};
    ///
    /// let mut p = Params::new();
    /// p.put_field(b"policy: default");
    /// let mut r = ParamsReader::new(p.as_bytes());
    /// assert_eq!(r.field()?, b"policy: default");
    /// assert!(r.field().is_err());
    /// # Ok::<(), url_dedup_bloom::snapshot::SnapshotError>(())
    /// ```
    pub fn field(&mut self) -> Result<&'a [u8], SnapshotError> {
        let len = self.u32()? as usize;
        let Some((field, rest)) = self.0.split_at_checked(len) else {
            return Err(SnapshotError::InvalidParameters(
                "parameter block too short",
            ));
        };
        self.0 = rest;
        Ok(field)
    }

    /// Whether every byte has been read.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(!url_dedup_bloom::snapshot::ParamsReader::new(&[0]).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Writes one snapshot: header, then `payload_words` words taken from `payload`.
///
/// # Errors
///
/// [`SnapshotError::Io`] when writing fails; [`SnapshotError::InvalidParameters`] when the
/// parameter block is too long or `payload` yields a different number of words than announced.
///
/// # Examples
///
/// ```
/// use url_dedup_bloom::snapshot::{self, Kind};
///
/// let mut out = Vec::new();
/// snapshot::write(&mut out, Kind::BLOOM, &[], 2, [7u64, 8].into_iter())?;
/// assert_eq!(out.len(), 8 + 2 + 2 + 4 + 8 + 8 + 16 + 8);
/// # Ok::<(), url_dedup_bloom::snapshot::SnapshotError>(())
/// ```
pub fn write<W: Write>(
    mut out: W,
    kind: Kind,
    params: &[u8],
    payload_words: u64,
    payload: impl Iterator<Item = u64>,
) -> Result<(), SnapshotError> {
    let params_len = u32::try_from(params.len())
        .ok()
        .filter(|&len| len <= MAX_PARAMS_LEN)
        .ok_or(SnapshotError::InvalidParameters("parameter block too long"))?;
    let mut header = Vec::with_capacity(32 + params.len());
    header.extend_from_slice(&MAGIC);
    header.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    header.extend_from_slice(&kind.0.to_le_bytes());
    header.extend_from_slice(&params_len.to_le_bytes());
    header.extend_from_slice(params);
    header.extend_from_slice(&payload_words.to_le_bytes());
    let checksum = xxh3_64(&header);
    header.extend_from_slice(&checksum.to_le_bytes());
    out.write_all(&header)?;

    let mut digest = Xxh3::new();
    let mut buf = Vec::with_capacity(CHUNK_WORDS * 8);
    let mut written = 0u64;
    for word in payload {
        buf.extend_from_slice(&word.to_le_bytes());
        written += 1;
        if buf.len() == CHUNK_WORDS * 8 {
            digest.update(&buf);
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    if written != payload_words {
        return Err(SnapshotError::InvalidParameters(
            "payload length differs from the announced length",
        ));
    }
    digest.update(&buf);
    out.write_all(&buf)?;
    out.write_all(&digest.digest().to_le_bytes())?;
    out.flush()?;
    Ok(())
}

/// A validated snapshot header: its kind's parameters and the announced payload size.
///
/// # Examples
///
/// ```
/// use url_dedup_bloom::snapshot::{self, Kind, Limits};
///
/// let mut buf = Vec::new();
/// snapshot::write(&mut buf, Kind::SIMILARITY, &[1, 2], 0, std::iter::empty())?;
/// let header = snapshot::read_header(&mut &buf[..], Kind::SIMILARITY, Limits::default())?;
/// assert_eq!(header.payload_words(), 0);
/// assert_eq!(header.params_bytes(), &[1, 2]);
/// # Ok::<(), url_dedup_bloom::snapshot::SnapshotError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Header {
    params: Vec<u8>,
    payload_words: u64,
}

impl Header {
    /// The raw parameter block.
    ///
    /// # Examples
    ///
    /// See [`Header`].
    pub fn params_bytes(&self) -> &[u8] {
        &self.params
    }

    /// A reader over the parameter block.
    ///
    /// # Examples
    ///
    /// See the [module documentation](self).
    pub fn params(&self) -> ParamsReader<'_> {
        ParamsReader::new(&self.params)
    }

    /// The payload length the header announces, in 64-bit words (already checked against the
    /// reader's [`Limits`]).
    ///
    /// # Examples
    ///
    /// See [`Header`].
    pub fn payload_words(&self) -> u64 {
        self.payload_words
    }

    /// Reads the payload and checks its checksum.
    ///
    /// Memory grows with the data actually read, never ahead of it by more than one chunk, so a
    /// header that lies about the size fails with [`SnapshotError::Truncated`] cheaply.
    ///
    /// # Errors
    ///
    /// [`SnapshotError::Truncated`], [`SnapshotError::PayloadChecksum`] or
    /// [`SnapshotError::Io`].
    ///
    /// # Examples
    ///
    /// See the [module documentation](self).
    pub fn read_payload<R: Read>(&self, input: R) -> Result<Vec<u64>, SnapshotError> {
        let mut words = Vec::new();
        self.read_payload_with(input, |chunk| words.extend_from_slice(chunk))?;
        Ok(words)
    }

    /// Reads the payload chunk by chunk, handing each chunk of words to `sink`, and checks the
    /// checksum at the end. Lets a caller fill its own storage (atomic words, a segment store)
    /// without an intermediate copy of the whole payload.
    ///
    /// On a checksum error the sink has already seen the damaged words: callers must build into
    /// fresh storage and discard it on error.
    ///
    /// # Errors
    ///
    /// As [`Header::read_payload`].
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_bloom::snapshot::{self, Kind, Limits};
    ///
    /// let mut buf = Vec::new();
    /// snapshot::write(&mut buf, Kind::BLOOM, &[], 3, [1u64, 2, 3].into_iter())?;
    /// let mut input = &buf[..];
    /// let header = snapshot::read_header(&mut input, Kind::BLOOM, Limits::default())?;
    /// let mut sum = 0;
    /// header.read_payload_with(&mut input, |words| sum += words.iter().sum::<u64>())?;
    /// assert_eq!(sum, 6);
    /// # Ok::<(), url_dedup_bloom::snapshot::SnapshotError>(())
    /// ```
    pub fn read_payload_with<R: Read>(
        &self,
        mut input: R,
        mut sink: impl FnMut(&[u64]),
    ) -> Result<(), SnapshotError> {
        let mut digest = Xxh3::new();
        let mut bytes = vec![0u8; CHUNK_WORDS * 8];
        let mut words = Vec::with_capacity(CHUNK_WORDS);
        let mut left = self.payload_words;
        while left > 0 {
            let n = left.min(CHUNK_WORDS as u64) as usize;
            let chunk = &mut bytes[..n * 8];
            read_exact(&mut input, chunk)?;
            digest.update(chunk);
            words.clear();
            words.extend(
                chunk
                    .chunks_exact(8)
                    .map(|w| u64::from_le_bytes(w.try_into().unwrap_or_default())),
            );
            sink(&words);
            left -= n as u64;
        }
        let mut sum = [0u8; 8];
        read_exact(&mut input, &mut sum)?;
        if u64::from_le_bytes(sum) != digest.digest() {
            return Err(SnapshotError::PayloadChecksum);
        }
        Ok(())
    }
}

/// Reads and validates a header of the expected `kind`.
///
/// # Errors
///
/// [`SnapshotError::BadMagic`], [`SnapshotError::UnsupportedVersion`],
/// [`SnapshotError::WrongKind`], [`SnapshotError::HeaderChecksum`], [`SnapshotError::TooLarge`],
/// [`SnapshotError::Truncated`] or [`SnapshotError::Io`].
///
/// # Examples
///
/// See the [module documentation](self).
pub fn read_header<R: Read>(
    mut input: R,
    kind: Kind,
    limits: Limits,
) -> Result<Header, SnapshotError> {
    let mut fixed = [0u8; 16];
    read_exact(&mut input, &mut fixed)?;
    if fixed[..8] != MAGIC {
        return Err(SnapshotError::BadMagic);
    }
    let version = u16::from_le_bytes([fixed[8], fixed[9]]);
    let found = Kind(u16::from_le_bytes([fixed[10], fixed[11]]));
    let params_len = u32::from_le_bytes([fixed[12], fixed[13], fixed[14], fixed[15]]);
    if params_len > MAX_PARAMS_LEN {
        // Checked before the checksum so a damaged length cannot make us allocate.
        return Err(SnapshotError::HeaderChecksum);
    }
    let mut rest = vec![0u8; params_len as usize + 16];
    read_exact(&mut input, &mut rest)?;
    let (body, sum) = rest.split_at(params_len as usize + 8);
    let mut hashed = Xxh3::new();
    hashed.update(&fixed);
    hashed.update(body);
    if hashed.digest().to_le_bytes() != sum {
        return Err(SnapshotError::HeaderChecksum);
    }
    // Version and kind are judged only once the header is known to be intact, so a flipped
    // bit reads as damage rather than as a confusing "wrong kind".
    if version != FORMAT_VERSION {
        return Err(SnapshotError::UnsupportedVersion {
            found: version,
            supported: FORMAT_VERSION,
        });
    }
    if found != kind {
        return Err(SnapshotError::WrongKind {
            expected: kind,
            found,
        });
    }
    let (params, words) = body.split_at(params_len as usize);
    let payload_words = u64::from_le_bytes(words.try_into().unwrap_or_default());
    let claimed = payload_words.saturating_mul(8);
    if claimed > limits.max_payload_bytes {
        return Err(SnapshotError::TooLarge {
            claimed,
            limit: limits.max_payload_bytes,
        });
    }
    Ok(Header {
        params: params.to_vec(),
        payload_words,
    })
}

fn read_exact<R: Read>(input: &mut R, buf: &mut [u8]) -> Result<(), SnapshotError> {
    input.read_exact(buf).map_err(|e| match e.kind() {
        io::ErrorKind::UnexpectedEof => SnapshotError::Truncated,
        _ => SnapshotError::Io(e),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        let mut p = Params::new();
        p.put_u64(99);
        let mut out = Vec::new();
        write(&mut out, Kind::BLOOM, p.as_bytes(), 20_000, 0..20_000u64).unwrap();
        out
    }

    fn read_all(bytes: &[u8]) -> Result<Vec<u64>, SnapshotError> {
        let mut input = bytes;
        let h = read_header(&mut input, Kind::BLOOM, Limits::default())?;
        h.read_payload(&mut input)
    }

    #[test]
    fn round_trip_across_chunks() {
        assert_eq!(
            read_all(&sample()).unwrap(),
            (0..20_000u64).collect::<Vec<_>>()
        );
    }

    #[test]
    fn every_single_byte_flip_is_detected() {
        let good = sample();
        // Every header byte and a sample of payload bytes.
        let positions = (0..40)
            .chain((40..good.len()).step_by(997))
            .chain([good.len() - 1]);
        for pos in positions {
            let mut bad = good.clone();
            bad[pos] ^= 0x10;
            assert!(read_all(&bad).is_err(), "flip at {pos} went unnoticed");
        }
    }

    #[test]
    fn every_truncation_is_detected() {
        let good = sample();
        for len in (0..good.len()).step_by(101) {
            assert!(
                read_all(&good[..len]).is_err(),
                "truncation at {len} went unnoticed"
            );
        }
    }

    #[test]
    fn lying_length_is_rejected_without_allocation() {
        // A well-formed header (valid checksum) that claims 2^57 bytes of payload.
        let mut out = Vec::new();
        let mut p = Params::new();
        p.put_u64(1 << 60);
        write(&mut out, Kind::BLOOM, p.as_bytes(), 0, std::iter::empty()).unwrap();
        let mut forged = out[..out.len() - 16 - 8].to_vec(); // drop words, checksum, payload sum
        forged.extend_from_slice(&(1u64 << 54).to_le_bytes());
        let sum = xxh3_64(&forged);
        forged.extend_from_slice(&sum.to_le_bytes());
        let err = read_header(&mut &forged[..], Kind::BLOOM, Limits::default()).unwrap_err();
        assert!(matches!(err, SnapshotError::TooLarge { .. }), "{err}");
        // With a limit that allows it, the read fails as truncated after one chunk at most.
        let mut input = &forged[..];
        let limits = Limits {
            max_payload_bytes: u64::MAX,
        };
        let h = read_header(&mut input, Kind::BLOOM, limits).unwrap();
        assert!(matches!(
            h.read_payload(&mut input),
            Err(SnapshotError::Truncated)
        ));
    }

    #[test]
    fn wrong_kind_and_version_are_named() {
        let good = sample();
        let err = read_header(&mut &good[..], Kind::SEGMENTED, Limits::default()).unwrap_err();
        assert!(matches!(err, SnapshotError::WrongKind { .. }));
        assert!(err.to_string().contains("classic Bloom filter"));
    }
}
