#!/usr/bin/env bash
# ocsp.sh - the OCSP targets: revcheckd's /ocsp against openssl ocsp and CFSSL ocspserve, and its signing rate against openssl speed
#
# Usage: BUILD=build/bench bench/ocsp.sh   (make bench runs it; never fails)
# Knobs (environment):
#   OCSP_SECONDS=3    seconds per wrk run
#   OCSP_ROUNDS=3     interleaved rounds; each server keeps its best run
#   OCSP_SERIALS=100  distinct serials in the repeated mix
#   OCSP_KEYS="p256 rsa2048"  the responder key types to run, in order
#   OCSP_ROWS=        a file to append one row a line to (tab-separated
#                     KEY=VALUE / KEY:=NUMBER fields, bench/run.sh's
#                     add_row arguments); bench/run.sh sets it
# Method: a CA, a delegated responder (EC P-256, OCSPSigning, ocsp-nocheck)
# and a CRL made by tests/responder-pki.sh with the openssl CLI, and a
# second delegated responder of the same CA with the same extensions and
# an RSA-2048 key; the filter is built from the CRL and revcheckd serves it
# with the "ocsp" block. Every row below runs twice, once per responder
# key (KT: p256, then rsa2048; OCSP_KEYS="p256 rsa2048" chooses), every
# server signing with that key, and the row's name ends in _KT. The
# request mix is the same for every server: wrk (bench/ocsp.lua) POSTs DER OCSP requests without nonce (application/ocsp-request), one
# CertID with SHA-1 hashes each. Repeated serials: OCSP_SERIALS serials
# asked over and over (wrk -t2 -c32, all on the same 2 CPUs as the
# servers), against `openssl ocsp -index index.txt -port P -rsigner R
# -rkey K -CA CA -ndays 1` (the CA tool's responder: one process, a
# signature per answer; its index lists the same serials) and against CFSSL
# `ocspserve -responses FILE` serving those serials' answers, pre-signed
# (fetched from the openssl responder first). CFSSL 1.2.0 cannot decode
# its GET form (it keeps the path's leading '/'), so every server gets
# POST. Unique serials: every request asks a serial never asked before, so
# each answer costs revcheckd one signature (its cache cannot help);
# revcheckd with one HTTP worker thread (--threads 1) pinned to CPU 0 with
# taskset, wrk (-t1) pinned to CPU 1, against `openssl speed -seconds 3
# -elapsed ecdsap256` (or rsa2048) sign/s (wall time, as wrk measures),
# one process pinned to CPU 0: one signing core each.
# Every answer's form is checked before the runs with the openssl ocsp
# client (status good, signature verified against the CA); non-2xx answers
# or socket errors void a run. p99 is wrk's (--latency), printed beside
# each rate.
# Printed as bench/run.sh does (ratio > 1: revcheck ahead), for KT p256 and rsa2048:
#   ocsp: repeated_vs_openssl_ocsp_KT: ours=RPS peer=RPS ratio=R req/s (...) target >=20x: MET|NOT MET
#   ocsp: repeated_vs_cfssl_ocspserve_KT: ... target >=2x: MET|NOT MET
#   ocsp: unique_vs_openssl_speed_sign_KT: ours=RPS peer=SIGNS ratio=R req/s (...) target >=0.8x: MET|NOT MET
#   ocsp: unique_cpu_vs_openssl_speed_sign_KT: ... per CPU second (...)   (no target: the
#     same runs by CPU time, good answers per second of revcheckd's CPU
#     against signatures per second of openssl speed's user time)
# Numbers on a shared or loaded machine are not the product's.
. "$(dirname "$0")/env.sh"

