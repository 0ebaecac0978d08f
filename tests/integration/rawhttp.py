#!/usr/bin/env python3
# rawhttp.py - raw-socket HTTP client for the hostile, limits and soak tests
#
# Subcommands (all talk to 127.0.0.1:PORT only; every one exits 0 when it
# could run and prints its findings, except `table`, which exits 1 when a
# case got the wrong answer):
#   send PORT REQUEST              one raw request (backslash escapes); prints
#                                  the status code, or "closed" / "timeout"
#   table PORT FILE [VAR=VALUE|VAR=@path]...
#                                  runs a request table (hostile.tsv), one
#                                  line per case; fails naming each mismatch
#                                  (a status "A>B>closed" is every answer
#                                  the request gets, then what ended it)
#   idle PORT SECONDS PARTIAL [BIND]
#                                  sends PARTIAL (escapes) and then nothing;
#                                  prints seconds until the server dropped it
#   trickle PORT INTERVAL SECONDS [BIND]
#                                  sends a request one byte per INTERVAL;
#                                  prints seconds until dropped, or "alive"
#   trickle-body PORT INTERVAL SECONDS [BIND]
#                                  the same with a POST whose headers are
#                                  sent at once and whose body trickles
#   perip PORT LIMIT OTHER_ADDR    holds LIMIT connections from 127.0.0.1,
#                                  tries one more, and one from OTHER_ADDR;
#                                  prints a JSON verdict
#   bigbody PORT CLEN SEND PATH    announces CLEN bytes, sends SEND of them,
#                                  reads the answer without sending the rest
#   bigchunk PORT TOTAL PATH       streams up to TOTAL chunked bytes, stops
#                                  at the first answer; prints status, sent
#   serve PORT MODE                a fake upstream authority that never
#                                  answers usefully (500, garbage, wrongid,
#                                  hang; silent: accepts, never reads or
#                                  writes, so a TLS handshake hangs too);
#                                  PORT 0 picks a free one; prints the port
#   load PORT SECONDS CLIENTS      keep-alive clients hammering the check
#                                  endpoints; prints a JSON summary (statuses,
#                                  filter versions going down per client)
import codecs
import json
import os
import random
import re
import select
import socket
import sys
import threading
import time

HOST = "127.0.0.1"


def unescape(s):
    """Backslash escapes (\\r \\n \\t \\xNN \\\\) to bytes; the rest as UTF-8."""
    return codecs.escape_decode(s.encode("utf-8"))[0]


def connect(port, bind=None, timeout=10.0):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    if bind:
        s.bind((bind, 0))
    s.connect((HOST, port))
    return s


def read_response(s, deadline=10.0):
    """Reads one HTTP response. Returns (status, headers dict, body) or
    (None, reason, b"") when the server closed or timed out first."""
    buf = b""
    end = time.monotonic() + deadline
    while b"\r\n\r\n" not in buf:
        s.settimeout(max(0.05, end - time.monotonic()))
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            return None, "timeout", b""
        except (ConnectionResetError, BrokenPipeError):
            return None, "closed", b""
        if not chunk:
            return None, "closed", b""
        buf += chunk
    head, _, body = buf.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    m = re.match(rb"HTTP/1\.[01] (\d{3})", lines[0])
    if not m:
        return None, "garbage:" + repr(lines[0][:60]), b""
    hdrs = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(b":")
        hdrs[k.strip().lower().decode("latin-1")] = v.strip().decode("latin-1")
    clen = hdrs.get("content-length")
    if clen is not None and clen.isdigit():
        n = int(clen)
        while len(body) < n:
            s.settimeout(max(0.05, end - time.monotonic()))
            try:
                chunk = s.recv(65536)
            except (socket.timeout, ConnectionResetError):
                break
            if not chunk:
                break
            body += chunk
    return int(m.group(1)), hdrs, body


def exchange(port, req, bind=None, deadline=10.0):
    s = connect(port, bind)
    try:
        # Send in slices and stop as soon as an answer is readable: a
        # server that refuses early (413) closes with our bytes unread,
        # and the reset that follows would destroy its answer.
        for off in range(0, len(req), 8192):
            r, _, _ = select.select([s], [], [], 0)
            if r:
                break
            try:
                s.sendall(req[off:off + 8192])
            except (ConnectionResetError, BrokenPipeError):
                break   # the answer may already be waiting
        return read_response(s, deadline)
    finally:
        s.close()


