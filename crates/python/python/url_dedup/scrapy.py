"""Scrapy dupefilters backed by url-dedup: a bounded-memory Bloom filter in place of a set of
request fingerprints.

* :class:`DupeFilter` (``DUPEFILTER_CLASS = "url_dedup.scrapy.DupeFilter"``) for plain Scrapy.
  With ``JOBDIR`` its state is kept there, as Scrapy keeps ``requests.seen``, so a crawl
  paused cleanly and resumed does not fetch a page again.
* :class:`RedisDupeFilter` for scrapy-redis's scheduler: the filter lives in Redis and every
  process naming the same prefix (Scrapy processes, the Rust crawler, ``url-dedup --redis``)
  shares it, each request admitted by exactly one of them.

What a request is keyed on (``URL_DEDUP_KEY``):

* ``"fingerprint"``: Scrapy's request fingerprint (``crawler.request_fingerprinter``: method,
  ``w3lib.url.canonicalize_url`` of the URL, body), exactly what Scrapy's own ``RFPDupeFilter``
  compares, and honouring ``REQUEST_FINGERPRINTER_CLASS``. The default of :class:`DupeFilter`.
* ``"url"``: the request's URL in its canonical form under ``URL_DEDUP_CANONICALIZATION``
  (default ``"crawler"``, as the Rust crawler and the ``url-dedup`` command; ``"w3lib"`` is
  Scrapy's notion of the same URL). Method and body are not part of the key. Cheaper (no
  SHA1, no JSON) and shared with the other url-dedup programs. The default of
  :class:`RedisDupeFilter`. A URL the canonicalizer refuses (``data:``, ``ftp:``, ``s3:``, ...)
  is keyed on its Scrapy fingerprint instead, in a set beside the filter.

Both honour ``dont_filter``: such a request is never filtered and not recorded.

With ``URL_DEDUP_RULES`` (a rules file written by ``url-dedup learn`` or by hand), each
canonical URL is rewritten by the rules before it is decided on, so the URLs the rules map
onto one page are fetched once. Rules rewrite URLs, so they need ``"url"`` keys: the default
key becomes ``"url"``, and ``URL_DEDUP_KEY = "fingerprint"`` with rules is an error.

Settings (all optional):

====================================  ==========================================================
``URL_DEDUP_KEY``                     ``"fingerprint"`` or ``"url"`` (see above)
``URL_DEDUP_CANONICALIZATION``        convention for ``"url"`` keys (``url_dedup.CONVENTIONS``)
``URL_DEDUP_EXPECTED_URLS``           first size of the filter (default 1,000,000; it grows)
``URL_DEDUP_FALSE_POSITIVE_RATE``     chance a new request is dropped as seen (default 1e-6;
                                      1e-5 for ``RedisDupeFilter``, whose every bit costs
                                      Redis CPU)
``URL_DEDUP_FILTER``                  ``"growing"`` (default), ``"segmented"``, ``"classic"``,
                                      ``"exact"`` (no false positives, 19-39 bytes a request)
``URL_DEDUP_ACCEPT_CONFIG_CHANGE``    resume a ``JOBDIR`` state saved under other settings
``URL_DEDUP_RULES``                   a rules file (path) or its text: learned rewrite rules
                                      applied after canonicalization (``"url"`` keys only)
``URL_DEDUP_REDIS_URL``               Redis of the shared filter (default: scrapy-redis's, from
                                      ``REDIS_URL``, ``REDIS_HOST``, ``REDIS_PORT``,
                                      ``REDIS_DB`` and ``REDIS_PARAMS``)
``URL_DEDUP_REDIS_PREFIX``            key prefix of the shared filter, ``%(spider)s`` replaced by
                                      the spider's name (default: scrapy-redis's
                                      ``SCHEDULER_DUPEFILTER_KEY``, ``"%(spider)s:dupefilter"``)
``URL_DEDUP_HASH_KEY``                32 hex digits keying the filter's hashes (default: random;
                                      a shared filter created with a key keeps it out of Redis,
                                      and every process sharing it must give the same one)
====================================  ==========================================================
"""

from __future__ import annotations

import logging
import os
import struct
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Callable

from scrapy.dupefilters import BaseDupeFilter
from scrapy.utils.job import job_dir
from scrapy.utils.misc import load_object
from scrapy.utils.request import RequestFingerprinter, referer_str

