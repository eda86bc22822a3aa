//! The header at the start of every data key, and what a client remembers of each key: how
//! a reset, a key that lost writes, or a key that grew is noticed on the round trip that meets
//! it.

use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::RedisSegmentStore;
use super::meta::corrupt;
use crate::error::{Error, Result};

/// Bits at the start of every data key before its first segment, four `i64` fields: the
/// filter's generation, a count of the commands that wrote the key, the key's number of
/// layers (a growing filter adds layers key by key), and the items admitted into its newest
/// layer. Every command on the key reads them in the same atomic `BITFIELD`, so a key that
/// vanished (a Redis restarted empty, `FLUSHALL`) or went back in time (a failover to a
/// replica that missed writes) is noticed on the round trip that meets it, at no extra round
/// trip, and so is a key that grew since the client last met it.
pub(crate) const HEADER_BITS: u64 = 256;
/// Bit offset of the generation in a data key's header.
pub(crate) const GENERATION_AT: u64 = 0;
/// Bit offset of the write count in a data key's header.
pub(crate) const WRITES_AT: u64 = 64;
/// Bit offset of the layer count in a data key's header (0 reads as 1: keys start with one).
pub(crate) const LAYERS_AT: u64 = 128;
/// Bit offset of the count of items admitted into the key's newest layer.
pub(crate) const ADMITTED_AT: u64 = 192;
/// Values each command reads besides its bits: the header's generation, write count, layers
/// and admitted, and the client's witness bit in the key (see [`Expect`]).
pub(crate) const HEADER_OPS: usize = 5;
/// Longest a client answers from its cache of known bits alone before it checks a key's
/// header again: a reset is noticed within about this long even when every URL is known.
const VERIFY_EVERY: Duration = Duration::from_secs(1);

/// What a client expects of a data key, checked by every command on it: the key's write
/// count must be at least the highest this client has seen (`floor`), and the witness, the
/// last bit this client's commands set there (its offset past the header, plus one; 0 for
/// none), must still be 1. Bits are never cleared, so a 0 there means the key lost writes this
/// client saw done: a failover to a replica that missed them, or an older copy restored. The
/// write count alone can miss that, since other clients' writes after the loss raise it again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Expect {
    pub(crate) floor: i64,
    pub(crate) witness: u64,
}

/// Appends the reads of a data key's header and of the client's witness bit to a
/// `BITFIELD_RO` command, in the order [`RedisSegmentStore::check_headers`] takes them.
pub(crate) fn header_reads(cmd: &mut redis::Cmd, expect: Expect) {
    for at in [GENERATION_AT, WRITES_AT, LAYERS_AT, ADMITTED_AT] {
        cmd.arg("GET").arg("i64").arg(at);
    }
    cmd.arg("GET").arg("u1").arg(witness_at(expect));
}

/// Where a command reads the witness bit: without one, any bit (the answer is not checked).
pub(crate) fn witness_at(expect: Expect) -> u64 {
    match expect.witness {
        0 => 0,
        w => HEADER_BITS + w - 1,
    }
}

/// What a command read from its data key's header.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KeyHeader {
    pub(crate) key: u64,
    /// Layers the key has (a growing filter adds them key by key).
    pub(crate) layers: u32,
    /// Items admitted into its newest layer, as counted so far.
    pub(crate) admitted: u64,
}

/// What this client remembers of each data key, and when it last met a header.
#[derive(Debug)]
pub(crate) struct KeyStates {
    /// Per data key, the highest write count its header has shown this client: a lower one
    /// later means the key lost writes.
    writes_seen: Box<[AtomicI64]>,
    /// Per data key, one more than the offset of the last bit this client set there (0:
    /// none yet); see [`Expect`].
    witnesses: Box<[AtomicU64]>,
    /// Per data key, the layers it had when last met (see [`HEADER_BITS`]).
    layers_seen: Box<[AtomicU32]>,
    /// Per data key, admissions counted here and not yet added to its header.
    pending_admitted: Box<[AtomicU64]>,
    /// When the store was opened; `verified` counts milliseconds from here.
    opened: Instant,
    /// When a data key's header was last checked.
    verified: AtomicU64,
    /// The data key the next verification reads (they take turns).
    verify_turn: AtomicU64,
}

impl KeyStates {
    /// Nothing known yet of `keys` data keys, each of one layer.
    pub(crate) fn new(keys: usize) -> Self {
        Self {
            writes_seen: (0..keys).map(|_| AtomicI64::new(0)).collect(),
            witnesses: (0..keys).map(|_| AtomicU64::new(0)).collect(),
            layers_seen: (0..keys).map(|_| AtomicU32::new(1)).collect(),
            pending_admitted: (0..keys).map(|_| AtomicU64::new(0)).collect(),
            opened: Instant::now(),
            verified: AtomicU64::new(0),
            verify_turn: AtomicU64::new(0),
        }
    }

    /// What a command sent from now on must find in data key `key`. Read before the command
    /// is sent, since answers on other connections may arrive out of their order of execution.
    pub(crate) fn expect(&self, key: u64) -> Expect {
        Expect {
            floor: self
                .writes_seen
                .get(key as usize)
                .map_or(0, |seen| seen.load(Ordering::Relaxed)),
            witness: self
                .witnesses
                .get(key as usize)
                .map_or(0, |w| w.load(Ordering::Relaxed)),
        }
    }

    /// Notes that this client set the bit at `offset` (past the header) of data key `key`:
    /// the key's witness from now on.
    pub(crate) fn witness(&self, key: u64, offset: u64) {
        if let Some(w) = self.witnesses.get(key as usize) {
            w.store(offset + 1, Ordering::Relaxed);
        }
    }

