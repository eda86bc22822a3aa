//! Commands packed straight into RESP bytes.
//!
//! A batch of 1,000 URLs at k = 2 is about 2,000 `SET u1 <offset> 1` operations; building
//! them as `redis::Cmd` values costs the client more than Redis takes to run them (see
//! `docs/redis.md`), so the segment store writes the wire format into one buffer instead, the
//! request the connection layer sends as it is.

/// A pipeline of commands in RESP form.
#[derive(Default)]
pub(crate) struct Packed {
    pub(crate) buf: Vec<u8>,
    pub(crate) commands: usize,
}

impl Packed {
    /// Starts a command of `args` arguments (the command name counts).
    pub(crate) fn command(&mut self, args: usize) {
        self.commands += 1;
        self.buf.push(b'*');
        self.decimal(args as u64);
        self.buf.extend_from_slice(b"\r\n");
    }

    pub(crate) fn bulk(&mut self, bytes: &[u8]) {
        self.buf.push(b'$');
        self.decimal(bytes.len() as u64);
        self.buf.extend_from_slice(b"\r\n");
        self.buf.extend_from_slice(bytes);
        self.buf.extend_from_slice(b"\r\n");
    }

    pub(crate) fn bulk_u64(&mut self, value: u64) {
        let mut digits = [0u8; 20];
        let text = format_u64(value, &mut digits);
        self.bulk(text);
    }

    fn decimal(&mut self, value: u64) {
        let mut digits = [0u8; 20];
        let text = format_u64(value, &mut digits);
        self.buf.extend_from_slice(text);
    }
}

fn format_u64(mut value: u64, digits: &mut [u8; 20]) -> &[u8] {
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            return &digits[at..];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn packs_a_command() {
        let mut p = Packed::default();
        p.command(3);
        p.bulk(b"SETBIT");
        p.bulk(b"k");
        p.bulk_u64(1234);
        assert_eq!(p.buf, b"*3\r\n$6\r\nSETBIT\r\n$1\r\nk\r\n$4\r\n1234\r\n");
        assert_eq!(p.commands, 1);
    }

    proptest! {
        #[test]
        fn decimal_matches_std(v: u64) {
            let mut digits = [0u8; 20];
            let expected = v.to_string();
            prop_assert_eq!(format_u64(v, &mut digits), expected.as_bytes());
        }
    }
}
