#!/usr/bin/env bash
# it_gateway_quickstart.sh - the README's gateway quick start as written: its revcheckd configuration and the shipped nginx example, real nginx, PyJWT tokens, openssl client certificates
#
# revcheckd runs with the JSON block of README.md's "Gateway quick start"
# (an issuers block with a JWKS file), paths replaced; nginx runs
# config/nginx-revcheck.conf as shipped, with only its site values
# replaced (listen ports, certificate paths, the two upstream addresses;
# each replacement must hit, so a changed example fails here). Behind it
# a stand-in app (an nginx location) echoes the identity headers it gets.
# Tokens are signed by PyJWT against the JWKS; client certificates come
# from tests/pki.sh's openssl CA, whose CRL is in the filter. Cases:
# allowed (with its identity headers, escaped), revoked, bad signature,
# a forged identity header from the client, mTLS good and revoked, and,
# after a SIGHUP to the shipped default config/revcheckd.json (no
# issuers), every token refused (untrusted_issuer) while certificates
# still pass. Last, Envoy's x-forwarded-client-cert read by a daemon set
# to "xfcc", no identity from an unverified token (revocation-only), and
# config/envoy-ext-authz.yaml parsed as YAML (Envoy itself is not
# installed here).
. "$(dirname "$0")/lib.sh"

FB() { "$FILTERBUILD" "$@"; }
README=$RC_SRC/README.md
NGX_EXAMPLE=$RC_SRC/config/nginx-revcheck.conf

# ---------------------------------------------------------------- PKI, tokens, filter
"$RC_SRC/tests/pki.sh" "$T/pki" >/dev/null
GOOD=$(awk -F'\t' '$3 == "valid" { print $1; exit }' "$T/pki/certs.tsv")
REV=$(awk -F'\t' '$3 == "revoked" { print $1; exit }' "$T/pki/certs.tsv")
[ -n "$GOOD" ] && [ -n "$REV" ] || rc_fail "pki.sh made no valid and revoked leaves"
# A leaf whose subject needs escaping (UTF-8, quotes, a comma), not revoked.
openssl req -new -key "$T/pki/leaf.key" -utf8 -out "$T/odd.csr" \
    -subj "/O=Example, Inc./CN=J$(printf '\303\274')rgen \"Q\" $(printf '\303\204')" 2>/dev/null
openssl x509 -req -in "$T/odd.csr" -CA "$T/pki/ca.pem" -CAkey "$T/pki/ca.key" \
    -set_serial 0x5a5a5a5a -days 1 -out "$T/odd.pem" 2>/dev/null
# subject_of PEM: RFC 4514 text (python3-cryptography), escaped as
# revcheckd promises (visible ASCII but '%' as is, else %XX).
subject_of() {
	python3 - "$1" <<'PY'
import sys
from cryptography import x509
c = x509.load_pem_x509_certificate(open(sys.argv[1], "rb").read())
b = c.subject.rfc4514_string().encode()
print("".join(chr(x) if 0x21 <= x <= 0x7e and x != 0x25 else "%%%02X" % x for x in b))
PY
}

ISS=https://idp.example
rc_jwtmint key rsa "$T/idp.pem"
rc_jwtmint jwks "$T/idp.jwks" "$T/idp.pem:idp-1"
rc_jwtmint key rsa "$T/evil.pem"
jwt() {		# jwt JTI [SUB-JSON] [KEY]: RS256 by the issuer's key (or KEY)
	local sub=${2:-} k=${3:-$T/idp.pem}
	rc_jwtmint sign "$k" RS256 idp-1 \
	    "{\"iss\":\"$ISS\",\"jti\":\"$1\",${sub:+\"sub\":$sub,}\"aud\":\"api\",\"exp\":\"now+600\"}"
}
JWT_OK=$(jwt tok-ok '"alice"')
JWT_REV=$(jwt tok-rev '"bob"')
JWT_BADSIG=$(jwt tok-ok '"alice"' "$T/evil.pem")
JWT_ODD=$(jwt tok-odd '"eve\r\nX-Injected: 1 \u00e9%"')
JWT_NOSUB=$(jwt tok-nosub)

FB keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
printf '[{"id": "tok-rev", "scope": "%s"}]\n' "$ISS" >"$T/tokens.json"
mkdir -p "$T/filters"
FB build --key "$T/key.pem" --out "$T/filters" --version 1 --valid-for 1h --quiet \
    --issuer "$T/pki/ca.pem" "$T/tokens.json" "$T/pki/crl.pem"

# ---------------------------------------------------------------- revcheckd: the README's block
# The first indented block "    {" .. "    }" after the section heading.
awk '/^## Gateway quick start/ { s = 1 } s && /^    \{$/ { p = 1 } p { print } p && /^    \}$/ { exit }' \
    "$README" >"$T/readme.json"
