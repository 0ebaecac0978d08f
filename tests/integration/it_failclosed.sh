#!/usr/bin/env bash
# it_failclosed.sh - fail closed: an unsettled filter positive is never not_revoked; a stale filter answers nothing
#
# Authority unreachable: edges sync a filter from a real origin but their
# upstream check (the authority for filter positives) is a closed port,
# absent, a fake that answers 500, one that answers garbage, one that
# answers not_revoked for another id, or the real origin after it stopped.
# For true positives and for false positives (ids the filter flags that
# the origin's table clears) every endpoint must refuse (503
# authority_unavailable, per-item errors in a batch, 503 from /v1/authz):
# never not_revoked. Filter negatives still answer not_revoked (from the
# filter, which is definitive).
# Stale: one daemon's filter expires (signed expires_at), another's
# outgrows --max-age; then every check endpoint (GET, HEAD, POST single
# id/cert/token, POST batch, /v1/authz by bearer and by certificate)
# answers 503 and nothing comes from the filter.
. "$(dirname "$0")/lib.sh"

D=$(cd "$(dirname "$0")" && pwd)
FB() { "$FILTERBUILD" "$@"; }
now_ms() { local t=${EPOCHREALTIME/[.,]/}; echo $((10#$t / 1000)); }	# no exec: a fork is dear on some CI machines
CJ='Content-Type: application/json'

FB keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
seq -f 'tok-%g' 1 50 >"$T/tokens.txt"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$T/leaf.key" -out "$T/leaf.pem" -subj /CN=failclosed -days 2 2>/dev/null
enc() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(open(sys.argv[1]).read(), safe=""))' "$1"; }

# ---------------------------------------------------------------- stale daemons first (they need time)
now=$(date +%s)
# Expires 20 s from now: three daemons start and answer while it is
# fresh (5 s was too short for a loaded machine), and it is stale long
# before the edges' cases below are done.
REVCHECK_FAKE_NOW=$((now - 3600 + 20)) FB build --key "$T/key.pem" --out "$T/fexp" \
    --valid-for 1h --quiet "$T/tokens.txt"
FB build --key "$T/key.pem" --out "$T/fage" --valid-for 1h --quiet "$T/tokens.txt"
mkdir -p "$T/s1" "$T/s2"
# Tokens here are unsigned: this test is about revocation answers, so
# the daemons run revocation-only (it_jwt.sh covers verification).
RO=(--token-verification revocation-only)
rc_start S1 --filter-dir "$T/fexp" --trusted-key "$T/key.pub" --state-dir "$T/s1" "${RO[@]}"
# S3 serves the same soon-expiring filter under libfaketime, whose clock
# the test steps back once the filter has expired (as an operator's date
# command, or NTP spoofed to an edge, would): it must stay expired.
mkdir -p "$T/s3"
rc_start_faketime S3 "$T/clock.rc" +0 --filter-dir "$T/fexp" --trusted-key "$T/key.pub" --state-dir "$T/s3" "${RO[@]}"
rc_start S2 --filter-dir "$T/fage" --trusted-key "$T/key.pub" --state-dir "$T/s2" --max-age 20s "${RO[@]}"
for n in S1 S2; do
	u=$(eval echo "\$${n}_URL")
	rc_wait_ready "$u" 30 || rc_fail "$n not ready"
	rc_curl "$u/v1/check?id=tok-1"; rc_expect_json status revoked "$n answers while fresh"
done
# filterbuild's clock hook would freeze the daemon's clock (S1's filter
# would never expire): the daemon refuses to run or check a config with it.
for a in "--check-config" "--listen 127.0.0.1:1"; do
	# shellcheck disable=SC2086
	if out=$(REVCHECK_FAKE_NOW=$now timeout 10 "$REVCHECKD" --filter-dir "$T/fexp" \
	    --trusted-key "$T/key.pub" --state-dir "$T/s1" $a 2>&1); then
		rc_fail "revcheckd $a ran with REVCHECK_FAKE_NOW set"
	else
		rc_expect_match "$out" 'REVCHECK_FAKE_NOW is set' "revcheckd $a: refused with REVCHECK_FAKE_NOW"
	fi
done

# ---------------------------------------------------------------- origin and edges
# The classic layout: at a few keys a blocked filter rounds up to one
# 512-bit block and has almost no false positives, which this test needs.
FB build --key "$T/key.pem" --out "$T/f" --fp-rate 0.3 --layout classic --quiet "$T/tokens.txt"
mkdir -p "$T/so"
rc_start O --filter-dir "$T/f" --trusted-key "$T/key.pub" --state-dir "$T/so" "${RO[@]}"
rc_wait_ready "$O_URL" 30 || rc_fail "origin not ready"
# False positives (filter positive, table negative) and negatives, as the
# origin classifies them.
python3 -c 'import json; print(json.dumps({"items": [{"id": "probe-%d" % i} for i in range(400)]}))' >"$T/probe.json"
rc_curl -H "$CJ" --data-binary "@$T/probe.json" "$O_URL/v1/check"
python3 - "$RC_BODY_FILE" "$T" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
fp = [x["id"] for x in r if x["source"] == "authoritative" and x["status"] == "not_revoked"]
neg = [x["id"] for x in r if x["source"] == "filter" and x["status"] == "not_revoked"]
open(sys.argv[2] + "/fp", "w").write("\n".join(fp[:4]) + "\n")
open(sys.argv[2] + "/neg", "w").write("\n".join(neg[:2]) + "\n")
PY
mapfile -t FPS <"$T/fp"
mapfile -t NEGS <"$T/neg"
[ "${#FPS[@]}" -ge 2 ] && rc_ok "found false positives: ${FPS[*]}" || rc_fail "no false positives found"
POS=(tok-1 tok-50 "${FPS[@]}")

FAKES=()
trap 'kill "${FAKES[@]}" 2>/dev/null || true; rc_cleanup' EXIT
fake() {	# fake MODE: starts a fake upstream on a port it picks; sets UP
	local i
	python3 "$D/rawhttp.py" serve 0 "$1" >"$T/fake.$1" &
	FAKES+=($!)
	for i in $(seq 1 300); do
		UP=$(head -n 1 "$T/fake.$1" 2>/dev/null || true)
		[ -n "$UP" ] && return 0
		sleep 0.1
	done
	rc_fail "fake upstream $1 did not start"
}
fake 500; UP_500=$UP
fake garbage; UP_GARB=$UP
fake wrongid; UP_WRONG=$UP
EDGE=(--trusted-key "$T/key.pub" --sync-interval 1 --upstream-insecure-http --upstream-filter "$O_URL/v1/filter" "${RO[@]}")
mkdir -p "$T/e1" "$T/e2" "$T/e3" "$T/e4" "$T/e5" "$T/e6"
rc_start E1 "${EDGE[@]}" --state-dir "$T/e1" --upstream-check http://127.0.0.1:1/v1/check
rc_start E2 "${EDGE[@]}" --state-dir "$T/e2"
rc_start E3 "${EDGE[@]}" --state-dir "$T/e3" --upstream-check "http://127.0.0.1:$UP_500/v1/check"
rc_start E4 "${EDGE[@]}" --state-dir "$T/e4" --upstream-check "http://127.0.0.1:$UP_GARB/v1/check"
rc_start E5 "${EDGE[@]}" --state-dir "$T/e5" --upstream-check "http://127.0.0.1:$UP_WRONG/v1/check"
rc_start E6 "${EDGE[@]}" --state-dir "$T/e6" --upstream-check "$O_URL/v1/check"
for n in E1 E2 E3 E4 E5 E6; do
	rc_wait_ready "$(eval echo "\$${n}_URL")" 30 || rc_fail "$n did not sync a filter"
done

# closed WHAT URL: every way of asking about a positive is refused.
closed() {
	local what=$1 u=$2 id jwt
	for id in "${POS[@]}"; do
		rc_curl "$u/v1/check?id=$id"
		rc_expect_status 503 "$what: GET $id"
		rc_expect_json error authority_unavailable "$what: GET $id"
		rc_curl -H "$CJ" --data-binary "{\"id\": \"$id\"}" "$u/v1/check"
		rc_expect_status 503 "$what: POST id $id"
		jwt=$(rc_jwt "" "$id")
		rc_curl -H "$CJ" --data-binary "{\"token\": \"$jwt\"}" "$u/v1/check"
		rc_expect_status 503 "$what: POST token jti=$id"
		rc_curl -H "Authorization: Bearer $jwt" "$u/v1/authz"
		rc_expect_status 503 "$what: authz bearer jti=$id"
		rc_expect_eq "$(rc_header X-Revcheck-Status)" authority_unavailable "$what: authz verdict for $id"
	done
	rc_curl -H "$CJ" --data-binary "{\"items\": [{\"id\": \"tok-1\"}, {\"id\": \"${FPS[0]}\"}, {\"id\": \"${NEGS[0]}\"}]}" "$u/v1/check"
	rc_expect_status 200 "$what: batch"
	rc_expect_json results.0.error authority_unavailable "$what: batch true positive"
	rc_expect_json results.1.error authority_unavailable "$what: batch false positive"
	rc_expect_json results.2.status not_revoked "$what: batch negative from the filter"
	rc_curl "$u/v1/check?id=${NEGS[0]}"
	rc_expect_json status not_revoked "$what: a filter negative still answers"
	rc_expect_json source filter "$what: ...from the filter"
}
closed "closed upstream port" "$E1_URL"
closed "no upstream check" "$E2_URL"
closed "upstream answers 500" "$E3_URL"
closed "upstream answers garbage" "$E4_URL"
closed "upstream answers for another id" "$E5_URL"
# The fakes were really asked, and their answers refused for what they were.
for c in "E3 500" "E4 garbage|JSON|json|answer" "E5 not.about.the.scope.and.id"; do
	set -- $c
	rc_curl "$(eval echo "\$${1}_URL")/v1/status"
	rc_expect_match "$(rc_json authority.failed)" '^[1-9]' "$1: upstream failures counted"
	rc_expect_match "$(rc_json authority.last_error)" "$2" "$1: last upstream error names the problem"
done
# Live upstream: positives settled; then the origin stops.
rc_curl "$E6_URL/v1/check?id=tok-1"; rc_expect_json status revoked "live upstream: a positive settled"
rc_curl "$E6_URL/v1/check?id=${FPS[0]}"; rc_expect_json status not_revoked "live upstream: a false positive cleared by the origin"
rc_expect_json source authoritative
rc_stop O && rc_ok "origin stopped" || rc_fail "origin SIGTERM: non-zero exit"
closed "origin stopped" "$E6_URL"
for n in E1 E2 E3 E4 E5 E6; do
	if grep -qE '"status":"not_revoked","source":"authoritative"' "$T/$n.log" 2>/dev/null; then
		rc_fail "$n logged an authoritative not_revoked"
	fi
done

# ---------------------------------------------------------------- stale
# stale WHAT URL REASON: every check endpoint answers 503, nothing else.
stale() {
	local what=$1 u=$2 why=$3 jwt body
	jwt=$(rc_jwt "" tok-1)
	body=$(rc_json_body cert "$T/leaf.pem")
	for q in "id=tok-1" "id=clean" "id=x&scope=nowhere"; do
		rc_curl "$u/v1/check?$q"
		rc_expect_status 503 "$what: GET $q"
		rc_expect_json error filter_stale "$what: GET $q"
	done
	rc_curl -I "$u/v1/check?id=tok-1"; rc_expect_status 503 "$what: HEAD"
	rc_curl -H "$CJ" --data-binary '{"id": "tok-1"}' "$u/v1/check"
	rc_expect_status 503 "$what: POST id"; rc_expect_json error filter_stale
	rc_curl -H "$CJ" --data-binary '{"id": "clean"}' "$u/v1/check"
	rc_expect_status 503 "$what: POST clean id"
	rc_curl -H "$CJ" --data-binary "@$body" "$u/v1/check"
	rc_expect_status 503 "$what: POST cert"
	rc_curl -H "$CJ" --data-binary "{\"token\": \"$jwt\"}" "$u/v1/check"
	rc_expect_status 503 "$what: POST token"
	rc_curl -H "$CJ" --data-binary '{"items": [{"id": "tok-1"}, {"id": "clean"}]}' "$u/v1/check"
	rc_expect_status 503 "$what: POST batch"; rc_expect_json error filter_stale
	rc_curl -H "Authorization: Bearer $jwt" "$u/v1/authz"
	rc_expect_status 503 "$what: authz bearer"
	rc_curl -H "Authorization: Bearer $(rc_jwt "" clean)" "$u/v1/authz"
	rc_expect_status 503 "$what: authz clean bearer"
	rc_curl -H "X-SSL-Client-Cert: $(enc "$T/leaf.pem")" "$u/v1/authz"
	rc_expect_status 503 "$what: authz certificate"
	rc_curl "$u/readyz"; rc_expect_status 503 "$what: readyz"
	rc_curl "$u/v1/status"; rc_expect_json filter.stale_reason "$why" "$what: reason"
}
for n in S1 S2 S3; do
	u=$(eval echo "\$${n}_URL")
	end=$(( $(now_ms) + 30000 ))
	while [ "$(now_ms)" -lt "$end" ] && [ "$(curl -s -o /dev/null -w '%{http_code}' "$u/readyz")" = 200 ]; do sleep 0.1; done
	[ "$(now_ms)" -lt "$end" ] || rc_fail "$n did not go stale"
done
stale "expired filter" "$S1_URL" expired
# S3's wall clock goes back two minutes, to before the filter expired:
# the daemon's clock never runs back (util_now), so it stays expired.
echo "-120" >"$T/clock.rc"
sleep 1.5	# the clock stays stepped back a while: time going back is what is tested
stale "expired filter, wall clock stepped back" "$S3_URL" expired
stale "filter over --max-age" "$S2_URL" max_age
for n in S1 S2 S3; do
	if grep -q '"status":"not_revoked"' "$T/$n.log" 2>/dev/null; then rc_fail "$n answered from a stale filter"; fi
done
for n in S1 S2 S3 E1 E2 E3 E4 E5 E6; do
	rc_stop "$n" && rc_ok "$n: SIGTERM exit 0" || rc_fail "$n: SIGTERM non-zero exit"
	if grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$T/$n.log"; then
		rc_fail "$n: sanitizer report in the daemon's stderr"
		grep -E -A10 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$T/$n.log" | head -n 30 >&2
	fi
done
rc_done
