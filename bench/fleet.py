#!/usr/bin/env python3
"""fleet.py - the measuring side of bench/fleet.sh: a byte-counting relay and the revocation-lag driver.

  fleet.py proxy LISTEN_PORT TARGET_PORT COUNT_FILE
      relays 127.0.0.1:LISTEN_PORT to 127.0.0.1:TARGET_PORT and keeps
      COUNT_FILE holding the bytes sent from the target to its clients
      (rewritten every 0.2 s): the origin's egress.
  fleet.py drive PGURL EDGES_FILE COUNT RATE [KILL_AT LEADER_JSON DELTA_DIR PIDS]
      commits COUNT revocations, one INSERT each through one psql process,
      at RATE per second, while every edge of EDGES_FILE (one base URL a
      line) is asked every FLEET_POLL_MS (100) in one batch POST /v1/check
      about every id it does not enforce yet, plus an id never revoked and
      one it already enforces (an answer "revoked" to the first or
      "not_revoked" to the second is wrong; a non-200 answer or an error is
      failed). A revocation's lag at an edge is the time from writing its
      INSERT to psql (before the commit: an upper bound) to the first
      answer "revoked" there. With KILL_AT, the writing follower (the pid
      LEADER_JSON's holder names, if it is one of PIDS, comma-separated)
      gets SIGKILL KILL_AT seconds in; the failover gap is from then to the
      first delta file of DELTA_DIR written after, and a revocation whose
      first enforcement anywhere came after that delta, committed before
      it, is a failover one (reported apart). Prints key=value lines;
      FLEET_LAGS_CSV names a file to append one line per (edge, revocation)
      to: edge, id, sent (s from the start), lag, failover (0/1).
"""
import asyncio
import glob
import json
import os
import random
import signal
import subprocess
import sys
import time


# ------------------------------------------------------------------ proxy

async def proxy(lport, tport, count_file):
    total = [0]

    async def pump(r, w, count):
        try:
            while True:
                b = await r.read(65536)
                if not b:
                    break
                if count:
                    total[0] += len(b)
                w.write(b)
                await w.drain()
        except Exception:
            pass
        finally:
            try:
                w.close()
            except Exception:
                pass

    async def client(cr, cw):
        try:
            tr, tw = await asyncio.open_connection("127.0.0.1", tport)
        except Exception:
            cw.close()
            return
        await asyncio.gather(pump(cr, tw, False), pump(tr, cw, True))

    async def writer():
        last = -1
        while True:
            if total[0] != last:
                last = total[0]
                tmp = count_file + ".tmp"
                with open(tmp, "w") as f:
                    f.write("%d\n" % last)
                os.replace(tmp, count_file)
            await asyncio.sleep(0.2)

    srv = await asyncio.start_server(client, "127.0.0.1", lport, backlog=1024)
    asyncio.ensure_future(writer())
    async with srv:
        await srv.serve_forever()


# ------------------------------------------------------------------ drive

class Edge:
    def __init__(self, url):
        hp = url.split("//", 1)[1].rstrip("/")
        self.host, port = hp.rsplit(":", 1)
        self.port = int(port)
        self.hp = hp
        self.r = self.w = None
        self.seen = {}          # id -> time first answered revoked
        self.enforced = []      # ids seen revoked (for the rollback probe)
        self.failed = 0
        self.wrong = 0
        self.requests = 0

    async def post(self, body):
        if self.w is None:
            self.r, self.w = await asyncio.open_connection(self.host, self.port)
        self.w.write(("POST /v1/check HTTP/1.1\r\nHost: %s\r\nContent-Type: "
                      "application/json\r\nContent-Length: %d\r\n\r\n" %
                      (self.hp, len(body))).encode() + body)
        status = int((await self.r.readline()).split()[1])
        n = None
        while True:
            line = await self.r.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            k, _, v = line.decode("latin-1").partition(":")
            if k.strip().lower() == "content-length":
                n = int(v.strip())
        if n is None:
            raise IOError("no Content-Length")
        return status, await self.r.readexactly(n)

    def drop(self):
        if self.w is not None:
            self.w.close()
        self.r = self.w = None


async def poll_edge(e, st, never):
    cur = 0
    pend = []
    while not st["done"]:
        order = st["order"]
        pend.extend(order[cur:])
        cur = len(order)
        pend = [i for i in pend if i not in e.seen]
        pending = pend
        probe = random.choice(e.enforced) if e.enforced else None
        ids = pending + [never] + ([probe] if probe else [])
        body = json.dumps({"items": [{"id": i} for i in ids]}).encode()
        try:
            e.requests += 1
            status, data = await asyncio.wait_for(e.post(body), 5)
            if status != 200:
                e.failed += 1
            else:
                res = json.loads(data).get("results", [])
                t = time.time()
                for i, x in zip(ids, res):
                    s = x.get("status")
                    if i == never:
                        e.wrong += s == "revoked"
                    elif i == probe and i not in pending:
                        e.wrong += s == "not_revoked"
                    elif s == "revoked" and i not in e.seen:
                        e.seen[i] = t
                        e.enforced.append(i)
                    elif s not in ("revoked", "not_revoked"):
                        e.failed += 1
        except Exception:
            e.failed += 1
            e.drop()
        await asyncio.sleep(st["poll"])


