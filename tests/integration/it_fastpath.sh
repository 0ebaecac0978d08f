#!/usr/bin/env bash
# it_fastpath.sh - the fast path answers exactly what libmicrohttpd's path answers, and keeps the server's limits
#
# Two revcheckd on one filter: F with the fast path (the default), M with
# fast_path false, so libmicrohttpd answers all of M's requests. Revoked
# ids in two scopes include the shapes a decoder gets wrong ("a+b", "x y",
# "pct%41", "eq=1", "amp&x", "crl:ab" as a scope, a scope that is a prefix
# of another).
#   - every request of a corpus (plain checks, percent-encoded ids and
#     scopes, refusals: raw '+', bad escapes, repeated parameters, HTTP/1.0,
#     framing headers, other paths) gets the same status, body and headers
#     (all but Date) from F and M, each on a fresh connection, and again
#     all of them pipelined down one connection of F; every revoked id is
#     answered revoked by F's fast path;
#   - F's revcheckd_fast_path_requests_total grew by the number of plain
#     checks (so the fast path really answered them) and its hand-off
#     counter by the connections of the others; M's stayed 0;
#   - a head sent in two pieces (handed off) is answered right; one that
#     never completes is dropped at conn_timeout (by libmicrohttpd's idle
#     timeout or server.c's sweep, whichever comes first); one trickled
#     after idling on the fast path keeps the deadline it had there;
#   - an idle fast-path connection is closed after conn_timeout, and the
#     per-IP limit holds for connections the fast path holds;
#   - a slow reader of 5000 pipelined checks gets every answer;
#   - no spinning: a client that pipelines thousands of checks and reads
#     no answer leaves F idle (CPU under 0.3 s in 1.5 s) and serving, and
#     so does a daemon out of descriptors (ulimit -n 64, 100 connections
#     held), which serves again once they close.
. "$(dirname "$0")/lib.sh"

"$FILTERBUILD" keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
cat >"$T/ids.json" <<'EOF'
[{"id": "tok-1"}, {"id": "a+b"}, {"id": "x y"}, {"id": "pct%41"},
 {"id": "eq=1"}, {"id": "amp&x"}, {"id": "caf\u00e9"},
 {"id": "tok-1", "scope": "crl:ab"}, {"id": "tok-2", "scope": "defaultx"},
 {"id": "tok-3", "scope": "default"}]
EOF
"$FILTERBUILD" build --key "$T/key.pem" --out "$T/f" --quiet "$T/ids.json" ||
    rc_fail "filterbuild build"
mkdir -p "$T/sf" "$T/sm"
rc_start F --filter-dir "$T/f" --trusted-key "$T/key.pub" --state-dir "$T/sf" \
    --conn-timeout 2 --max-conns-per-ip 4 --threads 2
rc_start M --filter-dir "$T/f" --trusted-key "$T/key.pub" --state-dir "$T/sm" \
    --fast-path=false --threads 2
rc_wait_ready "$F_URL" 10 || rc_fail "F: no filter loaded"
rc_wait_ready "$M_URL" 10 || rc_fail "M: no filter loaded"

counter() {	# counter URL NAME: the value of revcheckd_NAME_total
	curl -s --max-time 5 "$1/metrics" | awk -v n="revcheckd_$2_total" '$1 == n { print $2 }'
}
F_FAST0=$(counter "$F_URL" fast_path_requests)
F_HAND0=$(counter "$F_URL" fast_path_handoffs)

python3 - "$F_PORT" "$M_PORT" "$T" <<'PY'
import socket, sys, time
fport, mport, t = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]

def req(target, ver="HTTP/1.1", extra="", method="GET", host=True):
    return ("%s %s %s\r\n%s%s\r\n" % (method, target, ver,
            "Host: t\r\n" if host else "", extra)).encode("latin-1")

