#!/usr/bin/env bash
# The url-dedup command built at two commits, run in turn on one generated list: what a
# change between them did to the command's time, with the machine's load landing on both.
#
#   bash benches/cli-commits.sh OLD NEW                      # default mode and --raw, 5 rounds
#   ROUNDS=7 MODES="--raw;--similar" bash benches/cli-commits.sh 6235ed8 HEAD
#   COUNT=1000000 bash benches/cli-commits.sh HEAD~3 HEAD     # a smaller list
#
# MODES is a `;`-separated list of option sets (an empty one is the default mode). Each
# commit is built with the dist profile in a worktree of its own (both share one target
# directory, target/commits, so the second build reuses the first one's dependencies). Each
# round runs every mode with both binaries, the order alternating from round to round; the
# table shows each binary's median wall time and CPU time (user and system) per mode, and the
# lines it printed (they must agree).
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -eq 2 ]] || { echo "usage: bash benches/cli-commits.sh OLD NEW" >&2; exit 2; }
rounds="${ROUNDS:-5}"
count="${COUNT:-10000000}"
IFS=';' read -r -a modes <<< "${MODES:-;--raw}"
[[ ${#modes[@]} -gt 0 ]] || modes=("")
source benches/worktrees.sh

commits=("$1" "$2")
for i in 0 1; do
  build_tree "$i" "${commits[$i]}" build --profile dist -q -p url-dedup-cli --bin url-dedup
  cp "$root/target/commits/dist/url-dedup" "$work/url-dedup.$i"
done

cargo build --profile dist -q -p url-dedup-benches --bin gen-urls
target/dist/gen-urls "$count" 0.5 > "$work/urls.txt"
printf 'input: %s lines; %s round(s); %s against %s; load before: %s\n\n' "$count" "$rounds" \
  "${commits[1]}" "${commits[0]}" "$(cut -d' ' -f1-3 /proc/loadavg)"

for ((round = 0; round < rounds; round++)); do
  for m in "${!modes[@]}"; do
    for k in 0 1; do
      i=$(( (k + round) % 2 ))
      # shellcheck disable=SC2086 # the options are split on purpose
      /usr/bin/time -f '%e %U %S' -o "$work/time" "$work/url-dedup.$i" --quiet ${modes[$m]} \
        < "$work/urls.txt" > "$work/out.txt"
      read -r secs user sys < "$work/time"
      echo "$secs $(echo "$user + $sys" | bc -l) $(wc -l < "$work/out.txt")" >> "$work/runs.$m.$i"
    done
  done
done

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
printf '%-24s %-10s %9s %9s %11s\n' mode commit seconds "CPU s" "lines out"
for m in "${!modes[@]}"; do
  for i in 0 1; do
    runs="$work/runs.$m.$i"
    printf '%-24s %-10s %9s %9s %11s\n' "${modes[$m]:-(default)}" "${commits[$i]}" \
      "$(cut -d' ' -f1 "$runs" | median)" "$(cut -d' ' -f2 "$runs" | median)" \
      "$(cut -d' ' -f3 "$runs" | sort -u | tr '\n' ' ')"
  done
done
printf '\nload after: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
