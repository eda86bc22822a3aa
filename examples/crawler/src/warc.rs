//! WARC/1.1 output: a `warcinfo` record, then a `request` and a `response` record per fetch, or
//! a `request` and a `revisit` record: profile `server-not-modified` for a 304 answer to a
//! conditional revisit (`--every`), profile `identical-payload-digest` for a body that an
//! earlier response of the file had already (`--learn`; the record keeps the headers only and
//! names the earlier one).
//!
//! Every record carries `WARC-Block-Digest`, and every response `WARC-Payload-Digest` (the
//! body as received, content coding included), both `sha1:` and the SHA-1 in base32, as
//! Heritrix and wget write them, so any WARC tool can check the file.
//!
//! One uncompressed file per output directory (`crawl.warc`). Records are appended and flushed
//! as each page is committed, and the committed length is journaled, so after a crash the file
//! is cut back to its last whole, committed record before the crawl continues.

use std::fs::File;
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::fetch::Exchange;

/// A response record written, for the revisit records of later identical payloads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Original {
    pub(crate) uri: String,
    pub(crate) date: String,
    pub(crate) id: String,
}

/// Appends records to a WARC file.
#[derive(Debug)]
pub(crate) struct WarcWriter {
    out: BufWriter<File>,
    offset: u64,
    records: u64,
    last: Option<Original>,
}

impl WarcWriter {
    /// Opens `name` in `dir` (never through a link), cutting it to `committed` bytes (the
    /// journaled length) when it is longer; a new file starts with a `warcinfo` record.
    pub(crate) fn open(dir: &Path, name: &str, committed: u64, software: &str) -> io::Result<Self> {
        let mut file = crate::files::open(
            dir,
            Path::new(name),
            crate::files::Open::ReadWrite,
            crate::files::Access::Shared,
        )?;
        let len = file.metadata()?.len();
        let offset = committed.min(len);
        file.set_len(offset)?;
        file.seek(SeekFrom::Start(offset))?;
        let mut writer = Self {
            out: BufWriter::with_capacity(256 * 1024, file),
            offset,
            records: 0,
            last: None,
        };
        if offset == 0 {
            let info = format!("software: {software}\r\nformat: WARC File Format 1.1\r\n");
            writer.record_with_id(
                &record_id()?,
                "warcinfo",
                "application/warc-fields",
                &[info.as_bytes()],
                &[("WARC-Date", iso8601(SystemTime::now()))],
            )?;
            writer.flush()?;
        }
        Ok(writer)
    }

    /// Appends the request and response records of one exchange and flushes them; returns the
    /// file length after them. `same` is the response record of an earlier identical payload:
    /// the response is then written as a revisit of it.
    pub(crate) fn write_exchange(
        &mut self,
        url: &str,
        ip: Option<&str>,
        x: &Exchange,
        same: Option<&Original>,
    ) -> io::Result<u64> {
        let response_id = record_id()?;
        let date = iso8601(x.date);
        let mut extra = vec![
            ("WARC-Target-URI", url.to_owned()),
            ("WARC-Date", date.clone()),
        ];
        if let Some(ip) = ip {
            extra.push(("WARC-IP-Address", ip.to_owned()));
        }
        let mut req_extra = extra.clone();
        req_extra.push(("WARC-Concurrent-To", response_id.clone()));
        self.record_with_id(
            &record_id()?,
            "request",
            "application/http;msgtype=request",
            &[&x.request_head],
            &req_extra,
        )?;
        let head = x.response_head();
        if x.status == reqwest::StatusCode::NOT_MODIFIED {
            // The page is unchanged since it was archived: a revisit record, no payload.
            extra.push((
                "WARC-Profile",
                "http://netpreserve.org/warc/1.1/revisit/server-not-modified".to_owned(),
            ));
            extra.push(("WARC-Refers-To-Target-URI", url.to_owned()));
            self.record_with_id(
                &response_id,
                "revisit",
                "application/http;msgtype=response",
                &[&head, &x.body],
                &extra,
            )?;
        } else if let Some(original) = same {
            // WARC 1.1, section 6.7.2: the payload is left out, the headers kept.
            extra.push((
                "WARC-Profile",
                "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest".to_owned(),
            ));
            extra.push(("WARC-Refers-To", original.id.clone()));
            extra.push(("WARC-Refers-To-Target-URI", original.uri.clone()));
            extra.push(("WARC-Refers-To-Date", original.date.clone()));
            extra.push(("WARC-Payload-Digest", digest(&[&x.body])));
            extra.push(("WARC-Truncated", "length".to_owned()));
            self.record_with_id(
                &response_id,
                "revisit",
                "application/http;msgtype=response",
                &[&head],
                &extra,
            )?;
        } else {
            if x.truncated {
                extra.push(("WARC-Truncated", "length".to_owned()));
            }
            extra.push(("WARC-Payload-Digest", digest(&[&x.body])));
            self.record_with_id(
                &response_id,
                "response",
                "application/http;msgtype=response",
                &[&head, &x.body],
                &extra,
            )?;
        }
        self.flush()?;
        self.last = Some(Original {
            uri: url.to_owned(),
            date,
            id: response_id,
        });
        Ok(self.offset)
    }

