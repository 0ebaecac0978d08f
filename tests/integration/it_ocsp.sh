#!/usr/bin/env bash
# it_ocsp.sh - the OCSP responder asked by the openssl CLI (POST and GET), each answer checked again by python3-cryptography
#
# A CA made with the openssl CLI issues a delegated responder certificate
# (extendedKeyUsage OCSPSigning, noCheck) and leaves; one leaf is revoked
# and the CA's CRL built into a filter with filterbuild. `openssl ocsp`
# then asks revcheckd: good, revoked (time and reason), a CA not served
# (unauthorized), a malformed body (malformedRequest), a stale filter
# (tryLater), with and without a nonce, SHA-1 and SHA-256 CertIDs, and
# the GET form with its caching headers. Every response is parsed again
# by tests/integration/ocspcheck.py (python3-cryptography), which checks
# its fields and its signature with the responder's public key. A CA
# whose CRL covers only user certificates (a partial scope) is never
# answered good for a bare serial: OCSP knows no more than issuer and
# serial (unknown), where /v1/check with the certificate says not_revoked;
# one whose partial CRLs cover user and CA certificates alike is.
. "$(dirname "$0")/lib.sh"

FB() { "$FILTERBUILD" "$@"; }
CHK=$RC_SRC/tests/integration/ocspcheck.py
P=$T/pki
mkdir -p "$P"
FB keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null

# ---------------------------------------------------------------- the PKI
{
	printf '[ req ]\ndistinguished_name = req_dn\nprompt = no\n[ req_dn ]\nCN = unused\n'
	printf '[ policy_any ]\ncommonName = supplied\norganizationName = optional\n'
	for ca in main part split other; do
		cat <<EOF
[ ca_$ca ]
dir = $P/$ca.db
database = \$dir/index.txt
new_certs_dir = \$dir/new
serial = \$dir/serial
crlnumber = \$dir/crlnumber
certificate = $P/$ca.pem
private_key = $P/$ca.key
default_md = sha256
default_days = 30
default_crl_days = 7
policy = policy_any
unique_subject = no
EOF
	done
	cat <<EOF
[ v3_ca ]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[ v3_ocsp ]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = OCSPSigning
noCheck = ignored
[ v3_leaf ]
basicConstraints = critical,CA:FALSE
[ crl_user ]
issuingDistributionPoint = critical, @idp_user
[ idp_user ]
onlyuser = TRUE
[ crl_ca ]
issuingDistributionPoint = critical, @idp_ca
[ idp_ca ]
onlyCA = TRUE
EOF
} >"$P/ca.cnf"
C=$P/ca.cnf
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
newca() {	# newca NAME CN
	mkdir -p "$P/$1.db/new"
	: >"$P/$1.db/index.txt"
	echo 10 >"$P/$1.db/serial"
	echo 01 >"$P/$1.db/crlnumber"
	key "$P/$1.key"
	openssl req -config "$C" -new -x509 -key "$P/$1.key" -subj "/O=revcheck ocsp/CN=$2" \
	    -days 30 -extensions v3_ca -set_serial 1 -out "$P/$1.pem" 2>/dev/null
}
issue() {	# issue CA EXT NAME [KEYCMD...]
	local ca=$1 ext=$2 name=$3
	key "$P/$name.key"
	openssl req -config "$C" -new -key "$P/$name.key" -subj "/O=revcheck ocsp/CN=$name" \
	    -out "$P/$name.csr" 2>/dev/null
	openssl ca -config "$C" -name "ca_$ca" -batch -notext -extensions "$ext" \
	    -in "$P/$name.csr" -out "$P/$name.pem" 2>"$T/ca.err" ||
		rc_fail "issue $name: $(tail -3 "$T/ca.err")"
}
newca main "OCSP Test CA"
newca part "OCSP Partial CA"
newca split "OCSP Split CA"
newca other "OCSP Other CA"
issue main v3_ocsp responder
issue main v3_leaf good
issue main v3_leaf bad
issue main v3_leaf bad2
issue part v3_ocsp presp
issue part v3_leaf pleaf
issue split v3_ocsp sresp
issue split v3_leaf sleaf
issue other v3_leaf stranger
openssl ca -config "$C" -name ca_main -batch -revoke "$P/bad.pem" -crl_reason keyCompromise 2>/dev/null
openssl ca -config "$C" -name ca_main -batch -revoke "$P/bad2.pem" -crl_reason superseded 2>/dev/null
openssl ca -config "$C" -name ca_main -batch -gencrl -out "$P/main.crl" 2>/dev/null
openssl ca -config "$C" -name ca_part -batch -gencrl -crlexts crl_user -out "$P/part.crl" 2>/dev/null
openssl ca -config "$C" -name ca_split -batch -gencrl -crlexts crl_user -out "$P/split-user.crl" 2>/dev/null
openssl ca -config "$C" -name ca_split -batch -gencrl -crlexts crl_ca -out "$P/split-ca.crl" 2>/dev/null
REVOKED_AT=$(openssl crl -in "$P/main.crl" -noout -text | awk '/Revocation Date:/ { sub(/.*Revocation Date: /, ""); print; exit }')
REVOKED_AT=$(date -u -d "$REVOKED_AT" +%s)
GOOD_SERIAL=$(openssl x509 -in "$P/good.pem" -noout -serial | sed 's/^serial=//')
BAD_SERIAL=$(openssl x509 -in "$P/bad.pem" -noout -serial | sed 's/^serial=//')

