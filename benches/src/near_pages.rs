//! Labelled pairs of pages for measuring near-duplicate detection: pairs that are one page
//! (fetched twice, in another view, or lightly edited) and pairs that are two pages.
//!
//! Two sources:
//!
//! * **Generated** pages of a wiki-like site: a header, a menu, a "recent changes" box, a
//!   footer with a clock and a view counter around an article of 20 to 600 words drawn from a
//!   Zipf-like vocabulary. Every edit is controlled, so every label is known.
//! * **Real** pages: the Rust documentation installed with the toolchain (`rustup doc`'s
//!   directory). The same item documented in `std` and in `core` is one page (re-exports);
//!   each page with a changed sentence or a clock in its footer is one page; two items of one
//!   module are two pages.

use std::path::{Path, PathBuf};

/// One labelled pair.
#[derive(Clone, Debug)]
pub struct Pair {
    /// What made the pair (`"volatile chrome"`, `"distinct articles"`, ...).
    pub kind: &'static str,
    /// Whether the two pages are one page.
    pub same: bool,
    /// The first page.
    pub a: String,
    /// The second page.
    pub b: String,
}

/// A deterministic random stream (splitmix64).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A stream for `seed`.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut r = url_dedup_benches::near_pages::Rng::new(1);
    /// assert_ne!(r.next(), r.next());
    /// ```
    pub fn new(seed: u64) -> Self {
        Self(seed ^ 0x5851_f42d_4c95_7f2d)
    }

    /// The next 64 random bits.
    ///
    /// # Examples
    ///
    /// See [`Rng::new`].
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        url_dedup_bloom::hash::mix64(self.0)
    }

    /// A number below `n` (`n > 0`).
    ///
    /// # Examples
    ///
    /// ```
    /// let mut r = url_dedup_benches::near_pages::Rng::new(1);
    /// assert!(r.below(3) < 3);
    /// ```
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

const SYLLABLES: [&str; 24] = [
    "ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "pe", "da", "go", "ri", "an", "el", "or", "us",
    "ber", "con", "dis", "for", "gra", "lin", "mon", "ster",
];

/// A word of the generated language: rank 0 is the most common.
fn word(rank: u64) -> String {
    let mut w = String::new();
    let mut r = rank + 1;
    while r > 0 {
        w.push_str(SYLLABLES[(r % 24) as usize]);
        r /= 24;
    }
    w
}

/// A word drawn with a Zipf-like law over a 5,000-word vocabulary.
fn zipf_word(rng: &mut Rng) -> String {
    let u = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
    word((5000f64.powf(u) - 1.0) as u64)
}

fn sentence(rng: &mut Rng) -> String {
    let n = 6 + rng.below(14);
    let mut s: Vec<String> = (0..n).map(|_| zipf_word(rng)).collect();
    if let Some(first) = s.first_mut() {
        *first = first[..1].to_uppercase() + &first[1..];
    }
    s.join(" ") + "."
}

/// An article: a title and paragraphs of about `words` words in all.
#[derive(Clone, Debug)]
pub struct Article {
    /// The title.
    pub title: String,
    /// The paragraphs.
    pub paragraphs: Vec<String>,
}

impl Article {
    /// A new article of about `words` words.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut rng = url_dedup_benches::near_pages::Rng::new(3);
    /// let a = url_dedup_benches::near_pages::Article::new(&mut rng, 100);
    /// assert!(!a.paragraphs.is_empty());
    /// ```
    pub fn new(rng: &mut Rng, words: usize) -> Self {
        let title = format!("{} {}", zipf_word(rng), zipf_word(rng));
        let mut paragraphs = Vec::new();
        let mut count = 0;
        while count < words {
            let mut p = String::new();
            for _ in 0..(2 + rng.below(4)) {
                let s = sentence(rng);
                count += s.split(' ').count();
                p.push_str(&s);
                p.push(' ');
            }
            paragraphs.push(p.trim_end().to_owned());
        }
        Self { title, paragraphs }
    }

    /// The article with `n` words replaced by other words.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut rng = url_dedup_benches::near_pages::Rng::new(3);
    /// let a = url_dedup_benches::near_pages::Article::new(&mut rng, 100);
    /// assert_ne!(a.paragraphs, a.edited(&mut rng, 2).paragraphs);
    /// ```
    pub fn edited(&self, rng: &mut Rng, n: usize) -> Self {
        let mut out = self.clone();
        for _ in 0..n {
            let p = rng.below(out.paragraphs.len() as u64) as usize;
            let mut words: Vec<String> = out.paragraphs[p].split(' ').map(str::to_owned).collect();
            let i = rng.below(words.len() as u64) as usize;
            words[i] = format!("{}x", zipf_word(rng));
            out.paragraphs[p] = words.join(" ");
        }
        out
    }
}

