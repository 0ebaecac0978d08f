#!/usr/bin/env bash
# it_follow_replica.sh - rows written where a default-mode trigger does not fire (session_replication_role = replica, a logical replication apply worker) reach the chain, or the follower refuses (real PostgreSQL: a publisher and a subscriber)
#
# A trigger in the default mode (tgenabled 'O', ORIGIN) does not fire in
# a session with session_replication_role = replica: a superuser or a
# bulk load that sets it, and every logical replication apply worker.
# Their rows were in no delta while the follower kept signing heads, so a
# revoked id answered not_revoked until the next re-base (a day by
# default); on a subscriber of revcheck_revocations, every replicated
# revocation. Now config/postgresql-schema.sql makes the trigger ALWAYS
# (it fires in every session); a trigger left in the default mode is
# accepted on a table no subscription writes, with a warning naming the
# risk and the statement, and refused (nothing published, nodes go stale)
# on a table a subscription of this database replicates into, or when
# this role cannot tell; a subscribed revcheck_changes (rows with the
# publisher's transaction ids) is refused; a follower that was refused
# re-bases once the check passes again.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg.sh"

F=$T/filters
TRG=revcheck_changes_trg
"$FILTERBUILD" keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
rc_pg_start
psql -X -q -v ON_ERROR_STOP=1 -f "$RC_SRC/config/postgresql-schema.sql" "$PG_URL"
rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('a')"
rc_expect_eq "$(rc_psql -c "SELECT tgenabled FROM pg_trigger WHERE tgname = '$TRG'")" A \
    "the schema makes the trigger ALWAYS"

# URL of the database whose rows the chain must hold, and the chain's dir.
RC_REF_URL=$PG_URL
replica_insert() {
	psql -X -q -v ON_ERROR_STOP=1 "$1" -c "SET session_replication_role = replica" \
	    -c "INSERT INTO revcheck_revocations (id) VALUES ('$2')"
}

# ---- a plain primary: a replica-role session ----------------------------
rc_follow_start "$F" --interval 300ms --valid-for 10m --head-every 1s
rc_converged && rc_ok "first base" || rc_fail "first base"
v1=$(rc_version)
replica_insert "$PG_URL" rep1
rc_converged && rc_ok "ALWAYS: a replica-role insert reaches the chain" ||
    rc_fail "ALWAYS: a replica-role insert reaches the chain"
rc_expect_eq "$(rc_version)" "$v1" "through a delta (no re-base)"
grep -q "default mode" "$T/follow.log" &&
    rc_fail "ALWAYS: a warning about the default mode was logged" ||
    rc_ok "ALWAYS: no warning"

# The default mode ('O', as applied before): accepted, with a warning.
m=$(rc_log_mark "$T/follow.log")
rc_psql -c "ALTER TABLE revcheck_revocations ENABLE TRIGGER $TRG"
rc_converged && rc_ok "default mode on a primary: followed" ||
    rc_fail "default mode on a primary: followed"
rc_wait_log_since "$T/follow.log" "$m" \
    "default mode \(ORIGIN\).*session_replication_role = replica.*ALTER TABLE revcheck_revocations ENABLE ALWAYS TRIGGER $TRG" &&
    rc_ok "default mode: the warning names the risk and the statement" ||
    rc_fail "default mode: the warning names the risk and the statement: $(tail -n 3 "$T/follow.log")"
rc_follow_stop
n=$(grep -c "default mode (ORIGIN)" "$T/follow.log" || true)
rc_follow_start "$F" --interval 300ms --valid-for 10m --head-every 1s
for _ in $(seq 1 150); do
	[ "$(grep -c "default mode (ORIGIN)" "$T/follow.log")" -gt "$n" ] && break
	sleep 0.2
done
[ "$(grep -c "default mode (ORIGIN)" "$T/follow.log")" -gt "$n" ] &&
    rc_ok "default mode: warned again at start" || rc_fail "default mode: warned again at start"
# What the warning is about: a replica-role insert is in no delta.
v2=$(rc_version)
replica_insert "$PG_URL" rep2
# Until two heads were signed after the insert: a round that began after
# it said the chain is complete.
for k in 1 2; do
	h=$(rc_head_sha)
	for _ in $(seq 1 150); do [ "$(rc_head_sha)" != "$h" ] && break; sleep 0.2; done
done
rc_chain_lacks rep2 && rc_ok "default mode: a replica-role insert is in no delta (the accepted risk)" ||
    rc_fail "default mode: a replica-role insert is in no delta"
# Made ALWAYS again: the trigger changed since the cursor, a re-base reads it.
rc_psql -c "ALTER TABLE revcheck_revocations ENABLE ALWAYS TRIGGER $TRG"
rc_converged && rc_ok "ALWAYS again: re-based, rep2 in the chain" ||
    rc_fail "ALWAYS again: re-based, rep2 in the chain"
[ "$(rc_version)" -gt "$v2" ] && rc_ok "through a re-base" || rc_fail "through a re-base"
rc_follow_stop

