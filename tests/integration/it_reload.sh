#!/usr/bin/env bash
# it_reload.sh - SIGHUP applies every live setting at once, refuses the rest until a restart, and is all or none
#
# One real revcheckd (origin) on loopback, its config file rewritten and
# SIGHUP sent between the steps; tokens signed by PyJWT (jwtmint.py).
# Each live setting is shown to apply (the answers change, and
# /v1/status config.generation moves on); each restart-only one is named
# in the log and in config.restart_pending and keeps its running value; a
# configuration with one broken part (a missing, FIFO or group-writable
# JWKS file, a FIFO as a client secret, CA file or the config file itself)
# changes nothing at all, not even the settings that were fine; an issuer removed by SIGHUP has its tokens refused at once, even
# ones the verified-token cache holds.
# it-serial: asserts upstream waits to within a few hundred ms
. "$(dirname "$0")/lib.sh"

A=https://a.example
B=https://b.example
M() { rc_jwtmint "$@"; }

"$FILTERBUILD" keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
M key p256 "$T/a-ec.pem"
M key p256 "$T/a-ec2.pem"
M key p256 "$T/b-ec.pem"
M jwks "$T/a.jwks" "$T/a-ec.pem:a-ec"
M jwks "$T/b.jwks" "$T/b-ec.pem:b-ec"
printf '[{"id": "rev-1", "scope": "%s"}, {"id": "rev-b", "scope": "%s"}]\n' "$A" "$B" >"$T/revoked.json"
mkdir -p "$T/f" "$T/s"
"$FILTERBUILD" build --key "$T/key.pem" --out "$T/f" --quiet "$T/revoked.json"
GW1=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
GW2=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
printf '%s\n' "$GW1" >"$T/gw1.secret"
printf '%s\n' "$GW2" >"$T/gw2.secret"
chmod 600 "$T/gw1.secret" "$T/gw2.secret"

iss_a() { printf '{"issuer": "%s", "jwks_file": "%s", "audiences": ["%s"], "algorithms": ["ES256"]}' \
    "$A" "${2:-$T/a.jwks}" "${1:-api}"; }
iss_b() { printf '{"issuer": "%s", "jwks_file": "%s", "audiences": ["api"], "algorithms": ["ES256"]}' \
    "$B" "${1:-$T/b.jwks}"; }
# conf ISSUERS [MORE-MEMBERS]: the daemon's config file
conf() {
	printf '{"filter_dir": "%s", "trusted_key": "%s", "state_dir": "%s",
  "issuers": [%s]%s}\n' "$T/f" "$T/key.pub" "$T/s" "$1" "${2:+, $2}" >"$T/rc.json"
}
GEN=1
REFUSED=0
# reloads RESULT: revcheckd_config_reloads_total{result=RESULT} of D.
reloads() {
	curl -s "$D_URL/metrics" | sed -n \
	    's/^revcheckd_config_reloads_total{result="'"$1"'"} \([0-9]*\)$/\1/p'
}
# wait_reloads RESULT N: until that counter is N (30 s at most).
wait_reloads() {
	for _ in $(seq 1 300); do
		[ "$(reloads "$1")" = "$2" ] && return 0
		sleep 0.1
	done
	return 1
}
# hup: SIGHUP, then until /v1/status shows the next generation, applied
hup() {
	GEN=$((GEN + 1))
	kill -HUP "$D_PID"
	rc_wait_json "$D_URL/v1/status" config.generation "$GEN" 30 ||
	    rc_fail "generation $GEN was not applied: $(tail -n 3 "$T/D.log")"
	wait_reloads applied $((GEN - 1)) ||
	    rc_fail "generation $GEN: reloads{applied} is $(reloads applied), want $((GEN - 1))"
	[ "$(reloads refused)" = "$REFUSED" ] ||
	    rc_fail "generation $GEN: reloads{refused} moved to $(reloads refused)"
	rc_curl "$D_URL/v1/status"
	rc_expect_json config.last_reload.result applied "generation $GEN: last_reload"
	rc_expect_json config.last_reload.error null "generation $GEN: no error"
}
# hup_refused WHAT REGEX: SIGHUP, the reload is refused naming REGEX, nothing
# changed; /v1/status and /metrics say so too, not only the log.
hup_refused() {
	local m
	REFUSED=$((REFUSED + 1))
	m=$(rc_log_mark "$T/D.log")
	kill -HUP "$D_PID"
	rc_wait_log_since "$T/D.log" "$m" 'SIGHUP: configuration not reloaded, nothing changed' &&
	    rc_ok "$1: the reload is refused" || rc_fail "$1: the reload was not refused"
	rc_expect_match "$(rc_log_since "$T/D.log" "$m" | grep 'configuration not reloaded' | tail -n 1)" "$2" \
	    "$1: the log names the cause"
	wait_reloads refused "$REFUSED" && rc_ok "$1: reloads{refused} is $REFUSED" ||
	    rc_fail "$1: reloads{refused} is '$(reloads refused)', want $REFUSED"
	[ "$(reloads applied)" = $((GEN - 1)) ] ||
	    rc_fail "$1: reloads{applied} moved to $(reloads applied)"
	rc_curl "$D_URL/v1/status"
	rc_expect_json config.generation "$GEN" "$1: the generation in force is unchanged"
	rc_expect_json config.last_reload.result refused "$1: status shows the refusal"
	rc_expect_match "$(rc_json config.last_reload.error)" "$2" \
	    "$1: status names the cause"
	rc_expect_match "$(rc_json config.last_reload.time)" '^20[0-9][0-9]-' \
	    "$1: status gives the time"
}
tok() {	# tok ISS KEY KID JTI: an ES256 token for audience api
	M sign "$2" ES256 "$3" "{\"iss\":\"$1\",\"sub\":\"u\",\"aud\":\"api\",\"jti\":\"$4\",\"iat\":\"now\",\"exp\":\"now+600\"}"
}
authz() {	# authz TOKEN CODE WHAT [REASON]
	rc_curl -H "Authorization: Bearer $1" "$D_URL/v1/authz"
	rc_expect_status "$2" "$3"
	[ -z "${4:-}" ] || rc_expect_eq "$(rc_header X-Revcheck-Status)" "$4" "$3: reason"
}
cache_hits() {
	rc_curl "$D_URL/v1/status"
	rc_json token_verification.cache.hits
}

