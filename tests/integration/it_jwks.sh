#!/usr/bin/env bash
# it_jwks.sh - an issuer's keys fetched from its jwks_uri: a real nginx over TLS (test CA), rotation, outage, maximum age
#
# nginx serves the JWKS over https with a certificate from a test CA
# (rc_tls_cert); keys and tokens are made by PyJWT (jwtmint.py). Daemon D
# refreshes every 2 s: a new kid is accepted without a restart, a removed
# key's tokens are refused once the set says so, the last good set is kept
# while nginx is down (across a SIGHUP too), and after jwks_max_age the issuer's tokens are
# refused (keys_unavailable). Daemon L refreshes hourly, at most once per
# 20 s: a burst of unknown kids fetches the set once, a new kid is then
# accepted after one fetch, and a kid still unknown fetches nothing more
# within the interval (20 s, not 8: under ASan on a busy machine the steps
# took more than 8 s). A plain-http jwks_uri is refused.
. "$(dirname "$0")/lib.sh"

I=https://idp.example
M() { rc_jwtmint "$@"; }

"$FILTERBUILD" keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
printf '[{"id": "rev-1", "scope": "%s"}]\n' "$I" >"$T/revoked.json"
mkdir -p "$T/f" "$T/sd" "$T/sl" "$T/ng/www"
"$FILTERBUILD" build --key "$T/key.pem" --out "$T/f" --quiet "$T/revoked.json"
M key p256 "$T/k1.pem"
M key rsa "$T/k2.pem"
M key ed25519 "$T/k3.pem"
publish() {	# publish KEY:KID...: the served JWKS, replaced atomically
	M jwks "$T/ng/www/jwks.tmp" "$@"
	mv "$T/ng/www/jwks.tmp" "$T/ng/www/jwks.json"
}
publish "$T/k1.pem:k1"

# ---------------------------------------------------------------- nginx with TLS
NG=$T/ng
rc_tls_cert "$NG" || rc_fail "test CA"
rc_nginx_tls "$NG" "        location = /d/jwks.json { alias $NG/www/jwks.json; }
        location = /l/jwks.json { alias $NG/www/jwks.json; }" ||
    { rc_fail "nginx did not start"; rc_done; }
JWKS_BASE=$NG_TLS_BASE
curl -sS --cacert "$NG/ca.pem" "$JWKS_BASE/d/jwks.json" | grep -q '"k1"' &&
    rc_ok "nginx serves the JWKS over TLS" || rc_fail "nginx: no JWKS"

conf() {	# conf FILE PATH REFRESH MIN_INTERVAL MAX_AGE STATE
	printf '{"filter_dir": "%s", "trusted_key": "%s", "state_dir": "%s",
  "issuers": [{"issuer": "%s", "jwks_uri": "%s%s", "jwks_ca_file": "%s",
    "audiences": ["api"], "algorithms": ["ES256", "RS256", "EdDSA"],
    "jwks_refresh": "%s", "jwks_min_interval": "%s", "jwks_max_age": "%s"}]}\n' \
	    "$T/f" "$T/key.pub" "$6" "$I" "$JWKS_BASE" "$2" "$NG/ca.pem" "$3" "$4" "$5" >"$1"
}
conf "$T/d.json" /d/jwks.json 2s 1s 12s "$T/sd"
conf "$T/l.json" /l/jwks.json 1h 20s 2h "$T/sl"
rc_start D -c "$T/d.json"
rc_start L -c "$T/l.json"
rc_wait_ready "$D_URL" 30 || rc_fail "D not ready"
rc_wait_ready "$L_URL" 30 || rc_fail "L not ready"

tok() {	# tok KEYFILE ALG KID JTI
	M sign "$T/$1" "$2" "$3" "{\"iss\":\"$I\",\"jti\":\"$4\",\"aud\":\"api\",\"exp\":\"now+900\"}"
}
code() {	# code URL TOKEN: the /v1/authz status
	curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $2" "$1/v1/authz"
}
wait_code() {	# wait_code URL TOKEN CODE SECONDS WHAT
	local end=$(( $(date +%s) + $4 )) got
	while :; do
		got=$(code "$1" "$2")
		[ "$got" = "$3" ] && { rc_ok "$5 (HTTP $3)"; return 0; }
		[ "$(date +%s)" -lt "$end" ] || { rc_fail "$5: HTTP $got, want $3"; return 1; }
		sleep 0.3
	done
}
T1=$(tok k1.pem ES256 k1 ok-1)
T2=$(tok k2.pem RS256 k2 ok-2)
T3=$(tok k3.pem EdDSA k3 ok-3)
R1=$(tok k1.pem ES256 k1 rev-1)

