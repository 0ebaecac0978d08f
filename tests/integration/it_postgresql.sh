#!/usr/bin/env bash
# it_postgresql.sh - filterbuild build --source against a real PostgreSQL server: schema, snapshot, hostile values
#
# Starts PostgreSQL (initdb + pg_ctl, tests/integration/pg.sh), applies
# config/postgresql-schema.sql with psql -f, builds from the table and
# checks the answers of a real revcheckd. build --query reads any one
# query (a UNION, a condition on the time) but refuses a key column that
# is not text or varchar; follow refuses --query.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg.sh"

F=$T/filters
mkdir -p "$T/state"
"$FILTERBUILD" keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
rc_pg_start
psql -X -q -v ON_ERROR_STOP=1 -f "$RC_SRC/config/postgresql-schema.sql" "$PG_URL" \
    && rc_ok "schema applies with psql -f" || rc_fail "schema applies with psql -f"
# Applying it twice (an upgrade run) is harmless.
psql -X -q -v ON_ERROR_STOP=1 -f "$RC_SRC/config/postgresql-schema.sql" "$PG_URL" \
    2>/dev/null && rc_ok "schema applies twice" || rc_fail "schema applies twice"

# What an application does to revoke: one INSERT with scope and id.
rc_psql -c "INSERT INTO revcheck_revocations (scope, id) VALUES ('default', 'tok-1')"
rc_psql -c "INSERT INTO revcheck_revocations (scope, id, revoked_at, reason)
    VALUES ('api', 'jti-9', '2026-01-02 03:04:05+00', 'keyCompromise')"
rc_psql -c "INSERT INTO revcheck_revocations (scope, id, expires_at)
    VALUES ('default', 'tok-expired', now() - interval '1 hour'),
           ('default', 'tok-just-expired', now() - interval '1 minute'),
           ('default', 'tok-later', now() + interval '1 day')"
# An un-revocation: the row deleted.
rc_psql -c "INSERT INTO revcheck_revocations (scope, id) VALUES ('default', 'tok-held')"
rc_psql -c "DELETE FROM revcheck_revocations WHERE id = 'tok-held'"
rc_expect_eq "$(rc_psql -c "SELECT count(*) FROM revcheck_changes")" 7 \
    "the trigger logs every change (6 added, 1 removed)"

build() { "$FILTERBUILD" build --key "$T/key.pem" --out "$F" --quiet "$@"; }

if build --source "$PG_URL" 2>"$T/err"; then
	rc_ok "build --source"
else
	rc_fail "build --source: $(cat "$T/err")"
fi
rc_start A --filter-dir "$F" --trusted-key "$T/key.pub" --state-dir "$T/state"
rc_wait_version "$A_URL" 1 || rc_fail "version 1 not served"
rc_curl "$A_URL/v1/check?id=tok-1"; rc_expect_json status revoked "inserted id is revoked"
rc_curl "$A_URL/v1/check?id=jti-9&scope=api"
rc_expect_json status revoked "second scope revoked"
rc_expect_json reason keyCompromise "reason from the database"
rc_expect_json revoked_at 2026-01-02T03:04:05Z "revoked_at from the database"
rc_curl "$A_URL/v1/check?id=tok-later"; rc_expect_json status revoked "unexpired id revoked"
rc_curl "$A_URL/v1/check?id=tok-expired"; rc_expect_json status not_revoked \
    "an expired row is left out"
# A verifier accepts a token a leeway past its exp: its revocation stays
# for --expiry-grace (10m) past expires_at.
rc_curl "$A_URL/v1/check?id=tok-just-expired"; rc_expect_json status revoked \
    "a row expired a minute ago is kept (--expiry-grace)"
"$FILTERBUILD" build --key "$T/key.pem" --out "$T/g0" --quiet --source "$PG_URL" \
    --expiry-grace 0 2>"$T/err" || rc_fail "build --expiry-grace 0: $(cat "$T/err")"
got=$("$FILTERBUILD" inspect --records "$T/g0" | cut -f2 | grep '^tok-' | LC_ALL=C sort | tr '\n' ' ')
rc_expect_eq "$got" "tok-1 tok-later " "--expiry-grace 0 leaves out what expired a minute ago"
rc_expect_match "$(cat "$T/err")" "warning: --expiry-grace 0 is shorter than the longest token leeway revcheckd allows \\(300s\\)" \
    "a grace shorter than a token leeway is warned about"
"$FILTERBUILD" build --key "$T/key.pem" --out "$T/g10" --quiet --source "$PG_URL" 2>"$T/err" ||
    rc_fail "build: $(cat "$T/err")"
[ ! -s "$T/err" ] || rc_fail "the default grace (10m) warned: $(cat "$T/err")"
rc_curl "$A_URL/v1/check?id=tok-held"; rc_expect_json status not_revoked \
    "a deleted row is not revoked"
