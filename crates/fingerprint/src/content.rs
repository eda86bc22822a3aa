//! Main-content extraction: the words of a page that say what the page is, in blocks.
//!
//! What is dropped, and why:
//!
//! * **Never text**: `head`, `script`, `style`, `noscript`, `template`, `svg`, `math`,
//!   `iframe`, `object`, `canvas`, `select`, `button`, `textarea`, and elements marked
//!   `hidden` or `aria-hidden="true"`.
//! * **Around the content, not the content**: `nav`, `header`, `footer`, `aside`, elements
//!   whose `role` is `navigation`, `banner`, `contentinfo`, `complementary`, `search` or
//!   `menu`, and elements whose whole `id` or one whole class name is one of a short list of
//!   the names sites give their menus, sidebars and footers ([`HINTS`]). These hold the
//!   navigation, "recent changes" and "related" boxes that differ between two fetches of one
//!   page, or that every page of a site shares.
//! * **Outside the main content**: when the page marks its main content (`main`, or an
//!   element with `role="main"`), only the text inside counts; otherwise, when it has
//!   `article` elements, only their text; otherwise the whole body.
//!
//! The text left is split into **blocks** at the boundaries of block elements (`p`, `div`,
//! `li`, `td`, headings, `br`, ...), and each block into words ([`WordKind`]).

use crate::html::{self, Event, Name};
use crate::words::{self, RawWord, Word, WordKind};

/// Whole `id` values and class names that mark navigation, sidebars, footers and boxes that
/// are not the page's own content. Matched exactly (ASCII case-insensitive), never as parts of
/// longer names, and never on `html`, `body`, `main` or `article`, which hold the content.
pub const HINTS: &[&str] = &[
    "nav",
    "navbar",
    "navigation",
    "main-navigation",
    "site-navigation",
    "menu",
    "main-menu",
    "sidebar",
    "secondary",
    "widget-area",
    "widget",
    "footer",
    "site-footer",
    "header",
    "site-header",
    "masthead",
    "breadcrumb",
    "breadcrumbs",
    "toc",
    "related",
    "related-posts",
    "recent-changes",
    "recent-posts",
    "cookie-banner",
    "cookie-notice",
    // MediaWiki's page chrome.
    "mw-navigation",
    "mw-panel",
    "mw-head",
    "p-personal",
    "catlinks",
    "printfooter",
    "sitenotice",
    "sitesub",
    "jump-to-nav",
];

/// The most elements open at once that are tracked; deeper ones are read as text of their
/// parent (a bound on memory for hostile pages).
const MAX_DEPTH: usize = 1024;

/// The main content of a page: its blocks of words, in document order.
///
/// # Examples
///
/// ```
/// use url_dedup_fingerprint::Content;
///
/// let page = br#"<html><head><title>T</title></head><body>
///   <nav><a href="/">Home</a></nav>
///   <main><h1>Hello</h1><p>Updated 5 March 2024 at 12:00.</p></main>
///   <footer>3,141 views</footer></body></html>"#;
/// let content = Content::extract(page);
/// assert_eq!(content.text(), "hello\nupdated <date> at <time>");
/// assert_eq!(content.word_count(), 5);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Content {
    buf: Vec<u8>,
    words: Vec<Word>,
    /// Each block's range of `words`.
    blocks: Vec<(u32, u32)>,
}

/// One block of a page's main content.
///
/// # Examples
///
/// ```
/// use url_dedup_fingerprint::Content;
///
/// let content = Content::extract(b"<p>One two</p><p>3 4</p>");
/// let blocks: Vec<Vec<&[u8]>> = content.blocks().map(|b| b.words().collect()).collect();
/// assert_eq!(blocks, [vec![&b"one"[..], b"two"], vec![b"3", b"4"]]);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Block<'a> {
    content: &'a Content,
    words: &'a [Word],
}

impl<'a> Block<'a> {
    /// The block's words: lower-cased, dates, times and relative times as `<date>`, `<time>`
    /// and `<ago>`.
    ///
    /// # Examples
    ///
    /// See [`Block`].
    pub fn words(&self) -> impl Iterator<Item = &'a [u8]> + 'a {
        let buf = &self.content.buf;
        self.words.iter().map(move |w| word_bytes(buf, w))
    }

