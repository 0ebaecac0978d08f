#!/usr/bin/env bash
# it_edge_defaults.sh - safe defaults without a config: an edge that knows it lacks deltas stops answering after the default max_lag; limits turned off are logged; boolean flags take the form --help shows
#
# A real chain (filterbuild follow on PostgreSQL) served by an origin O;
# edge E syncs through deltahold.py and is started with no max_lag at all,
# under libfaketime. The proxy withholds the deltas and passes the signed
# head: E has verified a head naming a delta it lacks (one that revokes
# tok-d2). Within the default max_lag (5m) it still answers; with its
# clock stepped past it, it answers 503 filter_stale (chain_lag), never
# not_revoked from the older chain (a max_lag that defaulted to 0 kept
# answering until the chain expired). Explicit 0s are warned about at
# start, the defaults are not. Then every boolean flag is run in the form
# revcheckd --help shows it ("--fast-path true|false").
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg.sh"

F=$T/filters
rc_follow_chain "$F"
mkdir -p "$T/so" "$T/se" "$T/s0"
rc_start O --filter-dir "$F" --trusted-key "$T/key.pub" --state-dir "$T/so"
rc_wait_version "$O_URL" "$V1" || rc_fail "origin serves the base"
echo pass >"$T/mode"
python3 "$(dirname "$0")/deltahold.py" "$O_PORT" "$T/proxy.port" "$T/mode" &
rc_stop_at_exit $!
for _ in $(seq 1 100); do [ -s "$T/proxy.port" ] && break; sleep 0.1; done
P_URL="http://127.0.0.1:$(cat "$T/proxy.port")"
# A config file with no max_lag and no max_age: the program's defaults.
cat >"$T/edge.json" <<JSON
// An edge's config that leaves max_lag and max_age out.
{ "trusted_key": "$T/key.pub", "state_dir": "$T/se", "sync_interval": 1,
  "upstream_insecure_http": true, "upstream_filter": "$P_URL/v1/filter",
  "upstream_check": "$O_URL/v1/check" }
JSON
rc_start_faketime E "$T/clock.rc" +0 -c "$T/edge.json"

rc_curl "$E_URL/v1/status"
rc_expect_json sync.max_lag_seconds 300 "E: max_lag defaults to 5m"
grep -q 'max_lag is 0' "$T/E.log" && rc_fail "E warned about a max_lag it has" ||
    rc_ok "E: no max_lag warning with the default"
grep -q 'max_age is 0' "$T/O.log" && rc_fail "O warned about a max_age it has" ||
    rc_ok "O: no max_age warning with the default"

rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('tok-d1')"
rc_wait_json "$E_URL/v1/check?id=tok-d1" status revoked ||
    rc_fail "E: delta with tok-d1 in force through the proxy"

# The signed head passes, the deltas do not.
echo withhold >"$T/mode"
rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('tok-d2')"
rc_wait_json "$O_URL/v1/check?id=tok-d2" status revoked ||
    rc_fail "origin: delta with tok-d2 in force"
rc_curl "$O_URL/v1/status"
so=$(rc_json filter.delta.seq)
# E has verified a head naming a delta above its chain.
for ((i = 0; i < 150; i++)); do
	rc_curl "$E_URL/v1/status"
	seen=$(rc_json sync.delta_seq_seen)
	[ "$seen" != null ] && [ "$seen" -ge "$so" ] 2>/dev/null && break
	sleep 0.2
done
se=$(rc_json filter.delta.seq)
[ "$seen" != null ] && [ "$se" -lt "$seen" ] 2>/dev/null &&
    rc_ok "E verified a head naming delta $seen, applied only $se" ||
    rc_fail "E: delta_seq_seen $seen, applied $se (origin at $so)"
# Inside the default max_lag E still answers from its chain.
rc_curl "$E_URL/v1/check?id=tok-d2"
rc_expect_status 200 "E within max_lag: still answers"

# Past the default max_lag (E's clock 330 s ahead; the chain is valid
# for 10 min, max_age 2h): 503, not not_revoked.
echo +330 >"$T/clock.rc"
got=
for ((i = 0; i < 100; i++)); do
	rc_curl "$E_URL/v1/check?id=tok-d2"
	[ "$RC_STATUS" = 503 ] && { got=1; break; }
	sleep 0.1
done
if [ -n "$got" ]; then
	rc_ok "E past the default max_lag refuses tok-d2 (503)"
else
	rc_fail "E past 5m without the delta still answers $RC_STATUS $(rc_json status) for tok-d2"
fi
rc_expect_json error filter_stale "E: filter_stale"
rc_expect_match "$(rc_json message)" chain_lag "E: the message names chain_lag"
rc_curl "$E_URL/readyz"
rc_expect_status 503 "E: not ready"

# ---------------------------------------------------------------- limits turned off are said
rc_start Z --trusted-key "$T/key.pub" --state-dir "$T/s0" --sync-interval 1 \
    --upstream-insecure-http --upstream-filter "$O_URL/v1/filter" \
    --max-lag 0 --max-age 0
rc_wait_log "$T/Z.log" 'max_lag is 0 \(off\)' && rc_ok "max_lag 0 is warned about at start" ||
    rc_fail "no warning for max_lag 0"
rc_wait_log "$T/Z.log" 'max_age is 0 \(off\)' && rc_ok "max_age 0 is warned about at start" ||
    rc_fail "no warning for max_age 0"
rc_curl "$Z_URL/v1/status"
rc_expect_json sync.max_lag_seconds 0 "Z: max_lag 0 when said"

# ---------------------------------------------------------------- boolean flags as --help shows them
help=$("$REVCHECKD" --help)
bools=$(printf '%s\n' "$help" | sed -n 's/^  \(--[a-z-]*\) \[*true|false\]*.*/\1/p')
[ -n "$bools" ] && rc_ok "--help shows boolean flags: $(echo $bools)" ||
    rc_fail "--help shows no true|false flag"
EDGE_OK=(--trusted-key "$T/key.pub" --state-dir "$T/s0" --upstream-insecure-http
    --upstream-filter "$O_URL/v1/filter")
for flag in $bools; do
	for form in "$flag true" "$flag false" "$flag=true" "$flag=false" "$flag"; do
		# shellcheck disable=SC2086 # the form is two words or one
		out=$("$REVCHECKD" --check-config "${EDGE_OK[@]}" $form 2>&1) && st=0 || st=$?
		# An edge with --upstream-insecure-http false refuses its
		# http:// upstream: a refusal of the setting, not of the flag.
		if [ "$form" = "--upstream-insecure-http false" ] ||
		    [ "$form" = "--upstream-insecure-http=false" ]; then
			rc_expect_match "$st/$out" '^1/.*upstream_filter: .*upstream_insecure_http' \
			    "revcheckd $form: taken (the http upstream refused)"
		else
			rc_expect_eq "$st/$out" "0/configuration OK" "revcheckd $form"
		fi
	done
done
out=$("$REVCHECKD" --check-config "${EDGE_OK[@]}" --fast-path maybe 2>&1) && st=0 || st=$?
rc_expect_eq "$st" 2 "--fast-path maybe: a usage error"
rc_expect_match "$out" 'unexpected argument "maybe"' "--fast-path maybe: the word is named"

rc_follow_stop
for n in Z E O; do
	rc_stop "$n" || rc_fail "$n did not exit 0"
done
rc_done
