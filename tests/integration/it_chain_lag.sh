#!/usr/bin/env bash
# it_chain_lag.sh - an edge that verified a head naming deltas it cannot get goes stale (chain_lag) after max_lag, and recovers when it catches up
#
# A real chain (filterbuild follow on PostgreSQL, a head every 2 s)
# served by an origin O; edge E syncs through deltahold.py with
# --max-lag 3. First the proxy forges the head (a seq 100 higher, so its
# signature fails): an unverified claim, E stays fresh. Then it withholds
# the deltas and passes the signed head: E knows of a delta it lacks (one
# that revokes tok-l2) and, after max_lag, answers 503 filter_stale
# (chain_lag) instead of not_revoked, in /v1/check, /readyz, /v1/status,
# /metrics, the log and filterbuild audit. With the deltas back it
# catches up and answers again at once.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg.sh"

F=$T/filters
LAG=3
rc_follow_chain "$F"
v1=$V1

mkdir -p "$T/so" "$T/se"
rc_start O --filter-dir "$F" --trusted-key "$T/key.pub" --state-dir "$T/so"
rc_wait_version "$O_URL" "$v1" || rc_fail "origin serves the base"
echo pass >"$T/mode"
python3 "$(dirname "$0")/deltahold.py" "$O_PORT" "$T/proxy.port" "$T/mode" &
rc_stop_at_exit $!
for _ in $(seq 1 300); do [ -s "$T/proxy.port" ] && break; sleep 0.1; done
P_URL="http://127.0.0.1:$(cat "$T/proxy.port")"
rc_start E --trusted-key "$T/key.pub" --state-dir "$T/se" --sync-interval 1 \
    --max-lag "${LAG}s" --upstream-insecure-http \
    --upstream-filter "$P_URL/v1/filter" --upstream-check "$O_URL/v1/check"

rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('tok-l1')"
rc_wait_json "$E_URL/v1/check?id=tok-l1" status revoked ||
    rc_fail "E: delta with tok-l1 in force through the proxy"
rc_wait_json "$E_URL/v1/status" sync.delta_error null ||
    rc_fail "E: no delta error while the proxy passes"

# An unverified head naming deltas far ahead moves no clock.
echo forge >"$T/mode"
sleep $((LAG + 4))	# past max_lag: a clock the forged head started would show by then
rc_curl "$E_URL/v1/status"
rc_expect_json filter.stale_reason null "forged head: E stays fresh"
rc_expect_json sync.delta_seq_seen null "forged head: nothing verified seen"
rc_expect_json sync.newer_delta_seen_at null "forged head: no clock"
rc_curl "$E_URL/v1/check?id=tok-fine"
rc_expect_status 200 "forged head: E answers"

# The signed head passes, the deltas do not: E knows it lacks a delta.
m=$(rc_log_mark "$T/E.log")
echo withhold >"$T/mode"
rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('tok-l2')"
rc_wait_json "$O_URL/v1/check?id=tok-l2" status revoked ||
    rc_fail "origin: delta with tok-l2 in force"
rc_curl "$O_URL/v1/status"
so=$(rc_json filter.delta.seq)
rc_curl "$E_URL/v1/status"
se=$(rc_json filter.delta.seq)
[ "$se" -lt "$so" ] && rc_ok "E ($se) behind the origin ($so)" ||
    rc_fail "E ($se) not behind the origin ($so)"
if rc_wait_json "$E_URL/v1/status" filter.stale_reason chain_lag 30; then
	rc_ok "E stale (chain_lag) after max_lag"
else
	rc_fail "E not stale: $(rc_json filter.stale_reason), seq $(rc_json filter.delta.seq), seen $(rc_json sync.delta_seq_seen)"
fi
rc_expect_json filter.stale true "status: stale"
[ "$(rc_json sync.delta_seq_seen)" -gt "$se" ] 2>/dev/null &&
    rc_ok "status: delta_seq_seen above the chain applied" ||
    rc_fail "status: delta_seq_seen $(rc_json sync.delta_seq_seen), applied $se"
rc_expect_match "$(rc_json sync.newer_delta_seen_at)" '^20' "status: newer_delta_seen_at set"
rc_expect_match "$(rc_json sync.delta_error)" "a verified head names delta" \
    "status: delta_error says why"
rc_curl "$E_URL/v1/check?id=tok-l2"
rc_expect_status 503 "E refuses tok-l2 (was: 200 not_revoked)"
rc_expect_json error filter_stale "E: filter_stale"
rc_expect_match "$(rc_json message)" chain_lag "E: the message names chain_lag"
rc_curl "$E_URL/readyz"
rc_expect_status 503 "E: not ready"
rc_curl "$E_URL/metrics"
rc_expect_match "$RC_BODY" '^revcheckd_sync_newer_delta_pending 1$' \
    "metrics: newer delta pending"
rc_wait_log_since "$T/E.log" "$m" 'filter state: stale \(chain_lag\)' &&
    rc_ok "log: stale (chain_lag)" || rc_fail "log: no stale (chain_lag) line"
AUD_RC=0
"$FILTERBUILD" audit --timeout 5s "$E_URL" >"$T/audit.out" 2>&1 || AUD_RC=$?
rc_expect_eq "$AUD_RC" 1 "audit fails E"
rc_expect_match "$(cat "$T/audit.out")" 'yes \(chain_lag\)' "audit: stale (chain_lag)"

# The deltas pass again: E catches up and answers at once.
m=$(rc_log_mark "$T/E.log")
echo pass >"$T/mode"
rc_wait_json "$E_URL/v1/check?id=tok-l2" status revoked 30 ||
    rc_fail "E caught up: tok-l2 revoked"
rc_curl "$E_URL/v1/status"
rc_expect_json filter.stale_reason null "caught up: fresh"
rc_expect_json sync.delta_seq_seen null "caught up: nothing pending"
rc_expect_json sync.newer_delta_seen_at null "caught up: the clock stopped"
rc_curl "$E_URL/metrics"
rc_expect_match "$RC_BODY" '^revcheckd_sync_newer_delta_pending 0$' \
    "metrics: nothing pending"
rc_wait_log_since "$T/E.log" "$m" 'filter state: fresh again' &&
    rc_ok "log: fresh again" || rc_fail "log: no fresh again line"

rc_follow_stop
for n in E O; do
	rc_stop "$n" || rc_fail "$n did not exit 0"
done
rc_done
