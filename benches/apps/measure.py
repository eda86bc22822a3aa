"""Figures of one crawl of a served application (benches/dust-apps.sh).

    python3 measure.py LOG MAX_FETCHES FPS REAL_FPS [SKIPPED PROBE_FPS]

LOG is the proxy's log of the crawl; only its first MAX_FETCHES lines count. FPS maps each
stored HTML body (sha1) to its exact fingerprint; REAL_FPS lists the fingerprint of each real
page (fetched at its canonical URL before the crawls). A fetch is a duplicate when its content
(the exact fingerprint of a 200 HTML answer, else the sha1 of its body) was fetched before
in the crawl. A real page is reached when a 200 answer has its fingerprint. SKIPPED lists
URLs the crawler skipped by a rule; PROBE_FPS the fingerprint of each one probed: a skip is
wrong when its page's content was never fetched in the crawl.

Prints: fetches html_fetches dup_fetches real_reached real_total fetches_to_all
[probed wrong].
"""
import sys

log, cap, fps_path, real_path = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
fps = dict(line.rstrip("\n").split("\t")[:2] for line in open(fps_path) if "\t" in line)
real = {line.split("\t")[1].strip() for line in open(real_path) if "\t" in line}
seen, reached = set(), set()
fetches = html = dup = 0
to_all = "-"
for line in open(log):
    f = line.rstrip("\n").split("\t")
    if len(f) < 6:
        continue
    if fetches >= cap:
        break
    fetches += 1
    status, ctype, sha = f[1], f[2], f[3]
    key = fps.get(sha) if status == "200" and ctype in ("text/html", "application/xhtml+xml") else None
    if key is not None:
        html += 1
    if status != "200":
        continue
    key = key or sha
    if key in seen:
        dup += 1
    seen.add(key)
    if key in real and key not in reached:
        reached.add(key)
        if len(reached) == len(real):
            to_all = str(fetches)
out = [fetches, html, dup, len(reached), len(real), to_all]
if len(sys.argv) > 6:
    probes = [line.split("\t")[1].strip() for line in open(sys.argv[6]) if "\t" in line]
    out += [len(probes), sum(1 for p in probes if p not in seen)]
print(*out)
