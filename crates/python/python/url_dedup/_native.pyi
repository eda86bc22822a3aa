"""Type stubs of the compiled module ``url_dedup._native`` (re-exported by ``url_dedup``)."""

from __future__ import annotations

import enum
import os
from collections.abc import Iterable
from typing import Literal, final

from url_dedup.errors import UrlDedupError

Convention = Literal["crawler", "rfc3986", "w3lib", "safe-browsing", "ia", "surt"]
FilterKind = Literal["growing", "segmented", "classic", "exact"]
Preset = Literal["crawler", "page", "document004"]

CONVENTIONS: list[str]
"""The names ``canonicalization=`` and :func:`canonicalize` accept."""

@final
class Outcome(enum.Enum):
    """What :meth:`UrlDedup.check_and_insert` decided about a URL.

    The three members are the only instances, so ``outcome is Outcome.NEW`` works.
    """

    NEW = 0
    """Never seen, now recorded: crawl it."""
    DUPLICATE = 1
    """Seen before (or, at the filter's false-positive rate, a URL that hashes like one)."""
    SIMILAR = 2
    """A different URL whose every similarity feature was seen (only with ``similarity=``)."""

    @property
    def is_new(self) -> bool:
        """Whether the URL should be crawled: only ``NEW`` is."""

@final
class UrlDedup:
    """Deduplicates URLs: canonicalize, check a Bloom filter, optionally fold similar URLs.

    Thread-safe. Batch, snapshot and Redis calls release the GIL.

    :param expected_urls: how many distinct URLs to size for. A guess is fine: the default
        growing filter adds capacity as needed and keeps its rate.
    :param false_positive_rate: the chance that a new URL is taken for a seen one (and not
        crawled): 0.001 by default, 1e-5 with ``redis``. The growing filter never exceeds it.
    :param canonicalization: a named convention (see :data:`CONVENTIONS`): ``"crawler"`` (the
        default: RFC 3986 normalization, no fragment, sorted query, no tracking or session
        parameters), ``"w3lib"`` (Scrapy's ``canonicalize_url``), ... ``None`` compares keys
        byte for byte (any bytes, such as request fingerprints).
    :param filter: ``"growing"`` (default), ``"segmented"`` or ``"classic"`` (fixed size), or
        ``"exact"`` (keyed 128-bit fingerprints: no false positive in practice, 19-39 bytes
        per URL).
    :param similarity: ``"crawler"``, ``"page"`` (the crawler preset's folds from one feature,
        a seventh of the memory) or ``"document004"`` to fold URLs whose every feature was
        seen into :attr:`Outcome.SIMILAR`.
    :param similarity_false_positive_rate: the chance that a value of one URL feature is taken
        for seen (default: ``false_positive_rate``). A URL is folded by chance only if every
        feature it does not share with earlier URLs matches by chance, so a looser rate takes
        less memory and time; only with ``similarity``.
    :param hash_key: 16 bytes keying the filter's hashes (default: random), for reproducible
        runs or a shared filter created up front.
    :param redis: keep the filter in Redis at this URL (``redis://host:6379/0``) so every
        process naming the same ``redis_prefix`` shares it, each URL admitted once across all.
        The first process creates the filter, sized by these arguments; later ones adopt its
        size and key. A similarity filter stays local.
    :param redis_prefix: key prefix of the shared filter (the ``url-dedup`` command's default).
    :param accept_config_change: let :meth:`load` use a state written under another
        configuration.
    :param rules: learned rewrite rules (``url-dedup learn``, :func:`learn`, or written by
        hand): the path of a rules file, or its text (a ``str`` holding a line break). Each
        canonical form is rewritten by them before it is decided on, so the URLs they map onto
        one page count once, exactly as ``url-dedup --rules FILE``. Every rule applies,
        candidate or confirmed. They are not part of a saved state: give them to :meth:`load`
        too.
    :raises FilterError: for a size or rate out of range.
    :raises RedisError: when the shared filter cannot be opened.
    :raises ValueError: for an unknown convention, filter or preset name, or a similarity rate
        without a preset.
    :raises RulesError: for rules text that is not a rules file (``.line`` names the line).
    :raises OSError: when the rules file cannot be read.
    """

    def __init__(
        self,
        expected_urls: int = 1_000_000,
        false_positive_rate: float | None = None,
        *,
        canonicalization: Convention | str | None = "crawler",
        filter: FilterKind | str = "growing",
        similarity: Preset | str | None = None,
        similarity_false_positive_rate: float | None = None,
        hash_key: bytes | None = None,
        redis: str | None = None,
        redis_prefix: str = "url-dedup",
        accept_config_change: bool = False,
        rules: str | os.PathLike[str] | None = None,
    ) -> None: ...
    @staticmethod
    def load(
        path: str | os.PathLike[str],
        expected_urls: int = 1_000_000,
        false_positive_rate: float | None = None,
        *,
        canonicalization: Convention | str | None = "crawler",
        filter: FilterKind | str = "growing",
        similarity: Preset | str | None = None,
        similarity_false_positive_rate: float | None = None,
        hash_key: bytes | None = None,
        redis: str | None = None,
        redis_prefix: str = "url-dedup",
        accept_config_change: bool = False,
        rules: str | os.PathLike[str] | None = None,
    ) -> UrlDedup:
        """Restores a state file written by :meth:`save`.

        The options must name the configuration it was saved with (canonicalization,
        similarity, filter kind); sizes and keys come from the file. With ``redis``, the file
        seeds the shared filter instead.

        :raises ConfigMismatchError: when the file was saved under another configuration.
        :raises SnapshotError: when the file is damaged or not a state file.
        :raises OSError: when it cannot be read.
        """
    @staticmethod
    def from_bytes(
        data: bytes,
        expected_urls: int = 1_000_000,
        false_positive_rate: float | None = None,
        *,
        canonicalization: Convention | str | None = "crawler",
        filter: FilterKind | str = "growing",
        similarity: Preset | str | None = None,
        similarity_false_positive_rate: float | None = None,
        hash_key: bytes | None = None,
        redis: str | None = None,
        redis_prefix: str = "url-dedup",
        accept_config_change: bool = False,
        rules: str | os.PathLike[str] | None = None,
    ) -> UrlDedup:
        """Restores a state from :meth:`to_bytes`; as :meth:`load`."""
    def check_and_insert(self, url: str) -> Outcome:
        """Records ``url`` and says whether it was new.

        :raises InvalidUrlError: when canonicalization is on and ``url`` is not an absolute
            http(s) URL (nothing is recorded).
        :raises RedisError: when the shared filter fails.
        """
    def check_and_insert_canonical(self, url: str) -> tuple[Outcome, str]:
        """:meth:`check_and_insert`, with the canonical form the decision was made on."""
    def check_and_insert_bytes(self, key: bytes) -> Outcome:
        """:meth:`check_and_insert` for a key of raw bytes, such as a request fingerprint.

        Compared byte for byte without canonicalization; with it, ``key`` must be a UTF-8 URL.

        :raises NotUtf8Error: for bytes that are not UTF-8 when canonicalization is on.
        """
    def check_and_insert_batch(self, urls: Iterable[str]) -> list[Outcome | UrlDedupError]:
        """Checks and records many URLs with one call to the filter (one round trip to Redis).

        One item per input, in order: an :class:`Outcome`, or the exception (an
        :class:`InvalidUrlError`) of a URL that could not be decided. A URL repeated in the
        batch is ``NEW`` the first time and ``DUPLICATE`` after.

        :raises RedisError: when the shared filter fails (the whole batch is unanswered).
        """
    def check_and_insert_batch_canonical(
        self, urls: Iterable[str]
    ) -> list[tuple[Outcome, str] | UrlDedupError]:
        """:meth:`check_and_insert_batch`, with each URL's canonical form."""
    def check_and_insert_batch_bytes(
        self, keys: Iterable[bytes | str]
    ) -> list[Outcome | UrlDedupError]:
        """:meth:`check_and_insert_batch` for raw keys, as :meth:`check_and_insert_bytes`."""
    def contains(self, url: str) -> bool:
        """Whether ``url`` was recorded (the exact filter only), without recording it.

        :raises InvalidUrlError: as :meth:`check_and_insert`.
        """
    def __contains__(self, url: str) -> bool:
        """``url in dedup``: :meth:`contains`, False for a URL without a canonical form."""
    def canonicalize(self, url: str) -> str:
        """The canonical form of ``url`` under this deduplicator's convention."""
    def save(self, path: str | os.PathLike[str]) -> None:
        """Writes the whole state to ``path``, atomically (a temporary file renamed over it).

        A shared filter is copied out of Redis.
        """
    def to_bytes(self) -> bytes:
        """The whole state as bytes, for :meth:`from_bytes`."""
    @property
    def expected_urls(self) -> int:
        """Distinct URLs the filter was sized for (the first layer of a growing filter)."""
    @property
    def false_positive_rate(self) -> float:
        """The chance, now, that a new URL is taken for a seen one. NaN in Redis."""
    @property
    def estimated_urls(self) -> float:
        """Estimated distinct URLs recorded. NaN in Redis."""
    @property
    def memory_bytes(self) -> int:
        """Bytes of filter state, in this process or in Redis."""
    @property
    def is_over_capacity(self) -> bool:
        """Whether a fixed-size filter holds more URLs than it was sized for."""
    @property
    def created_shared_filter(self) -> bool | None:
        """With ``redis``: True when opening this deduplicator created the shared filter,
        False when it found one there; None in memory. True for a job that ran before means
        Redis lost its data (a restart without persistence): every URL is new again."""
    @property
    def canonicalization(self) -> str | None:
        """The convention's name, or None when keys are compared byte for byte."""
    @property
    def rule_count(self) -> int:
        """How many learned rules rewrite each canonical form; 0 without ``rules``."""
    @property
    def redis(self) -> str | None:
        """The Redis URL of a shared filter."""
    @property
    def redis_prefix(self) -> str | None:
        """The key prefix of a shared filter."""

