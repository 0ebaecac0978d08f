#!/usr/bin/env bash
# it_follow_http.sh - filterbuild follow --listen: its own /metrics, /healthz, /livez, /readyz and JSON log (real PostgreSQL)
#
# A follower publishing from a real PostgreSQL serves, on --listen:
# - /metrics that `promtool check metrics` passes, whose chain gauges
#   equal the published chain (base version, delta seq, head time) and
#   that carries filterbuild_build_info and Prometheus' process_*;
# - /readyz 200 while the source answers and the head is fresh, 503
#   source_unavailable (and filterbuild_follow_source_up 0) while the
#   database is down, 200 again once it is back, with no restart;
# - /healthz and /livez 200 throughout.
# With --log-format json every line it logs is one JSON object. A port
# already taken is refused at start, naming the address.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg.sh"

F=$T/filters
"$FILTERBUILD" keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
rc_pg_start
psql -X -q -v ON_ERROR_STOP=1 -f "$RC_SRC/config/postgresql-schema.sql" "$PG_URL"
rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('a'), ('b')"

P=$(rc_free_port)
U=http://127.0.0.1:$P
rc_follow_start "$F" --interval 300ms --valid-for 10m --head-every 2s \
    --listen "127.0.0.1:$P" --log-format json
metric() { curl -s "$U/metrics" | sed -n "s/^filterbuild_follow_$1 //p"; }
# ready CODE: waits (30 s at most) until /readyz answers CODE.
ready() {
	for _ in $(seq 1 150); do
		[ "$(curl -s -o "$T/readyz" -w '%{http_code}' "$U/readyz")" = "$1" ] && return 0
		sleep 0.2
	done
	return 1
}
ready 200 && rc_ok "/readyz 200 once the first base is published" ||
    rc_fail "/readyz never 200: $(cat "$T/readyz" 2>/dev/null)"
for p in healthz livez; do
	rc_curl "$U/$p"
	rc_expect_status 200 "/$p answers 200"
done

# A change: a delta; the gauges follow the chain.
rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('c')"
for _ in $(seq 1 150); do [ "$(metric delta_seq)" = 1 ] && break; sleep 0.2; done
rc_expect_eq "$(metric delta_seq)" 1 "filterbuild_follow_delta_seq counts the delta"
curl -s "$U/metrics" >"$T/m.prom"
out=$(promtool check metrics <"$T/m.prom" 2>&1) && rc=0 || rc=$?
rc_expect_eq "$rc:$out" "0:" "promtool check metrics is clean on the follower"
rc_expect_eq "$(sed -n 's/^filterbuild_follow_base_version //p' "$T/m.prom")" "$(rc_version)" \
    "filterbuild_follow_base_version is the published version"
rc_expect_eq "$(sed -n 's/^filterbuild_follow_source_up //p' "$T/m.prom")" 1 "source_up 1"
age=$(sed -n 's/^filterbuild_follow_head_age_seconds //p' "$T/m.prom")
[ -n "$age" ] && [ "${age%%.*}" -le 5 ] && rc_ok "head age $age s (a head every 2 s)" ||
    rc_fail "head age '$age'"
for m in 'filterbuild_build_info{version="[^"]*",revision="[^"]*"} 1' process_resident_memory_bytes \
    process_cpu_seconds_total process_open_fds process_start_time_seconds; do
	grep -q "^$m" "$T/m.prom" && rc_ok "metrics: ${m%%\{*}" || rc_fail "metrics: no $m"
done

# The database goes away: unready, source_up 0; back: ready again.
rc_pg_stop
ready 503 && rc_ok "/readyz 503 while the database is down" || rc_fail "/readyz stayed $(cat "$T/readyz")"
rc_expect_match "$(cat "$T/readyz")" '"reason":"source_unavailable"' "/readyz says source_unavailable"
rc_expect_eq "$(metric source_up)" 0 "source_up 0 while the database is down"
rc_curl "$U/livez"
rc_expect_status 200 "/livez stays 200"
rc_pg_ctl start >/dev/null 2>&1
ready 200 && rc_ok "/readyz 200 again once the database is back" || rc_fail "/readyz stayed $(cat "$T/readyz")"
rc_expect_match "$(metric source_disconnects_total)" '^[1-9]' "the disconnect is counted"

# --log-format json: every line is one JSON object.
python3 - "$T/follow.log" >"$T/json.out" 2>&1 <<'PY' &&
import json, sys
n = 0
for i, line in enumerate(open(sys.argv[1], encoding="utf-8"), 1):
    try:
        o = json.loads(line)
    except ValueError:
        raise AssertionError(f"line {i} is not JSON: {line!r}")
    for k in ("time", "level", "program", "message"):
        assert k in o, f"line {i}: no {k}"
    n += 1
assert n >= 2, f"only {n} lines"
print(n)
PY
	rc_ok "every follower log line is one JSON object ($(cat "$T/json.out") lines)" ||
	rc_fail "JSON log: $(cat "$T/json.out")"

# A port already taken: refused at start, naming the address.
out=$("$FILTERBUILD" follow --source "$PG_URL" --key "$T/key.pem" --out "$T/f2" \
    --listen "127.0.0.1:$P" --once 2>&1) && rc=0 || rc=$?
rc_expect_eq "$rc" 1 "a taken --listen port fails the start"
rc_expect_match "$out" "cannot listen on 127.0.0.1:$P: Address already in use" "the error names the address"
out=$("$FILTERBUILD" follow --source "$PG_URL" --key "$T/key.pem" --out "$T/f2" \
    --listen 127.0.0.1:70000 2>&1) && rc=0 || rc=$?
rc_expect_eq "$rc" 2 "a bad --listen is a usage error"
rc_expect_match "$out" '--listen: "127.0.0.1:70000": the port "70000" is not a number from 0 to 65535' \
    "a bad port names the range"

rc_follow_stop
rc_done