SECS=${OCSP_SECONDS:-3}
ROUNDS=${OCSP_ROUNDS:-3}
K=${OCSP_SERIALS:-100}
ROWS_OUT=${OCSP_ROWS:-}
REP=0x10000000		# the repeated serials: REP .. REP + K - 1
UNI0=0x20000000		# the unique ones: UNI0 and up for p256, UNI0 * 2 up for rsa2048
KEYS=${OCSP_KEYS:-p256 rsa2048}
say() { echo "ocsp: $*"; }
have() { command -v "$1" >/dev/null 2>&1; }
# row FIELDS...: one row for bench/run.sh's results.json.
row() {
	[ -n "$ROWS_OUT" ] || return 0
	local IFS=$'\t'
	printf '%s\n' "$*" >>"$ROWS_OUT"
}
skip() { say "$1: skipped ($2)"; row "name=ocsp: $1" "skipped=$2"; }
# emit NAME OURS PEER UNIT TARGET NOTE [P99_OURS P99_PEER]: higher is
# better; TARGET "-" for none (a row printed for context).
emit() {
	local r v=none t p99=
	r=$(awk -v o="$2" -v p="$3" 'BEGIN { if (o + 0 <= 0 || p + 0 <= 0) print "-"; else printf "%.3f", o / p }')
	if [ "$5" != - ]; then
		v="target >=${5}x: $(awk -v r="$r" -v t="$5" 'BEGIN { print (r != "-" && r + 0 >= t) ? "MET" : "NOT MET" }')"
	fi
	[ $# -lt 7 ] || p99="; p99 ${7:--} ms against ${8:--} ms"
	t=" $v"
	[ "$v" != none ] || t=
	say "$1: ours=$2 peer=$3 ratio=$r $4 (higher is better; $6$p99)$t"
	row "name=ocsp: $1" "ours:=$2" "peer:=$3" "ratio:=$r" "unit=$4" better=higher \
	    "target:=$5" "verdict=$v" "note=$6" "p99_ours_ms:=${7:-}" "p99_peer_ms:=${8:-}"
}

for p in wrk openssl python3 taskset; do
	have "$p" || { skip all "$p missing: make deps-bench"; exit 0; }
done

# ---------------------------------------------------------------- PKI, filter, requests
P=$T/pki
bash "$ROOT/tests/responder-pki.sh" "$P" "$K" >"$T/pki.log" 2>&1 ||
    { skip all "tests/responder-pki.sh failed: $(tail -c 300 "$T/pki.log")"; exit 0; }
"$FILTERBUILD" keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null &&
    "$FILTERBUILD" build --key "$T/key.pem" --out "$T/f" --valid-for 1d --quiet \
	--issuer "$P/ca.pem" "$P/crl.pem" >"$T/fb.log" 2>&1 ||
    { skip all "filterbuild failed: $(tail -c 300 "$T/fb.log")"; exit 0; }
# The RSA-2048 responder: the same CA, the same extensions as responder.pem.
(cd "$P" && (umask 077 && openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 \
	-out responder-rsa.key) &&
    openssl req -new -key responder-rsa.key -out responder-rsa.csr \
	-subj "/O=revcheck OCSP test/CN=revcheck OCSP responder RSA" &&
    openssl x509 -req -in responder-rsa.csr -CA ca.pem -CAkey ca.key -set_serial 0x0F01 \
	-days 30 -sha256 -extfile ext.cnf -extensions responder -out responder-rsa.pem) \
    >"$T/pki-rsa.log" 2>&1 ||
    { skip all "the RSA responder: $(tail -c 300 "$T/pki-rsa.log")"; exit 0; }
TPL_REP=$(python3 "$ROOT/bench/ocspreq.py" template "$P/ca.pem" "$REP") ||
    { skip all "bench/ocspreq.py failed (python3-cryptography)"; exit 0; }
mkdir -p "$T/s"

# answer_ok URL SERIAL: the openssl ocsp client asks URL (POST) and
# verifies the answer against the CA: good, signature OK.
answer_ok() {
	local out
	out=$(timeout 20 openssl ocsp -issuer "$P/ca.pem" -serial "$2" -url "$1" \
	    -CAfile "$P/ca.pem" -no_nonce 2>&1)
	[[ $out == *"Response verify OK"* && $out == *"$2: good"* ]] ||
	    { echo "${out:0:300}" | tr '\n' ' '; return 1; }
}

# run URL TEMPLATE MODE THREADS [taskset CPU]: one wrk run; prints
# "RPS P99_MS" (RPS 0 when any answer was not 2xx or a socket failed).
run() {
	local out pin=()
	[ -n "${5:-}" ] && pin=(taskset -c "$5")
	out=$(timeout $((SECS + 30)) "${pin[@]}" wrk -t"$4" -c32 -d"${SECS}s" --latency \
	    -s "$ROOT/bench/ocsp.lua" "$1" -- "$2" "$4" "$3" "$K" 2>&1)
	echo "$out" >>"$T/wrk.log"
	echo "$out" | awk '
	function ms(v) {
		if (v ~ /us$/) return substr(v, 1, length(v) - 2) / 1000
		if (v ~ /ms$/) return substr(v, 1, length(v) - 2) + 0
		if (v ~ /s$/) return substr(v, 1, length(v) - 1) * 1000
		return v + 0 }
	/^Requests\/sec:/ { rps = $2 }
	$1 == "99%" { p99 = ms($2) }
	/Non-2xx or 3xx responses:/ { bad = 1 }
	/Socket errors:/ { gsub(/,/, ""); if ($4 + $6 + $8 + $10 > 0) bad = 1 }
	END { printf "%.0f %.3f\n", bad ? 0 : rps, p99 }'
}
metric() {	# metric NAME_PART URL: the sum of the samples whose name has NAME_PART
	curl -s --max-time 10 "$2/metrics" | awk -v n="$1" '$1 !~ /^#/ && index($1, n) { s += $2 } END { print s + 0 }'
}

# ---------------------------------------------------------------- one key type
# bench_key KT: every row for the responder key KT (p256 or rsa2048);
# returns 0 always (a row it cannot run is printed skipped).
bench_key() {
KT=$1
case $KT in
p256) RCERT=$P/responder.pem RKEY=$P/responder.key SPEED=ecdsap256 UNI=$UNI0
	SPEED_ROW='/ecdsa \(nistp256\)/' ;;
rsa2048) RCERT=$P/responder-rsa.pem RKEY=$P/responder-rsa.key SPEED=rsa2048 UNI=$((UNI0 * 2))
	SPEED_ROW='/^rsa 2048 bits/' ;;
