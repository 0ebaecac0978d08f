#!/usr/bin/env bash
# it_rotation.sh - live operations: signing-key rotation by SIGHUP under load, state-change logs, JSON logs
#
# An origin and an edge (each with a JSON config file) serve a filter
# signed by key A while a bounded curl loop checks a revoked and a clean
# id on both. The rotation follows docs/OPERATIONS.md: a filter signed by
# the new key B is refused until B is trusted; B is added to both configs
# and SIGHUP loads it without a restart; the B-signed filter is served by
# both; A is removed by SIGHUP. The loop must see zero failed or wrong
# answers throughout. Then: a broken config on SIGHUP changes nothing, a
# setting that needs a restart is named, removing the serving key takes
# the filter out of service, the edge logs authority lost/back and sync
# failing/recovered exactly once each, an origin logs fresh -> stale ->
# fresh once each, and every line of the JSON-format log parses.
. "$(dirname "$0")/lib.sh"

FB() { "$FILTERBUILD" "$@"; }
KA=$(FB keygen --out "$T/a.pem" --pub "$T/a.pub")
KB=$(FB keygen --out "$T/b.pem" --pub "$T/b.pub")
printf 'tok-rev-1\ntok-rev-2\n' >"$T/tokens.txt"
F=$T/filters
mkdir -p "$F" "$T/so" "$T/se"
publish() {	# publish KEY: the next version in $F, signed by KEY
	# The operator trusts both keys: the current version may be either's.
	FB build --key "$1" --out "$F" --valid-for 1h --quiet \
	    --trusted-key "$T/a.pub" --trusted-key "$T/b.pub" "$T/tokens.txt"
}
signer() {	# signer URL: the key id of the filter in service ("" if none)
	curl -s "$1/v1/status" | python3 -c \
	    'import json,sys; f=json.load(sys.stdin)["filter"]; print(f["signer"] if f else "")'
}
keys_json() {	# keys_json PUB...: the JSON array of trusted keys
	local k out=""
	for k in "$@"; do out="$out${out:+, }\"$k\""; done
	printf '[%s]' "$out"
}
write_origin() {	# write_origin KEYS_JSON [extra members]
	printf '{ "filter_dir": "%s", "state_dir": "%s", "poll_interval": 1,\n  "trusted_key": %s%s }\n' \
	    "$F" "$T/so" "$1" "${2:-}" >"$T/origin.json"
}
write_edge() {	# write_edge KEYS_JSON
	printf '{ "upstream_filter": "%s/v1/filter", "upstream_check": "%s/v1/check",\n  "state_dir": "%s", "sync_interval": 1, "log_format": "json",\n  "upstream_timeout": 2, "upstream_retries": 0, "upstream_insecure_http": true,\n  "trusted_key": %s }\n' \
	    "$O_URL" "$O_URL" "$T/se" "$1" >"$T/edge.json"
}

publish "$T/a.pem"
write_origin "$(keys_json "$T/a.pub")"
rc_start O -c "$T/origin.json"
rc_wait_version "$O_URL" 1 || rc_fail "origin did not load version 1"
write_edge "$(keys_json "$T/a.pub")"
rc_start E -c "$T/edge.json"
rc_wait_version "$E_URL" 1 || rc_fail "edge did not sync version 1"

# ---------------------------------------------------------------- bounded load
# At most 3000 rounds or 90 s; each round asks both nodes about a revoked
# and a clean id and writes one line per wrong or failed answer.
: >"$T/load.fail"
: >"$T/load.count"
(
	end=$(( $(date +%s) + 90 ))
	for i in $(seq 1 3000); do
		[ -e "$T/load.stop" ] && break
		[ "$(date +%s)" -lt "$end" ] || break
		for u in "$O_URL" "$E_URL"; do
			r=$(curl -s --max-time 5 -w ' %{http_code}' "$u/v1/check?id=tok-rev-1") || true
			case $r in *'"status":"revoked"'*' 200') ;; *) echo "$u tok-rev-1: $r" >>"$T/load.fail" ;; esac
			r=$(curl -s --max-time 5 -w ' %{http_code}' "$u/v1/check?id=tok-clean-$i") || true
			case $r in *'"status":"not_revoked"'*' 200') ;; *) echo "$u tok-clean-$i: $r" >>"$T/load.fail" ;; esac
		done
		echo "$i" >"$T/load.count"
	done
) &
LOAD_PID=$!

# ---------------------------------------------------------------- 0. B is not trusted yet
publish "$T/b.pem"
rc_wait_log "$T/so/audit.log" '"result":"refused".*"version":2' 1 30 &&
    rc_ok "a filter signed by the new key is refused before B is trusted" ||
    rc_fail "the origin did not refuse version 2 signed by an untrusted key"
rc_expect_eq "$(signer "$O_URL")" "$KA" "the origin keeps serving the A-signed filter"

