#!/usr/bin/env bash
# it_revcheckd.sh - revcheckd end to end: every endpoint, CRL certs, JWTs, refusals, staleness, reloads
#
# Starts the real daemon on a free loopback port, builds filters with the
# real filterbuild from a CA and CRL made by tests/pki.sh (openssl ca), and
# talks HTTP to it with curl.
. "$(dirname "$0")/lib.sh"

FB() { "$FILTERBUILD" "$@"; }
vname() { printf 'v%020d' "$1"; }

# ---------------------------------------------------------------- data
bash "$RC_SRC/tests/pki.sh" "$T/pki" >/dev/null 2>&1
FB keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
FB keygen --out "$T/evil.pem" --pub "$T/evil.pub" >/dev/null
printf '# revoked tokens\ntok-rev-1\ntok-rev-2\n' >"$T/tokens.txt"
cat >"$T/tokens.json" <<'EOF'
[{"id": "tok-rev-3", "reason": "keyCompromise", "revoked_at": "2026-01-02T03:04:05Z"},
 {"id": "jti-rev", "scope": "https://issuer.example", "reason": "superseded"}]
EOF
F=$T/filters
S=$T/state
mkdir -p "$S" "$F"
build() {	# build VERSION [extra filterbuild args]: publish into $F
	local v=$1
	shift
	FB build --key "$T/key.pem" --out "$F" --version "$v" --keep 20 \
	    --issuer "$T/pki/ca.pem" --quiet "$@" \
	    "$T/tokens.txt" "$T/tokens.json" "$T/pki/crl.pem"
}
build_into() {	# build_into DIR VERSION KEY [args]: a pair elsewhere
	local d=$1 v=$2 k=$3
	shift 3
	FB build --key "$k" --out "$d" --version "$v" --quiet "$@" \
	    "$T/tokens.txt" "$T/tokens.json"
}

# ---------------------------------------------------------------- flags
cat >"$T/good.json" <<EOF
// a comment
{ "filter_dir": "$F", "trusted_key": ["$T/key.pub"], "state_dir": "$S",
  "max_age": "1h" /* inline */ }
EOF
out=$("$REVCHECKD" -c "$T/good.json" --check-config 2>&1) && rc=0 || rc=$?
rc_expect_eq "$rc:$out" "0:configuration OK" "--check-config on a good file"
printf '{ "filter_dir": "%s", "trusted_key": "%s", "max_batchh": 5 }\n' \
    "$F" "$T/key.pub" >"$T/bad.json"
out=$("$REVCHECKD" -c "$T/bad.json" --check-config 2>&1) && rc=0 || rc=$?
rc_expect_eq "$rc" 1 "--check-config on a bad key exits 1"
rc_expect_match "$out" "max_batchh" "--check-config names the bad key"
out=$("$REVCHECKD" --filter-dir "$F" --trusted-key "$T/missing.pub" \
    --check-config 2>&1) && rc=0 || rc=$?
rc_expect_eq "$rc" 1 "--check-config with a missing key file exits 1"
rc_expect_match "$out" "trusted_key" "--check-config names trusted_key"
out=$("$REVCHECKD" --filter-dir "$F" --trusted-key "$T/key.pub" \
    --max-age soon --check-config 2>&1) && rc=0 || rc=$?
rc_expect_eq "$rc" 2 "a bad flag value is a usage error: exit 2"
rc_expect_match "$out" "max-age" "the bad flag is named"
out=$("$REVCHECKD" --version) && rc_expect_match "$out" "^revcheckd [0-9]" "--version"
out=$("$REVCHECKD" --help) && rc_expect_match "$out" "--trusted-key" "--help"

# ---------------------------------------------------------------- no filter yet
# Tokens here are unsigned: this test is about revocation answers, so
# the daemons run revocation-only (it_jwt.sh covers verification).
DARGS=(--filter-dir "$F" --trusted-key "$T/key.pub" --state-dir "$S"
    --max-batch 5 --max-body 65536 --poll-interval 1
    --token-verification revocation-only)
