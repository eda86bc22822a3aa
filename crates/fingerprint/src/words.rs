//! Text to words: lower-cased runs of letters and digits, with dates, times and "5 minutes
//! ago" each folded into one placeholder word.
//!
//! Dates and times are what changes between two fetches of the same page most often (a
//! "generated at" line, "last edited on", a clock), so they never tell two pages apart. Other
//! numbers are kept: an item number or a page number is often all that tells two pages apart.

/// What a word is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WordKind {
    /// Letters, or letters and digits.
    Text,
    /// ASCII digits only.
    Number,
    /// A date, in any of the usual spellings (`2024-03-05`, `5 March 2024`, `Mar 5, 2024`,
    /// `05/03/2024`), with a weekday before it.
    Date,
    /// A time of day (`12:05`, `12:05:59 pm`).
    Time,
    /// A relative time (`5 minutes ago`).
    Ago,
}

impl WordKind {
    /// The placeholder a date, time or relative time reads as; `None` for other words.
    pub(crate) fn placeholder(self) -> Option<&'static [u8]> {
        match self {
            WordKind::Date => Some(b"<date>"),
            WordKind::Time => Some(b"<time>"),
            WordKind::Ago => Some(b"<ago>"),
            WordKind::Text | WordKind::Number => None,
        }
    }
}

/// One word as the tokenizer found it: its lower-cased bytes in the shared buffer, and the
/// byte that followed it in the text (`b' '` for space or other characters, `0` at the end of
/// a run of text).
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawWord {
    pub(crate) start: u32,
    pub(crate) len: u32,
    pub(crate) kind: WordKind,
    pub(crate) after: u8,
}

/// The longest `&entity;` skipped as one separator.
const MAX_ENTITY: usize = 32;

/// Appends the words of `text` to `words`, their bytes to `buf`.
///
/// Letters and digits make words: ASCII ones, and any character that Unicode calls
/// alphanumeric. Bytes that are not UTF-8 count as letters, so pages in legacy encodings still
/// have words. Character references (`&amp;`, `&#8217;`) separate words like punctuation.
pub(crate) fn tokenize(text: &[u8], buf: &mut Vec<u8>, words: &mut Vec<RawWord>) {
    let mut i = 0;
    let n = text.len();
    while i < n {
        let b = text[i];
        if b == b'&' {
            let end = text[i + 1..]
                .iter()
                .take(MAX_ENTITY)
                .position(|c| !(c.is_ascii_alphanumeric() || *c == b'#'));
            if let Some(e) = end
                && e > 0
                && text[i + 1 + e] == b';'
            {
                i += e + 2;
                continue;
            }
            i += 1;
            continue;
        }
        let (len, alnum) = char_at(&text[i..]);
        if !alnum {
            i += len;
            continue;
        }
        // A word: as long as characters are alphanumeric.
        let start = buf.len();
        let mut digits_only = true;
        while i < n {
            let (len, alnum) = char_at(&text[i..]);
            if !alnum {
                break;
            }
            let c = &text[i..i + len];
            if len == 1 {
                digits_only &= c[0].is_ascii_digit();
                buf.push(c[0].to_ascii_lowercase());
            } else {
                digits_only = false;
                push_lowercase(c, buf);
            }
            i += len;
        }
        let after = match text.get(i) {
            None => 0,
            Some(&c) if c.is_ascii_punctuation() => c,
            Some(_) => b' ',
        };
        words.push(RawWord {
            start: start as u32,
            len: (buf.len() - start) as u32,
            kind: if digits_only {
                WordKind::Number
            } else {
                WordKind::Text
            },
            after,
        });
    }
}

/// The length of the character at the start of `s` and whether it is alphanumeric.
fn char_at(s: &[u8]) -> (usize, bool) {
    let b = s[0];
    if b < 0x80 {
        return (1, b.is_ascii_alphanumeric());
    }
    let len = match b {
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => return (1, true),
    };
    match s.get(..len).and_then(|c| std::str::from_utf8(c).ok()) {
        Some(c) => (len, c.chars().all(char::is_alphanumeric)),
        // Not UTF-8: a letter of some legacy encoding.
        None => (1, true),
    }
}

fn push_lowercase(c: &[u8], buf: &mut Vec<u8>) {
    match std::str::from_utf8(c) {
        Ok(s) => {
            for ch in s.chars().flat_map(char::to_lowercase) {
                let mut tmp = [0u8; 4];
                buf.extend_from_slice(ch.encode_utf8(&mut tmp).as_bytes());
            }
        }
        Err(_) => buf.extend_from_slice(c),
    }
}

/// A word after dates and times are folded: a range of the shared buffer, or a placeholder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Word {
    pub(crate) start: u32,
    pub(crate) len: u32,
    pub(crate) kind: WordKind,
}

