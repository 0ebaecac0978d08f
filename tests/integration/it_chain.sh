#!/usr/bin/env bash
# it_chain.sh - certificate chains in POST /v1/check and /v1/authz: the worst verdict over every certificate
#
# A root -> intermediate -> leaf PKI made by tests/chain-pki.sh with the
# real openssl CLI: an intermediate revoked by the root, a leaf revoked by
# its intermediate, an intermediate whose CRL is left out of the build (its
# leaf is not covered). The real daemon answers over HTTP; the verdict
# order is revoked, then not_covered, then not_revoked.
. "$(dirname "$0")/lib.sh"

P=$T/pki
bash "$RC_SRC/tests/chain-pki.sh" "$P" >/dev/null 2>&1
"$FILTERBUILD" keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
# intx's CRL is left out: its certificates are not covered.
"$FILTERBUILD" build --key "$T/key.pem" --out "$T/filters" --quiet \
    --issuer "$P/root.pem" --issuer "$P/intgood.pem" --issuer "$P/intbad.pem" \
    "$P/root-crl.pem" "$P/intgood-crl.pem" "$P/intbad-crl.pem"
mkdir -p "$T/state"
rc_start A --filter-dir "$T/filters" --trusted-key "$T/key.pub" \
    --state-dir "$T/state"
U=$A_URL

# body CERT [CHAIN...]: a {"cert", "chain"} body file from PEM files.
body() {
	python3 - "$T" "$@" <<'PY'
import json, sys, tempfile
d, cert, chain = sys.argv[1], sys.argv[2], sys.argv[3:]
f = tempfile.NamedTemporaryFile("w", dir=d, suffix=".json", delete=False)
json.dump({"cert": open(cert).read(), "chain": [open(c).read() for c in chain]}, f)
print(f.name)
PY
}
post() {	# post BODYFILE
	rc_curl -H 'Content-Type: application/json' --data-binary "@$1" "$U/v1/check"
}
# chain CERT [CHAIN...]: POST the chain, expect STATUS and DECIDED_BY.
chain() {
	local want=$1 by=$2 what=$3
	shift 3
	post "$(body "$@")"
	rc_expect_status 200 "$what"
	rc_expect_json status "$want" "$what: status"
	rc_expect_json decided_by "$by" "$what: decided_by"
	rc_expect_eq "$(rc_header X-Revcheck-Status)" "$want" "$what: header"
}

# ------------------------------------------------ each certificate alone
for c in leafok:not_revoked leafbad:not_revoked intbad:revoked \
    leafrev:revoked leafx:not_covered intx:not_revoked root:not_revoked; do
	post "$(rc_json_body cert "$P/${c%%:*}.pem")"
	rc_expect_json status "${c#*:}" "${c%%:*} alone"
	rc_expect_eq "$(rc_json chain)" null "${c%%:*} alone: no chain member"
done

# ------------------------------------------------ chains
chain not_revoked 0 "clean leaf, clean intermediate" \
    "$P/leafok.pem" "$P/intgood.pem"
rc_expect_json chain.1.status not_revoked "clean chain: intermediate answered"
rc_expect_json chain.1.id 10 "clean chain: intermediate's serial"
chain not_revoked 0 "clean chain with the root" \
    "$P/leafok.pem" "$P/intgood.pem" "$P/root.pem"
rc_expect_json chain.2.status not_revoked "the root checked against its own CRL"
chain revoked 0 "revoked leaf, clean intermediate" \
    "$P/leafrev.pem" "$P/intgood.pem"
rc_expect_json reason keyCompromise "revoked leaf: reason of the decider"
rc_expect_json chain.1.status not_revoked "revoked leaf: intermediate answered"
chain revoked 1 "clean leaf under a revoked intermediate" \
    "$P/leafbad.pem" "$P/intbad.pem"
rc_expect_json chain.0.status not_revoked "leaf's own answer reported"
rc_expect_json chain.1.status revoked "intermediate's answer reported"
rc_expect_json id 11 "the decider's serial at top level"
chain revoked 1 "revoked intermediate beats an uncovered leaf" \
    "$P/leafx.pem" "$P/intbad.pem"
chain not_covered 0 "leaf of an uncovered issuer: never not_revoked" \
    "$P/leafx.pem" "$P/intx.pem"
rc_expect_json chain.1.status not_revoked "uncovered chain: intx itself is covered"
chain not_covered 2 "an uncovered element anywhere in the chain" \
    "$P/leafok.pem" "$P/intgood.pem" "$P/leafx.pem"
