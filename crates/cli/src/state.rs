//! `--state FILE`: the deduplicator's snapshot, loaded before a run and saved after it.

use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use url_dedup::{Builder, UrlDedup};

/// Restores from `path` if it exists, else builds fresh.
pub(crate) fn load_or_build(builder: Builder, path: Option<&Path>) -> Result<UrlDedup, String> {
    let Some(path) = path else {
        return builder.build().map_err(|e| e.to_string());
    };
    match File::open(path) {
        Ok(file) => builder
            .restore(BufReader::new(file))
            .map_err(|e| format!("cannot use state file {}: {e}", path.display())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => builder.build().map_err(|e| e.to_string()),
        Err(e) => Err(format!("cannot open state file {}: {e}", path.display())),
    }
}

/// Writes the state next to `path` and renames it into place, so a crash mid-write leaves the
/// previous state intact.
pub(crate) fn save(dedup: &UrlDedup, path: &Path) -> Result<(), String> {
    let tmp = temp_path(path);
    let result = (|| -> Result<(), String> {
        let file = File::create(&tmp).map_err(|e| e.to_string())?;
        let mut out = BufWriter::new(file);
        dedup.write_to(&mut out).map_err(|e| e.to_string())?;
        let file = out.into_inner().map_err(|e| e.to_string())?;
        file.sync_all().map_err(|e| e.to_string())?;
        fs::rename(&tmp, path).map_err(|e| e.to_string())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map_err(|e| format!("cannot save state file {}: {e}", path.display()))
}

fn temp_path(path: &Path) -> PathBuf {
    let mut name = path
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(format!(".tmp.{}", std::process::id()));
    path.with_file_name(name)
}

/// Flushes a writer, treating a closed pipe as the reader's choice rather than an error.
pub(crate) fn flush_quietly(out: &mut impl Write) -> io::Result<()> {
    match out.flush() {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}