/// What changes between two fetches of one page: the clock, the counters, the "recent
/// changes" box, the user's name in the menu.
#[derive(Clone, Debug)]
pub struct Fetch {
    /// Seconds since the epoch of the fetch.
    pub time: u64,
    /// The view counter.
    pub views: u64,
    /// The titles in the "recent changes" box.
    pub recent: Vec<String>,
}

impl Fetch {
    /// A fetch at a random time.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut rng = url_dedup_benches::near_pages::Rng::new(3);
    /// let f = url_dedup_benches::near_pages::Fetch::random(&mut rng);
    /// assert_eq!(f.recent.len(), 5);
    /// ```
    pub fn random(rng: &mut Rng) -> Self {
        Self {
            time: 1_700_000_000 + rng.below(30_000_000),
            views: rng.below(100_000),
            recent: (0..5)
                .map(|_| format!("{} {}", zipf_word(rng), zipf_word(rng)))
                .collect(),
        }
    }
}

/// `2024-03-05 12:07:09` for a time in seconds since the epoch (UTC, proleptic Gregorian).
///
/// # Examples
///
/// ```
/// assert_eq!(url_dedup_benches::near_pages::datetime(0), "1970-01-01 00:00:00");
/// assert_eq!(url_dedup_benches::near_pages::datetime(1_709_640_429), "2024-03-05 12:07:09");
/// ```
pub fn datetime(t: u64) -> String {
    let (days, secs) = (t / 86_400, t % 86_400);
    // Civil from days (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// How a generated page is laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// The full page: header, menu, recent changes, footer.
    Normal,
    /// The printable view: the article and a footer line only.
    Print,
}

/// A generated wiki page.
///
/// # Examples
///
/// ```
/// use url_dedup_benches::near_pages::{Article, Fetch, Rng, View, page};
/// let mut rng = Rng::new(1);
/// let html = page(&Article::new(&mut rng, 50), &Fetch::random(&mut rng), View::Normal);
/// assert!(html.contains("role=main"));
/// ```
pub fn page(article: &Article, fetch: &Fetch, view: View) -> String {
    let mut html = String::with_capacity(8 * 1024);
    html.push_str("<!DOCTYPE html><html lang=en><head><meta charset=utf-8>");
    html.push_str(&format!("<title>{} - Wiki</title>", article.title));
    html.push_str("<script>var wgRequestTime = ");
    html.push_str(&fetch.time.to_string());
    html.push_str(";</script><link rel=stylesheet href=/s.css></head><body>");
    if view == View::Normal {
        html.push_str(
            "<header id=masthead><a href=/>The Wiki</a> <span class=user>Logged in as guest",
        );
        html.push_str(&(fetch.time % 1000).to_string());
        html.push_str("</span></header><nav><ul>");
        for item in ["Main page", "Contents", "Random page", "Help", "Donate"] {
            html.push_str(&format!("<li><a href=/{item}>{item}</a></li>"));
        }
        html.push_str("</ul></nav>");
    }
    html.push_str("<div id=content role=main><h1>");
    html.push_str(&article.title);
    html.push_str("</h1>");
    for p in &article.paragraphs {
        html.push_str("<p>");
        html.push_str(p);
        html.push_str("</p>\n");
    }
    html.push_str(&format!(
        "<p class=lastmod>This page was last edited on {} (UTC).</p></div>",
        datetime(fetch.time - fetch.time % 86_400 - 86_400 * 3)
    ));
    if view == View::Normal {
        html.push_str("<div class=sidebar><h2>Recent changes</h2><ul>");
        for r in &fetch.recent {
            html.push_str(&format!("<li><a href=\"/{r}\">{r}</a></li>"));
        }
        html.push_str("</ul></div><footer><p>This page has been accessed ");
        html.push_str(&fetch.views.to_string());
        html.push_str(" times.</p>");
    } else {
        html.push_str("<footer>");
    }
    html.push_str(&format!(
        "<p>Generated at {} in 0.{:03} seconds.</p></footer></body></html>",
        datetime(fetch.time),
        fetch.time % 997
    ));
    html
}

/// An item of a listing: a title, when it was edited, by whom.
type Item = (String, u64, u64);