# (request, a plain check the fast path answers?, revoked id expected?)
fast = [
    ("/v1/check?id=tok-1", True), ("/v1/check?id=tok-2", False),
    ("/v1/check?id=a%2Bb", True), ("/v1/check?id=x%20y", True),
    ("/v1/check?id=pct%2541", True), ("/v1/check?id=pct%41", False),
    ("/v1/check?id=eq%3D1", True), ("/v1/check?id=amp%26x", True),
    ("/v1/check?id=caf%C3%A9", True), ("/v1/check?id=caf%c3%a9", True),
    ("/v1/check?id=tok-1&scope=crl%3Aab", True),
    ("/v1/check?scope=crl%3Aab&id=tok-1", True),
    ("/v1/check?id=tok-2&scope=defaultx", True),
    ("/v1/check?id=tok-2&scope=default", False),
    ("/v1/check?id=tok-3&scope=default", True),
    ("/v1/check?id=tok-3&scope=defaultx", False),
    ("/v1/check?id=tok-1&scope=nosuch", False),
    ("/v1/check?id=a%00b", False),
]
cases = [(req(u), True, rev) for u, rev in fast]
cases += [(req(u, extra=x), True, False) for u, x in [
    ("/v1/check?id=k1", "Connection: keep-alive\r\n"),
    ("/v1/check?id=k2", "User-Agent: t\r\nAccept: */*\r\n"),
]]
cases += [(r, False, False) for r in [
    req("/v1/check?id=a+b"), req("/v1/check?id=%zz"), req("/v1/check?id=a%"),
    req("/v1/check?id=a&id=b"), req("/v1/check?id=a&scope=x&scope=y"),
    req("/v1/check?id=a&scope="), req("/v1/check?id="), req("/v1/check?id"),
    req("/v1/check?scope=default"), req("/v1/check?id=a&scope=x%00y"),
    req("/v1/check?id=a&x=1"), req("/v1/check?id=tok-1", ver="HTTP/1.0"),
    req("/v1/check?id=tok-1", host=False),
    req("/v1/check?id=tok-1", extra="Connection: close\r\n"),
    req("/v1/check?id=tok-1", extra="Content-Length: 0\r\n"),
    req("/v1/check?id=tok-1", extra="Authorization: Bearer x\r\n"),
    req("/v1/check?id=tok-1", method="HEAD"),
    req("/v1/ch%65ck?id=tok-1"), req("/v1/check"), req("/healthz"),
    req("/v1/check?i%64=tok-1"),
]]

def exchange(port, data, wait=2.0):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)
    s.settimeout(wait)
    out = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    except socket.timeout:
        pass
    s.close()
    return out

def split_answers(raw):
    """Responses in raw, each (status line, headers but Date, body)."""
    out = []
    while raw:
        head, sep, rest = raw.partition(b"\r\n\r\n")
        if not sep:
            raise SystemExit("FAIL - truncated answer: %r" % raw[:200])
        lines = head.split(b"\r\n")
        hdrs = sorted(l for l in lines[1:] if not l.lower().startswith(b"date:"))
        n = 0
        for l in lines[1:]:
            if l.lower().startswith(b"content-length:"):
                n = int(l.split(b":")[1])
        out.append((lines[0], tuple(hdrs), rest[:n]))
        raw = rest[n:]
    return out

fails = 0
def fail(msg):
    global fails
    fails += 1
    print("FAIL - " + msg)

nfast = 0
for data, is_fast, revoked in cases:
    f, m = exchange(fport, data), exchange(mport, data)
    fa, ma = split_answers(f), split_answers(m)
    if fa != ma:
        fail("F and M differ for %r:\n  F %r\n  M %r" % (data, fa, ma))
        continue
    if is_fast:
        nfast += 1
        if len(fa) != 1 or fa[0][0] != b"HTTP/1.1 200 OK":
            fail("plain check not 200: %r -> %r" % (data, fa))
        elif (b'"status":"revoked"' in fa[0][2]) != revoked:
            fail("%r answered %r" % (data, fa[0][2]))
open(t + "/nfast", "w").write("%d\n" % nfast)
open(t + "/nother", "w").write("%d\n" % (len(cases) - nfast))

# All of them down one connection of F, in order: the answers of M, one
# after the other, up to the first that closes the connection.
keep = [c for c in cases if c[0].split(b" ")[0] == b"GET"
        and b"HTTP/1.0" not in c[0] and b"Connection: close" not in c[0]]
want = []
for data, _, _ in keep:
    a = split_answers(exchange(mport, data))
    want += a
    if any(h.lower() == b"connection: close" for h in a[0][1]):
        break
got = split_answers(exchange(fport, b"".join(d for d, _, _ in keep), 4.0))
if got != want[:len(got)] or len(got) != len(want):
    fail("pipelined answers differ: got %d, want %d; first difference %r" % (
        len(got), len(want), next(((g, w) for g, w in zip(got, want) if g != w), None)))
# The fast path answers those before the first it hands off.
lead = 0
while lead < len(got) and keep[lead][1]:
    lead += 1
