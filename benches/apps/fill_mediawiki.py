"""Writes the pages of a MediaWiki for maintenance/importTextFiles.php (benches/dust-apps.sh).

    python3 fill_mediawiki.py DIR PAGES

DIR/v1/TITLE.txt is each page's first revision, DIR/v2/TITLE.txt the second of every third
article (so `action=history` lists two and `oldid=` and `diff=` views exist). Articles
(`Article_0712`) sit in categories of 100 (`Category:Group_07`), each link five others; each
category page and `Main_Page` list their members. Prints the real pages' titles as URLs
name them: the articles, the category pages and `Main_Page`.
"""
import os
import random
import sys

out, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(34)
words = ("crawler filter bloom url canonical segment host robots page link index archive "
         "river stone garden lantern harbour meadow copper violet signal orbit thread quartz "
         "falcon ember glacier willow tundra beacon cipher delta fable grove helix island").split()
per_cat = 100
cats = (n + per_cat - 1) // per_cat
os.makedirs(os.path.join(out, "v1"), exist_ok=True)
os.makedirs(os.path.join(out, "v2"), exist_ok=True)


def title(i):
    return f"Article_{i:04d}"


def text(k):
    return " ".join(rng.choice(words) for _ in range(k))


def write(version, name, body):
    with open(os.path.join(out, version, name + ".txt"), "w") as f:
        f.write(body)


titles = []
for i in range(n):
    links = [title((i + d) % n) for d in (1, 2)] + [title(rng.randrange(n)) for _ in range(3)]
    body = f"'''Article {i}'''\n\n"
    for l in links:
        body += f"{text(50)} [[{l.replace('_', ' ')}|{text(2)}]] {text(20)}\n\n"
    body += f"[[Category:Group {i // per_cat:02d}]]\n"
    if i % 3 == 0:
        write("v1", title(i), body.replace(f"'''Article {i}'''", f"'''Article {i} (draft)'''") + text(30) + "\n")
        write("v2", title(i), body)
    else:
        write("v1", title(i), body)
    titles.append(title(i))
for c in range(cats):
    write("v1", f"Category:Group_{c:02d}", f"Articles of group {c}.\n")
    titles.append(f"Category:Group_{c:02d}")
write("v1", "Main_Page", "Welcome.\n\n" + "".join(f"* [[:Category:Group {c:02d}]]\n" for c in range(cats)))
titles.append("Main_Page")
print("\n".join(titles))