# ---------------------------------------------------------------- fetched at start
rc_curl -H "Authorization: Bearer $T1" "$D_URL/v1/authz"
rc_expect_status 200 "a token of the fetched key"
rc_curl -H "Authorization: Bearer $R1" "$D_URL/v1/authz"
rc_expect_status 403 "a revoked token of the fetched key"
rc_curl -H "Authorization: Bearer $T2" "$D_URL/v1/authz"
rc_expect_status 401 "a kid the set does not hold yet"
rc_expect_eq "$(rc_header X-Revcheck-Status)" unknown_key "unknown kid: reason"
rc_curl "$D_URL/v1/status"
rc_expect_json token_verification.issuers.0.keys 1 "status: one key fetched"
rc_expect_json token_verification.issuers.0.keys_expired false "status: the set is fresh"

# ---------------------------------------------------------------- rotation without restart
publish "$T/k1.pem:k1" "$T/k2.pem:k2"
wait_code "$D_URL" "$T2" 200 30 "a new kid is accepted after a refresh, no restart"
publish "$T/k2.pem:k2"
wait_code "$D_URL" "$T1" 401 30 "the removed key's tokens are refused after a refresh"
rc_curl -H "Authorization: Bearer $T1" "$D_URL/v1/authz"
rc_expect_eq "$(rc_header X-Revcheck-Status)" unknown_key "removed key: unknown_key"
rc_curl -H "Authorization: Bearer $T2" "$D_URL/v1/authz"
rc_expect_status 200 "the remaining key still verifies"
kill -0 "$D_PID" && rc_ok "D ran through the rotation (same process)" || rc_fail "D died"

# ---------------------------------------------------------------- token cache and JWKS in /metrics
metric() {	# metric NAME{LABELS}: its value in $T/m.prom ("" when absent)
	awk -v n="$1" '$1 == n { print $2 }' "$T/m.prom"
}
refreshes() { curl -s "$D_URL/metrics" | awk -v n="revcheckd_jwks_refreshes_total{issuer=\"$I\"}" '$1 == n { print $2 }'; }
r0=$(refreshes)
for i in 1 2 3; do code "$D_URL" "$T2" >/dev/null; done
# One more refresh (every 2 s): a new key generation, so T2 is verified again.
for ((i = 0; i < 300; i++)); do
	[ "$(refreshes)" -gt "${r0:-0}" ] 2>/dev/null && break
	sleep 0.1
done
[ "$i" -lt 300 ] || rc_fail "D did not refresh its JWKS again (refreshes ${r0:-none} -> $(refreshes))"
code "$D_URL" "$T2" >/dev/null
curl -s "$D_URL/metrics" >"$T/m.prom"
out=$(promtool check metrics <"$T/m.prom" 2>&1) && rc=0 || rc=$?
rc_expect_eq "$rc:$out" "0:" "promtool check metrics is clean with the token cache and JWKS series"
Q='{issuer="https://idp.example"}'
rc_expect_eq "$(metric "revcheckd_jwks_keys$Q")" 1 "metrics: the set in service has one key"
[ "$(metric "revcheckd_jwks_refreshes_total$Q")" -ge 3 ] &&
    rc_ok "metrics: refreshes counted ($(metric "revcheckd_jwks_refreshes_total$Q"))" ||
    rc_fail "metrics: refreshes $(metric "revcheckd_jwks_refreshes_total$Q")"
age=$(metric "revcheckd_jwks_age_seconds$Q")
[ -n "$age" ] && [ "$age" -ge 0 ] && [ "$age" -le 10 ] &&
    rc_ok "metrics: the set's age ($age s) follows the 2 s refresh" || rc_fail "metrics: set age '$age'"
[ "$(metric revcheckd_token_cache_hits_total)" -ge 2 ] &&
    rc_ok "metrics: cache hits counted" || rc_fail "metrics: hits $(metric revcheckd_token_cache_hits_total)"
