#!/usr/bin/env bash
# it_follow.sh - filterbuild follow against a real PostgreSQL: deltas, cursor, kills, restarts, lost notifications
#
# The database is the truth: after every disturbance the effective set of
# the published chain (filterbuild verify --records) must equal the rows
# of revcheck_revocations, and the chain must verify.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg.sh"

F=$T/filters
KILLS=${IT_FOLLOW_KILLS:-8}
"$FILTERBUILD" keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
rc_pg_start
psql -X -q -v ON_ERROR_STOP=1 -f "$RC_SRC/config/postgresql-schema.sql" "$PG_URL"

follow_start() {
	rc_follow_start "$F" --interval "${INTERVAL:-300ms}" --valid-for 10m \
	    --head-every 2s "$@"
}

# The effective set of the chain, and of the database, as "scope id" lines.
chain_ids() {
	"$FILTERBUILD" verify --pub "$T/key.pub" --records "$F" 2>>"$T/verify.err" |
	    cut -f1,2 | LC_ALL=C sort
}
db_ids() {
	rc_psql -F "$(printf '\t')" -c "SELECT scope, id FROM revcheck_revocations
	    WHERE expires_at IS NULL OR expires_at > now()" | LC_ALL=C sort
}
# Waits until the chain shows exactly what the database holds.
converged() {
	local want i
	want=$(db_ids)
	for i in $(seq 1 "${1:-150}"); do
		[ "$(chain_ids)" = "$want" ] && return 0
		sleep 0.2
	done
	echo "# chain: $(chain_ids | tr '\n' ' ')" >&2
	echo "# db:    $want" | tr '\n' ' ' >&2
	return 1
}
version() { readlink "$F/current" | sed 's/^v0*//'; }

rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('a'), ('b')"
follow_start
converged && rc_ok "first base has the rows" || rc_fail "first base has the rows"
v1=$(version)

# Inserts and deletes become deltas of the same base, woken by NOTIFY.
rc_psql -c "INSERT INTO revcheck_revocations (id, reason) VALUES ('c', 'keyCompromise')"
rc_psql -c "DELETE FROM revcheck_revocations WHERE id = 'a'"
converged && rc_ok "insert and delete reach the chain" ||
    rc_fail "insert and delete reach the chain"
rc_expect_eq "$(version)" "$v1" "changes are deltas, not a new base"
ls "$F/current/delta/" | grep -q '^0\{19\}1\.rcd$' && rc_ok "delta 1 written" ||
    rc_fail "delta 1 written"
out=$("$FILTERBUILD" verify --pub "$T/key.pub" "$F" 2>&1) &&
    rc_expect_match "$out" "chain OK" "the chain verifies" || rc_fail "verify: $out"
"$FILTERBUILD" verify --pub "$T/key.pub" --records "$F" | grep -q "	c	.*	keyCompromise$" &&
    rc_ok "reason carried by the delta" || rc_fail "reason carried by the delta"

# An origin serving DIR enforces the deltas: an insert is revoked and a
# delete released within seconds, and the answer names the delta sequence.
mkdir -p "$T/state"
# revocation-only: /v1/authz reads a token's jti without verifying it, so
# an unsigned token can ask for a key the deltas revoked.
rc_start O --filter-dir "$F" --trusted-key "$T/key.pub" --state-dir "$T/state" \
    --token-verification revocation-only
rc_wait_version "$O_URL" "$v1" || rc_fail "origin serves the base"
# node_is URL ID STATUS: waits until a check of ID answers STATUS (20 s at
# most: the target is seconds, the margin is for a loaded machine).
node_is() { rc_wait_json "$1/v1/check?id=$2" status "$3"; }
answer_is() { node_is "$O_URL" "$@"; }
answer_is c revoked && rc_ok "origin: a delta's add is revoked" ||
    rc_fail "origin: a delta's add is revoked"