rc_curl "$A_URL/v1/check?id=tok-2"; rc_expect_json status not_revoked "clean id"
rc_curl "$A_URL/v1/check?id=x&scope=other"; rc_expect_json status not_covered \
    "a scope with no row is not covered"

# The whole read is one REPEATABLE READ transaction: the query sees its
# isolation level (put in the reason column) and can only read. (The query
# drops version 1's scopes on purpose: --allow-shrink.)
build --allow-shrink --source "$PG_URL" --query "SELECT 'iso' AS scope, 'probe' AS id,
    current_setting('transaction_isolation') || '/' ||
    current_setting('transaction_read_only') AS reason" 2>"$T/err" ||
    rc_fail "build with --query: $(cat "$T/err")"
rc_wait_version "$A_URL" 2 || rc_fail "version 2 not served"
rc_curl "$A_URL/v1/check?id=probe&scope=iso"
rc_expect_json reason "repeatable read/on" "one REPEATABLE READ, READ ONLY transaction"
rc_curl "$A_URL/v1/check?id=tok-1"; rc_expect_json status not_covered \
    "--query replaces the default query"
if build --source "$PG_URL" --query "SELECT 1 AS id; DELETE FROM revcheck_revocations" 2>"$T/err"; then
	rc_fail "a query with a second statement was run"
else
	rc_expect_match "$(cat "$T/err")" "postgresql" "a second statement is refused"
fi
if build --source "$PG_URL" --query "SELECT 1 AS id; COMMIT; DELETE FROM revcheck_revocations" 2>"$T/err"; then
	rc_fail "a query that ends the transaction was run"
else
	rc_expect_match "$(cat "$T/err")" "cannot insert multiple commands" \
	    "a query is one statement"
fi
rc_expect_eq "$(rc_psql -c "SELECT count(*) FROM revcheck_revocations")" 5 \
    "nothing was deleted"

# Files and the database together: one filter covers both.
printf 'file-tok\n' >"$T/list.txt"
build --allow-shrink --source "$PG_URL" --scope files "$T/list.txt" 2>"$T/err" ||
    rc_fail "build with a file and --source: $(cat "$T/err")"
rc_wait_version "$A_URL" 3 || rc_fail "version 3 not served"
rc_curl "$A_URL/v1/check?id=file-tok&scope=files"; rc_expect_json status revoked "file id"
rc_curl "$A_URL/v1/check?id=tok-1"; rc_expect_json status revoked "database id beside it"

# A table created before the schema's CHECK constraints (dropped here)
# takes any row. One that no check can name is left out, said, and
# counted in DIR/quarantine.json; every other row is represented (a
# reason cleaned, a time out of range clamped): the build publishes.
for c in scope_ok id_ok revoked_at_ok expires_at_ok reason_ok; do
	rc_psql -c "ALTER TABLE revcheck_revocations DROP CONSTRAINT revcheck_revocations_$c"
done
rc_psql -c "INSERT INTO revcheck_revocations (scope, id, revoked_at, reason) VALUES
    ('default', 'bad-1', now(), E'a\\nb'), ('default', 'bad' || repeat('x', 1997), now(), NULL),
    ('bad scope', 'x', now(), NULL), ('bad', '', now(), NULL),
    ('default', 'bad-2', 'infinity', NULL), ('default', 'bad-3', '1960-01-01 00:00:00+00', NULL)"
build --source "$PG_URL" 2>"$T/err" && rc_ok "a build over rows the builder cannot take publishes" ||
    rc_fail "a build over rows the builder cannot take publishes: $(cat "$T/err")"
rc_expect_match "$(cat "$T/err")" "3 row\(s\) of the source left out" "the build says how many rows it left out"
rc_expect_match "$(cat "$T/err")" 'id "" left out \(quarantined' "each is logged"
rc_expect_match "$(cat "$F/quarantine.json")" '"rows":3,' "quarantine.json counts them"
rc_wait_version "$A_URL" 4 || rc_fail "version 4 not served"
rc_curl "$A_URL/v1/status"; rc_expect_json source_quarantine.rows 3 "/v1/status reports them"
rc_curl "$A_URL/v1/check?id=bad-1"; rc_expect_json reason "a?b" "a reason with a newline is cleaned"
for id in bad-1 bad-2 bad-3; do
	rc_curl "$A_URL/v1/check?id=$id"; rc_expect_json status revoked "$id is revoked"
done
build --source "$PG_URL" --query "SELECT scope, id FROM revcheck_revocations
    UNION ALL SELECT 'default', NULL::text" 2>"$T/err" ||
    rc_fail "a NULL id: $(cat "$T/err")"
