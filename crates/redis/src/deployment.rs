//! Where a store's keys live: one Redis server, or the masters of a Redis Cluster and which
//! of them serves each hash slot.
//!
//! A deployment is named by a URL, or by several comma-separated URLs (seeds) of one
//! cluster: `redis://10.0.0.1:7000/,redis://10.0.0.2:7000/`. A single URL names a cluster too
//! when the server says it is one (`INFO cluster`). Node connections copy the seeds'
//! settings (password, database, timeouts) with the node's own address.

use std::sync::RwLock;

use redis::{Client, ConnectionAddr, ConnectionInfo, IntoConnectionInfo, RedisError};

use crate::cluster::{SlotMap, key_slot};
use crate::error::{Error, Result};
use crate::link::{Backoff, Retry};

/// One server, or a cluster's slot map.
#[derive(Debug)]
pub(crate) struct Deployment {
    seeds: Vec<ConnectionInfo>,
    cluster: bool,
    slots: RwLock<SlotMap>,
}

impl Deployment {
    /// Reads `urls` (one, or comma-separated seeds of a cluster) and, for a cluster, its slot
    /// map, within the first-contact budget of `backoff`.
    pub(crate) fn open(urls: &str, backoff: &Backoff) -> Result<Self> {
        let seeds = parse_seeds(urls)?;
        let first = address(&seeds[0]);
        let single = Self {
            cluster: false,
            slots: RwLock::new(SlotMap::single(first)),
            seeds,
        };
        let mut retry = Retry::first_contact(backoff);
        loop {
            match single.discover(backoff) {
                Ok(Some(map)) => {
                    return Ok(Self {
                        cluster: true,
                        slots: RwLock::new(map),
                        seeds: single.seeds,
                    });
                }
                Ok(None) if single.seeds.len() == 1 => return Ok(single),
                Ok(None) => {
                    return Err(Error::Redis {
                        operation: "open cluster",
                        source: RedisError::from((
                            redis::ErrorKind::Client,
                            "several URLs name a cluster, but the server is not one",
                        )),
                    });
                }
                Err(e) => std::thread::sleep(retry.failed("open", e)?),
            }
        }
    }

    /// The cluster's slot map from the first seed or node that answers, or `None` when the
    /// server is not a cluster.
    fn discover(&self, backoff: &Backoff) -> redis::RedisResult<Option<SlotMap>> {
        let known: Vec<String> = self.read().nodes.clone();
        let mut last = None;
        for info in self
            .seeds
            .iter()
            .cloned()
            .chain(known.iter().filter_map(|node| self.info_for(node).ok()))
        {
            let attempt = (|| -> redis::RedisResult<Option<SlotMap>> {
                let client = Client::open(info)?;
                let mut conn = client.get_connection_with_timeout(backoff.connect_timeout)?;
                conn.set_read_timeout(Some(backoff.response_timeout))?;
                let cluster: String = redis::cmd("INFO").arg("cluster").query(&mut conn)?;
                if !cluster.contains("cluster_enabled:1") {
                    return Ok(None);
                }
                let reply: redis::Value = redis::cmd("CLUSTER").arg("SLOTS").query(&mut conn)?;
                SlotMap::from_cluster_slots(&reply)
                    .map(Some)
                    .ok_or_else(|| {
                        RedisError::from((
                            redis::ErrorKind::Parse,
                            "CLUSTER SLOTS answered no slot map",
                        ))
                    })
            })();
            match attempt {
                Ok(found) => return Ok(found),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| {
            RedisError::from((redis::ErrorKind::Client, "no seed to ask for the slot map"))
        }))
    }

    /// Reads the slot map again (after a `MOVED` that named an unknown node, or a failover).
    pub(crate) fn refresh(&self, backoff: &Backoff) -> redis::RedisResult<()> {
        if !self.cluster {
            return Ok(());
        }
        if let Some(map) = self.discover(backoff)? {
            // Node indexes stay valid: known nodes keep theirs, new ones are appended.
            let mut slots = self.write();
            let mut merged = slots.clone();
            for slot in 0..crate::cluster::SLOTS {
                if let Some(node) = map.node(slot) {
                    merged.moved(slot, &map.nodes[node]);
                }
            }
            *slots = merged;
        }
        Ok(())
    }

    /// Whether this is a cluster.
    pub(crate) fn is_cluster(&self) -> bool {
        self.cluster
    }

    /// Whether node `index` serves a slot in the current map.
    pub(crate) fn serves_any(&self, index: usize) -> bool {
        !self.cluster || self.read().serves_any(index)
    }

    /// The node serving `key`'s slot.
    pub(crate) fn node_of(&self, key: &[u8]) -> usize {
        self.read().node(key_slot(key)).unwrap_or(0)
    }

    /// Notes a `MOVED` redirection; returns the node's index.
    pub(crate) fn moved(&self, slot: u16, node: &str) -> usize {
        self.write().moved(slot, node)
    }

    /// The index of `node` (`host:port`), added if new.
    pub(crate) fn index_of(&self, node: &str) -> usize {
        self.write().index_of(node)
    }

    /// A client for node `index`.
    pub(crate) fn client(&self, index: usize) -> Result<Client> {
        let node = self.read().nodes.get(index).cloned().unwrap_or_default();
        let info = self.info_for(&node).map_err(|source| Error::Redis {
            operation: "node address",
            source,
        })?;
        Client::open(info).map_err(|source| Error::Redis {
            operation: "open client",
            source,
        })
    }

    /// The seeds' settings with `node`'s address.
    fn info_for(&self, node: &str) -> redis::RedisResult<ConnectionInfo> {
        let (host, port) = node
            .rsplit_once(':')
            .and_then(|(h, p)| Some((h.to_owned(), p.parse::<u16>().ok()?)))
            .ok_or_else(|| RedisError::from((redis::ErrorKind::Parse, "bad node address")))?;
        let seed = self.seeds[0].clone();
        let addr = match seed.addr() {
            ConnectionAddr::Tcp(..) => ConnectionAddr::Tcp(host, port),
            other => other.clone(),
        };
        Ok(seed.set_addr(addr))
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, SlotMap> {
        self.slots
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, SlotMap> {
        self.slots
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The seeds of `urls`, comma-separated, with Nagle's algorithm off: a pipeline's last
/// partial segment must not wait for the previous segment's (delayed) acknowledgement, which
/// otherwise adds up to 40 ms to a batch.
pub(crate) fn parse_seeds(urls: &str) -> Result<Vec<ConnectionInfo>> {
    use redis::io::tcp::TcpSettings;
    let seeds = urls
        .split(',')
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .map(|url| {
            url.into_connection_info()
                .map(|info| info.set_tcp_settings(TcpSettings::default().set_nodelay(true)))
                .map_err(|source| Error::Redis {
                    operation: "parse url",
                    source,
                })
        })
        .collect::<Result<Vec<_>>>()?;
    if seeds.is_empty() {
        return Err(Error::Redis {
            operation: "parse url",
            source: RedisError::from((redis::ErrorKind::Client, "no Redis URL given")),
        });
    }
    Ok(seeds)
}

/// `host:port` of a connection.
fn address(info: &ConnectionInfo) -> String {
    match info.addr() {
        ConnectionAddr::Tcp(host, port) => format!("{host}:{port}"),
        other => other.to_string(),
    }
}
