#!/usr/bin/env bash
# The project's test command (README): every crate's unit, integration, property and doc tests,
# with every feature on, so serde and the optional backends are tested too; then the Python
# bindings' and Scrapy dupefilters' tests (pytest). Arguments go to cargo test.
#
# Every part runs even when an earlier one failed, and the run ends with one line per part:
# what ran, passed, failed and was skipped (and why). The exit status is 0 only when every
# part passed.
set -uo pipefail
cd "$(dirname "$0")/.."

logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
summary=()
failed=0

# Runs part $1 (a name) as the rest of the arguments, its output shown and kept for the tally.
part() {
  local name="$1"
  shift
  printf '\n=== %s\n' "$name"
  "$@" 2>&1 | tee "$logs/$name.log"
  return "${PIPESTATUS[0]}"
}

# Sums cargo test's "test result:" lines, and adds the tests that skipped for want of a
# program: each appends "<test>: <why>" to $URL_DEDUP_SKIP_LOG (the harness hides their
# stderr).
export URL_DEDUP_SKIP_LOG="$logs/skipped"
cargo_tally() {
  awk '
    /^test result:/ {
      for (i = 1; i < NF; i++) {
        if ($(i + 1) ~ /^passed;?$/) p += $i
        if ($(i + 1) ~ /^failed;?$/) f += $i
        if ($(i + 1) ~ /^ignored;?$/) g += $i
      }
    }
    END { printf "%d passed, %d failed, %d ignored", p, f, g }' "$1"
  if [ -s "$URL_DEDUP_SKIP_LOG" ]; then
    printf ', %d skipped (%s)' "$(wc -l <"$URL_DEDUP_SKIP_LOG")" "$(head -n 1 "$URL_DEDUP_SKIP_LOG")"
  else
    printf ', 0 skipped'
  fi
}

if part dependencies bash scripts/install-test-deps.sh; then
  summary+=("dependencies: installed or present")
else
  summary+=("dependencies: FAILED to install (see above); the parts below may skip tests")
  failed=1
fi

if part rust cargo test --workspace --all-features --no-fail-fast "$@"; then
  summary+=("rust: passed: $(cargo_tally "$logs/rust.log")")
else
  summary+=("rust: FAILED: $(cargo_tally "$logs/rust.log")")
  failed=1
fi

if part python bash crates/python/test.sh; then
  summary+=("python: passed: $(tail -n 1 "$logs/python.log" | tr -d '=')")
else
  summary+=("python: FAILED: $(tail -n 1 "$logs/python.log" | tr -d '=')")
  failed=1
fi

printf '\n=== summary\n'
printf '%s\n' "${summary[@]}"
exit "$failed"
