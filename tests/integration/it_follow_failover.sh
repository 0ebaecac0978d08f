#!/usr/bin/env bash
# it_follow_failover.sh - two followers on one directory: one writes, the other takes over within 5 s of a SIGKILL or a SIGSTOP and continues the same chain
#
# A real PostgreSQL, two filterbuild follow processes with the same
# arguments on one output directory, an origin serving it and an edge
# following the origin; revocations are inserted all along. The writer is
# killed (SIGKILL): the standby logs "leader: took the lock" and publishes
# within 5 s. Then the new writer is stopped (SIGSTOP, a lost host): the
# server ends its lock session (idle_session_timeout) and the other takes
# over within 5 s; let go (SIGCONT), the stopped one finds its session gone
# and stands by without writing. Meanwhile the edge never refuses a delta
# (no fork, gap or replay), its (version, delta) never goes back, a
# revoked id is never answered not_revoked, and in the end every
# revocation inserted is revoked at the edge. The handovers are counted in
# follow-leader.json.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg.sh"

F=$T/filters
"$FILTERBUILD" keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
rc_pg_start
psql -X -q -v ON_ERROR_STOP=1 -f "$RC_SRC/config/postgresql-schema.sql" "$PG_URL"
rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('a')"

# fstart N: follower N (log $T/fN.log, pid in FN, /metrics on port FN_PORT).
fstart() {
	local port
	port=$(rc_free_port)
	"$FILTERBUILD" follow --source "$PG_URL" --key "$T/key.pem" --out "$F" \
	    --interval 200ms --valid-for 10m --head-every 2s \
	    --listen "127.0.0.1:$port" >>"$T/f$1.log" 2>&1 &
	printf -v "F$1" '%s' "$!"
	printf -v "F$1_PORT" '%s' "$port"
	rc_stop_at_exit "$!"
}
# fmetric N NAME: follower N's filterbuild_follow_NAME.
fmetric() {
	curl -s "http://127.0.0.1:$(eval "echo \$F$1_PORT")/metrics" |
	    sed -n "s/^filterbuild_follow_$2 //p"
}
fstart 1
rc_wait_log "$T/f1.log" "leader: took the lock" 1 60 &&
    rc_ok "the first follower is the writer" ||
    rc_fail "the first follower is the writer: $(tail -n 5 "$T/f1.log")"
fstart 2
rc_wait_log "$T/f2.log" "standby: another follower holds the lock" 1 60 &&
    rc_ok "the second follower stands by" ||
    rc_fail "the second follower stands by: $(tail -n 5 "$T/f2.log")"
rc_expect_eq "$(fmetric 1 leader) $(fmetric 2 leader)" "1 0" "metrics: the writer leads, the standby does not"
rc_curl "http://127.0.0.1:$F2_PORT/readyz"
rc_expect_json reason standby "the standby's /readyz says standby"
for ((i = 0; i < 150; i++)); do [ -e "$F/current" ] && break; sleep 0.2; done

mkdir -p "$T/ostate" "$T/edge"
rc_start O --filter-dir "$F" --trusted-key "$T/key.pub" --state-dir "$T/ostate"
rc_wait_json "$O_URL/v1/check?id=a" status revoked 60 || rc_fail "origin serves the chain"
rc_start E --upstream-filter "$O_URL/v1/filter" --upstream-check "$O_URL/v1/check" \
    --upstream-insecure-http --trusted-key "$T/key.pub" --state-dir "$T/edge" \
    --sync-interval 1
rc_wait_json "$E_URL/v1/check?id=a" status revoked 60 || rc_fail "edge follows the origin"

# Revocations all along: r-1, r-2, ... one every 50 ms, each its own commit.
mkfifo "$T/ins"
psql -X -q "$PG_URL" <"$T/ins" >"$T/ins.log" 2>&1 &
PSQL=$!
rc_stop_at_exit "$PSQL"
( for ((i = 1; ; i++)); do
	echo "INSERT INTO revcheck_revocations (id) VALUES ('r-$i');"
	sleep 0.05
  done ) >"$T/ins" &
