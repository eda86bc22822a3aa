//! Where keys live: one Redis server, or the masters of a Redis Cluster and which of them
//! serves each hash slot. The one slot map of a [`Link`](crate::Link), used by every command
//! it routes.
//!
//! A deployment is named by a URL, or by several comma-separated URLs (seeds) of one
//! cluster: `redis://10.0.0.1:7000/,redis://10.0.0.2:7000/`. A single URL names a cluster too
//! when the server says it is one (`INFO cluster`). Node connections copy the seeds' settings
//! (password, database) with the node's own address.

use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, Ordering};

use redis::{ConnectionAddr, ConnectionInfo, IntoConnectionInfo, RedisError, RedisResult};

use crate::cluster::{Redirect, SlotMap, key_slot};
use crate::error::{Error, Result};

/// One server, or a cluster's slot map.
#[derive(Debug)]
pub(crate) struct Deployment {
    seeds: Vec<ConnectionInfo>,
    cluster: AtomicBool,
    slots: RwLock<SlotMap>,
    /// A failure may have moved slots: the next attempt reads the map again.
    stale: AtomicBool,
}

impl Deployment {
    /// The deployment of `urls`, taken for one server until [`discovered`](Self::discovered)
    /// says otherwise.
    pub(crate) fn new(urls: &str) -> Result<Self> {
        let seeds = parse_seeds(urls)?;
        if let Some(tls) = seeds
            .iter()
            .find(|s| !matches!(s.addr(), ConnectionAddr::Tcp(..) | ConnectionAddr::Unix(_)))
        {
            return Err(Error::Redis {
                operation: "parse url",
                source: RedisError::from((
                    redis::ErrorKind::InvalidClientConfig,
                    "url-dedup-redis speaks plain TCP or Unix sockets (no TLS)",
                    tls.addr().to_string(),
                )),
            });
        }
        let first = address(&seeds[0]);
        Ok(Self {
            seeds,
            cluster: AtomicBool::new(false),
            slots: RwLock::new(SlotMap::single(first)),
            stale: AtomicBool::new(false),
        })
    }

    /// The same deployment with a copy of the slot map, for a link of its own.
    pub(crate) fn copy(&self) -> Self {
        Self {
            seeds: self.seeds.clone(),
            cluster: AtomicBool::new(self.is_cluster()),
            slots: RwLock::new(self.read().clone()),
            stale: AtomicBool::new(false),
        }
    }

    /// A name for the deployment, the same for every URL that names the same seeds.
    pub(crate) fn name(&self) -> String {
        let mut seeds: Vec<String> = self
            .seeds
            .iter()
            .map(|s| format!("{}/{}", s.addr(), s.redis_settings().db()))
            .collect();
        seeds.sort();
        seeds.join(",")
    }

    /// How many seeds were given: more than one names a cluster.
    pub(crate) fn seed_count(&self) -> usize {
        self.seeds.len()
    }

    /// The first seed's settings, for clients of the `redis` crate.
    pub(crate) fn first_seed(&self) -> &ConnectionInfo {
        &self.seeds[0]
    }

    /// The address of seed `index`.
    pub(crate) fn seed(&self, index: usize) -> String {
        address(&self.seeds[index])
    }

    /// What discovery found: a cluster and its slot map, or one server.
    pub(crate) fn discovered(&self, map: Option<SlotMap>) {
        if let Some(map) = map {
            *self.write() = map;
            self.cluster.store(true, Ordering::Relaxed);
        }
    }

    /// Whether this is a cluster.
    pub(crate) fn is_cluster(&self) -> bool {
        self.cluster.load(Ordering::Relaxed)
    }

    /// Notes that slots may have moved.
    pub(crate) fn mark_stale(&self) {
        if self.is_cluster() {
            self.stale.store(true, Ordering::Relaxed);
        }
    }

    /// Whether the map should be read again; the first caller to ask takes the job.
    pub(crate) fn take_stale(&self) -> bool {
        self.is_cluster() && self.stale.swap(false, Ordering::Relaxed)
    }

    /// Merges a map read from the cluster: known nodes keep their indexes, new ones are
    /// appended.
    pub(crate) fn refreshed(&self, map: &SlotMap) {
        let mut slots = self.write();
        let mut merged = slots.clone();
        for slot in 0..crate::cluster::SLOTS {
            if let Some(node) = map.node(slot) {
                merged.moved(slot, &map.nodes[node]);
            }
        }
        *slots = merged;
    }

    /// The address of the node serving `key`'s slot.
    pub(crate) fn node_of(&self, key: &[u8]) -> String {
        let slots = self.read();
        let index = slots.node(key_slot(key)).unwrap_or(0);
        slots.nodes.get(index).cloned().unwrap_or_default()
    }

    /// A node to send a command without a key to: the master of slot 0 (a node that served
    /// slots once may have died since).
    pub(crate) fn any_node(&self) -> String {
        let slots = self.read();
        let index = slots.node(0).unwrap_or(0);
        slots.nodes.get(index).cloned().unwrap_or_default()
    }

    /// Every node the map knows, the seeds first.
    pub(crate) fn known_nodes(&self) -> Vec<String> {
        let mut nodes: Vec<String> = (0..self.seeds.len()).map(|i| self.seed(i)).collect();
        for node in &self.read().nodes {
            if !nodes.contains(node) {
                nodes.push(node.clone());
            }
        }
        nodes
    }

    /// Follows a redirection: a `MOVED` updates the map. Returns the node to ask.
    pub(crate) fn redirected(&self, redirect: &Redirect) -> String {
        match redirect {
            Redirect::Moved { slot, node } => {
                self.write().moved(*slot, node);
                node.clone()
            }
            Redirect::Ask { node, .. } => node.clone(),
        }
    }

    /// The connection settings of `node` (`host:port`): the seeds' settings with its address.
    /// On a single server, the URL's own.
    pub(crate) fn info_for(&self, node: &str) -> RedisResult<ConnectionInfo> {
        if let Some(seed) = self
            .seeds
            .iter()
            .find(|s| !self.is_cluster() && address(s) == node)
        {
            return Ok(seed.clone());
        }
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

/// The seeds of `urls`, comma-separated.
pub(crate) fn parse_seeds(urls: &str) -> Result<Vec<ConnectionInfo>> {
    let seeds = urls
        .split(',')
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .map(|url| {
            url.into_connection_info().map_err(|source| Error::Redis {
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

/// `host:port` of a connection (a Unix socket's path).
fn address(info: &ConnectionInfo) -> String {
    match info.addr() {
        ConnectionAddr::Tcp(host, port) => format!("{host}:{port}"),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_name_one_deployment_whatever_their_order() {
        let a = Deployment::new("redis://127.0.0.1:7000/,redis://127.0.0.1:7001/").unwrap();
        let b = Deployment::new(" redis://127.0.0.1:7001/ , redis://127.0.0.1:7000").unwrap();
        assert_eq!(a.name(), b.name());
        assert_ne!(
            a.name(),
            Deployment::new("redis://127.0.0.1:7000/1").unwrap().name()
        );
        assert_eq!(a.seed_count(), 2);
    }

    #[test]
    fn bad_urls_are_errors() {
        assert!(Deployment::new("").is_err());
        assert!(Deployment::new("not a url").is_err());
    }
}
