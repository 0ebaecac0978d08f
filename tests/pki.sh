#!/usr/bin/env bash
# pki.sh - builds a small test PKI with the real openssl CLI: CAs, leaves, revocations, CRLs
#
# Usage: tests/pki.sh OUTDIR
#
# Creates in OUTDIR (made if missing; any previous PKI there is replaced):
#   ca.pem ca.key               root CA "revcheck Test CA"
#   other.pem other.key         an unrelated CA "revcheck Other CA"
#   certs/leafNN.pem            12 leaves issued by ca with `openssl ca`
#   certs/otherNN.pem           3 leaves issued by other
#   crl.pem crl.der             ca's CRL (PEM and DER), nextUpdate in 30 days
#   crl-expired.pem             ca's CRL with lastUpdate/nextUpdate in 2020
#   other-crl.pem other-crl.der other's CRL (one revoked leaf)
#   other-crl-empty.pem         other's CRL before anything was revoked
#   crl-bundle.pem              crl.pem followed by other-crl.pem
#   impostor.pem impostor.key   a CA with ca's subject name but its own key
#   impostor-crl.pem            a CRL naming ca as issuer, signed by impostor
#   certs.tsv                   manifest of ca's leaves
#   other-certs.tsv             manifest of other's leaves
#
# Manifest lines (tab-separated, one per certificate, no header line):
#   file  serial_hex  status  reason  revoked_at
# file is relative to OUTDIR; serial_hex is the serial's canonical
# big-endian magnitude in lowercase hex (no leading 00 bytes, even length);
# status is "revoked" or "valid"; reason is the RFC 5280 reason name as
# the CRL carries it, or "-" when the entry has no reason code (and for
# valid certificates); revoked_at is RFC 3339 UTC, or "-".
#
# Serials are fixed (so the structure is deterministic) and chosen to
# exercise encodings: one byte, high bit set (DER adds a 00 byte), long.
# Needs no network; runs in well under 5 s.
set -euo pipefail

