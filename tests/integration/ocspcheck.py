#!/usr/bin/env python3
# ocspcheck.py - checks an OCSP response field by field with python3-cryptography, an independent parser
#
# ocspcheck.py RESP.der --responder RESPONDER.pem [--request REQ.der]
#     [--status good|revoked|unknown | --error malformedRequest|...]
#     [--serial HEX] [--hash sha1|sha256] [--reason NAME]
#     [--revoked-at UNIX] [--this-update UNIX] [--next-max UNIX] [--no-nonce]
# Prints "ok" and exits 0 when every given expectation holds and the
# signature verifies with the responder certificate's public key; prints
# what differs and exits 1 otherwise. With --request, the response's
# CertID (serial, hash algorithm, issuer name and key hashes) must be the
# request's, and its nonce the request's nonce (none when it has none).
import argparse
import datetime
import sys

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.x509 import ocsp

ap = argparse.ArgumentParser()
ap.add_argument("resp")
ap.add_argument("--responder", required=True)
ap.add_argument("--request")
ap.add_argument("--status")
ap.add_argument("--error")
ap.add_argument("--serial")
ap.add_argument("--hash")
ap.add_argument("--reason")
ap.add_argument("--revoked-at", type=int)
ap.add_argument("--next-max", type=int)
ap.add_argument("--this-update", type=int)
ap.add_argument("--no-nonce", action="store_true")
a = ap.parse_args()

bad = []


def want(cond, what):
    if not cond:
        bad.append(what)


r = ocsp.load_der_ocsp_response(open(a.resp, "rb").read())
ERRORS = {
    "malformedRequest": ocsp.OCSPResponseStatus.MALFORMED_REQUEST,
    "internalError": ocsp.OCSPResponseStatus.INTERNAL_ERROR,
    "tryLater": ocsp.OCSPResponseStatus.TRY_LATER,
    "unauthorized": ocsp.OCSPResponseStatus.UNAUTHORIZED,
}
if a.error:
    want(r.response_status == ERRORS[a.error],
         "responseStatus %s, want %s" % (r.response_status.name, a.error))
    print("ok" if not bad else "; ".join(bad))
    sys.exit(0 if not bad else 1)

want(r.response_status == ocsp.OCSPResponseStatus.SUCCESSFUL,
     "responseStatus %s" % r.response_status.name)
if bad:
    print("; ".join(bad))
    sys.exit(1)

# The signature, over tbsResponseData, with the responder's key.
cert = x509.load_pem_x509_certificate(open(a.responder, "rb").read())
pub = cert.public_key()
try:
    if isinstance(pub, rsa.RSAPublicKey):
        pub.verify(r.signature, r.tbs_response_bytes, padding.PKCS1v15(),
                   r.signature_hash_algorithm)
    elif isinstance(pub, ec.EllipticCurvePublicKey):
        pub.verify(r.signature, r.tbs_response_bytes,
                   ec.ECDSA(r.signature_hash_algorithm))
    elif isinstance(pub, ed25519.Ed25519PublicKey):
        pub.verify(r.signature, r.tbs_response_bytes)
    else:
        bad.append("unexpected key type")
except Exception as e:  # InvalidSignature
    bad.append("signature does not verify: %r" % e)

st = r.certificate_status.name.lower()
if a.status:
    want(st == a.status, "certStatus %s, want %s" % (st, a.status))
if a.serial:
    want(r.serial_number == int(a.serial, 16),
         "serial %x, want %s" % (r.serial_number, a.serial))
if a.hash:
    want(r.hash_algorithm.name == a.hash,
         "CertID hash %s, want %s" % (r.hash_algorithm.name, a.hash))

now = datetime.datetime.now(datetime.timezone.utc)


def utc(name):
    """A time field as an aware datetime, whatever the library's age."""
    v = getattr(r, name + "_utc", None) if hasattr(r, name + "_utc") else None
    if v is None:
        v = getattr(r, name)
        if v is not None:
            v = v.replace(tzinfo=datetime.timezone.utc)
    return v


tu, nu = utc("this_update"), utc("next_update")
want(tu <= now + datetime.timedelta(minutes=5), "thisUpdate %s in the future" % tu)
if a.this_update is not None:
    want(int(tu.timestamp()) == a.this_update,
         "thisUpdate %s, want %d" % (tu, a.this_update))
if nu is not None:
    want(nu > tu, "nextUpdate %s not after thisUpdate %s" % (nu, tu))
if a.next_max is not None:
    want(nu is not None and nu.timestamp() <= a.next_max,
         "nextUpdate %s later than %d" % (nu, a.next_max))
want(utc("produced_at") <= now + datetime.timedelta(minutes=1), "producedAt in the future")

if st == "revoked":
    if a.revoked_at is not None:
        rt = utc("revocation_time")
        want(int(rt.timestamp()) == a.revoked_at,
             "revocationTime %s, want %d" % (rt, a.revoked_at))
    if a.reason:
        got = r.revocation_reason.value if r.revocation_reason else None
        want(got == a.reason, "reason %s, want %s" % (got, a.reason))

nonce = None
for ext in r.extensions:
    if isinstance(ext.value, x509.OCSPNonce):
        nonce = ext.value.nonce
if a.no_nonce:
    want(nonce is None, "a nonce in the response")
if a.request:
    q = ocsp.load_der_ocsp_request(open(a.request, "rb").read())
    want(r.serial_number == q.serial_number, "serial differs from the request's")
    want(r.hash_algorithm.name == q.hash_algorithm.name, "hash differs from the request's")
    want(r.issuer_key_hash == q.issuer_key_hash, "issuerKeyHash differs")
    want(r.issuer_name_hash == q.issuer_name_hash, "issuerNameHash differs")
    qn = None
    for ext in q.extensions:
        if isinstance(ext.value, x509.OCSPNonce):
            qn = ext.value.nonce
    want(nonce == qn, "nonce %r, request's %r" % (nonce, qn))

print("ok" if not bad else "; ".join(bad))
sys.exit(0 if not bad else 1)
