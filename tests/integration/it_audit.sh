#!/usr/bin/env bash
# it_audit.sh - filterbuild audit over a live fleet: origin and two edges, then stale, behind, unreachable nodes and failing delta syncs
. "$(dirname "$0")/lib.sh"

FB() { "$FILTERBUILD" "$@"; }
now_ms() { local t=${EPOCHREALTIME/[.,]/}; echo $((10#$t / 1000)); }	# no exec: a fork is dear on some CI machines

# audit [args]: runs filterbuild audit, sets AUD_RC and AUD_OUT (stdout),
# AUD_ERR (stderr).
audit() {
	AUD_RC=0
	"$FILTERBUILD" audit --timeout 5s "$@" >"$T/audit.out" 2>"$T/audit.err" ||
	    AUD_RC=$?
	AUD_OUT=$(cat "$T/audit.out")
	AUD_ERR=$(cat "$T/audit.err")
}

# jq_py EXPR: evaluates a Python expression over the last --json output
# (j), in one long-lived python3: a python3 start can cost seconds on a
# loaded machine. It reads "FILE<TAB>EXPR" lines and answers each with
# the result and a NUL.
coproc JQPY { exec python3 -u -c '
import json, sys
for line in sys.stdin:
    f, expr = line.rstrip("\n").split("\t", 1)
    try:
        j = json.load(open(f))
        r = str(eval(expr))
    except Exception as e:
        r = "<error: %s>" % e
    sys.stdout.buffer.write(r.encode() + b"\0")
    sys.stdout.buffer.flush()
'; }
trap 'kill "${JQPY_PID:-}" 2>/dev/null || true; rc_cleanup' EXIT
jq_py() {
	local v
	printf '%s\t%s\n' "$T/audit.out" "$1" >&"${JQPY[1]}"
	IFS= read -r -d '' v <&"${JQPY[0]}"
	printf '%s\n' "$v"
}

FB keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
printf 'tok-rev-1\n' >"$T/tokens.txt"
F=$T/filters
G=$T/g
mkdir -p "$F" "$G" "$T/so" "$T/s1" "$T/s2" "$T/sd"
FB build --key "$T/key.pem" --out "$F" --version 1 --quiet "$T/tokens.txt"

rc_start O --filter-dir "$F" --trusted-key "$T/key.pub" --state-dir "$T/so" \
    --poll-interval 1
rc_wait_version "$O_URL" 1 || rc_fail "origin did not load version 1"
rc_start E1 --trusted-key "$T/key.pub" --state-dir "$T/s1" --sync-interval 1 \
    --upstream-insecure-http --upstream-filter "$O_URL/v1/filter" --upstream-check "$O_URL/v1/check"
# E2 syncs once at start, then only after an hour (it polls: no
# long-poll held upstream): it falls behind.
rc_start E2 --trusted-key "$T/key.pub" --state-dir "$T/s2" --sync-interval 1h --upstream-wait 0 \
    --upstream-insecure-http --upstream-filter "$O_URL/v1/filter" --upstream-check "$O_URL/v1/check"
rc_wait_version "$E1_URL" 1 10 || rc_fail "E1 did not sync version 1"
rc_wait_version "$E2_URL" 1 10 || rc_fail "E2 did not sync version 1"

# ---------------------------------------------------------------- usage
out=$("$FILTERBUILD" audit --help) && rc_expect_match "$out" '--max-lag' "audit --help"
"$FILTERBUILD" --help | grep -q audit && rc_ok "audit listed in filterbuild --help" ||
    rc_fail "audit missing from filterbuild --help"
audit
rc_expect_eq "$AUD_RC" 2 "audit without a URL is a usage error"
rc_expect_match "$AUD_ERR" 'at least one node URL' "audit without a URL says why"
audit ftp://example
rc_expect_eq "$AUD_RC" 2 "audit of a non-http URL is a usage error"
audit --max-lag many "$O_URL"
rc_expect_eq "$AUD_RC" 2 "bad --max-lag"
rc_expect_match "$AUD_ERR" 'max-lag' "bad --max-lag named"
out=$("$FILTERBUILD" audit --help) && rc_expect_match "$out" '--max-delta-lag' \
    "audit --help: --max-delta-lag"
audit --max-delta-lag -1 "$O_URL"
rc_expect_eq "$AUD_RC" 2 "bad --max-delta-lag"
rc_expect_match "$AUD_ERR" 'max-delta-lag' "bad --max-delta-lag named"

# ---------------------------------------------------------------- a healthy fleet
audit "$O_URL" "$E1_URL" "$E2_URL/"
rc_expect_eq "$AUD_RC" 0 "a fresh, up-to-date fleet passes"
rc_expect_eq "$(printf '%s\n' "$AUD_OUT" | grep -c ' OK$')" 3 "three OK rows"
rc_expect_match "$AUD_OUT" "$O_URL +origin +1 " "origin row: mode and version"
rc_expect_match "$AUD_OUT" "$E1_URL +edge +1 .*(updated|not_modified|unchanged)" \
    "edge row: mode, version, sync result"
rc_expect_match "$AUD_OUT" 'newest version seen: 1; 0 of 3 nodes' "summary line"
audit --json "$O_URL" "$E1_URL" "$E2_URL"
rc_expect_eq "$AUD_RC" 0 "--json: exit 0"
rc_expect_eq "$(jq_py 'len(j["nodes"])')" 3 "--json: three nodes"
rc_expect_eq "$(jq_py 'j["ok"]')" True "--json: ok"
rc_expect_eq "$(jq_py '[n["mode"] for n in j["nodes"]]')" "['origin', 'edge', 'edge']" \
    "--json: modes"
rc_expect_eq "$(jq_py '[n["version"] for n in j["nodes"]]')" "[1, 1, 1]" "--json: versions"
rc_expect_eq "$(jq_py 'j["nodes"][1]["sync_result"] in ("updated","not_modified","unchanged")')" \
    True "--json: edge sync result"
rc_expect_eq "$(jq_py 'all(n["stale"] is False and n["expires_in_seconds"] > 0 for n in j["nodes"])')" \
    True "--json: fresh, expiry ahead"

# ---------------------------------------------------------------- one edge behind
FB build --key "$T/key.pem" --out "$F" --version 2 --quiet "$T/tokens.txt"
rc_wait_version "$O_URL" 2 10 || rc_fail "origin did not load version 2"
rc_wait_version "$E1_URL" 2 10 || rc_fail "E1 did not sync version 2"
audit "$O_URL" "$E1_URL" "$E2_URL"
rc_expect_eq "$AUD_RC" 1 "an edge one version behind fails"
rc_expect_match "$(printf '%s\n' "$AUD_OUT" | grep "^$E2_URL ")" 'behind' "E2 reported behind"
audit --max-lag 1 "$O_URL" "$E1_URL" "$E2_URL"
rc_expect_eq "$AUD_RC" 0 "--max-lag 1 tolerates it"

# ---------------------------------------------------------------- a node's clock
# E4's clock runs two minutes behind (libfaketime): it accepts the
# origin's filter (issued "in its future", within --clock-skew) and looks
# healthy to itself, but it would keep an expired filter in service two
# minutes longer. Only a comparison of clocks shows it.
mkdir -p "$T/s4"
rc_start_faketime E4 "$T/clock4.rc" -120 --trusted-key "$T/key.pub" --state-dir "$T/s4" --sync-interval 1 \
    --upstream-insecure-http --upstream-filter "$O_URL/v1/filter" --upstream-check "$O_URL/v1/check"
rc_wait_version "$E4_URL" 2 10 || rc_fail "E4 did not sync version 2"
rc_wait_log "$T/E4.log" 'filter version 2 was issued 1[0-9][0-9]s in this node.s future: its clock is behind' &&
    rc_ok "E4 logs that its clock is behind" || rc_fail "E4 did not log its clock: $(tail -c 400 "$T/E4.log")"
audit "$O_URL" "$E4_URL"
rc_expect_eq "$AUD_RC" 1 "a node whose clock is two minutes behind fails"
row=$(printf '%s\n' "$AUD_OUT" | grep "^$E4_URL ")
rc_expect_match "$row" 'clock 1(19|2[0-9])s behind this host' "table: E4's clock named behind"
rc_expect_match "$row" ' -1(19|2[0-9])s  clock' "table: E4's clock offset shown"
rc_expect_match "$row" ' -1(19|2[0-9])s ' "table: E4's negative filter age shown"
rc_expect_match "$(printf '%s\n' "$AUD_OUT" | grep "^$O_URL ")" ' \+0s  OK$' "table: the origin in step"
audit --json "$O_URL" "$E4_URL"
rc_expect_eq "$(jq_py '[n["clock_offset_seconds"] for n in j["nodes"]][0]')" 0 "--json: origin offset 0"
rc_expect_eq "$(jq_py '-130 < j["nodes"][1]["clock_offset_seconds"] < -110')" True "--json: E4 offset about -120"
rc_expect_eq "$(jq_py 'j["nodes"][1]["age_seconds"] < -100')" True "--json: E4's filter age negative"
rc_expect_eq "$(jq_py '[p for p in j["nodes"][1]["problems"] if p.startswith("clock ")] != []')" True \
    "--json: E4's clock problem"
audit --max-skew 5m "$O_URL" "$E4_URL"
rc_expect_eq "$AUD_RC" 0 "--max-skew 5m tolerates it"
audit --max-skew soon "$O_URL"
rc_expect_eq "$AUD_RC" 2 "bad --max-skew is a usage error"
rc_expect_match "$AUD_ERR" 'max-skew' "bad --max-skew named"
echo "+120" >"$T/clock4.rc"
audit "$O_URL" "$E4_URL"
rc_expect_match "$(printf '%s\n' "$AUD_OUT" | grep "^$E4_URL ")" 'clock 1(19|2[0-9])s ahead of this host' \
    "table: a clock ahead named ahead"
rc_stop E4 || rc_fail "E4 did not exit 0"

# ---------------------------------------------------------------- a failing delta sync
# E3 syncs through a proxy that fails every /v1/delta with 500: its base
# sync stays "unchanged" with no error, only sync.delta_error says that it
# misses the chain (and so every revocation a delta carries). The audit
# must fail it, not print OK.
echo fail >"$T/proxy.mode"
python3 "$(dirname "$0")/deltahold.py" "$O_PORT" "$T/proxy.port" "$T/proxy.mode" &
rc_stop_at_exit $!
for _ in $(seq 1 100); do [ -s "$T/proxy.port" ] && break; sleep 0.1; done
P_URL="http://127.0.0.1:$(cat "$T/proxy.port")"
mkdir -p "$T/s3"
rc_start E3 --trusted-key "$T/key.pub" --state-dir "$T/s3" --sync-interval 1 \
    --upstream-insecure-http --upstream-filter "$P_URL/v1/filter" --upstream-check "$O_URL/v1/check"
rc_wait_version "$E3_URL" 2 10 || rc_fail "E3 did not sync version 2 through the proxy"
rc_wait_json "$E3_URL/v1/status" sync.delta_error "delta chain: HTTP 500" 10 ||
    rc_fail "E3 never reported its failing delta fetches"
audit "$O_URL" "$E1_URL" "$E3_URL"
rc_expect_eq "$AUD_RC" 1 "an edge whose delta sync fails fails the audit"
rc_expect_match "$(printf '%s\n' "$AUD_OUT" | grep "^$E3_URL ")" \
    'delta sync failed: delta chain: HTTP 500' "table: E3's delta sync failure named"
rc_expect_eq "$(printf '%s\n' "$AUD_OUT" | grep -c ' OK$')" 2 "table: origin and E1 still OK"
rc_expect_match "$AUD_OUT" 'newest version seen: 2; 1 of 3 nodes' "summary counts E3"
audit --json "$O_URL" "$E3_URL"
rc_expect_eq "$(jq_py 'j["nodes"][1]["delta_error"]')" "delta chain: HTTP 500" \
    "--json: E3's delta_error"
rc_expect_eq "$(jq_py '"delta_error" in j["nodes"][0]')" False \
    "--json: no delta_error on the origin (no sync)"
rc_expect_eq "$(jq_py '[n["ok"] for n in j["nodes"]]')" "[True, False]" "--json: only E3 fails"
rc_expect_eq "$(jq_py 'j["nodes"][1]["problems"]')" "['delta sync failed: delta chain: HTTP 500']" \
    "--json: E3's problem"
rc_stop E3 || rc_fail "E3 did not exit 0"

# ---------------------------------------------------------------- a stale node, an unreachable one
# D runs before its short-lived filter is published, so that a slow start
# cannot eat the filter's validity.
rc_start D --filter-dir "$G" --trusted-key "$T/key.pub" --state-dir "$T/sd" \
    --poll-interval 1
FB build --key "$T/key.pem" --out "$G" --version 2 --valid-for 4s --quiet "$T/tokens.txt"
rc_wait_version "$D_URL" 2 10 || rc_fail "D did not load version 2"
end=$(( $(now_ms) + 10000 ))
until curl -s "$D_URL/v1/status" | grep -q '"stale":true'; do
	[ "$(now_ms)" -lt "$end" ] || { rc_fail "D never turned stale"; break; }
	sleep 0.2
done
audit --json "$O_URL" "$E1_URL" "$D_URL"
rc_expect_eq "$AUD_RC" 1 "a stale node fails the audit"
rc_expect_eq "$(jq_py 'j["nodes"][2]["stale"]')" True "--json: D stale"
rc_expect_eq "$(jq_py 'j["nodes"][2]["stale_reason"]')" expired "--json: D expired"
rc_expect_eq "$(jq_py '"stale" in j["nodes"][2]["problems"]')" True "--json: D's problem"
rc_expect_eq "$(jq_py '[n["ok"] for n in j["nodes"]]')" "[True, True, False]" \
    "--json: only D fails"
audit "$O_URL" "$E1_URL" "$D_URL"
rc_expect_match "$(printf '%s\n' "$AUD_OUT" | grep "^$D_URL ")" 'yes \(expired\).*stale' \
    "table: D stale"

dead="http://127.0.0.1:$(rc_free_port)"
audit "$O_URL" "$dead" "$E1_URL"
rc_expect_eq "$AUD_RC" 1 "an unreachable node fails the audit"
rc_expect_match "$(printf '%s\n' "$AUD_OUT" | grep "^$dead ")" 'unreachable' "table: unreachable"
rc_expect_match "$AUD_ERR" "$dead/v1/status" "stderr names the unreachable node"
audit --json "$O_URL" "$dead"
rc_expect_eq "$(jq_py 'j["nodes"][1]["reachable"]')" False "--json: unreachable"
rc_expect_match "$(jq_py 'j["nodes"][1]["error"]')" '.' "--json: the error"

# The origin stops: E1 fails to sync but stays fresh; the audit shows it.
rc_stop O || rc_fail "origin did not stop cleanly"
end=$(( $(now_ms) + 8000 ))
until curl -s "$E1_URL/v1/status" | grep -q '"result":"download_failed"'; do
	[ "$(now_ms)" -lt "$end" ] || { rc_fail "E1 never reported the failed sync"; break; }
	sleep 0.2
done
audit "$E1_URL"
# A fresh filter does not excuse failing syncs (the edge will not see
# the next version), so the audit fails the node.
rc_expect_eq "$AUD_RC" 1 "an edge whose last sync failed fails the audit, fresh or not"
rc_expect_match "$AUD_OUT" 'download_failed' "table: last sync result shown"
rc_expect_match "$AUD_OUT" 'last sync failed' "table: the reason is named"
# Its own event: E1's filter is over 1 s old by E1's status.
end=$(( $(now_ms) + 10000 ))
until rc_curl "$E1_URL/v1/status"; [ "$(rc_json filter.age_seconds)" -gt 1 ] 2>/dev/null; do
	[ "$(now_ms)" -lt "$end" ] || { rc_fail "E1's filter never over 1 s old"; break; }
	sleep 0.2
done
audit --max-age 1s "$E1_URL"
rc_expect_eq "$AUD_RC" 1 "--max-age fails a filter older than it"
rc_expect_match "$AUD_OUT" 'older than --max-age' "--max-age reason shown"

for n in E1 E2 D; do
	rc_stop "$n" || rc_fail "$n did not exit 0"
done
rc_done