*) skip "all_$KT" "unknown key type (p256, rsa2048)"; return 0 ;;
esac
unset BEST_rc BEST_os BEST_cf P99_rc P99_os P99_cf BEST_u P99_u CF_PID CF_URL
TPL_UNI=$(python3 "$ROOT/bench/ocspreq.py" template "$P/ca.pem" "$UNI") ||
    { skip "all_$KT" "bench/ocspreq.py failed"; return 0; }
cat >"$T/rc.json" <<EOF
{"filter_dir": "$T/f", "trusted_key": "$T/key.pub", "state_dir": "$T/s",
 "ocsp": {"path": "/ocsp", "responders": [{"issuer": "$P/ca.pem",
   "cert": "$RCERT", "key": "$RKEY"}]}}
EOF
# ---------------------------------------------------------------- the servers
rc_start R -c "$T/rc.json" --log-level warn || { skip "all_$KT" "revcheckd did not start: $(tail -c 300 "$T/R.log")"; return 0; }
rc_wait_ready "$R_URL" 60 || { skip "all_$KT" "revcheckd not ready: $(tail -c 300 "$T/R.log")"; return 0; }
RC_OCSP=$R_URL/ocsp
why=$(answer_ok "$RC_OCSP" "$REP") ||
    { skip "all_$KT" "revcheckd's /ocsp did not answer good: $why"; return 0; }

# os_start: a fresh `openssl ocsp` responder (sets OS_PID, OS_URL); 1 when
# it does not answer good. Each run gets its own: at the end of a run wrk
# closes connections the one-process responder has accepted but not read,
# and OpenSSL 3.0's responder then spins on the closed socket for good.
os_start() {
	local port i
	port=$(rc_free_port)
	openssl ocsp -index "$P/index.txt" -port "$port" -rsigner "$RCERT" \
	    -rkey "$RKEY" -CA "$P/ca.pem" -ndays 1 -ignore_err \
	    >>"$T/openssl-ocsp.log" 2>&1 &
	OS_PID=$!
	rc_stop_at_exit "$OS_PID"
	OS_URL=http://127.0.0.1:$port/
	for ((i = 0; i < 100; i++)); do
		OS_WHY=$(answer_ok "$OS_URL" "$REP") && return 0
		kill -0 "$OS_PID" 2>/dev/null || break
		sleep 0.1
	done
	OS_WHY="openssl ocsp did not answer good: $OS_WHY $(tail -c 200 "$T/openssl-ocsp.log")"
	return 1
}
os_start || { skip "all_$KT" "$OS_WHY"; return 0; }

