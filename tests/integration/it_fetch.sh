#!/usr/bin/env bash
# it_fetch.sh - filterbuild build with http(s) CRL inputs: conditional GET over the cache, caps, TLS, refusals
#
# A real nginx on loopback serves the CRLs of tests/pki.sh (static files,
# so with ETag and Last-Modified) over http and over https with a
# certificate from a test CA; a second https server has a self-signed
# certificate nobody trusts. Its access log records each request's status
# and validators, so the test sees the 304 itself. Every refusal must fail
# the build, name the URL and leave the output directory as it was.
. "$(dirname "$0")/lib.sh"

FB() { "$FILTERBUILD" "$@"; }
P=$T/pki
bash "$RC_SRC/tests/pki.sh" "$P" >/dev/null 2>&1
FB keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
W=$T/www
mkdir -p "$W"
cp "$P/crl.pem" "$W/ca.crl"
cp "$P/crl.pem" "$W/flaky.crl"
head -c 3000000 /dev/zero >"$W/big.crl"

NG=$T/nginx
NG_PID=
mkdir -p "$NG" "$NG/self"
rc_tls_cert "$NG" || rc_fail "test CA"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$NG/self/tls.key" -out "$NG/self/tls.crt" -subj /CN=127.0.0.1 \
    -days 1 -addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1 ||
    rc_fail "self-signed certificate"
