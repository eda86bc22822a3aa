#!/usr/bin/env bash
# url-dedup against the tools people use to clean URL lists today, on one generated list, in
# one run: URLs/s and peak RSS.
#
#   bash benches/cli-vs-sort.sh [COUNT]        # default 10,000,000 lines, 50% exact duplicates
#
# The list has exact duplicates only, so every tool can find them; url-dedup's canonicalization
# would fold more on real lists. `sort -u` runs with LC_ALL=C (byte order, its fastest mode).
set -euo pipefail
cd "$(dirname "$0")/.."
count="${1:-10000000}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cargo build --profile dist -q -p url-dedup-cli -p url-dedup-benches --bin url-dedup --bin gen-urls
python3 -c 'import uro' 2>/dev/null || pip install --quiet uro==1.0.2 >/dev/null 2>&1 || echo "uro not installable; skipped" >&2

target/dist/gen-urls "$count" 0.5 > "$work/urls.txt"
distinct=$(LC_ALL=C sort -u "$work/urls.txt" | wc -l)
printf 'input: %s lines, %s distinct, %s MB\n\n' "$count" "$distinct" "$(( $(stat -c %s "$work/urls.txt") / 1000000 ))"
printf '%-28s %10s %14s %12s %12s\n' tool seconds "URLs/s" "peak RSS MB" "lines out"

measure() {
  local name="$1"; shift
  if ! /usr/bin/time -f '%e %M' -o "$work/time" "$@" < "$work/urls.txt" > "$work/out.txt" 2>/dev/null; then
    printf '%-28s failed\n' "$name"; return
  fi
  read -r secs kb < "$work/time"
  printf '%-28s %10.2f %14.0f %12.1f %12s\n' "$name" "$secs" \
    "$(echo "$count / $secs" | bc -l)" "$(echo "$kb / 1024" | bc -l)" "$(wc -l < "$work/out.txt")"
}

measure "url-dedup (exact)" target/dist/url-dedup --quiet -n "$distinct"
measure "url-dedup --raw" target/dist/url-dedup --quiet --raw -n "$distinct"
measure "url-dedup --similar crawler" target/dist/url-dedup --quiet --similar -n "$distinct"
measure "sort -u (LC_ALL=C)" env LC_ALL=C sort -u
measure "awk '!seen[\$0]++'" awk '!seen[$0]++'
if python3 -c 'import uro' 2>/dev/null; then
  measure "uro 1.0.2" uro
fi
