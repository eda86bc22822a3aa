//! Redis Cluster's key routing: which of the 16,384 hash slots a key belongs to, a hash tag
//! for every slot (so a structure's keys can be placed in the slot of their virtual node), the
//! slot map of a cluster, and its redirections.
//!
//! The rules follow the Redis Cluster specification: a key's slot is CRC16 (the XMODEM
//! variant) of the key modulo 16,384, or of its hash tag, the part between the first `{` and
//! the next `}` when that part is not empty. A cluster answers a command for a slot another
//! node serves with `MOVED <slot> <host>:<port>` (the slot moved: ask there from now on) or,
//! while the slot migrates, `ASK <slot> <host>:<port>` (ask there once, after `ASKING`).
//! Neither ran the command, so sending it again where it points is always safe.

use std::sync::OnceLock;

/// Hash slots in a Redis Cluster, and virtual nodes in the partition table by default: the
/// two map one to one.
pub const SLOTS: u16 = 16_384;

/// CRC16-CCITT in the XMODEM variant (polynomial 0x1021, initial 0), as the Redis Cluster
/// specification defines the key hash.
fn crc16(bytes: &[u8]) -> u16 {
    bytes.iter().fold(0u16, |crc, &b| {
        let mut crc = crc ^ (u16::from(b) << 8);
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
        crc
    })
}

/// The hash slot of `key`: its hash tag's when it has one.
///
/// # Examples
///
/// ```
/// use url_dedup_redis::cluster::key_slot;
///
/// assert_eq!(key_slot(b"foo"), 12182);
/// // Keys with the same hash tag share a slot.
/// assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"{user1000}.followers"));
/// ```
pub fn key_slot(key: &[u8]) -> u16 {
    crc16(hash_tag(key)) % SLOTS
}

/// The part of `key` that is hashed: between the first `{` and the next `}`, when that is not
/// empty; the whole key otherwise.
fn hash_tag(key: &[u8]) -> &[u8] {
    let Some(open) = key.iter().position(|&b| b == b'{') else {
        return key;
    };
    match key[open + 1..].iter().position(|&b| b == b'}') {
        Some(0) | None => key,
        Some(len) => &key[open + 1..open + 1 + len],
    }
}

/// A short hash tag whose slot is `slot`: put `{tag}` in a key's name to place the key in
/// that slot. Virtual node `v` of a structure lives in slot `v`, so moving a slot between
/// masters moves the virtual node's keys with it.
///
/// # Examples
///
/// ```
/// use url_dedup_redis::cluster::{key_slot, slot_tag};
///
/// let tag = slot_tag(42);
/// assert_eq!(key_slot(format!("seen:{{{tag}}}").as_bytes()), 42);
/// assert_eq!(key_slot(format!("queue:{{{tag}}}:example.com").as_bytes()), 42);
/// ```
pub fn slot_tag(slot: u16) -> &'static str {
    let tags = SLOT_TAGS.get_or_init(|| {
        // The smallest decimal number hashing to each slot: about 180,000 numbers cover all
        // 16,384 slots (the coupon collector's n ln n), a few milliseconds once per process.
        let mut tags: Vec<Option<String>> = vec![None; usize::from(SLOTS)];
        let mut missing = usize::from(SLOTS);
        let mut n = 0u64;
        while missing > 0 {
            let text = n.to_string();
            let slot = usize::from(key_slot(text.as_bytes()));
            if tags[slot].is_none() {
                tags[slot] = Some(text);
                missing -= 1;
            }
            n += 1;
        }
        tags.into_iter().map(Option::unwrap_or_default).collect()
    });
    &tags[usize::from(slot % SLOTS)]
}

static SLOT_TAGS: OnceLock<Vec<String>> = OnceLock::new();

/// Where a cluster told a command to go instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Redirect {
    /// `MOVED`: the slot is served there now; update the slot map.
    Moved { slot: u16, node: String },
    /// `ASK`: the slot is migrating; send this command there once, after `ASKING`.
    Ask { slot: u16, node: String },
}

impl Redirect {
    /// Reads a `MOVED` or `ASK` error reply (`MOVED 3999 127.0.0.1:6381`).
    pub(crate) fn parse(message: &str) -> Option<Self> {
        let mut words = message.split_whitespace();
        let kind = words.next()?;
        let slot = words.next()?.parse().ok()?;
        let node = words.next()?.to_owned();
        match kind {
            "MOVED" => Some(Self::Moved { slot, node }),
            "ASK" => Some(Self::Ask { slot, node }),
            _ => None,
        }
    }
}

