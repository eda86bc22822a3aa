//! One batch of `BITFIELD`s: planned, sent in one round trip (one transaction on a single
//! server, one pipeline per master on a cluster), checked, and learned from.

use std::cell::{Cell, RefCell};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use redis::{RedisError, RedisResult};
use url_dedup_segmented::Probe;

use super::RedisSegmentStore;
use super::header::{HEADER_OPS, KeyHeader};
use super::meta::corrupt;
use super::options::Acknowledge;
use super::packing::Plan;
use crate::error::Result;
use crate::link::Failure;
use crate::resp::Packed;
use crate::wire::{Replies, Reply, error_reply};

/// What one batch of `BITFIELD`s met beyond its answers.
#[derive(Debug, Default)]
pub(crate) struct BatchReport {
    /// Whether an attempt whose reply was lost had run (a single server's batch is one
    /// transaction: all of it or none).
    pub(crate) ran: bool,
    /// On a cluster, per command: whether an attempt whose reply was lost may have run it.
    pub(crate) ran_commands: Vec<bool>,
    /// Per command: its key's header and the probe indices it carried.
    pub(crate) commands: Vec<(KeyHeader, Vec<usize>)>,
}

impl BatchReport {
    /// Per probe of a batch of `probes`: whether its answer is in doubt, because an attempt
    /// that carried it may have run before its reply was lost.
    pub(crate) fn uncertain(&self, probes: usize) -> Vec<bool> {
        let mut doubt = vec![self.ran; probes];
        for ((_, members), _) in self
            .commands
            .iter()
            .zip(&self.ran_commands)
            .filter(|&(_, &ran)| ran)
        {
            members.iter().for_each(|&m| doubt[m] = true);
        }
        doubt
    }
}

/// The batch counter keys of a store (`<prefix>:conn:<random>`), one per batch in flight:
/// each writing batch's transaction sets its key to the batch's number, and the retry of a
/// batch whose reply was lost reads it to learn whether the lost attempt ran (see
/// [`RedisSegmentStore::bitfield_batch`]). A key serves one batch at a time, so its batches
/// run one after the other, as the check needs; finished batches hand it on.
#[derive(Debug)]
pub(crate) struct Stamps {
    prefix: String,
    free: Mutex<Vec<Stamp>>,
}

/// A batch counter key and the number of its last batch.
#[derive(Debug)]
pub(crate) struct Stamp {
    pub(crate) key: String,
    number: u64,
}

impl Stamp {
    /// The number of the next batch.
    pub(crate) fn next(&mut self) -> u64 {
        self.number += 1;
        self.number
    }
}

impl Stamps {
    pub(crate) fn new(prefix: &str) -> Self {
        Self {
            prefix: prefix.to_owned(),
            free: Mutex::new(Vec::new()),
        }
    }

    /// A counter key no batch in flight uses.
    pub(crate) fn take(&self) -> StampGuard<'_> {
        let free = self
            .free
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let stamp = free.unwrap_or_else(|| Stamp {
            key: format!(
                "{}:conn:{:016x}",
                self.prefix,
                crate::namespace::random_u64()
            ),
            number: 0,
        });
        StampGuard {
            stamps: self,
            stamp,
        }
    }
}

/// A counter key lent to one batch, handed back when the batch ends.
pub(crate) struct StampGuard<'a> {
    stamps: &'a Stamps,
    stamp: Stamp,
}

impl StampGuard<'_> {
    pub(crate) fn get(&mut self) -> &mut Stamp {
        &mut self.stamp
    }
}

impl Drop for StampGuard<'_> {
    fn drop(&mut self) {
        let stamp = std::mem::replace(
            &mut self.stamp,
            Stamp {
                key: String::new(),
                number: 0,
            },
        );
        self.stamps
            .free
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(stamp);
    }
}

/// Appends `WAIT replicas timeout` for [`StoreOptions::acknowledge`](super::StoreOptions::acknowledge).
pub(crate) fn pack_wait(packed: &mut Packed, ack: Acknowledge) {
    packed.command(3);
    packed.bulk(b"WAIT");
    packed.bulk_u64(u64::from(ack.replicas));
    packed.bulk_u64(ack.timeout.as_millis() as u64);
}

