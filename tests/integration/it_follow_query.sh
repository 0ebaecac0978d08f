#!/usr/bin/env bash
# it_follow_query.sh - filterbuild follow refuses a --query that reads a table the change trigger does not watch (real PostgreSQL)
#
# Deltas carry only what the trigger revcheck_changes_trg logged. A
# --query may read other tables too (a UNION, a join, a subquery, a view,
# a function): their rows were in the base, but an insert into them was
# in no change, while heads kept every node fresh, so a newly revoked id
# there answered not_revoked until the next re-base. Now follow asks the
# server for the query's plan and refuses, naming it, any table without
# the trigger and anything whose reads the plan does not show (a
# set-returning function, a function that is not built in); a view over
# watched tables is followed, and redefining it re-bases.
#
# Deltas also take each change's scope, id and revoked_at from the log,
# the row's own columns, while the base takes them from the query: a
# query that transformed them (lower(id), 'api' AS scope, token AS id in
# a UNION branch) put a new row in a delta under a key the query does
# not return, and the key it does return answered not_revoked under a
# fresh head. Now follow refuses such a query, naming the column; a
# WHERE on a row's own columns, and two rows with one key, still follow
# (a removal is rechecked through the query).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg.sh"

F=$T/filters
"$FILTERBUILD" keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
rc_pg_start
psql -X -q -v ON_ERROR_STOP=1 -f "$RC_SRC/config/postgresql-schema.sql" "$PG_URL"
cols="scope, id, revoked_at, reason, expires_at"
rc_psql -c "CREATE TABLE other (LIKE revcheck_revocations INCLUDING ALL);
    INSERT INTO revcheck_revocations (id) VALUES ('a');
    INSERT INTO other (id) VALUES ('o0');
    CREATE VIEW watched AS SELECT $cols FROM revcheck_revocations WHERE id <> 'never';
    CREATE FUNCTION rows_of_other() RETURNS SETOF revcheck_revocations
        LANGUAGE sql STABLE AS 'SELECT * FROM other';
    CREATE FUNCTION not_in_other(text) RETURNS boolean LANGUAGE plpgsql
        STABLE AS 'BEGIN RETURN NOT EXISTS (SELECT 1 FROM other WHERE id = \$1); END'"
union="SELECT $cols FROM revcheck_revocations UNION ALL SELECT $cols FROM other"

once() {
	"$FILTERBUILD" follow --source "$PG_URL" --key "$T/key.pem" --out "$1" \
	    --once --query "$2" 2>&1
}

# A UNION with a table the trigger does not watch: refused, naming it.
out=$(once "$T/f1" "$union") && rc_fail "a UNION with an unwatched table was followed" ||
    rc_expect_match "$out" "reads public.other, which has no trigger revcheck_changes_trg" \
    "UNION with an unwatched table: refused, naming it"
[ -e "$T/f1/current" ] && rc_fail "UNION with an unwatched table: a base was published" ||
    rc_ok "UNION with an unwatched table: nothing published"
out=$(once "$T/f1" "SELECT $cols FROM revcheck_revocations WHERE id NOT IN (SELECT id FROM other)") &&
    rc_fail "a subquery over an unwatched table was followed" ||
    rc_expect_match "$out" "public.other" "a subquery over an unwatched table: refused"