FB build --key "$T/key.pem" --out "$T/f" --quiet --issuer "$P/main.pem" --issuer "$P/part.pem" \
    --issuer "$P/split.pem" "$P/main.crl" "$P/part.crl" "$P/split-user.crl" "$P/split-ca.crl" 2>"$T/err" ||
	rc_fail "build: $(cat "$T/err")"

# ocsp_conf [RESPONDER...]: the "ocsp" section with the main and partial
# CAs' responders, and more responder objects after them.
ocsp_conf() {
	local extra= r
	for r in "$@"; do extra+=", $r"; done
	cat <<EOF
	"ocsp": {
		"path": "/ocsp",
		"responders": [
			{"issuer": "$P/main.pem", "cert": "$P/responder.pem", "key": "$P/responder.key"},
			{"issuer": "$P/part.pem", "cert": "$P/presp.pem", "key": "$P/presp.key"},
			{"issuer": "$P/split.pem", "cert": "$P/sresp.pem", "key": "$P/sresp.key"}$extra
		]
	}
EOF
}
# origin_conf FILE [RESPONDER...]: O's configuration file.
origin_conf() {
	local f=$1
	shift
	{
		printf '{\n\t"filter_dir": "%s",\n\t"trusted_key": "%s",\n\t"state_dir": "%s",\n' \
		    "$T/f" "$T/key.pub" "$T/so"
		ocsp_conf "$@"
		printf '}\n'
	} >"$f"
}
origin_conf "$T/o.json"
mkdir -p "$T/so" "$T/ss"
# S serves the same filter with a max_age it will outlive: stale (and
# tryLater) 30 s after the filter was issued, while the cases below run.
# It answers OCSP at "/" (POST /, GET /{base64}).
sed -e "s|$T/so|$T/ss|; s|\"path\": \"/ocsp\"|\"path\": \"/\"|" "$T/o.json" >"$T/s.json"
rc_start S -c "$T/s.json" --max-age 30s
rc_start O -c "$T/o.json"
rc_wait_ready "$O_URL" 30 || rc_fail "origin not ready"
# filter_time FIELD: issued_at or expires_at of O's filter, unix seconds.
filter_time() {
	rc_curl "$O_URL/v1/status"
	date -u -d "$(rc_json "filter.$1")" +%s
}
ISSUED=$(filter_time issued_at)
EXPIRES=$(filter_time expires_at)