INS=$!
rc_stop_at_exit "$INS"

# The edge watched every 0.2 s: its version and delta seq, the refusals,
# and the answers for a revoked id (a) and one never revoked.
( while :; do
	m=$(curl -s --max-time 2 "$E_URL/metrics" || true)
	v=$(echo "$m" | sed -n 's/^revcheckd_filter_version \([0-9]*\).*/\1/p')
	s=$(echo "$m" | sed -n 's/^revcheckd_delta_seq \([0-9]*\).*/\1/p')
	r=$(echo "$m" | sed -n 's/^revcheckd_deltas_refused_total \([0-9]*\).*/\1/p')
	ca=$(curl -s --max-time 2 "$E_URL/v1/check?id=a" | sed -n 's/.*"status":"\([a-z_]*\)".*/\1/p')
	cn=$(curl -s --max-time 2 "$E_URL/v1/check?id=never" | sed -n 's/.*"status":"\([a-z_]*\)".*/\1/p')
	echo "${v:--} ${s:--} ${r:--} ${ca:--} ${cn:--}"
	sleep 0.2
  done >"$T/watch" ) &
WATCH=$!
rc_stop_at_exit "$WATCH"

# edge_seq: the delta seq the edge serves now.
edge_seq() {
	curl -s "$E_URL/metrics" | sed -n 's/^revcheckd_delta_seq \([0-9]*\).*/\1/p'
}
for ((i = 0; i < 300; i++)); do [ "$(edge_seq)" -ge 3 ] 2>/dev/null && break; sleep 0.1; done
rc_expect_match "$(edge_seq)" '^([3-9]|[1-9][0-9]+)$' "the edge applies the writer's deltas"

# takeover WHO LOG SIGNAL WHAT: SIGNAL to follower WHO; the other (LOG)
# logs "took the lock" and then publishes a delta, each within 5 s.
takeover() {
	local who=$1 log=$2 sig=$3 what=$4 m t0 t1 t2
	m=$(rc_log_mark "$log")
	t0=$(date +%s.%N)
	kill "-$sig" "$who"
	for ((i = 0; i < 300; i++)); do
		rc_log_has "$log" "$m" "leader: took the lock" && break
		sleep 0.05
	done
	t1=$(date +%s.%N)
	for ((i = 0; i < 300; i++)); do
		rc_log_has "$log" "$m" "published delta" && break
		sleep 0.05
	done
	t2=$(date +%s.%N)
	echo "# $what: leader after $(awk "BEGIN { print $t1 - $t0 }") s, first delta after $(awk "BEGIN { print $t2 - $t0 }") s" >&2
	rc_log_has "$log" "$m" "leader: took the lock" && rc_log_has "$log" "$m" "published delta" &&
		[ "$(awk "BEGIN { print ($t2 - $t0 <= 5) }")" = 1 ] &&
		rc_ok "$what: the standby took over and published within 5 s" ||
		rc_fail "$what: the standby took over and published within 5 s: $(rc_log_since "$log" "$m" | tail -n 5)"
	rc_expect_match "$(rc_log_since "$log" "$m" | grep 'took the lock' | head -n 1)" \
	    "previous holder [^ ]+:$who;" "$what: the handover names the previous writer"
}

# 1. The writer is killed.
takeover "$F1" "$T/f2.log" KILL "SIGKILL"
wait "$F1" 2>/dev/null || true

for ((i = 0; i < 100; i++)); do [ "$(fmetric 2 leader)" = 1 ] && break; sleep 0.1; done
rc_expect_eq "$(fmetric 2 leader) $(fmetric 2 handovers)" "1 1" "metrics: the new writer leads, one handover"

# The killed one comes back and stands by.
m1=$(rc_log_mark "$T/f1.log")
fstart 1
rc_wait_log_since "$T/f1.log" "$m1" "standby: another follower holds the lock" 1 60 &&
    rc_ok "the restarted follower stands by" || rc_fail "the restarted follower stands by"

