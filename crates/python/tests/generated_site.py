"""A generated site on loopback that records every request it answers.

Two sections, ``/a/<i>`` and ``/b/<i>`` (``i`` below ``size``). Each page links forward to
``i + 1`` and ``i + 7`` of its section, each link twice more in other spellings of the same
page (a fragment; the query parameters in another order), so a crawler that does not
deduplicate fetches pages again. Pages from ``cross`` on also link to the other section, but
only to its pages from ``cross`` on: a crawl started at ``/a/0`` alone reaches ``/a/*`` and
``/b/cross..``, never ``/b/0 .. /b/cross-1``.

With ``aliases``, each link also comes in two spellings no canonicalization folds, as a site's
own habits make them: a print view (``/print/a/3?...``) and a sort order (``&sort=new``). Only
learned rules (:data:`ALIAS_RULES`) tell a crawler they are the same page.
"""

from __future__ import annotations

import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlencode, urlsplit


def page_path(section: str, i: int) -> str:
    return f"/{section}/{i}?lang=en&v=1"


ALIAS_RULES = """rules-format 1
host "{host}"
replace "/print/" "/"
ignore-param "sort" in "/*/*"
"""
"""The rules that fold a site's aliases, ``{host}`` to be replaced by its ``host:port``."""


class Site:
    def __init__(self, size: int = 60, cross: int = 30, aliases: bool = False) -> None:
        self.size, self.cross, self.aliases = size, cross, aliases
        self.lock = threading.Lock()
        self.hits: Counter[str] = Counter()
        # hold(): a page whose request waits for release(), and the event of its arrival.
        self.held: str | None = None
        self.arrived = threading.Event()
        self.released = threading.Event()
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the name http.server calls)
                page = site.page_of(self.path)
                if page is None:
                    self.send_error(404)
                    return
                with site.lock:
                    site.hits[page] += 1
                if page == site.held:
                    site.arrived.set()
                    site.released.wait()
                body = site.render(page).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.host = f"127.0.0.1:{self.server.server_address[1]}"
        self.base = f"http://{self.host}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def pages(self) -> set[str]:
        """Every page's canonical name, ``a/0`` ..."""
        return {f"{s}/{i}" for s in "ab" for i in range(self.size)}

    def url(self, page: str) -> str:
        section, i = page.split("/")
        return self.base + page_path(section, int(i))

    def page_of(self, path: str) -> str | None:
        """The page a request path names, whatever the spelling; None for anything else."""
        parts = urlsplit(path)
        pieces = parts.path.strip("/").split("/")
        query = dict(parse_qsl(parts.query))
        if self.aliases:
            if pieces[0] == "print":
                pieces = pieces[1:]
            query.pop("sort", None)
        if len(pieces) != 2 or pieces[0] not in ("a", "b") or query != {"lang": "en", "v": "1"}:
            return None
        if not pieces[1].isdigit() or int(pieces[1]) >= self.size:
            return None
        return f"{pieces[0]}/{int(pieces[1])}"

    def links(self, page: str) -> list[str]:
        section, i = page.split("/")
        i = int(i)
        targets = [(section, j) for j in (i + 1, i + 7) if j < self.size]
        if i >= self.cross:
            other = "b" if section == "a" else "a"
            targets.append((other, i))
        hrefs = []
        for s, j in targets:
            hrefs.append(page_path(s, j))
            hrefs.append(page_path(s, j) + "#top")
            hrefs.append(f"/{s}/{j}?" + urlencode([("v", "1"), ("lang", "en")]))
            if self.aliases:
                hrefs.append("/print" + page_path(s, j))
                hrefs.append(page_path(s, j) + "&sort=new")
        return hrefs

    def rules(self) -> str:
        """The rules that fold this site's aliases (:data:`ALIAS_RULES`)."""
        return ALIAS_RULES.format(host=self.host)

    def render(self, page: str) -> str:
        anchors = "".join(f'<a href="{h}">{h}</a>\n' for h in self.links(page))
        return f"<!doctype html><html><head><title>{page}</title></head><body>{anchors}</body></html>"

    def fetched_twice(self) -> dict[str, int]:
        with self.lock:
            return {p: n for p, n in self.hits.items() if n > 1}

    def fetched(self) -> set[str]:
        with self.lock:
            return set(self.hits)

    def reset(self) -> None:
        with self.lock:
            self.hits.clear()

    def hold(self, page: str) -> threading.Event:
        """Makes requests of ``page`` wait until :meth:`release`; the event returned is set
        when the first arrives, so a test can act while a crawl is surely mid-way."""
        self.held = page
        self.arrived.clear()
        self.released.clear()
        return self.arrived

    def release(self) -> None:
        self.held = None
        self.released.set()

    def close(self) -> None:
        self.release()
        self.server.shutdown()
        self.server.server_close()
