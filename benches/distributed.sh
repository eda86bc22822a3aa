#!/usr/bin/env bash
# Pages per second of 1, 2 and 4 `crawler --redis` processes sharing one local Redis, and Redis
# round trips (commands, from INFO commandstats deltas) per fetched page.
#
#   bash benches/distributed.sh [PAGES] [HOSTS] [WORKERS]     # defaults: 20000 64 4
#
# The site is examples/crawler/examples/site.rs: PAGES pages over HOSTS loopback addresses
# 127.0.0.2.., every page reachable; no politeness delay (--delay-ms 0), robots.txt ignored, so
# the figure is the crawler's and Redis's cost, not a site's. Needs redis-server and redis-cli.
set -euo pipefail
PAGES=${1:-20000}
HOSTS=${2:-64}
WORKERS=${3:-4}
cd "$(dirname "$0")/.."
cargo build --profile dist -q -p url-dedup-crawler --bin crawler --example site
BIN=target/dist/crawler
SITE=target/dist/examples/site
work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

rport=$(free_port)
redis-server --port "$rport" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" >"$work/redis.log" 2>&1 &
pids+=($!)
sport=$(free_port)
"$SITE" "$PAGES" "$HOSTS" "$sport" >"$work/seed" &
pids+=($!)
for _ in $(seq 100); do
    redis-cli -p "$rport" ping >/dev/null 2>&1 && [ -s "$work/seed" ] && break
    sleep 0.1
done
seeds=()
for h in $(seq 0 $((HOSTS - 1))); do seeds+=("http://127.0.0.$((2 + h)):$sport/p/$h"); done

# Commands executed (calls= of every cmdstat_ line; commands run inside Lua scripts count too).
stats() { redis-cli -p "$rport" INFO commandstats | tr -d '\r' | sed -n 's/^cmdstat_\([^:]*\):calls=\([0-9]*\),.*/\1 \2/p'; }
calls() { stats | awk '{s+=$2} END {print s+0}'; }

printf '%-10s %8s %8s %10s %14s\n' processes pages seconds pages/s commands/page
for n in 1 2 4; do
    redis-cli -p "$rport" FLUSHALL >/dev/null
    redis-cli -p "$rport" CONFIG RESETSTAT >/dev/null
    before=$(calls)
    start=$(date +%s.%N)
    crawlers=()
    for i in $(seq "$n"); do
        "$BIN" --quiet --out "$work/out-$n-$i" --redis "redis://127.0.0.1:$rport" \
            --crawl-name "bench$n" --ignore-robots --delay-ms 0 --workers "$WORKERS" \
            --expected-urls $((PAGES * 2)) "${seeds[@]}" >"$work/summary-$n-$i" 2>"$work/err-$n-$i" &
        crawlers+=($!)
    done
    for p in "${crawlers[@]}"; do wait "$p"; done
    end=$(date +%s.%N)
    after=$(calls)
    fetched=$(cat "$work"/summary-"$n"-* | sed -n 's/.*"fetched":\([0-9]*\).*/\1/p' | awk '{s+=$1} END {print s+0}')
    awk -v n="$n" -v f="$fetched" -v s="$start" -v e="$end" -v c=$((after - before)) \
        'BEGIN { t = e - s; printf "%-10s %8d %8.2f %10.0f %14.1f\n", n, f, t, f / t, c / f }'
    stats | sort -k2 -n -r | head -14 | awk -v f="$fetched" '{printf "    %-12s %6.2f per page\n", $1, $2 / f}' >"$work/breakdown-$n"
done
echo "commands per page by name (1 process; CONFIG and INFO are the script's own):"
cat "$work/breakdown-1"
