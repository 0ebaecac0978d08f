#!/usr/bin/env bash
# it_introspect.sh - RFC 7662 POST /v1/introspect: client authentication, answers, and Apache mod_auth_openidc as a real consumer
#
# Tokens are signed by PyJWT (jwtmint.py). /v1/introspect is asked
# directly (curl) for its authentication, parameters and answers (a
# client is answered only for tokens of its audiences; every claim comes
# back JSON-escaped, '<' '>' '&' and control characters as \u00XX; a
# token whose payload is not UTF-8, signed as it is by PyJWS, is
# inactive), then
# Apache with libapache2-mod-auth-openidc protects /api/ with
# OIDCOAuthIntrospectionEndpoint pointing at revcheckd: a valid token
# gets through, a revoked, forged or expired one does not. Apache runs on
# a loopback port from a config in $T (as root its children run as
# nobody).
. "$(dirname "$0")/lib.sh"

I=https://idp.example
M() { rc_jwtmint "$@"; }
SECRET="protected api $RANDOM$RANDOM"

"$FILTERBUILD" keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
M key p256 "$T/idp.pem"
M jwks "$T/idp.jwks" "$T/idp.pem:k1"
printf '[{"id": "rev-1", "scope": "%s"}]\n' "$I" >"$T/revoked.json"
mkdir -p "$T/f" "$T/s" "$T/empty" "$T/s2"
"$FILTERBUILD" build --key "$T/key.pem" --out "$T/f" --quiet "$T/revoked.json"
for c in gw bill api; do
	head -c 24 /dev/urandom | base64 | tr -d '/+=' >"$T/$c.secret"
	chmod 600 "$T/$c.secret"
done
GW_SECRET=$(cat "$T/gw.secret")
BILL_SECRET=$(cat "$T/bill.secret")
API_SECRET=$(cat "$T/api.secret")

# Clients: gw for audience api, bill for billing, and api with no
# "audiences" (its id is its one audience, with a warning at start).
conf() {	# conf FILTER_DIR STATE_DIR
	printf '{"filter_dir": "%s", "trusted_key": "%s", "state_dir": "%s",
  "issuers": [{"issuer": "%s", "jwks_file": "%s",
    "audiences": ["api", "billing"], "algorithms": ["ES256"]}],
  "introspection_clients": [
    {"id": "gw", "secret_file": "%s", "audiences": ["api"]},
    {"id": "bill", "secret_file": "%s", "audiences": ["billing"]},
    {"id": "api", "secret_file": "%s"}]}\n' \
	    "$1" "$T/key.pub" "$2" "$I" "$T/idp.jwks" "$T/gw.secret" \
	    "$T/bill.secret" "$T/api.secret"
}
conf "$T/f" "$T/s" >"$T/rc.json"
rc_start D -c "$T/rc.json"
rc_wait_ready "$D_URL" 10 || rc_fail "D not ready"

tok() {	# tok JTI [EXTRA-MEMBERS]
	M sign "$T/idp.pem" ES256 k1 \
	    "{\"iss\":\"$I\",\"sub\":\"alice\",\"aud\":\"api\",\"jti\":\"$1\",\"scope\":\"read write\",\"client_id\":\"app\",\"iat\":\"now\",\"exp\":\"now+600\"${2:+,$2}}"
}
GOOD=$(tok ok-1)
REVOKED=$(tok rev-1)
FORGED=$(M none "{\"iss\":\"$I\",\"sub\":\"alice\",\"aud\":\"api\",\"jti\":\"ok-2\",\"exp\":\"now+600\"}")
EXPIRED=$(M sign "$T/idp.pem" ES256 k1 "{\"iss\":\"$I\",\"aud\":\"api\",\"jti\":\"ok-3\",\"exp\":\"now-300\"}")
BASIC=(-u "gw:$GW_SECRET")
FORM='Content-Type: application/x-www-form-urlencoded'

# ---------------------------------------------------------------- client authentication
rc_curl -H "$FORM" --data-urlencode "token=$GOOD" "$D_URL/v1/introspect"
rc_expect_status 401 "no client credential"
rc_expect_json error invalid_client "no credential: invalid_client"
rc_expect_match "$(rc_header WWW-Authenticate)" '^Basic' "a Basic challenge"
rc_curl -u "gw:wrong-secret-wrong-secret" -H "$FORM" --data-urlencode "token=$GOOD" \
    "$D_URL/v1/introspect"
