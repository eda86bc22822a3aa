//! A throwaway `redis-server` for tests: this crate's, the crawler's and the two-tier protocol's.
//!
//! [`RedisServer::start`] runs a real server on a free loopback port in a fresh temporary
//! directory, waits until it answers `PING`, and kills it when dropped or when the test process
//! ends without dropping it (a server kept in a `static`, a failed run, a test binary killed
//! with SIGKILL): a small `sh` supervisor, whose stdin is a pipe from the test process, kills
//! the server once that pipe closes. Fault tests call [`kill`](RedisServer::kill) and
//! [`restart`](RedisServer::restart) (same port, same directory), so clients that reconnect
//! find it again. A [`durable`](RedisServer::start_durable) server writes an fsync-always
//! append-only file, so a restart keeps every acknowledged write; the default server keeps
//! nothing (`--save '' --appendonly no`), like a cache that lost its memory.
//!
//! Tests should use [`RedisServer::start_or_skip`]: with no `redis-server` binary and no `CI`
//! variable it prints a loud notice and returns `None`; under `CI` a missing binary is a failure.
//! `bash scripts/install-test-deps.sh` installs the binary.
//!
//! # Examples
//!
//! ```
//! use url_dedup_redis::testing::RedisServer;
//!
//! let Some(mut server) = RedisServer::start_or_skip("doc example") else { return Ok(()) };
//! assert!(server.url().starts_with("redis://127.0.0.1:"));
//! let port = server.port();
//! server.restart()?;
//! assert_eq!(server.port(), port);
//! # Ok::<(), std::io::Error>(())
//! ```

use std::env;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod cluster;
pub use cluster::{ClusterNode, RedisCluster};

/// How long a server may take to answer its first `PING` (a durable one replays its log first).
const STARTUP_TIMEOUT: Duration = Duration::from_secs(20);

/// How often a starting server is pinged: it usually answers within a few milliseconds.
const STARTUP_POLL: Duration = Duration::from_millis(2);

/// The `sh` script every server runs under (`"$@"` is the server's command line). A
/// `static` server is never dropped and a test process may be killed outright, so the server
/// must not depend on this process cleaning up: the script starts it, a watcher kills it
/// (SIGKILL) once the script's stdin, a pipe only the test process writes to, reaches end of
/// file, and the script exits when the server does, so a live script means a live server. The
/// watcher is stopped once the server is gone, so it can never signal a reused process id.
const SUPERVISOR: &str = r#"exec 3<&0
"$@" </dev/null >/dev/null 2>&1 3<&- &
server=$!
{ read -r _ <&3; kill -9 "$server" 2>/dev/null; } &
watcher=$!
exec 3<&-
wait "$server"
status=$?
kill "$watcher" 2>/dev/null
exit "$status"
"#;

/// A multi-threaded tokio runtime with two workers (the machines this runs on have two cores)
/// and every driver enabled: what a test needs to run async clients against a [`RedisServer`].
///
/// # Panics
///
/// If the operating system refuses the runtime's threads; this is test support.
///
/// # Examples
///
/// ```
/// let answer = url_dedup_redis::testing::runtime().block_on(async { 40 + 2 });
/// assert_eq!(answer, 42);
/// ```
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// How many times the server has run the commands whose lowercase names `counted` accepts
/// (from `INFO commandstats`): how a test or benchmark checks what a client sent.
///
/// # Errors
///
/// The server's error if `INFO` fails.
///
/// # Examples
///
/// ```
/// # use url_dedup_redis::testing::{RedisServer, command_calls};
/// # let Some(server) = RedisServer::start_or_skip("command_calls example") else { return Ok(()) };
/// let mut conn = redis::Client::open(server.url())?.get_connection()?;
/// let _: () = redis::cmd("SET").arg("k").arg(1).query(&mut conn)?;
/// assert_eq!(command_calls(&mut conn, |name| name == "set")?, 1);
/// # Ok::<(), redis::RedisError>(())
/// ```
pub fn command_calls(
    conn: &mut redis::Connection,
    counted: impl Fn(&str) -> bool,
) -> redis::RedisResult<u64> {
    let info: String = redis::cmd("INFO").arg("commandstats").query(conn)?;
    Ok(info
        .lines()
        .filter_map(|line| {
            let (name, stats) = line.strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = stats.strip_prefix("calls=")?.split(',').next()?;
            counted(name).then(|| calls.parse::<u64>().ok()).flatten()
        })
        .sum())
}

