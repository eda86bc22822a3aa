//! A page's two fingerprints: exact (same main content) and SimHash (similar main content).

use std::fmt;
use std::str::FromStr;

use xxhash_rust::xxh3::{xxh3_64, xxh3_128, xxh3_128_with_seed};

use crate::simhash::{ParseError, Votes, parse_hex};
use crate::{Content, SimHash, WordKind};

/// The exact fingerprint of a page's main content: 128 bits, equal for two pages exactly when
/// their main contents hold the same blocks of words (in any order), dates and times aside.
///
/// # Examples
///
/// ```
/// use url_dedup_fingerprint::{ContentDigest, Fingerprinter};
///
/// let f = Fingerprinter::new();
/// let a = f.fingerprint(b"<p>Hello</p><footer>Generated 12:00</footer>");
/// let b = f.fingerprint(b"<p>Hello</p><footer>Generated 12:01</footer>");
/// assert_eq!(a.exact, b.exact);
/// assert_eq!(a.exact.to_string().parse::<ContentDigest>()?, a.exact);
/// # Ok::<(), url_dedup_fingerprint::ParseError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContentDigest(pub u128);

impl fmt::Display for ContentDigest {
    /// Thirty-two lower-case hex digits.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

impl FromStr for ContentDigest {
    type Err = ParseError;

    /// Thirty-two hex digits, as [`Display`](fmt::Display) writes them.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_hex::<32>(s).map(ContentDigest)
    }
}

/// What a [`Fingerprinter`] makes of a page.
///
/// 32 bytes in memory (`size_of::<PageFingerprint>()`).
///
/// # Examples
///
/// ```
/// use url_dedup_fingerprint::Fingerprinter;
///
/// let page = Fingerprinter::new().fingerprint(b"<main><p>Some words here</p></main>");
/// assert_eq!(page.words, 3);
/// assert!(!page.is_empty());
/// assert_eq!(std::mem::size_of_val(&page), 32);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PageFingerprint {
    /// Equal for pages with the same main content.
    pub exact: ContentDigest,
    /// A few bits apart for pages with similar main content (`SimHash(0)` when the page has
    /// no words).
    pub simhash: SimHash,
    /// The number of words in the main content.
    pub words: u32,
}

impl PageFingerprint {
    /// Whether the page has no words in its main content. Its exact fingerprint is then that
    /// of its bytes, and its SimHash says nothing: keep it out of a near-duplicate index.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_fingerprint::Fingerprinter;
    /// let f = Fingerprinter::new();
    /// let (a, b) = (f.fingerprint(b"<img src=a>"), f.fingerprint(b"<img src=b>"));
    /// assert!(a.is_empty() && b.is_empty());
    /// assert_ne!(a.exact, b.exact);
    /// ```
    pub fn is_empty(&self) -> bool {
        self.words == 0
    }
}

/// Computes [`PageFingerprint`]s.
///
/// * The **exact** fingerprint hashes each block of the main content ([`Content`]), sorts the
///   block hashes and hashes them: a page whose blocks only moved (a list sorted another way)
///   keeps its fingerprint. A page without words is fingerprinted by its bytes.
/// * The **SimHash** hashes every word of the main content, with every number read as one
///   word `#`, and takes the majority of each bit ([`SimHash`]); a word that occurs twice
///   votes twice. Single words found more near duplicates than runs of two or three words at
///   no cost in precision on the labelled pages of `benches/benches/near_duplicates.rs`
///   (docs/dust.md has the figures); [`with_shingle_width`](Self::with_shingle_width) hashes
///   runs of consecutive words of a block instead.
///
/// Both are deterministic: the same page gives the same fingerprints in every process and
/// version of this crate's format (`FORMAT`), so they can be stored and shared.
///
/// # Examples
///
/// ```
/// use url_dedup_fingerprint::Fingerprinter;
///
/// let f = Fingerprinter::new();
/// let article = "<p>The quick brown fox jumps over the lazy dog near the river bank today.</p>";
/// let a = f.fingerprint(format!("<main>{article}<p>Seen 1,024 times</p></main>").as_bytes());
/// let b = f.fingerprint(format!("<main>{article}<p>Seen 1,025 times</p></main>").as_bytes());
/// assert_ne!(a.exact, b.exact); // a counter in the main content changes it
/// assert!(a.simhash.distance(b.simhash) <= 3); // but not the SimHash
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fingerprinter {
    shingle: usize,
}

impl Default for Fingerprinter {
    fn default() -> Self {
        Self::new()
    }
}

/// Seeds that keep the hashes of this crate apart from other uses of XXH3.
const BLOCK_SEED: u64 = 0x7572_6c2d_6465_6475; // "url-dedu"
const BYTES_SEED: u64 = 0x6279_7465_7321_2121;

impl Fingerprinter {
    /// The version of the fingerprints' definition: fingerprints made under another version
    /// are not comparable.
    pub const FORMAT: u16 = 1;

    /// Single words as features.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(url_dedup_fingerprint::Fingerprinter::new().shingle_width(), 1);
    /// ```
    pub fn new() -> Self {
        Self { shingle: 1 }
    }

