#!/usr/bin/env python3
"""chaos.py - the whole fleet under steady load and random faults, every answer judged by the database

Runs PostgreSQL, `filterbuild follow`, an origin and three edges (one
syncing from nginx) on loopback for CHAOS_TIME seconds (600) while
clients check ids and a scheduler injects faults at random (seeded by
CHAOS_SEED, printed first). The harness writes every revocation itself
and keeps when each committed (the time before and after its psql call;
an outcome it could not see is read back from the database), so it knows
the truth for every answer. docs/CHAOS.md describes the run, the faults,
the oracle and the targets. The last line printed is

    chaos: N checks, W wrong, A% answered, R revocations, lag p99 S s

and the exit status is 1 when a target is not met.
Environment: CHAOS_TIME, CHAOS_SEED, CHAOS_CLIENTS (4), CHAOS_RATE
(checks a second per client, 12), CHAOS_FAULTS (a comma-separated
subset of the fault kinds), CHAOS_KEEP=1 (keep the temp dir),
CHAOS_OUT (where the report and logs go: build/chaos), REVCHECKD,
FILTERBUILD, REVCHECK_SRC.
"""

import bisect
import collections
import http.client
import json
import os
import random
import shutil
import signal
import socket
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fleet as fl  # noqa: E402

SRC = os.environ.get("REVCHECK_SRC") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
CHAOS_TIME = float(os.environ.get("CHAOS_TIME") or 600)
SEED = os.environ.get("CHAOS_SEED") or str(random.SystemRandom().randrange(10**9))
N_CLIENTS = int(os.environ.get("CHAOS_CLIENTS") or 4)
RATE = float(os.environ.get("CHAOS_RATE") or 12)
OUTDIR = os.environ.get("CHAOS_OUT") or os.path.join(SRC, "build", "chaos")

# The lag bound (docs/CHAOS.md): a node refuses a chain whose newest head
# or delta is older than --max-age (revcheckd(8), docs/API.md: "Expiry and
# age follow the newest delta or head in service"), and a head is complete
# as of its issued_at, whole seconds (filterbuild(1)). So a revocation
# committed more than MAX_AGE + 1 s before a check was sent is in every
# chain a node may answer from.
BOUND = fl.MAX_AGE + 1.0
RECOVERY_TARGET = 5.0
ANSWERED_TARGET = 99.9
INF = float("inf")
NODES = ("origin", "e1", "e2", "e3")

T_START = time.time()
STOP = threading.Event()        # the load and the scheduler end
DONE = threading.Event()        # everything ends


def log(msg):
    print("chaos: [%6.1fs] %s" % (time.time() - T_START, msg), flush=True)


# --- the truth ------------------------------------------------------------

