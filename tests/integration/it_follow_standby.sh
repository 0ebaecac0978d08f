#!/usr/bin/env bash
# it_follow_standby.sh - build --source and follow refuse a standby by default, and under --standby-max-lag publish only what it is shown to hold (real PostgreSQL: a primary and a streaming standby)
#
# A hot standby answers queries from the WAL it has replayed, which may be
# behind the primary by seconds, or by hours once replication broke. Read
# from one, `filterbuild follow` signed heads saying "complete as of now"
# and `build --source` a filter issued now, while ids revoked on the
# primary since the standby stopped replaying answered not_revoked on
# every node (no trigger runs on a standby: the change log arrives by
# replay, so the trigger check passed). Now a server in recovery is
# refused unless --standby-max-lag allows one; then a round publishes only
# while the standby is shown to be that close to its sender (streaming,
# replay not paused and caught up with what was received and with the
# sender's end of WAL, the sender's last message that recent), and what it
# signs is dated back by that lag. Here: refused by default; allowed, a
# revocation on the primary reaches a delta read from the standby; the
# primary's WAL sender stopped (SIGSTOP: the stream stays "streaming", no
# message comes), then replay paused: no head or delta is signed at or
# after the moment the standby stopped being current, so a revocation
# made on the primary after it is never published as absent with a fresh
# head; and a role that cannot read pg_stat_wal_receiver is refused,
# naming the privilege.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg.sh"

F=$T/filters
LAG=5s
"$FILTERBUILD" keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
rc_pg_start
psql -X -q -v ON_ERROR_STOP=1 -f "$RC_SRC/config/postgresql-schema.sql" "$PG_URL"
rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('a')"

# The standby: a base backup of the primary (-R writes primary_conninfo
# and standby.signal), on its own port. An idle sender answers the
# receiver's ping every wal_receiver_timeout / 2: 2 s here, inside $LAG.
S_DIR=$T/pgs
rc_pg2_dir "$S_DIR"
rc_pg_as "$PG_BIN/pg_basebackup" -h 127.0.0.1 -p "$PG_PORT" -U revcheck \
    -D "$S_DIR/data" -R -X stream -c fast >"$S_DIR/basebackup.log" 2>&1 ||
    { cat "$S_DIR/basebackup.log" >&2; exit 1; }
rc_pg2_conf "$S_DIR" "wal_receiver_timeout = '4s'" "wal_receiver_status_interval = '1s'"
S_PORT=$RC_PG2_PORT
sb_ctl() { rc_pg2_ctl "$S_DIR" "$@"; }
sb_stop() { rc_pg2_stop "$S_DIR"; }
RC_AT_EXIT=(rc_ws_cont sb_stop "${RC_AT_EXIT[@]}")
sb_ctl start >/dev/null || { tail -n 20 "$S_DIR/server.log" >&2; exit 1; }
S_URL="postgresql://revcheck@127.0.0.1:$S_PORT/postgres"
sb_psql() { psql -X -q -v ON_ERROR_STOP=1 -At "$S_URL" "$@"; }
# Until the receiver streams and a message named the sender's end of WAL.
sb_current() {
	local i
	for i in $(seq 1 300); do
		[ "$(sb_psql -c "SELECT status = 'streaming' AND latest_end_lsn IS NOT NULL
		    AND pg_last_wal_replay_lsn() >= latest_end_lsn
		    FROM pg_stat_wal_receiver" 2>/dev/null)" = t ] && return 0
		sleep 0.1
	done
	return 1
}
sb_current && rc_ok "the standby streams" || rc_fail "the standby streams"
rc_expect_eq "$(sb_psql -c "SELECT pg_is_in_recovery()")" t "the standby is in recovery"

# rc_converged compares with the primary (PG_URL): the standby must not be
# the reference.

# ---- refused by default, naming the reason -----------------------------
out=$("$FILTERBUILD" build --key "$T/key.pem" --out "$F" --source "$S_URL" \
    --quiet 2>&1) && rc_fail "build from a standby without --standby-max-lag succeeded" ||
    rc_expect_match "$out" "standby.*--standby-max-lag" "build from a standby: refused, naming it"