/// Reads `WAIT`'s reply: enough replicas hold the batch's writes, or an error that retries
/// the batch as one whose reply was lost (its retry finds its token and answers per
/// [`Uncertain`](super::Uncertain)).
pub(crate) fn acknowledged(
    replies: &mut Replies<'_>,
    ack: Acknowledge,
    node: &str,
) -> RedisResult<()> {
    match replies.receive(1, 0)?.first() {
        Some(Reply::Int(n)) if *n >= i64::from(ack.replicas) => Ok(()),
        Some(Reply::Int(n)) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!(
                "{n} of {} replicas of {node} acknowledged within {:?}",
                ack.replicas, ack.timeout
            ),
        )
        .into()),
        other => Err(RedisError::from((
            redis::ErrorKind::Parse,
            "WAIT answered",
            format!("{other:?}"),
        ))),
    }
}

impl RedisSegmentStore {
    /// `BITFIELD key SET u1 <o> 1 ...` (`set`) or `BITFIELD_RO key GET u1 <o> ...` for the
    /// batch, one pipelined round trip, leaving out bits known set. Fills `answers` with "any
    /// bit was 0" (`set`) or "all bits are 1", learns the bits seen set, and reports what the
    /// commands met and whether an attempt whose reply was lost had run.
    pub(crate) fn bitfield_batch(
        &self,
        set: bool,
        probes: &[Probe],
        answers: &mut [bool],
    ) -> Result<BatchReport> {
        let known = self.known.bits();
        let k = self.meta.layout.hashes() as usize;
        let mut plan = Plan::default();
        let mut bits = Vec::with_capacity(probes.len() * k);
        let mut headers = Vec::new();
        let mut report = BatchReport::default();
        if self.known.all_known(self.meta.layout, probes) {
            // Nothing to ask: every item is a duplicate, and present. Unless the store has
            // not met a header for a while: then one key is asked, so that a reset is noticed
            // even by a client that knows every URL it sees.
            plan.epoch = known.map_or(0, |k| k.epoch());
            plan.skipped = (probes.len() * k) as u64;
            self.verify_if_due()?;
        } else {
            let order = self.key_order(probes);
            plan.items.reserve(probes.len());
            plan.offsets.reserve(probes.len() * k);
            let operation = if set { "check and insert" } else { "contains" };
            if self.link.is_cluster() {
                // Planned once: the known-bits cache is emptied by a reconnect, but a bit it
                // left out is set on the server whatever happens to the connection (a server
                // that lost it shows in the headers).
                self.plan_commands(probes, &order, known, &mut plan);
                report.ran_commands =
                    self.run_on_cluster(operation, set, &plan, &mut headers, &mut bits)?;
            } else {
                report.ran = self.run_on_server(
                    operation,
                    set,
                    probes,
                    &order,
                    &mut plan,
                    &mut headers,
                    &mut bits,
                )?;
            }
            let met = self.check_headers(
                plan.commands
                    .iter()
                    .map(|&(key, _)| key)
                    .zip(plan.floors.iter().copied()),
                &headers,
            )?;
            let mut start = 0;
            for (header, &(_, items_end)) in met.into_iter().zip(&plan.commands) {
                let members = plan.items[start..items_end]
                    .iter()
                    .map(|&(i, _)| i)
                    .collect();
                report.commands.push((header, members));
                start = items_end;
            }
        }
        if bits.len() != plan.offsets.len() {
            return Err(corrupt(
                &self.options.prefix,
                format!(
                    "BITFIELD answered {} values, not {}",
                    bits.len(),
                    plan.offsets.len()
                ),
            ));
        }
        // Items left out have every bit known set: a duplicate, and present.
        answers.fill(!set);
        for (n, &(i, end)) in plan.items.iter().enumerate() {
            let olds = &bits[plan.offsets_start(n)..end];
            answers[i] = if set {
                olds.contains(&0)
            } else {
                olds.iter().all(|&b| b == 1)
            };
        }
        if set {
            // Each key's witness: the last bit its command set (1 from now on, whatever it
            // was before).
            for &(key, items_end) in &plan.commands {
                self.keys
                    .witness(key, plan.offsets[plan.items[items_end - 1].1 - 1]);
            }
        }
        if let Some(known) = known.filter(|_| !bits.is_empty()) {
            // After SET every bit sent is 1, whatever it was; after GET those answered 1 are.
            // Not if the cache was emptied since planning: the answers may be an old server's.
            known.learn(
                plan.epoch,
                plan.global_bits(self.meta.segments_per_key * self.meta.layout.segment_bits())
                    .zip(&bits)
                    .filter(|&(_, &b)| set || b == 1)
                    .map(|(bit, _)| bit),
            );
        }
        self.known.count(plan.offsets.len() as u64, plan.skipped);
        Ok(report)
    }

