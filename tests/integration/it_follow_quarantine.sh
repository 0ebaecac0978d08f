#!/usr/bin/env bash
# it_follow_quarantine.sh - a row the builder cannot take never stops publication: quarantined, reported, the rest flows on (real PostgreSQL)
#
# A table created before config/postgresql-schema.sql had its CHECK
# constraints (here: the constraints dropped) takes any row. One that no
# check can name (an id over 1024 bytes or empty, a scope with a space, a
# malformed x509: scope, a serial that is not hex) is left out of the base
# and of every delta, logged, and counted in quarantine.json, which the
# origin's /v1/status (source_quarantine) and /metrics
# (revcheckd_source_quarantined_rows) report. Every other row is
# represented: times out of range conservatively (infinity revoked_at, a
# revoked_at in 1900, an expires_at of infinity never expires; one in
# 1900 has expired), a reason cleaned, an id with a control byte as it is,
# a serial with white space around it or odd colon grouping (' 01 00 ',
# 'DEA:DBEEF') as its hex digits: a certificate with that serial is
# answered revoked.
# Rows written after a bad one arrive by delta, and a re-base publishes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg.sh"

F=$T/filters
S509=x509:$(printf 'ab%.0s' $(seq 1 32))
"$FILTERBUILD" keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
rc_pg_start
psql -X -q -v ON_ERROR_STOP=1 -f "$RC_SRC/config/postgresql-schema.sql" "$PG_URL"
# An old install: the table without the CHECK constraints.
for c in scope_ok id_ok revoked_at_ok expires_at_ok reason_ok; do
	rc_psql -c "ALTER TABLE revcheck_revocations DROP CONSTRAINT revcheck_revocations_$c"
done

# bad_rows SUFFIX: one row of each kind no check can name.
bad_rows() {
	rc_psql -c "INSERT INTO revcheck_revocations (scope, id) VALUES
	    ('default', repeat('L', 1100) || '$1'), ('empty$1', ''),
	    ('bad scope$1', 'b1'), ('x509:zz$1', '0a'), ('$S509', 'zz$1')"
}
# is ID STATUS [SCOPE]: waits (20 s at most) until the origin answers STATUS.
is() {
	rc_wait_json "$O_URL/v1/check?id=$1&scope=${3:-default}" status "$2" ||
	    { echo "# $1: HTTP $RC_STATUS $RC_BODY" >&2; return 1; }
}
# quarantined N: waits (20 s at most) until /v1/status reports N rows.
quarantined() {
	rc_wait_json "$O_URL/v1/status" source_quarantine.rows "$1" ||
	    { echo "# status: $(rc_json source_quarantine)" >&2; return 1; }
}
head_moves() {
	local at
	at=$(rc_head_at)
	for _ in $(seq 1 75); do
		[ "$(rc_head_at)" -gt "$at" ] 2>/dev/null && return 0
		sleep 0.2
	done
	return 1
}

# Before the first base: the bad rows, then rows that are represented.
bad_rows ""
rc_psql -c "INSERT INTO revcheck_revocations (scope, id, revoked_at, expires_at, reason) VALUES
    ('default', 'g0', now(), NULL, NULL),
    ('default', 'at-inf', 'infinity', NULL, NULL),
    ('default', 'at-1900', '1900-01-01', NULL, NULL),
    ('default', 'exp-inf', now(), 'infinity', NULL),
    ('default', 'exp-1900', now(), '1900-01-01', NULL),
    ('default', 'exp-minf', now(), '-infinity', NULL),
    ('default', 'long-reason', now(), NULL, repeat('r', 80)),
    ('default', 'utf-reason', now(), NULL, 'clé perdue'),
    ('default', E'ctl\\x01id', now(), NULL, NULL),
    ('$S509', '0A', now(), NULL, NULL)"
rc_follow_start "$F" --interval 300ms --valid-for 10m --head-every 2s --rebase-every never
for _ in $(seq 1 150); do [ -e "$F/current/delta/head.rcd" ] && break; sleep 0.2; done
v1=$(rc_version 2>/dev/null || true)
if [ -z "$v1" ]; then
	rc_fail "the first base is published over the bad rows: $(tail -n 3 "$T/follow.log")"
	rc_done
fi
rc_ok "the first base is published over the bad rows"
mkdir -p "$T/state"
rc_start O --filter-dir "$F" --trusted-key "$T/key.pub" --state-dir "$T/state"
rc_wait_version "$O_URL" "$v1" || rc_fail "origin serves the base"
for id in g0 at-inf at-1900 exp-inf long-reason utf-reason ctl%01id; do
	is "$id" revoked && rc_ok "$id is revoked" || rc_fail "$id is revoked"
done
is 0a revoked "$S509" && rc_ok "a good serial beside a bad one is revoked" ||
    rc_fail "a good serial beside a bad one is revoked"
for id in exp-1900 exp-minf; do
	is "$id" not_revoked && rc_ok "$id has expired" || rc_fail "$id has expired"