# A set-returning function, a function that reads a table: refused.
out=$(once "$T/f1" "SELECT $cols FROM revcheck_revocations UNION ALL
    SELECT $cols FROM rows_of_other()") &&
    rc_fail "a function reading an unwatched table was followed" ||
    rc_expect_match "$out" "other" "a function reading an unwatched table: refused"
out2=$(once "$T/f1" "SELECT $cols FROM revcheck_revocations, generate_series(1, 1)") &&
    rc_fail "a set-returning function was followed" ||
    rc_expect_match "$out2" "Function Scan of pg_catalog.generate_series" \
    "a set-returning function: refused, naming it"
out=$(once "$T/f1" "SELECT $cols FROM revcheck_revocations WHERE not_in_other(id)") &&
    rc_fail "a plpgsql function in WHERE was followed" ||
    rc_expect_match "$out" "calls not_in_other" "a plpgsql function: refused, naming it"
[ -e "$T/f1/current" ] && rc_fail "refused queries: a base was published" ||
    rc_ok "refused queries: nothing published"
# build reads everything each time: not refused.
"$FILTERBUILD" build --source "$PG_URL" --key "$T/key.pem" --out "$T/b" \
    --query "$union" --quiet && rc_ok "build --query over the UNION still works" ||
    rc_fail "build --query over the UNION still works"
# A view over the watched table is followed.
out=$(once "$T/f2" "SELECT * FROM watched") && rc_ok "a view over the watched table is followed" ||
    rc_fail "a view over the watched table is followed: $out"

# With the trigger on the second table, the UNION is followed and an
# insert into it reaches a delta (not a re-base), revoked by an origin.
rc_psql -c "CREATE TRIGGER revcheck_changes_trg AFTER INSERT OR UPDATE OR DELETE
    ON other FOR EACH ROW EXECUTE FUNCTION revcheck_changes_log()"
rc_follow_start "$F" --interval 300ms --valid-for 10m --head-every 1s --query "$union"
rc_chain_has "a o0 " && rc_ok "trigger on both: followed" || rc_fail "trigger on both: followed"
v1=$(rc_version)
mkdir -p "$T/state"
rc_start O --filter-dir "$F" --trusted-key "$T/key.pub" --state-dir "$T/state"
rc_wait_json "$O_URL/v1/check?id=o1" status not_revoked || rc_fail "origin: o1 not yet revoked"
rc_psql -c "INSERT INTO other (id) VALUES ('o1')"
rc_wait_json "$O_URL/v1/check?id=o1" status revoked &&
    rc_ok "an insert into the second table is revoked by the origin" ||
    rc_fail "an insert into the second table is revoked by the origin: $(rc_json status)"
rc_expect_json source delta "the delta decided"
rc_expect_eq "$(rc_version)" "$v1" "through a delta, not a re-base"

# The second table's trigger disabled: nothing more is published.
m=$(rc_log_mark "$T/follow.log")
rc_psql -c "ALTER TABLE other DISABLE TRIGGER revcheck_changes_trg"
rc_wait_log_since "$T/follow.log" "$m" "revcheck_changes_trg on public.other is disabled" &&
    rc_ok "second table's trigger disabled: the log names the table" ||
    rc_fail "second table's trigger disabled: the log names the table: $(tail -n 2 "$T/follow.log")"
rc_follow_refuses "revcheck_changes_trg on public.other is disabled" "second table's trigger disabled"
rc_psql -c "ALTER TABLE other ENABLE TRIGGER revcheck_changes_trg"
rc_chain_has "a o0 o1 " && rc_ok "enabled again: followed" || rc_fail "enabled again: followed"
rc_follow_stop

# A view the query names, redefined to read a watched table with rows the
# chain never saw: the next round re-bases and finds them.
F=$T/filters2
rc_follow_start "$F" --interval 300ms --valid-for 10m --head-every 1s \
    --query "SELECT * FROM watched"
rc_chain_has "a " && rc_ok "following the view" || rc_fail "following the view"
v2=$(rc_version)
rc_psql -c "CREATE OR REPLACE VIEW watched AS SELECT $cols FROM revcheck_revocations
    WHERE id <> 'never' UNION ALL SELECT $cols FROM other"
rc_chain_has "a o0 o1 " && rc_ok "the view redefined: its new rows reach the chain" ||
    rc_fail "the view redefined: its new rows reach the chain"
[ "$(rc_version)" -gt "$v2" ] && rc_ok "through a re-base" || rc_fail "through a re-base"
# Redefined to read an unwatched table: refused in the round.
m=$(rc_log_mark "$T/follow.log")
rc_psql -c "CREATE TABLE unwatched (LIKE revcheck_revocations);
    CREATE OR REPLACE VIEW watched AS SELECT $cols FROM revcheck_revocations
    WHERE id <> 'never' UNION ALL SELECT $cols FROM other
    UNION ALL SELECT $cols FROM unwatched"
rc_wait_log_since "$T/follow.log" "$m" "reads public.unwatched, which has no trigger" &&
    rc_ok "the view now reads an unwatched table: the log names it" ||
    rc_fail "the view now reads an unwatched table: the log names it: $(tail -n 2 "$T/follow.log")"
rc_follow_refuses "reads public.unwatched, which has no trigger" "the view now reads an unwatched table"
rc_follow_stop

# ---- the key columns: deltas take them from the log, the base from the query
F=$T/filters3
rc_psql -c "CREATE TABLE tokens (LIKE revcheck_revocations INCLUDING ALL);
    ALTER TABLE tokens ADD COLUMN token text;
    CREATE TRIGGER revcheck_changes_trg AFTER INSERT OR UPDATE OR DELETE
        ON tokens FOR EACH ROW EXECUTE FUNCTION revcheck_changes_log();
    INSERT INTO tokens (id, token) VALUES ('t-id0', 't-tok0');
    INSERT INTO revcheck_revocations (scope, id) VALUES ('api', 'r-api')"
ids_of() {
	"$FILTERBUILD" verify --pub "$T/key.pub" --records "$1" 2>/dev/null |
	    cut -f2 | LC_ALL=C sort | tr '\n' ' '
}
# key_probe NAME QUERY CHANGE RAW CHECK what: follows QUERY, makes CHANGE
# (a write whose logged id is RAW); the query then returns the key of
# CHECK (a query string of /v1/check). Unless nothing was published, an
# origin on the chain, once the change is in it under a fresh head, must
# not answer not_revoked for CHECK.
key_probe() {
	local name=$1 q=$2 change=$3 raw=$4 check=$5 what=$6 d=$T/$1 url i off
	local refused=false
	off=$(stat -c %s "$T/follow.log" 2>/dev/null || echo 0)
	rc_follow_start "$d" --interval 300ms --valid-for 10m --head-every 1s --query "$q"
	for i in $(seq 1 150); do
		[ -e "$d/current/delta/head.rcd" ] && break
		# A refusal is said in the round: nothing to wait for.
		if grep -q "the query's column" < <(tail -c +$((off + 1)) "$T/follow.log"); then
			refused=true
			break
		fi
		sleep 0.2
	done
	rc_psql -c "$change"
	# Refused, the follower still gets two rounds after the change to
	# (wrongly) publish.
	if $refused; then
		off=$(rc_log_mark "$T/follow.log")
		rc_wait_log_since "$T/follow.log" "$off" "the query's column" 2 ||
		    echo "# $what: the follower did not refuse two more rounds" >&2
	fi
	for i in $(seq 1 150); do
		! $refused || break
		case " $(ids_of "$d")" in *" $raw "*) break ;; esac
		sleep 0.2
	done
	if [ ! -e "$d/current" ]; then
		rc_ok "$what: nothing published"
	else
		rc_start "$name" --filter-dir "$d" --trusted-key "$T/key.pub" \
		    --state-dir "$T/state-$name"
		url="${name}_URL"
		rc_wait_json "${!url}/v1/check?id=$raw" status revoked 30 ||
		    echo "# $what: the change is not in the chain" >&2
		rc_curl "${!url}/v1/check?$check"
		st=$(rc_json status)
		[ "$st" != not_revoked ] && rc_ok "$what: $check answered $st" ||
		    rc_fail "$what: $check (a key the query returns) answered not_revoked under a fresh head"
	fi
	rc_follow_stop
}
key_probe kl "SELECT scope, lower(id) AS id, revoked_at FROM revcheck_revocations" \
    "INSERT INTO revcheck_revocations (id) VALUES ('UP-1')" UP-1 "id=up-1" "lower(id)"