class Truth:
    """For each (scope, id), its changes: [t0, t1, state] with state 'R'
    (revoked) or 'N', the change taking effect at some instant in
    [t0, t1]; t1 None while the outcome is unknown. Before any change a
    key is 'N' (never revoked)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.ev = collections.defaultdict(list)

    def change(self, key, t0, t1, state):
        e = [t0, t1, state]
        with self.lock:
            self.ev[key].append(e)
            self.ev[key].sort(key=lambda x: x[0])
        return e

    def drop(self, key, e):
        with self.lock:
            try:
                self.ev[key].remove(e)
            except ValueError:
                pass

    def over(self, key, lo, hi):
        """'R' or 'N' when the key was that throughout [lo, hi], else None."""
        with self.lock:
            evs = list(self.ev.get(key, ()))
        st = "N"
        for t0, t1, s in evs:
            end = INF if t1 is None else t1
            if end <= lo:
                st = s
                continue
            if t0 > hi:
                break
            if s != st or t1 is None:
                return None
        return st

    def now_state(self, key):
        return self.over(key, time.time(), time.time())


TRUTH = Truth()


class Pool:
    """The keys the load draws from, by kind."""

    def __init__(self):
        self.lock = threading.Lock()
        self.present = []           # r- keys believed present
        self.present_set = set()
        self.deleted = collections.deque(maxlen=2000)
        self.base = []
        self.special = {}           # key -> until (exp- and q- keys)

    def add(self, key):
        with self.lock:
            if key not in self.present_set:
                self.present_set.add(key)
                self.present.append(key)

    def remove(self, key):
        with self.lock:
            if key in self.present_set:
                self.present_set.discard(key)
                self.present.remove(key)
                self.deleted.append(key)

    def pick_present(self, rnd, n=1, min_age_keys=()):
        with self.lock:
            if not self.present:
                return []
            return rnd.sample(self.present, min(n, len(self.present)))

    def pick(self, rnd):
        x = rnd.random()
        with self.lock:
            if x < 0.35:
                return ("default", "n-%d" % rnd.randrange(10**9))
            if x < 0.55 and self.base:
                return rnd.choice(self.base)
            if x < 0.80 and self.present:
                return rnd.choice(self.present[-50:] if rnd.random() < 0.5
                                  else self.present)
            if x < 0.92 and self.deleted:
                return rnd.choice(self.deleted)
            live = [k for k, u in self.special.items() if u > time.time()]
            if live:
                return rnd.choice(live)
            return ("default", "n-%d" % rnd.randrange(10**9))


POOL = Pool()


# --- answers ----------------------------------------------------------------

# One record per answer: (sent, answered, node, key, verdict, kind) where
# verdict is 'revoked', 'not_revoked' or what else came back.
RECORDS = []
REC_LOCK = threading.Lock()


def record(sent, answered, node, key, verdict, kind):
    with REC_LOCK:
        RECORDS.append((sent, answered, node, key, verdict, kind))


ANSWERED = ("revoked", "not_revoked")


class Client:
    """Keep-alive HTTP/1.1 to one node; reconnects after any error."""

    def __init__(self, base, timeout=8.0):
        u = urllib.parse.urlparse(base)
        self.host, self.port, self.timeout = u.hostname, u.port, timeout
        self.c = None

    def req(self, method, path, body=None):
        """Returns (status, parsed JSON or None), status 0 on an error."""
        try:
            if self.c is None:
                self.c = http.client.HTTPConnection(self.host, self.port,
                                                    timeout=self.timeout)
            hdr = {"Content-Type": "application/json"} if body else {}
            self.c.request(method, path, body=body, headers=hdr)
            r = self.c.getresponse()
            data = r.read()
            try:
                js = json.loads(data) if data else None
            except ValueError:
                js = None
            if r.getheader("Connection", "").lower() == "close":
                self.close()
            return r.status, js
        except Exception:
            self.close()
            return 0, None

    def close(self):
        if self.c:
            try:
                self.c.close()
            except Exception:
                pass
        self.c = None


def check_one(cl, node, key, kind):
    path = "/v1/check?" + urllib.parse.urlencode({"id": key[1],
                                                   "scope": key[0]})
    sent = time.time()
    st, js = cl.req("GET", path)
    got = time.time()
    if st == 200 and isinstance(js, dict):
        verdict = js.get("status", "?")
    elif isinstance(js, dict) and js.get("error"):
        verdict = "%d:%s" % (st, js.get("error"))
    else:
        verdict = "%d" % st
    record(sent, got, node, key, verdict, kind)
    return verdict


def check_batch(cl, node, keys, kind):
    """One POST of keys; returns {key: verdict}."""
    body = json.dumps({"items": [{"id": k[1], "scope": k[0]} for k in keys]})
    sent = time.time()
    st, js = cl.req("POST", "/v1/check", body)
    got = time.time()
    out = {}
    res = js.get("results") if st == 200 and isinstance(js, dict) else None
    for i, k in enumerate(keys):
        if res is not None and i < len(res) and isinstance(res[i], dict):
            v = res[i].get("status") or ("200:" + str(res[i].get("error")))
        elif isinstance(js, dict) and js.get("error"):
            v = "%d:%s" % (st, js.get("error"))
        else:
            v = "%d" % st
        out[k] = v
        record(sent, got, node, k, v, kind)
    return out


def load_client(i, fleet):
    rnd = random.Random("%s-load-%d" % (SEED, i))
    cls = {n: Client(fleet.nodes[n]) for n in NODES}
    period = 1.0 / RATE
    nxt = time.time()
    while not STOP.is_set():
        node = rnd.choice(NODES)
        check_one(cls[node], node, POOL.pick(rnd), "load")
        nxt += period
        d = nxt - time.time()
        if d > 0:
            STOP.wait(d)
        elif d < -1:
            nxt = time.time()
    for c in cls.values():
        c.close()


# --- writes -------------------------------------------------------------------

STATS = collections.Counter()
UNCERTAIN = []          # (key, event, state wanted)
UNC_LOCK = threading.Lock()
PENDING = {}            # key -> [t0, {node: first revoked answer time}]
PEND_LOCK = threading.Lock()
LAGS = []               # per enforced revocation, seconds
WITHDRAWN = [0]


def sql_str(s):
    return "'" + s.replace("'", "''") + "'"


def definitely_not_run(err):
    return ("could not connect" in err or "Connection refused" in err
            or "does not accept" in err or "the database system is" in err)


def write(fleet, sql, changes):
    """Runs sql (one transaction); changes is [(key, state)]. Records each
    change in the truth; returns True when it committed."""
    t0 = time.time()
    evs = [(k, TRUTH.change(k, t0, None, s), s) for k, s in changes]
    ok, _, err = fleet.psql(sql)
    t1 = time.time()
    if ok:
        for k, e, s in evs:
            e[1] = t1
        return True
    if definitely_not_run(err):
        for k, e, s in evs:
            TRUTH.drop(k, e)
        return False
    with UNC_LOCK:
        UNCERTAIN.extend(evs)
    STATS["uncertain_writes"] += 1
    return False


def resolve_uncertain(fleet):
    """Reads back, from the database, writes whose outcome was not seen."""
    with UNC_LOCK:
        todo = list(UNCERTAIN)
    if not todo:
        return
    keys = sorted({k for k, e, s in todo})
    cond = " OR ".join("(scope = %s AND id = %s)" % (sql_str(k[0]), sql_str(k[1]))
                       for k in keys[:500])
    ok, out, _ = fleet.psql("SELECT scope, id FROM revcheck_revocations WHERE "
                            + cond)
    t = time.time()
    if not ok:
        return
    there = {tuple(line.split("\t", 1)) for line in out.splitlines() if line}
    done = set(keys[:500])
    with UNC_LOCK:
        rest = []
        for k, e, s in UNCERTAIN:
            if k not in done:
                rest.append((k, e, s))
                continue
            now_r = k in there
            if now_r == (s == "R"):
                e[1] = t
                if s == "R":
                    POOL.add(k)
                    pend_add(k, e[0])
                    STATS["revocations"] += 1
                else:
                    POOL.remove(k)
            else:
                TRUTH.drop(k, e)
        UNCERTAIN[:] = rest


def pend_add(key, t0):
    with PEND_LOCK:
        PENDING[key] = [t0, {}]


def revoke(fleet, keys, reason=None, extra_cols=None):
    vals = ",".join("(%s, %s%s)" % (sql_str(k[0]), sql_str(k[1]),
                                    (", " + sql_str(reason)) if reason else "")
                    for k in keys)
    cols = "(scope, id, reason)" if reason else "(scope, id)"
    t0 = time.time()
    if write(fleet, "INSERT INTO revcheck_revocations %s VALUES %s"
             % (cols, vals), [(k, "R") for k in keys]):
        STATS["revocations"] += len(keys)
        for k in keys:
            pend_add(k, t0)
        return True
    return False


def unrevoke(fleet, keys):
    cond = " OR ".join("(scope = %s AND id = %s)" % (sql_str(k[0]), sql_str(k[1]))
                       for k in keys)
    for k in keys:
        POOL.remove(k)
    if write(fleet, "DELETE FROM revcheck_revocations WHERE " + cond,
             [(k, "N") for k in keys]):
        STATS["unrevocations"] += len(keys)
        with PEND_LOCK:
            for k in keys:
                pe = PENDING.pop(k, None)
                if pe is not None:
                    WITHDRAWN[0] += 1
                    if time.time() - pe[0] > BOUND:
                        LATE_WITHDRAWN[0] += 1
        return True
    return False


SEQ = [0]
SEQ_LOCK = threading.Lock()


def next_ids(prefix, n):
    with SEQ_LOCK:
        a = SEQ[0]
        SEQ[0] += n
    return [("default", "%s-%d" % (prefix, a + i)) for i in range(n)]


def writer(fleet):
    """Steady revocations: an insert every 0.5 s, a delete every 2 s."""
    rnd = random.Random(SEED + "-writer")
    last_del = time.time()
    while not STOP.is_set():
        k = next_ids("r", 1)
        if revoke(fleet, k):
            for key in k:
                POOL.add(key)
        if time.time() - last_del > 2:
            last_del = time.time()
            old = POOL.pick_present(rnd, 1)
            if old:
                unrevoke(fleet, old)
        resolve_uncertain(fleet)
        STOP.wait(0.5)


def prober(fleet):
    """Asks every node about each revocation until it answers revoked: the
    revocation lag is from before its INSERT to the last node's first
    revoked answer."""
    cls = {n: Client(fleet.nodes[n]) for n in NODES}
    while not DONE.is_set():
        with PEND_LOCK:
            items = list(PENDING.items())
        for node in NODES:
            keys = [k for k, (t0, seen) in items if node not in seen][:100]
            if not keys:
                continue
            res = check_batch(cls[node], node, keys, "probe")
            t = time.time()
            with PEND_LOCK:
                for k, v in res.items():
                    if v == "revoked" and k in PENDING:
                        PENDING[k][1].setdefault(node, t)
        with PEND_LOCK:
            for k in [k for k, (t0, seen) in PENDING.items()
                      if len(seen) == len(NODES)]:
                t0, seen = PENDING.pop(k)
                LAGS.append(max(seen.values()) - t0)
        DONE.wait(0.5)


# --- faults -----------------------------------------------------------------

FAULT_LOG = []
FAULT_NOW = [None]
T_END = [0.0]
OUT_FULL = [False]


def hold(d):
    """Sleeps d seconds, cut short at the end of the run's fault time."""
    d = max(0.0, min(d, T_END[0] - time.time()))
    time.sleep(d)
    return d