rc_expect_json source delta "origin: the overlay decided"
rc_expect_json reason keyCompromise "origin: the delta's reason"
rc_expect_json filter_version "$v1" "origin: the base version"
answer_is a not_revoked && rc_ok "origin: a delta's removal takes effect" ||
    rc_fail "origin: a delta's removal takes effect"
rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('live')"
answer_is live revoked && rc_ok "origin: a new row is enforced within 20 s" ||
    rc_fail "origin: a new row is enforced within 20 s"
seq=$(rc_json delta_seq)
[ "${seq:-0}" -ge 2 ] && rc_ok "origin: the answer names delta $seq" ||
    rc_fail "origin: delta_seq is '$seq'"
rc_expect_eq "$(rc_header X-Revcheck-Delta-Seq)" "$seq" \
    "origin: the check's X-Revcheck-Delta-Seq names the delta"
# /v1/authz and introspection name the delta that decided too.
rc_curl -H "Authorization: Bearer $(rc_jwt "" live)" "$O_URL/v1/authz"
rc_expect_status 403 "origin: authz refuses a token a delta revoked"
rc_expect_json verdict revoked "origin: authz verdict"
rc_expect_json delta_seq "$seq" "origin: the authz answer names the delta"
rc_expect_eq "$(rc_header X-Revcheck-Delta-Seq)" "$seq" \
    "origin: the authz X-Revcheck-Delta-Seq names the delta"
rc_curl -X POST -H 'Content-Type: application/json' \
    --data '{"items":[{"id":"live"},{"id":"a"}]}' "$O_URL/v1/check"
rc_expect_eq "$(rc_header X-Revcheck-Delta-Seq)" "$seq" \
    "origin: a batch's X-Revcheck-Delta-Seq names the delta"
rc_curl "$O_URL/v1/status"
rc_expect_json filter.delta.seq "$seq" "status: delta seq"
rc_expect_match "$(rc_json filter.delta.overlay_keys)" '^[1-9]' "status: overlay size"
rc_expect_match "$(rc_json filter.delta.last_delta_age_seconds)" '^[0-9]+$' \
    "status: age of the last delta"
rc_expect_match "$(rc_json filter.delta.revocation_lag_seconds)" '^[0-9]+$' \
    "status: revocation lag"
rc_curl "$O_URL/metrics"
rc_expect_match "$RC_BODY" "revcheckd_delta_seq $seq" "metrics: delta seq"
rc_expect_match "$RC_BODY" "revcheckd_deltas_applied_total [1-9]" "metrics: deltas applied"

# The origin serves its chain: /v1/delta?base=V&after=N, ETag and 304.
rc_curl "$O_URL/v1/delta?base=$v1&after=0"
rc_expect_status 200 "origin: /v1/delta answers"
tag=$(rc_header ETag)
rc_expect_eq "$(rc_header X-Revcheck-Delta-Seq)" "$seq" "origin: /v1/delta names the seq"
# The head is re-signed every 2 s (--head-every), which changes the tag:
# a 200 carrying a new tag is that refresh, so ask again (5 tries); a 200
# carrying the tag that was sent is the failure this case looks for.
etag_ok=""
for try in 1 2 3 4 5; do
	rc_curl -H "If-None-Match: $tag" "$O_URL/v1/delta?base=$v1&after=0"
	[ "$RC_STATUS" = 304 ] && { etag_ok=1; break; }
	[ "$RC_STATUS" = 200 ] && [ "$(rc_header ETag)" != "$tag" ] || break
	tag=$(rc_header ETag)
done
[ -n "$etag_ok" ] && rc_ok "origin: /v1/delta with its ETag -> 304" ||
    rc_fail "origin: /v1/delta with its ETag -> 304 (got $RC_STATUS, sent $tag, got tag $(rc_header ETag))"
rc_curl "$O_URL/v1/delta?base=$((v1 + 100))&after=0"
rc_expect_status 409 "origin: /v1/delta for another base"
rc_expect_json error other_base
rc_curl "$O_URL/v1/delta?base=x&after=0"
rc_expect_status 400 "origin: /v1/delta with a bad parameter"

