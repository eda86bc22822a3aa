#!/usr/bin/env bash
# Learned rules (url-dedup learn, --rules) on generated sites whose aliases are known by
# construction, and what applying them costs the command. Prints the tables of docs/dust.md.
#
#   bash benches/dust.sh                          # 5 sites of 1,500 articles, 10k-page learning, 2M URLs
#   SEEDS="1 2" ARTICLES=300 URLS=200000 bash benches/dust.sh    # quicker
#   ROUNDS=5 bash benches/dust.sh                 # the command's cost: 5 interleaved rounds, medians
#   PART=sites bash benches/dust.sh               # only the sites' table and learning time
#   PART=crawler bash benches/dust.sh             # only the crawler's table (--learn on served sites)
#   PART=cost bash benches/dust.sh                # only --learn's memory per page and learning time
#
# Each site (crates/rules/src/testing.rs) names its parameters and paths from its seed. The
# crawl is every URL linked from the even pages, in a mixed order, as a WARC; the rules learned
# from it are applied by the command to every URL of the site. "Unseen" columns count only the
# URLs linked from the odd pages, which learning never saw: duplicate fetches (URLs of a page
# met before),
# the share the command avoided with the rules and with canonicalization only, the share of
# skipped URLs whose page had been fetched (precision), and the pages no URL reached.
set -euo pipefail
cd "$(dirname "$0")/.."
seeds="${SEEDS:-1 2 3 4 5}"
articles="${ARTICLES:-1500}"
big="${BIG_ARTICLES:-7500}"
count="${URLS:-2000000}"
rounds="${ROUNDS:-3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

part="${PART:-all}"
bin=target/dist
if [ "$part" = cost ]; then
  # The crawler's learning schedule and memory per page, on the larger site's URLs.
  cargo build --profile dist -q -p url-dedup-benches --bin dust-memory --bin mem-latency
  echo "$("$bin/mem-latency"); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  "$bin/dust-memory" "$big"
  echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
  exit 0
fi
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "$part" != crawler ]; then
cargo build --profile dist -q -p url-dedup-cli -p url-dedup-benches --bin url-dedup --bin dust-site --bin gen-urls
echo
echo "| site (seed) | URLs | pages | unseen duplicate fetches | avoided with rules | avoided, canonicalization only | skipped URLs whose page was fetched | pages missed (whole site) | rules |"
echo "|---|---|---|---|---|---|---|---|---|"
tot_dup=0; tot_av=0; tot_av0=0; tot_sk=0; tot_right=0; tot_missed=0; tot_pages=0
for seed in $seeds; do
  d="$work/$seed"; mkdir -p "$d"
  "$bin/dust-site" site "$seed" "$articles" "$d"
  "$bin/url-dedup" learn -o "$d/rules" "$d/crawl.warc" 2> "$d/learn.err"
  "$bin/url-dedup" --quiet --rules "$d/rules" "$d/urls.txt" > "$d/kept"
  "$bin/url-dedup" --quiet "$d/urls.txt" > "$d/kept0"
  read -r u_urls u_pages u_dup u_av u_sk u_right u_missed a_urls a_pages a_dup a_av a_sk a_right a_missed \
    < <("$bin/dust-site" measure "$d" "$d/kept")
  read -r _ _ _ u_av0 _ _ _ _ _ _ _ _ _ _ < <("$bin/dust-site" measure "$d" "$d/kept0")
  rules=$(grep -c '^[a-z]' "$d/rules" | awk '{print $1 - 1}')
  hosts=$(grep -c '^host ' "$d/rules" || true)
  rules=$((rules - hosts))
  printf '| %s | %s | %s | %s | %s (%.1f%%) | %s (%.1f%%) | %s of %s | %s of %s | %s |\n' \
    "$seed" "$a_urls" "$a_pages" "$u_dup" "$u_av" "$(echo "100*$u_av/$u_dup" | bc -l)" \
    "$u_av0" "$(echo "100*$u_av0/$u_dup" | bc -l)" "$u_right" "$u_sk" "$a_missed" "$a_pages" "$rules"
  tot_dup=$((tot_dup + u_dup)); tot_av=$((tot_av + u_av)); tot_av0=$((tot_av0 + u_av0))
  tot_sk=$((tot_sk + u_sk)); tot_right=$((tot_right + u_right))
  tot_missed=$((tot_missed + a_missed)); tot_pages=$((tot_pages + a_pages))
done
printf '| **all** | | %s | %s | %s (%.1f%%) | %s (%.1f%%) | %s of %s | %s of %s | |\n' \
  "$tot_pages" "$tot_dup" "$tot_av" "$(echo "100*$tot_av/$tot_dup" | bc -l)" \
  "$tot_av0" "$(echo "100*$tot_av0/$tot_dup" | bc -l)" "$tot_right" "$tot_sk" "$tot_missed" "$tot_pages"
first=$(echo "$seeds" | awk '{print $1}')
echo
echo "The rules learned on site $first:"
echo
echo '```text'
grep -v '^    \(predicts\|status\)' "$work/$first/rules" | grep -v '^#' | sed -n '1,40p'
echo '```'

