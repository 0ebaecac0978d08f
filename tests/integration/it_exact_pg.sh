#!/usr/bin/env bash
# it_exact_pg.sh - exact scopes from PostgreSQL: revcheck_issued read by build --source and by follow at each re-base, deltas on top (real PostgreSQL)
#
# revcheck_issued lists every id issued in scope "api"; build --source
# makes the scope exact in the revocations' snapshot (a revoked id missing
# from it is added, with a warning counting it). filterbuild follow does
# the same at each re-base: an id revoked or un-revoked after the base is
# in the chain's overlay, which wins over the base's exact answer, and the
# ids issued since are in the next base's issued set.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg.sh"

FB() { "$FILTERBUILD" "$@"; }
FB keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
rc_pg_start
psql -X -q -v ON_ERROR_STOP=1 -f "$RC_SRC/config/postgresql-schema.sql" "$PG_URL"
rc_psql -c "INSERT INTO revcheck_issued (scope, id)
    SELECT 'api', 'tok-' || g FROM generate_series(1, 40) g"
rc_psql -c "INSERT INTO revcheck_revocations (scope, id) VALUES
    ('api', 'tok-3'), ('api', 'tok-7'), ('api', 'tok-99')"
# The table's constraints, as revcheck_revocations' (the writer gets the error).
if rc_psql -c "INSERT INTO revcheck_issued (scope, id) VALUES ('x509:zz', '01')" 2>/dev/null; then
	rc_fail "revcheck_issued took an invalid scope"
else
	rc_ok "revcheck_issued refuses an invalid scope"
fi

# ---------------------------------------------------------------- build
G=$T/built
FB build --source "$PG_URL" --key "$T/key.pem" --out "$G" >"$T/b.out" 2>"$T/b.err" ||
    rc_fail "build --source: $(cat "$T/b.err")"
rc_expect_match "$(cat "$T/b.out")" 'exact scope api: \|U\| 41, \|R\| 3' \
    "build --source: scope api exact over revcheck_issued"
rc_expect_match "$(cat "$T/b.err")" 'scope api: 1 revoked id\(s\) not in the issued set' \
    "the revoked id missing from revcheck_issued is counted"
FB inspect --json "$G" >"$T/i.json"
cut=$(python3 -c 'import json,sys; s=[x for x in json.load(open(sys.argv[1]))["scopes"] if x["scope"]=="api"][0]; print(s["exact"]["cutoff"])' "$T/i.json")
db_now=$(rc_psql -c "SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')")
[[ "$cut" < "$db_now" || "$cut" == "$db_now" ]] &&
    rc_ok "the cutoff ($cut) is the read's time, not later" ||
    rc_fail "cutoff $cut after the database's now $db_now"
mkdir -p "$T/sb"
rc_start B --filter-dir "$G" --trusted-key "$T/key.pub" --state-dir "$T/sb"
rc_wait_ready "$B_URL" || rc_fail "daemon on the built pair ready"
rc_curl "$B_URL/v1/check?id=tok-8&scope=api"
rc_expect_json status not_revoked "built: an issued id not revoked"
rc_expect_json source exact "built: ... answered by the exact structure"
rc_curl "$B_URL/v1/check?id=tok-99&scope=api"
rc_expect_json status revoked "built: the revoked id added to the issued set"
rc_stop B

# ---------------------------------------------------------------- follow
F=$T/filters
rc_follow_start "$F" --interval 300ms --valid-for 10m --head-every 2s \
    --rebase-every 3s
for ((i = 0; i < 150; i++)); do [ -e "$F/current" ] && break; sleep 0.2; done
mkdir -p "$T/so"
rc_start O --filter-dir "$F" --trusted-key "$T/key.pub" --state-dir "$T/so"
rc_wait_ready "$O_URL" || rc_fail "origin on the follow directory ready"
rc_curl "$O_URL/v1/status"
rc_expect_match "$RC_BODY" '"scope":"api","keys":3,"exact":\{"cutoff":"[^"]+","issued":41\}' \
    "follow's base: scope api exact, |U| 41"
rc_curl "$O_URL/v1/check?id=tok-9&scope=api"
rc_expect_json source exact "follow: an issued id answered by the exact structure"
# Revoked and un-revoked after the base: the overlay wins.
rc_psql -c "INSERT INTO revcheck_revocations (scope, id) VALUES ('api', 'tok-8')"
rc_psql -c "DELETE FROM revcheck_revocations WHERE scope = 'api' AND id = 'tok-7'"
rc_wait_json "$O_URL/v1/check?id=tok-8&scope=api" status revoked ||
    rc_fail "tok-8, revoked after the base, revoked"
rc_wait_json "$O_URL/v1/check?id=tok-7&scope=api" status not_revoked ||
    rc_fail "tok-7, un-revoked after the base, not_revoked"
rc_ok "ids revoked and un-revoked after the base answer from the chain"
# Issued since: the next re-base's issued set has them.
rc_psql -c "INSERT INTO revcheck_issued (scope, id)
    SELECT 'api', 'tok-' || g FROM generate_series(41, 60) g"
for ((i = 0; i < 150; i++)); do
	rc_curl "$O_URL/v1/status"
	[[ $RC_BODY == *'"issued":61}'* ]] && break
	sleep 0.2
done
rc_expect_match "$RC_BODY" '"scope":"api","keys":3,"exact":\{"cutoff":"[^"]+","issued":61\}' \
    "a re-base reads revcheck_issued again: |U| 61"
rc_curl "$O_URL/v1/check?id=tok-55&scope=api"
rc_expect_json status not_revoked "an id issued since the first base: not_revoked"
rc_expect_json source exact "... from the new base's exact structure"
rc_curl "$O_URL/v1/check?id=tok-8&scope=api"
rc_expect_json status revoked "tok-8 still revoked after the re-base"
rc_done
