//! Crawl tasks as the frontier stores them: `id \n host \n url`, followed by `\n data` when
//! the task carries data of the caller's (a crawler's depth and hop count, say).

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
    data: String,
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
        Ok(Self {
            host,
            url,
            data: String::new(),
        })
    }

    /// The task with `data` of the caller's, handed back by [`ClaimedTask::data`]: what a
    /// crawler knows about the URL besides the URL (its depth, the redirects that led to it).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidTask`] when `data` contains a line break.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_redis::NewTask;
    ///
    /// let t = NewTask::from_url("https://example.com/a")?.with_data("depth=3")?;
    /// assert_eq!(t.data(), "depth=3");
    /// assert!(NewTask::from_url("https://example.com/a")?.with_data("a\nb").is_err());
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// ```
    pub fn with_data(mut self, data: impl Into<String>) -> Result<Self> {
        let data = data.into();
        if data.contains(['\n', '\r']) {
            return Err(Error::InvalidTask("line breaks are not allowed"));
        }
        self.data = data;
        Ok(self)
    }

    /// The caller's data (empty unless set with [`with_data`](Self::with_data)).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_redis::NewTask;
    /// assert_eq!(NewTask::new("h", "u")?.data(), "");
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// ```
    pub fn data(&self) -> &str {
        &self.data
    }

    /// What the frontier stores after the host: the URL, then the data if any.
    pub(crate) fn body(&self) -> std::borrow::Cow<'_, str> {
        if self.data.is_empty() {
            self.url.as_str().into()
        } else {
            format!("{}\n{}", self.url, self.data).into()
        }
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
    pub(crate) data: String,
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

    /// The data the task was pushed with ([`NewTask::with_data`]); empty if none.
    ///
    /// # Examples
    ///
    /// ```
    /// # use url_dedup_redis::testing::RedisServer;
    /// # let Some(server) = RedisServer::start_or_skip("ClaimedTask data example") else { return };
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use url_dedup_redis::{Claim, Frontier, Link, Membership, Namespace, NewTask, WorkerId};
    /// let link = Link::connect(&server.url()).await?;
    /// let ns = Namespace::new("doc")?;
    /// let frontier = Frontier::new(link.clone(), ns.clone());
    /// let me = WorkerId::new("w1")?;
    /// Membership::new(link, ns).join(&me).await?;
    /// let task = NewTask::from_url("https://example.com/a")?.with_data("2 0")?;
    /// frontier.push(&[task]).await?;
    /// let Claim::Task(task) = frontier.claim(&me).await? else { panic!("queued a task") };
    /// assert_eq!((task.url(), task.data()), ("https://example.com/a", "2 0"));
    /// # Ok::<(), url_dedup_redis::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn data(&self) -> &str {
        &self.data
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
        let mut parts = text.splitn(4, '\n');
        let (Some(id), Some(host), Some(url)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(corrupt("task is not `id\\nhost\\nurl`"));
        };
        let data = parts.next().unwrap_or_default();
        let id = id.parse().map_err(|_| corrupt("task id is not a number"))?;
        Ok(Self {
            id,
            host: host.to_owned(),
            url: url.to_owned(),
            data: data.to_owned(),
            worker,
            token,
        })
    }
}