/// A `redis-server` process on `127.0.0.1`, killed on drop or when the process that started
/// it ends, however it ends.
///
/// # Examples
///
/// ```
/// use url_dedup_redis::testing::RedisServer;
///
/// if let Some(mut server) = RedisServer::start_or_skip("RedisServer example") {
///     assert!(server.is_running());
/// }
/// ```
#[derive(Debug)]
pub struct RedisServer {
    child: Option<Child>,
    /// The server's own process id (the child is its supervisor).
    pid: Option<u32>,
    port: u16,
    binary: PathBuf,
    durable: bool,
    /// A node of a Redis Cluster (`--cluster-enabled yes`), see [`RedisCluster`].
    cluster: bool,
    dir: tempfile::TempDir,
}

impl RedisServer {
    /// The `redis-server` binary: `$REDIS_SERVER` if set, else the first one on `PATH`.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_redis::testing::RedisServer;
    ///
    /// if let Some(path) = RedisServer::binary() {
    ///     assert!(path.is_file());
    /// }
    /// ```
    pub fn binary() -> Option<PathBuf> {
        if let Some(explicit) = env::var_os("REDIS_SERVER") {
            let path = PathBuf::from(explicit);
            return path.is_file().then_some(path);
        }
        env::split_paths(&env::var_os("PATH")?)
            .map(|dir| dir.join("redis-server"))
            .find(|candidate| candidate.is_file())
    }

