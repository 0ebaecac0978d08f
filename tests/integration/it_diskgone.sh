#!/usr/bin/env bash
# it_diskgone.sh - the served pair gone from disk (an older directory put back) keeps serving from memory, flagged until a pair loads again
#
# An origin serves version 2. The operator puts back a copy of the filter
# directory from when version 1 was current and sends SIGHUP: version 1
# is refused (a rollback) and version 2's files are gone, but version 2
# was verified and is immutable in memory, so it keeps answering (no
# 503), and /v1/status "disk_mismatch", the metric
# revcheckd_served_not_on_disk, the log and the audit log say so. Putting
# version 2's directory back clears the flag; so does publishing version 3.
. "$(dirname "$0")/lib.sh"

FB() { "$FILTERBUILD" "$@"; }

FB keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
{ printf 'tok-rev-1\n'; seq -f 'pad-%g' 1 50; } >"$T/tokens.txt"
mkdir -p "$T/f" "$T/s"
FB build --key "$T/key.pem" --out "$T/f" --version 1 --quiet "$T/tokens.txt"
cp -a "$T/f" "$T/f-at-v1"
FB build --key "$T/key.pem" --out "$T/f" --version 2 --quiet "$T/tokens.txt"
rc_start O --filter-dir "$T/f" --trusted-key "$T/key.pub" --state-dir "$T/s" \
    --poll-interval 3600
rc_wait_version "$O_URL" 2 || rc_fail "O did not load version 2"
rc_curl "$O_URL/v1/status"
rc_expect_json disk_mismatch null "version 2 on disk: no mismatch"

metric() {	# metric NAME: its value in /metrics
	rc_curl "$O_URL/metrics"
	awk -v n="revcheckd_$1" '$1 == n { print $2 }' <<<"$RC_BODY"
}
rc_expect_eq "$(metric served_not_on_disk)" 0 "metric 0 while on disk"

# 1. The directory replaced by the copy from version 1's time, SIGHUP.
mv "$T/f" "$T/f-at-v2"
cp -a "$T/f-at-v1" "$T/f"
kill -HUP "$O_PID"
rc_wait_json "$O_URL/v1/status" disk_mismatch.found \
    "$(printf 'current names version 1 (%s/v00000000000000000001), refused: rollback: version 1 is below the highest accepted 2' "$T/f")" ||
    rc_fail "status does not say what the disk has: $(rc_json disk_mismatch)"
rc_expect_json disk_mismatch.served_version 2 "status names the version served"
rc_expect_json filter.version 2 "version 2 still in service"
rc_curl "$O_URL/v1/check?id=tok-rev-1"
rc_expect_status 200 "a check is answered, not 503"
rc_expect_json status revoked "from version 2"
rc_curl "$O_URL/v1/check?id=tok-fine"
rc_expect_json status not_revoked "a negative too"
rc_curl "$O_URL/readyz"
rc_expect_status 200 "still ready"
rc_expect_eq "$(metric served_not_on_disk)" 1 "metric 1 while not on disk"
rc_wait_log "$T/O.log" 'error: filter version 2 in service .* is not on disk' ||
    rc_fail "no error logged"
grep -q '"event":"disk_mismatch","served_version":2' "$T/s/audit.log" &&
    rc_ok "the audit log has it" || rc_fail "no audit line"

# 2. Version 2's directory back: the same bytes, the flag clears.
rm -rf "$T/f"
mv "$T/f-at-v2" "$T/f"
kill -HUP "$O_PID"
rc_wait_json "$O_URL/v1/status" disk_mismatch null ||
    rc_fail "the flag did not clear: $(rc_json disk_mismatch)"
rc_expect_eq "$(metric served_not_on_disk)" 0 "metric back to 0"

# 3. Gone again (current removed), then version 3 published: it clears.
rm "$T/f/current"
kill -HUP "$O_PID"
rc_wait_json "$O_URL/v1/status" disk_mismatch.served_version 2 ||
    rc_fail "current removed: not flagged"
rc_curl "$O_URL/v1/check?id=tok-rev-1"
rc_expect_status 200 "current removed: still answered"
FB build --key "$T/key.pem" --out "$T/f" --version 3 --quiet "$T/tokens.txt"
rc_wait_version "$O_URL" 3 || rc_fail "version 3 not served"
rc_wait_json "$O_URL/v1/status" disk_mismatch null ||
    rc_fail "version 3 did not clear the flag"
rc_stop O || rc_fail "O did not exit 0"
rc_done
