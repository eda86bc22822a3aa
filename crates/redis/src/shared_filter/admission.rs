//! Admitting a batch into a growing filter: first layers by the store's `BITFIELD` batches,
//! grown keys by a script, keys grown under a client by a read of their newer layers.

use std::collections::BTreeMap;

use url_dedup_bloom::hash::{Digest, ItemHasher};
use url_dedup_segmented::Probe;

use super::{MAX_ROUNDS, SharedFilter, group_by_key};
use crate::error::{Error, Result};
use crate::segment_store::header::{HEADER_BITS, HEADER_OPS, header_reads};
use crate::segment_store::{LayerShape, Uncertain};

impl<H: ItemHasher> SharedFilter<H> {
    pub(super) fn check_and_insert_digests(&self, digests: &[Digest]) -> Result<Vec<bool>> {
        let first = self.store.layer(0)?;
        let probes: Vec<Probe> = digests.iter().map(|&d| first.layout.probe(d)).collect();
        let mut new = vec![false; digests.len()];
        let mut todo: Vec<usize> = (0..digests.len()).collect();
        // Items a write to a key's first layer completed after the key grew: new unless a
        // newer layer holds them (see the module documentation).
        let mut claims: Vec<usize> = Vec::new();
        let mut to_grow: BTreeMap<u64, u32> = BTreeMap::new();
        // Per first-layer key of this batch: admissions its header counted, and ours.
        let mut fill: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
        let assume_new = self.store.options().uncertain == Uncertain::AssumeNew;
        for _ in 0..MAX_ROUNDS {
            if todo.is_empty() && claims.is_empty() {
                break;
            }
            let mut unsettled = Vec::new();
            for (key, members) in group_by_key(&claims, |i| self.key_of(probes[i])) {
                let layers = self.store.keys().layers_of(key);
                match self.read_layers(key, &members, digests, 1..layers)? {
                    Some(present) => {
                        for (&i, p) in members.iter().zip(present) {
                            new[i] = !p;
                        }
                    }
                    None => unsettled.extend(members),
                }
            }
            claims = unsettled;
            let (single, grown): (Vec<usize>, Vec<usize>) = todo
                .iter()
                .partition(|&&i| self.store.keys().layers_of(self.key_of(probes[i])) == 1);
            todo = Vec::new();
            // An item of a grown key whose first-layer bits are all known set is a duplicate
            // (the script would find it in that layer): no round trip, as for a first layer.
            let (known, grown) = self.split_known(grown, &probes)?;
            known.iter().for_each(|&i| new[i] = false);

            if !single.is_empty() {
                let sub: Vec<Probe> = single.iter().map(|&i| probes[i]).collect();
                let mut answers = vec![false; sub.len()];
                let report = self.store.bitfield_batch(true, &sub, &mut answers)?;
                let doubt = report.uncertain(sub.len());
                let mut stale = vec![false; sub.len()];
                for (header, members) in &report.commands {
                    if header.layers > 1 {
                        // The key grew before this command: its write went to the first
                        // layer only. An item it completed there is a claim, settled by a
                        // read of the newer layers; the others were there already.
                        members.iter().for_each(|&m| stale[m] = true);
                        claims.extend(members.iter().filter(|&&m| answers[m]).map(|&m| single[m]));
                        continue;
                    }
                    // A key's items may span several commands: count them together.
                    let admitted = members.iter().filter(|&&m| answers[m]).count() as u64;
                    let seen = fill.entry(header.key).or_insert((0, 0));
                    seen.0 = seen.0.max(header.admitted);
                    seen.1 += admitted;
                }
                for (&key, &(counted, admitted)) in &fill {
                    self.store.keys().add_pending(key, admitted);
                    if counted + admitted >= first.grow_at {
                        to_grow.insert(key, 1);
                    }
                }
                fill.clear();
                for (m, &i) in single.iter().enumerate() {
                    if !stale[m] {
                        new[i] = answers[m] || (doubt[m] && assume_new);
                    }
                }
            }

            for (key, members) in group_by_key(&grown, |i| self.key_of(probes[i])) {
                let layers = self.store.keys().layers_of(key);
                match self.admit_grown(key, layers, &members, digests)? {
                    Admitted::Verdicts { answers, admitted } => {
                        for (&i, a) in members.iter().zip(answers) {
                            new[i] = a;
                        }
                        if admitted >= self.store.layer(layers - 1)?.grow_at {
                            to_grow.insert(key, layers);
                        }
                    }
                    Admitted::Replan => todo.extend(members),
                    Admitted::RanBefore => {
                        for &i in &members {
                            new[i] = assume_new;
                        }
                    }
                }
            }
        }
        if !todo.is_empty() || !claims.is_empty() {
            return Err(Error::Contended {
                attempts: MAX_ROUNDS as u32,
            });
        }
        for (key, layers) in to_grow {
            self.grow(key, layers)?;
        }
        Ok(new)
    }

