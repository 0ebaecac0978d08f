#!/usr/bin/env bash
# it_origin_restart.sh - an origin (or edge) started long after the last re-base serves at once: the base's fresh chain on disk makes it fresh (real PostgreSQL)
#
# filterbuild follow re-bases rarely and keeps a chain fresh with deltas
# and heads. A base older than max_age on its own is still the served
# state's base: the chain's newest head says how fresh the state is. An
# origin restarted then must take the base, apply its chain and answer,
# not refuse the base as stale and answer 503 until the next re-base. A
# base whose chain is not fresh still answers 503 filter_stale (never
# not_revoked from stale bits).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg.sh"

F=$T/filters
"$FILTERBUILD" keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
rc_pg_start
psql -X -q -v ON_ERROR_STOP=1 -f "$RC_SRC/config/postgresql-schema.sql" "$PG_URL"
rc_psql -c "INSERT INTO revcheck_revocations (scope, id) VALUES ('api', 'r1')"
rc_follow_start "$F" --interval 300ms --valid-for 10m --head-every 1s \
    --rebase-every never
for _ in $(seq 1 150); do [ -e "$F/current/delta/head.rcd" ] && break; sleep 0.2; done
[ -e "$F/current/delta/head.rcd" ] && rc_ok "follow published a base and a head" ||
    rc_fail "follow published no head: $(tail -n 5 "$T/follow.log")"
v1=$(rc_version)
base_at=$(rc_filter_at "$F/current")

origin() {
	rc_start O --filter-dir "$F" --trusted-key "$T/key.pub" \
	    --state-dir "$T/state" --max-age 4s
}
origin
rc_wait_json "$O_URL/v1/check?id=r1&scope=api" status revoked &&
    rc_ok "the origin answers from the chain" ||
    rc_fail "first start: HTTP $RC_STATUS $RC_BODY"
rc_stop O

# The base is now older than max_age; its heads (one a second) are not.
for _ in $(seq 1 100); do
	[ $(( $(date +%s) - base_at )) -gt 6 ] && break
	sleep 0.2
done
[ "$(rc_version)" = "$v1" ] || rc_fail "follow re-based; the case needs the old base"
rc_psql -c "INSERT INTO revcheck_revocations (scope, id) VALUES ('api', 'r2')"
rc_converged || rc_fail "r2 never reached the chain"

m=$(rc_log_mark "$T/O.log")
origin
rc_wait_ready "$O_URL" && rc_ok "restarted origin ready on its old base" ||
    rc_fail "restarted origin not ready: $(rc_log_since "$T/O.log" "$m" | tail -n 5)"
rc_curl "$O_URL/v1/check?id=r2&scope=api"
rc_expect_json status revoked "r2 (revoked by a delta after the base) revoked"
rc_curl "$O_URL/v1/check?id=ok&scope=api"
rc_expect_json status not_revoked "a live id not_revoked"
if rc_log_since "$T/O.log" "$m" | grep -q '"result":"refused".*stale'; then
	rc_fail "the base was refused as stale: $(rc_log_since "$T/O.log" "$m" | grep refused | head -n 2)"
else
	rc_ok "the base was not refused as stale"
fi

# An edge started now gets the same old base from the origin, and its
# chain from /v1/delta: it takes the base for the chain to make fresh.
m=$(rc_log_mark "$T/E.log")
rc_start E --upstream-filter "$O_URL/v1/filter" --upstream-check "$O_URL/v1/check" \
    --trusted-key "$T/key.pub" --upstream-insecure-http --state-dir "$T/se" \
    --sync-interval 1 --max-age 4s
rc_wait_ready "$E_URL" && rc_ok "a new edge is ready on the old base" ||
    rc_fail "edge not ready: $(rc_log_since "$T/E.log" "$m" | tail -n 5)"
rc_curl "$E_URL/v1/check?id=r2&scope=api"
rc_expect_json status revoked "the edge: r2 revoked"
rc_curl "$E_URL/v1/check?id=ok&scope=api"
rc_expect_json status not_revoked "the edge: a live id not_revoked"
rc_stop E

# With the follower gone no head comes: the state goes stale and the
# origin refuses (503), restarted or not.
rc_follow_stop
head_at=$(rc_head_at)
for _ in $(seq 1 100); do
	[ $(( $(date +%s) - head_at )) -gt 6 ] && break
	sleep 0.2
done
rc_stop O
origin
rc_curl "$O_URL/v1/check?id=ok&scope=api"
rc_expect_status 503 "a base whose chain is stale too"
rc_expect_json error filter_stale
rc_done
