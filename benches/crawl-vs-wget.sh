#!/usr/bin/env bash
# Crawls one static site (served by nginx on loopback) with our crawler, wget and httrack, in
# the same run, and prints a markdown table: pages fetched, duplicate fetches, requests for
# URLs that do not exist, wall time, pages/s and peak RSS.
#
#   bash benches/crawl-vs-wget.sh [PAGES]      # a generated site, default 20000 pages
#   CRAWLER=target/dist/crawler bash benches/crawl-vs-wget.sh   # no rebuild
#   SITE=~/.rustup/toolchains/stable-x86_64-unknown-linux-gnu/share/doc/rust/html \
#     START=std/index.html bash benches/crawl-vs-wget.sh      # a real site from disk
#
# SITE serves an existing directory instead of generating one; START is the seed's path in
# it. A seed below the root keeps every tool under its directory (the crawler's --scope
# prefix, wget's --no-parent, httrack's default). Every tool runs with its defaults otherwise
# (the crawler fetches page requisites, writes its WARC and mirror; wget and httrack write
# their mirror). "HTML" counts the 200 answers for .html paths and directories, "all" every
# 200 answer (stylesheets, images, scripts).
#
# httrack is given HTTRACK_SECONDS (default 60) per run and killed after that: on this machine
# it fetches about one page per second per connection even with its throttles lifted, so a full
# crawl of the site would take hours. Its pages/s are measured over that window.
#
# Installs nginx, httrack and GNU time with apt-get when they are missing (needs root).
set -euo pipefail
cd "$(dirname "$0")/.."
PAGES=${1:-20000}
HTTRACK_SECONDS=${HTTRACK_SECONDS:-60}
WORK=$(mktemp -d /tmp/crawl-bench.XXXXXX)
trap 'nginx -c "$WORK/nginx.conf" -s stop 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$WORK"' EXIT

