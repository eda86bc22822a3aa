//! Learned rewrite rules from Python: the `rules=` argument of the constructors (a rules file
//! or its text) and the module's `learn`, which writes that text from `(URL, digest)` pairs.

use std::path::{Path, PathBuf};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use url_dedup::rules::{LearnOptions, Learner, RuleSet, Rules, Status};
use xxhash_rust::xxh3::xxh3_128;

use crate::errors::{invalid_url, os_error, rules_error};

/// Rules read from the `rules=` argument, indexed to be applied.
pub(crate) struct Loaded {
    pub(crate) rules: Rules,
    /// How many rules the text held.
    pub(crate) count: usize,
}

/// Why rules could not be read.
enum Failure {
    Io(std::io::Error),
    /// The line (from 1; 0 for no line) and what is wrong with it.
    Text(usize, String),
}

/// Reads `rules=`: a `str` holding a line break is the rules' text; any other `str`, or an
/// `os.PathLike`, names a rules file. Every rule applies, candidate or confirmed, as with
/// `url-dedup --rules`: a file given by hand is the user's choice.
pub(crate) fn load(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<Loaded> {
    if let Ok(s) = value.cast::<PyString>() {
        let text = s.to_str()?.to_owned();
        if text.contains('\n') {
            return py
                .detach(|| parse(&text))
                .map_err(|(line, message)| rules_error(line, None, message));
        }
    }
    let path: PathBuf = value.extract()?;
    py.detach(|| read(&path)).map_err(|e| match e {
        Failure::Io(io) => os_error(&io, Some(&path)),
        Failure::Text(line, message) => rules_error(line, Some(&path), message),
    })
}

fn read(path: &Path) -> Result<Loaded, Failure> {
    let bytes = std::fs::read(path).map_err(Failure::Io)?;
    let text = std::str::from_utf8(&bytes).map_err(|e| {
        let line = line_breaks(&bytes[..e.valid_up_to()]) + 1;
        Failure::Text(line, "the text is not UTF-8".to_owned())
    })?;
    parse(text).map_err(|(line, message)| Failure::Text(line, message))
}

fn line_breaks(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b == b'\n').count()
}

fn parse(text: &str) -> Result<Loaded, (usize, String)> {
    let set = RuleSet::parse(text).map_err(|e| (e.line, e.message))?;
    Ok(Loaded {
        rules: Rules::new(&set),
        count: set.len(),
    })
}

/// Learns rewrite rules from what a crawl fetched and returns them as the text of a rules
/// file (for review, for a file, or for `UrlDedup(rules=...)`).
///
/// `pages` is any iterable of `(url, digest)` or `(url, digest, simhash)` tuples: `digest`
/// (`bytes` or `str`) identifies the content the URL served, so URLs of equal digests are one
/// page; `simhash` (a 64-bit `int` or None) lets pages within `max_distance` bits count as
/// neither the same nor different. A rule needs `min_pages` pages whose URLs it folds, or
/// `min_urls` fetches it saves. URLs are canonicalized under `canonicalization` first
/// (apply the rules with the same convention). Learned rules are candidates unless
/// `confirmed`; `UrlDedup(rules=...)` applies both. Raises `InvalidUrlError` for a URL without
/// a canonical form (nothing is learned).
///
/// >>> pages = [(f"https://h.example/a/{i}{v}", str(i)) for i in range(3) for v in ("", "?p=1")]
/// >>> UrlDedup(rules=learn(pages)).canonicalize("https://h.example/a/7?p=1")
/// 'https://h.example/a/7'
#[pyfunction]
#[pyo3(signature = (
    pages,
    *,
    canonicalization = Some("crawler"),
    min_pages = 3,
    min_urls = 12,
    max_distance = 3,
    confirmed = false,
))]
pub(crate) fn learn(
    py: Python<'_>,
    pages: &Bound<'_, PyAny>,
    canonicalization: Option<&str>,
    min_pages: u64,
    min_urls: u64,
    max_distance: u32,
    confirmed: bool,
) -> PyResult<String> {
    let canon = canonicalization
        .map(crate::options::canonicalizer)
        .transpose()?;
    let status = if confirmed {
        Status::Confirmed
    } else {
        Status::Candidate
    };
    let options = LearnOptions::default()
        .with_min_pages(min_pages)
        .with_min_urls(min_urls)
        .with_max_distance(max_distance)
        .with_status(status);
    let mut learner = Learner::new(options);
    for item in pages.try_iter()? {
        let item = item?;
        let (url, digest, simhash): (String, Bound<'_, PyAny>, Option<u64>) =
            match item.extract::<(String, Bound<'_, PyAny>)>() {
                Ok((url, digest)) => (url, digest, None),
                Err(_) => item.extract()?,
            };
        let digest = match digest.cast::<PyBytes>() {
            Ok(bytes) => xxh3_128(bytes.as_bytes()),
            Err(_) => xxh3_128(digest.extract::<&str>()?.as_bytes()),
        };
        let canonical = match canon {
            Some(c) => c
                .canonicalize(&url)
                .map_err(|e| crate::errors::to_py(url_dedup::Error::InvalidUrl(e)))?
                .into_owned(),
            None => url,
        };
        learner
            .add(&canonical, digest, simhash)
            .map_err(|e| invalid_url(e.to_string()))?;
    }
    Ok(py.detach(|| learner.learn().rules.to_string()))
}
