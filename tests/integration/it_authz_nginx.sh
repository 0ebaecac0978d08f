#!/usr/bin/env bash
# it_authz_nginx.sh - real nginx auth_request in front of a protected location, revcheckd's /v1/authz deciding
#
# Two revcheckd daemons: A with a long-lived filter, B with one that
# expires after six seconds. nginx protects /app/ with A and /app-b/ with
# B (auth_request to /v1/authz, the bearer token passed on); behind both
# is a static file. Tokens are signed by PyJWT (jwtmint.py) and verified
# against two trusted issuers: issuer.example (its revoked jti in the
# filter) and nobody.example (trusted, but the filter does not cover it).
. "$(dirname "$0")/lib.sh"

FB() { "$FILTERBUILD" "$@"; }
now_ms() { local t=${EPOCHREALTIME/[.,]/}; echo $((10#$t / 1000)); }	# no exec: a fork is dear on some CI machines
SECRET="protected content $RANDOM$RANDOM"

ISS=https://issuer.example
UNC=https://nobody.example
rc_jwtmint key rsa "$T/idp.pem"
rc_jwtmint key p256 "$T/unc.pem"
rc_jwtmint jwks "$T/idp.jwks" "$T/idp.pem:idp-1"
rc_jwtmint jwks "$T/unc.jwks" "$T/unc.pem:unc-1"
jwt() {		# jwt ISS JTI SUB: signed by ISS's key, valid for ten minutes
	local kf=idp.pem kid=idp-1 alg=RS256
	[ "$1" = "$UNC" ] && { kf=unc.pem; kid=unc-1; alg=ES256; }
	rc_jwtmint sign "$T/$kf" "$alg" "$kid" \
	    "{\"iss\":\"$1\",\"jti\":\"$2\",\"sub\":\"$3\",\"aud\":\"app\",\"exp\":\"now+600\"}"
}
JWT_REV=$(jwt "$ISS" tok-rev-1 alice)
JWT_OK=$(jwt "$ISS" tok-good bob)
JWT_ISS_REV=$(jwt "$ISS" jti-rev carol)
JWT_ISS_OK=$(jwt "$ISS" jti-ok dave)
JWT_UNCOV=$(jwt "$UNC" x eve)
JWT_FORGED=$(rc_jwtmint none "{\"iss\":\"$ISS\",\"jti\":\"tok-good\",\"sub\":\"bob\",\"aud\":\"app\",\"exp\":\"now+600\"}")
JWT_STRIPPED=$(rc_jwtmint strip "$JWT_OK")

# ---------------------------------------------------------------- filters and daemons
FB keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
printf '[{"id": "tok-rev-1", "scope": "%s"}, {"id": "tok-rev-2", "scope": "%s"},
 {"id": "jti-rev", "scope": "%s", "reason": "superseded"}]\n' "$ISS" "$ISS" "$ISS" \
    >"$T/tokens.json"
printf '{"issuers": [
  {"issuer": "%s", "jwks_file": "%s", "audiences": ["app"], "algorithms": ["RS256"]},
  {"issuer": "%s", "jwks_file": "%s", "audiences": ["app"], "algorithms": ["ES256"]}]}\n' \
    "$ISS" "$T/idp.jwks" "$UNC" "$T/unc.jwks" >"$T/issuers.json"
mkdir -p "$T/fa" "$T/fb" "$T/sa" "$T/sb" "$T/www"
printf '%s\n' "$SECRET" >"$T/www/index.html"
FB build --key "$T/key.pem" --out "$T/fa" --version 1 --quiet "$T/tokens.json"
rc_start A -c "$T/issuers.json" --filter-dir "$T/fa" --trusted-key "$T/key.pub" \
    --state-dir "$T/sa"
rc_wait_ready "$A_URL" 30 || rc_fail "A not ready"

# ---------------------------------------------------------------- nginx
NG=$T/nginx
NG_PID=
ng_cleanup() {
	if [ -n "$NG_PID" ]; then
		kill -TERM "$NG_PID" 2>/dev/null || true
		wait "$NG_PID" 2>/dev/null || true
	fi
	rc_cleanup
}
trap ng_cleanup EXIT
mkdir -p "$NG"

# auth LOCATION-NAME BACKEND: the internal subrequest location. The
# request body is not passed; only the Authorization header is.
auth_loc() {
	cat <<EOF
        location = /_auth_$1 {
            internal;
            proxy_pass $2/v1/authz;
            proxy_pass_request_body off;
            proxy_set_header Content-Length "";
            proxy_pass_request_headers off;
            proxy_set_header Authorization \$http_authorization;
            proxy_connect_timeout 2s;
            proxy_read_timeout 5s;
        }
EOF
}