rc_expect_status 401 "a wrong secret"
rc_curl -u "other:$GW_SECRET" -H "$FORM" --data-urlencode "token=$GOOD" \
    "$D_URL/v1/introspect"
rc_expect_status 401 "the right secret under another client id"
rc_curl -H "Authorization: Bearer $GOOD" -H "$FORM" --data-urlencode "token=$GOOD" \
    "$D_URL/v1/introspect"
rc_expect_status 401 "the token itself is no client credential"

# ---------------------------------------------------------------- answers
rc_curl "${BASIC[@]}" -H "$FORM" --data-urlencode "token=$GOOD" \
    --data-urlencode token_type_hint=access_token "$D_URL/v1/introspect"
rc_expect_status 200 "a valid token"
rc_expect_json active true "valid: active"
rc_expect_json iss "$I" "valid: iss"
rc_expect_json sub alice "valid: sub"
rc_expect_json aud api "valid: aud"
rc_expect_json jti ok-1 "valid: jti"
rc_expect_json scope "read write" "valid: scope"
rc_expect_json client_id app "valid: client_id"
rc_expect_json token_type Bearer "valid: token_type"
rc_expect_match "$(rc_json exp)" '^[0-9]+$' "valid: exp a number"
rc_expect_match "$(rc_json iat)" '^[0-9]+$' "valid: iat a number"
rc_expect_match "$(rc_header Cache-Control)" no-store "not cached"
rc_expect_eq "$(rc_header X-Revcheck-Filter-Version)" 1 \
    "valid: the filter version it was decided on"
rc_curl "${BASIC[@]}" -H "$FORM" --data-urlencode "token=$REVOKED" "$D_URL/v1/introspect"
rc_expect_eq "$(rc_header X-Revcheck-Filter-Version)" 1 \
    "revoked: the filter version it was decided on"
rc_curl "${BASIC[@]}" -H "$FORM" --data-urlencode "token=$FORGED" "$D_URL/v1/introspect"
rc_expect_eq "$(rc_header X-Revcheck-Filter-Version)" "" \
    "forged: no filter decided it, no version"
rc_curl -H "Authorization: Bearer $GW_SECRET" -H "$FORM" --data-urlencode "token=$GOOD" \
    "$D_URL/v1/introspect"
rc_expect_json active true "a bearer client secret authenticates too"
for c in "revoked:$REVOKED" "forged (alg none):$FORGED" "expired:$EXPIRED" \
    "garbage:not-a-token"; do
	rc_curl "${BASIC[@]}" -H "$FORM" --data-urlencode "token=${c#*:}" "$D_URL/v1/introspect"
	rc_expect_status 200 "${c%%:*}: answered"
	rc_expect_eq "$RC_BODY" '{"active":false}' "${c%%:*}: exactly {\"active\":false}"
done
rc_curl "${BASIC[@]}" -H "$FORM" --data 'token_type_hint=access_token' "$D_URL/v1/introspect"
rc_expect_status 400 "no token parameter"
rc_expect_json error invalid_request "no token: invalid_request"
rc_curl "${BASIC[@]}" -H "$FORM" --data-urlencode "token=$GOOD" --data-urlencode "token=$REVOKED" \
    "$D_URL/v1/introspect"
rc_expect_status 400 "a repeated token parameter"
rc_curl "${BASIC[@]}" -H 'Content-Type: application/json' --data "{\"token\":\"$GOOD\"}" \
    "$D_URL/v1/introspect"
rc_expect_status 415 "a JSON body"
rc_curl "${BASIC[@]}" "$D_URL/v1/introspect"
rc_expect_status 405 "GET"

# ---------------------------------------------------------------- audiences (RFC 7662 section 4)
rc_wait_log "$T/D.log" 'introspection client api: no "audiences"' ||
    rc_fail "no warning for a client without audiences"
AUD_API=$(tok aud-1)
AUD_BILL=$(M sign "$T/idp.pem" ES256 k1 \
    "{\"iss\":\"$I\",\"sub\":\"bob\",\"aud\":\"billing\",\"jti\":\"aud-2\",\"exp\":\"now+600\"}")
AUD_BOTH=$(M sign "$T/idp.pem" ES256 k1 \
    "{\"iss\":\"$I\",\"sub\":\"bob\",\"aud\":[\"billing\",\"api\"],\"jti\":\"aud-3\",\"exp\":\"now+600\"}")