    /// Sends a batch to a single server and fills `headers` and `bits` from its reply;
    /// returns whether an attempt whose reply was lost had run.
    ///
    /// A writing batch runs as one transaction that also sets a counter key to the batch's
    /// number. When its reply is lost, the retry reads that key: if it does not hold the
    /// number, nothing of the attempt ran (a connection that broke while idle, a server that
    /// restarted between batches) and the retry's answers are exact; only a batch that did
    /// run has answers no one can know, and [`Uncertain`](super::Uncertain) decides for it
    /// alone. The batch is planned afresh by every attempt, after [`ready`](Self::ready)
    /// emptied the cache if the connection is new (bits known from a server that restarted
    /// would be wrong), and sent only on that connection.
    #[allow(clippy::too_many_arguments)] // one batch's state, passed rather than stored
    fn run_on_server(
        &self,
        operation: &'static str,
        set: bool,
        probes: &[Probe],
        order: &[usize],
        plan: &mut Plan,
        headers: &mut Vec<i64>,
        bits: &mut Vec<u8>,
    ) -> Result<bool> {
        let known = self.known.bits();
        let node = self.link.node_of(b"");
        let stamp = set.then(|| RefCell::new(self.stamps.take()));
        let ack = set.then_some(self.options.acknowledge).flatten();
        // The number of the batch last sent, and whether an attempt whose reply was lost ran.
        let sent: Cell<Option<u64>> = Cell::new(None);
        let ran = Cell::new(false);
        let state = RefCell::new((plan, headers, bits));
        let (node, stamp, sent, ran, state) = (&node, &stamp, &sent, &ran, &state);
        self.link.run_blocking(operation, |mut conn| async move {
            let generation = self.ready(&conn, node).await?;
            if let (Some(stamp), Some(number), false) = (stamp, sent.get(), ran.get()) {
                let key = stamp.borrow_mut().get().key.clone();
                let last: Option<u64> = redis::cmd("GET").arg(key).query_async(&mut conn).await?;
                ran.set(last == Some(number));
            }
            let (packed, number) = {
                let mut state = state.borrow_mut();
                let (plan, _, _) = &mut *state;
                self.plan_commands(probes, order, known, plan);
                self.pack_on_server(set, plan, stamp.as_ref(), ack)
            };
            sent.set(number);
            let replies = packed.commands;
            let extra = ack.map(|a| a.timeout).unwrap_or(Duration::ZERO);
            let answer = conn
                .raw(node, packed.buf, replies, Some(extra), Some(generation))
                .await?;
            let mut state = state.borrow_mut();
            let (plan, headers, bits) = &mut *state;
            headers.clear();
            bits.clear();
            let mut decoder = Replies::new(&answer.bytes);
            let commands = plan.commands.len();
            let received = if number.is_some() {
                decoder.bitfield_transaction(commands, HEADER_OPS, headers, bits)?
            } else {
                decoder.bitfields(commands, HEADER_OPS, headers, bits)?
            };
            received.map_err(error_reply)?;
            if let Some(ack) = ack {
                acknowledged(&mut decoder, ack, node)?;
            }
            Ok::<(), Failure>(())
        })?;
        Ok(ran.get())
    }

    /// A planned batch for a single server: a writing batch as one transaction that also
    /// sets its counter key to the batch's next number (returned), then `WAIT` if asked.
    fn pack_on_server(
        &self,
        set: bool,
        plan: &Plan,
        stamp: Option<&RefCell<StampGuard<'_>>>,
        ack: Option<Acknowledge>,
    ) -> (Packed, Option<u64>) {
        let mut packed = Packed::default();
        let stamp = stamp.map(|stamp| {
            let mut guard = stamp.borrow_mut();
            let stamp = guard.get();
            (stamp.key.clone(), stamp.next())
        });
        if stamp.is_some() {
            packed.command(1);
            packed.bulk(b"MULTI");
        }
        for c in 0..plan.commands.len() {
            self.pack_planned(&mut packed, set, plan, c);
        }
        if let Some((key, number)) = &stamp {
            packed.command(5);
            packed.bulk(b"SET");
            packed.bulk(key.as_bytes());
            packed.bulk_u64(*number);
            packed.bulk(b"PX");
            packed.bulk_u64(self.options.token_ttl_ms());
            packed.command(1);
            packed.bulk(b"EXEC");
        }
        if let Some(ack) = ack {
            pack_wait(&mut packed, ack);
        }
        (packed, stamp.map(|(_, number)| number))
    }
}
