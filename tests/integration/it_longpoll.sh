#!/usr/bin/env bash
# it_longpoll.sh - held /v1/delta?wait= requests: none answered before a change, all at once by one, idle ones after the wait, at most longpoll_max; edges pushed to, through restarts of either side
#
# A real chain (filterbuild follow on PostgreSQL, heads re-signed only
# every 30 minutes, so that nothing but a revocation changes the chain)
# served by an origin O holding at most 6 requests for at most 4 s. Five
# curls wait on O for what follows the chain in service: none is
# answered while nothing changes (revcheckd_longpoll_waiting says 5), one
# revocation answers all five within moments, with the new delta's
# sequence. An idle one returns after the wait (304, its head unchanged);
# past the cap one is answered at once. Then an edge E (sync_interval 60 s,
# so that only a push can bring a change in time) and an edge E2 below
# E: a revocation reaches both within seconds, and again after O
# restarts on its port and after E restarts. Last, a delta in service
# with no head after it yet is what a head-only long-poll answers.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg.sh"

F=$T/filters
"$FILTERBUILD" keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
rc_pg_start
psql -X -q -v ON_ERROR_STOP=1 -f "$RC_SRC/config/postgresql-schema.sql" "$PG_URL"
rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('a')"
rc_follow_start "$F" --interval 200ms --valid-for 1h --head-every 30m
for _ in $(seq 1 150); do [ -e "$F/current" ] && break; sleep 0.2; done
V1=$(readlink "$F/current" | sed 's/^v0*//')

mkdir -p "$T/so" "$T/se" "$T/se2"
origin() {	# origin [rc_start args]: O on its port (the same after a restart)
	rc_start O "$@" --filter-dir "$F" --trusted-key "$T/key.pub" \
	    --state-dir "$T/so" --longpoll-max 6 --longpoll-wait-max 4
}
origin
rc_wait_version "$O_URL" "$V1" || rc_fail "origin serves the base"

# metric NAME: its value in O's /metrics.
metric() {
	rc_curl "$O_URL/metrics"
	awk -v n="$1" '$1 == n { print $2 }' <<<"$RC_BODY"
}
# wait_metric NAME VALUE: until O's NAME is VALUE (20 s).
wait_metric() {
	local i
	for ((i = 0; i < 200; i++)); do
		[ "$(metric "$1")" = "$2" ] && return 0
		sleep 0.1
	done
	echo "# $1 is $(metric "$1"), want $2" >&2
	return 1
}
# A first delta: a chain in service, with a head.
rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('tok-lp0')"
rc_wait_json "$O_URL/v1/check?id=tok-lp0" status revoked 30 ||
    rc_fail "origin: the first delta applied"
# The head in service, its ETag and sequence.
rc_curl "$O_URL/v1/delta?base=$V1&after=0&head_only=1"
rc_expect_status 200 "head alone"
ETAG=$(rc_header ETag)
SEQ=$(rc_header X-Revcheck-Delta-Seq)
[ -n "$ETAG" ] && [ -n "$SEQ" ] || rc_fail "head: ETag and seq"
LP="$O_URL/v1/delta?base=$V1&after=$SEQ&wait=30&head_only=1"

# ------------------------------------------------ held until a change
for i in 1 2 3 4 5; do
	curl -s -o "$T/lp$i.body" -D "$T/lp$i.hdr" --max-time 20 \
	    -w '%{http_code} %{time_total}\n' -H "If-None-Match: $ETAG" \
	    "$LP" >"$T/lp$i.out" &
done
wait_metric revcheckd_longpoll_waiting 5 || rc_fail "five requests held"
n=0
for i in 1 2 3 4 5; do [ -s "$T/lp$i.out" ] && n=$((n + 1)); done
rc_expect_eq "$n" 0 "none answered before a change"
t0=$(date +%s.%N)
rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('tok-lp1')"
for _ in $(seq 1 100); do
	n=0
	for i in 1 2 3 4 5; do [ -s "$T/lp$i.out" ] && n=$((n + 1)); done
	[ "$n" = 5 ] && break
	sleep 0.1
done
t1=$(date +%s.%N)
rc_expect_eq "$n" 5 "one change answers all five"
for i in 1 2 3 4 5; do
	read -r code _ <"$T/lp$i.out" || code=none
	rc_expect_eq "$code" 200 "held request $i: 200"
	seq=$(awk -F': ' 'tolower($1) == "x-revcheck-delta-seq" { print $2 }' \
	    "$T/lp$i.hdr" | tr -d '\r')
	[ "${seq:-0}" -gt "$SEQ" ] && rc_ok "held request $i: the new delta" ||
	    rc_fail "held request $i: seq '$seq', was $SEQ"
done
awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b - a < 5) }' &&
    rc_ok "answered within 5 s of the commit" ||
    rc_fail "answered $(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }') s after the commit"
rc_expect_eq "$(metric revcheckd_longpoll_waiting)" 0 "nothing held after the change"

# ------------------------------------------------ idle: after the wait
rc_curl "$O_URL/v1/delta?base=$V1&after=0&head_only=1"
ETAG=$(rc_header ETag)
SEQ=$(rc_header X-Revcheck-Delta-Seq)
out=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 20 \
    -H "If-None-Match: $ETAG" "$O_URL/v1/delta?base=$V1&after=$SEQ&wait=30&head_only=1")
rc_expect_eq "${out% *}" 304 "idle: 304, the head unchanged"
awk -v t="${out#* }" 'BEGIN { exit !(t >= 3.5 && t < 10) }' &&
    rc_ok "idle: answered after longpoll_wait_max (4 s)" ||
    rc_fail "idle: answered after ${out#* } s"