# An edge syncing from the origin applies the same deltas.
rc_start E --upstream-filter "$O_URL/v1/filter" --upstream-check "$O_URL/v1/check" \
    --upstream-insecure-http --trusted-key "$T/key.pub" --state-dir "$T/edge" \
    --sync-interval 1
edge_is() { node_is "$E_URL" "$@"; }
edge_is live revoked && rc_ok "edge: a delta's add is revoked" ||
    rc_fail "edge: a delta's add is revoked"
rc_expect_json source delta "edge: the overlay decided, no call upstream"
edge_is a not_revoked && rc_ok "edge: a removal takes effect" ||
    rc_fail "edge: a removal takes effect"
rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('edge-live')"
edge_is edge-live revoked && rc_ok "edge: a new row is enforced within 20 s" ||
    rc_fail "edge: a new row is enforced within 20 s"
rc_psql -c "DELETE FROM revcheck_revocations WHERE id = 'b'"
edge_is b not_revoked && rc_ok "edge: a delete is released" ||
    rc_fail "edge: a delete is released"
# Idle: the edge keeps fresh for well under 1 kB per interval.
rc_curl "$E_URL/v1/status"
f0=$(rc_json sync.delta_fetches); b0=$(rc_json sync.delta_bytes)
for _ in $(seq 1 300); do	# until 3 more intervals' fetches
	rc_curl "$E_URL/v1/status"
	f1=$(rc_json sync.delta_fetches); b1=$(rc_json sync.delta_bytes)
	[ "$((f1 - f0))" -ge 3 ] && break
	sleep 0.1
done
rc_expect_json filter.stale false "edge: fresh while idle"
if [ "$((f1 - f0))" -gt 0 ] && [ "$(((b1 - b0) / (f1 - f0)))" -le 1024 ]; then
	rc_ok "edge: idle costs $(((b1 - b0) / (f1 - f0))) bytes per interval"
else
	rc_fail "edge: idle cost $((b1 - b0)) bytes in $((f1 - f0)) fetches"
fi

# An edge syncing from a static copy of DIR (a real nginx) follows the
# chain too: the head, then the delta files it names.
NG=$T/nginx
mkdir -p "$NG"
for try in 1 2 3 4 5; do
	port=$(rc_free_port)
	{ rc_nginx_conf "$NG"; cat <<EOF; } >"$NG/nginx.conf"
    default_type application/octet-stream;
    server {
        listen 127.0.0.1:$port;
        location /filters/ { alias $F/; etag on; }
        location / { return 404; }
    }
}
EOF
	rc_nginx_run "$NG" "$port" && break
done
rc_start S --upstream-filter "http://127.0.0.1:$port/filters/current/filter.rcf" \
    --upstream-insecure-http --upstream-check "$O_URL/v1/check" \
    --trusted-key "$T/key.pub" --state-dir "$T/static" --sync-interval 1
node_is "$S_URL" live revoked && rc_ok "static edge: a delta's add is revoked" ||
    rc_fail "static edge: a delta's add is revoked"
rc_expect_json source delta "static edge: the overlay decided"
node_is "$S_URL" b not_revoked && rc_ok "static edge: a removal takes effect" ||
    rc_fail "static edge: a removal takes effect"
rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('static-live')"
node_is "$S_URL" static-live revoked && rc_ok "static edge: a new row is enforced" ||
    rc_fail "static edge: a new row is enforced"

# filterbuild audit shows the chain of every node.
"$FILTERBUILD" audit --json "$O_URL" "$E_URL" >"$T/audit.json" 2>&1 || true
got=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
print(" ".join("%s:%s" % (n["mode"], n["delta"]["seq"] >= 1 and n["delta"]["overlay_keys"] >= 1
    and n["delta"]["last_delta_age_seconds"] is not None) for n in d["nodes"]))' "$T/audit.json")
