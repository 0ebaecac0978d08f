#!/usr/bin/python3
# mkvectors.py - makes the JWT/JWKS test vectors of tests/test_jwt.c with
# PyJWT and python3-cryptography (Debian's python3-jwt, python3-cryptography).
#
#   /usr/bin/python3 tests/vectors/jwt/mkvectors.py tests/vectors/jwt
#
# Writes a.jwks (issuer A's public keys), b.jwks (issuer B's), bad.jwks
# (keys revcheck must skip), hs.secret (issuer A's HS secret) and
# cases.tsv: "name<TAB>expected verdict<TAB>issuer<TAB>token" per line.
# test_jwt verifies every token at NOW against the issuers it sets up
# (A: iss https://a.example, audiences api and other, RS/PS/ES/EdDSA and
# HS256; B: https://b.example, ES256 only) and expects the verdict.
import base64, hashlib, hmac, json, sys, os
import jwt
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "integration"))
from jwtmint import public_jwk
from cryptography.hazmat.primitives.asymmetric import rsa, ec, ed25519
from cryptography.hazmat.primitives import serialization

NOW = 1700000000
EXP = NOW + 3600
A, B = "https://a.example", "https://b.example"
out = sys.argv[1]

def b64(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()

def jwk(pub, kid, alg=None, use="sig"):
    d = public_jwk(pub)
    d["kid"] = kid
    if alg:
        d["alg"] = alg
    if use:
        d["use"] = use
    return d

rsa_a = rsa.generate_private_key(public_exponent=65537, key_size=2048)
rsa_pinned = rsa.generate_private_key(public_exponent=65537, key_size=2048)
p256 = ec.generate_private_key(ec.SECP256R1())
p384 = ec.generate_private_key(ec.SECP384R1())
p521 = ec.generate_private_key(ec.SECP521R1())
ed = ed25519.Ed25519PrivateKey.generate()
p256_b = ec.generate_private_key(ec.SECP256R1())
hs_secret = os.urandom(32).hex().encode()

a_keys = [jwk(rsa_a.public_key(), "rsa-1"),
          jwk(rsa_pinned.public_key(), "rsa-rs256", alg="RS256"),
          jwk(p256.public_key(), "p256-1"),
          jwk(p384.public_key(), "p384-1"),
          jwk(p521.public_key(), "p521-1"),
          jwk(ed.public_key(), "ed-1")]
b_keys = [jwk(p256_b.public_key(), "b-p256")]

# Keys revcheck must skip, each for one reason, then one good key.
small = rsa.generate_private_key(public_exponent=65537, key_size=1024)
off = jwk(p256.public_key(), "off-curve")
yb = bytearray(base64.urlsafe_b64decode(off["y"] + "=="))
yb[-1] ^= 1
off["y"] = b64(bytes(yb))
bad_keys = [jwk(small.public_key(), "rsa-1024"),
            {"kty": "oct", "k": b64(b"0" * 32), "kid": "oct"},
            jwk(p256.public_key(), "enc", use="enc"),
            jwk(p256.public_key(), "alg-mismatch", alg="RS256"),
            off,
            {"kty": "EC", "crv": "P-256", "x": "AAAA", "y": "AAAA",
             "kid": "short"},
            {"kty": "OKP", "crv": "X25519", "x": b64(b"1" * 32),
             "kid": "x25519"},
            jwk(p256.public_key(), "good"),
            jwk(p384.public_key(), "good")]	# duplicate kid: skipped

def write(name, data):
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)

write("a.jwks", json.dumps({"keys": a_keys}, indent=1).encode() + b"\n")
write("b.jwks", json.dumps({"keys": b_keys}, indent=1).encode() + b"\n")
write("bad.jwks", json.dumps({"keys": bad_keys}, indent=1).encode() + b"\n")
write("hs.secret", hs_secret + b"\n")

def claims(**kw):
    c = {"iss": A, "sub": "user-1", "aud": "api", "jti": "jti-1",
         "iat": NOW - 10, "exp": EXP}
    c.update(kw)
    return {k: v for k, v in c.items() if v is not None}

def sign(key, alg, kid, c=None, headers=None):
    h = {"kid": kid} if kid else {}
    if headers:
        h.update(headers)
    return jwt.encode(c or claims(), key, algorithm=alg, headers=h)

def resign_hs(tok_claims, header, secret):
    """A token MACed by hand (PyJWT refuses a PEM as an HMAC key)."""
    si = b64(json.dumps(header).encode()) + "." + \
        b64(json.dumps(tok_claims).encode())
    mac = hmac.new(secret, si.encode(), hashlib.sha256).digest()
    return si + "." + b64(mac)

cases = []
def case(name, want, tok, iss="A"):
    cases.append((name, want, iss, tok))

