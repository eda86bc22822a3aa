//! The run queue of a single-process crawl, on disk: admitted jobs are appended in admission
//! (breadth-first) order to `queue-NNNNNN.txt` and read back in that order as the workers have
//! room, so memory holds the jobs handed to workers, not the queue, however long it grows.
//!
//! Each line is `kind<TAB>depth<TAB>hops<TAB>url` (a canonical URL holds no tab or line
//! break). A checkpoint starts the next generation's file with what is still pending (the jobs
//! handed out and not done, then the unread rest) and records its length; after a crash the
//! file is cut back to that length and the journal's admissions are appended again, so the
//! file and the journal together are the run queue.

use std::collections::HashSet;
use std::fs::File;

use crate::files::{Access, Open};
use std::io::{self, BufRead, BufReader, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::job::{Job, JobKind};

/// The queue file of one checkpoint generation.
#[derive(Debug)]
pub(crate) struct QueueFile {
    path: PathBuf,
    out: BufWriter<File>,
    /// Bytes appended (some may still be in `out`'s buffer).
    written: u64,
    /// Bytes that have reached the file.
    flushed: u64,
    input: BufReader<File>,
    /// Bytes read back.
    read: u64,
    /// Jobs appended and not read back yet.
    unread: u64,
    line: String,
}

/// The queue file of `generation` in `dir`.
pub(crate) fn path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("queue-{generation:06}.txt"))
}