done
rc_curl "$O_URL/v1/check?id=long-reason"
rc_expect_json reason "$(printf 'r%.0s' $(seq 1 63))" "a reason of 80 characters is cut to 63"
rc_curl "$O_URL/v1/check?id=utf-reason"
rc_expect_json reason "cl? perdue" "a reason's non-ASCII character is made '?'"
rc_curl "$O_URL/v1/check?id=$(printf 'L%.0s' $(seq 1 1100))"
rc_expect_status 400 "no check can name an id of 1100 bytes"
rc_curl "$O_URL/v1/check?id=b1&scope=bad%20scope"
rc_expect_status 400 "no check can name a scope with a space"
rc_curl "$O_URL/v1/check?id=zz&scope=$S509"
rc_expect_status 400 "no check can name a serial that is not hex"
quarantined 5 && rc_ok "/v1/status counts the five rows left out" ||
    rc_fail "/v1/status counts the five rows left out"
rc_expect_match "$(rc_json source_quarantine.sample)" '"why"' "the status shows a sample with the reason"
rc_curl "$O_URL/metrics"
rc_expect_match "$RC_BODY" $'\nrevcheckd_source_quarantined_rows 5\n' "/metrics has revcheckd_source_quarantined_rows 5"
n=$(grep -c "quarantined: no check can name it" "$T/follow.log" || true)
rc_expect_eq "$n" 5 "each row left out is logged once"

# Through deltas: bad rows, then good ones after them.
bad_rows "-2"
rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('g1')"
rc_psql -c "INSERT INTO revcheck_revocations (id, revoked_at, reason) VALUES ('g2', 'infinity', repeat('é', 70))"
for id in g1 g2; do
	is "$id" revoked && rc_ok "$id, written after bad rows, arrives" ||
	    rc_fail "$id, written after bad rows, arrives: $(grep -i error "$T/follow.log" | tail -n 1)"
done
rc_expect_eq "$(rc_version)" "$v1" "the same base: they came by delta"
quarantined 10 && rc_ok "the changes left out are counted too" ||
    rc_fail "the changes left out are counted too"
head_moves && rc_ok "follow keeps signing heads" || rc_fail "follow keeps signing heads"

# A re-base (a row in a new scope makes one) counts what the table holds.
rc_psql -c "INSERT INTO revcheck_revocations (scope, id) VALUES ('new', 'n1')"
is n1 revoked new && rc_ok "a re-base over the bad rows publishes" ||
    rc_fail "a re-base over the bad rows publishes: $(tail -n 2 "$T/follow.log")"
[ "$(rc_version)" -gt "$v1" ] && rc_ok "it is a new base" || rc_fail "it is a new base"
quarantined 10 && rc_ok "the re-base counts the ten rows the table holds" ||
    rc_fail "the re-base counts the ten rows the table holds"
for id in g0 g1 g2 at-inf ctl%01id; do
	is "$id" revoked || rc_fail "$id revoked in the new base"
done
n=$(grep -c "quarantined: no check can name it" "$T/follow.log" || true)
rc_expect_eq "$n" 10 "a re-base does not log the same rows again"

# A serial with stray white space or odd colon grouping is one a
# certificate can still carry: represented as its digits, never left out.
"$RC_SRC/tests/pki.sh" "$T/pki" >/dev/null
cert() {	# cert LEAF: POSTs the certificate's check
	rc_curl -H 'Content-Type: application/json' --data-binary \
	    "@$(rc_json_body cert "$T/pki/certs/$1.pem")" "$O_URL/v1/check"
}
cert leaf06
CA=$(rc_json scope)
rc_expect_match "$CA" '^x509:' "a certificate's check names its issuer's scope"
rc_psql -c "INSERT INTO revcheck_revocations (scope, id) VALUES
    ('$CA', ' 01 00 '), ('$CA', 'DEA:DBEEF')"
is 0100 revoked "$CA" || rc_fail "the serial ' 01 00 ' arrives"
for c in leaf06:' 01 00 ' leaf08:DEA:DBEEF; do
	cert "${c%%:*}"
	rc_expect_json status revoked "a certificate whose serial a row spells '${c#*:}' is revoked"
done
cert leaf07
rc_expect_json status not_revoked "a certificate of that issuer no row names is not"
quarantined 10 && rc_ok "such serials are not quarantined" ||
    rc_fail "such serials are not quarantined"

# Fixed rows leave the count at the next re-base.
rc_psql -c "DELETE FROM revcheck_revocations WHERE scope LIKE 'bad scope%' OR scope LIKE 'x509:zz%'"
rc_psql -c "INSERT INTO revcheck_revocations (scope, id) VALUES ('new2', 'n2')"
is n2 revoked new2 || rc_fail "the third base is published"
quarantined 6 && rc_ok "rows deleted leave the count" || rc_fail "rows deleted leave the count"
rc_follow_stop
rc_done