rc_start A "${DARGS[@]}"
U=$A_URL
rc_curl "$U/healthz"; rc_expect_status 200 "healthz without a filter"
rc_curl "$U/readyz"; rc_expect_status 503 "readyz without a filter"
rc_expect_json error no_filter
rc_curl "$U/v1/check?id=x"; rc_expect_status 503 "check without a filter"
rc_expect_json error no_filter
rc_expect_match "$(rc_header Retry-After)" '^[0-9]+$' "Retry-After on no_filter"
rc_curl "$U/v1/status"; rc_expect_status 200
rc_expect_json filter null "status without a filter"

build 1
rc_wait_version "$U" 1 || rc_fail "version 1 was not picked up"
rc_curl "$U/readyz"; rc_expect_status 200 "readyz once loaded"

# ---------------------------------------------------------------- GET checks
rc_curl "$U/v1/check?id=tok-rev-1"
rc_expect_status 200
rc_expect_json status revoked "revoked token"
rc_expect_json source authoritative
rc_expect_json filter_version 1
rc_expect_eq "$(rc_header X-Revcheck-Filter-Version)" 1 "version header"
rc_curl "$U/v1/check?id=tok-rev-3&scope=default"
rc_expect_json reason keyCompromise "reason from a JSON list"
rc_expect_json revoked_at 2026-01-02T03:04:05Z "revoked_at from a JSON list"
rc_curl "$U/v1/check?id=tok-clean"
rc_expect_json status not_revoked "clean token"
rc_curl "$U/v1/check?id=tok-rev-1&scope=unknown-issuer"
rc_expect_json status not_covered "uncovered scope"
rc_curl "$U/v1/check?id=%3Cscript%3E%22&scope=unknown-issuer"
rc_expect_status 200 "odd bytes in an id"
rc_expect_match "$RC_BODY" '\\u003cscript\\u003e\\"' "id escaped in the answer"
rc_curl "$U/v1/check"; rc_expect_status 400 "missing id"
rc_expect_json error bad_request
rc_curl "$U/v1/check?id=x&scope=bad%20scope"; rc_expect_status 400 "bad scope"
rc_curl "$U/v1/check?id=zz&scope=x509:$(printf '%064d' 0)"
rc_expect_status 400 "non-hex serial in an x509 scope"

# ---------------------------------------------------------------- certificates
while IFS=$'\t' read -r file serial status reason _; do
	body=$(rc_json_body cert "$T/pki/$file")
	rc_curl -H 'Content-Type: application/json' --data-binary "@$body" \
	    "$U/v1/check"
	rc_expect_status 200 "$file"
	rc_expect_json id "$serial" "$file id"
	if [ "$status" = revoked ]; then
		rc_expect_json status revoked "$file revoked"
		[ "$reason" = - ] || rc_expect_json reason "$reason" "$file reason"
	else
		rc_expect_json status not_revoked "$file not revoked"
	fi
done <"$T/pki/certs.tsv"
body=$(rc_json_body cert "$T/pki/certs/other01.pem")
rc_curl -H 'Content-Type: application/json' --data-binary "@$body" "$U/v1/check"
rc_expect_json status not_covered "a certificate of another CA"
printf '{"cert": "-----BEGIN CERTIFICATE-----\\nAAAA\\n-----END CERTIFICATE-----\\n"}' >"$T/badcert.json"
rc_curl -H 'Content-Type: application/json' --data-binary "@$T/badcert.json" "$U/v1/check"
rc_expect_status 400 "a PEM that is no certificate"

