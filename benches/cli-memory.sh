#!/usr/bin/env bash
# What a URL costs the url-dedup command at each fill level: the filter's bytes per distinct
# URL held, as --stats reports them, and the process's peak RSS, on generated lists of
# several sizes (half of each list repeats), for the default filter and --exact. The first
# layer is sized from each list as a user who gives no -n gets, so the figures follow the
# layers the default adds as the list grows.
#
#   bash benches/cli-memory.sh                      # 100,000 / 1,000,000 / 10,000,000 lines
#   COUNTS="1000000 30000000" bash benches/cli-memory.sh
#   MODES=";--exact;--fpr 0.001" bash benches/cli-memory.sh
set -euo pipefail
cd "$(dirname "$0")/.."
read -r -a counts <<< "${COUNTS:-100000 1000000 10000000}"
IFS=';' read -r -a modes <<< "${MODES:-;--exact}"
[[ ${#modes[@]} -gt 0 ]] || modes=("")
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cargo build --profile dist -q -p url-dedup-cli -p url-dedup-benches --bin url-dedup --bin gen-urls
printf 'commit %s\n\n' "$(git rev-parse --short HEAD)"
printf '%-14s %12s %12s %14s %16s %13s\n' mode lines distinct "filter bytes" "bytes per URL" "peak RSS MB"
for count in "${counts[@]}"; do
  target/dist/gen-urls "$count" 0.5 > "$work/urls.txt"
  for mode in "${modes[@]}"; do
    # shellcheck disable=SC2086 # the options are split on purpose
    /usr/bin/time -f '%M' -o "$work/time" target/dist/url-dedup --quiet --stats $mode \
      < "$work/urls.txt" > /dev/null 2> "$work/err"
    # `new (kept)  N` and `filter  B bytes (X bytes per URL held)`
    distinct=$(awk '/^new \(kept\)/ {print $3}' "$work/err")
    bytes=$(awk '/^filter/ {print $2}' "$work/err")
    per_url=$(awk '/^filter/ {gsub(/\(/, "", $4); print $4}' "$work/err")
    printf '%-14s %12s %12s %14s %16s %13.1f\n' "${mode:-(default)}" "$count" "$distinct" \
      "$bytes" "$per_url" "$(echo "$(cat "$work/time") / 1024" | bc -l)"
  done
done
