#!/usr/bin/env bash
# The shared filter's benchmark (`benches/benches/redis.rs`) built twice, against the
# url-dedup-redis of another revision (REV) and against this tree's, run alternately in the
# same session, ROUNDS runs each, one measured run per round: medians and ratios (this tree
# over REV) of URLs/s, Redis CPU per URL and client CPU per URL.
#
# Both builds use this tree's benchmark file, so only the library differs. Each run starts its
# own redis-server (see `url_dedup_redis::testing`).
#
#   bash benches/redis-layer.sh [REV] [ROUNDS]
#
# REV defaults to 32bce40, the last revision whose segment store had a socket of its own.
# URL_DEDUP_AB_DIR names a directory to build REV in and keep (a second run reuses it);
# without it a temporary one is used and removed.
# The variables of the benchmark (URL_DEDUP_BENCH_URLS, _METHODS, _CLIENTS, _BATCHES) pass
# through; by default 1,000,000 URLs, our store with and without its cache of known bits and
# the same commands through the `redis` crate's codec, 1 and 4 clients, batches of 100 and
# 1,000.
set -euo pipefail

rev=${1:-32bce40}
rounds=${2:-5}
here=$(cd "$(dirname "$0")/.." && pwd)
if [ -n "${URL_DEDUP_AB_DIR:-}" ]; then
    work=$URL_DEDUP_AB_DIR
    mkdir -p "$work"
else
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
fi

export URL_DEDUP_BENCH_URLS=${URL_DEDUP_BENCH_URLS:-1000000}
export URL_DEDUP_BENCH_METHODS=${URL_DEDUP_BENCH_METHODS:-"ours: bitfield,ours: no cache,redis codec"}
export URL_DEDUP_BENCH_CLIENTS=${URL_DEDUP_BENCH_CLIENTS:-1,4}
export URL_DEDUP_BENCH_BATCHES=${URL_DEDUP_BENCH_BATCHES:-100,1000}
export URL_DEDUP_BENCH_RUNS=1

# Prints the path of the `redis` benchmark binary built from the workspace at $1.
build() {
    (cd "$1" && cargo bench -p url-dedup-benches --bench redis --no-run \
        --message-format=json-render-diagnostics 2>/dev/null) |
        grep -o '"executable":"[^"]*/redis-[^"]*"' | tail -n 1 | cut -d'"' -f4
}

if [ ! -f "$work/Cargo.toml" ]; then
    git -C "$here" archive "$rev" | tar -x -C "$work"
fi
cp "$here/benches/benches/redis.rs" "$work/benches/benches/redis.rs"
old=$(CARGO_TARGET_DIR="$work/target" build "$work")
new=$(build "$here")
echo "REV $rev: $old"
echo "this tree: $new"

# Rows of one run: "label method... clients batch URLs/s B/URL admitted redis client".
run() {
    "$2" --bench | awk -v label="$1" '/^(ours|redis codec)/ { print label, $0 }'
}

results="$work/results"
rm -f "$results"
for round in $(seq "$rounds"); do
    echo "round $round of $rounds" >&2
    run old "$old" >>"$results"
    run new "$new" >>"$results"
done

awk '
function median(list,    n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > t + 0; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{
    # The method name may hold spaces: the last eight fields are the figures.
    label = $1; name = ""
    for (i = 2; i <= NF - 8; i++) name = name (name == "" ? "" : " ") $i
    row = name " | " $(NF - 6) " clients | batch " $(NF - 5)
    rows[row] = 1
    urls[label, row] = urls[label, row] " " $(NF - 4)
    redis[label, row] = redis[label, row] " " $(NF - 1)
    client[label, row] = client[label, row] " " $NF
}
END {
    for (r in rows) {
        uo = median(urls["old", r]); un = median(urls["new", r])
        ro = median(redis["old", r]); rn = median(redis["new", r])
        co = median(client["old", r]); cn = median(client["new", r])
        printf "%-44s %12.0f %12.0f %6.2f %9.3f %9.3f %6.2f %9.3f %9.3f %6.2f\n", r, uo, un, un / uo, ro, rn, rn / ro, co, cn, cn / co
    }
}' "$results" | sort >"$work/table"
printf "%-44s %12s %12s %6s %9s %9s %6s %9s %9s %6s\n" "case" "URLs/s REV" "URLs/s new" \
    "ratio" "redis REV" "redis new" "ratio" "client REV" "client new" "ratio"
cat "$work/table"
echo
echo "raw rows (label, then the benchmark's row):"
cat "$results"
