#!/usr/bin/env bash
# it_jwt.sh - token verification against trusted issuers: PyJWT-signed tokens, the classic attacks, fail closed
#
# Keys, JWKS files and tokens are made by PyJWT (jwtmint.py). Issuer A
# signs with RSA, P-256 and Ed25519 keys, issuer B with its own P-256
# key, issuer H with an HS256 secret. Every forged or invalid token must
# get 401 with WWW-Authenticate: Bearer error="invalid_token" and its
# reason in X-Revcheck-Status, on /v1/authz, POST /v1/check and in a
# batch; valid tokens are then checked for revocation as before. A
# daemon with no issuer refuses every token unless it runs
# revocation-only, and /v1/status says which.
. "$(dirname "$0")/lib.sh"

A=https://a.example
B=https://b.example
H=https://h.example
W=https://w.example
M() { rc_jwtmint "$@"; }

# ---------------------------------------------------------------- keys, filter
"$FILTERBUILD" keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
M key rsa "$T/a-rsa.pem"
M key p256 "$T/a-ec.pem"
M key ed25519 "$T/a-ed.pem"
M key p256 "$T/b-ec.pem"
M jwks "$T/a.jwks" "$T/a-rsa.pem:a-rsa" "$T/a-ec.pem:a-ec" "$T/a-ed.pem:a-ed"
M jwks "$T/b.jwks" "$T/b-ec.pem:b-ec"
# Issuer W's JWKS is broken: besides a good key, keys no token may be
# verified with (see "a broken JWKS" below).
M key p256 "$T/w-ec.pem"
M key ed25519 "$T/w-ed.pem"
M key p256 "$T/w-enc.pem"
M jwks "$T/w.jwks" "$T/w-ec.pem:w-ec" "$T/w-ed.pem:w-ed" "$T/w-enc.pem:w-enc"
# The neutral point as an Ed25519 key: R = neutral, S = 0 signs anything.
M jwks-edit "$T/w.jwks" w-ed '{"x": "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}'
# An encryption key: "key_ops" without "verify" (and no "use").
M jwks-edit "$T/w.jwks" w-enc '{"use": null, "key_ops": ["encrypt", "wrapKey"]}'
# A leaked key: the JWK with its private "d", so anyone can sign.
M key p256 "$T/w-priv.pem"
M jwks-private "$T/w.jwks" "$T/w-priv.pem" w-priv
head -c 48 /dev/urandom | base64 -w0 >"$T/h.secret"
# Subject and session cutoffs at T0: every token of sub carol (of session
# sess-9) from A issued before T0 is revoked. Each also has an older
# cutoff (an hour earlier), listed after it: the later one must win, or
# the tokens issued in between (the "now-120" ones below) go free.
T0=$(date -u +%Y-%m-%dT%H:%M:%SZ)
T1=$(date -u -d '-1 hour' +%Y-%m-%dT%H:%M:%SZ)
printf '[{"id": "rev-1", "scope": "%s", "reason": "keyCompromise"},
 {"id": "rev-h", "scope": "%s"}, {"id": "rev-b", "scope": "%s"},
 {"id": "rev-w", "scope": "%s"},
 {"sub": "carol", "scope": "%s", "before": "%s"},
 {"sid": "sess-9", "scope": "%s", "before": "%s"},
 {"sub": "carol", "scope": "%s", "before": "%s"},
 {"sid": "sess-9", "scope": "%s", "before": "%s"}]\n' \
    "$A" "$H" "$B" "$W" "$A" "$T0" "$A" "$T0" "$A" "$T1" "$A" "$T1" \
    >"$T/revoked.json"
mkdir -p "$T/f" "$T/s" "$T/sn" "$T/sr"
"$FILTERBUILD" build --key "$T/key.pem" --out "$T/f" --quiet "$T/revoked.json"

printf '{
  "filter_dir": "%s", "trusted_key": "%s", "state_dir": "%s",
  "issuers": [
    {"issuer": "%s", "jwks_file": "%s", "audiences": ["api"],
     "algorithms": ["RS256", "ES256", "EdDSA"], "leeway": "30s"},
    {"issuer": "%s", "jwks_file": "%s", "audiences": ["api"],
     "algorithms": ["ES256"]},
    {"issuer": "%s", "hs_secret_file": "%s", "jwks_file": "%s",
     "audiences": ["api"], "algorithms": ["HS256"]},
    {"issuer": "%s", "jwks_file": "%s", "audiences": ["api"],
     "algorithms": ["ES256", "EdDSA"]}
  ]
}\n' "$T/f" "$T/key.pub" "$T/s" "$A" "$T/a.jwks" "$B" "$T/b.jwks" \
    "$H" "$T/h.secret" "$T/b.jwks" "$W" "$T/w.jwks" >"$T/rc.json"
