//! The `UrlDedup` class.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};
use url_dedup::{Builder, Error, UrlDedup};

use crate::batch::Batch;
use crate::errors::{to_py, to_py_at, to_py_value};
use crate::options::Options;
use crate::outcome::Outcome;
use crate::snapshot;

/// Deduplicates URLs: canonicalize, rewrite with learned rules, check a Bloom filter (or a
/// fingerprint set), optionally fold similar URLs. Thread-safe; batch, snapshot and Redis
/// calls release the GIL.
#[pyclass(name = "UrlDedup", module = "url_dedup", frozen)]
pub(crate) struct PyUrlDedup {
    inner: UrlDedup,
    options: Options,
    /// How many learned rules rewrite canonical forms (`rules=`).
    rule_count: usize,
}

/// The constructor's keyword arguments, shared by `UrlDedup(...)`, `load` and `from_bytes`.
macro_rules! options {
    ($expected_urls:ident, $false_positive_rate:ident, $canonicalization:ident, $filter:ident,
     $similarity:ident, $similarity_fpr:ident, $hash_key:ident, $redis:ident,
     $redis_prefix:ident, $accept_config_change:ident) => {
        Options::parse(
            $expected_urls,
            $false_positive_rate,
            $canonicalization,
            $filter,
            ($similarity, $similarity_fpr),
            $hash_key,
            $redis,
            $redis_prefix,
            $accept_config_change,
        )?
    };
}

