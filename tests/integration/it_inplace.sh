#!/usr/bin/env bash
# it_inplace.sh - files edited in place after verification change no answer; SIGHUP notices them and fails closed
#
# An origin serves a verified pair. Then, in the published files
# themselves: a revoked id is rewritten to another id of the same size,
# every record's id length is set to 0xffff (it overflowed a stack buffer
# while the table was mapped), and the checks must keep answering from the
# bytes that were verified. A SIGHUP re-verifies what is in service: the
# edit is logged, audited, and the daemon stops answering from that pair
# (503 no_filter) until a new pair verifies.
. "$(dirname "$0")/lib.sh"

FB() { "$FILTERBUILD" "$@"; }
now_ms() { local t=${EPOCHREALTIME/[.,]/}; echo $((10#$t / 1000)); }	# no exec: a fork is dear on some CI machines

FB keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
{ printf 'tok-rev-1\ntok-rev-2\n'; seq -f 'pad-%g' 1 50; } >"$T/tokens.txt"
mkdir -p "$T/f" "$T/s"
FB build --key "$T/key.pem" --out "$T/f" --version 1 --quiet --fp-rate 1e-7 "$T/tokens.txt"
rc_start O --filter-dir "$T/f" --trusted-key "$T/key.pub" --state-dir "$T/s" \
    --poll-interval 3600
rc_wait_version "$O_URL" 1 || rc_fail "O did not load version 1"
TAB=$T/f/current/table.rct
rc_curl "$O_URL/v1/status"
SHA=$(rc_json filter.table_sha256)

check_revoked() {	# check_revoked ID WHAT
	rc_curl "$O_URL/v1/check?id=$1"
	rc_expect_status 200 "$2: $1 answered"
	rc_expect_json status revoked "$2: $1 still revoked"
}
check_revoked tok-rev-1 "before any edit"

# 1. The same size, another id: tok-rev-1 becomes tok-rev-0 in the file.
chmod u+w "$TAB"
python3 - "$TAB" <<'PY'
import sys
p = sys.argv[1]
b = open(p, "rb").read()
i = b.index(b"tok-rev-1")
with open(p, "r+b") as f:
    f.seek(i + 8)
    f.write(b"0")
PY
grep -q 'tok-rev-0' "$TAB" && rc_ok "the file now says tok-rev-0" || rc_fail "edit 1 not made"
check_revoked tok-rev-1 "after a same-size edit of the file"
rc_curl "$O_URL/v1/status"
rc_expect_json filter.table_sha256 "$SHA" "status still shows the verified table hash"

# 2. Every record's id length set to 0xffff, in place.
python3 - "$TAB" <<'PY'
import struct, sys
p = sys.argv[1]
b = open(p, "rb").read()
count = struct.unpack_from("<Q", b, 16)[0]
base = 32 + 8 * count
with open(p, "r+b") as f:
    for i in range(count):
        off = struct.unpack_from("<Q", b, 32 + 8 * i)[0]
        f.seek(base + off + 2)
        f.write(b"\xff\xff")
PY
check_revoked tok-rev-2 "after the id lengths were set to 0xffff"
check_revoked tok-rev-1 "after the id lengths were set to 0xffff"
rc_curl "$O_URL/v1/check?id=tok-fine"
rc_expect_json status not_revoked "a negative is still answered"
kill -0 "$O_PID" && rc_ok "the daemon is alive" || rc_fail "the daemon died"

# 3. SIGHUP: re-verified, caught, taken out of service, kept out.
m=$(rc_log_mark "$T/O.log")
kill -HUP "$O_PID"
rc_wait_log_since "$T/O.log" "$m" 'error: re-verification on SIGHUP: .*table.rct changed on disk' &&
    rc_ok "the edit is logged as an error" || rc_fail "no log line for the edited table"
end=$(( $(now_ms) + 30000 ))
while :; do
	rc_curl "$O_URL/v1/check?id=tok-rev-1"
	[ "$RC_STATUS" = 503 ] || [ "$(now_ms)" -ge "$end" ] && break
	sleep 0.1
done
rc_expect_status 503 "after SIGHUP: checks refused"
rc_expect_json error no_filter "after SIGHUP: no_filter"
rc_curl "$O_URL/v1/check?id=tok-fine"
rc_expect_status 503 "after SIGHUP: a negative is refused too"
rc_curl "$O_URL/readyz"
rc_expect_status 503 "after SIGHUP: not ready"
grep -q '"result":"refused".*changed on disk' "$T/s/audit.log" &&
    rc_ok "the audit log has the refusal" || rc_fail "no audit line for the edited table"
rc_curl "$O_URL/v1/status"
rc_expect_json filter null "status: nothing in service"
# A second SIGHUP loads the files in place again: the binding refuses them.
m=$(rc_log_mark "$T/O.log")
kill -HUP "$O_PID"
rc_wait_log_since "$T/O.log" "$m" '"result":"refused"' ||
    rc_fail "the second SIGHUP did not refuse the edited pair again"
rc_curl "$O_URL/v1/check?id=tok-rev-1"
rc_expect_status 503 "a second SIGHUP does not bring the edited pair back"
rc_curl "$O_URL/v1/status"
rc_expect_match "$(rc_json reloads.last.reason)" 'table' "the reload names the table"

# 4. A new pair verifies and serves.
FB build --key "$T/key.pem" --out "$T/f" --version 2 --quiet --fp-rate 1e-7 "$T/tokens.txt"
kill -HUP "$O_PID"
rc_wait_version "$O_URL" 2 30 || rc_fail "version 2 not served"
check_revoked tok-rev-1 "version 2"
rc_stop O || rc_fail "O did not exit 0"
rc_done
