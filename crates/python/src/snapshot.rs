//! State files: written whole or not at all, read with limits from their length.

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};

use url_dedup::bloom::snapshot::Limits;
use url_dedup::{Builder, Error, UrlDedup};

/// Writes the state to `path` through a temporary file in the same directory, synced and
/// renamed over the old one, so a crash or a full disk mid-write leaves the previous state
/// file whole (a paused crawl must never resume from half a filter).
pub(crate) fn save(dedup: &UrlDedup, path: &Path) -> Result<(), Error> {
    let tmp = temporary_path(path);
    let written = (|| -> Result<(), Error> {
        let mut out = BufWriter::new(File::create(&tmp)?);
        dedup.write_to(&mut out)?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)?;
        Ok(())
    })();
    if written.is_err() {
        // Best effort: the error that matters is the one being returned.
        let _ = std::fs::remove_file(&tmp);
    }
    written?;
    // The rename itself is durable once the directory is synced; not every filesystem lets a
    // directory be opened for that, and the state is whole either way.
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    if let Some(Ok(dir)) = dir.map(File::open) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// Reads a state file written by [`save`] (or by any `UrlDedup::write_to`), refusing a header
/// that announces more than the file holds before allocating for it.
pub(crate) fn load(builder: Builder, path: &Path) -> Result<UrlDedup, Error> {
    let file = File::open(path)?;
    let limits = Limits {
        max_payload_bytes: file.metadata()?.len(),
    };
    builder.restore_with_limits(BufReader::new(file), limits)
}

/// The state as bytes.
pub(crate) fn to_bytes(dedup: &UrlDedup) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    dedup.write_to(&mut out)?;
    Ok(out)
}

/// A deduplicator from bytes written by [`to_bytes`].
pub(crate) fn from_bytes(builder: Builder, data: &[u8]) -> Result<UrlDedup, Error> {
    let limits = Limits {
        max_payload_bytes: data.len() as u64,
    };
    builder.restore_with_limits(data, limits)
}

fn temporary_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp-{}", std::process::id()));
    path.with_file_name(name)
}
