#!/usr/bin/env bash
# Runs every fuzz target for a few seconds each when a nightly toolchain is present, starting
# from the committed corpus in fuzz/starting-corpus/<target> (valid inputs, so mutations begin
# past the checksums). New inputs go to a scratch directory: the committed corpus is never
# changed. Usage: scripts/fuzz-smoke.sh [SECONDS_PER_TARGET]
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
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
cd fuzz
for target in $(cargo +nightly fuzz list); do
  corpus=("$scratch/$target")
  mkdir -p "${corpus[0]}"
  if [ -d "starting-corpus/$target" ]; then
    corpus+=("starting-corpus/$target")
  fi
  echo "fuzzing $target for ${secs}s"
  cargo +nightly fuzz run "$target" "${corpus[@]}" -- -max_total_time="$secs" -rss_limit_mb=4096 \
    >"$scratch/$target.log" 2>&1 || {
    tail -50 "$scratch/$target.log"
    echo "fuzz target $target failed"
    exit 1
  }
  # libFuzzer's closing line: executions, edges covered (cov) and corpus size.
  grep -E '^#[0-9]+.*DONE' "$scratch/$target.log" | tail -1 || true
done