/// Which node serves each slot: node indexes into `nodes`, addresses as `host:port`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SlotMap {
    pub(crate) nodes: Vec<String>,
    slots: Box<[u16]>,
}

impl SlotMap {
    /// One server serving every slot: a Redis that is not a cluster.
    pub(crate) fn single(node: String) -> Self {
        Self {
            nodes: vec![node],
            slots: vec![0; usize::from(SLOTS)].into_boxed_slice(),
        }
    }

    /// The map a `CLUSTER SLOTS` reply describes: ranges of slots, each with its master's
    /// address first.
    pub(crate) fn from_cluster_slots(reply: &redis::Value) -> Option<Self> {
        use redis::Value;
        let Value::Array(ranges) = reply else {
            return None;
        };
        let mut nodes: Vec<String> = Vec::new();
        let mut slots = vec![u16::MAX; usize::from(SLOTS)];
        for range in ranges {
            let Value::Array(fields) = range else {
                return None;
            };
            let (Some(Value::Int(first)), Some(Value::Int(last)), Some(Value::Array(master))) =
                (fields.first(), fields.get(1), fields.get(2))
            else {
                return None;
            };
            let host = match master.first()? {
                Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
                Value::SimpleString(s) => s.clone(),
                _ => return None,
            };
            let Some(Value::Int(port)) = master.get(1) else {
                return None;
            };
            let node = format!("{host}:{port}");
            let index = match nodes.iter().position(|n| *n == node) {
                Some(i) => i,
                None => {
                    nodes.push(node);
                    nodes.len() - 1
                }
            };
            let (first, last) = (usize::try_from(*first).ok()?, usize::try_from(*last).ok()?);
            for slot in slots.get_mut(first..=last)? {
                *slot = u16::try_from(index).ok()?;
            }
        }
        (!nodes.is_empty()).then(|| Self {
            nodes,
            slots: slots.into_boxed_slice(),
        })
    }

    /// The node serving `slot`, if one does.
    pub(crate) fn node(&self, slot: u16) -> Option<usize> {
        let index = *self.slots.get(usize::from(slot))?;
        (usize::from(index) < self.nodes.len()).then_some(usize::from(index))
    }

    /// Notes that `slot` moved to `node` (a `MOVED` reply), adding the node if it is new;
    /// returns its index.
    pub(crate) fn moved(&mut self, slot: u16, node: &str) -> usize {
        let index = match self.nodes.iter().position(|n| n == node) {
            Some(i) => i,
            None => {
                self.nodes.push(node.to_owned());
                self.nodes.len() - 1
            }
        };
        if let Some(s) = self.slots.get_mut(usize::from(slot)) {
            *s = index as u16;
        }
        index
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Redis Cluster specification's reference value: CRC16("123456789") = 0x31C3
    /// (redis/redis, `src/crc16.c`, and the specification's "Keys distribution model").
    #[test]
    fn the_key_hash_is_the_specification_s_crc16() {
        assert_eq!(crc16(b"123456789"), 0x31c3);
        assert_eq!(key_slot(b"123456789"), 0x31c3 % SLOTS);
    }

    /// The hash tag rules as the specification lists them.
    #[test]
    fn hash_tags_follow_the_specification() {
        assert_eq!(hash_tag(b"{user1000}.following"), b"user1000");
        assert_eq!(hash_tag(b"foo{}{bar}"), b"foo{}{bar}");
        assert_eq!(hash_tag(b"foo{{bar}}zap"), b"{bar");
        assert_eq!(hash_tag(b"foo{bar}{zap}"), b"bar");
        assert_eq!(hash_tag(b"no tag"), b"no tag");
        assert_eq!(hash_tag(b"open{only"), b"open{only");
    }

    #[test]
    fn every_slot_has_a_tag() {
        for slot in 0..SLOTS {
            assert_eq!(key_slot(slot_tag(slot).as_bytes()), slot);
            assert!(slot_tag(slot).len() <= 7);
        }
    }

    #[test]
    fn redirections_are_read() {
        assert_eq!(
            Redirect::parse("MOVED 3999 127.0.0.1:6381"),
            Some(Redirect::Moved {
                slot: 3999,
                node: "127.0.0.1:6381".into()
            })
        );
        assert_eq!(
            Redirect::parse("ASK 12 10.0.0.2:7000"),
            Some(Redirect::Ask {
                slot: 12,
                node: "10.0.0.2:7000".into()
            })
        );
        assert_eq!(Redirect::parse("ERR nonsense"), None);
        assert_eq!(Redirect::parse("MOVED x 1"), None);
    }
}