conf "$(iss_a)" '"poll_interval": 2'
rc_start D -c "$T/rc.json"
rc_wait_ready "$D_URL" 10 || rc_fail "D not ready"
rc_curl "$D_URL/v1/status"
rc_expect_json config.generation 1 "status: generation 1 at start"
rc_expect_json config.restart_pending null "status: nothing waits for a restart"
rc_expect_json config.last_reload null "status: no SIGHUP yet"
rc_expect_eq "$(reloads applied):$(reloads refused)" 0:0 "metrics: no config reload yet"
[ "$(rc_json config.applied_at)" != null ] && rc_ok "status: when it was applied" ||
    rc_fail "status: no applied_at"

TA=$(tok "$A" "$T/a-ec.pem" a-ec ok-a)
TB=$(tok "$B" "$T/b-ec.pem" b-ec ok-b)
authz "$TA" 200 "issuer A's token before any reload" not_revoked
authz "$TB" 401 "issuer B is not trusted yet" untrusted_issuer

# ---------------------------------------------------------------- issuers added, audiences, JWKS re-read
conf "$(iss_a), $(iss_b)" '"poll_interval": 2'
hup
authz "$TB" 200 "SIGHUP added issuer B: its token is accepted"
rc_wait_log "$T/D.log" "SIGHUP: configuration generation 2 applied: changed issuers" ||
    rc_fail "the log does not say the issuers were applied"
conf "$(iss_a other), $(iss_b)" '"poll_interval": 2'
hup
authz "$TA" 401 "SIGHUP changed A's audiences: a token for api is refused" wrong_audience
conf "$(iss_a), $(iss_b)" '"poll_interval": 2'
hup
authz "$TA" 200 "the audience api is back"
# The same JWKS path with another key in it: SIGHUP reads it again.
TA2=$(tok "$A" "$T/a-ec2.pem" a-ec2 ok-a2)
authz "$TA2" 401 "a token of A's next key before the JWKS is replaced" unknown_key
M jwks "$T/a.jwks" "$T/a-ec2.pem:a-ec2"
hup
authz "$TA2" 200 "SIGHUP re-read A's JWKS file: the new key's token is accepted"
authz "$TA" 401 "the old key, gone from the JWKS, is refused at once" unknown_key

# ---------------------------------------------------------------- a removed issuer: refused at once, cache included
h0=$(cache_hits)
authz "$TB" 200 "B's token verified"
authz "$TB" 200 "B's token again"
h1=$(cache_hits)
[ "$h1" -gt "$h0" ] && rc_ok "B's token is answered from the verified-token cache ($h0 -> $h1 hits)" ||
    rc_fail "B's token was not cached ($h0 -> $h1)"
