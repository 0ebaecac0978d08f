#!/usr/bin/env bash
# it_inplace.sh - files edited in place after verification change no answer; SIGHUP notices them and says so
#
# An origin serves a verified pair. Then, in the published files
# themselves: a revoked id is rewritten to another id of the same size,
# every record's id length is set to 0xffff (it overflowed a stack buffer
# while the table was mapped), and the checks must keep answering from the
# bytes that were verified. A SIGHUP re-verifies what is in service: the
# bytes in memory still match, so they keep serving; the edit on disk is
# logged, audited and shown (/v1/status disk_mismatch) until a new pair
# verifies and loads.
. "$(dirname "$0")/lib.sh"

FB() { "$FILTERBUILD" "$@"; }

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

# 3. SIGHUP: re-verified; the edit is caught and said, and the verified
# bytes in memory keep serving (nothing on disk can change them).
m=$(rc_log_mark "$T/O.log")
kill -HUP "$O_PID"
rc_wait_log_since "$T/O.log" "$m" 'error: filter version 1 in service .* is not on disk: .*table.rct changed on disk after it was verified' ||
    rc_fail "no error log line for the edited table"
check_revoked tok-rev-1 "after SIGHUP"
rc_curl "$O_URL/v1/check?id=tok-fine"
rc_expect_json status not_revoked "after SIGHUP: a negative is answered"
rc_curl "$O_URL/readyz"
rc_expect_status 200 "after SIGHUP: ready"
grep -q '"event":"disk_mismatch".*changed on disk' "$T/s/audit.log" &&
    rc_ok "the audit log has the mismatch" || rc_fail "no audit line for the edited table"
rc_curl "$O_URL/v1/status"
rc_expect_json disk_mismatch.served_version 1 "status: the pair served is not on disk"
rc_expect_json filter.table_sha256 "$SHA" "status: the verified table in service"
# A second SIGHUP loads the files in place again: the edited table is not taken.
m=$(rc_log_mark "$T/O.log")
kill -HUP "$O_PID"
rc_wait_log_since "$T/O.log" "$m" 'is not on disk: current names version 1 .*, refused: table: ' ||
    rc_fail "the second SIGHUP does not name the table"
rc_curl "$O_URL/v1/status"
rc_expect_match "$(rc_json disk_mismatch.found)" 'refused: table: .*table.rct' \
    "status names the refused table"
rc_expect_json filter.table_sha256 "$SHA" "the edited table is not in service"
check_revoked tok-rev-1 "after a second SIGHUP"

# 4. A new pair verifies and serves.
FB build --key "$T/key.pem" --out "$T/f" --version 2 --quiet --fp-rate 1e-7 "$T/tokens.txt"
kill -HUP "$O_PID"
rc_wait_version "$O_URL" 2 30 || rc_fail "version 2 not served"
check_revoked tok-rev-1 "version 2"
rc_curl "$O_URL/v1/status"
rc_expect_json disk_mismatch null "version 2 on disk: the flag cleared"
rc_stop O || rc_fail "O did not exit 0"
rc_done
