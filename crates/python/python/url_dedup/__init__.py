r"""URL deduplication for crawlers, from the url-dedup Rust crates.

:class:`UrlDedup` canonicalizes each URL, checks it against a keyed Bloom filter (growing,
so it keeps its false-positive rate however many URLs come), and records it: one call per
discovered URL, with learned rewrite rules (``rules=``, :func:`learn`), batches, snapshots
to files or bytes, and a filter shared through Redis by every process of a crawl with
exactly-once admission. :mod:`url_dedup.scrapy` plugs it into
Scrapy and scrapy-redis as a dupefilter.

>>> from url_dedup import UrlDedup, Outcome
>>> seen = UrlDedup(expected_urls=1000)
>>> seen.check_and_insert("https://example.com/?b=2&a=1&utm_source=feed") is Outcome.NEW
True
>>> seen.check_and_insert("https://EXAMPLE.com:443/?a=1&b=2#top") is Outcome.DUPLICATE
True
>>> canonicalize("https://example.com/a/./b?b=1&a=2", "w3lib")
'https://example.com/a/b?a=2&b=1'

Learned rules (the text of a rules file, or its path) fold a site's own aliases:

>>> rules = 'rules-format 1\nhost "wiki.example"\nreplace "/print/" "/"\n'
>>> wiki = UrlDedup(expected_urls=1000, rules=rules)
>>> wiki.check_and_insert("https://wiki.example/Main") is Outcome.NEW
True
>>> wiki.check_and_insert("https://wiki.example/print/Main") is Outcome.DUPLICATE
True
>>> pages = [(f"https://h.example/a/{i}{v}", f"page {i}") for i in range(3) for v in ("", "?p=1")]
>>> print(learn(pages, confirmed=True).split("\n\n")[1].splitlines()[:2])
['host "h.example"', 'ignore-param "p" in "/**"']
"""

from __future__ import annotations

from url_dedup._native import CONVENTIONS, Outcome, UrlDedup, canonicalize, learn, surt
from url_dedup.errors import (
    ConfigMismatchError,
    FilterError,
    InvalidUrlError,
    NotUtf8Error,
    RedisError,
    RulesError,
    SnapshotError,
    StateMismatchError,
    UrlDedupError,
)

__all__ = [
    "CONVENTIONS",
    "ConfigMismatchError",
    "FilterError",
    "InvalidUrlError",
    "NotUtf8Error",
    "Outcome",
    "RedisError",
    "RulesError",
    "SnapshotError",
    "StateMismatchError",
    "UrlDedup",
    "UrlDedupError",
    "canonicalize",
    "learn",
    "surt",
]