    /// Notes a write count read from `key`'s header.
    fn saw_writes(&self, key: u64, writes: i64) {
        if let Some(seen) = self.writes_seen.get(key as usize) {
            seen.fetch_max(writes, Ordering::Relaxed);
        }
    }

    /// Remembers that data key `key` has at least `layers` layers.
    pub(crate) fn note_layers(&self, key: u64, layers: u32) {
        if let Some(seen) = self.layers_seen.get(key as usize) {
            seen.fetch_max(layers, Ordering::Relaxed);
        }
    }

    /// The layers data key `key` had when this client last met it.
    pub(crate) fn layers_of(&self, key: u64) -> u32 {
        self.layers_seen
            .get(key as usize)
            .map_or(1, |seen| seen.load(Ordering::Relaxed).max(1))
    }

    /// Takes the admissions this client counted on `key` and has not reported yet.
    pub(crate) fn take_pending(&self, key: u64) -> u64 {
        self.pending_admitted
            .get(key as usize)
            .map_or(0, |p| p.swap(0, Ordering::Relaxed))
    }

    /// Counts admissions into `key`'s newest layer, reported with the next command there.
    pub(crate) fn add_pending(&self, key: u64, admitted: u64) {
        if let Some(p) = self.pending_admitted.get(key as usize) {
            p.fetch_add(admitted, Ordering::Relaxed);
        }
    }

    /// A header was met just now.
    fn verified(&self) {
        self.verified
            .store(self.opened.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    /// The data key to verify now, if the store has gone [`VERIFY_EVERY`] without meeting a
    /// header: every key in turn, since on a cluster a failover resets the keys of one master
    /// only, and a client whose cache answers everything still hears of it.
    fn verification_due(&self, keys: u64) -> Option<u64> {
        let now = self.opened.elapsed().as_millis() as u64;
        let due = now.saturating_sub(self.verified.load(Ordering::Relaxed))
            >= VERIFY_EVERY.as_millis() as u64;
        due.then(|| self.verify_turn.fetch_add(1, Ordering::Relaxed) % keys.max(1))
    }
}

impl RedisSegmentStore {
    /// The error for a filter found reset; empties the cache of known bits, whose bits may
    /// be gone from Redis.
    pub(crate) fn reset(&self, detail: &str) -> Error {
        self.known.clear();
        Error::StoreReset {
            what: "filter",
            prefix: self.options.prefix.clone(),
            detail: detail.to_owned(),
        }
    }

    /// Checks the values a batch's commands read (per command, in order: generation, write
    /// count, layers, admitted, witness bit) against the generation and what each command
    /// expected (see [`KeyStates::expect`]); returns each command's header.
    pub(crate) fn check_headers(
        &self,
        commands: impl Iterator<Item = (u64, Expect)>,
        headers: &[i64],
    ) -> Result<Vec<KeyHeader>> {
        let mut out = Vec::new();
        for ((key, expect), header) in commands.zip(headers.chunks(HEADER_OPS)) {
            let &[generation, writes, layers, admitted, witnessed] = header else {
                return Err(corrupt(&self.options.prefix, "short BITFIELD header"));
            };
            let floor = expect.floor;
            if generation != self.meta.generation {
                let detail = if generation == 0 {
                    format!("data key {} is gone", self.data_key(key))
                } else {
                    format!("data key {} is of another generation", self.data_key(key))
                };
                return Err(self.reset(&detail));
            }
            if writes < floor {
                return Err(self.reset(&format!(
                    "data key {} went back from {floor} writes to {writes} \
                     (a failover to a replica that missed writes?)",
                    self.data_key(key)
                )));
            }
            if expect.witness != 0 && witnessed == 0 {
                return Err(self.reset(&format!(
                    "a bit this client set in data key {} is 0 again \
                     (a failover to a replica that missed writes?)",
                    self.data_key(key)
                )));
            }
            self.keys.saw_writes(key, writes);
            let header = KeyHeader {
                key,
                layers: u32::try_from(layers.max(1)).unwrap_or(u32::MAX),
                admitted: u64::try_from(admitted).unwrap_or(0),
            };
            self.keys.note_layers(key, header.layers);
            out.push(header);
        }
        self.keys.verified();
        Ok(out)
    }

    /// Reads data key `key`'s header alone and checks it.
    pub(crate) fn check_key(&self, key: u64) -> Result<KeyHeader> {
        let expect = self.keys.expect(key);
        let data_key = self.data_key(key);
        let values: Vec<Option<i64>> = self.with_key("check filter", data_key, |mut conn| {
            let mut cmd = redis::cmd("BITFIELD_RO");
            cmd.arg(data_key);
            header_reads(&mut cmd, expect);
            async move { Ok(cmd.query_async(&mut conn).await?) }
        })?;
        let header: Vec<i64> = values.into_iter().map(|v| v.unwrap_or(0)).collect();
        let mut checked = self.check_headers(std::iter::once((key, expect)), &header)?;
        checked
            .pop()
            .ok_or_else(|| corrupt(data_key, "BITFIELD_RO answered no header"))
    }

    /// Reads one data key's header (every key in turn) if the store has not met one for
    /// [`VERIFY_EVERY`]: a client whose cache answers every URL still notices a reset.
    pub(crate) fn verify_if_due(&self) -> Result<()> {
        if let Some(key) = self.keys.verification_due(self.data_keys()) {
            self.check_key(key)?;
        }
        Ok(())
    }
}