# ask NAME CA CERT [openssl ocsp args...]: asks O; the response in
# $T/NAME.resp, the request in $T/NAME.req, the CLI's output in OUT.
ask() {
	local name=$1 ca=$2 cert=$3
	shift 3
	OUT=$(openssl ocsp "$@" -issuer "$P/$ca.pem" -cert "$P/$cert.pem" -url "${URL:-$O_URL}${OPATH-/ocsp}" \
	    -VAfile "$P/responder.pem" -resp_text -reqout "$T/$name.req" -respout "$T/$name.resp" 2>&1) || true
}
check() {	# check NAME WHAT ocspcheck-args...
	local name=$1 what=$2 o
	shift 2
	if o=$(python3 "$CHK" "$T/$name.resp" "$@" 2>&1); then rc_ok "$what (python3-cryptography)"; else
		rc_fail "$what (python3-cryptography): $o"; fi
}

# ---------------------------------------------------------------- good, revoked
# While S is fresh: thisUpdate is the filter's issued_at, and nextUpdate
# no later than issued_at + max_age (what S can prove).
URL=$S_URL OPATH=
ask sfresh main good -no_nonce
URL= OPATH=/ocsp
rc_expect_match "$OUT" "good.pem: good" "S (max_age 30 s, path /) while fresh: POST / good"
check sfresh "S: nextUpdate by issued_at + max_age" --responder "$P/responder.pem" \
    --status good --this-update "$ISSUED" --next-max "$((ISSUED + 31))"
openssl ocsp -issuer "$P/main.pem" -cert "$P/bad.pem" -no_nonce -reqout "$T/sget.req" 2>/dev/null
rc_curl "$S_URL/$(python3 -c 'import base64, sys, urllib.parse; print(urllib.parse.quote(base64.b64encode(open(sys.argv[1], "rb").read()).decode(), safe=""))' "$T/sget.req")"
cp "$RC_BODY_FILE" "$T/sget.resp"
check sget "path /: GET /{base64} answers (revoked)" --responder "$P/responder.pem" --request "$T/sget.req" \
    --status revoked
rc_curl "$S_URL/v1/status"
rc_expect_status 200 "path /: /v1/status still answered"
ask good main good
rc_expect_match "$OUT" "good.pem: good" "good leaf: good"
rc_expect_match "$OUT" "Response verify OK" "good: signature verified by openssl"
rc_expect_match "$OUT" "Next Update:" "good: a nextUpdate"
check good "good: fields, nonce echoed, signature" --responder "$P/responder.pem" --request "$T/good.req" \
    --status good --serial "$GOOD_SERIAL" --hash sha1 --this-update "$ISSUED" --next-max "$EXPIRES"
rc_expect_match "$(openssl ocsp -reqin "$T/good.req" -req_text)" "OCSP Nonce" "the CLI sent a nonce"

ask bad main bad
rc_expect_match "$OUT" "bad.pem: revoked" "revoked leaf: revoked"
rc_expect_match "$OUT" "Reason: keyCompromise" "revoked: reason keyCompromise"
check bad "revoked: time and reason from the CRL" --responder "$P/responder.pem" --request "$T/bad.req" \
    --status revoked --serial "$BAD_SERIAL" --reason keyCompromise --revoked-at "$REVOKED_AT"

# ---------------------------------------------------------------- nonce, hashes
ask nn main good -no_nonce
rc_expect_match "$OUT" "good.pem: good" "-no_nonce: good"
check nn "-no_nonce: no nonce in the response" --responder "$P/responder.pem" --request "$T/nn.req" \
    --status good --no-nonce
ask s256 main good -sha256
rc_expect_match "$OUT" "good.pem: good" "SHA-256 CertID: good"
check s256 "SHA-256 CertID echoed" --responder "$P/responder.pem" --request "$T/s256.req" \
    --status good --hash sha256
ask s256b main bad -sha256 -no_nonce
rc_expect_match "$OUT" "bad.pem: revoked" "SHA-256 CertID: revoked"

# ---------------------------------------------------------------- refusals
ask un other stranger
rc_expect_match "$OUT" "unauthorized \(6\)" "a CA not served: unauthorized"
check un "unauthorized" --responder "$P/responder.pem" --error unauthorized
rc_curl -H 'Content-Type: application/ocsp-request' --data-binary 'not DER at all' "$O_URL/ocsp"
rc_expect_status 200 "malformed body"
rc_expect_eq "$(od -An -tx1 "$RC_BODY_FILE" | tr -d ' \n')" 30030a0101 "malformed body: malformedRequest"
cp "$RC_BODY_FILE" "$T/mal.resp"
check mal "malformedRequest" --responder "$P/responder.pem" --error malformedRequest
# Two certificates in one request: refused whole, never answered in part.
OUT=$(openssl ocsp -issuer "$P/main.pem" -cert "$P/good.pem" -cert "$P/bad.pem" -url "$O_URL/ocsp" \
    -VAfile "$P/responder.pem" -respout "$T/two.resp" 2>&1) || true
