#!/usr/bin/env bash
# it_limits.sh - resource limits: slowloris dropped, per-IP cap, early 413, flat fds and RSS
#
# revcheckd runs with --conn-timeout 2 --max-conns-per-ip 4 --max-body 65536.
#   - slowloris: clients from 127.0.0.3 that send part of the headers and
#     then nothing are dropped within the timeout (+1.5 s), while normal
#     requests from 127.0.0.1 keep succeeding (each well under a generous
#     2 s bound); a client trickling one header byte every 0.5 s is
#     dropped as well (libmicrohttpd's timeout is idle-only; revcheckd
#     adds a header deadline);
#   - per IP: with 4 connections held from 127.0.0.1 the 5th is refused,
#     while 127.0.0.2 is served; after release 127.0.0.1 is served again;
#   - bodies: a Content-Length over the cap gets 413 after 1 KB of the
#     100 MB announced; a chunked body over the cap stops being read after
#     a bounded amount (413 or hang-up), never the whole 100 MB;
#   - fd count (/proc/PID/fd) and RSS (VmRSS) after each of several rounds
#     of all of the above stay flat: fds within +2 of round 1, RSS within
#     10 % + 4 MB (ASan's quarantine) of round 1.
# it-serial: asserts no request takes over 2 s, and flat RSS
. "$(dirname "$0")/lib.sh"

D=$(cd "$(dirname "$0")" && pwd)
RAW() { python3 "$D/rawhttp.py" "$@"; }
TIMEOUT=2
PERIP=4
CAP=65536
ROUNDS=${LIMIT_ROUNDS:-4}
KNOWN_TRICKLE=${KNOWN_TRICKLE:-0}

"$FILTERBUILD" keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
printf 'tok-1\ntok-2\n' >"$T/tokens.txt"
"$FILTERBUILD" build --key "$T/key.pem" --out "$T/f" --quiet "$T/tokens.txt"
mkdir -p "$T/state"
rc_start L --filter-dir "$T/f" --trusted-key "$T/key.pub" --state-dir "$T/state" \
    --conn-timeout "$TIMEOUT" --max-conns-per-ip "$PERIP" --max-body "$CAP" --threads 2
rc_wait_ready "$L_URL" 30 || rc_fail "no filter loaded"

fds() { ls "/proc/$L_PID/fd" | wc -l; }
rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$L_PID/status"; }

# ---------------------------------------------------------------- slowloris
slowloris_round() {	# $1: round number; asserts only in round 1 (timings)
	local r=$1 i t ok=0 slow=0 bad=0 pids=()
	for i in 1 2 3; do
		RAW idle "$L_PORT" 10 'GET /v1/check?id=tok-1 HTTP/1.1\r\nHost: x\r\nX-Slow: ' 127.0.0.3 >"$T/idle.$i" &
		pids+=($!)
	done
	# Normal requests from 127.0.0.1 while the three hang.
	for i in $(seq 1 10); do
		t=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 5 "$L_URL/v1/check?id=tok-$i")
		case "$t" in
		200\ *) ok=$((ok + 1))
			awk -v t="${t#* }" 'BEGIN { exit !(t > 2.0) }' && slow=$((slow + 1)) ;;
		*) bad=$((bad + 1)) ;;
		esac
		sleep 0.1
	done
	wait "${pids[@]}"	# not a bare wait: the daemon is a child too
	if [ "$r" = 1 ]; then
		rc_expect_eq "$ok" 10 "normal requests succeed while slowloris clients hang"
		rc_expect_eq "$slow" 0 "no normal request took over 2 s"
		for i in 1 2 3; do
			t=$(cat "$T/idle.$i")
			if [ "$t" != alive ] && awk -v t="$t" -v m="$TIMEOUT" 'BEGIN { exit !(t <= m + 1.5) }'; then
				rc_ok "stalled client $i dropped after $t s"
			else
				rc_fail "stalled client $i not dropped within ${TIMEOUT}+1.5 s: $t"
			fi
		done
	fi
}