rc_expect_match "$(metric 'revcheckd_longpoll_holds_total{result="expired"}')" \
    '^[1-9]' "metrics: an expired hold"

# ------------------------------------------------ bounded: past the cap
for i in 1 2 3 4 5 6; do
	curl -s -o /dev/null --max-time 20 -H "If-None-Match: $ETAG" \
	    "$O_URL/v1/delta?base=$V1&after=$SEQ&wait=30&head_only=1" &
done
wait_metric revcheckd_longpoll_waiting 6 || rc_fail "six held (the cap)"
out=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 20 \
    -H "If-None-Match: $ETAG" "$O_URL/v1/delta?base=$V1&after=$SEQ&wait=30&head_only=1")
rc_expect_eq "${out% *}" 304 "over the cap: answered"
awk -v t="${out#* }" 'BEGIN { exit !(t < 2) }' &&
    rc_ok "over the cap: answered at once" ||
    rc_fail "over the cap: answered after ${out#* } s"
rc_expect_eq "$(metric revcheckd_longpoll_waiting)" 6 "held stays at the cap"
rc_expect_match "$(metric 'revcheckd_longpoll_holds_total{result="refused"}')" \
    '^[1-9]' "metrics: the refused hold counted"
wait_metric revcheckd_longpoll_waiting 0 || rc_fail "the six expire"

# ------------------------------------------------ edges: pushed to
# sync_interval 60 s: without a push no change would arrive in time.
edge() {	# edge NAME STATEDIR UPSTREAM_URL [rc_start args]
	local n=$1 st=$2 up=$3
	shift 3
	rc_start "$n" "$@" --trusted-key "$T/key.pub" --state-dir "$st" \
	    --sync-interval 60 --upstream-wait 20 --upstream-insecure-http \
	    --upstream-filter "$up/v1/filter" --upstream-check "$O_URL/v1/check"
}
edge E "$T/se" "$O_URL"
edge E2 "$T/se2" "$E_URL"
rc_wait_json "$E_URL/v1/status" sync.mode push 30 || rc_fail "E: pushed to"
rc_wait_json "$E2_URL/v1/status" sync.mode push 30 || rc_fail "E2: pushed to (by E)"

# revoked ID WHAT [SECS]: E and E2 answer ID revoked within SECS (15) of
# the call, well inside sync_interval (60 s): pushed, not polled.
revoked() {
	local t0 t n
	t0=$(date +%s)
	for n in E E2; do
		eval "u=\$${n}_URL"
		rc_wait_json "$u/v1/check?id=$1" status revoked 90 ||
		    { rc_fail "$n: $2: never revoked"; continue; }
		t=$(($(date +%s) - t0))
		[ "$t" -le "${3:-15}" ] && rc_ok "$n: $2 (${t} s)" ||
		    rc_fail "$n: $2: revoked only after $t s"
	done
	rc_curl "$E2_URL/v1/check?id=$1"
	rc_expect_json source delta "E2: $1 decided by its own delta overlay"
}
rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('tok-lp2')"
revoked tok-lp2 "a revocation pushed"

# ------------------------------------------------ the origin restarts
rc_stop O || rc_fail "origin stops cleanly with requests held"
rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('tok-lp3')"
IT_PORT_LO=$O_PORT IT_PORT_SPAN=1 origin
revoked tok-lp3 "after the origin restarted"
rc_wait_json "$E_URL/v1/status" sync.mode push 30 || rc_fail "E: pushed to again"
rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('tok-lp4')"
revoked tok-lp4 "pushed again after the origin's restart"

# ------------------------------------------------ the edge restarts
rc_stop E || rc_fail "edge stops cleanly with requests held"
IT_PORT_LO=$E_PORT IT_PORT_SPAN=1 edge E "$T/se" "$O_URL"
rc_wait_json "$E_URL/v1/status" sync.mode push 30 || rc_fail "E: pushed to after its restart"
rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('tok-lp5')"
revoked tok-lp5 "pushed after the edge restarted"

# ------------------------------------------------ a delta with no head after it
# The follower writes a delta, then its head: a node can apply the delta
# before the head is there. Kept so: the follower stopped, the head put
# back to the one before the last delta, a fresh origin O2 on it. Asked
# for the head alone after the delta before, it answers that delta (an
# empty body would leave an edge believing it caught up).
H=$F/current/delta/head.rcd
cp "$H" "$T/head.old"
rc_curl "$O_URL/v1/status"
k=$(rc_json filter.delta.seq)
rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('tok-lp6')"
rc_wait_json "$O_URL/v1/check?id=tok-lp6" status revoked 30 ||
    rc_fail "origin: delta $((k + 1)) applied"
rc_follow_stop
cp "$T/head.old" "$H.tmp" && mv "$H.tmp" "$H"
mkdir -p "$T/so2"
rc_start O2 --filter-dir "$F" --trusted-key "$T/key.pub" --state-dir "$T/so2"
rc_wait_json "$O2_URL/v1/check?id=tok-lp6" status revoked 30 ||
    rc_fail "O2: the delta with no head after it applied"
rc_curl "$O2_URL/v1/delta?base=$V1&after=$k&wait=5&head_only=1"
rc_expect_status 200 "no head after the last delta: answered"
want=$(stat -c %s "$(printf '%s/current/delta/%020d.rcd' "$F" $((k + 1)))")
rc_expect_eq "$(stat -c %s "$RC_BODY_FILE")" "$want" \
    "no head after the last delta: that delta itself, not an empty body"
rc_expect_eq "$(rc_header X-Revcheck-Delta-Seq)" "$((k + 1))" \
    "no head after the last delta: its seq named"

rc_done