def exchange_all(port, req, deadline=3.0):
    """Sends req at once and reads every answer until the server closes
    (or deadline seconds pass without a byte): (status, headers, body) of
    the last answer, and the chain of what came, "200>400>closed" or
    "200>200>timeout"."""
    s = connect(port)
    buf = b""
    end = "closed"
    try:
        try:
            s.sendall(req)
        except (ConnectionResetError, BrokenPipeError):
            pass
        while True:
            s.settimeout(deadline)
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                end = "timeout"
                break
            except (ConnectionResetError, BrokenPipeError):
                break
            if not chunk:
                break
            buf += chunk
    finally:
        s.close()
    chain = []
    last = (None, end, b"")
    while buf:
        head, sep, rest = buf.partition(b"\r\n\r\n")
        m = re.match(rb"HTTP/1\.[01] (\d{3})", head)
        if not sep or not m:
            chain.append("garbage")
            break
        hdrs = {}
        for ln in head.split(b"\r\n")[1:]:
            k, _, v = ln.partition(b":")
            hdrs[k.strip().lower().decode("latin-1")] = \
                v.strip().decode("latin-1")
        n = int(hdrs.get("content-length", "0") or 0)
        body, buf = rest[:n], rest[n:]
        chain.append(m.group(1).decode())
        last = (int(m.group(1)), hdrs, body)
    chain.append(end)
    return last + (">".join(chain),)


# ---------------------------------------------------------------- table

def expand(text, variables):
    """{{rep:N:TEXT}} repeats TEXT, backslash escapes are decoded,
    {{var:NAME}} inserts a variable as it is; {{LEN}} (after the blank line) becomes
    the body length."""
    def rep(m):
        return m.group(2) * int(m.group(1))
    inner = re.compile(r"\{\{rep:(\d+):((?:(?!\{\{).)*?)\}\}", re.S)
    while True:     # innermost first, so repeats nest
        text, n = inner.subn(rep, text)
        if n == 0:
            break
    out = b""
    # Variables go in verbatim (not unescaped): they hold PEM and JSON.
    for i, part in enumerate(re.split(r"\{\{var:(\w+)\}\}", text)):
        out += variables[part].encode() if i % 2 else unescape(part)
    return out


def build_request(kind, spec, port, variables):
    host = ("Host: %s:%d\r\n" % (HOST, port)).encode()
    if kind == "raw":
        req = expand(spec, variables)
        if b"{{LEN}}" in req:
            body = req.partition(b"\r\n\r\n")[2]
            req = req.replace(b"{{LEN}}", str(len(body)).encode())
        return req.replace(b"{{HOST}}", host.strip())
    if kind == "get":
        target = expand(spec, variables)
        return b"GET " + target + b" HTTP/1.1\r\n" + host + \
            b"Connection: close\r\n\r\n"
    if kind == "json":
        body = expand(spec, variables)
        return b"POST /v1/check HTTP/1.1\r\n" + host + \
            b"Content-Type: application/json\r\nConnection: close\r\n" + \
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    if kind == "authz":
        # spec: the Authorization header value
        return b"GET /v1/authz HTTP/1.1\r\n" + host + b"Authorization: " + \
            expand(spec, variables) + b"\r\nConnection: close\r\n\r\n"
    if kind == "certhdr":
        return b"GET /v1/authz HTTP/1.1\r\n" + host + b"X-SSL-Client-Cert: " + \
            expand(spec, variables) + b"\r\nConnection: close\r\n\r\n"
    raise ValueError("unknown kind " + kind)


