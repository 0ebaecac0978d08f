#!/usr/bin/env bash
# it_messages.sh - what an operator is told: build progress on a terminal, a readable signing key refused, staleness and wrong keys named, listen errors, a bare start, /livez, verify --fresh
#
# - filterbuild build shows its phases with counts on a terminal (under
#   script(1)'s pseudo-terminal): reading, sorting, filter, writing;
#   nothing with --quiet, nothing when stderr is a file;
# - a signing key readable by group or others is refused by build and
#   follow (revcheckd's rule for the files it trusts, lib/util.c
#   util_file_trusted), naming the mode; 0600 is used;
# - revcheckd started on an expired filter logs filter_stale with when it
#   expired; a filter signed by another key is refused naming the key
#   found and the keys trusted, in the audit log and in filterbuild verify;
# - a bad listen address names the port range; a bare `revcheckd` prints a
#   usage hint and exits 2; /livez answers like /healthz;
# - filterbuild verify --fresh fails an expired filter (and a too old
#   one, --max-age) where revcheckd would, and passes a fresh one.
. "$(dirname "$0")/lib.sh"

FB() { "$FILTERBUILD" "$@"; }
FB keygen --out "$T/k.pem" --pub "$T/k.pub" >/dev/null
FB keygen --out "$T/e.pem" --pub "$T/e.pub" >/dev/null
seq 1 200000 | sed 's/^/tok-/' >"$T/big.txt"
printf 'tok-a\n' >"$T/one.txt"
mkdir -p "$T/f" "$T/g" "$T/x" "$T/s" "$T/s2"

# ---------------------------------------------------------------- progress on a terminal
script -qc "'$FILTERBUILD' build --key '$T/k.pem' --out '$T/f' '$T/big.txt'" /dev/null >"$T/tty.out" 2>&1
tr '\r' '\n' <"$T/tty.out" >"$T/tty.txt"
for re in 'filterbuild: reading' 'filterbuild: sorting 200000 keys' \
    'filterbuild: filter: 200000 distinct keys' 'filterbuild: hashing and writing the table' \
    'published version 1 '; do
	grep -Eq "$re" "$T/tty.txt" && rc_ok "terminal: $re" || rc_fail "terminal: no /$re/: $(head -c 400 "$T/tty.txt")"
done
script -qc "'$FILTERBUILD' build --quiet --key '$T/k.pem' --out '$T/f' '$T/big.txt'" /dev/null >"$T/q.out" 2>&1
rc_expect_eq "$(wc -c <"$T/q.out")" 0 "terminal with --quiet: nothing at all"
FB build --key "$T/k.pem" --out "$T/f" "$T/big.txt" >"$T/o.out" 2>"$T/e.out"
rc_expect_eq "$(wc -c <"$T/e.out"):$(grep -c $'\r' "$T/o.out")" "0:0" "stderr not a terminal: no progress"

# ---------------------------------------------------------------- a readable signing key
for m in 640 604 644; do
	cp "$T/k.pem" "$T/k$m.pem"
	chmod "$m" "$T/k$m.pem"
	out=$(FB build --key "$T/k$m.pem" --out "$T/x" --quiet "$T/one.txt" 2>&1) && rc=0 || rc=$?
	rc_expect_eq "$rc" 1 "build refuses a key of mode $m"
	rc_expect_match "$out" "k$m.pem: a secret readable by group or others \(mode $m\); chmod 600 it" \
	    "build says why (mode $m)"
