//! The partition table in the workspace's shared snapshot format (`Kind::PARTITION_TABLE`).
//!
//! ```text
//! parameters: virtual nodes N (u32), epoch (u64), route key (u16), hash algorithm (u16),
//!             hash key (16 bytes), member count M (u32)
//! payload:    M words        member id (low 32 bits) and weight (high 32 bits), ascending ids
//!             N/4 words      owner of each virtual node as a 16-bit index into the members,
//!                            four per word, lowest virtual node in the lowest bits
//!             N words        previous owner of each virtual node: 0 for none, else 2^32 | id
//! ```
//!
//! With N = 16384 a table is about 160 KiB. Everything is validated before a table is built:
//! ids ascending, weights at least 1, owners in range, N a power of two, lengths exact.

use std::io::{Read, Write};

use url_dedup_bloom::hash::{HashAlgorithm, HashKey, ItemHasher};
use url_dedup_bloom::snapshot::{self, Kind, Limits, Params, SnapshotError};

use crate::{Error, NodeId, PartitionTable, RouteKey};

impl<H: ItemHasher> PartitionTable<H> {
    /// Writes the table as a snapshot.
    ///
    /// # Errors
    ///
    /// [`Error::Snapshot`] when writing fails.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{NodeId, PartitionTable};
    ///
    /// let mut table = PartitionTable::builder().nodes((1..=3).map(NodeId)).build()?;
    /// table.leave(NodeId(2))?;
    /// let mut file = Vec::new();
    /// table.write_to(&mut file)?;
    /// let back: PartitionTable = PartitionTable::read_from(&file[..])?;
    /// assert_eq!(back, table);
    /// assert_eq!(back.route("https://example.com/"), table.route("https://example.com/"));
    /// # Ok::<(), url_dedup_partition::Error>(())
    /// ```
    pub fn write_to<W: Write>(&self, out: W) -> Result<(), Error> {
        let (nodes, owners) = self.canonical();
        let mut params = Params::new();
        params
            .put_u32(self.virtual_nodes())
            .put_u64(self.epoch)
            .put_u16(self.route_key.code())
            .put_u16(H::ALGORITHM.0)
            .put_bytes(&self.hasher.key().to_bytes())
            .put_u32(nodes.len() as u32);
        let member_words = nodes
            .iter()
            .map(|&(id, w)| u64::from(id.0) | u64::from(w) << 32);
        let owner_words = owners.chunks(4).map(|four| {
            four.iter()
                .enumerate()
                .fold(0u64, |word, (i, &o)| word | u64::from(o) << (16 * i))
        });
        let previous_words = self
            .previous
            .iter()
            .map(|p| p.map_or(0, |id| 1 << 32 | u64::from(id.0)));
        let words = nodes.len() + owners.len().div_ceil(4) + self.previous.len();
        snapshot::write(
            out,
            Kind::PARTITION_TABLE,
            params.as_bytes(),
            words as u64,
            member_words.chain(owner_words).chain(previous_words),
        )?;
        Ok(())
    }

    /// Reads a table written by [`write_to`](Self::write_to).
    ///
    /// # Errors
    ///
    /// [`Error::Snapshot`] for damaged, truncated, oversized or inconsistent input, including a
    /// snapshot written with another hash algorithm than `H`.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::PartitionTable;
    ///
    /// assert!(PartitionTable::<url_dedup_bloom::SipHash13>::read_from(&b"garbage"[..]).is_err());
    /// ```
    pub fn read_from<R: Read>(input: R) -> Result<Self, Error> {
        Self::read_from_with_limits(input, Limits::default())
    }

    /// [`read_from`](Self::read_from) with explicit [`Limits`], for input from the network.
    ///
    /// # Errors
    ///
    /// As [`read_from`](Self::read_from).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{NodeId, PartitionTable};
    /// use url_dedup_bloom::snapshot::Limits;
    ///
    /// let bytes = PartitionTable::builder().nodes([NodeId(1)]).build()?.to_bytes();
    /// let tiny = Limits { max_payload_bytes: 1024 };
    /// assert!(PartitionTable::<url_dedup_bloom::SipHash13>::read_from_with_limits(&bytes[..], tiny).is_err());
    /// # Ok::<(), url_dedup_partition::Error>(())
    /// ```
    pub fn read_from_with_limits<R: Read>(mut input: R, limits: Limits) -> Result<Self, Error> {
        let bad = |why| Error::Snapshot(SnapshotError::InvalidParameters(why));
        let header = snapshot::read_header(&mut input, Kind::PARTITION_TABLE, limits)?;
        let mut p = header.params();
        let n = p.u32()?;
        let epoch = p.u64()?;
        let route_key = RouteKey::from_code(p.u16()?).ok_or(bad("unknown route key"))?;
        let algorithm = HashAlgorithm(p.u16()?);
        let key = HashKey::from_bytes(p.bytes::<16>()?);
        let members = p.u32()? as usize;
        if !p.is_empty() {
            return Err(bad("parameter block too long"));
        }
        if algorithm != H::ALGORITHM {
            return Err(bad("table was written with another hash algorithm"));
        }
        crate::table::check_virtual_nodes(u64::from(n))?;
        let n = n as usize;
        if members > n {
            return Err(bad("more members than virtual nodes"));
        }
        let expected = (members + n.div_ceil(4) + n) as u64;
        if header.payload_words() != expected {
            return Err(bad("payload length does not match the table's size"));
        }
        let words = header.read_payload(&mut input)?;
        let (member_words, rest) = words.split_at(members);
        let (owner_words, previous_words) = rest.split_at(n.div_ceil(4));
        let nodes: Vec<(NodeId, u32)> = member_words
            .iter()
            .map(|&w| (NodeId(w as u32), (w >> 32) as u32))
            .collect();
        let owners: Vec<u32> = owner_words
            .iter()
            .flat_map(|&w| (0..4).map(move |i| (w >> (16 * i)) as u16 as u32))
            .take(n)
            .collect();
        let previous = previous_words
            .iter()
            .map(|&w| match w >> 32 {
                0 if w == 0 => Ok(None),
                1 => Ok(Some(NodeId(w as u32))),
                _ => Err(bad("malformed previous owner")),
            })
            .collect::<Result<Vec<_>, _>>()?;
        PartitionTable::from_canonical(
            H::from_key(key),
            route_key,
            epoch,
            &nodes,
            &owners,
            previous,
        )
    }

    /// The snapshot as bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{NodeId, PartitionTable};
    ///
    /// let t = PartitionTable::builder().nodes([NodeId(1)]).build()?;
    /// assert_eq!(&t.to_bytes()[..8], b"URLDEDUP");
    /// # Ok::<(), url_dedup_partition::Error>(())
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        // Writing to a Vec cannot fail.
        let _ = self.write_to(&mut out);
        out
    }

    /// Reads a snapshot from bytes.
    ///
    /// # Errors
    ///
    /// As [`read_from`](Self::read_from).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_partition::{NodeId, PartitionTable};
    ///
    /// let t = PartitionTable::builder().nodes([NodeId(1), NodeId(2)]).build()?;
    /// assert_eq!(PartitionTable::from_bytes(&t.to_bytes())?, t);
    /// # Ok::<(), url_dedup_partition::Error>(())
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        Self::read_from(bytes)
    }
}