grep -q "the query's column id is lower(id)" "$T/follow.log" &&
    rc_ok "lower(id): refused, naming the column" ||
    rc_fail "lower(id): refused, naming the column: $(tail -n 1 "$T/follow.log")"
key_probe ks "SELECT scope, id, revoked_at FROM revcheck_revocations UNION ALL
    SELECT 'api' AS scope, id, revoked_at FROM tokens" \
    "INSERT INTO tokens (id, token) VALUES ('t-id1', 't-tok1')" t-id1 "id=t-id1&scope=api" \
    "a constant scope in a UNION branch"
grep -q "the query's column scope is 'api'::text" "$T/follow.log" &&
    rc_ok "a constant scope: refused, naming the column" ||
    rc_fail "a constant scope: refused, naming the column: $(tail -n 1 "$T/follow.log")"
key_probe kt "SELECT scope, id, revoked_at FROM revcheck_revocations UNION ALL
    SELECT scope, token AS id, revoked_at FROM tokens" \
    "INSERT INTO tokens (id, token) VALUES ('t-id2', 't-tok2')" t-id2 "id=t-tok2" \
    "another column as id in a UNION branch"
grep -q "the query's column id is tokens.token, not the column id of a table (public.tokens)" \
    "$T/follow.log" && rc_ok "token AS id: refused, naming the column and the table" ||
    rc_fail "token AS id: refused, naming the column and the table: $(tail -n 1 "$T/follow.log")"
