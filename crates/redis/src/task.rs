//! Crawl tasks as the frontier stores them: `id \n host \n url`.

use crate::error::{Error, Result};
use crate::namespace::WorkerId;

/// Longest host key accepted (DNS names are at most 253 bytes; a port adds up to 6).
///
/// # Examples
///
/// ```
/// use url_dedup_redis::{MAX_HOST_LEN, NewTask};
///
/// assert!(NewTask::new("h".repeat(MAX_HOST_LEN + 1), "https://x/").is_err());
/// ```
pub const MAX_HOST_LEN: usize = 260;

/// A task to enqueue: a URL and the host key that serializes it with the other URLs of its site.
///
/// # Examples
///
/// ```
/// use url_dedup_redis::NewTask;
///
/// let t = NewTask::from_url("https://Example.com:8443/a?b")?;
/// assert_eq!(t.host(), "example.com:8443");
/// assert_eq!(t.url(), "https://Example.com:8443/a?b");
/// # Ok::<(), url_dedup_redis::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewTask {
    host: String,
    url: String,
}

impl NewTask {
    /// A task for `url`, serialized under the host key `host`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidTask`] when either is empty, contains a line break, or the host is longer
    /// than [`MAX_HOST_LEN`].
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_redis::NewTask;
    ///
    /// assert!(NewTask::new("example.com", "https://example.com/").is_ok());
    /// assert!(NewTask::new("", "https://example.com/").is_err());
    /// ```
    pub fn new(host: impl Into<String>, url: impl Into<String>) -> Result<Self> {
        let (host, url) = (host.into(), url.into());
        if host.is_empty() {
            return Err(Error::InvalidTask("host is empty"));
        }
        if host.len() > MAX_HOST_LEN {
            return Err(Error::InvalidTask("host is too long"));
        }
        if url.is_empty() {
            return Err(Error::InvalidTask("url is empty"));
        }
        if host.contains(['\n', '\r']) || url.contains(['\n', '\r']) {
            return Err(Error::InvalidTask("line breaks are not allowed"));
        }
        Ok(Self { host, url })
    }

    /// A task whose host key is the URL's lower-cased host and explicit port.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidTask`] when the URL does not parse or has no host.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_redis::NewTask;
    ///
    /// assert_eq!(NewTask::from_url("http://a.example/x")?.host(), "a.example");
    /// assert!(NewTask::from_url("mailto:someone@example.com").is_err());
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// ```
    pub fn from_url(url: &str) -> Result<Self> {
        let parsed = url::Url::parse(url).map_err(|_| Error::InvalidTask("url does not parse"))?;
        let host = parsed
            .host_str()
            .ok_or(Error::InvalidTask("url has no host"))?;
        let host = match parsed.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        };
        Self::new(host, url)
    }

    /// The host key.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_redis::NewTask;
    /// assert_eq!(NewTask::new("h", "u")?.host(), "h");
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// ```
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The URL.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_redis::NewTask;
    /// assert_eq!(NewTask::new("h", "u")?.url(), "u");
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// ```
    pub fn url(&self) -> &str {
        &self.url
    }
}

/// A task leased to a worker by [`Frontier::claim`](crate::Frontier::claim). Finish it with
/// [`Frontier::ack`](crate::Frontier::ack) or [`Frontier::release`](crate::Frontier::release).
///
/// # Examples
///
/// ```
/// # use url_dedup_redis::testing::RedisServer;
/// # let Some(server) = RedisServer::start_or_skip("ClaimedTask example") else { return };
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use url_dedup_redis::{Claim, Frontier, Link, Membership, Namespace, NewTask, WorkerId};
///
/// let link = Link::connect(&server.url()).await?;
/// let ns = Namespace::new("doc")?;
/// let frontier = Frontier::new(link.clone(), ns.clone());
/// let me = WorkerId::new("w1")?;
/// Membership::new(link, ns).join(&me).await?;
/// frontier.push(&[NewTask::from_url("https://example.com/")?]).await?;
/// let Claim::Task(task) = frontier.claim(&me).await? else { panic!("queued a task") };
/// assert_eq!((task.id(), task.host(), task.url()), (1, "example.com", "https://example.com/"));
/// assert_eq!(task.worker(), &me);
/// # Ok::<(), url_dedup_redis::Error>(())
/// # }).unwrap();
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimedTask {
    pub(crate) id: u64,
    pub(crate) host: String,
    pub(crate) url: String,
    pub(crate) worker: WorkerId,
    pub(crate) token: u64,
}

