#!/usr/bin/env bash
# it_upstream.sh - an edge trusts its authority only over verified TLS and only from a filter at least as new as its own
#
# Two origins signed by one key: O1 serves filter version 1, O2 version 2,
# which also revokes tok-new. A real nginx terminates TLS in front of both
# with a certificate from a test CA made here with the openssl CLI.
#   - EB syncs version 2 (from O2) and asks O1 (still on version 1) about
#     positives: tok-new must answer 503 authority_behind, never the
#     not_revoked O1 gives, and the refusal is counted.
#   - ET reaches O2 over https only (filter and checks), trusting the test
#     CA through upstream_ca_file: positives are settled over verified TLS.
#   - EU asks over https without the test CA: refused (certificate), 503.
#   - plain http:// upstreams are refused at startup unless
#     upstream_insecure_http is set, which is logged and shown in /v1/status.
. "$(dirname "$0")/lib.sh"

FB() { "$FILTERBUILD" "$@"; }

FB keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
{ printf 'tok-old\n'; seq -f 'pad-%g' 1 200; } >"$T/v1.txt"
{ cat "$T/v1.txt"; printf 'tok-new\n'; } >"$T/v2.txt"
FB build --key "$T/key.pem" --out "$T/f1" --version 1 --quiet --fp-rate 1e-7 "$T/v1.txt"
FB build --key "$T/key.pem" --out "$T/f2" --version 2 --quiet --fp-rate 1e-7 "$T/v2.txt"
mkdir -p "$T/so1" "$T/so2" "$T/seb" "$T/set" "$T/seu" "$T/sei"

rc_start O1 --filter-dir "$T/f1" --trusted-key "$T/key.pub" --state-dir "$T/so1"
rc_start O2 --filter-dir "$T/f2" --trusted-key "$T/key.pub" --state-dir "$T/so2"
rc_wait_version "$O1_URL" 1 || rc_fail "O1 did not load version 1"
rc_wait_version "$O2_URL" 2 || rc_fail "O2 did not load version 2"

# ---------------------------------------------------------------- a test CA and nginx with TLS
NG=$T/nginx		# rc_cleanup stops it (NG_PID)
NG_PID=
mkdir -p "$NG"
rc_tls_cert "$NG" || rc_fail "test CA"
ng_start() {
	local try port tport
	for try in 1 2 3 4 5; do
		port=$(rc_free_port)
		tport=$(rc_free_port)
		{ rc_nginx_conf "$NG"; cat <<EOF; } >"$NG/nginx.conf"
    server {
        listen 127.0.0.1:$port;
        location / { return 404; }
    }
    server {
        listen 127.0.0.1:$tport ssl;
        ssl_certificate $NG/tls.crt;
        ssl_certificate_key $NG/tls.key;
        location /o2/ { proxy_pass $O2_URL/; }
        location / { return 404; }
    }
}
EOF
		if rc_nginx_run "$NG" "$port"; then
			TLS_URL="https://127.0.0.1:$tport/o2"
			return 0
		fi
	done
	cat "$NG/stderr.log" "$NG/error.log" >&2 || true
	return 1
}
ng_start || rc_fail "nginx did not start"
curl -s --cacert "$NG/ca.pem" -o /dev/null -w '%{http_code}' "$TLS_URL/healthz" | grep -q 200 &&
    rc_ok "nginx proxies O2 over TLS with the test CA's certificate" ||
    rc_fail "nginx TLS front is not up"

# ---------------------------------------------------------------- plain http refused unless named
out=$("$REVCHECKD" --check-config --trusted-key "$T/key.pub" \
    --upstream-filter "$O2_URL/v1/filter" --upstream-check "$O1_URL/v1/check" 2>&1) && st=0 || st=$?
rc_expect_eq "$st" 1 "an http:// upstream without upstream_insecure_http is refused"
rc_expect_match "$out" 'upstream_filter: .*plain http.*upstream_insecure_http' \
    "the refusal names the key and the option"
out=$("$REVCHECKD" --check-config --trusted-key "$T/key.pub" \
    --upstream-filter "$TLS_URL/v1/filter" --upstream-check "$O1_URL/v1/check" 2>&1) && st=0 || st=$?
rc_expect_eq "$st" 1 "an http:// upstream_check beside an https filter is refused"
rc_expect_match "$out" 'upstream_check: ' "the refusal names upstream_check"
if "$REVCHECKD" --trusted-key "$T/key.pub" --state-dir "$T/sei" --listen "127.0.0.1:$(rc_free_port)" \
    --upstream-filter "$O2_URL/v1/filter" >"$T/refused.log" 2>&1; then
	rc_fail "revcheckd ran with a plain http upstream"
else
	rc_ok "revcheckd will not start with a plain http upstream"
fi

# ---------------------------------------------------------------- EB: authority behind
rc_start EB --trusted-key "$T/key.pub" --sync-interval 1 --state-dir "$T/seb" \
    --upstream-insecure-http --upstream-filter "$O2_URL/v1/filter" \
    --upstream-check "$O1_URL/v1/check" \
    --token-verification revocation-only	# the unsigned token below