# Refused at once, nothing published: a column alias list (the plan shows
# the new names), a view with one, a transformed revoked_at (a cutoff's
# time), no revoked_at, a join, a LIMIT.
rc_psql -c "CREATE VIEW kept AS SELECT $cols FROM revcheck_revocations WHERE id <> 'never';
    CREATE VIEW swapped AS SELECT r.id, r.scope, r.revoked_at
    FROM revcheck_revocations AS r(id, scope)"
for q in "SELECT r.scope, r.id, r.revoked_at FROM revcheck_revocations AS r(id, scope)|column alias list" \
    "SELECT * FROM swapped|column alias list" \
    "SELECT scope, id, revoked_at + interval '1 day' AS revoked_at FROM revcheck_revocations|column revoked_at is .revoked_at . '1 day'" \
    "SELECT scope, id FROM revcheck_revocations|no column named \"revoked_at\"" \
    "SELECT r.scope, r.id, r.revoked_at FROM revcheck_revocations r JOIN tokens t ON t.id = r.id|Join above the column id" \
    "SELECT $cols FROM revcheck_revocations ORDER BY revoked_at LIMIT 1|Limit above the column id"; do
	out=$(once "$T/f3" "${q%%|*}") && rc_fail "followed: ${q%%|*}" ||
	    rc_expect_match "$out" "${q##*|}" "refused: ${q%%|*}"
done
[ -e "$T/f3/current" ] && rc_fail "refused key columns: a base was published" ||
    rc_ok "refused key columns: nothing published"

# Still followed: the plain columns through a view with a WHERE, a UNION
# (duplicates removed) and DISTINCT. A row the WHERE now leaves out and a
# second row of one key go through the removal recheck, which reads the
# query: a key the query still returns stays revoked; one it no longer
# returns is released; the new key of a row the WHERE excludes is
# revoked (a delta carries every logged add: closed) until a re-base.
for q in "SELECT * FROM kept" \
    "SELECT $cols FROM revcheck_revocations UNION SELECT $cols FROM tokens" \
    "SELECT DISTINCT scope, id, revoked_at FROM revcheck_revocations WHERE id <> 'never'"; do
	out=$(once "$T/f4" "$q") && rc_ok "followed: $q" || rc_fail "followed: $q: $out"
	rm -rf "$T/f4"
done
rc_follow_start "$F" --interval 300ms --valid-for 10m --head-every 1s --query \
    "SELECT * FROM kept UNION ALL SELECT $cols FROM tokens WHERE id <> 'never'"
for i in $(seq 1 150); do [ -e "$F/current/delta/head.rcd" ] && break; sleep 0.2; done
v3=$(rc_version)
rc_start W --filter-dir "$F" --trusted-key "$T/key.pub" --state-dir "$T/state-w"
rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('dup'), ('w1');
    INSERT INTO tokens (id) VALUES ('dup')"
rc_wait_json "$W_URL/v1/check?id=w1" status revoked 30 || rc_fail "w1 revoked"
rc_psql -c "DELETE FROM revcheck_revocations WHERE id = 'dup'"
rc_psql -c "UPDATE revcheck_revocations SET id = 'never' WHERE id = 'w1'"
rc_wait_json "$W_URL/v1/check?id=w1" status not_revoked 30 &&
    rc_ok "a row the WHERE now leaves out: its key released" ||
    rc_fail "a row the WHERE now leaves out: its key released: $(rc_json status)"
rc_curl "$W_URL/v1/check?id=dup"
rc_expect_json status revoked "one of two rows of a key deleted: still revoked (recheck)"
rc_curl "$W_URL/v1/check?id=never"
rc_expect_json status revoked "the new key of a row the WHERE excludes: revoked until a re-base (closed)"
rc_expect_eq "$(rc_version)" "$v3" "all through deltas, not a re-base"
rc_follow_stop
# ---- a WHERE whose truth changes with time alone ---------------------
# A row whose revoked_at is 3 s ahead when the base is read is left out by
# "WHERE revoked_at <= now()"; once that time passes, the query returns
# it, but no change was logged: heads kept every node fresh while it
# answered not_revoked until the next re-base. Now follow refuses any
# call of a function that is not IMMUTABLE, CURRENT_TIMESTAMP and the
# other SQL value keywords, 'now'-like literals and casts to date/time
# types, naming them; nothing is published.
F=$T/filters5
rc_psql -c "INSERT INTO revcheck_revocations (id, revoked_at)
    VALUES ('later-1', now() + interval '3 seconds')"