def run_table(port, path, variables):
    failed = 0
    total = 0
    xfail = 0
    for lineno, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) != 5:
            print("%s:%d: want 5 tab-separated columns, got %d"
                  % (path, lineno, len(cols)))
            return 2
        name, want, code, kind, spec = cols
        total += 1
        req = build_request(kind, spec, port, variables)
        if ">" in want:
            status, hdrs, body, got = exchange_all(port, req, deadline=3)
        else:
            status, hdrs, body = exchange(port, req, deadline=3)
            got = str(status) if status is not None else hdrs
        # "WANT!KNOWN": the contract says WANT; the daemon is known to
        # answer KNOWN (a reported bug). KNOWN is tolerated and counted.
        want, _, known = want.partition("!")
        problems = []
        if known and got == known:
            xfail += 1
            print("XFAIL %s (%s:%d): got %s, the contract says %s (known bug)"
                  % (name, path, lineno, got, want))
            continue
        if got != want:
            problems.append("status %s, want %s" % (got, want))
        elif known:
            print("XPASS %s (%s:%d): now answers %s; drop the !%s marker"
                  % (name, path, lineno, got, known))
        if status is not None and code != "-" and got == want:
            try:
                err = json.loads(body.decode("utf-8")).get("error")
            except Exception:
                err = "<not JSON: %r>" % body[:80]
            if err != code:
                problems.append("error %r, want %r" % (err, code))
        if status == 405 and "allow" not in hdrs:
            problems.append("405 without an Allow header")
        if status is not None and status >= 400 and code != "-" and \
                hdrs.get("content-type", "").split(";")[0] != "application/json":
            problems.append("error body is not application/json")
        if problems:
            failed += 1
            print("FAIL %s (%s:%d, %d request bytes): %s; body %r"
                  % (name, path, lineno, len(req), "; ".join(problems),
                     body[:200]))
        else:
            print("ok %s -> %s" % (name, got))
    print("table: %d cases, %d failed, %d known bugs" % (total, failed, xfail))
    return 1 if failed else 0


# ---------------------------------------------------------------- limits

def wait_dropped(s, limit):
    """Seconds until the peer closes s (reading and discarding), or None."""
    start = time.monotonic()
    while time.monotonic() - start < limit:
        s.settimeout(0.1)
        try:
            chunk = s.recv(65536)
            if not chunk:
                return time.monotonic() - start
        except socket.timeout:
            continue
        except (ConnectionResetError, BrokenPipeError):
            return time.monotonic() - start
    return None


def cmd_idle(port, seconds, partial, bind=None):
    s = connect(port, bind)
    s.sendall(unescape(partial))
    t = wait_dropped(s, seconds)
    s.close()
    print("alive" if t is None else "%.2f" % t)


