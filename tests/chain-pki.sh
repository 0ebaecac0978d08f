#!/usr/bin/env bash
# chain-pki.sh - a root -> intermediate -> leaf PKI with CRLs, made with the real openssl CLI
#
# Usage: tests/chain-pki.sh OUTDIR
#
# Creates in OUTDIR (made if missing):
#   root.pem            self-signed root "Chain Root" (serial 01)
#   intgood.pem         intermediate CA (serial 10), not revoked
#   intbad.pem          intermediate CA (serial 11), revoked in root-crl.pem
#   intx.pem            intermediate CA (serial 12) whose CRL is made but
#                       meant to be left out of a build (an uncovered issuer)
#   leafok.pem          leaf of intgood (serial 20), not revoked
#   leafrev.pem         leaf of intgood (serial 21), revoked in intgood-crl.pem
#   leafbad.pem         leaf of intbad (serial 22), not revoked itself
#   leafx.pem           leaf of intx (serial 23)
#   NAME-crl.pem        the CRL of each CA (root, intgood, intbad, intx),
#                       nextUpdate in 30 days
#   NAME.key            each certificate's EC P-256 key
# CA certificates carry keyUsage keyCertSign and cRLSign. Needs no network.
set -euo pipefail

if [ $# -ne 1 ] || [ -z "$1" ]; then
	echo "usage: $0 OUTDIR" >&2
	exit 2
fi
mkdir -p -- "$1"
OUT=$(cd -- "$1" && pwd -P)
OPENSSL=${OPENSSL:-openssl}
cd -- "$OUT"

cat >ext.cnf <<'X'
[ca]
basicConstraints       = critical,CA:TRUE
keyUsage               = critical,keyCertSign,cRLSign
subjectKeyIdentifier   = hash
authorityKeyIdentifier = keyid:always
[leaf]
basicConstraints       = critical,CA:FALSE
keyUsage               = critical,digitalSignature
subjectKeyIdentifier   = hash
authorityKeyIdentifier = keyid:always
X

key() {
	"$OPENSSL" genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
		-out "$1.key" 2>/dev/null
}

# issue NAME ISSUER SERIAL EXTENSIONS: NAME.pem signed by ISSUER.
issue() {
	key "$1"
	"$OPENSSL" req -new -key "$1.key" -subj "/O=revcheck chain/CN=$1" \
		-out "$1.csr"
	"$OPENSSL" x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" \
		-set_serial "$3" -days 365 -sha256 -extfile ext.cnf \
		-extensions "$4" -out "$1.pem" 2>/dev/null
	rm -f "$1.csr"
}

# crl CA [SERIAL...]: CA-crl.pem revoking the serials (keyCompromise),
# through `openssl ca -gencrl` over an index that lists only them.
crl() {
	local ca=$1 s
	shift
	rm -rf "$ca.db"
	mkdir -p "$ca.db"
	: >"$ca.db/index.txt"
	echo 01 >"$ca.db/crlnumber"
	for s in "$@"; do
		printf 'R\t301231000000Z\t240101000000Z,keyCompromise\t%s\tunknown\t/CN=x\n' \
			"$s" >>"$ca.db/index.txt"
	done
	cat >"$ca.db/ca.cnf" <<X
[ca]
default_ca       = d
[d]
database         = $OUT/$ca.db/index.txt
crlnumber        = $OUT/$ca.db/crlnumber
certificate      = $OUT/$ca.pem
private_key      = $OUT/$ca.key
default_md       = sha256
default_crl_days = 30
crl_extensions   = ext
[ext]
authorityKeyIdentifier = keyid:always
X
	"$OPENSSL" ca -config "$ca.db/ca.cnf" -batch -gencrl \
		-out "$ca-crl.pem" 2>/dev/null
}

key root
"$OPENSSL" req -new -x509 -key root.key -subj "/O=revcheck chain/CN=Chain Root" \
	-days 3650 -sha256 -set_serial 1 \
	-addext basicConstraints=critical,CA:TRUE \
	-addext keyUsage=critical,keyCertSign,cRLSign -out root.pem
issue intgood root 0x10 ca
issue intbad root 0x11 ca
issue intx root 0x12 ca
issue leafok intgood 0x20 leaf
issue leafrev intgood 0x21 leaf
issue leafbad intbad 0x22 leaf
issue leafx intx 0x23 leaf
crl root 11
crl intgood 21
crl intbad
crl intx