# aud_case CLIENT:SECRET TOKEN-NAME TOKEN WANT
aud_case() {
	rc_curl -u "$1" -H "$FORM" --data-urlencode "token=$3" "$D_URL/v1/introspect"
	rc_expect_status 200 "audience: client ${1%%:*}, token $2: answered"
	rc_expect_json active "$4" "audience: client ${1%%:*}, token $2: active $4"
}
aud_case "gw:$GW_SECRET" aud=api "$AUD_API" true
aud_case "gw:$GW_SECRET" aud=billing "$AUD_BILL" false
aud_case "gw:$GW_SECRET" 'aud=[billing,api]' "$AUD_BOTH" true
aud_case "bill:$BILL_SECRET" aud=api "$AUD_API" false
aud_case "bill:$BILL_SECRET" aud=billing "$AUD_BILL" true
aud_case "bill:$BILL_SECRET" 'aud=[billing,api]' "$AUD_BOTH" true
aud_case "api:$API_SECRET" aud=api "$AUD_API" true
aud_case "api:$API_SECRET" aud=billing "$AUD_BILL" false
rc_curl "${BASIC[@]}" -H "$FORM" --data-urlencode "token=$AUD_BILL" "$D_URL/v1/introspect"
rc_expect_eq "$RC_BODY" '{"active":false}' "audience: exactly {\"active\":false}, no claim"
rc_curl -H "Authorization: Bearer $BILL_SECRET" -H "$FORM" --data-urlencode "token=$AUD_API" \
    "$D_URL/v1/introspect"
rc_expect_json active false "audience: a bearer secret is its client's audiences too"
rc_curl -H "Authorization: Bearer $BILL_SECRET" -H "$FORM" --data-urlencode "token=$AUD_BILL" \
    "$D_URL/v1/introspect"
rc_expect_json active true "audience: bearer bill, aud=billing"

# ---------------------------------------------------------------- claims escaped
# Every claim comes back escaped: '<' '>' '&', DEL and control characters
# as \u00XX, so the answer is never markup; JSON decoding gives the claim.
ESC_SUB='<img src=x onerror=alert(1)>'
ESC=$(M sign "$T/idp.pem" ES256 k1 \
    "{\"iss\":\"$I\",\"sub\":\"$ESC_SUB\",\"aud\":\"api\",\"jti\":\"esc-1\",\"scope\":\"a&b <c>\",\"client_id\":\"x\\u0001\\u001f\\u007fy\",\"exp\":\"now+600\"}")
rc_curl "${BASIC[@]}" -H "$FORM" --data-urlencode "token=$ESC" "$D_URL/v1/introspect"
rc_expect_json active true "escaped: active"
rc_expect_json sub "$ESC_SUB" "escaped: sub decodes to the claim"
rc_expect_json scope "a&b <c>" "escaped: scope decodes to the claim"
rc_expect_json client_id "$(printf 'x\001\037\177y')" "escaped: client_id decodes to the claim"
rc_expect_match "$RC_BODY" '"sub":"\\u003cimg src=x onerror=alert\(1\)\\u003e"' \
    "escaped: < and > as \\u003c and \\u003e"
rc_expect_match "$RC_BODY" '"scope":"a\\u0026b \\u003cc\\u003e"' "escaped: & as \\u0026"
rc_expect_match "$RC_BODY" '"client_id":"x\\u0001\\u001f\\u007fy"' \
    "escaped: control characters and DEL as \\u00XX"
if LC_ALL=C tr -d '\n' <"$RC_BODY_FILE" | LC_ALL=C grep -q '[<>&[:cntrl:]]'; then
	rc_fail "escaped: a raw < > & or control byte in the answer"
else
	rc_ok "escaped: no raw < > & or control byte in the answer"
fi