def cmd_trickle(port, interval, seconds, bind=None, body=False):
    req = b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + \
        b"".join(b"X-Slow-%d: %s\r\n" % (i, b"y" * 20) for i in range(200))
    s = connect(port, bind)
    if body:    # the headers at once, then the body byte by byte
        req = b'{"id": "tok-1", "pad": "' + b"x" * 200 + b'"}'
        s.sendall(b"POST /v1/check HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(req))
    start = time.monotonic()
    i = 0
    dropped = None
    while time.monotonic() - start < seconds and i < len(req):
        try:
            s.sendall(req[i:i + 1])
        except (ConnectionResetError, BrokenPipeError):
            dropped = time.monotonic() - start
            break
        i += 1
        t = wait_dropped(s, interval)
        if t is not None:
            dropped = time.monotonic() - start
            break
    s.close()
    print("alive" if dropped is None else "%.2f" % dropped)


def cmd_perip(port, limit, other):
    held = []
    out = {}
    for _ in range(limit):
        s = connect(port)
        s.sendall(b"GET /healthz HTTP/1.1\r\n")   # incomplete: stays open
        held.append(s)
    time.sleep(0.3)
    # Each held connection must still be open (none refused below the limit).
    out["held_open"] = sum(1 for s in held if wait_dropped(s, 0.05) is None)
    req = b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    st, why, _ = exchange(port, req, deadline=5)
    out["over_limit"] = st if st is not None else why
    st, why, _ = exchange(port, req, bind=other, deadline=5)
    out["other_addr"] = st if st is not None else why
    for s in held:
        s.close()
    time.sleep(0.3)
    st, why, _ = exchange(port, req, deadline=5)
    out["after_release"] = st if st is not None else why
    print(json.dumps(out, sort_keys=True))


def cmd_bigbody(port, clen, send, path):
    s = connect(port)
    head = ("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "Content-Length: %d\r\n\r\n" % (path, clen)).encode()
    s.sendall(head + b"{" + b" " * (send - 1))
    st, hdrs, body = read_response(s, 5)
    s.close()
    if st is None:
        print(json.dumps({"status": hdrs}))
    else:
        try:
            err = json.loads(body.decode()).get("error")
        except Exception:
            err = None
        print(json.dumps({"status": st, "error": err}))


def cmd_bigchunk(port, total, path):
    """Streams a chunked body of up to TOTAL bytes in 4 KiB chunks and
    stops as soon as the server answers; reports how much was sent."""
    s = connect(port)
    s.sendall(("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
               "\r\nTransfer-Encoding: chunked\r\n\r\n" % path).encode())
    sent = 0
    chunk = b"1000\r\n" + b" " * 4096 + b"\r\n"
    while sent < total:
        r, _, _ = select.select([s], [], [], 0)
        if r:
            break
        try:
            s.sendall(chunk)
        except (ConnectionResetError, BrokenPipeError):
            break
        sent += 4096
    st, hdrs, body = read_response(s, 5)
    s.close()
    print(json.dumps({"status": st if st is not None else hdrs, "sent": sent}))


# ---------------------------------------------------------------- load

class Client(threading.Thread):
    """One keep-alive connection; records statuses and filter versions."""

    def __init__(self, port, deadline, requests, n):
        super().__init__(daemon=True)
        self.port = port
        self.deadline = deadline
        self.requests = requests
        self.n = n
        self.statuses = {}
        self.unexpected = []
        self.down = []
        self.versions = set()
        self.last = 0
        self.count = 0
        self.reconnects = 0

    def run(self):
        rnd = random.Random(self.n)
        s = None
        while time.monotonic() < self.deadline:
            name, req, want = rnd.choice(self.requests)
            try:
                if s is None:
                    s = connect(self.port, timeout=10)
                s.sendall(req)
                st, hdrs, body = read_response(s, 10)
            except OSError as e:
                st, hdrs, body = None, "error:%s" % e.__class__.__name__, b""
            if st is None:
                # A drop between requests on an idle keep-alive connection
                # is legal HTTP; retry once on a fresh connection.
                if s is not None:
                    s.close()
                s = None
                self.reconnects += 1
                try:
                    s = connect(self.port, timeout=10)
                    s.sendall(req)
                    st, hdrs, body = read_response(s, 10)
                except OSError as e:
                    st, hdrs, body = None, "error:%s" % e.__class__.__name__, b""
            self.count += 1
            key = str(st) if st is not None else hdrs
            self.statuses[key] = self.statuses.get(key, 0) + 1
            if st != want:
                if len(self.unexpected) < 5:
                    self.unexpected.append("%s: %s %r" % (name, key, body[:120]))
                if s is not None:
                    s.close()
                s = None
                continue
            v = hdrs.get("x-revcheck-filter-version")
            if v is None or not v.isdigit():
                if len(self.unexpected) < 5:
                    self.unexpected.append("%s: no X-Revcheck-Filter-Version" % name)
                self.statuses["no-version"] = self.statuses.get("no-version", 0) + 1
                continue
            v = int(v)
            try:
                bv = json.loads(body.decode()).get("filter_version")
            except Exception:
                bv = None
            if bv is not None and bv != v:
                self.statuses["version-mismatch"] = \
                    self.statuses.get("version-mismatch", 0) + 1
            if v < self.last and len(self.down) < 5:
                self.down.append("%d after %d" % (v, self.last))
            self.last = max(self.last, v)
            self.versions.add(v)
            if hdrs.get("connection", "").lower() == "close":
                s.close()
                s = None
        if s is not None:
            s.close()


def load_requests(port, variables):
    host = ("Host: %s:%d\r\n" % (HOST, port)).encode()
    ka = b"Connection: keep-alive\r\n"

    def get(path):
        return b"GET " + path.encode() + b" HTTP/1.1\r\n" + host + ka + b"\r\n"

    def post(body):
        body = body.encode()
        return b"POST /v1/check HTTP/1.1\r\n" + host + ka + \
            b"Content-Type: application/json\r\nContent-Length: " + \
            str(len(body)).encode() + b"\r\n\r\n" + body
    reqs = [
        ("get-revoked", get("/v1/check?id=tok-1"), 200),
        ("get-clean", get("/v1/check?id=clean-%d" % random.randrange(10**6)), 200),
        ("get-uncovered", get("/v1/check?id=x&scope=nowhere"), 200),
        ("post-id", post('{"id": "tok-2"}'), 200),
        ("post-batch", post(json.dumps({"items": [{"id": "tok-%d" % i}
                                                  for i in range(20)]})), 200),
    ]
    if "JWT" in variables:
        reqs.append(("post-token", post(json.dumps({"token": variables["JWT"]})), 200))
        reqs.append(("authz", b"GET /v1/authz HTTP/1.1\r\n" + host + ka +
                     b"Authorization: Bearer " + variables["JWT"].encode() +
                     b"\r\n\r\n", 200))
    return reqs


def cmd_load(port, seconds, clients, variables):
    deadline = time.monotonic() + seconds
    reqs = load_requests(port, variables)
    ts = [Client(port, deadline, reqs, i) for i in range(clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    statuses = {}
    for t in ts:
        for k, v in t.statuses.items():
            statuses[k] = statuses.get(k, 0) + v
    versions = set()
    for t in ts:
        versions |= t.versions
    out = {
        "requests": sum(t.count for t in ts),
        "statuses": statuses,
        "unexpected": [u for t in ts for u in t.unexpected][:10],
        "version_down": [d for t in ts for d in t.down][:10],
        "versions_seen": len(versions),
        "min_version": min(versions) if versions else 0,
        "max_version": max(versions) if versions else 0,
        "reconnects": sum(t.reconnects for t in ts),
    }
    print(json.dumps(out, sort_keys=True))


def cmd_serve(port, mode):
    """A fake upstream authority on 127.0.0.1:PORT that never gives a
    usable answer: "500" (server error), "garbage" (200, not JSON),
    "wrongid" (200, a not_revoked answer for another id), "hang" (reads
    the request, never answers), "silent" (accepts and holds connections,
    never reads or writes a byte: a TLS client waits for the handshake)."""
    import http.server

    if mode == "silent":
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind((HOST, port))
        ls.listen(64)
        print(ls.getsockname()[1], flush=True)
        held = []
        while True:
            c, _ = ls.accept()
            held.append(c)

    class H(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            n = int(self.headers.get("Content-Length") or 0)
            asked = self.rfile.read(n)
            if mode == "hang":
                time.sleep(3600)
            if mode == "500":
                code, body = 500, b'{"error":"internal"}'
            elif mode == "garbage":
                code, body = 200, b"<html>not json</html>"
            else:
                wrong = {"status": "not_revoked", "source": "authoritative",
                         "scope": "default", "id": "someone-else",
                         "filter_version": 1000000}
                try:        # a batch gets one wrong answer per item
                    items = json.loads(asked).get("items")
                except ValueError:
                    items = None
                code, body = 200, json.dumps(
                    {"filter_version": 1000000,
                     "results": [wrong] * len(items)} if items is not None
                    else wrong).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        do_GET = do_POST

    srv = http.server.ThreadingHTTPServer((HOST, port), H)
    print(srv.server_address[1], flush=True)   # PORT 0: the one chosen
    srv.serve_forever()


def parse_vars(args):
    v = {}
    for a in args:
        k, _, val = a.partition("=")
        if val.startswith("@"):
            val = open(val[1:], encoding="utf-8").read()
        v[k] = val
    return v


def main(argv):
    if len(argv) < 3:
        print(__doc__ or "usage: rawhttp.py CMD PORT ...", file=sys.stderr)
        return 2
    cmd, port = argv[1], int(argv[2])
    a = argv[3:]
    if cmd == "send":
        st, why, body = exchange(port, unescape(a[0]))
        print(st if st is not None else why)
        return 0
    if cmd == "table":
        return run_table(port, a[0], parse_vars(a[1:]))
    if cmd == "idle":
        cmd_idle(port, float(a[0]), a[1], a[2] if len(a) > 2 else None)
        return 0
    if cmd in ("trickle", "trickle-body"):
        cmd_trickle(port, float(a[0]), float(a[1]), a[2] if len(a) > 2 else None,
                    cmd == "trickle-body")
        return 0
    if cmd == "serve":
        cmd_serve(port, a[0])
        return 0
    if cmd == "bigchunk":
        cmd_bigchunk(port, int(a[0]), a[1])
        return 0
    if cmd == "perip":
        cmd_perip(port, int(a[0]), a[1])
        return 0
    if cmd == "bigbody":
        cmd_bigbody(port, int(a[0]), int(a[1]), a[2])
        return 0
    if cmd == "load":
        cmd_load(port, float(a[0]), int(a[1]), parse_vars(a[2:]))
        return 0
    print("rawhttp.py: unknown command %s" % cmd, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
