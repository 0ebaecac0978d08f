#!/usr/bin/env bash
# it_edge_recover.sh - edges recover from an origin outage on their own: /readyz back to 200 with no client traffic; filterbuild audit fails a degraded node and passes it again
#
# Origin O and edges: D (filter from O, authority on a dead port) fails
# the audit though its syncs succeed. E (filter and authority from O) and
# N (sync interval 1h, started while O is down, so it has no filter). O stops; a
# filter positive makes E degraded (503 authority_unavailable, /readyz
# 503) and filterbuild audit fails it, naming why. O starts again on the
# same port; then only /readyz is asked, a bounded number of times, as a
# load balancer would: E must be ready again within seconds (its
# background probe found the authority back), and N must load its first
# filter without waiting out its hour. Audit passes both again. Last, a
# node whose /v1/status says it serves a version no longer on its disk
# (disk_mismatch, or served_not_on_disk) fails the audit.
. "$(dirname "$0")/lib.sh"

FB() { "$FILTERBUILD" "$@"; }
now_ms() { local t=${EPOCHREALTIME/[.,]/}; echo $((10#$t / 1000)); }	# no exec: a fork is dear on some CI machines

# audit URL...: filterbuild audit; AUD_RC, AUD_OUT (stdout and stderr).
audit() {
	AUD_RC=0
	AUD_OUT=$("$FILTERBUILD" audit --timeout 5s "$@" 2>&1) || AUD_RC=$?
}

# o_start: revcheckd O on O_PORT (the same port each time), until its
# /healthz answers (bounded); 1 when it does not come up.
o_start() {
	local i
	"$REVCHECKD" --listen "127.0.0.1:$O_PORT" --filter-dir "$T/f" \
	    --trusted-key "$T/key.pub" --state-dir "$T/so" >>"$T/O.log" 2>&1 &
	O_PID=$!
	for ((i = 0; i < 100; i++)); do
		curl -s -o /dev/null --max-time 1 "$O_URL/healthz" && return 0
		kill -0 "$O_PID" 2>/dev/null || break
		sleep 0.1
	done
	return 1
}

# ready_within NAME URL SECONDS: asks only URL/readyz, every 0.2 s, until
# 200 or SECONDS; READY_MS is how long it took.
ready_within() {
	local t0 i
	t0=$(now_ms)
	for ((i = 0; i < $3 * 5; i++)); do
		if [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$2/readyz")" = 200 ]; then
			READY_MS=$(( $(now_ms) - t0 ))
			return 0
		fi
		sleep 0.2
	done
	return 1
}

FB keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
{ printf 'tok-rev-1\n'; seq -f 'pad-%g' 1 300; } >"$T/tokens.txt"
mkdir -p "$T/so" "$T/se" "$T/sn"
FB build --key "$T/key.pem" --out "$T/f" --version 1 --quiet --fp-rate 1e-7 "$T/tokens.txt"

O_PORT=$(rc_free_port)
O_URL="http://127.0.0.1:$O_PORT"
RC_DAEMONS+=(O)
o_start || rc_fail "O did not start on port $O_PORT"
rc_wait_version "$O_URL" 1 || rc_fail "O did not load version 1"
EDGE=(--trusted-key "$T/key.pub" --upstream-insecure-http
    --upstream-filter "$O_URL/v1/filter" --upstream-check "$O_URL/v1/check"
    --upstream-timeout 1s --upstream-retries 0)
rc_start E "${EDGE[@]}" --state-dir "$T/se" --sync-interval 1
rc_wait_version "$E_URL" 1 || rc_fail "E did not sync version 1"
rc_wait_ready "$E_URL" || rc_fail "E is not ready"
rc_curl "$E_URL/v1/check?id=tok-rev-1"
rc_expect_json status revoked "E: a positive settled by O"
audit "$O_URL" "$E_URL"
rc_expect_eq "$AUD_RC" 0 "audit: O and E fine ($AUD_OUT)"

# D syncs its filter from O but its authority is a port nobody listens
# on: every sync succeeds, and still it answers no positive. Its line in
# the audit was OK (rc 0).
mkdir -p "$T/sd"
DEAD_URL="http://127.0.0.1:$(rc_free_port)/v1/check"
rc_start D --trusted-key "$T/key.pub" --upstream-insecure-http --state-dir "$T/sd" \
    --sync-interval 1 --upstream-filter "$O_URL/v1/filter" --upstream-check "$DEAD_URL" \
    --upstream-timeout 1s --upstream-retries 0
rc_wait_version "$D_URL" 1 || rc_fail "D did not sync version 1"
rc_curl "$D_URL/v1/check?id=tok-rev-1"
rc_expect_json error authority_unavailable "D: a positive, no authority"
audit "$O_URL" "$D_URL"
rc_expect_eq "$AUD_RC" 1 "audit fails D, its syncs fine, its authority unavailable"
rc_expect_match "$AUD_OUT" "^$D_URL .*not ready \(authority_unavailable\)" \
    "audit: D's line says not ready (authority_unavailable)"
rc_expect_match "$AUD_OUT" "^$O_URL .*OK$" "audit: O's line OK"
rc_stop D || rc_fail "D did not exit 0"

# ---------------------------------------------------------------- the origin goes down
rc_stop O || rc_fail "O did not exit 0"
rc_curl "$E_URL/v1/check?id=tok-rev-1"
rc_expect_status 503 "E, O down: a positive"
rc_expect_json error authority_unavailable "E, O down: authority_unavailable"
rc_curl "$E_URL/readyz"
rc_expect_status 503 "E, O down: /readyz"
rc_expect_json degraded authority_unavailable "E, O down: degraded authority_unavailable"
audit "$E_URL"
rc_expect_eq "$AUD_RC" 1 "audit fails degraded E (was: OK, rc 0)"
rc_expect_match "$AUD_OUT" "^$E_URL .*not ready \(authority_unavailable\)" \
    "audit: E's line says not ready (authority_unavailable)"
"$FILTERBUILD" audit --json --timeout 5s "$E_URL" >"$T/aud.json" 2>/dev/null || true
RC_BODY_FILE=$T/aud.json
rc_expect_json nodes.0.ready false "audit --json: ready false"
rc_expect_json nodes.0.degraded authority_unavailable "audit --json: degraded"
rc_expect_json nodes.0.ok false "audit --json: not ok"
# N starts with the origin down: no filter, its next sync an hour away.
rc_start N "${EDGE[@]}" --state-dir "$T/sn" --sync-interval 1h
rc_curl "$N_URL/readyz"
rc_expect_status 503 "N, O down: not ready"
rc_expect_json error no_filter "N, O down: no_filter"

# ---------------------------------------------------------------- the origin is back, nobody asks a check
mark=$(rc_log_mark "$T/E.log")
o_start || rc_fail "O did not start again on port $O_PORT"
rc_wait_version "$O_URL" 1 || rc_fail "O did not load version 1 again"
if ready_within E "$E_URL" 15; then
	rc_ok "E ready again ${READY_MS} ms after O came back, with only /readyz asked"
else
	rc_fail "E: /readyz still $(curl -s "$E_URL/readyz") 15 s after O came back"
fi
rc_wait_log_since "$T/E.log" "$mark" 'authority back: .*background probe' &&
    rc_ok "E logs the authority back (background probe)" ||
    rc_fail "E did not log the probe's recovery"
if ready_within N "$N_URL" 15; then
	rc_ok "N loaded its first filter ${READY_MS} ms after O came back (sync interval 1h)"
else
	rc_fail "N: /readyz still $(curl -s "$N_URL/readyz") 15 s after O came back"
fi
rc_curl "$E_URL/v1/status"
rc_expect_json authority.degraded null "E: status no longer degraded"
rc_expect_match "$(rc_json authority.probes)" '^[1-9]' "E: probes counted"
rc_curl "$E_URL/metrics"
rc_expect_match "$RC_BODY" '^revcheckd_upstream_probes_total [1-9]' "E: probes metric"
audit "$O_URL" "$E_URL" "$N_URL"
rc_expect_eq "$AUD_RC" 0 "audit: O, E and N fine again ($AUD_OUT)"
rc_curl "$E_URL/v1/check?id=tok-rev-1"
rc_expect_json status revoked "E: positives settled again"

# ---------------------------------------------------------------- a version served but gone from disk
# Origin R's current is removed: it serves version 1 from memory, and its
# /v1/status says so (disk_mismatch). Its /readyz stays 200: only the
# audit tells.
mkdir -p "$T/sr"
cp -a "$T/f" "$T/fr"
rc_start R --filter-dir "$T/fr" --trusted-key "$T/key.pub" --state-dir "$T/sr" \
    --poll-interval 3600
rc_wait_version "$R_URL" 1 || rc_fail "R did not load version 1"
audit "$R_URL"
rc_expect_eq "$AUD_RC" 0 "audit: R fine with its files"
rm "$T/fr/current"
kill -HUP "$R_PID"
rc_wait_json "$R_URL/v1/status" disk_mismatch.served_version 1 ||
    rc_fail "R: current removed, not flagged ($(rc_json disk_mismatch))"
audit "$R_URL"
rc_expect_eq "$AUD_RC" 1 "audit fails R, serving a version gone from its disk"
rc_expect_match "$AUD_OUT" "^$R_URL .*serves version 1, no longer on its disk" \
    "audit: R's line says so"
"$FILTERBUILD" audit --json --timeout 5s "$R_URL" >"$T/aud.json" 2>/dev/null || true
RC_BODY_FILE=$T/aud.json
rc_expect_json nodes.0.served_not_on_disk true "audit --json: served_not_on_disk"
rc_stop R || rc_fail "R did not exit 0"
# A stand-in node whose /v1/status (otherwise E's) says served_not_on_disk.
rc_curl "$E_URL/v1/status"
for form in true '{"version": 1, "sha256": "00"}'; do
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
d["served_not_on_disk"] = json.loads(sys.argv[2])
json.dump(d, open(sys.argv[3], "w"))' "$RC_BODY_FILE" "$form" "$T/gone.json"
	rm -f "$T/gone.port"
	python3 - "$T/gone.json" "$T/gone.port" <<'PY' &
import http.server, os, sys
body = open(sys.argv[1], "rb").read()
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        ok = self.path == "/v1/status"
        self.send_response(200 if ok else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body) if ok else 0))
        self.end_headers()
        if ok:
            self.wfile.write(body)
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(sys.argv[2] + ".tmp", "w").write("%d\n" % s.server_address[1])
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
s.serve_forever()
PY
	gp=$!
	rc_stop_at_exit "$gp"
	for ((i = 0; i < 100; i++)); do [ -s "$T/gone.port" ] && break; sleep 0.1; done
	G_URL="http://127.0.0.1:$(cat "$T/gone.port")"
	audit "$G_URL"
	rc_expect_eq "$AUD_RC" 1 "audit fails a node with served_not_on_disk $form"
	rc_expect_match "$AUD_OUT" "^$G_URL .*no longer on its disk" \
	    "audit: the node's line says so ($form)"
	rc_stop_pid "$gp"
done

for n in N E O; do
	rc_stop "$n" || rc_fail "$n did not exit 0"
done
rc_done