    /// Starts an in-memory server (`--save '' --appendonly no`) on a free loopback port.
    ///
    /// # Errors
    ///
    /// No binary, a process that cannot start, or no `PONG` within 20 seconds.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use url_dedup_redis::testing::RedisServer;
    ///
    /// let server = RedisServer::start()?;
    /// println!("redis at {}", server.url());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn start() -> io::Result<Self> {
        Self::launch(false, false)
    }

    /// Starts a server that appends every write to an fsync-always log in its directory, so a
    /// [`restart`](Self::restart) keeps every write it acknowledged.
    ///
    /// # Errors
    ///
    /// As for [`start`](Self::start).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use url_dedup_redis::testing::RedisServer;
    ///
    /// let mut server = RedisServer::start_durable()?;
    /// server.restart()?; // data written before is still there
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn start_durable() -> io::Result<Self> {
        Self::launch(true, false)
    }

    /// [`start`](Self::start), or `None` with a loud notice on stderr when no binary exists and
    /// the `CI` variable is not set.
    ///
    /// # Panics
    ///
    /// When the server cannot start, or when the binary is missing under `CI`: this is test
    /// support, and a test that silently did nothing would be worse.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_redis::testing::RedisServer;
    ///
    /// let Some(server) = RedisServer::start_or_skip("my_test") else { return };
    /// assert!(server.port() > 0);
    /// ```
    pub fn start_or_skip(test: &str) -> Option<Self> {
        Self::start_or_skip_with(test, false)
    }

    /// [`start_durable`](Self::start_durable) with the skip rule of
    /// [`start_or_skip`](Self::start_or_skip).
    ///
    /// # Panics
    ///
    /// As for [`start_or_skip`](Self::start_or_skip).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_redis::testing::RedisServer;
    ///
    /// let Some(mut server) = RedisServer::start_durable_or_skip("my_test") else { return };
    /// assert!(server.is_running());
    /// ```
    pub fn start_durable_or_skip(test: &str) -> Option<Self> {
        Self::start_or_skip_with(test, true)
    }

    fn start_or_skip_with(test: &str, durable: bool) -> Option<Self> {
        if Self::binary().is_none() {
            if env::var_os("CI").is_some() {
                panic!("{test}: no redis-server binary under CI; run scripts/install-test-deps.sh");
            }
            skipped(
                test,
                "no redis-server binary on PATH (install it with `bash scripts/install-test-deps.sh`)",
            );
            return None;
        }
        match Self::launch(durable, false) {
            Ok(server) => Some(server),
            Err(e) => panic!("{test}: cannot start redis-server: {e}"),
        }
    }

    pub(crate) fn launch(durable: bool, cluster: bool) -> io::Result<Self> {
        let binary = Self::binary()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no redis-server binary"))?;
        // A free port can be taken by someone else between our probe and redis binding it;
        // a few fresh tries make that race harmless.
        let mut last = None;
        for _ in 0..5 {
            let mut port = free_port()?;
            // A cluster node also listens on its port + 10,000 (the cluster bus).
            while cluster && port > u16::MAX - 10_000 {
                port = free_port()?;
            }
            let mut server = Self {
                child: None,
                pid: None,
                port,
                binary: binary.clone(),
                durable,
                cluster,
                dir: tempfile::Builder::new()
                    .prefix("url-dedup-redis-")
                    .tempdir()?,
            };
            match server.spawn() {
                Ok(()) => return Ok(server),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::other("redis-server did not start")))
    }

    fn spawn(&mut self) -> io::Result<()> {
        let dir = self.dir.path();
        let mut cmd = Command::new("sh");
        cmd.args(["-c", SUPERVISOR, "redis-supervisor"])
            .arg(&self.binary)
            .arg("--port")
            .arg(self.port.to_string())
            .args(["--bind", "127.0.0.1", "--save", ""])
            .arg("--dir")
            .arg(dir)
            .arg("--logfile")
            .arg(dir.join("redis.log"))
            .args(["--daemonize", "no"]);
        if self.durable {
            cmd.args(["--appendonly", "yes", "--appendfsync", "always"]);
        } else {
            cmd.args(["--appendonly", "no"]);
        }
        if self.cluster {
            // A short node timeout: a killed master is failed over within seconds; and its
            // replica takes over however long it was cut off from it (validity factor 0), the
            // setting that favours availability and so may lose the most writes.
            cmd.args(["--cluster-enabled", "yes", "--cluster-node-timeout", "1500"])
                .args(["--cluster-replica-validity-factor", "0"])
                .arg("--cluster-config-file")
                .arg(dir.join("nodes.conf"));
        }
        // The supervisor's stdin is a pipe whose only writer is this process: it closes when
        // the process ends for any reason, and the supervisor then kills the server.
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        loop {
            if let Some(status) = child.try_wait()? {
                return Err(io::Error::other(format!(
                    "redis-server exited with {status}: {}",
                    log_tail(&dir.join("redis.log"))
                )));
            }
            if ping(self.port) {
                self.child = Some(child);
                self.pid = Some(server_pid(self.port)?);
                return Ok(());
            }
            if Instant::now() > deadline {
                stop(child);
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "redis-server did not answer PING: {}",
                        log_tail(&dir.join("redis.log"))
                    ),
                ));
            }
            std::thread::sleep(STARTUP_POLL);
        }
    }

    /// The connection URL, `redis://127.0.0.1:PORT/`.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_redis::testing::RedisServer;
    ///
    /// let Some(server) = RedisServer::start_or_skip("url example") else { return };
    /// assert_eq!(server.url(), format!("redis://127.0.0.1:{}/", server.port()));
    /// ```
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// The TCP port, the same across restarts.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_redis::testing::RedisServer;
    ///
    /// let Some(server) = RedisServer::start_or_skip("port example") else { return };
    /// assert_ne!(server.port(), 0);
    /// ```
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's working directory (log file, append-only file).
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_redis::testing::RedisServer;
    ///
    /// let Some(server) = RedisServer::start_or_skip("dir example") else { return };
    /// assert!(server.dir().join("redis.log").exists());
    /// ```
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Whether the process is alive and was not [`kill`](Self::kill)ed.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_redis::testing::RedisServer;
    ///
    /// let Some(mut server) = RedisServer::start_or_skip("is_running example") else { return };
    /// server.kill();
    /// assert!(!server.is_running());
    /// ```
    pub fn is_running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(child) => matches!(child.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// Stops the server (SIGSTOP) without closing anything: connections stay open, new ones
    /// are accepted by the kernel, and nothing is answered until [`resume`](Self::resume), as
    /// with a server frozen by a long fork, a swap storm or a paused virtual machine.
    ///
    /// # Errors
    ///
    /// The server is not running, or the signal could not be sent.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_redis::testing::RedisServer;
    ///
    /// let Some(mut server) = RedisServer::start_or_skip("pause example") else { return Ok(()) };
    /// server.pause()?;
    /// server.resume()?;
    /// assert!(server.is_running());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn pause(&mut self) -> io::Result<()> {
        self.signal("-STOP")
    }

    /// Lets a [`pause`](Self::pause)d server go on (SIGCONT).
    ///
    /// # Errors
    ///
    /// The server is not running, or the signal could not be sent.
    ///
    /// # Examples
    ///
    /// See [`pause`](Self::pause).
    pub fn resume(&mut self) -> io::Result<()> {
        self.signal("-CONT")
    }

    fn signal(&mut self, signal: &str) -> io::Result<()> {
        let pid = match (self.is_running(), self.pid) {
            (true, Some(pid)) => pid,
            _ => return Err(io::Error::other("the server is not running")),
        };
        let status = Command::new("kill")
            .arg(signal)
            .arg(pid.to_string())
            .status()?;
        if status.success() {
            Ok(())
        } else {
            Err(io::Error::other(format!("kill {signal} {pid} failed")))
        }
    }

    /// Kills the server at once (SIGKILL: no shutdown, no final save), as a crash would.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_redis::testing::RedisServer;
    ///
    /// let Some(mut server) = RedisServer::start_or_skip("kill example") else { return };
    /// server.kill();
    /// assert!(std::net::TcpStream::connect(("127.0.0.1", server.port())).is_err());
    /// ```
    pub fn kill(&mut self) {
        self.pid = None;
        if let Some(child) = self.child.take() {
            stop(child);
        }
    }

    /// Kills the server if it runs and starts it again on the same port and directory.
    ///
    /// # Errors
    ///
    /// The new process does not start or answer `PING`.
    ///
    /// # Examples
    ///
    /// ```
    /// use url_dedup_redis::testing::RedisServer;
    ///
    /// let Some(mut server) = RedisServer::start_or_skip("restart example") else { return Ok(()) };
    /// server.restart()?;
    /// assert!(server.is_running());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn restart(&mut self) -> io::Result<()> {
        self.kill();
        // The port was ours a moment ago; redis sets SO_REUSEADDR, but an unlucky process may
        // have grabbed it, so retry briefly before giving up.
        let mut last = None;
        for _ in 0..50 {
            match self.spawn() {
                Ok(()) => return Ok(()),
                Err(e) => last = Some(e),
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(last.unwrap_or_else(|| io::Error::other("redis-server did not restart")))
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Closes the supervisor's stdin, which makes it kill the server (SIGKILL: no shutdown, no
/// final save), and waits until both are gone, so the port is free when this returns.
fn stop(mut child: Child) {
    drop(child.stdin.take());
    let _ = child.wait();
}

fn free_port() -> io::Result<u16> {
    let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))?;
    Ok(listener.local_addr()?.port())
}

