#!/usr/bin/env bash
# One criterion bench built at two commits, run in turn: what a change between them did to
# the bench's rows, with the machine's load landing on both.
#
#   bash benches/bench-commits.sh OLD NEW BENCH [FILTER]
#   ROUNDS=5 bash benches/bench-commits.sh HEAD~1 HEAD similarity "real lists"
#   SAME_BENCH=1 bash benches/bench-commits.sh HEAD~2 HEAD build   # NEW's bench on OLD's code
#
# Each commit's bench is built with the bench profile in a worktree of its own (both share
# one target directory, target/commits, so the second build reuses the first one's
# dependencies). With SAME_BENCH=1 the OLD worktree gets NEW's benches/ directory first, to
# time OLD's code with a bench that did not exist yet or has changed since. Each round runs
# both binaries (`--bench FILTER --warm-up-time 1 --measurement-time 3`), the order
# alternating from round to round; the table shows each row's median over the rounds of
# criterion's estimate, and NEW's time over OLD's.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -ge 3 ]] || { echo "usage: bash benches/bench-commits.sh OLD NEW BENCH [FILTER]" >&2; exit 2; }
rounds="${ROUNDS:-3}"
bench="$3"
filter="${4:-}"
source benches/worktrees.sh

commits=("$1" "$2")
for i in 1 0; do
  add_tree "$i" "${commits[$i]}"
  if [[ $i -eq 0 && -n "${SAME_BENCH:-}" ]]; then
    rm -rf "$work/tree.0/benches"
    cp -r "$work/tree.1/benches" "$work/tree.0/benches"
  fi
  (cd "$work/tree.$i" && CARGO_TARGET_DIR="$root/target/commits" \
    cargo bench -p url-dedup-benches --bench "$bench" --no-run) > "$work/build.$i" 2>&1 \
    || { cat "$work/build.$i" >&2; exit 1; }
  exe="$(sed -n 's/.*Executable.*(\(.*\))/\1/p' "$work/build.$i")"
  cp "$exe" "$work/bench.$i"
  commits[i]="$(git -C "$work/tree.$i" rev-parse --short HEAD)"
done

printf '%s: %s round(s); %s against %s; load before: %s\n\n' "$bench" "$rounds" \
  "${commits[1]}" "${commits[0]}" "$(cut -d' ' -f1-3 /proc/loadavg)"
for ((round = 0; round < rounds; round++)); do
  for k in 0 1; do
    i=$(( (k + round) % 2 ))
    "$work/bench.$i" --bench "$filter" --warm-up-time 1 --measurement-time 3 --noplot \
      > "$work/out.$round.$i" 2>&1
  done
done

python3 - "$work" "$rounds" "${commits[0]}" "${commits[1]}" <<'EOF'
import re, statistics, sys
work, rounds, old, new = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
scale = {"ps": 1e-6, "ns": 1e-3, "µs": 1.0, "us": 1.0, "ms": 1e3, "s": 1e6}
times = {}
for r in range(rounds):
    for i in (0, 1):
        name = None
        for line in open(f"{work}/out.{r}.{i}", encoding="utf-8", errors="replace"):
            if line and not line[0].isspace() and "/" in line:
                name = line.split("time:")[0].strip()
            m = re.search(r"time:\s+\[\S+ \S+ (\S+) (\S+) \S+ \S+\]", line)
            if m and name and "%" not in m.group(1):
                times.setdefault(name, ([], []))[i].append(float(m.group(1)) * scale[m.group(2)])
                name = None
width = max((len(n) for n in times), default=10)
print(f"{'row':{width}}  {old + ' µs':>12}  {new + ' µs':>12}  new/old")
for name, (a, b) in times.items():
    if a and b:
        ma, mb = statistics.median(a), statistics.median(b)
        print(f"{name:{width}}  {ma:12.2f}  {mb:12.2f}  {mb / ma:7.3f}")
EOF
printf '\nload after: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
