#!/usr/bin/env bash
# it_priority.sh - the thread that loads filters runs at loader_nice, the HTTP workers at the daemon's own priority
#
# A reload reads, hashes and verifies a whole pair; on a small machine it
# competes for the CPU with the workers answering requests. revcheckd
# lowers the priority of the loading thread only (the main thread of an
# origin, the sync thread of an edge), by loader_nice (10 by default), and
# says so in its log; the same thread yields its CPU every 256 KiB it
# hashes, validates or faults in (unit tests count the yields). Read from
# /proc: field 19 of a thread's stat is its nice value.
. "$(dirname "$0")/lib.sh"

FB() { "$FILTERBUILD" "$@"; }
# nice_of PID NAME: the nice values of PID's threads named NAME, sorted.
nice_of() {
	local t
	for t in /proc/"$1"/task/*; do
		[ "$(cat "$t/comm")" = "$2" ] || continue
		# comm may hold spaces: count fields after the closing ')'.
		sed 's/^.*) //' "$t/stat" | awk '{ print $17 }'
	done | sort -u | tr '\n' ' '
}
base=$(nice_of $$ bash); base=${base%% *}

FB keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
printf 'tok-rev-1\n' >"$T/tokens.txt"
mkdir -p "$T/f" "$T/so" "$T/s0" "$T/se"
FB build --key "$T/key.pem" --out "$T/f" --quiet "$T/tokens.txt"

rc_start O --filter-dir "$T/f" --trusted-key "$T/key.pub" --state-dir "$T/so"
rc_wait_version "$O_URL" 1 || rc_fail "origin did not load version 1"
want=$((base + 10 > 19 ? 19 : base + 10))
rc_expect_eq "$(nice_of "$O_PID" revcheckd)" "$want " "origin: the main thread (loads) at nice +10"
rc_expect_eq "$(nice_of "$O_PID" MHD-worker)" "$base " "origin: every HTTP worker at the daemon's nice"
rc_expect_eq "$(nice_of "$O_PID" revcheckd-fast)" "$base " "origin: every fast-path worker at the daemon's nice"
grep -q "main thread: filter loads run at nice $want (loader_nice 10) and give way every 256 KiB" "$T/O.log" &&
    rc_ok "the log says so, and that loads give way every 256 KiB" || rc_fail "no log line: $(tail -n 5 "$T/O.log")"
# A reload still happens, at the lower priority.
FB build --key "$T/key.pem" --out "$T/f" --quiet "$T/tokens.txt"
rc_wait_version "$O_URL" 2 || rc_fail "origin did not load version 2"

rc_start O0 --filter-dir "$T/f" --trusted-key "$T/key.pub" --state-dir "$T/s0" --loader-nice 0
rc_wait_version "$O0_URL" 2 || rc_fail "O0 did not load version 2"
rc_expect_eq "$(nice_of "$O0_PID" revcheckd)" "$base " "loader_nice 0: the main thread keeps the daemon's nice"
grep -q "give way" "$T/O0.log" && rc_fail "loader_nice 0 still gives way: $(grep "give way" "$T/O0.log")" ||
    rc_ok "loader_nice 0: loads neither lowered nor giving way"

rc_start E --trusted-key "$T/key.pub" --state-dir "$T/se" --sync-interval 1 \
    --upstream-insecure-http --upstream-filter "$O_URL/v1/filter" --upstream-check "$O_URL/v1/check"
rc_wait_version "$E_URL" 2 30 || rc_fail "edge did not sync version 2"
rc_expect_eq "$(nice_of "$E_PID" revcheckd-sync)" "$want " "edge: the sync thread (loads) at nice +10"
rc_expect_eq "$(nice_of "$E_PID" MHD-worker)" "$base " "edge: every HTTP worker at the daemon's nice"
rc_expect_eq "$(nice_of "$E_PID" revcheckd-fast)" "$base " "edge: every fast-path worker at the daemon's nice"
rc_expect_eq "$(nice_of "$E_PID" revcheckd)" "$base " "edge: the main thread (loads nothing) at the daemon's nice"
rc_done
