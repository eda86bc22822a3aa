//! One connection to one Redis node, shared by every async caller: requests are written in
//! the order they come and their replies handed back in that order, so many calls ride one
//! socket at once (multiplexing), as Redis answers a connection's commands in order.
//!
//! A task on the I/O thread ([`crate::io`]) owns the socket. It connects when a request finds
//! no connection, fails every request in flight when the connection breaks or a reply is
//! overdue, and leaves retrying to the caller ([`crate::retry`]). Each connection it opens
//! gets a process-wide number, its *generation*: a caller that must know that two requests
//! went over the same connection (the segment store, whose cache of known bits is only valid
//! for the server it was learned from) names the generation, and a request for a connection
//! that has since been replaced fails instead of going to the new one. Blocking callers use
//! the node's pool of connections of their own instead ([`crate::blocking`]).

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use redis::{ConnectionAddr, ConnectionInfo, RedisError, RedisResult};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::health::Health;
use crate::resp::Packed;
use crate::retry::Backoff;
use crate::wire::frame;

/// Generations handed out so far, over every connection of the process.
static GENERATIONS: AtomicU64 = AtomicU64::new(0);

/// A new connection's generation.
pub(crate) fn next_generation() -> u64 {
    GENERATIONS.fetch_add(1, Ordering::Relaxed) + 1
}

/// A handle to one node's connection task; clones share the connection.
#[derive(Clone, Debug)]
pub(crate) struct NodeConn {
    requests: mpsc::UnboundedSender<Request>,
    /// The generation of the open connection, 0 while there is none.
    current: Arc<AtomicU64>,
    /// Connections of the same node for blocking callers (see [`crate::blocking`]).
    pub(crate) pool: Arc<crate::blocking::Pool>,
}

/// What a request got back: the raw bytes of its replies, and the connection they came on.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) bytes: Vec<u8>,
    pub(crate) generation: u64,
}

struct Request {
    bytes: Vec<u8>,
    replies: usize,
    /// Added to the response timeout: a blocking command's own timeout.
    extra: Option<Duration>,
    /// Send only on this connection.
    generation: Option<u64>,
    answer: oneshot::Sender<io::Result<Answer>>,
}

/// Where a connection goes and how it behaves.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    pub(crate) info: ConnectionInfo,
    pub(crate) backoff: Backoff,
    pub(crate) health: Arc<Health>,
}

impl NodeConn {
    /// A connection to `target`, opened on its first request.
    pub(crate) fn new(target: Target) -> io::Result<Self> {
        let (requests, queue) = mpsc::unbounded_channel();
        let current = Arc::new(AtomicU64::new(0));
        let pool = Arc::new(crate::blocking::Pool::new(target.clone()));
        crate::io::spawn(drive(target, queue, current.clone()))?;
        Ok(Self {
            requests,
            current,
            pool,
        })
    }

    /// Sends `bytes`, `replies` commands, and waits up to `limit` for their replies. `extra`
    /// lengthens both waits for a blocking command; `generation`
    /// pins the request to one connection (see the module documentation).
    pub(crate) async fn request(
        &self,
        bytes: Vec<u8>,
        replies: usize,
        extra: Option<Duration>,
        generation: Option<u64>,
        limit: Duration,
    ) -> RedisResult<Answer> {
        let (answer, answered) = oneshot::channel();
        let request = Request {
            bytes,
            replies,
            extra,
            generation,
            answer,
        };
        self.requests
            .send(request)
            .map_err(|_| gone("the connection task has ended"))?;
        let limit = limit.saturating_add(extra.unwrap_or(Duration::ZERO));
        match tokio::time::timeout(limit, answered).await {
            Ok(Ok(answer)) => answer.map_err(failure),
            Ok(Err(_)) => Err(gone("the connection task dropped the request").into()),
            // The request stays queued on the connection and its reply, if it comes, is
            // dropped: the order of the others is kept.
            Err(_) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("no reply within {limit:?}"),
            )
            .into()),
        }
    }

    /// Connects if there is no connection and returns its generation.
    pub(crate) async fn ready(&self, limit: Duration) -> RedisResult<u64> {
        match self.current.load(Ordering::Relaxed) {
            0 => Ok(self
                .request(Vec::new(), 0, None, None, limit)
                .await?
                .generation),
            generation => Ok(generation),
        }
    }
}

