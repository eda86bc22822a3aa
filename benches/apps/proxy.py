"""A logging HTTP proxy in front of an application served on loopback (benches/dust-apps.sh).

    python3 proxy.py LISTEN_PORT BACKEND_PORT LOG STORE

Forwards every request to 127.0.0.1:BACKEND_PORT with its Host header unchanged (so the
application writes links to the proxy) and without Accept-Encoding (so bodies are plain).
Logs one line per response: `seq<TAB>status<TAB>content-type<TAB>sha1 of body<TAB>bytes<TAB>uri`
to LOG, or to LOG.probe when the request has the header `X-Bench-Probe` (the script's own
reference fetches). Each distinct HTML body of a 200 answer is kept once in STORE/SHA1.
"""
import hashlib
import http.client
import http.server
import os
import sys
import threading

listen, backend, log_path, store = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
os.makedirs(store, exist_ok=True)
lock = threading.Lock()
logs = {False: open(log_path, "a", buffering=1), True: open(log_path + ".probe", "a", buffering=1)}
seq = {False: 0, True: 0}
local = threading.local()
HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade",
       "accept-encoding"}


def connection():
    if getattr(local, "conn", None) is None:
        local.conn = http.client.HTTPConnection("127.0.0.1", backend, timeout=120)
    return local.conn


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def forward(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP and k.lower() != "x-bench-probe"}
        for attempt in range(2):
            try:
                conn = connection()
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                break
            except (http.client.HTTPException, OSError):
                local.conn = None
                if attempt:
                    self.send_error(502)
                    return
        probe = "X-Bench-Probe" in self.headers
        ctype = resp.getheader("Content-Type", "").split(";")[0].strip()
        digest = hashlib.sha1(data).hexdigest()
        if resp.status == 200 and ctype in ("text/html", "application/xhtml+xml"):
            path = os.path.join(store, digest)
            if not os.path.exists(path):
                with open(path + ".tmp%d" % threading.get_ident(), "wb") as f:
                    f.write(data)
                os.replace(path + ".tmp%d" % threading.get_ident(), path)
        with lock:
            seq[probe] += 1
            logs[probe].write("%d\t%d\t%s\t%s\t%d\t%s\n" % (seq[probe], resp.status, ctype or "-", digest, len(data), self.path))
        self.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() not in HOP and k.lower() != "content-length":
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_HEAD = do_POST = forward


server = http.server.ThreadingHTTPServer(("127.0.0.1", listen), Handler)
server.daemon_threads = True
print("ready", flush=True)
server.serve_forever()
