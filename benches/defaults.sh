#!/usr/bin/env bash
# What users get by default, against what they would use instead, in one run: every section
# interleaves its contenders in rounds and reports medians and ratios, with the machine's
# random read latency and load average beside them.
#
#   bash benches/defaults.sh                       # every section, about 45 minutes
#   bash benches/defaults.sh cli redis             # some sections
#   bash benches/defaults.sh 2>&1 | tee benches/results/defaults.txt
#
# Sections:
#   filter  GrowingFilter (the default filter) against fastbloom: bits, rate, insert/hit/miss
#           (benches/head_to_head.rs at 1M and 10M items, 1% and 0.1%)
#   facade  UrlDedup::builder().build() against Url::parse + HashSet<String> and + fastbloom
#           (benches/facade.rs, 2M lines, 1M distinct)
#   cli     the url-dedup command against LC_ALL=C sort -u and awk '!seen[$0]++': 10M
#           generated lines, then the repository's real URL lists (benches/cli-vs-sort.sh)
#   redis   url-dedup --redis against SADD of the URL, 1 and 4 clients: Redis CPU per line,
#           bytes per URL (benches/redis-vs-sadd.sh, 2M lines)
#   crawl   the reference crawler against wget -r and httrack -c8 on the Rust standard
#           library's documentation, from rustup's local docs, served by nginx
#           (benches/crawl-vs-wget.sh)
#
# ROUNDS (default 3) sets the rounds of the cli and redis sections. Installs nginx and httrack
# with apt-get when missing (crawl; needs root).
set -euo pipefail
cd "$(dirname "$0")/.."
sections=("$@")
[[ ${#sections[@]} -gt 0 ]] || sections=(filter facade cli redis crawl)
rounds="${ROUNDS:-3}"
export CARGO_INCREMENTAL=0

cargo build --profile dist -q -p url-dedup-benches --bin mem-latency
machine() {
  printf 'machine: %s, %s cores; %s; load: %s\n' \
    "$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)" "$(nproc)" \
    "$(target/dist/mem-latency)" "$(cut -d' ' -f1-3 /proc/loadavg)"
}
printf '# url-dedup defaults against their peers\n\ncommit %s, %s\n' \
  "$(git rev-parse --short HEAD)" "$(date -u '+%Y-%m-%d %H:%M UTC')"

for section in "${sections[@]}"; do
  printf '\n## %s\n\n' "$section"
  machine
  case "$section" in
    filter)
      URL_DEDUP_BENCH_SIZES=1M,10M URL_DEDUP_BENCH_RATES=0.01,0.001 URL_DEDUP_BENCH_ROUNDS=9 \
        URL_DEDUP_BENCH_ONLY="GrowingFilter,fastbloom" \
        cargo bench -q -p url-dedup-benches --bench head_to_head 2>/dev/null ;;
    facade)
      URL_DEDUP_BENCH_ROUNDS=5 cargo bench -q -p url-dedup-benches --bench facade 2>/dev/null ;;
    cli)
      tools="url-dedup,url-dedup --exact,LC_ALL=C sort -u,awk '!seen[\$0]++'"
      ROUNDS="$rounds" TOOLS="$tools" bash benches/cli-vs-sort.sh 10000000
      echo
      real="$(mktemp)"
      cat crates/similarity/data/real-urls.txt crates/similarity/data/real-urls-rust.txt > "$real"
      ROUNDS=5 TOOLS="$tools" INPUT="$real" bash benches/cli-vs-sort.sh
      rm -f "$real" ;;
    redis)
      ROUNDS="$rounds" bash benches/redis-vs-sadd.sh 2000000 2>&1 | grep -v '^url-dedup: created' ;;
    crawl)
      SITE="$(rustc --print sysroot)/share/doc/rust/html" START=std/index.html \
        bash benches/crawl-vs-wget.sh ;;
    *) echo "unknown section $section" >&2; exit 2 ;;
  esac
  printf '\nload after: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
done
