#!/usr/bin/env bash
# it_tamper.sh - tampered, forged, mismatched, rolled-back and stale filters are refused while the old one serves
#
# A small filter (3 tokens, one scope, about 310 bytes) is tampered with in
# every way docs/SECURITY.md lists. Two layers:
#   1. offline: `filterbuild verify` refuses a one-bit flip of EVERY byte
#      of the file (header, scope entry, bit array, signature);
#   2. live: each tampered pair is published into the running daemon's
#      filter directory (a fresh version dir, then an atomic rename of
#      `current`, plus SIGHUP) and must be refused: the audit log names
#      it with the right reason, the previous filter keeps answering, and
#      /v1/status and /metrics count every refusal. The daemon gets a
#      one-bit flip at every byte of the 168-byte header and the 64-byte
#      signature on a plain build, and a stratified sample (every header
#      field's first, middle and last byte, every 4th signature byte, the
#      scope entry, the bit array) under sanitizers, to stay under a minute.
. "$(dirname "$0")/lib.sh"

FB() { "$FILTERBUILD" "$@"; }
vname() { printf 'v%020d' "$1"; }
now_ms() { local t=${EPOCHREALTIME/[.,]/}; echo $((10#$t / 1000)); }	# no exec: a fork is dear on some CI machines
SANITIZED=0
grep -q __asan_init "$REVCHECKD" 2>/dev/null && SANITIZED=1
JOBS=$(nproc 2>/dev/null || echo 2)
[ "$JOBS" -gt 8 ] && JOBS=8

F=$T/filters
S=$T/state
mkdir -p "$S" "$T/keys"
FB keygen --out "$T/keys/good.pem" --pub "$T/keys/good.pub" >/dev/null
FB keygen --out "$T/keys/evil.pem" --pub "$T/keys/evil.pub" >/dev/null
printf 'tok-1\ntok-2\ntok-3\n' >"$T/tokens.txt"
printf 'tok-1\ntok-other\n' >"$T/other.txt"
build() {	# build DIR VERSION KEY LIST [args]
	local d=$1 v=$2 k=$3 l=$4
	shift 4
	FB build --key "$k" --out "$d" --version "$v" --keep 50 --quiet "$@" "$l"
}
build "$F" 1 "$T/keys/good.pem" "$T/tokens.txt"
build "$F" 2 "$T/keys/good.pem" "$T/tokens.txt"
GOOD=$F/$(vname 2)
SIZE=$(stat -c %s "$GOOD/filter.rcf")

# ---------------------------------------------------------------- 1. offline, every byte
mkdir -p "$T/flip"
python3 - "$GOOD/filter.rcf" "$T/flip" <<'PY'
import sys
src, out = sys.argv[1], sys.argv[2]
b = open(src, "rb").read()
for i in range(len(b)):
    t = bytearray(b)
    t[i] ^= 0x01
    open("%s/%05d.rcf" % (out, i), "wb").write(t)
PY
ls "$T/flip" | sed 's/\.rcf$//' | xargs -P "$JOBS" -I{} sh -c \
    '"$1" verify --quiet --pub "$2" --table "$3" "$4/{}.rcf" 2>/dev/null && echo {}' \
    _ "$FILTERBUILD" "$T/keys/good.pub" "$GOOD/table.rct" "$T/flip" >"$T/flip-accepted" || true
rc_expect_eq "$(wc -l <"$T/flip-accepted")" 0 \
    "filterbuild verify refuses a flipped bit at every one of the $SIZE bytes (accepted: $(tr '\n' ' ' <"$T/flip-accepted"))"
FB verify --quiet --pub "$T/keys/good.pub" "$GOOD/filter.rcf" &&
    rc_ok "the untampered file verifies" || rc_fail "the untampered file does not verify"

# ---------------------------------------------------------------- 2. live
rc_start D --filter-dir "$F" --trusted-key "$T/keys/good.pub" --state-dir "$S" \
    --poll-interval 1
rc_wait_version "$D_URL" 2 30 || rc_fail "version 2 was not loaded"
NEXT=100	# version directory names for the tampered pairs
CASES=0

# offer: publishes $T/case/{filter.rcf,table.rct} (whatever is there) as
# a fresh version dir, switches current to it, sends SIGHUP; sets v.
offer() {
	printf -v v 'v%020d' "$NEXT"
	NEXT=$((NEXT + 1))
	mv "$T/case" "$F/$v"
	rc_publish_link "$F" "$v"
	kill -HUP "$D_PID"
}

# audit_of VDIR: AUD_FIRST is the first audit line naming VDIR (empty if
# none yet), AUD_ACCEPTED 1 if any of them says accepted. Read by bash
# alone: it runs for each of some 260 cases, and a fork is dear on some
# CI machines.
audit_of() {
	local l
	AUD_FIRST=
	AUD_ACCEPTED=0
	[ -e "$S/audit.log" ] || return 0
	while IFS= read -r l || [ -n "$l" ]; do
		[[ $l == *"/$1/"* ]] || continue
		[ -n "$AUD_FIRST" ] || AUD_FIRST=$l
		[[ $l != *'"result":"accepted"'* ]] || AUD_ACCEPTED=1
	done <"$S/audit.log"
}

# expect_refused WHAT VDIR REGEX: the audit log refuses VDIR with a reason
# matching REGEX; version 2 still answers.
expect_refused() {
	local what=$1 vdir=$2 re=$3 end line
	CASES=$((CASES + 1))
	end=$(( $(now_ms) + 30000 ))
	while [ "$(now_ms)" -lt "$end" ]; do
		audit_of "$vdir"
		[ -n "$AUD_FIRST" ] && break
		sleep 0.02
	done
	line=$AUD_FIRST
	if [ -z "$line" ]; then
		rc_fail "$what: no audit line for $vdir within 30 s"
		return
	fi
	if [ "$AUD_ACCEPTED" = 1 ]; then
		rc_fail "$what: ACCEPTED ($vdir): $line"
		return
	fi
	rc_expect_match "$line" "\"reason\":\"$re" "$what: refused for the right reason"
	rc_curl "$D_URL/v1/check?id=tok-1"
	case "$RC_STATUS $RC_BODY" in
	*200*'"status":"revoked"'*'"filter_version":2}'*)
		rc_ok "$what: version 2 still answers" ;;
	*)	rc_fail "$what: the previous filter no longer answers: $RC_STATUS $RC_BODY" ;;
	esac
}

# case_from FILE [TABLE]: stages a pair for offer().
case_from() {
	[ ! -e "$T/case" ] || rm -rf "$T/case"
	mkdir -p "$T/case"
	[ -z "$1" ] || cp "$1" "$T/case/filter.rcf"
	[ -z "${2:-}" ] || cp "$2" "$T/case/table.rct"
}

# Flip positions: the whole header and signature on a plain build, a
# stratified sample under sanitizers.
python3 - "$SIZE" "$SANITIZED" >"$T/positions" <<'PY'
import sys
size, san = int(sys.argv[1]), sys.argv[2] == "1"
fields = [(0, 8), (8, 2), (10, 1), (11, 1), (12, 4), (16, 8), (24, 8), (32, 8),
          (40, 8), (48, 8), (56, 4), (60, 4), (64, 8), (72, 8), (80, 32),
          (112, 32), (144, 8), (152, 8), (160, 8)]
sig = size - 64
if not san:
    pos = list(range(168)) + list(range(sig, size))
    pos += [168, 169, 175, 200, sig - 2, sig - 1]      # scope entry, bits
else:
    pos = set()
    for off, n in fields:
        pos |= {off, off + n // 2, off + n - 1}
    pos |= set(range(sig, size, 4)) | {size - 1}
    pos |= {168, 169, 175, 200, sig - 2, sig - 1}
    pos = sorted(pos)
print("\n".join(str(p) for p in sorted(set(pos))))
PY
NFLIP=$(wc -l <"$T/positions")
# Each case staged beforehand, in one python3 call: the loop then only
# moves it into place.
mkdir "$T/stage"
python3 - "$T/positions" "$T/flip" "$GOOD/table.rct" "$T/stage" <<'PY'
import os, shutil, sys
positions, flip, table, stage = sys.argv[1:5]
for line in open(positions):
    d = os.path.join(stage, line.strip())
    os.mkdir(d)
    shutil.copyfile(os.path.join(flip, "%05d.rcf" % int(line)), os.path.join(d, "filter.rcf"))
    shutil.copyfile(table, os.path.join(d, "table.rct"))
PY
while read -r pos; do
	[ ! -e "$T/case" ] || rm -rf "$T/case"
	mv "$T/stage/$pos" "$T/case"
	offer
	expect_refused "bit flip at byte $pos" "$v" '(signature|filter):'
done <"$T/positions"

# Truncated and extended files.
for len in 0 1 8 167 168 $((SIZE - 65)) $((SIZE - 64)) $((SIZE - 1)); do
	case_from "$GOOD/filter.rcf" "$GOOD/table.rct"
	truncate -s "$len" "$T/case/filter.rcf"
	offer
	expect_refused "truncated to $len bytes" "$v" 'filter:'
done
for extra in 1 64 4096; do
	case_from "$GOOD/filter.rcf" "$GOOD/table.rct"
	head -c "$extra" /dev/zero >>"$T/case/filter.rcf"
	offer
	expect_refused "extended by $extra zero bytes" "$v" '(filter|signature):'
done
case_from "$GOOD/filter.rcf" "$GOOD/table.rct"
tail -c 64 "$GOOD/filter.rcf" >>"$T/case/filter.rcf"
offer
expect_refused "signature appended twice" "$v" '(filter|signature):'

# Forged signatures: version 9 re-signed by an untrusted key, once naming
# the trusted signer (bad signature) and once its own (unknown signer).
python3 - "$GOOD/filter.rcf" "$T" "$(FB inspect --json "$T/keys/evil.pub" 2>/dev/null | true)" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read()[:-64])
b[16:24] = (9).to_bytes(8, "little")
open(sys.argv[2] + "/msg-trusted-signer", "wb").write(b)
PY
openssl pkeyutl -sign -inkey "$T/keys/evil.pem" -rawin -in "$T/msg-trusted-signer" -out "$T/sig-evil"
case_from "" "$GOOD/table.rct"
cat "$T/msg-trusted-signer" "$T/sig-evil" >"$T/case/filter.rcf"
offer
expect_refused "re-signed by an untrusted key, trusted signer id" "$v" 'signature:'
build "$T/evil" 9 "$T/keys/evil.pem" "$T/tokens.txt"
case_from "$T/evil/$(vname 9)/filter.rcf" "$T/evil/$(vname 9)/table.rct"
offer
expect_refused "signed by an untrusted key" "$v" 'signature:'
# Control: the same re-signing with the trusted key is accepted by verify,
# so the refusals above are about the key, not the tooling.
openssl pkeyutl -sign -inkey "$T/keys/good.pem" -rawin -in "$T/msg-trusted-signer" -out "$T/sig-good"
cat "$T/msg-trusted-signer" "$T/sig-good" >"$T/resigned-good.rcf"
FB verify --quiet --pub "$T/keys/good.pub" --table "$GOOD/table.rct" "$T/resigned-good.rcf" &&
    rc_ok "control: re-signing with the trusted key verifies" ||
    rc_fail "control: re-signing with the trusted key does not verify"

# Table problems: another build's table, a flipped byte, truncated, missing.
build "$T/b" 20 "$T/keys/good.pem" "$T/other.txt"
case_from "$T/b/$(vname 20)/filter.rcf" "$GOOD/table.rct"
offer
expect_refused "paired with another build's table" "$v" 'table'
# The serving filter's own bytes beside a foreign table: the loader sees
# the filter already installed and loads nothing (nothing to audit); the
# verified pair in memory keeps answering, with its own table.
case_from "$GOOD/filter.rcf" "$T/b/$(vname 20)/table.rct"
m=$(rc_log_mark "$T/D.log")
offer
# The main thread handles one SIGHUP to its end (re-verification, then
# the poll of the directory) before the next: once a second SIGHUP's
# re-verification is logged, the first one's poll is done.
rc_wait_log_since "$T/D.log" "$m" 're-verified|re-verification on SIGHUP' ||
    rc_fail "the serving filter beside a foreign table: the SIGHUP was not handled"
kill -HUP "$D_PID"
rc_wait_log_since "$T/D.log" "$m" 're-verified|re-verification on SIGHUP' 2 ||
    rc_fail "the serving filter beside a foreign table: the second SIGHUP was not handled"
rc_curl "$D_URL/v1/check?id=tok-2"
rc_expect_match "$RC_BODY" '"status":"revoked".*"filter_version":2}' \
    "the serving filter beside a foreign table: the verified pair still answers"
rc_curl "$D_URL/v1/check?id=tok-other"
rc_expect_match "$RC_BODY" '"status":"not_revoked"' \
    "the serving filter beside a foreign table: the foreign table is not used"
case_from "$GOOD/filter.rcf" "$GOOD/table.rct"
printf '\x01' | dd of="$T/case/table.rct" bs=1 seek=40 conv=notrunc status=none
offer
expect_refused "a flipped table byte" "$v" 'table'
case_from "$GOOD/filter.rcf" "$GOOD/table.rct"
truncate -s 31 "$T/case/table.rct"
offer
expect_refused "a truncated table" "$v" 'table'
case_from "$GOOD/filter.rcf" ""
offer
expect_refused "no table" "$v" 'table'
case_from "" ""
offer
expect_refused "an empty version directory" "$v" 'filter:'

# Rollback: version 1 (genuine, trusted, fresh) after version 2.
m=$(rc_log_mark "$S/audit.log")
rc_publish_link "$F" "$(vname 1)"
kill -HUP "$D_PID"
CASES=$((CASES + 1))
rc_wait_log_since "$S/audit.log" "$m" 'rollback: version 1 ' || rc_fail "the rollback to version 1 was not audited"
rc_expect_match "$(rc_log_since "$S/audit.log" "$m" | grep 'rollback' | tail -n 1)" 'rollback: version 1 is below the highest accepted 2' \
    "an older version (1 after 2) is refused"
rc_curl "$D_URL/v1/check?id=tok-1"; rc_expect_json filter_version 2 "rollback: version 2 still answers"
# The same version with other bytes: a second, genuine build of version 2.
build "$T/same" 2 "$T/keys/good.pem" "$T/tokens.txt"
case_from "$T/same/$(vname 2)/filter.rcf" "$T/same/$(vname 2)/table.rct"
offer
expect_refused "version 2 again with other bytes" "$v" 'version 2 was already accepted with different bytes'
# Expired (built with a clock two hours back, valid one hour) and issued
# an hour in the future: filterbuild takes issued_at from util_now(),
# which honours REVCHECK_FAKE_NOW.
now=$(date +%s)
REVCHECK_FAKE_NOW=$((now - 7200)) build "$T/old" 30 "$T/keys/good.pem" "$T/tokens.txt" --valid-for 1h
case_from "$T/old/$(vname 30)/filter.rcf" "$T/old/$(vname 30)/table.rct"
offer
expect_refused "an expired filter" "$v" 'stale: expired'
REVCHECK_FAKE_NOW=$((now + 3600)) build "$T/future" 31 "$T/keys/good.pem" "$T/tokens.txt" --valid-for 2h
case_from "$T/future/$(vname 31)/filter.rcf" "$T/future/$(vname 31)/table.rct"
offer
expect_refused "a filter issued an hour in the future" "$v" 'stale: issued_in_future'

# ---------------------------------------------------------------- counters
# The last case is refused twice, once for the SIGHUP and once when the
# 1 s poll sees the new target, in either order: the counts are compared
# once the audit log has not grown for two poll intervals.
refused=-1
end=$(( $(now_ms) + 30000 ))
while [ "$(now_ms)" -lt "$end" ]; do
	n=$(grep -c '"result":"refused"' "$S/audit.log" || true)
	[ "$n" = "$refused" ] && break
	refused=$n
	sleep 2.2
done
rc_curl "$D_URL/v1/status"
rc_expect_eq "$(rc_json reloads.refused)" "$refused" \
    "/v1/status reloads.refused equals the audit log's refusals ($refused for $CASES cases)"
rc_expect_json reloads.accepted 1 "only version 2 was accepted by this daemon"
rc_expect_json filter.version 2 "status still shows version 2"
[ "$refused" -ge "$CASES" ] && rc_ok "every case audited ($refused >= $CASES)" ||
    rc_fail "fewer refusals ($refused) than cases ($CASES)"
rc_curl "$D_URL/metrics"
rc_expect_match "$RC_BODY" "revcheckd_reloads_total\\{result=\"refused\"\\} $refused" \
    "/metrics counts $refused refusals"
# A good version still gets in after all that.
build "$F" "$NEXT" "$T/keys/good.pem" "$T/tokens.txt"
rc_wait_version "$D_URL" "$NEXT" 30 && rc_ok "a genuine newer version is accepted afterwards" ||
    rc_fail "a genuine version $NEXT was not accepted"
rc_stop D && rc_ok "SIGTERM: exit 0" || rc_fail "SIGTERM: non-zero exit"
if grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$T/D.log"; then
	rc_fail "sanitizer report in the daemon's stderr"
	grep -E -A10 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$T/D.log" | head -n 30 >&2
fi
echo "# $SIZE bytes flipped offline; $NFLIP flips and $((CASES - NFLIP)) other tamper cases live ($CASES cases, $refused audited refusals)"
rc_done
