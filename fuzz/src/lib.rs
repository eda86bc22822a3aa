//! What the fuzz targets share: [`reseal`], which lets fuzzed snapshots past their checksums.
//!
//! Raw bytes almost never carry a valid XXH3 header checksum, so a target fed only raw bytes
//! spends its time in the first few checks of `snapshot::read_header`. Each snapshot target
//! therefore reads every input twice: as it is (the header checks themselves) and resealed
//! (everything after them: kind, parameters, lengths, payload validation, the structure built
//! from it). The starting corpus in `starting-corpus/` holds valid snapshots written by the
//! `starting_corpus` example, so mutations begin from real ones.
#![deny(missing_docs)]

use url_dedup_bloom::snapshot::{self, Kind};

/// Bytes of the fixed header: magic (8), format version (2), kind (2), parameter length (4).
const FIXED: usize = 16;

/// `data` read leniently as a snapshot, written again through [`snapshot::write`] so both
/// checksums are right: the kind and parameter block are taken as they are (the parameter
/// block cut to the bytes present), the announced payload length and the header checksum are
/// skipped, and the payload is every whole word between them and the last 8 bytes (where the
/// payload checksum was). The format version is always the current one, and a parameter block
/// longer than the format allows is cut to the limit. Missing fields read as zero or empty.
///
/// # Examples
///
/// ```
/// use url_dedup_bloom::snapshot::{self, Kind, Limits};
///
/// let mut valid = Vec::new();
/// snapshot::write(&mut valid, Kind::BLOOM, &[1, 2, 3], 2, [5u64, 6].into_iter())?;
/// let mut damaged = valid.clone();
/// damaged[18] ^= 1; // the last parameter byte
/// damaged[20] ^= 1; // the announced payload length
/// let last = damaged.len() - 1;
/// damaged[last] ^= 1; // the payload checksum
/// assert!(snapshot::read_header(&mut &damaged[..], Kind::BLOOM, Limits::default()).is_err());
///
/// let resealed = url_dedup_fuzz::reseal(&damaged);
/// let mut input = &resealed[..];
/// let header = snapshot::read_header(&mut input, Kind::BLOOM, Limits::default())?;
/// assert_eq!(header.params_bytes(), &[1, 2, 2]);
/// assert_eq!(header.read_payload(&mut input)?, [5, 6]);
/// # Ok::<(), url_dedup_bloom::snapshot::SnapshotError>(())
/// ```
pub fn reseal(data: &[u8]) -> Vec<u8> {
    let kind = Kind(
        data.get(10..12)
            .map_or(0, |b| u16::from_le_bytes([b[0], b[1]])),
    );
    let claimed = data
        .get(12..FIXED)
        .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let rest = data.get(FIXED..).unwrap_or_default();
    // A longer block is refused before its checksum is read: only raw input reaches that.
    let take = claimed.min(snapshot::MAX_PARAMS_LEN) as usize;
    let (params, rest) = rest.split_at(take.min(rest.len()));
    // Skip the announced payload length and the header checksum; drop the payload checksum.
    let payload = rest.get(16..).unwrap_or_default();
    let payload = &payload[..payload.len().saturating_sub(8)];
    let words = payload.chunks_exact(8).map(|w| {
        let mut word = [0; 8];
        word.copy_from_slice(w);
        u64::from_le_bytes(word)
    });
    let mut out = Vec::with_capacity(FIXED + params.len() + 24 + payload.len());
    // Writing into a Vec cannot fail, and the block is within the format's limit.
    let _ = snapshot::write(&mut out, kind, params, words.len() as u64, words);
    out
}