done
[ ! -e "$T/x/current" ] && rc_ok "nothing was published with a readable key" || rc_fail "published with a readable key"
out=$(FB follow --source postgresql:///none --key "$T/k640.pem" --out "$T/x" --once 2>&1) && rc=0 || rc=$?
rc_expect_match "$rc:$out" "^1:.*k640.pem: a secret readable by group or others" "follow refuses it too"
chmod 600 "$T/k640.pem"
FB build --key "$T/k640.pem" --out "$T/x" --quiet "$T/one.txt" && rc_ok "mode 600: used" || rc_fail "mode 600 refused"

# ---------------------------------------------------------------- expired at start, wrong key
FB build --key "$T/k.pem" --out "$T/g" --valid-for 1s --quiet "$T/one.txt"
exp=$(FB inspect --json "$T/g" | python3 -c 'import json,sys; print(json.load(sys.stdin)["expires_at"])')
for _ in $(seq 1 50); do
	FB verify --pub "$T/k.pub" --fresh --quiet "$T/g" 2>/dev/null || break
	sleep 0.1
done
rc_start A --filter-dir "$T/g" --trusted-key "$T/k.pub" --state-dir "$T/s"
rc_wait_log "$T/A.log" "filter state: stale \(expired at $exp, [0-9]+ s ago\), version 1; checks answer 503 filter_stale" &&
    rc_ok "an expired filter at start: filter_stale and when it expired" ||
    rc_fail "stale at start: $(grep 'filter state' "$T/A.log")"
rc_curl "$A_URL/livez"
rc_expect_status 200 "/livez answers 200"
rc_expect_json status ok "/livez says ok"
rc_stop A

kid=$(FB inspect --json "$T/x" | python3 -c 'import json,sys; print(json.load(sys.stdin)["signer"])')
FB build --key "$T/e.pem" --out "$T/s2/f" --quiet "$T/one.txt"
eid=$(FB inspect --json "$T/s2/f" | python3 -c 'import json,sys; print(json.load(sys.stdin)["signer"])')
rc_start B --filter-dir "$T/s2/f" --trusted-key "$T/k.pub" --state-dir "$T/s2"
rc_wait_log "$T/s2/audit.log" '"result":"refused"' || rc_fail "the filter of another key was not refused"
rc_expect_match "$(cat "$T/s2/audit.log")" "signer $eid not trusted \(trusted: $kid\)" \
    "the refusal names the key found and the key trusted"
out=$(FB verify --pub "$T/k.pub" "$T/s2/f" 2>&1) && rc=0 || rc=$?
rc_expect_match "$rc:$out" "^1:.*signer $eid not trusted \(trusted: $kid\)" "verify names both keys too"
out=$(timeout 20 "$REVCHECKD" --listen "127.0.0.1:$B_PORT" --filter-dir "$T/f" --trusted-key "$T/k.pub" \
    --state-dir "$T/s3" 2>&1) && rc=0 || rc=$?
rc_expect_match "$rc:$out" "cannot listen on 127\.0\.0\.1:$B_PORT: Address already in use \(another process has this port: choose another" \
    "a taken port: the address, and what to do"
rc_stop B

# ---------------------------------------------------------------- listen errors, a bare start
for l in 127.0.0.1:70000 127.0.0.1:http; do
	out=$("$REVCHECKD" --listen "$l" --filter-dir "$T/f" --trusted-key "$T/k.pub" --state-dir "$T/s" 2>&1) && rc=0 || rc=$?
	rc_expect_match "$rc:$out" "^1:revcheckd: listen: \"$l\": the port .* is not a number from 0 to 65535" \
	    "listen $l: names the port range"
done
out=$("$REVCHECKD" --listen ::1:80 --filter-dir "$T/f" --trusted-key "$T/k.pub" 2>&1) && rc=0 || rc=$?
rc_expect_match "$out" 'an IPv6 address needs brackets \(\[::1\]:PORT\)' "listen ::1:80: says brackets"
out=$("$REVCHECKD" </dev/null 2>&1) && rc=0 || rc=$?
rc_expect_eq "$rc" 2 "a bare revcheckd exits 2"
rc_expect_match "$out" "^usage: revcheckd -c FILE \| --filter-dir DIR" "a bare revcheckd prints a usage hint"
rc_expect_match "$out" "revcheckd --help" "and points at --help"

# ---------------------------------------------------------------- verify --fresh
FB verify --pub "$T/k.pub" --quiet "$T/g" && rc_ok "verify without --fresh: an expired filter verifies" ||
    rc_fail "verify refused an expired filter without --fresh"
out=$(FB verify --pub "$T/k.pub" --fresh "$T/g" 2>&1) && rc=0 || rc=$?
rc_expect_match "$rc:$out" "^1:.*filter_stale: expired at $exp, [0-9]+ s ago" "verify --fresh: an expired filter fails, saying when"
FB verify --pub "$T/k.pub" --fresh --quiet "$T/f" && rc_ok "verify --fresh: a fresh filter passes" ||
    rc_fail "verify --fresh refused a fresh filter"
FB build --key "$T/k.pem" --out "$T/old" --valid-for 1d --quiet "$T/one.txt"
REVCHECK_FAKE_NOW=$(( $(date +%s) - 3 * 3600 )) FB build --key "$T/k.pem" --out "$T/old3h" \
    --valid-for 1d --quiet "$T/one.txt"
out=$(FB verify --pub "$T/k.pub" --fresh "$T/old3h" 2>&1) && rc=0 || rc=$?
rc_expect_match "$rc:$out" "^1:.*filter_stale \(max_age\): issued at" "verify --fresh: 3 h old is past revcheckd's default max_age 2h"
FB verify --pub "$T/k.pub" --fresh --max-age 4h --quiet "$T/old3h" && rc_ok "--max-age 4h passes it" ||
    rc_fail "--max-age 4h refused a 3 h old filter"

rc_done