# ---------------------------------------------------------------- UTF-8
# Payloads signed as they are (PyJWS): a claim that is not UTF-8 makes
# the token malformed, never active, never echoed; a valid one is kept.
EXP=$(($(date +%s) + 600))
utf8_tok() {	# utf8_tok JTI SUB-BYTES (printf escapes)
	M sign-bytes "$T/idp.pem" ES256 k1 "$(printf '{"iss":"%s","aud":"api","jti":"%s","exp":%s,"sub":"'"$2"'"}' \
	    "$I" "$1" "$EXP" | od -An -tx1 | tr -d ' \n')"
}
GOOD8=$(utf8_tok u-ok 'caf\303\251 \360\237\230\200')
rc_curl "${BASIC[@]}" -H "$FORM" --data-urlencode "token=$GOOD8" "$D_URL/v1/introspect"
rc_expect_json active true "UTF-8: a valid payload signed as bytes is active"
rc_expect_json sub "$(printf 'caf\303\251 \360\237\230\200')" "UTF-8: sub kept"
for c in 'overlong /:\300\257' 'overlong 3 bytes:\340\200\257' \
    'surrogate U+D800:\355\240\200' 'above U+10FFFF:\364\220\200\200' \
    'stray continuation:a\200b' 'byte ff:\377' 'cut sequence:\342\202'; do
	what=${c%%:*}
	bad=$(utf8_tok "u-bad" "${c#*:}")
	rc_curl "${BASIC[@]}" -H "$FORM" --data-urlencode "token=$bad" "$D_URL/v1/introspect"
	rc_expect_status 200 "UTF-8: $what: answered"
	rc_expect_eq "$RC_BODY" '{"active":false}' "UTF-8: $what: inactive"
	rc_curl -H 'Content-Type: application/json' --data-binary "{\"token\":\"$bad\"}" \
	    "$D_URL/v1/check"
	rc_expect_status 400 "UTF-8: $what: /v1/check refuses it as malformed"
	rc_expect_match "$(rc_json message)" 'payload is not valid UTF-8' \
	    "UTF-8: $what: /v1/check says why"
	rc_curl -H "Authorization: Bearer $bad" "$D_URL/v1/authz"
	rc_expect_status 401 "UTF-8: $what: /v1/authz refuses it"
	rc_expect_eq "$(rc_header X-Revcheck-Status)" bad_credential \
	    "UTF-8: $what: authz bad_credential"
done

# No fresh filter: no answer, as for every check.
conf "$T/empty" "$T/s2" >"$T/rc2.json"
rc_start E -c "$T/rc2.json"
rc_curl "${BASIC[@]}" -H "$FORM" --data-urlencode "token=$GOOD" "$E_URL/v1/introspect"
rc_expect_status 503 "no filter: 503, never active"
rc_expect_json error no_filter "no filter: no_filter"

# ---------------------------------------------------------------- Apache mod_auth_openidc
# mod_auth_openidc introspects over https only: a real nginx with a test
# CA terminates TLS in front of revcheckd, and Apache trusts that CA.
NG=$T/ng
mkdir -p "$NG"
rc_tls_cert "$NG" || rc_fail "test CA"
rc_nginx_tls "$NG" "        location = /v1/introspect { proxy_pass $D_URL; }" ||
    rc_fail "nginx did not start"
INTROSPECT_URL=$NG_TLS_BASE/v1/introspect
rc_curl --cacert "$NG/ca.pem" "${BASIC[@]}" -H "$FORM" --data-urlencode "token=$GOOD" \
    "$INTROSPECT_URL"
rc_expect_json active true "through the TLS front"

AP=$T/apache
mkdir -p "$AP/www/api" "$AP/run"
cp "$NG/ca.pem" "$AP/ca.pem"
printf '%s\n' "$SECRET" >"$AP/www/api/index.html"
user=
if [ "$(id -u)" -eq 0 ]; then
	user="User nobody
Group nogroup"
	chmod 755 "$T"
	chown -R nobody:nogroup "$AP"
