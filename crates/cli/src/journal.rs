//! The journal beside a state file: the keys decided since the state was last saved whole,
//! appended about once a second, so that a run killed before its final save reprints at most
//! the last second of its output rather than all of it.
//!
//! A journal is a sequence of blocks, each whole in itself:
//!
//! ```text
//! magic "UDJ1" | keys u32 | payload bytes u32 | XXH3-64 of the payload u64 |
//! payload: keys × (length u32 | key bytes)
//! ```
//!
//! (little-endian). A block is appended with one write after the output it covers was
//! flushed; a process killed mid-append leaves a torn last block, which the next run drops,
//! together with anything after it. Keys are canonical forms (or raw lines without
//! canonicalization): replaying them re-inserts exactly what was decided.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};

use xxhash_rust::xxh3::xxh3_64;

const MAGIC: &[u8; 4] = b"UDJ1";
const HEADER: usize = 4 + 4 + 4 + 8;
/// A block never holds more than this many payload bytes (keys are at most `--max-len`).
const MAX_BLOCK: usize = 64 << 20;

/// Keys waiting to be appended as one block.
#[derive(Debug, Default)]
pub(crate) struct PendingKeys {
    count: u32,
    payload: Vec<u8>,
}

impl PendingKeys {
    pub(crate) fn push(&mut self, key: &[u8]) {
        let len = u32::try_from(key.len()).unwrap_or(u32::MAX);
        self.payload.extend_from_slice(&len.to_le_bytes());
        self.payload.extend_from_slice(&key[..len as usize]);
        self.count += 1;
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Bytes held: a journal block is written early once this passes [`MAX_BLOCK`] / 8.
    pub(crate) fn is_large(&self) -> bool {
        self.payload.len() >= MAX_BLOCK / 8
    }

    pub(crate) fn clear(&mut self) {
        self.count = 0;
        self.payload.clear();
    }

    /// The keys as one block, ready to append.
    fn block(&self) -> Vec<u8> {
        let mut block = Vec::with_capacity(HEADER + self.payload.len());
        block.extend_from_slice(MAGIC);
        block.extend_from_slice(&self.count.to_le_bytes());
        block.extend_from_slice(&(self.payload.len() as u32).to_le_bytes());
        block.extend_from_slice(&xxh3_64(&self.payload).to_le_bytes());
        block.extend_from_slice(&self.payload);
        block
    }
}

/// An open journal, positioned at its end.
#[derive(Debug)]
pub(crate) struct Journal {
    file: File,
    len: u64,
}

impl Journal {
    /// Takes over `file` (read and write): reads its whole blocks, hands their keys to
    /// `replay` block by block, cuts off a torn or damaged tail, and stays open for appending.
    /// Returns the journal and the number of keys replayed.
    pub(crate) fn open(
        mut file: File,
        mut replay: impl FnMut(&[&[u8]]) -> Result<(), String>,
    ) -> Result<(Self, u64), String> {
        let mut data = Vec::new();
        file.read_to_end(&mut data).map_err(|e| e.to_string())?;
        let mut whole = 0usize;
        let mut replayed = 0u64;
        while let Some((keys, used)) = parse_block(&data[whole..]) {
            replay(&keys)?;
            replayed += keys.len() as u64;
            whole += used;
        }
        if whole < data.len() {
            file.set_len(whole as u64).map_err(|e| e.to_string())?;
        }
        file.seek(SeekFrom::Start(whole as u64))
            .map_err(|e| e.to_string())?;
        Ok((
            Self {
                file,
                len: whole as u64,
            },
            replayed,
        ))
    }

    /// Appends the pending keys as one block and clears them.
    pub(crate) fn append(&mut self, keys: &mut PendingKeys) -> io::Result<()> {
        if keys.is_empty() {
            return Ok(());
        }
        let block = keys.block();
        if let Err(e) = self.file.write_all(&block) {
            // A partial block (disk full) must not stay in front of later ones.
            let _ = self.file.set_len(self.len);
            let _ = self.file.seek(SeekFrom::Start(self.len));
            return Err(e);
        }
        self.len += block.len() as u64;
        keys.clear();
        Ok(())
    }

