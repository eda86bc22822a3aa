//! A filter shard on its way from one node to another.

use url_dedup_bloom::snapshot::SnapshotError;
use xxhash_rust::xxh3::xxh3_64;

use crate::{Error, NodeId, VirtualNode};

const MAGIC: [u8; 8] = *b"URLDSHRD";
const VERSION: u16 = 1;
const HEADER: usize = 8 + 2 + 4 + 4 + 4 + 8 + 8;

/// One moving shard: which virtual node, between which nodes, at which epoch, and the shard's
/// bytes (its own checksummed snapshot).
///
/// [`to_bytes`](Self::to_bytes) frames it for the wire with a checksum over the whole frame,
/// so a transfer damaged in transit is rejected, never imported.
///
/// # Examples
///
/// ```
/// use url_dedup_partition::{NodeId, ShardTransfer, VirtualNode};
///
/// let t = ShardTransfer { vnode: VirtualNode(7), from: NodeId(1), to: NodeId(2), epoch: 3, shard: vec![1, 2, 3] };
/// let wire = t.to_bytes();
/// assert_eq!(ShardTransfer::from_bytes(&wire)?, t);
/// let mut damaged = wire.clone();
/// damaged[20] ^= 1;
/// assert!(ShardTransfer::from_bytes(&damaged).is_err());
/// # Ok::<(), url_dedup_partition::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ShardTransfer {
    /// The virtual node whose shard this is.
    pub vnode: VirtualNode,
    /// The node that exported it.
    pub from: NodeId,
    /// The node that must import it.
    pub to: NodeId,
    /// The table epoch the migration leads to.
    pub epoch: u64,
    /// The shard's exported bytes.
    pub shard: Vec<u8>,
}

impl ShardTransfer {
    /// The framed transfer.
    ///
    /// # Examples
    ///
    /// See [`ShardTransfer`].
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER + self.shard.len() + 8);
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&self.vnode.0.to_le_bytes());
        out.extend_from_slice(&self.from.0.to_le_bytes());
        out.extend_from_slice(&self.to.0.to_le_bytes());
        out.extend_from_slice(&self.epoch.to_le_bytes());
        out.extend_from_slice(&(self.shard.len() as u64).to_le_bytes());
        out.extend_from_slice(&self.shard);
        let sum = xxh3_64(&out);
        out.extend_from_slice(&sum.to_le_bytes());
        out
    }

    /// Parses a frame written by [`to_bytes`](Self::to_bytes).
    ///
    /// # Errors
    ///
    /// [`Error::Snapshot`] with [`SnapshotError::BadMagic`], [`SnapshotError::UnsupportedVersion`],
    /// [`SnapshotError::Truncated`], [`SnapshotError::InvalidParameters`] (trailing bytes) or
    /// [`SnapshotError::PayloadChecksum`].
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::ShardTransfer;
    ///
    /// assert!(ShardTransfer::from_bytes(b"URLDSHRD").is_err());
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        if bytes.len() < 8 || bytes[..8] != MAGIC {
            return Err(SnapshotError::BadMagic.into());
        }
        if bytes.len() < HEADER + 8 {
            return Err(SnapshotError::Truncated.into());
        }
        let (body, sum) = bytes.split_at(bytes.len() - 8);
        let field = |at: usize, len: usize| {
            let mut word = [0u8; 8];
            word[..len].copy_from_slice(&body[at..at + len]);
            u64::from_le_bytes(word)
        };
        let version = field(8, 2) as u16;
        if version != VERSION {
            return Err(SnapshotError::UnsupportedVersion {
                found: version,
                supported: VERSION,
            }
            .into());
        }
        let len = field(30, 8);
        let available = (body.len() - HEADER) as u64;
        if len > available {
            return Err(SnapshotError::Truncated.into());
        }
        if len < available {
            return Err(SnapshotError::InvalidParameters("bytes after the shard transfer").into());
        }
        if xxh3_64(body).to_le_bytes() != sum {
            return Err(SnapshotError::PayloadChecksum.into());
        }
        Ok(Self {
            vnode: VirtualNode(field(10, 4) as u32),
            from: NodeId(field(14, 4) as u32),
            to: NodeId(field(18, 4) as u32),
            epoch: field(22, 8),
            shard: body[HEADER..].to_vec(),
        })
    }
}
