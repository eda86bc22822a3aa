#!/usr/bin/env bash
# Installs what the tests need and a fresh machine may lack. Idempotent and quiet when all is there.
set -euo pipefail
need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
if ((${#need[@]})); then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing: ${need[*]}"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "warning: missing ${need[*]} and cannot install (not root or no apt-get)" >&2
  fi
fi

# Debian's chromium, for the crawler's status page test in a real browser
# (examples/crawler/tests/browser.rs). Only where apt-get is and we are root: elsewhere that
# test says it was skipped, and every other test runs as usual.
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing: chromium"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null ||
      echo "warning: chromium did not install; the browser test will be skipped" >&2
  else
    echo "warning: no chromium and cannot install it (not root or no apt-get); the browser test will be skipped" >&2
  fi
fi

# The Python tests' virtualenv (crates/python/.venv) from the pinned requirements; redone only
# when they change, so a machine that has it spends a file comparison here.
(
  cd "$(dirname "$0")/../crates/python"
  if ! cmp -s requirements-test.txt .venv/requirements-test.txt 2>/dev/null; then
    python=$(command -v python3.11 || command -v python3)
    echo "installing the Python test requirements into crates/python/.venv ($("$python" --version))"
    rm -rf .venv
    "$python" -m venv .venv
    .venv/bin/pip install --quiet -r requirements-test.txt
    cp requirements-test.txt .venv/requirements-test.txt
  fi
)

# warcio, the independent WARC reader the crawler's WARC tests check their files with
# (examples/crawler/tests/warc.rs), in target/warcio, so it is never committed. Without it
# those tests check the digests themselves only.
(
  cd "$(dirname "$0")/.."
  if [ ! -x target/warcio/bin/warcio ]; then
    python=$(command -v python3.11 || command -v python3)
    echo "installing warcio into target/warcio"
    rm -rf target/warcio
    "$python" -m venv target/warcio && target/warcio/bin/pip install --quiet "warcio==1.8.1"
  fi
) || echo "warning: warcio not installed; the WARC tests check digests themselves only" >&2
