#!/usr/bin/env python3
"""delta.py - revocation latency and failed requests under load, for bench/delta.sh.

  delta.py latency PGURL ORIGIN EDGE COUNT RATE   prints the latency distributions
  delta.py load SECONDS URL...                   checks under load; prints failures

latency: COUNT revocations are committed through one psql process at RATE
per second while two threads keep each node busy with checks of absent
ids; for each id the time from its commit to the first "revoked" answer
is recorded at the origin and at the edge (polled every 20 ms).
load: keeps every URL busy for SECONDS, then prints requests and
failures (non-200 answers and connection errors).
"""
import http.client
import subprocess
import sys
import threading
import time
import urllib.parse


def conn_for(url):
    u = urllib.parse.urlparse(url)
    return http.client.HTTPConnection(u.hostname, u.port, timeout=5)


class Load(threading.Thread):
    """Keeps one node busy with GET checks of absent ids."""

    def __init__(self, url, stop):
        super().__init__(daemon=True)
        self.url, self.stop = url, stop
        self.n = self.fail = 0

    def run(self):
        c = conn_for(self.url)
        i = 0
        while not self.stop.is_set():
            i += 1
            try:
                c.request("GET", "/v1/check?id=load-absent-%d" % i)
                r = c.getresponse()
                r.read()
                self.n += 1
                if r.status != 200:
                    self.fail += 1
            except Exception:
                self.n += 1
                self.fail += 1
                c.close()
                c = conn_for(self.url)


def status_of(c, ident):
    c.request("GET", "/v1/check?id=" + urllib.parse.quote(ident))
    r = c.getresponse()
    body = r.read()
    return r.status == 200 and b'"status":"revoked"' in body


def pct(v, p):
    if not v:
        return float("nan")
    v = sorted(v)
    return v[min(len(v) - 1, int(p / 100.0 * len(v)))]


def latency(pg, origin, edge, count, rate):
    stop = threading.Event()
    loads = [Load(u, stop) for u in (origin, origin, edge, edge)]
    for t in loads:
        t.start()
    psql = subprocess.Popen(["psql", "-X", "-q", "-At", pg], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, text=True)
    sent = {}
    done = {"origin": {}, "edge": {}}
    conns = {"origin": conn_for(origin), "edge": conn_for(edge)}
    run = "%d" % int(time.time())
    nxt = time.time()
    i = 0
    deadline = None
    while True:
        now = time.time()
        if i < count and now >= nxt:
            ident = "lat-%s-%d" % (run, i)
            psql.stdin.write("INSERT INTO revcheck_revocations (id) VALUES ('%s');\n" % ident)
            psql.stdin.flush()
            sent[ident] = time.time()
            i += 1
            nxt += 1.0 / rate
            if i == count:
                deadline = time.time() + 30
        for node in ("origin", "edge"):
            for ident, t0 in list(sent.items()):
                if ident in done[node]:
                    continue
                try:
                    if status_of(conns[node], ident):
                        done[node][ident] = time.time() - t0
                except Exception:
                    conns[node].close()
                    conns[node] = conn_for(origin if node == "origin" else edge)
        if i == count and (all(len(done[n]) == count for n in done) or time.time() > deadline):
            break
        time.sleep(0.02)
    psql.stdin.close()
    psql.wait()
    stop.set()
    for node in ("origin", "edge"):
        v = list(done[node].values())
        print("%s count=%d enforced=%d p50=%.3f p90=%.3f p99=%.3f max=%.3f" % (
            node, count, len(v), pct(v, 50), pct(v, 90), pct(v, 99), max(v) if v else float("nan")))
    n = sum(t.n for t in loads)
    f = sum(t.fail for t in loads)
    print("load requests=%d failed=%d" % (n, f))


def load(seconds, urls):
    stop = threading.Event()
    loads = [Load(u, stop) for u in urls for _ in (0, 1)]
    for t in loads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in loads:
        t.join(10)
    print("requests=%d failed=%d" % (sum(t.n for t in loads), sum(t.fail for t in loads)))


if __name__ == "__main__":
    if sys.argv[1] == "latency":
        latency(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), float(sys.argv[6]))
    elif sys.argv[1] == "load":
        load(float(sys.argv[2]), sys.argv[3:])
    else:
        sys.exit("usage: delta.py latency|load ...")
