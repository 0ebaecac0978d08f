#!/usr/bin/env python3
# deltahold.py - a proxy before an origin that withholds deltas from /v1/delta bundles, forges their head or fails the fetch (it_chain_lag.sh, it_audit*.sh)
#
# Usage: deltahold.py UPSTREAM_PORT PORTFILE MODEFILE
#
# Listens on 127.0.0.1 (a free port, written to PORTFILE once it listens)
# and forwards every GET and HEAD to 127.0.0.1:UPSTREAM_PORT as it is,
# request and reply headers included (a long-poll waits as long as the
# origin holds it). A 200 from /v1/delta (deltas then the head,
# docs/FORMAT.md 6.1) is changed by the word in MODEFILE, read on each
# request:
#   pass      forwarded as it is
#   withhold  the deltas dropped, the origin's signed head kept: what a
#             path that withholds deltas (or a bundle cut short at a
#             piece) leaves an edge
#   forge     the deltas dropped and the head's seq raised by 100, so its
#             signature no longer verifies: an unverified claim
#   fail      every /v1/delta answers 500: an edge syncing through it
#             keeps its base in step and misses every delta, the way an
#             edge does whose origin's chain is broken
# Runs until killed.
import http.client
import http.server
import os
import struct
import sys

UP = int(sys.argv[1])
MODE = sys.argv[3]
PASS_REQ = ("If-None-Match", "If-Modified-Since", "Accept", "User-Agent")
SKIP_REPLY = ("connection", "transfer-encoding", "keep-alive")
HDR, SIG, OFF_KIND, OFF_SEQ, OFF_BODYLEN = 184, 64, 10, 56, 144
KIND_HEAD = 2


def pieces(b):
    out, pos = [], 0
    while pos < len(b):
        body = struct.unpack_from("<Q", b, pos + OFF_BODYLEN)[0]
        n = HDR + body + SIG
        out.append(bytearray(b[pos:pos + n]))
        pos += n
    return out


def rewrite(body, mode):
    if mode not in ("withhold", "forge"):
        return body
    heads = [p for p in pieces(body) if p[OFF_KIND] == KIND_HEAD]
    if mode == "forge":
        for p in heads:
            seq = struct.unpack_from("<Q", p, OFF_SEQ)[0]
            struct.pack_into("<Q", p, OFF_SEQ, seq + 100)
    return b"".join(bytes(p) for p in heads)


class H(http.server.BaseHTTPRequestHandler):
    def do_HEAD(self):
        self.do_GET("HEAD")

    def do_GET(self, method="GET"):
        try:
            mode = open(MODE).read().strip()
        except OSError:
            mode = "pass"
        if mode == "fail" and self.path.startswith("/v1/delta"):
            self.send_error(500, "delta chain broken (test proxy)")
            return
        c = http.client.HTTPConnection("127.0.0.1", UP, timeout=60)
        hdr = {k: self.headers[k] for k in PASS_REQ if k in self.headers}
        c.request(method, self.path, headers=hdr)
        r = c.getresponse()
        body = r.read()
        if self.path.startswith("/v1/delta") and r.status == 200:
            body = rewrite(body, mode)
        self.send_response(r.status)
        for k, v in r.getheaders():
            if k.lower() not in SKIP_REPLY and k.lower() != "content-length":
                self.send_header(k, v)
        if method == "HEAD":
            n = r.getheader("Content-Length")
            if n is not None:
                self.send_header("Content-Length", n)
            self.end_headers()
            c.close()
            return
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        c.close()

    def log_message(self, *a):
        pass


s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
with open(sys.argv[2] + ".tmp", "w") as f:
    f.write("%d\n" % s.server_address[1])
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
s.serve_forever()