check two "two CertIDs in one request: malformedRequest" --responder "$P/responder.pem" --error malformedRequest
# A nonce over 32 octets (RFC 8954): malformedRequest.
python3 - "$P/good.pem" "$P/main.pem" "$T/long.req" <<'PY'
import sys
from cryptography import x509
from cryptography.x509 import ocsp
from cryptography.hazmat.primitives import hashes, serialization
ld = lambda f: x509.load_pem_x509_certificate(open(f, "rb").read())
b = ocsp.OCSPRequestBuilder().add_certificate(ld(sys.argv[1]), ld(sys.argv[2]), hashes.SHA1())
b = b.add_extension(x509.OCSPNonce(b"\x01" * 33), critical=False)
open(sys.argv[3], "wb").write(b.build().public_bytes(serialization.Encoding.DER))
PY
rc_curl -H 'Content-Type: application/ocsp-request' --data-binary "@$T/long.req" "$O_URL/ocsp"
cp "$RC_BODY_FILE" "$T/long.resp"
check long "a 33-octet nonce: malformedRequest" --responder "$P/responder.pem" --error malformedRequest

# ---------------------------------------------------------------- partial scope: never good
URL=$O_URL
OUT=$(openssl ocsp -issuer "$P/part.pem" -cert "$P/pleaf.pem" -url "$O_URL/ocsp" -VAfile "$P/presp.pem" \
    -resp_text -respout "$T/part.resp" -no_nonce 2>&1) || true
rc_expect_match "$OUT" "pleaf.pem: unknown" "a user-only CRL: a bare serial is unknown, not good"
check part "partial scope: unknown" --responder "$P/presp.pem" --status unknown
rc_curl -X POST -H 'Content-Type: application/json' --data-binary "@$(rc_json_body cert "$P/pleaf.pem")" \
    "$O_URL/v1/check"
rc_expect_json status not_revoked "/v1/check with the certificate (user, covered): not_revoked"
# Partial CRLs that together cover user and CA certificates for every
# reason cover any serial of their CA: good.
OUT=$(openssl ocsp -issuer "$P/split.pem" -cert "$P/sleaf.pem" -url "$O_URL/ocsp" -VAfile "$P/sresp.pem" \
    -resp_text -respout "$T/split.resp" -no_nonce 2>&1) || true
rc_expect_match "$OUT" "sleaf.pem: good" "user-only and CA-only CRLs together: good"
check split "partitions covering every certificate: good" --responder "$P/sresp.pem" --status good

# ---------------------------------------------------------------- GET
openssl ocsp -issuer "$P/main.pem" -cert "$P/good.pem" -no_nonce -reqout "$T/get.req" 2>/dev/null
B64=$(base64 -w0 "$T/get.req")
ENC=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$B64")
T0=$(date +%s)
rc_curl "$O_URL/ocsp/$ENC"
cp "$RC_BODY_FILE" "$T/get.resp"
rc_expect_status 200 "GET"
rc_expect_eq "$(rc_header Content-Type)" application/ocsp-response "GET: Content-Type"
rc_expect_match "$(rc_header Cache-Control)" '^max-age=[0-9]+, public, no-transform' "GET: Cache-Control max-age"
for h in Last-Modified ETag Expires; do
	rc_expect_match "$(rc_header "$h")" '.' "GET: $h"
done
NEXT=$(python3 -c 'import sys; from cryptography.x509 import ocsp; import calendar; print(calendar.timegm(ocsp.load_der_ocsp_response(open(sys.argv[1],"rb").read()).next_update.timetuple()))' "$T/get.resp")
AGE=$(rc_header Cache-Control | sed 's/^max-age=\([0-9]*\).*/\1/')
if [ "$((T0 + AGE))" -le "$((NEXT + 1))" ]; then rc_ok "GET: max-age ends by nextUpdate"; else
	rc_fail "GET: max-age $AGE outlives nextUpdate $NEXT"; fi