[ "$(metric revcheckd_token_cache_misses_total)" -ge 3 ] &&
    rc_ok "metrics: cache misses counted" || rc_fail "metrics: misses $(metric revcheckd_token_cache_misses_total)"
[ "$(metric 'revcheckd_token_cache_evictions_total{reason="keys_changed"}')" -ge 1 ] &&
    rc_ok "metrics: entries made under replaced keys are dropped" ||
    rc_fail "metrics: keys_changed evictions $(metric 'revcheckd_token_cache_evictions_total{reason="keys_changed"}')"
rc_expect_eq "$(metric revcheckd_token_cache_size)" 10000 "metrics: the cache size is token_cache_size"
[ "$(metric revcheckd_token_cache_entries)" -ge 1 ] &&
    rc_ok "metrics: entries in the cache" || rc_fail "metrics: entries $(metric revcheckd_token_cache_entries)"

# ---------------------------------------------------------------- L: unknown kids, one fetch
lfetches() { grep -c 'GET /l/jwks.json' "$NG/access.log" || true; }
before=$(lfetches)
rc_curl -H "Authorization: Bearer $T2" "$L_URL/v1/authz"
rc_expect_status 401 "L: k1 was its only key at start, so k2 is unknown"
for i in $(seq 1 20); do code "$L_URL" "$T3" >/dev/null; done
wait_code "$L_URL" "$T2" 200 40 "L: after one fetch the new kid is accepted"
l_t1=$(date +%s)
sleep 2	# a window for a second fetch to show, were there one (an absence has no event)
after=$(lfetches)
rc_expect_eq "$(( after - before ))" 1 "L: 21 unknown-kid tokens fetched the set once"
rc_curl -H "Authorization: Bearer $T3" "$L_URL/v1/authz"
rc_expect_status 401 "L: a kid still unknown is refused, no second fetch within 20 s"
sleep 1	# a window for a fetch it would wrongly start
rc_expect_eq "$(lfetches)" "$after" "L: no fetch for it within jwks_min_interval"
# The fetch began at most a poll (0.3 s) and a fetch before l_t1.
l_secs=$(( $(date +%s) - l_t1 ))
[ "$l_secs" -lt 18 ] && rc_ok "L: checked $l_secs s after the fetch, inside jwks_min_interval" ||
    rc_fail "L: checked $l_secs s after the fetch, too near jwks_min_interval to prove anything"

# ---------------------------------------------------------------- SIGHUP: a new issuer whose URL hangs
# L gets two more issuers whose jwks_uri accepts connections and never
# answers (rawhttp.py serve 0 silent: not even a TLS handshake; libcurl
# gives up after its 5 s connect timeout, so fetching both first took at
# least 10 s). The reload is in force within about 2 s, not after the
# fetches: the main thread (filter loads, the watchdog) is not held. The
# hung issuer's tokens are refused (keys_unavailable) while the first
# issuer's verify as before.
python3 "$RC_SRC/tests/integration/rawhttp.py" serve 0 silent >"$T/hang.port" 2>/dev/null &
HANG_PID=$!
stop_hang() { kill "$HANG_PID" 2>/dev/null || true; }
RC_AT_EXIT+=(stop_hang)
HANG_PORT=
for _ in $(seq 1 300); do
	HANG_PORT=$(head -n 1 "$T/hang.port" 2>/dev/null || true)
	[ -n "$HANG_PORT" ] && break
	sleep 0.1
done
H=https://hang.example
printf '{"filter_dir": "%s", "trusted_key": "%s", "state_dir": "%s",
  "issuers": [{"issuer": "%s", "jwks_uri": "%s/l/jwks.json", "jwks_ca_file": "%s",
    "audiences": ["api"], "algorithms": ["ES256", "RS256", "EdDSA"],
    "jwks_refresh": "1h", "jwks_min_interval": "20s", "jwks_max_age": "2h"},
   {"issuer": "%s", "jwks_uri": "https://127.0.0.1:%s/jwks.json", "jwks_ca_file": "%s",
    "audiences": ["api"], "algorithms": ["ES256"]},
   {"issuer": "%s-2", "jwks_uri": "https://127.0.0.1:%s/other.json", "jwks_ca_file": "%s",
    "audiences": ["api"], "algorithms": ["ES256"]}]}\n' \
    "$T/f" "$T/key.pub" "$T/sl" "$I" "$JWKS_BASE" "$NG/ca.pem" "$H" "$HANG_PORT" "$NG/ca.pem" \
    "$H" "$HANG_PORT" "$NG/ca.pem" >"$T/l.json"