fn items(rng: &mut Rng, n: usize, time: u64) -> Vec<Item> {
    (0..n)
        .map(|_| {
            let title = format!("{} {}", zipf_word(rng), zipf_word(rng));
            (title, time - rng.below(1_000_000), rng.below(50))
        })
        .collect()
}

/// Page `number` of a paginated list of articles.
fn listing(items: &[Item], number: usize, fetch: &Fetch) -> String {
    let article = Article {
        title: format!("All pages: page {number}"),
        paragraphs: vec![],
    };
    let mut list = String::from("<ul>");
    for (title, t, user) in items {
        list.push_str(&format!(
            "<li><a href=\"/{title}\">{title}</a> edited {} by user{user}</li>",
            datetime(*t)
        ));
    }
    list.push_str("</ul><p class=lastmod>");
    page(&article, fetch, View::Normal).replacen("<p class=lastmod>", &list, 1)
}

/// `per_kind` pairs of each kind of generated pages, deterministic for `seed`.
///
/// # Examples
///
/// ```
/// let pairs = url_dedup_benches::near_pages::generated(2, 1);
/// assert!(pairs.iter().any(|p| p.same) && pairs.iter().any(|p| !p.same));
/// ```
pub fn generated(per_kind: usize, seed: u64) -> Vec<Pair> {
    let mut rng = Rng::new(seed);
    let mut pairs = Vec::new();
    let sizes = [20usize, 50, 100, 200, 400, 600];
    for i in 0..per_kind {
        let words = sizes[i % sizes.len()];
        let article = Article::new(&mut rng, words);
        let (f1, f2) = (Fetch::random(&mut rng), Fetch::random(&mut rng));
        let normal = page(&article, &f1, View::Normal);
        let mut push = |kind, same, b: String| {
            pairs.push(Pair {
                kind,
                same,
                a: normal.clone(),
                b,
            })
        };
        push(
            "same page, fetched again",
            true,
            page(&article, &f2, View::Normal),
        );
        push("printable view", true, page(&article, &f2, View::Print));
        let edits = 1 + words / 100;
        push(
            "edited: a word in a hundred",
            true,
            page(&article.edited(&mut rng, edits), &f2, View::Normal),
        );
        let other = Article::new(&mut rng, words);
        push(
            "another article, same site",
            false,
            page(&other, &f1, View::Normal),
        );
        // Another article sharing its title and first paragraph.
        let mut sibling = Article::new(&mut rng, words);
        sibling.title = article.title.clone();
        sibling.paragraphs[0] = article.paragraphs[0].clone();
        if sibling.paragraphs.len() > 1 {
            push(
                "another article, same title and first paragraph",
                false,
                page(&sibling, &f1, View::Normal),
            );
        }
        let first = items(&mut rng, 20, f1.time);
        let second = items(&mut rng, 20, f1.time);
        pairs.push(Pair {
            kind: "pages 1 and 2 of a listing",
            same: false,
            a: listing(&first, 1, &f1),
            b: listing(&second, 2, &f2),
        });
        let mut sorted = first.clone();
        sorted.sort();
        pairs.push(Pair {
            kind: "a listing sorted another way",
            same: true,
            a: listing(&first, 1, &f1),
            b: listing(&sorted, 1, &f2),
        });
    }
    pairs
}

/// The installed Rust documentation: `RUST_DOCS`, else the first of the usual places.
///
/// # Examples
///
/// ```
/// let _maybe = url_dedup_benches::near_pages::rust_docs();
/// ```
pub fn rust_docs() -> Option<PathBuf> {
    if let Ok(dir) = std::env::var("RUST_DOCS") {
        return Some(PathBuf::from(dir));
    }
    let home = std::env::var("RUSTUP_HOME")
        .map(PathBuf::from)
        .or_else(|_| std::env::var("HOME").map(|h| Path::new(&h).join(".rustup")))
        .ok()?;
    let toolchains = std::fs::read_dir(home.join("toolchains")).ok()?;
    let mut found: Vec<PathBuf> = toolchains
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("share/doc/rust/html"))
        .filter(|p| p.join("std").is_dir() && p.join("core").is_dir())
        .collect();
    found.sort();
    found.into_iter().next()
}

fn html_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            html_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "html") {
            out.push(path);
        }
    }
}

fn read(path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    // Redirect stubs and index fragments say nothing about a page.
    (bytes.len() > 4096).then(|| String::from_utf8_lossy(&bytes).into_owned())
}

