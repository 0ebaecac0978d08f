#!/usr/bin/env python3
# jwtdict.py - writes tests/fuzz/jwt.dict: the JSON of JWT headers and
# claims as base64url at each of the three byte alignments, since a token
# carries its JSON only in base64url. Run from the top directory.
import base64

def b64(b):
	return base64.urlsafe_b64encode(b).rstrip(b"=").decode()

def aligned(frag):
	"""frag's base64url at the 3 alignments: the chars it alone decides."""
	out = []
	for skip in range(3):
		f = frag[skip:]
		f = f[:len(f) - len(f) % 3]
		if len(f) >= 3:
			out.append(b64(f))
	return out

algs = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256",
    "ES384", "ES512", "EdDSA", "HS256", "HS384", "HS512", "none", "None",
    "ES256K", "Ed25519"]
kids = ["rsa-1", "rsa-rs256", "p256-1", "p384-1", "p521-1", "ed-1", "b-p256"]
frags = [b'{"alg":"%s"' % a.encode() for a in algs]
frags += [b'"kid":"%s"' % k.encode() for k in kids]
frags += [b'"typ":"JWT"', b'"crit":["exp"]', b'"crit":[]', b'"cty":"JWT"',
    b'"enc":"A256GCM"', b'"jku":"https://a.example/jwks"',
    b'"iss":"https://a.example"', b'"iss":"https://b.example"',
    b'"iss":"default"', b'"iss":"x509:', b'"iss":"sub:', b'"iss":"sid:',
    b'"iss":""', b'"iss":null', b'"iss":1', b'"jti":"jti-1"', b'"jti":""',
    b'"jti":1', b'"jti":null', b'"sub":"user-1"', b'"sid":"s-1"',
    b'"aud":"api"', b'"aud":["api","other"]', b'"aud":[]', b'"aud":["x",1]',
    b'"exp":1700003600', b'"exp":1.5e9', b'"exp":-1', b'"exp":1e300',
    b'"exp":"1700003600"', b'"exp":253402300800', b'"nbf":1699999990',
    b'"nbf":1e20', b'"iat":1699999990', b'"iat":1700000100',
    b'"exp":1700000000', b'"exp":1699999970', b'"exp":1699999971',
    b'{}', b'{"', b'":"', b'","', b'"}', b'":', b',"', b'":[', b'],"',
    b'\\u0000', b'\\ud800', b'\\"', b'":true', b'":false', b'":null',
    b'":{}', b'":[]', b' ', b'\t']
seen = set()
with open("tests/fuzz/jwt.dict", "w") as fp:
	fp.write("# jwt.dict - libFuzzer dictionary for fuzz_jwt (written by "
	    "tests/fuzz/jwtdict.py).\n# JSON fragments of JWT headers and "
	    "claims, base64url at each alignment,\n# then the raw separators "
	    "and whole parts.\n")
	for f in frags:
		for t in aligned(f):
			if t not in seen:
				seen.add(t)
				fp.write('"%s"\n' % t)
	for raw in [".", "..", "=", "==", "+", "/", "-", "_", "eyJ", "e30",
	    "bnVsbA", "W10", "IiI", "MQ", "eyJhbGciOiJub25lIn0",
	    "eyJhbGciOiJIUzI1NiJ9", "eyJhbGciOiJIUzI1NiIsImNyaXQiOlsiZXhwIl19",
	    "eyJpc3MiOiJodHRwczovL2EuZXhhbXBsZSJ9", "AAAA", "____", "----"]:
		fp.write('"%s"\n' % raw)
