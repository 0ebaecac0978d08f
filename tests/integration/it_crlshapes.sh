#!/usr/bin/env bash
# it_crlshapes.sh - real-world CRL shapes made with the openssl CLI (openssl ca -gencrl) through filterbuild and a real revcheckd
#
# Every CRL here is written by `openssl ca -gencrl` with a crl_extensions
# section (-crlexts), as a CA operator would: partitioned CRLs (a
# distribution point name, only user / only CA certificates), a base CRL
# announcing a delta and that delta, an indirect CRL, 20-octet, 21-octet
# and negative serials, and an issuer Name re-encoded between the CA
# certificate that issued the leaves and the one that signs the CRLs. Each
# certificate is then checked with POST /v1/check (and bare serials with
# GET), so the answers come from the coverage rules the daemon applies.
#
# What the CLI cannot write, and where that is tested instead:
# - deltaCRLIndicator has no config syntax ("extension setting not
#   supported"); the generic form `deltaCRL = critical, ASN1:INTEGER:N`
#   writes the same DER, so it is used.
# - certificateIssuer entry extensions (indirect CRL entries for another
#   CA): `openssl ca`'s database has no field for them. They are tested
#   with PKITS's indirect CRLs (it_pkits, 4.14.31-33) and OpenSSL's API
#   (test_input.c input_crl::certificate_issuer_rules).
# - removeFromCRL in a delta: `openssl ca` cannot un-revoke a held entry
#   (test_input.c input_crl::delta_applied_to_its_base, PKITS 4.15).
. "$(dirname "$0")/lib.sh"

FB() { "$FILTERBUILD" "$@"; }
P=$T/pki
mkdir -p "$P"
FB keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null

