#!/usr/bin/env bash
# it_lookfirst.sh - a load looks before it reads: a table of the wrong size and a filter others may write are refused unread
#
# An origin serves version 1. Version 2 is published with its table grown
# to a sparse 1.5 GiB file: the signed filter names the table's length,
# so the table is refused from fstat without a byte read (the daemon's
# peak resident memory, VmHWM, stays far below the file; before, the whole
# file was copied first). Version 3 is published with a sparse 1.5 GiB
# filter file that others may write: refused from fstat, unread. Version
# 1 serves throughout; a good version 4 loads.
. "$(dirname "$0")/lib.sh"

FB() { "$FILTERBUILD" "$@"; }
SPARSE=$((1536 << 20))

FB keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
printf 'tok-rev-1\n' >"$T/tokens.txt"
mkdir -p "$T/f" "$T/s"
FB build --key "$T/key.pem" --out "$T/f" --version 1 --quiet "$T/tokens.txt"
rc_start O --filter-dir "$T/f" --trusted-key "$T/key.pub" --state-dir "$T/s" \
    --poll-interval 3600
rc_wait_version "$O_URL" 1 || rc_fail "O did not load version 1"

hwm_kb() { awk '/^VmHWM:/ { print $2 }' "/proc/$O_PID/status"; }
# stage N: version N built aside and copied into the filter dir, not yet current.
stage() {
	FB build --key "$T/key.pem" --out "$T/stage$1" --version "$1" --quiet "$T/tokens.txt"
	VN=$(printf 'v%020d' "$1")
	cp -a "$T/stage$1/$VN" "$T/f/$VN"
}
# refused WHAT REGEX: the last load was refused for REGEX; version 1 serves.
refused() {
	rc_wait_json "$O_URL/v1/status" reloads.last.result refused ||
	    rc_fail "$1: not refused"
	rc_expect_match "$(rc_json reloads.last.reason)" "$2" "$1: the reason"
	rc_expect_json filter.version 1 "$1: version 1 still serves"
	hwm=$(hwm_kb)
	[ "$hwm" -lt $((400 << 10)) ] && rc_ok "$1: peak RSS $hwm kB, file unread" ||
	    rc_fail "$1: peak RSS $hwm kB: the file was read"
}

stage 2
truncate -s "$SPARSE" "$T/f/$VN/table.rct"
rc_publish_link "$T/f" "$VN"
refused "a 1.5 GiB table" \
    "^table: .*/$VN/table.rct: $SPARSE bytes, but the signed filter says its table has [0-9]+: not read; publish the pair again"
rc_curl "$O_URL/v1/check?id=tok-rev-1"
rc_expect_json status revoked "checks answer from version 1"

stage 3
chmod 0666 "$T/f/$VN/filter.rcf"
truncate -s "$SPARSE" "$T/f/$VN/filter.rcf"
m=$(rc_log_mark "$T/O.log")
rc_publish_link "$T/f" "$VN"
rc_wait_log_since "$T/O.log" "$m" 'writable by group or others' ||
    rc_fail "the filter others may write is not refused"
refused "a 1.5 GiB filter others may write" "^filter: .*/$VN/filter.rcf: writable by group or others"

stage 4
rc_publish_link "$T/f" "$VN"
rc_wait_version "$O_URL" 4 || rc_fail "version 4 not served"
rc_stop O || rc_fail "O did not exit 0"
rc_done
