//! Who is who: the networks, their centers and hosts, and the Redis each one owns.

use std::collections::BTreeSet;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};
use url_dedup_redis::Namespace;

use crate::error::{Error, Result};

/// Most networks in one system: the network's index fills the low bits of every frame
/// `number` (see [`FrameNumber`](crate::FrameNumber)).
pub const MAX_NETWORKS: usize = 1 << crate::number::NETWORK_BITS;

/// One node: its address (the frame's `IP`) and the URL of the Redis it owns.
///
/// # Examples
///
/// ```
/// use url_dedup_two_tier::Node;
///
/// let n = Node::new("10.1.0.1".parse()?, "redis://10.1.0.1:6379/");
/// assert_eq!(n.ip.to_string(), "10.1.0.1");
/// # Ok::<(), std::net::AddrParseError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Node {
    /// The node's address: its identity in frames.
    pub ip: IpAddr,
    /// Its own Redis, `redis://host:port/db`.
    pub redis: String,
}

impl Node {
    /// A node at `ip` whose Redis is at `redis`.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_two_tier::Node;
    ///
    /// let n = Node::new("::1".parse()?, "redis://[::1]:6380/");
    /// assert!(n.redis.ends_with("6380/"));
    /// # Ok::<(), std::net::AddrParseError>(())
    /// ```
    pub fn new(ip: IpAddr, redis: impl Into<String>) -> Self {
        Self {
            ip,
            redis: redis.into(),
        }
    }
}

/// One network (the paper's LAN): a center and its local hosts.
///
/// # Examples
///
/// ```
/// use url_dedup_two_tier::{Network, Node};
///
/// let net = Network {
///     center: Node::new("10.1.0.254".parse()?, "redis://127.0.0.1:7000/"),
///     hosts: vec![Node::new("10.1.0.1".parse()?, "redis://127.0.0.1:7001/")],
/// };
/// assert_eq!(net.hosts.len(), 1);
/// # Ok::<(), std::net::AddrParseError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Network {
    /// The center host.
    pub center: Node,
    /// The local hosts.
    pub hosts: Vec<Node>,
}

/// The whole system: a namespace for every key and one or more networks.
///
/// Every node reads the same topology (a JSON file for the command-line tool) and finds its
/// own role by its address.
///
/// # Examples
///
/// ```
/// use url_dedup_two_tier::Topology;
///
/// let t: Topology = serde_json::from_str(r#"{
///   "namespace": "crawl",
///   "networks": [
///     {"center": {"ip": "10.1.0.254", "redis": "redis://127.0.0.1:7000/"},
///      "hosts": [{"ip": "10.1.0.1", "redis": "redis://127.0.0.1:7001/"}]},
///     {"center": {"ip": "10.2.0.254", "redis": "redis://127.0.0.1:7100/"},
///      "hosts": [{"ip": "10.2.0.1", "redis": "redis://127.0.0.1:7101/"}]}
///   ]
/// }"#)?;
/// t.validate()?;
/// assert_eq!(t.network_of("10.2.0.1".parse()?), Some(1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Topology {
    /// Prefix of every key (see [`Namespace`]), so the protocol can share a Redis with
    /// other data.
    pub namespace: String,
    /// The networks; a network's index here is its identity in frame numbers, so every node
    /// must list them in the same order.
    pub networks: Vec<Network>,
}

impl Topology {
    /// Checks that addresses are unique, every network has a host, the namespace is valid
    /// and there are at most [`MAX_NETWORKS`] networks.
    ///
    /// # Errors
    ///
    /// [`Error::Topology`] naming the problem.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_two_tier::{Network, Node, Topology};
    ///
    /// let n = Node::new("10.0.0.1".parse()?, "redis://127.0.0.1:1/");
    /// let t = Topology {
    ///     namespace: "c".into(),
    ///     networks: vec![Network { center: n.clone(), hosts: vec![n] }],
    /// };
    /// assert!(t.validate().is_err()); // the center and the host share an address
    /// # Ok::<(), std::net::AddrParseError>(())
    /// ```
    pub fn validate(&self) -> Result<()> {
        self.namespace()?;
        if self.networks.is_empty() {
            return Err(Error::Topology("no network".into()));
        }
        if self.networks.len() > MAX_NETWORKS {
            return Err(Error::Topology(format!(
                "{} networks, at most {MAX_NETWORKS} are supported",
                self.networks.len()
            )));
        }
        let mut seen = BTreeSet::new();
        for (i, net) in self.networks.iter().enumerate() {
            if net.hosts.is_empty() {
                return Err(Error::Topology(format!("network {i} has no host")));
            }
            for node in std::iter::once(&net.center).chain(&net.hosts) {
                if !seen.insert(node.ip) {
                    return Err(Error::Topology(format!("{} appears twice", node.ip)));
                }
            }
        }
        Ok(())
    }

    /// The key namespace.
    ///
    /// # Errors
    ///
    /// [`Error::Redis`] with [`url_dedup_redis::Error::InvalidName`] for a bad name.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_two_tier::Topology;
    ///
    /// let t = Topology { namespace: "crawl".into(), networks: vec![] };
    /// assert_eq!(t.namespace()?.key("task_pool"), "{crawl}:task_pool");
    /// # Ok::<(), url_dedup_two_tier::Error>(())
    /// ```
    pub fn namespace(&self) -> Result<Namespace> {
        Ok(Namespace::new(&self.namespace)?)
    }

    /// Index of the network that `ip` (a center or a host) belongs to.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_two_tier::Topology;
    ///
    /// let t = Topology { namespace: "c".into(), networks: vec![] };
    /// assert_eq!(t.network_of("10.0.0.1".parse()?), None);
    /// # Ok::<(), std::net::AddrParseError>(())
    /// ```
    pub fn network_of(&self, ip: IpAddr) -> Option<usize> {
        self.networks
            .iter()
            .position(|n| n.center.ip == ip || n.hosts.iter().any(|h| h.ip == ip))
    }

    /// The node with address `ip`, if any.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_two_tier::Topology;
    ///
    /// let t = Topology { namespace: "c".into(), networks: vec![] };
    /// assert!(t.node("10.0.0.1".parse()?).is_none());
    /// # Ok::<(), std::net::AddrParseError>(())
    /// ```
    pub fn node(&self, ip: IpAddr) -> Option<&Node> {
        self.networks
            .iter()
            .flat_map(|n| std::iter::once(&n.center).chain(&n.hosts))
            .find(|n| n.ip == ip)
    }

    /// Whether `ip` is the center of some network.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_two_tier::Topology;
    ///
    /// let t = Topology { namespace: "c".into(), networks: vec![] };
    /// assert!(!t.is_center("10.0.0.1".parse()?));
    /// # Ok::<(), std::net::AddrParseError>(())
    /// ```
    pub fn is_center(&self, ip: IpAddr) -> bool {
        self.networks.iter().any(|n| n.center.ip == ip)
    }
}
