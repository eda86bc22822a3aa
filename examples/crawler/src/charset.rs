//! The encoding a page or a stylesheet is written in, found the way a browser finds it (the
//! HTML Standard's encoding sniffing, CSS Syntax's), and the text decoded to UTF-8 for reading
//! its links.
//!
//! In order: a byte order mark; the `charset` of the HTTP `Content-Type`; what the document
//! declares at its start (a `<meta charset>` or `<meta http-equiv="Content-Type">` in the
//! first 1024 bytes, found by the HTML Standard's prescan; an XHTML page's XML declaration; a
//! stylesheet's `@charset`); then a guess: UTF-8 when the bytes are valid UTF-8, windows-1252
//! otherwise (the HTML Standard's usual default). A label no encoding has is ignored. Decoding
//! is `encoding_rs`, Firefox's implementation of the Encoding Standard.

use std::borrow::Cow;

use encoding_rs::{CoderResult, Encoding, UTF_8, UTF_16BE, UTF_16LE, WINDOWS_1252, X_USER_DEFINED};

/// How far the prescan looks for a `<meta>`, as the standard advises.
const PRESCAN: usize = 1024;

/// A page decoded for link extraction.
#[derive(Debug)]
pub(crate) struct Decoded<'a> {
    /// The page's encoding.
    pub(crate) encoding: &'static Encoding,
    /// The page in UTF-8: the body itself when it was UTF-8 already.
    pub(crate) utf8: Cow<'a, [u8]>,
    /// Decoding stopped before this byte of the body: its UTF-8 form reached the bound.
    pub(crate) cut_at: Option<usize>,
}

impl Decoded<'_> {
    /// Whether the page was in another encoding and [`Decoded::utf8`] is a transcoded copy.
    pub(crate) fn transcoded(&self) -> bool {
        matches!(self.utf8, Cow::Owned(_))
    }

    /// The encoding of the queries of URLs found on the page: the URL standard percent-encodes
    /// a query in its document's encoding (UTF-8 for UTF-16 pages); `None` for UTF-8.
    pub(crate) fn query_encoding(&self) -> Option<&'static Encoding> {
        let output = self.encoding.output_encoding();
        (output != UTF_8).then_some(output)
    }
}

/// What a document is, for what it may declare about its encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Syntax {
    /// An HTML page: a `<meta>` near its start.
    Html,
    /// An XHTML page: its XML declaration.
    Xml,
    /// A stylesheet: its `@charset` rule.
    Css,
}

/// `body` decoded by its encoding into at most `cap` bytes of UTF-8 (a page in windows-1252
/// can triple in UTF-8); `content_type` is the HTTP header's value (its `charset` counts).
pub(crate) fn decode<'a>(
    body: &'a [u8],
    content_type: &str,
    syntax: Syntax,
    cap: usize,
) -> Decoded<'a> {
    let encoding = sniff(body, content_type_charset(content_type), syntax);
    if encoding == UTF_8 {
        // Passed on as it is, byte order mark and all: the parser reads it as UTF-8.
        return Decoded {
            encoding,
            utf8: Cow::Borrowed(body),
            cut_at: None,
        };
    }
    let mut decoder = encoding.new_decoder_with_bom_removal();
    // Room for the body as it is (mostly ASCII, usually), grown up to the bound as needed.
    let mut text = String::with_capacity(body.len().min(cap));
    let mut read = 0;
    let cut_at = loop {
        let (result, n, _) = decoder.decode_to_string(&body[read..], &mut text, true);
        read += n;
        match result {
            CoderResult::InputEmpty => break None,
            CoderResult::OutputFull if text.capacity() >= cap => break Some(read),
            CoderResult::OutputFull => {
                let target = (text.capacity() * 2).max(64).min(cap);
                text.reserve_exact(target - text.len());
            }
        }
    };
    Decoded {
        encoding,
        utf8: Cow::Owned(text.into_bytes()),
        cut_at,
    }
}

