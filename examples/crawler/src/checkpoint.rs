//! Periodic, atomic checkpoints of the crawl state: where the run queue's file ends, the
//! per-host and per-template admission counts and the done set, in the workspace's snapshot
//! format. The run queue itself is the queue file the checkpoint names
//! ([`crate::queue_file`]), written and synced before the checkpoint.
//!
//! The file `checkpoint` holds two snapshots back to back: the crawl state (a private kind, its
//! payload a line-oriented text blob packed into words) and the done set's whole state as the
//! facade writes it (`UrlDedup::write_to`, kind `DEDUP_STATE`: the exact filter, the similarity
//! filter with `--similar`, and the configuration they were built under). Both are
//! checksummed. It is written to a temporary file with an unpredictable name, synced, and
//! renamed over the old one, so a crash leaves either the old or the new checkpoint, never a
//! mix; the journal of the old generation is deleted only after the rename. It holds the done
//! set's hash key, so it is readable by its owner only (0600).

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use url_dedup_bloom::snapshot::{self, Kind, Limits, Params};

use crate::done::{DoneSet, FilterSize};
use crate::error::CrawlError;
use crate::files::Access;

/// The snapshot kind of the crawl state, in the range the workspace leaves to applications.
const CRAWL_STATE: Kind = Kind(0x8101);
/// Version 4 keeps the run queue in its own file and records its length; version 3 held the
/// queue in the checkpoint, versions 1 and 2 a bare Bloom filter: those are refused with a
/// clear message.
const VERSION: u16 = 4;
/// Largest state blob accepted: a run queue of some ten million URLs.
const MAX_STATE_BYTES: u64 = 4 << 30;

/// A checkpoint as read back.
#[derive(Debug)]
pub(crate) struct Checkpoint {
    /// The journal generation that continues this checkpoint.
    pub(crate) generation: u64,
    /// Pages completed before it (over all runs).
    pub(crate) pages_done: u64,
    /// Committed length of the WARC file.
    pub(crate) warc_len: u64,
    /// Length of the generation's queue file at the checkpoint.
    pub(crate) queue_len: u64,
    pub(crate) host_admitted: HashMap<String, u64>,
    /// URLs admitted per template budget key (see `crate::template`).
    pub(crate) template_admitted: HashMap<String, u64>,
    pub(crate) done: DoneSet,
}

/// Borrowed state to write.
pub(crate) struct CheckpointRef<'a> {
    pub(crate) generation: u64,
    pub(crate) pages_done: u64,
    pub(crate) warc_len: u64,
    pub(crate) queue_len: u64,
    pub(crate) host_admitted: &'a HashMap<String, u64>,
    pub(crate) template_admitted: &'a HashMap<String, u64>,
    pub(crate) done: &'a DoneSet,
}

pub(crate) fn path(dir: &Path) -> PathBuf {
    dir.join("checkpoint")
}

/// Writes a checkpoint atomically (write, sync, rename, sync the directory).
pub(crate) fn write(dir: &Path, state: CheckpointRef<'_>) -> Result<(), CrawlError> {
    let mut blob = String::new();
    for (host, n) in state.host_admitted {
        blob.push_str(&format!("H\t{n}\t{host}\n"));
    }
    for (template, n) in state.template_admitted {
        blob.push_str(&format!("T\t{n}\t{template}\n"));
    }
    let bytes = blob.as_bytes();
    let mut params = Params::new();
    params
        .put_u16(VERSION)
        .put_u64(state.generation)
        .put_u64(state.pages_done)
        .put_u64(state.warc_len)
        .put_u64(state.queue_len)
        .put_u64(bytes.len() as u64);
    let words = bytes.chunks(8).map(|c| {
        let mut w = [0u8; 8];
        w[..c.len()].copy_from_slice(c);
        u64::from_le_bytes(w)
    });

    let target = path(dir);
    let written = crate::files::replace(dir, Path::new("checkpoint"), Access::Private, |file| {
        let mut out = BufWriter::with_capacity(1 << 20, file);
        snapshot::write(
            &mut out,
            CRAWL_STATE,
            params.as_bytes(),
            bytes.len().div_ceil(8) as u64,
            words,
        )
        .map_err(std::io::Error::other)?;
        state
            .done
            .write_to(&mut out)
            .map_err(std::io::Error::other)?;
        out.flush()
    });
    written.map_err(|e| CrawlError::Checkpoint {
        path: target,
        reason: e.to_string(),
    })
}