def f_expire_last(fleet, rnd):
    """A scope of one row that expires, then the row deleted."""
    key = next_ids("x", 1)[0]
    key = ("exp-" + key[1][2:], key[1])
    ttl = rnd.uniform(2, 6)
    t0 = time.time()
    ok = write(fleet, "INSERT INTO revcheck_revocations (scope, id, expires_at) "
               "VALUES (%s, %s, now() + interval '%.3f seconds')"
               % (sql_str(key[0]), sql_str(key[1]), ttl), [(key, "R")])
    t1 = time.time()
    if not ok:
        return {"note": "insert failed"}
    g = fl.EXPIRY_GRACE
    TRUTH.change(key, t0 + ttl + g - 1, t1 + ttl + g + 1, "N")
    with POOL.lock:
        POOL.special[key] = INF
    time.sleep(max(0, t1 + ttl + g - time.time()) + rnd.uniform(1, 5))
    write(fleet, "DELETE FROM revcheck_revocations WHERE scope = %s"
          % sql_str(key[0]), [(key, "N")])
    # Its scope now has no row: asked on for a minute (docs/OPERATIONS.md:
    # the scope stays covered with zero keys).
    with POOL.lock:
        POOL.special[key] = time.time() + 60
    return {"note": "scope %s, ttl %.1f s" % (key[0], ttl)}


# Rows revcheck cannot represent, as (what, scope, id, reason, revoked_at,
# askable): a client can ask about an askable one, so while it is in the
# table it is a revocation and must answer revoked (or 503), never
# not_revoked. The schema may refuse some at INSERT (CHECK constraints);
# those it takes, follow must quarantine without holding up the rest.
BAD_ROWS = (
    ("scope with a space", "bad scope", None, None, None, False),
    ("empty id", "default", "", None, None, False),
    ("id of 1100 bytes", "default", "L" * 1100, None, None, False),
    ("reason of 100 bytes", "default", None, "x" * 100, None, True),
    ("reason with a control byte", "default", None, "key\x01compromise", None,
     True),
    ("revoked_at before 1970", "default", None, None, "1960-01-01 00:00:00+00",
     True),
)


LEGACY_INSERT = """BEGIN;
CREATE TEMP TABLE chaos_cons ON COMMIT DROP AS
    SELECT conname, replace(pg_get_constraintdef(oid), ' NOT VALID', '') AS def
    FROM pg_constraint
    WHERE conrelid = 'revcheck_revocations'::regclass AND contype = 'c';
DO $$ DECLARE r record; BEGIN
    FOR r IN SELECT * FROM chaos_cons LOOP
        EXECUTE format('ALTER TABLE revcheck_revocations DROP CONSTRAINT %%I',
                       r.conname);
    END LOOP; END $$;
%s;
DO $$ DECLARE r record; BEGIN
    FOR r IN SELECT * FROM chaos_cons LOOP
        EXECUTE format('ALTER TABLE revcheck_revocations ADD CONSTRAINT %%I '
                       '%%s NOT VALID', r.conname, r.def);
    END LOOP; END $$;
COMMIT;"""