impl QueueFile {
    /// Opens the queue file of `generation`, cut to `len` bytes (its length at the checkpoint
    /// that recorded it; 0 for a new crawl), reading from its start.
    pub(crate) fn open(dir: &Path, generation: u64, len: u64) -> io::Result<Self> {
        let path = path(dir, generation);
        let name = self::path(Path::new(""), generation);
        let file = crate::files::open(dir, &name, Open::ReadWrite, Access::Private)?;
        if file.metadata()?.len() < len {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "{} is shorter than its checkpoint says ({len} bytes)",
                    path.display()
                ),
            ));
        }
        file.set_len(len)?;
        let mut out = BufWriter::with_capacity(64 << 10, file);
        out.seek(SeekFrom::Start(len))?;
        let unread = BufReader::new(File::open(&path)?)
            .split(b'\n')
            .try_fold(0u64, |n, line| line.map(|_| n + 1))?;
        Ok(Self {
            input: BufReader::with_capacity(64 << 10, File::open(&path)?),
            path,
            out,
            written: len,
            flushed: len,
            read: 0,
            unread,
            line: String::new(),
        })
    }

    /// Appends `job` at the end of the queue.
    pub(crate) fn push(&mut self, job: &Job) -> io::Result<()> {
        let line = format!(
            "{}\t{}\t{}\t{}\n",
            job.kind.code(),
            job.depth,
            job.hops,
            job.url
        );
        self.out.write_all(line.as_bytes())?;
        self.written += line.len() as u64;
        self.unread += 1;
        Ok(())
    }

    /// The next job in admission order, if any.
    pub(crate) fn pop(&mut self) -> io::Result<Option<Job>> {
        if self.unread == 0 {
            return Ok(None);
        }
        if self.read >= self.flushed {
            // The reader caught up with what reached the file: hand it the writer's buffer.
            self.out.flush()?;
            self.flushed = self.written;
        }
        self.line.clear();
        let n = self.input.read_line(&mut self.line)?;
        if n == 0 || !self.line.ends_with('\n') {
            return Err(self.damaged("a line cut short"));
        }
        self.read += n as u64;
        self.unread -= 1;
        let fields: Vec<&str> = self.line.trim_end_matches('\n').splitn(4, '\t').collect();
        let [kind, depth, hops, url] = fields[..] else {
            return Err(self.damaged("a line that is not kind, depth, hops, url"));
        };
        match (
            JobKind::from_code(kind),
            depth.parse::<u32>(),
            hops.parse::<u32>(),
        ) {
            (Some(kind), Ok(depth), Ok(hops)) => Ok(Some(Job::new(url, depth, hops, kind))),
            _ => Err(self.damaged("a line that is not kind, depth, hops, url")),
        }
    }

    /// Jobs appended and not read back yet.
    pub(crate) fn unread(&self) -> u64 {
        self.unread
    }

    /// Bytes appended so far: the length a checkpoint records.
    pub(crate) fn len(&self) -> u64 {
        self.written
    }

    /// Makes everything appended reach the disk.
    pub(crate) fn sync(&mut self) -> io::Result<()> {
        self.out.flush()?;
        self.flushed = self.written;
        self.out.get_ref().sync_data()
    }

    /// Writes the queue file of generation `next` in `dir`: `handed` (jobs handed out and not
    /// done) first, then the unread rest of this file without the URLs in `done`; returns it,
    /// synced, reading after the handed jobs.
    pub(crate) fn rotate<'a>(
        &mut self,
        dir: &Path,
        next: u64,
        handed: impl Iterator<Item = &'a Job>,
        done: &HashSet<Arc<str>>,
    ) -> io::Result<Self> {
        let target = path(dir, next);
        // A file left by a checkpoint that failed half way is not part of the crawl.
        let _ = std::fs::remove_file(&target);
        let mut fresh = Self::open(dir, next, 0)?;
        for job in handed {
            fresh.push(job)?;
        }
        let handed_len = fresh.written;
        let handed_count = fresh.unread;
        while let Some(job) = self.pop()? {
            if !done.contains(&job.url) {
                fresh.push(&job)?;
            }
        }
        fresh.sync()?;
        // The handed jobs are in memory already: reading starts after them.
        fresh.input.seek(SeekFrom::Start(handed_len))?;
        fresh.read = handed_len;
        fresh.unread -= handed_count;
        Ok(fresh)
    }

    fn damaged(&self, what: &str) -> io::Error {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: {what} at byte {}", self.path.display(), self.read),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(u: &str, depth: u32) -> Job {
        Job::new(u, depth, 0, JobKind::Page)
    }

    fn drain(q: &mut QueueFile) -> Vec<String> {
        std::iter::from_fn(|| q.pop().unwrap())
            .map(|j| format!("{}@{}", j.url, j.depth))
            .collect()
    }

    #[test]
    fn jobs_come_back_in_order_while_more_are_appended() {
        let dir = tempfile::tempdir().unwrap();
        let mut q = QueueFile::open(dir.path(), 0, 0).unwrap();
        q.push(&job("http://h/a", 0)).unwrap();
        q.push(&job("http://h/b", 1)).unwrap();
        assert_eq!(q.pop().unwrap().unwrap().url.as_ref(), "http://h/a");
        q.push(&Job::new("http://h/c", 2, 1, JobKind::Requisite))
            .unwrap();
        assert_eq!(q.unread(), 2);
        let b = q.pop().unwrap().unwrap();
        let c = q.pop().unwrap().unwrap();
        assert_eq!((b.url.as_ref(), b.depth), ("http://h/b", 1));
        assert_eq!((c.kind, c.depth, c.hops), (JobKind::Requisite, 2, 1));
        assert!(q.pop().unwrap().is_none());
    }

    #[test]
    fn a_rotation_keeps_what_is_pending_and_a_reopening_cuts_the_tail() {
        let dir = tempfile::tempdir().unwrap();
        let mut q = QueueFile::open(dir.path(), 0, 0).unwrap();
        for (i, u) in ["a", "b", "c", "d"].iter().enumerate() {
            q.push(&job(&format!("http://h/{u}"), i as u32)).unwrap();
        }
        let handed = q.pop().unwrap().unwrap();
        let _done = q.pop().unwrap().unwrap();
        let done_later: HashSet<Arc<str>> = HashSet::from(["http://h/d".into()]);
        let mut next = q
            .rotate(dir.path(), 1, std::iter::once(&handed), &done_later)
            .unwrap();
        let len = next.len();
        // Reading goes on after the handed job; appended jobs follow.
        next.push(&job("http://h/e", 9)).unwrap();
        assert_eq!(drain(&mut next), ["http://h/c@2", "http://h/e@9"]);
        next.sync().unwrap();
        // After a crash: cut back to the checkpoint's length, read from the start.
        let mut again = QueueFile::open(dir.path(), 1, len).unwrap();
        assert_eq!(again.unread(), 2);
        assert_eq!(drain(&mut again), ["http://h/a@0", "http://h/c@2"]);
        assert!(QueueFile::open(dir.path(), 1, len + 1_000).is_err());
    }
}