out=$("$REVCHECKD" -c "$T/rc.json" --check-config 2>&1) &&
    rc_ok "--check-config accepts the issuers" || rc_fail "--check-config: $out"
rc_start D -c "$T/rc.json"
rc_wait_ready "$D_URL" 10 || rc_fail "D not ready"

cl() {	# cl ISS JTI [EXTRA-JSON-MEMBERS]: a claims object
	printf '{"iss":"%s","jti":"%s","sub":"u1","aud":"api","iat":"now","exp":"now+600"%s}' \
	    "$1" "$2" "${3:+,$3}"
}

# expect_invalid WHAT REASON TOKEN: refused on every token path
expect_invalid() {
	local what=$1 reason=$2 tok=$3
	rc_curl -H "Authorization: Bearer $tok" "$D_URL/v1/authz"
	rc_expect_status 401 "authz: $what"
	rc_expect_eq "$(rc_header X-Revcheck-Status)" "$reason" "authz: $what: reason"
	rc_expect_eq "$(rc_header WWW-Authenticate)" 'Bearer error="invalid_token"' \
	    "authz: $what: RFC 6750 challenge"
	case "$RC_BODY$RC_HEADERS" in
	*"${tok%%.*}"*) rc_fail "authz: $what: the token is echoed" ;;
	*) rc_ok "authz: $what: the token is not echoed" ;;
	esac
	rc_curl -H 'Content-Type: application/json' --data-binary "{\"token\":\"$tok\"}" \
	    "$D_URL/v1/check"
	rc_expect_status 401 "check: $what"
	rc_expect_json error invalid_token "check: $what: error"
	rc_expect_json reason "$reason" "check: $what: reason"
	rc_expect_eq "$(rc_header WWW-Authenticate)" 'Bearer error="invalid_token"' \
	    "check: $what: RFC 6750 challenge"
	rc_curl -H 'Content-Type: application/json' \
	    --data-binary "{\"items\":[{\"token\":\"$tok\"},{\"id\":\"x\",\"scope\":\"$A\"}]}" "$D_URL/v1/check"
	rc_expect_status 200 "batch: $what"
	rc_expect_json results.0.error invalid_token "batch: $what: item refused"
	rc_expect_json results.0.reason "$reason" "batch: $what: item reason"
	rc_expect_json results.1.status not_revoked "batch: $what: the next item answered"
}

# ---------------------------------------------------------------- valid tokens
for spec in "a-rsa.pem RS256 a-rsa" "a-ec.pem ES256 a-ec" "a-ed.pem EdDSA a-ed"; do
	read -r kf alg kid <<<"$spec"
	tok=$(M sign "$T/$kf" "$alg" "$kid" "$(cl "$A" "ok-$alg")")
	rc_curl -H "Authorization: Bearer $tok" "$D_URL/v1/authz"
	rc_expect_status 200 "authz: a valid $alg token"
	rc_expect_eq "$(rc_header X-Revcheck-Status)" not_revoked "authz: $alg: not_revoked"
	rc_curl -H 'Content-Type: application/json' --data-binary "{\"token\":\"$tok\"}" \
	    "$D_URL/v1/check"
	rc_expect_status 200 "check: a valid $alg token"
	rc_expect_json status not_revoked "check: $alg: not_revoked"
	rc_expect_json scope "$A" "check: $alg: the issuer is the scope"
	tok=$(M sign "$T/$kf" "$alg" "$kid" "$(cl "$A" rev-1)")
	rc_curl -H "Authorization: Bearer $tok" "$D_URL/v1/authz"
	rc_expect_status 403 "authz: a valid but revoked $alg token"
	rc_expect_eq "$(rc_header X-Revcheck-Status)" revoked "authz: $alg: revoked"
done
tok=$(M sign "$T/b-ec.pem" ES256 b-ec "$(cl "$B" ok-b)")
rc_curl -H "Authorization: Bearer $tok" "$D_URL/v1/authz"
rc_expect_status 200 "authz: issuer B's valid token"
tok=$(M hs "$T/h.secret" HS256 "$(cl "$H" ok-h)")
rc_curl -H "Authorization: Bearer $tok" "$D_URL/v1/authz"
rc_expect_status 200 "authz: a valid HS256 token (issuer with a secret)"
tok=$(M hs "$T/h.secret" HS256 "$(cl "$H" rev-h)")
rc_curl -H "Authorization: Bearer $tok" "$D_URL/v1/authz"
rc_expect_status 403 "authz: a revoked HS256 token"
tok=$(M sign "$T/a-ec.pem" ES256 a-ec "$(cl "$A" ok-aud | sed 's/"aud":"api"/"aud":["x","api"]/')")
rc_curl -H "Authorization: Bearer $tok" "$D_URL/v1/authz"
rc_expect_status 200 "authz: aud as an array holding an accepted audience"