[ "$got" = "origin:True edge:True" ] &&
    rc_ok "audit --json: delta seq, overlay, age per node" ||
    rc_fail "audit --json: delta seq, overlay, age per node: got '$got' from $(tr -d '\n' <"$T/audit.json" | head -c 1500)"
out=$("$FILTERBUILD" audit "$O_URL" 2>&1 || true)
rc_expect_match "$out" "DELTA .* LAG" "audit table: DELTA and LAG columns"

# A lost notification costs at most an interval: the cursor is the truth.
# The trigger does not fire for one transaction (a replica session, which
# leaves the trigger as it is: disabling it makes the follower re-base,
# it_follow_trigger.sh) that logs its change by hand, as the trigger
# would, but sends no notification.
vn=$(version)
rc_psql -c "BEGIN;
    SET LOCAL session_replication_role = replica;
    INSERT INTO revcheck_revocations (id) VALUES ('silent');
    INSERT INTO revcheck_changes (op, scope, id) VALUES ('A', 'default', 'silent');
    COMMIT"
converged && rc_ok "a change without a notification is published" ||
    rc_fail "a change without a notification is published"
rc_expect_eq "$(version)" "$vn" "a change without a notification: a delta, not a re-base"

# A transaction that took its id first but commits last is not skipped
# (a plain sequence cursor would skip it).
# The follower holds its cursor below the open transaction, so neither
# is published until 'slow' commits. The transaction stays open (fed
# through a FIFO) until the test commits it, and 'fast' is inserted only
# once 'slow' has its row, so a slow machine cannot change the order.
mkfifo "$T/slow.in"
psql -X -q -v ON_ERROR_STOP=1 "$PG_URL" <"$T/slow.in" >/dev/null &
slow=$!
exec 7>"$T/slow.in"
echo "BEGIN; INSERT INTO revcheck_revocations (id) VALUES ('slow');" >&7
for _ in $(seq 1 100); do
	[ "$(rc_psql -c "SELECT count(*) FROM pg_stat_activity
	    WHERE state = 'idle in transaction' AND pid <> pg_backend_pid()
	    AND query LIKE '%(''slow'')%'")" = 1 ] && break
	sleep 0.1
done
rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('fast')"
sleep 1.5	# rounds (300 ms) in which nothing may be published: an absence has no event
chain_ids | grep -q "	slow$" && rc_fail "uncommitted row published" || rc_ok "uncommitted row not published"
kill -0 "$slow" 2>/dev/null && rc_ok "the slow transaction was still open when looked at" ||
    rc_fail "the slow transaction ended before the look"
echo "COMMIT;" >&7
exec 7>&-
wait "$slow"
converged && rc_ok "the late commit is published" || rc_fail "the late commit is published"

# PostgreSQL restarted under the follower: it reconnects and goes on.
rc_pg_restart fast
rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('after-restart')"
converged 150 && rc_ok "changes after a server restart are published" ||
    rc_fail "changes after a server restart are published"
kill -0 "$FOLLOW_PID" 2>/dev/null && rc_ok "the follower survived the restart" ||
    rc_fail "the follower survived the restart"

# SIGKILL at any point: the chain on disk always verifies, and a restart
# resumes from it without losing a change.
rc_follow_stop
n=0
for k in $(seq 1 "$KILLS"); do
	REVCHECK_PUBLISH_DELAY_US=$((RANDOM % 20000)) follow_start
	for j in 1 2 3; do
		n=$((n + 1))
		rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('k$n')"
		sleep "0.$((RANDOM % 3))"
	done
	rc_follow_stop KILL
	if ! "$FILTERBUILD" verify --pub "$T/key.pub" --quiet "$F" 2>"$T/err"; then
		rc_fail "kill $k left a chain that does not verify: $(cat "$T/err")"
	fi
done
rc_ok "$KILLS kills, every chain verified"
follow_start
converged 150 && rc_ok "after $KILLS kills the chain holds every row" ||
    rc_fail "after $KILLS kills the chain holds every row"
