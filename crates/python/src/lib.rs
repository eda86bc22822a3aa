//! The `url_dedup._native` extension module: Python bindings of the `url-dedup` facade.
//!
//! The Python package `url_dedup` (in `python/`) re-exports what this module defines and adds
//! the exception classes (`url_dedup.errors`) and the Scrapy dupefilters
//! (`url_dedup.scrapy`). Each Rust item here is private to the extension; the Python API is
//! documented by the docstrings below and the type stubs in `python/url_dedup/_native.pyi`,
//! and tested from Python (`tests/`).
#![deny(missing_docs)]

mod batch;
mod dedup;
mod errors;
mod options;
mod outcome;
mod rules;
mod snapshot;

use pyo3::prelude::*;

/// The canonical form of `url` under a named convention (`crawler`, `rfc3986`, `w3lib`,
/// `safe-browsing`, `ia`, `surt`), without any filter.
///
/// Raises `InvalidUrlError` when the URL has no canonical form and `ValueError` for an
/// unknown convention.
#[pyfunction]
#[pyo3(signature = (url, convention = "crawler"))]
fn canonicalize(url: &str, convention: &str) -> PyResult<String> {
    let canon = options::canonicalizer(convention)?;
    canon
        .canonicalize(url)
        .map(|c| c.into_owned())
        .map_err(|e| errors::to_py(url_dedup::Error::InvalidUrl(e)))
}

/// The SURT key of `url` (`org,example)/path?query`), as web-archive CDX indexes sort them.
///
/// Raises `InvalidUrlError` when the URL has none.
#[pyfunction]
fn surt(url: &str) -> PyResult<String> {
    url_dedup::canon::surt(url).map_err(|e| errors::to_py(url_dedup::Error::InvalidUrl(e)))
}

/// The extension module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<dedup::PyUrlDedup>()?;
    m.add_class::<outcome::Outcome>()?;
    m.add_function(wrap_pyfunction!(canonicalize, m)?)?;
    m.add_function(wrap_pyfunction!(surt, m)?)?;
    m.add_function(wrap_pyfunction!(rules::learn, m)?)?;
    m.add(
        "CONVENTIONS",
        url_dedup::canon::Convention::ALL.map(|c| c.name()).to_vec(),
    )?;
    Ok(())
}