# ---------------------------------------------------------------- subject and session cutoffs
cut() {	# cut WHAT CODE CLAIMS: /v1/authz answers CODE
	rc_curl -H "Authorization: Bearer $(M sign "$T/a-ec.pem" ES256 a-ec "$3")" "$D_URL/v1/authz"
	rc_expect_status "$2" "cutoff: $1"
}
C='"iss":"'$A'","aud":"api","exp":"now+600"'
cut "sub carol issued before the cutoff" 403 "{$C,\"jti\":\"c1\",\"sub\":\"carol\",\"iat\":\"now-120\"}"
cut "sub carol issued after the cutoff" 200 "{$C,\"jti\":\"c2\",\"sub\":\"carol\",\"iat\":\"now\"}"
cut "sub carol without iat (cannot be proven newer)" 403 "{$C,\"jti\":\"c3\",\"sub\":\"carol\"}"
cut "another sub issued before the cutoff" 200 "{$C,\"jti\":\"c4\",\"sub\":\"dave\",\"iat\":\"now-120\"}"
cut "session sess-9 issued before the cutoff" 403 "{$C,\"jti\":\"c5\",\"sub\":\"erin\",\"sid\":\"sess-9\",\"iat\":\"now-120\"}"
cut "another session issued before the cutoff" 200 "{$C,\"jti\":\"c6\",\"sub\":\"erin\",\"sid\":\"sess-1\",\"iat\":\"now-120\"}"
# A sub or sid that is not a string could not be named by a cutoff:
# refused, never let through the cutoffs unseen.
cut "sub carol as an array" 401 "{$C,\"jti\":\"c8\",\"sub\":[\"carol\"],\"iat\":\"now-120\"}"
cut "sub as a number" 401 "{$C,\"jti\":\"c9\",\"sub\":12345,\"iat\":\"now-120\"}"
cut "sub as an object" 401 "{$C,\"jti\":\"c10\",\"sub\":{\"n\":\"carol\"},\"iat\":\"now-120\"}"
cut "sid sess-9 as an array" 401 "{$C,\"jti\":\"c11\",\"sub\":\"erin\",\"sid\":[\"sess-9\"],\"iat\":\"now-120\"}"
cut "sid as null" 401 "{$C,\"jti\":\"c12\",\"sub\":\"erin\",\"sid\":null,\"iat\":\"now-120\"}"
arr=$(M sign "$T/a-ec.pem" ES256 a-ec "{$C,\"jti\":\"c13\",\"sub\":[\"carol\"],\"iat\":\"now-120\"}")
rc_curl -H 'Content-Type: application/json' --data-binary "{\"token\":\"$arr\"}" "$D_URL/v1/check"
rc_expect_status 400 "check: a token whose sub is an array"
rc_expect_json message 'bad token: "sub" is not a string (subject and session cutoffs could not apply)' \
    "check: the refusal names the claim"
old=$(M sign "$T/a-ec.pem" ES256 a-ec "{$C,\"jti\":\"c7\",\"sub\":\"carol\",\"iat\":\"now-120\"}")
rc_curl -H 'Content-Type: application/json' --data-binary "{\"token\":\"$old\"}" "$D_URL/v1/check"
rc_expect_json status revoked "check: a token under a subject cutoff is revoked"
rc_expect_json reason "subject cutoff" "check: the reason names the cutoff"
rc_expect_json id c7 "check: the answer is about the token's jti"
rc_curl -H 'Content-Type: application/json' --data-binary "{\"items\":[{\"token\":\"$old\"}]}" \
    "$D_URL/v1/check"
rc_expect_json results.0.status revoked "batch: a token under a subject cutoff"

# ---------------------------------------------------------------- the classic attacks
good=$(M sign "$T/a-rsa.pem" RS256 a-rsa "$(cl "$A" forged-1)")
noexp() { sed 's/,"exp":"now+600"//'; }
expect_invalid "alg none" algorithm_refused "$(M none "$(cl "$A" forged-1)")"
expect_invalid "signature stripped" bad_signature "$(M strip "$good")"
expect_invalid "RS256 re-signed as HS256 with the public key as secret" \
    algorithm_refused "$(M hs-pubkey "$T/a-rsa.pem" a-rsa "$(cl "$A" forged-1)")"
