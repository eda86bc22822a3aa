//! `--explain`: one tab-separated row per dropped line, saying where it is, why it was
//! dropped, and which earlier line it was folded into, so that a person can find both.
//!
//! ```text
//! duplicate  urls.txt:7  HTTPS://A.example/x  urls.txt:2  same canonical form
//! similar    urls.txt:9  https://a.example/x?sort=name  urls.txt:2  seen: path:query_key
//! invalid    urls.txt:4  /relative  -  not an absolute URL (relative reference without a base)
//! ```
//!
//! Fields are escaped so that a row stays one row: `\` as `\\`, tab as `\t`, line feed as
//! `\n`, carriage return as `\r`, other ASCII control bytes and bytes that are not UTF-8 as
//! `\xHH`.
//!
//! To name the earlier line, the run keeps where each key it kept was first seen (and, with a
//! similarity preset that has one, where each page was): about 30 bytes per distinct URL,
//! only with `--explain`.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::{self, Write};
use std::sync::Arc;

use url_dedup::similarity::{Feature, Preset, UrlParts};
use xxhash_rust::xxh3::xxh3_64;

/// A line of the input: its input's index and its number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Place {
    pub(crate) source: usize,
    pub(crate) line: u64,
}

/// Where else a key may have been seen than earlier in this run's input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Memory {
    /// Nowhere: the filter starts empty.
    ThisRun,
    /// In earlier runs (`--state`).
    State,
    /// By other runs and processes (`--redis`).
    Shared,
}

/// Writes `--explain` rows and remembers where keys were first seen.
pub(crate) struct Explainer<W> {
    out: W,
    /// Input names by index, escaped.
    names: Vec<String>,
    memory: Memory,
    /// The word for what a duplicate shares with its earlier line.
    same: &'static str,
    /// Where each key this run kept or folded was first seen, by a hash of the key.
    keys: Places,
    /// With a similarity preset that folds on one feature (the page and its query key), where
    /// each value of it was first seen.
    pages: Option<(Arc<dyn Feature>, Places)>,
    value: Vec<u8>,
}

type Places = HashMap<u64, Place, BuildHasherDefault<Prehashed>>;

impl<W: Write> Explainer<W> {
    /// Rows go to `out`; `names` are the inputs' names. `same` says what a duplicate shares
    /// with its earlier line (`same canonical form`, `same line`); with `similar`, pages are
    /// remembered too when the preset folds on the page feature.
    pub(crate) fn new(
        out: W,
        names: &[String],
        memory: Memory,
        same: &'static str,
        similar: Option<Preset>,
    ) -> Self {
        let pages = similar
            .filter(|p| matches!(p, Preset::Page | Preset::Crawler))
            .and_then(|_| Preset::Page.features().into_iter().next())
            .map(|feature| (feature, Places::default()));
        Self {
            out,
            names: names.iter().map(|n| escaped(n.as_bytes())).collect(),
            memory,
            same,
            keys: Places::default(),
            pages,
            value: Vec::new(),
        }
    }

    /// The line at `place` was kept: it is the earlier line of its key's duplicates and of
    /// its page's similar URLs.
    pub(crate) fn kept(&mut self, place: Place, key: &[u8]) {
        self.keys.entry(xxh3_64(key)).or_insert(place);
        if let Some(hash) = self.page(key)
            && let Some((_, pages)) = self.pages.as_mut()
        {
            pages.entry(hash).or_insert(place);
        }
    }

    /// The line at `place` was a duplicate of an earlier key.
    pub(crate) fn duplicate(&mut self, place: Place, line: &[u8], key: &[u8]) -> io::Result<()> {
        match self.keys.get(&xxh3_64(key)).copied() {
            Some(earlier) => self.row("duplicate", place, Some(line), Some(earlier), self.same),
            None => {
                let why = match self.memory {
                    Memory::ThisRun => "not in this input before: a false positive of the filter",
                    Memory::State => {
                        "not in this input before: seen in an earlier run, or a false positive"
                    }
                    Memory::Shared => {
                        "not in this input before: seen by the shared filter, or a false positive"
                    }
                };
                self.row("duplicate", place, Some(line), None, why)
            }
        }
    }