conf "$(iss_a)" '"poll_interval": 2'
hup
authz "$TB" 401 "SIGHUP removed issuer B: its cached token is refused at once" untrusted_issuer
rc_curl -H 'Content-Type: application/json' --data-binary "{\"token\":\"$TB\"}" "$D_URL/v1/check"
rc_expect_status 401 "check: the removed issuer's token"
rc_expect_json reason untrusted_issuer "check: reason"

# ---------------------------------------------------------------- all or none: a broken issuers entry changes nothing
conf "$(iss_a), $(iss_b "$T/missing.jwks")" '"poll_interval": 2, "max_batch": 3'
hup_refused "a missing JWKS file" "$T/missing.jwks"
mkfifo "$T/fifo.jwks"
conf "$(iss_a), $(iss_b "$T/fifo.jwks")" '"poll_interval": 2, "max_batch": 3'
hup_refused "a FIFO as the JWKS file" 'fifo.jwks: not a regular file'
rc_curl "$D_URL/healthz"
rc_expect_status 200 "the FIFO did not hang the daemon"
cp "$T/b.jwks" "$T/gw.jwks"
chmod 664 "$T/gw.jwks"
conf "$(iss_a), $(iss_b "$T/gw.jwks")" '"poll_interval": 2, "max_batch": 3'
hup_refused "a group-writable JWKS file" 'gw.jwks: writable by group or others'
conf "$(iss_a)" "\"introspection_clients\": [{\"id\": \"gw\", \"secret_file\": \"$T/fifo.jwks\"}]"
hup_refused "a FIFO as a client secret" 'introspection client gw: .*fifo.jwks: not a regular file'
conf "$(iss_a), {\"issuer\": \"$B\", \"jwks_uri\": \"https://127.0.0.1:1/j\", \"jwks_ca_file\": \"$T/fifo.jwks\", \"audiences\": [\"api\"], \"algorithms\": [\"ES256\"]}"
hup_refused "a FIFO as a jwks_ca_file" 'jwks_ca_file: .*fifo.jwks: not a regular file'
conf "$(iss_a)" '"poll_interval": 2, "max_batch": 3, "max_age": "oops"'
hup_refused "a bad max_age" 'max_age'
mv "$T/rc.json" "$T/rc.json.keep"
mkfifo "$T/rc.json"
hup_refused "a FIFO as the config file" 'rc.json: not a regular file'
rm -f "$T/rc.json"
mv "$T/rc.json.keep" "$T/rc.json"
authz "$TB" 401 "after the refused reloads issuer B is still not trusted" untrusted_issuer
authz "$TA2" 200 "after the refused reloads issuer A still verifies"
printf '{"items":[{"id":"x1"},{"id":"x2"},{"id":"x3"},{"id":"x4"}]}' >"$T/batch4.json"
rc_curl -H 'Content-Type: application/json' --data-binary @"$T/batch4.json" "$D_URL/v1/check"
rc_expect_status 200 "the max_batch of 3 in the refused configurations was not applied"

# ---------------------------------------------------------------- request limits and the log format
conf "$(iss_a)" '"poll_interval": 2, "max_batch": 3, "max_body": 200, "log_format": "json", "token_cache_size": 5'
hup
rc_expect_json token_verification.cache.size 5 "token_cache_size 5 applied: the new cache has 5 slots"
rc_curl -H 'Content-Type: application/json' --data-binary @"$T/batch4.json" "$D_URL/v1/check"
rc_expect_status 413 "max_batch 3 applied: a batch of 4 is refused"
head -c 300 /dev/zero | tr '\0' ' ' >"$T/big.json"
rc_curl -H 'Content-Type: application/json' --data-binary @"$T/big.json" "$D_URL/v1/check"
rc_expect_status 413 "max_body 200 applied: a body of 300 bytes is refused"
rc_wait_log "$T/D.log" '^\{.*SIGHUP: configuration generation '"$GEN"' applied: changed max_batch, max_body, log_format, token_cache_size' ||
    rc_fail "log_format json was not applied (the applied line is not a JSON object)"

# ---------------------------------------------------------------- staleness policy: max_age, Retry-After
# Until the filter is more than 1 s old (its age, not a time slept).
for ((i = 0; i < 300; i++)); do
	rc_curl "$D_URL/v1/status"
	[ "$(rc_json filter.age_seconds)" -ge 2 ] 2>/dev/null && break
	sleep 0.1