# ---------------------------------------------------------------- per IP
perip_round() {
	local r=$1 out want
	out=$(RAW perip "$L_PORT" "$PERIP" 127.0.0.2)
	want='{"after_release": 200, "held_open": '"$PERIP"', "other_addr": 200, "over_limit": "closed"}'
	rc_expect_eq "$out" "$want" "round $r: connection $((PERIP + 1)) from one IP refused, another IP served"
}

# ---------------------------------------------------------------- bodies
body_round() {
	local r=$1 out sent
	out=$(RAW bigbody "$L_PORT" 100000000 1024 /v1/check)
	rc_expect_eq "$out" '{"status": 413, "error": "payload_too_large"}' \
	    "round $r: 413 after 1 KB of a 100 MB Content-Length"
	out=$(RAW bigchunk "$L_PORT" 100000000 /v1/check)
	sent=$(printf '%s' "$out" | sed -n 's/.*"sent": \([0-9]*\).*/\1/p')
	if printf '%s' "$out" | grep -Eq '"status": (413|"closed")' && [ "${sent:-0}" -lt 16000000 ]; then
		rc_ok "round $r: chunked body over the cap cut off after $sent bytes ($out)"
	else
		rc_fail "round $r: chunked body over the cap not cut off: $out"
	fi
}

load_round() {	# 200 keep-alive requests through one curl
	local urls=() i
	for i in $(seq 1 200); do urls+=("$L_URL/v1/check?id=tok-$((i % 5))"); done
	curl -s -o /dev/null -w '%{http_code}\n' "${urls[@]}" | sort | uniq -c | tr -s ' ' >"$T/load"
	rc_expect_match "$(cat "$T/load")" '^ ?200 200$' "round $1: 200 keep-alive requests all 200"
}

FD=() RSS=()
for r in $(seq 1 "$ROUNDS"); do
	slowloris_round "$r"
	perip_round "$r"
	body_round "$r"
	load_round "$r"
	# Until the daemon holds none of the round's connections (open, or
	# closed by the client only), 10 s at most.
	for _ in $(seq 1 100); do
		[ -z "$(ss -Htn state established state close-wait "( sport = :$L_PORT )")" ] && break
		sleep 0.1
	done
	FD+=("$(fds)")
	RSS+=("$(rss)")
done
echo "# fds per round: ${FD[*]}; VmRSS kB per round: ${RSS[*]}"
[ "${FD[-1]}" -le $((FD[0] + 2)) ] && rc_ok "fd count flat (${FD[0]} -> ${FD[-1]})" ||
    rc_fail "fd count grew: ${FD[*]}"
[ "${RSS[-1]}" -le $((RSS[0] * 110 / 100 + 4096)) ] && rc_ok "RSS flat (${RSS[0]} -> ${RSS[-1]} kB)" ||
    rc_fail "RSS grew beyond 10 % + 4 MB: ${RSS[*]} kB"

# ---------------------------------------------------------------- trickle
# One header byte every 0.5 s resets an idle timer forever; the contract
# is a drop within the connection timeout.
t=$(RAW trickle "$L_PORT" 0.5 $((TIMEOUT * 3)) 127.0.0.3)
if [ "$t" != alive ] && awk -v t="$t" -v m="$TIMEOUT" 'BEGIN { exit !(t <= m + 1.5) }'; then
	[ "$KNOWN_TRICKLE" = 1 ] && echo "XPASS trickling slowloris now dropped after $t s: set KNOWN_TRICKLE=0"
	rc_ok "trickling slowloris dropped after $t s"
elif [ "$KNOWN_TRICKLE" = 1 ]; then
	echo "XFAIL trickling slowloris (one byte every 0.5 s) still connected after $((TIMEOUT * 3)) s ($t): known bug, idle-only timeout"
else
	rc_fail "trickling slowloris not dropped within ${TIMEOUT}+1.5 s: $t"
fi
rc_curl "$L_URL/healthz"; rc_expect_status 200 "healthz at the end"
rc_stop L && rc_ok "SIGTERM: exit 0" || rc_fail "SIGTERM: non-zero exit"
if grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$T/L.log"; then
	rc_fail "sanitizer report in the daemon's stderr"
	grep -E -A10 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$T/L.log" | head -n 30 >&2
fi
rc_done
