//! Files that hold the hash key (the state and its journal): created readable by their owner
//! only, never written through a symbolic link, replaced through a temporary file of an
//! unpredictable name.
//!
//! A symbolic link planted at one of these paths (by another account that can write to the
//! directory) would otherwise make the run write the key, or overwrite any file the user can
//! write, at the link's target. The paths are opened with `O_NOFOLLOW`, so a link is an error
//! naming it; temporary files are created with `O_CREAT | O_EXCL` under a random name, so
//! nothing can be waiting at their path.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// What a path holds before the run uses it as a state or journal.
pub(crate) fn check_path(path: &Path) -> Result<(), String> {
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("cannot use {}: {e}", path.display())),
        Ok(m) if m.file_type().is_symlink() => Err(symlink_refused(path)),
        Ok(m) if !m.is_file() => Err(format!(
            "{} is not a regular file: a state and its journal must be files of their own \
             (a device, pipe or directory cannot hold them)",
            path.display()
        )),
        Ok(_) => Ok(()),
    }
}

fn symlink_refused(path: &Path) -> String {
    format!(
        "{} is a symbolic link: refusing to read or write a state through it (it could point \
         anywhere); give the path of the file itself",
        path.display()
    )
}

/// Opens `path` for reading and writing, creating it (mode 0600) if it does not exist;
/// refuses a symbolic link or anything but a regular file.
pub(crate) fn open_or_create(path: &Path) -> Result<File, String> {
    let file = no_follow(OpenOptions::new().read(true).write(true).create(true))
        .open(path)
        .map_err(|e| opening_failed(path, &e))?;
    regular(path, file)
}

/// Opens `path` for reading if it exists; refuses a symbolic link or anything but a regular
/// file.
pub(crate) fn open_existing(path: &Path) -> Result<Option<File>, String> {
    match no_follow(OpenOptions::new().read(true)).open(path) {
        Ok(file) => regular(path, file).map(Some),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(opening_failed(path, &e)),
    }
}

/// Writes `path` whole through `write`: into a new temporary file beside it (random name,
/// mode 0600, created exclusively), synced, then renamed over `path` (which replaces a link
/// there, never its target) and the directory synced. Returns the bytes written. On failure
/// the temporary file is removed and `path` is left as it was.
pub(crate) fn replace(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<&File>) -> io::Result<()>,
) -> io::Result<u64> {
    let dir = parent(path);
    let mut prefix = path.file_name().unwrap_or_default().to_os_string();
    prefix.push(TEMPORARY);
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).rand_bytes(RANDOM_CHARS);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(fs::Permissions::from_mode(0o600));
    }
    let temporary = builder.tempfile_in(dir)?;
    let bytes = {
        let mut out = BufWriter::new(temporary.as_file());
        write(&mut out)?;
        out.flush()?;
        drop(out);
        temporary.as_file().sync_all()?;
        temporary.as_file().metadata()?.len()
    };
    temporary.persist(path).map_err(|e| e.error)?;
    sync_dir(dir);
    Ok(bytes)
}

/// What a temporary file's name adds to the state's.
const TEMPORARY: &str = ".tmp.";
/// Random letters and digits after [`TEMPORARY`].
const RANDOM_CHARS: usize = 12;

/// Deletes temporary files that runs killed while saving left beside `path`: `FILE.tmp.`
/// followed by random letters and digits, or by a process id (the older naming). Call only
/// with the journal's lock held, so that no live run is writing one. A link is removed, not
/// followed.
pub(crate) fn remove_stale_temporaries(path: &Path) {
    let Some(name) = path.file_name() else {
        return;
    };
    let mut prefix = name.to_os_string();
    prefix.push(TEMPORARY);
    let prefix = prefix.as_encoded_bytes();
    let Ok(entries) = fs::read_dir(parent(path)) else {
        return;
    };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let bytes = file_name.as_encoded_bytes();
        if let Some(rest) = bytes.strip_prefix(prefix)
            && !rest.is_empty()
            && rest.iter().all(u8::is_ascii_alphanumeric)
        {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// The directory that holds `path` (`.` for a bare file name).
fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// Makes a rename durable: syncs the directory (best effort).
fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(dir) = File::open(dir) {
        let _ = dir.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

fn opening_failed(path: &Path, e: &io::Error) -> String {
    #[cfg(unix)]
    if e.raw_os_error() == Some(libc::ELOOP) {
        return symlink_refused(path);
    }
    format!("cannot open {}: {e}", path.display())
}

/// `file`, opened at `path`, if it is a regular file.
fn regular(path: &Path, file: File) -> Result<File, String> {
    match file.metadata() {
        Ok(m) if m.is_file() => Ok(file),
        Ok(_) => Err(format!(
            "{} is not a regular file: a state and its journal must be files of their own",
            path.display()
        )),
        Err(e) => Err(format!("cannot use {}: {e}", path.display())),
    }
}

/// `options` that create files with mode 0600 and do not follow a symbolic link at the path.
fn no_follow(options: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Non-blocking, so that opening a pipe planted at the path cannot hang the run
        // before it is refused as no regular file.
        options
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    options
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn links_and_special_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        fs::write(&target, b"keep").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        for result in [
            check_path(&link),
            open_or_create(&link).map(drop),
            open_existing(&link).map(drop),
        ] {
            let error = result.unwrap_err();
            assert!(error.contains("symbolic link"), "{error}");
        }
        assert_eq!(fs::read(&target).unwrap(), b"keep");
        let error = check_path(Path::new("/dev/null")).unwrap_err();
        assert!(error.contains("not a regular file"), "{error}");
        let error = check_path(dir.path()).unwrap_err();
        assert!(error.contains("not a regular file"), "{error}");
    }

    #[test]
    fn a_replaced_file_is_private_and_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state");
        fs::write(&path, b"old").unwrap();
        let bytes = replace(&path, |out| out.write_all(b"new state")).unwrap();
        assert_eq!(
            (bytes, fs::read(&path).unwrap()),
            (9, b"new state".to_vec())
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        // A failed write leaves the file as it was and no temporary file behind.
        let failed = replace(&path, |_| Err(io::Error::other("disk full")));
        assert!(failed.is_err());
        assert_eq!(fs::read(&path).unwrap(), b"new state");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
