//! The journal beside a state file: the keys decided since the state was last saved whole,
//! appended about once a second, so that a run killed before its final save reprints at most
//! the last second of its output rather than all of it.
//!
//! A journal is a sequence of blocks, each whole in itself:
//!
//! ```text
//! magic "UDJ2" | keys u32 | payload bytes u32 | XXH3-64 of the payload u64 |
//! XXH3-64 of the 20 bytes before u64 | payload: keys × (length u32 | key bytes)
//! ```
//!
//! (little-endian). A block is appended with one write after the output it covers was
//! flushed; a process killed mid-append leaves a torn last block. Both checksums make damage
//! local: a block whose header checks but whose keys do not is skipped whole, and after bytes
//! that hold no readable header the next block whose header and keys check is found and read
//! on, so one flipped byte costs the keys of one block, which are reported. Blocks of the
//! first format, `UDJ1` (no header checksum), are still read. Keys are canonical forms (or
//! raw lines without canonicalization): replaying them re-inserts exactly what was decided.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};

use xxhash_rust::xxh3::xxh3_64;

const MAGIC: &[u8; 4] = b"UDJ2";
/// The first format's magic: the same block without the header's checksum.
const MAGIC_V1: &[u8; 4] = b"UDJ1";
const HEADER: usize = 4 + 4 + 4 + 8 + 8;
const HEADER_V1: usize = 4 + 4 + 4 + 8;
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
        let header_sum = xxh3_64(&block);
        block.extend_from_slice(&header_sum.to_le_bytes());
        block.extend_from_slice(&self.payload);
        block
    }
}

/// What reading a journal found besides the keys of its whole blocks.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Replayed {
    /// Keys replayed.
    pub(crate) keys: u64,
    /// Whole blocks replayed.
    pub(crate) blocks: u64,
    /// Bytes in the journal.
    pub(crate) bytes: u64,
    /// What could not be replayed, in order.
    pub(crate) damage: Vec<Damage>,
}

/// Part of a journal that could not be replayed: its keys are lost, and their URLs will be
/// printed again.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Damage {
    /// A block whose header checks but whose keys do not: its `keys` are lost.
    Block { offset: u64, keys: u32 },
    /// Bytes where no block header checks (a damaged header, or bytes no run wrote).
    Unreadable { offset: u64, bytes: u64 },
    /// The last block ends before its payload does: a run killed while appending it (with
    /// the keys it announced, when its header checks).
    Torn { offset: u64, keys: Option<u32> },
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Block { offset, keys } => write!(
                f,
                "the block at byte {offset} is damaged: its {keys} URLs cannot be recovered"
            ),
            Self::Unreadable { offset, bytes } => write!(
                f,
                "{bytes} bytes at byte {offset} hold no readable block: the URLs in them cannot \
                 be recovered"
            ),
            Self::Torn {
                offset,
                keys: Some(keys),
            } => write!(
                f,
                "the last block (byte {offset}) was cut short, as by a run killed while writing \
                 it: its {keys} URLs cannot be recovered"
            ),
            Self::Torn { offset, keys: None } => write!(
                f,
                "the last block (byte {offset}) was cut short, as by a run killed while writing it"
            ),
        }
    }
}

/// An open journal, positioned at its end.
#[derive(Debug)]
pub(crate) struct Journal {
    file: File,
    len: u64,
}