/// The encoding of `body` (see the module's documentation); `transport` is the HTTP charset
/// label.
pub(crate) fn sniff(body: &[u8], transport: Option<&str>, syntax: Syntax) -> &'static Encoding {
    if let Some((encoding, _)) = Encoding::for_bom(body) {
        return encoding;
    }
    if let Some(encoding) = transport.and_then(|l| Encoding::for_label(l.as_bytes())) {
        return encoding;
    }
    let head = &body[..body.len().min(PRESCAN)];
    let declared = match syntax {
        Syntax::Html => prescan(head),
        Syntax::Xml => xml_declaration(head),
        Syntax::Css => css_charset(head),
    };
    if let Some(encoding) = declared {
        return encoding;
    }
    if std::str::from_utf8(body).is_ok() {
        UTF_8
    } else {
        WINDOWS_1252
    }
}

/// The `charset` parameter of a `Content-Type` value, unquoted.
pub(crate) fn content_type_charset(content_type: &str) -> Option<&str> {
    content_type.split(';').skip(1).find_map(|param| {
        let (name, value) = param.split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| value.trim().trim_matches('"').trim())
            .filter(|v| !v.is_empty())
    })
}

fn is_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ')
}

/// The HTML Standard's "prescan a byte stream to determine its encoding" over `bytes`: the
/// encoding the first `<meta>` that declares one names, skipping comments and other markup.
/// Running out of bytes inside a tag ends the scan with no answer.
fn prescan(bytes: &[u8]) -> Option<&'static Encoding> {
    if let Some(encoding) = utf16_xml(bytes) {
        return Some(encoding);
    }
    let mut scan = Scan { bytes, at: 0 };
    while scan.at < bytes.len() {
        let rest = &bytes[scan.at..];
        if rest.starts_with(b"<!--") {
            // To the first `-->`, whose dashes may be those of `<!--`.
            let from = scan.at + 2;
            let end = find(bytes, from, b"-->")?;
            scan.at = end + 3;
            continue;
        }
        if starts_with_ignore_case(rest, b"<meta")
            && rest.get(5).is_some_and(|&b| is_space(b) || b == b'/')
        {
            scan.at += 5;
            if let Some(encoding) = scan.meta()? {
                return Some(encoding);
            }
            continue;
        }
        let tag = match rest {
            [b'<', b'/', c, ..] | [b'<', c, ..] if c.is_ascii_alphabetic() => true,
            [b'<', b'!' | b'/' | b'?', ..] => {
                scan.at = find(bytes, scan.at, b">")? + 1;
                continue;
            }
            _ => false,
        };
        if tag {
            // Skip the tag's name, then its attributes, so a `<meta` inside a value is no tag.
            while scan.at < bytes.len() && !is_space(bytes[scan.at]) && bytes[scan.at] != b'>' {
                scan.at += 1;
            }
            while scan.attribute()?.is_some() {}
        }
        scan.at += 1;
    }
    None
}

/// A position in the bytes being prescanned.
struct Scan<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Scan<'_> {
    fn byte(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    /// Reads the attributes of a `<meta>` (the position is after `<meta`): `Some(encoding)`
    /// when it declares one, `Some(None)` when it does not, `None` when the bytes run out.
    fn meta(&mut self) -> Option<Option<&'static Encoding>> {
        let mut seen: Vec<Vec<u8>> = Vec::new();
        let (mut got_pragma, mut need_pragma, mut charset) = (false, None, None);
        while let Some((name, value)) = self.attribute()? {
            if seen.contains(&name) {
                continue;
            }
            match name.as_slice() {
                b"http-equiv" if value == b"content-type" => got_pragma = true,
                b"content" if charset.is_none() => {
                    if let Some(encoding) = charset_in_content(&value).and_then(Encoding::for_label)
                    {
                        charset = Some(Some(encoding));
                        need_pragma = Some(true);
                    }
                }
                b"charset" => {
                    charset = Some(Encoding::for_label(&value));
                    need_pragma = Some(false);
                }
                _ => {}
            }
            seen.push(name);
        }
        let declared = match need_pragma {
            None => None,
            Some(true) if !got_pragma => None,
            _ => charset.flatten(),
        };
        Some(declared.map(|e| match e {
            e if e == UTF_16BE || e == UTF_16LE => UTF_8,
            e if e == X_USER_DEFINED => WINDOWS_1252,
            e => e,
        }))
    }

    /// The standard's "get an attribute": `Some(Some((name, value)))` lower-cased,
    /// `Some(None)` at the tag's end (the position stays on `>`), `None` when the bytes run out.
    #[allow(clippy::type_complexity)]
    fn attribute(&mut self) -> Option<Option<(Vec<u8>, Vec<u8>)>> {
        while self.byte().is_some_and(|b| is_space(b) || b == b'/') {
            self.at += 1;
        }
        if self.byte()? == b'>' {
            return Some(None);
        }
        let (mut name, mut value) = (Vec::new(), Vec::new());
        // The name.
        loop {
            match self.byte()? {
                b'=' if !name.is_empty() => {
                    self.at += 1;
                    break;
                }
                b if is_space(b) => {
                    while self.byte().is_some_and(is_space) {
                        self.at += 1;
                    }
                    if self.byte()? != b'=' {
                        return Some(Some((name, value)));
                    }
                    self.at += 1;
                    break;
                }
                b'/' | b'>' => return Some(Some((name, value))),
                b => name.push(b.to_ascii_lowercase()),
            }
            self.at += 1;
        }
        // The value.
        while self.byte().is_some_and(is_space) {
            self.at += 1;
        }
        match self.byte()? {
            quote @ (b'"' | b'\'') => loop {
                self.at += 1;
                match self.byte()? {
                    b if b == quote => {
                        self.at += 1;
                        return Some(Some((name, value)));
                    }
                    b => value.push(b.to_ascii_lowercase()),
                }
            },
            b'>' => return Some(Some((name, value))),
            _ => {}
        }
        loop {
            match self.byte()? {
                b if is_space(b) || b == b'>' => return Some(Some((name, value))),
                b => value.push(b.to_ascii_lowercase()),
            }
            self.at += 1;
        }
    }
}