/// A request's I/O error as the layer's error. Credentials or a database the server refuses
/// are no outage: no retry will change them.
pub(crate) fn failure(e: io::Error) -> RedisError {
    if e.kind() == io::ErrorKind::PermissionDenied {
        RedisError::from((
            redis::ErrorKind::AuthenticationFailed,
            "redis refused AUTH or SELECT",
            e.to_string(),
        ))
    } else {
        e.into()
    }
}

pub(crate) fn gone(what: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionAborted, what)
}

/// The connection task: connects on demand, serves requests until the connection breaks, and
/// ends when every handle is gone.
async fn drive(
    target: Target,
    mut queue: mpsc::UnboundedReceiver<Request>,
    current: Arc<AtomicU64>,
) {
    let mut next = None;
    loop {
        let request = match next.take() {
            Some(request) => request,
            None => match queue.recv().await {
                Some(request) => request,
                None => return,
            },
        };
        if request.generation.is_some() {
            // Planned for a connection that is gone.
            let _ = request
                .answer
                .send(Err(gone("the connection was replaced")));
            continue;
        }
        let stream = match connect(&target).await {
            Ok(stream) => stream,
            Err(e) => {
                // Requests that came meanwhile would meet the same server: they fail with it
                // rather than wait for a connect timeout each.
                let _ = request.answer.send(Err(copy(&e)));
                while let Ok(queued) = queue.try_recv() {
                    let _ = queued.answer.send(Err(copy(&e)));
                }
                continue;
            }
        };
        let generation = next_generation();
        current.store(generation, Ordering::Relaxed);
        let ended = serve(&target, stream, generation, request, &mut queue).await;
        current.store(0, Ordering::Relaxed);
        if ended {
            return;
        }
    }
}

fn copy(e: &io::Error) -> io::Error {
    io::Error::new(e.kind(), e.to_string())
}

/// A request written and waiting for its replies.
struct Pending {
    replies: usize,
    answer: oneshot::Sender<io::Result<Answer>>,
    deadline: Option<Instant>,
}

/// Serves requests on an open connection, `first` first. Returns `true` once every handle is
/// gone and nothing is pending, `false` when the connection broke (every pending request was
/// failed).
async fn serve(
    target: &Target,
    mut stream: Stream,
    generation: u64,
    first: Request,
    queue: &mut mpsc::UnboundedReceiver<Request>,
) -> bool {
    let mut pending: VecDeque<Pending> = VecDeque::new();
    // Replies of the front request framed so far (`framed` bytes), then bytes not yet framed.
    let mut buf: Vec<u8> = Vec::with_capacity(64 << 10);
    let mut framed = 0;
    let mut next = Some(first);
    let mut open = true;
    // One timer for the front request's reply, moved rather than made anew on every turn.
    let overdue = tokio::time::sleep_until(far_future());
    tokio::pin!(overdue);
    let mut armed = None;
    let failure = loop {
        if let Some(request) = next.take() {
            if request.generation.is_some_and(|g| g != generation) {
                let _ = request
                    .answer
                    .send(Err(gone("the connection was replaced")));
                continue;
            }
            if request.replies == 0 && request.bytes.is_empty() {
                let _ = request.answer.send(Ok(Answer {
                    bytes: Vec::new(),
                    generation,
                }));
                continue;
            }
            let timeout = request
                .extra
                .map(|extra| target.backoff.response_timeout.checked_add(extra));
            let deadline = match timeout {
                None => Some(target.backoff.response_timeout),
                Some(Some(t)) => Some(t),
                // A command that may block forever is bounded by its caller alone.
                Some(None) => None,
            }
            .and_then(|t| Instant::now().checked_add(t));
            pending.push_back(Pending {
                replies: request.replies,
                answer: request.answer,
                deadline,
            });
            if let Err(e) = stream.write_all(&request.bytes).await {
                break e;
            }
            continue;
        }
        if !open && pending.is_empty() {
            return true;
        }
        let deadline = pending.front().and_then(|p| p.deadline);
        if deadline != armed {
            overdue.as_mut().reset(deadline.unwrap_or_else(far_future));
            armed = deadline;
        }
        if buf.capacity() - buf.len() < 16 << 10 {
            buf.reserve(64 << 10);
        }
        tokio::select! {
            request = queue.recv(), if open => match request {
                Some(request) => next = Some(request),
                None => open = false,
            },
            read = stream.read_buf(&mut buf) => match read {
                Ok(0) => break io::Error::new(io::ErrorKind::UnexpectedEof, "redis closed the connection"),
                Ok(_) => {
                    if let Err(e) = dispatch(&mut buf, &mut framed, &mut pending, generation, &target.health) {
                        break e;
                    }
                }
                Err(e) => break e,
            },
            () = &mut overdue, if armed.is_some() => {
                break io::Error::new(io::ErrorKind::TimedOut, "redis did not answer in time");
            }
        }
    };
    for request in pending {
        let _ = request.answer.send(Err(copy(&failure)));
    }
    false
}