# A role that cannot tell whether a subscription writes the table.
rc_psql -c "CREATE ROLE low LOGIN; GRANT SELECT ON revcheck_revocations, revcheck_changes TO low;
    REVOKE SELECT ON pg_subscription_rel FROM public;
    ALTER TABLE revcheck_revocations ENABLE TRIGGER $TRG"
L_URL="postgresql://low@127.0.0.1:$PG_PORT/postgres"
out=$("$FILTERBUILD" follow --source "$L_URL" --key "$T/key.pem" --out "$T/fl" --once 2>&1) &&
    rc_fail "default mode, subscriptions not readable: follow succeeded" ||
    rc_expect_match "$out" "pg_subscription_rel.*ENABLE ALWAYS TRIGGER" \
    "default mode, subscriptions not readable: refused, naming the privilege and the statement"
rc_psql -c "ALTER TABLE revcheck_revocations ENABLE ALWAYS TRIGGER $TRG"
"$FILTERBUILD" follow --source "$L_URL" --key "$T/key.pem" --out "$T/fl" --once \
    >"$T/low.log" 2>&1 && rc_ok "ALWAYS, subscriptions not readable: followed" ||
    rc_fail "ALWAYS, subscriptions not readable: followed: $(tail -n 2 "$T/low.log")"

# ---- a logical replication subscriber ------------------------------------
P_DIR=$T/pgp
rc_pg2_init "$P_DIR" || exit 1
rc_pg2_conf "$P_DIR" "wal_level = logical"
P_PORT=$RC_PG2_PORT
pub_ctl() { rc_pg2_ctl "$P_DIR" "$@"; }
pub_stop() { rc_pg2_stop "$P_DIR"; }
# The subscriber's cluster stops first: its apply worker then lets go.
RC_AT_EXIT=("${RC_AT_EXIT[@]}" pub_stop)
pub_ctl start >/dev/null || { tail -n 20 "$P_DIR/server.log" >&2; exit 1; }
P_URL="postgresql://revcheck@127.0.0.1:$P_PORT/postgres"
pub_psql() { psql -X -q -v ON_ERROR_STOP=1 -At "$P_URL" "$@"; }
psql -X -q -v ON_ERROR_STOP=1 -f "$RC_SRC/config/postgresql-schema.sql" "$P_URL"
pub_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('p0')"
pub_psql -c "CREATE PUBLICATION p FOR TABLE revcheck_revocations"

# The subscriber: a database of the first cluster, set up as before this
# change (the trigger in the default mode).
rc_psql -c "CREATE DATABASE sub"
S_URL="postgresql://revcheck@127.0.0.1:$PG_PORT/sub"
sub_psql() { psql -X -q -v ON_ERROR_STOP=1 -At "$S_URL" "$@"; }
psql -X -q -v ON_ERROR_STOP=1 -f "$RC_SRC/config/postgresql-schema.sql" "$S_URL"
sub_psql -c "ALTER TABLE revcheck_revocations ENABLE TRIGGER $TRG"
CONN="host=127.0.0.1 port=$P_PORT dbname=postgres user=revcheck"
sub_psql -c "CREATE SUBSCRIPTION s CONNECTION '$CONN' PUBLICATION p" 2>/dev/null
RC_REF_URL=$P_URL
# Until the subscriber holds what the publisher does.
synced() {
	local i
	for i in $(seq 1 150); do
		[ "$(sub_psql -c "SELECT string_agg(id, ' ' ORDER BY id) FROM revcheck_revocations")" = \
		    "$(pub_psql -c "SELECT string_agg(id, ' ' ORDER BY id) FROM revcheck_revocations")" ] &&
		    return 0
		sleep 0.2
	done
	return 1
}
synced && rc_ok "the subscriber holds the publisher's rows" ||
    rc_fail "the subscriber holds the publisher's rows"

F=$T/fsub
# Read under --subscriber-max-lag (it_follow_sublag.sh): without it a
# subscriber is refused before the trigger's mode is looked at.
SUBLAG="--subscriber-max-lag 1m"
out=$("$FILTERBUILD" follow --source "$S_URL" --key "$T/key.pem" --out "$F" --once $SUBLAG 2>&1) &&
    rc_fail "default mode on a subscribed table: follow --once succeeded" ||
    rc_expect_match "$out" "subscription s .*ALTER TABLE revcheck_revocations ENABLE ALWAYS TRIGGER $TRG" \
    "default mode on a subscribed table: refused, naming the subscription and the statement"
[ -e "$F/current" ] && rc_fail "default mode on a subscribed table: a base was published" ||
    rc_ok "default mode on a subscribed table: nothing published"

# ALWAYS: the apply worker's rows are logged on the subscriber.
sub_psql -c "ALTER TABLE revcheck_revocations ENABLE ALWAYS TRIGGER $TRG"
PG_URL=$S_URL rc_follow_start "$F" --interval 300ms --valid-for 10m --head-every 1s $SUBLAG
rc_converged && rc_ok "ALWAYS on the subscriber: first base" ||
    rc_fail "ALWAYS on the subscriber: first base: $(tail -n 3 "$T/follow.log")"