check get "GET: good" --responder "$P/responder.pem" --request "$T/get.req" --status good --no-nonce
# The CLI reads the GET answer too.
OUT=$(openssl ocsp -respin "$T/get.resp" -issuer "$P/main.pem" -cert "$P/good.pem" -VAfile "$P/responder.pem" \
    -no_nonce 2>&1) || true
rc_expect_match "$OUT" "good.pem: good" "GET answer read by openssl ocsp -respin"
# An unescaped base64 (with '/' and '+' as they come) works too, and
# garbage after the path is malformedRequest.
rc_curl "$O_URL/ocsp/$B64"
cp "$RC_BODY_FILE" "$T/getraw.resp"
check getraw "GET with raw base64" --responder "$P/responder.pem" --status good
rc_curl "$O_URL/ocsp/%21%21%21"
rc_expect_eq "$(od -An -tx1 "$RC_BODY_FILE" | tr -d ' \n')" 30030a0101 "GET of non-base64: malformedRequest"
rc_curl -X POST -H 'Content-Type: application/json' --data '{}' "$O_URL/ocsp"
rc_expect_status 415 "POST with another media type: 415"

# ---------------------------------------------------------------- cache
rc_curl "$O_URL/metrics"
M=$RC_BODY
hits() { rc_curl "$O_URL/metrics"; printf '%s\n' "$RC_BODY" | awk '$1 == "revcheckd_ocsp_cache_hits_total" { print $2 }'; }
sigs() { rc_curl "$O_URL/metrics"; printf '%s\n' "$RC_BODY" | awk '$1 == "revcheckd_ocsp_signatures_total" { print $2 }'; }
h0=$(hits); s0=$(sigs)
rc_curl "$O_URL/ocsp/$ENC"
cmp -s "$RC_BODY_FILE" "$T/get.resp" && rc_ok "the same GET: the same signed bytes" || rc_fail "the same GET re-signed"
rc_expect_eq "$(hits)" "$((h0 + 1))" "the same GET: a cache hit"
rc_expect_eq "$(sigs)" "$s0" "the same GET: no signature"
ask nonce2 main good
rc_expect_eq "$(sigs)" "$((s0 + 1))" "a request with a nonce is signed afresh"
rc_expect_match "$M" 'revcheckd_ocsp_responses_total\{status="good"\} [1-9]' "metrics: good responses counted"
rc_expect_match "$M" 'revcheckd_ocsp_responses_total\{status="unauthorized"\} [1-9]' "metrics: unauthorized counted"
rc_expect_match "$M" 'revcheckd_ocsp_request_seconds_count [1-9]' "metrics: latency histogram"

# ---------------------------------------------------------------- stale: tryLater
URL=$S_URL OPATH=
for ((i = 0; i < 600; i++)); do
	ask stale main good -no_nonce
	grep -qi "trylater" <<<"$OUT" && break
	sleep 0.1
done
rc_expect_match "$OUT" "Responder Error: trylater \(3\)" "a stale filter: tryLater"
check stale "stale: tryLater" --responder "$P/responder.pem" --error tryLater
URL= OPATH=/ocsp
check nn "O: nextUpdate by the filter's expiry" --responder "$P/responder.pem" --next-max "$EXPIRES"

# ---------------------------------------------------------------- SIGHUP
# A CA added by SIGHUP is served at once (its scope is not in the filter:
# unknown); a responder whose key is not its certificate's refuses the
# whole reload and the responders in force stay.
origin_conf "$T/o.json" "{\"issuer\": \"$P/other.pem\", \"cert\": \"$P/other.pem\", \"key\": \"$P/other.key\"}"
kill -HUP "$O_PID"
for ((i = 0; i < 300; i++)); do
	OUT=$(openssl ocsp -issuer "$P/other.pem" -cert "$P/stranger.pem" -url "$O_URL/ocsp" \
	    -VAfile "$P/other.pem" -no_nonce 2>&1) || true
	grep -q "unauthorized" <<<"$OUT" || break
	sleep 0.1
