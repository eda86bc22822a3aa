#!/usr/bin/env python3
"""Extracts the real URL lists `real-urls.txt` and `real-urls-rust.txt` from documentation and
source code installed on the build machine.

Sources of `real-urls.txt`, in this order (files sorted by path, so the output is deterministic
for a given machine):
  1. /usr/share/doc/**: Debian package documentation (copyright files, READMEs, changelogs,
     the Node.js API reference and release notes); gzip files are read decompressed.
  2. ~/.cargo/registry/src/*/*/{README.md,Cargo.toml}: the READMEs and manifests of the crates
     in the local Cargo cache.

Source of `real-urls-rust.txt` (with `--rust-sources`): every `.rs` file of the crates in the
local Cargo cache, sorted by path: the links of their doc comments and code (manual pages of
man.freebsd.org and man.openbsd.org, RFCs, issue trackers, API references).

Every http(s) URL is taken as written, with trailing punctuation that prose puts after links
removed. At most PER_FILE URLs are kept per file, so large changelogs do not drown the rest,
and the list stops at LIMIT URLs (keeping it small enough to commit). Duplicates are kept:
they are part of what a crawler sees.

Usage: python3 extract-real-urls.py > real-urls.txt
       python3 extract-real-urls.py --rust-sources > real-urls-rust.txt
"""
import glob
import gzip
import os
import re
import sys

PER_FILE = 100
LIMIT = 40_000
URL = re.compile(rb"https?://[^\s\"'<>()\[\]{}`|\\^]+")
TRAILING = b".,;:!?*_~"


def rust_sources():
    home = os.path.expanduser("~/.cargo/registry/src")
    return sorted(
        os.path.join(root, name)
        for root, _, names in os.walk(home)
        for name in names
        if name.endswith(".rs")
    )


def files():
    if "--rust-sources" in sys.argv[1:]:
        return rust_sources()
    doc = sorted(
        os.path.join(root, name)
        for root, _, names in os.walk("/usr/share/doc")
        for name in names
    )
    home = os.path.expanduser("~/.cargo/registry/src")
    crates = sorted(
        glob.glob(os.path.join(home, "*", "*", "README.md"))
        + glob.glob(os.path.join(home, "*", "*", "Cargo.toml"))
    )
    return doc + crates


def read(path):
    try:
        if os.path.islink(path) or not os.path.isfile(path):
            return b""
        if path.endswith(".gz"):
            with gzip.open(path, "rb") as f:
                return f.read(8 << 20)
        with open(path, "rb") as f:
            return f.read(8 << 20)
    except (OSError, EOFError):
        return b""


def main():
    out = sys.stdout.buffer
    total = 0
    for path in files():
        kept = 0
        for match in URL.finditer(read(path)):
            url = match.group(0).rstrip(TRAILING)
            if len(url) < 12 or len(url) > 2000:
                continue
            try:
                url.decode("ascii")
            except UnicodeDecodeError:
                continue
            out.write(url + b"\n")
            kept += 1
            total += 1
            if kept >= PER_FILE or total >= LIMIT:
                break
        if total >= LIMIT:
            break


if __name__ == "__main__":
    main()