    /// Where item `digest`'s bits are in layer `shape` of its data key: bit offsets in the key.
    fn offsets(shape: &LayerShape, digest: Digest) -> impl Iterator<Item = u64> {
        let probe = shape.layout.probe(digest);
        let base = shape.start + probe.segment % shape.per_key * shape.layout.segment_bits();
        shape.layout.offsets(probe).map(move |o| base + o)
    }

    /// Reads the bits of `members` in the given layers of data key `key`: whether each is
    /// present in one of them, or `None` when the key's layer count is not what the caller
    /// planned for (it knows the new count now).
    pub(super) fn read_layers(
        &self,
        key: u64,
        members: &[usize],
        digests: &[Digest],
        layers: std::ops::Range<u32>,
    ) -> Result<Option<Vec<bool>>> {
        let planned = self.store.keys().layers_of(key);
        let shapes: Vec<LayerShape> = layers
            .clone()
            .map(|j| self.store.layer(j))
            .collect::<Result<_>>()?;
        let data_key = self.store.data_key(key);
        let expect = self.store.keys().expect(key);
        let mut cmd = redis::cmd("BITFIELD_RO");
        cmd.arg(data_key);
        header_reads(&mut cmd, expect);
        for &i in members {
            for shape in &shapes {
                for offset in Self::offsets(shape, digests[i]) {
                    cmd.arg("GET").arg("u1").arg(offset);
                }
            }
        }
        let values: Vec<i64> = self.store.with_key("read layers", data_key, |mut conn| {
            let cmd = &cmd;
            async move { Ok(cmd.query_async(&mut conn).await?) }
        })?;
        let (header, bits) = values.split_at(HEADER_OPS.min(values.len()));
        let met = self
            .store
            .check_headers(std::iter::once((key, expect)), header)?;
        if met.first().map(|h| h.layers) != Some(planned) {
            return Ok(None);
        }
        let mut bits = bits.iter();
        let present = members
            .iter()
            .map(|_| {
                shapes.iter().fold(false, |found, shape| {
                    let all = (0..shape.layout.hashes())
                        .fold(true, |all, _| all & (bits.next().copied() == Some(1)));
                    found | all
                })
            })
            .collect();
        Ok(Some(present))
    }