impl ClaimedTask {
    /// The global id the frontier gave the task when it was pushed (from one `INCR` counter).
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("ClaimedTask accessor example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{Claim, Frontier, Link, Membership, Namespace, NewTask, WorkerId};
    /// let link = Link::connect(&server.url()).await?;
    /// let ns = Namespace::new("doc")?;
    /// let frontier = Frontier::new(link.clone(), ns.clone());
    /// let me = WorkerId::new("w1")?;
    /// Membership::new(link, ns).join(&me).await?;
    /// frontier.push(&[NewTask::from_url("https://example.com/a")?]).await?;
    /// let Claim::Task(task) = frontier.claim(&me).await? else { panic!("queued a task") };
    /// assert_eq!(task.id(), 1);
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The host key; no other worker holds a task of this host until this one is finished.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("ClaimedTask accessor example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{Claim, Frontier, Link, Membership, Namespace, NewTask, WorkerId};
    /// let link = Link::connect(&server.url()).await?;
    /// let ns = Namespace::new("doc")?;
    /// let frontier = Frontier::new(link.clone(), ns.clone());
    /// let me = WorkerId::new("w1")?;
    /// Membership::new(link, ns).join(&me).await?;
    /// frontier.push(&[NewTask::from_url("https://example.com/a")?]).await?;
    /// let Claim::Task(task) = frontier.claim(&me).await? else { panic!("queued a task") };
    /// assert_eq!(task.host(), "example.com");
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The URL to crawl.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("ClaimedTask accessor example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{Claim, Frontier, Link, Membership, Namespace, NewTask, WorkerId};
    /// let link = Link::connect(&server.url()).await?;
    /// let ns = Namespace::new("doc")?;
    /// let frontier = Frontier::new(link.clone(), ns.clone());
    /// let me = WorkerId::new("w1")?;
    /// Membership::new(link, ns).join(&me).await?;
    /// frontier.push(&[NewTask::from_url("https://example.com/a")?]).await?;
    /// let Claim::Task(task) = frontier.claim(&me).await? else { panic!("queued a task") };
    /// assert_eq!(task.url(), "https://example.com/a");
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The worker holding the lease.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("ClaimedTask accessor example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{Claim, Frontier, Link, Membership, Namespace, NewTask, WorkerId};
    /// let link = Link::connect(&server.url()).await?;
    /// let ns = Namespace::new("doc")?;
    /// let frontier = Frontier::new(link.clone(), ns.clone());
    /// let me = WorkerId::new("w1")?;
    /// Membership::new(link, ns).join(&me).await?;
    /// frontier.push(&[NewTask::from_url("https://example.com/a")?]).await?;
    /// let Claim::Task(task) = frontier.claim(&me).await? else { panic!("queued a task") };
    /// assert_eq!(task.worker().as_str(), "w1");
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn worker(&self) -> &WorkerId {
        &self.worker
    }

    pub(crate) fn decode(raw: &[u8], worker: WorkerId, token: u64, key: &str) -> Result<Self> {
        let corrupt = |detail: &str| Error::Corrupt {
            key: key.to_owned(),
            detail: detail.to_owned(),
        };
        let text = std::str::from_utf8(raw).map_err(|_| corrupt("task is not UTF-8"))?;
        let mut parts = text.splitn(3, '\n');
        let (Some(id), Some(host), Some(url)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(corrupt("task is not `id\\nhost\\nurl`"));
        };
        let id = id.parse().map_err(|_| corrupt("task id is not a number"))?;
        Ok(Self {
            id,
            host: host.to_owned(),
            url: url.to_owned(),
            worker,
            token,
        })
    }
}