chain not_revoked 0 "an empty chain array is the leaf alone" "$P/leafok.pem"
# Several PEM blocks in "cert" (a fullchain file) are a chain too.
cat "$P/leafbad.pem" "$P/intbad.pem" >"$T/fullchain.pem"
post "$(rc_json_body cert "$T/fullchain.pem")"
rc_expect_json status revoked "fullchain in \"cert\": every block checked"
rc_expect_json decided_by 1 "fullchain in \"cert\": decided by the intermediate"

# ------------------------------------------------ hostile chains
bad() {	# bad BODYFILE WHAT REGEX: 400 naming the problem
	post "$1"
	rc_expect_status 400 "$2"
	rc_expect_match "$(rc_json message)" "$3" "$2: message"
}
printf -- '-----BEGIN CERTIFICATE-----\nnot base64 at all!\n-----END CERTIFICATE-----\n' >"$T/garbage.pem"
bad "$(body "$P/leafok.pem" "$P/intgood.pem" "$T/garbage.pem")" \
    "garbage PEM in the chain" 'chain\[1\].*certificate 1'
bad "$(body "$P/leafok.pem" "$P/leafok.key")" "a private key in the chain" \
    'chain\[0\].*not a PEM CERTIFICATE'
{ cat "$P/intgood.pem"; echo "trailing words"; } >"$T/trailing.pem"
bad "$(body "$P/leafok.pem" "$T/trailing.pem")" "text after a block" \
    'chain\[0\].*certificate 2'
head -n 3 "$P/intgood.pem" >"$T/cut.pem"
bad "$(body "$P/leafok.pem" "$T/cut.pem")" "a block without END" 'END'
many=()
for i in 1 2 3 4 5 6 7 8; do many+=("$P/intgood.pem"); done
bad "$(body "$P/leafok.pem" "${many[@]}")" "9 certificates" 'more than 8'
chain not_revoked 0 "8 certificates are allowed" "$P/leafok.pem" \
    "${many[@]:0:7}"
python3 -c 'import json,sys; print(json.dumps({"cert": open(sys.argv[1]).read(), "chain": "x"}))' \
    "$P/leafok.pem" >"$T/b1.json"
bad "$T/b1.json" "chain not an array" 'must be an array'
python3 -c 'import json,sys; print(json.dumps({"cert": open(sys.argv[1]).read(), "chain": [5]}))' \
    "$P/leafok.pem" >"$T/b2.json"
bad "$T/b2.json" "chain element not a string" 'chain\[0\] must be a string'
python3 -c 'import json,sys; print(json.dumps({"cert": open(sys.argv[1]).read(), "chain": [" " * 70000]}))' \
    "$P/leafok.pem" >"$T/b3.json"
bad "$T/b3.json" "chain over 64 KiB" 'over the limit of 65536 bytes'
python3 -c 'import json,sys; print(json.dumps({"chain": [open(sys.argv[1]).read()]}))' \
    "$P/intgood.pem" >"$T/b4.json"
bad "$T/b4.json" "chain without cert" 'needs "cert"'
python3 -c 'import json,sys; print(json.dumps({"id": "x", "cert": open(sys.argv[1]).read()}))' \
    "$P/leafok.pem" >"$T/b5.json"
bad "$T/b5.json" "cert with id" '"id" may not be given'
# A batch item takes one certificate: a chain there is refused, not cut.
python3 -c 'import json,sys; print(json.dumps({"items": [{"cert": open(sys.argv[1]).read(), "chain": [open(sys.argv[2]).read()]}, {"cert": open(sys.argv[3]).read()}]}))' \
    "$P/leafbad.pem" "$P/intbad.pem" "$T/fullchain.pem" >"$T/b6.json"
post "$T/b6.json"
rc_expect_status 200 "batch with chains"
rc_expect_json results.0.error bad_request "batch item with a chain refused"
rc_expect_json results.1.error bad_request "batch item with two PEM blocks refused"
rc_curl "$U/healthz"
rc_expect_status 200 "daemon alive after the hostile chains"