/// A deadline that never comes (about a year away).
fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(365 * 24 * 3600)
}

/// Frames the replies in `buf` past `framed` and hands each request its replies once all have
/// come. A reply with no request waiting for it is a protocol error.
fn dispatch(
    buf: &mut Vec<u8>,
    framed: &mut usize,
    pending: &mut VecDeque<Pending>,
    generation: u64,
    health: &Health,
) -> io::Result<()> {
    // An error reply (a server still loading, a cluster failing over) is no sign of health;
    // anything else is.
    let mut healthy = false;
    let result = loop {
        let Some(front) = pending.front_mut() else {
            if buf.len() > *framed {
                break Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "redis sent a reply nobody asked for",
                ));
            }
            break Ok(());
        };
        let len = match frame(&buf[*framed..]) {
            Ok(Some(len)) => len,
            Ok(None) => break Ok(()),
            Err(e) => break Err(e),
        };
        healthy |= buf[*framed] != b'-';
        *framed += len;
        front.replies -= 1;
        if front.replies == 0 {
            let bytes = buf[..*framed].to_vec();
            buf.drain(..*framed);
            *framed = 0;
            if let Some(done) = pending.pop_front() {
                let _ = done.answer.send(Ok(Answer { bytes, generation }));
            }
        }
    };
    if healthy {
        health.heard();
    }
    result
}

/// Opens a connection to `target` and authenticates and selects its database.
async fn connect(target: &Target) -> io::Result<Stream> {
    let backoff = &target.backoff;
    let stream = match target.info.addr() {
        ConnectionAddr::Tcp(host, port) => {
            let connecting = tokio::net::TcpStream::connect((host.as_str(), *port));
            let stream = tokio::time::timeout(backoff.connect_timeout, connecting)
                .await
                .map_err(|_| {
                    io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!(
                            "connecting to {host}:{port} took over {:?}",
                            backoff.connect_timeout
                        ),
                    )
                })??;
            // A pipeline's tail must not wait for a delayed acknowledgement.
            stream.set_nodelay(true)?;
            Stream::Tcp(stream)
        }
        #[cfg(unix)]
        ConnectionAddr::Unix(path) => {
            let connecting = tokio::net::UnixStream::connect(path);
            Stream::Unix(
                tokio::time::timeout(backoff.connect_timeout, connecting)
                    .await
                    .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "connect timed out"))??,
            )
        }
        _ => {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "url-dedup-redis speaks plain TCP or Unix sockets (no TLS)",
            ));
        }
    };
    handshake(stream, target).await
}

/// `AUTH` and `SELECT` as the URL asks, packed; `None` when it asks for neither.
pub(crate) fn hello(target: &Target) -> Option<Packed> {
    let settings = target.info.redis_settings();
    let mut hello = Packed::default();
    if let Some(password) = settings.password() {
        match settings.username() {
            Some(user) => {
                hello.command(3);
                hello.bulk(b"AUTH");
                hello.bulk(user.as_bytes());
            }
            None => {
                hello.command(2);
                hello.bulk(b"AUTH");
            }
        }
        hello.bulk(password.as_bytes());
    }
    if settings.db() != 0 {
        hello.command(2);
        hello.bulk(b"SELECT");
        hello.bulk(settings.db().to_string().as_bytes());
    }
    (hello.commands > 0).then_some(hello)
}