/// True once a server on `port` answers `PING` with `+PONG` (not `-LOADING`).
fn ping(port: u16) -> bool {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
    if stream.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut line = String::new();
    let mut reader = BufReader::new(stream.take(256));
    reader.read_line(&mut line).is_ok() && line.starts_with("+PONG")
}

/// The process id of the server on `port`, from `INFO server`.
fn server_pid(port: u16) -> io::Result<u32> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(1))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.write_all(b"INFO server\r\n")?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Err(io::Error::other("INFO server had no process_id"));
        }
        if let Some(pid) = line.trim().strip_prefix("process_id:") {
            return pid
                .parse()
                .map_err(|_| io::Error::other("INFO server's process_id is not a number"));
        }
    }
}

fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(5)..].join(" | ")
}

/// Finds `program` on `PATH` for `test`, as [`RedisServer::start_or_skip`] finds its server:
/// without it, `test` is [`skipped`] (with a loud notice) and `None` comes back, unless the
/// `CI` variable is set, where a missing program is a failure. `install` says how to get it.
///
/// # Panics
///
/// Under `CI`, when the program is missing.
///
/// # Examples
///
/// ```
/// use url_dedup_redis::testing::program_or_skip;
///
/// let Some(sh) = program_or_skip("doc example", "sh", "apt-get install dash") else { return };
/// assert!(sh.is_file());
/// ```
pub fn program_or_skip(test: &str, program: &str, install: &str) -> Option<PathBuf> {
    let found = env::var_os("PATH").and_then(|paths| {
        env::split_paths(&paths)
            .map(|dir| dir.join(program))
            .find(|candidate| candidate.is_file())
    });
    if found.is_none() {
        if env::var_os("CI").is_some() {
            panic!("{test}: no {program} on PATH under CI; {install}");
        }
        skipped(test, &format!("no {program} on PATH ({install})"));
    }
    found
}