open(t + "/npiped", "w").write("%d\n" % lead)

# A head in two pieces: not the fast path's to wait for (it peeks, so the
# bytes in would wake it again and again), answered anyway.
s = socket.create_connection(("127.0.0.1", fport))
s.sendall(b"GET /v1/check?id=tok-1 HTTP/1.1\r\nHo")
time.sleep(0.3)
s.sendall(b"st: t\r\n\r\n")
s.settimeout(3)
a = s.recv(65536)
s.close()
if not a.startswith(b"HTTP/1.1 200 OK") or b'"status":"revoked"' not in a:
    fail("a head in two pieces: %r" % a[:300])

# A head that never completes: dropped at the deadline (2 s), not held.
s = socket.create_connection(("127.0.0.1", fport))
s.sendall(b"GET /v1/check?id=slow HTTP/1.1\r\nX-Slow: ")
s.settimeout(8)
t0 = time.time()
try:
    rest = s.recv(65536)
except ConnectionResetError:
    rest = b""	# closed with the head unread: a reset
except socket.timeout:
    rest = None
s.close()
if rest != b"" or time.time() - t0 > 5:
    fail("an unfinished head was not dropped in time: %r after %.1f s"
         % (rest, time.time() - t0))

# Idle on the fast path for 1.8 s, then a head trickled a byte every
# 0.4 s (handed over at its first bytes): the connection keeps the
# deadline it had, 2 s from opening, and is dropped by about 3 s (the
# sweep runs every second), not 2 s after the hand-over (3.8 s and on).
s = socket.create_connection(("127.0.0.1", fport))
t0 = time.time()
time.sleep(1.8)
s.sendall(b"GET /v1/check?id=trickle HTTP/1.1\r\nX-Trickle: ")
dropped = None
while time.time() - t0 < 8:
    time.sleep(0.4)
    try:
        s.sendall(b"a")
    except (BrokenPipeError, ConnectionResetError):
        dropped = time.time() - t0
        break
s.close()
if dropped is None or dropped > 3.5:
    fail("a head trickled after 1.8 s idle on the fast path was dropped at %s s "
         "(its deadline was 2 s from opening)" % dropped)

# Idle past conn_timeout (2 s): closed by the server.
s = socket.create_connection(("127.0.0.1", fport))
s.sendall(req("/v1/check?id=idle"))
s.settimeout(8)
first = s.recv(65536)
t0 = time.time()
try:
    rest = s.recv(65536)
except (socket.timeout, ConnectionResetError):
    rest = None
if not first.startswith(b"HTTP/1.1 200") or rest != b"" or time.time() - t0 > 5:
    fail("idle fast-path connection not closed within the timeout: %r after %.1f s"
         % (rest, time.time() - t0))

# Per IP: four connections held on the fast path, the fifth refused.
held = []
for i in range(4):
    c = socket.create_connection(("127.0.0.1", fport))
    c.sendall(req("/v1/check?id=held-%d" % i))
    c.settimeout(3)
    if not c.recv(65536).startswith(b"HTTP/1.1 200"):
        fail("held connection %d not answered" % i)
    held.append(c)
c = socket.create_connection(("127.0.0.1", fport))
c.settimeout(3)
try:
    c.sendall(req("/v1/check?id=fifth"))
    r = c.recv(65536)
except (ConnectionResetError, BrokenPipeError, socket.timeout):
    r = b""
if r != b"":
    fail("a fifth connection from one address was served: %r" % r[:100])
c.close()
for c in held:
    c.close()
time.sleep(0.3)
r = exchange(fport, req("/v1/check?id=after"))
if not r.startswith(b"HTTP/1.1 200"):
    fail("not served again after the held connections closed: %r" % r[:100])
print("fastpath: %d cases, %d plain checks, %d failures" % (len(cases), nfast, fails))
sys.exit(1 if fails else 0)
PY
[ $? = 0 ] && rc_ok "F and M answer alike, the limits hold" || rc_fail "fast path differs (above)"

# ---------------------------------------------------------------- an answer that waits
# In a network namespace of its own with 4 KiB send buffers (tcp_wmem is
# per namespace), 30 pipelined checks of 900-byte ids get answers the
# socket cannot take at once: the rest waits for EPOLLOUT on the fast
# path, the reader gets all 30, and a request sent after them is read
# and answered too (the connection went back to reading); all 31 on the
# fast path, nothing handed off but the /metrics reads. A client that
# half-closes behind such checks and reads nothing leaves the worker idle.
if [ "$(id -u)" = 0 ]; then
	NS_PORT=$(rc_free_port)
	st=0
	REVCHECKD="$REVCHECKD" T="$T" NS_PORT="$NS_PORT" unshare -n bash -s <<'NS' >"$T/ns.log" 2>&1 || st=$?