tq="SELECT $cols FROM revcheck_revocations WHERE revoked_at <= now()"
m=$(rc_log_mark "$T/follow.log")
rc_follow_start "$F" --interval 300ms --valid-for 10m --head-every 1s --query "$tq"
for i in $(seq 1 150); do
	[ -e "$F/current/delta/head.rcd" ] && break
	rc_log_has "$T/follow.log" "$m" "the query calls now\(\)" && break
	sleep 0.2
done
# Until later-1's revoked_at has passed: the query returns it from then on.
for i in $(seq 1 150); do
	[ "$(rc_psql -c "SELECT count(*) FROM revcheck_revocations
	    WHERE id = 'later-1' AND revoked_at <= now()")" = 1 ] && break
	sleep 0.2
done
if [ ! -e "$F/current" ]; then
	rc_ok "revoked_at <= now(): nothing published"
else
	# A head signed after revoked_at passed: the chain claims to be
	# complete as of a time the query returns later-1.
	h=$(rc_head_sha)
	for i in $(seq 1 150); do [ "$(rc_head_sha)" != "$h" ] && break; sleep 0.2; done
	rc_start TQ --filter-dir "$F" --trusted-key "$T/key.pub" --state-dir "$T/state-tq"
	rc_wait_json "$TQ_URL/v1/check?id=a" status revoked 30 || rc_fail "origin: the chain is not loaded"
	rc_curl "$TQ_URL/v1/check?id=later-1"
	st=$(rc_json status)
	[ "$st" != not_revoked ] && rc_ok "revoked_at <= now(): later-1 answered $st" ||
	    rc_fail "revoked_at <= now(): later-1 (revoked_at passed, the query returns it) answered not_revoked under a fresh head"
fi
rc_log_has "$T/follow.log" "$m" "the query calls now\(\)" &&
    rc_ok "revoked_at <= now(): refused, naming now()" ||
    rc_fail "revoked_at <= now(): refused, naming now(): $(tail -n 1 "$T/follow.log")"
rc_follow_stop
rc_psql -c "CREATE FUNCTION my_now() RETURNS timestamptz LANGUAGE internal STABLE AS 'now';
    CREATE VIEW recent AS SELECT $cols FROM revcheck_revocations WHERE revoked_at <= now();
    CREATE VIEW recent2 AS SELECT $cols FROM revcheck_revocations
        WHERE revoked_at <= CURRENT_TIMESTAMP"
for q in "WHERE revoked_at <= CURRENT_TIMESTAMP|CURRENT_TIMESTAMP" \
    "WHERE revoked_at <= current_timestamp(0)|CURRENT_TIMESTAMP" \
    "WHERE revoked_at::date <= current_date|CURRENT_DATE" \
    "WHERE revoked_at <= localtimestamp|LOCALTIMESTAMP" \
    "WHERE revoked_at <= statement_timestamp()|calls statement_timestamp()" \
    "WHERE revoked_at <= transaction_timestamp()|calls transaction_timestamp()" \
    "WHERE revoked_at <= clock_timestamp()|calls clock_timestamp()" \
    "WHERE revoked_at::text <= timeofday()|calls timeofday()" \
    "WHERE age(revoked_at) > interval '1 day'|calls age.timestamp with time zone." \
    "WHERE revoked_at <= now() - interval '1 hour'|calls now()" \
    "WHERE revoked_at <= my_now()|calls my_now()" \
    "WHERE revoked_at <= 'now'|'now'" \
    "WHERE revoked_at <= timestamptz 'Tomorrow'|'tomorrow'" \
    "WHERE revoked_at::date <= E'\\x74oday'::date|'today'" \
    "WHERE revoked_at <= reason::timestamptz|cast to timestamp with time zone" \
    "WHERE revoked_at::date < '2030-01-01'|cast to date"; do
	out=$(once "$T/f5" "SELECT $cols FROM revcheck_revocations ${q%%|*}") &&
	    rc_fail "followed: ${q%%|*}" ||
	    rc_expect_match "$out" "${q##*|}" "refused: ${q%%|*}"
done
for q in "SELECT * FROM recent|calls now()" "SELECT * FROM recent2|CURRENT_TIMESTAMP"; do
	out=$(once "$T/f5" "${q%%|*}") && rc_fail "followed: ${q%%|*}" ||
	    rc_expect_match "$out" "${q##*|}" "refused: ${q%%|*}"
done
[ -e "$T/f5/current" ] && rc_fail "time-dependent queries: a base was published" ||
    rc_ok "time-dependent queries: nothing published"
