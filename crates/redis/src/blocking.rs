//! Sockets for blocking callers: a caller that waits anyway (the segment store, behind the
//! synchronous `SegmentStore` trait) writes its request and reads its replies on its own
//! thread, over a connection it holds alone for the attempt, instead of handing them to the
//! I/O thread and back. Every hand-off between threads costs a wake-up, and on a busy machine
//! a wait for a core: a call from one thread made three times as many round trips per second
//! this way (`docs/redis.md`).
//!
//! Only the socket differs: the requests, the routing, the retries, the timeouts, the outage
//! clock, the framing and the decoding are the layer's, as for async callers. Each connection
//! has a generation from the same counter as the I/O thread's.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use redis::ConnectionAddr;

use crate::node::{Answer, Target, hello, hello_answered, next_generation};
use crate::wire::frame;

/// The idle connections of one node, for blocking callers.
#[derive(Debug)]
pub(crate) struct Pool {
    target: Target,
    idle: Mutex<Vec<Socket>>,
}

impl Pool {
    pub(crate) fn new(target: Target) -> Self {
        Self {
            target,
            idle: Mutex::new(Vec::new()),
        }
    }

    /// An idle connection, or a new one (connecting within `limit` at most).
    pub(crate) fn take(&self, limit: Duration) -> io::Result<Socket> {
        let idle = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        match idle {
            Some(socket) => Ok(socket),
            None => Socket::connect(&self.target, limit),
        }
    }

    /// Hands back a connection that is in a clean state (no reply pending).
    pub(crate) fn give(&self, socket: Socket) {
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(socket);
    }
}

/// One blocking connection.
#[derive(Debug)]
pub(crate) struct Socket {
    stream: Stream,
    /// Bytes received: the first `filled` are the replies read so far. Zeroed once, when it
    /// grows, not on every read.
    buf: Vec<u8>,
    filled: usize,
    pub(crate) generation: u64,
    /// The outage clock, told of every answer.
    health: std::sync::Arc<crate::health::Health>,
}

impl Socket {
    fn connect(target: &Target, limit: Duration) -> io::Result<Self> {
        let connect_within = target.backoff.connect_timeout.min(limit).max(MIN_WAIT);
        let stream = match target.info.addr() {
            ConnectionAddr::Tcp(host, port) => {
                let mut last = io::Error::new(io::ErrorKind::NotFound, "address did not resolve");
                let mut connected = None;
                for addr in std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), *port))? {
                    match TcpStream::connect_timeout(&addr, connect_within) {
                        Ok(s) => {
                            connected = Some(s);
                            break;
                        }
                        Err(e) => last = e,
                    }
                }
                let stream = connected.ok_or(last)?;
                // A pipeline's tail must not wait for a delayed acknowledgement.
                stream.set_nodelay(true)?;
                Stream::Tcp(stream)
            }
            #[cfg(unix)]
            ConnectionAddr::Unix(path) => {
                Stream::Unix(std::os::unix::net::UnixStream::connect(path)?)
            }
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    "url-dedup-redis speaks plain TCP or Unix sockets (no TLS)",
                ));
            }
        };
        let mut socket = Self {
            stream,
            buf: vec![0; 64 << 10],
            filled: 0,
            generation: next_generation(),
            health: target.health.clone(),
        };
        if let Some(hello) = hello(target) {
            socket
                .stream
                .timeouts(target.backoff.response_timeout.min(limit))?;
            socket.stream.write_all(&hello.buf)?;
            while !hello_answered(&socket.buf[..socket.filled], hello.commands)? {
                socket.fill()?;
            }
            socket.filled = 0;
        }
        Ok(socket)
    }

    /// Sends `bytes` (`replies` commands) and reads their replies, waiting up to `limit` for
    /// each read or write. After an error the connection is in an unknown state: drop it.
    pub(crate) fn request(
        &mut self,
        bytes: &[u8],
        replies: usize,
        limit: Option<Duration>,
    ) -> io::Result<Answer> {
        self.stream.timeouts_or_none(limit)?;
        self.stream.write_all(bytes)?;
        self.filled = 0;
        let mut framed = 0;
        let mut answered = 0;
        let mut healthy = false;
        while answered < replies {
            match frame(&self.buf[framed..self.filled])? {
                Some(len) => {
                    healthy |= self.buf[framed] != b'-';
                    framed += len;
                    answered += 1;
                }
                None => self.fill()?,
            }
        }
        if healthy {
            self.health.heard();
        }
        if framed != self.filled {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "redis sent a reply nobody asked for",
            ));
        }
        self.filled = 0;
        Ok(Answer {
            bytes: self.buf[..framed].to_vec(),
            generation: self.generation,
        })
    }

    /// Reads what the server sent next.
    fn fill(&mut self) -> io::Result<()> {
        if self.buf.len() - self.filled < 16 << 10 {
            self.buf.resize(self.buf.len() * 2, 0);
        }
        match self.stream.read(&mut self.buf[self.filled..])? {
            0 => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "redis closed the connection",
            )),
            n => {
                self.filled += n;
                Ok(())
            }
        }
    }
}

/// The shortest wait a socket is given: a timeout of zero means "forever" to the system.
const MIN_WAIT: Duration = Duration::from_millis(1);

#[derive(Debug)]
enum Stream {
    Tcp(TcpStream),
    #[cfg(unix)]
    Unix(std::os::unix::net::UnixStream),
}

impl Stream {
    fn timeouts(&self, wait: Duration) -> io::Result<()> {
        self.timeouts_or_none(Some(wait))
    }

    /// Read and write timeouts of `wait`; `None` waits for ever (a blocking command that may).
    fn timeouts_or_none(&self, wait: Option<Duration>) -> io::Result<()> {
        let wait = wait.map(|w| w.max(MIN_WAIT));
        match self {
            Self::Tcp(s) => {
                s.set_read_timeout(wait)?;
                s.set_write_timeout(wait)
            }
            #[cfg(unix)]
            Self::Unix(s) => {
                s.set_read_timeout(wait)?;
                s.set_write_timeout(wait)
            }
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Self::Tcp(s) => s.read(buf),
            #[cfg(unix)]
            Self::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Self::Tcp(s) => s.write(buf),
            #[cfg(unix)]
            Self::Unix(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Self::Tcp(s) => s.flush(),
            #[cfg(unix)]
            Self::Unix(s) => s.flush(),
        }
    }
}
