#!/usr/bin/env bash
# it_chain_restart.sh - applied deltas survive a restart: a node that lost them answers 503 chain_behind, never the base alone
#
# A base with a delta that revokes tok-delta: the origin and an edge say
# revoked. Then the deltas are lost to a restart (the origin's delta/
# directory gone; an edge restarted while the origin is down). From the
# base alone tok-delta would be not_revoked; the rollback state remembers
# the chain position, so both refuse (503 filter_stale, reason
# chain_behind, /readyz 503) until the chain is back.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg.sh"

F=$T/filters
rc_follow_chain "$F"
v1=$V1

mkdir -p "$T/state" "$T/edge"
rc_start O --filter-dir "$F" --trusted-key "$T/key.pub" --state-dir "$T/state"
rc_wait_version "$O_URL" "$v1" || rc_fail "origin serves the base"
rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('tok-delta')"
rc_wait_json "$O_URL/v1/check?id=tok-delta" status revoked &&
    rc_ok "origin: the delta's add is revoked" ||
    rc_fail "origin: the delta's add is revoked"
rc_expect_json source delta "origin: from the delta"
edge_start() {
	rc_start E --upstream-filter "$1/v1/filter" \
	    --upstream-check "$1/v1/check" --upstream-insecure-http \
	    --trusted-key "$T/key.pub" --state-dir "$T/edge" --sync-interval 1
}
edge_start "$O_URL"
rc_wait_json "$E_URL/v1/check?id=tok-delta" status revoked &&
    rc_ok "edge: the delta's add is revoked" ||
    rc_fail "edge: the delta's add is revoked"
rc_follow_stop
grep -q '"delta_seq":"[1-9]' "$T/state/rollback.json" &&
    rc_ok "origin: the chain position is in the rollback state" ||
    rc_fail "origin: no delta_seq in $(cat "$T/state/rollback.json")"

# behind URL WHAT: every way a node answers says chain_behind.
behind() {
	rc_curl "$1/v1/check?id=tok-delta"
	rc_expect_status 503 "$2: the check refuses"
	rc_expect_json error filter_stale "$2: filter_stale"
	rc_expect_match "$(rc_json message)" chain_behind "$2: the message"
	rc_curl "$1/v1/check?id=a"
	rc_expect_status 503 "$2: even ids the base knows"
	rc_curl "$1/readyz"
	rc_expect_status 503 "$2: readyz"
	rc_curl "$1/v1/status"
	rc_expect_json filter.stale_reason chain_behind "$2: status reason"
	rc_curl "$1/metrics"
	rc_expect_match "$RC_BODY" "revcheckd_filter_stale 1" "$2: metrics"
}

# The origin restarts with its delta files gone.
rc_stop O || rc_fail "origin stops cleanly"
mv "$F/current/delta" "$T/delta-aside"
rc_start O --filter-dir "$F" --trusted-key "$T/key.pub" --state-dir "$T/state"
rc_wait_version "$O_URL" "$v1" || rc_fail "origin restarted on the base"
behind "$O_URL" "origin without its deltas"
# What the origin refuses to answer from it does not hand out either: a
# new edge (no state of its own) would take the base from /v1/filter,
# find no chain at /v1/delta and answer tok-delta not_revoked from the
# base's filter, which never asks the origin.
rc_curl "$O_URL/v1/filter"
rc_expect_status 503 "origin without its deltas: /v1/filter refused"
rc_expect_match "$(rc_json message)" chain_behind \
    "origin without its deltas: /v1/filter says chain_behind"
mkdir -p "$T/edge2"
rc_start E2 --upstream-filter "$O_URL/v1/filter" \
    --upstream-check "$O_URL/v1/check" --upstream-insecure-http \
    --trusted-key "$T/key.pub" --state-dir "$T/edge2" --sync-interval 1
for _ in $(seq 1 300); do
	rc_curl "$E2_URL/v1/status"
	[ "$(rc_json sync.result)" != pending ] && break
	sleep 0.1
done
rc_expect_json sync.result download_failed "new edge: the base not taken"
rc_curl "$E2_URL/v1/check?id=tok-delta"
rc_expect_status 503 "new edge, origin without its deltas: tok-delta refused"
rc_stop E2 || rc_fail "new edge stops cleanly"
# Restored, the chain catches up and the origin answers again.
mv "$T/delta-aside" "$F/current/delta"
rc_wait_json "$O_URL/v1/check?id=tok-delta" status revoked &&
    rc_ok "origin: deltas restored, revoked again" ||
    rc_fail "origin: deltas restored, revoked again"
rc_wait_ready "$O_URL" || rc_fail "origin: ready again"

# The edge restarts while the origin is down: only its persisted base.
rc_stop O || rc_fail "origin stops cleanly"
rc_stop E || rc_fail "edge stops cleanly"
edge_start "$O_URL"
rc_wait_version "$E_URL" "$v1" || rc_fail "edge restarted on its persisted base"
behind "$E_URL" "edge, origin down"
# The origin back (another port: the edge restarts to find it).
rc_start O --filter-dir "$F" --trusted-key "$T/key.pub" --state-dir "$T/state"
rc_wait_json "$O_URL/v1/check?id=tok-delta" status revoked ||
    rc_fail "origin up again"
rc_stop E || rc_fail "edge stops cleanly"
edge_start "$O_URL"
rc_wait_json "$E_URL/v1/check?id=tok-delta" status revoked &&
    rc_ok "edge: the chain caught up from the origin" ||
    rc_fail "edge: the chain caught up from the origin"
rc_done
