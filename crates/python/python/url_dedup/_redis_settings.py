"""Where the Scrapy dupefilters find Redis: the settings scrapy-redis reads, interpreted as
scrapy-redis and redis-py interpret them, turned into the URL the Rust client takes.

scrapy-redis (``scrapy_redis.connection.get_redis_from_settings``) starts from
``REDIS_PARAMS``, lets ``REDIS_URL``, ``REDIS_HOST``, ``REDIS_PORT`` and ``REDIS_DB`` override
it, and hands the result to redis-py, where the parts a URL spells out win over the same
parameters. The Redis client redis-py builds that way is the one truth: its connection
parameters become a URL, with user name and password percent-encoded, so a password holding
``@``, ``:`` or ``/`` reaches Redis as it was written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, quote, unquote, urlencode, urlsplit

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

# scrapy-redis's SETTINGS_PARAMS_MAP, less what does not choose the server.
_OVERRIDES = {"REDIS_URL": "url", "REDIS_HOST": "host", "REDIS_PORT": "port", "REDIS_DB": "db"}


def filter_redis(settings: BaseSettings) -> tuple[str, Any]:
    """The shared filter's Redis: its URL for the Rust client and a redis-py client of it.
    ``URL_DEDUP_REDIS_URL``, else the Redis of scrapy-redis's scheduler."""
    url = settings.get("URL_DEDUP_REDIS_URL")
    if url:
        return str(url), client_for_url(str(url))
    client = scrapy_redis_client(settings)
    return url_of(client), client


def scrapy_redis_client(settings: BaseSettings) -> Any:
    """The redis-py client scrapy-redis's scheduler makes of ``settings``: the same server,
    database and credentials. No connection is made until it is used."""
    import redis

    params = dict(settings.getdict("REDIS_PARAMS"))
    for setting, param in _OVERRIDES.items():
        value = settings.get(setting)
        if value:
            params[param] = value
    # Another client class (a cluster client, a subclass) still names the same server.
    params.pop("redis_cls", None)
    url = params.pop("url", None)
    if url:
        return redis.Redis.from_url(str(url), **params)
    return redis.Redis(**params)


def url_of(client: Any) -> str:
    """The URL under which the Rust client reaches the server ``client`` connects to."""
    import redis

    pool = client.connection_pool
    params = pool.connection_kwargs
    username, password = params.get("username"), params.get("password")
    provider = params.get("credential_provider")
    if provider is not None:
        credentials = provider.get_credentials()
        username, password = (None, *credentials) if len(credentials) == 1 else credentials
    db = int(params.get("db") or 0)
    if issubclass(pool.connection_class, redis.UnixDomainSocketConnection):
        # The Rust client reads a socket's credentials from the query, not the user info.
        query: dict[str, Any] = {"db": db}
        if username:
            query["user"] = username
        if password:
            query["pass"] = password
        return f"unix://{quote(str(params['path']))}?{urlencode(query)}"
    scheme = "rediss" if issubclass(pool.connection_class, redis.SSLConnection) else "redis"
    host = str(params.get("host") or "localhost")
    if ":" in host:
        host = f"[{host}]"
    userinfo = ""
    if username or password:
        userinfo = quote(username or "", safe="")
        if password:
            userinfo += ":" + quote(str(password), safe="")
        userinfo += "@"
    return f"{scheme}://{userinfo}{host}:{int(params.get('port') or 6379)}/{db}"


def client_for_url(url: str) -> Any:
    """A redis-py client of the server at ``url``, a URL as the Rust client reads it."""
    import redis

    parts = urlsplit(url)
    if parts.scheme in ("unix", "redis+unix"):
        query = {name: values[0] for name, values in parse_qs(parts.query).items()}
        return redis.Redis(
            unix_socket_path=unquote(parts.path),
            db=int(query.get("db", 0)),
            username=query.get("user"),
            password=query.get("pass"),
        )
    return redis.Redis.from_url(url)


def redacted(url: str) -> str:
    """``url`` with its password replaced by ``***``, for logs."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.password is not None:
        userinfo, _, hostport = netloc.rpartition("@")
        netloc = userinfo.split(":", 1)[0] + ":***@" + hostport
    query = parts.query
    if "pass=" in query:
        pairs = [(k, "***" if k == "pass" else v) for k, vs in parse_qs(query).items() for v in vs]
        query = urlencode(pairs, safe="*")
    # Spelled out: urlunsplit would drop the empty authority of unix:///path.
    return f"{parts.scheme}://{netloc}{parts.path}" + (f"?{query}" if query else "")