fi
MODS=/usr/lib/apache2/modules
AP_PID=
ap_cleanup() {
	if [ -n "$AP_PID" ]; then
		kill -TERM "$AP_PID" 2>/dev/null || true
		wait "$AP_PID" 2>/dev/null || true
	fi
	rc_cleanup	# stops nginx (NG_PID) and the daemons
}
trap ap_cleanup EXIT
ap_start() {
	local try port
	for try in 1 2 3 4 5; do
		port=$(rc_free_port)
		cat >"$AP/httpd.conf" <<EOF
ServerRoot $AP
ServerName 127.0.0.1
Listen 127.0.0.1:$port
PidFile $AP/run/httpd.pid
DefaultRuntimeDir $AP/run
ErrorLog $AP/error.log
LogLevel warn auth_openidc:info
$user
LoadModule mpm_prefork_module $MODS/mod_mpm_prefork.so
LoadModule authz_core_module $MODS/mod_authz_core.so
LoadModule authn_core_module $MODS/mod_authn_core.so
LoadModule authz_user_module $MODS/mod_authz_user.so
LoadModule auth_openidc_module $MODS/mod_auth_openidc.so
StartServers 1
MinSpareServers 1
MaxSpareServers 2
DocumentRoot $AP/www
OIDCCryptoPassphrase $(head -c 16 /dev/urandom | base64 | tr -d '/+=')
OIDCCacheType shm
OIDCCABundlePath $AP/ca.pem
OIDCOAuthSSLValidateServer On
OIDCOAuthIntrospectionEndpoint $INTROSPECT_URL
OIDCOAuthIntrospectionEndpointAuth client_secret_basic
OIDCOAuthClientID gw
OIDCOAuthClientSecret $GW_SECRET
OIDCOAuthRemoteUserClaim sub
# Without it, mod_auth_openidc caches an active answer until the token's
# exp: a revocation would not reach this gateway for the token's lifetime.
OIDCOAuthTokenIntrospectionInterval -1
<Location /api/>
    AuthType oauth20
    Require valid-user
</Location>
EOF
		# Its own session: on SIGTERM Apache signals its whole
		# process group, which would otherwise include this script.
		setsid /usr/sbin/apache2 -f "$AP/httpd.conf" -DFOREGROUND \
		    >>"$AP/stderr.log" 2>&1 &
		AP_PID=$!
		for _ in $(seq 1 50); do
			kill -0 "$AP_PID" 2>/dev/null || break
			if curl -s -o /dev/null "http://127.0.0.1:$port/"; then
				AP_URL="http://127.0.0.1:$port"
				return 0
			fi
			sleep 0.1
		done
		kill -TERM "$AP_PID" 2>/dev/null || true
		wait "$AP_PID" 2>/dev/null || true
		AP_PID=
	done
	cat "$AP/stderr.log" "$AP/error.log" >&2 2>/dev/null || true
	return 1
}
if ! ap_start; then
	rc_fail "Apache did not start"
	rc_done
fi
through() {	# through WHAT TOKEN: status through Apache
	if [ -n "$2" ]; then
		rc_curl -H "Authorization: Bearer $2" "$AP_URL/api/index.html"
	else
		rc_curl "$AP_URL/api/index.html"
	fi
}
served() { case "$RC_BODY" in *"$SECRET"*) return 0 ;; esac; return 1; }
through "valid" "$GOOD"
rc_expect_status 200 "Apache: a valid token gets through"
served && rc_ok "Apache: the protected content is served" ||
    rc_fail "Apache: no protected content (error.log: $(tail -n 3 "$AP/error.log"))"
for c in "revoked:$REVOKED" "forged:$FORGED" "expired:$EXPIRED" "stripped:$(M strip "$(tok ok-9)")"; do
	through "${c%%:*}" "${c#*:}"
	rc_expect_status 401 "Apache: a ${c%%:*} token is refused"
	served && rc_fail "Apache: ${c%%:*}: content served" ||
	    rc_ok "Apache: ${c%%:*}: content withheld"
done
through "none" ""
rc_expect_status 401 "Apache: no token"
# A token that got through once, then revoked (a new filter version):
# the next request is refused, not answered from mod_auth_openidc's cache.
LATE=$(tok ok-late)
through "later revoked, first use" "$LATE"
rc_expect_status 200 "Apache: a valid token gets through before it is revoked"
printf '[{"id": "rev-1", "scope": "%s"}, {"id": "ok-late", "scope": "%s"}]\n' "$I" "$I" \
    >"$T/revoked2.json"
"$FILTERBUILD" build --key "$T/key.pem" --out "$T/f" --quiet "$T/revoked2.json"
rc_wait_version "$D_URL" 2 || rc_fail "revcheckd did not load version 2"
through "later revoked" "$LATE"
rc_expect_status 401 "Apache: a token revoked after its first use is refused"
served && rc_fail "Apache: revoked after first use: content served" ||
    rc_ok "Apache: revoked after first use: content withheld"
rc_curl "$D_URL/metrics"
rc_expect_match "$RC_BODY" 'endpoint="introspect"' "revcheckd counted the introspection requests"

rc_stop D || rc_fail "D did not exit 0"
rc_done
