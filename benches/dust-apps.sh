#!/usr/bin/env bash
# --learn on real web applications installed from Debian packages, beside wget, httrack and a
# Scrapy CrawlSpider. Prints the tables of docs/dust.md, "Real applications".
#
#   bash benches/dust-apps.sh                          # DokuWiki, MediaWiki, the Rust docs
#   APPS=dokuwiki PAGES=300 MAX_FETCHES=1000 bash benches/dust-apps.sh   # quicker
#   APPS=mediawiki TOOLS="plain learn" bash benches/dust-apps.sh          # the crawler only
#
# Each application is filled with PAGES articles (benches/apps/fill_*.py), served by PHP's
# built-in server (`php -S`, 3 workers) on loopback behind a logging proxy
# (benches/apps/proxy.py) that records every request with the digest of its body. Every real
# page (an article, a namespace or category start page, the front page, at its canonical URL;
# for the Rust docs every .html file under std/) is fetched once through the proxy before the
# crawls: that warms the application's caches and gives each real page its exact fingerprint
# (examples/crawler/examples/fingerprint_files.rs, the fingerprint --learn uses).
#
# Each tool crawls from the front page, one after the other, bounded alike: link depth DEPTH
# (default 3) and MAX_FETCHES requests (default 3000; the crawler's --max-pages and Scrapy's
# CLOSESPIDER_PAGECOUNT end them there, wget and httrack are killed at that count; only the
# first MAX_FETCHES requests count) and TIME_LIMIT seconds (default 900; a tool stopped by it
# is marked so). TOOLS picks among: plain and learn (the crawler without and with --learn;
# robots.txt ignored, no mirror or WARC, so no page requisites), wget (`wget -r -np -e
# robots=off`), httrack (`httrack -c8`, its defaults otherwise), scrapy (a CrawlSpider with
# its defaults). All by default.
# Figures (benches/apps/measure.py): requests, 200 HTML answers, duplicate-content fetches
# (same exact fingerprint, or for other answers the same body digest, as an earlier fetch of
# the crawl), real pages reached (by content), the request at which the last one was reached,
# wall time and peak RSS. For --learn also: rules learned and confirmed, URLs skipped by rules,
# and of up to PROBES skipped URLs fetched afterwards, those whose content the crawl never
# fetched (wrong skips).
#
# Installs php-cli, dokuwiki, mediawiki, wget, httrack with apt-get when missing (needs root),
# and Scrapy through scripts/install-test-deps.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
APPS=${APPS:-dokuwiki mediawiki rustdoc}
PAGES=${PAGES:-1000}
MAX_FETCHES=${MAX_FETCHES:-3000}
DEPTH=${DEPTH:-3}
PROBES=${PROBES:-1000}
TOOLS=${TOOLS:-plain learn wget httrack scrapy}
TIME_LIMIT=${TIME_LIMIT:-900}
WORK=$(mktemp -d /tmp/dust-apps.XXXXXX)
PIDS=()
cleanup() {
  # php -S forks its workers: they go with their parent.
  for p in "${PIDS[@]}"; do pkill -P "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done
  [ -n "${KEEP:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT

need=()
command -v php >/dev/null 2>&1 || need+=(php-cli)
php -m 2>/dev/null | grep -qi '^pdo_sqlite$' || need+=(php-sqlite3)
php -m 2>/dev/null | grep -qi '^xml$' || need+=(php-xml)
php -m 2>/dev/null | grep -qi mbstring || need+=(php-mbstring)
php -m 2>/dev/null | grep -qi intl || need+=(php-intl)
[ -d /usr/share/dokuwiki ] || need+=(dokuwiki)
[ -d /usr/share/mediawiki ] || need+=(mediawiki)
command -v httrack >/dev/null 2>&1 || need+=(httrack)
command -v wget >/dev/null 2>&1 || need+=(wget)
[ -x /usr/bin/time ] || need+=(time)
if ((${#need[@]})); then
  echo "installing: ${need[*]}" >&2
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
bash scripts/install-test-deps.sh >&2
SCRAPY=$ROOT/crates/python/.venv/bin/scrapy
if [ -z "${CRAWLER:-}" ]; then
  nice cargo build --profile dist -q -p url-dedup-crawler --bin crawler --example fingerprint_files
  CRAWLER=$ROOT/target/dist/crawler
fi
FPRINT=$(dirname "$CRAWLER")/examples/fingerprint_files
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_http() { for _ in $(seq 1 100); do curl -s -o /dev/null "$1" && return 0; sleep 0.2; done; echo "no answer from $1" >&2; exit 1; }

# serve NAME DOCROOT: php -S (or, for a static tree, python's http.server) behind the proxy.
# Sets ORIGIN and D (the application's work directory).
serve() {
  local name=$1 root=$2 kind=${3:-php} back
  back=$(free_port)
  if [ "$kind" = php ]; then
    (cd "$root" && PHP_CLI_SERVER_WORKERS=3 exec nice php -S "127.0.0.1:$back" -t "$root" >"$D/server.log" 2>&1) &
  else
    (cd "$root" && exec nice python3 -m http.server --bind 127.0.0.1 "$back" >"$D/server.log" 2>&1) &
  fi
  PIDS+=($!)
  python3 "$ROOT/benches/apps/proxy.py" "$PORT" "$back" "$D/access.log" "$D/store" >"$D/proxy.out" 2>&1 &
  PIDS+=($!)
  ORIGIN="http://127.0.0.1:$PORT"
  wait_http "$ORIGIN/"
}

setup_dokuwiki() {
  local w=$D/doku
  cp -rL /usr/share/dokuwiki "$w"
  mkdir "$w/conf"
  cp -L /etc/dokuwiki/*.php /etc/dokuwiki/*.conf /etc/dokuwiki/*.css "$w/conf/" 2>/dev/null || true
  cp -r /var/lib/dokuwiki/data "$w/data"
  printf "<?php\nif(!defined('DOKU_CONF')) define('DOKU_CONF', '%s/conf/');\nif(!defined('DOKU_FARM')) define('DOKU_FARM', false);\n" "$w" > "$w/inc/preload.php"
  # Debian's configuration (ACL on: anonymous readers may read), with its own data directory.
  printf "<?php\n\$conf['title'] = 'Bench wiki';\n\$conf['useacl'] = 1;\n\$conf['superuser'] = '@admin';\n\$conf['savedir'] = '%s/data';\n" "$w" > "$w/conf/local.php"
  python3 "$ROOT/benches/apps/fill_dokuwiki.py" "$w/data" "$PAGES" > "$D/ids"
  (cd "$w" && nice php bin/indexer.php -q >/dev/null 2>&1)
  serve dokuwiki "$w"
  SEED="$ORIGIN/doku.php?id=start"
  sed "s|^|$ORIGIN/doku.php?id=|" "$D/ids" > "$D/real-urls"
}

setup_mediawiki() {
  local w=$D/mw
  cp -rL /usr/share/mediawiki "$w" 2>/dev/null || true
  rm -f "$w/LocalSettings.php"
  mkdir -p "$D/db"
  nice php "$w/maintenance/install.php" --dbtype sqlite --dbpath "$D/db" --dbname wiki \
    --server "http://127.0.0.1:$PORT" --scriptpath "" --lang en --pass BenchPassword1234 \
    Bench admin > "$D/install.log" 2>&1
  python3 "$ROOT/benches/apps/fill_mediawiki.py" "$D/pages" "$PAGES" > "$D/ids"
  # --overwrite: Main_Page exists after install.php and is replaced by the generated one.
  (cd "$w" && nice php maintenance/importTextFiles.php --overwrite --rc -s "first revision" "$D/pages/v1"/* > "$D/import1.log" 2>&1 &&
    nice php maintenance/importTextFiles.php --overwrite --rc -s "second revision" "$D/pages/v2"/* > "$D/import2.log" 2>&1 &&
    nice php maintenance/runJobs.php > "$D/jobs.log" 2>&1)
  serve mediawiki "$w"
  SEED="$ORIGIN/index.php/Main_Page"
  sed "s|^|$ORIGIN/index.php/|" "$D/ids" > "$D/real-urls"
}

setup_rustdoc() {
  local html
  html="$(rustc --print sysroot)/share/doc/rust/html"
  serve rustdoc "$html" static
  SEED="$ORIGIN/std/index.html"
  (cd "$html" && find std -name '*.html' | sort) | sed "s|^|$ORIGIN/|" > "$D/real-urls"
}

# probe FILE-OF-URLS OUT: fetches each URL once through the proxy, off the crawl's log;
# writes `url<TAB>content key` (the exact fingerprint of a 200 HTML answer, else the digest).
probe() {
  local urls=$1 out=$2
  : > "$D/access.log.probe"
  awk '{printf "url = \"%s\"\noutput = \"/dev/null\"\n", $0}' "$urls" > "$D/curl.cfg"
  [ -s "$urls" ] && { curl -s -H 'X-Bench-Probe: 1' -K "$D/curl.cfg" || true; }
  fingerprints
  awk -F'\t' 'FILENAME==ARGV[1] {fp[$1]=$2; next} {k=($2=="200" && ($4 in fp)) ? fp[$4] : $4; print $6 "\t" k}' \
    "$D/fps" "$D/access.log.probe" | sed "s|^|$ORIGIN|" > "$out"
}

# The exact fingerprint of every HTML body stored so far: `sha1<TAB>fingerprint`.
fingerprints() {
  find "$D/store" -type f ! -name '*.tmp*' | "$FPRINT" | sed 's|^.*/||' > "$D/fps"
}

# run NAME CMD...: one crawl, stopped at MAX_FETCHES requests; prints its row.
run() {
  local name=$1; shift
  : > "$D/access.log"
  rm -rf "$D/out"; mkdir -p "$D/out"
  local start end
  start=$(date +%s.%N)
  local t0=$SECONDS
  (cd "$D/out" && exec /usr/bin/time -v -o "$D/time.txt" nice "$@" >"$D/run.log" 2>&1) &
  local timer=$!
  local stopped=""
  while kill -0 "$timer" 2>/dev/null; do
    if [ "$(wc -l < "$D/access.log")" -ge "$MAX_FETCHES" ]; then
      stopped=" (stopped at the bound)"
    elif ((SECONDS - t0 >= TIME_LIMIT)); then
      stopped=" (stopped at ${TIME_LIMIT} s)"
    fi
    if [ -n "$stopped" ]; then
      pkill -KILL -P "$(pgrep -P "$timer" | head -1)" 2>/dev/null || true
      kill -KILL $(pgrep -P "$timer") 2>/dev/null || true
      break
    fi
    sleep 0.3
  done
  wait "$timer" 2>/dev/null || true
  end=$(date +%s.%N)
  local wall rss
  wall=$(python3 -c "print(f'{$end - $start:.1f}')")
  rss=$(awk -F': ' '/Maximum resident/ {printf "%.0f", $2/1024}' "$D/time.txt")
  fingerprints
  if [ -f "$D/out/crawl/skipped.tsv" ]; then
    # Why the crawler left links unfetched: the limit that ended a crawl before the bound.
    { printf '%s, %s: skipped URLs by reason:' "$APP" "$name"
      cut -f1 "$D/out/crawl/skipped.tsv" | sort | uniq -c | sort -rn | awk '{printf " %s %s", $2, $1}'
      echo; } >> "$RESULTS/skips.txt"
  fi
  local extra="" learn_cols="| | | |"
  if [ -f "$D/out/crawl/skipped.tsv" ] && [[ "$name" == *learn* ]]; then
    awk -F'\t' '$1=="dust-rule" {print $3}' "$D/out/crawl/skipped.tsv" | sort -u > "$D/skipped"
    # A fixed sample: the first PROBES by their digest.
    while read -r u; do printf '%s\t%s\n' "$(printf %s "$u" | md5sum | cut -c1-8)" "$u"; done < "$D/skipped" |
      sort | sed -n "1,${PROBES}p" | cut -f2 > "$D/sample"
    cp "$D/access.log" "$D/crawl.log"
    probe "$D/sample" "$D/probe-fps"
    read -r fetches html dup reached total to_all probed wrong < <(python3 "$ROOT/benches/apps/measure.py" \
      "$D/crawl.log" "$MAX_FETCHES" "$D/fps" "$D/real-fps" "$D/sample" "$D/probe-fps")
    local rules confirmed
    rules=$(grep -cE '^(ignore-param|replace|default-document|trailing)' "$D/out/crawl/rules.txt" 2>/dev/null || true)
    confirmed=$(grep -c 'status confirmed' "$D/out/crawl/rules.txt" 2>/dev/null || true)
    cp "$D/out/crawl/rules.txt" "$RESULTS/$APP-rules.txt" 2>/dev/null || true
    learn_cols="| ${rules:-0} (${confirmed:-0} confirmed) | $(wc -l < "$D/skipped") | $wrong of $probed |"
    LEARN_DUP=$dup
  else
    read -r fetches html dup reached total to_all < <(python3 "$ROOT/benches/apps/measure.py" \
      "$D/access.log" "$MAX_FETCHES" "$D/fps" "$D/real-fps")
    [ "$name" = "url-dedup-crawler" ] && PLAIN_DUP=$dup
  fi
  printf '| %s | %s | %s | %s (%.0f%%) | %s of %s | %s | %s | %s %s\n' "$name" "$fetches$stopped" "$html" "$dup" \
    "$(python3 -c "print(100*$dup/max(1,$fetches))")" "$reached" "$total" "$to_all" "$wall" "$rss" "$learn_cols"
}

RESULTS=$WORK/results; mkdir -p "$RESULTS"
echo "$(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg); PAGES=$PAGES MAX_FETCHES=$MAX_FETCHES DEPTH=$DEPTH"
for APP in $APPS; do
  D=$WORK/$APP; mkdir -p "$D"
  PORT=$(free_port)
  "setup_$APP"
  probe "$D/real-urls" "$D/real-fps"
  echo
  echo "$APP: $(wc -l < "$D/real-urls") real pages, $(cut -f2 "$D/real-fps" | sort -u | wc -l) distinct contents; seed $SEED"
  echo
  echo '| tool | requests | 200 HTML | duplicate-content fetches | real pages reached | requests to reach all | wall s | peak RSS MiB | rules learned | skipped by rules | wrong skips (probed) |'
  echo '|---|---|---|---|---|---|---|---|---|---|---|'
  scope=()
  [ "$APP" = rustdoc ] && scope=(--scope prefix --prefix "$ORIGIN/std/")
  common=("$CRAWLER" --quiet --ignore-robots --no-mirror --no-warc --max-depth "$DEPTH" --max-pages "$MAX_FETCHES" --out crawl "${scope[@]}")
  want() { [[ " $TOOLS " == *" $1 "* ]]; }
  PLAIN_DUP=""; LEARN_DUP=""
  want plain && run "url-dedup-crawler" "${common[@]}" "$SEED"
  want learn && run "url-dedup-crawler --learn" "${common[@]}" --learn "$SEED"
  want wget && run "wget -r" wget --recursive --level="$DEPTH" --no-parent -e robots=off --no-verbose "$SEED"
  want httrack && run "httrack -c8" httrack "$SEED" -O . -q -%v0 -c8 -r$((DEPTH + 1))
  want scrapy && run "Scrapy CrawlSpider" "$SCRAPY" runspider "$ROOT/benches/apps/spider.py" -a "seed=$SEED" \
    -s DEPTH_LIMIT="$DEPTH" -s CLOSESPIDER_PAGECOUNT="$MAX_FETCHES" -s LOG_LEVEL=WARNING
  echo
  if [ -n "$PLAIN_DUP" ] && [ -n "$LEARN_DUP" ]; then
    printf 'duplicate-content fetches per request avoided by --learn: %s\n' \
      "$(python3 -c "p=$PLAIN_DUP; l=$LEARN_DUP; print(f'{100*(p-l)/p:.0f}% ({p} plain, {l} --learn)' if p else 'no duplicates plain')")"
  fi
  echo "load after $APP: $(cut -d' ' -f1-3 /proc/loadavg)"
  for p in "${PIDS[@]}"; do pkill -P "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done
  PIDS=()
done
echo
[ -f "$RESULTS/skips.txt" ] && cat "$RESULTS/skips.txt" && echo
for f in "$RESULTS"/*-rules.txt; do
  [ -f "$f" ] || continue
  echo "rules learned ($(basename "$f" -rules.txt)):"
  echo '```text'; grep -v '^    predicts' "$f" | grep -v '^#' | sed -n '1,40p'; echo '```'
done
