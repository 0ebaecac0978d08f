#!/usr/bin/env bash
# it_edge.sh - edge mode end to end: origin, real nginx, edges syncing, refusals, origin down, expiry, restart, upstream timeouts
#
# One origin revcheckd publishing from a filterbuild directory, a real
# nginx serving that directory as static files (and a second directory of
# deliberately bad files), and three edges: E1 syncs from the origin's
# /v1/filter, E2 from nginx, E3 from nginx's bad-file path. Everything on
# loopback, on free ports; lib.sh stops the daemons, our trap stops nginx.
# it-serial: asserts versions arrive within two sync intervals
. "$(dirname "$0")/lib.sh"

FB() { "$FILTERBUILD" "$@"; }
SI=1		# the edges' --sync-interval
GRACE=3		# seconds on top of two sync intervals (origin pickup, a loaded machine)

now_ms() { local t=${EPOCHREALTIME/[.,]/}; echo $((10#$t / 1000)); }	# no exec: a fork is dear on some CI machines

# rc_json, same output as lib.sh's, from one long-lived python3 (a
# python3 start costs a third of a second on a loaded machine, and this
# test reads a few hundred fields): it reads "FILE<TAB>PATH" lines and
# answers each with the value and a NUL.
coproc JSONPY { exec python3 -u -c '
import json, sys
out = sys.stdout.buffer
for line in sys.stdin:
    f, path = line.rstrip("\n").split("\t", 1)
    try:
        v = json.load(open(f))
        for p in path.split(".") if path else []:
            v = v[int(p)] if isinstance(v, list) else v.get(p) if isinstance(v, dict) else None
        s = v if isinstance(v, str) else json.dumps(v)
    except Exception:
        s = "<invalid>"
    out.write(s.encode("utf-8", "surrogateescape") + b"\0")
    out.flush()
'; }
rc_json() {
	local v
	printf '%s\t%s\n' "$RC_BODY_FILE" "$1" >&"${JSONPY[1]}"
	IFS= read -r -d '' v <&"${JSONPY[0]}"
	printf '%s\n' "$v"
}

# wait_status URL PATH REGEX SECONDS: polls URL/v1/status until the field
# at PATH matches REGEX; leaves the last reply in RC_BODY.
wait_status() {
	local url=$1 path=$2 re=$3 end v
	end=$(( $(now_ms) + $4 * 1000 ))
	while :; do
		rc_curl "$url/v1/status"
		v=$(rc_json "$path")
		if printf '%s' "$v" | grep -Eq -- "$re"; then
			return 0
		fi
		[ "$(now_ms)" -lt "$end" ] || return 1
		sleep 0.2
	done
}

# nginx's ETag is the file's mtime (seconds) and size: the same-size
# filters this test publishes must not share a second.
LAST_BUILD=0
next_second() {
	while [ "$(date +%s)" -le "$LAST_BUILD" ]; do sleep 0.1; done
}
build() {	# build VERSION [args]: publish into $F with the trusted key
	next_second
	FB build --key "$T/key.pem" --out "$F" --version "$1" --quiet --fp-rate 1e-7 \
	    "${@:2}" "$T/tokens.txt"
	LAST_BUILD=$(date +%s)
}

# ---------------------------------------------------------------- data
FB keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
FB keygen --out "$T/evil.pem" --pub "$T/evil.pub" >/dev/null
# Enough keys and a low target rate that the negatives asked below
# (tok-fine) are never filter false positives: an edge would send them to
# the (stopped) origin and answer 503, as it must.
{ printf 'tok-rev-1\ntok-rev-2\n'; seq -f 'pad-%g' 1 300; } >"$T/tokens.txt"
F=$T/filters
B=$T/bad		# what nginx serves to E3 at /bad/filter.rcf
G=$T/g			# E3's own versions, built with the same key
mkdir -p "$F" "$B" "$G" "$T/so" "$T/s1" "$T/s2" "$T/s3" "$T/s4" "$T/s5" \
    "$T/sh0" "$T/sh2" "$T/shs"
build 1

# ---------------------------------------------------------------- nginx
NG=$T/nginx
NG_PID=
CUT_PID=
HOLE_PID=
ng_cleanup() {
	local p
	for p in "$NG_PID" "$CUT_PID" "$HOLE_PID" "${JSONPY_PID:-}"; do
		[ -n "$p" ] || continue
		kill -TERM "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	rc_cleanup
}
trap ng_cleanup EXIT
mkdir -p "$NG"
# A self-signed certificate: an edge must refuse it (TLS is verified).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$NG/tls.key" -out "$NG/tls.crt" -subj /CN=127.0.0.1 -days 1 \
    -addext subjectAltName=IP:127.0.0.1 >"$NG/openssl.log" 2>&1
ng_start() {
	local try port tport
	for try in 1 2 3 4 5; do
		port=$(rc_free_port)
		tport=$(rc_free_port)
		{ rc_nginx_conf "$NG"; cat <<EOF; } >"$NG/nginx.conf"
    default_type application/octet-stream;
    server {
        listen 127.0.0.1:$port;
        location /filters/ { alias $F/; etag on; }
        location /bad/ { alias $B/; etag on; }
        location / { return 404; }
    }
    server {
        listen 127.0.0.1:$tport ssl;
        ssl_certificate $NG/tls.crt;
        ssl_certificate_key $NG/tls.key;
        location /filters/ { alias $F/; }
    }
}
EOF
		if rc_nginx_run "$NG" "$port"; then
			NG_URL="http://127.0.0.1:$port"
			NG_TLS_URL="https://127.0.0.1:$tport"
			return 0
		fi
	done
	echo "nginx did not start:" >&2
	cat "$NG/stderr.log" "$NG/error.log" >&2 || true
	return 1
}
ng_start

# ---------------------------------------------------------------- daemons
rc_start O --filter-dir "$F" --trusted-key "$T/key.pub" --state-dir "$T/so" \
    --poll-interval 1
rc_wait_version "$O_URL" 1 || rc_fail "origin did not load version 1"
EDGE=(--trusted-key "$T/key.pub" --sync-interval "$SI" --poll-interval 1
    --upstream-insecure-http --upstream-check "$O_URL/v1/check")
rc_start E1 "${EDGE[@]}" --state-dir "$T/s1" \
    --upstream-filter "$O_URL/v1/filter"
rc_start E2 "${EDGE[@]}" --state-dir "$T/s2" \
    --upstream-filter "$NG_URL/filters/current/filter.rcf"

# ---------------------------------------------------------------- GET /v1/filter on the origin
rc_curl "$O_URL/v1/status"
sha=$(rc_json filter.sha256)
exp_in=$(rc_json filter.expires_in_seconds)
rc_curl "$O_URL/v1/filter"
rc_expect_status 200 "GET /v1/filter"
cmp -s "$RC_BODY_FILE" "$F/current/filter.rcf" &&
    rc_ok "/v1/filter serves the published bytes" ||
    rc_fail "/v1/filter bytes differ from $F/current/filter.rcf"
etag=$(rc_header ETag)
rc_expect_eq "$etag" "\"$sha\"" "ETag is the filter's SHA-256"
cc=$(rc_header Cache-Control)
rc_expect_match "$cc" '^public, max-age=[0-9]+$' "Cache-Control with max-age"
ma=${cc##*=}
[ "$ma" -le "$exp_in" ] && rc_ok "max-age within the filter's expiry" ||
    rc_fail "max-age $ma beyond expires_in $exp_in"
rc_expect_match "$(rc_header Last-Modified)" 'GMT$' "Last-Modified"
rc_curl -H "If-None-Match: $etag" "$O_URL/v1/filter"
rc_expect_status 304 "If-None-Match with the current ETag"
rc_expect_eq "$(wc -c <"$RC_BODY_FILE" | tr -d ' ')" 0 "304 has no body"
rc_expect_eq "$(rc_header ETag)" "$etag" "304 repeats the ETag"
rc_curl -H 'If-None-Match: "0000", W/'"$etag" "$O_URL/v1/filter"
rc_expect_status 304 "If-None-Match list with a weak match"
rc_curl -H 'If-None-Match: "other"' "$O_URL/v1/filter"
rc_expect_status 200 "If-None-Match with another ETag"

# ---------------------------------------------------------------- v1 at both edges
for e in E1 E2; do
	url=$(eval echo "\$${e}_URL")
	rc_wait_version "$url" 1 10 || rc_fail "$e did not sync version 1"
	rc_curl "$url/v1/check?id=tok-fine"
	rc_expect_status 200 "$e: a negative"
	rc_expect_json status not_revoked "$e: negative not_revoked"
	rc_expect_json source filter "$e: negative from the filter"
	rc_curl "$url/v1/check?id=tok-rev-1"
	rc_expect_status 200 "$e: a positive settled upstream"
	rc_expect_json status revoked "$e: positive revoked"
	rc_expect_json source authoritative "$e: positive from the authority"
	rc_curl "$url/v1/status"
	rc_expect_json service.mode edge "$e: mode edge"
	rc_expect_json filter.authority upstream "$e: authority upstream"
	rc_expect_json sync.upstream_version_seen 1 "$e: version seen"
	rc_expect_match "$(rc_json sync.result)" '^(updated|not_modified|unchanged)$' \
	    "$e: sync result"
	[ -s "$T/s${e#E}/edge-filter.rcf" ] && rc_ok "$e: filter persisted" ||
	    rc_fail "$e: no persisted filter"
done
rc_curl "$E1_URL/v1/status"
rc_expect_json sync.etag "\"$sha\"" "E1 keeps the origin's ETag"
# The next syncs are conditional: the origin answers 304.
wait_status "$E1_URL" sync.result '^not_modified$' 5 ||
    rc_fail "E1 never got a 304 (If-None-Match)"
wait_status "$E2_URL" sync.result '^not_modified$' 5 ||
    rc_fail "E2 never got a 304 from nginx"
rc_curl "$E1_URL/metrics"
rc_expect_match "$RC_BODY" 'revcheckd_sync_attempts_total [1-9]' "sync metrics"
rc_expect_match "$RC_BODY" 'revcheckd_upstream_checks_total\{result="answered"\} [1-9]' \
    "upstream metrics"

# ---------------------------------------------------------------- upstream timeouts and retries
# The edge-only keys are refused on an origin and checked against each
# other, by name, before anything runs.
cc_run() {	# cc_run [revcheckd args]: --check-config; CC_RC, CC_OUT
	CC_RC=0
	CC_OUT=$("$REVCHECKD" --check-config "$@" 2>&1) || CC_RC=$?
}
cc_run --filter-dir "$F" --trusted-key "$T/key.pub" --upstream-retries 0
rc_expect_eq "$CC_RC" 1 "--check-config: upstream_retries on an origin refused"
rc_expect_match "$CC_OUT" 'upstream_retries: only for edge nodes' \
    "--check-config names upstream_retries"
cc_run --filter-dir "$F" --trusted-key "$T/key.pub" --sync-timeout 60
rc_expect_match "$CC_OUT" 'sync_timeout: only for edge nodes' \
    "--check-config: sync_timeout on an origin refused"
cc_run --upstream-insecure-http --upstream-filter "$O_URL/v1/filter" --upstream-check "$O_URL/v1/check" \
    --trusted-key "$T/key.pub" --upstream-timeout 2s --upstream-connect-timeout 3s
rc_expect_eq "$CC_RC" 1 "--check-config: connect timeout over the total refused"
rc_expect_match "$CC_OUT" 'upstream_connect_timeout: 3s is longer than upstream_timeout' \
    "--check-config names upstream_connect_timeout"
printf '{ "upstream_filter": "%s", "trusted_key": "%s", "upstream_insecure_http": true,\n  "sync_timeout": "2h" }\n' \
    "$O_URL/v1/filter" "$T/key.pub" >"$T/edge-bad.json"
cc_run -c "$T/edge-bad.json"
rc_expect_eq "$CC_RC" 1 "--check-config: sync_timeout 2h refused"
rc_expect_match "$CC_OUT" 'edge-bad.json: key sync_timeout: "2h" is out of range \(1s\.\.3600s\)' \
    "the file's error names the file, the key and the range"
cc_run --upstream-insecure-http --upstream-filter "$O_URL/v1/filter" --upstream-check "$O_URL/v1/check" \
    --trusted-key "$T/key.pub" --upstream-timeout 1s --upstream-connect-timeout 1s \
    --upstream-retries 0 --sync-timeout 5m --sync-connect-timeout 5s
rc_expect_eq "$CC_RC/$CC_OUT" "0/configuration OK" "--check-config: the five keys on an edge"

# A check authority that accepts connections and never answers: one line
# in $HOLE_LOG per connection accepted, so attempts can be counted: "check"
# for a client's positive, "probe" for the edge's background probe
# (X-Revcheck-Probe), "sentinel" for the test's own marker.
HOLE_LOG=$T/hole.log
for try in 1 2 3 4 5; do
	HOLE_PORT=$(rc_free_port)
	: >"$HOLE_LOG"
	rm -f "$T/hole.ready"
	python3 - "$HOLE_PORT" "$HOLE_LOG" "$T/hole.ready" 2>"$T/hole.err" <<'PY' &
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(64)
open(sys.argv[3], "w").close()
held = []
log = open(sys.argv[2], "a")
while True:
    c, _ = s.accept()
    held.append(c)		# never answered, never closed
    c.settimeout(2)
    head = b""
    try:
        while b"\r\n\r\n" not in head and len(head) < 65536:
            b = c.recv(4096)
            if not b:
                break
            head += b
    except OSError:
        pass
    kind = ("sentinel" if head.startswith(b"SENTINEL") else
            "probe" if b"x-revcheck-probe:" in head.lower() else "check")
    log.write(kind + "\n")
    log.flush()
PY
	HOLE_PID=$!
	end=$(( $(now_ms) + 5000 ))
	while [ ! -e "$T/hole.ready" ] && kill -0 "$HOLE_PID" 2>/dev/null &&
	    [ "$(now_ms)" -lt "$end" ]; do
		sleep 0.05
	done
	[ -e "$T/hole.ready" ] && break
	kill -TERM "$HOLE_PID" 2>/dev/null || true
	wait "$HOLE_PID" 2>/dev/null || true
	HOLE_PID=
done
[ -n "$HOLE_PID" ] || { cat "$T/hole.err" >&2; rc_fail "the silent authority did not start"; }
HOLE_URL="http://127.0.0.1:$HOLE_PORT"
hole_count() { grep -c '^check$' "$HOLE_LOG" || true; }
# hole_settle: the count of checks once every connection made so far has
# been logged. The edge made its attempts before it answered, so they
# wait in the hole's queue ahead of a sentinel connection made now, and
# the hole takes them in order: once the sentinel is logged, all are.
hole_settle() {
	local n end
	n=$(grep -c '^sentinel$' "$HOLE_LOG" || true)
	exec {hs}<>"/dev/tcp/127.0.0.1/$HOLE_PORT"
	printf 'SENTINEL\r\n\r\n' >&"$hs"
	end=$(( $(now_ms) + 10000 ))
	while [ "$(grep -c '^sentinel$' "$HOLE_LOG" || true)" -le "$n" ] &&
	    [ "$(now_ms)" -lt "$end" ]; do
		sleep 0.05
	done
	exec {hs}>&-
	hole_count
}

# ask_hole NAME RETRIES: a filter positive at edge NAME (upstream_timeout
# 1s, upstream_retries RETRIES) answers 503 authority_unavailable after
# RETRIES + 1 connections to the silent authority, well inside a bound
# the defaults (4s per attempt, 2 retries: over 12 s) would break.
ask_hole() {
	local name=$1 retries=$2 url before t0 ms
	url=$(eval echo "\$${name}_URL")
	rc_wait_version "$url" 1 10 || rc_fail "$name did not sync version 1"
	before=$(hole_count)
	rc_curl "$url/v1/check?id=tok-fine"
	rc_expect_status 200 "$name: a negative"
	rc_expect_json status not_revoked "$name: negative not_revoked"
	rc_expect_eq "$(hole_count)" "$before" "$name: a negative never asks the authority"
	t0=$(now_ms)
	rc_curl --max-time 30 "$url/v1/check?id=tok-rev-1"
	ms=$(( $(now_ms) - t0 ))
	rc_expect_status 503 "$name: a positive with a silent authority"
	rc_expect_json error authority_unavailable "$name: authority_unavailable"
	[ "$ms" -lt 10000 ] && rc_ok "$name: answered in $ms ms (< 10 s: upstream_timeout 1s used)" ||
	    rc_fail "$name: answered in $ms ms, not under 10 s with upstream_timeout 1s"
	rc_expect_eq "$(( $(hole_settle) - before ))" \
	    $((retries + 1)) "$name: upstream_retries $retries -> $((retries + 1)) connection(s)"
	rc_curl "$url/v1/status"
	rc_expect_json authority.retries "$retries" "$name: $retries retries counted"
	rc_expect_match "$(rc_json authority.last_error)" '[Tt]ime(out|d out)' \
	    "$name: the timeout is the error shown"
	rc_curl "$url/v1/check?id=tok-fine"
	rc_expect_json status not_revoked "$name: negatives still answer after the timeout"
}
HOLE_EDGE=(--trusted-key "$T/key.pub" --sync-interval "$SI" --poll-interval 1
    --upstream-insecure-http --upstream-filter "$O_URL/v1/filter" --upstream-check "$HOLE_URL/v1/check"
    --upstream-timeout 1s)
rc_start H0 "${HOLE_EDGE[@]}" --state-dir "$T/sh0" --upstream-retries 0
ask_hole H0 0
rc_stop H0 || rc_fail "H0 did not exit 0"
rc_start H2 "${HOLE_EDGE[@]}" --state-dir "$T/sh2" --upstream-retries 2
ask_hole H2 2
rc_stop H2 || rc_fail "H2 did not exit 0"
# sync_timeout: a filter download from the silent host gives up after 2 s
# (the default, 600 s, would not within this wait) and says why.
rc_start HS --trusted-key "$T/key.pub" --sync-interval "$SI" --state-dir "$T/shs" --upstream-insecure-http \
    --upstream-filter "$HOLE_URL/filter.rcf" --sync-timeout 2s
if wait_status "$HS_URL" sync.result '^download_failed$' 10; then
	rc_ok "HS: a silent filter host fails the sync within sync_timeout"
else
	rc_fail "HS: no failed sync within 10 s with sync_timeout 2s (result $(rc_json sync.result))"
fi
rc_expect_match "$(rc_json sync.error)" '[Tt]ime(out|d out)' "HS: the timeout is the sync error"
rc_stop HS || rc_fail "HS did not exit 0"
kill -TERM "$HOLE_PID" 2>/dev/null || true
wait "$HOLE_PID" 2>/dev/null || true
HOLE_PID=

# An https upstream whose certificate no CA vouches for: refused, never
# downloaded (curl itself agrees it is untrusted, and fetches it with -k).
curl -sk -o /dev/null "$NG_TLS_URL/filters/current/filter.rcf" &&
    rc_ok "nginx serves the filter over https" || rc_fail "nginx https is not up"
rc_start E5 --trusted-key "$T/key.pub" --sync-interval "$SI" --state-dir "$T/s5" \
    --upstream-filter "$NG_TLS_URL/filters/current/filter.rcf"
if wait_status "$E5_URL" sync.result '^download_failed$' $((2 * SI + GRACE)); then
	rc_ok "E5 refuses an unverifiable TLS certificate"
else
	rc_fail "E5: self-signed upstream not refused (result $(rc_json sync.result))"
fi
rc_expect_match "$(rc_json sync.error)" '[Cc]ertificate|SSL' "E5: the TLS error is shown"
rc_expect_json filter null "E5 loaded nothing"
rc_stop E5 || rc_fail "E5 did not exit 0"

# ---------------------------------------------------------------- v2 reaches both edges
build 2
rc_wait_version "$O_URL" 2 10 || rc_fail "origin did not load version 2"
t0=$(now_ms)
for e in E1 E2; do
	url=$(eval echo "\$${e}_URL")
	if rc_wait_version "$url" 2 $((2 * SI + GRACE)); then
		rc_ok "$e: version 2 within two sync intervals (+${GRACE}s grace), $(( $(now_ms) - t0 )) ms"
	else
		rc_fail "$e: version 2 not served within $((2 * SI + GRACE))s"
	fi
done

# ---------------------------------------------------------------- v3, short-lived, then the origin goes down
build 3 --valid-for 25s
rc_wait_version "$O_URL" 3 10 || rc_fail "origin did not load version 3"
for e in E1 E2; do
	url=$(eval echo "\$${e}_URL")
	rc_wait_version "$url" 3 $((2 * SI + GRACE)) || rc_fail "$e: version 3 not synced"
done
rc_curl "$E1_URL/v1/status"
EXPIRES=$(rc_json filter.expires_at)
rc_stop O || rc_fail "origin did not stop cleanly"
for e in E1 E2; do
	url=$(eval echo "\$${e}_URL")
	rc_curl "$url/v1/check?id=tok-fine"
	rc_expect_status 200 "$e, origin down: a negative still answers"
	rc_expect_json status not_revoked "$e, origin down: not_revoked"
	rc_curl "$url/v1/check?id=tok-rev-2"
	rc_expect_status 503 "$e, origin down: a positive"
	rc_expect_json error authority_unavailable "$e, origin down: authority_unavailable"
	rc_expect_match "$(rc_header Retry-After)" '^[0-9]+$' "$e: Retry-After"
	rc_curl -H 'Content-Type: application/json' \
	    --data-binary '{"items":[{"id":"tok-fine"},{"id":"tok-rev-1"}]}' "$url/v1/check"
	rc_expect_json results.0.status not_revoked "$e, origin down: batch negative"
	rc_expect_json results.1.error authority_unavailable "$e, origin down: batch positive"
done
wait_status "$E1_URL" sync.result '^download_failed$' 5 ||
    rc_fail "E1: the failed sync is not shown"
rc_expect_match "$(rc_json sync.error)" '.' "E1: sync error shown"
rc_expect_match "$(rc_json sync.failures)" '^[1-9]' "E1: failures counted"
rc_expect_match "$(rc_json sync.last_success)" '^20' "E1: last success kept"
rc_expect_json filter.version 3 "E1 keeps version 3"
rc_expect_match "$(rc_json authority.failed)" '^[1-9]' "E1: authority failures counted"

# ---------------------------------------------------------------- restart with the origin down
rc_stop E1 || rc_fail "E1 did not stop cleanly"
mark=$(rc_log_mark "$T/E1.log")
rc_start E1 "${EDGE[@]}" --state-dir "$T/s1" \
    --upstream-filter "$O_URL/v1/filter"
rc_curl "$E1_URL/v1/status"
if [ "$(rc_json filter.version)" = 3 ]; then
	rc_ok "restarted E1 serves its persisted version 3 at once"
else
	rc_wait_version "$E1_URL" 3 3 || rc_fail "restarted E1 did not load its persisted filter"
fi
rc_expect_match "$(rc_json sync.last_success)" '^null$' "restarted E1: upstream never answered"
rc_curl "$E1_URL/v1/check?id=tok-fine"
rc_expect_status 200 "restarted E1 answers negatives"
rc_curl "$E1_URL/readyz"
rc_expect_status 200 "restarted E1 is ready"
rc_wait_log_since "$T/E1.log" "$mark" "persisted filter version 3" && rc_ok "restart logged" ||
    rc_fail "no log line about the persisted filter"

# ---------------------------------------------------------------- E3: bad files offered
# E3 syncs from nginx's /bad/filter.rcf; each offer replaces that file
# (with an mtime of its own, so nginx's ETag changes).
OFFER_N=0
offer() {
	OFFER_N=$((OFFER_N + 1))
	cp "$1" "$B/.tmp"
	touch -d "@$((1700000000 + OFFER_N))" "$B/.tmp"
	mv -f "$B/.tmp" "$B/filter.rcf"
}
gbuild() {	# gbuild VERSION KEY [args]: $G/vN/filter.rcf
	FB build --key "$2" --out "$G/$1" --version "$1" --quiet --fp-rate 1e-7 "${@:3}" \
	    "$T/tokens.txt"
}
gbuild 1 "$T/key.pem"
gbuild 2 "$T/key.pem"
gbuild 3 "$T/evil.pem"
gbuild 4 "$T/key.pem"
gbuild 5 "$T/key.pem" --valid-for 1s
gbuild 6 "$T/key.pem"
gf() { echo "$G/$1/current/filter.rcf"; }
offer "$(gf 2)"
rc_start E3 --trusted-key "$T/key.pub" --sync-interval "$SI" --state-dir "$T/s3" --upstream-insecure-http \
    --upstream-filter "$NG_URL/bad/filter.rcf" --max-download 4096 --max-lag 2
rc_wait_version "$E3_URL" 2 10 || rc_fail "E3 did not load version 2"

refused() {	# refused FILE WHAT RESULT ERROR-REGEX: offers FILE to E3
	local before
	rc_curl "$E3_URL/v1/status"
	before=$(rc_json sync.failures)
	offer "$1"
	shift
	# This offer's own refusal: each case's error matches no other's.
	if wait_status "$E3_URL" sync.error "$3" $((2 * SI + GRACE)); then
		rc_ok "E3 refuses $1"
	else
		rc_fail "E3: $1 not refused as expected (error: $(rc_json sync.error))"
	fi
	rc_expect_json sync.result "$2" "E3: $1 -> result $2"
	rc_expect_json filter.version "$E3_VER" "E3: $1: version $E3_VER kept"
	rc_expect_json filter.stale false "E3: $1: still fresh"
	[ "$(rc_json sync.failures)" -gt "$before" ] && rc_ok "E3: $1 counted" ||
	    rc_fail "E3: $1 not counted"
	rc_curl "$E3_URL/v1/check?id=tok-fine"
	rc_expect_status 200 "E3 after $1: still answers"
	rc_expect_json filter_version "$E3_VER" "E3 after $1: from version $E3_VER"
}
E3_VER=2
refused "$(gf 1)" "an older version" refused 'rollback'
rc_curl "$E3_URL/v1/status"
rc_expect_json sync.upstream_version_seen 2 "E3: an older version is not newer"
refused "$(gf 3)" "a filter signed by an untrusted key" refused 'not trusted|signature'
rc_curl "$E3_URL/v1/status"
rc_expect_json sync.upstream_version_seen 2 "E3: an unverified version is not seen"
head -c 200 "$(gf 4)" >"$T/trunc.rcf"
refused "$T/trunc.rcf" "a truncated file" refused 'download of 200 bytes'
head -c 10000 /dev/urandom >"$T/big.rcf"
refused "$T/big.rcf" "a file over --max-download" too_large 'max_download'
# A transfer cut short: the server announces the whole file and closes
# the connection halfway. E4 starts from a persisted filter (version 2).
CUT_PORT=$(rc_free_port)
python3 - "$CUT_PORT" "$(gf 4)" >"$T/cut.log" 2>&1 <<'PY' &
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(16)
data = open(sys.argv[2], "rb").read()
while True:
    c, _ = s.accept()
    try:
        c.recv(65536)
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                  % len(data) + data[: len(data) // 2])
    finally:
        c.close()
PY
CUT_PID=$!
end=$(( $(now_ms) + 5000 ))
until (exec 3<>"/dev/tcp/127.0.0.1/$CUT_PORT") 2>/dev/null; do
	[ "$(now_ms)" -lt "$end" ] || { rc_fail "the cutting server did not start"; break; }
	sleep 0.1
done
cp "$(gf 2)" "$T/s4/edge-filter.rcf"
rc_start E4 --trusted-key "$T/key.pub" --sync-interval "$SI" --state-dir "$T/s4" --upstream-insecure-http \
    --upstream-filter "http://127.0.0.1:$CUT_PORT/filter.rcf"
if wait_status "$E4_URL" sync.error '[Pp]artial|bytes remaining' $((2 * SI + GRACE)); then
	rc_ok "E4 refuses a transfer cut short"
else
	rc_fail "E4: a transfer cut short not reported (error $(rc_json sync.error))"
fi
rc_expect_json sync.result download_failed "E4: download_failed"
rc_expect_json filter.version 2 "E4 keeps its persisted version 2"
rc_expect_json sync.upstream_version_seen null "E4: nothing verified was seen"
rc_curl "$E4_URL/v1/check?id=tok-fine"
rc_expect_status 200 "E4 still answers"
rc_stop E4 || rc_fail "E4 did not exit 0"
kill -TERM "$CUT_PID" 2>/dev/null || true
wait "$CUT_PID" 2>/dev/null || true
CUT_PID=

grep -c '"result":"refused"' "$T/s3/audit.log" >/dev/null &&
    rc_ok "refusals in E3's audit log" || rc_fail "no refusal in E3's audit log"

# Version lag: a verified newer version that cannot be loaded (it has
# expired) makes E3 stale after --max-lag 2; a good newer one heals it.
while [ "$(date +%s)" -lt $(( $(stat -c %Y "$(gf 5)") + 2 )) ]; do sleep 0.2; done
offer "$(gf 5)"
# Its own event: the refusal of version 5. A sync records the version it
# verified before it records why it refused it, so upstream_version_seen 5
# can show beside the previous case's error ("download larger than
# max_download"); the error says this case's refusal happened.
wait_status "$E3_URL" sync.error 'expired' $((2 * SI + GRACE)) ||
    rc_fail "E3: expired version 5 not refused (error: $(rc_json sync.error))"
rc_expect_json sync.upstream_version_seen 5 "E3: verified version 5 seen"
wait_status "$E3_URL" filter.stale_reason '^version_lag$' $((2 + 2 * SI + GRACE)) ||
    rc_fail "E3: not stale by version lag"
rc_curl "$E3_URL/v1/check?id=tok-fine"
rc_expect_status 503 "E3 lagging: checks refused"
rc_expect_json error filter_stale "E3 lagging: filter_stale"
offer "$(gf 6)"
rc_wait_version "$E3_URL" 6 $((2 * SI + GRACE)) || rc_fail "E3 did not load version 6"
rc_curl "$E3_URL/v1/check?id=tok-fine"
rc_expect_status 200 "E3 fresh again on version 6"
# Version 6 again, signed by the right key, with other bytes.
printf 'tok-rev-6b\n' >"$T/extra.txt"
FB build --key "$T/key.pem" --out "$G/6b" --version 6 --quiet --fp-rate 1e-7 \
    "$T/tokens.txt" "$T/extra.txt"
E3_VER=6
refused "$G/6b/current/filter.rcf" "the same version with other bytes" refused \
    'already accepted with different bytes'

# ---------------------------------------------------------------- expiry with the origin down
left=$(( $(date -d "$EXPIRES" +%s) - $(date +%s) ))
for e in E1 E2; do
	url=$(eval echo "\$${e}_URL")
	wait_status "$url" filter.stale '^true$' $((left + 3)) ||
	    rc_fail "$e: version 3 did not turn stale at $EXPIRES"
	rc_expect_json filter.stale_reason expired "$e: stale because expired"
	rc_curl "$url/v1/check?id=tok-fine"
	rc_expect_status 503 "$e, expired: a negative is refused"
	rc_expect_json error filter_stale "$e, expired: filter_stale"
	rc_curl "$url/readyz"
	rc_expect_status 503 "$e, expired: not ready"
done

for e in E1 E2 E3; do
	rc_stop "$e" || rc_fail "$e did not exit 0 on SIGTERM"
done
rc_done
