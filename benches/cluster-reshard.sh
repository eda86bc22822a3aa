#!/usr/bin/env bash
# Time to move part of a shared filter between the masters of a Redis Cluster, per slot and
# per MiB, with `redis-cli --cluster reshard` (keys move one by one with MIGRATE), while a
# `url-dedup --redis` run keeps admitting URLs; then that run's output is checked: every line
# printed once, none lost.
#
#   bash benches/cluster-reshard.sh [URLS] [SLOTS]     # defaults: 10000000 5461
#
# Starts three masters (no replicas, no persistence) on free loopback ports, fills a filter
# sized for URLS URLs at 1% through the command (`-n URLS --fpr 0.01`), then moves SLOTS
# slots from the first master to the second while a second run admits URLS/10 new URLs.
# Needs redis-server, redis-cli and python3.
set -euo pipefail
URLS=${1:-10000000}
SLOTS=${2:-5461}
cd "$(dirname "$0")/.."
if [ -z "${URL_DEDUP:-}" ]; then
    cargo build --profile dist -q -p url-dedup-cli
    URL_DEDUP=$PWD/target/dist/url-dedup
fi
work=$(mktemp -d /tmp/cluster-reshard.XXXXXX)
ports=()
cleanup() {
    for p in "${ports[@]}"; do redis-cli -p "$p" shutdown nosave >/dev/null 2>&1 || true; done
    rm -rf "$work"
}
trap cleanup EXIT
# A cluster node also listens on its port + 10,000 (the cluster bus): ports up to 55,535.
free_port() { python3 -c '
import socket
while True:
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]
    if p <= 55535: print(p); break'; }
for i in 1 2 3; do
    p=$(free_port)
    mkdir -p "$work/$p"
    (cd "$work/$p" && redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no \
        --cluster-enabled yes --cluster-node-timeout 1500 --daemonize yes --logfile log)
    ports+=("$p")
done
for p in "${ports[@]}"; do until redis-cli -p "$p" ping >/dev/null 2>&1; do sleep 0.1; done; done
redis-cli --cluster create "${ports[@]/#/127.0.0.1:}" --cluster-yes >/dev/null
until redis-cli -p "${ports[0]}" cluster info | grep -q cluster_state:ok; do sleep 0.2; done
sleep 2
seeds=$(printf 'redis://127.0.0.1:%s/,' "${ports[@]}")
seeds=${seeds%,}
python3 - "$URLS" > "$work/urls.txt" <<'EOF'
import sys
n = int(sys.argv[1])
for i in range(n):
    print(f"https://site{i % 9973}.example/articles/{i}/index.html")
EOF
python3 - "$URLS" > "$work/more.txt" <<'EOF'
import sys
n = int(sys.argv[1])
for i in range(n // 10):
    print(f"https://other{i % 997}.example/p/{i}")
EOF
start=$(date +%s.%N)
"$URL_DEDUP" --redis "$seeds" -n "$URLS" --fpr 0.01 "$work/urls.txt" > "$work/out1.txt"
fill=$(python3 -c "print(f'{$(date +%s.%N) - $start:.1f}')")
# The filter's data keys on a node (not the metadata, nor the short-lived token keys of the
# admission script), and their bytes.
data_keys() { redis-cli -p "$1" --scan --pattern 'url-dedup:{*' | grep -v ':t:' || true; }
keys() { data_keys "$1" | wc -l; }
bytes() { data_keys "$1" | while read -r k; do redis-cli -p "$1" strlen "$k"; done | awk '{s += $1} END {print s + 0}'; }
before=$(bytes "${ports[0]}")
src_keys=$(keys "${ports[0]}")
id() { redis-cli -p "$1" cluster myid; }
"$URL_DEDUP" --redis "$seeds" -n "$URLS" --fpr 0.01 "$work/more.txt" > "$work/out2.txt" &
admitting=$!
start=$(date +%s.%N)
redis-cli --cluster reshard "127.0.0.1:${ports[0]}" --cluster-from "$(id "${ports[0]}")" \
    --cluster-to "$(id "${ports[1]}")" --cluster-slots "$SLOTS" --cluster-yes >/dev/null
moved=$(python3 -c "print($(date +%s.%N) - $start)")
after=$(bytes "${ports[0]}")
wait "$admitting"
mib=$(python3 -c "print(($before - $after) / 2**20)")
printf '| URLs in the filter | slots moved | keys moved | MiB moved | seconds | ms per slot | s per MiB | fill (s) |\n|---|---|---|---|---|---|---|---|\n'
python3 -c "
moved, mib, slots = $moved, $mib, $SLOTS
print(f'| {$URLS:,} | {slots:,} | {$src_keys - $(keys "${ports[0]}")} | {mib:.1f} | {moved:.2f} | {moved * 1000 / slots:.2f} | {moved / mib if mib else 0:.3f} | $fill |')
"
lines1=$(wc -l < "$work/out1.txt"); lines2=$(wc -l < "$work/out2.txt")
expected2=$((URLS / 10))
echo
echo "first run printed $lines1 of $URLS distinct URLs; the run during the reshard $lines2 of $expected2"
sort "$work/out1.txt" "$work/out2.txt" | uniq -d | head -3 | sed 's/^/printed twice: /'