expect_invalid "HS256 with a public key as secret, issuer with HS" \
    bad_signature "$(M hs-pubkey "$T/b-ec.pem" b-ec "$(cl "$H" forged-1)")"
expect_invalid "kid of another issuer" unknown_key \
    "$(M sign "$T/b-ec.pem" ES256 b-ec "$(cl "$A" forged-1)")"
expect_invalid "a key of issuer A claiming issuer B" unknown_key \
    "$(M sign "$T/a-ec.pem" ES256 a-ec "$(cl "$B" forged-1)")"
expect_invalid "ES256 header on the Ed25519 key" algorithm_refused \
    "$(M sign "$T/a-ec.pem" ES256 a-ed "$(cl "$A" forged-1)")"
expect_invalid "expired" expired \
    "$(M sign "$T/a-ec.pem" ES256 a-ec "$(cl "$A" x '"exp":"now-120"' | noexp)")"
expect_invalid "not yet valid" not_yet_valid \
    "$(M sign "$T/a-ec.pem" ES256 a-ec "$(cl "$A" x '"nbf":"now+300"')")"
expect_invalid "wrong audience" wrong_audience \
    "$(M sign "$T/a-ec.pem" ES256 a-ec "$(cl "$A" x | sed 's/"aud":"api"/"aud":"billing"/')")"
