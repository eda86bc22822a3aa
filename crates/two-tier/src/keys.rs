//! Key names of the paper's pools and of the mailboxes that carry frames.

use std::net::IpAddr;

use url_dedup_redis::Namespace;

/// Names of every key the protocol uses in one node's Redis, under a [`Namespace`].
///
/// The paper's pools keep their names: a host's Redis has `finish_URL` (a set of 16-byte
/// keyed digests of crawled URLs), `task_pool` (a list of URLs to crawl) and `URL_pool` (a set
/// of newly found URLs); a center's has `task_URL` (a list), `local_reduce_pool` and
/// `dist_reduce_pool` (hashes from frame number to frame JSON). Frames travel through
/// `inbox:<sender IP>` lists in the receiver's Redis.
///
/// # Examples
///
/// ```
/// use url_dedup_redis::Namespace;
/// use url_dedup_two_tier::Keys;
///
/// let keys = Keys::new(Namespace::new("crawl")?);
/// assert_eq!(keys.finish_url(), "{crawl}:finish_URL");
/// assert_eq!(keys.inbox("10.1.0.1".parse()?), "{crawl}:inbox:10.1.0.1");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Keys {
    ns: Namespace,
}

macro_rules! pool {
    ($($(#[$doc:meta])* $fn:ident => $name:literal),* $(,)?) => {
        impl Keys {
            $(
                $(#[$doc])*
                ///
                /// # Examples
                ///
                /// ```
                /// use url_dedup_two_tier::Keys;
                /// let keys = Keys::new(url_dedup_redis::Namespace::new("c")?);
                #[doc = concat!("assert_eq!(keys.", stringify!($fn), "(), \"{c}:", $name, "\");")]
                /// # Ok::<(), url_dedup_redis::Error>(())
                /// ```
                pub fn $fn(&self) -> String {
                    self.ns.key($name)
                }
            )*
        }
    };
}

pool! {
    /// Host: set of digests of URLs this host crawled.
    finish_url => "finish_URL",
    /// Host: list of URLs this host will crawl.
    task_pool => "task_pool",
    /// Host: set of newly found URLs awaiting local dedup.
    url_pool => "URL_pool",
    /// Center: list of URLs that passed dedup, to hand out to the hosts' task pools.
    task_url => "task_URL",
    /// Center: hash of frames of its own network awaiting its hosts' answers.
    local_reduce_pool => "local_reduce_pool",
    /// Center: hash of frames awaiting other networks' answers (its own network's) or its
    /// hosts' answers (another network's).
    dist_reduce_pool => "dist_reduce_pool",
}

impl Keys {
    /// The keys of namespace `ns`.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_two_tier::Keys;
    /// let keys = Keys::new(url_dedup_redis::Namespace::new("c")?);
    /// assert_eq!(keys.url_pool(), "{c}:URL_pool");
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// ```
    pub fn new(ns: Namespace) -> Self {
        Self { ns }
    }

    /// The list in the receiver's Redis through which `sender` delivers frames.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_two_tier::Keys;
    /// let keys = Keys::new(url_dedup_redis::Namespace::new("c")?);
    /// assert_eq!(keys.inbox("::1".parse()?), "{c}:inbox:::1");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn inbox(&self, sender: IpAddr) -> String {
        self.ns.key(&format!("inbox:{sender}"))
    }

    /// A list holding one element while an inbox may have frames; receivers block on it.
    pub(crate) fn wake(&self) -> String {
        self.ns.key("wake")
    }

    /// The batch a host took from `URL_pool` and has not yet handed to its center.
    pub(crate) fn sending(&self) -> String {
        self.ns.key("URL_pool:sending")
    }

    /// Rung when URLs are added to `URL_pool`.
    pub(crate) fn pool_wake(&self) -> String {
        self.ns.key("URL_pool:wake")
    }

    /// The host's secret hash key for `finish_URL` digests.
    pub(crate) fn hash_key(&self) -> String {
        self.ns.key("finish_URL:key")
    }

    /// Marker that frame `number` from `origin` was handled here (expires after the settings'
    /// `seen_ttl`).
    pub(crate) fn seen(&self, origin: IpAddr, number: u64) -> String {
        self.ns.key(&format!("seen:{origin}:{number}"))
    }

    /// The center's frame-number counter (a [`url_dedup_redis::GlobalIds`]).
    pub(crate) fn namespace(&self) -> &Namespace {
        &self.ns
    }
}