async def producer(st, count, rate, pg):
    psql = subprocess.Popen(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", pg],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    run = "%d" % int(time.time() * 1000)
    nxt = time.time()
    for i in range(count):
        d = nxt - time.time()
        if d > 0:
            await asyncio.sleep(d)
        ident = "fl-%s-%d" % (run, i)
        psql.stdin.write("INSERT INTO revcheck_revocations (id) VALUES ('%s');\n" % ident)
        psql.stdin.flush()
        st["sent"][ident] = time.time()
        st["order"].append(ident)
        nxt += 1.0 / rate
    psql.stdin.close()
    await asyncio.get_running_loop().run_in_executor(None, psql.wait)


async def killer(st, kill_at, leader_json, delta_dir, pids):
    await asyncio.sleep(kill_at)
    try:
        with open(leader_json) as f:
            holder = json.load(f)["holder"]
        pid = int(holder.rsplit(":", 1)[1])
    except Exception as ex:
        st["kill_err"] = "no leader in %s (%s)" % (leader_json, ex)
        return
    if pid not in pids:
        st["kill_err"] = "the holder %d is not one of the followers %s" % (pid, pids)
        return
    before = set(glob.glob(os.path.join(delta_dir, "v*", "delta", "0*.rcd")))
    os.kill(pid, signal.SIGKILL)
    t_kill = time.time()
    st["t_kill"], st["killed"] = t_kill, pid
    while time.time() < t_kill + 60:
        new = set(glob.glob(os.path.join(delta_dir, "v*", "delta", "0*.rcd"))) - before
        ts = [os.stat(p).st_mtime for p in new if os.path.exists(p)]
        ts = [t for t in ts if t > t_kill]
        if ts:
            st["t_first"] = min(ts)
            return
        await asyncio.sleep(0.02)


def pct(v, p):
    if not v:
        return float("nan")
    v = sorted(v)
    return v[min(len(v) - 1, int(p / 100.0 * len(v)))]


async def drive(pg, edges_file, count, rate, kill):
    urls = [u.strip() for u in open(edges_file) if u.strip()]
    edges = [Edge(u) for u in urls]
    st = {"sent": {}, "order": [], "done": False, "poll": int(os.environ.get("FLEET_POLL_MS", "100")) / 1000.0}
    polls = [asyncio.ensure_future(poll_edge(e, st, "never-revoked-%d" % k))
             for k, e in enumerate(edges)]
    tasks = []
    if kill:
        tasks.append(asyncio.ensure_future(killer(st, *kill)))
    t0 = time.time()
    await producer(st, count, rate, pg)
    deadline = time.time() + 30
    while time.time() < deadline:
        if all(len(e.seen) == count for e in edges):
            break
        await asyncio.sleep(0.1)
    for t in tasks:
        await t
    st["done"] = True
    await asyncio.gather(*polls)
    secs = time.time() - t0
    sent = st["sent"]
    t_first = st.get("t_first")
    first_seen = {}
    for e in edges:
        for i, t in e.seen.items():
            first_seen[i] = min(first_seen.get(i, t), t)
    fo = set()
    if t_first is not None:
        fo = {i for i, t in sent.items() if t < t_first and first_seen.get(i, 1e18) >= t_first}
    steady = [t - sent[i] for e in edges for i, t in e.seen.items() if i not in fo]
    fol = [t - sent[i] for e in edges for i, t in e.seen.items() if i in fo]
    missing = sum(count - len(e.seen) for e in edges)
    if os.environ.get("FLEET_LAGS_CSV"):
        with open(os.environ["FLEET_LAGS_CSV"], "a") as fp:
            for k, e in enumerate(edges):
                for i, t in e.seen.items():
                    fp.write("%d,%s,%.3f,%.3f,%d\n" % (k, i, sent[i] - t0, t - sent[i], i in fo))
    print("edges=%d revocations=%d pairs=%d missing=%d seconds=%.1f" % (
        len(edges), count, len(steady) + len(fol), missing, secs))
    print("lag_p50=%.3f lag_p99=%.3f lag_max=%.3f" % (pct(steady, 50), pct(steady, 99),
                                                      max(steady) if steady else float("nan")))
    print("requests=%d failed=%d wrong=%d" % (sum(e.requests for e in edges),
                                              sum(e.failed for e in edges),
                                              sum(e.wrong for e in edges)))
    if kill:
        if "kill_err" in st:
            print("failover_error=%s" % st["kill_err"].replace(" ", "_"))
        gap = (t_first - st["t_kill"]) if t_first is not None and "t_kill" in st else float("nan")
        print("failover_gap=%.3f failover_revocations=%d failover_lag_max=%.3f" % (
            gap, len(fo), max(fol) if fol else float("nan")))


def main():
    a = sys.argv[1:]
    if len(a) == 4 and a[0] == "proxy":
        asyncio.run(proxy(int(a[1]), int(a[2]), a[3]))
    elif len(a) in (5, 9) and a[0] == "drive":
        kill = None
        if len(a) == 9:
            kill = (float(a[5]), a[6], a[7], {int(p) for p in a[8].split(",") if p})
        asyncio.run(drive(a[1], a[2], int(a[3]), float(a[4]), kill))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
