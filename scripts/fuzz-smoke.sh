#!/usr/bin/env bash
# Runs every fuzz target for a few seconds each when a nightly toolchain is present.
# Usage: scripts/fuzz-smoke.sh [SECONDS_PER_TARGET]
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-30}"
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
  echo "no nightly toolchain: fuzz smoke skipped"
  exit 0
fi
if ! command -v cargo-fuzz >/dev/null 2>&1; then
  cargo install --locked cargo-fuzz --version 0.13.2
fi
cd fuzz
for target in $(cargo +nightly fuzz list); do
  echo "fuzzing $target for ${secs}s"
  cargo +nightly fuzz run "$target" -- -max_total_time="$secs" -rss_limit_mb=4096 >"/tmp/fuzz-$target.log" 2>&1 || {
    tail -50 "/tmp/fuzz-$target.log"
    echo "fuzz target $target failed"
    exit 1
  }
  grep -E '^Done|#[0-9]+.*DONE' "/tmp/fuzz-$target.log" | tail -1 || true
done
