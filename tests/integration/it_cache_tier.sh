#!/usr/bin/env bash
# it_cache_tier.sh - a real nginx with the shipped config/nginx-cache-tier.conf between an origin and five edges: each base and delta leaves the origin once, however many edges fetch it, and every edge converges
#
# A real chain (filterbuild follow on PostgreSQL) served by an origin O.
# nginx runs config/nginx-cache-tier.conf as shipped, with this test's
# ports and cache directory substituted. Five edges sync through it
# (pushed: one long-poll each, passed through; the files by their
# immutable names, cached). The origin's /metrics count what it served:
# one /v1/filter/V for five edges, and after three revocations one
# /v1/delta/V/SEQ per delta; its delta_file body bytes are the three
# files' sizes. nginx's access log shows the five edges' fetches of each
# delta, and every edge answers each
# revocation from its own delta overlay.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg.sh"

command -v nginx >/dev/null || { rc_fail "nginx is not installed"; rc_done; }
N=5
F=$T/filters
rc_follow_chain "$F"
mkdir -p "$T/so"
rc_start O --filter-dir "$F" --trusted-key "$T/key.pub" --state-dir "$T/so"
rc_wait_version "$O_URL" "$V1" || rc_fail "origin serves the base"

# ---------------------------------------------------------------- nginx
NG=$T/nginx
NG_PID=
ng_cleanup() {
	if [ -n "$NG_PID" ]; then
		kill -TERM "$NG_PID" 2>/dev/null || true
		wait "$NG_PID" 2>/dev/null || true
	fi
	rc_cleanup
}
trap ng_cleanup EXIT
mkdir -p "$NG/cache"
ng_start() {
	local try port
	for try in 1 2 3 4 5; do
		port=$(rc_free_port)
		{
			rc_nginx_conf "$NG"
			# The shipped file, only its addresses and cache path ours.
			sed -e "s|server 127.0.0.1:8080;|server 127.0.0.1:$O_PORT;|" \
			    -e "s|listen 8081;|listen 127.0.0.1:$port;|" \
			    -e "s|/var/lib/nginx/revcheck-cache|$NG/cache|" \
			    "$RC_SRC/config/nginx-cache-tier.conf"
			echo "}"
		} >"$NG/nginx.conf"
		if rc_nginx_run "$NG" "$port"; then
			NG_URL="http://127.0.0.1:$port"
			return 0
		fi
	done
	echo "nginx did not start:" >&2
	cat "$NG/stderr.log" "$NG/error.log" >&2 || true
	return 1
}
ng_start || rc_fail "nginx starts with config/nginx-cache-tier.conf"
grep -q "127.0.0.1:$O_PORT;" "$NG/nginx.conf" &&
    ! grep -Eq ':8080;|listen 8081;|/var/lib/nginx/revcheck-cache' "$NG/nginx.conf" &&
    rc_ok "the shipped config, its addresses substituted" ||
    rc_fail "the config's example addresses were not all substituted"

# metric NAME: its value in O's /metrics (0 when absent).
metric() {
	rc_curl "$O_URL/metrics"
	awk -v n="$1" '$1 == n { v = $2 } END { print v + 0 }' <<<"$RC_BODY"
}
FILES='revcheckd_http_requests_total{endpoint="filter_file",code="200"}'
DELTAS='revcheckd_http_requests_total{endpoint="delta_file",code="200"}'
DBYTES='revcheckd_http_response_bytes_total{endpoint="delta_file"}'
LPBYTES='revcheckd_http_response_bytes_total{endpoint="delta"}'

# A first delta before the edges start: the chain they join has a head.
rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('tok-c0')"
rc_wait_json "$O_URL/v1/check?id=tok-c0" status revoked 30 ||
    rc_fail "origin: the first delta applied"

# ---------------------------------------------------------------- edges
# sync_interval 60 s: every change in time comes by the long-poll.
for i in $(seq 1 $N); do
	mkdir -p "$T/s$i"
	rc_start "E$i" --trusted-key "$T/key.pub" --state-dir "$T/s$i" \
	    --sync-interval 60 --upstream-wait 20 --upstream-insecure-http \
	    --upstream-filter "$NG_URL/v1/filter" --upstream-check "$O_URL/v1/check"
done
for i in $(seq 1 $N); do
	eval "u=\$E${i}_URL"
	rc_wait_json "$u/v1/check?id=tok-c0" status revoked 60 ||
	    rc_fail "E$i: base and first delta through the cache tier"
	rc_wait_json "$u/v1/status" sync.mode push 60 ||
	    rc_fail "E$i: pushed to through the cache tier"
done
rc_expect_eq "$(metric "$FILES")" 1 "the base left the origin once for $N edges"
rc_expect_eq "$(grep -c ' /v1/filter/'"$V1"' ' "$NG/access.log")" "$N" \
    "nginx served the base to all $N edges"

# ---------------------------------------------------------------- revocations
d0=$(metric "$DELTAS")
b0=$(metric "$DBYTES")
lp0=$(metric "$LPBYTES")
seq0=$(rc_curl "$O_URL/v1/status"; rc_json filter.delta.seq)
for k in 1 2 3; do
	rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('tok-c$k')"
	for i in $(seq 1 $N); do
		eval "u=\$E${i}_URL"
		rc_wait_json "$u/v1/check?id=tok-c$k" status revoked 60 &&
		    rc_expect_json source delta "E$i: tok-c$k from its own delta overlay" ||
		    rc_fail "E$i: tok-c$k never revoked"
	done
done
seq1=$(rc_curl "$O_URL/v1/status"; rc_json filter.delta.seq)
nd=$((seq1 - seq0))
[ "$nd" -ge 3 ] && rc_ok "three revocations, $nd deltas" || rc_fail "only $nd deltas"
d1=$(metric "$DELTAS")
b1=$(metric "$DBYTES")
lp1=$(metric "$LPBYTES")
# A delta reaches the edges as a file through nginx (each edge fetches its
# immutable URL) or, when the origin applied it before it wrote its head,
# inside each edge's long-poll answer (per edge: the egress the cache
# tier does not absorb, counted with the long-poll bytes below). Every
# file fetched left the origin once, whatever the number of edges.
want=0 nfetched=0
for s in $(seq $((seq0 + 1)) "$seq1"); do
	n=$(grep -c " /v1/delta/$V1/$s " "$NG/access.log" || true)
	[ "$n" = 0 ] && { echo "# delta $s reached the edges inside their long-poll answers"; continue; }
	[ "$n" -le "$N" ] && rc_ok "nginx served delta $s to $n of $N edges (the others had it in their long-poll answer)" ||
	    rc_fail "nginx served delta $s $n times for $N edges"
	f=$(printf '%s/current/delta/%020d.rcd' "$F" "$s")
	[ -f "$f" ] || f=$(ls "$F"/current/delta/*"$s".rcd 2>/dev/null | head -n 1)
	want=$((want + $(stat -c %s "$f")))
	nfetched=$((nfetched + 1))
done
echo "# $nfetched of $nd deltas went through the cache tier as files"
rc_expect_eq "$((d1 - d0))" "$nfetched" "each delta file left the origin once for $N edges"
rc_expect_eq "$((b1 - b0))" "$want" "delta bytes from the origin: each file once"
# Per edge, not per file: the signed heads (one per change, and one per
# --head-every re-signing: 2 s here).
echo "# long-poll answers from the origin: $((lp1 - lp0)) body bytes for $nd deltas and $N edges"

rc_done
