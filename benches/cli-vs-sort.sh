#!/usr/bin/env bash
# url-dedup against the tools people use to clean URL lists today, on one generated list, in
# one run: time, URLs/s, peak RSS, lines out, and URLs lost.
#
#   bash benches/cli-vs-sort.sh [COUNT]        # default 10,000,000 lines, 50% exact duplicates
#
# The list has exact duplicates only and its URLs are already canonical, so every tool can
# find them and every tool should print the same number of lines; url-dedup's
# canonicalization would fold more on real lists. "lost" is the distinct count (awk's output,
# which is exact) minus the lines out; "expected" is what url-dedup --stats predicted.
# url-dedup sizes itself from the input, as a user who gives no -n gets.
set -euo pipefail
cd "$(dirname "$0")/.."
count="${1:-10000000}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cargo build --profile dist -q -p url-dedup-cli -p url-dedup-benches --bin url-dedup --bin gen-urls

target/dist/gen-urls "$count" 0.5 > "$work/urls.txt"
distinct=$(awk '!seen[$0]++' "$work/urls.txt" | wc -l)
printf 'input: %s lines, %s distinct, %s MB\n\n' "$count" "$distinct" "$(( $(stat -c %s "$work/urls.txt") / 1000000 ))"
printf '%-30s %9s %12s %12s %11s %7s %10s\n' tool seconds "URLs/s" "peak RSS MB" "lines out" lost expected

measure() {
  local name="$1"; shift
  if ! /usr/bin/time -f '%e %M' -o "$work/time" "$@" < "$work/urls.txt" > "$work/out.txt" 2> "$work/err.txt"; then
    printf '%-30s failed: %s\n' "$name" "$(tail -1 "$work/err.txt")"; return
  fi
  read -r secs kb < "$work/time"
  local out expected
  out=$(wc -l < "$work/out.txt")
  expected=$(awk '/^lost/ {print $2}' "$work/err.txt")
  printf '%-30s %9.2f %12.0f %12.1f %11s %7s %10s\n' "$name" "$secs" \
    "$(echo "$count / $secs" | bc -l)" "$(echo "$kb / 1024" | bc -l)" "$out" \
    "$(( distinct - out ))" "${expected:--}"
}

measure "url-dedup" target/dist/url-dedup --quiet --stats
measure "url-dedup --raw" target/dist/url-dedup --quiet --stats --raw
measure "url-dedup --exact" target/dist/url-dedup --quiet --stats --exact
measure "url-dedup --similar" target/dist/url-dedup --quiet --stats --similar
measure "sort -u" sort -u
measure "LC_ALL=C sort -u" env LC_ALL=C sort -u
measure "awk '!seen[\$0]++'" awk '!seen[$0]++'
