#!/usr/bin/env python3
"""Writes `surt-package.tsv`: SURT keys computed by the `surt` Python package, for
`tests/conformance_surt.rs` to compare with `url_dedup_canon::surt`.

Inputs, in this order: the lines of `surt-inputs.txt` (hand-picked cases: the record schemes
CDX files hold, hosts, ports, escapes, session ids), then every 40th distinct URL of the two
real lists in `crates/similarity/data` (documentation and source links of a Debian machine).

Each output line is `input TAB key`, with `\\`, tab, CR and LF escaped as `\\\\`, `\\t`, `\\r`
and `\\n`; an input on which the package raises is written with the key `!error`.

Usage (in a virtual environment outside the repository, with `pip install surt==0.3.1`):
    python3 surt-package.py > surt-package.tsv
"""
import os
import sys

import surt

HERE = os.path.dirname(os.path.abspath(__file__))
REAL = os.path.join(HERE, "..", "..", "..", "similarity", "data")


def escape(text):
    return (
        text.replace("\\", "\\\\")
        .replace("\t", "\\t")
        .replace("\r", "\\r")
        .replace("\n", "\\n")
    )


def unescape(text):
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            out.append({"\\": "\\", "t": "\t", "r": "\r", "n": "\n"}.get(text[i + 1], text[i + 1]))
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def inputs():
    with open(os.path.join(HERE, "surt-inputs.txt"), encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line and not line.startswith("# "):
                yield unescape(line)
    seen = set()
    for name in ("real-urls.txt", "real-urls-rust.txt"):
        with open(os.path.join(REAL, name), encoding="utf-8") as f:
            for line in f:
                url = line.rstrip("\n")
                if url not in seen:
                    seen.add(url)
                    if len(seen) % 40 == 0:
                        yield url


def main():
    out = sys.stdout
    out.write(f"# surt {surt.__version__ if hasattr(surt, '__version__') else '0.3.1'}: input TAB key\n")
    for url in inputs():
        try:
            key = surt.surt(url)
        except Exception:  # the package fails on some inputs; so must the crate
            key = "!error"
        out.write(f"{escape(url)}\t{escape(key)}\n")


if __name__ == "__main__":
    main()
