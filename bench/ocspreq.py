#!/usr/bin/python3
"""ocspreq.py - OCSP requests for bench/ocsp.sh, and pre-signed answers fetched from a responder

  ocspreq.py template CA.pem SERIAL
      prints the hex of a DER OCSPRequest (RFC 6960: one CertID, SHA-1
      hashes of CA.pem's name and key, no nonce, no extensions) for SERIAL
      (hex or decimal, 0x800000 .. 0x7fffffff: a 4-octet INTEGER, the
      request's last 4 octets, which bench/ocsp.lua replaces).
  ocspreq.py fetch URL CA.pem FIRST COUNT OUT
      POSTs the requests for serials FIRST .. FIRST + COUNT - 1 to URL and
      writes OUT: the base64 of each answer, one a line (CFSSL ocspserve's
      -responses file); fails on an answer that is not HTTP 200
      application/ocsp-response.
"""
import base64
import hashlib
import sys
import urllib.request

from cryptography import x509
from cryptography.hazmat.primitives import serialization


def der_len(n):
    if n < 0x80:
        return bytes([n])
    b = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(b)]) + b


def tlv(tag, body):
    return bytes([tag]) + der_len(len(body)) + body


def der_read(buf, off):
    """(tag, body start, body end) of the TLV at off."""
    tag, n = buf[off], buf[off + 1]
    off += 2
    if n & 0x80:
        k = n & 0x7F
        n = int.from_bytes(buf[off:off + k], "big")
        off += k
    return tag, off, off + n


def issuer_hashes(ca_pem):
    ca = x509.load_pem_x509_certificate(open(ca_pem, "rb").read())
    name_hash = hashlib.sha1(ca.subject.public_bytes()).digest()
    spki = ca.public_key().public_bytes(serialization.Encoding.DER,
                                        serialization.PublicFormat.SubjectPublicKeyInfo)
    _, s, _ = der_read(spki, 0)           # SubjectPublicKeyInfo
    _, _, e = der_read(spki, s)           # AlgorithmIdentifier
    _, bs, be = der_read(spki, e)         # BIT STRING: unused-bits octet, key
    key_hash = hashlib.sha1(spki[bs + 1:be]).digest()
    return name_hash, key_hash


def request(name_hash, key_hash, serial):
    sha1 = tlv(0x30, tlv(0x06, bytes.fromhex("2b0e03021a")) + b"\x05\x00")
    sb = serial.to_bytes(serial.bit_length() // 8 + 1, "big")  # a leading 0 keeps it positive
    while len(sb) > 1 and sb[0] == 0 and sb[1] < 0x80:
        sb = sb[1:]
    certid = tlv(0x30, sha1 + tlv(0x04, name_hash) + tlv(0x04, key_hash) + tlv(0x02, sb))
    return tlv(0x30, tlv(0x30, tlv(0x30, tlv(0x30, certid))))


def template(ca_pem, serial):
    s = int(serial, 0)
    if not 0x800000 <= s <= 0x7FFFFFFF:
        sys.exit("template: serial out of the 4-octet range")
    nh, kh = issuer_hashes(ca_pem)
    print(request(nh, kh, s).hex())


def fetch(url, ca_pem, first, count, out):
    nh, kh = issuer_hashes(ca_pem)
    lines = []
    start = int(first, 0)
    for s in range(start, start + int(count)):
        req = urllib.request.Request(url, data=request(nh, kh, s), headers={
            "Content-Type": "application/ocsp-request"})
        with urllib.request.urlopen(req, timeout=10) as r:
            body = r.read()
            ctype = r.headers.get("Content-Type", "")
            if r.status != 200 or ctype != "application/ocsp-response":
                sys.exit("fetch: HTTP %d %s" % (r.status, ctype))
        lines.append(base64.b64encode(body).decode())
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    a = sys.argv[1:]
    if len(a) == 3 and a[0] == "template":
        template(*a[1:])
    elif len(a) == 6 and a[0] == "fetch":
        fetch(*a[1:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