from url_dedup import Outcome, UrlDedup
from url_dedup._redis_settings import (
    client_for_url,
    filter_redis,
    redacted,
    scrapy_redis_client,
)
from url_dedup.errors import InvalidUrlError

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Request
    from scrapy.settings import BaseSettings
    from scrapy.spiders import Spider

__all__ = ["DupeFilter", "RedisDupeFilter", "KEYS"]

KEYS = ("fingerprint", "url")
"""What a request can be keyed on (``URL_DEDUP_KEY``)."""

STATE_FILE = "url-dedup.state"
"""The filter's snapshot in ``JOBDIR``."""
JOURNAL_FILE = "url-dedup.journal"
"""Keys admitted since the snapshot, in ``JOBDIR``: a crawl killed before it could save
resumes its filter from snapshot plus journal, as Scrapy's own ``requests.seen`` is appended
per request (Scrapy's queue is lost all the same, see :class:`DupeFilter`)."""

OPEN_FILE = "url-dedup.open"
"""Present in ``JOBDIR`` while a crawl uses it: one found at the start means the last crawl
did not close (it was killed), and Scrapy lost the requests it had queued."""

# A journal record: kind, key length, key. Kind FILTER keys went to the filter, kind OTHER
# keys (fingerprints of URLs the canonicalizer refused) to the set beside it.
_RECORD = struct.Struct(">BI")
_FILTER, _OTHER = 0, 1

DEFAULT_PREFIX = "%(spider)s:dupefilter"
"""The shared filter's key prefix when neither ``URL_DEDUP_REDIS_PREFIX`` nor
``SCHEDULER_DUPEFILTER_KEY`` is set: scrapy-redis's default key of its own filter."""

_DEFAULT_FPR = 1e-6
_DEFAULT_EXPECTED = 1_000_000


class _RequestKeys:
    """The key a request is deduplicated on, and the configuration of the filter it goes to:
    shared by both dupefilters so that they key requests identically."""

    def __init__(
        self,
        key: str,
        canonicalization: str | None,
        fingerprinter: Any,
    ) -> None:
        if key not in KEYS:
            raise ValueError(f"URL_DEDUP_KEY must be one of {', '.join(KEYS)}, not {key!r}")
        self.by_url = key == "url"
        self.key = key
        # Fingerprints are compared as bytes; URLs in their canonical form.
        self.canonicalization = canonicalization if self.by_url else None
        self.fingerprinter = fingerprinter or RequestFingerprinter()

    @classmethod
    def from_settings(
        cls, settings: BaseSettings, default_key: str, fingerprinter: Any = None
    ) -> _RequestKeys:
        # Rules rewrite URLs: with them, requests are keyed on their URL unless told otherwise
        # (which check_rules() then refuses).
        if settings.get("URL_DEDUP_RULES"):
            default_key = "url"
        return cls(
            settings.get("URL_DEDUP_KEY") or default_key,
            settings.get("URL_DEDUP_CANONICALIZATION", "crawler"),
            fingerprinter,
        )

    def check_rules(self, options: dict[str, Any]) -> None:
        """Refuses rules with fingerprint keys: a fingerprint leaves them no URL to rewrite."""
        if options.get("rules") is not None and not self.by_url:
            raise ValueError(
                f'URL_DEDUP_RULES rewrites URLs: it needs URL_DEDUP_KEY = "url", not {self.key!r}'
            )

    def dedup_options(
        self, settings: BaseSettings, default_fpr: float | None = _DEFAULT_FPR
    ) -> dict[str, Any]:
        """Keyword arguments of :class:`UrlDedup` from the settings; a ``default_fpr`` of None
        leaves the rate to :class:`UrlDedup` (1e-5 for a filter in Redis)."""
        rate = settings.get("URL_DEDUP_FALSE_POSITIVE_RATE", default_fpr)
        return {
            "expected_urls": settings.getint("URL_DEDUP_EXPECTED_URLS", _DEFAULT_EXPECTED),
            "false_positive_rate": None if rate is None else float(rate),
            "canonicalization": self.canonicalization,
            "filter": settings.get("URL_DEDUP_FILTER", "growing"),
            "accept_config_change": settings.getbool("URL_DEDUP_ACCEPT_CONFIG_CHANGE"),
            "hash_key": _hash_key(settings.get("URL_DEDUP_HASH_KEY")),
            "rules": settings.get("URL_DEDUP_RULES") or None,
        }

    def fingerprint(self, request: Request) -> bytes:
        return self.fingerprinter.fingerprint(request)