[ -s "$T/readme.json" ] || rc_fail "no configuration block in README's Gateway quick start"
# site PATTERN REPLACEMENT FILE: replaces a site value, which must be there.
site() {
	grep -qF -- "$1" "$3" || rc_fail "$(basename "$3"): \"$1\" not found"
	python3 -c 'import sys; p=sys.argv[3]; s=open(p).read(); open(p,"w").write(s.replace(sys.argv[1], sys.argv[2]))' \
	    "$1" "$2" "$3"
}
subst_daemon() {	# subst_daemon FILE: the operator's paths become the test's
	site /var/lib/revcheck/filters "$T/filters" "$1"
	site /usr/local/etc/revcheck/filter-signing.pub "$T/key.pub" "$1"
	site /var/lib/revcheckd "$T/state" "$1"
}
subst_daemon "$T/readme.json"
site /etc/revcheck/idp.jwks "$T/idp.jwks" "$T/readme.json"
cp "$T/readme.json" "$T/revcheckd.json"
rc_start A -c "$T/revcheckd.json"
rc_wait_ready "$A_URL" 30 || rc_fail "A not ready"

# ---------------------------------------------------------------- nginx: the shipped example
NG=$T/nginx
mkdir -p "$NG" "$T/tls"
rc_tls_cert "$T/tls"
cp "$T/tls/tls.crt" "$T/tls/server.crt"
cp "$T/tls/tls.key" "$T/tls/server.key"
cp "$T/pki/ca.pem" "$T/tls/client-ca.pem"
ng_start() {
	local try probe app api mtls
	for try in 1 2 3 4 5; do
		probe=$(rc_free_port) app=$(rc_free_port) api=$(rc_free_port) mtls=$(rc_free_port)
		cp "$NGX_EXAMPLE" "$NG/site.conf"
		site "listen 443 ssl;" "listen 127.0.0.1:$api ssl;" "$NG/site.conf"
		site "listen 8443 ssl;" "listen 127.0.0.1:$mtls ssl;" "$NG/site.conf"
		site "listen [::]:443 ssl;" "" "$NG/site.conf"
		site "listen [::]:8443 ssl;" "" "$NG/site.conf"
		site /usr/local/etc/revcheck/tls/ "$T/tls/" "$NG/site.conf"
		site "server 127.0.0.1:8080;" "server ${A_URL#http://};" "$NG/site.conf"
		site "server 127.0.0.1:9000;" "server 127.0.0.1:$app;" "$NG/site.conf"
		{ rc_nginx_conf "$NG"; cat <<EOF; } >"$NG/nginx.conf"
    include $NG/site.conf;
    # The app: echoes what the gateway passed on.
    server {
        listen 127.0.0.1:$app;
        default_type text/plain;
        location / {
            return 200 "app status=[\$http_x_revcheck_status] sub=[\$http_x_revcheck_subject] iss=[\$http_x_revcheck_issuer] cert=[\$http_x_revcheck_cert_subject] injected=[\$http_x_injected]\n";
        }
    }
    server {
        listen 127.0.0.1:$probe;
        location / { return 404; }
    }
}
EOF
		if rc_nginx_run "$NG" "$probe"; then
			API="https://127.0.0.1:$api"
			MTLS="https://127.0.0.1:$mtls"
			return 0
		fi
	done
	cat "$NG/stderr.log" "$NG/error.log" >&2 || true
	return 1
}
ng_start || rc_fail "nginx did not start with the shipped example"
if grep -qi "does not check the token's signature" "$NGX_EXAMPLE"; then
	rc_fail "the example still says revcheckd does not check signatures"
else
	rc_ok "the example does not claim that tokens go unverified"
fi

api() {		# api [JWT] [CURL-ARGS...]: through the bearer-token site
	local t=${1:-}
	shift || true
	rc_curl --cacert "$T/tls/ca.pem" ${t:+-H "Authorization: Bearer $t"} "$@" "$API/"
}
mtls() {	# mtls CERT [CURL-ARGS...]: through the mTLS site
	local c=$1
	shift
	rc_curl --cacert "$T/tls/ca.pem" --cert "$c" --key "$T/pki/leaf.key" "$@" "$MTLS/"
}
app_saw() {	# app_saw TEXT WHAT: the app's echo holds TEXT
	case "$RC_BODY" in
	*"$1"*) rc_ok "$2" ;;
	*) rc_fail "$2: app saw: $RC_BODY" ;;
	esac
}

