//! Reading lines of unknown quality with bounded memory.

use std::io::{self, BufRead, BufReader, Read};

/// One line of input as the deduplicator sees it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line<'a> {
    /// A line of valid UTF-8 (line ending and surrounding white space removed).
    Text(&'a str),
    /// Nothing but white space.
    Empty,
    /// Longer than the limit; its bytes past the limit were skipped, not stored.
    TooLong(usize),
    /// Not valid UTF-8.
    NotUtf8,
}

/// Splits a reader into lines, never holding more than `max_len` bytes of one line, and
/// accepting `\n` and `\r\n` endings.
pub(crate) struct LineReader<R> {
    inner: BufReader<R>,
    max_len: usize,
    buf: Vec<u8>,
    consumed: u64,
}

impl<R: Read> LineReader<R> {
    /// Reads `inner` through a buffer of `capacity` bytes.
    pub(crate) fn new(inner: R, capacity: usize, max_len: usize) -> Self {
        Self {
            inner: BufReader::with_capacity(capacity, inner),
            max_len,
            buf: Vec::new(),
            consumed: 0,
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
        let mut total = 0usize;
        let mut any = false;
        loop {
            let chunk = match self.inner.fill_buf() {
                Ok(c) => c,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if chunk.is_empty() {
                break;
            }
            any = true;
            let (part, done) = match chunk.iter().position(|&b| b == b'\n') {
                Some(i) => (&chunk[..i], true),
                None => (chunk, false),
            };
            let room = (self.max_len + 1).saturating_sub(self.buf.len());
            self.buf.extend_from_slice(&part[..part.len().min(room)]);
            total += part.len();
            let used = part.len() + usize::from(done);
            self.inner.consume(used);
            self.consumed += used as u64;
            if done {
                break;
            }
        }
        if !any {
            return Ok(None);
        }
        if self.buf.last() == Some(&b'\r') && total <= self.max_len + 1 {
            self.buf.pop();
            total -= 1;
        }
        if total > self.max_len {
            return Ok(Some(Line::TooLong(total)));
        }
        Ok(Some(match std::str::from_utf8(&self.buf) {
            Ok(s) if s.trim().is_empty() => Line::Empty,
            Ok(s) => Line::Text(s.trim()),
            Err(_) => Line::NotUtf8,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[u8], max: usize) -> Vec<String> {
        let mut r = LineReader::new(input, 4, max);
        let mut out = Vec::new();
        while let Some(line) = r.next_line().unwrap() {
            out.push(format!("{line:?}"));
        }
        out
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
        assert_eq!(all(b"\xff\xfe\n", 100), ["NotUtf8"]);
        assert_eq!(all(b"0123456789\nok\n", 5), ["TooLong(10)", "Text(\"ok\")"]);
        assert_eq!(all(b"12345\r\n", 5), ["Text(\"12345\")"]);
    }

    #[test]
    fn tells_whether_the_next_line_is_buffered() {
        let mut r = LineReader::new(&b"ab\ncd\nef"[..], 64, 100);
        assert!(!r.next_line_is_buffered(), "nothing read yet");
        assert_eq!(r.next_line().unwrap(), Some(Line::Text("ab")));
        assert!(r.next_line_is_buffered());
        assert_eq!(r.next_line().unwrap(), Some(Line::Text("cd")));
        // "ef" has no line ending yet: a producer may still be writing it.
        assert!(!r.next_line_is_buffered());
        assert_eq!(r.next_line().unwrap(), Some(Line::Text("ef")));
        assert_eq!(r.next_line().unwrap(), None);
    }
}
