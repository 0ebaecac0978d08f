#!/usr/bin/env bash
# it_spare.sh - reload_spare: a reload reads into the copy the last one released, which is given back after reload_spare seconds unused
#
# An origin loads a 2 x 10^5-id pair (a table of about 10 MB), then a
# second one of other ids. The first table's private copy, released once
# no request can see it, is kept as the spare: the daemon's anonymous
# memory stays about two tables high. After reload_spare seconds without
# a reload the spare is unmapped (logged) and the memory falls by about a
# table; a third version then loads into fresh memory and answers as it
# must. With reload_spare 0 the copy is given back at once.
. "$(dirname "$0")/lib.sh"

FB() { "$FILTERBUILD" "$@"; }
FB keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
mkdir -p "$T/f" "$T/s" "$T/s0"
gen() { seq -f "$1-%08g" 1 200000 >"$T/$1.txt"; }
gen a; gen b; gen c
publish() { FB build --key "$T/key.pem" --out "$T/f" --version "$1" --quiet "$T/$2.txt"; }
anon_kb() { awk '$1 == "RssAnon:" { print $2 }' "/proc/$1/status"; }

publish 1 a
TABLE_KB=$(( $(stat -c %s "$T/f/current/table.rct") / 1024 ))
rc_start O --filter-dir "$T/f" --trusted-key "$T/key.pub" --state-dir "$T/s" \
    --poll-interval 1 --reload-spare 6
rc_wait_version "$O_URL" 1 30 || rc_fail "O did not load version 1"
publish 2 b
rc_wait_version "$O_URL" 2 30 || rc_fail "O did not load version 2"
rc_curl "$O_URL/v1/check?id=b-00000007"
rc_expect_json status revoked "version 2 answers for its ids"
rc_curl "$O_URL/v1/check?id=a-00000007"
rc_expect_json status not_revoked "version 2 does not answer from version 1's copy"
held=$(anon_kb "$O_PID")
rc_curl "$O_URL/metrics"
spare=$(printf '%s\n' "$RC_BODY" | awk '$1 == "revcheckd_reload_spare_bytes" { print $2 }')
[ "${spare:-0}" -ge $((TABLE_KB * 1024)) ] 2>/dev/null &&
    rc_ok "metrics: the kept copy is shown ($spare bytes)" ||
    rc_fail "metrics: revcheckd_reload_spare_bytes is '$spare' (table $TABLE_KB kB)"
rc_wait_log "$T/O.log" "reload_spare: [0-9]+ bytes of a released table copy given back after 6s unused" 1 40 &&
    rc_ok "the spare is given back after reload_spare seconds, logged" ||
    rc_fail "the spare is given back after reload_spare seconds: $(tail -n 3 "$T/O.log")"
for ((i = 0; i < 300; i++)); do
	rc_curl "$O_URL/metrics"
	[[ $RC_BODY == *$'revcheckd_reload_spare_bytes 0\n'* ]] && break
	sleep 0.1
done
rc_expect_match "$RC_BODY" "revcheckd_reload_spare_bytes 0" "metrics: none kept once given back"
after=$(anon_kb "$O_PID")
[ $((held - after)) -ge $((TABLE_KB * 8 / 10)) ] &&
    rc_ok "the daemon's memory falls by about a table ($held -> $after kB, table $TABLE_KB kB)" ||
    rc_fail "the daemon's memory falls by about a table ($held -> $after kB, table $TABLE_KB kB)"
publish 3 c
rc_wait_version "$O_URL" 3 30 || rc_fail "O did not load version 3"
rc_curl "$O_URL/v1/check?id=c-00000011"
rc_expect_json status revoked "version 3, read into fresh memory, answers for its ids"
rc_curl "$O_URL/v1/check?id=b-00000011"
rc_expect_json status not_revoked "version 3 does not answer from version 2's copy"
rc_stop O

# reload_spare 0: nothing is kept, nothing is logged.
rm -rf "$T/f"; mkdir -p "$T/f"
publish 1 a
rc_start Z --filter-dir "$T/f" --trusted-key "$T/key.pub" --state-dir "$T/s0" \
    --poll-interval 1 --reload-spare 0
rc_wait_version "$Z_URL" 1 || rc_fail "Z did not load version 1"
base=$(anon_kb "$Z_PID")
publish 2 b
rc_wait_version "$Z_URL" 2 30 || rc_fail "Z did not load version 2"
# Until version 1's table is freed (its last reader gone), 10 s at most.
for ((i = 0; i < 100; i++)); do
	now=$(anon_kb "$Z_PID")
	[ $((now - base)) -lt $((TABLE_KB / 2)) ] && break
	sleep 0.1
done
[ $((now - base)) -lt $((TABLE_KB / 2)) ] &&
    rc_ok "reload_spare 0: one table's memory after the reload ($base -> $now kB)" ||
    rc_fail "reload_spare 0: one table's memory after the reload ($base -> $now kB, table $TABLE_KB kB)"
grep -q "reload_spare:" "$T/Z.log" && rc_fail "reload_spare 0: a spare was given back" ||
    rc_ok "reload_spare 0: no spare kept"
rc_done
