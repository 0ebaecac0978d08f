#!/usr/bin/env bash
# tail.sh - the tail-latency target: p99 and p99.9 of single checks at a fixed offered load, against nginx
#
# Usage: BUILD=build/bench bench/tail.sh   (make bench runs it; never fails)
# Knobs (environment):
#   BENCH_DURATION=5     seconds of the wrk run that measures nginx's maximum
#   TAIL_SECONDS=20      seconds each server is measured, in all rounds
#   TAIL_ROUNDS=4        rounds the runs are split into, interleaved
#   TAIL_N=1000000       ids in the filter served
#   TAIL_CLIENTS=32      connections of the load generator
#   TAIL_RATE=           offered requests/s (default: half of nginx's
#                        measured maximum)
#   TAIL_RC_ARGS=        more revcheckd options (e.g. "--loader-nice 19")
# Method: nginx answers a fixed JSON body of a check's shape; its maximum
# is measured first (wrk -t2 -c64, as bench/run.sh does), then h2load
# (nghttp2-client, HTTP/1.1, --rps per connection) offers half of it to
# revcheckd (GET /v1/check, all ids different and absent) and to nginx in
# turn, then to revcheckd again while a new version of its filter is
# published every second (prebuilt, each with one id more, so that each
# reload reads a whole new table; `current` switched atomically, the
# daemon polls every second). The three runs are repeated in TAIL_ROUNDS
# short rounds, so that noise on a shared machine falls on all alike.
# Latencies are h2load's per-request logs (--log-file: from the
# request's start to the end of its response), all rounds of a server
# together.
# h2load sends a connection's next request only after the previous
# answer, so a stall delays the requests behind it rather than being
# counted against them (coordinated omission): both servers are measured
# the same way, and failed or non-200 requests are counted.
# Prints, as bench/run.sh does (ratio > 1: revcheck ahead):
#   tail: NAME: ours=MS peer=MS ratio=R ms (lower is better; ...) (target >=0.667x: MET|NOT MET)
# for p99 and p99.9, steady and under reloads (target: at most 1.5x
# nginx's, so ratio >= 0.667), and the failed requests (target 0).
# Numbers on a shared or loaded machine are not the product's.
. "$(dirname "$0")/env.sh"

DUR=${BENCH_DURATION:-5}
SECS=${TAIL_SECONDS:-20}
TN=${TAIL_N:-1000000}
CL=${TAIL_CLIENTS:-32}
ROUNDS=${TAIL_ROUNDS:-4}
say() { echo "tail: $*"; }
for p in h2load wrk nginx; do
	command -v "$p" >/dev/null || { say "skipped ($p missing: make deps-bench)"; exit 0; }
done

# ---------------------------------------------------------------- servers
mkdir -p "$T/ng"
NPORT=$(rc_free_port)
{
	rc_nginx_conf "$T/ng" | sed -e 's/^worker_processes 1;/worker_processes auto;/' \
	    -e 's/worker_connections 64;/worker_connections 1024;/' \
	    -e "s|access_log $T/ng/access.log;|access_log off;|"
	printf '    server {\n        listen 127.0.0.1:%s;\n' "$NPORT"
	# revcheckd keeps a connection for any number of requests; nginx's
	# default closes it after 1000, which h2load does not reopen.
	printf '        keepalive_requests 1000000000;\n'
	printf '        location = / { return 404; }\n'
	printf '        location / {\n            default_type application/json;\n'
	printf '            return 200 %s;\n        }\n    }\n}\n' \
	    "'{\"status\":\"not_revoked\",\"source\":\"filter\",\"scope\":\"default\",\"id\":\"abs-0\",\"filter_version\":1}\n'"
} >"$T/ng/nginx.conf"
rc_nginx_run "$T/ng" "$NPORT" || { say "skipped (nginx did not start: $(tail -c 300 "$T/ng/error.log"))"; exit 0; }
NG_URL="http://127.0.0.1:$NPORT"

# Versions 1..K of the same ids, built before any timing: one to serve,
# one more per second of the reload run.
case "$ROUNDS" in ''|*[!0-9]*|0) say "skipped (TAIL_ROUNDS must be a positive number)"; exit 0 ;; esac
RSECS=$(( (SECS + ROUNDS - 1) / ROUNDS ))
K=$((ROUNDS * (RSECS + 1) + 2))
"$FILTERBUILD" keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
# Distinct ids: mawk's %x stops at 32 bits (larger values all print as
# ffffffff), so the 64-bit product is printed as two 32-bit halves.
awk -v n="$TN" 'BEGIN { for (i = 1; i <= n; i++) { v = i * 2654435761; hi = int(v / 4294967296)
	printf "tok-%08x%08x\n", hi, v - hi * 4294967296 } }' >"$T/ids.txt"