CF_URL=
if ! have cfssl; then
	CF_WHY="cfssl missing (Debian golang-cfssl: make deps-bench)"
elif ! python3 "$ROOT/bench/ocspreq.py" fetch "$OS_URL" "$P/ca.pem" "$REP" "$K" \
    "$T/responses.b64" >"$T/fetch.log" 2>&1; then
	CF_WHY="could not fetch pre-signed answers: $(tail -c 200 "$T/fetch.log")"
else
	CF_PORT=$(rc_free_port)
	cfssl ocspserve -address 127.0.0.1 -port "$CF_PORT" -responses "$T/responses.b64" \
	    -loglevel 3 >"$T/cfssl.log" 2>&1 &
	CF_PID=$!
	rc_stop_at_exit "$CF_PID"
	for ((i = 0; i < 100; i++)); do
		CF_WHY=$(answer_ok "http://127.0.0.1:$CF_PORT/" "$REP") && break
		kill -0 "$CF_PID" 2>/dev/null || break
		sleep 0.1
	done
	if [ -z "$CF_WHY" ]; then
		CF_URL=http://127.0.0.1:$CF_PORT/
	else
		CF_WHY="cfssl ocspserve did not answer good: $CF_WHY $(tail -c 200 "$T/cfssl.log")"
	fi
fi
rc_stop_pid "$OS_PID"

# ---------------------------------------------------------------- repeated serials, interleaved
# best NAME RPS P99: keeps the run with the highest rate of NAME.
best() {
	local r
	eval "r=\${BEST_$1:-}"
	if [ -z "$r" ] || awk -v a="$2" -v b="$r" 'BEGIN { exit !(a + 0 > b + 0) }'; then
		eval "BEST_$1=\$2 P99_$1=\$3"
	fi
}
sig0=$(metric ocsp_signatures_total "$R_URL")
for r in $(seq 1 "$ROUNDS"); do
	read -r rps p99 < <(run "$RC_OCSP" "$TPL_REP" repeat 2)
	best rc "$rps" "$p99"
	rps2=0 p992=
	if os_start; then
		read -r rps2 p992 < <(run "$OS_URL" "$TPL_REP" repeat 2)
		rc_stop_pid "$OS_PID"
	fi
	best os "$rps2" "$p992"
	line="round $r: revcheckd $rps req/s (p99 $p99 ms), openssl ocsp $rps2 ($p992)"
	if [ -n "$CF_URL" ]; then
		read -r rps3 p993 < <(run "$CF_URL" "$TPL_REP" repeat 2)
		best cf "$rps3" "$p993"
		line="$line, cfssl ocspserve $rps3 ($p993)"
	fi
	echo "# $line" >&2
done
sig1=$(metric ocsp_signatures_total "$R_URL")
note="POST of $K serials over and over, no nonce, wrk -t2 -c32 -d${SECS}s, best of $ROUNDS interleaved rounds; revcheckd made $((sig1 - sig0)) signatures in its runs"
emit repeated_vs_openssl_ocsp_$KT "${BEST_rc:-0}" "${BEST_os:-0}" req/s 20 \
    "$note; openssl ocsp -index: one process, a signature per answer" "${P99_rc:-}" "${P99_os:-}"
if [ -n "$CF_URL" ]; then
	emit repeated_vs_cfssl_ocspserve_$KT "${BEST_rc:-0}" "${BEST_cf:-0}" req/s 2 \
	    "$note; CFSSL ocspserve serving the $K answers pre-signed" "${P99_rc:-}" "${P99_cf:-}"
else
	skip repeated_vs_cfssl_ocspserve_$KT "$CF_WHY"
fi
rc_stop R
[ -n "${CF_PID:-}" ] && rc_stop_pid "$CF_PID"