# Still followed: a WHERE against a constant time, a comparison of a
# row's own times, a constant interval. build --query is not held to it.
for q in "SELECT $cols FROM revcheck_revocations WHERE revoked_at <= '2030-01-01 00:00:00+00'" \
    "SELECT $cols FROM revcheck_revocations WHERE expires_at IS NULL OR expires_at > revoked_at + interval '1 second'" \
    "SELECT $cols FROM revcheck_revocations WHERE reason IS DISTINCT FROM 'nowhere'"; do
	out=$(once "$T/f6" "$q") && rc_ok "followed: $q" || rc_fail "followed: $q: $out"
	rm -rf "$T/f6"
done
"$FILTERBUILD" build --source "$PG_URL" --key "$T/key.pem" --out "$T/b2" \
    --query "$tq" --quiet && rc_ok "build --query with now() still works" ||
    rc_fail "build --query with now() still works"

# ---- key column types: char(n) pads, citext compares without case -----
# A char(10) id is read padded ('tok-1     ') by a full read, while the
# trigger logs it trimmed (NEW.id into a text column): the base held a
# key no check asks for, and 'tok-1' answered not_revoked, from build
# --source and from follow's base alike. A citext id is one revoked id
# for the table in every case, one key for revcheck. Both are refused,
# naming the column and its type.
rc_psql -c "CREATE TABLE padded (LIKE revcheck_revocations INCLUDING ALL);
    ALTER TABLE padded ALTER COLUMN id TYPE char(10);
    CREATE TRIGGER revcheck_changes_trg AFTER INSERT OR UPDATE OR DELETE
        ON padded FOR EACH ROW EXECUTE FUNCTION revcheck_changes_log();
    INSERT INTO padded (id) VALUES ('tok-1');
    CREATE EXTENSION IF NOT EXISTS citext;
    CREATE TABLE folded (LIKE revcheck_revocations INCLUDING ALL);
    ALTER TABLE folded ALTER COLUMN id TYPE citext;
    CREATE TRIGGER revcheck_changes_trg AFTER INSERT OR UPDATE OR DELETE
        ON folded FOR EACH ROW EXECUTE FUNCTION revcheck_changes_log();
    INSERT INTO folded (id) VALUES ('Tok-F')"
# probe NAME DIR: an origin on DIR must not answer not_revoked for id=tok-1.
probe_padded() {
	local url
	if [ ! -e "$2/current" ]; then
		rc_ok "$3: nothing published"
		return
	fi
	rc_start "$1" --filter-dir "$2" --trusted-key "$T/key.pub" --state-dir "$T/state-$1"
	url="${1}_URL"
	rc_wait_json "${!url}/v1/check?id=tok-1" status not_revoked 15 ||
	    rc_wait_json "${!url}/v1/check?id=tok-1" status revoked 15
	rc_curl "${!url}/v1/check?id=tok-1"
	st=$(rc_json status)
	[ "$st" != not_revoked ] && rc_ok "$3: tok-1 answered $st" ||
	    rc_fail "$3: tok-1 (a row of the table) answered not_revoked"
}
out=$("$FILTERBUILD" build --source "$PG_URL" --key "$T/key.pem" --out "$T/b3" \
    --query "SELECT $cols FROM padded" 2>&1) || true
probe_padded PB "$T/b3" "build --source over a char(10) id"
rc_expect_match "$out" 'column "id" is character' "build --source over a char(10) id: refused, naming the column and type"
out=$(once "$T/f7" "SELECT $cols FROM padded") || true
probe_padded PF "$T/f7" "follow over a char(10) id"
rc_expect_match "$out" 'column "id" is character' "follow over a char(10) id: refused, naming the column and type"
out=$(once "$T/f8" "SELECT $cols FROM folded") && rc_fail "follow over a citext id was followed" ||
    rc_expect_match "$out" 'column "id" is citext' "follow over a citext id: refused, naming the type"
out=$("$FILTERBUILD" build --source "$PG_URL" --key "$T/key.pem" --out "$T/b4" \
    --query "SELECT $cols FROM folded" 2>&1) && rc_fail "build over a citext id was published" ||
    rc_expect_match "$out" 'column "id" is citext' "build over a citext id: refused, naming the type"
"$FILTERBUILD" build --source "$PG_URL" --key "$T/key.pem" --out "$T/b5" --quiet \
    --query "SELECT scope, id::text AS id, revoked_at FROM padded" &&
    rc_ok "build --query with id::text over char(10) works" ||
    rc_fail "build --query with id::text over char(10) works"
rc_done