[ "$(sort -u "$T/ids.txt" | wc -l)" -eq "$TN" ] || { say "skipped (the $TN ids are not distinct)"; exit 0; }
mkdir -p "$T/f" "$T/s"
# Each version revokes one id more, as real versions do: every reload
# reads, hashes and checks a whole new table.
for i in $(seq 1 "$K"); do
	echo "tok-version-$i" >"$T/extra.$i.txt"
	"$FILTERBUILD" build --key "$T/key.pem" --out "$T/f" --keep $((K + 1)) --valid-for 1d \
	    --quiet "$T/ids.txt" "$T/extra.$i.txt" >"$T/fb.log" 2>&1 ||
	    { say "skipped (filterbuild failed: $(tail -c 300 "$T/fb.log"))"; exit 0; }
done
mapfile -t VERS < <(cd "$T/f" && ls -d v[0-9]* | sort)
[ "${#VERS[@]}" -ge "$K" ] || { say "skipped (only ${#VERS[@]} of $K versions built)"; exit 0; }
rc_publish_link "$T/f" "${VERS[0]}"
rc_start R --filter-dir "$T/f" --trusted-key "$T/key.pub" --state-dir "$T/s" \
    --poll-interval 1 --log-level warn ${TAIL_RC_ARGS:-} || { say "skipped (revcheckd did not start)"; exit 0; }
rc_wait_ready "$R_URL" 60 || { say "skipped (revcheckd not ready: $(tail -c 300 "$T/R.log"))"; exit 0; }

# ---------------------------------------------------------------- nginx's maximum
cat >"$T/get.lua" <<'EOF'
local n = 0
function request()
	n = n + 1
	return wrk.format("GET", "/v1/check?id=abs-max-" .. n)
end
EOF
NG_MAX=$(timeout $((DUR + 30)) wrk -t2 -c64 -d"${DUR}s" -s "$T/get.lua" "$NG_URL" 2>&1 |
    awk '/^Requests\/sec:/ { printf "%.0f", $2 }')
[ -n "$NG_MAX" ] && [ "$NG_MAX" -gt 0 ] 2>/dev/null || { say "skipped (wrk against nginx gave no rate)"; exit 0; }
RATE=${TAIL_RATE:-$((NG_MAX / 2))}
RPC=$(( (RATE + CL - 1) / CL ))		# h2load's --rps is per connection
[ "$RPC" -ge 1 ] || RPC=1
OFFERED=$((RPC * CL))

# run TAG URL ROUND: one fixed-rate run of RSECS seconds, asking ids of
# its own; its per-request log is added to $T/log.TAG.
run() {
	awk -v n=$((OFFERED * RSECS / CL + 1000)) -v r="$3" -v t="$1" \
	    'BEGIN { printf "http://127.0.0.1:1/v1/check?id=abs-tl-%s-%s-0\n", t, r
		for (i = 1; i < n; i++) printf "/v1/check?id=abs-tl-%s-%s-%d\n", t, r, i }' >"$T/uris"
	timeout $((RSECS + 60)) h2load --h1 -t 2 -c "$CL" --rps "$RPC" -D "$RSECS" --warm-up-time 1 \
	    -i "$T/uris" -B "$2" --log-file "$T/log.$1.$3" >"$T/h2load.$1.$3" 2>&1
	cat "$T/log.$1.$3" >>"$T/log.$1"
}

# pct TAG: "p99_ms p999_ms requests failed" from the log (failed: status
# other than 200, -1 for a stream that failed).
pct() {
	awk -F'\t' '{ if ($2 == 200) print $3; else f++ } END { print "F", f + 0 > "/dev/stderr" }' \
	    "$T/log.$1" 2>"$T/fail.$1" | sort -n >"$T/lat.$1"
	awk -v f="$(awk '{ print $2 }' "$T/fail.$1")" '{ v[NR] = $1 } END {
		if (NR == 0) { print "- - 0", f; exit }
		i99 = int(NR * 0.99); if (i99 < 1) i99 = 1
		i999 = int(NR * 0.999); if (i999 < 1) i999 = 1
		printf "%.3f %.3f %d %d\n", v[i99] / 1000, v[i999] / 1000, NR + f, f }' "$T/lat.$1"
}