    /// The line at `place` was folded into an earlier similar one; `why` names the features
    /// seen. Its key counts as seen from now on.
    pub(crate) fn similar(
        &mut self,
        place: Place,
        line: &[u8],
        key: &[u8],
        why: &str,
    ) -> io::Result<()> {
        self.keys.entry(xxh3_64(key)).or_insert(place);
        let earlier = self
            .page(key)
            .and_then(|hash| self.pages.as_ref()?.1.get(&hash).copied());
        self.row("similar", place, Some(line), earlier, why)
    }

    /// The line at `place` is no URL the run accepts (its bytes when it has them).
    pub(crate) fn invalid(
        &mut self,
        place: Place,
        line: Option<&[u8]>,
        why: &str,
    ) -> io::Result<()> {
        self.row("invalid", place, line, None, why)
    }

    pub(crate) fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// The output, for tests.
    #[cfg(test)]
    pub(crate) fn into_inner(self) -> W {
        self.out
    }

    /// The hash of the page feature's value for `key`, with a page-folding preset.
    fn page(&mut self, key: &[u8]) -> Option<u64> {
        let (feature, _) = self.pages.as_ref()?;
        let url = std::str::from_utf8(key).ok()?;
        self.value.clear();
        feature.write_value(&UrlParts::parse(url), &mut self.value);
        Some(xxh3_64(&self.value))
    }

    fn row(
        &mut self,
        kind: &str,
        place: Place,
        line: Option<&[u8]>,
        earlier: Option<Place>,
        why: &str,
    ) -> io::Result<()> {
        let at = self.place(place);
        let earlier = earlier.map_or_else(|| "-".to_owned(), |p| self.place(p));
        let line = line.map_or_else(|| "-".to_owned(), escaped);
        writeln!(
            self.out,
            "{kind}\t{at}\t{line}\t{earlier}\t{}",
            escaped(why.as_bytes())
        )
    }

    fn place(&self, place: Place) -> String {
        let name = self
            .names
            .get(place.source)
            .map_or("<stdin>", String::as_str);
        format!("{name}:{}", place.line)
    }
}

/// `bytes` as one field: `\`, tab, line feed, carriage return, other ASCII control bytes
/// and bytes that are not UTF-8 escaped (see the module docs).
pub(crate) fn escaped(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\t' => out.push_str("\\t"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                c if c.is_ascii_control() => out.push_str(&format!("\\x{:02X}", c as u32)),
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02X}"));
        }
    }
    out
}

/// A hasher for keys that are hashes already (xxh3 of the key): their value is their hash.
#[derive(Default)]
pub(crate) struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used; anything else is folded in, never lost.
        self.0 = bytes
            .iter()
            .fold(self.0, |h, &b| h.rotate_left(8) ^ u64::from(b));
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_escaped_to_stay_one_row() {
        assert_eq!(escaped(b"a\tb\nc\rd\\e"), "a\\tb\\nc\\rd\\\\e");
        assert_eq!(escaped(b"\x01\x7f\xff\xc3\xa9"), "\\x01\\x7F\\xFF\u{e9}");
        assert_eq!(escaped(b"https://a.example/"), "https://a.example/");
    }

    #[test]
    fn rows_name_the_earlier_line() {
        let names = ["a.txt".to_owned(), "b\tc.txt".to_owned()];
        let mut e = Explainer::new(Vec::new(), &names, Memory::ThisRun, "same", None);
        e.kept(Place { source: 0, line: 2 }, b"k");
        e.duplicate(Place { source: 1, line: 5 }, b"K\tx", b"k")
            .unwrap();
        e.duplicate(Place { source: 1, line: 6 }, b"z", b"other")
            .unwrap();
        e.invalid(Place { source: 0, line: 3 }, None, "too long")
            .unwrap();
        let text = String::from_utf8(e.into_inner()).unwrap();
        let rows: Vec<&str> = text.lines().collect();
        assert_eq!(rows[0], "duplicate\tb\\tc.txt:5\tK\\tx\ta.txt:2\tsame");
        assert!(rows[1].starts_with("duplicate\tb\\tc.txt:6\tz\t-\tnot in this input"));
        assert_eq!(rows[2], "invalid\ta.txt:3\t-\t-\ttoo long");
    }
}
