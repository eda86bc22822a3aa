//! RESP replies as they come off a connection: where each ends ([`frame`], on the I/O thread,
//! without building anything), and what they say ([`Replies`], on the caller's thread).
//!
//! A batch of 1,000 URLs is answered by about 2,500 integers. Decoding them into the `redis`
//! crate's `Value` tree costs more than Redis spends setting the bits (see `docs/redis.md`),
//! so the segment store reads its `BITFIELD` replies straight from the bytes: integers,
//! simple strings, errors, bulk strings, nil and arrays, all that `BITFIELD`, `WATCH` and
//! `EXEC` answer. Every other reply is handed to the `redis` crate's parser, so callers keep
//! its `Value` and `FromRedisValue` conversions.

use std::io::{self, BufRead, Read};

/// Longest bulk string or array accepted from the server: far above any reply the layer asks
/// for, far below what would exhaust memory.
const MAX_LEN: usize = 64 << 20;

/// Deepest array nesting accepted (the store's replies nest at most twice, `CLUSTER SLOTS`
/// three times).
const MAX_DEPTH: usize = 32;

/// Longest reply line (type byte, number or simple string, CRLF) accepted.
const MAX_LINE: usize = 64 << 10;

/// One decoded reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reply {
    Int(i64),
    Simple(String),
    Bulk(Vec<u8>),
    Nil,
    Array(Vec<Reply>),
    Error(String),
}

/// The length of the first complete reply in `buf`: `Ok(None)` while it is cut short, an error
/// for bytes that are not RESP. Nothing is allocated for a length the server claims, so no
/// input can make it allocate without bound.
pub(crate) fn frame(buf: &[u8]) -> io::Result<Option<usize>> {
    let mut pos = 0;
    // Per open array, the values it still lacks; the outermost "array" is the reply itself.
    let mut open: Vec<usize> = vec![1];
    loop {
        let Some(newline) = buf[pos..].iter().position(|&b| b == b'\n') else {
            if buf.len() - pos > MAX_LINE {
                return Err(malformed("reply line too long"));
            }
            return Ok(None);
        };
        let line = &buf[pos..pos + newline + 1];
        if line.len() < 3 || !line.ends_with(b"\r\n") {
            return Err(malformed("reply line without CRLF"));
        }
        let body = &line[1..line.len() - 2];
        let after = pos + line.len();
        match line[0] {
            b'+' | b'-' => pos = after,
            b':' => {
                parse_int(body)?;
                pos = after;
            }
            b'$' => match parse_int(body)? {
                len if len < 0 => pos = after,
                len => {
                    let end = after + checked_len(len)? + 2;
                    if end > buf.len() {
                        return Ok(None);
                    }
                    if &buf[end - 2..end] != b"\r\n" {
                        return Err(malformed("bulk string without CRLF"));
                    }
                    pos = end;
                }
            },
            b'*' => {
                pos = after;
                let len = parse_int(body)?;
                if len > 0 {
                    if open.len() > MAX_DEPTH {
                        return Err(malformed("replies nested too deeply"));
                    }
                    open.push(checked_len(len)?);
                    continue;
                }
            }
            _ => return Err(malformed("unknown reply type")),
        }
        // One value is complete: close the arrays it completes.
        loop {
            let Some(lacking) = open.last_mut() else {
                return Ok(Some(pos));
            };
            *lacking -= 1;
            if *lacking > 0 {
                break;
            }
            open.pop();
            if open.is_empty() {
                return Ok(Some(pos));
            }
        }
    }
}

/// Replies received for one request, read in order.
pub(crate) struct Replies<'a> {
    rest: &'a [u8],
    line: Vec<u8>,
}

