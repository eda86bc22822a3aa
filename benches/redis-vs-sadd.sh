#!/usr/bin/env bash
# The shared filter as users get it (`url-dedup --redis`, defaults) against the plain way of
# sharing a seen set, `SADD` of the URL, at 1 and 4 clients, on one redis-server: Redis's CPU
# time per line and its bytes per distinct URL.
#
#   bash benches/redis-vs-sadd.sh [LINES]     # default 2,000,000 lines, half of them repeats
#   ROUNDS=3 bash benches/redis-vs-sadd.sh    # every method 3 times, interleaved; medians
#   OPTIONS="--fpr 0.01;--fpr 1e-6" bash benches/redis-vs-sadd.sh   # also these url-dedup runs
#
# The list is gen-urls' (url_dedup_benches::CrawlList). With 4 clients it is cut into four
# parts (`split -n l/4`) run at once, by four url-dedup processes on one filter, or by four
# `redis-cli --pipe` streaming `SADD seen <url>` (the cheapest way to send SADD: no client
# waits for a reply before sending the next command). Before each run the server is emptied
# (FLUSHALL); Redis's CPU is utime + stime of the redis-server process from /proc/<pid>/stat
# over the run, its memory used_memory from INFO memory after the run, over the distinct URLs.
# A ratio is SADD's Redis CPU over url-dedup's within a round (above 1: url-dedup costs Redis
# less), median over rounds. The machine's random read latency and load are printed beside.
set -euo pipefail
cd "$(dirname "$0")/.."
lines="${1:-2000000}"
rounds="${ROUNDS:-1}"
work="$(mktemp -d)"
server=""
cleanup() {
  if [[ -n "$server" ]]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

cargo build --profile dist -q -p url-dedup-cli -p url-dedup-benches --bin url-dedup --bin gen-urls --bin mem-latency
target/dist/gen-urls "$lines" 0.5 > "$work/urls.txt"
distinct=$(sort -u "$work/urls.txt" | wc -l)
(cd "$work" && split -n l/4 -d urls.txt part.)
# RESP for SADD seen <url>, one file per client count.
resp() { LC_ALL=C awk '{printf "*3\r\n$4\r\nSADD\r\n$4\r\nseen\r\n$%d\r\n%s\r\n", length($0), $0}' "$1"; }
resp "$work/urls.txt" > "$work/urls.resp"
for part in "$work"/part.0?; do resp "$part" > "$part.resp"; done

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" \
  --logfile "$work/redis.log" &
server=$!
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.1; done
url="redis://127.0.0.1:$port/"
ticks=$(getconf CLK_TCK)
cpu() { awk -v t="$ticks" '{print ($14 + $15) / t}' "/proc/$server/stat"; }
memory() { redis-cli -p "$port" info memory | awk -F: '/^used_memory:/ {print $2+0}'; }

names=()
commands=()
add() { names+=("$1"); commands+=("$2"); }
add "url-dedup --redis, 1 client" "dedup1"
add "url-dedup --redis, 4 clients" "dedup4"
add "SADD of the URL, 1 client" "sadd1"
add "SADD of the URL, 4 clients" "sadd4"
IFS=';' read -r -a extra <<< "${OPTIONS:-}"
for options in "${extra[@]}"; do
  [[ -n "$options" ]] || continue
  add "url-dedup --redis $options, 1 client" "dedup1 $options"
  add "url-dedup --redis $options, 4 clients" "dedup4 $options"
done

# run KIND [OPTIONS...]: the method's wall seconds and lines printed (url-dedup only).
run() {
  local kind="$1"; shift
  case "$kind" in
    dedup1)
      target/dist/url-dedup --quiet --redis "$url" "$@" "$work/urls.txt" | wc -l ;;
    dedup4)
      for part in "$work"/part.0?; do
        target/dist/url-dedup --quiet --redis "$url" "$@" "$part" > "$part.out" &
      done
      wait
      cat "$work"/part.0?.out | wc -l ;;
    sadd1)
      redis-cli -p "$port" --pipe < "$work/urls.resp" > /dev/null; echo - ;;
    sadd4)
      for part in "$work"/part.0?; do redis-cli -p "$port" --pipe < "$part.resp" > /dev/null & done
      wait; echo - ;;
  esac
}

printf 'lines: %s, %s distinct; %s round(s); redis-server %s on loopback; %s cores\n' "$lines" \
  "$distinct" "$rounds" "$(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/')" "$(nproc)"
printf '%s; load before: %s\n\n' "$(target/dist/mem-latency)" "$(cut -d' ' -f1-3 /proc/loadavg)"
for ((round = 0; round < rounds; round++)); do
  for ((k = 0; k < ${#names[@]}; k++)); do
    i=$(( (k + round) % ${#names[@]} ))
    redis-cli -p "$port" flushall > /dev/null
    mem0=$(memory); cpu0=$(cpu); start=$(date +%s.%N)
    # shellcheck disable=SC2086 # the options are split on purpose
    out=$(run ${commands[$i]})
    end=$(date +%s.%N); cpu1=$(cpu); mem1=$(memory)
    echo "$round $(echo "$end - $start" | bc -l) $(echo "$cpu1 - $cpu0" | bc -l) $((mem1 - mem0)) $out" >> "$work/runs.$i"
    # What the run's filter was: its rate, bits per URL, first layer, and layers per data key.
    if [[ "${commands[$i]}" == dedup* ]]; then
      meta=$(redis-cli -p "$port" --no-raw hmget url-dedup:meta growth_target hashes growth_first segments_per_key \
        | awk '{print $NF}' | tr -d '"' | paste -sd' ')
      layers=$(redis-cli -p "$port" --scan --pattern 'url-dedup:[0-9]*' | while read -r key; do
        redis-cli -p "$port" bitfield_ro "$key" get i64 128; done | sort | uniq -c | awk '{printf "%s keys of %s layer(s) ", $1, $2}')
      echo "$meta | $layers" > "$work/meta.$i"
    fi
  done
done

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
printf '| method | wall s | Redis CPU s | Redis CPU us/line | bytes/URL | lines out | SADD CPU / this (same clients) |\n'
printf '|---|---|---|---|---|---|---|\n'
for i in "${!names[@]}"; do
  runs="$work/runs.$i"
  wall=$(cut -d' ' -f2 "$runs" | median)
  cpu_s=$(cut -d' ' -f3 "$runs" | median)
  bytes=$(cut -d' ' -f4 "$runs" | median)
  out=$(cut -d' ' -f5 "$runs" | head -1)
  # SADD at the same number of clients: index 2 (1 client) or 3 (4 clients).
  if [[ "${names[$i]}" == *"1 client" ]]; then peer=2; else peer=3; fi
  ratio=$(join <(cut -d' ' -f1,3 "$work/runs.$peer" | sort) <(cut -d' ' -f1,3 "$runs" | sort) \
    | awk '$3 > 0 {print $2 / $3}' | median)
  printf '| %s | %.2f | %.2f | %.2f | %.1f | %s | %.2fx |\n' "${names[$i]}" "$wall" "$cpu_s" \
    "$(echo "$cpu_s * 1000000 / $lines" | bc -l)" "$(echo "$bytes / $distinct" | bc -l)" "$out" "$ratio"
done
printf '\nThe filter of each url-dedup method, last round (rate, bits per URL, first layer, segments per key | layers):\n'
for i in "${!names[@]}"; do
  if [[ -f "$work/meta.$i" ]]; then printf '  %s: %s\n' "${names[$i]}" "$(cat "$work/meta.$i")"; fi
done
printf '\nload after: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