t0=$(date +%s%3N)
kill -HUP "$L_PID"
rc_wait_json "$L_URL/v1/status" config.generation 2 30 || rc_fail "L did not apply the SIGHUP"
ms=$(( $(date +%s%3N) - t0 ))
[ "$ms" -lt 6000 ] && rc_ok "SIGHUP with a hung jwks_uri in force after $ms ms (not a 10 s fetch)" ||
    rc_fail "SIGHUP with a hung jwks_uri took $ms ms"
rc_wait_log "$T/L.log" "issuer $H: https://127.0.0.1:$HANG_PORT/jwks.json not fetched within 2000 ms" 1 30 &&
    rc_ok "the slow first fetch is logged" || rc_fail "no log of the slow first fetch"
rc_curl -H "Authorization: Bearer $T2" "$L_URL/v1/authz"
rc_expect_status 200 "L after the SIGHUP: the first issuer's tokens verify"
TH=$(M sign "$T/k1.pem" ES256 k1 "{\"iss\":\"$H\",\"jti\":\"h-1\",\"aud\":\"api\",\"exp\":\"now+900\"}")
rc_curl -H "Authorization: Bearer $TH" "$L_URL/v1/authz"
rc_expect_status 401 "the hung issuer's token is refused"
rc_expect_eq "$(rc_header X-Revcheck-Status)" keys_unavailable "hung issuer: keys_unavailable"
stop_hang

# ---------------------------------------------------------------- the URL down, then too old
kill -TERM "$NG_PID"; wait "$NG_PID" 2>/dev/null || true; NG_PID=
rc_curl -H "Authorization: Bearer $T2" "$D_URL/v1/authz"
rc_expect_status 200 "JWKS URL down: the last good set is kept"
# A SIGHUP meanwhile builds a new trust set: the set of an unchanged
# jwks_uri is carried over with its age (no wait on the dead URL, no
# loss of the last good set), and fetched again in the background.
kill -HUP "$D_PID"
rc_wait_json "$D_URL/v1/status" config.generation 2 30 || rc_fail "D did not apply the SIGHUP"
rc_curl -H "Authorization: Bearer $T2" "$D_URL/v1/authz"
rc_expect_status 200 "JWKS URL down, after SIGHUP: the last good set is still kept"
wait_code "$D_URL" "$T2" 401 30 "past jwks_max_age the issuer's tokens are refused"
rc_curl -H "Authorization: Bearer $T2" "$D_URL/v1/authz"
rc_expect_eq "$(rc_header X-Revcheck-Status)" keys_unavailable "too old: keys_unavailable"
rc_curl "$D_URL/v1/status"
rc_expect_json token_verification.issuers.0.keys_expired true "status: the set is expired"
[ "$(rc_json token_verification.issuers.0.fetches_failed)" -gt 0 ] &&
    rc_ok "status counts failed fetches" || rc_fail "no failed fetch counted"
rc_expect_match "$(rc_json token_verification.issuers.0.last_error)" . "status: the last error is shown"
curl -s "$D_URL/metrics" >"$T/m.prom"
[ "$(metric "revcheckd_jwks_refresh_failures_total$Q")" -ge 1 ] &&
    rc_ok "metrics: failed fetches counted" || rc_fail "metrics: failures $(metric "revcheckd_jwks_refresh_failures_total$Q")"
grep -q "keeping the last good set" "$T/D.log" &&
    rc_ok "the failed fetch is logged" || rc_fail "no log of the failed fetch"

# ---------------------------------------------------------------- http refused
printf '{"filter_dir":"%s","trusted_key":"%s","issuers":[{"issuer":"%s","jwks_uri":"http://127.0.0.1:1/j","audiences":["api"],"algorithms":["ES256"]}]}' \
    "$T/f" "$T/key.pub" "$I" >"$T/http.json"
out=$("$REVCHECKD" -c "$T/http.json" --check-config 2>&1) &&
    rc_fail "an http:// jwks_uri was accepted" ||
    rc_expect_match "$out" "https://" "an http:// jwks_uri is refused"

rc_stop D || rc_fail "D did not exit 0"
rc_stop L || rc_fail "L did not exit 0"
rc_done
