//! A batch on a Redis Cluster: each command to the master serving its key's slot, one
//! pipeline per master, following `MOVED` and `ASK` command by command.

use std::cell::RefCell;
use std::collections::BTreeMap;

use redis::RedisError;

use super::RedisSegmentStore;
use super::batch::{acknowledged, pack_wait};
use super::header::HEADER_OPS;
use super::packing::Plan;
use crate::cluster::Redirect;
use crate::connection::MAX_REDIRECTS;
use crate::error::Result;
use crate::link::Failure;
use crate::resp::Packed;
use crate::wire::{Replies, error_reply};

/// What each command of a cluster batch got back: its header values and bits.
type Answered = Vec<Option<(Vec<i64>, Vec<u8>)>>;

impl RedisSegmentStore {
    /// Sends a planned batch to a cluster: each command to the master serving its key's
    /// slot, one pipeline per master, following `MOVED` and `ASK` for the commands that get
    /// them (they did not run). Fills `headers` and `bits` in command order, as a single
    /// server's reply would; returns, per command, whether an attempt whose reply was lost
    /// may have run it (a cluster batch is no transaction: its keys are in many slots, so only
    /// the commands sent to a master that failed are in doubt). Each attempt sends only the
    /// commands still unanswered, after the slot map was read again if the failure may have
    /// moved slots (a master died and its replica took over).
    pub(crate) fn run_on_cluster(
        &self,
        operation: &'static str,
        set: bool,
        plan: &Plan,
        headers: &mut Vec<i64>,
        bits: &mut Vec<u8>,
    ) -> Result<Vec<bool>> {
        let n = plan.commands.len();
        let answered: RefCell<Answered> = RefCell::new(vec![None; n]);
        let targets: RefCell<Vec<(String, bool)>> = RefCell::new(
            plan.commands
                .iter()
                .map(|&(key, _)| (self.link.node_of(self.data_key(key).as_bytes()), false))
                .collect(),
        );
        let ran = RefCell::new(vec![false; n]);
        let ack = set.then_some(self.options.acknowledge).flatten();
        let (answered_ref, targets_ref, ran_ref) = (&answered, &targets, &ran);
        self.link.run_blocking(operation, |conn| async move {
            {
                // Routed afresh by every attempt: the slot map may have been read again since.
                let answered = answered_ref.borrow();
                let mut targets = targets_ref.borrow_mut();
                for c in (0..n).filter(|&c| answered[c].is_none()) {
                    let key = self.data_key(plan.commands[c].0);
                    targets[c] = (self.link.node_of(key.as_bytes()), false);
                }
            }
            for _ in 0..MAX_REDIRECTS {
                let mut by_node: BTreeMap<String, Vec<usize>> = BTreeMap::new();
                {
                    let answered = answered_ref.borrow();
                    let targets = targets_ref.borrow();
                    for c in (0..n).filter(|&c| answered[c].is_none()) {
                        by_node.entry(targets[c].0.clone()).or_default().push(c);
                    }
                }
                if by_node.is_empty() {
                    return Ok(());
                }
                for (node, commands) in by_node {
                    self.ready(&conn, &node).await?;
                    let asking: Vec<bool> = {
                        let targets = targets_ref.borrow();
                        commands.iter().map(|&c| targets[c].1).collect()
                    };
                    let mut packed = Packed::default();
                    for (&c, &ask) in commands.iter().zip(&asking) {
                        if ask {
                            packed.command(1);
                            packed.bulk(b"ASKING");
                        }
                        self.pack_planned(&mut packed, set, plan, c);
                    }
                    if let Some(ack) = ack {
                        pack_wait(&mut packed, ack);
                    }
                    let replies = packed.commands;
                    let sent = conn
                        .raw(&node, packed.buf, replies, ack.map(|a| a.timeout), None)
                        .await;
                    let failed = |e: RedisError| {
                        // Sent, so perhaps run, and perhaps lost with a master that died: in
                        // doubt, and sent again by the next attempt.
                        let mut ran = ran_ref.borrow_mut();
                        for &c in &commands {
                            ran[c] = true;
                        }
                        Failure::Redis(e)
                    };
                    let answer = sent.map_err(failed)?;
                    let mut decoder = Replies::new(&answer.bytes);
                    let answers = decoder.each(&asking, HEADER_OPS)?;
                    if let Some(ack) = ack {
                        // Not acknowledged in time: as a lost reply.
                        acknowledged(&mut decoder, ack, &node).map_err(failed)?;
                    }
                    // Every answer is kept before any error is returned: a command that ran
                    // must not be sent again as if it had not.
                    let mut failure = None;
                    let mut answered = answered_ref.borrow_mut();
                    let mut targets = targets_ref.borrow_mut();
                    for (&c, answer) in commands.iter().zip(answers) {
                        match answer {
                            Ok(reply) => answered[c] = Some(reply),
                            Err(message) => match Redirect::parse(&message) {
                                Some(redirect) => {
                                    let asking = matches!(redirect, Redirect::Ask { .. });
                                    targets[c] = (self.link.redirected(&redirect), asking);
                                }
                                None => {
                                    failure.get_or_insert_with(|| error_reply(message));
                                }
                            },
                        }
                    }
                    if let Some(e) = failure {
                        return Err(Failure::Redis(e));
                    }
                }
            }
            Err(Failure::Redis(RedisError::from((
                redis::ErrorKind::Client,
                "too many cluster redirections",
            ))))
        })?;
        for (h, b) in answered.into_inner().into_iter().flatten() {
            headers.extend(h);
            bits.extend(b);
        }
        Ok(ran.into_inner())
    }
}
