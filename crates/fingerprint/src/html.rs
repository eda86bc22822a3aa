//! A small HTML lexer: text, start tags with their attributes, end tags.
//!
//! Text extraction needs no tree, only the tags in the order they come, so this is a lexer in
//! the spirit of the HTML tokenizer: comments, doctypes and processing instructions are
//! skipped, the content of raw-text elements (`script`, `style`, ...) is never read as markup,
//! and malformed input ends a construct at the end of the input instead of failing. It reads
//! bytes, so pages in any ASCII-compatible encoding lex the same way.

/// A tag name, lower-cased; names longer than [`Name::CAP`] bytes keep their first bytes
/// (no element the extractor cares about has such a name).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Name {
    bytes: [u8; Name::CAP],
    len: u8,
}

impl Name {
    pub(crate) const CAP: usize = 14;

    fn new(raw: &[u8]) -> Self {
        let mut bytes = [0u8; Self::CAP];
        let len = raw.len().min(Self::CAP);
        for (b, r) in bytes.iter_mut().zip(raw) {
            *b = r.to_ascii_lowercase();
        }
        Self {
            bytes,
            len: len as u8,
        }
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }
}

impl std::fmt::Debug for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", String::from_utf8_lossy(self.as_bytes()))
    }
}

/// One thing the lexer found.
#[derive(Debug)]
pub(crate) enum Event<'a> {
    /// Character data outside tags, entities not decoded.
    Text(&'a [u8]),
    /// A start tag and the raw bytes of its attributes (read them with [`attribute`]).
    Start(Name, &'a [u8]),
    /// An end tag.
    End(Name),
}

/// Elements whose content is text to the tokenizer, never markup: the lexer skips it and
/// reports the start and end tags only.
fn is_raw_text(name: &[u8]) -> bool {
    matches!(
        name,
        b"script"
            | b"style"
            | b"textarea"
            | b"title"
            | b"xmp"
            | b"iframe"
            | b"noembed"
            | b"noframes"
            | b"noscript"
            | b"plaintext"
    )
}

/// Calls `sink` with each event of `html`, in order.
pub(crate) fn lex(html: &[u8], mut sink: impl FnMut(Event<'_>)) {
    let mut at = 0;
    let n = html.len();
    while at < n {
        let Some(lt) = memchr(b'<', &html[at..]).map(|i| at + i) else {
            sink(Event::Text(&html[at..]));
            return;
        };
        if lt > at {
            sink(Event::Text(&html[at..lt]));
        }
        let rest = &html[lt + 1..];
        match rest.first() {
            Some(b'!') if rest.starts_with(b"!--") => {
                // A comment ends at `-->` (or `--!>`); `<!-->` and `<!--->` end at once.
                let body = &rest[3..];
                at = if body.starts_with(b">") {
                    lt + 5
                } else if body.starts_with(b"->") {
                    lt + 6
                } else {
                    match find_comment_end(body) {
                        Some(end) => lt + 4 + end,
                        None => n,
                    }
                };
            }
            Some(b'!' | b'?') => at = skip_to_gt(html, lt + 1),
            Some(b'/') => match rest.get(1) {
                Some(c) if c.is_ascii_alphabetic() => {
                    let start = lt + 2;
                    let end = name_end(html, start);
                    sink(Event::End(Name::new(&html[start..end])));
                    at = skip_to_gt(html, end);
                }
                // `</>` is nothing; `</ ...>` is a bogus comment.
                _ => at = skip_to_gt(html, lt + 1),
            },
            Some(c) if c.is_ascii_alphabetic() => {
                let start = lt + 1;
                let end = name_end(html, start);
                let name = Name::new(&html[start..end]);
                let close = attributes_end(html, end);
                let attrs = &html[end..close.min(n)];
                sink(Event::Start(name, attrs));
                at = (close + 1).min(n);
                if is_raw_text(name.as_bytes()) {
                    let body_end = if name.as_bytes() == b"plaintext" {
                        n
                    } else {
                        find_end_tag(html, at, name.as_bytes()).unwrap_or(n)
                    };
                    if body_end < n {
                        sink(Event::End(name));
                        at = skip_to_gt(html, body_end + 2 + name.as_bytes().len());
                    } else {
                        at = n;
                    }
                }
            }
            // A `<` that opens nothing is text.
            _ => {
                sink(Event::Text(&html[lt..lt + 1]));
                at = lt + 1;
            }
        }
    }
}

fn memchr(needle: u8, haystack: &[u8]) -> Option<usize> {
    memchr::memchr(needle, haystack)
}

/// The offset just past the `-->` or `--!>` that ends a comment whose body starts at `body`.
fn find_comment_end(body: &[u8]) -> Option<usize> {
    let mut i = 0;
    loop {
        let dash = memchr(b'-', &body[i..])? + i;
        if body[dash..].starts_with(b"-->") {
            return Some(dash + 3);
        }
        if body[dash..].starts_with(b"--!>") {
            return Some(dash + 4);
        }
        i = dash + 1;
    }
}

/// The offset just past the next `>` at or after `from`, or the end of the input.
fn skip_to_gt(html: &[u8], from: usize) -> usize {
    let from = from.min(html.len());
    memchr(b'>', &html[from..]).map_or(html.len(), |i| from + i + 1)
}

fn name_end(html: &[u8], from: usize) -> usize {
    html[from..]
        .iter()
        .position(|&b| b.is_ascii_whitespace() || b == b'/' || b == b'>')
        .map_or(html.len(), |i| from + i)
}

/// The offset of the `>` that closes a start tag whose attributes start at `from` (the input's
/// length when none does). Quoted values may hold `>`.
fn attributes_end(html: &[u8], from: usize) -> usize {
    let mut i = from;
    let n = html.len();
    while i < n {
        match html[i] {
            b'>' => return i,
            b'=' => {
                i += 1;
                while i < n && html[i].is_ascii_whitespace() {
                    i += 1;
                }
                if let Some(&q @ (b'"' | b'\'')) = html.get(i) {
                    i = memchr(q, &html[i + 1..]).map_or(n, |j| i + 1 + j + 1);
                }
            }
            _ => i += 1,
        }
    }
    n
}

/// The offset of the `</name` that ends a raw-text element whose content starts at `from`.
fn find_end_tag(html: &[u8], from: usize, name: &[u8]) -> Option<usize> {
    let mut i = from;
    while i < html.len() {
        let lt = memchr(b'<', &html[i..])? + i;
        let after = lt + 2 + name.len();
        if html.get(lt + 1) == Some(&b'/')
            && html
                .get(lt + 2..after)
                .is_some_and(|n| n.eq_ignore_ascii_case(name))
            && html
                .get(after)
                .is_none_or(|&b| b.is_ascii_whitespace() || b == b'/' || b == b'>')
        {
            return Some(lt);
        }
        i = lt + 1;
    }
    None
}

/// The value of attribute `wanted` (lower-case) in the raw attribute bytes of a start tag.
pub(crate) fn attribute<'a>(attrs: &'a [u8], wanted: &[u8]) -> Option<&'a [u8]> {
    let mut i = 0;
    let n = attrs.len();
    while i < n {
        while i < n && (attrs[i].is_ascii_whitespace() || attrs[i] == b'/') {
            i += 1;
        }
        let start = i;
        while i < n && !attrs[i].is_ascii_whitespace() && !matches!(attrs[i], b'=' | b'>' | b'/') {
            i += 1;
        }
        if i == start {
            // A stray `=` or `>`: step over it.
            i += 1;
            continue;
        }
        let name = &attrs[start..i];
        while i < n && attrs[i].is_ascii_whitespace() {
            i += 1;
        }
        let mut value: &[u8] = b"";
        if i < n && attrs[i] == b'=' {
            i += 1;
            while i < n && attrs[i].is_ascii_whitespace() {
                i += 1;
            }
            match attrs.get(i) {
                Some(&q @ (b'"' | b'\'')) => {
                    let end = memchr(q, &attrs[i + 1..]).map_or(n, |j| i + 1 + j);
                    value = &attrs[i + 1..end];
                    i = end + 1;
                }
                _ => {
                    let start = i;
                    while i < n && !attrs[i].is_ascii_whitespace() {
                        i += 1;
                    }
                    value = &attrs[start..i];
                }
            }
        }
        if name.eq_ignore_ascii_case(wanted) {
            return Some(value);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(html: &str) -> Vec<String> {
        let mut out = Vec::new();
        lex(html.as_bytes(), |e| {
            out.push(match e {
                Event::Text(t) => format!("T({})", String::from_utf8_lossy(t)),
                Event::Start(n, a) => format!("S({n:?}|{})", String::from_utf8_lossy(a)),
                Event::End(n) => format!("E({n:?})"),
            })
        });
        out
    }

    #[test]
    fn tags_text_and_comments() {
        assert_eq!(
            events("a<P class=x>b<!-- <p> -->c</p >d<!doctype html><?x?>e"),
            [
                "T(a)",
                "S(p| class=x)",
                "T(b)",
                "T(c)",
                "E(p)",
                "T(d)",
                "T(e)"
            ]
        );
    }

    #[test]
    fn raw_text_is_not_markup() {
        assert_eq!(
            events("<script>if (a<b) { x = '</p>' }</SCRIPT>after<style>p{}</style>"),
            [
                "S(script|)",
                "E(script)",
                "T(after)",
                "S(style|)",
                "E(style)"
            ]
        );
        // `</scriptx>` does not end a script.
        assert_eq!(
            events("<script>a</scriptx>b</script>c"),
            ["S(script|)", "E(script)", "T(c)"]
        );
    }

    #[test]
    fn quoted_attributes_may_hold_gt() {
        assert_eq!(
            events(r#"<a title="1 > 0" href='x'>t</a>"#),
            [r#"S(a| title="1 > 0" href='x')"#, "T(t)", "E(a)"]
        );
    }

    #[test]
    fn malformed_input_ends_at_the_end() {
        for html in [
            "<",
            "<a",
            "<a href='",
            "<!--",
            "<!-- -",
            "</",
            "</a",
            "<script>",
            "a < b",
            "<!",
            "<?",
        ] {
            // Never panics, never loops; text before the construct is kept.
            let _ = events(html);
        }
        assert_eq!(events("a < b"), ["T(a )", "T(<)", "T( b)"]);
        assert_eq!(events("x<!-->y"), ["T(x)", "T(y)"]);
    }

    #[test]
    fn attribute_values() {
        let attrs = br#" id=main class="a b" role='navigation' hidden data-x = y "#;
        assert_eq!(attribute(attrs, b"id"), Some(&b"main"[..]));
        assert_eq!(attribute(attrs, b"class"), Some(&b"a b"[..]));
        assert_eq!(attribute(attrs, b"role"), Some(&b"navigation"[..]));
        assert_eq!(attribute(attrs, b"hidden"), Some(&b""[..]));
        assert_eq!(attribute(attrs, b"data-x"), Some(&b"y"[..]));
        assert_eq!(attribute(attrs, b"missing"), None);
        assert_eq!(attribute(b"= =", b"x"), None);
    }
}