    /// Features of `width` consecutive words of a block (the whole block when it is shorter;
    /// 1 to 8, out-of-range values are clamped). Wider shingles see word order, and are moved
    /// further by each edit.
    ///
    /// # Examples
    ///
    /// ```
    /// let f = url_dedup_fingerprint::Fingerprinter::new().with_shingle_width(20);
    /// assert_eq!(f.shingle_width(), 8);
    /// ```
    pub fn with_shingle_width(self, width: usize) -> Self {
        Self {
            shingle: width.clamp(1, 8),
        }
    }

    /// The shingle width.
    ///
    /// # Examples
    ///
    /// See [`with_shingle_width`](Self::with_shingle_width).
    pub fn shingle_width(&self) -> usize {
        self.shingle
    }

    /// Both fingerprints of an HTML page (any ASCII-compatible encoding).
    ///
    /// # Examples
    ///
    /// See [`Fingerprinter`].
    pub fn fingerprint(&self, html: &[u8]) -> PageFingerprint {
        let content = Content::extract(html);
        if content.word_count() == 0 {
            return PageFingerprint {
                exact: ContentDigest(xxh3_128_with_seed(html, BYTES_SEED)),
                simhash: SimHash(0),
                words: 0,
            };
        }
        self.fingerprint_content(&content)
    }

    /// Both fingerprints of content already extracted. A content without words gets the
    /// fingerprint of no words (not that of its page's bytes, which it does not have).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_fingerprint::{Content, Fingerprinter};
    ///
    /// let f = Fingerprinter::new();
    /// let html = b"<p>words</p>";
    /// assert_eq!(f.fingerprint_content(&Content::extract(html)), f.fingerprint(html));
    /// ```
    pub fn fingerprint_content(&self, content: &Content) -> PageFingerprint {
        let mut scratch = Vec::with_capacity(256);
        let mut blocks: Vec<u128> = Vec::with_capacity(64);
        let mut votes = Votes::default();
        let mut window = [0u64; 8];
        let w = self.shingle;
        for block in content.blocks() {
            scratch.clear();
            let mut n = 0usize;
            for (word, kind) in block.kinds() {
                // The exact hash: each word's bytes, length-prefixed.
                scratch.extend_from_slice(&(word.len() as u32).to_le_bytes());
                scratch.extend_from_slice(word);
                // The SimHash: every number is one word.
                let h = if kind == WordKind::Number {
                    xxh3_64(b"#")
                } else {
                    xxh3_64(word)
                };
                window[n % 8] = h;
                n += 1;
                if n >= w {
                    votes.add(shingle(&window, n, w));
                }
            }
            if n < w {
                votes.add(shingle(&window, n, n));
            }
            blocks.push(xxh3_128_with_seed(&scratch, BLOCK_SEED));
        }
        blocks.sort_unstable();
        scratch.clear();
        scratch.extend_from_slice(b"url-dedup content 1");
        for b in &blocks {
            scratch.extend_from_slice(&b.to_le_bytes());
        }
        PageFingerprint {
            exact: ContentDigest(xxh3_128(&scratch)),
            simhash: votes.finish(),
            words: content.word_count().min(u32::MAX as usize) as u32,
        }
    }
}

/// The feature of the last `width` word hashes of a ring of 8 that holds `n` words so far.
#[inline]
fn shingle(window: &[u64; 8], n: usize, width: usize) -> u64 {
    let mut acc = width as u64;
    for k in 0..width {
        let h = window[(n - width + k) % 8];
        // Rotating by position keeps the order of the words in the feature.
        acc = acc.rotate_left(23) ^ h;
    }
    crate::feature_hash(acc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_order_does_not_change_the_exact_fingerprint() {
        let f = Fingerprinter::new();
        let a = f.fingerprint(b"<ul><li>apple pie</li><li>banana split</li><li>cherry</li></ul>");
        let b = f.fingerprint(b"<ul><li>cherry</li><li>apple pie</li><li>banana split</li></ul>");
        assert_eq!(a.exact, b.exact);
        assert_eq!(a.simhash, b.simhash);
        let c = f.fingerprint(b"<ul><li>apple</li><li>pie banana split</li><li>cherry</li></ul>");
        assert_ne!(a.exact, c.exact);
    }

    #[test]
    fn words_are_length_prefixed() {
        let f = Fingerprinter::new();
        assert_ne!(
            f.fingerprint(b"<p>ab c</p>").exact,
            f.fingerprint(b"<p>a bc</p>").exact
        );
    }

    #[test]
    fn numbers_count_for_exact_not_for_simhash() {
        let f = Fingerprinter::new();
        let a = f.fingerprint(b"<p>item 1</p>");
        let b = f.fingerprint(b"<p>item 2</p>");
        assert_ne!(a.exact, b.exact);
        assert_eq!(a.simhash, b.simhash);
    }

    #[test]
    fn empty_pages_differ_by_bytes() {
        let f = Fingerprinter::new();
        assert_eq!(f.fingerprint(b"").words, 0);
        assert_ne!(f.fingerprint(b"").exact, f.fingerprint(b" ").exact);
    }

    #[test]
    fn shingle_widths_give_different_fingerprints() {
        let text = b"<p>one two three four five six seven eight nine ten</p>";
        let widths: Vec<SimHash> = (1..=8)
            .map(|w| {
                Fingerprinter::new()
                    .with_shingle_width(w)
                    .fingerprint(text)
                    .simhash
            })
            .collect();
        for (i, a) in widths.iter().enumerate() {
            for b in &widths[i + 1..] {
                assert_ne!(a, b);
            }
        }
    }
}
