//! Reading lines of unknown quality with bounded memory: an input is read in blocks of whole
//! lines, which other threads split and classify.

use std::io::{self, Read};
use std::ops::Range;

/// The byte order mark some editors put at the start of a UTF-8 file: not part of the text.
const BOM: &[u8] = b"\xef\xbb\xbf";

/// One line of input as the deduplicator sees it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line<'a> {
    /// A line of UTF-8 text, line ending and surrounding Unicode white space removed.
    Text(&'a str),
    /// A line compared as bytes: one that is not UTF-8 (text in another encoding), line
    /// ending and surrounding ASCII white space removed, or any line read exactly
    /// ([`Block::exact_lines`]).
    Bytes(&'a [u8]),
    /// Nothing but white space.
    Empty,
    /// Longer than the limit; its bytes past the limit were skipped, not stored.
    TooLong(usize),
    /// Holds a NUL byte or a carriage return that does not end the line: no URL does, and
    /// echoing it would corrupt the output (a bare CR rewinds a terminal line).
    Control(u8),
}

/// Whole lines of one input, in input order.
#[derive(Debug, Default)]
pub(crate) struct Block {
    /// Whole lines, each ended by `\n` except the last line of an input that has no ending.
    pub(crate) bytes: Vec<u8>,
    /// A line too long to keep comes after `bytes`: its length, ending excluded. Only its
    /// first `max_len + 2` bytes were ever held.
    pub(crate) too_long: Option<usize>,
    /// No line of the input came before this block's first one that is not too long, so that
    /// line may open with a byte order mark.
    pub(crate) at_start: bool,
    /// Bytes of the input read up to the end of this block, line endings included.
    pub(crate) consumed: u64,
    /// The input is a slow stream (a pipe, a terminal) and no whole line is left to read
    /// without waiting: whoever shows results should show these now.
    pub(crate) waiting: bool,
}

impl Block {
    /// The block's lines, in order, as [`Line`]s of at most `max_len` bytes.
    pub(crate) fn lines(&self, max_len: usize) -> Lines<'_> {
        // One validation for the whole block, where a line at a time cost a worker a tenth of
        // its time: the lines of valid UTF-8 are valid UTF-8, since a line ends at an ASCII
        // byte. A block with any other text is checked line by line.
        let rest = match std::str::from_utf8(&self.bytes) {
            Ok(text) => Rest::Text(text),
            Err(_) => Rest::Bytes(&self.bytes),
        };
        Lines {
            rest,
            too_long: self.too_long,
            max_len,
            at_start: self.at_start,
        }
    }

    /// The block's lines read exactly, as `awk` reads records: each is every byte up to `\n`
    /// (white space, `\r`, a byte order mark, NUL included; an empty line is a line), as
    /// [`Line::Bytes`], or [`Line::TooLong`] past `max_len` bytes.
    pub(crate) fn exact_lines(&self, max_len: usize) -> Lines<'_> {
        Lines {
            rest: Rest::Exact(&self.bytes),
            too_long: self.too_long,
            max_len,
            at_start: false,
        }
    }
}

/// Iterator over the lines of a [`Block`].
pub(crate) struct Lines<'a> {
    rest: Rest<'a>,
    too_long: Option<usize>,
    max_len: usize,
    at_start: bool,
}

/// The lines not yet handed out.
enum Rest<'a> {
    /// Known to be UTF-8.
    Text(&'a str),
    /// Not known to be.
    Bytes(&'a [u8]),
    /// Read exactly, whatever the bytes.
    Exact(&'a [u8]),
}

impl<'a> Iterator for Lines<'a> {
    type Item = Line<'a>;

    fn next(&mut self) -> Option<Line<'a>> {
        let (max_len, at_start) = (self.max_len, &mut self.at_start);
        let line = match &mut self.rest {
            Rest::Text(rest) => {
                next_text_line(rest).map(|line| classify_text_line(line, max_len, at_start))
            }
            Rest::Bytes(rest) => next_line(rest).map(|line| classify_line(line, max_len, at_start)),
            Rest::Exact(rest) => next_line(rest).map(|line| match line.len() {
                len if len > max_len => Line::TooLong(len),
                _ => Line::Bytes(line),
            }),
        };
        line.or_else(|| self.too_long.take().map(Line::TooLong))
    }
}

/// [`next_line`] for text.
fn next_text_line<'a>(rest: &mut &'a str) -> Option<&'a str> {
    if rest.is_empty() {
        return None;
    }
    // A newline is ASCII, so both sides of it are whole characters.
    let line = match find_newline(rest.as_bytes()).and_then(|end| rest.split_at_checked(end)) {
        Some((line, ending)) => {
            *rest = ending.get(1..).unwrap_or_default();
            line
        }
        None => std::mem::take(rest),
    };
    Some(line)
}

