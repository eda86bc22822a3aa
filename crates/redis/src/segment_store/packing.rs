//! Packing a batch: its probes grouped by data key, bits known set left out, as
//! `BITFIELD` commands written straight into RESP bytes.

use url_dedup_segmented::Probe;

use super::RedisSegmentStore;
use super::header::{
    ADMITTED_AT, Expect, GENERATION_AT, HEADER_BITS, LAYERS_AT, WRITES_AT, witness_at,
};
use super::known_bits::KnownBits;
use crate::resp::Packed;

/// Most `SET u1` operations in one `BITFIELD`: about 50 us of Redis time, so other clients are
/// never stalled behind a huge batch, and Redis starts on a batch's first commands while the
/// client still packs the rest. Not more: Redis 7 grows a `BITFIELD`'s operation array by one
/// `zrealloc` per operation, and at 1,024 operations per command that cost about 8% more Redis
/// time per URL than at 256 (`cargo bench --bench redis`, 1.00 against 0.92 us per URL).
pub(crate) const MAX_OPS_PER_COMMAND: usize = 256;
/// One batch's `BITFIELD` commands, built by [`RedisSegmentStore::plan_commands`].
#[derive(Default)]
pub(crate) struct Plan {
    /// Per command: its data key and the end of its items in `items`.
    pub(crate) commands: Vec<(u64, usize)>,
    /// Per command: what its key must show (see [`RedisSegmentStore::expect`]).
    pub(crate) floors: Vec<Expect>,
    /// Per item sent, in command order: its probe index and the end of its bits in `offsets`.
    pub(crate) items: Vec<(usize, usize)>,
    /// The bits to send, as offsets inside their data key.
    pub(crate) offsets: Vec<u64>,
    /// Bits left out because they were known set.
    pub(crate) skipped: u64,
    /// The cache's epoch when the plan was made.
    pub(crate) epoch: u64,
}

impl Plan {
    /// Where item `n`'s bits start in `offsets`.
    pub(crate) fn offsets_start(&self, n: usize) -> usize {
        if n == 0 { 0 } else { self.items[n - 1].1 }
    }

    /// The global position (`segment * segment_bits + offset`) of each bit in `offsets`,
    /// given the bits per data key.
    pub(crate) fn global_bits(&self, key_bits: u64) -> impl Iterator<Item = u64> + '_ {
        let mut item = 0;
        self.commands.iter().flat_map(move |&(key, items_end)| {
            let from = self.offsets_start(item);
            let to = self.items[items_end - 1].1;
            item = items_end;
            self.offsets[from..to]
                .iter()
                .map(move |&at| key * key_bits + at)
        })
    }
}

impl RedisSegmentStore {
    /// The batch's probe indexes grouped by data key, each group in batch order, split so no
    /// command exceeds [`MAX_OPS_PER_COMMAND`].
    pub(crate) fn groups(&self, probes: &[Probe]) -> Vec<(u64, Vec<usize>)> {
        let per_key = self.meta.segments_per_key;
        let per_command = (MAX_OPS_PER_COMMAND / self.meta.layout.hashes() as usize).max(1);
        let mut groups: Vec<(u64, Vec<usize>)> = Vec::new();
        for i in self.key_order(probes) {
            let key = probes[i].segment / per_key;
            match groups.last_mut() {
                Some((k, members)) if *k == key && members.len() < per_command => {
                    members.push(i);
                }
                _ => groups.push((key, vec![i])),
            }
        }
        groups
    }

    /// Appends `BITFIELD key SET u1 <o> 1 ...` (or `BITFIELD_RO key GET u1 <o> ...`) for the
    /// members' bits, offsets computed by the segmented crate's [`Layout::offsets`].
    pub(crate) fn pack_bitfield(
        &self,
        packed: &mut Packed,
        set: bool,
        key: u64,
        members: &[usize],
        probes: &[Probe],
    ) {
        let layout = self.meta.layout;
        let offsets = members.iter().flat_map(|&i| {
            let (_, base) = self.locate(probes[i].segment);
            layout.offsets(probes[i]).map(move |offset| base + offset)
        });
        let ops = members.len() * layout.hashes() as usize;
        let expect = self.keys.expect(key);
        pack_bitfield_command(packed, set, self.data_key(key), 0, expect, ops, offsets);
    }

    /// The batch's probe indexes sorted by data key; stable, so a repeat sees its first
    /// occurrence.
    pub(crate) fn key_order(&self, probes: &[Probe]) -> Vec<usize> {
        let per_key = self.meta.segments_per_key;
        let mut order: Vec<usize> = (0..probes.len()).collect();
        order.sort_by_key(|&i| probes[i].segment / per_key);
        order
    }