impl<'a> Replies<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Self {
            rest: bytes,
            line: Vec::with_capacity(64),
        }
    }

    /// The next reply through the `redis` crate's parser: error replies become
    /// `Value::ServerError`, as on the crate's own connections.
    pub(crate) fn value(&mut self) -> redis::RedisResult<redis::Value> {
        let len = frame(self.rest)?.ok_or_else(|| malformed("reply cut short"))?;
        let (reply, rest) = self.rest.split_at(len);
        self.rest = rest;
        redis::parse_redis_value(reply)
    }

    /// Skips `count` replies.
    pub(crate) fn skip(&mut self, count: usize) -> io::Result<()> {
        for _ in 0..count {
            let len = frame(self.rest)?.ok_or_else(|| malformed("reply cut short"))?;
            self.rest = &self.rest[len..];
        }
        Ok(())
    }

    /// Reads `count` replies and returns those after the first `skip`.
    pub(crate) fn receive(&mut self, count: usize, skip: usize) -> io::Result<Vec<Reply>> {
        let mut replies = Vec::with_capacity(count.saturating_sub(skip));
        for i in 0..count {
            let reply = self.read_reply()?;
            if i >= skip {
                replies.push(reply);
            }
        }
        Ok(replies)
    }

    /// Reads `count` `BITFIELD` replies, each an array whose first `header` values are
    /// integers of any size (appended to `headers`: a key's header fields) and whose others
    /// are 0 or 1 (appended to `bits`: `u1` fields), without building a reply tree. An error
    /// reply is returned as `Ok(Err(message))` after the remaining replies were read.
    pub(crate) fn bitfields(
        &mut self,
        count: usize,
        header: usize,
        headers: &mut Vec<i64>,
        bits: &mut Vec<u8>,
    ) -> io::Result<Result<(), String>> {
        let mut failure = None;
        for _ in 0..count {
            self.read_line()?;
            self.bitfield_values(header, headers, bits, &mut failure)?;
        }
        Ok(failure.map_or(Ok(()), Err))
    }

    /// [`bitfields`](Self::bitfields) for `count` `BITFIELD` commands sent inside `MULTI` ...
    /// `EXEC` with one more command queued after them (the transaction's token): reads `+OK`,
    /// the `+QUEUED`s, and the `EXEC` array. A transaction Redis refused (an error while
    /// queueing, `EXEC` answering nil) is `Ok(Err(message))`.
    pub(crate) fn bitfield_transaction(
        &mut self,
        count: usize,
        header: usize,
        headers: &mut Vec<i64>,
        bits: &mut Vec<u8>,
    ) -> io::Result<Result<(), String>> {
        let mut failure = None;
        // MULTI's +OK, then one +QUEUED per command (or an error that aborts the EXEC).
        for _ in 0..count + 2 {
            self.read_line()?;
            if self.line[0] == b'-' {
                failure
                    .get_or_insert_with(|| String::from_utf8_lossy(&self.line[1..]).into_owned());
            }
        }
        self.read_line()?;
        match self.line[0] {
            b'*' => {
                let len = parse_int(&self.line[1..])?;
                if len < 0 {
                    return Ok(Err("transaction aborted".to_owned()));
                }
                if checked_len(len)? != count + 1 {
                    return Err(malformed("EXEC answered the wrong number of replies"));
                }
                for _ in 0..count {
                    self.read_line()?;
                    self.bitfield_values(header, headers, bits, &mut failure)?;
                }
                self.read_reply()?;
            }
            b'-' => {
                failure
                    .get_or_insert_with(|| String::from_utf8_lossy(&self.line[1..]).into_owned());
            }
            _ => return Err(malformed("EXEC did not answer an array")),
        }
        Ok(failure.map_or(Ok(()), Err))
    }

    /// Reads one `BITFIELD` reply per command, each preceded by an `ASKING` reply where
    /// `asking` says so: per command its header values and bits, or the error it got (a
    /// cluster's `MOVED` or `ASK` among them), so each can be sent again on its own.
    pub(crate) fn each(&mut self, asking: &[bool], header: usize) -> io::Result<Vec<CommandReply>> {
        let mut out = Vec::with_capacity(asking.len());
        for &ask in asking {
            let mut asked = None;
            if ask {
                self.read_line()?;
                if self.line[0] == b'-' {
                    asked = Some(String::from_utf8_lossy(&self.line[1..]).into_owned());
                }
            }
            self.read_line()?;
            let (mut headers, mut bits, mut failure) = (Vec::new(), Vec::new(), None);
            self.bitfield_values(header, &mut headers, &mut bits, &mut failure)?;
            out.push(match asked.or(failure) {
                Some(message) => Err(message),
                None => Ok((headers, bits)),
            });
        }
        Ok(out)
    }

    /// The values of one `BITFIELD` reply whose first line is in `self.line`.
    fn bitfield_values(
        &mut self,
        header: usize,
        headers: &mut Vec<i64>,
        bits: &mut Vec<u8>,
        failure: &mut Option<String>,
    ) -> io::Result<()> {
        match self.line[0] {
            b'*' => {
                let len = checked_len(parse_int(&self.line[1..])?)?;
                if len < header {
                    return Err(malformed("BITFIELD answered fewer values than asked"));
                }
                for i in 0..len {
                    self.read_line()?;
                    match (i < header, self.line.as_slice()) {
                        (true, [b':', value @ ..]) => headers.push(parse_int(value)?),
                        (false, b":0") => bits.push(0),
                        (false, b":1") => bits.push(1),
                        _ => return Err(malformed("BITFIELD value of the wrong kind")),
                    }
                }
            }
            b'-' => {
                failure
                    .get_or_insert_with(|| String::from_utf8_lossy(&self.line[1..]).into_owned());
            }
            _ => return Err(malformed("BITFIELD did not answer an array")),
        }
        Ok(())
    }

    fn read_line(&mut self) -> io::Result<()> {
        read_line(&mut self.rest, &mut self.line)
    }

    fn read_reply(&mut self) -> io::Result<Reply> {
        read_reply(&mut self.rest, &mut self.line)
    }
}

