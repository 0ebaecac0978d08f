#!/usr/bin/env bash
# it_bounded.sh - one deadline per request (headers and body), a cap on body memory across connections, CL+TE and repeated credentials refused
#
# revcheckd runs with --conn-timeout 2 (B), and with --max-body 65536 and
# --max-body-total 262144 (M: four bodies of 60 kB fit, a fifth does not;
# a longer deadline there, so that the holders outlive the test's reads):
#   - a body trickled one byte a second (never idle for libmicrohttpd) is
#     cut off by the request's deadline, not kept open;
#   - connections that announce a body and never finish it pin at most
#     max_body_total: past it a request gets 503 overloaded at once
#     (counted), while body-less requests are served; once the deadline
#     drops the holders, bodies are read again;
#   - Content-Length together with Transfer-Encoding gets 400 and the
#     connection is closed (a request-smuggling shape), even around a
#     valid body;
#   - two Authorization headers (a clean bearer first, a revoked one
#     second) get 400, and so do two client certificate headers;
#   - header memory (max_header_size, 32 KiB by default; 16 KiB on M): a
#     JWT of the longest length revcheckd reads (16 KiB) passes beside
#     other headers and is decided on its jti; headers past the bound get
#     431, on M that JWT too.
. "$(dirname "$0")/lib.sh"

D=$(cd "$(dirname "$0")" && pwd)
"$FILTERBUILD" keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
printf 'tok-1\ntok-2\n' >"$T/tokens.txt"
"$FILTERBUILD" build --key "$T/key.pem" --out "$T/f" --quiet "$T/tokens.txt"
mkdir -p "$T/state"
rc_start B --filter-dir "$T/f" --trusted-key "$T/key.pub" --state-dir "$T/state" \
    --conn-timeout 2 --max-body 65536 --max-body-total 262144 --threads 2 \
    --token-verification revocation-only	# unsigned bearer tokens below
rc_wait_ready "$B_URL" 30 || rc_fail "no filter loaded"
mkdir -p "$T/state-m"
rc_start M --filter-dir "$T/f" --trusted-key "$T/key.pub" --state-dir "$T/state-m" \
    --conn-timeout 20 --max-body 65536 --max-body-total 262144 --threads 2 \
    --max-header-size 16384
rc_wait_ready "$M_URL" 30 || rc_fail "M: no filter loaded"

PY() { python3 - "$B_PORT" "$@"; }

# ---------------------------------------------------------------- a trickled body
# Headers at once, then the body one byte a second: dropped by the
# request's deadline (2 s, swept about once a second), well before 8 s.
out=$(python3 "$D/rawhttp.py" trickle-body "$B_PORT" 1 8)
if [ "$out" != alive ] && awk -v t="$out" 'BEGIN { exit !(t < 6) }'; then
	rc_ok "a trickled body is cut off after ${out} s (conn_timeout 2)"
else
	rc_fail "a body trickled at 1 byte/s was still open: $out"
fi
rc_curl "$B_URL/metrics"
rc_expect_match "$RC_BODY" 'revcheckd_slow_dropped_total [1-9]' "the drop is counted"

