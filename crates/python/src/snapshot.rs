//! State files: written whole or not at all, read with limits from their length.

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::Path;

use url_dedup::bloom::snapshot::Limits;
use url_dedup::{Builder, Error, UrlDedup};

/// Writes the state to `path` through a temporary file in the same directory, synced and
/// renamed over the old one, so a crash or a full disk mid-write leaves the previous state
/// file whole (a paused crawl must never resume from half a filter). The temporary file has a
/// random name, is created anew (never through a link planted there) and readable by its
/// owner only, as the state file it becomes.
pub(crate) fn save(dedup: &UrlDedup, path: &Path) -> Result<(), Error> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp-");
    // Removed on drop unless persisted: an error leaves nothing behind.
    let tmp = tempfile::Builder::new().prefix(&name).tempfile_in(dir)?;
    let mut out = BufWriter::new(tmp);
    dedup.write_to(&mut out)?;
    let tmp = out.into_inner().map_err(|e| e.into_error())?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    // The rename itself is durable once the directory is synced; not every filesystem lets a
    // directory be opened for that, and the state is whole either way.
    if let Ok(dir) = File::open(dir) {
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
