//! A small, strict WARC reader: records one after the other, each checked to end where its
//! `Content-Length` says, with the HTTP response inside a `response` record taken apart.

use std::io::{self, BufRead, Read};

/// The largest block kept in memory; a larger record's block is skipped (its payload digest,
/// when it has one, still counts).
pub(crate) const MAX_BLOCK: u64 = 64 << 20;
/// The longest header line, and the most header fields, of a record.
const MAX_LINE: usize = 64 << 10;
const MAX_FIELDS: usize = 1_000;

/// One WARC record.
#[derive(Debug)]
pub(crate) struct Record {
    /// `WARC-Type`.
    pub(crate) kind: String,
    /// `WARC-Target-URI`, if any.
    pub(crate) url: Option<String>,
    /// `WARC-Payload-Digest`, if any.
    pub(crate) payload_digest: Option<String>,
    /// The block, unless it was larger than [`MAX_BLOCK`].
    pub(crate) block: Option<Vec<u8>>,
}

/// Reads records from `input`.
pub(crate) struct WarcReader<R> {
    input: R,
    offset: u64,
}

impl<R: BufRead> WarcReader<R> {
    pub(crate) fn new(input: R) -> Self {
        Self { input, offset: 0 }
    }

    fn line(&mut self) -> Result<Option<Vec<u8>>, String> {
        let mut line = Vec::new();
        let n = (&mut self.input)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("read failed at byte {}: {e}", self.offset))?;
        if n == 0 {
            return Ok(None);
        }
        if line.len() > MAX_LINE {
            return Err(format!(
                "a header line at byte {} is longer than {MAX_LINE} bytes",
                self.offset
            ));
        }
        self.offset += n as u64;
        if !line.ends_with(b"\r\n") {
            return Err(format!(
                "the line before byte {} does not end with CRLF (truncated, or not a WARC file)",
                self.offset
            ));
        }
        line.truncate(line.len() - 2);
        Ok(Some(line))
    }

    /// The next record, `None` at the end of the input.
    pub(crate) fn next_record(&mut self) -> Result<Option<Record>, String> {
        let start = self.offset;
        let Some(version) = self.line()? else {
            return Ok(None);
        };
        if version != b"WARC/1.0" && version != b"WARC/1.1" {
            return Err(format!(
                "the record at byte {start} starts with {:?}, not WARC/1.0 or WARC/1.1",
                String::from_utf8_lossy(&version[..version.len().min(40)])
            ));
        }
        let mut fields: Vec<(String, String)> = Vec::new();
        loop {
            let Some(line) = self.line()? else {
                return Err(format!("the record at byte {start} ends inside its header"));
            };
            if line.is_empty() {
                break;
            }
            let text = String::from_utf8_lossy(&line);
            if text.starts_with([' ', '\t']) {
                match fields.last_mut() {
                    Some(f) => f.1.push_str(text.trim()),
                    None => {
                        return Err(format!(
                            "the record at byte {start} starts its header with a continuation line"
                        ));
                    }
                }
                continue;
            }
            let Some((name, value)) = text.split_once(':') else {
                return Err(format!(
                    "a header line of the record at byte {start} has no `:`"
                ));
            };
            if fields.len() >= MAX_FIELDS {
                return Err(format!(
                    "the record at byte {start} has more than {MAX_FIELDS} header fields"
                ));
            }
            fields.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
        let field = |name: &str| fields.iter().find(|f| f.0 == name).map(|f| f.1.clone());
        let length: u64 = field("content-length")
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("the record at byte {start} has no valid Content-Length"))?;
        let block = if length <= MAX_BLOCK {
            let mut block = vec![0u8; length as usize];
            self.input
                .read_exact(&mut block)
                .map_err(|_| format!("the record at byte {start} is truncated (its block is shorter than Content-Length)"))?;
            Some(block)
        } else {
            let skipped = io::copy(&mut (&mut self.input).take(length), &mut io::sink())
                .map_err(|e| format!("read failed in the record at byte {start}: {e}"))?;
            if skipped != length {
                return Err(format!("the record at byte {start} is truncated"));
            }
            None
        };
        self.offset += length;
        let mut end = [0u8; 4];
        self.input.read_exact(&mut end).map_err(|_| {
            format!("the record at byte {start} is truncated (no CRLF CRLF after its block)")
        })?;
        if &end != b"\r\n\r\n" {
            return Err(format!(
                "the record at byte {start} does not end with CRLF CRLF where its Content-Length says"
            ));
        }
        self.offset += 4;
        Ok(Some(Record {
            kind: field("warc-type").unwrap_or_default(),
            url: field("warc-target-uri")
                .map(|u| u.trim_start_matches('<').trim_end_matches('>').to_owned()),
            payload_digest: field("warc-payload-digest"),
            block,
        }))
    }
}

/// An HTTP response taken apart.
pub(crate) struct Response<'a> {
    pub(crate) status: u16,
    headers: Vec<(String, String)>,
    pub(crate) body: &'a [u8],
}

