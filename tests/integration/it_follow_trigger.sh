#!/usr/bin/env bash
# it_follow_trigger.sh - filterbuild follow refuses a change trigger that is missing, disabled or cut short, and re-bases after it changed (real PostgreSQL)
#
# Deltas carry only what config/postgresql-schema.sql's trigger logged in
# revcheck_changes. A row inserted while the trigger is dropped or
# disabled (a bulk load with ALTER TABLE ... DISABLE TRIGGER) is in no
# delta: without a check the follower went on publishing fresh heads and
# the row answered not_revoked until the next re-base (a day by default).
# Now a trigger that does not log every insert, update and delete stops
# the follower (nothing published: nodes go stale), and a trigger created
# or altered since the chain's cursor makes it re-base, which reads every
# row. A head is signed only after a round read the source, never at
# start: a follower that restarts without reaching the database does not
# keep the nodes fresh.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg.sh"

F=$T/filters
"$FILTERBUILD" keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
rc_pg_start
schema() { psql -X -q -v ON_ERROR_STOP=1 -f "$RC_SRC/config/postgresql-schema.sql" "$PG_URL"; }
schema


# No trigger: nothing is published, and the error names the trigger.
rc_psql -c "DROP TRIGGER revcheck_changes_trg ON revcheck_revocations"
rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('a')"
out=$("$FILTERBUILD" follow --source "$PG_URL" --key "$T/key.pem" --out "$F" \
    --once 2>&1) && rc_fail "follow --once without the trigger succeeded" ||
    rc_expect_match "$out" "revcheck_changes_trg" "no trigger: refused, naming it"
[ -e "$F/current" ] && rc_fail "no trigger: a base was published" ||
    rc_ok "no trigger: nothing published"
schema

rc_follow_start "$F" --interval 300ms --valid-for 10m --head-every 1s
rc_converged && rc_ok "first base" || rc_fail "first base"
v1=$(rc_version)

# Disabled for a bulk load, then enabled again, between two rounds (one
# transaction) and across several rounds.
rc_psql -c "BEGIN; ALTER TABLE revcheck_revocations DISABLE TRIGGER revcheck_changes_trg;
    INSERT INTO revcheck_revocations (id) VALUES ('bulk1');
    ALTER TABLE revcheck_revocations ENABLE TRIGGER revcheck_changes_trg; COMMIT"
rc_converged && rc_ok "an insert while the trigger was disabled (one transaction) reaches the chain" ||
    rc_fail "an insert while the trigger was disabled (one transaction) reaches the chain"
[ "$(rc_version)" -gt "$v1" ] && rc_ok "through a re-base" || rc_fail "through a re-base"

m=$(rc_log_mark "$T/follow.log")
rc_psql -c "ALTER TABLE revcheck_revocations DISABLE TRIGGER revcheck_changes_trg"
rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('bulk2')"
# The head is read once a round has refused: one that began before the
# ALTER may still sign.
rc_wait_log_since "$T/follow.log" "$m" "revcheck_changes_trg.*disabled" &&
    rc_ok "trigger disabled: the log says so" ||
    rc_fail "trigger disabled: the log says so: $(tail -n 3 "$T/follow.log")"
rc_follow_refuses "revcheck_changes_trg.*disabled" "trigger disabled"
rc_psql -c "ALTER TABLE revcheck_revocations ENABLE TRIGGER revcheck_changes_trg"
rc_converged && rc_ok "an insert while the trigger was disabled (several rounds) reaches the chain" ||
    rc_fail "an insert while the trigger was disabled (several rounds) reaches the chain"

# A trigger that misses some changes: an update of the scope or the id is
# not logged when the trigger fires only for "UPDATE OF reason".
m=$(rc_log_mark "$T/follow.log")
rc_psql -c "DROP TRIGGER revcheck_changes_trg ON revcheck_revocations;
    CREATE TRIGGER revcheck_changes_trg AFTER INSERT OR UPDATE OF reason OR DELETE
    ON revcheck_revocations FOR EACH ROW EXECUTE FUNCTION revcheck_changes_log()"
rc_wait_log_since "$T/follow.log" "$m" "revcheck_changes_trg.*every" &&
    rc_ok "trigger for UPDATE OF one column: the log says so" ||
    rc_fail "trigger for UPDATE OF one column: the log says so: $(tail -n 3 "$T/follow.log")"
rc_follow_refuses "revcheck_changes_trg.*every" "trigger for UPDATE OF one column"
schema
rc_psql -c "UPDATE revcheck_revocations SET id = 'moved' WHERE id = 'a'"
rc_converged && rc_ok "the schema applied again: the follower goes on" ||
    rc_fail "the schema applied again: the follower goes on"
out=$("$FILTERBUILD" verify --pub "$T/key.pub" "$F" 2>&1) &&
    rc_expect_match "$out" "chain OK" "the chain verifies" || rc_fail "verify: $out"
rc_follow_stop

# A head says the chain is complete as of its issued_at: it is signed
# only after a round read the source. A follower restarted while the
# database cannot be reached (here: a port nobody listens on), as
# systemd's Restart=always does after a crash, once re-signed the head at
# start without reading anything: every restart kept the nodes fresh for
# another --valid-for while rows committed since were in no delta.
rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('unread')"
h=$(rc_head_sha)
for _ in 1 2; do
	"$FILTERBUILD" follow --source "postgresql://revcheck@127.0.0.1:$(rc_free_port)/postgres" \
	    --key "$T/key.pem" --out "$F" --once >>"$T/follow.log" 2>&1 &&
	    rc_fail "follow --once with the database unreachable succeeded"
done
rc_expect_eq "$(rc_head_sha)" "$h" "restarted without the database: no head is signed"
rc_follow_start "$F" --interval 300ms --valid-for 10m --head-every 1s
rc_converged && rc_ok "with the database back the chain catches up" ||
    rc_fail "with the database back the chain catches up"
rc_follow_stop
rc_done