def f_bad_rows(fleet, rnd):
    """Rows the schema refuses (a NULL id, a NULL scope, a duplicate key)
    and rows revcheck cannot represent, held for 5-30 s, then deleted."""
    refused = 0
    base = POOL.base[0]
    for sql in ("INSERT INTO revcheck_revocations (id) VALUES (NULL)",
                "INSERT INTO revcheck_revocations (scope, id) VALUES (NULL, 'x')",
                "INSERT INTO revcheck_revocations (scope, id) VALUES (%s, %s)"
                % (sql_str(base[0]), sql_str(base[1]))):
        ok, _, err = fleet.psql(sql)
        refused += (not ok)
    taken, held = [], []
    for what, scope, ident, reason, at, askable in rnd.sample(BAD_ROWS, 3):
        q = next_ids("q", 1)[0]
        key = (scope, ident if ident is not None else q[1])
        cols, vals = ["scope", "id"], [sql_str(key[0]), sql_str(key[1])]
        if reason is not None:
            cols.append("reason")
            vals.append("E" + sql_str(reason))
        if at is not None:
            cols.append("revoked_at")
            vals.append(sql_str(at))
        sql = "INSERT INTO revcheck_revocations (%s) VALUES (%s)" % (
            ", ".join(cols), ", ".join(vals))
        t0 = time.time()
        if askable:
            e = TRUTH.change(key, t0, None, "R")
        ok, _, err = fleet.psql(sql)
        if not ok and not definitely_not_run(err):
            # The schema refused it. Such a row still reaches the table in
            # one made before its CHECK constraints (they are added NOT
            # VALID): the same, with the constraints dropped and put back.
            refused += 1
            ok, _, err = fleet.psql(LEGACY_INSERT % sql)
        if askable and ok:
            e[1] = time.time()
            STATS["revocations"] += 1
            pend_add(key, t0)
            with POOL.lock:
                POOL.special[key] = INF
        elif askable:
            TRUTH.drop(key, e)
        if ok:
            taken.append(what)
            held.append(key)
        else:
            log("bad_rows: %s not written: %s" % (what, err.strip()[:200]))
    STATS["schema_refused"] += refused
    STATS["quarantine_rows"] += len(taken)
    d = hold(rnd.uniform(5, 30)) if taken else 0
    for key in held:
        unrevoke(fleet, [key])
        with POOL.lock:
            POOL.special.pop(key, None)
    return {"note": "%d refused by the schema; %s in the table for %.0f s"
            % (refused, ", ".join(taken) or "none", d)}


def f_burst(fleet, rnd):
    n = rnd.randint(100, 400)
    keys = next_ids("r", n)
    if revoke(fleet, keys):
        for k in keys:
            POOL.add(k)
    time.sleep(rnd.uniform(1, 3))
    old = POOL.pick_present(rnd, rnd.randint(50, 300))
    if old:
        unrevoke(fleet, old)
    return {"note": "%d inserts, %d deletes" % (n, len(old))}


def f_pg_restart(fleet, rnd):
    mode = rnd.choice(["fast", "immediate"])
    fleet.pg_stop(mode)
    fleet.pg_start()
    return {"note": mode}


def f_pg_stop(fleet, rnd):
    fleet.pg_stop("fast")
    d = hold(rnd.uniform(3, 30))
    fleet.pg_start()
    # Longer than max_age less a head interval and a second: every node
    # must go stale (no head can be signed), by design.
    total = d > fl.MAX_AGE - fl.HEAD_EVERY - 1
    return {"note": "%.1f s" % d, "down": set(NODES) if total else set()}


def f_follow_kill(fleet, rnd):
    fol = fleet.procs["follow"]
    fol.stop(signal.SIGKILL)
    d = rnd.uniform(0, 4)
    time.sleep(d)
    fol.start()
    return {"note": "restarted after %.1f s" % d}


def restart_node(fleet, name, rnd):
    sig = rnd.choice([signal.SIGTERM, signal.SIGKILL])
    pr = fleet.procs[name]
    pr.stop(sig)
    pr.start()
    return signal.Signals(sig).name


def f_origin_restart(fleet, rnd):
    """The fault ends when the new process runs: the recovery is the time
    it takes to answer."""
    return {"note": restart_node(fleet, "origin", rnd), "down": {"origin"},
            "authority": True}


def f_edge_restart(fleet, rnd):
    name = rnd.choice(["e1", "e2", "e3"])
    return {"note": "%s %s" % (name, restart_node(fleet, name, rnd)),
            "down": {name}}


def f_sighup(fleet, rnd):
    names = rnd.sample(NODES, rnd.randint(1, len(NODES)))
    for n in names:
        fleet.procs[n].send(signal.SIGHUP)
    hold(1)
    return {"note": ",".join(names)}


def f_origin_unreachable(fleet, rnd):
    o = fleet.procs["origin"]
    o.send(signal.SIGSTOP)
    try:
        d = hold(rnd.uniform(3, 15))
    finally:
        o.send(signal.SIGCONT)
    return {"note": "SIGSTOP for %.1f s" % d, "down": {"origin"},
            "authority": True}


