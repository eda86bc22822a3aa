"""Fixtures: a redis-server and a generated site per test run, and Scrapy crawls in child
processes (a Twisted reactor cannot be restarted inside one process)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from processes import PYTHON, RedisServer, run, start  # noqa: E402
from generated_site import Site  # noqa: E402

SPIDER = Path(__file__).parent / "spider.py"

BASE_SETTINGS = {
    "LOG_LEVEL": "INFO",
    "ROBOTSTXT_OBEY": "False",
    "TELNETCONSOLE_ENABLED": "False",
    "CONCURRENT_REQUESTS": "4",
    "COOKIES_ENABLED": "False",
}


@pytest.fixture(scope="session")
def redis_server():
    server = RedisServer()
    yield server
    server.stop()


PASSWORD = "p@ss:w/rd"
"""The password of ``password_redis``: the characters a URL's userinfo gives a meaning to."""


@pytest.fixture(scope="session")
def password_redis_server():
    server = RedisServer(password=PASSWORD)
    yield server
    server.stop()


@pytest.fixture
def password_redis(password_redis_server) -> RedisServer:
    """A redis-server that wants ``PASSWORD`` (on loopback and a Unix socket), emptied."""
    password_redis_server.client().flushall()
    return password_redis_server


@pytest.fixture
def redis_url(redis_server) -> str:
    redis_server.client().flushall()
    return redis_server.url


@pytest.fixture
def site():
    s = Site()
    yield s
    s.close()


def crawl_args(settings: dict[str, str], start: list[str], again: str = "") -> list[str]:
    """The command line of a Scrapy process running the test spider."""
    args = [PYTHON, "-m", "scrapy", "runspider", str(SPIDER), "-a", "start=" + ",".join(start)]
    if again:
        args += ["-a", f"again={again}"]
    for name, value in {**BASE_SETTINGS, **settings}.items():
        args += ["-s", f"{name}={value}"]
    return args


def crawl(settings: dict[str, str], start: list[str], again: str = "", timeout: float = 120):
    """Runs the test spider in a Scrapy process to its end; returns the finished process."""
    return run(crawl_args(settings, start, again), timeout=timeout, cwd=SPIDER.parent)


def crawl_ok(settings: dict[str, str], start: list[str], **kwargs):
    result = crawl(settings, start, **kwargs)
    log = result.stderr.decode(errors="replace")
    assert result.returncode == 0, log[-4000:]
    assert "Traceback" not in log, log[-6000:]
    return log


def scrapy_process(settings: dict[str, str], start_urls: list[str]) -> subprocess.Popen:
    """The test spider in a Scrapy process, running; :func:`finish` waits for it."""
    return start(crawl_args(settings, start_urls), stdout=subprocess.PIPE,
                 stderr=subprocess.PIPE, cwd=SPIDER.parent)


def finish(proc: subprocess.Popen, timeout: float = 120) -> str:
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        raise AssertionError(err.decode(errors="replace")[-4000:]) from None
    log = err.decode(errors="replace")
    assert proc.returncode == 0, log[-4000:]
    assert "Traceback" not in log, log[-6000:]
    return log