expect_invalid "untrusted issuer" untrusted_issuer \
    "$(M sign "$T/a-ec.pem" ES256 a-ec "$(cl https://evil.example x)")"
expect_invalid "unknown critical header" unknown_critical_header \
    "$(M sign "$T/a-ec.pem" ES256 a-ec "$(cl "$A" x)" '{"crit":["x-rc"],"x-rc":1}')"
expect_invalid "no exp" missing_claim \
    "$(M sign "$T/a-ec.pem" ES256 a-ec "$(cl "$A" x | noexp)")"

# Each refusal is counted under its reason in /metrics.
rc_curl "$D_URL/metrics"
for why in algorithm_refused bad_signature unknown_key expired not_yet_valid wrong_audience \
    untrusted_issuer unknown_critical_header missing_claim; do
	n=$(sed -n "s/^revcheckd_token_verification_failures_total{reason=\"$why\"} //p" <<<"$RC_BODY")
	[ "${n:-0}" -ge 3 ] && rc_ok "metrics: token failures counted as $why ($n)" ||
	    rc_fail "metrics: token failures with reason $why: '${n}'"
done
rc_expect_match "$RC_BODY" 'revcheckd_token_verification_failures_total\{reason="keys_unavailable"\} 0' \
    "metrics: a reason never met is 0"

# ---------------------------------------------------------------- a broken JWKS
# Keys of issuer W's set that must not verify anything; its good key does.
rc_curl -H "Authorization: Bearer $(M sign "$T/w-ec.pem" ES256 w-ec "$(cl "$W" ok-w)")" \
    "$D_URL/v1/authz"
rc_expect_status 200 "authz: issuer W's token signed by its good key"
expect_invalid "EdDSA, the neutral point as the key, R = neutral and S = 0" \
    unknown_key "$(M raw '{"alg":"EdDSA","kid":"w-ed"}' "$(cl "$W" forged-w)" \
    "01$(printf '0%.0s' $(seq 1 126))")"
expect_invalid "a key whose key_ops lack verify (an encryption key)" \
    unknown_key "$(M sign "$T/w-enc.pem" ES256 w-enc "$(cl "$W" forged-w)")"
expect_invalid "a JWK published with its private \"d\"" \
    unknown_key "$(M sign "$T/w-priv.pem" ES256 w-priv "$(cl "$W" forged-w)")"

# The genuine token whose jti the forgeries used passes.
rc_curl -H "Authorization: Bearer $good" "$D_URL/v1/authz"
rc_expect_status 200 "the genuine token of the forged jti passes"

# The verified-token cache: the same token again is not verified again,
# but its revocation is still checked on every request.
rc_curl -H "Authorization: Bearer $good" "$D_URL/v1/authz"
rc_expect_status 200 "the same token again (cached)"
rc_curl "$D_URL/v1/status"
h=$(rc_json token_verification.cache.hits)
[ "$h" -ge 1 ] && rc_ok "status: cache hits counted ($h)" || rc_fail "no cache hit counted"
rc_expect_json token_verification.cache.size 10000 "status: the default cache size"
tok=$(M sign "$T/a-ec.pem" ES256 a-ec "$(cl "$A" rev-1)")
for i in 1 2; do
	rc_curl -H "Authorization: Bearer $tok" "$D_URL/v1/authz"
	rc_expect_status 403 "a revoked token stays refused when cached ($i)"
done

rc_curl "$D_URL/v1/status"
rc_expect_json token_verification.mode required "status: mode required"
rc_expect_json token_verification.issuers.0.keys 3 "status: issuer A's three keys"

# ---------------------------------------------------------------- fail closed without an issuer
unsigned=$(rc_jwt "$A" ok-unsigned)
rc_start N --filter-dir "$T/f" --trusted-key "$T/key.pub" --state-dir "$T/sn"
rc_wait_ready "$N_URL" 10 || rc_fail "N not ready"
rc_curl -H "Authorization: Bearer $good" "$N_URL/v1/authz"
rc_expect_status 401 "no issuer configured: even a well-signed token is refused"
rc_expect_eq "$(rc_header X-Revcheck-Status)" untrusted_issuer "no issuer: reason"
rc_curl -H 'Content-Type: application/json' --data-binary "{\"token\":\"$unsigned\"}" \
    "$N_URL/v1/check"
rc_expect_status 401 "no issuer configured: POST token refused"
rc_curl "$N_URL/v1/status"
rc_expect_json token_verification.mode required "status: the default is required"
grep -q "no trusted token issuer is configured" "$T/N.log" &&
    rc_ok "the startup log says tokens are refused" || rc_fail "no startup warning"

rc_start R --filter-dir "$T/f" --trusted-key "$T/key.pub" --state-dir "$T/sr" \
    --token-verification revocation-only
rc_wait_ready "$R_URL" 10 || rc_fail "R not ready"
rc_curl -H "Authorization: Bearer $unsigned" "$R_URL/v1/authz"
rc_expect_status 200 "revocation-only: an unsigned token is only looked up"
rc_curl -H "Authorization: Bearer $(rc_jwt "$A" rev-1)" "$R_URL/v1/authz"
rc_expect_status 403 "revocation-only: a revoked jti is still refused"
rc_curl "$R_URL/v1/status"
rc_expect_json token_verification.mode revocation-only "status: revocation-only shown"

# ---------------------------------------------------------------- config refusals
bad() {	# bad WHAT REGEX ISSUER-JSON
	printf '{"filter_dir":"%s","trusted_key":"%s","issuers":[%s]}' "$T/f" \
	    "$T/key.pub" "$3" >"$T/bad.json"
	if out=$("$REVCHECKD" -c "$T/bad.json" --check-config 2>&1); then
		rc_fail "--check-config accepted: $1"
	else
		rc_expect_match "$out" "$2" "--check-config refuses: $1"
	fi
}
J="\"issuer\":\"$A\",\"jwks_file\":\"$T/a.jwks\""
bad "no audiences" audiences "{$J,\"algorithms\":[\"ES256\"]}"
bad "alg none" "never none" "{$J,\"audiences\":[\"api\"],\"algorithms\":[\"none\"]}"
bad "HS without a secret" hs_secret_file "{$J,\"audiences\":[\"api\"],\"algorithms\":[\"HS256\"]}"
bad "a typo in a key" "unknown key" "{$J,\"audience\":[\"api\"],\"algorithms\":[\"ES256\"]}"
bad "missing JWKS file" "nope.jwks" \
    "{\"issuer\":\"$A\",\"jwks_file\":\"$T/nope.jwks\",\"audiences\":[\"api\"],\"algorithms\":[\"ES256\"]}"
printf 'short\n' >"$T/short.secret"
bad "a short HS secret" "shorter than" \
    "{$J,\"hs_secret_file\":\"$T/short.secret\",\"audiences\":[\"api\"],\"algorithms\":[\"HS256\"]}"
printf '{"filter_dir":"%s","trusted_key":"%s","token_verification":"revocation-only","issuers":[{%s,"audiences":["api"],"algorithms":["ES256"]}]}' \
    "$T/f" "$T/key.pub" "$J" >"$T/bad.json"
out=$("$REVCHECKD" -c "$T/bad.json" --check-config 2>&1) &&
    rc_fail "revocation-only with issuers accepted" ||
    rc_expect_match "$out" "revocation-only" "revocation-only with issuers refused"

rc_stop D || rc_fail "D did not exit 0"
rc_done
