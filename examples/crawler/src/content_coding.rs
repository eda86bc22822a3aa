//! Undoing `Content-Encoding` with a cap on the decoded size.
//!
//! Bodies are kept as they came off the wire (so the WARC holds exactly what the server sent)
//! and decoded here for parsing and the mirror. A few kilobytes of gzip can expand to
//! gigabytes; decoding stops one byte past the cap, so a bomb costs the cap, not the machine.

use std::borrow::Cow;
use std::io::Read;

use flate2::read::{DeflateDecoder, MultiGzDecoder, ZlibDecoder};

use crate::skip::SkipReason;

/// Why a body could not be decoded.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct DecodeError {
    pub(crate) reason: SkipReason,
    pub(crate) detail: String,
}

/// What to do with a body that decodes to more than the cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Overflow {
    /// Refuse it (`decoded-too-large`).
    Refuse,
    /// Keep its first `cap` bytes; a stream that ends early (its wire bytes were cut) gives
    /// what it decoded so far.
    Prefix,
}

/// Decodes `wire` according to the `Content-Encoding` header value `encoding`, refusing to
/// produce more than `cap` bytes.
pub(crate) fn decode<'a>(
    encoding: Option<&str>,
    wire: &'a [u8],
    cap: u64,
) -> Result<Cow<'a, [u8]>, DecodeError> {
    decode_with(encoding, wire, cap, Overflow::Refuse)
}

/// The first `cap` decoded bytes of `wire`, which may itself be only the beginning of the
/// body: for files read as far as needed (robots.txt).
pub(crate) fn decode_prefix<'a>(
    encoding: Option<&str>,
    wire: &'a [u8],
    cap: u64,
) -> Result<Cow<'a, [u8]>, DecodeError> {
    decode_with(encoding, wire, cap, Overflow::Prefix)
}

fn decode_with<'a>(
    encoding: Option<&str>,
    wire: &'a [u8],
    cap: u64,
    overflow: Overflow,
) -> Result<Cow<'a, [u8]>, DecodeError> {
    let encoding = encoding
        .map(|e| e.trim().to_ascii_lowercase())
        .unwrap_or_default();
    match encoding.as_str() {
        "" | "identity" => match overflow {
            _ if wire.len() as u64 <= cap => Ok(Cow::Borrowed(wire)),
            Overflow::Refuse => Err(too_large(cap)),
            Overflow::Prefix => Ok(Cow::Borrowed(&wire[..cap as usize])),
        },
        "gzip" | "x-gzip" => read_capped(MultiGzDecoder::new(wire), cap, overflow).map(Cow::Owned),
        // "deflate" is meant to be zlib-wrapped, but servers send raw deflate too: the header
        // decides which, so the body is decoded once and an error is the stream's own (a
        // body over the cap is over the cap, not "corrupt" from a second, raw attempt).
        "deflate" if is_zlib(wire) => {
            read_capped(ZlibDecoder::new(wire), cap, overflow).map(Cow::Owned)
        }
        "deflate" => read_capped(DeflateDecoder::new(wire), cap, overflow).map(Cow::Owned),
        other => Err(DecodeError {
            reason: SkipReason::BadEncoding,
            detail: format!("unsupported content-encoding {other:?}"),
        }),
    }
}

/// Whether `wire` starts with a zlib header (RFC 1950 section 2.2): compression method 8
/// (deflate), a window of at most 32 KiB, and the check bits making the first two bytes, read
/// as a big-endian number, a multiple of 31.
fn is_zlib(wire: &[u8]) -> bool {
    match wire {
        [cmf, flg, ..] => {
            cmf & 0x0f == 8 && cmf >> 4 <= 7 && (u16::from(*cmf) << 8 | u16::from(*flg)) % 31 == 0
        }
        _ => false,
    }
}

