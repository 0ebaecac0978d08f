#!/usr/bin/env python3
"""delta.py - revocation latency and failed requests under load, for bench/delta.sh.

  delta.py latency PGURL ORIGIN EDGE COUNT RATE   prints the latency distributions
  delta.py load STOPFILE MAXSECONDS URL...        checks under load; prints failures

DELTA_LOAD_RATE (environment) is the checks per second each node gets
(two processes of half the rate each); 0 means as fast as they can go.
DELTA_LATENCY_CSV names a file for one line per revocation: the time its
INSERT was written, its latency at the origin and at the edge (empty when
never enforced), to see whether slow ones come together.

latency: COUNT revocations are committed, one INSERT each, through one
psql process at RATE per second, while load processes (two per node,
each its own process so that they do not slow the measuring loop) keep
both nodes busy with checks of absent ids. Every 20 ms the measuring
loop asks each node, in one batch POST /v1/check, about every id that
node does not enforce yet; an id's latency at a node is the time from
writing its INSERT to psql (before the commit: an upper bound) to the
first batch answering "revoked" for it.
load: keeps every URL busy (two processes each) until STOPFILE exists or
MAXSECONDS have passed, then prints requests and failures (non-200
answers and connection errors). STOPFILE.ready is created once the load
processes have run for half a second.
"""
import http.client
import json
import multiprocessing
import os
import subprocess
import sys
import time
import urllib.parse


def conn_for(url):
    u = urllib.parse.urlparse(url)
    return http.client.HTTPConnection(u.hostname, u.port, timeout=5)


def load_proc(url, tag, rate, stop, out):
    """One load process: GET checks of absent ids (rate per second, 0: no
    limit) until stop is set."""
    c = conn_for(url)
    n = fail = 0
    i = 0
    nxt = time.time()
    while not stop.is_set():
        if rate > 0:
            nxt += 1.0 / rate
            d = nxt - time.time()
            if d > 0:
                time.sleep(d)
            elif d < -1:
                nxt = time.time()   # behind by a second: do not burst
        i += 1
        try:
            c.request("GET", "/v1/check?id=load-absent-%s-%d" % (tag, i))
            r = c.getresponse()
            r.read()
            n += 1
            if r.status != 200:
                fail += 1
        except Exception:
            n += 1
            fail += 1
            c.close()
            c = conn_for(url)
    out.put((n, fail))


class Loads:
    """Two load processes per URL, started at once."""

    def __init__(self, urls):
        rate = float(os.environ.get("DELTA_LOAD_RATE", "2000")) / 2
        self.stop = multiprocessing.Event()
        self.out = multiprocessing.Queue()
        self.procs = [multiprocessing.Process(target=load_proc,
                                              args=(u, "%d-%d" % (k, j), rate, self.stop,
                                                    self.out),
                                              daemon=True)
                      for k, u in enumerate(urls) for j in (0, 1)]
        self.t0 = time.time()
        for p in self.procs:
            p.start()

    def finish(self):
        self.stop.set()
        secs = time.time() - self.t0
        n = f = 0
        for _ in self.procs:
            a, b = self.out.get(timeout=30)
            n, f = n + a, f + b
        for p in self.procs:
            p.join(10)
        return n, f, secs


def revoked_now(c, ids):
    """The ids of a batch that the node answers 'revoked' for."""
    body = json.dumps({"items": [{"id": i} for i in ids]})
    c.request("POST", "/v1/check", body=body, headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    if r.status != 200:
        return set()
    res = json.loads(data).get("results", [])
    return {i for i, x in zip(ids, res) if x.get("status") == "revoked"}


def pct(v, p):
    if not v:
        return float("nan")
    v = sorted(v)
    return v[min(len(v) - 1, int(p / 100.0 * len(v)))]


BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0)


def histogram(v):
    """Counts per latency bucket, as 'le0.1=N ... gt5=N'."""
    out, prev = [], 0
    for b in BUCKETS:
        n = sum(1 for x in v if x <= b)
        out.append("le%g=%d" % (b, n - prev))
        prev = n
    out.append("gt%g=%d" % (BUCKETS[-1], len(v) - prev))
    return " ".join(out)


def latency(pg, origin, edge, count, rate):
    urls = {"origin": origin, "edge": edge}
    loads = Loads([origin, edge])
    psql = subprocess.Popen(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", pg],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    sent = {}
    done = {n: {} for n in urls}
    conns = {n: conn_for(u) for n, u in urls.items()}
    run = "%d" % int(time.time())
    t_start = nxt = time.time()
    i = 0
    deadline = None
    while True:
        now = time.time()
        while i < count and now >= nxt:
            ident = "lat-%s-%d" % (run, i)
            psql.stdin.write("INSERT INTO revcheck_revocations (id) VALUES ('%s');\n" % ident)
            psql.stdin.flush()
            sent[ident] = time.time()
            i += 1
            nxt += 1.0 / rate
            if i == count:
                deadline = time.time() + 60
        for node in urls:
            pending = [x for x in sent if x not in done[node]]
            for k in range(0, len(pending), 5000):
                chunk = pending[k:k + 5000]
                try:
                    got = revoked_now(conns[node], chunk)
                except Exception:
                    conns[node].close()
                    conns[node] = conn_for(urls[node])
                    continue
                t = time.time()
                for x in got:
                    done[node][x] = t - sent[x]
        if i == count and (all(len(done[n]) == count for n in done) or time.time() > deadline):
            break
        time.sleep(0.02)
    commit_secs = time.time() - t_start
    if os.environ.get("DELTA_LATENCY_CSV"):
        with open(os.environ["DELTA_LATENCY_CSV"], "w") as fp:
            fp.write("sent,origin,edge\n")
            for x, t0 in sorted(sent.items(), key=lambda kv: kv[1]):
                fp.write("%.3f,%s,%s\n" % (t0, *("%.3f" % done[n][x] if x in done[n] else ""
                                                 for n in ("origin", "edge"))))
    psql.stdin.close()
    psql.wait()
    n, f, secs = loads.finish()
    for node in urls:
        v = list(done[node].values())
        print("%s count=%d enforced=%d p50=%.3f p90=%.3f p99=%.3f max=%.3f" % (
            node, count, len(v), pct(v, 50), pct(v, 90), pct(v, 99),
            max(v) if v else float("nan")))
        print("%s histogram_seconds %s" % (node, histogram(v)))
    print("load requests=%d failed=%d rate=%.0f/s over %.0f s (two processes per node, "
          "DELTA_LOAD_RATE=%s per node; revocations committed over %.0f s)" % (
              n, f, n / secs if secs else 0, secs, os.environ.get("DELTA_LOAD_RATE", "2000"),
              commit_secs))


def load(stopfile, maxsecs, urls):
    loads = Loads(urls)
    time.sleep(0.5)
    open(stopfile + ".ready", "w").close()
    end = time.time() + maxsecs
    while time.time() < end and not os.path.exists(stopfile):
        time.sleep(0.1)
    n, f, secs = loads.finish()
    print("requests=%d failed=%d over %.0f s" % (n, f, secs))


if __name__ == "__main__":
    if len(sys.argv) == 7 and sys.argv[1] == "latency":
        latency(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), float(sys.argv[6]))
    elif len(sys.argv) >= 5 and sys.argv[1] == "load":
        load(sys.argv[2], float(sys.argv[3]), sys.argv[4:])
    else:
        sys.exit("usage: delta.py latency PGURL ORIGIN EDGE COUNT RATE | "
                 "load STOPFILE MAXSECONDS URL...")