# ---------------------------------------------------------------- tokens
JWT_REV=$(rc_jwt "" tok-rev-2)
JWT_OK=$(rc_jwt "" tok-fine)
JWT_ISS_REV=$(rc_jwt https://issuer.example jti-rev)
JWT_UNCOV=$(rc_jwt https://nobody.example jti-rev)
for case in "$JWT_REV revoked" "$JWT_OK not_revoked" "$JWT_ISS_REV revoked" \
    "$JWT_UNCOV not_covered"; do
	set -- $case
	printf '{"token": "%s"}' "$1" >"$T/tok.json"
	rc_curl -H 'Content-Type: application/json' --data-binary "@$T/tok.json" "$U/v1/check"
	rc_expect_json status "$2" "JWT -> $2"
done
printf '{"token": "e30.e30.x"}' >"$T/tok.json"
rc_curl -H 'Content-Type: application/json' --data-binary "@$T/tok.json" "$U/v1/check"
rc_expect_status 400 "a JWT without jti"
printf '{"id": "tok-rev-1", "scope": "default"}' >"$T/id.json"
rc_curl -H 'Content-Type: application/json; charset=utf-8' --data-binary "@$T/id.json" "$U/v1/check"
rc_expect_json status revoked "POST {id, scope}"

# ---------------------------------------------------------------- batches
python3 - "$T/pki/certs/leaf01.pem" "$JWT_OK" >"$T/batch.json" <<'PY'
import json, sys
print(json.dumps({"items": [{"id": "tok-rev-1"}, {"cert": open(sys.argv[1]).read()},
    {"token": sys.argv[2]}, {"id": 5}, {"id": "x", "scope": "nowhere"}]}))
PY
rc_curl -H 'Content-Type: application/json' --data-binary "@$T/batch.json" "$U/v1/check"
rc_expect_status 200 "batch"
rc_expect_json results.0.status revoked "batch item 0"
rc_expect_json results.1.status revoked "batch item 1 (cert)"
rc_expect_json results.1.reason keyCompromise
rc_expect_json results.2.status not_revoked "batch item 2 (token)"
rc_expect_json results.3.error bad_request "batch item 3 is an error in its slot"
rc_expect_json results.4.status not_covered "batch item 4"
rc_expect_json filter_version 1
echo '{"items": [{"id":"a"},{"id":"b"},{"id":"c"},{"id":"d"},{"id":"e"},{"id":"f"}]}' >"$T/big.json"
rc_curl -H 'Content-Type: application/json' --data-binary "@$T/big.json" "$U/v1/check"
rc_expect_status 413 "batch over --max-batch"
rc_expect_json error payload_too_large
echo '{"items": []}' >"$T/empty.json"
rc_curl -H 'Content-Type: application/json' --data-binary "@$T/empty.json" "$U/v1/check"
rc_expect_json results "[]" "an empty batch"

# ---------------------------------------------------------------- errors
head -c 70000 /dev/zero | tr '\0' 'a' >"$T/huge"
rc_curl -H 'Content-Type: application/json' --data-binary "@$T/huge" "$U/v1/check"
rc_expect_status 413 "body over --max-body (Content-Length)"
rc_curl -H 'Content-Type: application/json' -H 'Transfer-Encoding: chunked' \
    --data-binary "@$T/huge" "$U/v1/check"
rc_expect_status 413 "chunked body over --max-body"
rc_curl -H 'Content-Type: application/json' --data-binary '{"id": ' "$U/v1/check"
rc_expect_status 400 "truncated JSON"
rc_curl -H 'Content-Type: application/json' --data-binary '{"id": "a"} x' "$U/v1/check"
rc_expect_status 400 "trailing garbage"
rc_curl -H 'Content-Type: application/json' --data-binary '["a"]' "$U/v1/check"
rc_expect_status 400 "not an object"
rc_curl -H 'Content-Type: application/json' --data-binary $'{"id": "\xff"}' "$U/v1/check"
rc_expect_status 400 "invalid UTF-8"
rc_curl -H 'Content-Type: text/plain' --data-binary '{"id": "a"}' "$U/v1/check"
rc_expect_status 415 "wrong Content-Type"
rc_expect_json error unsupported_media_type
rc_curl -X POST "$U/v1/check"
rc_expect_status 415 "POST without a Content-Type"
rc_curl -X DELETE "$U/v1/check"
rc_expect_status 405 "DELETE /v1/check"
rc_expect_json error method_not_allowed
rc_expect_eq "$(rc_header Allow)" "GET, HEAD, POST" "Allow header"
rc_curl -X POST -H 'Content-Type: application/json' -d '{}' "$U/healthz"
rc_expect_status 405 "POST /healthz"
rc_curl "$U/v2/nothing"
rc_expect_status 404 "unknown path"
rc_expect_json error not_found
rc_curl -I "$U/v1/check?id=tok-rev-1"
rc_expect_status 200 "HEAD /v1/check"

# ---------------------------------------------------------------- authz
rc_curl -H "Authorization: Bearer $JWT_REV" "$U/v1/authz"
rc_expect_status 403 "authz: revoked bearer"
rc_expect_eq "$(rc_header X-Revcheck-Status)" revoked "authz verdict header"
rc_expect_eq "$(rc_header X-Revcheck-Filter-Version)" 1 "authz version header"
rc_curl -H "Authorization: Bearer $JWT_OK" "$U/v1/authz"
rc_expect_status 200 "authz: clean bearer"
rc_curl -H "Authorization: Bearer $JWT_UNCOV" "$U/v1/authz"
rc_expect_status 403 "authz: not covered is denied by default"
rc_curl "$U/v1/authz"
rc_expect_status 401 "authz: no credential"
rc_curl -H "Authorization: Bearer garbage" "$U/v1/authz"
rc_expect_status 401 "authz: unreadable bearer"
enc() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(open(sys.argv[1]).read(), safe=""))' "$1"; }
rc_curl -H "X-SSL-Client-Cert: $(enc "$T/pki/certs/leaf01.pem")" "$U/v1/authz"
rc_expect_status 403 "authz: revoked client certificate"
rc_curl -H "X-SSL-Client-Cert: $(enc "$T/pki/certs/leaf02.pem")" "$U/v1/authz"
rc_expect_status 200 "authz: valid client certificate"
rc_curl -H "X-SSL-Client-Cert: $(enc "$T/pki/certs/other02.pem")" "$U/v1/authz"
rc_expect_status 403 "authz: certificate of another CA"
rc_curl -H "X-SSL-Client-Cert: $(enc "$T/pki/certs/leaf02.pem")" \
    -H "Authorization: Bearer $JWT_REV" "$U/v1/authz"
rc_expect_status 403 "authz: a clean cert never hides a revoked token"
rc_curl -H "Authorization: Bearer $JWT_REV" "$U/v1/authz/app/page?x=1"
rc_expect_status 403 "authz: Envoy-style prefix path"
rc_curl -X POST -H "Authorization: Bearer $JWT_OK" -d 'ignored' "$U/v1/authz"
rc_expect_status 200 "authz: any method (auth_request forwards it)"

# ---------------------------------------------------------------- admin
rc_curl "$U/v1/status"
rc_expect_json filter.version 1 "status version"
rc_expect_json filter.stale false "status stale"
rc_expect_json filter.signer "$(FB inspect --json "$F" | python3 -c 'import json,sys; print(json.load(sys.stdin)["signer"])')" "status signer"
rc_expect_match "$(rc_json filter.scopes)" 'x509:' "status lists the CRL scope"
rc_expect_match "$(rc_json counters.checks)" '^[1-9][0-9]*$' "checks counted"
rc_expect_match "$(rc_json counters.confirmed_revoked)" '^[1-9][0-9]*$' "revocations counted"
rc_expect_json reloads.accepted 1
rc_curl "$U/metrics"
rc_expect_status 200 "metrics"
rc_expect_match "$RC_BODY" $'revcheckd_filter_version 1\n' "metrics: version"
rc_expect_match "$RC_BODY" $'revcheckd_filter_stale 0\n' "metrics: not stale"
rc_expect_match "$RC_BODY" 'revcheckd_http_requests_total\{endpoint="check",code="200"\} [1-9]' "metrics: requests by endpoint and code"
rc_expect_match "$RC_BODY" 'revcheckd_reloads_total\{result="accepted"\} 1' "metrics: reloads"
rc_expect_match "$RC_BODY" 'revcheckd_observed_fp_ratio' "metrics: observed FP ratio"
rc_curl "$U/v1/filter"
etag=$(rc_header ETag)
rc_expect_status 200 "GET /v1/filter"
curl -s -o "$T/got.rcf" "$U/v1/filter"
rc_expect_eq "$etag" "\"$(sha256sum "$F/current/filter.rcf" | cut -d' ' -f1)\"" "ETag is the SHA-256"
cmp -s "$T/got.rcf" "$F/current/filter.rcf" && rc_ok "filter bytes" || rc_fail "filter bytes differ"
rc_expect_match "$(rc_header Cache-Control)" 'max-age=[0-9]+' "Cache-Control"
rc_expect_match "$(rc_header Last-Modified)" 'GMT$' "Last-Modified"
rc_curl -H "If-None-Match: $etag" "$U/v1/filter"
rc_expect_status 304 "If-None-Match"
rc_curl -H 'If-None-Match: "other"' "$U/v1/filter"
rc_expect_status 200 "If-None-Match with another tag"

# ---------------------------------------------------------------- refusals
build 2
rc_wait_version "$U" 2 || rc_fail "version 2 was not picked up"
# Each case's refusal is looked for after the previous case's: a case may
# be refused twice (its inotify event and the next poll), and a count of
# refusals would take that second line for the next case's.
audit_mark=$(rc_log_mark "$S/audit.log")
expect_refused() {	# expect_refused WHAT REGEX: still v2, audit names it
	local what=$1 re=$2
	rc_wait_log_since "$S/audit.log" "$audit_mark" "\"refused\".*$re" &&
	    rc_ok "$what refused and audited" || rc_fail "$what: no refusal matching /$re/ in the audit log"
	audit_mark=$(rc_log_mark "$S/audit.log")
	rc_curl "$U/v1/check?id=tok-rev-1"
	rc_expect_json filter_version 2 "$what: the old filter keeps answering"
	rc_expect_json status revoked "$what: and answers right"
}
# A rollback to version 1.
rc_publish_link "$F" "$(vname 1)"
expect_refused rollback 'rollback'
# A tampered copy of version 2 published as version 3.
cp -r "$F/$(vname 2)" "$F/$(vname 3)"
printf '\x55' | dd of="$F/$(vname 3)/filter.rcf" bs=1 seek=100 conv=notrunc status=none
rc_publish_link "$F" "$(vname 3)"
expect_refused "tampered file" 'v0+3/filter.rcf'
# Version 4's filter with version 2's table.
build_into "$T/other4" 4 "$T/key.pem"
mkdir "$F/$(vname 4)"
cp "$T/other4/$(vname 4)/filter.rcf" "$F/$(vname 4)/"
cp "$F/$(vname 2)/table.rct" "$F/$(vname 4)/"
rc_publish_link "$F" "$(vname 4)"
expect_refused "mismatched table" 'table'
# Signed by a key that is not trusted.
build_into "$T/other5" 5 "$T/evil.pem"
cp -r "$T/other5/$(vname 5)" "$F/"
rc_publish_link "$F" "$(vname 5)"
expect_refused "untrusted signer" 'signature'
# Truncated.
cp -r "$F/$(vname 2)" "$F/$(vname 6)"
truncate -s 50 "$F/$(vname 6)/filter.rcf"
rc_publish_link "$F" "$(vname 6)"
expect_refused "truncated file" 'v0+6/filter.rcf'
# Expired by the time it is offered.
build_into "$T/other7" 7 "$T/key.pem" --valid-for 1s
# Until version 7 has expired (its expires_at is the event).
exp7=$(FB inspect --json "$T/other7" | python3 -c 'import json,sys,datetime; print(int(datetime.datetime.strptime(json.load(sys.stdin)["expires_at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp()))')
while [ "$(date +%s)" -le "$exp7" ]; do sleep 0.1; done
cp -r "$T/other7/$(vname 7)" "$F/"
rc_publish_link "$F" "$(vname 7)"
expect_refused "expired filter" 'expired'
# Version 2 again with other bytes.
build_into "$T/other2" 2 "$T/key.pem"
mv "$T/other2/$(vname 2)/filter.rcf" "$F/$(vname 2)/filter.rcf"
mv "$T/other2/$(vname 2)/table.rct" "$F/$(vname 2)/table.rct"
rc_publish_link "$F" "$(vname 2)"
expect_refused "same version, other bytes" 'different bytes'
rc_curl "$U/v1/status"
rc_expect_json reloads.refused 7 "7 refusals counted"
rc_expect_json reloads.last.result refused
rc_curl "$U/metrics"
rc_expect_match "$RC_BODY" 'revcheckd_reloads_total\{result="refused"\} 7' "metrics: refusals"

# ---------------------------------------------------------------- SIGHUP
mv "$S/audit.log" "$S/audit.log.1"	# as logrotate would
m=$(rc_log_mark "$T/A.log")
kill -HUP "$A_PID"
# The re-verification of the version in service follows the audit log's
# reopening (version 2 has other bytes on disk now: it is taken out).
rc_wait_log_since "$T/A.log" "$m" 're-verified|re-verification on SIGHUP' &&
    rc_ok "SIGHUP logged" || rc_fail "SIGHUP not logged"
build 8
rc_wait_version "$U" 8 || rc_fail "version 8 was not loaded"
rc_wait_log "$S/audit.log" '"version":8' && rc_ok "audit log reopened on SIGHUP" ||
    rc_fail "audit log not reopened on SIGHUP"

# ---------------------------------------------------------------- reload under load
touch "$T/run"
worker() {	# repeated keep-alive bursts; one "code version" line per request
	local urls=() i
	for i in $(seq 1 40); do
		urls+=(-o /dev/null "$U/v1/check?id=tok-rev-$((i % 4))")
	done
	while [ -e "$T/run" ]; do
		curl -s --max-time 30 -w '%{http_code} %header{x-revcheck-filter-version}\n' "${urls[@]}" || echo "curl-failed -"
	done >"$T/worker.$1"
}
wpids=()
for w in 1 2 3 4; do worker "$w" & wpids+=($!); done
for v in 9 10 11 12 13; do
	build "$v"
	sleep 0.3	# the reloads spread over the load: the pace is the test
done
rc_wait_version "$U" 13 || rc_fail "version 13 was not loaded"
# Until a worker has been answered from version 13.
for ((i = 0; i < 300; i++)); do
	cat "$T"/worker.* | grep -q ' 13$' && break
	sleep 0.1
done
rm -f "$T/run"
wait "${wpids[@]}"
total=$(cat "$T"/worker.* | wc -l)
bad=$(cat "$T"/worker.* | grep -vc '^200 ' || true)
rc_expect_eq "$bad" 0 "no failed request among $total during 5 reloads"
down=0
for w in 1 2 3 4; do
	awk '{ if ($2 + 0 < last) bad = 1; last = $2 + 0 } END { exit bad }' "$T/worker.$w" || down=1
done
rc_expect_eq "$down" 0 "the filter version seen never goes down"
rc_expect_match "$(cat "$T"/worker.* | awk '{print $2}' | sort -un | tr '\n' ' ')" '13' "the workers saw the new versions"
[ "$total" -gt 100 ] && rc_ok "load ran ($total requests)" || rc_fail "too few requests ($total)"

# ---------------------------------------------------------------- staleness
build 14 --valid-for 2s
rc_wait_version "$U" 14 || rc_fail "version 14 was not loaded"
rc_curl "$U/v1/check?id=tok-rev-1"
rc_expect_status 200 "fresh before expiry"
exp=$(FB inspect --json "$F" | python3 -c 'import json,sys,datetime; print(int(datetime.datetime.strptime(json.load(sys.stdin)["expires_at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc).timestamp()))')
while [ "$(date +%s)" -lt "$exp" ]; do sleep 0.1; done
sleep 0.05
rc_curl "$U/v1/check?id=tok-fine"
rc_expect_status 503 "stale right after expiry, without reload"
rc_expect_json error filter_stale
rc_expect_match "$(rc_header Retry-After)" '^[0-9]+$' "Retry-After on filter_stale"
rc_curl -H "Authorization: Bearer $JWT_OK" "$U/v1/authz"
rc_expect_status 503 "authz refuses on a stale filter"
rc_curl "$U/readyz"; rc_expect_status 503 "readyz when stale"
rc_expect_json error filter_stale
rc_curl "$U/v1/status"
rc_expect_json filter.stale true "status shows stale"
rc_expect_json filter.stale_reason expired
rc_curl "$U/metrics"
rc_expect_match "$RC_BODY" $'revcheckd_filter_stale 1\n' "metrics: stale"
build 15
rc_wait_ready "$U" 30 && rc_ok "fresh again after a new build" || rc_fail "not ready after v15"

# ---------------------------------------------------------------- header trickle
# One header byte every 0.3 s is never idle, so libmicrohttpd's idle
# timeout alone would keep it forever; revcheckd drops it once the
# headers are not complete within --conn-timeout.
rc_start B --filter-dir "$F" --trusted-key "$T/key.pub" --state-dir "$S" \
    --conn-timeout 2
secs=$(python3 - "$B_PORT" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
start = time.monotonic()
msg = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 1000
for b in msg:
    if time.monotonic() - start > 15:
        break
    try:
        s.send(bytes([b]))
        s.settimeout(0.3)
        if s.recv(1) == b"":
            break
    except socket.timeout:
        continue
    except OSError:
        break
print(int(time.monotonic() - start))
PY
)
[ "$secs" -le 4 ] && rc_ok "a header trickle is dropped after ${secs}s" ||
    rc_fail "a header trickle lasted ${secs}s (conn-timeout 2)"
rc_curl "$B_URL/healthz"; rc_expect_status 200 "others are still served"
rc_curl "$B_URL/metrics"
rc_expect_match "$RC_BODY" 'revcheckd_slow_dropped_total [1-9]' "slow drop counted"
rc_stop B && rc_ok "B: exit 0" || rc_fail "B: non-zero exit"

# ---------------------------------------------------------------- restart
rc_stop A && rc_ok "SIGTERM: exit 0" || rc_fail "SIGTERM: non-zero exit"
rc_publish_link "$F" "$(vname 13)"
m=$(rc_log_mark "$S/audit.log")
rc_start A "${DARGS[@]}"
U=$A_URL
rc_wait_log_since "$S/audit.log" "$m" 'rollback: version 13' ||
    rc_fail "restart on a rolled-back dir: version 13 was not refused"
rc_curl "$U/healthz"; rc_expect_status 200 "restart on a rolled-back dir: healthz"
rc_curl "$U/readyz"; rc_expect_status 503 "restart on a rolled-back dir: not ready"
rc_curl "$U/v1/check?id=tok-rev-1"
rc_expect_json error no_filter "restart on a rolled-back dir: no_filter"
rc_expect_match "$(tail -n 1 "$S/audit.log")" 'rollback: version 13' "persisted high-water mark refuses 13"
build 16
rc_wait_ready "$U" 30 && rc_ok "a newer version loads after restart" || rc_fail "v16 not loaded"
rc_curl "$U/v1/check?id=tok-rev-1"
rc_expect_json filter_version 16
rc_stop A && rc_ok "SIGTERM again: exit 0" || rc_fail "second SIGTERM: non-zero exit"

rc_done
