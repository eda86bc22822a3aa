"""One filter in Redis shared by Scrapy processes (scrapy-redis's scheduler with
url_dedup.scrapy.RedisDupeFilter), the Rust crawler and the url-dedup command."""

from __future__ import annotations

import subprocess
import time

import pytest

from conftest import crawl_ok, finish, scrapy_process
from processes import cargo_binary, start


def redis_settings(redis_url: str, prefix: str, **extra: str) -> dict[str, str]:
    return {
        "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
        "DUPEFILTER_CLASS": "url_dedup.scrapy.RedisDupeFilter",
        "REDIS_URL": redis_url,
        "URL_DEDUP_REDIS_PREFIX": prefix,
        # Several processes share the crawl: the first to finish must not clear it.
        "SCHEDULER_PERSIST": "True",
        **extra,
    }


def test_scrapy_redis_crawl_fetches_every_page_once(site, redis_url):
    crawl_ok(redis_settings(redis_url, "%(spider)s:seen"), [site.url("a/0"), site.url("b/0")])
    assert site.fetched() == site.pages()
    assert site.fetched_twice() == {}


@pytest.mark.parametrize("key", ["url", "fingerprint"])
@pytest.mark.parametrize("hash_key", ["", "00112233445566778899aabbccddeeff"])
def test_two_scrapy_processes_share_one_filter(site, redis_url, key, hash_key):
    # Separate queues, one filter: of two processes finding the same link, one fetches it.
    settings = [
        redis_settings(redis_url, "shared", URL_DEDUP_KEY=key, SCHEDULER_QUEUE_KEY=f"q{n}",
                       DOWNLOAD_DELAY="0.01", URL_DEDUP_HASH_KEY=hash_key)
        for n in (1, 2)
    ]
    first = scrapy_process(settings[0], [site.url("a/0")])
    second = scrapy_process(settings[1], [site.url("b/0")])
    finish(first)
    finish(second)
    assert site.fetched() == site.pages()
    assert site.fetched_twice() == {}


def test_clear_deletes_the_shared_filter(redis_url, redis_server):
    from scrapy import Request

    from url_dedup.scrapy import RedisDupeFilter

    f = RedisDupeFilter(redis_url, "to-clear")
    assert not f.request_seen(Request("https://example.com/"))
    assert not f.request_seen(Request("data:,x"))
    assert f.request_seen(Request("data:,x"))
    client = redis_server.client()
    assert client.keys("to-clear:*")
    f.clear()
    assert client.keys("to-clear:*") == []


def test_scrapy_and_the_rust_crawler_split_one_crawl(site, redis_url, redis_server, tmp_path):
    """The crawler starts at /a/0, Scrapy at /b/0; pages from 30 on are linked from both
    sections, so both processes find them, and each must be fetched by exactly one."""
    crawler = cargo_binary("url-dedup-crawler", "crawler")
    name = "interop"
    proc = start(
        [str(crawler), site.url("a/0"), "--redis", redis_url, "--crawl-name", name,
         "--out", str(tmp_path / "crawl"), "--ignore-robots", "--no-sitemaps", "--no-warc",
         "--no-mirror", "--delay-ms", "10", "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    # The crawler creates the shared done set (its hash key is the crawl's); Scrapy joins it.
    client = redis_server.client()
    deadline = time.monotonic() + 60
    while not client.exists(f"{name}:seen:meta"):
        assert proc.poll() is None, proc.communicate()[1].decode(errors="replace")[-4000:]
        assert time.monotonic() < deadline, "the crawler did not create its done set"
        time.sleep(0.02)
    # The crawler keeps its done set's key out of the filter's metadata, in the crawl's
    # `{NAME}:hash-key` (32 hex digits): Scrapy is given it.
    key = client.get(f"{{{name}}}:hash-key").decode()
    scrapy = scrapy_process(
        redis_settings(redis_url, f"{name}:seen", DOWNLOAD_DELAY="0.01", URL_DEDUP_HASH_KEY=key),
        [site.url("b/0")],
    )
    finish(scrapy)
    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    assert proc.returncode == 0, err.decode(errors="replace")[-4000:]
    assert site.fetched() == site.pages()
    assert site.fetched_twice() == {}
    # Each fetched its own start section, and the pages linked from both were split.
    by_crawler = {line.split("\t")[-1] for f in (tmp_path / "crawl").glob("fetched-*.tsv")
                  for line in f.read_text().splitlines()}
    crawler_pages = {site.page_of(u[len(site.base):]) for u in by_crawler} - {None}
    assert {f"a/{i}" for i in range(site.cross)} <= crawler_pages
    assert not crawler_pages & {f"b/{i}" for i in range(site.cross)}


def test_scrapy_and_the_url_dedup_command_share_one_filter(site, redis_url):
    cli = cargo_binary("url-dedup-cli", "url-dedup")
    crawl_ok(redis_settings(redis_url, "url-dedup"), [site.url("a/0")])
    crawled = site.fetched()
    assert crawled and crawled != site.pages()
    listing = "".join(site.url(p) + "\n" for p in sorted(site.pages()))
    proc = start([str(cli), "--redis", redis_url], stdin=subprocess.PIPE,
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate(listing.encode(), timeout=60)
    assert proc.returncode == 0, err.decode()
    printed = {site.page_of(line[len(site.base):]) for line in out.decode().splitlines()}
    assert printed == site.pages() - crawled


def test_a_shared_filter_says_who_created_it(redis_url, redis_server, caplog):
    from url_dedup import UrlDedup
    from url_dedup.scrapy import RedisDupeFilter

    assert UrlDedup().created_shared_filter is None
    assert UrlDedup(redis=redis_url, redis_prefix="made").created_shared_filter is True
    assert UrlDedup(redis=redis_url, redis_prefix="made").created_shared_filter is False
    # The rate is the facade's default unless set: 1e-5 for a filter in Redis.
    assert "false_positive_rate=None" in repr(UrlDedup(redis=redis_url, redis_prefix="rate"))
    assert "false_positive_rate=0.01" in repr(UrlDedup(false_positive_rate=0.01))

    # A first start is told at INFO; one that finds signs of an earlier run warns.
    with caplog.at_level("INFO", logger="url_dedup.scrapy"):
        RedisDupeFilter(redis_url, "crawl")
    assert [r.levelname for r in caplog.records] == ["INFO"]
    assert "Created the shared filter crawl" in caplog.text
    caplog.clear()
    with caplog.at_level("INFO", logger="url_dedup.scrapy"):
        RedisDupeFilter(redis_url, "crawl", earlier_run=lambda: ["a test says so"])
    assert caplog.text == ""
    redis_server.client().flushall()
    with caplog.at_level("INFO", logger="url_dedup.scrapy"):
        RedisDupeFilter(redis_url, "crawl", earlier_run=lambda: ["a test says so"])
    assert [r.levelname for r in caplog.records] == ["WARNING"]
    assert "Created the shared filter crawl" in caplog.text
    assert "a test says so" in caplog.text