# No change twice: every key changed once since the base (unique ids, and
# removals only of rows of the base), so entries in the chain = keys.
out=$("$FILTERBUILD" verify --pub "$T/key.pub" "$F" 2>&1 | grep "chain OK" || true)
e=$(printf '%s' "$out" | sed -n 's/.* \([0-9]*\) entries.*/\1/p')
kc=$(printf '%s' "$out" | sed -n 's/.* \([0-9]*\) keys changed.*/\1/p')
if [ -n "$out" ]; then
	rc_expect_eq "$e" "$kc" "no change is published twice"
else
	rc_ok "the last kill left a fresh base (nothing to repeat)"
fi

# Re-base past the threshold, and for a scope the base does not cover.
rc_follow_stop
h=$(stat -Lc %i "$F/current/delta/head.rcd" 2>/dev/null || true)
follow_start --rebase-after 5
# Until its first round wrote a head (a new file, or a new base's), so v
# is the version it goes on from (30 s at most).
for _ in $(seq 1 150); do
	[ "$(stat -Lc %i "$F/current/delta/head.rcd" 2>/dev/null || true)" != "$h" ] && break
	sleep 0.2
done
v=$(version)
rc_psql -c "INSERT INTO revcheck_revocations (id) SELECT 'bulk-' || g FROM generate_series(1, 8) g"
converged && rc_ok "bulk insert published" || rc_fail "bulk insert published"
[ "$(version)" -gt "$v" ] && rc_ok "a chain over --rebase-after re-bases" ||
    rc_fail "a chain over --rebase-after re-bases"
v=$(version)
rc_psql -c "INSERT INTO revcheck_revocations (scope, id) VALUES ('newscope', 'n1')"
converged && rc_ok "a new scope is published" || rc_fail "a new scope is published"
[ "$(version)" -gt "$v" ] && rc_ok "a new scope re-bases" || rc_fail "a new scope re-bases"

# A hostile reason is metadata: cleaned, the revocation published, and
# the follower says so (no check can name a row it leaves out instead:
# it_follow_quarantine.sh). The schema refuses such a row: a table
# created before its constraint takes it.
rc_psql -c "ALTER TABLE revcheck_revocations DROP CONSTRAINT revcheck_revocations_reason_ok"
m=$(rc_log_mark "$T/follow.log")
rc_psql -c "INSERT INTO revcheck_revocations (id, reason) VALUES ('bad', E'x\\ny')"
rc_wait_log_since "$T/follow.log" "$m" "reason cleaned" && rc_ok "the follower says it cleaned the reason" ||
    rc_fail "the follower says it cleaned the reason"
rc_wait_json "$O_URL/v1/check?id=bad" reason "x?y" &&
    rc_ok "a row with a control byte in its reason is revoked, the reason cleaned" ||
    rc_fail "a row with a control byte in its reason is revoked, the reason cleaned: $RC_BODY"
rc_psql -c "DELETE FROM revcheck_revocations WHERE id = 'bad'"
converged && rc_ok "once the row is deleted the chain holds what the database does" ||
    rc_fail "once the row is deleted the chain holds what the database does"

# Through every re-base the origin followed: it answers as the database says.
bad=0
while IFS="$(printf '\t')" read -r sc id; do
	rc_curl "$O_URL/v1/check?id=$id&scope=$sc"
	[ "$(rc_json status)" = revoked ] || { bad=$((bad + 1)); echo "# $sc $id: $RC_BODY" >&2; }
done <<<"$(db_ids)"
rc_expect_eq "$bad" 0 "origin: every row of the database is revoked"
for id in a bad silent-never; do
	rc_curl "$O_URL/v1/check?id=$id"
	rc_expect_json status not_revoked "origin: $id is not revoked"
done

# A second follower on the same directory is refused.
if "$FILTERBUILD" follow --source "$PG_URL" --key "$T/key.pem" --out "$F" --once 2>"$T/err"; then
	rc_fail "a second follower ran"
else
	rc_expect_match "$(cat "$T/err")" "another follower" "a second follower is refused"
fi
rc_follow_stop
rc_done