ng_start() {
	local try
	for try in 1 2 3 4 5; do
		PORT=$(rc_free_port)
		TPORT=$(rc_free_port)
		SPORT=$(rc_free_port)
		{ rc_nginx_conf "$NG"; cat <<EOF; } >"$NG/nginx.conf"
    log_format fetch escape=none '\$request_uri \$status inm=[\$http_if_none_match] ims=[\$http_if_modified_since]';
    server {
        listen 127.0.0.1:$PORT;
        access_log $NG/fetch.log fetch;
        root $W;
        location = / { return 404; }
        location = /to-file { return 302 file:///etc/passwd; }
        location = /to-ftp { return 302 ftp://127.0.0.1/ca.crl; }
        location = /to-ca { return 302 /ca.crl; }
        location = /always-304 { return 304; }
        location = /slow.crl { alias $W/big.crl; limit_rate 50k; }
    }
    server {
        listen 127.0.0.1:$TPORT ssl;
        ssl_certificate $NG/tls.crt;
        ssl_certificate_key $NG/tls.key;
        access_log $NG/fetch.log fetch;
        root $W;
        location = /to-http { return 302 http://127.0.0.1:$PORT/ca.crl; }
        location = /to-https { return 302 /ca.crl; }
    }
    server {
        listen 127.0.0.1:$SPORT ssl;
        ssl_certificate $NG/self/tls.crt;
        ssl_certificate_key $NG/self/tls.key;
        root $W;
    }
}
EOF
		rc_nginx_run "$NG" "$PORT" && return 0
	done
	cat "$NG/stderr.log" "$NG/error.log" >&2 || true
	return 1
}
ng_start || { rc_fail "nginx did not start"; rc_done; exit 1; }
H=http://127.0.0.1:$PORT
S=https://127.0.0.1:$TPORT

C=$T/cache
F=$T/filters
# build [args...] INPUT...: one build into $F with $C; sets OUT, ST.
build() {
	ST=0
	OUT=$(FB build --key "$T/key.pem" --out "$F" --keep 20 --cache-dir "$C" \
	    --issuer "$P/ca.pem" "$@" 2>&1) || ST=$?
}
current() { readlink "$F/current" 2>/dev/null || echo none; }
# last_log URI: the access log line of the last request for URI.
last_log() { grep "^$1 " "$NG/fetch.log" | tail -n 1; }
# refused WHAT REGEX build-args...: the build fails, names it, F unchanged.
refused() {
	local what=$1 re=$2 before
	shift 2
	before=$(current)
	build "$@"
	rc_expect_eq "$ST" 1 "$what: the build fails"
	rc_expect_match "$OUT" "$re" "$what: the error says why"
	[ "${RC_VERBOSE:-0}" = 1 ] && echo "#   $OUT" || true
	rc_expect_eq "$(current)" "$before" "$what: the output is untouched"
}

# ------------------------------------------------ first fetch, then a 304
build "$H/ca.crl"
rc_expect_eq "$ST" 0 "build from an http:// CRL"
rc_expect_match "$OUT" "$H/ca.crl: fetched [0-9]+ bytes \\(HTTP 200\\)" "first build fetches"
rc_expect_match "$(last_log /ca.crl)" '^/ca.crl 200 inm=\[\] ims=\[\]$' \
    "first request is unconditional and answered 200"
rc_expect_eq "$(find "$C" -name '*.crl' | wc -l)" 1 "one cache entry"
rc_expect_eq "$(stat -c %a "$C")" 700 "cache directory made 0700"
rc_expect_eq "$(stat -c %a "$(find "$C" -name '*.crl')")" 600 "cache entry is 0600"
rc_expect_eq "$(find "$C" -name '*.crl.*' | wc -l)" 0 "no temporary file left"

build "$H/ca.crl"
rc_expect_eq "$ST" 0 "second build"
rc_expect_match "$OUT" "$H/ca.crl: not modified \\(HTTP 304\\)" "second build is served from the cache"
rc_expect_match "$(last_log /ca.crl)" '^/ca.crl 304 inm=\["[^"]+"\] ims=\[[A-Z][a-z]{2}, [0-9]{2} ' \
    "second request sends If-None-Match and If-Modified-Since, answered 304"

# The 304 build answers exactly as the fetched one: revoked stays revoked.
mkdir -p "$T/state"
rc_start A --filter-dir "$F" --trusted-key "$T/key.pub" --state-dir "$T/state"
check_leaf() {	# check_leaf NAME WANT WHAT
	rc_curl -H 'Content-Type: application/json' \
	    --data-binary "@$(rc_json_body cert "$P/certs/$1.pem")" "$A_URL/v1/check"
	rc_expect_json status "$2" "$3"
}
check_leaf leaf01 revoked "after the 304 build: a revoked leaf is revoked"
check_leaf leaf02 not_revoked "after the 304 build: a clean leaf is not_revoked"
rc_stop A

# A changed CRL (new ETag) is fetched again and replaces the entry.
openssl crl -in "$P/crl.pem" -outform DER -out "$W/ca.crl"
build "$H/ca.crl"
rc_expect_eq "$ST" 0 "build after the CRL changed"
rc_expect_match "$(last_log /ca.crl)" '^/ca.crl 200 inm=\["' "changed CRL: conditional request answered 200"
rc_expect_match "$OUT" "fetched" "changed CRL is fetched"
build "$H/ca.crl"
rc_expect_match "$(last_log /ca.crl)" '^/ca.crl 304 ' "the new entry makes the next request a 304"

# A damaged entry is not served: the next request is unconditional.
e=$(find "$C" -name '*.crl' | head -n 1)
printf 'X' | dd of="$e" bs=1 seek=$(( $(stat -c %s "$e") - 10 )) conv=notrunc 2>/dev/null
build "$H/ca.crl"
rc_expect_eq "$ST" 0 "build over a damaged cache entry"
rc_expect_match "$(last_log /ca.crl)" '^/ca.crl 200 inm=\[\] ims=\[\]$' "damaged entry: unconditional GET, 200"

# A redirect within http(s) is followed.
build "$H/to-ca"
rc_expect_eq "$ST" 0 "a redirect to another http path is followed"

# ------------------------------------------------ the cache is never a fallback
build "$H/flaky.crl"
rc_expect_eq "$ST" 0 "flaky CRL fetched once"
rm -f "$W/flaky.crl"
refused "a 404 with a cached entry" "$H/flaky.crl: HTTP 404" "$H/flaky.crl"
refused "a 304 to an unconditional request" \
    "$H/always-304: HTTP 304 to a request that was not conditional" "$H/always-304"

# ------------------------------------------------ a list in place of the CRL
# Whoever serves the CRL's URL (plain http: anyone on the path) sends a
# revocation list naming the CA's X.509 scope instead: it carries no
# signature, yet it made the scope list-sourced, covering every serial,
# and the CA's revoked leaves answered not_revoked. A fetched list may
# not speak for an X.509 scope; one for a token scope still reads.
SC=$(FB inspect "$F" | grep -o 'x509:[0-9a-f]\{64\}' | head -n 1)
rc_expect_match "$SC" '^x509:[0-9a-f]{64}$' "the CA's scope is in the filter"
# As many ids as the CRL had, so the shrink check does not stop it.
{ printf '['; for i in 0 1 2 3 4 5; do printf '{"scope": "%s", "id": "f%d"}, ' "$SC" "$i"; done
  printf '{"scope": "%s", "id": "f6"}]' "$SC"; } >"$W/swap.crl"
refused "a JSON list for the CA's scope at its CRL's URL" \
    "$H/swap.crl: .*X.509 scope $SC.*signature" "$H/swap.crl"
printf 'f%d\n' 0 1 2 3 4 5 6 >"$W/swap.txt"
refused "a token list at a URL with --scope naming the CA's scope" \
    "$H/swap.txt: .*X.509 scope $SC.*signature" --scope "$SC" "$H/swap.txt"
rc_start A --filter-dir "$F" --trusted-key "$T/key.pub" --state-dir "$T/state"
check_leaf leaf01 revoked "a list served at the CRL's URL: a revoked leaf stays revoked"
rc_stop A
printf '[{"scope": "tokens", "id": "tok-1"}]' >"$W/tokens.json"
ST=0
OUT=$(FB build --key "$T/key.pem" --out "$T/tokf" --cache-dir "$C" \
    "$H/tokens.json" 2>&1) || ST=$?
rc_expect_eq "$ST" 0 "a fetched JSON list for a token scope still reads"

# ------------------------------------------------ caps and refusals
refused "size cap (--fetch-max-size)" \
    "$H/big.crl: response larger than the limit of 100000 bytes" \
    --fetch-max-size 100000 "$H/big.crl"
refused "time cap (--fetch-timeout)" "$H/slow.crl: .*([Tt]imeout|timed out)" \
    --fetch-timeout 2s "$H/slow.crl"
refused "redirect to file://" "$H/to-file: redirected to a refused scheme.*file" "$H/to-file"
refused "redirect to ftp://" "$H/to-ftp: redirected to a refused scheme.*ftp" "$H/to-ftp"
refused "a file:// input" "file://$P/crl.pem: scheme file is refused" "file://$P/crl.pem"
refused "an ftp:// input" "ftp://127.0.0.1/ca.crl: scheme ftp is refused" "ftp://127.0.0.1/ca.crl"
refused "credentials in the URL" "http://\.\.\.@127.0.0.1/\.\.\.: credentials in a URL are refused" \
    "http://user:secret@127.0.0.1:$PORT/ca.crl"
rc_expect_eq "$(printf '%s' "$OUT" | grep -c secret || true)" 0 "the refusal does not print the password"
dead=$(rc_free_port)
refused "an unreachable URL" "http://127.0.0.1:$dead/ca.crl: " \
    "$H/ca.crl" "http://127.0.0.1:$dead/ca.crl"
refused "a URL input that is not a CRL" "big.crl" "$H/big.crl"

# ------------------------------------------------ a body without framing
# HTTP/1.0, no Content-Length, no chunks: the body ends where the server
# closes, so a cut-off token list would look whole. A raw server sends
# 100 ids that way (/unframed), and the same with a Content-Length
# (/framed, accepted) and cut after 633 bytes (/cut, what a dropped
# connection gives): the unframed ones are refused, whole or not.
cat >"$T/raw.py" <<'EOF'
import socket, sys
body = "".join("tok-%04d\n" % i for i in range(1, 101)).encode()
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(8)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
while True:
    c, _ = s.accept()
    req = c.recv(65536).decode(errors="replace")
    path = req.split(" ")[1] if " " in req else "/"
    if path == "/framed":
        head = "HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body)
        c.sendall(head.encode() + body)
    elif path == "/cut":
        c.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n" + body[:633])
    else:
        c.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n" + body)
    c.close()
EOF
python3 "$T/raw.py" "$T/raw.port" &
RAW_PID=$!
for _ in $(seq 1 300); do [ -s "$T/raw.port" ] && break; sleep 0.1; done
R=http://127.0.0.1:$(cat "$T/raw.port")
TF=$T/tokfilters
rawbuild() { ST=0; OUT=$(FB build --key "$T/key.pem" --out "$TF" --cache-dir "$C" "$@" 2>&1) || ST=$?; }
rawbuild "$R/framed"
rc_expect_eq "$ST" 0 "an HTTP/1.0 list with Content-Length is fetched"
rc_expect_match "$OUT" "100 keys" "all 100 ids published"
for p in unframed cut; do
	before=$(readlink "$TF/current")
	rawbuild "$R/$p"
	rc_expect_eq "$ST" 1 "/$p (no Content-Length, no chunks): the build fails"
	rc_expect_match "$OUT" "$R/$p: the response has neither Content-Length nor chunked encoding" \
	    "/$p: the error says why"
	rc_expect_eq "$(readlink "$TF/current")" "$before" "/$p: nothing published"
done
kill "$RAW_PID" 2>/dev/null
wait "$RAW_PID" 2>/dev/null || true

# ------------------------------------------------ TLS verified
build --fetch-ca "$NG/ca.pem" "$S/ca.crl"
rc_expect_eq "$ST" 0 "https with the test CA trusted"
refused "https with the test CA not trusted" "$S/ca.crl: .*(certificate|SSL)" "$S/ca.crl"
# From https, a redirect is followed only to https: over plain http
# anyone on the path could answer in its place.
refused "https redirected to http" "$S/to-http: redirected to a refused scheme" \
    --fetch-ca "$NG/ca.pem" "$S/to-http"
build --fetch-ca "$NG/ca.pem" "$S/to-https"
rc_expect_eq "$ST" 0 "https redirected to https is followed"
refused "a self-signed server certificate" \
    "https://127.0.0.1:$SPORT/ca.crl: .*(certificate|SSL)" \
    --fetch-ca "$NG/ca.pem" "https://127.0.0.1:$SPORT/ca.crl"
refused "a certificate for another name" \
    "https://localhost:$TPORT/ca.crl: .*(certificate|SSL|match|name)" \
    --fetch-ca "$NG/ca.pem" "https://localhost:$TPORT/ca.crl"

# ------------------------------------------------ the cache directory
mkdir -p "$T/open"
chmod 0777 "$T/open"
refused "a world-writable cache directory" "writable by group or others" \
    --cache-dir "$T/open" "$H/ca.crl"
touch "$T/notadir"
refused "a cache path that is a file" "not a directory" --cache-dir "$T/notadir" "$H/ca.crl"
# The default: $CACHE_DIRECTORY (systemd's CacheDirectory=).
mkdir -m 0700 "$T/sd-cache"
OUT=$(CACHE_DIRECTORY="$T/sd-cache" FB build --key "$T/key.pem" --out "$F" --keep 20 \
    --issuer "$P/ca.pem" "$H/ca.crl" 2>&1) && ST=0 || ST=$?
rc_expect_eq "$ST" 0 "build with \$CACHE_DIRECTORY"
rc_expect_eq "$(find "$T/sd-cache" -name '*.crl' | wc -l)" 1 "the entry went to \$CACHE_DIRECTORY"

rc_done
