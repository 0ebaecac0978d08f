#!/usr/bin/env bash
# it_soak.sh - load with a reload every second (and an edge syncing): no bad status, versions never go down, flat RSS and fds
#
# An origin revcheckd serves checks from a filter directory into which a
# new version is published every second; an edge revcheckd syncs from the
# origin's /v1/filter every second and settles its positives upstream.
# Keep-alive clients load both for SOAK_SECONDS (default 30; bench/soak.sh
# runs 600). Asserted:
#   - every response is 200 with an X-Revcheck-Filter-Version that never
#     goes down per client (and matches the body's filter_version);
#   - the clients saw several versions (the reloads happened under load),
#     the origin refused none and accepted each one published;
#   - from the baseline (minute 1, or a third of the run when shorter) to
#     the end, each daemon's RSS stays within 5 % of the baseline and its
#     fd count within 4 of it.
# The load is rawhttp.py's threaded clients; SOAK_LOAD=wrk uses wrk with
# bench/soak.lua (one connection per thread) when wrk is installed.
# Under ASan the daemons run with a 16 MB quarantine (ASan's default 256
# MB would fill for minutes and read as growth).
# it-serial: loads both CPUs for SOAK_SECONDS
. "$(dirname "$0")/lib.sh"

D=$(cd "$(dirname "$0")" && pwd)
SECS=${SOAK_SECONDS:-30}
CLIENTS=${SOAK_CLIENTS:-4}
LOAD=${SOAK_LOAD:-python}
if [ "$LOAD" = wrk ] && ! command -v wrk >/dev/null; then
	echo "# wrk not installed: python load instead"
	LOAD=python
fi
BASE=$(( SECS / 3 < 60 ? SECS / 3 : 60 ))
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}:quarantine_size_mb=16"

F=$T/filters
mkdir -p "$T/so" "$T/se"
"$FILTERBUILD" keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
seq -f 'tok-%g' 1 1000 >"$T/tokens.txt"
publish() { "$FILTERBUILD" build --key "$T/key.pem" --out "$F" --keep 5 --quiet "$T/tokens.txt"; }
publish
rc_start O --filter-dir "$F" --trusted-key "$T/key.pub" --state-dir "$T/so" --poll-interval 1 \
    --token-verification revocation-only	# an unsigned token below
rc_wait_ready "$O_URL" 30 || rc_fail "origin not ready"
EDGE=0
if [ -e "$RC_SRC/svc/sync.c" ]; then
	EDGE=1
	rc_start E --trusted-key "$T/key.pub" --state-dir "$T/se" --sync-interval 1 \
	    --token-verification revocation-only --upstream-insecure-http \
	    --upstream-filter "$O_URL/v1/filter" --upstream-check "$O_URL/v1/check"
	rc_wait_ready "$E_URL" 30 || rc_fail "edge not ready"
fi

sample() {	# sample NAME PID: "seconds fds rss_kB" every second
	local t0 now
	t0=$(date +%s)
	while kill -0 "$2" 2>/dev/null && [ -e "$T/run" ]; do
		now=$(date +%s)
		echo "$((now - t0)) $(ls "/proc/$2/fd" 2>/dev/null | wc -l) $(awk '/^VmRSS:/ { print $2 }' "/proc/$2/status" 2>/dev/null)"
		sleep 1
	done >"$T/samples.$1"
}
publisher() {
	local n=0
	while [ -e "$T/run" ]; do
		publish && n=$((n + 1))
		sleep 1
	done
	echo "$n" >"$T/published"
}
JWT=$(rc_jwt "" clean-jti-7)	# not revoked: authz answers 200
load() {	# load NAME PORT
	if [ "$LOAD" = wrk ]; then
		wrk -t "$CLIENTS" -c "$CLIENTS" -d "${SECS}s" --timeout 10s \
		    -s "$RC_SRC/bench/soak.lua" "http://127.0.0.1:$2" >"$T/load.$1" 2>&1
	else
		python3 "$D/rawhttp.py" load "$2" "$SECS" "$CLIENTS" "JWT=$JWT" >"$T/load.$1"
	fi
}

touch "$T/run"
pids=()
sample O "$O_PID" & pids+=($!)
[ "$EDGE" = 0 ] || { sample E "$E_PID" & pids+=($!); }
publisher & pub=$!
load O "$O_PORT" & lo=$!
if [ "$EDGE" = 1 ]; then load E "$E_PORT" & le=$!; fi
wait "$lo"
[ "$EDGE" = 0 ] || wait "$le"
rm -f "$T/run"
wait "$pub" "${pids[@]}"