if [ $# -ne 1 ] || [ -z "$1" ]; then
	echo "usage: $0 OUTDIR" >&2
	exit 2
fi

mkdir -p -- "$1"
OUT=$(cd -- "$1" && pwd -P)
OPENSSL=${OPENSSL:-openssl}

# Leaves of ca: name, serial (hex as openssl's serial file takes it), and
# the revocation reason ("" = valid, "none" = revoked without reason code).
LEAVES=(
	"leaf01 01 keyCompromise"
	"leaf02 02 "
	"leaf03 7F superseded"
	"leaf04 80 cessationOfOperation"
	"leaf05 FF "
	"leaf06 0100 affiliationChanged"
	"leaf07 1000 unspecified"
	"leaf08 DEADBEEF "
	"leaf09 00FF00FF00 CACompromise"
	"leaf10 7FFFFFFFFFFFFFFF "
	"leaf11 0123456789ABCDEF0123456789ABCDEF01 none"
	"leaf12 3A "
)
# Leaves of other; 02 repeats a serial of ca on purpose (another scope).
OTHER_LEAVES=(
	"other01 02 keyCompromise"
	"other02 0A "
	"other03 0B "
)

rm -rf -- "$OUT/ca.db" "$OUT/other.db" "$OUT/impostor.db" "$OUT/certs" "$OUT/csr"
mkdir -p -- "$OUT/certs" "$OUT/csr"

# One config serves both CAs: the section is picked with -name.
mkconf() {
	local name=$1
	mkdir -p -- "$OUT/$name.db/new"
	: >"$OUT/$name.db/index.txt"
	echo "unique_subject = no" >"$OUT/$name.db/index.txt.attr"
	echo 1000 >"$OUT/$name.db/crlnumber"
	cat >"$OUT/$name.cnf" <<EOF
[ ca ]
default_ca = ${name}_ca

[ ${name}_ca ]
dir              = $OUT/$name.db
database         = \$dir/index.txt
new_certs_dir    = \$dir/new
serial           = \$dir/serial
crlnumber        = \$dir/crlnumber
certificate      = $OUT/$name.pem
private_key      = $OUT/$name.key
default_md       = sha256
default_days     = 365
default_crl_days = 30
policy           = policy_any
x509_extensions  = leaf_ext
crl_extensions   = crl_ext
copy_extensions  = none
unique_subject   = no
preserve         = no
email_in_dn      = no

[ policy_any ]
commonName       = supplied
organizationName = optional

[ leaf_ext ]
basicConstraints       = critical,CA:FALSE
keyUsage               = critical,digitalSignature
subjectKeyIdentifier   = hash
authorityKeyIdentifier = keyid:always

[ crl_ext ]
authorityKeyIdentifier = keyid:always

[ req ]
distinguished_name = req_dn
prompt             = no
[ req_dn ]
CN = unused

[ v3_ca ]
basicConstraints       = critical,CA:TRUE
keyUsage               = critical,keyCertSign,cRLSign
subjectKeyIdentifier   = hash
authorityKeyIdentifier = keyid:always
EOF
}

mkca() {
	local name=$1 subj=$2
	mkconf "$name"
	"$OPENSSL" genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
		-out "$OUT/$name.key" 2>/dev/null
	"$OPENSSL" req -config "$OUT/$name.cnf" -new -x509 -key "$OUT/$name.key" \
		-subj "$subj" -days 3650 -sha256 -extensions v3_ca \
		-set_serial 1 -out "$OUT/$name.pem"
}

# issue CA NAME SERIAL: a leaf named NAME with serial SERIAL, signed by CA.
issue() {
	local ca=$1 name=$2 serial=$3
	echo "$serial" >"$OUT/$ca.db/serial"
	"$OPENSSL" req -config "$OUT/$ca.cnf" -new -key "$OUT/leaf.key" \
		-subj "/O=revcheck tests/CN=$name.test" -out "$OUT/csr/$name.csr"
	"$OPENSSL" ca -config "$OUT/$ca.cnf" -batch -notext -in "$OUT/csr/$name.csr" \
		-out "$OUT/certs/$name.pem" 2>/dev/null
}

# revoke CA NAME REASON: REASON "none" revokes without a reason code.
revoke() {
	local ca=$1 name=$2 reason=$3
	if [ "$reason" = none ]; then
		"$OPENSSL" ca -config "$OUT/$ca.cnf" -batch \
			-revoke "$OUT/certs/$name.pem" 2>/dev/null
	else
		"$OPENSSL" ca -config "$OUT/$ca.cnf" -batch \
			-revoke "$OUT/certs/$name.pem" -crl_reason "$reason" 2>/dev/null
	fi
}

gencrl() {
	local ca=$1 out=$2
	shift 2
	"$OPENSSL" ca -config "$OUT/$ca.cnf" -batch -gencrl -out "$out" "$@" 2>/dev/null
}

# canon HEX: lowercase, even length, leading zero bytes dropped (00 stays).
canon() {
	local h
	h=$(printf '%s' "$1" | tr 'A-F' 'a-f')
	[ $(( ${#h} % 2 )) -eq 1 ] && h="0$h"
	while [ ${#h} -gt 2 ] && [ "${h:0:2}" = 00 ]; do h=${h:2}; done
	printf '%s' "$h"
}

# rfc3339 YYMMDDHHMMSSZ (UTCTime as index.txt holds it).
rfc3339() {
	local t=$1
	printf '20%s-%s-%sT%s:%s:%sZ' "${t:0:2}" "${t:2:2}" "${t:4:2}" \
		"${t:6:2}" "${t:8:2}" "${t:10:2}"
}

# manifest CA LEAVES...: writes one line per leaf from the CA's index.txt.
manifest() {
	local ca=$1 entry name serial reason cs revinfo revdate rname st ri is
	shift
	for entry in "$@"; do
		read -r name serial reason <<<"$entry"
		cs=$(canon "$serial")
		if [ -z "${reason:-}" ]; then
			printf 'certs/%s.pem\t%s\tvalid\t-\t-\n' "$name" "$cs"
			continue
		fi
		# index.txt: status expiry revinfo serial file subject.
		revinfo=
		while IFS=$'\t' read -r st _ ri is _; do
			if [ "$st" = R ] && [ "$(canon "$is")" = "$cs" ]; then
				revinfo=$ri
				break
			fi
		done <"$OUT/$ca.db/index.txt"
		if [ -z "$revinfo" ]; then
			echo "$0: $name not revoked in $ca's database" >&2
			exit 1
		fi
		revdate=${revinfo%%,*}
		# openssl's -crl_reason names, as RFC 5280 spells them.
		case $reason in
		none) rname=- ;;
		CACompromise) rname=cACompromise ;;
		*) rname=$reason ;;
		esac
		printf 'certs/%s.pem\t%s\trevoked\t%s\t%s\n' "$name" "$cs" "$rname" \
			"$(rfc3339 "$revdate")"
	done
}

cd -- "$OUT"
"$OPENSSL" genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
	-out "$OUT/leaf.key" 2>/dev/null

mkca ca "/O=revcheck tests/CN=revcheck Test CA"
mkca other "/O=revcheck tests/CN=revcheck Other CA"
mkca impostor "/O=revcheck tests/CN=revcheck Test CA"

for entry in "${LEAVES[@]}"; do
	read -r name serial reason <<<"$entry"
	issue ca "$name" "$serial"
done
for entry in "${OTHER_LEAVES[@]}"; do
	read -r name serial reason <<<"$entry"
	issue other "$name" "$serial"
done

gencrl other "$OUT/other-crl-empty.pem"

for entry in "${LEAVES[@]}"; do
	read -r name serial reason <<<"$entry"
	[ -n "${reason:-}" ] && revoke ca "$name" "$reason"
done
for entry in "${OTHER_LEAVES[@]}"; do
	read -r name serial reason <<<"$entry"
	[ -n "${reason:-}" ] && revoke other "$name" "$reason"
done

gencrl ca "$OUT/crl.pem"
"$OPENSSL" crl -in "$OUT/crl.pem" -outform DER -out "$OUT/crl.der"
gencrl ca "$OUT/crl-expired.pem" -crl_lastupdate 20200101000000Z \
	-crl_nextupdate 20200102000000Z
gencrl other "$OUT/other-crl.pem"
"$OPENSSL" crl -in "$OUT/other-crl.pem" -outform DER -out "$OUT/other-crl.der"
cat "$OUT/crl.pem" "$OUT/other-crl.pem" >"$OUT/crl-bundle.pem"
gencrl impostor "$OUT/impostor-crl.pem"

manifest ca "${LEAVES[@]}" >"$OUT/certs.tsv"
manifest other "${OTHER_LEAVES[@]}" >"$OUT/other-certs.tsv"
rm -rf -- "$OUT/csr"