/// Reads one CRLF-terminated line (without the CRLF) into `line`.
fn read_line(reader: &mut impl BufRead, line: &mut Vec<u8>) -> io::Result<()> {
    line.clear();
    let n = reader.take(MAX_LINE as u64).read_until(b'\n', line)?;
    if n == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "redis closed the connection",
        ));
    }
    if n < 3 || !line.ends_with(b"\r\n") {
        return Err(malformed("reply line without CRLF"));
    }
    line.truncate(n - 2);
    Ok(())
}

/// Decodes one reply. Lengths are checked against [`MAX_LEN`] before anything is allocated,
/// and nesting is bounded, so no input can make it allocate without bound or overflow the
/// stack.
fn read_reply(reader: &mut impl BufRead, line: &mut Vec<u8>) -> io::Result<Reply> {
    read_nested(reader, line, 0)
}

fn read_nested(reader: &mut impl BufRead, line: &mut Vec<u8>, depth: usize) -> io::Result<Reply> {
    if depth > MAX_DEPTH {
        return Err(malformed("replies nested too deeply"));
    }
    read_line(reader, line)?;
    match line[0] {
        b':' => Ok(Reply::Int(parse_int(&line[1..])?)),
        b'+' => Ok(Reply::Simple(
            String::from_utf8_lossy(&line[1..]).into_owned(),
        )),
        b'-' => Ok(Reply::Error(
            String::from_utf8_lossy(&line[1..]).into_owned(),
        )),
        b'$' => {
            let len = parse_int(&line[1..])?;
            if len < 0 {
                return Ok(Reply::Nil);
            }
            let len = checked_len(len)?;
            let mut data = Vec::new();
            reader.take(len as u64 + 2).read_to_end(&mut data)?;
            if data.len() != len + 2 || !data.ends_with(b"\r\n") {
                return Err(malformed("bulk string cut short or without CRLF"));
            }
            data.truncate(len);
            Ok(Reply::Bulk(data))
        }
        b'*' => {
            let len = parse_int(&line[1..])?;
            if len < 0 {
                return Ok(Reply::Nil);
            }
            let len = checked_len(len)?;
            // Grow with the data actually received, not with the length claimed.
            let mut items = Vec::with_capacity(len.min(1 << 12));
            for _ in 0..len {
                items.push(read_nested(reader, line, depth + 1)?);
            }
            Ok(Reply::Array(items))
        }
        _ => Err(malformed("unknown reply type")),
    }
}

fn parse_int(digits: &[u8]) -> io::Result<i64> {
    let (negative, digits) = match digits.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, digits),
    };
    if digits.is_empty() || digits.len() > 19 {
        return Err(malformed("bad integer"));
    }
    let mut value: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return Err(malformed("bad integer"));
        }
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add(i64::from(d - b'0')))
            .ok_or_else(|| malformed("integer overflow"))?;
    }
    Ok(if negative { -value } else { value })
}

fn checked_len(len: i64) -> io::Result<usize> {
    usize::try_from(len)
        .ok()
        .filter(|&l| l <= MAX_LEN)
        .ok_or_else(|| malformed("reply longer than the layer accepts"))
}

