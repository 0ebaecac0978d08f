#!/usr/bin/env bash
# it_ocsp_nginx.sh - real nginx checking client certificates (ssl_ocsp) and stapling (ssl_stapling) through revcheckd's OCSP responder
#
# A CA, a delegated OCSP responder certificate (OCSPSigning, ocsp-nocheck),
# two client certificates (one revoked), a server certificate and the CA's
# CRL, all made with the openssl CLI (tests/responder-pki.sh); the filter
# is built by filterbuild from that CRL. Two revcheckd daemons serve it with
# the "ocsp" block: A, and B under libfaketime (its clock stepped past the
# filter's expiry). nginx asks them with `ssl_verify_client on; ssl_ocsp
# on; ssl_ocsp_responder http://.../ocsp` (it sends GET /ocsp/<base64>,
# no cache: every handshake asks), one TLS server each, and staples
# A's answer for its own certificate on a third (`ssl_stapling on;
# ssl_stapling_verify on; ssl_stapling_responder`). Clients are curl
# --cert and openssl s_client -status. nginx refuses a client certificate
# it cannot prove good with HTTP 400: revoked, the responder down, the
# filter stale (tryLater) - fail closed - and admits again once B is
# fresh.
. "$(dirname "$0")/lib.sh"

P=$T/pki
SECRET="ocsp-protected page $RANDOM$RANDOM"
bash "$RC_SRC/tests/responder-pki.sh" "$P" >"$T/pki.log" 2>&1 ||
    { cat "$T/pki.log" >&2; rc_fail "responder-pki.sh failed"; rc_done; exit 1; }
"$FILTERBUILD" keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
"$FILTERBUILD" build --key "$T/key.pem" --out "$T/f" --valid-for 1h --quiet \
    --issuer "$P/ca.pem" "$P/crl.pem"

# conf NAME: a config serving $T/f with the ocsp block (responder 0600).
conf() {
	mkdir -p "$T/s.$1"
	cat >"$T/$1.json" <<EOF
{
  "filter_dir": "$T/f",
  "trusted_key": "$T/key.pub",
  "state_dir": "$T/s.$1",
  "ocsp": {
    "path": "/ocsp",
    "responders": [{"issuer": "$P/ca.pem", "cert": "$P/responder.pem",
                    "key": "$P/responder.key"}]
  }
}
EOF
}
conf A
conf B
rc_start A -c "$T/A.json"
rc_start_faketime B "$T/clock.rc" +0 -c "$T/B.json"
rc_wait_ready "$A_URL" 30 || rc_fail "A not ready"
rc_wait_ready "$B_URL" 30 || rc_fail "B not ready"

# ---------------------------------------------------------------- nginx
NG=$T/nginx
mkdir -p "$NG/www"
printf '%s\n' "$SECRET" >"$NG/www/index.html"
# tls PORT RESPONDER_URL: a server that asks RESPONDER_URL about every
# client certificate.
tls() {
	cat <<EOF
    server {
        listen 127.0.0.1:$1 ssl;
        ssl_certificate $P/server.pem;
        ssl_certificate_key $P/server.key;
        ssl_client_certificate $P/ca.pem;
        ssl_verify_client on;
        ssl_ocsp on;
        ssl_ocsp_responder $2;
        location / { root $NG/www; }
    }
EOF
}
ng_start() {
	local try port
	for try in 1 2 3 4 5; do
		port=$(rc_free_port)
		PA=$(rc_free_port)
		PB=$(rc_free_port)
		PS=$(rc_free_port)
		# The client verification errors nginx logs are "info".
		{ rc_nginx_conf "$NG" | sed 's|error.log warn;|error.log info;|'; cat <<EOF; } >"$NG/nginx.conf"
    server {
        listen 127.0.0.1:$port;
        location / { return 404; }
    }
$(tls "$PA" "$A_URL/ocsp")
$(tls "$PB" "$B_URL/ocsp")
    server {
        listen 127.0.0.1:$PS ssl;
        ssl_certificate $P/server.pem;
        ssl_certificate_key $P/server.key;
        ssl_stapling on;
        ssl_stapling_verify on;
        ssl_stapling_responder $A_URL/ocsp;
        ssl_trusted_certificate $P/ca.pem;
        location / { root $NG/www; }
    }
}
EOF
		rc_nginx_run "$NG" "$port" && return 0
	done
	echo "nginx did not start:" >&2
	cat "$NG/stderr.log" "$NG/error.log" >&2 || true
	return 1
}
ng_start || { rc_fail "nginx did not start"; rc_done; exit 1; }