# ---------------------------------------------------------------- bearer tokens
api "$JWT_OK"
rc_expect_status 200 "token: allowed"
app_saw "status=[not_revoked]" "token: the app gets the verdict"
app_saw "sub=[alice] iss=[https://idp.example]" "token: the app gets X-Revcheck-Subject and -Issuer"
api "$JWT_REV"
rc_expect_status 403 "token: revoked"
api "$JWT_BADSIG"
rc_expect_status 401 "token: signed by another key (bad signature)"
rc_curl -H "Authorization: Bearer $JWT_BADSIG" "$A_URL/v1/authz"
rc_expect_json verdict bad_signature "token: bad signature is named"
api "$JWT_ODD"
rc_expect_status 200 "token: a sub with CR, LF, blanks, non-ASCII and %"
app_saw "sub=[eve%0D%0AX-Injected:%201%20%C3%A9%25]" "token: sub percent-encoded"
app_saw "injected=[]" "token: no header injected through the sub"
api "$JWT_NOSUB" -H "X-Revcheck-Subject: admin" -H "X-Revcheck-Cert-Subject: CN=admin"
rc_expect_status 200 "token without sub, forged identity headers from the client"
app_saw "sub=[] iss=[https://idp.example] cert=[]" "forged X-Revcheck-Subject and -Cert-Subject dropped (none sent)"
rc_curl -H "Authorization: Bearer $JWT_NOSUB" -H "X-Revcheck-Cert-Subject: CN=admin" \
    --cacert "$T/tls/ca.pem" --cert "$T/pki/$GOOD" --key "$T/pki/leaf.key" "$MTLS/"
app_saw "sub=[] iss=[https://idp.example] cert=[$(subject_of "$T/pki/$GOOD")]" "mTLS site: forged X-Revcheck-Cert-Subject replaced"
api
rc_expect_status 401 "token: none sent"

# ---------------------------------------------------------------- client certificates
mtls "$T/pki/$GOOD"
rc_expect_status 200 "mTLS: a good certificate"
app_saw "cert=[$(subject_of "$T/pki/$GOOD")]" "mTLS: the app gets X-Revcheck-Cert-Subject"
mtls "$T/odd.pem"
rc_expect_status 200 "mTLS: a subject with UTF-8, quotes and a comma"
want=$(subject_of "$T/odd.pem")
app_saw "cert=[$want]" "mTLS: subject RFC 4514, percent-encoded ($want)"
mtls "$T/pki/$REV"
rc_expect_status 403 "mTLS: a revoked certificate"
rc_curl --cacert "$T/tls/ca.pem" "$MTLS/"
case "$RC_STATUS" in 2??) rc_fail "mTLS: no certificate passed ($RC_STATUS)" ;;
*) rc_ok "mTLS: no certificate refused by nginx ($RC_STATUS)" ;; esac

# ---------------------------------------------------------------- the default config: no issuer
cp "$RC_SRC/config/revcheckd.json" "$T/revcheckd.json"
subst_daemon "$T/revcheckd.json"
grep -q '"token_verification": "required"' "$T/revcheckd.json" &&
    rc_ok "config/revcheckd.json says token_verification required" ||
    rc_fail "config/revcheckd.json does not say token_verification required"
kill -HUP "$A_PID"
rc_wait_json "$A_URL/v1/status" config.generation 2 30 || rc_fail "A did not apply the SIGHUP"
api "$JWT_OK"
rc_expect_status 401 "default config, no issuer: a good token refused"
rc_expect_eq "$(rc_header WWW-Authenticate)" 'Bearer error="invalid_token"' "401 says invalid_token"
rc_curl -H "Authorization: Bearer $JWT_OK" "$A_URL/v1/authz"
rc_expect_json verdict untrusted_issuer "default config: untrusted_issuer"
mtls "$T/pki/$GOOD"
rc_expect_status 200 "default config: a good certificate still passes"
mtls "$T/pki/$REV"
rc_expect_status 403 "default config: a revoked certificate still refused"

# ---------------------------------------------------------------- Envoy: x-forwarded-client-cert
xfcc_cert() {	# xfcc_cert PEM: the value Envoy would send for it
	python3 - "$1" <<'PY'
import sys, urllib.parse
print(urllib.parse.quote(open(sys.argv[1]).read(), safe=""))
PY
}
printf '{"authz_cert_header": "X-Forwarded-Client-Cert", "authz_cert_header_format": "xfcc"}\n' \
    >"$T/xfcc.json"
mkdir -p "$T/sx"
rc_start X -c "$T/xfcc.json" --filter-dir "$T/filters" --trusted-key "$T/key.pub" \
    --state-dir "$T/sx"
rc_wait_ready "$X_URL" 30 || rc_fail "X not ready"
G=$(xfcc_cert "$T/pki/$GOOD")
R=$(xfcc_cert "$T/pki/$REV")
O=$(xfcc_cert "$T/odd.pem")
rc_curl -H "x-forwarded-client-cert: By=spiffe://gw;Hash=00;Cert=\"$O\";Subject=\"CN=forged\";URI=spiffe://c" \
    "$X_URL/v1/authz"