    /// The response record last written.
    pub(crate) fn last(&self) -> Option<&Original> {
        self.last.as_ref()
    }

    /// Bytes written so far (whole records only).
    pub(crate) fn offset(&self) -> u64 {
        self.offset
    }

    /// Records written by this process.
    pub(crate) fn records(&self) -> u64 {
        self.records
    }

    pub(crate) fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    fn record_with_id(
        &mut self,
        id: &str,
        kind: &str,
        content_type: &str,
        block: &[&[u8]],
        fields: &[(&str, String)],
    ) -> io::Result<()> {
        let len: usize = block.iter().map(|b| b.len()).sum();
        let mut head = format!("WARC/1.1\r\nWARC-Type: {kind}\r\nWARC-Record-ID: {id}\r\n");
        for (name, value) in fields {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str(&format!("WARC-Block-Digest: {}\r\n", digest(block)));
        head.push_str(&format!(
            "Content-Type: {content_type}\r\nContent-Length: {len}\r\n\r\n"
        ));
        self.out.write_all(head.as_bytes())?;
        for part in block {
            self.out.write_all(part)?;
        }
        self.out.write_all(b"\r\n\r\n")?;
        self.offset += (head.len() + len + 4) as u64;
        self.records += 1;
        Ok(())
    }
}

/// `sha1:` and the base32 (RFC 4648, no padding: 160 bits are 32 characters) SHA-1 of the
/// concatenated `parts`: the digest form of Heritrix and wget.
pub(crate) fn digest(parts: &[&[u8]]) -> String {
    let mut sha1 = sha1_smol::Sha1::new();
    for part in parts {
        sha1.update(part);
    }
    format!("sha1:{}", base32(&sha1.digest().bytes()))
}

/// RFC 4648 base32, upper case, for input whose bit length is a multiple of 5 (a SHA-1).
fn base32(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut out = String::with_capacity(bytes.len().div_ceil(5) * 8);
    let (mut buffer, mut bits) = (0u64, 0u32);
    for &b in bytes {
        buffer = (buffer << 8) | u64::from(b);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(ALPHABET[((buffer >> bits) & 31) as usize] as char);
        }
    }
    if bits > 0 {
        out.push(ALPHABET[((buffer << (5 - bits)) & 31) as usize] as char);
    }
    out
}

/// A random (version 4) UUID as a WARC record id.
fn record_id() -> io::Result<String> {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).map_err(|e| io::Error::other(e.to_string()))?;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    Ok(format!(
        "<urn:uuid:{}-{}-{}-{}-{}>",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    ))
}

/// `YYYY-MM-DDThh:mm:ssZ` (UTC) without a date library: days to civil date after Howard
/// Hinnant's `civil_from_days`.
fn iso8601(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn dates() {
        assert_eq!(iso8601(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        assert_eq!(
            iso8601(UNIX_EPOCH + Duration::from_secs(951_782_400)),
            "2000-02-29T00:00:00Z"
        );
        assert_eq!(
            iso8601(UNIX_EPOCH + Duration::from_secs(1_795_000_000)),
            "2026-11-18T11:06:40Z"
        );
    }

    /// The digest of an empty payload, as it appears in WARC files written by Heritrix and wget
    /// (SHA-1 da39a3ee5e6b4b0d3255bfef95601890afd80709, RFC 3174's empty message), and the
    /// RFC 4648 section 10 base32 test vectors.
    #[test]
    fn digests_are_base32_sha1() {
        assert_eq!(digest(&[]), "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ");
        assert_eq!(digest(&[b"ab", b"c"]), digest(&[b"abc"]));
        for (input, want) in [
            ("", ""),
            ("f", "MY"),
            ("fo", "MZXQ"),
            ("foo", "MZXW6"),
            ("foob", "MZXW6YQ"),
            ("fooba", "MZXW6YTB"),
            ("foobar", "MZXW6YTBOI"),
        ] {
            assert_eq!(base32(input.as_bytes()), want, "{input}");
        }
    }

    #[test]
    fn record_ids_are_v4_uuids() {
        let id = record_id().unwrap();
        assert_eq!(id.len(), 47);
        assert_eq!(&id[24..25], "4");
        assert_ne!(id, record_id().unwrap());
    }
}
