//! Percent-encoding: the normalization of RFC 3986 sections 2.1, 2.3 and 6.2.2.2 (hex digits
//! in upper case, octets of unreserved characters decoded, everything else left encoded) used
//! by the crawler policy, and the decoding and encoding primitives the named conventions
//! build their own rules from.

/// `ALPHA / DIGIT / "-" / "." / "_" / "~"`: the characters whose encoded and plain forms are
/// equivalent (RFC 3986 section 2.3).
#[inline]
pub(crate) fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

#[inline]
pub(crate) fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'A'..=b'F' => Some(b - b'A' + 10),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    }
}

const UPPER_HEX: &[u8; 16] = b"0123456789ABCDEF";

/// A set of octets, as a table: `set[b]` is whether `b` is in it.
pub(crate) type ByteSet = [bool; 256];

/// The ASCII letters and digits plus the octets of `extra`.
pub(crate) const fn alphanumeric_and(extra: &[u8]) -> ByteSet {
    let mut set = [false; 256];
    let mut i = 0;
    while i < 256 {
        set[i] = (i as u8).is_ascii_alphanumeric();
        i += 1;
    }
    let mut j = 0;
    while j < extra.len() {
        set[extra[j] as usize] = true;
        j += 1;
    }
    set
}

/// Octets outside `0x21..=0x7E`, `#` and `%`: what Safe Browsing and the web archives' SURT
/// canonicalizers escape after unescaping everything.
pub(crate) const CONTROL_SPACE_HASH_PERCENT: ByteSet = {
    let mut set = [false; 256];
    let mut i = 0;
    while i < 256 {
        set[i] = i <= 0x20 || i >= 0x7f || i == b'#' as usize || i == b'%' as usize;
        i += 1;
    }
    set
};

/// Appends `src` to `out`, each octet in `escaped` written as `%XY` (upper-case hex) and the
/// others as they are.
pub(crate) fn escape_into(src: &[u8], escaped: &ByteSet, out: &mut Vec<u8>) {
    for &b in src {
        if escaped[usize::from(b)] {
            push_triplet(out, b);
        } else {
            out.push(b);
        }
    }
}

/// `%XY` for `octet`, upper-case hex.
#[inline]
pub(crate) fn push_triplet(out: &mut Vec<u8>, octet: u8) {
    out.extend_from_slice(&[
        b'%',
        UPPER_HEX[usize::from(octet >> 4)],
        UPPER_HEX[usize::from(octet & 0xf)],
    ]);
}

/// Decodes every `%XY` triplet of `src` once (any octet, reserved or not); a `%` not followed by
/// two hex digits is kept. With `plus_is_space`, `+` decodes to a space (form encoding).
pub(crate) fn decode(src: &[u8], plus_is_space: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(src.len());
    let mut i = 0;
    while i < src.len() {
        let b = src[i];
        if b == b'%'
            && let (Some(hi), Some(lo)) = (
                src.get(i + 1).copied().and_then(hex_value),
                src.get(i + 2).copied().and_then(hex_value),
            )
        {
            out.push(hi << 4 | lo);
            i += 3;
            continue;
        }
        out.push(if plus_is_space && b == b'+' { b' ' } else { b });
        i += 1;
    }
    out
}

/// Decodes `%XY` triplets until none is left to decode (`%2525` becomes `%`), as blocklists
/// and web archives do to see through layers of encoding. Terminates: every pass that changes
/// the input shortens it.
pub(crate) fn decode_repeatedly(src: &[u8]) -> Vec<u8> {
    let mut current = decode(src, false);
    if current == src {
        return current;
    }
    loop {
        let next = decode(&current, false);
        if next == current {
            return current;
        }
        current = next;
    }
}

