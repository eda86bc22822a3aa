//! A tab-separated record a process of a shared crawl keeps in its output directory.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::error::CrawlError;

/// Lines appended to one file, flushed with each commit.
pub(crate) struct Record {
    path: PathBuf,
    out: Mutex<BufWriter<File>>,
}

impl Record {
    /// Creates (or empties) `name` in `out`.
    pub(crate) fn create(out: &Path, name: &str) -> Result<Self, CrawlError> {
        let path = out.join(name);
        let file = crate::files::open(
            out,
            Path::new(name),
            crate::files::Open::Truncate,
            crate::files::Access::Shared,
        )
        .map_err(CrawlError::io("creating", &path))?;
        Ok(Self {
            path,
            out: Mutex::new(BufWriter::new(file)),
        })
    }

    /// Appends one line.
    pub(crate) fn write(&self, line: std::fmt::Arguments<'_>) -> Result<(), CrawlError> {
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        writeln!(out, "{line}").map_err(CrawlError::io("writing", &self.path))
    }

    pub(crate) fn flush(&self) -> Result<(), CrawlError> {
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        out.flush().map_err(CrawlError::io("writing", &self.path))
    }
}