# Learning time: one larger site, its even pages as the crawl.
d="$work/big"; mkdir -p "$d"
"$bin/dust-site" site 99 "$big" "$d"
/usr/bin/time -f '%e s, %M KB peak' -o "$d/time" "$bin/url-dedup" learn -o "$d/rules" "$d/crawl.warc" 2> "$d/learn.err"
echo
echo "Learning on a larger site ($(du -m "$d/crawl.warc" | cut -f1) MB of WARC):"
cat "$d/learn.err"
echo "whole command: $(cat "$d/time")"

[ "$part" = sites ] && exit 0
# The command's cost of rules: the same URL list with and without 100 rules per host.
"$bin/gen-urls" "$count" 0.5 > "$work/urls.txt"
"$bin/dust-site" rules 1000 > "$work/rules100"
echo
echo "The command on $count URLs (5,000 hosts; the first 1,000 with 100 rules each), $rounds rounds:"
: > "$work/empty.txt"
without=(); with=(); setup=()
for r in $(seq 1 "$rounds"); do
  for which in $( ((r % 2)) && echo "none rules setup" || echo "setup rules none"); do
    start=$(date +%s.%N)
    case "$which" in
      rules) "$bin/url-dedup" --quiet --rules "$work/rules100" "$work/urls.txt" > /dev/null ;;
      setup) "$bin/url-dedup" --quiet --rules "$work/rules100" "$work/empty.txt" > /dev/null ;;
      none) "$bin/url-dedup" --quiet "$work/urls.txt" > /dev/null ;;
    esac
    took="$(echo "$(date +%s.%N) - $start" | bc -l)"
    case "$which" in rules) with+=("$took") ;; setup) setup+=("$took") ;; none) without+=("$took") ;; esac
  done
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
m0=$(median "${without[@]}"); m1=$(median "${with[@]}"); ms=$(median "${setup[@]}")
printf '| run | median s |\n|---|---|\n'
printf '| url-dedup URLS | %.2f |\n' "$m0"
printf '| url-dedup --rules RULES URLS | %.2f |\n' "$m1"
printf '| url-dedup --rules RULES (no URL: reading and indexing 100,000 rules) | %.2f |\n' "$ms"
printf 'rules cost %.0f ns per URL: (with - without - reading the rules) / URLs\n' \
  "$(echo "($m1-$m0-$ms)*1000000000/$count" | bc -l)"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
fi

# The crawler: fetches to reach every page of a served generated site, with and without
# --learn (CRAWL_SEEDS sites of CRAWL_ARTICLES articles).
crawl_seeds="${CRAWL_SEEDS:-1 2 3 4 5}"
crawl_articles="${CRAWL_ARTICLES:-300}"
cargo build --profile dist -q -p url-dedup-crawler --bin crawler --example dust_site
echo
echo "The crawler on served sites of $crawl_articles articles:"
echo
echo "| site (seed) | pages | run | fetches | pages reached | duplicate-content fetches | skipped by rules | skips whose page was fetched |"
echo "|---|---|---|---|---|---|---|---|"
for seed in $crawl_seeds; do
  for mode in plain learn; do
    d="$work/crawl-$seed-$mode"; mkdir -p "$d"
    "$bin/examples/dust_site" "$seed" "$crawl_articles" "$d" > "$d/origin" &
    pid=$!
    while [ ! -s "$d/origin" ]; do sleep 0.1; done
    origin=$(head -1 "$d/origin")
    flag=(); [ "$mode" = learn ] && flag=(--learn)
    "$bin/crawler" --quiet --ignore-robots --no-mirror --no-warc --out "$d/out" "${flag[@]}" "$origin/" > /dev/null
    curl -s "$origin/__report" > "$d/report"
    kill "$pid"; wait "$pid" 2>/dev/null || true
    pages=$(wc -l < "$d/report")
    fetches=$(awk -F'\t' '{s+=$2} END {print s}' "$d/report")
    reached=$(awk -F'\t' '$2>0' "$d/report" | wc -l)
    dup=$((fetches - reached))
    awk -F'\t' -v o="$origin" '$1=="dust-rule" {sub(o, "", $3); print $3}' "$d/out/skipped.tsv" > "$d/skipped" 2>/dev/null || : > "$d/skipped"
    skipped=$(wc -l < "$d/skipped")
    right=$(awk -F'\t' 'FILENAME==ARGV[1] {page[$1]=$2; next} FILENAME==ARGV[2] {if ($2>0) got[$1]=1; next} (page[$0] in got) {n++} END {print n+0}' \
      "$d/urls.tsv" "$d/report" "$d/skipped")
    printf '| %s | %s | %s | %s | %s | %s | %s | %s of %s |\n' "$seed" "$pages" \
      "$( [ "$mode" = learn ] && echo '`--learn`' || echo 'plain')" "$fetches" "$reached" "$dup" "$skipped" "$right" "$skipped"
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
