#!/usr/bin/env bash
# it_jwt_cutoff.sh - an issuer with subject and session cutoffs but no jti revoked: its revoked tokens answer revoked under authz_not_covered allow and deny
#
# Tokens are signed by PyJWT (jwtmint.py). Issuer C appears in the
# revocation list only through a subject cutoff and a session cutoff:
# filterbuild covers its token scope all the same (with no key), and
# revcheckd asks every key of a token (jti, sub and sid cutoffs) and
# answers the worst verdict. So a token of the cut-off subject or session
# is revoked (200 "revoked" from /v1/check, 403 from /v1/authz, active
# false from /v1/introspect), under authz_not_covered "allow" as under
# "deny", and a token of another subject is not_revoked. The daemon is
# checked against the filter of the filterbuild under test; to see the
# daemon's own rule alone, run it with FILTERBUILD of a builder that
# covered only the cutoff scopes: the revoked cases must still pass.
. "$(dirname "$0")/lib.sh"

C=https://c.example
M() { rc_jwtmint "$@"; }

"$FILTERBUILD" keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
M key p256 "$T/c.pem"
M jwks "$T/c.jwks" "$T/c.pem:c1"
head -c 24 /dev/urandom | base64 | tr -d '/+=' >"$T/gw.secret"
chmod 600 "$T/gw.secret"
T0=$(date -u +%Y-%m-%dT%H:%M:%SZ)
printf '[{"sub": "carol", "scope": "%s", "before": "%s"},
 {"sid": "sess-9", "scope": "%s", "before": "%s"}]\n' "$C" "$T0" "$C" "$T0" \
    >"$T/revoked.json"
mkdir -p "$T/f" "$T/sa" "$T/sd"
"$FILTERBUILD" build --key "$T/key.pem" --out "$T/f" --quiet "$T/revoked.json" ||
    rc_fail "filterbuild build"

conf() {	# conf STATE_DIR allow|deny
	printf '{"filter_dir": "%s", "trusted_key": "%s", "state_dir": "%s",
  "authz_not_covered": "%s",
  "issuers": [{"issuer": "%s", "jwks_file": "%s", "audiences": ["api"],
    "algorithms": ["ES256"]}],
  "introspection_clients": [{"id": "api", "secret_file": "%s"}]}\n' \
	    "$T/f" "$T/key.pub" "$1" "$2" "$C" "$T/c.jwks" "$T/gw.secret"
}
conf "$T/sa" allow >"$T/allow.json"
conf "$T/sd" deny >"$T/deny.json"
rc_start A -c "$T/allow.json" || rc_fail "allow: did not start"
rc_start D -c "$T/deny.json" || rc_fail "deny: did not start"
rc_wait_ready "$A_URL" 10 || rc_fail "allow: not ready"
rc_wait_ready "$D_URL" 10 || rc_fail "deny: not ready"

tok() {	# tok JTI SUB [EXTRA-MEMBERS]: issued a minute before T0
	M sign "$T/c.pem" ES256 c1 \
	    "{\"iss\":\"$C\",\"sub\":\"$2\",\"aud\":\"api\",\"jti\":\"$1\",\"iat\":\"now-60\",\"exp\":\"now+600\"${3:+,$3}}"
}
CUT_SUB=$(tok j-1 carol)
CUT_SID=$(tok j-2 dave '"sid":"sess-9"')
CLEAN=$(tok j-3 erin '"sid":"sess-1"')

for mode in allow:A deny:D; do
	m=${mode%%:*}
	url=$(eval "echo \$${mode#*:}_URL")
	for c in "subject cutoff:$CUT_SUB" "session cutoff:$CUT_SID"; do
		what="$m: ${c%%:*}"
		rc_curl -H 'Content-Type: application/json' \
		    --data-binary "{\"token\":\"${c#*:}\"}" "$url/v1/check"
		rc_expect_status 200 "check: $what: answered"
		rc_expect_json status revoked "check: $what: revoked"
		rc_expect_json reason "${c%%:*}" "check: $what: the cutoff is the reason"
		rc_curl -H 'Content-Type: application/json' \
		    --data-binary "{\"items\":[{\"token\":\"${c#*:}\"}]}" "$url/v1/check"
		rc_expect_json results.0.status revoked "batch: $what: revoked"
		rc_curl -H "Authorization: Bearer ${c#*:}" "$url/v1/authz"
		rc_expect_status 403 "authz: $what: 403"
		rc_expect_eq "$(rc_header X-Revcheck-Status)" revoked "authz: $what: revoked"
		rc_curl -u "api:$(cat "$T/gw.secret")" \
		    -H 'Content-Type: application/x-www-form-urlencoded' \
		    --data-urlencode "token=${c#*:}" "$url/v1/introspect"
		rc_expect_eq "$RC_BODY" '{"active":false}' "introspect: $what: inactive"
	done
	# The issuer's scope is covered, with no key: its other tokens are
	# proven not revoked, not merely not covered.
	rc_curl -H 'Content-Type: application/json' \
	    --data-binary "{\"token\":\"$CLEAN\"}" "$url/v1/check"
	rc_expect_json status not_revoked "check: $m: another subject is not_revoked"
	rc_curl -H "Authorization: Bearer $CLEAN" "$url/v1/authz"
	rc_expect_status 200 "authz: $m: another subject gets through"
	rc_expect_eq "$(rc_header X-Revcheck-Status)" not_revoked \
	    "authz: $m: another subject: not_revoked"
done

rc_stop A || rc_fail "allow: did not exit 0"
rc_stop D || rc_fail "deny: did not exit 0"
rc_done
