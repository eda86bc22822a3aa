#!/usr/bin/env bash
# 1, 2 and 4 `crawler --redis` processes sharing one crawl through one local Redis, on ONE host
# and on many hosts: pages/s per process, each process's share of the pages, Redis commands per
# page, duplicate fetches and peak RSS, printed as a markdown table.
#
#   bash benches/distributed.sh [PAGES] [MANY_HOSTS] [WORKERS] [PER_HOST]
#                               # defaults: 30000 64 8 8
#
# The site is examples/crawler/examples/site.rs: PAGES pages of about 6 KB with the paths of a
# documentation site, every page reachable; on one host (127.0.0.2) and on MANY_HOSTS loopback
# addresses. No politeness delay (--delay-ms 0), robots.txt ignored, --per-host PER_HOST: the
# host's budget of requests at once, shared by every process through Redis.
#
# Three Redis figures per page:
#   calls the crawlers' own count of their calls to Redis (one round trip each), as their
#         summaries and status pages report it;
#   sent  commands the crawlers sent (a script counts once), counted with MONITOR in a second,
#         identical run (MONITOR slows Redis, so pages/s come from the first run);
#   run   every command Redis executed, those inside the scripts included (INFO stats).
# Needs redis-server, redis-cli, python3 and GNU time.
set -euo pipefail
PAGES=${1:-30000}
MANY=${2:-64}
WORKERS=${3:-8}
PER_HOST=${4:-8}
cd "$(dirname "$0")/.."
if [ -z "${CRAWLER:-}" ]; then
    cargo build --profile dist -q -p url-dedup-crawler --bin crawler --example site
    CRAWLER=$PWD/target/dist/crawler
fi
SITE=${SITE:-$PWD/target/dist/examples/site}
[ -x /usr/bin/time ] || { apt-get update -qq >/dev/null; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >/dev/null; }
work=$(mktemp -d /tmp/distributed-bench.XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    [ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

rport=$(free_port)
redis-server --port "$rport" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" >"$work/redis.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.1; done

# crawl NAME HOSTS PROCESSES MONITOR(0/1): runs the processes together to the end of the
# crawl; leaves their summaries in $work/NAME/.
crawl() {
    local name=$1 hosts=$2 n=$3 monitor=$4 dir="$work/$1"
    mkdir -p "$dir"
    redis-cli -p "$rport" FLUSHALL >/dev/null
    redis-cli -p "$rport" CONFIG RESETSTAT >/dev/null
    local mon=""
    if [ "$monitor" = 1 ]; then
        (redis-cli -p "$rport" MONITOR | awk '!/\[[0-9]+ lua\]/ {c++} END {print c + 0}' >"$dir/sent") 2>/dev/null &
        mon=$!
        sleep 0.3
    fi
    local start end
    start=$(date +%s.%N)
    local crawlers=()
    for i in $(seq "$n"); do
        /usr/bin/time -f '%M' -o "$dir/rss-$i" "$CRAWLER" --quiet --out "$dir/out-$i" \
            --redis "redis://127.0.0.1:$rport" --crawl-name "$name" --ignore-robots \
            --delay-ms 0 --workers "$WORKERS" --per-host "$PER_HOST" --no-mirror --no-warc --json \
            --expected-urls $((PAGES * 2)) "${seeds[@]}" >"$dir/summary-$i" 2>"$dir/err-$i" &
        crawlers+=($!)
    done
    for p in "${crawlers[@]}"; do wait "$p"; done
    end=$(date +%s.%N)
    python3 -c "print($end - $start)" >"$dir/wall"
    redis-cli -p "$rport" INFO stats | tr -d '\r' | sed -n 's/^total_commands_processed://p' >"$dir/run"
    if [ -n "$mon" ]; then
        pkill -P "$mon" redis-cli 2>/dev/null || true
        wait "$mon" 2>/dev/null || true
    fi
}

echo "site: $PAGES pages (about 6 KB each); Redis $(redis-server --version | awk '{print $3}'); $(nproc) cores; --workers $WORKERS --per-host $PER_HOST"
echo
echo '| hosts | processes | pages | wall s | pages/s | pages/s per process | share of the mean (min-max) | duplicate fetches | Redis per page (calls / commands sent / commands run) | peak RSS MiB per process |'
echo '|---|---|---|---|---|---|---|---|---|---|'
for hosts in 1 "$MANY"; do
    sport=$(free_port)
    "$SITE" "$PAGES" "$hosts" "$sport" >"$work/seed-$hosts" &
    site_pid=$!
    pids+=("$site_pid")
    for _ in $(seq 100); do [ "$(wc -l <"$work/seed-$hosts")" -ge "$hosts" ] && break; sleep 0.1; done
    mapfile -t seeds <"$work/seed-$hosts"
    for n in 1 2 4; do
        crawl "h$hosts-n$n" "$hosts" "$n" 0
        crawl "h$hosts-n$n-monitor" "$hosts" "$n" 1
        python3 - "$work/h$hosts-n$n" "$work/h$hosts-n$n-monitor" "$hosts" "$n" <<'PY'
import glob, json, os, sys
run, monitored, hosts, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
summaries = [json.loads(open(f).read()) for f in sorted(glob.glob(f"{run}/summary-*"))]
fetched = [x["fetched"] for x in summaries]
calls = sum((x["redis_calls_per_page"] or 0) * x["fetched"] for x in summaries) / max(1, sum(fetched))
wall = float(open(f"{run}/wall").read())
urls = [l.split("\t")[1] for f in glob.glob(f"{run}/out-*/fetched-*.tsv") for l in open(f)]
dups = len(urls) - len(set(urls))
total = sum(fetched)
mean = total / n
shares = [f / mean for f in fetched]
monitored_total = sum(json.loads(open(f).read())["fetched"] for f in glob.glob(f"{monitored}/summary-*"))
sent = int(open(f"{monitored}/sent").read()) / monitored_total
ran = int(open(f"{run}/run").read()) / total
rss = [int(open(f).read().strip().splitlines()[-1]) / 1024 for f in sorted(glob.glob(f"{run}/rss-*"))]
per = ", ".join(f"{f / wall:.0f}" for f in fetched)
print(f"| {hosts} | {n} | {total} | {wall:.1f} | {total / wall:.0f} | {per} | {min(shares):.2f}-{max(shares):.2f} | {dups} | {calls:.2f} / {sent:.2f} / {ran:.1f} | {', '.join(f'{r:.0f}' for r in rss)} |")
PY
    done
    kill "$site_pid" 2>/dev/null || true
done
