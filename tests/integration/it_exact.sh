#!/usr/bin/env bash
# it_exact.sh - exact scopes end to end: an openssl CA's issued certificates answered from the filter alone, on an edge with its origin stopped
#
# A CA made with the real openssl CLI issues N leaves (notBefore fixed in
# the past), revokes some in a CRL; filterbuild build --crl ...
# --issued certs.pem makes the CA's scope exact (cutoff: the newest
# notBefore listed). The origin answers every leaf right; an edge synced
# from it, with the origin stopped, still answers every leaf right from
# the filter alone, with no authority request (revcheckd_fallthrough_total
# stays 0). A certificate issued after the cutoff with the serial of a
# revoked leaf (so the structure certainly says revoked) is not answered
# revoked from the filter alone: the origin's table settles it, and the
# edge without its origin refuses it (503). Then an id list with
# --issued-cutoff, and a revoked id missing from the issued set (warned,
# counted, still revoked); then tokens, whose verified iat shows them
# issued by the cutoff.
. "$(dirname "$0")/lib.sh"

FB() { "$FILTERBUILD" "$@"; }
N=24
REVOKED=" 3 5 8 13 21 "	# leaves revoked in the CRL

# ---------------------------------------------------------------- the CA
C=$T/ca
mkdir -p "$C/db/new" "$C/late/new"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$C/ca.key" -out "$C/ca.pem" -days 3650 \
    -subj "/CN=revcheck Exact CA/O=revcheck tests" 2>/dev/null
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$C/leaf.key" -out "$C/leaf.csr" -subj "/CN=leaf" 2>/dev/null
ca_conf() {	# ca_conf DBDIR [NAME]: an openssl ca configuration of CA NAME (ca)
	cat <<EOF
[ca]
default_ca = d
[d]
dir = $1
database = \$dir/index.txt
new_certs_dir = \$dir/new
serial = \$dir/serial
certificate = $C/${2:-ca}.pem
private_key = $C/${2:-ca}.key
default_md = sha256
policy = p
unique_subject = no
default_crl_days = 30
[p]
commonName = supplied
EOF
}
ca_conf "$C/db" >"$C/ca.cnf"
ca_conf "$C/late" >"$C/late.cnf"
: >"$C/db/index.txt"
: >"$C/late/index.txt"
echo 1000 >"$C/db/serial"
issue() {	# issue CONF OUT STARTDATE
	openssl ca -batch -config "$1" -in "$C/leaf.csr" -subj "/CN=leaf" \
	    -startdate "$3" -enddate 20361231000000Z -notext -out "$2" 2>/dev/null
}
for i in $(seq 1 "$N"); do
	issue "$C/ca.cnf" "$C/leaf$i.pem" 20260101000000Z
	cat "$C/leaf$i.pem" >>"$C/certs.pem"
done
for i in $REVOKED; do
	openssl ca -config "$C/ca.cnf" -revoke "$C/leaf$i.pem" \
	    -crl_reason keyCompromise 2>/dev/null
done
openssl ca -gencrl -config "$C/ca.cnf" -out "$C/crl.pem" 2>/dev/null
# After the cutoff: the serial of revoked leaf 3 issued again, and a new one.
openssl x509 -in "$C/leaf3.pem" -noout -serial | cut -d= -f2 >"$C/late/serial"
issue "$C/late.cnf" "$C/late-reused.pem" 20260301000000Z
echo 2000 >"$C/late/serial"
issue "$C/late.cnf" "$C/late-new.pem" 20260301000000Z
rc_expect_eq "$(grep -c 'BEGIN CERTIFICATE' "$C/certs.pem")" "$N" "$N leaves issued"
# A second CA that revoked nothing: its empty CRL covers it, exact too.
mkdir -p "$C/odb/new"
: >"$C/odb/index.txt"
echo 10 >"$C/odb/serial"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$C/other.key" -out "$C/other.pem" -days 3650 \
    -subj "/CN=revcheck Exact Other CA/O=revcheck tests" 2>/dev/null
ca_conf "$C/odb" other >"$C/other.cnf"
for i in 1 2 3; do
	issue "$C/other.cnf" "$C/oleaf$i.pem" 20260101000000Z
	cat "$C/oleaf$i.pem" >>"$C/other-certs.pem"
done
openssl ca -gencrl -config "$C/other.cnf" -out "$C/other-crl.pem" 2>/dev/null

# ---------------------------------------------------------------- build
F=$T/filters
FB keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
# The other CA's issued set last: an exact scope with no record beside
# one with records made a builder assert on its empty range.
FB build --key "$T/key.pem" --out "$F" --issuer "$C/ca.pem" --issuer "$C/other.pem" \
    --issued "$C/certs.pem" --issued "$C/other-certs.pem" "$C/crl.pem" \
    "$C/other-crl.pem" >"$T/build.out" 2>"$T/build.err" ||
    rc_fail "build with --issued: $(cat "$T/build.err")"
