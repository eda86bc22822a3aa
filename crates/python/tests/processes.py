"""Child processes of the tests (redis-server, Scrapy, the Rust programs) that die with the
test process however it ends: each is started with the parent-death signal set to SIGKILL, so
a pytest killed outright (or timing out in CI) leaves no server or crawl behind."""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_PR_SET_PDEATHSIG = 1
REPO = Path(__file__).resolve().parents[3]


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def start(args: list[str], **kwargs) -> subprocess.Popen:
    """``subprocess.Popen`` of a child that is killed when this process dies."""
    return subprocess.Popen(args, preexec_fn=_die_with_parent, **kwargs)


def run(args: list[str], timeout: float, **kwargs) -> subprocess.CompletedProcess:
    """Runs a child to its end (killed when this process dies or after ``timeout`` seconds)."""
    proc = start(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(
            f"{args[0]} did not finish in {timeout} s\n{err.decode(errors='replace')[-4000:]}"
        ) from None
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """A throwaway redis-server on a free loopback port that keeps nothing on disk; with
    ``password``, clients must give it (``requirepass``), and it also listens on the Unix
    socket ``self.socket``."""

    def __init__(self, password: str | None = None) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is missing: run bash scripts/install-test-deps.sh")
        self.password = password
        self.dir = tempfile.mkdtemp(prefix="url-dedup-redis-")
        self.socket = str(Path(self.dir, "redis.sock"))
        extra = ["--requirepass", password, "--unixsocket", self.socket] if password else []
        for _attempt in range(20):
            self.port = free_port()
            self.proc = start(
                [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--dir", self.dir, *extra],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            if self._wait_ready():
                return
            self.proc.kill()
            self.proc.wait()
        raise RuntimeError("redis-server did not start")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _wait_ready(self) -> bool:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False  # the port was taken in between: try another
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                    s.sendall(b"PING\r\n")
                    # A server that wants a password refuses the PING: it is up all the same.
                    if s.recv(16).startswith((b"+PONG", b"-NOAUTH")):
                        return True
            except OSError:
                time.sleep(0.01)
        return False

    def client(self):
        import redis

        return redis.Redis.from_url(self.url, password=self.password)

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def cargo_binary(package: str, binary: str) -> Path:
    """A workspace binary, built (or brought up to date) first: a no-op when it is."""
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    result = run(["cargo", "build", "--quiet", "-p", package, "--bin", binary],
                 timeout=1800, cwd=REPO)
    if result.returncode != 0:
        raise RuntimeError(f"cargo build -p {package} failed:\n{result.stderr.decode()[-4000:]}")
    path = target / "debug" / binary
    assert path.exists(), path
    return path


PYTHON = sys.executable
