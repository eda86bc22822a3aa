//! Document 003's optimistic locking, kept to compare with `BITFIELD` batches: `WATCH` the
//! batch's keys, read their bits, then `MULTI`/`BITFIELD SET`/`EXEC`, and start over when
//! another client changed a watched key meanwhile.

use std::cell::{Cell, RefCell};
use std::collections::HashSet;

use redis::RedisError;
use url_dedup_segmented::Probe;

use super::RedisSegmentStore;
use super::header::{Expect, HEADER_OPS};
use super::meta::corrupt;
use crate::error::{Error, Result};
use crate::link::Failure;
use crate::resp::Packed;
use crate::wire::{Replies, Reply, error_reply};

/// Rounds a batch may lose to other clients' writes before it gives up.
const MAX_ROUNDS: u32 = 1_000;

impl RedisSegmentStore {
    /// Checks and inserts a batch the optimistic way. Fills `new`; returns whether an attempt
    /// whose reply was lost may have committed. Each attempt holds a connection alone (as
    /// every attempt of a blocking caller does), so its `WATCH` is its own.
    pub(crate) fn optimistic_check_and_insert(
        &self,
        probes: &[Probe],
        new: &mut [bool],
    ) -> Result<bool> {
        let link = &self.link;
        let groups = self.groups(probes);
        let mut read = Packed::default();
        read.command(1 + groups.len());
        read.bulk(b"WATCH");
        for (key, _) in &groups {
            read.bulk(self.data_key(*key).as_bytes());
        }
        for (key, members) in &groups {
            self.pack_bitfield(&mut read, false, *key, members, probes);
        }
        let node = link.node_of(b"");
        let new = RefCell::new(new);
        let headers = RefCell::new(Vec::new());
        let mut uncertain = false;
        for round in 0.. {
            if round >= MAX_ROUNDS {
                return Err(Error::Contended { attempts: round });
            }
            // Tries of this round: more than one means a try failed on the wire, possibly
            // after its EXEC ran. A conflict (EXEC answered nil) is a new round, not a failure.
            let tries = Cell::new(0u32);
            let floors: Vec<Expect> = groups
                .iter()
                .map(|&(key, _)| self.keys.expect(key))
                .collect();
            let (read, groups, node, new, headers, tries) =
                (&read, &groups, &node, &new, &headers, &tries);
            let committed =
                link.run_blocking("optimistic check and insert", |conn| async move {
                    tries.set(tries.get() + 1);
                    let generation = self.ready(&conn, node).await?;
                    // The reads and the write must go over one connection: the one WATCH was sent
                    // on.
                    let answer = conn
                        .raw(
                            node,
                            read.buf.clone(),
                            read.commands,
                            None,
                            Some(generation),
                        )
                        .await?;
                    let unwatch = || {
                        let mut unwatch = Packed::default();
                        unwatch.command(1);
                        unwatch.bulk(b"UNWATCH");
                        conn.raw(node, unwatch.buf, 1, None, Some(generation))
                    };
                    let write = Replies::new(&answer.bytes)
                        .receive(read.commands, 1)
                        .map_err(Failure::from)
                        .and_then(|replies| Ok(checked(replies)?))
                        .and_then(|replies| {
                            let mut headers = headers.borrow_mut();
                            headers.clear();
                            let mut new = new.borrow_mut();
                            self.optimistic_write(groups, replies, probes, &mut new, &mut headers)
                        });
                    let write = match write {
                        Ok(Some(write)) => write,
                        Ok(None) => {
                            unwatch().await?;
                            return Ok(true);
                        }
                        Err(e) => {
                            // The connection goes back to its pool: it must not keep the watch.
                            let _ = unwatch().await;
                            return Err(e);
                        }
                    };
                    let answer = conn
                        .raw(node, write.buf, write.commands, None, Some(generation))
                        .await?;
                    // MULTI's +OK and each +QUEUED are skipped; EXEC answers nil when a watched key
                    // changed.
                    let exec = checked(
                        Replies::new(&answer.bytes).receive(write.commands, write.commands - 1)?,
                    )?;
                    Ok::<bool, Failure>(!matches!(exec.first(), Some(Reply::Nil) | None))
                })?;
            uncertain |= tries.get() > 1;
            self.check_headers(
                groups
                    .iter()
                    .map(|&(key, _)| key)
                    .zip(floors.iter().copied()),
                &headers.borrow(),
            )?;
            if committed {
                break;
            }
        }
        Ok(uncertain)
    }

    /// From the watched reads, the answers and the transaction that sets the new items' bits;
    /// `None` when the batch holds nothing new.
    fn optimistic_write(
        &self,
        groups: &[(u64, Vec<usize>)],
        replies: Vec<Reply>,
        probes: &[Probe],
        new: &mut [bool],
        headers: &mut Vec<i64>,
    ) -> Result<Option<Packed>, Failure> {
        let layout = self.meta.layout;
        let k = layout.hashes() as usize;
        let mut write = Packed::default();
        write.command(1);
        write.bulk(b"MULTI");
        // Bits this batch sets, so a repeat later in the batch is not new again.
        let mut set_here: HashSet<(u64, u64)> = HashSet::new();
        let mut any = false;
        for ((key, members), reply) in groups.iter().zip(replies) {
            let values = int_array(reply, HEADER_OPS + k * members.len(), &self.options.prefix)?;
            let (header, bits) = values.split_at(HEADER_OPS);
            headers.extend_from_slice(header);
            let mut fresh_members = Vec::new();
            for (&i, old) in members.iter().zip(bits.chunks(k)) {
                let (_, base) = self.locate(probes[i].segment);
                let offsets: Vec<u64> = layout.offsets(probes[i]).map(|o| base + o).collect();
                let fresh = offsets
                    .iter()
                    .zip(old)
                    .any(|(&o, &b)| b == 0 && !set_here.contains(&(*key, o)));
                new[i] = fresh;
                if fresh {
                    set_here.extend(offsets.iter().map(|&o| (*key, o)));
                    fresh_members.push(i);
                }
            }
            if !fresh_members.is_empty() {
                any = true;
                self.pack_bitfield(&mut write, true, *key, &fresh_members, probes);
            }
        }
        if !any {
            return Ok(None);
        }
        write.command(1);
        write.bulk(b"EXEC");
        Ok(Some(write))
    }
}

/// The replies, or the first error reply as an error (a server still loading its data is
/// transient and retried).
fn checked(replies: Vec<Reply>) -> Result<Vec<Reply>, RedisError> {
    for reply in &replies {
        let error = match reply {
            Reply::Error(e) => e,
            Reply::Array(items) => match items.iter().find(|r| matches!(r, Reply::Error(_))) {
                Some(Reply::Error(e)) => e,
                _ => continue,
            },
            _ => continue,
        };
        return Err(error_reply(error.clone()));
    }
    Ok(replies)
}

fn int_array(reply: Reply, expected: usize, key: &str) -> Result<Vec<i64>> {
    let Reply::Array(items) = reply else {
        return Err(corrupt(key, format!("BITFIELD answered {reply:?}")));
    };
    if items.len() != expected {
        return Err(corrupt(
            key,
            format!("BITFIELD answered {} values, not {expected}", items.len()),
        ));
    }
    items
        .into_iter()
        .map(|v| match v {
            Reply::Int(i) => Ok(i),
            other => Err(corrupt(key, format!("BITFIELD value {other:?}"))),
        })
        .collect()
}