# ---------------------------------------------------------------- 1. trust A and B: SIGHUP, no restart
write_edge "$(keys_json "$T/a.pub" "$T/b.pub")"
m=$(rc_log_mark "$T/E.log")
kill -HUP "$E_PID"
rc_wait_log_since "$T/E.log" "$m" 'trusted keys: 2 loaded' || rc_fail "edge did not reload its keys"
write_origin "$(keys_json "$T/a.pub" "$T/b.pub")"
m=$(rc_log_mark "$T/O.log")
kill -HUP "$O_PID"
rc_wait_log_since "$T/O.log" "$m" 'trusted keys: 2 loaded' || rc_fail "origin did not reload its keys"
rc_wait_version "$O_URL" 2 30 && rc_ok "after SIGHUP the origin serves the B-signed version 2" ||
    rc_fail "origin did not load version 2 after SIGHUP"
rc_wait_version "$E_URL" 2 30 && rc_ok "the edge synced the B-signed version 2" ||
    rc_fail "edge did not sync version 2"
rc_expect_eq "$(signer "$O_URL")" "$KB" "origin: version 2 is signed by B"
rc_expect_eq "$(signer "$E_URL")" "$KB" "edge: version 2 is signed by B"

# ---------------------------------------------------------------- 2. retire A
write_edge "$(keys_json "$T/b.pub")"
m=$(rc_log_mark "$T/E.log")
kill -HUP "$E_PID"
rc_wait_log_since "$T/E.log" "$m" 'trusted keys: 1 loaded' || rc_fail "edge did not drop key A"
write_origin "$(keys_json "$T/b.pub")"
m=$(rc_log_mark "$T/O.log")
kill -HUP "$O_PID"
rc_wait_log_since "$T/O.log" "$m" 'trusted keys: 1 loaded' || rc_fail "origin did not drop key A"
publish "$T/a.pem"
rc_wait_log "$T/so/audit.log" '"result":"refused".*"version":3' 1 30 &&
    rc_ok "once A is retired, a filter signed by A is refused" ||
    rc_fail "the origin did not refuse version 3 signed by the retired key"
rc_expect_eq "$(signer "$O_URL")" "$KB" "the origin keeps the B-signed filter"
publish "$T/b.pem"
rc_wait_version "$O_URL" 4 30 || rc_fail "origin did not load version 4"
rc_wait_version "$E_URL" 4 30 || rc_fail "edge did not sync version 4"

# The load must have run, however fast the steps above went on a busy
# machine: its 20th round is waited for (60 s at most) before it stops.
for _ in $(seq 1 600); do
	[ "$(cat "$T/load.count" 2>/dev/null)" -ge 20 ] 2>/dev/null && break
	sleep 0.1
done
touch "$T/load.stop"
wait "$LOAD_PID" || true
rounds=$(cat "$T/load.count")
[ "${rounds:-0}" -ge 20 ] && rc_ok "the load ran $rounds rounds (4 checks each)" ||
    rc_fail "the load ran only ${rounds:-0} rounds"
rc_expect_eq "$(wc -l <"$T/load.fail")" 0 "zero failed or wrong answers during the rotation"
head -n 5 "$T/load.fail" >&2
for n in O E; do
	pid=$(eval "echo \$${n}_PID")
	kill -0 "$pid" && rc_ok "$n was never restarted" || rc_fail "$n is gone"
done

# ---------------------------------------------------------------- a broken config changes nothing
write_origin "$(keys_json "$T/b.pub" "$T/missing.pub")"
m=$(rc_log_mark "$T/O.log")
kill -HUP "$O_PID"
rc_wait_log_since "$T/O.log" "$m" 'SIGHUP: configuration not reloaded, nothing changed: trusted_key: .*missing.pub' ||
    rc_fail "a SIGHUP with a missing key file was not refused by name"
rc_curl "$O_URL/v1/check?id=tok-rev-1"; rc_expect_json status revoked "still serving after the refused reload"

# ---------------------------------------------------------------- live and restart-only settings
write_origin "$(keys_json "$T/b.pub")" ', "max_batch": 7, "log_level": "debug", "max_conns": 5000'
m=$(rc_log_mark "$T/O.log")
kill -HUP "$O_PID"
rc_wait_log_since "$T/O.log" "$m" 'SIGHUP: max_conns changed; not applied until a restart' ||
    rc_fail "a changed max_conns (restart-only) was not named"
rc_wait_log_since "$T/O.log" "$m" 'SIGHUP: configuration generation [0-9]+ applied: changed max_batch, log_level' ||
    rc_fail "max_batch and log_level were not applied live"
printf '{"items":[%s]}' "$(for i in 1 2 3 4 5 6 7 8; do printf '{"id":"x%d"}%s' $i "$([ $i -lt 8 ] && echo ,)"; done)" >"$T/batch8.json"
rc_curl -H 'Content-Type: application/json' --data-binary @"$T/batch8.json" "$O_URL/v1/check"
rc_expect_status 413 "a batch of 8 is over the max_batch of 7 applied by SIGHUP"