def canonicalize(url: str, convention: Convention | str = "crawler") -> str:
    """The canonical form of ``url`` under a named convention, without any filter.

    :raises InvalidUrlError: when ``url`` has no canonical form.
    :raises ValueError: for an unknown convention.
    """

def surt(url: str) -> str:
    """The SURT key of ``url`` (``org,example)/path?query``), as CDX indexes sort them."""

def learn(
    pages: Iterable[tuple[str, bytes | str] | tuple[str, bytes | str, int | None]],
    *,
    canonicalization: Convention | str | None = "crawler",
    min_pages: int = 3,
    min_urls: int = 12,
    max_distance: int = 3,
    confirmed: bool = False,
) -> str:
    """Learns rewrite rules from what a crawl fetched; returns the text of a rules file.

    Each item is ``(url, digest)`` or ``(url, digest, simhash)``: URLs with equal digests
    (``bytes`` or ``str``, such as a payload's SHA-1) served one page. Pages whose 64-bit
    SimHashes are at most ``max_distance`` bits apart neither support nor contradict a rule.
    A rule is kept when it maps URLs of at least ``min_pages`` pages onto another URL of their
    page, or saves at least ``min_urls`` fetches, and never puts two different pages on one URL. URLs are canonicalized under
    ``canonicalization`` first: apply the rules with the same convention. Rules are learned
    as candidates, or confirmed with ``confirmed=True``; ``UrlDedup(rules=...)`` applies both.

    >>> pages = [(f"https://h.example/a/{i}{v}", str(i)) for i in range(3) for v in ("", "?p=1")]
    >>> rules = learn(pages)
    >>> UrlDedup(rules=rules).canonicalize("https://h.example/a/7?p=1")
    'https://h.example/a/7'

    :raises InvalidUrlError: for a URL without a canonical form (nothing is learned).
    """