/// Takes the next line off `rest`, without its `\n`.
fn next_line<'a>(rest: &mut &'a [u8]) -> Option<&'a [u8]> {
    if rest.is_empty() {
        return None;
    }
    let line = match find_newline(rest) {
        Some(end) => {
            let line = &rest[..end];
            *rest = &rest[end + 1..];
            line
        }
        None => std::mem::take(rest),
    };
    Some(line)
}

/// A line's bytes without its `\r\n` or `\n` ending. A line of `max_len + 2` bytes or more was
/// never held whole (see [`BlockReader`]), so its `\r`, if any, counts towards its length.
fn without_cr(line: &[u8], max_len: usize) -> &[u8] {
    match line.strip_suffix(b"\r") {
        Some(without) if line.len() <= max_len.saturating_add(1) => without,
        _ => line,
    }
}

/// Where a line's content is, given its bytes without the `\n` ending: `Err(length)` past
/// `max_len`; while `at_start` is set the first line that is not loses a byte order mark (and
/// clears it). The one place these rules live, for lines of bytes and of text: the `\r` and
/// the mark it cuts are whole characters, so a line of text keeps character boundaries.
fn content(line: &[u8], max_len: usize, at_start: &mut bool) -> Result<Range<usize>, usize> {
    let end = without_cr(line, max_len).len();
    if end > max_len {
        return Err(end);
    }
    let start = match std::mem::take(at_start) && line[..end].starts_with(BOM) {
        true => BOM.len(),
        false => 0,
    };
    Ok(start..end)
}

/// What a line is, given its bytes without the `\n` ending (see [`content`]).
fn classify_line<'a>(line: &'a [u8], max_len: usize, at_start: &mut bool) -> Line<'a> {
    match content(line, max_len, at_start) {
        Err(length) => Line::TooLong(length),
        Ok(range) => match std::str::from_utf8(&line[range.clone()]) {
            Ok(text) => classify_text(text),
            Err(_) => classify_bytes(&line[range]),
        },
    }
}

/// [`classify_line`] for a line known to be UTF-8.
fn classify_text_line<'a>(line: &'a str, max_len: usize, at_start: &mut bool) -> Line<'a> {
    match content(line.as_bytes(), max_len, at_start) {
        Err(length) => Line::TooLong(length),
        Ok(range) => classify_text(line.get(range).unwrap_or_default()),
    }
}

/// What a line of text without its ending is.
fn classify_text(line: &str) -> Line<'_> {
    let trimmed = line.trim();
    match control(trimmed.as_bytes()) {
        _ if trimmed.is_empty() => Line::Empty,
        Some(b) => Line::Control(b),
        None => Line::Text(trimmed),
    }
}

/// What a line of bytes that are not UTF-8, without its ending, is.
fn classify_bytes(line: &[u8]) -> Line<'_> {
    let trimmed = line.trim_ascii();
    match control(trimmed) {
        _ if trimmed.is_empty() => Line::Empty,
        Some(b) => Line::Control(b),
        None => Line::Bytes(trimmed),
    }
}

/// The first NUL or carriage return in a trimmed line. memchr's vector search: a byte at a
/// time, this scan alone cost a tenth of a `--raw` run's CPU time.
fn control(trimmed: &[u8]) -> Option<u8> {
    memchr::memchr2(0, b'\r', trimmed).and_then(|at| trimmed.get(at).copied())
}

/// The index of the first `\n` in `bytes`.
fn find_newline(bytes: &[u8]) -> Option<usize> {
    memchr::memchr(b'\n', bytes)
}

/// Splits an input into [`Block`]s of whole lines, never holding more than `max_len + 2` bytes
/// of one line, and accepting `\n` and `\r\n` endings.
pub(crate) struct BlockReader<R> {
    inner: R,
    /// Read from a slow stream: hand out whole lines as soon as they arrive.
    streaming: bool,
    max_len: usize,
    /// Bytes per block when the input is a regular file.
    block: usize,
    /// Read and not handed out: whole lines, then the start of an unfinished one.
    pending: Vec<u8>,
    /// Bytes handed out so far, and the bytes of a too-long line skipped.
    consumed: u64,
    at_start: bool,
    /// The length so far of a too-long line being skipped.
    skipping: Option<usize>,
    eof: bool,
    /// Buffers of blocks already used, to read into again (see [`recycle`](Self::recycle)).
    spares: Vec<Vec<u8>>,
}

