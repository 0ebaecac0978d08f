#!/usr/bin/env bash
# it_audit_delta.sh - filterbuild audit compares delta sequences on one base: an edge behind in deltas, or whose delta sync fails, fails the audit
#
# A real chain (filterbuild follow on PostgreSQL) served by an origin O;
# E1 follows it (pushed); E3 polls (--upstream-wait 0), once and then
# only after an hour, so it keeps the base and the seq it started at
# while O moves on; E2
# syncs through deltahold.py in its fail mode, which fails every /v1/delta: its base sync
# says "unchanged" with no error and it stays at seq 0. E2 and E3 answer
# not_revoked for ids the deltas they miss revoke; the audit must fail
# both and pass O and E1.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg.sh"

F=$T/filters
rc_follow_chain "$F"
v1=$V1

audit() {
	AUD_RC=0
	"$FILTERBUILD" audit --timeout 5s "$@" >"$T/audit.out" 2>"$T/audit.err" ||
	    AUD_RC=$?
	AUD_OUT=$(cat "$T/audit.out")
}
row() { printf '%s\n' "$AUD_OUT" | grep "^$1 "; }
pyj() { python3 -c "import json,sys; j = json.load(open(sys.argv[1])); print($1)" "$T/audit.out"; }
seq_of() { rc_curl "$1/v1/status"; rc_json filter.delta.seq; }
edge() {
	local name=$1 up=$2 iv=$3
	shift 3
	mkdir -p "$T/s-$name"
	rc_start "$name" "$@" --trusted-key "$T/key.pub" --state-dir "$T/s-$name" \
	    --sync-interval "$iv" --upstream-insecure-http \
	    --upstream-filter "$up/v1/filter" --upstream-check "$O_URL/v1/check"
}

mkdir -p "$T/so"
rc_start O --filter-dir "$F" --trusted-key "$T/key.pub" --state-dir "$T/so"
rc_wait_version "$O_URL" "$v1" || rc_fail "origin serves the base"
echo fail >"$T/proxy.mode"
python3 "$(dirname "$0")/deltahold.py" "$O_PORT" "$T/proxy.port" "$T/proxy.mode" &
rc_stop_at_exit $!
for _ in $(seq 1 100); do [ -s "$T/proxy.port" ] && break; sleep 0.1; done
P_URL="http://127.0.0.1:$(cat "$T/proxy.port")"

rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('tok-d1')"
rc_wait_json "$O_URL/v1/check?id=tok-d1" status revoked || rc_fail "origin: delta 1 in force"
edge E1 "$O_URL" 1
edge E2 "$P_URL" 1
edge E3 "$O_URL" 1h --upstream-wait 0
rc_wait_json "$E1_URL/v1/check?id=tok-d1" status revoked || rc_fail "E1: delta 1 in force"
rc_wait_json "$E3_URL/v1/check?id=tok-d1" status revoked || rc_fail "E3: delta 1 in force"
rc_wait_version "$E2_URL" "$v1" || rc_fail "E2 serves the base"
rc_wait_json "$E2_URL/v1/status" sync.delta_error "delta chain: HTTP 500" ||
    rc_fail "E2 reports its failing delta fetches"
rc_expect_json sync.error null "E2: the base sync itself reports no error"
s3=$(seq_of "$E3_URL")

rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('tok-d2')"
rc_wait_json "$O_URL/v1/check?id=tok-d2" status revoked || rc_fail "origin: delta 2 in force"
rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('tok-d3')"
rc_wait_json "$O_URL/v1/check?id=tok-d3" status revoked || rc_fail "origin: delta 3 in force"
so=$(seq_of "$O_URL")
rc_wait_json "$E1_URL/v1/status" filter.delta.seq "$so" || rc_fail "E1 at the origin's seq $so"
rc_expect_eq "$(seq_of "$E3_URL")" "$s3" "E3 stays at seq $s3"
[ "$so" -gt "$s3" ] && rc_ok "origin ($so) ahead of E3 ($s3)" ||
    rc_fail "origin ($so) not ahead of E3 ($s3)"
rc_expect_eq "$(seq_of "$E2_URL")" 0 "E2 has no delta"

audit "$O_URL" "$E1_URL"
rc_expect_eq "$AUD_RC" 0 "origin and an edge at the same seq pass"
audit "$O_URL" "$E1_URL" "$E3_URL"
rc_expect_eq "$AUD_RC" 1 "an edge behind in deltas fails the audit"
rc_expect_match "$(row "$E3_URL")" "delta $((so - s3)) behind: at seq $s3, another node at $so" \
    "table: E3's delta lag named"
rc_expect_match "$(row "$O_URL")" ' OK$' "table: origin OK"
rc_expect_match "$(row "$E1_URL")" ' OK$' "table: E1 OK"
audit --max-delta-lag $((so - s3)) "$O_URL" "$E1_URL" "$E3_URL"
rc_expect_eq "$AUD_RC" 0 "--max-delta-lag $((so - s3)) tolerates it"
audit --max-delta-lag $((so - s3 - 1)) "$O_URL" "$E1_URL" "$E3_URL"
rc_expect_eq "$AUD_RC" 1 "--max-delta-lag $((so - s3 - 1)) does not"
# Without the origin the edges still compare among themselves.
audit "$E3_URL" "$E1_URL"
rc_expect_eq "$AUD_RC" 1 "E3 behind E1 without the origin"

audit --json "$O_URL" "$E2_URL"
rc_expect_eq "$AUD_RC" 1 "an edge whose delta fetches fail fails the audit"
rc_expect_eq "$(pyj '(j["nodes"][1]["delta"]["seq"], j["nodes"][1]["delta"]["highest_seq_on_base"], j["nodes"][1]["delta"]["behind"])')" \
    "(0, $so, $so)" "--json: E2's delta seq, highest on its base, behind"
rc_expect_eq "$(pyj 'j["nodes"][1]["delta_error"]')" "delta chain: HTTP 500" "--json: E2's delta_error"
rc_expect_eq "$(pyj 'j["nodes"][1]["problems"]')" \
    "['delta sync failed: delta chain: HTTP 500', 'delta $so behind: at seq 0, another node at $so']" \
    "--json: E2's problems"
rc_expect_eq "$(pyj '(j["nodes"][0]["ok"], j["nodes"][0]["delta"]["behind"])')" "(True, 0)" \
    "--json: the origin is fine"
rc_expect_eq "$(pyj 'j["nodes"][0]["sha256"] == j["nodes"][1]["sha256"] != None')" True \
    "--json: both on one base (sha256)"

rc_follow_stop
for n in E1 E2 E3 O; do
	rc_stop "$n" || rc_fail "$n did not exit 0"
done
rc_done