# 2. The writer's host is lost: stopped, its session is ended by the server.
takeover "$F2" "$T/f1.log" STOP "SIGSTOP"
n=$(rc_psql -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'revcheck-follow-lock'")
rc_expect_eq "$n" 1 "SIGSTOP: the stopped writer's lock session was ended by the server"
rc_expect_match "$(cat "$PG_DIR/server.log")" "idle-session timeout" \
    "SIGSTOP: the server ended it for idle_session_timeout"
m2=$(rc_log_mark "$T/f2.log")
kill -CONT "$F2"
rc_wait_log_since "$T/f2.log" "$m2" "stopped writing, standing by" 1 30 &&
    rc_ok "SIGCONT: the old writer finds its session gone and stops writing" ||
    rc_fail "SIGCONT: the old writer finds its session gone and stops writing"
# Until it takes the lock again (if the other one ever lets it go).
rc_expect_eq "$(rc_log_since "$T/f2.log" "$m2" | sed '/took the lock/,$d' |
    grep -c 'published delta' || true)" 0 "SIGCONT: the old writer published nothing"

# Done inserting: everything committed reaches the chain and the edge.
kill "$INS" 2>/dev/null || true
wait "$INS" 2>/dev/null || true
wait "$PSQL" 2>/dev/null || true	# the FIFO's end: psql has committed all
RC_WAIT_TRIES=300 rc_converged && rc_ok "the chain holds what the database does" ||
    rc_fail "the chain holds what the database does"
ids=$(rc_db_ids)
last=$(echo "$ids" | tr ' ' '\n' | grep -c '^r-' || true)
rc_expect_match "$last" '^[1-9][0-9]+$' "revocations were inserted all along ($last)"
missing=0
for id in $ids; do
	ok=0
	for ((i = 0; i < 100; i++)); do
		[ "$(curl -s "$E_URL/v1/check?id=$id" | sed -n 's/.*"status":"\([a-z_]*\)".*/\1/p')" = revoked ] &&
		    { ok=1; break; }
		sleep 0.1
	done
	[ "$ok" = 1 ] || { missing=$((missing + 1)); echo "# $id not revoked at the edge" >&2; }
done
rc_expect_eq "$missing" 0 "every revocation inserted is revoked at the edge"

kill "$WATCH" 2>/dev/null || true
wait "$WATCH" 2>/dev/null || true
# (version, seq) never goes back; nothing refused; no wrong answer.
back=$(awk '$1 != "-" && $2 != "-" {
	if (pv != "" && ($1 < pv || ($1 == pv && $2 < ps))) n++
	pv = $1; ps = $2 } END { print n + 0 }' "$T/watch")
rc_expect_eq "$back" 0 "the edge's version and delta seq never went back"
refused=$(awk '$3 != "-" && $3 > 0' "$T/watch" | wc -l)
rc_expect_eq "$refused" 0 "the edge refused no delta (no fork, gap or replay)"
wrong=$(awk '$4 == "not_revoked" || $5 == "revoked"' "$T/watch" | wc -l)
rc_expect_eq "$wrong" 0 "no check answered wrongly at the edge"
rc_expect_match "$(wc -l <"$T/watch")" '^[1-9][0-9]+$' "the edge was watched"
rc_expect_eq "$(grep -ci fork "$T/E.log" || true)" 0 "the edge logged no fork"
# At least the two forced ones: on a starved machine a writer whose beat
# came late (its session ended by the server) hands over once more, safely.
n=$(sed -n 's/.*"handovers":\([0-9]*\).*/\1/p' "$F/follow-leader.json")
[ -n "$n" ] && [ "$n" -ge 2 ] && rc_ok "follow-leader.json counts the handovers ($n, at least the two forced)" ||
    rc_fail "follow-leader.json: handovers '$n' (at least 2 expected): $(cat "$F/follow-leader.json")"
rc_done