impl Response<'_> {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|h| h.0 == name)
            .map(|h| h.1.as_str())
    }

    /// The body without its transfer and content codings, at most [`MAX_BLOCK`] bytes;
    /// `None` when a coding is unknown or broken.
    pub(crate) fn decoded_body(&self) -> Option<Vec<u8>> {
        let mut body = self.body.to_vec();
        if self
            .header("transfer-encoding")
            .is_some_and(|t| t.to_ascii_lowercase().contains("chunked"))
        {
            body = dechunk(&body)?;
        }
        match self
            .header("content-encoding")
            .map(|c| c.trim().to_ascii_lowercase())
        {
            None => Some(body),
            Some(c) if c.is_empty() || c == "identity" => Some(body),
            Some(c) if c == "gzip" || c == "x-gzip" => {
                let mut out = Vec::new();
                flate2::read::MultiGzDecoder::new(&body[..])
                    .take(MAX_BLOCK)
                    .read_to_end(&mut out)
                    .ok()?;
                Some(out)
            }
            Some(c) if c == "deflate" => {
                let mut out = Vec::new();
                if flate2::read::ZlibDecoder::new(&body[..])
                    .take(MAX_BLOCK)
                    .read_to_end(&mut out)
                    .is_err()
                {
                    out.clear();
                    flate2::read::DeflateDecoder::new(&body[..])
                        .take(MAX_BLOCK)
                        .read_to_end(&mut out)
                        .ok()?;
                }
                Some(out)
            }
            Some(_) => None,
        }
    }
}

/// The HTTP response in a `response` record's block.
pub(crate) fn http_response(block: &[u8]) -> Option<Response<'_>> {
    let end = memchr::memmem::find(block, b"\r\n\r\n").map(|i| (i, i + 4))?;
    let head = std::str::from_utf8(&block[..end.0]).ok()?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next()?;
    let mut parts = status_line.split(' ');
    if !parts.next()?.starts_with("HTTP/") {
        return None;
    }
    let status = parts.next()?.parse().ok()?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Some(Response {
        status,
        headers,
        body: &block[end.1..],
    })
}

fn dechunk(mut body: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(body.len());
    loop {
        let line_end = memchr::memmem::find(body, b"\r\n")?;
        let size_text = std::str::from_utf8(&body[..line_end]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        body = &body[line_end + 2..];
        if size == 0 {
            return Some(out);
        }
        if body.len() < size + 2 || out.len() + size > MAX_BLOCK as usize {
            return None;
        }
        out.extend_from_slice(&body[..size]);
        body = &body[size + 2..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(kind: &str, block: &str) -> String {
        format!(
            "WARC/1.1\r\nWARC-Type: {kind}\r\nWARC-Target-URI: <https://a.example/>\r\nContent-Length: {}\r\n\r\n{block}\r\n\r\n",
            block.len()
        )
    }

    fn all(input: &str) -> Result<Vec<Record>, String> {
        let mut r = WarcReader::new(input.as_bytes());
        let mut out = Vec::new();
        while let Some(rec) = r.next_record()? {
            out.push(rec);
        }
        Ok(out)
    }

    #[test]
    fn records_are_read_one_after_the_other() {
        let input =
            record("warcinfo", "x: y\r\n") + &record("response", "HTTP/1.1 200 OK\r\n\r\nhi");
        let recs = all(&input).unwrap();
        assert_eq!(recs.len(), 2);
        assert_eq!(recs[1].url.as_deref(), Some("https://a.example/"));
        let block = recs[1].block.as_ref().unwrap();
        let resp = http_response(block).unwrap();
        assert_eq!((resp.status, resp.body), (200, &b"hi"[..]));
    }

    #[test]
    fn damage_is_an_error_that_says_where() {
        let good = record("response", "HTTP/1.1 200 OK\r\n\r\nhi");
        for cut in 1..good.len() {
            assert!(all(&good[..cut]).is_err(), "cut at {cut}");
        }
        let wrong_length = good.replace("Content-Length: 21", "Content-Length: 20");
        assert!(all(&wrong_length).unwrap_err().contains("CRLF CRLF"));
        assert!(all("HTTP/1.1 200 OK\r\n").unwrap_err().contains("byte 0"));
        assert!(
            all(&good.replace("Content-Length", "Length"))
                .unwrap_err()
                .contains("Content-Length")
        );
    }

    #[test]
    fn bodies_are_decoded() {
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n";
        assert_eq!(
            http_response(chunked).unwrap().decoded_body().unwrap(),
            b"abcde"
        );
        let mut gz = Vec::new();
        {
            use std::io::Write;
            let mut e = flate2::write::GzEncoder::new(&mut gz, flate2::Compression::fast());
            e.write_all(b"<p>hello</p>").unwrap();
        }
        let mut block = b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\r\n".to_vec();
        block.extend_from_slice(&gz);
        assert_eq!(
            http_response(&block).unwrap().decoded_body().unwrap(),
            b"<p>hello</p>"
        );
        let br = b"HTTP/1.1 200 OK\r\nContent-Encoding: br\r\n\r\nxx";
        assert!(http_response(br).unwrap().decoded_body().is_none());
    }
}
