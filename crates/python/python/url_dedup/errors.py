"""The exceptions url_dedup raises, one per kind of failure of the Rust crate's ``Error``.

Each derives from :class:`UrlDedupError`, and from the built-in exception it is a kind of, so
``except ValueError`` catches a bad URL as it would anywhere else in Python. A file that cannot
be read or written raises the usual :class:`OSError` (``FileNotFoundError``, ...).
"""

from __future__ import annotations

__all__ = [
    "UrlDedupError",
    "InvalidUrlError",
    "NotUtf8Error",
    "FilterError",
    "RedisError",
    "SnapshotError",
    "ConfigMismatchError",
    "StateMismatchError",
    "RulesError",
]


class UrlDedupError(Exception):
    """Base class of every url_dedup error."""


class InvalidUrlError(UrlDedupError, ValueError):
    """The input is not an absolute http(s) URL the canonicalizer accepts; nothing was recorded."""


class NotUtf8Error(UrlDedupError, ValueError):
    """Bytes that are not UTF-8 given to a deduplicator that canonicalizes URLs (only one
    created with ``canonicalization=None`` compares raw bytes)."""


class FilterError(UrlDedupError, ValueError):
    """The filter could not be built: a size or rate out of range, or not enough memory."""


class RedisError(UrlDedupError, ConnectionError):
    """The shared filter in Redis failed: unreachable, or holding a filter with other
    parameters under the prefix. A batch that meets it is not answered at all."""


class SnapshotError(UrlDedupError, ValueError):
    """A state snapshot is damaged, truncated or not a url-dedup snapshot."""


class ConfigMismatchError(SnapshotError):
    """A state snapshot was written under another configuration (canonicalization, similarity
    preset, filter kind) than the one asked for. Its keys were recorded in another form, so
    some answers would be wrong; pass ``accept_config_change=True`` to use it anyway.

    ``recorded`` and ``configured`` hold the two configurations, one ``name: value`` line each.
    """

    def __init__(self, message: str, recorded: str = "", configured: str = "") -> None:
        super().__init__(message)
        self.recorded = recorded
        self.configured = configured

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class StateMismatchError(SnapshotError):
    """A state snapshot holds components this configuration lacks (a similarity filter), or
    lacks some it has."""


class RulesError(UrlDedupError, ValueError):
    """Rules text (``UrlDedup(rules=...)``) that is not a rules file: its first wrong line.

    ``line`` is that line's number, from 1; ``path`` is the file read, or None for text given
    as a string.
    """

    def __init__(self, message: str, line: int = 0, path: str | None = None) -> None:
        super().__init__(message)
        self.line = line
        self.path = path

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""