rc_wait_version "$EB_URL" 2 10 || rc_fail "EB did not sync version 2"
grep -q 'upstream_insecure_http is set' "$T/EB.log" &&
    rc_ok "EB logs the insecure option at start" || rc_fail "EB did not log upstream_insecure_http"
rc_curl "$EB_URL/v1/status"
rc_expect_json sync.insecure_http true "EB: /v1/status shows insecure_http"
# O1 itself says not_revoked for tok-new: that is what an edge must not relay.
rc_curl "$O1_URL/v1/check?id=tok-new"
rc_expect_json status not_revoked "O1 (version 1) does not know tok-new"
rc_expect_json filter_version 1 "O1 answers from version 1"
rc_curl "$EB_URL/v1/check?id=tok-new"
rc_expect_status 503 "EB: tok-new with an authority behind its filter"
rc_expect_json error authority_behind "EB: authority_behind"
rc_curl "$EB_URL/v1/check?id=tok-old"
rc_expect_status 503 "EB: any positive is refused while the authority is behind"
rc_expect_json error authority_behind "EB: tok-old authority_behind"
rc_curl -H 'Content-Type: application/json' \
    --data-binary '{"items":[{"id":"tok-fine"},{"id":"tok-new"}]}' "$EB_URL/v1/check"
rc_expect_status 200 "EB: a batch"
rc_expect_json results.0.status not_revoked "EB: batch negative answered"
rc_expect_json results.1.error authority_behind "EB: batch positive authority_behind"
rc_curl -H "Authorization: Bearer $(rc_jwt '' tok-new)" "$EB_URL/v1/authz"
rc_expect_status 503 "EB: /v1/authz with the authority behind"
rc_expect_json verdict authority_behind "EB: authz verdict authority_behind"
rc_curl "$EB_URL/v1/status"
rc_expect_json counters.authority_behind 4 "EB: four refusals counted in /v1/status"
rc_expect_json authority.behind 4 "EB: the authority block counts them"
rc_curl "$EB_URL/metrics"
rc_expect_match "$RC_BODY" 'revcheckd_authority_behind_total 4' "EB: revcheckd_authority_behind_total"
rc_expect_match "$RC_BODY" 'revcheckd_upstream_checks_total\{result="behind"\} 4' \
    "EB: upstream checks by result behind"
# Its syncs succeed and its filter is fresh, yet it answers no positive:
# the audit fails it and says why.
aud_rc=0
aud=$("$FILTERBUILD" audit --timeout 5s "$EB_URL" 2>&1) || aud_rc=$?
rc_expect_eq "$aud_rc" 1 "audit fails EB (its authority behind)"
rc_expect_match "$aud" "^$EB_URL .*not ready \(authority_behind\)" \
    "audit: EB's line says not ready (authority_behind)"

# ---------------------------------------------------------------- ET: https with the test CA
rc_start ET --trusted-key "$T/key.pub" --sync-interval 1 --state-dir "$T/set" \
    --upstream-ca-file "$NG/ca.pem" --upstream-filter "$TLS_URL/v1/filter" \
    --upstream-check "$TLS_URL/v1/check"
rc_wait_version "$ET_URL" 2 10 || rc_fail "ET did not sync version 2 over https"
rc_curl "$ET_URL/v1/check?id=tok-new"
rc_expect_status 200 "ET: a positive settled over verified TLS"
rc_expect_json status revoked "ET: tok-new revoked"
rc_expect_json source authoritative "ET: from the authority"
rc_curl "$ET_URL/v1/check?id=tok-fine"
rc_expect_json status not_revoked "ET: a negative"
rc_curl "$ET_URL/v1/status"
rc_expect_json sync.insecure_http false "ET: insecure_http false"
rc_expect_json authority.answered 1 "ET: one answer from the authority"
grep -q 'upstream_insecure_http' "$T/ET.log" &&
    rc_fail "ET logged the insecure option without it" || rc_ok "ET: no insecure warning"

# ---------------------------------------------------------------- EU: https without the CA
rc_start EU --trusted-key "$T/key.pub" --sync-interval 1 --state-dir "$T/seu" \
    --upstream-insecure-http --upstream-filter "$O2_URL/v1/filter" \
    --upstream-check "$TLS_URL/v1/check"
rc_wait_version "$EU_URL" 2 10 || rc_fail "EU did not sync version 2"
rc_curl "$EU_URL/v1/check?id=tok-new"
rc_expect_status 503 "EU: an authority whose certificate no trusted CA signed"
rc_expect_json error authority_unavailable "EU: authority_unavailable"
rc_curl "$EU_URL/v1/status"
rc_expect_match "$(rc_json authority.last_error)" '[Cc]ertificate|SSL' "EU: the TLS error is shown"

for d in EB ET EU O1 O2; do
	rc_stop "$d" || rc_fail "$d did not exit 0"
done
rc_done