    /// Admits `members` into data key `key`, believed to have `layers` layers, with the
    /// script.
    fn admit_grown(
        &self,
        key: u64,
        layers: u32,
        members: &[usize],
        digests: &[Digest],
    ) -> Result<Admitted> {
        let shapes: Vec<LayerShape> = (0..layers)
            .map(|j| self.store.layer(j))
            .collect::<Result<_>>()?;
        let data_key = self.store.data_key(key);
        let generation = self.store.generation_bytes();
        let expect = self.store.keys().expect(key);
        // Chosen once and kept by the call's retries, which ask whether an attempt ran.
        let (stamp_key, number, _held) = self.store.script_stamp(data_key);
        let mut call = scripts().admit.prepare_invoke();
        call.key(data_key)
            .key(&stamp_key)
            .arg(&generation[..])
            .arg(layers)
            .arg(members.len())
            .arg(self.store.options().token_ttl_ms())
            .arg(expect.witness.checked_sub(1).map_or(0, |w| HEADER_BITS + w))
            .arg(number);
        for shape in &shapes {
            call.arg(shape.layout.hashes());
        }
        for &i in members {
            for shape in &shapes {
                for offset in Self::offsets(shape, digests[i]) {
                    call.arg(offset);
                }
            }
        }
        let reply: Vec<i64> = self
            .store
            .with_key("admit into a grown key", data_key, |mut conn| {
                let call = &call;
                async move { Ok(call.invoke_async(&mut conn).await?) }
            })
            .map_err(|e| self.reset_or(e))?;
        match reply.as_slice() {
            [-2] => Ok(Admitted::RanBefore),
            [-1, now] => {
                self.note(key, *now);
                Ok(Admitted::Replan)
            }
            [l, writes, admitted, witnessed, verdicts @ ..] if verdicts.len() == members.len() => {
                let header = [
                    i64::from_be_bytes(generation),
                    *writes,
                    *l,
                    *admitted,
                    *witnessed,
                ];
                self.store
                    .check_headers(std::iter::once((key, expect)), &header)?;
                // A retried call whose first attempt ran found its number in the stamp key and
                // said so above.
                Ok(Admitted::Verdicts {
                    answers: verdicts.iter().map(|&v| v == 1).collect(),
                    admitted: u64::try_from(*admitted).unwrap_or(0),
                })
            }
            other => Err(Error::Corrupt {
                key: data_key.to_owned(),
                detail: format!("the admission script answered {other:?}"),
            }),
        }
    }

    /// Adds layer `layers` (0-based: the `layers + 1`-th) to data key `key` if it still has
    /// `layers` layers.
    pub(super) fn grow(&self, key: u64, layers: u32) -> Result<()> {
        let shape = self.store.layer(layers)?;
        let bytes = (shape.start + shape.per_key * shape.layout.segment_bits()) / 8;
        let data_key = self.store.data_key(key);
        let generation = self.store.generation_bytes();
        let mut call = scripts().grow.prepare_invoke();
        call.key(data_key)
            .arg(&generation[..])
            .arg(layers)
            .arg(bytes);
        let now: i64 = self
            .store
            .with_key("grow a key", data_key, |mut conn| {
                let call = &call;
                async move { Ok(call.invoke_async(&mut conn).await?) }
            })
            .map_err(|e| self.reset_or(e))?;
        self.note(key, now);
        Ok(())
    }

    fn note(&self, key: u64, layers: i64) {
        if let Ok(layers) = u32::try_from(layers) {
            self.store.keys().note_layers(key, layers);
        }
    }

    /// A script's `STORERESET` error reply as [`Error::StoreReset`].
    fn reset_or(&self, e: Error) -> Error {
        match e {
            Error::Redis { source, .. } if source.code() == Some("STORERESET") => self.store.reset(
                source
                    .detail()
                    .unwrap_or("a data key is of another generation"),
            ),
            e => e,
        }
    }
}

/// What the admission script did with a batch.
enum Admitted {
    /// One verdict per item, and the newest layer's admissions after them.
    Verdicts { answers: Vec<bool>, admitted: u64 },
    /// The key's layer count changed: plan again.
    Replan,
    /// A previous attempt of this call ran and its reply was lost: its answers are unknown.
    RanBefore,
}

struct Scripts {
    admit: redis::Script,
    grow: redis::Script,
}

fn scripts() -> &'static Scripts {
    static SCRIPTS: std::sync::OnceLock<Scripts> = std::sync::OnceLock::new();
    SCRIPTS.get_or_init(|| Scripts {
        admit: redis::Script::new(include_str!("../lua/grown_admit.lua")),
        grow: redis::Script::new(include_str!("../lua/grow.lua")),
    })
}
