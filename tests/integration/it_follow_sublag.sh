#!/usr/bin/env bash
# it_follow_sublag.sh - build --source and follow refuse a logical replication subscriber of the followed tables by default, and under --subscriber-max-lag publish only while its apply worker is shown current (real PostgreSQL: a publisher and a subscriber)
#
# A database that subscribes to revcheck_revocations holds what its apply
# worker has applied: behind the publisher by any time once the
# subscription is disabled, the worker fails on a conflict (and restarts
# and fails forever), or the publisher is out of reach. Read from one,
# `filterbuild follow` signed heads "complete as of now" and `build
# --source` filters issued now, while ids revoked on the publisher since
# answered not_revoked on every node. Now a table a subscription
# replicates into is refused unless --subscriber-max-lag allows it; then a
# round publishes only while the subscription is enabled, every table it
# feeds is ready, its apply worker runs, its last message was a keepalive
# (nothing received is still being applied) and arrived within the bound,
# and what is signed is dated back by that age. Here: refused by default,
# naming the subscription; allowed, a publisher insert reaches a delta;
# the subscription disabled, then the publisher's WAL sender stopped: no
# head or delta claims a time after the stall, the revocation made on the
# publisher meanwhile is never in a chain under a fresh head, and arrives
# once replication is back; a role that cannot read pg_stat_subscription
# is refused, naming it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg.sh"

F=$T/filters
LAG=5s
"$FILTERBUILD" keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
rc_pg_start
# The subscriber is the first cluster. Its apply worker pings a silent
# publisher every wal_receiver_timeout / 2: 2 s here, inside $LAG.
rc_psql -c "ALTER SYSTEM SET wal_receiver_timeout = '4s'" -c "SELECT pg_reload_conf()" >/dev/null
psql -X -q -v ON_ERROR_STOP=1 -f "$RC_SRC/config/postgresql-schema.sql" "$PG_URL"
S_URL=$PG_URL

# ---- the publisher --------------------------------------------------------
P_DIR=$T/pgp
rc_pg2_init "$P_DIR" || exit 1
rc_pg2_conf "$P_DIR" "wal_level = logical"
P_PORT=$RC_PG2_PORT
pub_ctl() { rc_pg2_ctl "$P_DIR" "$@"; }
pub_stop() { rc_pg2_stop "$P_DIR"; }
# The subscriber's cluster stops first: its apply worker then lets go.
RC_AT_EXIT=(rc_ws_cont "${RC_AT_EXIT[@]}" pub_stop)
pub_ctl start >/dev/null || { tail -n 20 "$P_DIR/server.log" >&2; exit 1; }
P_URL="postgresql://revcheck@127.0.0.1:$P_PORT/postgres"
pub_psql() { psql -X -q -v ON_ERROR_STOP=1 -At "$P_URL" "$@"; }
# rc_converged compares with the publisher: the subscriber must not be
# the reference.
RC_REF_URL=$P_URL
psql -X -q -v ON_ERROR_STOP=1 -f "$RC_SRC/config/postgresql-schema.sql" "$P_URL"
pub_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('p0')"
pub_psql -c "CREATE PUBLICATION p FOR TABLE revcheck_revocations"
CONN="host=127.0.0.1 port=$P_PORT dbname=postgres user=revcheck"
rc_psql -c "CREATE SUBSCRIPTION s CONNECTION '$CONN' PUBLICATION p" 2>/dev/null

sub_ids() { rc_psql -c "SELECT string_agg(id, ' ' ORDER BY id) FROM revcheck_revocations"; }
pub_ids() { pub_psql -c "SELECT string_agg(id, ' ' ORDER BY id) FROM revcheck_revocations"; }
# Until the subscriber holds the publisher's rows, every table is ready
# and the apply worker's last message was a keepalive.
sub_current() {
	local i
	for i in $(seq 1 300); do
		[ "$(sub_ids)" = "$(pub_ids)" ] &&
		    [ "$(rc_psql -c "SELECT bool_and(srsubstate = 'r') AND (SELECT
			pid IS NOT NULL AND last_msg_send_time = latest_end_time
			FROM pg_stat_subscription WHERE relid IS NULL)
			FROM pg_subscription_rel")" = t ] && return 0
		sleep 0.1
	done
	return 1
}
sub_current && rc_ok "the subscriber holds the publisher's rows" ||
    rc_fail "the subscriber holds the publisher's rows"