/// Spare buffers a reader keeps: enough for the blocks in flight between threads.
const SPARES: usize = 8;

impl<R: Read> BlockReader<R> {
    /// Reads `inner` in blocks of about `block` bytes (a regular file) or of whatever has
    /// arrived (`streaming`).
    pub(crate) fn new(inner: R, streaming: bool, block: usize, max_len: usize) -> Self {
        Self {
            inner,
            streaming,
            max_len,
            block: block.max(1),
            pending: Vec::new(),
            consumed: 0,
            at_start: true,
            skipping: None,
            eof: false,
            spares: Vec::new(),
        }
    }

    /// Takes back the buffer of a block that was used up, to read into again. Reading into
    /// memory the cache has just held is several times faster than into fresh memory, which
    /// the kernel must first map and zero, and its copy then misses the cache on every line.
    pub(crate) fn recycle(&mut self, mut buffer: Vec<u8>) {
        if self.spares.len() < SPARES {
            buffer.clear();
            self.spares.push(buffer);
        }
    }

    /// The next block, or `None` at the end of the input.
    pub(crate) fn next_block(&mut self) -> io::Result<Option<Block>> {
        loop {
            if let Some(skipped) = self.skipping {
                self.skip_line(skipped)?;
                if let Some(len) = self.skipping.take() {
                    return Ok(Some(self.hand_out(0, Some(len))));
                }
                continue;
            }
            if self.eof {
                if self.pending.is_empty() {
                    return Ok(None);
                }
                let all = self.pending.len();
                return Ok(Some(self.hand_out(all, None)));
            }
            let whole = self
                .pending
                .iter()
                .rposition(|&b| b == b'\n')
                .map(|i| i + 1);
            let unfinished = self.pending.len() - whole.unwrap_or(0);
            if unfinished >= self.max_len.saturating_add(2) {
                // No ending within `max_len + 2` bytes: too long whatever follows. Hand out
                // the lines before it, then skip it without storing it.
                let before = whole.map(|whole| self.hand_out(whole, None));
                self.pending.clear();
                self.consumed += unfinished as u64;
                self.skipping = Some(unfinished);
                if before.is_some() {
                    return Ok(before);
                }
                continue;
            }
            if let Some(whole) = whole
                && (self.pending.len() >= self.block || self.streaming)
            {
                let mut block = self.hand_out(whole, None);
                block.waiting = self.streaming;
                return Ok(Some(block));
            }
            self.fill()?;
        }
    }

    /// Reads once more into `pending`, at most what completes a block (at least 4 KiB).
    fn fill(&mut self) -> io::Result<()> {
        let want = self.block.saturating_sub(self.pending.len()).max(1 << 12);
        let start = self.pending.len();
        self.pending.resize(start + want, 0);
        let read = loop {
            match self.inner.read(&mut self.pending[start..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.pending.truncate(start);
                    return Err(e);
                }
            }
        };
        self.pending.truncate(start + read);
        self.eof = read == 0;
        Ok(())
    }

    /// Skips the rest of a too-long line of which `skipped` bytes were read, up to and
    /// including its ending; the length, ending excluded, stays in `skipping`.
    fn skip_line(&mut self, mut skipped: usize) -> io::Result<()> {
        let mut chunk = vec![0u8; 1 << 16];
        loop {
            let read = match self.inner.read(&mut chunk) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if read == 0 {
                self.eof = true;
                self.skipping = Some(skipped);
                return Ok(());
            }
            match find_newline(&chunk[..read]) {
                Some(end) => {
                    skipped += end;
                    self.consumed += end as u64 + 1;
                    // What follows the ending starts the next line.
                    self.pending.extend_from_slice(&chunk[end + 1..read]);
                    self.skipping = Some(skipped);
                    return Ok(());
                }
                None => {
                    skipped += read;
                    self.consumed += read as u64;
                }
            }
        }
    }