# client WHO PORT: GET / over TLS with WHO's certificate (good, revoked).
client() {
	rc_curl --cacert "$P/ca.pem" --cert "$P/$1.pem" --key "$P/$1.key" \
	    "https://127.0.0.1:$2/"
}
served() { [[ $RC_BODY == *"$SECRET"* ]]; }
# refused WHAT REGEX: HTTP 400, no page, and nginx logged REGEX since the
# mark taken before the request.
refused() {
	rc_expect_status 400 "$1: nginx refuses"
	if served; then rc_fail "$1: the page was served"; else rc_ok "$1: no page"; fi
	if rc_log_has "$NG/error.log" "$m" "$2"; then rc_ok "$1: nginx says why"; else
		rc_fail "$1: no /$2/ in nginx's error log: $(rc_log_since "$NG/error.log" "$m" | tail -n 3)"
	fi
}

# ---------------------------------------------------------------- client certificates through A
client good "$PA"
rc_expect_status 200 "a good client certificate"
served && rc_ok "good: the page is served" || rc_fail "good: no page"
m=$(rc_log_mark "$NG/error.log")
client revoked "$PA"
refused "a revoked client certificate" "verify error: certificate revoked"
client good "$PA"
rc_expect_status 200 "good again after a refusal"

# ---------------------------------------------------------------- stapling A's answer
# nginx fetches a staple after the first handshake that wants one, in the
# background: connect until one is stapled (bounded).
staple=
for ((i = 0; i < 100; i++)); do
	staple=$(openssl s_client -connect "127.0.0.1:$PS" -servername 127.0.0.1 \
	    -CAfile "$P/ca.pem" -status </dev/null 2>/dev/null) || true
	[[ $staple == *"Cert Status:"* ]] && break
	sleep 0.1
done
rc_expect_match "$staple" "OCSP Response Status: successful" "stapled: a successful response"
rc_expect_match "$staple" "Cert Status: good" "stapled: the server certificate is good"
# The responder's id by key is the SHA-1 of its key: its certificate's
# subjectKeyIdentifier (made by "hash").
ski=$(openssl x509 -in "$P/responder.pem" -noout -ext subjectKeyIdentifier | tail -n 1 | tr -d ' :')
rc_expect_match "$staple" "Responder Id: $ski" "stapled: signed by the delegated responder"
rc_expect_match "$staple" "Verify return code: 0 " "stapled: the server chain verifies"

# ---------------------------------------------------------------- B fresh, then stale, then fresh
client good "$PB"
rc_expect_status 200 "B fresh: a good client certificate"
echo "+10800" >"$T/clock.rc"	# three hours on: past the filter's expiry and max_age
ok=0
for ((i = 0; i < 300; i++)); do
	rc_curl "$B_URL/readyz"
	[[ $RC_BODY == *filter_stale* ]] && { ok=1; break; }
	sleep 0.1
done
[ "$ok" = 1 ] && rc_ok "B's filter is stale" || rc_fail "B's filter never turned stale"
m=$(rc_log_mark "$NG/error.log")
client good "$PB"
refused "B stale: a good client certificate" "OCSP response not successful \\(3: trylater\\)"
client revoked "$PB"
rc_expect_status 400 "B stale: a revoked client certificate"
echo "+0" >"$T/clock.rc"
rc_wait_ready "$B_URL" 30 || rc_fail "B never fresh again"
client good "$PB"
rc_expect_status 200 "B fresh again: admitted with no operator"

# ---------------------------------------------------------------- A stopped
rc_stop A || rc_fail "A did not exit 0"
m=$(rc_log_mark "$NG/error.log")
client good "$PA"
refused "A stopped: a good client certificate" "Connection refused.*requesting certificate status"
rc_stop B || rc_fail "B did not exit 0"
rc_done