/// The standard's "extracting a character encoding from a meta element": the label after
/// `charset=` in a `content` value (`text/html; charset=shift_jis`).
fn charset_in_content(content: &[u8]) -> Option<&[u8]> {
    let mut at = 0;
    loop {
        at = find_ignore_case(content, at, b"charset")? + 7;
        while content.get(at).is_some_and(|&b| is_space(b)) {
            at += 1;
        }
        if content.get(at) == Some(&b'=') {
            break;
        }
    }
    at += 1;
    while content.get(at).is_some_and(|&b| is_space(b)) {
        at += 1;
    }
    match *content.get(at)? {
        quote @ (b'"' | b'\'') => {
            let end = content[at + 1..].iter().position(|&b| b == quote)?;
            Some(&content[at + 1..at + 1 + end])
        }
        _ => {
            let rest = &content[at..];
            let end = rest
                .iter()
                .position(|&b| is_space(b) || b == b';')
                .unwrap_or(rest.len());
            Some(&rest[..end])
        }
    }
}

/// UTF-16 when `bytes` start with an XML declaration in UTF-16 (`<?x` with zero bytes
/// between) and no byte order mark.
fn utf16_xml(bytes: &[u8]) -> Option<&'static Encoding> {
    if bytes.starts_with(b"<\0?\0x\0") {
        Some(UTF_16LE)
    } else if bytes.starts_with(b"\0<\0?\0x") {
        Some(UTF_16BE)
    } else {
        None
    }
}

/// The `encoding` of an XML declaration at the start of `bytes` (`<?xml version="1.0"
/// encoding="iso-8859-1"?>`).
fn xml_declaration(bytes: &[u8]) -> Option<&'static Encoding> {
    if !bytes.starts_with(b"<?xml") {
        return utf16_xml(bytes);
    }
    let end = find(bytes, 0, b"?>")?;
    let decl = &bytes[..end];
    let at = find(decl, 0, b"encoding")? + 8;
    let rest = decl[at..]
        .trim_ascii_start()
        .strip_prefix(b"=")?
        .trim_ascii_start();
    let quote = *rest.first().filter(|q| matches!(q, b'"' | b'\''))?;
    let label = &rest[1..1 + rest[1..].iter().position(|&b| b == quote)?];
    Encoding::for_label(label)
}

/// The encoding a stylesheet's `@charset "label";` names (CSS Syntax: exactly that spelling,
/// at the very start; a UTF-16 label means UTF-8).
fn css_charset(bytes: &[u8]) -> Option<&'static Encoding> {
    let rest = bytes.strip_prefix(b"@charset \"")?;
    let end = rest.iter().position(|&b| b == b'"')?;
    if rest.get(end + 1) != Some(&b';') {
        return None;
    }
    Encoding::for_label(&rest[..end]).map(|e| match e {
        e if e == UTF_16BE || e == UTF_16LE => UTF_8,
        e => e,
    })
}