[ -e "$F/current" ] && rc_fail "build from a standby: a version was published" ||
    rc_ok "build from a standby: nothing published"
out=$("$FILTERBUILD" follow --source "$S_URL" --key "$T/key.pem" --out "$F" \
    --once 2>&1) && rc_fail "follow --once from a standby without --standby-max-lag succeeded" ||
    rc_expect_match "$out" "standby.*--standby-max-lag" "follow from a standby: refused, naming it"
[ -e "$F/current" ] && rc_fail "follow from a standby: a base was published" ||
    rc_ok "follow from a standby: nothing published"
# The primary itself is read as before.
"$FILTERBUILD" build --key "$T/key.pem" --out "$T/fp" --source "$PG_URL" --quiet &&
    rc_ok "build from the primary" || rc_fail "build from the primary"

# ---- allowed with a bound, while the stream is healthy -----------------
t0=$(date +%s)
"$FILTERBUILD" build --key "$T/key.pem" --out "$T/fb" --source "$S_URL" \
    --standby-max-lag "$LAG" --quiet 2>"$T/build.err" &&
    rc_ok "build from a streaming standby under --standby-max-lag" ||
    rc_fail "build from a streaming standby under --standby-max-lag: $(cat "$T/build.err")"
at=$(rc_filter_at "$T/fb")
[ "$at" -le "$t0" ] && [ "$at" -ge $((t0 - 5)) ] &&
    rc_ok "its filter is dated back by the standby's lag ($((t0 - at)) s)" ||
    rc_fail "its filter is dated back by the standby's lag: issued $at, build started $t0"

rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('b')"
"$FILTERBUILD" follow --source "$S_URL" --key "$T/key.pem" --out "$F" \
    --standby-max-lag "$LAG" --interval 300ms --valid-for 10m --head-every 1s \
    >>"$T/follow.log" 2>&1 &
FOLLOW_PID=$!
rc_converged && rc_ok "follow from the standby: first base" ||
    rc_fail "follow from the standby: first base: $(tail -n 5 "$T/follow.log")"
v1=$(rc_version)
rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('p1')"
rc_converged && rc_ok "a revocation on the primary reaches the chain read from the standby" ||
    rc_fail "a revocation on the primary reaches the chain read from the standby"
rc_expect_eq "$(rc_version)" "$v1" "through a delta (no re-base)"
grep -q "source is a standby" "$T/follow.log" && rc_ok "the log says the source is a standby" ||
    rc_fail "the log says the source is a standby"
now=$(date +%s)
h=$(rc_head_at)
[ "$h" -lt "$now" ] && [ "$h" -ge $((now - 10)) ] &&
    rc_ok "heads are signed, dated back by the lag ($((now - h)) s)" ||
    rc_fail "heads are signed, dated back by the lag: head $h, now $now"

# ---- the stream stalls: the sender stopped, the receiver still "streaming"
# With the standby's wal_receiver_timeout at 60 s its receiver neither
# pings nor gives up during the stall (at 4 s it would reconnect to a new
# WAL sender, and the stream would be healthy again): only the age of the
# sender's last message shows that the standby may be behind.
sb_psql -c "ALTER SYSTEM SET wal_receiver_timeout = '60s'" -c "SELECT pg_reload_conf()" >/dev/null
for _ in $(seq 1 100); do	# until the reload is in force
	[ "$(sb_psql -c "SHOW wal_receiver_timeout")" = 1min ] && break
	sleep 0.1
done
WALSENDER=$(rc_psql -c "SELECT pid FROM pg_stat_replication")
[ -n "$WALSENDER" ] || rc_fail "no WAL sender on the primary"
m=$(rc_log_mark "$T/follow.log")
kill -STOP "$WALSENDER"
t_stop=$(date +%s)
rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('p2')"
# Until the follower refuses: the sender's last message is over LAG old.
rc_wait_log_since "$T/follow.log" "$m" "not shown to be within --standby-max-lag.*last message from the sender arrived" &&
    rc_ok "sender stopped: the log says why" ||
    rc_fail "sender stopped: the log says why: $(tail -n 3 "$T/follow.log")"
