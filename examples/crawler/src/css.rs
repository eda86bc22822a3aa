//! The references of a stylesheet: `url(...)` (images, fonts, other stylesheets) and
//! `@import "..."`, found and rewritten for the offline mirror.
//!
//! A small scanner, not a CSS parser: it skips comments and strings outside of references, so
//! `/* url(x) */` and `content: "url(x)"` are not references, and it never fails: input it does
//! not understand is left as it is.

use std::ops::Range;

/// One reference: where its URL text is in the stylesheet, and the text unescaped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Reference {
    pub(crate) span: Range<usize>,
    pub(crate) url: String,
}

/// The references of `css`, in order.
pub(crate) fn references(css: &str) -> Vec<Reference> {
    let b = css.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i = find(b, i + 2, b"*/").map_or(b.len(), |end| end + 2);
            }
            b'"' | b'\'' => i = string_end(b, i),
            b'u' | b'U' if starts_with_ignore_case(&b[i..], b"url(") && !ident_before(b, i) => {
                i = url_function(css, i + 4, &mut found);
            }
            b'@' if starts_with_ignore_case(&b[i + 1..], b"import") => {
                let mut j = skip_space(b, i + 7);
                if matches!(b.get(j), Some(b'"' | b'\'')) {
                    let end = string_end(b, j);
                    let inner = (j + 1)..end.saturating_sub(1).max(j + 1);
                    push(css, inner, &mut found);
                    j = end;
                }
                i = j.max(i + 1);
            }
            _ => i += 1,
        }
    }
    found
}

/// `css` with each reference's URL replaced by what `rewrite` returns for it (kept when
/// `None`); also returns the references.
pub(crate) fn rewrite(
    css: &str,
    mut rewrite: impl FnMut(&str) -> Option<String>,
) -> (String, Vec<Reference>) {
    let refs = references(css);
    let mut out = String::with_capacity(css.len());
    let mut at = 0;
    for r in &refs {
        if let Some(new) = rewrite(&r.url) {
            out.push_str(&css[at..r.span.start]);
            out.push_str(&escape(&new));
            at = r.span.end;
        }
    }
    out.push_str(&css[at..]);
    (out, refs)
}

/// Reads `url(` arguments from `start`; returns where scanning continues.
fn url_function(css: &str, start: usize, found: &mut Vec<Reference>) -> usize {
    let b = css.as_bytes();
    let i = skip_space(b, start);
    if matches!(b.get(i), Some(b'"' | b'\'')) {
        let end = string_end(b, i);
        push(css, (i + 1)..end.saturating_sub(1).max(i + 1), found);
        return end;
    }
    let mut j = i;
    while j < b.len() && b[j] != b')' {
        if b[j] == b'\\' {
            j += 1;
        }
        j += 1;
    }
    let mut k = j.min(b.len());
    while k > i && b[k - 1].is_ascii_whitespace() {
        k -= 1;
    }
    push(css, i..k, found);
    j.min(b.len())
}

fn push(css: &str, span: Range<usize>, found: &mut Vec<Reference>) {
    let Some(text) = css.get(span.clone()) else {
        return;
    };
    let url = unescape(text);
    if !url.trim().is_empty() {
        found.push(Reference { span, url });
    }
}

/// The index after the string starting at `start` (its closing quote, or the end of the line
/// or input for an unterminated one).
fn string_end(b: &[u8], start: usize) -> usize {
    let quote = b[start];
    let mut i = start + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'\n' => return i,
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

fn find(b: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    b.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

fn skip_space(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

fn starts_with_ignore_case(b: &[u8], prefix: &[u8]) -> bool {
    b.len() >= prefix.len() && b[..prefix.len()].eq_ignore_ascii_case(prefix)
}

/// Whether `url(` at `i` is the end of a longer name (`-webkit-url(`, `myurl(`).
fn ident_before(b: &[u8], i: usize) -> bool {
    i > 0 && (b[i - 1].is_ascii_alphanumeric() || matches!(b[i - 1], b'-' | b'_'))
}

/// CSS escapes in a URL: `\` followed by a character stands for that character (hex escapes
/// are rare in URLs and kept as written).
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A replacement URL, safe inside quotes or a bare `url(...)`.
fn escape(url: &str) -> String {
    let mut out = String::with_capacity(url.len());
    for c in url.chars() {
        if matches!(c, '"' | '\'' | '(' | ')' | '\\') || c.is_whitespace() {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(css: &str) -> Vec<String> {
        references(css).into_iter().map(|r| r.url).collect()
    }

    #[test]
    fn finds_urls_and_imports_but_not_comments_or_strings() {
        let css = r#"@import "base.css"; @import url(print.css) print;
            body { background: URL( 'img/bg.png' ) no-repeat; }
            /* url(commented.png) */ .x::after { content: "url(not-a-reference)"; }
            @font-face { src: url(fonts/a.woff2) format("woff2"), url("fonts/a.woff"); }
            .y { background-image: -webkit-image-set(url(a\ b.png) 1x); }"#;
        assert_eq!(
            urls(css),
            [
                "base.css",
                "print.css",
                "img/bg.png",
                "fonts/a.woff2",
                "fonts/a.woff",
                "a b.png"
            ]
        );
    }

    #[test]
    fn rewriting_replaces_only_the_url_text() {
        let css = r#"a{background:url("x.png")} b{background:url(y.png)} @import 'z.css';"#;
        let (out, refs) = rewrite(css, |u| (u != "y.png").then(|| format!("local/{u}")));
        assert_eq!(refs.len(), 3);
        assert_eq!(
            out,
            r#"a{background:url("local/x.png")} b{background:url(y.png)} @import 'local/z.css';"#
        );
    }

    proptest::proptest! {
        #[test]
        fn never_panics_and_spans_are_in_bounds(css in "[ -~\n]{0,200}") {
            for r in references(&css) {
                proptest::prop_assert!(r.span.end <= css.len() && r.span.start <= r.span.end);
            }
            let (same, _) = rewrite(&css, |_| None);
            proptest::prop_assert_eq!(same, css);
        }
    }
}