fn malformed(what: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

/// An error reply's message (`MOVED 3999 10.0.0.2:7000`) as the `redis` crate's error, with
/// its code, so that [`is_transient`](crate::retry::is_transient) and redirections read it.
pub(crate) fn error_reply(message: String) -> redis::RedisError {
    let line = format!("-{}\r\n", message.replace(['\r', '\n'], " "));
    match redis::parse_redis_value(line.as_bytes()).and_then(redis::Value::extract_error) {
        Err(e) => e,
        Ok(_) => {
            redis::RedisError::from((redis::ErrorKind::Client, "redis answered an error", message))
        }
    }
}

/// One command's reply in a cluster batch: its header values and bits, or the error it got.
pub(crate) type CommandReply = Result<(Vec<i64>, Vec<u8>), String>;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn integers_round_trip(v: i64) {
            prop_assume!(v != i64::MIN);
            prop_assert_eq!(parse_int(v.to_string().as_bytes()).unwrap(), v);
        }

        #[test]
        fn garbage_is_an_error_not_a_panic(bytes in prop::collection::vec(any::<u8>(), 0..30)) {
            let _ = parse_int(&bytes);
        }

        /// Any bytes from the network decode to a reply or an error: no panic, no allocation
        /// beyond the limits.
        #[test]
        fn arbitrary_replies_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
            let mut line = Vec::new();
            let mut reader = &bytes[..];
            while read_reply(&mut reader, &mut line).is_ok() && !reader.is_empty() {}
        }

        /// Framing finds the end of any well-formed reply, and nothing before it.
        #[test]
        fn a_reply_is_framed_only_when_complete(reply in reply_strategy(), tail in prop::collection::vec(any::<u8>(), 0..8)) {
            let mut bytes = Vec::new();
            encode(&reply, &mut bytes);
            let len = bytes.len();
            for cut in 0..len {
                prop_assert_eq!(frame(&bytes[..cut]).unwrap(), None);
            }
            bytes.extend_from_slice(&tail);
            prop_assert_eq!(frame(&bytes).unwrap(), Some(len));
            let mut replies = Replies::new(&bytes[..len]);
            prop_assert_eq!(replies.receive(1, 0).unwrap(), vec![reply]);
        }

        #[test]
        fn arbitrary_bytes_frame_without_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
            let _ = frame(&bytes);
        }

        #[test]
        fn well_formed_replies_round_trip(reply in reply_strategy()) {
            let mut bytes = Vec::new();
            encode(&reply, &mut bytes);
            let mut line = Vec::new();
            let mut reader = &bytes[..];
            prop_assert_eq!(read_reply(&mut reader, &mut line).unwrap(), reply);
            prop_assert!(reader.is_empty());
        }
    }

    #[test]
    fn claimed_lengths_do_not_allocate() {
        let mut line = Vec::new();
        for input in [
            &b"$9999999999\r\n"[..],
            b"*9999999999\r\n",
            b"*100000\r\n:1\r\n",
        ] {
            let mut reader = input;
            assert!(read_reply(&mut reader, &mut line).is_err());
        }
        let mut deep = Vec::new();
        for _ in 0..100 {
            deep.extend_from_slice(b"*1\r\n");
        }
        assert!(read_reply(&mut &deep[..], &mut line).is_err());
        assert!(frame(&deep).is_err());
        // A claimed length is not allocated: the reply is merely incomplete.
        assert_eq!(frame(b"*100000\r\n:1\r\n").unwrap(), None);
        assert_eq!(frame(b"$1000000\r\nab").unwrap(), None);
    }

    fn reply_strategy() -> impl Strategy<Value = Reply> {
        let leaf = prop_oneof![
            any::<i64>()
                .prop_filter("MIN has no positive twin", |v| *v != i64::MIN)
                .prop_map(Reply::Int),
            "[a-zA-Z0-9 ]{0,20}".prop_map(Reply::Simple),
            "[a-zA-Z0-9 ]{0,20}".prop_map(Reply::Error),
            prop::collection::vec(any::<u8>(), 0..40).prop_map(Reply::Bulk),
            Just(Reply::Nil),
        ];
        leaf.prop_recursive(3, 30, 6, |inner| {
            prop::collection::vec(inner, 0..6).prop_map(Reply::Array)
        })
    }

    fn encode(reply: &Reply, out: &mut Vec<u8>) {
        match reply {
            Reply::Int(v) => out.extend_from_slice(format!(":{v}\r\n").as_bytes()),
            Reply::Simple(s) => out.extend_from_slice(format!("+{s}\r\n").as_bytes()),
            Reply::Error(s) => out.extend_from_slice(format!("-{s}\r\n").as_bytes()),
            Reply::Nil => out.extend_from_slice(b"$-1\r\n"),
            Reply::Bulk(b) => {
                out.extend_from_slice(format!("${}\r\n", b.len()).as_bytes());
                out.extend_from_slice(b);
                out.extend_from_slice(b"\r\n");
            }
            Reply::Array(items) => {
                out.extend_from_slice(format!("*{}\r\n", items.len()).as_bytes());
                for item in items {
                    encode(item, out);
                }
            }
        }
    }
}