    /// Hands out the first `len` pending bytes, then the too-long line `too_long`.
    fn hand_out(&mut self, len: usize, too_long: Option<usize>) -> Block {
        // The rest (the start of an unfinished line) moves to a buffer of block size, so that
        // filling it up again copies nothing more.
        let mut rest = self
            .spares
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(self.block.saturating_add(1 << 12)));
        rest.extend_from_slice(&self.pending[len..]);
        self.pending.truncate(len);
        let bytes = std::mem::replace(&mut self.pending, rest);
        self.consumed += bytes.len() as u64;
        let at_start = self.at_start;
        // The input's start ends with its first line that is not too long.
        let mut lines = &bytes[..];
        while self.at_start
            && let Some(line) = next_line(&mut lines)
        {
            self.at_start = without_cr(line, self.max_len).len() > self.max_len;
        }
        Block {
            bytes,
            too_long,
            at_start,
            consumed: self.consumed,
            waiting: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A line as the tests spell it: text lines as (lossy) strings.
    fn show(line: &Line<'_>) -> String {
        match line {
            Line::Text(t) => format!("Text({t:?})"),
            Line::Bytes(t) => format!("Text({:?})", String::from_utf8_lossy(t)),
            other => format!("{other:?}"),
        }
    }

    /// Hands out its input a few bytes per read, as a pipe does.
    struct Trickle<'a> {
        input: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(buf.len()).min(self.input.len());
            buf[..n].copy_from_slice(&self.input[..n]);
            self.input = &self.input[n..];
            Ok(n)
        }
    }

    /// Every line of `input` read in blocks of `block` bytes (`step` bytes per read, as a
    /// stream when `streaming`), and the bytes consumed in all.
    fn read_all(
        input: &[u8],
        max: usize,
        block: usize,
        step: usize,
        streaming: bool,
    ) -> (Vec<String>, u64) {
        let mut r = BlockReader::new(Trickle { input, step }, streaming, block, max);
        let (mut out, mut consumed) = (Vec::new(), 0);
        while let Some(b) = r.next_block().unwrap() {
            assert!(b.consumed >= consumed, "consumed goes forward");
            consumed = b.consumed;
            out.extend(b.lines(max).map(|l| show(&l)));
        }
        (out, consumed)
    }

    fn all(input: &[u8], max: usize) -> Vec<String> {
        read_all(input, max, 4, 64, false).0
    }

    #[test]
    fn a_byte_order_mark_opens_the_first_line_only() {
        assert_eq!(
            all(b"\xef\xbb\xbfhttps://a.example/\n\xef\xbb\xbfx\n", 100),
            ["Text(\"https://a.example/\")", "Text(\"\\u{feff}x\")"]
        );
        assert_eq!(all(b"\xef\xbb\xbf\n", 100), ["Empty"]);
        // A first line too long to keep does not end the start of the input.
        for block in [1, 4, 64] {
            let (lines, _) = read_all(b"0123456789\n\xef\xbb\xbfok\nx\n", 5, block, 3, false);
            assert_eq!(lines, ["TooLong(10)", "Text(\"ok\")", "Text(\"x\")"]);
        }
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

    /// Read exactly, a line is what `awk` takes for a record: every byte up to `\n`.
    #[test]
    fn exact_lines_are_every_byte_up_to_a_newline() {
        let block = Block {
            bytes: b"\xef\xbb\xbfa\na \n a\n\na\r\n\0x\r\ny\x0bz\n123456\n\xff".to_vec(),
            at_start: true,
            ..Block::default()
        };
        let lines: Vec<Line<'_>> = block.exact_lines(5).collect();
        let want: [&[u8]; 7] = [
            b"\xef\xbb\xbfa",
            b"a ",
            b" a",
            b"",
            b"a\r",
            b"\0x\r",
            b"y\x0bz",
        ];
        let mut want: Vec<Line<'_>> = want.into_iter().map(Line::Bytes).collect();
        want.extend([Line::TooLong(6), Line::Bytes(b"\xff")]);
        assert_eq!(lines, want);
    }

    #[test]
    fn text_in_another_encoding_is_kept_as_bytes() {
        let block = Block {
            bytes: b" caf\xe9 \n".to_vec(),
            ..Block::default()
        };
        assert_eq!(block.lines(100).next(), Some(Line::Bytes(b"caf\xe9")));
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
        assert_eq!(read_all(b"1234567890\nab\n", 5, 4, 2, false).1, 14);
    }

    #[test]
    fn a_too_long_line_is_never_held_whole() {
        let mut input = b"ok\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', 1 << 20));
        input.extend(b"\nlast\n");
        let mut r = BlockReader::new(&input[..], false, 64, 10);
        let mut lines = Vec::new();
        while let Some(b) = r.next_block().unwrap() {
            assert!(b.bytes.len() <= 64 + (1 << 12) + 12, "{}", b.bytes.len());
            lines.extend(b.lines(10).map(|l| show(&l)));
        }
        assert_eq!(
            lines,
            ["Text(\"ok\")", "TooLong(1048576)", "Text(\"last\")"]
        );
    }

    /// The rules spelled out on whole lines, to check the block reader against.
    fn model(input: &[u8], max: usize) -> Vec<String> {
        let mut pieces: Vec<&[u8]> = input.split(|&b| b == b'\n').collect();
        if input.is_empty() || input.ends_with(b"\n") {
            pieces.pop();
        }
        let mut at_start = true;
        pieces
            .into_iter()
            .map(|mut line| {
                if line.ends_with(b"\r") && line.len() <= max + 1 {
                    line = &line[..line.len() - 1];
                }
                let line = if line.len() > max {
                    Line::TooLong(line.len())
                } else {
                    if std::mem::take(&mut at_start) && line.starts_with(BOM) {
                        line = &line[BOM.len()..];
                    }
                    let trimmed = match std::str::from_utf8(line) {
                        Ok(s) => s.trim().as_bytes(),
                        Err(_) => line.trim_ascii(),
                    };
                    if trimmed.is_empty() {
                        Line::Empty
                    } else if let Some(&b) = trimmed.iter().find(|&&b| b == b'\r' || b == 0) {
                        Line::Control(b)
                    } else {
                        match std::str::from_utf8(trimmed) {
                            Ok(text) => Line::Text(text),
                            Err(_) => Line::Bytes(trimmed),
                        }
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
                    for (block, step) in [(1, 1), (3, 2), (64, 64)] {
                        for streaming in [false, true] {
                            let (got, consumed) = read_all(&input, max, block, step, streaming);
                            assert_eq!(got, model(&input, max), "{input:?} max {max}");
                            assert_eq!(consumed, len as u64);
                        }
                    }
                }
            }
        }
    }

    /// Pieces of input: ASCII, multi-byte characters, Unicode white space (no-break space, em
    /// space), a byte order mark, control bytes, and bytes that are not UTF-8.
    const PIECES: &[&[u8]] = &[
        b"a",
        b"\r",
        b"\n",
        b" ",
        b"\xc3\xa9",
        b"\xc2\xa0",
        b"\xe2\x80\x83",
        BOM,
        b"\0",
        b"\xff",
        b"\xe2\x80",
        b"\t",
    ];

    proptest::proptest! {
        /// Blocks of valid UTF-8 are split as text, others line by line as bytes: both give
        /// the rules' lines, with multi-byte characters, Unicode white space, byte order
        /// marks and control bytes anywhere.
        #[test]
        fn matches_the_rules_on_mixed_text(
            pieces in proptest::collection::vec(
                proptest::sample::select(PIECES),
                0..40,
            ),
            max in 0usize..12,
            (block, step) in (1usize..48, 1usize..48),
            streaming in proptest::bool::ANY,
        ) {
            let input = pieces.concat();
            let (got, consumed) = read_all(&input, max, block, step, streaming);
            proptest::prop_assert_eq!(got, model(&input, max));
            proptest::prop_assert_eq!(consumed, input.len() as u64);
        }
    }

    #[test]
    fn newlines_are_found_in_every_position() {
        for len in 0..40 {
            for at in 0..=len {
                let mut bytes = vec![b'a'; len];
                if at < len {
                    bytes[at] = b'\n';
                    bytes[len - 1] = b'\n';
                }
                let want = bytes.iter().position(|&b| b == b'\n');
                assert_eq!(find_newline(&bytes), want, "{len} {at}");
            }
        }
        // Bytes next to a newline's value do not count.
        assert_eq!(find_newline(b"\x0b\x09\x8a\x0a"), Some(3));
    }

    #[test]
    fn a_stream_hands_out_whole_lines_as_they_arrive() {
        let mut r = BlockReader::new(
            Trickle {
                input: b"ab\ncd\nef",
                step: 4,
            },
            true,
            1 << 16,
            100,
        );
        let b = r.next_block().unwrap().unwrap();
        assert_eq!((&b.bytes[..], b.waiting), (&b"ab\n"[..], true));
        let b = r.next_block().unwrap().unwrap();
        assert_eq!((&b.bytes[..], b.waiting), (&b"cd\n"[..], true));
        // "ef" has no line ending until the input ends.
        let b = r.next_block().unwrap().unwrap();
        assert_eq!(&b.bytes[..], b"ef");
        assert!(r.next_block().unwrap().is_none());
    }

    #[test]
    fn a_file_is_read_in_full_blocks() {
        let input = b"https://a.example/\n".repeat(100);
        let mut r = BlockReader::new(&input[..], false, 64, 100);
        let b = r.next_block().unwrap().unwrap();
        assert!(b.bytes.len() >= 64 && b.bytes.ends_with(b"\n") && !b.waiting);
    }
}