done
[ "$i" -lt 300 ] || rc_fail "the filter's age did not reach 2 s ($(rc_json filter.age_seconds))"
conf "$(iss_a)" '"poll_interval": 7, "max_age": 1'
hup
rc_curl "$D_URL/v1/check?id=ok-x&scope=https%3A%2F%2Fa.example"
rc_expect_status 503 "max_age 1s applied: the 2 s old filter is stale"
rc_expect_json error filter_stale "max_age: filter_stale"
rc_expect_eq "$(rc_header Retry-After)" 7 "poll_interval 7 applied: Retry-After 7"
rc_curl "$D_URL/v1/status"
rc_expect_json filter.stale true "status: the filter is stale under the new max_age"
conf "$(iss_a)" '"poll_interval": 2, "max_age": "1h"'
hup
rc_curl "$D_URL/v1/check?id=ok-x&scope=https%3A%2F%2Fa.example"
rc_expect_status 200 "max_age 1h applied: fresh again"
rc_expect_json status not_revoked

# ---------------------------------------------------------------- token_verification and introspection_clients
UNSIGNED=$(rc_jwt "$A" ok-unsigned)
authz "$UNSIGNED" 401 "required mode: an unsigned token is refused"
conf "" '"token_verification": "revocation-only"'
hup
authz "$UNSIGNED" 200 "revocation-only applied: the gateway's token is only checked for revocation"
rc_curl "$D_URL/v1/status"
rc_expect_json token_verification.mode revocation-only "status: the mode in force"
UNCOVERED=$(rc_jwt "https://c.example" ok-c)
authz "$UNCOVERED" 403 "a token of a scope the filter does not cover: denied" not_covered
conf "" '"token_verification": "revocation-only", "authz_not_covered": "allow"'
hup
authz "$UNCOVERED" 200 "authz_not_covered allow applied: the same token passes" not_covered
FORM='Content-Type: application/x-www-form-urlencoded'
rc_curl -u "gw:$GW1" -H "$FORM" --data-urlencode "token=$TA2" "$D_URL/v1/introspect"
rc_expect_status 401 "no introspection client yet"
conf "$(iss_a)" "\"introspection_clients\": [{\"id\": \"gw\", \"secret_file\": \"$T/gw1.secret\", \"audiences\": [\"api\"]}]"
hup
authz "$UNSIGNED" 401 "required mode is back"
rc_curl -u "gw:$GW1" -H "$FORM" --data-urlencode "token=$TA2" "$D_URL/v1/introspect"
rc_expect_status 200 "SIGHUP added the introspection client gw"
rc_expect_json active true "introspect: A's valid token is active"
conf "$(iss_a)" "\"introspection_clients\": [{\"id\": \"gw\", \"secret_file\": \"$T/gw2.secret\", \"audiences\": [\"api\"]}]"
hup
rc_curl -u "gw:$GW1" -H "$FORM" --data-urlencode "token=$TA2" "$D_URL/v1/introspect"
rc_expect_status 401 "the client's old secret is refused once SIGHUP read the new one"
rc_curl -u "gw:$GW2" -H "$FORM" --data-urlencode "token=$TA2" "$D_URL/v1/introspect"
rc_expect_status 200 "the client's new secret is accepted"
conf "$(iss_a)" "\"introspection_clients\": [{\"id\": \"gw\", \"secret_file\": \"$T/gw2.secret\", \"audiences\": [\"billing\"]}]"
hup
rc_curl -u "gw:$GW2" -H "$FORM" --data-urlencode "token=$TA2" "$D_URL/v1/introspect"
rc_expect_json active false "SIGHUP applied the client's audiences: A's token for api is inactive"

# ---------------------------------------------------------------- restart-only settings: named, kept
conf "$(iss_a)" '"threads": 3, "conn_timeout": 5, "max_conns": 5000, "max_batch": 2'
hup
rc_wait_log "$T/D.log" 'SIGHUP: conn_timeout, max_conns, threads changed; not applied until a restart' ||
    rc_fail "the restart-only settings were not named in the log"
