//! Copies the items of a Python iterable into one buffer, so that the GIL can be released
//! while the filter works on them: the Python objects themselves may not be touched without
//! it, and another thread could free them.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// The items of a batch, end to end in one allocation.
#[derive(Default)]
pub(crate) struct Batch {
    data: Vec<u8>,
    ends: Vec<usize>,
}

impl Batch {
    /// The strings of `items` (any iterable of `str`), as UTF-8.
    pub(crate) fn of_strings(items: &Bound<'_, PyAny>) -> PyResult<Self> {
        let mut batch = Self::default();
        for item in items.try_iter()? {
            let item = item?;
            batch.push(item.extract::<&str>()?.as_bytes());
        }
        Ok(batch)
    }

    /// The bytes of `items` (any iterable of `bytes`; `str` items are taken as UTF-8).
    pub(crate) fn of_bytes(items: &Bound<'_, PyAny>) -> PyResult<Self> {
        let mut batch = Self::default();
        for item in items.try_iter()? {
            let item = item?;
            match item.cast::<PyBytes>() {
                Ok(bytes) => batch.push(bytes.as_bytes()),
                Err(_) => batch.push(item.extract::<&str>()?.as_bytes()),
            }
        }
        Ok(batch)
    }

    fn push(&mut self, item: &[u8]) {
        self.data.extend_from_slice(item);
        self.ends.push(self.data.len());
    }

    /// Each item's bytes, in order.
    pub(crate) fn items(&self) -> impl Iterator<Item = &[u8]> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts.zip(&self.ends).map(|(s, &e)| &self.data[s..e])
    }

    /// Each item as text. Only for batches made by [`Batch::of_strings`], whose items are
    /// whole UTF-8 strings; anything else reads as empty, which no URL is.
    pub(crate) fn strings(&self) -> impl Iterator<Item = &str> {
        self.items()
            .map(|b| std::str::from_utf8(b).unwrap_or_default())
    }
}
