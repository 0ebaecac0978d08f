#!/usr/bin/env bash
# demo.sh - what `make demo` runs: demo data, a signed filter, revcheckd on 127.0.0.1:8080
#
# Creates demo/ (gitignored) in the source tree: a signing key, a token
# revocation list, a small CA with a CRL made by `openssl ca` (through
# tests/pki.sh), the published filter and the daemon's state, plus request
# bodies for the example commands. Then runs revcheckd in the foreground
# (Ctrl-C stops it). Every run starts from a fresh demo/.
#
# Environment: REVCHECKD, FILTERBUILD (binaries; default bin/...),
# DEMO_LISTEN (default: 127.0.0.1:8080, or the next free port up to 8099
# when another process has it, said before anything else), DEMO_DIR
# (default demo). A DEMO_LISTEN whose port is taken stops the demo at
# once, naming it.
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
REVCHECKD=${REVCHECKD:-$SRC/bin/revcheckd}
FILTERBUILD=${FILTERBUILD:-$SRC/bin/filterbuild}
DEMO=${DEMO_DIR:-$SRC/demo}

# A port someone answers on is taken (checked, not reserved).
taken() { (exec 3<>"/dev/tcp/${1%:*}/${1##*:}") 2>/dev/null; }
if [ -n "${DEMO_LISTEN:-}" ]; then
	LISTEN=$DEMO_LISTEN
	if taken "$LISTEN"; then
		echo "demo: $LISTEN is taken by another process; choose a free one," \
		    "e.g. make demo DEMO_LISTEN=127.0.0.1:8181" >&2
		exit 1
	fi
else
	for p in $(seq 8080 8099); do
		taken "127.0.0.1:$p" || break
	done
	LISTEN=127.0.0.1:$p
	if taken "$LISTEN"; then
		echo "demo: ports 8080-8099 on 127.0.0.1 are all taken; set DEMO_LISTEN=127.0.0.1:PORT" >&2
		exit 1
	fi
	[ "$p" = 8080 ] || echo "demo: 127.0.0.1:8080 is taken by another process; using $LISTEN"
fi
URL="http://$LISTEN"

for b in "$REVCHECKD" "$FILTERBUILD"; do
	if [ ! -x "$b" ]; then
		echo "demo: $b is missing; run 'make' first (or 'make demo')" >&2
		exit 1
	fi
done

rm -rf "$DEMO"
mkdir -p "$DEMO/requests" "$DEMO/state"
DEMO=$(cd "$DEMO" && pwd)

echo "demo: signing key"
"$FILTERBUILD" keygen --out "$DEMO/signing.pem" --pub "$DEMO/signing.pub" >/dev/null

echo "demo: token revocation list"
cat >"$DEMO/revoked-tokens.txt" <<'EOF'
# token ids (JWT "jti") revoked in scope "default"
tok-revoked-1
tok-revoked-2
tok-revoked-3
EOF
cat >"$DEMO/revoked-tokens.json" <<'EOF'
[
  {"id": "sess-7f3a", "scope": "https://login.example", "reason": "keyCompromise",
   "revoked_at": "2026-01-15T10:00:00Z"}
]
EOF

echo "demo: a small CA and its CRL (openssl ca)"
bash "$SRC/tests/pki.sh" "$DEMO/pki" >/dev/null

echo "demo: building and signing the filter"
"$FILTERBUILD" build --key "$DEMO/signing.pem" --out "$DEMO/filters" \
    --valid-for 1d --issuer "$DEMO/pki/ca.pem" --quiet \
    "$DEMO/revoked-tokens.txt" "$DEMO/revoked-tokens.json" "$DEMO/pki/crl.pem"

# Request bodies. PEM has no quotes or backslashes, so awk can write the
# JSON string: each line followed by an escaped newline.
json_cert() {
	awk 'BEGIN { printf "{\"cert\": \"" } { printf "%s\\n", $0 } END { print "\"}" }' "$1"
}
revoked_pem=$(awk -F'\t' '$3 == "revoked" && $4 != "-" { print $1; exit }' "$DEMO/pki/certs.tsv")
revoked_reason=$(awk -F'\t' '$3 == "revoked" && $4 != "-" { print $4; exit }' "$DEMO/pki/certs.tsv")
valid_pem=$(awk -F'\t' '$3 == "valid" { print $1; exit }' "$DEMO/pki/certs.tsv")
json_cert "$DEMO/pki/$revoked_pem" >"$DEMO/requests/cert-revoked.json"
json_cert "$DEMO/pki/$valid_pem" >"$DEMO/requests/cert-valid.json"
json_cert "$DEMO/pki/certs/other02.pem" >"$DEMO/requests/cert-other-ca.json"