rc_curl "$D_URL/v1/status"
rc_expect_json config.restart_pending "conn_timeout, max_conns, threads" "status: restart_pending names them"
# --listen on the command line (rc_start) is read again too: unchanged, not named.
rc_expect_eq "$(grep -c 'listen.*not applied until a restart' "$T/D.log")" 0 "an unchanged listen is not named"
rc_curl -H 'Content-Type: application/json' --data-binary @"$T/batch4.json" "$D_URL/v1/check"
rc_expect_status 413 "the live max_batch of the same file was applied all the same"
conf "$(iss_a)"
hup
rc_curl "$D_URL/v1/status"
rc_expect_json config.restart_pending null "reverted: nothing waits for a restart"
rc_expect_eq "$(grep -c 'configuration generation [0-9]* applied' "$T/D.log")" $((GEN - 1)) \
    "one 'applied' line per applied SIGHUP"

# ---------------------------------------------------------------- a FIFO as the audit log stops nothing but the start
mkfifo "$T/audit.fifo"
mkdir -p "$T/s2"
out=$(timeout 10 "$REVCHECKD" --listen "127.0.0.1:$(rc_free_port)" --filter-dir "$T/f" \
    --trusted-key "$T/key.pub" --state-dir "$T/s2" --audit-log "$T/audit.fifo" 2>&1) && rc=0 || rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && rc_ok "a FIFO as audit_log: the start fails at once (exit $rc)" ||
    rc_fail "a FIFO as audit_log: exit $rc"
rc_expect_match "$out" 'audit_log: .*audit.fifo: (a FIFO or socket|No such device)' "the audit log FIFO is named"

# ---------------------------------------------------------------- edge: the authority's timeouts and retries
# An authority that accepts and never answers (rawhttp.py serve hang):
# a positive waits exactly (retries + 1) x upstream_timeout, then 503.
HANG_PID=
python3 "$RC_SRC/tests/integration/rawhttp.py" serve 0 hang >"$T/hang.port" 2>/dev/null &
HANG_PID=$!
stop_hang() { [ -z "$HANG_PID" ] || kill "$HANG_PID" 2>/dev/null || true; }
RC_AT_EXIT+=(stop_hang)
for _ in $(seq 1 300); do
	HANG_PORT=$(head -n 1 "$T/hang.port" 2>/dev/null || true)
	[ -n "$HANG_PORT" ] && break
	sleep 0.1
done
econf() {	# econf TIMEOUT RETRIES [MORE]
	printf '{"trusted_key": "%s", "state_dir": "%s", "upstream_insecure_http": true,
  "upstream_filter": "%s/v1/filter", "upstream_check": "http://127.0.0.1:%s/v1/check",
  "token_verification": "revocation-only",
  "upstream_timeout": "%s", "upstream_connect_timeout": "1", "upstream_retries": %s%s}\n' \
	    "$T/key.pub" "$T/se" "$D_URL" "$HANG_PORT" "$1" "$2" "${3:+, $3}" >"$T/e.json"
}
mkdir -p "$T/se"
econf 1 0 '"sync_interval": "1"'
rc_start E -c "$T/e.json"
rc_wait_version "$E_URL" 1 30 || rc_fail "E did not sync version 1"
positive_ms() {	# the milliseconds a filter positive waits on the hung authority
	local t0 code
	t0=$(date +%s%3N)
	code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 20 \
	    "$E_URL/v1/check?id=rev-1&scope=https%3A%2F%2Fa.example") || true
	[ "$code" = 503 ] || rc_fail "a positive on the hung authority: HTTP $code, want 503"
	echo $(( $(date +%s%3N) - t0 ))
}
ms=$(positive_ms)
[ "$ms" -ge 800 ] && [ "$ms" -lt 2500 ] &&
    rc_ok "upstream_timeout 1s, no retry: the positive waits ${ms} ms, then 503" ||
    rc_fail "upstream_timeout 1s: waited ${ms} ms"
econf 1 2 '"sync_interval": "5"'
kill -HUP "$E_PID"
rc_wait_json "$E_URL/v1/status" config.generation 2 30 || rc_fail "E did not apply the SIGHUP"
rc_expect_json config.restart_pending sync_interval "edge: sync_interval needs a restart"
ms=$(positive_ms)
[ "$ms" -ge 2700 ] && [ "$ms" -lt 5000 ] &&
    rc_ok "upstream_retries 2 applied by SIGHUP: the positive waits ${ms} ms (3 attempts of 1 s)" ||
    rc_fail "upstream_retries 2: waited ${ms} ms"
rc_stop E || rc_fail "E did not stop cleanly"
stop_hang
rc_stop D || rc_fail "D did not stop cleanly"
rc_done
