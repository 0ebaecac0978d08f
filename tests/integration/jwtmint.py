#!/usr/bin/python3
# jwtmint.py - keys, JWKS and JWTs for the integration tests, made by PyJWT
# (Debian's python3-jwt with python3-cryptography), so that revcheckd is
# checked against a real JWT library rather than against itself.
#
#   jwtmint.py key rsa|p256|p384|ed25519 OUT.pem
#   jwtmint.py jwks OUT.json KEY.pem:KID...    the public keys as a JWKS
#   jwtmint.py sign KEY.pem ALG KID CLAIMS [HEADER]   KID "-" for none
#   jwtmint.py hs SECRET-FILE ALG CLAIMS            HMAC, PyJWT
#   jwtmint.py none CLAIMS                          alg "none", no signature
#   jwtmint.py hs-pubkey PUB-KEY.pem KID CLAIMS      RS->HS confusion: HS256
#                                   MACed with the PEM public key as secret
#   jwtmint.py strip TOKEN                          the signature removed
#   jwtmint.py raw HEADER CLAIMS SIG-HEX            a token whose signature
#                                   is the bytes SIG-HEX (no key needed)
#   jwtmint.py sign-bytes KEY.pem ALG KID PAYLOAD-HEX   PyJWS signs the
#                                   payload bytes PAYLOAD-HEX as they are
#                                   (invalid UTF-8, say), "now+N" not replaced
#   jwtmint.py jwks-edit FILE KID MEMBERS           merges the JSON object
#                                   MEMBERS into key KID of FILE; null removes
#   jwtmint.py jwks-private FILE KEY.pem KID        appends KEY to FILE with
#                                   its private parameters (PyJWT's to_jwk
#                                   of the private key: a leaked key)
#
# CLAIMS and HEADER are JSON objects; in CLAIMS a string "now+N" or
# "now-N" becomes the NumericDate N seconds from now.
import base64, hashlib, hmac, json, re, sys, time
import jwt
from jwt.algorithms import RSAAlgorithm, ECAlgorithm, OKPAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa, ec, ed25519


def b64(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def claims(text):
    c = json.loads(text)
    now = int(time.time())
    for k, v in list(c.items()):
        m = isinstance(v, str) and re.fullmatch(r"now([+-]\d+)?", v)
        if m:
            c[k] = now + int(m.group(1) or 0)
    return c


def load(path):
    with open(path, "rb") as f:
        return serialization.load_pem_private_key(f.read(), None)


def public_jwk(pub):
    """The JWK of a public key (RSA, EC or OKP), as PyJWT writes it."""
    if isinstance(pub, rsa.RSAPublicKey):
        return json.loads(RSAAlgorithm.to_jwk(pub))
    if isinstance(pub, ec.EllipticCurvePublicKey):
        return json.loads(ECAlgorithm.to_jwk(pub))
    return json.loads(OKPAlgorithm.to_jwk(pub))


def main(a):
    cmd = a[0]
    if cmd == "key":
        k = {"rsa": lambda: rsa.generate_private_key(65537, 2048),
             "p256": lambda: ec.generate_private_key(ec.SECP256R1()),
             "p384": lambda: ec.generate_private_key(ec.SECP384R1()),
             "ed25519": ed25519.Ed25519PrivateKey.generate}[a[1]]()
        with open(a[2], "wb") as f:
            f.write(k.private_bytes(serialization.Encoding.PEM,
                    serialization.PrivateFormat.PKCS8,
                    serialization.NoEncryption()))
    elif cmd == "jwks":
        keys = []
        for spec in a[2:]:
            path, kid = spec.rsplit(":", 1)
            d = public_jwk(load(path).public_key())
            d.update({"kid": kid, "use": "sig"})
            keys.append(d)
        with open(a[1], "w") as f:
            json.dump({"keys": keys}, f, indent=1)
    elif cmd == "sign":
        hdr = json.loads(a[5]) if len(a) > 5 else {}
        if a[3] != "-":
            hdr["kid"] = a[3]
        print(jwt.encode(claims(a[4]), load(a[1]), algorithm=a[2],
                         headers=hdr))
    elif cmd == "sign-bytes":
        print(jwt.api_jws.PyJWS().encode(bytes.fromhex(a[4]), load(a[1]),
                                         algorithm=a[2],
                                         headers={"kid": a[3]}))
    elif cmd == "hs":
        with open(a[1], "rb") as f:
            secret = f.read().rstrip(b"\r\n")
        print(jwt.encode(claims(a[3]), secret, algorithm=a[2]))
    elif cmd == "none":
        print(jwt.encode(claims(a[1]), None, algorithm="none"))
    elif cmd == "hs-pubkey":
        pem = load(a[1]).public_key().public_bytes(
            serialization.Encoding.PEM,
            serialization.PublicFormat.SubjectPublicKeyInfo)
        si = b64(json.dumps({"alg": "HS256", "typ": "JWT",
                             "kid": a[2]}).encode()) + "." + \
            b64(json.dumps(claims(a[3])).encode())
        print(si + "." + b64(hmac.new(pem, si.encode(),
                                      hashlib.sha256).digest()))
    elif cmd == "strip":
        print(a[1].rsplit(".", 1)[0] + ".")
    elif cmd == "raw":
        print(b64(json.dumps(json.loads(a[1])).encode()) + "." +
              b64(json.dumps(claims(a[2])).encode()) + "." +
              b64(bytes.fromhex(a[3])))
    elif cmd == "jwks-edit":
        with open(a[1]) as f:
            s = json.load(f)
        for k in s["keys"]:
            if k.get("kid") == a[2]:
                for m, v in json.loads(a[3]).items():
                    if v is None:
                        k.pop(m, None)
                    else:
                        k[m] = v
        with open(a[1], "w") as f:
            json.dump(s, f, indent=1)
    elif cmd == "jwks-private":
        with open(a[1]) as f:
            s = json.load(f)
        k = load(a[2])
        d = json.loads({rsa.RSAPrivateKey: RSAAlgorithm,
                        ec.EllipticCurvePrivateKey: ECAlgorithm}.get(
            next(t for t in (rsa.RSAPrivateKey, ec.EllipticCurvePrivateKey,
                             ed25519.Ed25519PrivateKey) if isinstance(k, t)),
            OKPAlgorithm).to_jwk(k))
        d["kid"] = a[3]
        s["keys"].append(d)
        with open(a[1], "w") as f:
            json.dump(s, f, indent=1)
    else:
        sys.exit("jwtmint.py: unknown command " + cmd)


if __name__ == "__main__":
    main(sys.argv[1:])