# ---------------------------------------------------------------- unique serials: a signature each
if [ "$(nproc)" -lt 2 ]; then
	skip unique_vs_openssl_speed_sign_$KT "needs 2 CPUs (revcheckd and wrk pinned apart)"
	return 0
fi
# start_pinned: revcheckd with one HTTP worker thread, all its threads on
# CPU 0; sets U_URL, U_PID.
start_pinned() {
	local port
	port=$(rc_free_port)
	taskset -c 0 "$REVCHECKD" --listen "127.0.0.1:$port" -c "$T/rc.json" --threads 1 \
	    --log-level warn >>"$T/U.log" 2>&1 &
	U_PID=$!
	rc_stop_at_exit "$U_PID"
	U_URL=http://127.0.0.1:$port
	rc_wait_ready "$U_URL" 60
}
start_pinned || { skip unique_vs_openssl_speed_sign_$KT "revcheckd (pinned, 1 thread) not ready: $(tail -c 300 "$T/U.log")"; return 0; }
speed_sign() {	# sign/s of one openssl process on CPU 0
	taskset -c 0 openssl speed -elapsed -seconds 3 "$SPEED" 2>/dev/null |
	    awk "$SPEED_ROW"' { v = $(NF - 1) } END { printf "%.0f", v }'
}
# CPU time (user and system) of all revcheckd's threads, in clock ticks.
ticks() { awk '{ print $14 + $15 }' "/proc/$U_PID/stat" 2>/dev/null; }
BEST_u= P99_u= BEST_sp=0
c0=$(ticks)
s0=$(metric ocsp_signatures_total "$U_URL")
n0=$(metric 'ocsp_responses_total{status="good"}' "$U_URL")
for r in $(seq 1 "$ROUNDS"); do
	read -r rps p99 < <(run "$U_URL/ocsp" "$TPL_UNI" unique 1 1)
	best u "$rps" "$p99"
	sp=$(speed_sign)
	awk -v a="$sp" -v b="$BEST_sp" 'BEGIN { exit !(a + 0 > b + 0) }' && BEST_sp=$sp
	echo "# round $r: revcheckd unique serials $rps req/s (p99 $p99 ms), openssl speed $SPEED sign $sp/s" >&2
	# Serials continue where the last run stopped: never asked twice.
	TPL_UNI=$(python3 "$ROOT/bench/ocspreq.py" template "$P/ca.pem" \
	    $((UNI + 16#01000000 * r)))
done
s1=$(metric ocsp_signatures_total "$U_URL")
n1=$(metric 'ocsp_responses_total{status="good"}' "$U_URL")
c1=$(ticks)
emit unique_vs_openssl_speed_sign_$KT "$BEST_u" "$BEST_sp" "req/s vs sign/s" 0.8 \
    "every request a serial never asked before (good, from the filter), POST, no nonce, revcheckd --threads 1 on CPU 0, wrk -t1 -c32 -d${SECS}s on CPU 1, best of $ROUNDS rounds; against openssl speed -elapsed -seconds 3 $SPEED (sign/s of wall time, one process on CPU 0): one core each; $((s1 - s0)) signatures for $((n1 - n0)) good answers" \
    "$P99_u" ""
# The same runs by CPU time, which a neighbour's load on a shared machine
# moves less: good answers per second of revcheckd's CPU time against
# openssl speed's signatures per second of user time (its default).
cpu_sign=$(taskset -c 0 openssl speed -seconds 3 "$SPEED" 2>/dev/null |
    awk "$SPEED_ROW"' { v = $(NF - 1) } END { printf "%.0f", v }')
cpu_ans=$(awk -v n=$((n1 - n0)) -v t=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" \
    'BEGIN { if (t > 0) printf "%.0f", n * hz / t }')
emit unique_cpu_vs_openssl_speed_sign_$KT "$cpu_ans" "$cpu_sign" "per CPU second" - \
    "the unique-serial runs above: $((n1 - n0)) good answers in $((c1 - c0)) ticks of revcheckd's CPU time (all threads, user and system, HTTP included) against openssl speed -seconds 3 $SPEED sign/s of user time on CPU 0"
rc_stop_pid "$U_PID"
}

for kt in $KEYS; do
	bench_key "$kt"
done
exit 0