check_load() {	# check_load NAME
	local f=$T/load.$1 out
	if [ "$LOAD" = wrk ]; then
		out=$(grep '^SOAK ' "$f" || true)
		echo "# $1 (wrk): $out"
		rc_expect_match "$out" 'bad=0 down=0 nover=0 ' "$1: every response 200 with a version that never went down"
		rc_expect_match "$out" 'errors=0$' "$1: no socket errors or timeouts"
		rc_expect_match "$out" 'requests=[1-9]' "$1: the load ran"
		return
	fi
	out=$(cat "$f")
	echo "# $1: $out"
	RC_BODY_FILE=$f
	rc_expect_match "$(rc_json statuses)" '^\{"200": [0-9]+\}$' "$1: every response was 200 with a version"
	rc_expect_json version_down "[]" "$1: no client saw the filter version go down"
	rc_expect_json unexpected "[]" "$1: no unexpected answer"
	rc_expect_match "$(rc_json requests)" '^[1-9][0-9]*$' "$1: the load ran"
	local seen
	seen=$(rc_json versions_seen)
	[ "$seen" -ge $(( SECS / 4 )) ] && rc_ok "$1: $seen versions seen under load" ||
	    rc_fail "$1: only $seen versions seen under load (want >= $(( SECS / 4 )))"
}
check_flat() {	# check_flat NAME: RSS within 5 % (10 % under ASan), fds within 4, baseline to end
	awk -v base="$BASE" -v name="$1" '
	    $1 >= base && b_rss == "" { b_t = $1; b_fd = $2; b_rss = $3 }
	    $1 >= base { if ($3 > m_rss) m_rss = $3; if ($2 > m_fd) m_fd = $2; e_fd = $2; e_rss = $3; e_t = $1 }
	    END { printf "%s %s %s %s %s %s %s %s\n", b_t, b_fd, b_rss, e_t, e_fd, e_rss, m_fd, m_rss }' \
	    "$T/samples.$1" >"$T/flat.$1"
	read -r bt bfd brss et efd erss mfd mrss <"$T/flat.$1"
	echo "# $1: baseline t=${bt}s fds=$bfd rss=${brss}kB; end t=${et}s fds=$efd rss=${erss}kB; max fds=$mfd rss=${mrss}kB"
	if [ -z "$brss" ] || [ -z "$mrss" ]; then
		rc_fail "$1: no RSS samples after ${BASE}s"
		return
	fi
	# Under ASan freed memory sits in the allocator's quarantine until it
	# is full, so RSS climbs for a while without a leak (LSan checks leaks
	# at exit): 10 % there, 5 % for the plain build.
	local pct=5
	ldd "$REVCHECKD" 2>/dev/null | grep -q libasan && pct=10
	[ "$mrss" -le $(( brss * (100 + pct) / 100 )) ] && rc_ok "$1: RSS within $pct % of the baseline (max $mrss vs $brss kB)" ||
	    rc_fail "$1: RSS grew over $pct %: $brss -> max $mrss kB"
	[ "$mfd" -le $(( bfd + 4 )) ] && rc_ok "$1: fd count flat (max $mfd vs $bfd)" ||
	    rc_fail "$1: fd count grew: $bfd -> max $mfd"
}
check_load O
check_flat O
published=$(cat "$T/published")
rc_curl "$O_URL/v1/status"
rc_expect_json reloads.refused 0 "origin refused no reload"
[ "$(rc_json reloads.accepted)" -ge "$published" ] && rc_ok "origin accepted every one of the $published versions published" ||
    rc_fail "origin accepted $(rc_json reloads.accepted) of $published published versions"
ov=$(rc_json filter.version)
if [ "$EDGE" = 1 ]; then
	check_load E
	check_flat E
	rc_curl "$E_URL/v1/status"
	ev=$(rc_json filter.version)
	[ "$ev" -ge $((ov - 3)) ] && rc_ok "the edge kept up (version $ev, origin $ov)" ||
	    rc_fail "the edge fell behind: version $ev, origin $ov"
	rc_stop E && rc_ok "edge SIGTERM: exit 0" || rc_fail "edge SIGTERM: non-zero exit"
else
	echo "# no svc/sync.c: no edge in this soak"
fi
rc_stop O && rc_ok "origin SIGTERM: exit 0" || rc_fail "origin SIGTERM: non-zero exit"
for n in O E; do
	[ -e "$T/$n.log" ] || continue
	if grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$T/$n.log"; then
		rc_fail "$n: sanitizer report in the daemon's stderr"
		grep -E -A10 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$T/$n.log" | head -n 30 >&2
	fi
done
echo "# soak: ${SECS}s, $LOAD load, $CLIENTS clients per daemon, $published versions published (origin at $ov)"
rc_done