/// Up to `per_kind` pairs of each kind of real pages from the Rust documentation in `docs`,
/// deterministic for `seed`.
///
/// # Examples
///
/// ```no_run
/// if let Some(docs) = url_dedup_benches::near_pages::rust_docs() {
///     let pairs = url_dedup_benches::near_pages::real(&docs, 10, 1);
///     assert!(!pairs.is_empty());
/// }
/// ```
pub fn real(docs: &Path, per_kind: usize, seed: u64) -> Vec<Pair> {
    let mut rng = Rng::new(seed);
    let mut files = Vec::new();
    html_files(&docs.join("std"), &mut files);
    // Items: struct, enum, trait and fn pages.
    let items: Vec<&PathBuf> = files
        .iter()
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                ["struct.", "enum.", "trait.", "fn."]
                    .iter()
                    .any(|k| n.starts_with(k))
            })
        })
        .collect();
    let mut pairs = Vec::new();
    let pick = |rng: &mut Rng| items[rng.below(items.len() as u64) as usize];
    let mut tries = 0;
    // The same item in std and core.
    while pairs.len() < per_kind && tries < per_kind * 50 {
        tries += 1;
        let std_page = pick(&mut rng);
        let Ok(rel) = std_page.strip_prefix(docs.join("std")) else {
            continue;
        };
        let core_page = docs.join("core").join(rel);
        if let (Some(a), Some(b)) = (read(std_page), read(&core_page)) {
            pairs.push(Pair {
                kind: "Rust docs: one item in std and core",
                same: true,
                a,
                b,
            });
        }
    }
    // One page, with a clock in its footer, or a word changed.
    for _ in 0..per_kind {
        let Some(a) = read(pick(&mut rng)) else {
            continue;
        };
        let stamped = a.replace(
            "</main>",
            &format!(
                "</main><footer>Built {}</footer>",
                datetime(rng.below(1 << 31))
            ),
        );
        pairs.push(Pair {
            kind: "Rust docs: page with a clock in its footer",
            same: true,
            a: a.clone(),
            b: stamped,
        });
        // Change one word of the main text (a word of four or more letters in a paragraph).
        if let Some(at) = a.find("<p>") {
            let rest = &a[at + 3..];
            if let Some(w) = rest
                .split(|c: char| !c.is_alphanumeric())
                .find(|w| w.len() >= 4)
            {
                let i = at + 3 + rest.find(w).unwrap_or(0);
                let mut b = a.clone();
                b.replace_range(i..i + w.len(), "changed");
                pairs.push(Pair {
                    kind: "Rust docs: one word changed",
                    same: true,
                    a,
                    b,
                });
            }
        }
    }
    // Two items of one module.
    let mut made = 0;
    tries = 0;
    while made < per_kind && tries < per_kind * 50 {
        tries += 1;
        let a = pick(&mut rng);
        let Some(dir) = a.parent() else { continue };
        let siblings: Vec<&&PathBuf> = items
            .iter()
            .filter(|p| p.parent() == Some(dir) && *p != &a)
            .collect();
        if siblings.is_empty() {
            continue;
        }
        let b = siblings[rng.below(siblings.len() as u64) as usize];
        if let (Some(a), Some(b)) = (read(a), read(b)) {
            pairs.push(Pair {
                kind: "Rust docs: two items of one module",
                same: false,
                a,
                b,
            });
            made += 1;
        }
    }
    pairs
}

/// The text of a page without its tags, scripts and styles: what one gives a text SimHash.
///
/// # Examples
///
/// ```
/// let text = url_dedup_benches::near_pages::strip_tags("<p>a<script>x</script>b</p>");
/// assert!(text.contains('a') && text.contains('b') && !text.contains('x'));
/// ```
pub fn strip_tags(html: &str) -> String {
    let mut out = String::with_capacity(html.len() / 2);
    let mut rest = html;
    while let Some(lt) = rest.find('<') {
        out.push_str(&rest[..lt]);
        out.push(' ');
        rest = &rest[lt..];
        let lower: String = rest
            .chars()
            .take(8)
            .collect::<String>()
            .to_ascii_lowercase();
        let skip_to = if lower.starts_with("<script") {
            "</script>"
        } else if lower.starts_with("<style") {
            "</style>"
        } else {
            ">"
        };
        match rest.find(skip_to) {
            Some(end) => rest = &rest[end + skip_to.len()..],
            None => rest = "",
        }
    }
    out.push_str(rest);
    out
}