done
rc_expect_match "$OUT" "stranger.pem: unknown" "a CA added by SIGHUP: served (unknown: not in the filter)"
m=$(rc_log_mark "$T/O.log")
origin_conf "$T/o.json" "{\"issuer\": \"$P/other.pem\", \"cert\": \"$P/other.pem\", \"key\": \"$P/good.key\"}"
kill -HUP "$O_PID"
rc_wait_log_since "$T/O.log" "$m" 'configuration not reloaded' ||
	rc_fail "a responder with the wrong key: the reload was not refused"
rc_expect_match "$(rc_log_since "$T/O.log" "$m")" 'not the private key of the responder certificate' \
    "a responder with the wrong key: refused, saying why"
OUT=$(openssl ocsp -issuer "$P/other.pem" -cert "$P/stranger.pem" -url "$O_URL/ocsp" \
    -VAfile "$P/other.pem" -no_nonce 2>&1) || true
rc_expect_match "$OUT" "stranger.pem: unknown" "the refused reload left the responders in force"

# ---------------------------------------------------------------- files checked at start
cp "$P/responder.key" "$T/gw.key"
chmod 664 "$T/gw.key"
sed -e "s|$P/responder.key|$T/gw.key|" "$T/o.json" >"$T/gw.json"
if out=$("$REVCHECKD" -c "$T/gw.json" --check-config 2>&1); then
	rc_fail "a group-writable responder key passed --check-config"
else
	rc_expect_match "$out" 'gw.key: writable by group or others' "a group-writable responder key: refused"
fi
sed -e "s|$P/responder.pem|$P/good.pem|; s|$P/responder.key|$P/good.key|" "$T/o.json" >"$T/noeku.json"
if out=$("$REVCHECKD" -c "$T/noeku.json" --check-config 2>&1); then
	rc_fail "a responder certificate without OCSPSigning passed --check-config"
else
	rc_expect_match "$out" 'lacks extendedKeyUsage OCSPSigning' "a certificate without OCSPSigning: refused"
fi
sed -e "s|$P/responder.pem|$P/presp.pem|; s|$P/responder.key|$P/presp.key|" "$T/o.json" >"$T/wrongca.json"
if out=$("$REVCHECKD" -c "$T/wrongca.json" --check-config 2>&1); then
	rc_fail "another CA's responder passed --check-config"
else
	rc_expect_match "$out" 'neither the CA certificate nor issued by it' "another CA's responder: refused"
fi

# ---------------------------------------------------------------- an edge
# Its positives are settled by the origin, as /v1/check's are; with the
# origin gone a positive is tryLater, never good, while a negative is
# still answered from the edge's own fresh filter.
{
	printf '{\n\t"upstream_filter": "%s/v1/filter",\n\t"upstream_check": "%s/v1/check",\n' "$O_URL" "$O_URL"
	printf '\t"upstream_insecure_http": true,\n\t"trusted_key": "%s",\n\t"state_dir": "%s",\n' \
	    "$T/key.pub" "$T/se"
	ocsp_conf
	printf '}\n'
} >"$T/e.json"
mkdir -p "$T/se"
rc_start E -c "$T/e.json"
rc_wait_ready "$E_URL" 30 || rc_fail "edge not ready"
URL=$E_URL
ask ebad main bad
rc_expect_match "$OUT" "bad.pem: revoked" "edge: revoked, settled by the origin"
check ebad "edge: revoked with the origin's time and reason" --responder "$P/responder.pem" \
    --request "$T/ebad.req" --status revoked --reason keyCompromise --revoked-at "$REVOKED_AT"
ask egood main good
rc_expect_match "$OUT" "good.pem: good" "edge: good"
rc_stop O || rc_fail "O exit status"
ask ebad2 main bad2
rc_expect_match "$OUT" "Responder Error: trylater" "edge, origin gone: a positive is tryLater"
ask egood2 main good
rc_expect_match "$OUT" "good.pem: good" "edge, origin gone: a negative is still good"
URL=

rc_stop S || rc_fail "S exit status"
rc_stop E || rc_fail "E exit status"
rc_done

