//! The write-ahead journal between two checkpoints.
//!
//! Each line is one event, written and flushed before the crawl acts on it:
//!
//! ```text
//! A <TAB> kind <TAB> depth <TAB> hops <TAB> lineage <TAB> url
//!                                                   admitted to the run queue; lineage says
//!                                                   which template budget it counts against
//!                                                   (`-`, `t` or `q`; absent in journals
//!                                                   written before template budgets)
//! D <TAB> warc-length <TAB> fetched <TAB> url       done: fetched (1) or given up (0), WARC
//!                                                   committed up to warc-length
//! ```
//!
//! A checkpoint plus the journal written after it is the whole crawl state; replaying it after
//! `kill -9` loses nothing, and refetches only URLs admitted but not done: the ones in flight.
//! A torn last line (the kill hit mid-write) is ignored and cut off.

use std::fs::File;

use crate::files::{Access, Open};
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::job::{Job, JobKind};
use crate::template::Lineage;

/// One journal event.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Event {
    Admitted(Job, Option<Lineage>),
    Done {
        url: String,
        warc_len: u64,
        fetched: bool,
    },
}

/// The journal file of one checkpoint generation.
#[derive(Debug)]
pub(crate) struct Journal {
    out: BufWriter<File>,
}

/// The journal file of `generation` in `dir`.
pub(crate) fn path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("journal-{generation:06}.log"))
}

impl Journal {
    /// Opens the journal of `generation` for appending, first cutting it to `valid_len` bytes
    /// (the end of its last whole line).
    pub(crate) fn open(dir: &Path, generation: u64, valid_len: u64) -> io::Result<Self> {
        let name = path(Path::new(""), generation);
        let file = crate::files::open(dir, &name, Open::ReadWrite, Access::Private)?;
        file.set_len(valid_len)?;
        let mut out = BufWriter::new(file);
        io::Seek::seek(&mut out, io::SeekFrom::Start(valid_len))?;
        Ok(Self { out })
    }

    pub(crate) fn admitted(&mut self, job: &Job, lineage: Option<Lineage>) -> io::Result<()> {
        writeln!(
            self.out,
            "A\t{}\t{}\t{}\t{}\t{}",
            job.kind.code(),
            job.depth,
            job.hops,
            Lineage::code(lineage),
            job.url
        )
    }

    pub(crate) fn done(&mut self, url: &str, warc_len: u64, fetched: bool) -> io::Result<()> {
        writeln!(self.out, "D\t{warc_len}\t{}\t{url}", u8::from(fetched))
    }

    /// Makes everything written so far survive the process.
    pub(crate) fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Flushes and asks the OS to put it on disk.
    pub(crate) fn sync(&mut self) -> io::Result<()> {
        self.out.flush()?;
        self.out.get_ref().sync_data()
    }
}

/// Reads the events of a journal file and the length of its whole lines. A missing file is an
/// empty journal; a damaged line other than a torn last one is an error.
pub(crate) fn replay(path: &Path) -> io::Result<(Vec<Event>, u64)> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((Vec::new(), 0)),
        Err(e) => return Err(e),
    };
    let mut reader = BufReader::new(file);
    let mut events = Vec::new();
    let mut valid = 0u64;
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line)?;
        if n == 0 || line.last() != Some(&b'\n') {
            break;
        }
        let text = std::str::from_utf8(&line[..n - 1]).map_err(|_| bad(path, valid))?;
        events.push(parse(text).ok_or_else(|| bad(path, valid))?);
        valid += n as u64;
    }
    Ok((events, valid))
}

fn parse(line: &str) -> Option<Event> {
    let mut f = line.split('\t');
    match f.next()? {
        "A" => {
            let kind = JobKind::from_code(f.next()?)?;
            let depth = f.next()?.parse().ok()?;
            let hops = f.next()?.parse().ok()?;
            // A URL holds no tab, so a sixth field means the line has a lineage.
            let (lineage, url) = match (f.next()?, f.next()) {
                (lineage, Some(url)) => (Lineage::from_code(lineage)?, url),
                (url, None) => (None, url),
            };
            Some(Event::Admitted(Job::new(url, depth, hops, kind), lineage))
        }
        "D" => {
            let warc_len = f.next()?.parse().ok()?;
            let fetched = match f.next()? {
                "1" => true,
                "0" => false,
                _ => return None,
            };
            Some(Event::Done {
                url: f.next()?.to_owned(),
                warc_len,
                fetched,
            })
        }
        _ => None,
    }
}

fn bad(path: &Path, offset: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("journal {} is damaged at byte {offset}", path.display()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;

    #[test]
    fn replays_whole_lines_and_cuts_a_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let job = Job {
            url: "http://h/a".into(),
            depth: 2,
            hops: 1,
            kind: JobKind::Sitemap,
            revisit: None,
        };
        let mut j = Journal::open(dir.path(), 3, 0).unwrap();
        j.admitted(&job, Some(Lineage::QueryGrowth)).unwrap();
        j.done("http://h/a", 77, true).unwrap();
        j.flush().unwrap();
        drop(j);
        let p = path(dir.path(), 3);
        let whole = std::fs::metadata(&p).unwrap().len();
        OpenOptions::new()
            .append(true)
            .open(&p)
            .unwrap()
            .write_all(b"A\tP\t1")
            .unwrap();
        let (events, valid) = replay(&p).unwrap();
        assert_eq!(valid, whole);
        assert_eq!(
            events,
            [
                Event::Admitted(job, Some(Lineage::QueryGrowth)),
                Event::Done {
                    url: "http://h/a".into(),
                    warc_len: 77,
                    fetched: true
                }
            ]
        );
        let mut j = Journal::open(dir.path(), 3, valid).unwrap();
        j.done("http://h/b", 1, false).unwrap();
        j.flush().unwrap();
        assert_eq!(replay(&p).unwrap().0.len(), 3);
    }

    #[test]
    fn lines_written_before_lineages_replay() {
        let dir = tempfile::tempdir().unwrap();
        let p = path(dir.path(), 0);
        std::fs::write(&p, "A\tP\t0\t0\thttp://h/\n").unwrap();
        let (events, _) = replay(&p).unwrap();
        assert!(matches!(&events[..], [Event::Admitted(j, None)] if &*j.url == "http://h/"));
    }

    #[test]
    fn damage_in_the_middle_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = path(dir.path(), 0);
        std::fs::write(&p, "X\tnonsense\nD\t1\t1\thttp://h/\n").unwrap();
        assert_eq!(replay(&p).unwrap_err().kind(), io::ErrorKind::InvalidData);
        assert_eq!(replay(&dir.path().join("missing")).unwrap().0.len(), 0);
    }
}
