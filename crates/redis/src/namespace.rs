//! Key names: every key of one crawl lives under one namespace.

use std::fmt;

use crate::error::{Error, Result};

/// The key prefix shared by every key of one crawl, in a Redis Cluster hash tag.
///
/// `Namespace::new("crawl")` yields keys like `{crawl}:ready`. The braces make Redis Cluster put
/// every key of the namespace in one slot, which the frontier's scripts need: they touch a
/// host's queue, the ready set and a worker's processing hash in one atomic step.
///
/// # Examples
///
/// ```
/// use url_dedup_redis::Namespace;
///
/// let ns = Namespace::new("crawl")?;
/// assert_eq!(ns.key("ready"), "{crawl}:ready");
/// assert!(Namespace::new("a{b").is_err());
/// # Ok::<(), url_dedup_redis::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Namespace {
    prefix: String,
}

impl Namespace {
    /// A namespace named `name`: 1 to 64 bytes, no braces, whitespace or control characters.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidName`] for an empty, long or ill-formed name.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_redis::Namespace;
    ///
    /// assert!(Namespace::new("news-2026").is_ok());
    /// assert!(Namespace::new("").is_err());
    /// ```
    pub fn new(name: &str) -> Result<Self> {
        check_name(name, 64)?;
        if name.contains(['{', '}', ':']) {
            return Err(Error::InvalidName {
                name: name.to_owned(),
                reason: "braces and colons are reserved for key structure",
            });
        }
        Ok(Self {
            prefix: format!("{{{name}}}:"),
        })
    }

    /// The full name of key `suffix` in this namespace.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_redis::Namespace;
    ///
    /// assert_eq!(Namespace::new("c")?.key("ids"), "{c}:ids");
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// ```
    pub fn key(&self, suffix: &str) -> String {
        format!("{}{suffix}", self.prefix)
    }

    pub(crate) fn member(&self, worker: &WorkerId) -> String {
        self.key(&format!("member:{worker}"))
    }
}

/// The name of a worker (spider, crawler process): 1 to 128 bytes, no whitespace or controls.
///
/// # Examples
///
/// ```
/// use url_dedup_redis::WorkerId;
///
/// let w = WorkerId::new("spider-1")?;
/// assert_eq!(w.as_str(), "spider-1");
/// assert!(WorkerId::new("has space").is_err());
/// assert_ne!(WorkerId::random("spider"), WorkerId::random("spider"));
/// # Ok::<(), url_dedup_redis::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WorkerId(String);

impl WorkerId {
    /// A worker id from a name.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidName`] for an empty, long or ill-formed name.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_redis::WorkerId;
    ///
    /// assert!(WorkerId::new("host-a/3").is_ok());
    /// ```
    pub fn new(name: &str) -> Result<Self> {
        check_name(name, 128)?;
        Ok(Self(name.to_owned()))
    }

    /// `prefix-` followed by 16 random hex digits: unique enough for a process's lifetime.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_redis::WorkerId;
    ///
    /// assert!(WorkerId::random("spider").as_str().starts_with("spider-"));
    /// ```
    pub fn random(prefix: &str) -> Self {
        let prefix: String = prefix
            .chars()
            .filter(|c| !c.is_whitespace() && !c.is_control())
            .take(100)
            .collect();
        Self(format!("{prefix}-{:016x}", random_u64()))
    }

    /// The name.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_redis::WorkerId;
    ///
    /// assert_eq!(WorkerId::new("w")?.as_str(), "w");
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// ```
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for WorkerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn check_name(name: &str, max: usize) -> Result<()> {
    let reason = if name.is_empty() {
        "empty"
    } else if name.len() > max {
        "too long"
    } else if name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        "contains whitespace or control characters"
    } else {
        return Ok(());
    };
    Err(Error::InvalidName {
        name: name.chars().take(max + 8).collect(),
        reason,
    })
}

/// A random 64-bit value from the OS; tokens only need to differ, so a failing OS source falls
/// back to the standard library's randomly seeded hasher.
pub(crate) fn random_u64() -> u64 {
    u64::from_le_bytes(
        url_dedup_bloom::HashKey::random().to_bytes()[..8]
            .try_into()
            .unwrap_or([0; 8]),
    )
}
