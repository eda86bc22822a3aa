"""Memory per request and time per ``request_seen`` of Scrapy dupefilters, side by side.

    crates/python/.venv/bin/python crates/python/bench/dupefilters.py 1000000 10000000

Each dupefilter is measured in a fresh process, on the same generated requests (distinct
URLs of a few thousand sites, 60-90 bytes each), in the same run:

* ``scrapy``: Scrapy's default ``RFPDupeFilter`` (a Python set of SHA1 fingerprints);
* ``scrapy-redis``: scrapy-redis's ``RFPDupeFilter`` (``SADD`` of 40-character hex
  fingerprints to a Redis set);
* ``url-dedup fingerprint`` and ``url-dedup url``: ``url_dedup.scrapy.DupeFilter`` keyed on
  Scrapy's fingerprint or the canonical URL (Bloom filter in the process);
* ``url-dedup redis``: ``url_dedup.scrapy.RedisDupeFilter`` (the shared filter in Redis).

Memory is the growth of the process's resident set (in-process filters) or of Redis's
``used_memory`` (Redis filters) over the run, divided by the requests. Time is the wall time
of the ``request_seen`` calls alone (requests are built outside the timed part), first for
every request once (all new), then for a sample of 100,000 seen ones again (all duplicates).
The false-positive rate of the url-dedup filters is 1e-6, their default; in the process the
filter is the default growing one with a first layer of a million, in Redis a fixed-size
filter sized for the run's requests.

Build the extension for measuring first (the dupefilters are Python code around it):

    cd crates/python && VIRTUAL_ENV=$PWD/.venv .venv/bin/maturin develop --profile dist
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

FILTERS = ["scrapy", "url-dedup fingerprint", "url-dedup url", "scrapy-redis", "url-dedup redis"]
# Not in the default run: the in-process filter sized for the run instead of growing to it.
SIZED = "url-dedup url, sized"
CHUNK = 10_000
DUPLICATE_SAMPLE = 100_000


def url(i: int) -> str:
    site = (i * 2654435761) % 5_000
    return f"https://shop{site}.example.com/catalog/{i % 97}/item-{i}.html?ref=list&page={i % 13}"


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def make_filter(name: str, redis_url: str, n: int):
    from scrapy.settings import Settings
    from scrapy.utils.test import get_crawler

    crawler = get_crawler(settings_dict={"REDIS_URL": redis_url})
    if name in ("scrapy-redis", "url-dedup redis"):
        import redis

        redis.Redis.from_url(redis_url).flushall()
    if name == "scrapy":
        from scrapy.dupefilters import RFPDupeFilter

        return RFPDupeFilter.from_crawler(crawler), None
    if name == "scrapy-redis":
        import redis
        from scrapy_redis.dupefilter import RFPDupeFilter

        server = redis.Redis.from_url(redis_url)
        return RFPDupeFilter(server, key="bench:dupefilter"), server
    from url_dedup.scrapy import DupeFilter, RedisDupeFilter, _RequestKeys

    # In the process, the default: a growing filter whose first layer holds a million.
    settings = Settings({"URL_DEDUP_EXPECTED_URLS": 1_000_000})
    if name == "url-dedup redis":
        # In Redis the filter has a fixed size: sized for the run, as a crawl would size it.
        settings = Settings({"URL_DEDUP_EXPECTED_URLS": n})
        keys = _RequestKeys("url", "crawler", None)
        f = RedisDupeFilter(redis_url, "bench", keys=keys, options=keys.dedup_options(settings))
        return f, f.server
    if name == SIZED:
        settings = Settings({"URL_DEDUP_EXPECTED_URLS": n})
    key = "fingerprint" if name == "url-dedup fingerprint" else "url"
    keys = _RequestKeys(key, "crawler", crawler.request_fingerprinter)
    return DupeFilter(keys=keys, options=keys.dedup_options(settings)), None


def measure(name: str, n: int, redis_url: str) -> dict:
    """One dupefilter, in this process."""
    from scrapy import Request

    Request("https://warm.example/")  # imports and caches out of the measured memory
    gc.collect()
    f, server = make_filter(name, redis_url, n)
    if server is not None:
        redis_before = server.info("memory")["used_memory"]
    rss_before = rss_bytes()
    new_seconds = 0.0
    wrongly_seen = 0
    for start in range(0, n, CHUNK):
        requests = [Request(url(i)) for i in range(start, min(n, start + CHUNK))]
        t = time.perf_counter()
        for r in requests:
            if f.request_seen(r):
                wrongly_seen += 1
        new_seconds += time.perf_counter() - t
        del requests
    gc.collect()
    rss_growth = rss_bytes() - rss_before
    redis_growth = server.info("memory")["used_memory"] - redis_before if server else 0
    sample = range(0, n, max(1, n // DUPLICATE_SAMPLE))
    duplicate_seconds, missed = 0.0, 0
    for start in range(0, len(sample), CHUNK):
        requests = [Request(url(i)) for i in sample[start : start + CHUNK]]
        t = time.perf_counter()
        for r in requests:
            if not f.request_seen(r):
                missed += 1
        duplicate_seconds += time.perf_counter() - t
    assert missed == 0, f"{name}: {missed} seen requests taken for new"
    state = getattr(getattr(f, "dedup", None), "memory_bytes", None)
    return {
        "filter": name,
        "requests": n,
        "process_bytes_per_request": rss_growth / n,
        "redis_bytes_per_request": redis_growth / n,
        "filter_state_bytes_per_request": state / n if state else None,
        "us_per_new_request": new_seconds / n * 1e6,
        "us_per_seen_request": duplicate_seconds / len(sample) * 1e6,
        "new_taken_for_seen": wrongly_seen,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("requests", type=int, nargs="*", default=[1_000_000])
    parser.add_argument("--only", action="append", choices=[*FILTERS, SIZED])
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--redis", help=argparse.SUPPRESS)
    parser.add_argument("--json", type=Path, help="also write the rows to this file")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.requests[0], args.redis)), flush=True)
        return

    from processes import RedisServer

    server = RedisServer()
    rows = []
    try:
        for n in args.requests:
            for name in args.only or FILTERS:
                out = subprocess.run(
                    [sys.executable, __file__, str(n), "--one", name, "--redis", server.url],
                    check=True, capture_output=True, text=True,
                ).stdout
                rows.append(json.loads(out.splitlines()[-1]))
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    finally:
        server.stop()
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    print("| requests | dupefilter | bytes/request (process) | bytes/request (Redis) "
          "| µs per new request | µs per seen request | new taken for seen |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['requests']:,} | {r['filter']} | {r['process_bytes_per_request']:.1f} "
              f"| {r['redis_bytes_per_request']:.1f} | {r['us_per_new_request']:.2f} "
              f"| {r['us_per_seen_request']:.2f} | {r['new_taken_for_seen']} |")


if __name__ == "__main__":
    main()