h=$(rc_head_sha)
c=$(rc_chain_at)
[ "$c" -le "$t_stop" ] &&
    rc_ok "sender stopped: nothing is signed as of a time after the stall ($((t_stop - c)) s before)" ||
    rc_fail "sender stopped: the chain claims $c, the stream stalled at $t_stop"
case " $(rc_chain_ids) " in
*" p2 "*) rc_fail "sender stopped: p2 is in the chain (the standby cannot have it)" ;;
*) rc_ok "sender stopped: p2 is absent, and no signed time covers it" ;;
esac
rc_expect_eq "$(sb_psql -c "SELECT status FROM pg_stat_wal_receiver")" streaming \
    "sender stopped: the receiver still says streaming"
sleep 2	# rounds (300 ms) that would sign a head (every 1 s): the refusal is logged once, no event marks them
rc_expect_eq "$(rc_head_sha)" "$h" "sender stopped: no new head (nodes go stale)"
kill -CONT "$WALSENDER"
WALSENDER=
sb_psql -c "ALTER SYSTEM RESET wal_receiver_timeout" -c "SELECT pg_reload_conf()" >/dev/null
rc_converged && rc_ok "the stream back: p2 reaches the chain" ||
    rc_fail "the stream back: p2 reaches the chain"

# ---- replay paused on the standby ---------------------------------------
m=$(rc_log_mark "$T/follow.log")
sb_psql -c "SELECT pg_wal_replay_pause()" >/dev/null
t_pause=$(date +%s)
rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('p3')"
rc_wait_log_since "$T/follow.log" "$m" "replay is paused" && rc_ok "replay paused: the log says so" ||
    rc_fail "replay paused: the log says so"
h=$(rc_head_sha)
c=$(rc_chain_at)
[ "$c" -le "$t_pause" ] &&
    rc_ok "replay paused: nothing is signed as of a time after the pause" ||
    rc_fail "replay paused: the chain claims $c, replay paused at $t_pause"
sleep 2	# rounds that would sign a head: the refusal is logged once, no event marks them
rc_expect_eq "$(rc_head_sha)" "$h" "replay paused: no new head"
case " $(rc_chain_ids) " in
*" p3 "*) rc_fail "replay paused: p3 is in the chain" ;;
*) rc_ok "replay paused: p3 is absent, and no signed time covers it" ;;
esac
sb_psql -c "SELECT pg_wal_replay_resume()" >/dev/null
rc_converged && rc_ok "replay resumed: p3 reaches the chain" ||
    rc_fail "replay resumed: p3 reaches the chain"
rc_follow_stop
out=$("$FILTERBUILD" verify --pub "$T/key.pub" "$F" 2>&1) &&
    rc_expect_match "$out" "chain OK" "the chain verifies" || rc_fail "verify: $out"

# ---- a role that cannot read pg_stat_wal_receiver ------------------------
rc_psql -c "CREATE ROLE lowp LOGIN; GRANT SELECT ON revcheck_revocations TO lowp"
sb_current || true
L_URL="postgresql://lowp@127.0.0.1:$S_PORT/postgres"
out=$("$FILTERBUILD" build --key "$T/key.pem" --out "$T/fl" --source "$L_URL" \
    --standby-max-lag "$LAG" --quiet 2>&1) &&
    rc_fail "build by a role without pg_read_all_stats succeeded" ||
    rc_expect_match "$out" "pg_read_all_stats" "a role that cannot read the receiver: refused, naming the privilege"
rc_psql -c "GRANT pg_monitor TO lowp"
sb_current || true
"$FILTERBUILD" build --key "$T/key.pem" --out "$T/fl" --source "$L_URL" \
    --standby-max-lag "$LAG" --quiet 2>"$T/build.err" &&
    rc_ok "granted pg_monitor: read" || rc_fail "granted pg_monitor: read: $(cat "$T/build.err")"
rc_done
