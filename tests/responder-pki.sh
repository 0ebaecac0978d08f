#!/usr/bin/env bash
# responder-pki.sh - a CA, a delegated OCSP responder, client and server certificates and a CRL, made with the real openssl CLI
#
# Usage: tests/responder-pki.sh OUTDIR [EXTRA]
#
# Creates in OUTDIR (made if missing):
#   ca.pem, ca.key          self-signed CA "revcheck OCSP CA" (keyCertSign,
#                           cRLSign), EC P-256
#   responder.pem, .key     delegated OCSP responder issued by the CA
#                           (extendedKeyUsage OCSPSigning, id-pkix-ocsp-nocheck,
#                           keyUsage digitalSignature), serial 0x0F00
#   good.pem, .key          client certificate (clientAuth), serial 0x1001
#   revoked.pem, .key       client certificate (clientAuth), serial 0x1002,
#                           revoked (keyCompromise) in crl.pem
#   server.pem, .key        server certificate for IP 127.0.0.1 (serverAuth),
#                           serial 0x2001
#   crl.pem                 the CA's CRL (nextUpdate in 30 days), revoking 0x1002
#   index.txt               the `openssl ca` database of everything above, for
#                           `openssl ocsp -index index.txt`; with EXTRA (a
#                           number), EXTRA more valid entries, serials
#                           0x10000000 .. 0x10000000 + EXTRA - 1 (no certificate
#                           files: OCSP asks about serials)
# Keys are unencrypted and mode 0600. Needs no network.
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ] || [ -z "$1" ]; then
	echo "usage: $0 OUTDIR [EXTRA]" >&2
	exit 2
fi
mkdir -p -- "$1"
OUT=$(cd -- "$1" && pwd -P)
EXTRA=${2:-0}
OPENSSL=${OPENSSL:-openssl}
cd -- "$OUT"

cat >ext.cnf <<'X'
[responder]
basicConstraints       = critical,CA:FALSE
keyUsage               = critical,digitalSignature
extendedKeyUsage       = OCSPSigning
noCheck                = ignored
subjectKeyIdentifier   = hash
authorityKeyIdentifier = keyid:always
[client]
basicConstraints       = critical,CA:FALSE
keyUsage               = critical,digitalSignature
extendedKeyUsage       = clientAuth
authorityKeyIdentifier = keyid:always
[server]
basicConstraints       = critical,CA:FALSE
keyUsage               = critical,digitalSignature
extendedKeyUsage       = serverAuth
subjectAltName         = IP:127.0.0.1
authorityKeyIdentifier = keyid:always
X

key() {
	(umask 077 && "$OPENSSL" genpkey -algorithm EC \
		-pkeyopt ec_paramgen_curve:P-256 -out "$1.key" 2>/dev/null)
}

# issue NAME SERIAL EXTENSIONS CN: NAME.pem signed by the CA.
issue() {
	key "$1"
	"$OPENSSL" req -new -key "$1.key" -subj "/O=revcheck OCSP test/CN=$4" \
		-out "$1.csr"
	"$OPENSSL" x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key \
		-set_serial "$2" -days 30 -sha256 -extfile ext.cnf \
		-extensions "$3" -out "$1.pem" 2>/dev/null
	rm -f "$1.csr"
}

# row NAME: NAME.pem's line of index.txt (valid).
row() {
	local serial end subj
	serial=$("$OPENSSL" x509 -in "$1.pem" -noout -serial | sed 's/^serial=//')
	end=$("$OPENSSL" x509 -in "$1.pem" -noout -enddate | sed 's/^notAfter=//')
	end=$(date -u -d "$end" +%y%m%d%H%M%SZ)
	subj=$("$OPENSSL" x509 -in "$1.pem" -noout -subject -nameopt compat |
		sed 's/^subject=//')
	printf 'V\t%s\t\t%s\tunknown\t%s\n' "$end" "$serial" "$subj"
}

key ca
"$OPENSSL" req -new -x509 -key ca.key -subj "/O=revcheck OCSP test/CN=revcheck OCSP CA" \
	-days 3650 -sha256 -set_serial 1 \
	-addext basicConstraints=critical,CA:TRUE \
	-addext keyUsage=critical,keyCertSign,cRLSign \
	-addext subjectKeyIdentifier=hash -out ca.pem
issue responder 0x0F00 responder "revcheck OCSP responder"
issue good 0x1001 client "good client"
issue revoked 0x1002 client "revoked client"
issue server 0x2001 server 127.0.0.1

# The database: the certificates above, 0x1002 revoked, and EXTRA more.
{
	row responder
	row good
	row revoked | awk -F'\t' -v OFS='\t' -v t="$(date -u +%y%m%d%H%M%SZ)" \
		'{ $1 = "R"; $3 = t ",keyCompromise"; print }'
	row server
	if [ "$EXTRA" -gt 0 ]; then
		end=$(date -u -d '+30 days' +%y%m%d%H%M%SZ)
		awk -v n="$EXTRA" -v e="$end" 'BEGIN {
			for (i = 0; i < n; i++)
				printf "V\t%s\t\t%X\tunknown\t/O=revcheck OCSP test/CN=extra %d\n",
				    e, 268435456 + i, i }'
	fi
} >index.txt
echo 'unique_subject = no' >index.txt.attr
echo 01 >crlnumber
cat >ca.cnf <<X
[ca]
default_ca       = d
[d]
database         = $OUT/index.txt
crlnumber        = $OUT/crlnumber
certificate      = $OUT/ca.pem
private_key      = $OUT/ca.key
default_md       = sha256
default_crl_days = 30
crl_extensions   = crlext
[crlext]
authorityKeyIdentifier = keyid:always
X
"$OPENSSL" ca -config ca.cnf -batch -gencrl -out crl.pem 2>/dev/null