/// Appends `src` to `out` with percent-encoding normalized; with `lowercase`, ASCII letters
/// outside percent-encoded triplets are lower-cased too. `src` comes from the WHATWG
/// serializer and is therefore ASCII; a malformed `%` (not followed by two hex digits) is
/// copied as it is, as the WHATWG parser does.
pub(crate) fn normalize_into(src: &str, out: &mut String, lowercase: bool) {
    if lowercase {
        return normalize_lowercase_into(src, out);
    }
    // Copy the runs between `%` signs whole: most URLs have few or none.
    let bytes = src.as_bytes();
    let mut copied = 0;
    let mut i = 0;
    while let Some(offset) = bytes[i..].iter().position(|&b| b == b'%') {
        let at = i + offset;
        i = at + 1;
        if let (Some(hi), Some(lo)) = (
            bytes.get(at + 1).copied().and_then(hex_value),
            bytes.get(at + 2).copied().and_then(hex_value),
        ) {
            out.push_str(&src[copied..at]);
            push_octet(out, hi, lo, false);
            i = at + 3;
            copied = i;
        }
    }
    out.push_str(&src[copied..]);
}

/// [`normalize_into`] with ASCII letters lower-cased outside percent-encoded triplets.
fn normalize_lowercase_into(src: &str, out: &mut String) {
    let bytes = src.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%'
            && let (Some(hi), Some(lo)) = (
                bytes.get(i + 1).copied().and_then(hex_value),
                bytes.get(i + 2).copied().and_then(hex_value),
            )
        {
            push_octet(out, hi, lo, true);
            i += 3;
            continue;
        }
        // Non-ASCII cannot occur in serializer output, but copying the whole character keeps
        // the function total for any `&str`.
        let ch_len = utf8_len(b);
        let end = (i + ch_len).min(bytes.len());
        if ch_len == 1 {
            out.push(b.to_ascii_lowercase() as char);
        } else {
            out.push_str(src.get(i..end).unwrap_or_default());
        }
        i = end;
    }
}

/// Appends the octet `hi lo`: decoded if unreserved, else as `%XY` in upper case.
///
/// One exception keeps canonicalization idempotent: a hex digit is left encoded when the output
/// ends with a stray `%` or `%X` (a `%` not starting a valid triplet), because decoding it
/// would complete a new triplet that the next pass would decode again (`%%330` would become
/// `%30`, then `0`).
#[inline]
fn push_octet(out: &mut String, hi: u8, lo: u8, lowercase: bool) {
    let octet = hi << 4 | lo;
    if is_unreserved(octet) && !(octet.is_ascii_hexdigit() && ends_with_stray_percent(out)) {
        out.push(fold(octet, lowercase) as char);
    } else {
        out.push('%');
        out.push(UPPER_HEX[usize::from(hi)] as char);
        out.push(UPPER_HEX[usize::from(lo)] as char);
    }
}

/// Whether `out` ends with `%` or `%` and one hex digit: the start of an incomplete triplet.
/// Complete triplets in the output always end in two hex digits after their `%`, so a `%` in
/// the last two positions can only be stray.
#[inline]
fn ends_with_stray_percent(out: &str) -> bool {
    match out.as_bytes() {
        [.., b'%'] => true,
        [.., b'%', d] => d.is_ascii_hexdigit(),
        _ => false,
    }
}

#[inline]
fn fold(b: u8, lowercase: bool) -> u8 {
    if lowercase { b.to_ascii_lowercase() } else { b }
}

#[inline]
fn utf8_len(first: u8) -> usize {
    match first {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stray_percent_does_not_complete_a_new_triplet() {
        for (input, lowercase) in [("/%%330", false), ("/%3%30", false), ("/%%330", true)] {
            let mut once = String::new();
            normalize_into(input, &mut once, lowercase);
            let mut twice = String::new();
            normalize_into(&once, &mut twice, lowercase);
            assert_eq!(once, twice, "{input}");
        }
        let mut out = String::new();
        normalize_into("/%%330/%41", &mut out, false);
        assert_eq!(out, "/%%330/A");
    }

    fn norm(s: &str, lower: bool) -> String {
        let mut out = String::new();
        normalize_into(s, &mut out, lower);
        out
    }

    #[test]
    fn upper_cases_hex_and_decodes_unreserved_only() {
        assert_eq!(norm("/a%2fb%7Ec%41%3a%zz%", false), "/a%2Fb~cA%3A%zz%");
        assert_eq!(norm("/A%41%2f", true), "/aa%2F");
        assert_eq!(norm("/é", true), "/é");
    }
}