fn read_capped(reader: impl Read, cap: u64, overflow: Overflow) -> Result<Vec<u8>, DecodeError> {
    let mut out = Vec::new();
    let read = reader.take(cap.saturating_add(1)).read_to_end(&mut out);
    match read {
        Ok(_) => {}
        // read_to_end keeps what it read before the error: the prefix of a cut stream.
        Err(e) if overflow == Overflow::Prefix && e.kind() == std::io::ErrorKind::UnexpectedEof => {
        }
        Err(e) => {
            return Err(DecodeError {
                reason: SkipReason::BadEncoding,
                detail: e.to_string(),
            });
        }
    }
    if out.len() as u64 > cap {
        match overflow {
            Overflow::Refuse => return Err(too_large(cap)),
            Overflow::Prefix => out.truncate(cap as usize),
        }
    }
    Ok(out)
}

fn too_large(cap: u64) -> DecodeError {
    DecodeError {
        reason: SkipReason::DecodedTooLarge,
        detail: format!("over {cap} bytes decoded"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::{Compression, write::GzEncoder, write::ZlibEncoder};
    use std::io::Write;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), Compression::best());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn round_trips() {
        assert_eq!(
            decode(Some("gzip"), &gzip(b"hello"), 5).unwrap().as_ref(),
            b"hello"
        );
        let mut z = ZlibEncoder::new(Vec::new(), Compression::fast());
        z.write_all(b"zz").unwrap();
        assert_eq!(
            decode(Some("Deflate"), &z.finish().unwrap(), 10)
                .unwrap()
                .as_ref(),
            b"zz"
        );
        assert_eq!(decode(None, b"plain", 5).unwrap().as_ref(), b"plain");
    }

    #[test]
    fn bombs_stop_at_the_cap() {
        let bomb = gzip(&vec![0u8; 10 << 20]);
        assert!(bomb.len() < 20_000);
        let err = decode(Some("gzip"), &bomb, 1 << 20).unwrap_err();
        assert_eq!(err.reason, SkipReason::DecodedTooLarge);
        assert_eq!(
            decode(None, b"123456", 5).unwrap_err().reason,
            SkipReason::DecodedTooLarge
        );
    }

    #[test]
    fn a_prefix_decodes_as_far_as_the_cap_or_the_cut() {
        let text: Vec<u8> = (0..100_000u32)
            .flat_map(|i| format!("{i}\n").into_bytes())
            .collect();
        let packed = gzip(&text);
        let first = decode_prefix(Some("gzip"), &packed, 1000).unwrap();
        assert_eq!(first.as_ref(), &text[..1000]);
        // The wire itself cut short: what it decodes to, never an error.
        let cut = decode_prefix(Some("gzip"), &packed[..packed.len() / 2], 1 << 30).unwrap();
        assert!(!cut.is_empty() && text.starts_with(&cut), "{}", cut.len());
        assert_eq!(decode_prefix(None, b"123456", 4).unwrap().as_ref(), b"1234");
        // Refusing stays the default.
        assert_eq!(
            decode(Some("gzip"), &packed, 1000).unwrap_err().reason,
            SkipReason::DecodedTooLarge
        );
    }

    #[test]
    fn deflate_is_zlib_or_raw_by_its_header_and_decoded_once() {
        use flate2::write::DeflateEncoder;
        let data = vec![b'x'; 100_000];
        let mut z = ZlibEncoder::new(Vec::new(), Compression::best());
        z.write_all(&data).unwrap();
        let zlib = z.finish().unwrap();
        let mut r = DeflateEncoder::new(Vec::new(), Compression::best());
        r.write_all(&data).unwrap();
        let raw = r.finish().unwrap();
        assert!(is_zlib(&zlib) && !is_zlib(&raw));
        for wire in [&zlib, &raw] {
            assert_eq!(
                decode(Some("deflate"), wire, 100_000).unwrap().len(),
                100_000
            );
            // Over the cap is reported as such, not as a corrupt stream.
            assert_eq!(
                decode(Some("deflate"), wire, 99_999).unwrap_err().reason,
                SkipReason::DecodedTooLarge
            );
        }
    }

    #[test]
    fn garbage_and_unknown_encodings_are_errors() {
        assert_eq!(
            decode(Some("gzip"), b"not gzip", 100).unwrap_err().reason,
            SkipReason::BadEncoding
        );
        assert_eq!(
            decode(Some("br"), b"x", 100).unwrap_err().reason,
            SkipReason::BadEncoding
        );
    }
}