rc_expect_status 200 "xfcc: a good certificate"
rc_expect_eq "$(rc_header X-Revcheck-Cert-Subject)" "$want" "xfcc: subject from the certificate, not Subject="
rc_curl -H "x-forwarded-client-cert: Hash=00;Cert=\"$R\"" "$X_URL/v1/authz"
rc_expect_status 403 "xfcc: a revoked certificate"
rc_curl -H "x-forwarded-client-cert: Cert=\"$R\",By=spiffe://gw2;Cert=\"$G\"" "$X_URL/v1/authz"
rc_expect_status 403 "xfcc: a revoked certificate in an earlier element"
rc_curl -H "x-forwarded-client-cert: Cert=\"$G\",By=spiffe://gw2;Hash=00" "$X_URL/v1/authz"
rc_expect_status 401 "xfcc: no Cert in the last element"
rc_curl -H "x-forwarded-client-cert: Cert=\"$G%zz\"" "$X_URL/v1/authz"
rc_expect_status 401 "xfcc: a bad %-escape"
rc_curl -H "x-forwarded-client-cert: Cert=\"$G\"" -H "x-forwarded-client-cert: Cert=\"$G\"" \
    "$X_URL/v1/authz"
rc_expect_status 400 "xfcc: the header twice"
rc_curl -H "X-SSL-Client-Cert: $G" "$X_URL/v1/authz"
rc_expect_status 401 "xfcc: nginx's header is not read when XFCC is configured"
rc_curl -H "x-forwarded-client-cert: Cert=\"$R\"" "$A_URL/v1/authz"
rc_expect_status 401 "pem daemon: x-forwarded-client-cert is not read (no credential)"
printf '{"authz_cert_header": "X-Forwarded-Client-Cert"}\n' >"$T/bad.json"
if "$REVCHECKD" -c "$T/bad.json" --filter-dir "$T/filters" --trusted-key "$T/key.pub" \
    --state-dir "$T/sx" --check-config >"$T/bad.out" 2>&1; then
	rc_fail "X-Forwarded-Client-Cert read as PEM accepted by --check-config"
else
	grep -q authz_cert_header_format "$T/bad.out" && rc_ok "X-Forwarded-Client-Cert as PEM refused" ||
	    rc_fail "refused without naming authz_cert_header_format: $(cat "$T/bad.out")"
fi

# ---------------------------------------------------------------- revocation-only: no claims vouched for
mkdir -p "$T/sr"
rc_start R --token-verification revocation-only --filter-dir "$T/filters" \
    --trusted-key "$T/key.pub" --state-dir "$T/sr"
rc_wait_ready "$R_URL" 30 || rc_fail "R not ready"
rc_curl -H "Authorization: Bearer $JWT_BADSIG" "$R_URL/v1/authz"
rc_expect_status 200 "revocation-only: an unverified token is only looked up"
rc_expect_eq "$(rc_header X-Revcheck-Subject)$(rc_header X-Revcheck-Issuer)" "" \
    "revocation-only: no X-Revcheck-Subject or -Issuer for an unverified token"
rc_stop R || rc_fail "R did not exit 0"

# ---------------------------------------------------------------- the Envoy example parses
python3 - "$RC_SRC/config/envoy-ext-authz.yaml" >"$T/envoy.out" 2>&1 <<'PY' &&
import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
l = d["static_resources"]["listeners"][0]
hcm = l["filter_chains"][0]["filters"][0]["typed_config"]
assert hcm["forward_client_cert_details"] == "SANITIZE_SET", "SANITIZE_SET"
assert hcm["set_current_client_cert_details"]["cert"] is True, "cert: true"
ea = [f for f in hcm["http_filters"] if f["name"] == "envoy.filters.http.ext_authz"][0]["typed_config"]
assert ea["failure_mode_allow"] is False, "failure_mode_allow"
hs = ea["http_service"]
assert hs["path_prefix"] == "/v1/authz", "path_prefix"
pats = [p.get("exact", "").lower() for p in hs["authorization_request"]["allowed_headers"]["patterns"]]
assert "authorization" in pats and "x-forwarded-client-cert" in pats, pats
up = [p.get("exact", p.get("prefix", "")).lower() for p in hs["authorization_response"]["allowed_upstream_headers"]["patterns"]]
for h in ("x-revcheck-subject", "x-revcheck-issuer", "x-revcheck-cert-subject"):
    assert h in up, h
PY
    rc_ok "config/envoy-ext-authz.yaml parses, with the settings it must have" ||
    rc_fail "config/envoy-ext-authz.yaml: $(cat "$T/envoy.out")"

rc_stop X || rc_fail "X did not exit 0"
rc_stop A || rc_fail "A did not exit 0"
rc_done
