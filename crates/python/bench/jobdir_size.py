"""What ``url_dedup.scrapy.DupeFilter`` keeps in ``JOBDIR``: the state file's size by
``URL_DEDUP_EXPECTED_URLS``, ``URL_DEDUP_FALSE_POSITIVE_RATE`` and requests recorded.

    crates/python/.venv/bin/python crates/python/bench/jobdir_size.py

The filter is the dupefilter's own (the default growing filter, keyed on 20-byte request
fingerprints as with ``URL_DEDUP_KEY = "fingerprint"``); the size is that of the file
``save`` writes, which is ``JOBDIR/url-dedup.state`` once the spider closed (the journal is
then empty). Between saves the journal adds up to the state's size again, at least 1 MiB.
Prints one Markdown table; the figures do not depend on the machine.
"""

from __future__ import annotations

import argparse
import hashlib
import tempfile
from pathlib import Path

from url_dedup import UrlDedup

CHUNK = 50_000


def fingerprints(start: int, stop: int) -> list[bytes]:
    return [hashlib.sha1(i.to_bytes(8, "little")).digest() for i in range(start, stop)]


def state_bytes(expected: int, rate: float, recorded: int, directory: Path) -> int:
    dedup = UrlDedup(expected, rate, canonicalization=None)
    for start in range(0, recorded, CHUNK):
        dedup.check_and_insert_batch_bytes(fingerprints(start, min(start + CHUNK, recorded)))
    path = directory / "url-dedup.state"
    dedup.save(path)
    return path.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--expected", type=int, nargs="+",
                        default=[10_000, 100_000, 1_000_000, 10_000_000])
    parser.add_argument("--rate", type=float, nargs="+", default=[1e-6, 1e-3])
    parser.add_argument("--recorded", type=int, nargs="+", default=[10_000, 1_000_000])
    args = parser.parse_args()
    print("| expected URLs | rate | requests recorded | state file | bytes a request |")
    print("|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for rate in args.rate:
            for expected in args.expected:
                for recorded in args.recorded:
                    size = state_bytes(expected, rate, recorded, Path(tmp))
                    print(f"| {expected:,} | {rate:g} | {recorded:,} | {size / 1e6:,.2f} MB "
                          f"| {size / recorded:,.1f} |", flush=True)


if __name__ == "__main__":
    main()