/// Folds the dates, times and relative times among `raw` (one block's words) into single
/// words, appending the result to `out`.
pub(crate) fn fold(raw: &[RawWord], buf: &[u8], out: &mut Vec<Word>) {
    let text = |w: &RawWord| &buf[w.start as usize..(w.start + w.len) as usize];
    let mut i = 0;
    while i < raw.len() {
        let taken = date_at(raw, i, &text)
            .map(|n| (n, WordKind::Date))
            .or_else(|| time_at(raw, i, &text).map(|n| (n, WordKind::Time)))
            .or_else(|| ago_at(raw, i, &text).map(|n| (n, WordKind::Ago)));
        match taken {
            Some((n, kind)) => {
                // A weekday just before a date belongs to it.
                if kind == WordKind::Date
                    && let Some(last) = out.last()
                    && last.kind == WordKind::Text
                    && is_weekday(&buf[last.start as usize..(last.start + last.len) as usize])
                {
                    out.pop();
                }
                out.push(Word {
                    start: 0,
                    len: 0,
                    kind,
                });
                i += n;
            }
            None => {
                let w = &raw[i];
                out.push(Word {
                    start: w.start,
                    len: w.len,
                    kind: w.kind,
                });
                i += 1;
            }
        }
    }
}

fn digits(w: &RawWord, lo: u32, hi: u32) -> bool {
    w.kind == WordKind::Number && (lo..=hi).contains(&w.len)
}

/// An ordinal day (`3rd`, `21st`) or a plain day number.
fn is_day<'a>(w: &'a RawWord, text: &impl Fn(&'a RawWord) -> &'a [u8]) -> bool {
    if digits(w, 1, 2) {
        return true;
    }
    let t = text(w);
    t.len() >= 3
        && t.len() <= 4
        && t[..t.len() - 2].iter().all(u8::is_ascii_digit)
        && matches!(&t[t.len() - 2..], b"st" | b"nd" | b"rd" | b"th")
}

fn is_month(t: &[u8]) -> bool {
    matches!(
        t,
        b"jan"
            | b"january"
            | b"feb"
            | b"february"
            | b"mar"
            | b"march"
            | b"apr"
            | b"april"
            | b"may"
            | b"jun"
            | b"june"
            | b"jul"
            | b"july"
            | b"aug"
            | b"august"
            | b"sep"
            | b"sept"
            | b"september"
            | b"oct"
            | b"october"
            | b"nov"
            | b"november"
            | b"dec"
            | b"december"
    )
}

fn is_weekday(t: &[u8]) -> bool {
    matches!(
        t,
        b"mon"
            | b"monday"
            | b"tue"
            | b"tues"
            | b"tuesday"
            | b"wed"
            | b"wednesday"
            | b"thu"
            | b"thur"
            | b"thurs"
            | b"thursday"
            | b"fri"
            | b"friday"
            | b"sat"
            | b"saturday"
            | b"sun"
            | b"sunday"
    )
}

/// How many words from `i` make a date.
fn date_at<'a>(
    raw: &'a [RawWord],
    i: usize,
    text: &impl Fn(&'a RawWord) -> &'a [u8],
) -> Option<usize> {
    let w = |k: usize| raw.get(i + k);
    let a = w(0)?;
    // Numeric: 2024-03-05, 05/03/2024, 5.3.2024, 2024/03/05; an ISO time may follow.
    if let (Some(b), Some(c)) = (w(1), w(2))
        && a.kind == WordKind::Number
        && matches!(a.after, b'-' | b'/' | b'.')
        && b.kind == WordKind::Number
        && b.after == a.after
        && digits(b, 1, 2)
        && ((digits(a, 4, 4) && (digits(c, 1, 2) || iso_day_time(text(c))))
            || (digits(a, 1, 2) && digits(c, 2, 4)))
    {
        let mut n = 3;
        if iso_day_time(text(c)) {
            // `05T12` `:` `00` `:` `00z`: the rest of the time.
            let mut last = c;
            while last.after == b':' || last.after == b'.' {
                match w(n) {
                    Some(next) if text(next).first().is_some_and(u8::is_ascii_digit) => {
                        last = next;
                        n += 1;
                    }
                    _ => break,
                }
            }
        }
        return Some(n);
    }
    // 5 March 2024, 5th March, 5 March
    if is_day(a, text)
        && let Some(b) = w(1)
        && is_month(text(b))
    {
        return Some(if w(2).is_some_and(|c| digits(c, 4, 4)) {
            3
        } else {
            2
        });
    }
    // March 5, 2024 / March 5 / March 2024
    if is_month(text(a))
        && let Some(b) = w(1)
    {
        if digits(b, 4, 4) {
            return Some(2);
        }
        if is_day(b, text) {
            return Some(if w(2).is_some_and(|c| digits(c, 4, 4)) {
                3
            } else {
                2
            });
        }
    }
    None
}

