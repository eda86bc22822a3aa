//! How a bit offset inside a segment maps to bytes and to 64-bit words.
//!
//! One convention everywhere, Redis's: **offset `o` is bit `7 - o % 8` of byte `o / 8`** — the
//! most significant bit of byte 0 is offset 0. That is what `SETBIT`, `GETBIT`, `BITFIELD ...
//! u1 <o>` and `BITCOUNT` mean by an offset, so a segment kept as one Redis string under
//! `GETRANGE`/`SETRANGE` holds exactly the bytes [`words_to_bytes`] produces.
//!
//! In memory a segment is `segment_bits / 64` words; offset `o` is in word `o / 64` under mask
//! `1 << (63 - o % 64)`, and a word's bytes are its **big-endian** bytes. Big-endian is what makes
//! "most significant bit first" hold across byte boundaries inside a word.
//!
//! Snapshots store words little-endian like every snapshot of the workspace; only the
//! byte-string form ([`words_to_bytes`], [`bytes_to_words`]) is in Redis order.
//!
//! # Examples
//!
//! ```
//! use url_dedup_segmented::bit_order::{locate, words_to_bytes};
//!
//! // Offset 0 is the top bit of word 0, which is the top bit of byte 0.
//! assert_eq!(locate(0), (0, 1 << 63));
//! assert_eq!(words_to_bytes(&[1 << 63]), [0x80, 0, 0, 0, 0, 0, 0, 0]);
//! // Offset 9 is bit 6 of byte 1 (Redis: SETBIT key 9 1 makes byte 1 equal 0x40).
//! let (word, mask) = locate(9);
//! assert_eq!(words_to_bytes(&[mask])[1], 0x40);
//! assert_eq!(word, 0);
//! ```

use crate::Error;

/// The word index and the mask of bit `offset` of a segment.
///
/// # Examples
///
/// ```
/// use url_dedup_segmented::bit_order::locate;
///
/// assert_eq!(locate(63), (0, 1));
/// assert_eq!(locate(64), (1, 1 << 63));
/// ```
#[inline]
pub fn locate(offset: u64) -> (usize, u64) {
    ((offset >> 6) as usize, mask(offset))
}

/// The mask of bit `offset` inside its word: `1 << (63 - offset % 64)`.
///
/// # Examples
///
/// ```
/// assert_eq!(url_dedup_segmented::bit_order::mask(1), 1 << 62);
/// ```
#[inline]
pub fn mask(offset: u64) -> u64 {
    (1u64 << 63) >> (offset & 63)
}

/// Whether bit `offset` is set in a segment given as Redis-ordered bytes; offsets past the end
/// read as zero, as Redis's `GETBIT` does.
///
/// # Examples
///
/// ```
/// use url_dedup_segmented::bit_order::bit_in_bytes;
///
/// assert!(bit_in_bytes(&[0x80], 0));
/// assert!(!bit_in_bytes(&[0x80], 1));
/// assert!(!bit_in_bytes(&[0xff], 100));
/// ```
pub fn bit_in_bytes(bytes: &[u8], offset: u64) -> bool {
    usize::try_from(offset / 8)
        .ok()
        .and_then(|i| bytes.get(i))
        .is_some_and(|b| b & (0x80 >> (offset % 8)) != 0)
}

/// A segment's words as the byte string Redis would hold for it.
///
/// # Examples
///
/// ```
/// use url_dedup_segmented::bit_order::words_to_bytes;
///
/// assert_eq!(words_to_bytes(&[0x0102_0304_0506_0708]), [1, 2, 3, 4, 5, 6, 7, 8]);
/// ```
pub fn words_to_bytes(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_be_bytes()).collect()
}

/// Fills `words` from a segment's Redis byte string.
///
/// A shorter string is zero-extended (Redis returns a short or empty string for a key that was
/// never written up to its end), a longer one is an error.
///
/// # Errors
///
/// [`Error::InvalidParameters`] when `bytes` is longer than `words` can hold.
///
/// # Examples
///
/// ```
/// use url_dedup_segmented::bit_order::bytes_to_words;
///
/// let mut words = [0u64; 2];
/// bytes_to_words(&[0x80], &mut words)?;
/// assert_eq!(words, [1 << 63, 0]);
/// assert!(bytes_to_words(&[0; 17], &mut words).is_err());
/// # Ok::<(), url_dedup_segmented::Error>(())
/// ```
pub fn bytes_to_words(bytes: &[u8], words: &mut [u64]) -> Result<(), Error> {
    if bytes.len() > words.len().saturating_mul(8) {
        return Err(Error::InvalidParameters(
            "segment bytes are longer than the segment",
        ));
    }
    for (i, word) in words.iter_mut().enumerate() {
        let mut buf = [0u8; 8];
        let start = (i * 8).min(bytes.len());
        let end = (i * 8 + 8).min(bytes.len());
        buf[..end - start].copy_from_slice(&bytes[start..end]);
        *word = u64::from_be_bytes(buf);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_offset_means_the_same_bit_in_words_and_bytes() {
        for offset in 0..256u64 {
            let mut words = [0u64; 4];
            let (w, m) = locate(offset);
            words[w] |= m;
            let bytes = words_to_bytes(&words);
            for probe in 0..256u64 {
                assert_eq!(bit_in_bytes(&bytes, probe), probe == offset);
            }
            let mut back = [0u64; 4];
            bytes_to_words(&bytes, &mut back).unwrap();
            assert_eq!(back, words);
        }
    }
}