set -e
ip link set lo up
sysctl -qw net.ipv4.tcp_wmem="4096 4096 4096"
mkdir -p "$T/sn"
"$REVCHECKD" --listen "127.0.0.1:$NS_PORT" --filter-dir "$T/f" --trusted-key "$T/key.pub" \
    --state-dir "$T/sn" --threads 1 >"$T/N.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do
	[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$NS_PORT/readyz")" = 200 ] && break
	sleep 0.1
done
python3 - "$NS_PORT" "$pid" <<'PY'
import socket, sys, time
port, pid = int(sys.argv[1]), sys.argv[2]
def ticks():
    f = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])
def metric(name):
    m = socket.create_connection(("127.0.0.1", port))
    m.sendall(b"GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
    out = b""
    while True:
        b = m.recv(65536)
        if not b:
            break
        out += b
    for line in out.decode().splitlines():
        if line.startswith("revcheckd_%s_total " % name):
            return int(line.split()[1])
    return 0
f0, h0 = metric("fast_path_requests"), metric("fast_path_handoffs")
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(("127.0.0.1", port))
req = b"GET /v1/check?id=" + b"x" * 900 + b" HTTP/1.1\r\nHost: t\r\n\r\n"
s.sendall(req * 30)
time.sleep(0.5)
s.settimeout(3)
def read_answers(n):
    got, buf = 0, b""
    while got < n:
        b = s.recv(4096)
        if not b:
            break
        buf += b
        got = buf.count(b"HTTP/1.1 200 OK")
        time.sleep(0.005)
    return got
first = read_answers(30)
s.sendall(req.replace(b"x" * 900, b"after"))
last = read_answers(1)
f1, h1 = metric("fast_path_requests"), metric("fast_path_handoffs")
# A client that half-closes behind 30 such checks and reads nothing: its
# answers wait for EPOLLOUT while its FIN is in, and the worker must not
# spin on it (EPOLLRDHUP is not asked for while an answer waits).
h = socket.socket()
h.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
h.connect(("127.0.0.1", port))
h.sendall(req * 30)
h.shutdown(socket.SHUT_WR)
time.sleep(0.5)
t0 = ticks()
time.sleep(1.5)
spin = ticks() - t0
h.close()
print("answers %d then %d; fast path %d, hand-offs %d; half-closed reader: %d ticks in 1.5 s"
      % (first, last, f1 - f0, h1 - h0, spin))
# Hand-offs: the two /metrics reads after h0's own.
sys.exit(0 if (first, last, f1 - f0, h1 - h0) == (30, 1, 31, 2) and spin < 30 else 1)
PY
NS
	[ "$st" = 0 ] && rc_ok "an answer that waits for EPOLLOUT: $(tail -n 1 "$T/ns.log")" ||
	    rc_fail "an answer that waits for EPOLLOUT: $(tail -n 3 "$T/ns.log")"
else
	echo "# it_fastpath: not root: the EPOLLOUT case (a network namespace) is not run"
fi

NFAST=$(cat "$T/nfast")
NOTHER=$(cat "$T/nother")
NPIPED=$(cat "$T/npiped")
F_FAST1=$(counter "$F_URL" fast_path_requests)
F_HAND1=$(counter "$F_URL" fast_path_handoffs)
# Plain checks: NFAST one by one, NPIPED pipelined, 1 idle, 4 held, 1 after.
want=$((NFAST + NPIPED + 6))
rc_expect_eq "$((F_FAST1 - F_FAST0))" "$want" "the fast path answered every plain check"
awk -v d="$((F_HAND1 - F_HAND0))" -v n="$NOTHER" 'BEGIN { exit !(d >= n) }' &&
    rc_ok "every other request was handed off ($((F_HAND1 - F_HAND0)) >= $NOTHER)" ||
    rc_fail "hand-offs $((F_HAND1 - F_HAND0)), want at least $NOTHER"
rc_expect_eq "$(counter "$M_URL" fast_path_requests)" 0 "fast_path false: none on the fast path"

# ---------------------------------------------------------------- no spinning
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
idle_check() {	# idle_check PID WHAT: under 30 ticks (0.3 s) of CPU in 1.5 s
	local a b
	a=$(cpu_ticks "$1"); sleep 1.5; b=$(cpu_ticks "$1")
	[ $((b - a)) -lt 30 ] && rc_ok "$2: $((b - a)) ticks in 1.5 s" ||
	    rc_fail "$2: $((b - a)) ticks of CPU in 1.5 s (spinning)"
}
python3 - "$F_PORT" "$T/stuck.ready" <<'PY' &
import socket, sys, threading, time
# A small receive buffer and 30000 requests written as they go: the
# answers back up with requests still unread behind them (on the fast
# path, or on libmicrohttpd's once a segment ends inside a head).
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
s.connect(("127.0.0.1", int(sys.argv[1])))
req = b"GET /v1/check?id=stuck HTTP/1.1\r\nHost: t\r\n\r\n"
def pump():
    try:
        for i in range(1000):
            s.sendall(req * 30)
    except OSError:
        pass
threading.Thread(target=pump, daemon=True).start()
time.sleep(1)
open(sys.argv[2], "w").write("1")
time.sleep(2.5)
s.close()
PY
STUCK=$!
for _ in $(seq 50); do [ -e "$T/stuck.ready" ] && break; sleep 0.1; done
idle_check "$F_PID" "a client that reads no answer"
rc_expect_eq "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$F_URL/v1/check?id=meanwhile")" 200 "others served meanwhile"
wait "$STUCK"
# A slow reader of 5000 pipelined checks gets every answer, from the fast
# path or from libmicrohttpd once a segment ends inside a head (whether an
# answer of the fast path waits for EPOLLOUT here is up to the kernel's
# buffers: this does not show that path taken).
python3 - "$F_PORT" <<'PY' && rc_ok "a slow reader got all 5000 answers" || rc_fail "a slow reader's answers stalled"
import socket, sys, threading, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
s.connect(("127.0.0.1", int(sys.argv[1])))
req = b"GET /v1/check?id=slow-reader HTTP/1.1\r\nHost: t\r\n\r\n"
def pump():
    for i in range(200):
        s.sendall(req * 25)