def f_slow_readers(fleet, rnd):
    """Clients that ask for the filter and the chain and read a byte now
    and then (a receive buffer of 256 bytes)."""
    v = fleet.version() or 1
    socks = []
    for i in range(40):
        node = rnd.choice(["origin", "origin", "e1", "e2"])
        u = urllib.parse.urlparse(fleet.nodes[node])
        path = rnd.choice(["/v1/filter", "/v1/delta?base=%s&after=0" % v])
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 256)
        s.settimeout(2)
        try:
            s.connect((u.hostname, u.port))
            s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path).encode())
            s.setblocking(False)
            socks.append(s)
        except OSError:
            s.close()
    end = time.time() + max(0, min(rnd.uniform(5, 20), T_END[0] - time.time()))
    while time.time() < end:
        for s in socks:
            try:
                s.recv(1)
            except OSError:
                pass
        time.sleep(0.5)
    for s in socks:
        s.close()
    return {"note": "%d connections" % len(socks)}


def f_full_disk(fleet, rnd):
    if not fleet.mounted:
        return {"note": "skipped: " + str(fleet.mount_error)}
    path = os.path.join(fleet.outfs, "ballast")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        st = os.statvfs(fleet.outfs)
        try:
            os.posix_fallocate(fd, 0, st.f_bavail * st.f_frsize)
        except OSError:
            pass
        chunk = b"\0" * 65536
        while True:
            try:
                os.write(fd, chunk)
            except OSError:
                break
        while True:         # the last bytes
            try:
                os.write(fd, b"\0")
            except OSError:
                break
    finally:
        os.close(fd)
    OUT_FULL[0] = True
    try:
        d = hold(rnd.uniform(3, 12))
    finally:
        os.unlink(path)
        OUT_FULL[0] = False
    return {"note": "%.1f s" % d}


def f_oracle_selftest(fleet, rnd):
    """Not a fault: revokes an id behind the oracle's back, so that every
    node's (right) revoked answer about it is judged wrong after the
    bound. Only with CHAOS_FAULTS=oracle_selftest: shows W counts."""
    key = ("default", "n-selftest-%d" % rnd.randrange(10**9))
    fleet.psql("INSERT INTO revcheck_revocations (scope, id) VALUES (%s, %s)"
               % (sql_str(key[0]), sql_str(key[1])))
    with POOL.lock:
        POOL.special[key] = INF
    hold(BOUND + 10)
    return {"note": "%s revoked unrecorded" % key[1]}


SELFTEST = {"oracle_selftest": f_oracle_selftest}
FAULTS = {
    "expire_last_row": f_expire_last, "bad_rows": f_bad_rows,
    "burst": f_burst, "pg_restart": f_pg_restart, "pg_stop": f_pg_stop,
    "follow_kill": f_follow_kill, "origin_restart": f_origin_restart,
    "edge_restart": f_edge_restart, "sighup": f_sighup,
    "origin_unreachable": f_origin_unreachable,
    "slow_readers": f_slow_readers, "full_disk": f_full_disk,
}


ONLY = [f for f in (os.environ.get("CHAOS_FAULTS") or "").split(",") if f]
FAULTS.update({k: v for k, v in SELFTEST.items() if k in ONLY})
for _f in ONLY:
    if _f not in FAULTS:
        sys.exit("chaos: CHAOS_FAULTS: no fault %r (%s)" % (_f, " ".join(FAULTS)))


def measure_recovery(fleet, end):
    """Seconds from end until the fleet is back: every node answers a
    positive (a seeded id: on an edge the origin settles it) and a
    negative, and a canary revoked once the fault ended (its INSERT
    retried until the database takes it) answers revoked on every node:
    a node that answers from a chain nothing extends any more is not back.
    At most 120 s."""
    cls = {n: Client(fleet.nodes[n], timeout=3) for n in NODES}
    rnd = random.Random(end)
    left = set(NODES)
    canary = None
    worst = 0.0
    while left and time.time() < end + 120:
        if canary is None:
            k = next_ids("c", 1)
            if revoke(fleet, k):
                canary = k[0]
        for n in sorted(left):
            a = check_one(cls[n], n, rnd.choice(POOL.base), "recover")
            b = check_one(cls[n], n, ("default", "n-%d" % rnd.randrange(10**9)),
                          "recover")
            c = check_one(cls[n], n, canary, "recover") if canary else None
            if a in ANSWERED and b in ANSWERED and c == "revoked":
                left.discard(n)
                worst = max(worst, time.time() - end)
        if left:
            time.sleep(0.1)
    for c in cls.values():
        c.close()
    return worst if not left else INF, sorted(left)


def scheduler(fleet):
    rnd = random.Random(SEED + "-faults")
    deck = []
    while time.time() < T_END[0] - 3 and not STOP.is_set():
        if not deck:
            deck = sorted(ONLY or FAULTS)
            rnd.shuffle(deck)
        name = deck.pop()
        start = time.time()
        FAULT_NOW[0] = name
        try:
            # Each fault draws from its own generator: the sequence and
            # every fault's parameters replay whatever the timing did.
            info = FAULTS[name](fleet, random.Random(
                "%s-fault-%d" % (SEED, len(FAULT_LOG)))) or {}
        except Exception as e:   # a harness failure is reported, not hidden
            info = {"note": "harness error: %r" % (e,)}
        end = time.time()
        FAULT_NOW[0] = name + ", recovering"
        rec, left = measure_recovery(fleet, end)
        FAULT_NOW[0] = None
        f = {"name": name, "start": start, "end": end, "recovery": rec,
             "not_back": left, "note": info.get("note", ""),
             "down": sorted(info.get("down", ())),
             "authority": bool(info.get("authority"))}
        FAULT_LOG.append(f)
        log("fault %-18s %5.1f s  back in %s  %s"
            % (name, end - start, "%.2f s" % rec if rec < INF
               else "NEVER (%s)" % ",".join(left), f["note"]))
        if time.time() < T_END[0]:
            STOP.wait(rnd.uniform(2, 6))


# --- memory -------------------------------------------------------------------

MEM = {}        # name -> {"hwm": kB, "rss": [max first half, max second half]}


