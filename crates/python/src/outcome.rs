//! What a check decided, as a Python enum.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

/// What `UrlDedup.check_and_insert` decided about a URL.
///
/// `NEW`: never seen, now recorded: crawl it. `DUPLICATE`: the same canonical URL was seen
/// (or, at the filter's false-positive rate, one that hashes like it). `SIMILAR`: a different
/// URL whose every similarity feature was seen (only with a similarity preset); recorded, so
/// a repeat is a `DUPLICATE`.
#[pyclass(eq, eq_int, frozen, hash, module = "url_dedup")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Outcome {
    /// Never seen: crawl it.
    #[pyo3(name = "NEW")]
    New,
    /// Seen before.
    #[pyo3(name = "DUPLICATE")]
    Duplicate,
    /// A different URL, but every similarity feature of it was seen.
    #[pyo3(name = "SIMILAR")]
    Similar,
}

#[pymethods]
impl Outcome {
    /// Whether the URL should be crawled (only `NEW` is).
    #[getter]
    fn is_new(&self) -> bool {
        *self == Self::New
    }

    /// `new`, `duplicate` or `similar`.
    fn __str__(&self) -> &'static str {
        self.name()
    }
}

impl Outcome {
    /// The class attribute (`Outcome.NEW`, ...) for this outcome: every call returns the same
    /// three objects, so `outcome is Outcome.NEW` holds as for a Python enum, and a check
    /// allocates nothing.
    pub(crate) fn object<'py>(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        static MEMBERS: PyOnceLock<[Py<PyAny>; 3]> = PyOnceLock::new();
        let members = MEMBERS.get_or_try_init(py, || -> PyResult<_> {
            let class = py.get_type::<Self>();
            Ok([
                class.getattr("NEW")?.unbind(),
                class.getattr("DUPLICATE")?.unbind(),
                class.getattr("SIMILAR")?.unbind(),
            ])
        })?;
        Ok(members[self as usize].bind(py).clone())
    }

    /// The lower-case name the Rust crate and the command line use.
    fn name(self) -> &'static str {
        match self {
            Self::New => "new",
            Self::Duplicate => "duplicate",
            Self::Similar => "similar",
        }
    }
}

impl From<&url_dedup::Outcome> for Outcome {
    fn from(o: &url_dedup::Outcome) -> Self {
        match o {
            url_dedup::Outcome::New => Self::New,
            url_dedup::Outcome::Similar(_) => Self::Similar,
            // `Outcome` is non-exhaustive: anything that is not new is not crawled.
            _ => Self::Duplicate,
        }
    }
}