ratio() { awk -v o="$1" -v p="$2" 'BEGIN { if (o + 0 <= 0 || p + 0 <= 0) print "-"; else printf "%.3f", p / o }'; }
emit() {	# emit NAME OURS PEER NOTE: lower is better, target at most 1.5x the peer
	local r
	r=$(ratio "$2" "$3")
	say "$1: ours=$2 peer=$3 ratio=$r ms (lower is better; $4) (target >=0.667x: $(awk -v r="$r" 'BEGIN { print (r != "-" && r + 0 >= 0.667) ? "MET" : "NOT MET" }'))"
}

# ---------------------------------------------------------------- the runs
# TAIL_ROUNDS rounds, each revcheckd steady, nginx, then revcheckd under
# reloads for SECS/TAIL_ROUNDS seconds: a burst of noise from the rest of
# a shared machine, or one unlucky spread of connections over the
# servers' threads (each run opens its connections anew), then falls on
# all three alike instead of on whichever ran during it. Each server's
# percentiles are over its requests of all rounds together.
PUBLISHER='
import os, sys, time
d, published = sys.argv[1], sys.argv[2]
for v in sys.argv[3:]:
    time.sleep(1)
    tmp = os.path.join(d, "current.rc-tmp")
    if os.path.lexists(tmp):
        os.unlink(tmp)
    os.symlink(v, tmp)
    os.replace(tmp, os.path.join(d, "current"))
    # Renamed into place: the publisher is killed at the end of its
    # run, and a kill between open (which truncates) and write left an
    # empty file that ended the rounds early.
    with open(published + ".tmp", "w") as f:
        f.write(v + "\n")
    os.replace(published + ".tmp", published)
'
reloads0=$(curl -s "$R_URL/metrics" | awk '$1 ~ /^revcheckd_reloads_total\{result="accepted"\}/ { print $2 }')
next=1
for r in $(seq 1 "$ROUNDS"); do
	run rc "$R_URL" "$r"
	run ng "$NG_URL" "$r"
	n=$((next + RSECS + 1))
	[ "$n" -le "$K" ] || n=$K
	# One process publishes the round's versions, a second apart: a
	# subshell forking sleep, ln and mv each second costs this machine
	# more CPU than the reload it causes, and nginx's runs pay none of it.
	python3 -c "$PUBLISHER" "$T/f" "$T/published" "${VERS[@]:next:n-next}" &
	pub=$!
	run reload "$R_URL" "$r"
	kill "$pub" 2>/dev/null
	wait "$pub" 2>/dev/null
	next=$n
	# The next steady run starts once the last version published is
	# served, not while it is still being loaded.
	v=$(cat "$T/published" 2>/dev/null) && v=${v#v}
	case "$v" in
	''|*[!0-9]*) ;;
	*) rc_wait_version "$R_URL" "$((10#$v))" 10 || true ;;
	esac
done
reloads1=$(curl -s "$R_URL/metrics" | awk '$1 ~ /^revcheckd_reloads_total\{result="accepted"\}/ { print $2 }')
RELOADS=$(( ${reloads1:-0} - ${reloads0:-0} ))

read -r rc99 rc999 rcn rcf < <(pct rc)
read -r ng99 ng999 ngn ngf < <(pct ng)
read -r rl99 rl999 rln rlf < <(pct reload)
# A run under reloads with few reloads in it (the publisher failed, the
# daemon refused the versions) is not one: its rows cannot be met.
rlmin=$((ROUNDS * RSECS / 2))
rlwhy=""
if [ "$RELOADS" -lt "$rlmin" ]; then
	rlwhy="; only $RELOADS reloads accepted, fewer than $rlmin: not measured under reloads"
	rl99=-
	rl999=-
fi
note="GET /v1/check of absent ids, $TN-id filter, h2load --h1 -c$CL at $OFFERED req/s offered (half of nginx's maximum $NG_MAX req/s, wrk -t2 -c64), ${RSECS}s a run in $ROUNDS interleaved rounds"
emit p99_vs_nginx "$rc99" "$ng99" "$note; $rcn and $ngn requests, $rcf and $ngf failed"
emit p999_vs_nginx "$rc999" "$ng999" "$note"
emit reload_p99_vs_nginx "$rl99" "$ng99" "$note, a new filter version published every second ($RELOADS reloads accepted during the run); $rln requests, $rlf failed$rlwhy"
emit reload_p999_vs_nginx "$rl999" "$ng999" "the same run, p99.9$rlwhy"
say "failed_requests: ours=$((rcf + rlf)) peer=$ngf (steady and reload runs; target 0: $([ $((rcf + rlf)) = 0 ] && echo MET || echo NOT MET))"
rc_stop R
exit 0
