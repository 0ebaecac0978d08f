#!/usr/bin/env bash
# it_pkits.sh - NIST PKITS revocation paths through filterbuild and a real revcheckd, plus --unverified-crl end to end
#
# tests/integration/pkits.py does the paths (see its header and
# tests/data/pkits/README.md): each path's outcome must be what
# tests/data/pkits/expected.tsv says, with the reason next to it, and no
# path PKITS says is revoked or unusable may ever answer not_revoked.
. "$(dirname "$0")/lib.sh"

D=$RC_SRC/tests/data/pkits
F=$T/filters
"$FILTERBUILD" keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
printf 'seed\n' >"$T/seed.txt"
"$FILTERBUILD" build --key "$T/key.pem" --out "$F" --quiet "$T/seed.txt"
mkdir -p "$T/state"
rc_start R --filter-dir "$F" --trusted-key "$T/key.pub" --state-dir "$T/state" \
    --poll-interval 60
rc_wait_ready "$R_URL" 20 || rc_fail "revcheckd not ready"

if python3 "$RC_SRC/tests/integration/pkits.py" "$D" "$FILTERBUILD" "$T/key.pem" \
    "$F" "$R_URL" "$R_PID" "$T/work"; then
	rc_ok "every PKITS path answers as expected.tsv says"
else
	rc_fail "PKITS paths"
fi

# A partial CRL answers for the certificates it covers, and a bare serial
# in its scope (nothing says which part it belongs to) is not_covered:
# PKITS 4.14.13, a CA-only CRL and a CA certificate.
CAONLY=$D/certs/onlyContainsCACertsCACert.crt
openssl x509 -inform DER -in "$CAONLY" -out "$T/caonly.pem"
openssl x509 -inform DER -in "$D/certs/ValidonlyContainsCACertsTest13EE.crt" -out "$T/ee13.pem"
"$FILTERBUILD" build --key "$T/key.pem" --out "$F" --allow-shrink --quiet \
    --issuer "$T/work/TrustAnchorRootCertificate.crt.pem" --issuer "$T/caonly.pem" \
    "$D/crls/onlyContainsCACertsCACRL.crl" 2>"$T/err" || rc_fail "CA-only CRL build: $(cat "$T/err")"
kill -HUP "$R_PID"
rc_wait_version "$R_URL" "$(readlink "$F/current" | sed 's/^v0*//')" 20 || rc_fail "CA-only version not served"
rc_curl -X POST -H 'Content-Type: application/json' --data-binary "@$(rc_json_body cert "$T/ee13.pem")" "$R_URL/v1/check"
rc_expect_json status not_revoked "the CA certificate, by certificate: covered"
scope=$(rc_json scope); id=$(rc_json id)
rc_curl "$R_URL/v1/check?scope=$scope&id=$id"
rc_expect_json status not_covered "the same serial bare: not_covered"
"$FILTERBUILD" inspect "$F" >"$T/insp"
rc_expect_match "$(cat "$T/insp")" 'coverage: +part: CA certificates, every reason' "inspect shows the coverage"
rc_curl "$R_URL/v1/status"
rc_expect_json "filter.scopes.0.coverage.0.kind" ca "/v1/status shows the coverage"

# --unverified-crl: refused without it; with it logged even under --quiet,
# marked in the signed filter, shown by inspect and /v1/status.
GOOD=$D/crls/GoodCACRL.crl
v=$(readlink "$F/current")
if "$FILTERBUILD" build --key "$T/key.pem" --out "$F" --allow-shrink --quiet "$GOOD" 2>"$T/err"; then
	rc_fail "a CRL without its issuer's certificate was used"
fi
rc_expect_match "$(cat "$T/err")" 'GoodCACRL.crl: no --issuer certificate for CRL issuer "CN=Good CA,O=Test Certificates 2011,C=US"' \
    "refusal names the file and the issuer"
rc_expect_eq "$(readlink "$F/current")" "$v" "nothing published"
"$FILTERBUILD" build --key "$T/key.pem" --out "$F" --allow-shrink --quiet \
    --unverified-crl "$GOOD" 2>"$T/err" || rc_fail "--unverified-crl build: $(cat "$T/err")"
rc_expect_match "$(cat "$T/err")" 'GoodCACRL.crl: CRL of "CN=Good CA.*" used UNVERIFIED' "logged under --quiet"
"$FILTERBUILD" inspect "$F" >"$T/insp"
rc_expect_match "$(cat "$T/insp")" 'signature: +NOT VERIFIED \(--unverified-crl\)' "inspect shows it"
kill -HUP "$R_PID"
want=$(readlink "$F/current" | sed 's/^v0*//')
rc_wait_version "$R_URL" "$want" 20 || rc_fail "unverified version not served"
rc_curl "$R_URL/v1/status"
rc_expect_json "filter.scopes.0.crl_verified" false "/v1/status shows crl_verified false"
rc_expect_json "filter.scopes.0.source" crl "the scope is the CRL's"

rc_done