threading.Thread(target=pump, daemon=True).start()
s.settimeout(5)
got, buf, t0 = 0, b"", time.time()
while got < 5000 and time.time() - t0 < 30:
    time.sleep(0.002)
    try:
        b = s.recv(8192)
    except socket.timeout:
        break
    if not b:
        break
    buf += b
    got += buf.count(b"HTTP/1.1 200 OK")
    buf = buf[buf.rfind(b"HTTP/1.1 200 OK") + 1:] if b"HTTP/1.1 200 OK" in buf else buf[-16:]
print("slow reader: %d answers in %.1f s" % (got, time.time() - t0))
sys.exit(0 if got == 5000 else 1)
PY

mkdir -p "$T/sl"
L_PORT=$(rc_free_port)
(ulimit -n 64; exec "$REVCHECKD" --listen "127.0.0.1:$L_PORT" --filter-dir "$T/f" \
    --trusted-key "$T/key.pub" --state-dir "$T/sl" --threads 1 >"$T/L.log" 2>&1) &
L_PID=$!
RC_PIDS+=("$L_PID")
rc_wait_ready "http://127.0.0.1:$L_PORT" 10 || rc_fail "L (ulimit -n 64) did not come up: $(tail -n 3 "$T/L.log")"
python3 - "$L_PORT" "$T/held.ready" <<'PY' &
import socket, sys, time
held = []
for i in range(100):
    try:
        held.append(socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2))
    except OSError:
        pass
open(sys.argv[2], "w").write("%d" % len(held))
time.sleep(2.5)
for s in held:
    s.close()
PY
HELD=$!
for _ in $(seq 50); do [ -e "$T/held.ready" ] && break; sleep 0.1; done
idle_check "$L_PID" "out of descriptors ($(cat "$T/held.ready") connections opened)"
wait "$HELD"
sleep 0.5
rc_expect_eq "$(curl -s --max-time 5 "http://127.0.0.1:$L_PORT/v1/check?id=tok-1" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["status"])' 2>&1)" \
    revoked "served again once the connections closed"
grep -q "fast path: cannot accept" "$T/L.log" && rc_ok "running out of descriptors is logged" ||
    rc_fail "no log line for running out of descriptors: $(tail -n 3 "$T/L.log")"

rc_done
