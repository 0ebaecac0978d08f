#!/bin/sh
# mkcerts.sh DIR - certificates for the fuzz_cert seed corpus, made with
# the openssl CLI: each extension revkey_from_cert reads (basicConstraints,
# CRL distribution points by URI, by directory name, relative to the CRL
# issuer, with reasons and cRLIssuer), other key types, serials at their
# edges (0, negative, 20 bytes) and names with several RDNs and strings.
set -eu
mkdir -p "$1"
d=$(cd "$1" && pwd)
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
cd "$w"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout ca.key -out ca.pem -subj '/C=DE/O=Fuzz CA/OU=Seeds/CN=Fuzz Root' \
    -days 3650 -addext 'basicConstraints=critical,CA:TRUE,pathlen:0' \
    -addext 'keyUsage=critical,keyCertSign,cRLSign' 2>/dev/null
leaf() {	# name serial keyopts subject extensions
	openssl req -new -newkey $3 -nodes -keyout k.pem -out r.pem \
	    -subj "$4" 2>/dev/null
	printf '%s\n' "$5" >ext.cnf
	openssl x509 -req -in r.pem -CA ca.pem -CAkey ca.key -set_serial "$2" \
	    -days 30 -extfile ext.cnf -out "$d/$1.pem" 2>/dev/null
	openssl x509 -in "$d/$1.pem" -outform DER -out "$d/$1.der"
}
leaf dp-uri 0x01 'ec -pkeyopt ec_paramgen_curve:P-256' '/CN=leaf dp-uri' \
    'crlDistributionPoints=URI:http://crl.example/ca.crl,URI:ldap://crl.example/cn=ca'
leaf dp-full 0x7fffffffffffffffffffffffffffffffffffffff \
    'ec -pkeyopt ec_paramgen_curve:P-384' '/DC=org/DC=example/O=Example/CN=leaf dp-full' \
    'crlDistributionPoints=dps
[dps]
fullname=URI:http://crl.example/a.crl
reasons=keyCompromise,CACompromise,superseded
CRLissuer=dirName:issuer_sect
[issuer_sect]
C=DE
O=Other CRL Issuer
CN=Indirect'
leaf dp-rel -1 'ed25519' '/C=FR/O=Example/CN=leaf dp-rel' \
    'crlDistributionPoints=dps
basicConstraints=critical,CA:FALSE
[dps]
relativename=rdn
reasons=affiliationChanged,cessationOfOperation,certificateHold,privilegeWithdrawn,AACompromise
[rdn]
CN=Partition 7'
leaf ca-sub 0 'rsa:2048' '/O=Example/OU=Unit One+OU=Unit Two/CN=Sub CA' \
    'basicConstraints=critical,CA:TRUE
keyUsage=critical,keyCertSign,cRLSign
crlDistributionPoints=URI:http://crl.example/root.crl
subjectKeyIdentifier=hash
authorityKeyIdentifier=keyid:always'
leaf crlissuer-only 0x00ff 'ed25519' '/CN=leaf crlissuer-only/emailAddress=a@example.org' \
    'crlDistributionPoints=dps
[dps]
CRLissuer=dirName:issuer_sect
[issuer_sect]
CN=Only The Issuer'
cat "$d/dp-full.pem" "$d/ca-sub.pem" ca.pem >"$d/chain-3.pem"
cp ca.pem "$d/ca-ec.pem"
