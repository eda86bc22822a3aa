//! Files in the output directory: created by the crawl, never written through a link it did
//! not make, and private (0600) when they hold crawl state or keys.
//!
//! Every file below `--out` is opened through [`open`]: each part of its path below the output
//! directory must be a real directory (created when missing) and the file itself is opened
//! with `O_NOFOLLOW`, so a symbolic link planted in the output directory (before a resume, by
//! another user who can write there) makes the crawl stop with an error naming it instead of
//! writing where it points. Whole files that must never be seen half written (the checkpoint)
//! go through [`replace`]: a temporary file with an unpredictable name, created with
//! `O_EXCL`, synced, then renamed over the old one.
//!
//! A link planted between the check of a directory and the file's creation is not caught; the
//! output directory of a crawl should not be writable by anyone else.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

/// Who may read a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// Crawl state or keys: the owner only (0600).
    Private,
    /// Output for people and tools (WARC, mirror, reports): as the umask allows (0666 & !umask).
    Shared,
}

impl Access {
    fn mode(self) -> u32 {
        match self {
            Self::Private => 0o600,
            Self::Shared => 0o666,
        }
    }
}

/// How a file is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Open {
    /// Created when missing, written from its end.
    Append,
    /// Created when missing, read and written in place (the WARC file, cut back on resume).
    ReadWrite,
    /// Created, or emptied when it exists.
    Truncate,
}

/// Opens `rel` below `out`, refusing to follow a symbolic link anywhere below `out`.
pub(crate) fn open(out: &Path, rel: &Path, how: Open, access: Access) -> io::Result<File> {
    let path = beneath(out, rel)?;
    let mut options = OpenOptions::new();
    options
        .create(true)
        .mode(access.mode())
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    match how {
        Open::Append => options.append(true),
        Open::ReadWrite => options.read(true).write(true).truncate(false),
        Open::Truncate => options.write(true).truncate(true),
    };
    options.open(&path).map_err(|e| link_error(e, &path))
}

/// The text of `rel` below `out`, read without following a link (`None` when it does not
/// exist).
pub(crate) fn read_private(out: &Path, rel: &Path) -> io::Result<Option<String>> {
    let path = beneath(out, rel)?;
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&path);
    match file {
        Ok(mut f) => {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut f, &mut text)?;
            Ok(Some(text))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(link_error(e, &path)),
    }
}

/// Writes `rel` below `out` whole: `write` fills a temporary file beside it (random name,
/// `O_EXCL`), which is synced and renamed over `rel`, and the directory is synced, so a crash
/// leaves the old file or the new one, never a mix.
pub(crate) fn replace(
    out: &Path,
    rel: &Path,
    access: Access,
    write: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<()> {
    let path = beneath(out, rel)?;
    let dir = path.parent().unwrap_or(out);
    let mut tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        .permissions(std::fs::Permissions::from_mode(access.mode()))
        .tempfile_in(dir)?;
    write(tmp.as_file_mut())?;
    tmp.as_file_mut().flush()?;
    tmp.as_file().sync_all()?;
    // The rename replaces a link planted at the target, it never writes through it.
    tmp.persist(&path).map_err(|e| e.error)?;
    File::open(dir)?.sync_all()
}

/// Writes `data` as the file `rel` below `out` (a mirror copy), replacing what is there.
pub(crate) fn write(out: &Path, rel: &Path, data: &[u8], access: Access) -> io::Result<()> {
    let mut file = open(out, rel, Open::Truncate, access)?;
    file.write_all(data)
}

/// `out/rel`, after checking that every part of `rel` but the last is a real directory below
/// `out` (creating the missing ones) and that the last is not a symbolic link.
fn beneath(out: &Path, rel: &Path) -> io::Result<PathBuf> {
    let mut path = out.to_path_buf();
    let parts: Vec<&std::ffi::OsStr> = rel
        .components()
        .map(|c| match c {
            Component::Normal(part) => Ok(part),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} leaves the output directory", rel.display()),
            )),
        })
        .collect::<io::Result<_>>()?;
    let Some((last, dirs)) = parts.split_last() else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "an empty file name",
        ));
    };
    for part in dirs {
        path.push(part);
        match fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_symlink() => return Err(planted(&path)),
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} is not a directory", path.display()),
                ));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                match fs::DirBuilder::new().mode(0o755).create(&path) {
                    Ok(()) => {}
                    // Made meanwhile by another task: checked again below.
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                        if fs::symlink_metadata(&path)?.file_type().is_symlink() {
                            return Err(planted(&path));
                        }
                    }
                    Err(e) => return Err(e),
                }
            }
            Err(e) => return Err(e),
        }
    }
    path.push(last);
    if fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(planted(&path));
    }
    Ok(path)
}

fn planted(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{} is a symbolic link: the crawler does not write through links it did not make \
             (remove it, or choose another --out)",
            path.display()
        ),
    )
}

/// `O_NOFOLLOW` on a link answers `ELOOP`: say what it means.
fn link_error(e: io::Error, path: &Path) -> io::Error {
    if e.raw_os_error() == Some(libc::ELOOP) {
        planted(path)
    } else {
        e
    }
}

use std::os::unix::fs::PermissionsExt;

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn private_files_are_0600_and_shared_ones_follow_the_umask() {
        let dir = tempfile::tempdir().unwrap();
        open(
            dir.path(),
            Path::new("state"),
            Open::Append,
            Access::Private,
        )
        .unwrap();
        let mode = fs::metadata(dir.path().join("state"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        replace(dir.path(), Path::new("checkpoint"), Access::Private, |f| {
            f.write_all(b"x")
        })
        .unwrap();
        let mode = fs::metadata(dir.path().join("checkpoint"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn links_planted_anywhere_below_the_output_directory_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let target = elsewhere.path().join("target");
        fs::write(&target, "keep").unwrap();
        symlink(&target, dir.path().join("crawl.warc")).unwrap();
        symlink(elsewhere.path(), dir.path().join("mirror")).unwrap();
        let e = open(
            dir.path(),
            Path::new("crawl.warc"),
            Open::Append,
            Access::Shared,
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("crawl.warc is a symbolic link"),
            "{e}"
        );
        let e = write(
            dir.path(),
            Path::new("mirror/h/a.html"),
            b"x",
            Access::Shared,
        )
        .unwrap_err();
        assert!(e.to_string().contains("mirror is a symbolic link"), "{e}");
        assert!(!elsewhere.path().join("h").exists());
        assert_eq!(fs::read_to_string(&target).unwrap(), "keep");
        // Nor is a link at the checkpoint's place written through.
        symlink(&target, dir.path().join("checkpoint")).unwrap();
        let e = replace(dir.path(), Path::new("checkpoint"), Access::Private, |f| {
            f.write_all(b"new")
        })
        .unwrap_err();
        assert!(
            e.to_string().contains("checkpoint is a symbolic link"),
            "{e}"
        );
        assert_eq!(fs::read_to_string(&target).unwrap(), "keep");
    }

    #[test]
    fn names_that_climb_out_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        for bad in ["../x", "/etc/passwd", "a/../../x", ""] {
            assert!(
                open(dir.path(), Path::new(bad), Open::Append, Access::Shared).is_err(),
                "{bad}"
            );
        }
    }
}
