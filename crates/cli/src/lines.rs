//! Reading lines of unknown quality with bounded memory.

use std::io::{self, BufRead, BufReader, Read};

/// The byte order mark some editors put at the start of a UTF-8 file: not part of the text.
const BOM: &[u8] = b"\xef\xbb\xbf";

/// One line of input as the deduplicator sees it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line<'a> {
    /// A line's bytes, line ending and surrounding white space removed (Unicode white space
    /// when the line is UTF-8, ASCII white space otherwise). Not checked to be UTF-8: without
    /// canonicalization any bytes are a key.
    Text(&'a [u8]),
    /// Nothing but white space.
    Empty,
    /// Longer than the limit; its bytes past the limit were skipped, not stored.
    TooLong(usize),
    /// Holds a NUL byte or a carriage return that does not end the line: no URL does, and
    /// echoing it would corrupt the output (a bare CR rewinds a terminal line).
    Control(u8),
}

/// Splits a reader into lines, never holding more than `max_len` bytes of one line, and
/// accepting `\n` and `\r\n` endings.
pub(crate) struct LineReader<R> {
    inner: BufReader<R>,
    max_len: usize,
    buf: Vec<u8>,
    consumed: u64,
    /// No line returned yet: the first may start with a byte order mark.
    at_start: bool,
}

impl<R: Read> LineReader<R> {
    /// Reads `inner` through a buffer of `capacity` bytes.
    pub(crate) fn new(inner: R, capacity: usize, max_len: usize) -> Self {
        Self {
            inner: BufReader::with_capacity(capacity, inner),
            max_len,
            buf: Vec::new(),
            consumed: 0,
            at_start: true,
        }
    }

    /// Bytes read so far, line endings included.
    pub(crate) fn consumed(&self) -> u64 {
        self.consumed
    }

    /// Whether the next line is already whole in the buffer, so that
    /// [`next_line`](Self::next_line) returns it without reading from the source. When not,
    /// `next_line` may wait for a slow producer (a pipe from `tail -f`).
    pub(crate) fn next_line_is_buffered(&self) -> bool {
        self.inner.buffer().contains(&b'\n')
    }

    /// The next line, or `None` at the end of input.
    pub(crate) fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        self.buf.clear();
        // A line that is not too long fits in `max_len + 2` bytes with its `\r\n`; `read_until`
        // finds the ending with a vectorized search.
        let limit = self.max_len as u64 + 2;
        let read = (&mut self.inner)
            .take(limit)
            .read_until(b'\n', &mut self.buf)?;
        if read == 0 {
            return Ok(None);
        }
        self.consumed += read as u64;
        let mut total = if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
            self.buf.len()
        } else if (read as u64) < limit {
            // The last line, without an ending.
            self.buf.len()
        } else {
            read + self.skip_line()?
        };
        if self.buf.last() == Some(&b'\r') && total <= self.max_len + 1 {
            self.buf.pop();
            total -= 1;
        }
        if total > self.max_len {
            return Ok(Some(Line::TooLong(total)));
        }
        let mut line = &self.buf[..];
        if std::mem::take(&mut self.at_start) {
            line = line.strip_prefix(BOM).unwrap_or(line);
        }
        Ok(Some(classify(line)))
    }

    /// Skips the rest of a line that is too long, without storing it, and consumes its ending;
    /// returns the number of bytes skipped, the ending excluded.
    fn skip_line(&mut self) -> io::Result<usize> {
        let mut skipped = 0;
        loop {
            let chunk = match self.inner.fill_buf() {
                Ok(c) => c,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if chunk.is_empty() {
                return Ok(skipped);
            }
            let (part, done) = match chunk.iter().position(|&b| b == b'\n') {
                Some(i) => (i, true),
                None => (chunk.len(), false),
            };
            skipped += part;
            let used = part + usize::from(done);
            self.inner.consume(used);
            self.consumed += used as u64;
            if done {
                return Ok(skipped);
            }
        }
    }
}