# ---------------------------------------------------------------- the PKI
# One config; each CA is a [ca_NAME] section (-name), each extension set a
# section of its own. All CAs share the DN policy and the key type.
# casect NAME CERT KEY DB: the [ca_NAME] section of a CA.
casect() {
	cat <<EOF
[ ca_$1 ]
dir = $P/$4.db
database = \$dir/index.txt
new_certs_dir = \$dir/new
serial = \$dir/serial
crlnumber = \$dir/crlnumber
certificate = $P/$2
private_key = $P/$3
default_md = sha256
default_days = 30
default_crl_days = 7
policy = policy_any
unique_subject = no
EOF
}
{
	printf '[ req ]\ndistinguished_name = req_dn\nprompt = no\n[ req_dn ]\nCN = unused\n'
	printf '[ policy_any ]\ncommonName = supplied\norganizationName = optional\n'
	casect root root.pem root.key root
	casect other other.pem other.key other
	casect ci ci.pem ci.key ci
	# The re-encoded CA: leaves issued under reA.pem (PrintableString
	# Name), CRLs signed under reB.pem (same key, UTF8String, other case
	# and spaces), one database.
	casect reA reA.pem re.key re
	casect reB reB.pem re.key re
	cat <<EOF
[ v3_ca ]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[ v3_sub ]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
crlDistributionPoints = URI:http://shapes.test/p1.crl
[ v3_crl_issuer ]
basicConstraints = critical,CA:FALSE
keyUsage = critical,cRLSign
[ leaf_p1 ]
basicConstraints = critical,CA:FALSE
crlDistributionPoints = URI:http://shapes.test/p1.crl
[ leaf_p2 ]
basicConstraints = critical,CA:FALSE
crlDistributionPoints = URI:http://shapes.test/p2.crl
[ leaf_plain ]
basicConstraints = critical,CA:FALSE
# Reason-split distribution points: kc.crl for key compromises only,
# rest.crl for every other reason (RFC 5280 section 4.2.1.13 reasons).
[ leaf_kc ]
basicConstraints = critical,CA:FALSE
crlDistributionPoints = dp_kc, dp_rest
[ dp_kc ]
fullname = URI:http://shapes.test/kc.crl
reasons = keyCompromise, CACompromise
[ dp_rest ]
fullname = URI:http://shapes.test/rest.crl
reasons = affiliationChanged, superseded, cessationOfOperation, certificateHold, privilegeWithdrawn, AACompromise
[ leaf_ci ]
basicConstraints = critical,CA:FALSE
crlDistributionPoints = dp_ci
[ dp_ci ]
fullname = URI:http://shapes.test/indirect.crl
CRLissuer = dirName:ci_dn
# openssl ca writes the issuer's subject in its policy's order (CN, O).
[ ci_dn ]
CN = Shapes CRL Issuer
O = revcheck shapes
[ leaf_ci_order ]
basicConstraints = critical,CA:FALSE
crlDistributionPoints = dp_ci_order
[ dp_ci_order ]
fullname = URI:http://shapes.test/indirect.crl
CRLissuer = dirName:ci_dn_order
[ ci_dn_order ]
O = revcheck shapes
CN = Shapes CRL Issuer

[ crl_p1 ]
issuingDistributionPoint = critical, @idp_p1
[ idp_p1 ]
fullname = URI:http://shapes.test/p1.crl
[ crl_user ]
issuingDistributionPoint = critical, @idp_user
[ idp_user ]
onlyuser = TRUE
[ crl_ca ]
issuingDistributionPoint = critical, @idp_ca
[ idp_ca ]
onlyCA = TRUE
[ crl_kc ]
issuingDistributionPoint = critical, @idp_kc
[ idp_kc ]
fullname = URI:http://shapes.test/kc.crl
[ crl_rest ]
issuingDistributionPoint = critical, @idp_rest
[ idp_rest ]
fullname = URI:http://shapes.test/rest.crl
[ crl_base ]
freshestCRL = URI:http://shapes.test/delta.crl
[ crl_indirect ]
issuingDistributionPoint = critical, @idp_indirect
[ idp_indirect ]
indirectCRL = TRUE
EOF
} >"$P/ca.cnf"
C=$P/ca.cnf
newdb() { mkdir -p "$P/$1.db/new"; : >"$P/$1.db/index.txt"; echo 01 >"$P/$1.db/serial"; echo "$2" >"$P/$1.db/crlnumber"; }
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
# selfsigned KEY SUBJ OUT [req args...]
selfsigned() {
	local k=$1 s=$2 o=$3
	shift 3
	openssl req -config "$C" -new -x509 -key "$k" -subj "$s" -days 30 \
	    -extensions v3_ca -set_serial 1 -out "$o" "$@" 2>/dev/null
}
# issue CA EXT NAME SERIAL [SUBJ]: a certificate NAME.pem signed by CA.
issue() {
	local ca=$1 ext=$2 name=$3 serial=$4 subj=${5:-/O=revcheck shapes/CN=$3}
	echo "$serial" >"$P/${ca%[AB]}.db/serial"	# reA, reB share re.db
	key "$P/$name.key"
	openssl req -config "$C" -new -key "$P/$name.key" -subj "$subj" \
	    -out "$P/$name.csr" 2>/dev/null
	openssl ca -config "$C" -name "ca_$ca" -batch -notext -extensions "$ext" \
	    -in "$P/$name.csr" -out "$P/$name.pem" 2>"$T/ca.err" ||
		rc_fail "issue $name: $(tail -3 "$T/ca.err")"
}
revoke() { openssl ca -config "$C" -name "ca_$1" -batch -revoke "$P/$2.pem" -crl_reason "$3" 2>/dev/null; }
gencrl() {	# gencrl CA OUT [SECTION]
	openssl ca -config "$C" -name "ca_$1" -batch -gencrl -out "$2" \
	    ${3:+-crlexts "$3"} 2>"$T/ca.err" || rc_fail "gencrl $2: $(tail -3 "$T/ca.err")"
}

newdb root 1000
key "$P/root.key"
selfsigned "$P/root.key" "/O=revcheck shapes/CN=Shapes Root" "$P/root.pem"
# 20 octets (high bit clear), 21 octets encoded (high bit set, as some CAs
# still issue), and ordinary ones.
S20=7f0102030405060708090a0b0c0d0e0f10111213
S21=ff0102030405060708090a0b0c0d0e0f10111213
issue root leaf_p1 leafA 0A
issue root leaf_p1 leafB "$S20"
issue root leaf_p2 leafC "$S21"
issue root v3_sub sub 0B
issue root leaf_plain leafD 0C
# A negative serial: openssl ca cannot take one from its serial file;
# openssl x509 -set_serial can, and openssl ca -revoke records it.
key "$P/neg.key"
openssl req -config "$C" -new -key "$P/neg.key" -subj "/O=revcheck shapes/CN=neg" -out "$P/neg.csr" 2>/dev/null
openssl x509 -req -in "$P/neg.csr" -CA "$P/root.pem" -CAkey "$P/root.key" -set_serial -42 \
    -days 30 -out "$P/neg.pem" 2>/dev/null