rc_expect_match "$(cat "$F/quarantine.json")" '"rows":4,' "a NULL id is left out too"
rc_psql -c "DELETE FROM revcheck_revocations WHERE id LIKE 'bad%' OR scope LIKE 'bad%'"
psql -X -q -v ON_ERROR_STOP=1 -f "$RC_SRC/config/postgresql-schema.sql" "$PG_URL" ||
    rc_fail "the schema adds its constraints back"
snap() { (cd "$F" && find . -printf '%p %l\n' | sort); }
before=$(snap)
if build --source "$PG_URL" --query "SELECT 'x' AS jti" 2>"$T/err"; then
	rc_fail "a query without an id column was accepted"
else
	rc_expect_match "$(cat "$T/err")" 'no column named "id"' "a query without id is refused"
fi
rc_expect_eq "$(snap)" "$before" "DIR unchanged after every refusal"

# ---- build --query: one-shot, so any query that returns the columns ----
# A build reads everything each time: a UNION with another table and a
# condition on the time are fine (follow takes no --query). A key column
# of another type than text or varchar is refused, naming it: char(n) is
# read padded ('tok-1     ') while a check names 'tok-1', and citext is
# one id for the table for several spellings, where revcheck matches
# bytes.
cols="scope, id, revoked_at, reason, expires_at"
rc_psql -c "CREATE TABLE other (LIKE revcheck_revocations INCLUDING ALL);
    INSERT INTO other (id) VALUES ('o0');
    CREATE TABLE padded (LIKE revcheck_revocations INCLUDING ALL);
    ALTER TABLE padded ALTER COLUMN id TYPE char(10);
    INSERT INTO padded (id) VALUES ('tok-1');
    CREATE EXTENSION IF NOT EXISTS citext;
    CREATE TABLE folded (LIKE revcheck_revocations INCLUDING ALL);
    ALTER TABLE folded ALTER COLUMN id TYPE citext;
    INSERT INTO folded (id) VALUES ('Tok-F')"
bq() {	# bq DIR QUERY: build --source --query into DIR
	"$FILTERBUILD" build --source "$PG_URL" --key "$T/key.pem" --out "$1" \
	    --quiet --query "$2"
}
bq "$T/q1" "SELECT $cols FROM revcheck_revocations UNION ALL SELECT $cols FROM other" &&
    rc_ok "build --query over a UNION works" || rc_fail "build --query over a UNION works"
bq "$T/q2" "SELECT $cols FROM revcheck_revocations WHERE revoked_at <= now()" &&
    rc_ok "build --query with now() works" || rc_fail "build --query with now() works"
out=$(bq "$T/q3" "SELECT $cols FROM padded" 2>&1) && rc_fail "build over a char(10) id was published" ||
    rc_expect_match "$out" 'column "id" is character' "build over a char(10) id: refused, naming the column and type"
[ -e "$T/q3/current" ] && rc_fail "char(10) id: a base was published" ||
    rc_ok "char(10) id: nothing published"
out=$(bq "$T/q4" "SELECT $cols FROM folded" 2>&1) && rc_fail "build over a citext id was published" ||
    rc_expect_match "$out" 'column "id" is citext' "build over a citext id: refused, naming the type"
bq "$T/q5" "SELECT scope, id::text AS id, revoked_at FROM padded" &&
    rc_ok "build --query with id::text over char(10) works" ||
    rc_fail "build --query with id::text over char(10) works"

# follow reads the documented table only: --query is refused, saying how
# to feed the table instead.
out=$("$FILTERBUILD" follow --source "$PG_URL" --key "$T/key.pem" --out "$T/fq" \
    --once --query "SELECT $cols FROM other" 2>&1) && st=0 || st=$?
rc_expect_eq "$st" 2 "follow --query: a usage error (exit 2)"
rc_expect_match "$out" "INSERT ... SELECT" "follow --query: the message says how to feed the table"
[ -e "$T/fq/current" ] && rc_fail "follow --query: a base was published" ||
    rc_ok "follow --query: nothing published"

# An unreachable server fails the build without naming the password.
port=$(rc_free_port)
if build --source "postgresql://revcheck:s3cret-pw@127.0.0.1:$port/postgres?connect_timeout=3" \
    2>"$T/err"; then
	rc_fail "a build from an unreachable server succeeded"
else
	rc_expect_match "$(cat "$T/err")" "postgresql: cannot connect" "unreachable server refused"
	if grep -q s3cret-pw "$T/err"; then rc_fail "the password was printed"; else
		rc_ok "the password is not printed"; fi
fi
if build 2>"$T/err"; then rc_fail "build without inputs or --source"; else
	rc_expect_match "$(cat "$T/err")" "no INPUT" "build without inputs is a usage error"; fi
rc_expect_eq "$(snap)" "$before" "DIR unchanged at the end"
rc_done