v1=$(rc_version)
mkdir -p "$T/state"
rc_start O --filter-dir "$F" --trusted-key "$T/key.pub" --state-dir "$T/state"
rc_wait_json "$O_URL/v1/check?id=p1" status not_revoked || rc_fail "origin: p1 not yet revoked"
pub_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('p1')"
rc_wait_json "$O_URL/v1/check?id=p1" status revoked &&
    rc_ok "an insert on the publisher is revoked by revcheckd following the subscriber" ||
    rc_fail "an insert on the publisher is revoked by revcheckd following the subscriber: $(rc_json status)"
rc_expect_json source delta "the delta decided"
rc_expect_eq "$(rc_version)" "$v1" "through a delta, not a re-base"

# A subscription created under a follower whose trigger is in the default
# mode: refused from the next round, with no change to the trigger.
sub_psql -c "DROP SUBSCRIPTION s" 2>/dev/null
m=$(rc_log_mark "$T/follow.log")
sub_psql -c "ALTER TABLE revcheck_revocations ENABLE TRIGGER $TRG"
for _ in $(seq 1 150); do
	[ "$(rc_version)" -gt "$v1" ] &&
	    rc_log_has "$T/follow.log" "$m" "default mode \(ORIGIN\): a row" &&
	    break
	sleep 0.2
done
[ "$(rc_version)" -gt "$v1" ] && rc_ok "default mode, no subscription: re-based, followed" ||
    rc_fail "default mode, no subscription: re-based, followed"
# The follower is held (SIGSTOP) while the subscription applies p2 and is
# disabled: from then on the lag check refuses every round (a disabled
# subscription is not shown current). The trigger's mode must be checked
# first, or the subscription, once dropped, would leave p2 in no change
# (a CI run saw the lag check refuse all along).
kill -STOP "$FOLLOW_PID"
sub_psql -c "CREATE SUBSCRIPTION s2 CONNECTION '$CONN' PUBLICATION p
    WITH (copy_data = false)" 2>/dev/null
pub_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('p2')"
synced || rc_fail "p2 reaches the subscriber"
sub_psql -c "ALTER SUBSCRIPTION s2 DISABLE"
h=$(rc_head_sha)
m=$(rc_log_mark "$T/follow.log")
kill -CONT "$FOLLOW_PID"
# Three rounds refused, naming s2 (the mode is checked before the lag).
rc_wait_log_since "$T/follow.log" "$m" "subscription s2 .*ENABLE ALWAYS TRIGGER" 3 &&
    rc_ok "the log names the subscription and the statement" ||
    rc_fail "the log names the subscription and the statement: $(tail -n 2 "$T/follow.log")"
rc_expect_eq "$(rc_head_sha)" "$h" "a subscription created under a default-mode trigger: no head is signed (nodes go stale)"
rc_chain_lacks p2 && rc_ok "p2, applied unlogged, is in no delta" || rc_fail "p2, applied unlogged, is in no delta"
# Fixed without touching the trigger (the subscription dropped): nobody
# logged the rows applied meanwhile, so the follower re-bases.
m=$(rc_log_mark "$T/follow.log")
sub_psql -c "DROP SUBSCRIPTION s2" 2>/dev/null
rc_converged && rc_ok "subscription dropped: re-based, p2 in the chain" ||
    rc_fail "subscription dropped: re-based, p2 in the chain"
rc_log_has "$T/follow.log" "$m" "replication check passes again: re-basing" &&
    rc_ok "the log says why it re-based" || rc_fail "the log says why it re-based"
rc_follow_stop

# revcheck_changes replicated too: its rows carry the publisher's
# transaction ids (and seq numbers): refused whatever the mode.
pub_psql -c "CREATE PUBLICATION pl FOR TABLE revcheck_changes"
sub_psql -c "ALTER TABLE revcheck_revocations ENABLE ALWAYS TRIGGER $TRG"
sub_psql -c "CREATE SUBSCRIPTION sl CONNECTION '$CONN' PUBLICATION pl
    WITH (enabled = false, copy_data = false)" 2>/dev/null
out=$("$FILTERBUILD" follow --source "$S_URL" --key "$T/key.pem" --out "$T/fl2" --once $SUBLAG 2>&1) &&
    rc_fail "revcheck_changes subscribed: follow --once succeeded" ||
    rc_expect_match "$out" "revcheck_changes is replicated into this database by subscription sl" \
    "revcheck_changes subscribed: refused, naming the subscription"
sub_psql -c "DROP SUBSCRIPTION sl" 2>/dev/null

# build --source reads every row: not held to any of this.
sub_psql -c "ALTER TABLE revcheck_revocations ENABLE TRIGGER $TRG"
"$FILTERBUILD" build --key "$T/key.pem" --out "$T/fb" --source "$S_URL" --quiet &&
    rc_ok "build --source reads the subscriber whatever the trigger" ||
    rc_fail "build --source reads the subscriber whatever the trigger"
rc_done
