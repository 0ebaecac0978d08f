#!/usr/bin/env bash
# it_deltamem.sh - /v1/delta serves one shared copy of the verified chain: 100 slow readers cost no copy each, and checks stay prompt
#
# filterbuild follow publishes a chain of four deltas of about 3.4 MiB
# each over a base: 13.5 MiB, well over what the kernel buffers for one
# connection on loopback (tcp_wmem's 4 MiB), so a response that is not
# read stays in the daemon. An origin serves it; 100 raw sockets ask for
# /v1/delta?base=V&after=0 and read nothing (their responses stay queued).
# The origin's resident memory may grow by a fraction of one chain per
# reader at most (each response holds a reference to the chain in memory,
# not a copy; before, each held a private copy read from disk), and a POST
# /v1/check still answers promptly. The bytes served are the files on
# disk, delta by delta and the head, for after=0 and after=2; a chain over
# delta_memory_max is refused with 503 and Retry-After, never copied.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg.sh"

F=$T/filters
rc_follow_chain "$F"
V=$V1
mkdir -p "$T/state" "$T/state2"
rc_start O --filter-dir "$F" --trusted-key "$T/key.pub" --state-dir "$T/state"
rc_wait_version "$O_URL" "$V" || rc_fail "origin serves the base"

# Four deltas of 8000 ids of about 420 bytes, one transaction a round.
for i in 1 2 3 4; do
	rc_psql -c "INSERT INTO revcheck_revocations (id) SELECT
	    'tok-$i-' || g || '-' || repeat('x', 410) FROM generate_series(1, 8000) g"
	rc_wait_json "$O_URL/v1/status" filter.delta.seq "$i" 30 ||
	    rc_fail "delta $i not applied: $(rc_json filter.delta)"
done
rc_follow_stop
# The head follow wrote last is in service once its freshness shows.
D=$F/current/delta
cat "$D"/0*.rcd "$D/head.rcd" >"$T/want.bin"
rc_wait_json "$O_URL/v1/status" filter.delta.seq 4 || rc_fail "seq 4"
for ((i = 0; i < 100; i++)); do
	curl -s -o "$T/got.bin" "$O_URL/v1/delta?base=$V&after=0"
	cmp -s "$T/got.bin" "$T/want.bin" && break
	sleep 0.1
done
CHAIN=$(stat -c %s "$T/want.bin")
cmp -s "$T/got.bin" "$T/want.bin" && rc_ok "after=0: the chain's files, $CHAIN bytes" ||
    rc_fail "after=0: $(stat -c %s "$T/got.bin") bytes differ from the files' $CHAIN"
[ "$CHAIN" -gt $((12 << 20)) ] && rc_ok "the chain is over 12 MiB" ||
    rc_fail "the chain is only $CHAIN bytes"
cat "$D"/00000000000000000003.rcd "$D"/00000000000000000004.rcd "$D/head.rcd" >"$T/want2.bin"
curl -s -o "$T/got2.bin" "$O_URL/v1/delta?base=$V&after=2"
cmp -s "$T/got2.bin" "$T/want2.bin" && rc_ok "after=2: deltas 3, 4 and the head" ||
    rc_fail "after=2: the bytes differ"

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$O_PID/status"; }
delta_200() {
	rc_curl "$O_URL/metrics"
	awk '/^revcheckd_http_requests_total\{endpoint="delta",code="200"\}/ { print $2 }' <<<"$RC_BODY"
}
before=$(delta_200)
rss0=$(rss_kb)

# 100 readers that read nothing, held until this script closes their stdin.
cat >"$T/hold.py" <<'PY'
import socket, sys, select
port, v = int(sys.argv[1]), sys.argv[2]
req = ("GET /v1/delta?base=%s&after=0 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % v).encode()
socks = []
for _ in range(100):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    s.sendall(req)
    socks.append(s)
select.select([sys.stdin], [], [], 120)	# until the test is done, 120 s at most
PY
exec {HOLD}> >(exec python3 "$T/hold.py" "$O_PORT" "$V")
for ((i = 0; i < 200; i++)); do
	[ "$(( $(delta_200) - before ))" -ge 100 ] && break
	sleep 0.1
done
rc_expect_eq "$(( $(delta_200) - before ))" 100 "100 slow readers have their responses queued"
rss1=$(rss_kb)
rc_curl "$O_URL/metrics"
held_bytes=$(awk '$1 == "revcheckd_delta_memory_bytes" { print $2 }' <<<"$RC_BODY")
[ "${held_bytes%.*}" -ge "$CHAIN" ] && [ "${held_bytes%.*}" -lt $((CHAIN * 2)) ] &&
    rc_ok "revcheckd_delta_memory_bytes $held_bytes: one chain" ||
    rc_fail "revcheckd_delta_memory_bytes $held_bytes for a $CHAIN-byte chain"
held=$(ss -tn "sport = :$O_PORT" | tail -n +2 | wc -l)
[ "$held" -ge 100 ] && rc_ok "the readers hold their connections" ||
    rc_fail "only $held connections held"
grow=$(( (rss1 - rss0) * 1024 ))
# A copy per reader would be 100 x $CHAIN bytes less what the kernel
# takes; at most one chain for all of them is allowed.
[ "$grow" -lt "$CHAIN" ] &&
    rc_ok "RSS grew by $grow bytes for 100 readers (chain $CHAIN bytes)" ||
    rc_fail "RSS grew by $grow bytes for 100 readers of a $CHAIN-byte chain"
t0=${EPOCHREALTIME/[.,]/}
rc_curl --max-time 10 -H 'Content-Type: application/json' \
    --data '{"id": "tok-1-1-'"$(printf 'x%.0s' $(seq 410))"'"}' "$O_URL/v1/check"
t1=${EPOCHREALTIME/[.,]/}
rc_expect_status 200 "POST /v1/check while the readers hold on"
rc_expect_json status revoked "a delta's id is revoked"
[ $(( (t1 - t0) / 1000 )) -lt 5000 ] && rc_ok "answered in $(( (t1 - t0) / 1000 )) ms" ||
    rc_fail "POST /v1/check took $(( (t1 - t0) / 1000 )) ms"
exec {HOLD}>&-
rc_stop O || rc_fail "O did not exit 0"

# A chain over delta_memory_max is not held: 503 with Retry-After.
rc_start P --filter-dir "$F" --trusted-key "$T/key.pub" --state-dir "$T/state2" \
    --delta-memory-max $((1 << 20))
rc_wait_json "$P_URL/v1/status" filter.delta.seq 4 || rc_fail "P applies the chain"
rc_curl "$P_URL/v1/delta?base=$V&after=0"
rc_expect_status 503 "over delta_memory_max: refused"
rc_expect_json error chain_unavailable "over delta_memory_max: chain_unavailable"
rc_expect_eq "$(rc_header Retry-After)" 1 "over delta_memory_max: Retry-After"
rc_curl "$P_URL/v1/check?id=a"
rc_expect_json status revoked "over delta_memory_max: checks answer"
rc_stop P || rc_fail "P did not exit 0"
rc_done
