"""scrapy-redis's settings as RedisDupeFilter reads them: the server and credentials
(``REDIS_URL``, ``REDIS_HOST``, ``REDIS_PORT``, ``REDIS_PARAMS``), the filter's key
(``SCHEDULER_DUPEFILTER_KEY``), and what a first start and a lost filter log."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from conftest import PASSWORD, crawl_ok
from test_redis_interop import redis_settings

# Each names the server with the password its own way; scrapy-redis's client connects with all.
CONNECTIONS = {
    "host-port-params": lambda s: {
        "REDIS_HOST": "127.0.0.1",
        "REDIS_PORT": s.port,
        "REDIS_PARAMS": {"password": PASSWORD},
    },
    "params-only": lambda s: {
        "REDIS_PARAMS": {"host": "127.0.0.1", "port": s.port, "password": PASSWORD, "db": 3},
    },
    "url-and-params": lambda s: {
        "REDIS_URL": f"redis://127.0.0.1:{s.port}/2",
        "REDIS_PARAMS": {"password": PASSWORD},
    },
    "url-wins-over-params": lambda s: {
        "REDIS_URL": f"redis://127.0.0.1:{s.port}/5",
        "REDIS_PARAMS": {"host": "127.0.0.2", "port": 1, "db": 9, "password": PASSWORD},
    },
    "url-percent-encoded": lambda s: {
        "REDIS_URL": f"redis://:{quote(PASSWORD, safe='')}@127.0.0.1:{s.port}/1",
    },
}
CONNECTIONS = [pytest.param(c, id=name) for name, c in CONNECTIONS.items()] + [
    pytest.param(
        lambda s: {"REDIS_PARAMS": {"unix_socket_path": s.socket, "password": PASSWORD, "db": 4}},
        id="unix-socket",
    ),
]


@pytest.mark.parametrize("connection", CONNECTIONS)
def test_the_filter_connects_where_scrapy_redis_does(password_redis, connection):
    from scrapy import Request
    from scrapy.settings import Settings
    from scrapy_redis.connection import get_redis_from_settings

    from url_dedup.scrapy import RedisDupeFilter

    settings = Settings({**connection(password_redis), "URL_DEDUP_REDIS_PREFIX": "conn"})
    theirs = get_redis_from_settings(settings)
    theirs.ping()
    f = RedisDupeFilter._from_settings(settings, "site", None)
    assert not f.request_seen(Request("https://example.com/a"))
    assert f.request_seen(Request("https://example.com/a?"))
    # A URL the canonicalizer refuses goes to the set beside the filter, through redis-py.
    assert not f.request_seen(Request("data:,x"))
    assert f.request_seen(Request("data:,x"))
    # The filter is in the database scrapy-redis's scheduler uses.
    assert theirs.exists("conn:meta") and theirs.exists("conn:other")
    f.clear()
    assert theirs.keys("conn*") == []


def test_a_crawl_reaches_a_redis_with_a_password_given_in_redis_params(site, password_redis):
    settings = redis_settings("", "%(spider)s:seen")
    del settings["REDIS_URL"]
    settings.update(
        REDIS_HOST="127.0.0.1",
        REDIS_PORT=str(password_redis.port),
        REDIS_PARAMS='{"password": "%s"}' % PASSWORD,
    )
    log = crawl_ok(settings, [site.url("a/0"), site.url("b/0")])
    assert site.fetched() == site.pages()
    assert site.fetched_twice() == {}
    assert PASSWORD not in log and quote(PASSWORD, safe="") not in log
    assert password_redis.client().exists("site:seen:meta")


@pytest.mark.parametrize(
    "url, shown",
    [
        ("redis://:p%40ss%3Aw%2Frd@127.0.0.1:6379/0", "redis://:***@127.0.0.1:6379/0"),
        ("redis://alice:secret@h:1/2", "redis://alice:***@h:1/2"),
        ("redis://alice@h:1/0", "redis://alice@h:1/0"),
        ("redis://h:1/0", "redis://h:1/0"),
        ("unix:///run/r.sock?db=4&pass=p%40ss&user=bob", "unix:///run/r.sock?db=4&pass=***&user=bob"),
    ],
)
def test_logged_urls_hide_the_password(url, shown):
    from url_dedup._redis_settings import redacted

    assert redacted(url) == shown


@pytest.mark.parametrize(
    "extra, key",
    [
        pytest.param({}, "site:dupefilter", id="scrapy-redis-default"),
        pytest.param({"SCHEDULER_DUPEFILTER_KEY": "seen:%(spider)s"}, "seen:site", id="set"),
    ],
)
def test_the_filter_lives_at_scheduler_dupefilter_key(site, redis_url, redis_server, extra, key):
    from url_dedup import Outcome, UrlDedup

    settings = {**redis_settings(redis_url, ""), **extra}
    del settings["URL_DEDUP_REDIS_PREFIX"]
    crawl_ok(settings, [site.url("a/0")])
    fetched = site.fetched()
    assert fetched
    client = redis_server.client()
    assert client.exists(f"{key}:meta")
    assert not client.keys("*url-dedup*")
    # What the crawl admitted is in the filter at that key.
    seen = UrlDedup(redis=redis_url, redis_prefix=key)
    assert {seen.check_and_insert(site.url(p)) for p in fetched} == {Outcome.DUPLICATE}


def test_url_dedup_redis_prefix_wins_over_scheduler_dupefilter_key(redis_url):
    from scrapy.settings import Settings

    from url_dedup.scrapy import RedisDupeFilter

    both = {"REDIS_URL": redis_url, "SCHEDULER_DUPEFILTER_KEY": "theirs:%(spider)s"}
    f = RedisDupeFilter._from_settings(Settings(both), "site", None)
    assert f.prefix == "theirs:site"
    both["URL_DEDUP_REDIS_PREFIX"] = "ours:%(spider)s"
    f = RedisDupeFilter._from_settings(Settings(both), "site", None)
    assert f.prefix == "ours:site"


def url_dedup_log(log: str, level: str) -> list[str]:
    """The lines url_dedup.scrapy logged at ``level`` in a Scrapy log."""
    return [line for line in log.splitlines() if f"[url_dedup.scrapy] {level}:" in line]


def test_a_first_start_says_it_created_the_filter_without_a_warning(site, redis_url):
    log = crawl_ok(redis_settings(redis_url, "%(spider)s:seen"), [site.url("a/0")])
    assert url_dedup_log(log, "WARNING") == []
    (created,) = url_dedup_log(log, "INFO")
    assert "Created the shared filter site:seen" in created


def test_a_persisted_queue_without_its_filter_is_a_warning(site, redis_url, redis_server):
    """A crawl paused under scrapy-redis's own dupefilter, resumed under ours: the queue holds
    requests the new filter never saw."""
    settings = redis_settings(redis_url, "", DUPEFILTER_CLASS="scrapy_redis.dupefilter.RFPDupeFilter")
    del settings["URL_DEDUP_REDIS_PREFIX"]
    crawl_ok({**settings, "CLOSESPIDER_PAGECOUNT": "10", "CONCURRENT_REQUESTS": "1"},
             [site.url("a/0")])
    client = redis_server.client()
    assert client.exists("site:requests") and client.type("site:dupefilter") == b"set"
    log = crawl_ok({**settings, "DUPEFILTER_CLASS": "url_dedup.scrapy.RedisDupeFilter"},
                   [site.url("a/0")])
    (warning,) = url_dedup_log(log, "WARNING")
    assert "Created the shared filter site:dupefilter" in warning
    assert "site:requests holds requests" in warning
    assert "the key site:dupefilter holds another dupefilter's data" in warning


def test_an_earlier_run_in_jobdir_is_a_warning(redis_url, tmp_path, caplog):
    from scrapy.settings import Settings

    from url_dedup.scrapy import RedisDupeFilter

    (tmp_path / "spider.state").write_bytes(b"")
    settings = Settings({"REDIS_URL": redis_url, "JOBDIR": str(tmp_path)})
    with caplog.at_level("INFO", logger="url_dedup.scrapy"):
        RedisDupeFilter._from_settings(settings, "site", None)
    (record,) = caplog.records
    assert record.levelname == "WARNING"
    assert f"{tmp_path / 'spider.state'} exists" in record.getMessage()