    /// Empties the journal (its keys are now in the saved state, or must not count).
    pub(crate) fn truncate(&mut self) -> io::Result<()> {
        self.file.set_len(0)?;
        self.file.seek(SeekFrom::Start(0))?;
        self.len = 0;
        Ok(())
    }

    /// Bytes in the journal.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }
}

/// One whole, intact block at the start of `data`: its keys and its length.
fn parse_block(data: &[u8]) -> Option<(Vec<&[u8]>, usize)> {
    let header = data.get(..HEADER)?;
    if &header[..4] != MAGIC {
        return None;
    }
    let count = u32::from_le_bytes(header[4..8].try_into().ok()?) as usize;
    let len = u32::from_le_bytes(header[8..12].try_into().ok()?) as usize;
    let sum = u64::from_le_bytes(header[12..20].try_into().ok()?);
    if len > MAX_BLOCK {
        return None;
    }
    let payload = data.get(HEADER..HEADER + len)?;
    if xxh3_64(payload) != sum {
        return None;
    }
    let mut keys = Vec::with_capacity(count.min(len / 4));
    let mut rest = payload;
    for _ in 0..count {
        let (n, tail) = rest.split_first_chunk::<4>()?;
        let (key, tail) = tail.split_at_checked(u32::from_le_bytes(*n) as usize)?;
        keys.push(key);
        rest = tail;
    }
    rest.is_empty().then_some((keys, HEADER + len))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn journal_with(blocks: &[&[&str]]) -> (tempfile::NamedTempFile, Vec<u8>) {
        let file = tempfile::NamedTempFile::new().unwrap();
        let (mut j, _) = Journal::open(file.reopen().unwrap(), |_| Ok(())).unwrap();
        for keys in blocks {
            let mut pending = PendingKeys::default();
            keys.iter().for_each(|k| pending.push(k.as_bytes()));
            j.append(&mut pending).unwrap();
            assert!(pending.is_empty());
        }
        let bytes = std::fs::read(file.path()).unwrap();
        (file, bytes)
    }

    fn replayed(file: &tempfile::NamedTempFile) -> Vec<String> {
        let mut keys = Vec::new();
        let (j, n) = Journal::open(file.reopen().unwrap(), |block| {
            keys.extend(
                block
                    .iter()
                    .map(|k| String::from_utf8_lossy(k).into_owned()),
            );
            Ok(())
        })
        .unwrap();
        assert_eq!(n as usize, keys.len());
        assert_eq!(j.len(), std::fs::metadata(file.path()).unwrap().len());
        keys
    }

    #[test]
    fn blocks_replay_in_order() {
        let (file, _) = journal_with(&[&["a", "bb"], &[], &["ccc"]]);
        assert_eq!(replayed(&file), ["a", "bb", "ccc"]);
    }

    #[test]
    fn a_torn_or_damaged_tail_is_cut_off() {
        let (file, bytes) = journal_with(&[&["first"], &["second", "third"]]);
        let first_block = HEADER + 4 + 5;
        for cut in first_block..bytes.len() {
            std::fs::write(file.path(), &bytes[..cut]).unwrap();
            assert_eq!(replayed(&file), ["first"], "cut at {cut}");
            // The torn tail is gone, so the next block appends after the whole ones.
            assert_eq!(
                std::fs::metadata(file.path()).unwrap().len(),
                first_block as u64
            );
        }
        let mut damaged = bytes.clone();
        *damaged.last_mut().unwrap() ^= 1;
        std::fs::write(file.path(), &damaged).unwrap();
        assert_eq!(replayed(&file), ["first"]);
    }
}
