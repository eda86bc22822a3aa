//! Character references in attribute values (`&amp;`, `&#38;`, `&#x26;`), decoded as the HTML
//! Standard's tokenizer does before a link is resolved.
//!
//! The streaming parser hands attribute values over as written, so
//! `href="/doku.php?id=a&amp;do=edit"` would be fetched as `?id=a&amp;do=edit`: a URL the
//! site never linked, that it usually answers with another page's content. Only the named
//! references a URL can hold are decoded (`amp`, `lt`, `gt`, `quot`, `apos`, `nbsp`), and
//! like a browser, a legacy `&amp` without its `;` only when no `=` or letter or digit follows:
//! `?a=1&copy=2` stays as written.

use std::borrow::Cow;

/// `value` with its character references decoded.
pub(crate) fn decode(value: &str) -> Cow<'_, str> {
    if !value.contains('&') {
        return Cow::Borrowed(value);
    }
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        match reference(after) {
            Some((c, used)) => {
                out.push(c);
                rest = &after[used..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// The character a reference (the text after its `&`) stands for, and how many bytes it used.
fn reference(s: &str) -> Option<(char, usize)> {
    if let Some(num) = s.strip_prefix('#') {
        let (digits, radix, skip) = match num.strip_prefix(['x', 'X']) {
            Some(hex) => (hex, 16, 2),
            None => (num, 10, 1),
        };
        let len = digits
            .bytes()
            .take_while(|b| (b as &u8).is_ascii_digit() || (radix == 16 && b.is_ascii_hexdigit()))
            .count();
        if len == 0 {
            return None;
        }
        let code = u32::from_str_radix(&digits[..len], radix).unwrap_or(u32::MAX);
        // The tokenizer's replacements: NUL, surrogates and out-of-range values become U+FFFD.
        let c = char::from_u32(code)
            .filter(|&c| c != '\0')
            .unwrap_or('\u{FFFD}');
        let semi = usize::from(digits[len..].starts_with(';'));
        return Some((c, skip + len + semi));
    }
    for (name, c) in [
        ("amp", '&'),
        ("lt", '<'),
        ("gt", '>'),
        ("quot", '"'),
        ("apos", '\''),
        ("nbsp", '\u{a0}'),
    ] {
        let Some(tail) = s.strip_prefix(name) else {
            continue;
        };
        if tail.starts_with(';') {
            return Some((c, name.len() + 1));
        }
        // Legacy references without `;` (not `apos`), not before `=` or an alphanumeric.
        let legacy_ok = name != "apos"
            && !tail
                .bytes()
                .next()
                .is_some_and(|b| b == b'=' || b.is_ascii_alphanumeric());
        if legacy_ok {
            return Some((c, name.len()));
        }
        return None;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::decode;

    #[test]
    fn references_in_links() {
        for (value, decoded) in [
            ("/doku.php?id=a&amp;do=edit", "/doku.php?id=a&do=edit"),
            ("/p?a=1&#38;b=2&#x26;c=3&#X26;d", "/p?a=1&b=2&c=3&d"),
            ("/p?a=1&b=2", "/p?a=1&b=2"),
            ("/p?a=1&copy=2", "/p?a=1&copy=2"),
            ("/p?a=1&amp=2", "/p?a=1&amp=2"),
            ("/p?x&amp", "/p?x&"),
            ("/p?q=&quot;x&quot;", "/p?q=\"x\""),
            (
                "/p?q=&#0;&#xD800;&#99999999999;",
                "/p?q=\u{FFFD}\u{FFFD}\u{FFFD}",
            ),
            ("/p&#", "/p&#"),
            ("&", "&"),
            ("/é&amp;ü", "/é&ü"),
        ] {
            assert_eq!(decode(value), decoded, "{value}");
        }
    }
}