/// Reads the checkpoint of `dir`, `None` when there is none; its done set must have been
/// written under `size`'s options.
pub(crate) fn read(dir: &Path, size: FilterSize) -> Result<Option<Checkpoint>, CrawlError> {
    let path = path(dir);
    let file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(CrawlError::io("opening checkpoint", &path)(e)),
    };
    let damaged = |reason: String| CrawlError::Checkpoint {
        path: path.clone(),
        reason,
    };
    let mut input = BufReader::with_capacity(1 << 20, file);
    let header = snapshot::read_header(
        &mut input,
        CRAWL_STATE,
        Limits {
            max_payload_bytes: MAX_STATE_BYTES,
        },
    )
    .map_err(|e| damaged(e.to_string()))?;
    let mut p = header.params();
    let version = p.u16().map_err(|e| damaged(e.to_string()))?;
    if version < VERSION {
        return Err(damaged(format!(
            "crawl state version {version} was written by an older build (its run queue or \
             done set is kept another way); finish that crawl with the build that started it, \
             or crawl into a new --out"
        )));
    }
    if version > VERSION {
        return Err(damaged(format!(
            "crawl state version {version}, this build reads {VERSION}"
        )));
    }
    let mut next = || p.u64().map_err(|e| damaged(e.to_string()));
    let (generation, pages_done, warc_len, queue_len, len) =
        (next()?, next()?, next()?, next()?, next()?);
    let words = header
        .read_payload(&mut input)
        .map_err(|e| damaged(e.to_string()))?;
    if len.div_ceil(8) != words.len() as u64 {
        return Err(damaged("state length does not match its payload".into()));
    }
    let mut bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    bytes.truncate(len as usize);
    let text = String::from_utf8(bytes).map_err(|_| damaged("state is not UTF-8".into()))?;
    let mut host_admitted = HashMap::new();
    let mut template_admitted = HashMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        match f.as_slice() {
            ["H" | "T", n, key] => {
                let counts = if f[0] == "H" {
                    &mut host_admitted
                } else {
                    &mut template_admitted
                };
                counts.insert(
                    (*key).to_owned(),
                    n.parse()
                        .map_err(|_| damaged(format!("bad count in {line:?}")))?,
                );
            }
            _ => return Err(damaged(format!("unknown state line {line:?}"))),
        }
    }
    let done = match DoneSet::restore(size, &mut input) {
        Ok(d) => d,
        Err(e @ CrawlError::Options(_)) => return Err(e),
        Err(e) => return Err(damaged(e.to_string())),
    };
    let mut rest = [0u8; 1];
    if input
        .read(&mut rest)
        .map_err(CrawlError::io("reading checkpoint", &path))?
        != 0
    {
        return Err(damaged("trailing bytes after the filters".into()));
    }
    Ok(Some(Checkpoint {
        generation,
        pages_done,
        warc_len,
        queue_len,
        host_admitted,
        template_admitted,
        done,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    const SIZE: FilterSize = FilterSize {
        expected_urls: 1000,
        false_positive_rate: 1e-6,
        similar: false,
    };

    #[test]
    fn round_trip_and_damage() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read(dir.path(), SIZE).unwrap().is_none());
        let done = DoneSet::local(SIZE).unwrap();
        done.admit("http://h/a").unwrap();
        let hosts = HashMap::from([("h:80".to_owned(), 2u64)]);
        let templates = HashMap::from([("h/cal/{int}".to_owned(), 7u64)]);
        let state = CheckpointRef {
            generation: 4,
            pages_done: 9,
            warc_len: 1234,
            queue_len: 77,
            host_admitted: &hosts,
            template_admitted: &templates,
            done: &done,
        };
        write(dir.path(), state).unwrap();
        let c = read(dir.path(), SIZE).unwrap().unwrap();
        assert_eq!(
            (c.generation, c.pages_done, c.warc_len, c.queue_len),
            (4, 9, 1234, 77)
        );
        assert_eq!(c.host_admitted, hosts);
        assert_eq!(c.template_admitted, templates);
        assert_eq!(
            c.done
                .contains_batch(&["http://h/a".into(), "http://h/b".into()])
                .unwrap(),
            [true, false]
        );

        // The done set's options are part of the crawl.
        let similar = FilterSize {
            similar: true,
            ..SIZE
        };
        assert!(matches!(
            read(dir.path(), similar),
            Err(CrawlError::Options(_))
        ));

        let mut bytes = fs::read(path(dir.path())).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0x40;
        fs::write(path(dir.path()), &bytes).unwrap();
        assert!(matches!(
            read(dir.path(), SIZE),
            Err(CrawlError::Checkpoint { .. })
        ));
    }
}
