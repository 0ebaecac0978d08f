#!/usr/bin/env bash
# it_pg_schema.sh - config/postgresql-schema.sql refuses at INSERT every row filterbuild could not represent, and upgrades an old table (real PostgreSQL)
#
# Each kind of row the builder once refused (an id over 1024 bytes or
# empty, a scope with a space, a malformed x509: scope, a serial that is
# not hex, revoked_at or expires_at infinity or in 1900, a reason of 64
# characters or more or not ASCII) fails its INSERT with a CHECK
# violation, so the writer gets the error; an UPDATE into one too. The
# rows a check can name pass (an x509 serial spelt '0x0A', '0a:1b' or
# '-01', an id with a control byte). The script applied over a table
# created without the constraints (with a bad row in it) succeeds, adds
# them NOT VALID and refuses new bad rows; applied twice it changes
# nothing.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg.sh"

S509=x509:$(printf 'ab%.0s' $(seq 1 32))
SCHEMA=$RC_SRC/config/postgresql-schema.sql
rc_pg_start
psql -X -q -v ON_ERROR_STOP=1 -f "$SCHEMA" "$PG_URL" ||
    rc_fail "the schema applies to an empty database"
psql -X -q -v ON_ERROR_STOP=1 -f "$SCHEMA" "$PG_URL" &&
    rc_ok "the schema applies twice" || rc_fail "the schema applies twice"

# refused WHAT VALUES: the INSERT fails with a CHECK violation.
refused() {
	local out
	if out=$(rc_psql -c "INSERT INTO revcheck_revocations (scope, id, revoked_at, expires_at, reason) VALUES $2" 2>&1); then
		rc_fail "$1 is refused at INSERT (it was inserted)"
	else
		rc_expect_match "$out" "violates check constraint \"revcheck_revocations_" "$1 is refused at INSERT"
	fi
}
refused "an id of 1025 bytes" "('default', repeat('x', 1025), now(), NULL, NULL)"
refused "an empty id" "('default', '', now(), NULL, NULL)"
refused "a scope with a space" "('bad scope', 'a', now(), NULL, NULL)"
refused "an empty scope" "('', 'a', now(), NULL, NULL)"
refused "a scope of 256 characters" "(repeat('s', 256), 'a', now(), NULL, NULL)"
refused "a malformed x509: scope" "('x509:zz', '0a', now(), NULL, NULL)"
refused "an x509: scope in capitals" "('x509:$(printf 'AB%.0s' $(seq 1 32))', '0a', now(), NULL, NULL)"
refused "a serial that is not hex" "('$S509', 'zz', now(), NULL, NULL)"
refused "a serial with an odd group after a colon" "('$S509', '12:3', now(), NULL, NULL)"
refused "revoked_at infinity" "('default', 'a', 'infinity', NULL, NULL)"
refused "revoked_at -infinity" "('default', 'a', '-infinity', NULL, NULL)"
refused "revoked_at in 1900" "('default', 'a', '1900-01-01', NULL, NULL)"
refused "expires_at infinity" "('default', 'a', now(), 'infinity', NULL)"
refused "expires_at in 1900" "('default', 'a', now(), '1900-01-01', NULL)"
refused "a reason of 64 characters" "('default', 'a', now(), NULL, repeat('r', 64))"
refused "a reason that is not ASCII" "('default', 'a', now(), NULL, 'clé')"
refused "a reason with a control character" "('default', 'a', now(), NULL, E'a\\nb')"

out=$(rc_psql -c "INSERT INTO revcheck_revocations (scope, id, revoked_at, expires_at, reason) VALUES
    ('default', repeat('x', 1024), now(), NULL, repeat('r', 63)),
    ('default', E'ctl\\x01id', now(), now() + interval '1 day', 'key compromise'),
    ('$S509', '0x0A', now(), NULL, NULL), ('$S509', '0a:1b', now(), NULL, NULL),
    ('$S509', '-01', now(), NULL, NULL), ('sub:https://issuer.example', 'alice', now(), NULL, NULL)" 2>&1) &&
    rc_ok "rows a check can name are accepted" || rc_fail "rows a check can name are accepted: $out"
out=$(rc_psql -c "UPDATE revcheck_revocations SET id = '' WHERE id = '0x0A'" 2>&1) &&
    rc_fail "an UPDATE into a bad row is refused (it was updated)" ||
    rc_expect_match "$out" "violates check constraint" "an UPDATE into a bad row is refused"

# An old install: the table without the constraints, a bad row in it.
rc_psql -c "CREATE DATABASE old"
OLD_URL=${PG_URL%/*}/old
psql -X -q -v ON_ERROR_STOP=1 -f "$SCHEMA" "$OLD_URL"
for c in scope_ok id_ok revoked_at_ok expires_at_ok reason_ok; do
	psql -X -q -v ON_ERROR_STOP=1 -c "ALTER TABLE revcheck_revocations DROP CONSTRAINT revcheck_revocations_$c" "$OLD_URL"
done
psql -X -q -v ON_ERROR_STOP=1 -c "INSERT INTO revcheck_revocations (scope, id) VALUES ('bad scope', 'old')" "$OLD_URL"
out=$(psql -X -q -v ON_ERROR_STOP=1 -f "$SCHEMA" "$OLD_URL" 2>&1) &&
    rc_ok "the schema upgrades a table holding a bad row" ||
    rc_fail "the schema upgrades a table holding a bad row: $out"
out=$(psql -X -q -v ON_ERROR_STOP=1 -c "INSERT INTO revcheck_revocations (scope, id) VALUES ('x509:zz', '0a')" "$OLD_URL" 2>&1) &&
    rc_fail "after the upgrade a bad row is refused (it was inserted)" ||
    rc_expect_match "$out" "violates check constraint" "after the upgrade a bad row is refused"
# docs/OPERATIONS.md's query finds the old row.
n=$(psql -X -At -v ON_ERROR_STOP=1 -c "SELECT scope, left(id, 40), octet_length(id) FROM revcheck_revocations
     WHERE NOT (scope ~ '^[!-~]{1,255}\$' AND (scope NOT LIKE 'x509:%'
                OR scope ~ '^x509:[0-9a-f]{64}\$'))
        OR octet_length(id) NOT BETWEEN 1 AND 1024
        OR NOT isfinite(revoked_at) OR NOT coalesce(isfinite(expires_at), true)
        OR reason !~ '^[ -~]{0,63}\$'" "$OLD_URL" | wc -l)
rc_expect_eq "$n" 1 "the documented query finds the row the constraints would refuse"
n=$(psql -X -At -c "SELECT count(*) FROM pg_constraint WHERE conrelid = 'revcheck_revocations'::regclass AND contype = 'c' AND NOT convalidated" "$OLD_URL")
rc_expect_eq "$n" 5 "the five constraints are added NOT VALID"
psql -X -q -c "DELETE FROM revcheck_revocations WHERE scope = 'bad scope'" "$OLD_URL"
for c in scope_ok id_ok revoked_at_ok expires_at_ok reason_ok; do
	psql -X -q -v ON_ERROR_STOP=1 -c "ALTER TABLE revcheck_revocations VALIDATE CONSTRAINT revcheck_revocations_$c" "$OLD_URL" ||
	    rc_fail "VALIDATE CONSTRAINT revcheck_revocations_$c once the row is gone"
done
rc_ok "the constraints validate once the bad row is gone"
rc_done