# ---------------------------------------------------------------- body memory across connections
# Six connections announce 60000 bytes each and send one: four fit in
# 262144 bytes, the fifth and sixth are refused at once with 503.
out=$(python3 - "$M_PORT" <<'EOF'
import json, re, select, socket, sys, time
port = int(sys.argv[1])
held, answers = [], []
for i in range(6):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: 60000\r\n\r\n{")
    held.append(s)
    time.sleep(0.15)	# one after the other: the fifth and sixth are over the budget
# Until two connections have an answer (20 s at most); the others are held.
answered = set()
end = time.monotonic() + 20
while len(answered) < 2 and time.monotonic() < end:
    r, _, _ = select.select([s for s in held if s not in answered], [], [], 0.5)
    answered.update(r)
for s in held:
    s.settimeout(5)
    data = s.recv(4096) if s in answered else None
    if data is None:
        answers.append("held")
    elif data == b"":
        answers.append("closed")
    else:
        m = re.match(rb"HTTP/1\.1 (\d+)", data)
        err = re.search(rb'"error":"(\w+)"', data)
        ra = re.search(rb"Retry-After: (\d+)", data, re.I)
        answers.append("%s:%s:%s" % (m.group(1).decode() if m else "?",
            err.group(1).decode() if err else "-", ra.group(1).decode() if ra else "-"))
# A request without a body is still served meanwhile.
c = socket.create_connection(("127.0.0.1", port))
c.settimeout(5)
c.sendall(b"GET /v1/check?id=tok-1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
c.settimeout(5)
resp = b""
while True:
    d = c.recv(4096)
    if not d:
        break
    resp += d
print(json.dumps({"answers": answers, "get": resp.split(b" ")[1].decode() if resp else "none"}))
time.sleep(0.2)
EOF
)
rc_expect_eq "$(printf '%s' "$out" | python3 -c 'import json,sys; print(" ".join(json.load(sys.stdin)["answers"]))')" \
    "held held held held 503:overloaded:1 503:overloaded:1" \
    "four bodies held, the fifth and sixth 503 overloaded with Retry-After"
rc_expect_eq "$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["get"])')" 200 \
    "a GET is served while the body budget is spent"
rc_curl "$M_URL/v1/status"
rc_expect_json counters.body_memory_refused 2 "status counts the two refusals"
rc_curl "$M_URL/metrics"
rc_expect_match "$RC_BODY" 'revcheckd_body_memory_refused_total 2' "metrics count them"
# The holders have closed (B's deadline would drop them too): bodies are
# read again once M has seen them go (30 s at most).
for ((i = 0; i < 300; i++)); do
	rc_curl -H 'Content-Type: application/json' --data-binary '{"id":"tok-1"}' "$M_URL/v1/check"
	[ "$RC_STATUS" = 200 ] && break
	sleep 0.1
done
rc_expect_status 200 "a POST after the holders are gone"
rc_expect_json status revoked "and it is answered"

# ---------------------------------------------------------------- CL + TE, repeated credentials
# rawsend REQUEST: prints "STATUS ERROR CONNECTION-HEADER AFTER", AFTER being
# "closed" when the server closed the connection after its answer.
rawsend() {
	PY "$1" <<'EOF'
import codecs, re, socket, sys, time
port, req = int(sys.argv[1]), codecs.escape_decode(sys.argv[2].encode())[0]
s = socket.create_connection(("127.0.0.1", port))
s.sendall(req)
s.settimeout(3)
data = b""
while b"\r\n\r\n" not in data:
    d = s.recv(4096)
    if not d:
        break
    data += d
head, _, body = data.partition(b"\r\n\r\n")
m = re.match(rb"HTTP/1\.1 (\d+)", head)
clen = re.search(rb"Content-Length: (\d+)", head, re.I)
while clen and len(body) < int(clen.group(1)):
    d = s.recv(4096)
    if not d:
        break
    body += d
err = re.search(rb'"error":"(\w+)"', body)
conn = re.search(rb"Connection: (\w+)", head, re.I)
after = "open"
try:
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    d = s.recv(4096)
    after = "closed" if not d else "open"
except OSError:
    after = "closed"
print(m.group(1).decode() if m else "none", err.group(1).decode() if err else "-",
      conn.group(1).decode().lower() if conn else "-", after)
EOF
}
body='{"id": "tok-1"}'
out=$(rawsend "POST /v1/check HTTP/1.1\\r\\nHost: x\\r\\nContent-Type: application/json\\r\\nContent-Length: ${#body}\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\nf\\r\\n$body\\r\\n0\\r\\n\\r\\n")
rc_expect_eq "$out" "400 bad_request close closed" \
    "Content-Length with Transfer-Encoding around a valid body: 400, connection closed"
out=$(rawsend "POST /v1/check HTTP/1.1\\r\\nHost: x\\r\\nContent-Type: application/json\\r\\nContent-Length: ${#body}\\r\\n\\r\\n$body")
rc_expect_eq "${out%% *}" 200 "control: the same body with Content-Length alone"

jwt() {	# jwt JTI: an unsigned JWT
	python3 -c 'import base64,sys
b=lambda s: base64.urlsafe_b64encode(s.encode()).decode().rstrip("=")
print(b("{\"alg\":\"none\"}")+"."+b("{\"jti\":\"%s\"}" % sys.argv[1])+"."+b("sig"))' "$1"
}
CLEAN=$(jwt tok-fine)
REVOKED=$(jwt tok-1)
out=$(rawsend "GET /v1/authz HTTP/1.1\\r\\nHost: x\\r\\nAuthorization: Bearer $CLEAN\\r\\n\\r\\n")
rc_expect_eq "${out%% *}" 200 "control: one clean bearer is allowed"
out=$(rawsend "GET /v1/authz HTTP/1.1\\r\\nHost: x\\r\\nAuthorization: Bearer $REVOKED\\r\\n\\r\\n")
rc_expect_eq "${out%% *}" 403 "control: one revoked bearer is refused"
out=$(rawsend "GET /v1/authz HTTP/1.1\\r\\nHost: x\\r\\nAuthorization: Bearer $CLEAN\\r\\nAuthorization: Bearer $REVOKED\\r\\n\\r\\n")
rc_expect_eq "${out% *}" "400 bad_request close" "a clean bearer then a revoked one: 400"
out=$(rawsend "GET /v1/authz HTTP/1.1\\r\\nHost: x\\r\\nauthorization: Bearer $REVOKED\\r\\nAUTHORIZATION: Bearer $CLEAN\\r\\n\\r\\n")
rc_expect_eq "${out%% *}" 400 "repeated Authorization in any case: 400"
out=$(rawsend "GET /v1/authz HTTP/1.1\\r\\nHost: x\\r\\nX-SSL-Client-Cert: a\\r\\nX-SSL-Client-Cert: b\\r\\n\\r\\n")
rc_expect_eq "${out%% * *}" "400" "a repeated client certificate header: 400"

# ---------------------------------------------------------------- header memory
jwt_len() {	# jwt_len JTI N: an unsigned JWT of at most N bytes, padded close to N
	python3 -c 'import base64,json,sys
b=lambda s: base64.urlsafe_b64encode(s.encode()).decode().rstrip("=")
jti, n = sys.argv[1], int(sys.argv[2])
tok = None
for k in range(max(0, n * 3 // 4 - 64), n):
    t = b("{\"alg\":\"none\"}") + "." + b(json.dumps({"jti": jti, "pad": "x" * k})) + "." + b("sig")
    if len(t) > n:
        break
    tok = t
assert tok is not None and len(tok) > n - 8
print(tok)' "$1" "$2"
}
BIGCLEAN=$(jwt_len tok-fine 16384)
BIGREV=$(jwt_len tok-1 16384)
PAD=$(head -c 4000 /dev/zero | tr '\0' p)
hdr_status() {	# hdr_status URL [curl args]: the HTTP status only
	local url=$1
	shift
	curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$@" "$url" || true
}
rc_expect_eq "$(hdr_status "$B_URL/v1/authz" -H "Authorization: Bearer $BIGCLEAN" -H "X-Pad: $PAD")" 200 \
    "a ${#BIGCLEAN}-byte clean JWT beside a 4000-byte header passes the default header memory"
rc_expect_eq "$(hdr_status "$B_URL/v1/authz" -H "Authorization: Bearer $BIGREV" -H "X-Pad: $PAD")" 403 \
    "a ${#BIGREV}-byte revoked JWT is read whole and refused"
BIG=$(head -c 33000 /dev/zero | tr '\0' q)
rc_expect_eq "$(hdr_status "$B_URL/healthz" -H "X-Big: $BIG")" 431 \
    "a 33000-byte header is past the default 32 KiB: 431"
rc_expect_eq "$(hdr_status "$M_URL/v1/authz" -H "Authorization: Bearer $BIGCLEAN")" 431 \
    "max_header_size 16384 (M): the same JWT gets 431"
rc_expect_eq "$(hdr_status "$M_URL/healthz" -H "X-Pad: $PAD")" 200 \
    "max_header_size 16384 (M): a 4000-byte header passes"

kill -0 "$B_PID" && rc_ok "the daemon is alive" || rc_fail "the daemon died"
rc_stop B || rc_fail "B did not exit 0"
rc_stop M || rc_fail "M did not exit 0"
rc_done
