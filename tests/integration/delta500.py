#!/usr/bin/env python3
# delta500.py - a proxy before an origin that fails every delta chain fetch, for the audit tests
#
# Usage: delta500.py UPSTREAM_PORT PORTFILE
#
# Listens on 127.0.0.1 (a free port, written to PORTFILE once it listens)
# and forwards every GET to 127.0.0.1:UPSTREAM_PORT as it is, request and
# reply headers included (an edge's If-None-Match and the ETag it gets
# back), except /v1/delta, which answers 500: an edge syncing through it
# keeps its base in step and misses every delta, the way an edge does
# whose origin's chain is broken. Runs until killed.
import http.client
import http.server
import os
import sys

UP = int(sys.argv[1])
PASS_REQ = ("If-None-Match", "If-Modified-Since", "Accept", "User-Agent")
SKIP_REPLY = ("connection", "transfer-encoding", "keep-alive")


class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path.startswith("/v1/delta"):
            self.send_error(500, "delta chain broken (test proxy)")
            return
        c = http.client.HTTPConnection("127.0.0.1", UP, timeout=10)
        hdr = {k: self.headers[k] for k in PASS_REQ if k in self.headers}
        c.request("GET", self.path, headers=hdr)
        r = c.getresponse()
        body = r.read()
        self.send_response(r.status)
        for k, v in r.getheaders():
            if k.lower() not in SKIP_REPLY and k.lower() != "content-length":
                self.send_header(k, v)
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