    /// The block's words with their kinds.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_fingerprint::{Content, WordKind};
    ///
    /// let content = Content::extract(b"<p>page 2</p>");
    /// let block = content.blocks().next().unwrap();
    /// let kinds: Vec<WordKind> = block.kinds().map(|(_, k)| k).collect();
    /// assert_eq!(kinds, [WordKind::Text, WordKind::Number]);
    /// ```
    pub fn kinds(&self) -> impl Iterator<Item = (&'a [u8], WordKind)> + 'a {
        let buf = &self.content.buf;
        self.words.iter().map(move |w| (word_bytes(buf, w), w.kind))
    }

    /// How many words the block has (at least one).
    ///
    /// # Examples
    ///
    /// ```
    /// let content = url_dedup_fingerprint::Content::extract(b"<p>a b c</p>");
    /// assert_eq!(content.blocks().next().unwrap().len(), 3);
    /// ```
    #[allow(clippy::len_without_is_empty)] // a block is never empty
    pub fn len(&self) -> usize {
        self.words.len()
    }
}

fn word_bytes<'a>(buf: &'a [u8], w: &Word) -> &'a [u8] {
    match w.kind.placeholder() {
        Some(p) => p,
        None => &buf[w.start as usize..(w.start + w.len) as usize],
    }
}

/// Where a piece of text is, as far as the extraction is concerned.
#[derive(Clone, Copy)]
struct Open {
    name: Name,
    skip: bool,
    main: bool,
    article: bool,
}

#[derive(Default)]
struct Extractor {
    content: Content,
    raw: Vec<RawWord>,
    stack: Vec<Open>,
    skip: usize,
    main: usize,
    article: usize,
    /// Blocks inside `main` and inside `article`, by index.
    in_main: Vec<bool>,
    in_article: Vec<bool>,
    block_main: bool,
    block_article: bool,
}

impl Content {
    /// Extracts the main content of an HTML page (the module documentation of this crate
    /// says what is kept).
    ///
    /// # Examples
    ///
    /// ```
    /// let content = url_dedup_fingerprint::Content::extract(b"<aside>Recent: X</aside><p>Body</p>");
    /// assert_eq!(content.text(), "body");
    /// ```
    pub fn extract(html: &[u8]) -> Self {
        let mut x = Extractor::default();
        html::lex(html, |event| x.event(event));
        x.finish()
    }