/// Reads the replies to [`hello`] from the start of `buf`: `Ok(true)` once all came and all
/// were accepted, `Ok(false)` while some are missing, an error (`PermissionDenied`) for a
/// refusal.
pub(crate) fn hello_answered(buf: &[u8], commands: usize) -> io::Result<bool> {
    let mut at = 0;
    for _ in 0..commands {
        let Some(len) = frame(&buf[at..])? else {
            return Ok(false);
        };
        if buf[at] == b'-' {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                String::from_utf8_lossy(&buf[at + 1..at + len - 2]).into_owned(),
            ));
        }
        at += len;
    }
    Ok(true)
}

/// `AUTH` and `SELECT` as the URL asks.
async fn handshake(mut stream: Stream, target: &Target) -> io::Result<Stream> {
    let Some(hello) = hello(target) else {
        return Ok(stream);
    };
    let exchange = async {
        stream.write_all(&hello.buf).await?;
        let mut buf = Vec::new();
        while !hello_answered(&buf, hello.commands)? {
            if stream.read_buf(&mut buf).await? == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "redis closed the connection",
                ));
            }
        }
        Ok::<(), io::Error>(())
    };
    tokio::time::timeout(target.backoff.response_timeout, exchange)
        .await
        .map_err(|_| {
            io::Error::new(
                io::ErrorKind::TimedOut,
                "redis did not answer AUTH or SELECT",
            )
        })??;
    Ok(stream)
}

/// A subscription to one channel on a connection of its own: one `()` per message. The
/// channel closes when the connection breaks.
pub(crate) async fn subscribe(
    target: &Target,
    channel: &str,
    limit: Duration,
) -> RedisResult<mpsc::UnboundedReceiver<()>> {
    let mut stream = tokio::time::timeout(limit, connect(target))
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "subscribing took too long"))??;
    let mut subscribe = Packed::default();
    subscribe.command(2);
    subscribe.bulk(b"SUBSCRIBE");
    subscribe.bulk(channel.as_bytes());
    stream.write_all(&subscribe.buf).await?;
    let (tx, rx) = mpsc::unbounded_channel();
    crate::io::spawn(async move {
        // The first message confirms the subscription; each later one is a publication.
        let mut buf = Vec::new();
        loop {
            match frame(&buf) {
                Ok(Some(len)) => {
                    let message = buf.starts_with(b"*3\r\n$7\r\nmessage\r\n");
                    buf.drain(..len);
                    if message && tx.send(()).is_err() {
                        return;
                    }
                }
                Ok(None) => {
                    let read = tokio::select! {
                        read = stream.read_buf(&mut buf) => read,
                        () = tx.closed() => return,
                    };
                    if !matches!(read, Ok(n) if n > 0) {
                        return;
                    }
                }
                Err(_) => return,
            }
        }
    })?;
    Ok(rx)
}

/// A TCP or Unix socket.
enum Stream {
    Tcp(tokio::net::TcpStream),
    #[cfg(unix)]
    Unix(tokio::net::UnixStream),
}

impl AsyncRead for Stream {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Tcp(s) => std::pin::Pin::new(s).poll_read(cx, buf),
            #[cfg(unix)]
            Self::Unix(s) => std::pin::Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<io::Result<usize>> {
        match self.get_mut() {
            Self::Tcp(s) => std::pin::Pin::new(s).poll_write(cx, buf),
            #[cfg(unix)]
            Self::Unix(s) => std::pin::Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Tcp(s) => std::pin::Pin::new(s).poll_flush(cx),
            #[cfg(unix)]
            Self::Unix(s) => std::pin::Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Tcp(s) => std::pin::Pin::new(s).poll_shutdown(cx),
            #[cfg(unix)]
            Self::Unix(s) => std::pin::Pin::new(s).poll_shutdown(cx),
        }
    }
}