#[pymethods]
impl PyUrlDedup {
    #[new]
    #[pyo3(signature = (
        expected_urls = 1_000_000,
        false_positive_rate = None,
        *,
        canonicalization = Some("crawler"),
        filter = "growing",
        similarity = None,
        similarity_false_positive_rate = None,
        hash_key = None,
        redis = None,
        redis_prefix = "url-dedup".to_owned(),
        accept_config_change = false,
        rules = None,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        expected_urls: u64,
        false_positive_rate: Option<f64>,
        canonicalization: Option<&str>,
        filter: &str,
        similarity: Option<&str>,
        similarity_false_positive_rate: Option<f64>,
        hash_key: Option<&[u8]>,
        redis: Option<String>,
        redis_prefix: String,
        accept_config_change: bool,
        rules: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let options = options!(
            expected_urls,
            false_positive_rate,
            canonicalization,
            filter,
            similarity,
            similarity_false_positive_rate,
            hash_key,
            redis,
            redis_prefix,
            accept_config_change
        );
        let (builder, rule_count) = with_rules(py, options.builder(), rules)?;
        // Opening a shared filter connects to Redis.
        let inner = py.detach(|| builder.build()).map_err(to_py)?;
        Ok(Self {
            inner,
            options,
            rule_count,
        })
    }

    /// A deduplicator restored from a state file written by `save`, with the same options
    /// (canonicalization, similarity, filter kind) as when it was saved, or
    /// `ConfigMismatchError` (unless `accept_config_change`). With `redis`, the file seeds the
    /// shared filter instead.
    #[staticmethod]
    #[pyo3(signature = (
        path,
        expected_urls = 1_000_000,
        false_positive_rate = None,
        *,
        canonicalization = Some("crawler"),
        filter = "growing",
        similarity = None,
        similarity_false_positive_rate = None,
        hash_key = None,
        redis = None,
        redis_prefix = "url-dedup".to_owned(),
        accept_config_change = false,
        rules = None,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn load(
        py: Python<'_>,
        path: PathBuf,
        expected_urls: u64,
        false_positive_rate: Option<f64>,
        canonicalization: Option<&str>,
        filter: &str,
        similarity: Option<&str>,
        similarity_false_positive_rate: Option<f64>,
        hash_key: Option<&[u8]>,
        redis: Option<String>,
        redis_prefix: String,
        accept_config_change: bool,
        rules: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let options = options!(
            expected_urls,
            false_positive_rate,
            canonicalization,
            filter,
            similarity,
            similarity_false_positive_rate,
            hash_key,
            redis,
            redis_prefix,
            accept_config_change
        );
        let (builder, rule_count) = with_rules(py, options.builder(), rules)?;
        let inner = py
            .detach(|| snapshot::load(builder, &path))
            .map_err(|e| to_py_at(e, Some(&path)))?;
        Ok(Self {
            inner,
            options,
            rule_count,
        })
    }

    /// A deduplicator restored from bytes written by `to_bytes`; options as for `load`.
    #[staticmethod]
    #[pyo3(signature = (
        data,
        expected_urls = 1_000_000,
        false_positive_rate = None,
        *,
        canonicalization = Some("crawler"),
        filter = "growing",
        similarity = None,
        similarity_false_positive_rate = None,
        hash_key = None,
        redis = None,
        redis_prefix = "url-dedup".to_owned(),
        accept_config_change = false,
        rules = None,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn from_bytes(
        py: Python<'_>,
        data: &[u8],
        expected_urls: u64,
        false_positive_rate: Option<f64>,
        canonicalization: Option<&str>,
        filter: &str,
        similarity: Option<&str>,
        similarity_false_positive_rate: Option<f64>,
        hash_key: Option<&[u8]>,
        redis: Option<String>,
        redis_prefix: String,
        accept_config_change: bool,
        rules: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let options = options!(
            expected_urls,
            false_positive_rate,
            canonicalization,
            filter,
            similarity,
            similarity_false_positive_rate,
            hash_key,
            redis,
            redis_prefix,
            accept_config_change
        );
        let (builder, rule_count) = with_rules(py, options.builder(), rules)?;
        let inner = py
            .detach(|| snapshot::from_bytes(builder, data))
            .map_err(to_py)?;
        Ok(Self {
            inner,
            options,
            rule_count,
        })
    }

    /// Records `url` and says whether it was new: the one call a crawler makes per discovered
    /// URL. Raises `InvalidUrlError` (nothing recorded) when canonicalization is on and `url` is
    /// not an absolute http(s) URL.
    fn check_and_insert<'py>(&self, py: Python<'py>, url: &str) -> PyResult<Bound<'py, PyAny>> {
        let outcome = self.maybe_detached(py, || self.inner.check_and_insert(url));
        Outcome::from(&outcome.map_err(to_py)?).object(py)
    }

    /// `check_and_insert` that also returns the canonical form the decision was made on.
    fn check_and_insert_canonical<'py>(
        &self,
        py: Python<'py>,
        url: &str,
    ) -> PyResult<(Bound<'py, PyAny>, String)> {
        let decided = self.maybe_detached(py, || {
            self.inner
                .check_and_insert_canonical(url)
                .map(|(o, c)| (Outcome::from(&o), c.into_owned()))
        });
        let (outcome, canonical) = decided.map_err(to_py)?;
        Ok((outcome.object(py)?, canonical))
    }

    /// `check_and_insert` for a key of raw bytes, such as a request fingerprint: compared byte
    /// for byte without canonicalization; with it, the bytes must be a UTF-8 URL
    /// (`NotUtf8Error` otherwise).
    fn check_and_insert_bytes<'py>(
        &self,
        py: Python<'py>,
        key: &[u8],
    ) -> PyResult<Bound<'py, PyAny>> {
        let decided = self.maybe_detached(py, || {
            self.inner
                .check_and_insert_batch_bytes([key])
                .pop()
                .unwrap_or(Err(Error::Store("no answer".into())))
        });
        let (outcome, _) = decided.map_err(to_py)?;
        Outcome::from(&outcome).object(py)
    }

    /// Checks and records many URLs (any iterable of `str`) with one call to the filter (one
    /// round trip to Redis), without the GIL. One item per input, in order: an `Outcome`, or
    /// the exception (`InvalidUrlError`) for a URL that could not be decided. A URL repeated
    /// in the batch is `NEW` the first time. Raises `RedisError` if the shared filter failed.
    fn check_and_insert_batch<'py>(
        &self,
        py: Python<'py>,
        urls: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let batch = Batch::of_strings(urls)?;
        let decided = py.detach(|| {
            self.inner
                .check_and_insert_batch_canonical(batch.strings())
                .into_iter()
                .map(|r| r.map(|(o, _)| Outcome::from(&o)))
                .collect::<Vec<_>>()
        });
        answers(py, decided, |py, o| o.object(py))
    }

    /// `check_and_insert_batch` that also returns each canonical form: items are
    /// `(Outcome, str)` tuples or exceptions.
    fn check_and_insert_batch_canonical<'py>(
        &self,
        py: Python<'py>,
        urls: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let batch = Batch::of_strings(urls)?;
        let decided = py.detach(|| {
            self.inner
                .check_and_insert_batch_canonical(batch.strings())
                .into_iter()
                .map(|r| r.map(|(o, c)| (Outcome::from(&o), c.into_owned())))
                .collect::<Vec<_>>()
        });
        answers(py, decided, |py, (outcome, canonical)| {
            let canonical = PyString::new(py, &canonical).into_any();
            Ok(PyTuple::new(py, [outcome.object(py)?, canonical])?.into_any())
        })
    }

    /// `check_and_insert_batch` for keys of raw bytes (any iterable of `bytes`), as
    /// `check_and_insert_bytes` takes one.
    fn check_and_insert_batch_bytes<'py>(
        &self,
        py: Python<'py>,
        keys: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let batch = Batch::of_bytes(keys)?;
        let decided = py.detach(|| {
            self.inner
                .check_and_insert_batch_bytes(batch.items())
                .into_iter()
                .map(|r| r.map(|(o, _)| Outcome::from(&o)))
                .collect::<Vec<_>>()
        });
        answers(py, decided, |py, o| o.object(py))
    }

    /// Whether `url` was recorded (the exact filter only), without recording it. Raises
    /// `InvalidUrlError` as `check_and_insert` does.
    fn contains(&self, py: Python<'_>, url: &str) -> PyResult<bool> {
        self.maybe_detached(py, || self.inner.contains(url))
            .map_err(to_py)
    }

    /// `url in dedup`: as `contains`, but a URL without a canonical form is simply not in it.
    fn __contains__(&self, py: Python<'_>, url: &str) -> PyResult<bool> {
        match self.maybe_detached(py, || self.inner.contains(url)) {
            Err(Error::InvalidUrl(_)) => Ok(false),
            other => other.map_err(to_py),
        }
    }

    /// The canonical form of `url` under this deduplicator's convention (`url` itself without
    /// canonicalization).
    fn canonicalize(&self, url: &str) -> PyResult<String> {
        self.inner
            .canonicalize(url)
            .map(|c| c.into_owned())
            .map_err(to_py)
    }

    /// Writes the whole state to `path` (a temporary file renamed over it: a crash leaves the
    /// previous file whole). A shared filter is copied out of Redis.
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        py.detach(|| snapshot::save(&self.inner, &path))
            .map_err(|e| to_py_at(e, Some(&path)))
    }

    /// The whole state as `bytes`, for `UrlDedup.from_bytes`.
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let data = py
            .detach(|| snapshot::to_bytes(&self.inner))
            .map_err(to_py)?;
        Ok(PyBytes::new(py, &data))
    }

    /// The number of distinct URLs the filter was sized for (its first layer when growing).
    #[getter]
    fn expected_urls(&self) -> u64 {
        self.inner.expected_urls()
    }

    /// The chance, now, that a new URL would be taken for one already seen. NaN for a
    /// filter in Redis.
    #[getter]
    fn false_positive_rate(&self) -> f64 {
        self.inner.false_positive_rate()
    }

    /// Estimated number of distinct URLs recorded. NaN for a filter in Redis.
    #[getter]
    fn estimated_urls(&self) -> f64 {
        self.inner.estimated_urls()
    }

    /// Bytes of filter state, in this process or in Redis.
    #[getter]
    fn memory_bytes(&self) -> u64 {
        self.inner.memory_bytes()
    }

    /// Whether more URLs were recorded than a fixed-size filter was sized for.
    #[getter]
    fn is_over_capacity(&self) -> bool {
        self.inner.is_over_capacity()
    }

    /// With `redis`: True when opening this deduplicator created the shared filter in
    /// Redis, False when it found one there; None for a filter in memory. True for a job that
    /// ran before means Redis lost its data (a restart without persistence): every URL is new
    /// again.
    #[getter]
    fn created_shared_filter(&self) -> Option<bool> {
        self.inner.created_shared_filter()
    }

    /// The canonicalization convention's name, or None when keys are compared byte for byte.
    #[getter]
    fn canonicalization(&self) -> Option<&'static str> {
        self.options.canonicalization.map(|c| c.name())
    }

    /// How many learned rules rewrite each canonical form (`rules=`); 0 without rules.
    #[getter]
    fn rule_count(&self) -> usize {
        self.rule_count
    }

    /// The Redis URL of a shared filter, or None.
    #[getter]
    fn redis(&self) -> Option<&str> {
        self.options.redis.as_ref().map(|(url, _)| url.as_str())
    }

    /// The key prefix of a shared filter in Redis, or None.
    #[getter]
    fn redis_prefix(&self) -> Option<&str> {
        self.options.redis.as_ref().map(|(_, p)| p.as_str())
    }

    fn __repr__(&self) -> String {
        let o = &self.options;
        let canon = match o.canonicalization {
            Some(c) => format!("{:?}", c.name()),
            None => "None".to_owned(),
        };
        let mut repr = format!(
            "UrlDedup(expected_urls={}, false_positive_rate={}, canonicalization={canon}, filter={:?}",
            o.expected_urls,
            o.false_positive_rate
                .map_or_else(|| "None".to_owned(), |r| r.to_string()),
            format!("{:?}", o.filter).to_ascii_lowercase(),
        );
        if let Some(p) = o.similarity {
            repr += &format!(", similarity={:?}", format!("{p:?}").to_ascii_lowercase());
        }
        if let Some(rate) = o.similarity_fpr {
            repr += &format!(", similarity_false_positive_rate={rate}");
        }
        if let Some((url, prefix)) = &o.redis {
            repr += &format!(", redis={url:?}, redis_prefix={prefix:?}");
        }
        if self.rule_count > 0 {
            repr += &format!(", rules=<{} rules>", self.rule_count);
        }
        repr + ")"
    }
}