    /// The blocks, in document order.
    ///
    /// # Examples
    ///
    /// See [`Block`].
    pub fn blocks(&self) -> impl Iterator<Item = Block<'_>> {
        self.blocks.iter().map(move |&(a, b)| Block {
            content: self,
            words: &self.words[a as usize..b as usize],
        })
    }

    /// How many words the content has.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(url_dedup_fingerprint::Content::extract(b"<p>a, b.</p>").word_count(), 2);
    /// ```
    pub fn word_count(&self) -> usize {
        self.words.len()
    }

    /// The content as text: one line per block, words separated by one space. What the
    /// fingerprints are computed from, for a person to read.
    ///
    /// # Examples
    ///
    /// ```
    /// let content = url_dedup_fingerprint::Content::extract(b"<li>One</li><li>Two  words</li>");
    /// assert_eq!(content.text(), "one\ntwo words");
    /// ```
    pub fn text(&self) -> String {
        let mut out = Vec::new();
        for (i, block) in self.blocks().enumerate() {
            if i > 0 {
                out.push(b'\n');
            }
            for (j, w) in block.words().enumerate() {
                if j > 0 {
                    out.push(b' ');
                }
                out.extend_from_slice(w);
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    }
}

fn is_void(name: &[u8]) -> bool {
    matches!(
        name,
        b"area"
            | b"base"
            | b"br"
            | b"col"
            | b"embed"
            | b"hr"
            | b"img"
            | b"input"
            | b"link"
            | b"meta"
            | b"param"
            | b"source"
            | b"track"
            | b"wbr"
            | b"keygen"
    )
}

/// Elements whose end tag may be left out: not tracked as open (an omitted end tag would
/// leave them open for ever), only read as block boundaries.
fn has_optional_end(name: &[u8]) -> bool {
    matches!(
        name,
        b"p" | b"li"
            | b"dt"
            | b"dd"
            | b"tr"
            | b"td"
            | b"th"
            | b"option"
            | b"optgroup"
            | b"thead"
            | b"tbody"
            | b"tfoot"
            | b"colgroup"
            | b"caption"
            | b"rb"
            | b"rt"
            | b"rp"
            | b"rtc"
    )
}

fn is_block(name: &[u8]) -> bool {
    has_optional_end(name)
        || matches!(
            name,
            b"address"
                | b"article"
                | b"aside"
                | b"blockquote"
                | b"body"
                | b"br"
                | b"center"
                | b"details"
                | b"dialog"
                | b"dir"
                | b"div"
                | b"dl"
                | b"fieldset"
                | b"figcaption"
                | b"figure"
                | b"footer"
                | b"form"
                | b"h1"
                | b"h2"
                | b"h3"
                | b"h4"
                | b"h5"
                | b"h6"
                | b"header"
                | b"hgroup"
                | b"hr"
                | b"html"
                | b"legend"
                | b"main"
                | b"menu"
                | b"nav"
                | b"ol"
                | b"pre"
                | b"section"
                | b"summary"
                | b"table"
                | b"ul"
        )
}

fn never_text(name: &[u8]) -> bool {
    matches!(
        name,
        b"head"
            | b"script"
            | b"style"
            | b"noscript"
            | b"template"
            | b"svg"
            | b"math"
            | b"iframe"
            | b"object"
            | b"canvas"
            | b"select"
            | b"button"
            | b"textarea"
            | b"title"
    )
}

fn is_chrome(name: &[u8]) -> bool {
    matches!(name, b"nav" | b"header" | b"footer" | b"aside")
}

fn chrome_role(role: &[u8]) -> bool {
    [
        &b"navigation"[..],
        b"banner",
        b"contentinfo",
        b"complementary",
        b"search",
        b"menu",
        b"menubar",
    ]
    .iter()
    .any(|r| role.eq_ignore_ascii_case(r))
}

fn is_hint(value: &[u8]) -> bool {
    HINTS
        .iter()
        .any(|h| value.eq_ignore_ascii_case(h.as_bytes()))
}

impl Extractor {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Text(text) => {
                if self.skip == 0 {
                    let before = self.raw.len();
                    words::tokenize(text, &mut self.content.buf, &mut self.raw);
                    if self.raw.len() > before {
                        self.block_main |= self.main > 0;
                        self.block_article |= self.article > 0;
                    }
                }
            }
            Event::Start(name, attrs) => self.start(name, attrs),
            Event::End(name) => {
                if is_block(name.as_bytes()) {
                    self.flush();
                }
                if let Some(at) = self.stack.iter().rposition(|o| o.name == name) {
                    while self.stack.len() > at {
                        self.pop();
                    }
                }
            }
        }
    }

    fn start(&mut self, name: Name, attrs: &[u8]) {
        let n = name.as_bytes();
        if is_block(n) {
            self.flush();
        }
        if n == b"body" {
            // `<body>` closes a `<head>` left open.
            if let Some(at) = self
                .stack
                .iter()
                .rposition(|o| o.name.as_bytes() == b"head")
            {
                while self.stack.len() > at {
                    self.pop();
                }
            }
        }
        if is_void(n) || has_optional_end(n) || self.stack.len() >= MAX_DEPTH {
            return;
        }
        let role = html::attribute(attrs, b"role").unwrap_or(b"");
        let holds_content = matches!(n, b"html" | b"body" | b"main" | b"article");
        let hinted = !holds_content
            && (html::attribute(attrs, b"id").is_some_and(is_hint)
                || html::attribute(attrs, b"class")
                    .is_some_and(|c| c.split(u8::is_ascii_whitespace).any(is_hint)));
        let hidden = html::attribute(attrs, b"hidden").is_some()
            || html::attribute(attrs, b"aria-hidden")
                .is_some_and(|v| v.eq_ignore_ascii_case(b"true"));
        let open = Open {
            name,
            skip: never_text(n) || is_chrome(n) || chrome_role(role) || hinted || hidden,
            main: n == b"main" || role.eq_ignore_ascii_case(b"main"),
            article: n == b"article",
        };
        self.skip += usize::from(open.skip);
        self.main += usize::from(open.main);
        self.article += usize::from(open.article);
        self.stack.push(open);
    }

    fn pop(&mut self) {
        if let Some(o) = self.stack.pop() {
            self.skip -= usize::from(o.skip);
            self.main -= usize::from(o.main);
            self.article -= usize::from(o.article);
        }
    }

    /// Ends the current block.
    fn flush(&mut self) {
        if self.raw.is_empty() {
            return;
        }
        let c = &mut self.content;
        let start = c.words.len() as u32;
        words::fold(&self.raw, &c.buf, &mut c.words);
        c.blocks.push((start, c.words.len() as u32));
        self.in_main.push(self.block_main);
        self.in_article.push(self.block_article);
        self.raw.clear();
        self.block_main = false;
        self.block_article = false;
    }

    fn finish(mut self) -> Content {
        self.flush();
        let keep = if self.in_main.contains(&true) {
            Some(&self.in_main)
        } else if self.in_article.contains(&true) {
            Some(&self.in_article)
        } else {
            None
        };
        let mut content = self.content;
        if let Some(keep) = keep {
            let mut kept = Vec::with_capacity(content.blocks.len());
            let mut words = Vec::with_capacity(content.words.len());
            for (&(a, b), &k) in content.blocks.iter().zip(keep) {
                if k {
                    let start = words.len() as u32;
                    words.extend_from_slice(&content.words[a as usize..b as usize]);
                    kept.push((start, words.len() as u32));
                }
            }
            content.blocks = kept;
            content.words = words;
        }
        content
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(html: &str) -> String {
        Content::extract(html.as_bytes()).text()
    }

    #[test]
    fn chrome_is_dropped() {
        let page = r#"<html><head><title>Title</title><script>var x = "<p>no</p>";</script></head>
            <body class="has-sidebar"><header>Site name</header>
            <nav><ul><li>Home<li>About</ul></nav>
            <div id="content"><h1>Heading</h1><p>First para.<p>Second <b>bold</b> para.</div>
            <div class="widget">Recent: Other page</div>
            <div role="complementary">Related</div>
            <aside>Side</aside><footer>Footer 2024</footer></body></html>"#;
        assert_eq!(text(page), "heading\nfirst para\nsecond bold para");
    }

    #[test]
    fn main_wins_over_the_rest() {
        let page = "<body><p>Outside</p><div role=main><p>Inside</p></div><p>After</p></body>";
        assert_eq!(text(page), "inside");
        let page = "<body><p>Outside</p><main><p>Inside</p><nav>Nav</nav></main></body>";
        assert_eq!(text(page), "inside");
        let page = "<body><p>Outside</p><article>One</article><article>Two</article></body>";
        assert_eq!(text(page), "one\ntwo");
    }

    #[test]
    fn hints_match_whole_names_only() {
        assert_eq!(text(r#"<div class="navigation-free x">Kept</div>"#), "kept");
        assert_eq!(text(r#"<div class="x Sidebar">Dropped</div>"#), "");
        // Nested divs inside a hinted one are dropped with it; text after it is kept.
        assert_eq!(
            text(r#"<div id=sidebar><div><div>a</div></div>b</div><p>c</p>"#),
            "c"
        );
    }

    #[test]
    fn unclosed_and_stray_tags_do_not_lose_the_page() {
        assert_eq!(text("<head><title>x</title><body><p>Text"), "text");
        assert_eq!(text("</div></nav><p>Text</p>"), "text");
        // An unclosed chrome element inside a closed container ends with it.
        assert_eq!(text("<div><nav>menu</div><p>Text</p>"), "text");
    }

    #[test]
    fn inline_tags_do_not_split_blocks() {
        assert_eq!(text("<p>a <i>b</i> c<br>d</p>"), "a b c\nd");
    }

    #[test]
    fn hidden_elements_are_dropped() {
        assert_eq!(
            text(r#"<div hidden>x</div><div aria-hidden="true">y</div><p>z</p>"#),
            "z"
        );
    }

    #[test]
    fn depth_is_bounded() {
        let deep = "<div>".repeat(5000) + "text";
        assert_eq!(text(&deep), "text");
    }
}