# ---- refused by default, naming the subscription --------------------------
out=$("$FILTERBUILD" build --key "$T/key.pem" --out "$F" --source "$S_URL" \
    --quiet 2>&1) && rc_fail "build from a subscriber without --subscriber-max-lag succeeded" ||
    rc_expect_match "$out" "revcheck_revocations.*subscription s\b.*--subscriber-max-lag" \
    "build from a subscriber: refused, naming the table, the subscription and the option"
[ -e "$F/current" ] && rc_fail "build from a subscriber: a version was published" ||
    rc_ok "build from a subscriber: nothing published"
out=$("$FILTERBUILD" follow --source "$S_URL" --key "$T/key.pem" --out "$F" \
    --once 2>&1) && rc_fail "follow --once from a subscriber without --subscriber-max-lag succeeded" ||
    rc_expect_match "$out" "subscription s\b.*--subscriber-max-lag" \
    "follow from a subscriber: refused, naming the subscription"
[ -e "$F/current" ] && rc_fail "follow from a subscriber: a base was published" ||
    rc_ok "follow from a subscriber: nothing published"
# --standby-max-lag does not allow a subscriber.
out=$("$FILTERBUILD" build --key "$T/key.pem" --out "$F" --source "$S_URL" \
    --standby-max-lag "$LAG" --quiet 2>&1) &&
    rc_fail "build from a subscriber under --standby-max-lag succeeded" ||
    rc_ok "--standby-max-lag does not allow a subscriber"
# The publisher itself is read as before.
"$FILTERBUILD" build --key "$T/key.pem" --out "$T/fp" --source "$P_URL" --quiet &&
    rc_ok "build from the publisher" || rc_fail "build from the publisher"

# ---- allowed with a bound, while the subscription is healthy --------------
sub_current || true
t0=$(date +%s)
"$FILTERBUILD" build --key "$T/key.pem" --out "$T/fb" --source "$S_URL" \
    --subscriber-max-lag "$LAG" --quiet 2>"$T/build.err" &&
    rc_ok "build from a current subscriber under --subscriber-max-lag" ||
    rc_fail "build from a current subscriber under --subscriber-max-lag: $(cat "$T/build.err")"
at=$(rc_filter_at "$T/fb" 2>/dev/null || echo 0)
[ "$at" -lt $((t0 + 1)) ] && [ "$at" -ge $((t0 - 5)) ] &&
    rc_ok "its filter is dated back by the subscriber's lag ($((t0 - at)) s)" ||
    rc_fail "its filter is dated back by the subscriber's lag: issued $at, build started $t0"

"$FILTERBUILD" follow --source "$S_URL" --key "$T/key.pem" --out "$F" \
    --subscriber-max-lag "$LAG" --interval 300ms --valid-for 10m --head-every 1s \
    >>"$T/follow.log" 2>&1 &
FOLLOW_PID=$!
rc_converged && rc_ok "follow from the subscriber: first base" ||
    rc_fail "follow from the subscriber: first base: $(tail -n 5 "$T/follow.log")"
v1=$(rc_version)
pub_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('p1')"
rc_converged && rc_ok "a revocation on the publisher reaches the chain read from the subscriber" ||
    rc_fail "a revocation on the publisher reaches the chain read from the subscriber"
rc_expect_eq "$(rc_version)" "$v1" "through a delta (no re-base)"
now=$(date +%s)
h=$(rc_head_at 2>/dev/null || echo 0)
[ "$h" -lt "$now" ] && [ "$h" -ge $((now - 10)) ] &&
    rc_ok "heads are signed, dated back by the lag ($((now - h)) s)" ||
    rc_fail "heads are signed, dated back by the lag: head $h, now $now"

# ---- the subscription disabled --------------------------------------------
m=$(rc_log_mark "$T/follow.log")
rc_psql -c "ALTER SUBSCRIPTION s DISABLE"
t_stop=$(date +%s)
pub_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('p2')"
rc_wait_log_since "$T/follow.log" "$m" "subscription s is disabled" && rc_ok "disabled: the log says why" ||
    rc_fail "disabled: the log says why: $(tail -n 3 "$T/follow.log")"
h=$(rc_head_sha)
c=$(rc_chain_at)
[ "$c" -le "$t_stop" ] &&
    rc_ok "disabled: nothing is signed as of a time after it ($((t_stop - c)) s before)" ||
    rc_fail "disabled: the chain claims $c, the subscription was disabled at $t_stop"
rc_chain_lacks p2 && rc_ok "disabled: p2 is absent, and no signed time covers it" ||
    rc_fail "disabled: p2 is in the chain (the subscriber cannot have it)"