rc_expect_match "$(cat "$T/build.out")" "exact scope x509:[0-9a-f]{64}: \|U\| 3, \|R\| 0" \
    "a CA that revoked nothing: exact with |R| 0"
rc_expect_match "$(cat "$T/build.out")" "exact scope x509:[0-9a-f]{64}: \|U\| $N, \|R\| 5" \
    "the build names the exact scope with |U| and |R|"
FB inspect "$F" >"$T/inspect.out"
rc_expect_match "$(cat "$T/inspect.out")" "exact: .*\|U\| $N, \|R\| 5" \
    "inspect shows the exact scope"
rc_expect_match "$(cat "$T/inspect.out")" "cutoff 2026-01-01T00:00:00Z" \
    "the cutoff is the newest notBefore listed"
FB inspect --json "$F" >"$T/inspect.json"
rc_expect_eq "$(python3 -c '
import json, sys
s = [x["exact"] for x in json.load(open(sys.argv[1]))["scopes"]
    if x["exact"]["revoked"] == 5][0]
print(s["issued"], s["revoked"], s["fingerprint_bits"] >= 1, s["bits"] > 0,
    s["bound_bits"] > 0, abs(s["ratio"] - s["bits"] / s["bound_bits"]) < 1e-9)
' "$T/inspect.json")" "$N 5 True True True True" \
    "inspect --json: |U|, |R|, w, bits, the bound and the ratio"

# post URL FILE: POST /v1/check {"cert": FILE}
post() {
	rc_curl -H 'Content-Type: application/json' \
	    --data-binary "@$(rc_json_body cert "$2")" "$1/v1/check"
}
counter() {	# counter URL NAME: a revcheckd_NAME sample of /metrics
	rc_curl "$1/metrics"
	printf '%s\n' "$RC_BODY" | awk -v n="revcheckd_$2" '$1 == n { print $2 }'
}
# every_leaf URL WHO: each leaf answered right, from the exact structure.
every_leaf() {
	local i want bad=0
	for i in $(seq 1 "$N"); do
		want=not_revoked
		[[ $REVOKED == *" $i "* ]] && want=revoked
		post "$1" "$C/leaf$i.pem"
		if [ "$RC_STATUS" != 200 ] || [[ $RC_BODY != *"\"status\":\"$want\",\"source\":\"exact\""* ]]; then
			rc_fail "$2: leaf$i: want $want from exact: $RC_STATUS $RC_BODY"
			bad=1
		fi
	done
	for i in 1 2 3; do
		post "$1" "$C/oleaf$i.pem"
		if [[ $RC_BODY != *'"status":"not_revoked","source":"exact"'* ]]; then
			rc_fail "$2: oleaf$i: want not_revoked from exact: $RC_STATUS $RC_BODY"
			bad=1
		fi
	done
	[ "$bad" = 0 ] && rc_ok "$2: all issued leaves of both CAs answered right from the exact structures"
}

# ---------------------------------------------------------------- origin
mkdir -p "$T/so" "$T/se"
rc_start O --filter-dir "$F" --trusted-key "$T/key.pub" --state-dir "$T/so"
rc_wait_ready "$O_URL" || rc_fail "origin ready"
rc_curl "$O_URL/v1/status"
rc_expect_match "$RC_BODY" "\"keys\":5,\"exact\":\\{\"cutoff\":\"2026-01-01T00:00:00Z\",\"issued\":$N\\}" \
    "status: the scope's cutoff and |U|"
every_leaf "$O_URL" origin
post "$O_URL" "$C/late-reused.pem"
rc_expect_json status revoked "origin: a reused serial after the cutoff is revoked"
rc_expect_json source authoritative "origin: ... by the table, not the filter alone"
post "$O_URL" "$C/late-new.pem"
rc_expect_json status not_revoked "origin: a new certificate after the cutoff: not_revoked"

# ---------------------------------------------------------------- edge
rc_start E --upstream-filter "$O_URL/v1/filter" --upstream-check "$O_URL/v1/check" \
    --trusted-key "$T/key.pub" --upstream-insecure-http --state-dir "$T/se" \
    --sync-interval 1
rc_wait_ready "$E_URL" || rc_fail "edge ready"
rc_stop O
fall0=$(counter "$E_URL" fallthrough_total)
every_leaf "$E_URL" "edge, origin stopped"
rc_expect_eq "$(counter "$E_URL" fallthrough_total)" "$fall0" \
    "edge: no authority request for the issued leaves"
rc_curl "$E_URL/metrics"
rc_expect_match "$RC_BODY" 'revcheckd_exact_answers_total\{answer="revoked"\} 5' \
    "edge: the revoked leaves counted as exact answers"