def proc_children():
    kids = collections.defaultdict(list)
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
            ppid = int(st[st.rindex(")") + 2:].split()[1])
            kids[ppid].append(int(d))
        except (OSError, ValueError):
            pass
    return kids


def vm(pid):
    out = {}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(("VmHWM:", "VmRSS:")):
                    out[line[:5]] = int(line.split()[1])
    except (OSError, ValueError):
        pass
    return out


def mem_sampler(fleet):
    half = T_START + (T_END[0] - T_START) / 2
    while not DONE.is_set():
        kids = proc_children()
        groups = {}
        for n in ("follow", "origin", "e1", "e2", "e3"):
            pid = fleet.procs[n].pid if n in fleet.procs else None
            groups[n] = [pid] if pid else []
        ng = fleet.procs.get("nginx")
        if ng and ng.pid:
            groups["nginx master"] = [ng.pid]
            groups["nginx worker"] = kids.get(ng.pid, [])
        pg = fleet.pg_pid()
        if pg:
            groups["postgres postmaster"] = [pg]
            groups["postgres backend (largest)"] = kids.get(pg, [])
        second = time.time() >= half
        for n, pids in groups.items():
            m = MEM.setdefault(n, {"hwm": 0, "rss": [0, 0]})
            for pid in pids:
                v = vm(pid)
                m["hwm"] = max(m["hwm"], v.get("VmHWM", 0))
                m["rss"][second] = max(m["rss"][second], v.get("VmRSS", 0))
        DONE.wait(1.0)


# --- judging --------------------------------------------------------------------

def excluded(rec, faults):
    """True for a check made during a total outage of its node (or, on an
    edge, a positive the origin had to settle while it was down)."""
    sent, got, node, key, v, kind = rec
    for f in faults:
        if f["start"] <= sent <= f["end"] + RECOVERY_TARGET:
            if node in f["down"]:
                return True
            if f["authority"] and node != "origin" and "authority_" in v:
                return True
    return False


def judge(recs, faults):
    """Every answer is judged; N and the answered share are over the
    steady-load checks."""
    out = {"n": 0, "wrong": [], "answered": 0, "counted": 0,
           "kinds": collections.Counter(), "unanswered": collections.Counter()}
    for rec in recs:
        sent, got, node, key, v, kind = rec
        out["kinds"][kind] += 1
        if v in ANSWERED:
            st = TRUTH.over(key, sent - BOUND, got)
            if (v == "revoked" and st == "N") or (v == "not_revoked" and st == "R"):
                out["wrong"].append(rec)
        if kind != "load":
            continue
        out["n"] += 1
        if excluded(rec, faults):
            continue
        out["counted"] += 1
        if v in ANSWERED:
            out["answered"] += 1
        else:
            out["unanswered"][(node, v)] += 1
    return out


def pct(a, b):
    return 100.0 * a / b if b else 100.0


def progress():
    while not DONE.wait(30):
        with REC_LOCK:
            recs = list(RECORDS)
        j = judge(recs, list(FAULT_LOG))
        log("progress: %d checks, %d wrong, %.3f%% answered, %d faults%s"
            % (j["n"], len(j["wrong"]), pct(j["answered"], j["counted"]),
               len(FAULT_LOG), " (now: %s)" % FAULT_NOW[0] if FAULT_NOW[0] else ""))


# --- the end of the run ------------------------------------------------------------

def final_sweep(fleet):
    """Every row of the database revoked on every node, every key the run
    deleted not revoked: retried for up to BOUND seconds, what still
    differs is returned as [(node, key, want, got)]."""
    ok, out, err = fleet.psql(
        "SELECT scope, id, (expires_at IS NOT NULL AND expires_at < "
        "now() - interval '%d seconds')::text FROM revcheck_revocations"
        % fl.EXPIRY_GRACE)
    if not ok:
        return None, "the database did not answer: " + err.strip()
    want = {}
    for line in out.splitlines():
        scope, ident, expired = line.split("\t")
        if scope == "bad scope" or not ident or len(ident) > 1024:
            continue        # no client can ask about it
        want[(scope, ident)] = "not_revoked" if expired == "true" else "revoked"
    with POOL.lock:
        gone = [k for k in POOL.deleted if k not in want]
    for k in gone[-500:]:
        want[k] = "not_revoked"
    cls = {n: Client(fleet.nodes[n], timeout=20) for n in NODES}
    keys = sorted(want)
    end = time.time() + BOUND
    diff = []
    while True:
        diff = []
        for n in NODES:
            for i in range(0, len(keys), 500):
                part = keys[i:i + 500]
                res = check_batch(cls[n], n, part, "sweep")
                diff += [(n, k, want[k], res[k]) for k in part
                         if res[k] != want[k]]
        if not diff or time.time() > end:
            break
        time.sleep(1)
    return diff, "%d keys on %d nodes" % (len(keys), len(NODES))