sleep 2	# rounds (300 ms) that would sign a head (every 1 s): the refusal is logged once, no event marks them
rc_expect_eq "$(rc_head_sha)" "$h" "disabled: no new head (nodes go stale)"
rc_psql -c "ALTER SUBSCRIPTION s ENABLE"
rc_converged && rc_ok "enabled again: p2 reaches the chain" ||
    rc_fail "enabled again: p2 reaches the chain"

# ---- the publisher's WAL sender stopped ------------------------------------
# With the subscriber's wal_receiver_timeout at 60 s its apply worker
# neither pings nor gives up during the stall (at 4 s it would exit, and
# "no apply worker" would refuse): only the age of the publisher's last
# message shows that the subscriber may be behind.
rc_psql -c "ALTER SYSTEM SET wal_receiver_timeout = '60s'" -c "SELECT pg_reload_conf()" >/dev/null
for _ in $(seq 1 100); do	# until the reload is in force
	[ "$(rc_psql -c "SHOW wal_receiver_timeout")" = 1min ] && break
	sleep 0.1
done
sub_current || true
WALSENDER=$(pub_psql -c "SELECT pid FROM pg_stat_replication WHERE application_name = 's'")
[ -n "$WALSENDER" ] || rc_fail "no WAL sender on the publisher"
m=$(rc_log_mark "$T/follow.log")
kill -STOP "$WALSENDER"
t_stop=$(date +%s)
pub_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('p3')"
# Until the follower refuses: the publisher's last message is over LAG old.
rc_wait_log_since "$T/follow.log" "$m" "not shown to be within --subscriber-max-lag.*last message of subscription s arrived" &&
    rc_ok "sender stopped: the log says why" ||
    rc_fail "sender stopped: the log says why: $(tail -n 3 "$T/follow.log")"
h=$(rc_head_sha)
c=$(rc_chain_at)
[ "$c" -le "$t_stop" ] &&
    rc_ok "sender stopped: nothing is signed as of a time after the stall ($((t_stop - c)) s before)" ||
    rc_fail "sender stopped: the chain claims $c, the stream stalled at $t_stop"
rc_chain_lacks p3 && rc_ok "sender stopped: p3 is absent, and no signed time covers it" ||
    rc_fail "sender stopped: p3 is in the chain"
sleep 2	# rounds that would sign a head: the refusal is logged once, no event marks them
rc_expect_eq "$(rc_head_sha)" "$h" "sender stopped: no new head (nodes go stale)"
rc_expect_eq "$(rc_psql -c "SELECT pid IS NOT NULL FROM pg_stat_subscription WHERE relid IS NULL")" t \
    "sender stopped: the apply worker still runs"
kill -CONT "$WALSENDER"
WALSENDER=
rc_psql -c "ALTER SYSTEM SET wal_receiver_timeout = '4s'" -c "SELECT pg_reload_conf()" >/dev/null
RC_WAIT_TRIES=150 rc_converged && rc_ok "the stream back: p3 reaches the chain" ||
    rc_fail "the stream back: p3 reaches the chain"
rc_follow_stop
out=$("$FILTERBUILD" verify --pub "$T/key.pub" "$F" 2>&1) &&
    rc_expect_match "$out" "chain OK" "the chain verifies" || rc_fail "verify: $out"

# ---- a role that cannot read pg_stat_subscription -------------------------
rc_psql -c "CREATE ROLE lows LOGIN; GRANT SELECT ON revcheck_revocations TO lows;
    REVOKE SELECT ON pg_stat_subscription FROM public"
sub_current || true
L_URL="postgresql://lows@127.0.0.1:$PG_PORT/postgres"
out=$("$FILTERBUILD" build --key "$T/key.pem" --out "$T/fl" --source "$L_URL" \
    --subscriber-max-lag "$LAG" --quiet 2>&1) &&
    rc_fail "build by a role that cannot read pg_stat_subscription succeeded" ||
    rc_expect_match "$out" "pg_stat_subscription" \
    "a role that cannot read pg_stat_subscription: refused, naming it"
rc_psql -c "GRANT SELECT ON pg_stat_subscription TO lows"
"$FILTERBUILD" build --key "$T/key.pem" --out "$T/fl" --source "$L_URL" \
    --subscriber-max-lag "$LAG" --quiet 2>"$T/build.err" &&
    rc_ok "granted: read" || rc_fail "granted: read: $(cat "$T/build.err")"
rc_done