rc_expect_match "$RC_BODY" "revcheckd_exact_answers_total\\{answer=\"not_revoked\"\\} $((N - 5 + 3))" \
    "edge: the others counted as exact answers"
post "$E_URL" "$C/late-reused.pem"
rc_expect_status 503 "edge without its origin: a reused serial after the cutoff is not answered from the filter"
rc_expect_json error authority_unavailable
rc_curl "$E_URL/v1/status"
rc_expect_json counters.exact.unproven 1 "status: the unproven exact positive counted"
rc_stop E

# ---------------------------------------------------------------- id lists
printf 'tok-%d\n' $(seq 1 50) >"$T/issued.txt"
printf 'tok-3\ntok-7\ntok-99\n' >"$T/revoked.txt"
if FB build --key "$T/key.pem" --out "$T/f2" --scope api --issued "$T/issued.txt" \
    "$T/revoked.txt" >/dev/null 2>"$T/nocut.err"; then
	rc_fail "an id list without --issued-cutoff was accepted"
else
	rc_expect_match "$(cat "$T/nocut.err")" "needs --issued-cutoff" \
	    "an id list needs --issued-cutoff"
fi
FB build --key "$T/key.pem" --out "$T/f2" --scope api --issued "$T/issued.txt" \
    --issued-cutoff 2026-06-01T00:00:00Z "$T/revoked.txt" >"$T/b2.out" 2>"$T/b2.err" ||
    rc_fail "id-list build: $(cat "$T/b2.err")"
rc_expect_match "$(cat "$T/b2.err")" "1 revoked id\(s\) not in the issued set were added" \
    "a revoked id missing from the issued set is warned about, counted"
mkdir -p "$T/sl"
rc_start L --filter-dir "$T/f2" --trusted-key "$T/key.pub" --state-dir "$T/sl"
rc_wait_ready "$L_URL" || rc_fail "list daemon ready"
rc_curl "$L_URL/v1/check?id=tok-8&scope=api"
rc_expect_json status not_revoked "an issued id not revoked"
rc_expect_json source exact "... answered by the exact structure"
for id in tok-3 tok-99; do
	rc_curl "$L_URL/v1/check?id=$id&scope=api"
	rc_expect_json status revoked "$id revoked"
	# A bare id shows no issue time: the table settles the positive.
	rc_expect_json source authoritative "$id: a bare id is settled by the table"
done

# ---------------------------------------------------------------- tokens
# A verified token's iat shows it issued by the cutoff (an hour ago): its
# revocation is answered from the filter alone; the same jti with a later
# iat is settled by the table.
ISS=https://idp.example
rc_jwtmint key p256 "$T/idp.pem"
rc_jwtmint jwks "$T/idp.jwks" "$T/idp.pem:k1"
printf 'j-%d\n' $(seq 1 30) >"$T/jti.txt"
printf '[{"id": "j-2", "scope": "%s"}]\n' "$ISS" >"$T/jrev.json"
mkdir -p "$T/f3" "$T/s3"
FB build --key "$T/key.pem" --out "$T/f3" --quiet --scope "$ISS" \
    --issued "$T/jti.txt" --issued-cutoff $(( $(date +%s) - 3600 )) "$T/jrev.json" ||
    rc_fail "token build"
printf '{"filter_dir": "%s", "trusted_key": "%s", "state_dir": "%s",
  "issuers": [{"issuer": "%s", "jwks_file": "%s", "audiences": ["api"],
    "algorithms": ["ES256"]}]}\n' "$T/f3" "$T/key.pub" "$T/s3" "$ISS" \
    "$T/idp.jwks" >"$T/tok.json"
rc_start J -c "$T/tok.json"
rc_wait_ready "$J_URL" || rc_fail "token daemon ready"
tok() {	# tok JTI IAT
	rc_jwtmint sign "$T/idp.pem" ES256 k1 \
	    "{\"iss\":\"$ISS\",\"sub\":\"u\",\"aud\":\"api\",\"jti\":\"$1\",\"iat\":\"$2\",\"exp\":\"now+600\"}"
}
check_tok() {	# check_tok TOKEN STATUS SOURCE WHAT
	rc_curl -H 'Content-Type: application/json' \
	    --data-binary "{\"token\":\"$1\"}" "$J_URL/v1/check"
	rc_expect_json status "$2" "$4"
	rc_expect_json source "$3" "$4: source"
}
check_tok "$(tok j-2 now-7200)" revoked exact "a revoked token issued before the cutoff"
check_tok "$(tok j-5 now-7200)" not_revoked exact "a token of the issued set"
check_tok "$(tok j-2 now-60)" revoked authoritative \
    "the revoked jti with an iat after the cutoff: the table settles it"
rc_done