# A positive twin of the negative serial (42 = 0x2a): it must stay valid.
issue root leaf_plain pos 2A
issue root leaf_kc leafK 0E
revoke root leafA keyCompromise
revoke root leafC superseded
revoke root neg keyCompromise
# num CRL: its CRL number as revcheck writes it (lowercase hex, whole octets).
num() {
	local h
	h=$(openssl crl -in "$1" -noout -crlnumber | sed 's/^crlNumber=0x//' | tr 'A-F' 'a-f')
	[ $(( ${#h} % 2 )) -eq 1 ] && h="0$h"
	printf '%s' "$h"
}
V=0
# publish ARGS...: the next version in $T/f; the daemon reloads it.
publish() {
	FB build --key "$T/key.pem" --out "$T/f" --quiet --allow-shrink \
	    --issuer "$P/root.pem" "$@" 2>"$T/err" || { rc_fail "build $*: $(head -c 400 "$T/err")"; return 1; }
	V=$((V + 1))
	kill -HUP "$R_PID"
	rc_wait_version "$R_URL" "$V" 20 || rc_fail "version $V not served"
}
# status NAME: the POST /v1/check status of NAME.pem
status() {
	rc_curl -X POST -H 'Content-Type: application/json' \
	    --data-binary "@$(rc_json_body cert "$P/$1.pem")" "$R_URL/v1/check"
	rc_json status
}
scope_of() { status "$1" >/dev/null; rc_json scope; }
bare() {	# bare NAME: GET /v1/check with NAME's scope and serial
	local sc id
	sc=$(scope_of "$1")
	id=$(openssl x509 -in "$P/$1.pem" -noout -serial | sed 's/^serial=//')
	rc_curl "$R_URL/v1/check?scope=$sc&id=$id"
	rc_json status
}
# expect NAME STATUS WHAT (in this shell: rc_json reads the reply after).
expect() { status "$1" >"$T/st"; rc_expect_eq "$(cat "$T/st")" "$2" "$3"; }

# ---------------------------------------------------------------- whole CRL, serials
gencrl root "$P/full.crl"
rc_expect_match "$(openssl crl -in "$P/full.crl" -noout -text)" 'Serial Number: -2A' \
    "openssl ca writes the negative serial"
FB build --key "$T/key.pem" --out "$T/f" --quiet --issuer "$P/root.pem" "$P/full.crl" 2>"$T/err" ||
	rc_fail "first build: $(cat "$T/err")"
V=1
mkdir -p "$T/state"
rc_start R --filter-dir "$T/f" --trusted-key "$T/key.pub" --state-dir "$T/state" --poll-interval 60
rc_wait_ready "$R_URL" 20 || rc_fail "revcheckd not ready"
rc_wait_version "$R_URL" 1 20 || rc_fail "version 1 not served"
expect leafA revoked "whole CRL: leafA revoked"
expect leafB not_revoked "a 20-octet serial, valid"
expect leafC revoked "a 21-octet serial (high bit set), revoked"
rc_expect_eq "$(rc_json id)" "$S21" "the 21-octet serial's id is its magnitude"
expect neg revoked "serial -42 revoked"
rc_expect_eq "$(rc_json id)" "-2a" "the id keeps its sign"
expect pos not_revoked "serial 42 is not serial -42"
rc_expect_eq "$(bare leafB)" not_revoked "bare 20-octet serial, whole CRL: covered"
FB inspect --records "$T/f" >"$T/recs"
rc_expect_match "$(cat "$T/recs")" "	$S21	" "the 21-octet serial in the table"

# ---------------------------------------------------------------- partitioned CRLs
# A distribution point partition: only certificates listing p1.
gencrl root "$P/p1.crl" crl_p1
publish "$P/p1.crl"
expect leafA revoked "p1: leafA (lists p1) revoked"
expect leafB not_revoked "p1: leafB (lists p1) not revoked"
expect leafC not_covered "p1: leafC lists p2 only: not_covered"
expect sub not_revoked "p1: a CA certificate listing p1 (the part has no kind limit)"
expect leafD not_covered "p1: a certificate with no distribution point"
rc_expect_eq "$(bare leafA)" not_covered "p1: a bare serial: not_covered"
# User / CA partitions, one CRL number counter for both (as openssl ca has).
gencrl root "$P/user-old.crl" crl_user
gencrl root "$P/ca-old.crl" crl_ca
gencrl root "$P/user.crl" crl_user
gencrl root "$P/ca.crl" crl_ca
publish "$P/user.crl"
expect leafC revoked "user-only: leafC revoked"
expect leafD not_revoked "user-only: any user certificate"
expect sub not_covered "user-only: a CA certificate: not_covered"
rc_expect_eq "$(bare leafD)" not_covered "user-only: a bare serial: not_covered"
publish "$P/user.crl" "$P/ca-old.crl"
expect sub not_revoked "user + CA partitions: the CA certificate"
rc_expect_eq "$(bare leafA)" revoked "user + CA partitions: a bare serial is covered"
rc_expect_eq "$(bare leafD)" not_revoked "user + CA partitions: bare, not revoked"
# A replayed partition: the CA partition moves on, the user one goes back.
v=$(readlink "$T/f/current")
if FB build --key "$T/key.pem" --out "$T/f" --quiet --allow-shrink --issuer "$P/root.pem" \
    "$P/user-old.crl" "$P/ca.crl" 2>"$T/err"; then
	rc_fail "an older user partition was published"
fi
rc_expect_match "$(cat "$T/err")" "coverage part [0-9] \\(user certificates\\) has CRL number \"$(num "$P/user-old.crl")\", .*older than the one version [0-9]+ used \\(CRL number \"$(num "$P/user.crl")\".*--allow-crl-rollback" \
    "the older partition is named with both CRL numbers"
rc_expect_eq "$(readlink "$T/f/current")" "$v" "nothing published"
publish --allow-crl-rollback "$P/user-old.crl" "$P/ca.crl"
rc_expect_match "$(cat "$T/err")" 'older than the one version.*\(--allow-crl-rollback\)' "an allowed partition rollback is logged"
# A change of coverage is no way around it: after a newer full CRL, the
# partitions it replaced (an earlier thisUpdate) are refused.
sleep 1
gencrl root "$P/full2.crl"
publish "$P/full2.crl"
v=$(readlink "$T/f/current")
if FB build --key "$T/key.pem" --out "$T/f" --quiet --allow-shrink --issuer "$P/root.pem" \
    "$P/user.crl" "$P/ca.crl" 2>"$T/err"; then
	rc_fail "older partitions replaced a newer full CRL"
fi
rc_expect_match "$(cat "$T/err")" "coverage part [0-9] \((user|ca) certificates\) \(CRL number \"[0-9a-f]+\", thisUpdate [0-9]+\) is older than the CRL version [0-9]+ used for the whole scope.*--allow-crl-rollback" \
    "older partitions after a full CRL refused"
rc_expect_eq "$(readlink "$T/f/current")" "$v" "nothing published"

# Reason-split distribution points: leafK looks to kc.crl only for key
# compromises (its reasons field), so kc.crl alone, though its IDP has no
# onlySomeReasons, does not show it unrevoked (RFC 5280 section 6.3.3 (d)).
gencrl root "$P/kc.crl" crl_kc
gencrl root "$P/rest.crl" crl_rest
publish "$P/kc.crl"
expect leafK not_covered "kc.crl alone: leafK's point names it for two reasons only"
publish "$P/kc.crl" "$P/rest.crl"
expect leafK not_revoked "kc.crl and rest.crl: every reason, leafK not revoked"

# ---------------------------------------------------------------- delta CRLs
gencrl root "$P/base.crl" crl_base
base=$(openssl crl -in "$P/base.crl" -noout -crlnumber | sed 's/^crlNumber=0x//')
revoke root leafD cessationOfOperation
printf '[ crl_delta ]\ndeltaCRL = critical, ASN1:INTEGER:0x%s\n' "$base" >>"$C"
gencrl root "$P/delta.crl" crl_delta
rc_expect_match "$(openssl crl -in "$P/delta.crl" -noout -text)" 'Delta CRL Indicator: critical' "the delta is one"
v=$(readlink "$T/f/current")
if FB build --key "$T/key.pem" --out "$T/f" --quiet --allow-shrink --issuer "$P/root.pem" \
    "$P/base.crl" 2>"$T/err"; then
	rc_fail "a base announcing a delta was used alone"
fi
rc_expect_match "$(cat "$T/err")" 'announces a delta CRL \(freshestCRL\) that is not among the inputs' "base alone refused"
if FB build --key "$T/key.pem" --out "$T/f" --quiet --allow-shrink --issuer "$P/root.pem" \
    "$P/delta.crl" 2>"$T/err"; then
	rc_fail "a delta alone was used"
fi
rc_expect_match "$(cat "$T/err")" 'delta CRL of .* without its base' "delta alone refused"
rc_expect_eq "$(readlink "$T/f/current")" "$v" "nothing published"
publish "$P/base.crl" "$P/delta.crl"
expect leafD revoked "base + delta: leafD, revoked after the base, is revoked"
expect leafA revoked "base + delta: leafA from the base"
expect leafB not_revoked "base + delta: leafB"

# ---------------------------------------------------------------- an indirect CRL
# "Shapes CRL Issuer" (cRLSign only, issued by the root) issues an indirect
# CRL; "Shapes Other CA" issues leafX naming it as cRLIssuer, and leafY
# with no distribution point.
newdb other 01
key "$P/other.key"
selfsigned "$P/other.key" "/O=revcheck shapes/CN=Shapes Other CA" "$P/other.pem"
issue root v3_crl_issuer ci 0D "/O=revcheck shapes/CN=Shapes CRL Issuer"
newdb ci 01
issue other leaf_ci leafX 05
issue other leaf_plain leafY 06
issue other leaf_ci_order leafZ 07
gencrl ci "$P/indirect.crl" crl_indirect
rc_expect_match "$(openssl crl -in "$P/indirect.crl" -noout -text)" 'Indirect CRL' "the CRL is indirect"
gencrl root "$P/root2.crl"
publish --issuer "$P/ci.pem" --issuer "$P/other.pem" "$P/root2.crl" "$P/indirect.crl"
expect leafX not_revoked "a certificate naming the CRL issuer as cRLIssuer: covered"
expect leafY not_covered "another certificate of that CA: its CA has no CRL"
expect leafZ not_covered "a cRLIssuer with the CRL issuer's RDNs in another order is another Name"
rc_expect_eq "$(bare leafX)" not_covered "a bare serial of that CA: the indirect CRL alone does not speak for it"
publish --issuer "$P/ci.pem" --issuer "$P/other.pem" --delegate "$P/other.pem=$P/ci.pem" \
    "$P/root2.crl" "$P/indirect.crl"
rc_expect_eq "$(bare leafX)" not_revoked "--delegate: the CA's bare serials are covered"
expect leafY not_revoked "--delegate: its other certificates too"
FB inspect "$T/f" >"$T/insp"
rc_expect_match "$(cat "$T/insp")" 'delegated \(--delegate\)' "inspect shows the delegated part"
# Partly delegated, its own CRL lost: leafY (a user certificate of the
# Other CA, no distribution point) is revoked on the Other CA's own
# user-only CRL; the delegated indirect CRL (7 days) lists nothing for the
# Other CA. With --keep-going and the own CRL unreadable, the scope keeps
# the previous version's records of that CRL while its nextUpdate lies
# ahead (leafY revoked), and after it leafY is not_covered. (The scope was
# rebuilt from the delegated part alone: leafY and its bare serial
# answered not_revoked, in both cases.) --max-shrink 100: openssl ca
# cannot write certificateIssuer entries, so the indirect CRL here lists
# nothing for the Other CA and the shrink check (1 key to 0) would refuse
# the old build by luck; an indirect CRL listing more of the CA's
# revocations than its own CRL passes that check without the option.
revoke other leafY keyCompromise
gencrl other "$P/other-user2.crl" crl_user
gencrl ci "$P/ind-long.crl" crl_indirect
# dpub [--serve] ARGS...: the next version in $T/f from root2.crl, the
# Other CA delegated to the CRL issuer, and ARGS; exit status in DST; with
# --serve the daemon is made to load it.
dpub() {
	local serve=0
	[ "$1" = --serve ] && { serve=1; shift; }
	DST=0
	FB build --key "$T/key.pem" --out "$T/f" --quiet --issuer "$P/root.pem" --issuer "$P/ci.pem" \
	    --issuer "$P/other.pem" --delegate "$P/other.pem=$P/ci.pem" "$P/root2.crl" "$@" 2>"$T/err" || DST=$?
	[ "$DST" -eq 0 ] || [ "$DST" -eq 3 ] || { rc_fail "build $*: $(head -c 400 "$T/err")"; return 1; }
	V=$((V + 1))
	[ "$serve" -eq 1 ] || return 0
	kill -HUP "$R_PID"
	rc_wait_version "$R_URL" "$V" 20 || rc_fail "version $V not served"
}
dpub --serve "$P/other-user2.crl" "$P/ind-long.crl"
expect leafY revoked "own user CRL and delegated CRL: leafY revoked"
rc_expect_eq "$(bare leafY)" revoked "own user CRL and delegated CRL: leafY's bare serial revoked"
dpub --serve --keep-going --max-shrink 100 "$P/gone-other.crl" "$P/ind-long.crl"
rc_expect_eq "$DST" 3 "--keep-going without the own CRL publishes, exit 3"
rc_expect_match "$(cat "$T/err")" 'scope x509:[0-9a-f]+ \("CN=Shapes Other CA,O=revcheck shapes"\) kept from version [0-9]+ until its nextUpdate' \
    "own CRL lost: its part is kept from the previous version"
expect leafY revoked "own CRL lost, its nextUpdate ahead: leafY still revoked, not not_revoked from the indirect CRL"
rc_expect_eq "$(bare leafY)" revoked "own CRL lost: leafY's bare serial still revoked"
expect leafX not_revoked "own CRL lost: leafX (naming the CRL issuer) still answered from the indirect CRL"
# The same with an own CRL that runs out (5 s): it ends with the sleep below.
openssl ca -config "$C" -name ca_other -batch -gencrl -crlsec 5 -crlexts crl_user \
    -out "$P/other-user-short.crl" 2>"$T/ca.err" || rc_fail "gencrl other-user-short: $(tail -3 "$T/ca.err")"
dpub "$P/other-user-short.crl" "$P/ind-long.crl"
rc_expect_eq "$DST" 0 "a short own CRL with the delegated CRL: published"
# Partly delegated: the Other CA's own CRL covers its user certificates
# for 7 days, the delegated indirect CRL (5 s here) everything else. Once
# that CRL has run out and neither input can be read, --keep-going keeps
# no scope on it: the Other CA's scope ended with the indirect CRL. (It
# took its own CRL's nextUpdate, and was kept, delegated part and all,
# answering bare serials not_revoked from the expired indirect CRL.)
gencrl other "$P/other-user.crl" crl_user
openssl ca -config "$C" -name ca_ci -batch -gencrl -crlsec 5 -crlexts crl_indirect \
    -out "$P/ind-short.crl" 2>"$T/ca.err" || rc_fail "gencrl ind-short: $(tail -3 "$T/ca.err")"
FB build --key "$T/key.pem" --out "$T/dg" --quiet --issuer "$P/root.pem" --issuer "$P/ci.pem" \
    --issuer "$P/other.pem" --delegate "$P/other.pem=$P/ci.pem" \
    "$P/root2.crl" "$P/other-user.crl" "$P/ind-short.crl" 2>"$T/err" || rc_fail "build: $(cat "$T/err")"
rc_expect_match "$(FB inspect "$T/dg")" 'delegated \(--delegate\)' "partly delegated: the part is there"
sleep 6
ST=0
FB build --key "$T/key.pem" --out "$T/dg" --keep-going --issuer "$P/root.pem" --issuer "$P/ci.pem" \
    --issuer "$P/other.pem" --delegate "$P/other.pem=$P/ci.pem" \
    "$P/root2.crl" "$P/gone-other.crl" "$P/gone-ind.crl" 2>"$T/err" || ST=$?
rc_expect_eq "$ST" 3 "--keep-going without the two CRLs publishes, exit 3"
rc_expect_match "$(cat "$T/err")" '"CN=Shapes Other CA,O=revcheck shapes"\) past its nextUpdate: left out' \
    "the Other CA's scope ends with the indirect CRL"
rc_expect_eq "$(FB inspect "$T/dg" | grep -c 'delegated (--delegate)' || true)" 0 \
    "no delegated part of the expired indirect CRL is kept"
# The own CRL past its nextUpdate, the delegated CRL current: what the own
# CRL covered is not_covered, not left to the indirect CRL.
dpub --serve --keep-going --max-shrink 100 "$P/gone-other.crl" "$P/ind-long.crl"
rc_expect_eq "$DST" 3 "--keep-going, own CRL past its nextUpdate: publishes, exit 3"
rc_expect_match "$(cat "$T/err")" '"CN=Shapes Other CA,O=revcheck shapes"\) past its nextUpdate' \
    "own CRL past its nextUpdate: warned"
expect leafY not_covered "own CRL lost and past its nextUpdate: leafY not_covered, not not_revoked"
rc_expect_eq "$(bare leafY)" not_covered "own CRL lost and past its nextUpdate: bare serial not_covered"
expect leafX not_revoked "leafX names the CRL issuer: still covered by the indirect CRL"
# A statement no indirect CRL among the inputs can honour is warned.
FB build --key "$T/key.pem" --out "$T/g" --quiet --issuer "$P/root.pem" \
    --delegate "$P/other.pem=$P/root.pem" "$P/root2.crl" 2>"$T/err" || rc_fail "build: $(cat "$T/err")"
rc_expect_match "$(cat "$T/err")" "warning: --delegate $P/other.pem=$P/root.pem: no indirect CRL of that CRL issuer" \
    "a --delegate that adds nothing is warned"

# ---------------------------------------------------------------- re-encoded issuer Names
newdb re 01
key "$P/re.key"
printf '[ req ]\ndistinguished_name = d\nstring_mask = nombstr\n[ d ]\n' >"$P/printable.cnf"
printf '[ req ]\ndistinguished_name = d\nstring_mask = utf8only\n[ d ]\n' >"$P/utf8.cnf"
openssl req -config "$P/printable.cnf" -new -x509 -key "$P/re.key" -set_serial 1 -days 30 \
    -subj "/O=revcheck shapes/CN=Shapes Re-encoded CA" -out "$P/reA.pem" 2>/dev/null
openssl req -config "$P/utf8.cnf" -new -x509 -key "$P/re.key" -set_serial 2 -days 30 -utf8 \
    -subj "/O=REVCHECK   shapes/CN=shapes  RE-ENCODED ca" -out "$P/reB.pem" 2>/dev/null
rc_expect_match "$(openssl asn1parse -in "$P/reA.pem" | grep -m1 -E 'PRINTABLESTRING|UTF8STRING')" PRINTABLESTRING "reA's Name is PrintableString"
rc_expect_match "$(openssl asn1parse -in "$P/reB.pem" | grep -m1 -E 'PRINTABLESTRING|UTF8STRING')" UTF8STRING "reB's Name is UTF8String"
issue reA leaf_plain reLeaf1 11
issue reA leaf_plain reLeaf2 12
revoke reA reLeaf1 keyCompromise
gencrl reB "$P/re.crl"
rc_expect_match "$(openssl crl -in "$P/re.crl" -noout -issuer)" 'shapes  RE-ENCODED ca' "the CRL names the re-encoded issuer"
# OpenSSL matches the two Names too.
rc_expect_match "$(openssl verify -crl_check -CAfile "$P/reA.pem" -CRLfile "$P/re.crl" "$P/reLeaf1.pem" 2>&1 || true)" \
    'certificate revoked' "openssl verify -crl_check: reLeaf1 revoked"
publish --issuer "$P/reB.pem" "$P/re.crl"
expect reLeaf1 revoked "re-encoded issuer Name: reLeaf1 revoked"
expect reLeaf2 not_revoked "re-encoded issuer Name: reLeaf2 covered, not revoked"

# ---------------------------------------------------------------- RSASSA-PSS signatures
# PSS names its digests in its parameters, not its OID: SHA-1 there (the
# default when hashAlgorithm is absent) is as weak as sha1WithRSA.
casect pss pss.pem pss.key pss >>"$C"
newdb pss 01
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$P/pss.key" 2>/dev/null
selfsigned "$P/pss.key" "/O=revcheck shapes/CN=Shapes PSS CA" "$P/pss.pem"
openssl ca -config "$C" -name ca_pss -batch -gencrl -md sha1 -sigopt rsa_padding_mode:pss \
    -out "$P/pss-sha1.crl" 2>"$T/ca.err" || rc_fail "gencrl pss-sha1: $(tail -3 "$T/ca.err")"
openssl ca -config "$C" -name ca_pss -batch -gencrl -md sha256 -sigopt rsa_padding_mode:pss \
    -sigopt rsa_pss_saltlen:32 -out "$P/pss-sha256.crl" 2>"$T/ca.err" ||
	rc_fail "gencrl pss-sha256: $(tail -3 "$T/ca.err")"
rc_expect_match "$(openssl crl -in "$P/pss-sha1.crl" -noout -text)" 'Hash Algorithm: sha1' "the CRL is RSASSA-PSS with SHA-1"
if FB build --key "$T/key.pem" --out "$T/pss" --quiet --issuer "$P/pss.pem" "$P/pss-sha1.crl" 2>"$T/err"; then
	rc_fail "an RSASSA-PSS/SHA-1 CRL was accepted"
fi
rc_expect_match "$(cat "$T/err")" 'RSASSA-PSS with SHA1 and MGF1 with SHA1, a weak digest: refused unless --allow-weak-crl-sig' \
    "RSASSA-PSS/SHA-1 refused"
FB build --key "$T/key.pem" --out "$T/pss" --quiet --allow-weak-crl-sig --issuer "$P/pss.pem" \
    "$P/pss-sha1.crl" 2>"$T/err" || rc_fail "PSS/SHA-1 with --allow-weak-crl-sig: $(cat "$T/err")"
FB build --key "$T/key.pem" --out "$T/pss2" --quiet --issuer "$P/pss.pem" "$P/pss-sha256.crl" 2>"$T/err" ||
	rc_fail "an RSASSA-PSS/SHA-256 CRL was refused: $(cat "$T/err")"

# ---------------------------------------------------------------- one CRL, two signature algorithms
# A CA publishing one CRL signed twice (ecdsa-with-SHA256 and SHA384): the
# same index, crlnumber and instant (faketime freezes the clock), so the
# two differ in their signature algorithm alone. Either will do; the
# choice must not follow the order given. Anything else differing (an
# entry, nextUpdate) leaves them unordered: refused.
casect md md.pem md.key md >>"$C"
newdb md 05
key "$P/md.key"
selfsigned "$P/md.key" "/O=revcheck shapes/CN=Shapes Two Digests CA" "$P/md.pem"
issue md leaf_plain mdLeaf1 21
issue md leaf_plain mdLeaf2 22
revoke md mdLeaf1 keyCompromise
FT=$(TZ=UTC date '+%Y-%m-%d %H:%M:%S')
# mdcrl OUT MD [ca args]: a CRL numbered 05 at the frozen instant FT.
mdcrl() {
	local out=$1 md=$2
	shift 2
	echo 05 >"$P/md.db/crlnumber"
	TZ=UTC faketime -f "$FT" openssl ca -config "$C" -name ca_md -batch -gencrl -md "$md" \
	    -out "$out" "$@" 2>"$T/ca.err" || rc_fail "gencrl $out: $(tail -3 "$T/ca.err")"
}
mdcrl "$P/md256.crl" sha256
mdcrl "$P/md384.crl" sha384
mdcrl "$P/md384-next8.crl" sha384 -crldays 8
rc_expect_match "$(openssl crl -in "$P/md384.crl" -noout -text)" 'ecdsa-with-SHA384' "the second CRL is signed with SHA-384"
rc_expect_eq "$(openssl crl -in "$P/md256.crl" -noout -lastupdate -nextupdate -crlnumber)" \
    "$(openssl crl -in "$P/md384.crl" -noout -lastupdate -nextupdate -crlnumber)" \
    "the two CRLs have one thisUpdate, nextUpdate and number"
for order in "md256 md384" "md384 md256"; do
	set -- $order
	if FB build --key "$T/key.pem" --out "$T/md-$1" --issuer "$P/md.pem" \
	    "$P/$1.crl" "$P/$2.crl" >"$T/md.out" 2>"$T/err"; then
		rc_ok "one CRL signed two ways ($1 first): accepted"
	else
		rc_fail "one CRL signed two ways ($1 first): $(head -c 400 "$T/err")"
	fi
	rc_expect_match "$(cat "$T/err")" 'one CRL of "[^"]*Two Digests CA[^"]*" signed two ways .*; using ' \
	    "the build says which one it used ($1 first)"
	sed -n 's/.* signed two ways .*; using //p' "$T/err" >>"$T/md.used"
	FB inspect --records "$T/md-$1" >"$T/recs" 2>/dev/null
	rc_expect_eq "$(grep -c '	21	' "$T/recs" || true)" 1 "mdLeaf1 revoked once ($1 first)"
done
rc_expect_eq "$(sort -u "$T/md.used" | wc -l)" 1 "the same CRL used whichever comes first"
if FB build --key "$T/key.pem" --out "$T/md-next" --quiet --issuer "$P/md.pem" \
    "$P/md256.crl" "$P/md384-next8.crl" 2>"$T/err"; then
	rc_fail "two CRLs with one number and thisUpdate but another nextUpdate were accepted"
fi
rc_expect_match "$(cat "$T/err")" 'cannot be ordered' "another nextUpdate: still refused"
revoke md mdLeaf2 superseded
mdcrl "$P/md384-more.crl" sha384
if FB build --key "$T/key.pem" --out "$T/md-more" --quiet --issuer "$P/md.pem" \
    "$P/md256.crl" "$P/md384-more.crl" 2>"$T/err"; then
	rc_fail "two CRLs with one number and thisUpdate but other entries were accepted"
fi
rc_expect_match "$(cat "$T/err")" 'cannot be ordered' "another entry: still refused"

rc_done
