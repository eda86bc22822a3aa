//! The memory one document's parse may use, so that a hostile page (tags nested a million
//! deep, a million links) costs a bounded amount, in the local and the shared crawl alike.
//!
//! `lol_html` keeps a stack of open elements and buffers a token that spans input chunks; both
//! grow with the input, without limit by default (an 8 MiB page of unclosed tags took 184 MiB).
//! A [`ParseBudget`] of `--max-body` bytes gives half to `lol_html`'s own limiter and half to
//! the links kept, and a rewritten copy for the mirror is given up rather than grown past the
//! page's length plus an eighth (and 64 KiB). What a budget cuts is reported with the page (`parse-limit`
//! in `skipped.tsv`): links after the point where parsing stopped, or links over the links'
//! share, are not followed.
//!
//! Per page being processed, the crawl then holds at most: the body as fetched (`--max-body`),
//! its decoded form when it was compressed (`--max-decoded`), its UTF-8 form when it was in
//! another encoding (`--max-body`), the parse (`--max-body`), and the rewritten copy (1.125
//! times the decoded body, and 64 KiB). For an uncompressed page that is
//! under four times `--max-body`; `tests/memory.rs` measures it on the real process.

use std::fmt;
use std::mem::size_of;

use lol_html::errors::RewritingError;
use lol_html::{HtmlRewriter, MemorySettings, OutputSink};
use url::Url;

/// Input is fed to the parser in pieces of this size, so that where it stopped is known.
const CHUNK: usize = 64 << 10;
/// The parser's share is never smaller than this: normal pages need a few KiB.
const MIN_PARSER: usize = 256 << 10;

/// The working memory of one document's parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ParseBudget {
    bytes: usize,
}

impl ParseBudget {
    /// A budget of `bytes` (the crawl uses its body cap, `--max-body`).
    pub(crate) fn new(bytes: u64) -> Self {
        Self {
            bytes: usize::try_from(bytes).unwrap_or(usize::MAX),
        }
    }

    /// The most a page decoded from another encoding may take in UTF-8: the whole budget.
    pub(crate) fn decoded(self) -> usize {
        self.bytes
    }

    /// `lol_html`'s limits: half the budget, and on reaching it, the input it holds handed to
    /// the output unchanged so a rewritten page stays whole.
    pub(crate) fn memory_settings(self) -> MemorySettings {
        MemorySettings::new()
            .with_max_allowed_memory_usage((self.bytes / 2).max(MIN_PARSER))
            .with_graceful_bail_out_on_memory_limit_exceeded(true)
    }

    /// An empty store for the links found, holding at most half the budget.
    pub(crate) fn links(self) -> Links {
        Links {
            kept: Vec::new(),
            requisites: Vec::new(),
            bytes: 0,
            budget: self.bytes / 2,
            dropped: 0,
        }
    }
}

/// Links found in one document, within their share of the budget.
#[derive(Debug, Default)]
pub(crate) struct Links {
    /// In document order.
    pub(crate) kept: Vec<Url>,
    /// What the document needs to be shown (images, scripts, stylesheets), in document order.
    pub(crate) requisites: Vec<Url>,
    bytes: usize,
    budget: usize,
    /// Found after the share was used up.
    pub(crate) dropped: usize,
}

impl Links {
    /// Keeps `url` if it fits (its `Url` and its text count), otherwise counts it dropped.
    pub(crate) fn push(&mut self, url: Url) {
        if self.fits(&url) {
            self.kept.push(url);
        }
    }

    /// Keeps the requisite `url` if it fits, from the same share as the links.
    pub(crate) fn push_requisite(&mut self, url: Url) {
        if self.fits(&url) {
            self.requisites.push(url);
        }
    }

    fn fits(&mut self, url: &Url) -> bool {
        let cost = size_of::<Url>() + url.as_str().len();
        if self.bytes + cost > self.budget {
            self.dropped += 1;
            false
        } else {
            self.bytes += cost;
            true
        }
    }
}

/// What a budget cut from one document.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Cut {
    /// Decoding to UTF-8 reached its bound before this byte of the document as fetched;
    /// nothing after it was read for links.
    pub(crate) decoded_before: Option<usize>,
    /// The parser reached its share before this byte of the document; nothing after it was
    /// read for links.
    pub(crate) parsed_before: Option<usize>,
    /// Links found beyond the links' share.
    pub(crate) links_dropped: usize,
    /// The mirror copy is stored as fetched: its rewritten form outgrew its bound.
    pub(crate) rewrite_dropped: bool,
}

impl Cut {
    /// `None` when nothing was cut.
    pub(crate) fn into_option(self) -> Option<Self> {
        (self != Self::default()).then_some(self)
    }
}

impl fmt::Display for Cut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(at) = self.decoded_before {
            parts.push(format!(
                "decoding bound reached before byte {at}: links after it not read"
            ));
        }
        if let Some(at) = self.parsed_before {
            parts.push(format!(
                "parser memory bound reached before byte {at}: links after it not read"
            ));
        }
        if self.links_dropped > 0 {
            parts.push(format!(
                "{} links over the page's link memory bound not followed",
                self.links_dropped
            ));
        }
        if self.rewrite_dropped {
            parts.push("mirror copy stored unrewritten".to_owned());
        }
        f.write_str(&parts.join("; "))
    }
}

/// Writes `input` to `rewriter` and ends it. `Ok(Some(at))` when the rewriter reached its
/// memory limit: it has passed `input[..at]` to its output (rewritten up to where it stopped,
/// as is after), and `input[at..]` was not given to it.
pub(crate) fn feed<O: OutputSink>(
    mut rewriter: HtmlRewriter<'_, O>,
    input: &[u8],
) -> Result<Option<usize>, RewritingError> {
    let mut at = 0;
    for piece in input.chunks(CHUNK) {
        at += piece.len();
        match rewriter.write(piece) {
            Ok(()) => {}
            Err(RewritingError::MemoryLimitExceeded(_)) => return Ok(Some(at)),
            Err(e) => return Err(e),
        }
    }
    match rewriter.end() {
        Ok(()) => Ok(None),
        Err(RewritingError::MemoryLimitExceeded(_)) => Ok(Some(at)),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_beyond_their_share_are_counted_not_kept() {
        let url = Url::parse("http://h/a").unwrap();
        let cost = size_of::<Url>() + url.as_str().len();
        let mut links = ParseBudget::new(2 * 3 * cost as u64).links();
        for _ in 0..5 {
            links.push(url.clone());
        }
        assert_eq!((links.kept.len(), links.dropped), (3, 2));
    }

    #[test]
    fn a_cut_says_what_was_cut() {
        assert_eq!(Cut::default().into_option(), None);
        let cut = Cut {
            decoded_before: Some(1333),
            parsed_before: Some(65536),
            links_dropped: 3,
            rewrite_dropped: true,
        };
        let text = cut.to_string();
        assert!(text.contains("65536") && text.contains("3 links") && text.contains("mirror"));
        assert!(
            text.contains("decoding bound reached before byte 1333"),
            "{text}"
        );
    }
}