def quantile(xs, q):
    if not xs:
        return 0.0
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def report(fleet, sweep, sweep_note, t_load_end):
    with REC_LOCK:
        recs = list(RECORDS)
    faults = list(FAULT_LOG)
    j = judge(recs, faults)
    lines = []
    say = lines.append
    say("run: seed %s, %.0f s of load (CHAOS_TIME %.0f), lag bound %.0f s "
        "(max_age %d s + 1 s)" % (SEED, t_load_end - T_START, CHAOS_TIME,
                                   BOUND, fl.MAX_AGE))
    if not fleet.mounted:
        say("full disk: not injected: follow's output directory is not a "
            "file system of its own (%s)" % fleet.mount_error)
    by = collections.OrderedDict()
    for f in faults:
        s = by.setdefault(f["name"], {"n": 0, "secs": 0.0, "rec": 0.0,
                                       "unans": 0, "never": 0})
        s["n"] += 1
        s["secs"] += f["end"] - f["start"]
        if f["recovery"] == INF:
            s["never"] += 1
        else:
            s["rec"] = max(s["rec"], f["recovery"])
        hi = f["end"] + (f["recovery"] if f["recovery"] < INF else 120)
        s["unans"] += sum(1 for r in recs if r[5] == "load"
                          and f["start"] <= r[0] <= hi and r[4] not in ANSWERED)
    say("faults (%d): kind, times, seconds injected, unanswered load "
        "checks during fault and recovery, worst recovery" % len(faults))
    for name, s in sorted(by.items()):
        say("  %-18s %3d  %6.1f s  %6d  %s" % (
            name, s["n"], s["secs"], s["unans"],
            "%.2f s" % s["rec"] + (" (%d NEVER)" % s["never"] if s["never"] else "")))
    # Each unanswered load check, by the fault it fell in (from its start
    # to the end of its recovery) or "between faults".
    blame = collections.defaultdict(collections.Counter)
    for r in recs:
        if r[5] != "load" or r[4] in ANSWERED:
            continue
        where = "between faults"
        for f in faults:
            hi = f["end"] + (f["recovery"] if f["recovery"] < INF else 120)
            if f["start"] <= r[0] <= hi:
                where = f["name"]
                break
        blame[where][(r[2], r[4])] += 1
    for where, c in sorted(blame.items()):
        say("  unanswered in %s: %s" % (where, ", ".join(
            "%s %s x%d" % (n, v, k) for (n, v), k in c.most_common(6))))
    sizes = []
    for n in ("follow", "origin", "e1", "e2", "e3"):
        try:
            with open(fleet.p(n + ".log"), "rb") as lf:
                sizes.append("%s %d lines" % (n, sum(1 for _ in lf)))
        except OSError:
            pass
    say("logs: " + ", ".join(sizes))
    say("answers judged: %d (%s); load checks counted for the answered "
        "share: %d of %d" % (sum(j["kinds"].values()), ", ".join(
            "%s %d" % kv for kv in sorted(j["kinds"].items())), j["counted"],
            j["n"]))
    say("writes: %s" % ", ".join("%s %d" % kv for kv in sorted(STATS.items())))
    say("unanswered outside total outages (node, answer): " + ", ".join(
        "%s %s x%d" % (n, v, c) for (n, v), c in j["unanswered"].most_common(12)))
    say("memory peaks (VmHWM, max over incarnations; max RSS first half -> "
        "second half):")
    mem_ok = True
    for n, m in sorted(MEM.items()):
        grow = m["rss"][1] > 1.5 * m["rss"][0] + 16384 and m["rss"][0] > 0
        mem_ok &= not grow
        say("  %-28s %8.1f MB   %7.1f -> %7.1f MB%s" % (
            n, m["hwm"] / 1024, m["rss"][0] / 1024, m["rss"][1] / 1024,
            "  GROWING" if grow else ""))
    for rec in j["wrong"][:25]:
        sent, got, node, key, v, kind = rec
        with TRUTH.lock:
            evs = [[round(a - T_START, 2), None if b is None else round(b - T_START, 2), s]
                   for a, b, s in TRUTH.ev.get(key, [])]
        active = [f["name"] for f in faults
                  if f["start"] - BOUND <= sent <= f["end"] + 10]
        say("WRONG: %s answered %s for %s/%s (%s) sent %.2f s, answered %.2f s; "
            "truth %s; faults near: %s" % (node, v, key[0], key[1], kind,
                                          sent - T_START, got - T_START, evs,
                                          active))
    with PEND_LOCK:
        unenforced = list(PENDING.items())
    for k, (t0, seen) in unenforced[:10]:
        say("NOT ENFORCED: %s/%s revoked at %.1f s, revoked only on %s"
            % (k[0], k[1], t0 - T_START, sorted(seen)))
    sweep_bad = sweep if sweep is not None else []
    for n, k, want, got in sweep_bad[:10]:
        say("FINAL SWEEP: %s answered %s for %s/%s, the database says %s"
            % (n, got, k[0], k[1], want))
    lag99 = quantile(LAGS, 0.99)
    recov = [f["recovery"] for f in faults]
    worst = max(recov) if recov else 0.0
    ans = pct(j["answered"], j["counted"])
    missed_revs = len(unenforced) + sum(
        1 for x in sweep_bad if x[2] == "revoked")
    targets = [
        ("W = 0 (answers contradicting the database beyond %.0f s)" % BOUND,
         not j["wrong"], "%d wrong" % len(j["wrong"])),
        ("every revocation enforced everywhere", missed_revs == 0
         and sweep is not None,
         "%d not enforced on every node (%d pending at the end, final sweep "
         "%s: %s; %d deleted before every node answered revoked, %d of them "
         "after more than %.0f s)"
         % (missed_revs, len(unenforced), sweep_note,
            "%d differ" % len(sweep_bad) if sweep is not None else "not run",
            WITHDRAWN[0], LATE_WITHDRAWN[0], BOUND)),
        ("answered >= %.1f %% outside total outages" % ANSWERED_TARGET,
         ans >= ANSWERED_TARGET, "%.3f %% of %d" % (ans, j["counted"])),
        ("fleet back within %.0f s of every fault's end" % RECOVERY_TARGET,
         worst <= RECOVERY_TARGET, "worst %s" % ("%.2f s" % worst if worst < INF
                                                 else "never")),
        ("the harness ran without errors", not STATS["harness_errors"]
         and sweep is not None, "%d errors" % STATS["harness_errors"]),
        ("memory of every process bounded", mem_ok and bool(MEM),
         "no RSS growth over 1.5x + 16 MB from the first half to the second"),
    ]
    for name, ok, detail in targets:
        say("%s: %s (%s)" % ("MET" if ok else "NOT MET", name, detail))
    final = ("chaos: %d checks, %d wrong, %.3f%% answered, %d revocations, "
             "lag p99 %.2f s" % (j["n"], len(j["wrong"]), ans,
                                 STATS["revocations"], lag99))
    data = {"seed": SEED, "chaos_time": CHAOS_TIME, "bound": BOUND,
            "faults": [dict(f, start=f["start"] - T_START, end=f["end"] - T_START,
                            recovery=None if f["recovery"] == INF else f["recovery"])
                       for f in faults],
            "memory_kb": MEM, "lags": sorted(LAGS), "stats": dict(STATS),
            "targets": [[n, ok, d] for n, ok, d in targets], "final": final,
            "wrong": [[r[0] - T_START, r[1] - T_START, r[2], list(r[3]), r[4], r[5]]
                      for r in j["wrong"]],
            "unanswered_load": [[r[0] - T_START, r[1] - T_START, r[2], list(r[3]),
                                 r[4]] for r in recs if r[5] == "load"
                                and r[4] not in ANSWERED][:5000]}
    return lines, final, all(ok for _, ok, _ in targets), data