# ---------------------------------------------------------------- removing the serving key withdraws the filter
write_origin "$(keys_json "$T/a.pub")"
m=$(rc_log_mark "$T/O.log")
kill -HUP "$O_PID"
rc_wait_log_since "$T/O.log" "$m" 'signed by .*no longer a trusted key: taken out of service' ||
    rc_fail "the filter signed by a removed key stayed in service"
rc_curl "$O_URL/v1/check?id=tok-clean-x"
rc_expect_status 503 "no answer from a filter whose key was removed"
rc_expect_json error no_filter

# ---------------------------------------------------------------- edge: authority and sync lost and back
rc_stop O || rc_fail "origin did not stop cleanly"
rc_curl "$E_URL/v1/check?id=tok-rev-1"
rc_expect_status 503 "a positive without an authority is 503"
rc_wait_log "$T/E.log" 'sync failing' 1 30 || rc_fail "edge did not log the failing sync"
rc_curl "$E_URL/v1/check?id=tok-rev-2"
# Several more failed syncs (counted by /v1/status), logged with backoff,
# not each time.
for ((i = 0; i < 300; i++)); do
	rc_curl "$E_URL/v1/status"
	[ "$(rc_json sync.consecutive_failures)" -ge 4 ] 2>/dev/null && break
	sleep 0.1
done
[ "$i" -lt 300 ] || rc_fail "the edge did not fail 4 syncs in a row (consecutive_failures $(rc_json sync.consecutive_failures))"
write_origin "$(keys_json "$T/b.pub")"
"$REVCHECKD" -c "$T/origin.json" --listen "127.0.0.1:$O_PORT" >>"$T/O2.log" 2>&1 &
O_PID=$!
RC_DAEMONS+=(O)
rc_wait_log "$T/E.log" 'sync recovered' 1 30 || rc_fail "edge did not log the recovered sync"
for _ in $(seq 1 300); do
	rc_curl "$E_URL/v1/check?id=tok-rev-1"
	[ "$RC_STATUS" = 200 ] && break
	sleep 0.1
done
rc_expect_json status revoked "the edge settles positives again"
el=$(cat "$T/E.log")
rc_expect_eq "$(grep -c 'authority lost' <<<"$el")" 1 "authority lost: logged once"
rc_expect_eq "$(grep -c 'authority back' <<<"$el")" 1 "authority back: logged once"
rc_expect_eq "$(grep -c 'sync failing:' <<<"$el")" 1 "sync failing: logged once"
rc_expect_eq "$(grep -c 'sync recovered' <<<"$el")" 1 "sync recovered: logged once"

# ---------------------------------------------------------------- the JSON log parses, line by line
python3 - "$T/E.log" >"$T/json.out" 2>&1 <<'PY' && rc_ok "every edge log line is one JSON object, audit events nested" || rc_fail "JSON log: $(cat "$T/json.out")"
import json, sys
n = audits = 0
for i, line in enumerate(open(sys.argv[1], encoding="utf-8"), 1):
    o = json.loads(line)
    assert isinstance(o, dict), f"line {i}: not an object"
    for k in ("time", "level", "program", "message"):
        assert k in o, f"line {i}: no {k}"
    assert o["level"] in ("error", "warning", "info", "debug"), f"line {i}: level {o['level']}"
    assert not o["message"].startswith("audit {"), f"line {i}: the audit event is an escaped string"
    if o["message"] == "audit":
        assert isinstance(o.get("audit"), dict) and "result" in o["audit"], f"line {i}: audit is not a nested object"
        audits += 1
    n += 1
assert n >= 5, f"only {n} lines"
assert audits >= 1, "no audit event in the JSON log"
PY

# ---------------------------------------------------------------- an origin going stale and fresh again
F2=$T/f2
mkdir -p "$F2" "$T/s2"
FB build --key "$T/b.pem" --out "$F2" --valid-for 1h --quiet "$T/tokens.txt"
rc_start S --filter-dir "$F2" --trusted-key "$T/b.pub" --state-dir "$T/s2" --max-age 3s --poll-interval 1
rc_wait_log "$T/S.log" 'filter state: stale \(max_age\)' 1 30 || rc_fail "going stale was not logged"
sleep 2	# stale through two more polls (poll_interval 1): logged once, not each poll
FB build --key "$T/b.pem" --out "$F2" --valid-for 1h --quiet "$T/tokens.txt"
rc_wait_log "$T/S.log" 'filter state: fresh again, version 2' 1 30 || rc_fail "fresh again was not logged"
rc_expect_eq "$(grep -c 'filter state: stale' "$T/S.log")" 1 "stale: logged once"
rc_expect_eq "$(grep -c 'filter state: fresh again' "$T/S.log")" 1 "fresh again: logged once"

rc_done