/// Says that `test` was skipped and why: on stderr (shown with `--nocapture`) and, when the
/// environment names a file in `URL_DEDUP_SKIP_LOG`, as one line appended to it, so the
/// project's test command can count the skips that the test harness hides.
///
/// # Examples
///
/// ```
/// use url_dedup_redis::testing::skipped;
///
/// // A test that needs the root directory, which every machine has.
/// if !std::path::Path::new("/").is_dir() {
///     skipped("doc example", "no root directory");
///     return;
/// }
/// ```
pub fn skipped(test: &str, why: &str) {
    eprintln!("\n!!!!!!!! SKIPPED {test}: {why}\n");
    if let Some(path) = env::var_os("URL_DEDUP_SKIP_LOG") {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path);
        if let Ok(mut file) = file {
            let _ = writeln!(file, "{test}: {why}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Stdio;
    use std::sync::OnceLock;

    const HOLDER_ENV: &str = "URL_DEDUP_REDIS_SERVER_HOLDER";

    /// Runs only as a child of the tests below: starts a server, keeps it in a `static` (never
    /// dropped, as the suites' shared servers are), reports its port and process id, then either
    /// returns at once (`exit`: the process ends without running any destructor) or waits to
    /// be killed (`wait`).
    #[test]
    #[ignore = "helper process, started by its parent test"]
    fn server_holder() {
        static SERVER: OnceLock<RedisServer> = OnceLock::new();
        let Ok(end) = env::var(HOLDER_ENV) else {
            return;
        };
        let server = SERVER.get_or_init(|| RedisServer::start().expect("redis-server starts"));
        let mut conn = redis::Client::open(server.url())
            .and_then(|c| c.get_connection())
            .expect("connect");
        let info: String = redis::cmd("INFO").arg("server").query(&mut conn).unwrap();
        let pid = info
            .lines()
            .find_map(|l| l.strip_prefix("process_id:"))
            .expect("INFO server has process_id")
            .trim()
            .to_owned();
        println!("SERVER {} {pid}", server.port());
        if end == "wait" {
            loop {
                std::thread::park();
            }
        }
    }

    fn alive(pid: &str) -> bool {
        Command::new("kill")
            .args(["-0", pid])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// Starts [`server_holder`] in a child test process ending as `end` (`exit` or `wait`, then
    /// SIGKILL) and checks that its server's process is gone and its port stops answering.
    fn server_dies_with_its_process(end: &str) {
        if RedisServer::binary().is_none() {
            let _ = RedisServer::start_or_skip("server_dies_with_its_process");
            return;
        }
        let mut child = Command::new(env::current_exe().unwrap())
            .args([
                "--exact",
                "testing::tests::server_holder",
                "--ignored",
                "--nocapture",
            ])
            .env(HOLDER_ENV, end)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap())
            .lines()
            .map_while(Result::ok);
        let (port, pid) = lines
            .find_map(|line| {
                let (port, pid) = line.strip_prefix("SERVER ")?.split_once(' ')?;
                Some((port.parse::<u16>().ok()?, pid.to_owned()))
            })
            .expect("the holder reports its server");
        if end == "wait" {
            child.kill().unwrap(); // SIGKILL: no destructor, no exit handler runs
        }
        // Read the holder's last words, or it fails writing its summary to a closed pipe.
        lines.for_each(drop);
        child.wait().unwrap();
        // The server is killed by whatever watches the holder; give it a moment, not forever.
        let deadline = Instant::now() + Duration::from_secs(10);
        while (alive(&pid) || ping(port)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let (left_alive, answering) = (alive(&pid), ping(port));
        if left_alive {
            // Do not leave the stray server behind when the check fails.
            let _ = Command::new("kill").args(["-9", &pid]).status();
        }
        assert!(
            !left_alive && !answering,
            "redis-server {pid} on port {port} outlived its test process ({end}): alive {left_alive}, answering {answering}"
        );
    }

    #[test]
    fn server_dies_when_its_process_exits_without_dropping_it() {
        server_dies_with_its_process("exit");
    }

    #[test]
    fn server_dies_when_its_process_is_killed() {
        server_dies_with_its_process("wait");
    }
}
