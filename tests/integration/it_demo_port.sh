#!/usr/bin/env bash
# it_demo_port.sh - `make demo` (tests/demo.sh) and a port someone else has: the next free one, said; or a clear refusal
#
# - 127.0.0.1:8080 held by another process (a listener this test starts,
#   or whoever has it already): the demo says so, picks the next free
#   port, and its revcheckd answers there;
# - DEMO_LISTEN naming a taken port: the demo stops at once (exit 1),
#   naming the address, before it writes anything.
. "$(dirname "$0")/lib.sh"

taken() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# listen PORT: a process that holds PORT (waits until it does).
listen() {
	python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8); time.sleep(600)' "$1" \
	    </dev/null >/dev/null 2>&1 &
	rc_stop_at_exit $!
	for _ in $(seq 1 100); do taken "$1" && return 0; sleep 0.1; done
	return 1
}

# ---------------------------------------------------------------- 8080 taken
taken 8080 || listen 8080 || rc_fail "could not hold 8080"
REVCHECKD=$REVCHECKD FILTERBUILD=$FILTERBUILD DEMO_DIR=$T/demo \
    bash "$RC_SRC/tests/demo.sh" >"$T/demo.out" 2>&1 &
pid=$!
rc_stop_at_exit "$pid"
rc_wait_log "$T/demo.out" 'revcheckd is starting on http://127\.0\.0\.1:[0-9]+' 1 120 ||
    rc_fail "the demo did not start: $(tail -5 "$T/demo.out")"
rc_expect_match "$(cat "$T/demo.out")" '^demo: 127\.0\.0\.1:8080 is taken by another process; using 127\.0\.0\.1:80(8[1-9]|9[0-9])$' \
    "the demo says 8080 is taken and which port it uses"
url=$(sed -n 's/^revcheckd is starting on \(http:[^ ]*\) .*/\1/p' "$T/demo.out")
for _ in $(seq 1 100); do curl -s -o /dev/null "$url/healthz" && break; sleep 0.1; done
rc_curl "$url/v1/check?id=tok-revoked-1"
rc_expect_json status revoked "the demo's revcheckd answers on $url"
kill "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true

# ---------------------------------------------------------------- DEMO_LISTEN taken
out=$(REVCHECKD=$REVCHECKD FILTERBUILD=$FILTERBUILD DEMO_DIR=$T/demo2 DEMO_LISTEN=127.0.0.1:8080 \
    bash "$RC_SRC/tests/demo.sh" 2>&1) && rc=0 || rc=$?
rc_expect_eq "$rc" 1 "DEMO_LISTEN on a taken port: exit 1"
rc_expect_match "$out" '^demo: 127\.0\.0\.1:8080 is taken by another process' "it names the address"
[ ! -e "$T/demo2" ] && rc_ok "nothing written" || rc_fail "the demo wrote $T/demo2"

rc_done