/// `css` (a transcoded stylesheet) with a leading `@charset` rule saying UTF-8.
pub(crate) fn declare_utf8_css(css: &str) -> std::borrow::Cow<'_, str> {
    match css
        .strip_prefix("@charset \"")
        .and_then(|r| r.split_once("\";"))
    {
        Some((_, rest)) => format!("@charset \"utf-8\";{rest}").into(),
        None => css.into(),
    }
}

fn find(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

fn find_ignore_case(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
        .map(|p| p + from)
}

fn starts_with_ignore_case(hay: &[u8], prefix: &[u8]) -> bool {
    hay.len() >= prefix.len() && hay[..prefix.len()].eq_ignore_ascii_case(prefix)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(body: &[u8], content_type: &str) -> &'static str {
        sniff(body, content_type_charset(content_type), Syntax::Html).name()
    }

    /// One case per row: the body, the HTTP `Content-Type`, the encoding a browser uses.
    #[test]
    fn sniffing_follows_the_html_standard() {
        let cases: &[(&[u8], &str, &str)] = &[
            // A byte order mark beats everything.
            (
                b"\xEF\xBB\xBF<meta charset=latin1>",
                "text/html; charset=shift_jis",
                "UTF-8",
            ),
            (b"\xFF\xFE<\0a\0", "text/html; charset=utf-8", "UTF-16LE"),
            (b"\xFE\xFF\0<\0a", "text/html", "UTF-16BE"),
            // Then the HTTP charset, however it is spelled.
            (
                b"<meta charset=utf-8>",
                "text/html; charset=ISO-8859-1",
                "windows-1252",
            ),
            (b"", "text/html;charset=\"Shift_JIS\"", "Shift_JIS"),
            (b"", "text/html; foo=bar; CHARSET = sjis ", "Shift_JIS"),
            (b"x", "text/html; charset=utf-16le", "UTF-16LE"),
            // An unknown label counts for nothing.
            (
                b"<meta charset=euc-jp>",
                "text/html; charset=klingon",
                "EUC-JP",
            ),
            // Then a <meta> in the first 1024 bytes.
            (
                b"<!doctype html><meta charset='windows-1251'>",
                "text/html",
                "windows-1251",
            ),
            (b"<META CHARSET=KOI8-R>", "", "KOI8-R"),
            (
                b"<meta http-equiv=Content-Type content=\"text/html; charset=gb2312\">",
                "text/html",
                "GBK",
            ),
            (
                b"<meta content='text/html;charset=\"big5\"' http-equiv='content-type'>",
                "",
                "Big5",
            ),
            (b"<meta/charset=iso-8859-2>", "", "ISO-8859-2"),
            // `content` counts only with `http-equiv`; the first of a name counts.
            (
                b"<meta content=\"text/html; charset=big5\">\xff",
                "",
                "windows-1252",
            ),
            (b"<meta charset=koi8-r charset=big5>", "", "KOI8-R"),
            (
                b"<meta http-equiv=refresh content=\"charset=big5\">\xff",
                "",
                "windows-1252",
            ),
            // A declared UTF-16 is UTF-8 (the bytes are ASCII-compatible), x-user-defined
            // windows-1252.
            (b"<meta charset=utf-16le>", "", "UTF-8"),
            (b"<meta charset=x-user-defined>", "", "windows-1252"),
            // Comments, other tags and attribute values hide a <meta>.
            (b"<!-- <meta charset=big5> -->\xff", "", "windows-1252"),
            (b"<!--><meta charset=big5>", "", "Big5"),
            (b"<title x='<meta charset=big5>'>\xff", "", "windows-1252"),
            (b"<p><meta charset=euc-kr>", "", "EUC-KR"),
            (b"<?php <meta charset=big5> ?>\xff", "", "windows-1252"),
            // Unfinished, a <meta> is not seen.
            (b"<meta charset=big5", "", "UTF-8"),
            // No declaration: valid UTF-8 is UTF-8, anything else windows-1252.
            ("<p>caf\u{e9}".as_bytes(), "text/html", "UTF-8"),
            (b"<p>caf\xe9", "text/html", "windows-1252"),
            // A UTF-16 XML declaration without a byte order mark.
            (b"<\0?\0x\0m\0l\0", "", "UTF-16LE"),
        ];
        for (body, ct, want) in cases {
            assert_eq!(
                name(body, ct),
                *want,
                "{:?} {ct}",
                String::from_utf8_lossy(body)
            );
        }
        // Nor past the first 1024 bytes.
        let mut late = vec![b' '; 1020];
        late.extend(b"<meta charset=big5>\xff");
        assert_eq!(name(&late, ""), "windows-1252");
        assert_eq!(name(&late[20..], ""), "Big5");
    }

    #[test]
    fn xhtml_reads_its_xml_declaration() {
        let page = b"<?xml version='1.0' encoding='ISO-8859-15'?><html><meta charset=big5>";
        assert_eq!(sniff(page, None, Syntax::Xml).name(), "ISO-8859-15");
        assert_eq!(
            sniff(b"<html>\xff", None, Syntax::Xml).name(),
            "windows-1252"
        );
    }

    #[test]
    fn stylesheets_read_their_charset_rule() {
        let css = |body: &[u8], ct: &str| sniff(body, content_type_charset(ct), Syntax::Css).name();
        assert_eq!(
            css(b"@charset \"iso-8859-5\"; a{}", "text/css"),
            "ISO-8859-5"
        );
        assert_eq!(
            css(b"@charset \"iso-8859-5\"; a{}", "text/css; charset=koi8-r"),
            "KOI8-R"
        );
        assert_eq!(css(b"@charset \"utf-16\";", "text/css"), "UTF-8");
        // Only the exact spelling counts.
        assert_eq!(
            css(b"@charset 'iso-8859-5'; \xff", "text/css"),
            "windows-1252"
        );
        assert_eq!(
            css(b" @charset \"iso-8859-5\"; \xff", "text/css"),
            "windows-1252"
        );
        assert_eq!(
            declare_utf8_css("@charset \"latin1\"; a{}"),
            "@charset \"utf-8\"; a{}"
        );
        assert_eq!(declare_utf8_css("a{}"), "a{}");
    }

    #[test]
    fn pages_are_decoded_and_utf8_pages_borrowed() {
        let latin = decode(
            b"<a href='/caf\xe9'>",
            "text/html; charset=iso-8859-1",
            Syntax::Html,
            1 << 20,
        );
        assert!(latin.transcoded());
        assert_eq!(latin.utf8.as_ref(), "<a href='/caf\u{e9}'>".as_bytes());
        assert_eq!(latin.query_encoding(), Some(WINDOWS_1252));
        let utf16: Vec<u8> = "\u{feff}<a href=x>"
            .encode_utf16()
            .flat_map(u16::to_be_bytes)
            .collect();
        let d = decode(&utf16, "text/html", Syntax::Html, 1 << 20);
        assert_eq!(
            (d.encoding, d.utf8.as_ref()),
            (UTF_16BE, &b"<a href=x>"[..])
        );
        // A URL's query on a UTF-16 page is UTF-8.
        assert_eq!(d.query_encoding(), None);
        let utf8 = decode(b"<a>", "text/html; charset=utf-8", Syntax::Html, 1 << 20);
        assert!(!utf8.transcoded());
    }

    /// A page of `€` in windows-1252 triples in UTF-8: decoding stops at the bound, at a
    /// character's boundary, and says where.
    #[test]
    fn decoding_stops_at_its_bound() {
        let body = vec![0x80u8; 10_000];
        let d = decode(
            &body,
            "text/html; charset=windows-1252",
            Syntax::Html,
            4_000,
        );
        assert_eq!(d.utf8.len(), 3_999);
        assert_eq!(d.cut_at, Some(1_333));
        assert!(
            std::str::from_utf8(&d.utf8)
                .unwrap()
                .chars()
                .all(|c| c == '\u{20ac}')
        );
        let whole = decode(
            &body,
            "text/html; charset=windows-1252",
            Syntax::Html,
            30_000,
        );
        assert_eq!((whole.utf8.len(), whole.cut_at), (30_000, None));
    }

    proptest::proptest! {
        #[test]
        fn sniffing_never_panics(body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300), meta in "<[mM][eE][tT][aA][ /][ -~]{0,40}") {
            let _ = sniff(&body, None, Syntax::Html);
            let mut page = meta.into_bytes();
            page.extend(&body);
            for syntax in [Syntax::Html, Syntax::Xml, Syntax::Css] {
                let _ = sniff(&page, None, syntax);
            }
        }
    }
}