# ------------------------------------------------ /v1/authz header chains
# nginx's $ssl_client_escaped_cert: URL-encoded PEM; here with the chain.
esc() { python3 -c 'import sys,urllib.parse; print(urllib.parse.quote("".join(open(f).read() for f in sys.argv[1:]), safe=""))' "$@"; }
authz() {	# authz CODE VERDICT WHAT FILE...
	local code=$1 v=$2 what=$3
	shift 3
	rc_curl -H "X-SSL-Client-Cert: $(esc "$@")" "$U/v1/authz"
	rc_expect_status "$code" "authz: $what"
	rc_expect_json verdict "$v" "authz: $what: verdict"
}
authz 200 not_revoked "clean chain" "$P/leafok.pem" "$P/intgood.pem"
rc_expect_eq "$(rc_json certificates)" '["not_revoked", "not_revoked"]' \
    "authz: each certificate's verdict reported"
authz 403 revoked "revoked intermediate" "$P/leafbad.pem" "$P/intbad.pem"
rc_expect_eq "$(rc_json certificates)" '["not_revoked", "revoked"]' \
    "authz: the revoked intermediate is the second certificate"
authz 200 not_revoked "the same leaf alone" "$P/leafbad.pem"
rc_expect_eq "$(rc_json certificates)" '["not_revoked"]' "authz: one certificate"
authz 403 revoked "revoked leaf" "$P/leafrev.pem" "$P/intgood.pem"
authz 403 not_covered "uncovered issuer in the chain" "$P/leafok.pem" \
    "$P/intgood.pem" "$P/leafx.pem"
rc_expect_eq "$(rc_json certificates)" '["not_revoked", "not_revoked", "not_covered"]' \
    "authz: the uncovered certificate is named by its place"
authz 401 bad_credential "garbage block in the chain" "$P/leafok.pem" "$T/garbage.pem"
authz 401 bad_credential "text after the blocks" "$P/leafok.pem" "$T/trailing.pem"
authz 401 bad_credential "9 certificates" "$P/leafok.pem" "${many[@]}"
# Traefik: bare base64 DER, comma-separated.
der64() { openssl x509 -in "$1" -outform DER | base64 -w0; }
rc_curl -H "X-SSL-Client-Cert: $(der64 "$P/leafbad.pem"),$(der64 "$P/intbad.pem")" "$U/v1/authz"
rc_expect_status 403 "authz: base64 DER chain with a revoked intermediate"
rc_curl -H "X-SSL-Client-Cert: $(der64 "$P/leafok.pem"),$(der64 "$P/intgood.pem")" "$U/v1/authz"
rc_expect_status 200 "authz: base64 DER clean chain"
rc_curl -H "X-SSL-Client-Cert: $(der64 "$P/leafok.pem"),,$(der64 "$P/intgood.pem")" "$U/v1/authz"
rc_expect_status 401 "authz: empty element in a base64 chain"
rc_curl -H "X-SSL-Client-Cert: $(der64 "$P/leafok.pem"),QUJD" "$U/v1/authz"
rc_expect_status 401 "authz: a base64 element that is no certificate"
# An Authorization header beside a clean certificate is a credential of
# its own: one that cannot be checked (another scheme, no blank after
# "Bearer", no token) is refused, never passed over for the certificate.
clean=$(esc "$P/leafok.pem" "$P/intgood.pem")
tok=$(rc_jwt "" tok-1)
for a in "DPoP $tok" "Basic dXNlcjpwYXNz" "Bearer$tok" "Bearer" "Bearer   " "Token $tok"; do
	rc_curl -H "X-SSL-Client-Cert: $clean" -H "Authorization: $a" "$U/v1/authz"
	rc_expect_status 401 "authz: clean certificate with Authorization '${a:0:12}'"
	rc_expect_json verdict bad_credential "authz: Authorization '${a:0:12}': verdict"
done
rc_curl -H "X-SSL-Client-Cert: $clean" -H "Authorization;" "$U/v1/authz"
rc_expect_status 401 "authz: clean certificate with an empty Authorization header"
# "Bearer", then spaces or tabs: the token is checked (tokens here are
# refused: the daemon trusts no issuer), whatever the scheme's case.
for a in "Bearer $tok" "bearer $tok" "BEARER  $tok" "Bearer	$tok" "Bearer $tok	"; do
	rc_curl -H "X-SSL-Client-Cert: $clean" -H "Authorization: $a" "$U/v1/authz"
	rc_expect_status 401 "authz: clean certificate with a refused token ('${a:0:8}')"
	rc_expect_json verdict untrusted_issuer "authz: the token was read ('${a:0:8}')"
done

rc_stop A
rc_done