impl PyUrlDedup {
    /// Runs `f` without the GIL when the filter is in Redis (a network round trip), with it
    /// otherwise (an in-memory check is quicker than releasing and taking it back).
    fn maybe_detached<T: Send>(&self, py: Python<'_>, f: impl FnOnce() -> T + Send) -> T {
        if self.options.redis.is_some() {
            py.detach(f)
        } else {
            f()
        }
    }
}

/// `builder` also rewriting canonical forms with the rules `rules=` gives (a rules file or
/// its text), and how many rules they are.
fn with_rules(
    py: Python<'_>,
    builder: Builder,
    rules: Option<&Bound<'_, PyAny>>,
) -> PyResult<(Builder, usize)> {
    match rules {
        None => Ok((builder, 0)),
        Some(value) => {
            let loaded = crate::rules::load(py, value)?;
            Ok((builder.rules(loaded.rules), loaded.count))
        }
    }
}

/// The Python list of a batch's answers: each converted by `convert`, or the exception of an
/// item that could not be decided. A failed store fails the whole batch instead.
fn answers<'py, T>(
    py: Python<'py>,
    decided: Vec<Result<T, Error>>,
    convert: impl Fn(Python<'py>, T) -> PyResult<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for answer in decided {
        match answer {
            Ok(value) => list.append(convert(py, value)?)?,
            Err(e @ (Error::Store(_) | Error::Reset(_) | Error::Redis(_))) => return Err(to_py(e)),
            Err(e) => list.append(to_py_value(py, e))?,
        }
    }
    Ok(list)
}
