#!/usr/bin/env bash
# it_follow_empty.sh - a scope whose last row expires or is deleted stays covered with no keys; follow never wedges on it (real PostgreSQL)
#
# The database is the authority of a --source build: a scope it no longer
# names (its only revocation expired, its last row deleted) is not an
# input that lost its content. A re-base keeps such a scope covered with
# zero keys, so an id in it answers not_revoked from the filter (never
# not_covered, never 503), and follow goes on publishing deltas and
# heads. A table left with no row at all re-bases too, and so does a
# `filterbuild build --source` over it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg.sh"

F=$T/filters
"$FILTERBUILD" keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
rc_pg_start
psql -X -q -v ON_ERROR_STOP=1 -f "$RC_SRC/config/postgresql-schema.sql" "$PG_URL"

follow_start() {
	rc_follow_start "$F" --interval 300ms --valid-for 10m --head-every 2s \
	    --rebase-every never --expiry-grace 1s
}
# is ID STATUS SCOPE: waits (20 s at most) until the origin answers STATUS.
is() {
	rc_wait_json "$O_URL/v1/check?id=$1&scope=$3" status "$2" ||
	    { echo "# $1 in $3: HTTP $RC_STATUS $RC_BODY" >&2; return 1; }
}
# newer_base V: waits (30 s at most) for a version above V.
newer_base() {
	local v
	for _ in $(seq 1 150); do
		v=$(rc_version)
		[ -n "$v" ] && [ "$v" -gt "$1" ] && [ -e "$F/current/delta/head.rcd" ] && return 0
		sleep 0.2
	done
	return 1
}
# head_moves: waits (15 s at most) for a head signed after the current one.
head_moves() {
	local at
	at=$(rc_head_at)
	for _ in $(seq 1 75); do
		[ "$(rc_head_at)" -gt "$at" ] 2>/dev/null && return 0
		sleep 0.2
	done
	return 1
}
since_exp() {
	rc_psql -c "SELECT floor(extract(epoch FROM clock_timestamp() - expires_at))::int
	    FROM revcheck_revocations WHERE id = '$1'"
}

# Scope 'tl' holds one revocation that expires soon, 'del' one row that
# is deleted, 'stay' one that stays.
rc_psql -c "INSERT INTO revcheck_revocations (scope, id, expires_at) VALUES
    ('tl', 'only', now() + interval '8 seconds'), ('del', 'd1', NULL),
    ('stay', 's1', NULL)"
follow_start
for _ in $(seq 1 150); do [ -e "$F/current/delta/head.rcd" ] && break; sleep 0.2; done
v1=$(rc_version)
mkdir -p "$T/state"
rc_start O --filter-dir "$F" --trusted-key "$T/key.pub" --state-dir "$T/state"
rc_wait_version "$O_URL" "$v1" || rc_fail "origin serves the base"
is only revoked tl && is d1 revoked del && is s1 revoked stay &&
    rc_ok "the base holds the three rows" || rc_fail "the base holds the three rows"

# The last row of 'del' deleted, the only one of 'tl' expired: deltas.
rc_psql -c "DELETE FROM revcheck_revocations WHERE id = 'd1'"
is d1 not_revoked del && rc_ok "the deleted last row is released" ||
    rc_fail "the deleted last row is released"
for _ in $(seq 1 150); do [ "$(since_exp only)" -ge 2 ] && break; sleep 0.2; done
is only not_revoked tl && rc_ok "the expired only row is released" ||
    rc_fail "the expired only row is released"

# A re-base (a row in a new scope makes one): both emptied scopes stay
# covered with no keys.
rc_psql -c "INSERT INTO revcheck_revocations (scope, id) VALUES ('new', 'n1')"
newer_base "$v1" && rc_ok "a re-base after scopes lost their last row publishes" ||
    rc_fail "a re-base after scopes lost their last row publishes: $(grep -E 'un-revoke|shrink' "$T/follow.log" | tail -n 1)"
v2=$(rc_version)
rc_wait_version "$O_URL" "$v2" || rc_fail "origin serves the new base"
is n1 revoked new || rc_fail "the new scope's row is revoked"
for s in tl:only del:d1 tl:other del:other; do
	rc_curl "$O_URL/v1/check?id=${s#*:}&scope=${s%%:*}"
	rc_expect_status 200 "${s%%:*}/${s#*:} answers"
	rc_expect_json status not_revoked "${s%%:*}/${s#*:} is not_revoked from the filter"
done
rc_curl "$O_URL/v1/status"
rc_expect_match "$RC_BODY" '"scope":"tl","keys":0' "scope tl is covered with zero keys"
head_moves && rc_ok "follow keeps signing heads after the re-base" ||
    rc_fail "follow keeps signing heads after the re-base"
rc_psql -c "INSERT INTO revcheck_revocations (scope, id) VALUES ('tl', 'again')"
is again revoked tl && rc_ok "a revocation in the emptied scope arrives by delta" ||
    rc_fail "a revocation in the emptied scope arrives by delta"
rc_expect_eq "$(rc_version)" "$v2" "the same base: it came as a delta"

# A restart re-bases over the same database (the chain is dropped).
rc_follow_stop
rm -f "$F/current/delta/head.rcd"
follow_start
newer_base "$v2" && rc_ok "a restart re-bases" || rc_fail "a restart re-bases: $(tail -n 2 "$T/follow.log")"
v3=$(rc_version)

# No row at all: a build --source publishes every scope with zero keys.
rc_follow_stop
rc_psql -c "DELETE FROM revcheck_revocations"
"$FILTERBUILD" build --key "$T/key.pem" --out "$F" --source "$PG_URL" --quiet \
    >"$T/build.out" 2>&1 && rc_ok "build --source over an empty table publishes" ||
    rc_fail "build --source over an empty table publishes: $(cat "$T/build.out")"
follow_start
newer_base "$((v3 + 1))" && rc_ok "follow re-bases over an empty table" ||
    rc_fail "follow re-bases over an empty table: $(tail -n 2 "$T/follow.log")"
rc_wait_version "$O_URL" "$(rc_version)" 20 || rc_fail "origin serves the empty base"
for s in tl:again stay:s1 new:n1 default:x; do
	rc_curl "$O_URL/v1/check?id=${s#*:}&scope=${s%%:*}"
	rc_expect_json status not_revoked "${s%%:*}/${s#*:} is not_revoked in an empty filter"
done
head_moves && rc_ok "follow keeps signing heads over an empty table" ||
    rc_fail "follow keeps signing heads over an empty table"
rc_follow_stop
rc_done
