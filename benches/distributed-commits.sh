#!/usr/bin/env bash
# The shared crawl built at two commits, run in turn by benches/distributed.sh: what a change
# did to pages/s, Redis commands per page and peak RSS, with the machine's load landing on
# both.
#
#   bash benches/distributed-commits.sh OLD NEW            # 30,000 pages, 3 rounds
#   ROUNDS=5 PAGES=10000 bash benches/distributed-commits.sh 711ed21 HEAD
#
# Each commit's crawler and benchmark site are built with the dist profile in a worktree of
# their own (sharing target/commits). Each round runs distributed.sh with the old build, then
# the new one. The table shows, per configuration, the medians over the rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -eq 2 ]] || { echo "usage: bash benches/distributed-commits.sh OLD NEW" >&2; exit 2; }
rounds="${ROUNDS:-3}"
pages="${PAGES:-30000}"
source benches/worktrees.sh

commits=("$1" "$2")
for i in 0 1; do
  build_tree "$i" "${commits[$i]}" build --profile dist -q -p url-dedup-crawler --bin crawler --example site
  cp "$root/target/commits/dist/crawler" "$work/crawler.$i"
  cp "$root/target/commits/dist/examples/site" "$work/site.$i"
done

printf '%s pages; %s round(s); %s against %s; load before: %s\n\n' "$pages" "$rounds" \
  "${commits[1]}" "${commits[0]}" "$(cut -d' ' -f1-3 /proc/loadavg)"
for ((round = 0; round < rounds; round++)); do
  for k in 0 1; do
    echo "=== $k"
    CRAWLER="$work/crawler.$k" SITE="$work/site.$k" bash benches/distributed.sh "$pages" 64 8 8
  done
done >"$work/runs.txt"
printf 'load after: %s\n\n' "$(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$work/runs.txt" "${commits[0]}" "${commits[1]}" <<'PY'
import re, statistics as st, sys
runs, old, new = sys.argv[1:]
build, rows = None, {}
for line in open(runs):
    m = re.match(r"=== (\d)", line)
    if m:
        build = int(m.group(1))
        continue
    if line.startswith("| ") and not line.startswith("| hosts"):
        f = [x.strip() for x in line.strip().strip("|").split("|")]
        sent = float(f[8].split("/")[1])
        rss = max(float(x) for x in f[9].split(","))
        rows.setdefault((f[0], f[1]), ([], []))[build].append((float(f[4]), sent, rss, int(f[7])))
print(f"| hosts | processes | pages/s {old} | {new} | ratio | commands sent per page {old} | {new} | peak RSS MiB {old} | {new} | duplicate fetches |")
print("|---|---|---|---|---|---|---|---|---|---|")
for (hosts, n), (a, b) in rows.items():
    med = lambda xs, i: st.median(x[i] for x in xs)
    dups = sum(x[3] for x in a + b)
    print(f"| {hosts} | {n} | {med(a, 0):.0f} | {med(b, 0):.0f} | {med(b, 0) / med(a, 0):.2f} "
          f"| {med(a, 1):.2f} | {med(b, 1):.2f} | {med(a, 2):.0f} | {med(b, 2):.0f} | {dups} |")
PY