/// What a line without its ending is.
fn classify(line: &[u8]) -> Line<'_> {
    let trimmed = match std::str::from_utf8(line) {
        Ok(s) => s.trim().as_bytes(),
        Err(_) => line.trim_ascii(),
    };
    if trimmed.is_empty() {
        return Line::Empty;
    }
    match trimmed.iter().find(|&&b| b == 0 || b == b'\r') {
        Some(&b) => Line::Control(b),
        None => Line::Text(trimmed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A line as the tests spell it: text lines as (lossy) strings.
    fn show(line: &Line<'_>) -> String {
        match line {
            Line::Text(t) => format!("Text({:?})", String::from_utf8_lossy(t)),
            other => format!("{other:?}"),
        }
    }

    fn all(input: &[u8], max: usize) -> Vec<String> {
        let mut r = LineReader::new(input, 4, max);
        let mut out = Vec::new();
        while let Some(line) = r.next_line().unwrap() {
            out.push(show(&line));
        }
        out
    }

    #[test]
    fn a_byte_order_mark_opens_the_first_line_only() {
        assert_eq!(
            all(b"\xef\xbb\xbfhttps://a.example/\n\xef\xbb\xbfx\n", 100),
            ["Text(\"https://a.example/\")", "Text(\"\\u{feff}x\")"]
        );
        assert_eq!(all(b"\xef\xbb\xbf\n", 100), ["Empty"]);
    }

    #[test]
    fn nul_and_bare_carriage_returns_make_a_line_invalid() {
        assert_eq!(
            all(
                b"https://a.example/\0x\nhttps://b.example/\rc\r\nok\r\n",
                100
            ),
            ["Control(0)", "Control(13)", "Text(\"ok\")"]
        );
    }

    #[test]
    fn text_in_another_encoding_is_kept_as_bytes() {
        let mut r = LineReader::new(&b" caf\xe9 \n"[..], 4, 100);
        assert_eq!(r.next_line().unwrap(), Some(Line::Text(b"caf\xe9")));
    }

    #[test]
    fn endings_and_edge_cases() {
        assert_eq!(
            all(b"a\r\nb\n\n  \nc", 100),
            [
                "Text(\"a\")",
                "Text(\"b\")",
                "Empty",
                "Empty",
                "Text(\"c\")"
            ]
        );
        assert_eq!(all(b"", 100), Vec::<String>::new());
        assert_eq!(all(b"\xff\xfe\n", 100), ["Text(\"\u{fffd}\u{fffd}\")"]);
        assert_eq!(all(b"0123456789\nok\n", 5), ["TooLong(10)", "Text(\"ok\")"]);
        assert_eq!(all(b"12345\r\n", 5), ["Text(\"12345\")"]);
    }

    #[test]
    fn lengths_around_the_limit() {
        assert_eq!(
            all(b"12345\n123456\n1234\r\n123456\r\n12345\r", 5),
            [
                "Text(\"12345\")",
                "TooLong(6)",
                "Text(\"1234\")",
                "TooLong(7)",
                "Text(\"12345\")"
            ]
        );
        // Skipped bytes are counted, with and without a final line ending.
        assert_eq!(
            all(b"1234567890\n12345678", 5),
            ["TooLong(10)", "TooLong(8)"]
        );
        assert_eq!(all(b"1234567\r\nok", 5), ["TooLong(8)", "Text(\"ok\")"]);
        let mut r = LineReader::new(&b"1234567890\nab\n"[..], 4, 5);
        assert_eq!(r.next_line().unwrap(), Some(Line::TooLong(10)));
        assert_eq!(r.consumed(), 11);
        assert_eq!(r.next_line().unwrap(), Some(Line::Text(b"ab")));
        assert_eq!(r.consumed(), 14);
    }

    /// The rules spelled out on whole lines, to check the buffered reader against.
    fn model(input: &[u8], max: usize) -> Vec<String> {
        let mut pieces: Vec<&[u8]> = input.split(|&b| b == b'\n').collect();
        if input.is_empty() || input.ends_with(b"\n") {
            pieces.pop();
        }
        pieces
            .into_iter()
            .map(|mut line| {
                if line.ends_with(b"\r") && line.len() <= max + 1 {
                    line = &line[..line.len() - 1];
                }
                let line = if line.len() > max {
                    Line::TooLong(line.len())
                } else {
                    let trimmed = match std::str::from_utf8(line) {
                        Ok(s) => s.trim().as_bytes(),
                        Err(_) => line.trim_ascii(),
                    };
                    if trimmed.is_empty() {
                        Line::Empty
                    } else if let Some(&b) = trimmed.iter().find(|&&b| b == b'\r') {
                        Line::Control(b)
                    } else {
                        Line::Text(trimmed)
                    }
                };
                show(&line)
            })
            .collect()
    }

    #[test]
    fn matches_the_rules_on_every_short_input() {
        const ALPHABET: [u8; 5] = [b'a', b'\r', b'\n', b' ', 0xff];
        for len in 0..=6 {
            for code in 0..ALPHABET.len().pow(len) {
                let input: Vec<u8> = (0..len)
                    .scan(code, |c, _| {
                        let b = ALPHABET[*c % ALPHABET.len()];
                        *c /= ALPHABET.len();
                        Some(b)
                    })
                    .collect();
                for max in 0..5 {
                    for capacity in [1, 3, 64] {
                        let mut r = LineReader::new(&input[..], capacity, max);
                        let mut got = Vec::new();
                        while let Some(line) = r.next_line().unwrap() {
                            got.push(show(&line));
                        }
                        assert_eq!(got, model(&input, max), "{input:?} max {max}");
                        assert_eq!(r.consumed(), len as u64);
                    }
                }
            }
        }
    }

    #[test]
    fn tells_whether_the_next_line_is_buffered() {
        let mut r = LineReader::new(&b"ab\ncd\nef"[..], 64, 100);
        assert!(!r.next_line_is_buffered(), "nothing read yet");
        assert_eq!(r.next_line().unwrap(), Some(Line::Text(b"ab")));
        assert!(r.next_line_is_buffered());
        assert_eq!(r.next_line().unwrap(), Some(Line::Text(b"cd")));
        // "ef" has no line ending yet: a producer may still be writing it.
        assert!(!r.next_line_is_buffered());
        assert_eq!(r.next_line().unwrap(), Some(Line::Text(b"ef")));
        assert_eq!(r.next_line().unwrap(), None);
    }
}