b64url() { printf '%s' "$1" | base64 -w0 | tr '+/' '-_' | tr -d '='; }
jwt() {	# an unsigned example JWT; revcheckd reads jti and iss only
	printf '%s.%s.%s' "$(b64url '{"alg":"none","typ":"JWT"}')" "$(b64url "$1")" \
	    "$(b64url demo-signature)"
}
jwt '{"sub":"alice","jti":"tok-revoked-2"}' >"$DEMO/requests/token-revoked.jwt"
jwt '{"sub":"bob","jti":"tok-fresh-99"}' >"$DEMO/requests/token-clean.jwt"
jwt '{"iss":"https://login.example","sub":"carol","jti":"sess-7f3a"}' \
    >"$DEMO/requests/token-issuer-revoked.jwt"
printf '{"token": "%s"}\n' "$(cat "$DEMO/requests/token-revoked.jwt")" \
    >"$DEMO/requests/token-revoked.json"
{
	printf '{"items": [\n  {"id": "tok-revoked-1"},\n  {"id": "tok-fresh-1"},\n'
	printf '  {"id": "x", "scope": "never-ingested"},\n'
	printf '  {"token": "%s"},\n' "$(cat "$DEMO/requests/token-issuer-revoked.jwt")"
	printf '  '
	json_cert "$DEMO/pki/$revoked_pem"
	printf ']}\n'
} >"$DEMO/requests/batch.json"

cat >"$DEMO/revcheckd.json" <<EOF
// demo configuration (see config/revcheckd.json for every key)
{
	"listen": "$LISTEN",
	"filter_dir": "$DEMO/filters",
	"trusted_key": ["$DEMO/signing.pub"],
	"state_dir": "$DEMO/state",
	// The demo's tokens are unsigned, so they are only looked up; a
	// real deployment lists its "issuers" instead (see config/).
	"token_verification": "revocation-only"
}
EOF
"$REVCHECKD" -c "$DEMO/revcheckd.json" --check-config

R=$DEMO/requests
J="-H 'Content-Type: application/json'"
cat <<EOF

revcheckd is starting on $URL (Ctrl-C stops it). In another terminal:

  # a revoked token id, and one that is not revoked (answered by the filter alone)
  curl -s '$URL/v1/check?id=tok-revoked-1'
  curl -s '$URL/v1/check?id=tok-fresh-42'

  # a scope the filter does not cover: never "not_revoked"
  curl -s '$URL/v1/check?id=tok-revoked-1&scope=someone-else'

  # certificates as PEM: revoked ($revoked_reason), valid, and one of a CA whose CRL was not ingested
  curl -s $J --data-binary @$R/cert-revoked.json $URL/v1/check
  curl -s $J --data-binary @$R/cert-valid.json $URL/v1/check
  curl -s $J --data-binary @$R/cert-other-ca.json $URL/v1/check

  # a JWT whose jti is revoked (the signature is not checked: revocation only)
  curl -s $J --data-binary @$R/token-revoked.json $URL/v1/check

  # a batch: answers in the same order
  curl -s $J --data-binary @$R/batch.json $URL/v1/check

  # as nginx auth_request would ask: 403 revoked, 200 clean
  curl -si -H "Authorization: Bearer \$(cat $R/token-revoked.jwt)" $URL/v1/authz
  curl -si -H "Authorization: Bearer \$(cat $R/token-clean.jwt)" $URL/v1/authz

  # operations
  curl -s $URL/v1/status
  curl -s $URL/metrics
  curl -s $URL/readyz

  # publish a new version: revcheckd picks it up within a second
  $FILTERBUILD build --key $DEMO/signing.pem --out $DEMO/filters --valid-for 1d \\
      --issuer $DEMO/pki/ca.pem $DEMO/revoked-tokens.txt $DEMO/revoked-tokens.json \\
      $DEMO/pki/crl.pem

EOF
exec "$REVCHECKD" -c "$DEMO/revcheckd.json"
