#!/usr/bin/env bash
# The url-dedup command built at two commits, run on one generated list with the cores idle
# and with the cores busy: what a change did to the command's time when other work shares
# the machine.
#
#   bash benches/cli-under-load.sh OLD NEW                   # default mode and --exact, 5 rounds
#   ROUNDS=9 HOGS=2 MODES=";--similar" bash benches/cli-under-load.sh HEAD~1 HEAD
#   COUNT=1000000 bash benches/cli-under-load.sh HEAD~3 HEAD  # a smaller list
#
# "busy" runs HOGS busy loops (default: one per core) in a session of their own, as another
# build started from another terminal would be; the kernel's autogroup scheduling then gives
# that session and the command's session one share each. Each round runs every mode idle and
# busy, both binaries in turn, the order alternating from round to round, so slow drifts in
# the machine's other load land on both. The table shows medians: wall time, CPU time (user
# and system), wall over CPU, and, for binaries that print it with --stats, where the
# deciding thread's time went (on a core, waiting for a core, waiting for input or output).
# The last lines give the median of NEW's wall time over OLD's within each round.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -eq 2 ]] || { echo "usage: bash benches/cli-under-load.sh OLD NEW" >&2; exit 2; }
rounds="${ROUNDS:-5}"
count="${COUNT:-10000000}"
hogs="${HOGS:-$(nproc)}"
IFS=';' read -r -a modes <<< "${MODES:-;--exact}"
[[ ${#modes[@]} -gt 0 ]] || modes=("")
source benches/worktrees.sh

commits=("$1" "$2")
for i in 0 1; do
  build_tree "$i" "${commits[$i]}" build --profile dist -q -p url-dedup-cli --bin url-dedup
  cp "$root/target/commits/dist/url-dedup" "$work/url-dedup.$i"
done

cargo build --profile dist -q -p url-dedup-benches --bin gen-urls
target/dist/gen-urls "$count" 0.5 > "$work/urls.txt"
printf 'input: %s lines; %s round(s); %s against %s; busy: %s loop(s) on %s core(s); load before: %s\n\n' \
  "$count" "$rounds" "${commits[1]}" "${commits[0]}" "$hogs" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"

hog_pids=()
start_hogs() {
  for ((h = 0; h < hogs; h++)); do
    setsid sh -c 'while :; do :; done' & hog_pids+=($!)
  done
}
stop_hogs() {
  for pid in "${hog_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${hog_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  hog_pids=()
}
trap 'stop_hogs; cleanup' EXIT

loads=(idle busy)
for ((round = 0; round < rounds; round++)); do
  for l in 0 1; do
    [[ $l -eq 1 ]] && start_hogs
    for m in "${!modes[@]}"; do
      for k in 0 1; do
        i=$(( (k + round) % 2 ))
        # shellcheck disable=SC2086 # the options are split on purpose
        /usr/bin/time -f '%e %U %S' -o "$work/time" "$work/url-dedup.$i" --quiet --stats \
          ${modes[$m]} < "$work/urls.txt" > /dev/null 2> "$work/err"
        read -r secs user sys < "$work/time"
        # `deciding  R s on a core, W s waiting for one, I s for input or output`
        split=$(awk '/^deciding/ {print $2, $7, $12}' "$work/err")
        echo "$round $secs $(echo "$user + $sys" | bc -l) ${split:-- - -}" >> "$work/runs.$m.$l.$i"
      done
    done
    [[ $l -eq 1 ]] && stop_hogs
  done
done

median() { grep -v -- '^-$' | sort -g | awk '{v[NR] = $1} END {if (NR == 0) print "-"; else print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
column() { cut -d' ' -f"$2" "$1" | median; }
printf '%-16s %-5s %-10s %8s %7s %9s %10s %13s %10s\n' mode load commit seconds "CPU s" "wall/CPU" \
  "deciding:" "wait for core" "wait I/O"
for m in "${!modes[@]}"; do
  for l in 0 1; do
    for i in 0 1; do
      runs="$work/runs.$m.$l.$i"
      secs=$(column "$runs" 2) cpu=$(column "$runs" 3)
      printf '%-16s %-5s %-10s %8.2f %7.2f %9.2f %10s %13s %10s\n' "${modes[$m]:-(default)}" \
        "${loads[$l]}" "${commits[$i]}" "$secs" "$cpu" "$(echo "$secs / $cpu" | bc -l)" \
        "$(column "$runs" 4)" "$(column "$runs" 5)" "$(column "$runs" 6)"
    done
  done
done
printf '\n%s wall time over %s, median of the per-round ratios:\n' "${commits[1]}" "${commits[0]}"
for m in "${!modes[@]}"; do
  for l in 0 1; do
    ratio=$(join <(cut -d' ' -f1,2 "$work/runs.$m.$l.1" | sort) <(cut -d' ' -f1,2 "$work/runs.$m.$l.0" | sort) \
      | awk '{print $2 / $3}' | median)
    printf '  %-16s %-5s %.2f\n' "${modes[$m]:-(default)}" "${loads[$l]}" "$ratio"
  done
done
printf 'load after: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