for alg in ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512"):
    case("ok-" + alg.lower(), "valid", sign(rsa_a, alg, "rsa-1"))
case("ok-es256", "valid", sign(p256, "ES256", "p256-1"))
case("ok-es384", "valid", sign(p384, "ES384", "p384-1"))
case("ok-es512", "valid", sign(p521, "ES512", "p521-1"))
case("ok-eddsa", "valid", sign(ed, "EdDSA", "ed-1"))
case("ok-hs256", "valid", sign(hs_secret, "HS256", None))
case("ok-aud-array", "valid",
     sign(p256, "ES256", "p256-1", claims(aud=["x", "other"])))
case("ok-no-nbf-no-iat", "valid",
     sign(p256, "ES256", "p256-1", claims(iat=None)))
case("ok-within-leeway", "valid",
     sign(p256, "ES256", "p256-1", claims(exp=NOW - 20)))
case("ok-b", "valid", sign(p256_b, "ES256", "b-p256", claims(iss=B)), "B")
case("ok-pinned-rs256", "valid", sign(rsa_pinned, "RS256", "rsa-rs256"))

# The classic attacks.
case("alg-none", "algorithm_refused", jwt.encode(claims(), None,
     algorithm="none"))
good = sign(p256, "ES256", "p256-1")
case("sig-stripped", "bad_signature", good.rsplit(".", 1)[0] + ".")
flip = bytearray(base64.urlsafe_b64decode(good.rsplit(".", 1)[1] + "=="))
flip[5] ^= 1
case("sig-flipped", "bad_signature", good.rsplit(".", 1)[0] + "." +
     b64(bytes(flip)))
pem = rsa_a.public_key().public_bytes(serialization.Encoding.PEM,
    serialization.PublicFormat.SubjectPublicKeyInfo)
case("rs-to-hs-pubkey-secret", "bad_signature",
     resign_hs(claims(), {"alg": "HS256", "kid": "rsa-1"}, pem))
case("rs-to-hs-pubkey-secret-b", "algorithm_refused",
     resign_hs(claims(iss=B), {"alg": "HS256", "kid": "b-p256"},
     p256_b.public_key().public_bytes(serialization.Encoding.PEM,
     serialization.PublicFormat.SubjectPublicKeyInfo)), "B")
case("kid-of-other-issuer", "unknown_key",
     sign(p256_b, "ES256", "b-p256"))
case("kid-unknown", "unknown_key", sign(p256, "ES256", "nope"))
case("no-kid-many-keys", "unknown_key", sign(p256, "ES256", None))
case("alg-key-mismatch", "algorithm_refused",
     sign(p384, "ES384", "p256-1"))
case("rsa-key-es-alg", "algorithm_refused", sign(p256, "ES256", "rsa-1"))
case("pinned-alg-other", "algorithm_refused",
     sign(rsa_pinned, "PS256", "rsa-rs256"))
case("alg-not-allowed-b", "algorithm_refused",
     sign(rsa_a, "RS256", "b-p256", claims(iss=B)), "B")
case("expired", "expired", sign(p256, "ES256", "p256-1",
     claims(exp=NOW - 31)))
case("nbf-future", "not_yet_valid", sign(p256, "ES256", "p256-1",
     claims(nbf=NOW + 120)))
case("iat-future", "not_yet_valid", sign(p256, "ES256", "p256-1",
     claims(iat=NOW + 120)))
case("wrong-aud", "wrong_audience", sign(p256, "ES256", "p256-1",
     claims(aud="elsewhere")))
case("no-aud", "wrong_audience", sign(p256, "ES256", "p256-1",
     claims(aud=None)))
case("no-exp", "missing_claim", sign(p256, "ES256", "p256-1",
     claims(exp=None)))
case("exp-string", "missing_claim", sign(p256, "ES256", "p256-1",
     claims(exp="tomorrow")))
case("untrusted-iss", "untrusted_issuer", sign(p256, "ES256", "p256-1",
     claims(iss="https://evil.example")))
case("crit", "unknown_critical_header", sign(p256, "ES256", "p256-1",
     headers={"crit": ["exp"], "exp": EXP}))
case("hs-wrong-secret", "bad_signature", sign(b"x" * 32, "HS256", None))
case("es256-der-signature", "bad_signature", (lambda t: t.rsplit(".", 1)[0]
     + "." + b64(p256.sign(t.rsplit(".", 1)[0].encode(),
     ec.ECDSA(__import__("cryptography.hazmat.primitives.hashes",
     fromlist=["SHA256"]).SHA256()))))(good))

with open(os.path.join(out, "cases.tsv"), "w") as f:
    f.write("# made by mkvectors.py; verified at NOW=%d\n" % NOW)
    for c in cases:
        f.write("\t".join(c) + "\n")
