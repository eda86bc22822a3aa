//! The facade's errors as the exception classes of `url_dedup.errors` (defined in Python, so
//! that each can also derive from the built-in exception it is a kind of).

use std::path::Path;

use pyo3::PyErr;
use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use url_dedup::Error;
use url_dedup::bloom::snapshot::SnapshotError as RawSnapshotError;

mod classes {
    // The classes live in Python (`python/url_dedup/errors.py`), with their docs.
    #![allow(missing_docs, unreachable_pub)]
    pyo3::import_exception!(url_dedup.errors, UrlDedupError);
    pyo3::import_exception!(url_dedup.errors, InvalidUrlError);
    pyo3::import_exception!(url_dedup.errors, NotUtf8Error);
    pyo3::import_exception!(url_dedup.errors, FilterError);
    pyo3::import_exception!(url_dedup.errors, RedisError);
    pyo3::import_exception!(url_dedup.errors, SnapshotError);
    pyo3::import_exception!(url_dedup.errors, ConfigMismatchError);
    pyo3::import_exception!(url_dedup.errors, StateMismatchError);
    pyo3::import_exception!(url_dedup.errors, RulesError);
}

/// The Python exception for a facade error.
pub(crate) fn to_py(e: Error) -> PyErr {
    to_py_at(e, None)
}

/// [`to_py`] for an error met reading or writing `path`: an I/O error raises the `OSError`
/// subclass Python code expects (`FileNotFoundError`, `PermissionError`, ...) naming the file.
pub(crate) fn to_py_at(e: Error, path: Option<&Path>) -> PyErr {
    use classes::*;
    if let Some(snapshot) = snapshot_error(&e) {
        return match snapshot {
            RawSnapshotError::Io(io) => os_error(io, path),
            _ => SnapshotError::new_err(e.to_string()),
        };
    }
    let message = e.to_string();
    match e {
        Error::InvalidUrl(_) => InvalidUrlError::new_err(message),
        Error::NotUtf8 => NotUtf8Error::new_err(message),
        Error::Filter(_) | Error::Segmented(_) | Error::Similarity(_) => {
            FilterError::new_err(message)
        }
        Error::Redis(_) | Error::Store(_) | Error::Reset(_) => RedisError::new_err(message),
        Error::ConfigMismatch {
            recorded,
            configured,
        } => ConfigMismatchError::new_err((message, recorded, configured)),
        Error::StateMismatch(_) => StateMismatchError::new_err(message),
        // `Error` is non-exhaustive: a kind added later still raises the common base class.
        _ => UrlDedupError::new_err(message),
    }
}

/// The snapshot error inside `e`, whichever component met it.
fn snapshot_error(e: &Error) -> Option<&RawSnapshotError> {
    use url_dedup::{bloom, segmented, similarity};
    match e {
        Error::Snapshot(s)
        | Error::Filter(bloom::Error::Snapshot(s))
        | Error::Segmented(segmented::Error::Snapshot(s))
        | Error::Similarity(similarity::Error::Snapshot(s))
        | Error::Similarity(similarity::Error::Sizing(bloom::Error::Snapshot(s))) => Some(s),
        _ => None,
    }
}

/// `OSError(errno, strerror, filename)`, which Python turns into the matching subclass.
pub(crate) fn os_error(io: &std::io::Error, path: Option<&Path>) -> PyErr {
    match (io.raw_os_error(), path) {
        (Some(errno), Some(path)) => {
            let strerror = std::io::Error::from_raw_os_error(errno).to_string();
            PyOSError::new_err((errno, strerror, path.as_os_str().to_os_string()))
        }
        _ => PyErr::from(std::io::Error::new(io.kind(), io.to_string())),
    }
}

/// The exception instance for a facade error, as the batch methods return it in place of an
/// outcome.
pub(crate) fn to_py_value(py: Python<'_>, e: Error) -> Py<PyAny> {
    to_py(e).into_value(py).into_any()
}

/// `RulesError` for rules text that does not parse: `line` (from 1) of the file at `path`, or
/// of text given as a string.
pub(crate) fn rules_error(line: usize, path: Option<&Path>, message: String) -> PyErr {
    let shown = match path {
        Some(p) => format!("{}:{line}: {message}", p.display()),
        None => format!("line {line}: {message}"),
    };
    let path = path.map(|p| p.as_os_str().to_os_string());
    classes::RulesError::new_err((shown, line, path))
}

/// `InvalidUrlError` with `message`.
pub(crate) fn invalid_url(message: String) -> PyErr {
    classes::InvalidUrlError::new_err(message)
}
