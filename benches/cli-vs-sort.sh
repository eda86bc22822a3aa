#!/usr/bin/env bash
# url-dedup against the tools people use to clean URL lists today, on one generated list, in
# one run: time, URLs/s, peak RSS, lines out, and URLs lost.
#
#   bash benches/cli-vs-sort.sh [COUNT]        # default 10,000,000 lines, 50% exact duplicates
#   ROUNDS=5 bash benches/cli-vs-sort.sh       # every tool 5 times, interleaved; medians
#   TOOLS="url-dedup,LC_ALL=C sort -u" bash benches/cli-vs-sort.sh   # a subset, by name
#   TOOLS="--feature-hashing=decider,--feature-hashing=workers" ...   # where --similar=crawler hashes
#   TOOLS="url-dedup --similar,--similar --feature-hashing=workers" ...  # where --similar hashes
#   TOOLS="url-dedup,url-dedup --similar,url-dedup --similar=crawler,LC_ALL=C sort -u" ...  # presets
#   INPUT=crates/similarity/data/real-urls.txt bash benches/cli-vs-sort.sh   # a given list
#
# The list has exact duplicates only and its URLs are already canonical, so every tool can
# find them and every tool should print the same number of lines; url-dedup's
# canonicalization would fold more on real lists. "lost" is the distinct count (awk's output,
# which is exact) minus the lines out; "expected" is what url-dedup --stats predicted.
# url-dedup sizes itself from the input, as a user who gives no -n gets.
#
# With ROUNDS above 1, round r runs the tools in turn starting from tool r, so that a burst of
# load from other processes lands on every tool alike; the table shows each tool's median time
# and the spread, and the last line each url-dedup row's median ratio to LC_ALL=C sort -u taken
# within rounds. The load average before and after is printed: on a shared machine, say which
# run a figure comes from.
set -euo pipefail
# Commands are split on spaces below; `[` in awk's program must not be taken for a glob.
set -f
cd "$(dirname "$0")/.."
count="${1:-10000000}"
rounds="${ROUNDS:-1}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cargo build --profile dist -q -p url-dedup-cli -p url-dedup-benches --bin url-dedup --bin gen-urls \
  --bin mem-latency

if [[ -n "${INPUT:-}" ]]; then
  cp "$INPUT" "$work/urls.txt"
  count=$(wc -l < "$work/urls.txt")
else
  target/dist/gen-urls "$count" 0.5 > "$work/urls.txt"
fi
distinct=$(awk '!seen[$0]++' "$work/urls.txt" | wc -l)
printf 'input: %s%s lines, %s distinct, %s MB; %s round(s); %s cores\n' "${INPUT:+$INPUT: }" "$count" \
  "$distinct" "$(( $(stat -c %s "$work/urls.txt") / 1000000 ))" "$rounds" "$(nproc)"
printf '%s; load before: %s\n\n' "$(target/dist/mem-latency)" "$(cut -d' ' -f1-3 /proc/loadavg)"

names=("url-dedup" "url-dedup --raw" "url-dedup --exact" "url-dedup --similar" "sort -u" \
  "LC_ALL=C sort -u" "awk '!seen[\$0]++'" "--feature-hashing=decider" "--feature-hashing=workers" \
  "url-dedup --similar=crawler" "--similar --feature-hashing=workers")
commands=("target/dist/url-dedup --quiet --stats" "target/dist/url-dedup --quiet --stats --raw" \
  "target/dist/url-dedup --quiet --stats --exact" "target/dist/url-dedup --quiet --stats --similar" \
  "sort -u" "env LC_ALL=C sort -u" "awk !seen[\$0]++" \
  "target/dist/url-dedup --quiet --stats --similar=crawler --feature-hashing=decider" \
  "target/dist/url-dedup --quiet --stats --similar=crawler --feature-hashing=workers" \
  "target/dist/url-dedup --quiet --stats --similar=crawler" \
  "target/dist/url-dedup --quiet --stats --similar --feature-hashing=workers")
selected=()
for i in "${!names[@]}"; do
  if [[ -z "${TOOLS:-}" ]] || [[ ",${TOOLS}," == *",${names[$i]},"* ]]; then selected+=("$i"); fi
done

# One run of tool $1 in round $2: seconds, peak RSS in KB, lines out, expected loss, CPU
# seconds (user and system).
measure() {
  local i="$1" round="$2" out="$work/out.txt"
  # shellcheck disable=SC2086 # the command is split on purpose
  if ! /usr/bin/time -f '%e %M %U %S' -o "$work/time" ${commands[$i]} < "$work/urls.txt" > "$out" 2> "$work/err.txt"; then
    echo "${names[$i]} failed: $(tail -1 "$work/err.txt")" >&2; return
  fi
  read -r secs kb user sys < "$work/time"
  printf '%s %s %s %s %s %s\n' "$round" "$secs" "$kb" "$(wc -l < "$out")" \
    "$(awk '/^lost/ {print $2}' "$work/err.txt")" "$(echo "$user + $sys" | bc -l)" >> "$work/runs.$i"
}

for ((round = 0; round < rounds; round++)); do
  for ((k = 0; k < ${#selected[@]}; k++)); do
    measure "${selected[$(( (k + round) % ${#selected[@]} ))]}" "$round"
  done
done

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

printf '%-30s %9s %15s %8s %12s %12s %11s %7s %10s\n' tool seconds "min-max" "CPU s" "URLs/s" \
  "peak RSS MB" "lines out" lost expected
for i in "${selected[@]}"; do
  runs="$work/runs.$i"
  [[ -s "$runs" ]] || continue
  secs=$(cut -d' ' -f2 "$runs" | median)
  spread="$(cut -d' ' -f2 "$runs" | sort -g | head -1)-$(cut -d' ' -f2 "$runs" | sort -g | tail -1)"
  kb=$(cut -d' ' -f3 "$runs" | median)
  out=$(cut -d' ' -f4 "$runs" | head -1)
  expected=$(cut -d' ' -f5 "$runs" | head -1)
  cpu=$(cut -d' ' -f6 "$runs" | median)
  printf '%-30s %9.2f %15s %8.2f %12.0f %12.1f %11s %7s %10s\n' "${names[$i]}" "$secs" "$spread" \
    "$cpu" "$(echo "$count / $secs" | bc -l)" "$(echo "$kb / 1024" | bc -l)" "$out" \
    "$(( distinct - out ))" "${expected:--}"
done

# Within each round, the peer's time over url-dedup's: how many times faster, median over
# rounds (peers: LC_ALL=C sort -u, awk).
for peer in 5 6; do
  peer_runs="$work/runs.$peer"
  [[ -s "$peer_runs" ]] || continue
  printf '\nspeed-up over %s (median of the per-round ratios):' "${names[$peer]}"
  for i in 0 1 2 3 7 8 9 10; do
    runs="$work/runs.$i"
    [[ -s "$runs" ]] || continue
    ratio=$(join <(cut -d' ' -f1,2 "$peer_runs" | sort) <(cut -d' ' -f1,2 "$runs" | sort) \
      | awk '{print $2 / $3}' | median)
    printf ' %s %.2fx;' "${names[$i]}" "$ratio"
  done
  printf '\n'
done
printf 'load after: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
