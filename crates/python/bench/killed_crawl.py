"""What a Scrapy crawl killed outright (SIGKILL) and resumed fetches, with url-dedup's
dupefilter and with the one it replaces, on the tests' generated site.

    crates/python/.venv/bin/python crates/python/bench/killed_crawl.py jobdir
    crates/python/.venv/bin/python crates/python/bench/killed_crawl.py scrapy-redis

``jobdir``: Scrapy's scheduler with ``JOBDIR``, ``url_dedup.scrapy.DupeFilter`` against
Scrapy's ``RFPDupeFilter``. ``scrapy-redis``: scrapy-redis's scheduler with
``SCHEDULER_PERSIST``, ``url_dedup.scrapy.RedisDupeFilter`` against scrapy-redis's
``RFPDupeFilter``. The crawl is killed once the site has answered ``--kill-after`` pages, then
run again with the same settings to its end. Prints one Markdown row per dupefilter.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from conftest import crawl, scrapy_process  # noqa: E402
from generated_site import Site  # noqa: E402
from processes import RedisServer  # noqa: E402

DUPEFILTERS = {
    "jobdir": {
        "url-dedup DupeFilter": "url_dedup.scrapy.DupeFilter",
        "Scrapy RFPDupeFilter": "scrapy.dupefilters.RFPDupeFilter",
    },
    "scrapy-redis": {
        "url-dedup RedisDupeFilter": "url_dedup.scrapy.RedisDupeFilter",
        "scrapy-redis RFPDupeFilter": "scrapy_redis.dupefilter.RFPDupeFilter",
    },
}


def run(mode: str, name: str, dupefilter: str, args: argparse.Namespace) -> str:
    site = Site(size=args.pages // 2)
    work = Path(tempfile.mkdtemp(prefix="killed-crawl-"))
    redis = RedisServer() if mode == "scrapy-redis" else None
    try:
        settings = {"DUPEFILTER_CLASS": dupefilter,
                    "CONCURRENT_REQUESTS": str(args.concurrent), "DOWNLOAD_DELAY": "0.05"}
        if redis is None:
            settings["JOBDIR"] = str(work / "job")
        else:
            settings.update(SCHEDULER="scrapy_redis.scheduler.Scheduler", REDIS_URL=redis.url,
                            SCHEDULER_PERSIST="True")
        start = [site.url("a/0"), site.url("b/0")]
        proc = scrapy_process(settings, start)
        while len(site.fetched()) < args.kill_after:
            if proc.poll() is not None:
                raise SystemExit("the crawl ended before it was killed: raise --pages")
            time.sleep(0.01)
        proc.kill()
        proc.communicate()
        before = site.fetched()
        site.reset()
        result = crawl({**settings, "DOWNLOAD_DELAY": "0"}, start, timeout=600)
        if result.returncode != 0:
            raise SystemExit(result.stderr.decode(errors="replace")[-4000:])
        after = site.fetched()
        never = site.pages() - before - after
        return (f"| {name} | {len(site.pages())} | {len(before)} | {len(after)} "
                f"| {len(never)} | {len(before & after)} |")
    finally:
        site.close()
        if redis is not None:
            redis.stop()
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=DUPEFILTERS)
    parser.add_argument("--pages", type=int, default=1200)
    parser.add_argument("--kill-after", type=int, default=300)
    parser.add_argument("--concurrent", type=int, default=8)
    args = parser.parse_args()
    print("| dupefilter | pages | fetched before the kill | fetched on resume "
          "| never fetched | fetched twice |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, dupefilter in DUPEFILTERS[args.mode].items():
        print(run(args.mode, name, dupefilter, args), flush=True)


if __name__ == "__main__":
    main()