need=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx)
command -v httrack >/dev/null 2>&1 || need+=(httrack)
command -v wget >/dev/null 2>&1 || need+=(wget)
[ -x /usr/bin/time ] || need+=(time)
if ((${#need[@]})); then
  echo "installing: ${need[*]}" >&2
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
export PATH="$PATH:/usr/sbin"

# CRAWLER=path/to/crawler skips the build.
if [ -z "${CRAWLER:-}" ]; then
  echo "building the crawler (release)" >&2
  cargo build --profile dist -q -p url-dedup-crawler 2>/dev/null || cargo build --profile dist -p url-dedup-crawler
  CRAWLER=$PWD/target/dist/crawler
fi

START=${START:-index.html}
if [ -n "${SITE:-}" ]; then
  SITE=$(realpath "$SITE")
  scope_dir=$(dirname "$SITE/$START")
  DISTINCT="$(find "$scope_dir" -name '*.html' | wc -l) .html files"
else
SITE="$WORK/site"
scope_dir="$SITE"
echo "generating a $PAGES-page site" >&2
python3 - "$WORK/site" "$PAGES" <<'PY'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(42)
per_dir = 100
dirs = (n + per_dir - 1) // per_dir
words = "crawler filter bloom url canonical segment host robots page link index archive".split()
def text(k):
    return " ".join(rng.choice(words) for _ in range(k))
def page_path(i):
    return f"d{i // per_dir:03d}/p{i:05d}.html"
os.makedirs(root, exist_ok=True)
nav = "".join(f'<li><a href="/d{d:03d}/index.html">section {d}</a></li>' for d in range(0, dirs, max(1, dirs // 10)))
script = '<script>var config = {"search": "/api/search?q=", "next": "/static/js/chunk-vendors.js"};</script>'
with open(os.path.join(root, "index.html"), "w") as f:
    f.write("<!doctype html><html><head><title>Docs</title></head><body><h1>Docs</h1><ul>"
            + "".join(f'<li><a href="d{d:03d}/index.html">section {d}</a></li>' for d in range(dirs))
            + "</ul></body></html>")
for d in range(dirs):
    os.makedirs(os.path.join(root, f"d{d:03d}"), exist_ok=True)
    with open(os.path.join(root, f"d{d:03d}", "index.html"), "w") as f:
        f.write(f"<!doctype html><html><head><title>Section {d}</title></head><body><a href=\"../index.html\">home</a><ul>"
                + "".join(f'<li><a href="p{i:05d}.html">page {i}</a></li>' for i in range(d * per_dir, min(n, (d + 1) * per_dir)))
                + "</ul></body></html>")
for i in range(n):
    links = [page_path((i + k) % n) for k in range(1, 6)] + [page_path(rng.randrange(n)) for _ in range(10)]
    body = "".join(f'<p>{text(60)} <a href="/{p}">{text(3)}</a></p>' for p in links)
    with open(os.path.join(root, page_path(i)), "w") as f:
        f.write(f"<!doctype html><html><head><title>Page {i}</title>{script}</head><body><nav><ul>{nav}</ul></nav>"
                f'<a href="/{page_path(i)}#top">top</a><h1>Page {i}</h1>{body}'
                f'<footer><a href="/index.html">home</a></footer></body></html>')
PY
DISTINCT=$((PAGES + (PAGES + 99) / 100 + 1))
fi

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
chmod 755 "$WORK"
# Workers reopen the access log between runs, so they run as the owner of $WORK.
cat > "$WORK/nginx.conf" <<CONF
user $(id -un) $(id -gn);
worker_processes 2;
pid $WORK/nginx.pid;
error_log $WORK/error.log;
events { worker_connections 1024; }
http {
  include /etc/nginx/mime.types;
  access_log $WORK/access.log;
  log_format plain '\$status \$request_uri';
  server {
    listen 127.0.0.1:$PORT;
    root $SITE;
    access_log $WORK/access.log plain;
    keepalive_requests 100000;
  }
}
CONF
nginx -c "$WORK/nginx.conf"
SEED="http://127.0.0.1:$PORT/$START"
# A seed below the root keeps the crawler under its directory, as --no-parent does wget.
SCOPE=()
[[ "$START" == */* ]] && SCOPE=(--scope prefix --prefix "http://127.0.0.1:$PORT/$(dirname "$START")/")

# run NAME CONCURRENCY CAP-SECONDS COMMAND...   (CAP 0: run to the end)
run() {
  local name=$1 conc=$2 cap=$3; shift 3
  : > "$WORK/access.log"
  nginx -c "$WORK/nginx.conf" -s reopen 2>/dev/null; sleep 0.2
  rm -rf "$WORK/out"; mkdir -p "$WORK/out"
  local start end
  start=$(date +%s.%N)
  /usr/bin/time -v -o "$WORK/time.txt" "$@" >"$WORK/run.log" 2>&1 &
  local timer=$!
  if [ "$cap" -gt 0 ]; then
    # Killing the measured process (not GNU time) keeps its peak RSS in the report.
    (sleep "$cap"; kill -KILL $(pgrep -P "$timer") 2>/dev/null) &
    local killer=$!
  fi
  wait "$timer" || true
  [ "$cap" -gt 0 ] && { kill "$killer" 2>/dev/null; wait "$killer" 2>/dev/null; } || true
  end=$(date +%s.%N)
  local wall rss ok dups missing rate
  wall=$(python3 -c "print(f'{$end - $start:.2f}')")
  rss=$(awk -F': ' '/Maximum resident/ {printf "%.0f", $2/1024}' "$WORK/time.txt")
  read -r html ok dups missing < <(python3 - "$WORK/access.log" <<'PY'
import collections, sys
hits, ok, missing = collections.Counter(), set(), 0
for line in open(sys.argv[1]):
    status, _, uri = line.strip().partition(" ")
    if uri == "/robots.txt":
        continue
    hits[uri] += 1
    ok.add(uri) if status == "200" else None
    missing += status == "404"
html = sum(1 for u in ok if u.split("?")[0].endswith((".html", "/")))
print(html, len(ok), sum(hits.values()) - len(hits), missing)
PY
)
  rate=$(python3 -c "print(f'{$html / $wall:.0f}')")
  printf '| %s | %s | %s / %s | %s | %s | %s | %s | %s | %s |\n' "$name" "$conc" "$html" "$DISTINCT" "$ok" "$dups" "$missing" "$wall" "$rate" "$rss"
}

echo
echo "site: $SEED from $SITE ($DISTINCT under the seed's directory, $(du -sh "$scope_dir" 2>/dev/null | cut -f1)), nginx on loopback; $(nproc) cores"
cargo build --profile dist -q -p url-dedup-benches --bin mem-latency
echo "$(target/dist/mem-latency); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo '| crawler | connections | HTML pages (200) / on disk | all 200 answers | duplicate fetches | 404 requests | wall s | HTML pages/s | peak RSS MiB |'
echo '|---|---|---|---|---|---|---|---|---|'
run "url-dedup-crawler" 1 0 "$CRAWLER" "$SEED" "${SCOPE[@]}" --quiet --out "$WORK/out" --per-host 1 --max-depth 10000
run "wget --recursive" 1 0 wget --recursive --level=inf --no-parent --no-verbose --directory-prefix="$WORK/out" "$SEED"
HTTRACK=(httrack "$SEED" -O "$WORK/out" -q -%v0 -%N0 -%c1000 -A1000000000 --disable-security-limits -r99999)
run "httrack (${HTTRACK_SECONDS} s cap)" 1 "$HTTRACK_SECONDS" "${HTTRACK[@]}" -c1
run "url-dedup-crawler" 8 0 "$CRAWLER" "$SEED" "${SCOPE[@]}" --quiet --out "$WORK/out" --per-host 8 --max-depth 10000
run "httrack (${HTTRACK_SECONDS} s cap)" 8 "$HTTRACK_SECONDS" "${HTTRACK[@]}" -c8
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
