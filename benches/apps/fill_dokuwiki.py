"""Fills a DokuWiki data directory (benches/dust-apps.sh).

    python3 fill_dokuwiki.py DATA PAGES

Writes PAGES articles in namespaces of 100 (`ns07:p0712`), a start page per namespace that
lists its articles, and a root `start` that lists the namespaces; each article links to five
others and every tenth shows one of a few media files. Every third article has an older
revision (attic and changelog), so `rev=` and `do=diff` views exist. Prints the real pages'
ids, one a line: the articles, the namespace start pages and `start`.
"""
import gzip
import os
import random
import sys
import zlib

data, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(34)
words = ("crawler filter bloom url canonical segment host robots page link index archive "
         "river stone garden lantern harbour meadow copper violet signal orbit thread quartz "
         "falcon ember glacier willow tundra beacon cipher delta fable grove helix island").split()
per_ns = 100
spaces = (n + per_ns - 1) // per_ns


def ident(i):
    return f"ns{i // per_ns:02d}:p{i:04d}"


def path(kind, page_id, ext):
    p = os.path.join(data, kind, *page_id.split(":")) + ext
    os.makedirs(os.path.dirname(p), exist_ok=True)
    return p


def text(k):
    return " ".join(rng.choice(words) for _ in range(k))


# A few small PNGs (one coloured pixel each, a valid file).
def png(r, g, b):
    import struct
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    raw = zlib.compress(b"\x00" + bytes([r, g, b]))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", raw) + chunk(b"IEND", b""))


media = []
for k in range(5):
    mid = f"media:img{k}.png"
    with open(path("media", mid, ""), "wb") as f:
        f.write(png(40 * k, 200 - 30 * k, 90))
    media.append(mid)

now = 1700000000
ids = []
for i in range(n):
    pid = ident(i)
    links = [ident((i + d) % n) for d in (1, 2)] + [ident(rng.randrange(n)) for _ in range(3)]
    body = f"====== Article {i} ======\n\n"
    for j, l in enumerate(links):
        body += f"{text(50)} [[{l}|{text(2)}]] {text(20)}\n\n"
    if i % 10 == 0:
        body += "{{" + media[i % len(media)] + "?100}}\n\n"
    old = body.replace(f"Article {i}", f"Article {i} (draft)") + text(30) + "\n"
    cur = path("pages", pid, ".txt")
    with open(cur, "w") as f:
        f.write(body)
    changes = f"{now}\t127.0.0.1\tC\t{pid}\t\tcreated\t\t{len(body)}\n"
    if i % 3 == 0:
        t0, t1 = now, now + 3600 + i
        with gzip.open(path("attic", pid, f".{t0}.txt.gz"), "wt") as f:
            f.write(old)
        changes = (f"{t0}\t127.0.0.1\tC\t{pid}\t\tcreated\t\t{len(old)}\n"
                   f"{t1}\t127.0.0.1\tE\t{pid}\t\tedited\t\t{len(body) - len(old)}\n")
        os.utime(cur, (t1, t1))
    else:
        os.utime(cur, (now, now))
    with open(path("meta", pid, ".changes"), "w") as f:
        f.write(changes)
    ids.append(pid)

for s in range(spaces):
    sid = f"ns{s:02d}:start"
    body = f"====== Namespace {s} ======\n\n" + "".join(
        f"  * [[{ident(i)}]]\n" for i in range(s * per_ns, min(n, (s + 1) * per_ns)))
    with open(path("pages", sid, ".txt"), "w") as f:
        f.write(body)
    ids.append(sid)
with open(path("pages", "start", ".txt"), "w") as f:
    f.write("====== Welcome ======\n\n" + "".join(f"  * [[ns{s:02d}:start|Namespace {s}]]\n" for s in range(spaces)))
ids.append("start")
print("\n".join(ids))