class _Logging:
    """Scrapy's own way of reporting filtered requests: the first at DEBUG, then all of them
    with ``DUPEFILTER_DEBUG``; counted in the ``dupefilter/filtered`` stat."""

    logger = logging.getLogger(__name__)
    debug = False
    logdupes = True

    def log(self, request: Request, spider: Spider) -> None:
        if self.debug:
            msg = "Filtered duplicate request: %(request)s (referer: %(referer)s)"
            args = {"request": request, "referer": referer_str(request)}
            self.logger.debug(msg, args, extra={"spider": spider})
        elif self.logdupes:
            msg = (
                "Filtered duplicate request: %(request)s"
                " - no more duplicates will be shown"
                " (see DUPEFILTER_DEBUG to show all duplicates)"
            )
            self.logger.debug(msg, {"request": request}, extra={"spider": spider})
            self.logdupes = False
        spider.crawler.stats.inc_value("dupefilter/filtered")


class DupeFilter(_Logging, BaseDupeFilter):
    """A drop-in ``DUPEFILTER_CLASS`` for Scrapy's scheduler with a Bloom filter in memory.

    Keyed on Scrapy's request fingerprint by default (``URL_DEDUP_KEY``). With ``JOBDIR``, the
    filter is saved to ``JOBDIR/url-dedup.state`` when the spider closes (and each admitted key
    is appended to ``JOBDIR/url-dedup.journal`` in between, which is folded into the state
    whenever it outgrows it), and restored when the crawl resumes.

    A crawl killed outright resumes with the filter but not with Scrapy's queue, which Scrapy
    saves only when the spider closes: requests queued at the kill are never fetched, as with
    Scrapy's own dupefilter. The next start warns (``JOBDIR/url-dedup.open`` is left behind).
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        keys: _RequestKeys | None = None,
        options: dict[str, Any] | None = None,
        debug: bool = False,
        stats: Any = None,
    ) -> None:
        self.keys = keys or _RequestKeys("fingerprint", None, None)
        options = dict(options or {"false_positive_rate": _DEFAULT_FPR})
        options.setdefault("canonicalization", self.keys.canonicalization)
        self.keys.check_rules(options)
        self.debug = debug
        self.stats = stats
        self.other: set[bytes] = set()
        self.journal: BinaryIO | None = None
        self.journal_bytes = 0
        self.state_path = self.journal_path = self.open_path = None
        if path is None:
            self.dedup = UrlDedup(**options)
            _report_rules(self.dedup, options.get("rules"))
            return
        self.state_path = Path(path, STATE_FILE)
        self.journal_path = Path(path, JOURNAL_FILE)
        if self.state_path.exists():
            self.dedup = UrlDedup.load(self.state_path, **options)
        else:
            self.dedup = UrlDedup(**options)
            evidence = [] if self.journal_path.exists() else _earlier_run_in_jobdir(str(path))
            if evidence:
                self.logger.warning(
                    "JOBDIR %(jobdir)s holds an earlier run (%(evidence)s) but no url-dedup "
                    "state: was it run with another dupefilter? Requests it saw will be "
                    "fetched again",
                    {"jobdir": str(path), "evidence": "; ".join(evidence)},
                )
        self._replay_journal()
        _report_rules(self.dedup, options.get("rules"))
        # Made once the state is read: a start that fails leaves no false sign of a kill.
        self.open_path = Path(path, OPEN_FILE)
        if not _create_new(self.open_path):
            self.logger.warning(
                "The last crawl in JOBDIR %(jobdir)s did not close (killed?): Scrapy saves "
                "its request queue only when the spider closes, so the requests it had queued "
                "are lost, and this filter, which saw them, will not let them be fetched. "
                "Start with an empty JOBDIR to crawl them",
                {"jobdir": str(path)},
            )

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> DupeFilter:
        settings = crawler.settings
        keys = _RequestKeys.from_settings(settings, "fingerprint", crawler.request_fingerprinter)
        return cls(
            job_dir(settings),
            keys=keys,
            options=keys.dedup_options(settings),
            debug=settings.getbool("DUPEFILTER_DEBUG"),
            stats=crawler.stats,
        )

    def request_seen(self, request: Request) -> bool:
        if request.dont_filter:
            return False
        if not self.keys.by_url:
            key = self.keys.fingerprint(request)
            if self.dedup.check_and_insert_bytes(key) is not Outcome.NEW:
                return True
            self._journal(_FILTER, key)
            return False
        try:
            if self.dedup.check_and_insert(request.url) is not Outcome.NEW:
                return True
            self._journal(_FILTER, request.url.encode())
            return False
        except InvalidUrlError:
            key = self.keys.fingerprint(request)
            if key in self.other:
                return True
            self.other.add(key)
            self._journal(_OTHER, key)
            return False

    def close(self, reason: str) -> None:
        if self.stats is not None:
            self.stats.set_value("url_dedup/memory_bytes", self.dedup.memory_bytes)
            self.stats.set_value("url_dedup/false_positive_rate", self.dedup.false_positive_rate)
        if self.state_path is not None:
            self._save()
        if self.journal is not None:
            self.journal.close()
            self.journal = None
        if self.open_path is not None:
            self.open_path.unlink(missing_ok=True)

    def _journal(self, kind: int, key: bytes) -> None:
        if self.journal is None:
            return
        self._append(kind, key)
        # Folded into the state once it outgrows it: disk stays within twice the state, and a
        # resume replays at most that much.
        if self.journal_bytes > max(self.dedup.memory_bytes, 1 << 20):
            self._save()

    def _save(self) -> None:
        """Saves the state, then starts the journal afresh with what the state lacks (the
        set of other keys). A crash in between replays keys the state has: harmless."""
        assert self.state_path is not None and self.journal_path is not None
        self.dedup.save(self.state_path)
        if self.journal is not None:
            self.journal.close()
        self.journal = _open_private(self.journal_path, truncate=True)
        self.journal_bytes = 0
        for key in self.other:
            self._append(_OTHER, key)
        self.journal.flush()

    def _append(self, kind: int, key: bytes) -> None:
        assert self.journal is not None
        record = _RECORD.pack(kind, len(key)) + key
        self.journal.write(record)
        self.journal_bytes += len(record)

    def _replay_journal(self) -> None:
        assert self.journal_path is not None
        journal = _open_private(self.journal_path)
        data = journal.read()
        filtered: list[bytes] = []
        pos = 0
        while pos + _RECORD.size <= len(data):
            kind, size = _RECORD.unpack_from(data, pos)
            key = data[pos + _RECORD.size : pos + _RECORD.size + size]
            if len(key) < size:
                break  # cut short by a crash: the rest was never admitted for sure
            pos += _RECORD.size + size
            if kind == _OTHER:
                self.other.add(key)
            else:
                filtered.append(key)
        self.dedup.check_and_insert_batch_bytes(filtered)
        # Appending to a torn record would garble everything after it: start clean.
        journal.truncate(pos)
        journal.seek(pos)
        self.journal = journal
        self.journal_bytes = pos


class RedisDupeFilter(_Logging, BaseDupeFilter):
    """A dupefilter for scrapy-redis's scheduler (``SCHEDULER =
    "scrapy_redis.scheduler.Scheduler"``, ``DUPEFILTER_CLASS =
    "url_dedup.scrapy.RedisDupeFilter"``) whose filter lives in Redis.

    Every process naming the same Redis and prefix shares the one filter with exactly-once
    admission: of several processes finding the same new request at once, one is told it is
    new. Keyed on the canonical URL by default, so Rust crawler processes and
    ``url-dedup --redis`` with the same prefix share it too.

    Its keys start with scrapy-redis's ``SCHEDULER_DUPEFILTER_KEY`` (default
    ``"%(spider)s:dupefilter"``), or ``URL_DEDUP_REDIS_PREFIX`` when that is set: ``PREFIX:meta``,
    the data keys ``PREFIX:N`` and the set ``PREFIX:other``.

    The scheduler clears the filter when the spider closes unless ``SCHEDULER_PERSIST`` is
    True, as scrapy-redis does with its own set: set it when several processes share a crawl,
    or the first to finish clears the filter under the others.

    The process that creates the filter says so at INFO, or with a WARNING when
    ``earlier_run()`` (asked only then) names traces of an earlier run: from the settings,
    requests scrapy-redis persisted in its queue, another dupefilter's key at the prefix, or
    an earlier run's state in ``JOBDIR``. ``server`` is a redis-py client of the same Redis
    (default: one made from ``redis_url``).
    """

    def __init__(
        self,
        redis_url: str,
        prefix: str,
        *,
        keys: _RequestKeys | None = None,
        options: dict[str, Any] | None = None,
        debug: bool = False,
        server: Any = None,
        earlier_run: Callable[[], list[str]] | None = None,
    ) -> None:
        self.keys = keys or _RequestKeys("url", "crawler", None)
        options = dict(options or {})
        options.setdefault("canonicalization", self.keys.canonicalization)
        self.keys.check_rules(options)
        self.redis_url = redis_url
        self.prefix = prefix
        self.other_key = f"{prefix}:other"
        self.debug = debug
        self.dedup = UrlDedup(redis=redis_url, redis_prefix=prefix, **options)
        _report_rules(self.dedup, options.get("rules"))
        self._server: Any = server
        if self.dedup.created_shared_filter:
            self._report_creation(earlier_run() if earlier_run else [])

    @classmethod
    def from_spider(cls, spider: Spider) -> RedisDupeFilter:
        """What scrapy-redis's scheduler calls."""
        return cls._from_settings(spider.settings, spider.name, spider.crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RedisDupeFilter:
        spider = getattr(crawler, "spider", None)
        return cls._from_settings(crawler.settings, getattr(spider, "name", "scrapy"), crawler)

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> RedisDupeFilter:
        return cls._from_settings(settings, "scrapy", None)

    @classmethod
    def _from_settings(
        cls, settings: BaseSettings, spider_name: str, crawler: Crawler | None
    ) -> RedisDupeFilter:
        fingerprinter = getattr(crawler, "request_fingerprinter", None)
        keys = _RequestKeys.from_settings(settings, "url", fingerprinter)
        # Where scrapy-redis keeps its own filter, unless our own setting says otherwise.
        prefix = (
            settings.get("URL_DEDUP_REDIS_PREFIX")
            or settings.get("SCHEDULER_DUPEFILTER_KEY")
            or DEFAULT_PREFIX
        )
        prefix %= {"spider": spider_name}
        url, server = filter_redis(settings)

        def earlier_run() -> list[str]:
            return _earlier_run_in_jobdir(job_dir(settings)) + _earlier_run_in_redis(
                settings, spider_name, prefix, server
            )

        return cls(
            url,
            prefix,
            keys=keys,
            options=keys.dedup_options(settings, None),
            debug=settings.getbool("DUPEFILTER_DEBUG"),
            server=server,
            earlier_run=earlier_run,
        )

    def _report_creation(self, evidence: list[str]) -> None:
        """Says that this process created the shared filter: news on a first start, a
        warning when ``evidence`` shows an earlier run, whose requests will be fetched again."""
        args = {"prefix": self.prefix, "redis": redacted(self.redis_url)}
        if not evidence:
            self.logger.info("Created the shared filter %(prefix)s in %(redis)s", args)
            return
        self.logger.warning(
            "Created the shared filter %(prefix)s in %(redis)s, empty, but an earlier run left "
            "traces (%(evidence)s): the filter it used is gone (Redis restarted without "
            "persistence, another prefix or dupefilter?) and requests it saw will be fetched "
            "again",
            {**args, "evidence": "; ".join(evidence)},
        )

    def request_seen(self, request: Request) -> bool:
        if request.dont_filter:
            return False
        try:
            if self.keys.by_url:
                outcome = self.dedup.check_and_insert(request.url)
            else:
                outcome = self.dedup.check_and_insert_bytes(self.keys.fingerprint(request))
            return outcome is not Outcome.NEW
        except InvalidUrlError:
            # Shared as scrapy-redis shares its fingerprints: SADD answers exactly once.
            return self.server.sadd(self.other_key, self.keys.fingerprint(request)) == 0

    def clear(self) -> None:
        """Deletes the shared filter from Redis (scrapy-redis's scheduler calls this when the
        spider closes without ``SCHEDULER_PERSIST``). Processes still using it must reopen it."""
        server = self.server
        names = [self.other_key]
        pattern = _glob_escape(self.prefix) + ":*"
        names += list(server.scan_iter(match=pattern, count=1000))
        for start in range(0, len(names), 1000):
            server.delete(*names[start : start + 1000])

    def close(self, reason: str = "") -> None:
        """Leaves the shared filter in Redis: other processes may still use it."""

    @property
    def server(self) -> Any:
        """A redis-py client of the same Redis, for the set of other keys and for clearing."""
        if self._server is None:
            self._server = client_for_url(self.redis_url)
        return self._server


def redis_url(settings: BaseSettings) -> str:
    """The Redis of the shared filter, as a URL: ``URL_DEDUP_REDIS_URL``, else the server,
    database and credentials scrapy-redis's scheduler connects to (``REDIS_URL``,
    ``REDIS_HOST``, ``REDIS_PORT``, ``REDIS_DB`` and ``REDIS_PARAMS``, as redis-py reads them)."""
    return filter_redis(settings)[0]


def _open_private(path: Path, truncate: bool = False) -> BinaryIO:
    """``path`` opened for reading and writing, created readable by its owner only; a
    symbolic link there is an error (``OSError``), never followed."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(path, flags | (os.O_TRUNC if truncate else 0), 0o600)
    return os.fdopen(fd, "r+b")


def _create_new(path: Path) -> bool:
    """Creates the empty file ``path`` (owner only); False if something is there already."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        os.close(os.open(path, flags, 0o600))
    except FileExistsError:
        return False
    return True


def _earlier_run_in_jobdir(jobdir: str | None) -> list[str]:
    """What an earlier run of a crawl left in its ``JOBDIR``: Scrapy's own dupefilter's
    fingerprints, the spider's state, the scheduler's queue."""
    if not jobdir:
        return []
    found = [
        f"{path} exists"
        for path in (Path(jobdir, "requests.seen"), Path(jobdir, "spider.state"))
        if path.exists()
    ]
    queue = Path(jobdir, "requests.queue")
    if queue.is_dir() and any(queue.iterdir()):
        found.append(f"{queue} holds requests")
    return found


def _earlier_run_in_redis(
    settings: BaseSettings, spider_name: str, prefix: str, server: Any
) -> list[str]:
    """What an earlier run of a scrapy-redis crawl left in Redis: requests its scheduler
    persisted (``SCHEDULER_PERSIST``), another dupefilter's data at the filter's key."""
    if settings.getbool("SCHEDULER_FLUSH_ON_START"):
        return []  # the scheduler empties queue and filter: a fresh start by request
    found = []
    if _uses_scrapy_redis_scheduler(settings):
        from scrapy_redis import defaults

        queue = settings.get("SCHEDULER_QUEUE_KEY") or defaults.SCHEDULER_QUEUE_KEY
        queue %= {"spider": spider_name}
        # The scheduler's Redis, which URL_DEDUP_REDIS_URL may have made another one.
        if scrapy_redis_client(settings).exists(queue):
            found.append(f"scrapy-redis's queue {queue} holds requests")
    if server.exists(prefix):
        found.append(f"the key {prefix} holds another dupefilter's data")
    return found


def _uses_scrapy_redis_scheduler(settings: BaseSettings) -> bool:
    """Whether ``SCHEDULER`` is scrapy-redis's scheduler or a subclass of it."""
    try:
        from scrapy_redis.scheduler import Scheduler
    except ImportError:
        return False
    configured = settings.get("SCHEDULER")
    if isinstance(configured, str):
        configured = load_object(configured)
    return isinstance(configured, type) and issubclass(configured, Scheduler)


def _report_rules(dedup: UrlDedup, rules: Any) -> None:
    """Says at INFO how many rules rewrite URLs, and from which file (or the setting's text)."""
    if rules is None:
        return
    source = "the URL_DEDUP_RULES text" if isinstance(rules, str) and "\n" in rules else rules
    _Logging.logger.info(
        "Rewriting URLs with %(count)d learned rules from %(source)s",
        {"count": dedup.rule_count, "source": str(source)},
    )


def _hash_key(text: str | None) -> bytes | None:
    if not text:
        return None
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) != 16:
        raise ValueError("URL_DEDUP_HASH_KEY must be 32 hex digits")
    return key


def _glob_escape(text: str) -> str:
    """``text`` matched literally by a Redis glob pattern (SCAN MATCH)."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)