/// `05t12`: the day and hour of an ISO date-time.
fn iso_day_time(t: &[u8]) -> bool {
    t.len() >= 3
        && t.len() <= 5
        && t.iter().filter(|&&c| c == b't').count() == 1
        && t.iter().all(|&c| c == b't' || c.is_ascii_digit())
        && t[0] != b't'
}

/// How many words from `i` make a time of day.
fn time_at<'a>(
    raw: &'a [RawWord],
    i: usize,
    text: &impl Fn(&'a RawWord) -> &'a [u8],
) -> Option<usize> {
    let a = raw.get(i)?;
    let b = raw.get(i + 1)?;
    if !(digits(a, 1, 2) && a.after == b':') {
        return None;
    }
    // The minutes, maybe with am/pm glued on (`12:05pm`).
    let minutes = text(b);
    let glued = minutes.len() == 4
        && minutes[..2].iter().all(u8::is_ascii_digit)
        && matches!(&minutes[2..], b"am" | b"pm");
    if !(digits(b, 2, 2) || glued) {
        return None;
    }
    let mut n = 2;
    if !glued
        && b.after == b':'
        && let Some(c) = raw.get(i + 2)
        && digits(c, 2, 2)
    {
        n = 3;
    }
    if let Some(d) = raw.get(i + n)
        && matches!(text(d), b"am" | b"pm" | b"utc" | b"gmt")
    {
        n += 1;
    }
    Some(n)
}

/// How many words from `i` make a relative time (`5 minutes ago`, `an hour ago`).
fn ago_at<'a>(
    raw: &'a [RawWord],
    i: usize,
    text: &impl Fn(&'a RawWord) -> &'a [u8],
) -> Option<usize> {
    let a = raw.get(i)?;
    let unit = raw.get(i + 1)?;
    let ago = raw.get(i + 2)?;
    let count = a.kind == WordKind::Number || matches!(text(a), b"a" | b"an" | b"one");
    let is_unit = matches!(
        text(unit),
        b"second"
            | b"seconds"
            | b"sec"
            | b"secs"
            | b"minute"
            | b"minutes"
            | b"min"
            | b"mins"
            | b"hour"
            | b"hours"
            | b"hr"
            | b"hrs"
            | b"day"
            | b"days"
            | b"week"
            | b"weeks"
            | b"month"
            | b"months"
            | b"year"
            | b"years"
    );
    (count && is_unit && text(ago) == b"ago").then_some(3)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        let mut buf = Vec::new();
        let mut raw = Vec::new();
        tokenize(text.as_bytes(), &mut buf, &mut raw);
        let mut out = Vec::new();
        fold(&raw, &buf, &mut out);
        out.iter()
            .map(|w| match w.kind.placeholder() {
                Some(p) => String::from_utf8_lossy(p).into_owned(),
                None => String::from_utf8_lossy(&buf[w.start as usize..(w.start + w.len) as usize])
                    .into_owned(),
            })
            .collect()
    }

    #[test]
    fn words_are_lower_cased_alphanumeric_runs() {
        assert_eq!(
            words("Hello, WORLD! Größe 42x café&amp;bar don&#8217;t"),
            ["hello", "world", "größe", "42x", "café", "bar", "don", "t"]
        );
    }

    #[test]
    fn legacy_bytes_are_letters() {
        let mut buf = Vec::new();
        let mut raw = Vec::new();
        tokenize(b"caf\xe9 ok", &mut buf, &mut raw);
        assert_eq!(raw.len(), 2);
        assert_eq!(&buf[..4], b"caf\xe9");
    }

    #[test]
    fn dates_fold_into_one_word() {
        for text in [
            "on 2024-03-05 we",
            "on 05/03/2024 we",
            "on 5.3.2024 we",
            "on 5 March 2024 we",
            "on 5th March we",
            "on March 5, 2024 we",
            "on Tuesday, March 5 we",
            "on Mar 2024 we",
            "on 2024-03-05T12:00:00Z we",
        ] {
            assert_eq!(words(text), ["on", "<date>", "we"], "{text}");
        }
    }

    #[test]
    fn times_and_ago_fold() {
        assert_eq!(words("at 12:05 pm ok"), ["at", "<time>", "ok"]);
        assert_eq!(words("at 9:05:59 ok"), ["at", "<time>", "ok"]);
        assert_eq!(words("at 12:05pm ok"), ["at", "<time>", "ok"]);
        assert_eq!(words("edited 5 minutes ago by"), ["edited", "<ago>", "by"]);
        assert_eq!(words("an hour ago"), ["<ago>"]);
    }

    #[test]
    fn other_numbers_stay() {
        assert_eq!(words("page 2 of 10"), ["page", "2", "of", "10"]);
        assert_eq!(words("item 1234-5"), ["item", "1234", "5"]);
        assert_eq!(words("3:2 win"), ["3", "2", "win"]);
        assert_eq!(words("may we"), ["may", "we"]);
    }
}