    /// Plans a batch into `plan`: the probes in `order`, each with its bits not known set
    /// (items whose bits are all known are left out), grouped by data key, whole items of at
    /// most [`MAX_OPS_PER_COMMAND`] bits per command.
    pub(crate) fn plan_commands(
        &self,
        probes: &[Probe],
        order: &[usize],
        known: Option<&KnownBits>,
        plan: &mut Plan,
    ) {
        let layout = self.meta.layout;
        let per_key = self.meta.segments_per_key;
        let segment_bits = layout.segment_bits();
        plan.commands.clear();
        plan.floors.clear();
        plan.items.clear();
        plan.offsets.clear();
        plan.skipped = 0;
        // The epoch first: bits read after it are no older than it.
        plan.epoch = known.map_or(0, KnownBits::epoch);
        let mut ops = 0;
        for &i in order {
            let probe = probes[i];
            let key = probe.segment / per_key;
            let base = probe.segment % per_key * segment_bits;
            let key_base = key * per_key * segment_bits;
            let first = plan.offsets.len();
            for offset in layout.offsets(probe) {
                let at = base + offset;
                match known {
                    Some(known) if known.is_set(key_base + at) => plan.skipped += 1,
                    _ => plan.offsets.push(at),
                }
            }
            let sent = plan.offsets.len() - first;
            if sent == 0 {
                continue;
            }
            match plan.commands.last() {
                Some(&(k, _)) if k == key && ops + sent <= MAX_OPS_PER_COMMAND => ops += sent,
                _ => {
                    plan.commands.push((key, 0));
                    plan.floors.push(self.keys.expect(key));
                    ops = sent;
                }
            }
            plan.items.push((i, plan.offsets.len()));
            if let Some(command) = plan.commands.last_mut() {
                command.1 = plan.items.len();
            }
        }
    }

    /// Appends planned command `c` to `packed`: `BITFIELD key SET u1 <o> 1 ...` (`set`) or
    /// `BITFIELD_RO key GET u1 <o> ...`.
    pub(crate) fn pack_planned(&self, packed: &mut Packed, set: bool, plan: &Plan, c: usize) {
        let (key, items_end) = plan.commands[c];
        let items_start = if c == 0 { 0 } else { plan.commands[c - 1].1 };
        let from = plan.offsets_start(items_start);
        let to = plan.items[items_end - 1].1;
        let admitted = if set { self.keys.take_pending(key) } else { 0 };
        pack_bitfield_command(
            packed,
            set,
            self.data_key(key),
            admitted,
            plan.floors[c],
            to - from,
            plan.offsets[from..to].iter().copied(),
        );
    }
}

/// Appends one `BITFIELD key ... SET u1 <o> 1 ...` (`set`) or `BITFIELD_RO key ... GET u1 <o>
/// ...` command of `ops` bit operations, one per offset of a segment's data (the header's size
/// is added here). Each command first reads the key's header, in the same atomic command: its
/// generation, and its write count, which a writing command also increments.
#[allow(clippy::too_many_arguments)]
pub(crate) fn pack_bitfield_command(
    packed: &mut Packed,
    set: bool,
    key: &str,
    admitted: u64,
    expect: Expect,
    ops: usize,
    offsets: impl Iterator<Item = u64>,
) {
    let per_op = if set { 4 } else { 3 };
    let header_args = if set { 3 + 4 + 3 + 4 } else { 3 * 4 } + 3;
    packed.command(2 + header_args + ops * per_op);
    packed.bulk(if set { b"BITFIELD" } else { b"BITFIELD_RO" });
    packed.bulk(key.as_bytes());
    packed.bulk(b"GET");
    packed.bulk(b"i64");
    packed.bulk_u64(GENERATION_AT);
    if set {
        packed.bulk(b"INCRBY");
        packed.bulk(b"i64");
        packed.bulk_u64(WRITES_AT);
        packed.bulk(b"1");
    } else {
        packed.bulk(b"GET");
        packed.bulk(b"i64");
        packed.bulk_u64(WRITES_AT);
    }
    packed.bulk(b"GET");
    packed.bulk(b"i64");
    packed.bulk_u64(LAYERS_AT);
    if set {
        // Admissions this client counted on the key since its last command there.
        packed.bulk(b"INCRBY");
        packed.bulk(b"i64");
        packed.bulk_u64(ADMITTED_AT);
        packed.bulk_u64(admitted);
    } else {
        packed.bulk(b"GET");
        packed.bulk(b"i64");
        packed.bulk_u64(ADMITTED_AT);
    }
    packed.bulk(b"GET");
    packed.bulk(b"u1");
    packed.bulk_u64(witness_at(expect));
    // The fixed parts of each operation, pre-encoded.
    let (head, tail): (&[u8], &[u8]) = if set {
        (b"$3\r\nSET\r\n$2\r\nu1\r\n", b"$1\r\n1\r\n")
    } else {
        (b"$3\r\nGET\r\n$2\r\nu1\r\n", b"")
    };
    for offset in offsets {
        packed.buf.extend_from_slice(head);
        packed.bulk_u64(HEADER_BITS + offset);
        packed.buf.extend_from_slice(tail);
    }
}