LATE_WITHDRAWN = [0]


# --- main ----------------------------------------------------------------------------

def seed_rows(fleet):
    t0 = time.time()
    ok, _, err = fleet.psql(
        "INSERT INTO revcheck_revocations (scope, id) SELECT 'default', "
        "'b-' || g FROM generate_series(1, 2000) g; "
        "INSERT INTO revcheck_revocations (scope, id) SELECT 'svc', "
        "'s-' || g FROM generate_series(1, 300) g")
    if not ok:
        raise RuntimeError("seeding the table: " + err)
    t1 = time.time()
    for g in range(1, 2001):
        POOL.base.append(("default", "b-%d" % g))
    for g in range(1, 301):
        POOL.base.append(("svc", "s-%d" % g))
    for k in POOL.base:
        TRUTH.change(k, t0, t1, "R")


def wait_for(cond, secs):
    end = time.time() + secs
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.2)
    return False


def guarded(fn):
    """A thread's body: an exception in the harness is said, not lost."""
    def run(*args):
        try:
            fn(*args)
        except Exception as e:
            STATS["harness_errors"] += 1
            log("harness error in %s: %r" % (fn.__name__, e))
    return run


def main():
    for name in ("REVCHECKD", "FILTERBUILD"):
        if not os.environ.get(name):
            os.environ[name] = os.path.join(SRC, "bin", name.lower())
    print("chaos: seed %s (replay: make chaos CHAOS_SEED=%s CHAOS_TIME=%.0f)"
          % (SEED, SEED, CHAOS_TIME), flush=True)
    shutil.rmtree(os.path.join(OUTDIR, "logs"), ignore_errors=True)
    fleet = fl.Fleet(os.environ["REVCHECKD"], os.environ["FILTERBUILD"], SRC)

    def on_signal(sig, frame):
        raise KeyboardInterrupt()
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    ok_all = False
    try:
        fleet.start()
        seed_rows(fleet)
        fleet.procs["follow"].start()
        if not wait_for(lambda: os.path.exists(os.path.join(fleet.out, "current")),
                        60):
            raise RuntimeError("follow published nothing in 60 s; see "
                               + fleet.p("follow.log"))
        fleet.start_nodes()
        log("fleet up in %s: PostgreSQL :%d, follow -> %s (%s), origin %s, "
            "edges e1 e2 %s, e3 via nginx :%d"
            % (fleet.t, fleet.pg_port, fleet.out,
               "tmpfs " + fl.OUT_FS_SIZE if fleet.mounted else "no tmpfs",
               fleet.nodes["origin"], " ".join(fleet.nodes[n] for n in ("e1", "e2")),
               fleet.ng_port))
        T_END[0] = time.time() + CHAOS_TIME
        threads = [threading.Thread(target=guarded(load_client), args=(i, fleet),
                                    daemon=True) for i in range(N_CLIENTS)]
        threads += [threading.Thread(target=guarded(writer), args=(fleet,), daemon=True)]
        sched = threading.Thread(target=guarded(scheduler), args=(fleet,), daemon=True)
        bg = [threading.Thread(target=guarded(f), args=a, daemon=True) for f, a in
              ((prober, (fleet,)), (mem_sampler, (fleet,)), (progress, ()))]
        for t in threads + bg + [sched]:
            t.start()
        while time.time() < T_END[0]:
            time.sleep(0.5)
        sched.join(120)         # the fault in progress ends
        STOP.set()
        t_load_end = time.time()
        for t in threads:
            t.join(30)
        log("load stopped; waiting for the revocations in flight")
        if not fleet.pg_running():
            fleet.pg_start()
        for _ in range(20):
            resolve_uncertain(fleet)
            with UNC_LOCK:
                if not UNCERTAIN:
                    break
            time.sleep(1)
        wait_for(lambda: not PENDING, 60)
        sweep, note = final_sweep(fleet)
        DONE.set()
        lines, final, ok_all, data = report(fleet, sweep, note, t_load_end)
        os.makedirs(OUTDIR, exist_ok=True)
        with open(os.path.join(OUTDIR, "report.json"), "w") as f:
            json.dump(data, f, indent=1, default=list)
        for line in lines:
            print("chaos: " + line)
        print("chaos: report and daemon logs in " + OUTDIR)
        print(final, flush=True)
    except KeyboardInterrupt:
        print("chaos: interrupted", flush=True)
    except Exception as e:
        print("chaos: error: %s" % e, flush=True)
    finally:
        DONE.set()
        STOP.set()
        fleet.close(keep_logs_in=os.path.join(OUTDIR, "logs"))
    sys.exit(0 if ok_all else 1)


if __name__ == "__main__":
    main()