# Start nginx once B's URL is known (B starts later, its filter is short-lived).
ng_start() {
	local try port
	for try in 1 2 3 4 5; do
		port=$(rc_free_port)
		{ rc_nginx_conf "$NG"; cat <<EOF; } >"$NG/nginx.conf"
    default_type text/plain;
    server {
        listen 127.0.0.1:$port;
$(auth_loc a "$A_URL")
$(auth_loc b "$B_URL")
        # A: the verdict is passed on; a refused check (nginx turns an
        # auth_request 503 into 500) becomes 503 with Retry-After, as in
        # config/nginx-revcheck.conf.
        location /app/ {
            auth_request /_auth_a;
            auth_request_set \$rc_status \$upstream_http_x_revcheck_status;
            add_header X-Revcheck-Status \$rc_status always;
            error_page 500 = @unavailable;
            alias $T/www/;
        }
        # B: plain auth_request, no error_page.
        location /app-b/ {
            auth_request /_auth_b;
            alias $T/www/;
        }
        location @unavailable {
            add_header Retry-After 5 always;
            return 503 "revocation status unavailable\n";
        }
        location / { return 404; }
    }
}
EOF
		if rc_nginx_run "$NG" "$port"; then
			NG_URL="http://127.0.0.1:$port"
			return 0
		fi
	done
	echo "nginx did not start:" >&2
	cat "$NG/stderr.log" "$NG/error.log" >&2 || true
	return 1
}

# B starts with nothing to serve; its short-lived filter is published
# once it runs (picked up at once), so that a slow start cannot eat the
# filter's whole validity.
rc_start B -c "$T/issuers.json" --filter-dir "$T/fb" --trusted-key "$T/key.pub" \
    --state-dir "$T/sb" --poll-interval 1
ng_start
FB build --key "$T/key.pem" --out "$T/fb" --version 1 --valid-for 6s --quiet \
    "$T/tokens.json"

# get PATH [JWT]: through nginx; sets RC_STATUS, RC_BODY.
get() {
	if [ -n "${2:-}" ]; then
		rc_curl -H "Authorization: Bearer $2" "$NG_URL$1"
	else
		rc_curl "$NG_URL$1"
	fi
}
served() { printf '%s' "$RC_BODY" | grep -qF "$SECRET"; }
expect_denied() {	# expect_denied WHAT: non-2xx and no protected content
	case "$RC_STATUS" in
	2??) rc_fail "$1: HTTP $RC_STATUS passed" ;;
	*) rc_ok "$1: HTTP $RC_STATUS" ;;
	esac
	if served; then rc_fail "$1: protected content served"; else
		rc_ok "$1: protected content withheld"; fi
}

# ---------------------------------------------------------------- verdicts through nginx
get /app/ "$JWT_OK"
rc_expect_status 200 "a token whose jti is not revoked passes"
served && rc_ok "the protected content is served" || rc_fail "no protected content"
rc_expect_eq "$(rc_header X-Revcheck-Status)" not_revoked "verdict header passed on"
get /app/ "$JWT_REV"
rc_expect_status 403 "a token whose jti is revoked"
expect_denied "revoked jti"
rc_expect_eq "$(rc_header X-Revcheck-Status)" revoked "verdict header on a refusal"
get /app/ "$JWT_ISS_REV"
rc_expect_status 403 "a revoked jti in its issuer's scope"
expect_denied "revoked jti (iss scope)"
get /app/ "$JWT_ISS_OK"
rc_expect_status 200 "a good jti in its issuer's scope"
get /app/ "$JWT_UNCOV"
rc_expect_status 403 "an issuer the filter does not cover"
expect_denied "not covered"
get /app/
rc_expect_status 401 "no credential"
expect_denied "no credential"
rc_curl -H "Authorization: Bearer not-a-jwt" "$NG_URL/app/"
rc_expect_status 401 "an unreadable token"
expect_denied "unreadable token"
rc_curl -H "Authorization: Basic dXNlcjpwYXNz" "$NG_URL/app/"
expect_denied "a non-bearer credential"
get /app/ "$JWT_FORGED"
rc_expect_status 401 "a forged token (alg none) with a clean jti"
expect_denied "alg none"
rc_expect_eq "$(rc_header X-Revcheck-Status)" algorithm_refused "alg none: reason passed on"
get /app/ "$JWT_STRIPPED"
rc_expect_status 401 "a good token with its signature stripped"
expect_denied "signature stripped"
rc_expect_eq "$(rc_header X-Revcheck-Status)" bad_signature "stripped: reason passed on"

# ---------------------------------------------------------------- a stale filter is refused
end=$(( $(now_ms) + 30000 ))
until curl -s "$B_URL/readyz" | grep -q filter_stale; do
	[ "$(now_ms)" -lt "$end" ] || { rc_fail "B's filter never turned stale"; break; }
	sleep 0.2
done
rc_curl -H "Authorization: Bearer $JWT_OK" "$B_URL/v1/authz"
rc_expect_status 503 "B answers 503 itself once stale"
rc_expect_json verdict filter_stale "B: verdict filter_stale"
get /app-b/ "$JWT_OK"
expect_denied "stale filter, a good token (plain auth_request)"
rc_expect_status 500 "nginx turns the auth_request 503 into 500"
get /app-b/ "$JWT_REV"
expect_denied "stale filter, a revoked token"

# ---------------------------------------------------------------- revcheckd gone
rc_stop A || rc_fail "A did not exit 0"
get /app/ "$JWT_OK"
rc_expect_status 503 "revcheckd down: 503 through error_page"
expect_denied "revcheckd down"
rc_expect_eq "$(rc_header Retry-After)" 5 "Retry-After from nginx"

rc_stop B || rc_fail "B did not exit 0"
rc_done