impl Journal {
    /// Takes over `file` (read and write): reads its blocks, hands the keys of each whole one
    /// to `replay` in order, and stays open for appending. Damaged blocks and unreadable bytes
    /// are skipped and listed; the blocks after them are read on. The file is not changed: the
    /// caller saves what was replayed, then empties the journal.
    ///
    /// # Errors
    ///
    /// A journal that holds bytes but no block at all (not a journal, or wholly damaged), an
    /// I/O error, or what `replay` returns.
    pub(crate) fn open(
        mut file: File,
        mut replay: impl FnMut(&[&[u8]]) -> Result<(), String>,
    ) -> Result<(Self, Replayed), String> {
        let mut data = Vec::new();
        file.read_to_end(&mut data).map_err(|e| e.to_string())?;
        let mut found = Replayed {
            bytes: data.len() as u64,
            ..Replayed::default()
        };
        let mut at = 0usize;
        while at < data.len() {
            match read_block(&data[at..]) {
                Found::Whole(keys, used) => {
                    replay(&keys)?;
                    found.keys += keys.len() as u64;
                    found.blocks += 1;
                    at += used;
                }
                Found::Damaged(keys, used) => {
                    found.damage.push(Damage::Block {
                        offset: at as u64,
                        keys,
                    });
                    at += used;
                }
                Found::Torn(keys) => {
                    found.damage.push(Damage::Torn {
                        offset: at as u64,
                        keys,
                    });
                    at = data.len();
                }
                Found::Unreadable => {
                    let next = next_whole_block(&data, at + 1).unwrap_or(data.len());
                    found.damage.push(Damage::Unreadable {
                        offset: at as u64,
                        bytes: (next - at) as u64,
                    });
                    at = next;
                }
            }
        }
        let only_torn = matches!(found.damage[..], [Damage::Torn { offset: 0, .. }]);
        if found.blocks == 0 && !found.damage.is_empty() && !only_torn {
            return Err(format!(
                "it holds {} bytes but no readable block: it is not a url-dedup journal, or it \
                 is damaged throughout. It is left as it is; move it away to go on (the URLs \
                 it held would then be printed again)",
                data.len()
            ));
        }
        let len = file.seek(SeekFrom::End(0)).map_err(|e| e.to_string())?;
        Ok((Self { file, len }, found))
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

/// What the bytes at the start of a journal's rest hold.
enum Found<'a> {
    /// A block whose header and keys check: its keys and its length.
    Whole(Vec<&'a [u8]>, usize),
    /// A block whose header checks but not its keys: the keys it announced, its length.
    Damaged(u32, usize),
    /// A block that ends past the data: the keys it announced, if its header checks.
    Torn(Option<u32>),
    /// No block header that checks.
    Unreadable,
}

/// Reads the block at the start of `data`.
fn read_block(data: &[u8]) -> Found<'_> {
    let (header_len, checked) = match data.get(..4) {
        Some(m) if m == MAGIC => (HEADER, true),
        Some(m) if m == MAGIC_V1 => (HEADER_V1, false),
        // Fewer than four bytes of a magic: a block cut right at its start.
        None if MAGIC.starts_with(data) || MAGIC_V1.starts_with(data) => return Found::Torn(None),
        _ => return Found::Unreadable,
    };
    let Some(header) = data.get(..header_len) else {
        return Found::Torn(None);
    };
    let field = |at: usize| {
        u32::from_le_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
    };
    let (count, len) = (field(4), field(8) as usize);
    let sum = u64::from_le_bytes(header[12..20].try_into().unwrap_or_default());
    if checked {
        let header_sum = u64::from_le_bytes(header[20..28].try_into().unwrap_or_default());
        if xxh3_64(&header[..20]) != header_sum {
            return Found::Unreadable;
        }
    }
    if len > MAX_BLOCK {
        return Found::Unreadable;
    }
    // The first format's header is not checked: its counts are told only when its keys check.
    let announced = checked.then_some(count);
    let Some(payload) = data.get(header_len..header_len + len) else {
        return Found::Torn(announced);
    };
    let damaged = || match announced {
        Some(count) => Found::Damaged(count, header_len + len),
        None => Found::Unreadable,
    };
    if xxh3_64(payload) != sum {
        return damaged();
    }
    match keys(payload, count) {
        Some(keys) => Found::Whole(keys, header_len + len),
        None => damaged(),
    }
}

/// The keys of a payload that holds exactly `count` of them.
fn keys(payload: &[u8], count: u32) -> Option<Vec<&[u8]>> {
    let mut keys = Vec::with_capacity((count as usize).min(payload.len() / 4));
    let mut rest = payload;
    for _ in 0..count {
        let (n, tail) = rest.split_first_chunk::<4>()?;
        let (key, tail) = tail.split_at_checked(u32::from_le_bytes(*n) as usize)?;
        keys.push(key);
        rest = tail;
    }
    rest.is_empty().then_some(keys)
}

/// Where the next whole block starts at or after `from`, if any: a magic whose header and
/// keys check.
fn next_whole_block(data: &[u8], from: usize) -> Option<usize> {
    let rest = data.get(from..)?;
    let magics = memchr::memmem::find_iter(rest, &MAGIC[..3]);
    magics
        .map(|at| from + at)
        .find(|&at| matches!(read_block(&data[at..]), Found::Whole(..)))
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

    /// The keys replayed from `bytes`, and what was found besides.
    fn replayed(bytes: &[u8]) -> Result<(Vec<String>, Replayed), String> {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), bytes).unwrap();
        let mut keys = Vec::new();
        let (j, found) = Journal::open(file.reopen().unwrap(), |block| {
            keys.extend(
                block
                    .iter()
                    .map(|k| String::from_utf8_lossy(k).into_owned()),
            );
            Ok(())
        })?;
        assert_eq!(found.keys as usize, keys.len());
        // Opening changes nothing: the caller saves the state, then empties the journal.
        assert_eq!(std::fs::read(file.path()).unwrap(), bytes);
        assert_eq!(j.len(), bytes.len() as u64);
        Ok((keys, found))
    }

    #[test]
    fn blocks_replay_in_order() {
        let (_, bytes) = journal_with(&[&["a", "bb"], &[], &["ccc"]]);
        let (keys, found) = replayed(&bytes).unwrap();
        assert_eq!(keys, ["a", "bb", "ccc"]);
        assert_eq!((found.blocks, found.damage), (2, vec![]));
    }

    #[test]
    fn a_torn_last_block_is_reported_and_the_blocks_before_kept() {
        let (_, bytes) = journal_with(&[&["first"], &["second", "third"]]);
        let first_block = HEADER + 4 + 5;
        for cut in first_block + 1..bytes.len() {
            let (keys, found) = replayed(&bytes[..cut]).unwrap();
            assert_eq!(keys, ["first"], "cut at {cut}");
            let announced = (cut >= first_block + HEADER).then_some(2);
            assert_eq!(
                found.damage,
                [Damage::Torn {
                    offset: first_block as u64,
                    keys: announced
                }],
                "cut at {cut}"
            );
        }
        // A run killed while writing its first block: nothing to replay, nothing to refuse.
        let (keys, found) = replayed(&bytes[..HEADER + 2]).unwrap();
        assert!(keys.is_empty());
        assert_eq!(found.damage.len(), 1);
    }

    /// One flipped byte once dropped its block and every later one without a word (534,407
    /// lines reprinted instead of 45,714 from a 24.6 MB journal). Now it costs its own block,
    /// which is reported with its count, and the blocks after it are replayed.
    #[test]
    fn a_flipped_byte_costs_its_block_only() {
        let (_, bytes) = journal_with(&[&["one"], &["two", "three"], &["four"]]);
        let second = HEADER + 4 + 3;
        let third = second + HEADER + 4 + 3 + 4 + 5;
        for at in second..third {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x10;
            let (keys, found) = replayed(&damaged).unwrap();
            assert_eq!(keys, ["one", "four"], "byte {at}");
            let want = if at >= second + HEADER {
                Damage::Block {
                    offset: second as u64,
                    keys: 2,
                }
            } else {
                Damage::Unreadable {
                    offset: second as u64,
                    bytes: (third - second) as u64,
                }
            };
            assert_eq!(found.damage, [want], "byte {at}");
            assert_eq!(found.blocks, 2);
        }
    }

    #[test]
    fn bytes_no_run_wrote_are_refused() {
        let mut state = 7u64;
        let garbage: Vec<u8> = (0..100_000)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1);
                (state >> 33) as u8
            })
            .collect();
        let error = replayed(&garbage).unwrap_err();
        assert!(error.contains("no readable block"), "{error}");
        // Garbage after whole blocks is reported, not refused: the blocks are replayed.
        let (_, mut bytes) = journal_with(&[&["kept"]]);
        bytes.extend_from_slice(&garbage[..1_000]);
        let (keys, found) = replayed(&bytes).unwrap();
        assert_eq!(keys, ["kept"]);
        assert_eq!(
            found.damage,
            [Damage::Unreadable {
                offset: (HEADER + 8) as u64,
                bytes: 1_000
            }]
        );
    }

    #[test]
    fn blocks_of_the_first_format_are_read() {
        let payload = [&3u32.to_le_bytes()[..], b"old"].concat();
        let mut block = b"UDJ1".to_vec();
        block.extend_from_slice(&1u32.to_le_bytes());
        block.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        block.extend_from_slice(&xxh3_64(&payload).to_le_bytes());
        block.extend_from_slice(&payload);
        let (_, new) = journal_with(&[&["new"]]);
        let (keys, found) = replayed(&[block, new].concat()).unwrap();
        assert_eq!(keys, ["old", "new"]);
        assert!(found.damage.is_empty());
    }
}
