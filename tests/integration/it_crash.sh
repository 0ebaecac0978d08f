#!/usr/bin/env bash
# it_crash.sh - SIGKILL filterbuild mid-publish and revcheckd mid-reload: the directory always verifies, the daemon recovers
#
# Part 1: `filterbuild build` is killed (SIGKILL) at a random instant of
# publishing CRASH_KILLS times (default 20; bench/crash-publish.sh runs
# 200). REVCHECK_PUBLISH_DELAY_US (test only) spaces the publish steps so
# the kills land in every step. After each kill the directory must verify
# (`filterbuild verify --pub`), `current` must be the old or the new
# version, and a daemon watching the directory must never see a partial
# pair: its audit log holds no refusal, and it serves the current version.
# Part 2: revcheckd is killed (SIGKILL) right after a new version is
# published, at a random instant of its reload, DAEMON_KILLS times
# (default 6), and restarted: it comes back serving the directory's
# current version, its persisted high-water mark is that version, and a
# rollback offered after the restart is still refused.
. "$(dirname "$0")/lib.sh"

FB() { "$FILTERBUILD" "$@"; }
vname() { printf 'v%020d' "$1"; }
now_ms() { local t=${EPOCHREALTIME/[.,]/}; echo $((10#$t / 1000)); }	# no exec: a fork is dear on some CI machines
KILLS=${CRASH_KILLS:-20}
DKILLS=${DAEMON_KILLS:-6}
DELAY=${CRASH_DELAY_US:-20000}

F=$T/filters
S=$T/state
mkdir -p "$S"
FB keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
seq -f 'tok-%g' 1 200 >"$T/tokens.txt"
FB build --key "$T/key.pem" --out "$F" --keep 4 --quiet "$T/tokens.txt"

cur_version() {	# the version `current` names (0 when none)
	local t
	t=$(readlink "$F/current" 2>/dev/null) || { echo 0; return; }
	echo $((10#${t#v}))
}

# How long one slowed publish takes, to spread the kills over all of it.
s=$(now_ms)
REVCHECK_PUBLISH_DELAY_US=$DELAY FB build --key "$T/key.pem" --out "$F" --keep 4 --quiet "$T/tokens.txt"
SPAN=$(( $(now_ms) - s + 20 ))

rc_start D --filter-dir "$F" --trusted-key "$T/key.pub" --state-dir "$S" --poll-interval 1
rc_wait_version "$D_URL" "$(cur_version)" 30 || rc_fail "the first filter was not loaded"

# ---------------------------------------------------------------- 1. kill filterbuild
survived=0 switched=0 kept=0
for i in $(seq 1 "$KILLS"); do
	before=$(cur_version)
	at=$(( RANDOM % SPAN ))
	REVCHECK_PUBLISH_DELAY_US=$DELAY "$FILTERBUILD" build --key "$T/key.pem" --out "$F" \
	    --keep 4 --quiet "$T/tokens.txt" 2>/dev/null &
	pid=$!
	sleep "$(printf '0.%03d' "$at")"
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	after=$(cur_version)
	if ! err=$(FB verify --quiet --pub "$T/key.pub" "$F" 2>&1); then
		rc_fail "kill $i at ${at} ms: the directory does not verify: $err"
		continue
	fi
	if [ "$after" = "$before" ]; then
		kept=$((kept + 1))
	elif [ "$after" = $((before + 1)) ]; then
		switched=$((switched + 1))
	else
		rc_fail "kill $i at ${at} ms: current went from $before to $after"
		continue
	fi
	survived=$((survived + 1))
done
rc_expect_eq "$survived" "$KILLS" "the directory verified after every one of $KILLS kills ($kept before the switch, $switched after)"
# The next full publish cleans up whatever the kills left behind.
FB build --key "$T/key.pem" --out "$F" --keep 4 --quiet "$T/tokens.txt" &&
    rc_ok "a publish after the kills succeeds" || rc_fail "a publish after the kills fails"
left=$(find "$F" -maxdepth 1 -name '.tmp-*' -o -maxdepth 1 -name '.current.tmp' | wc -l)
rc_expect_eq "$left" 0 "no temporary leftovers after the next publish"
FB verify --quiet --pub "$T/key.pub" "$F" && rc_ok "the directory verifies at the end" ||
    rc_fail "the directory does not verify at the end"
V=$(cur_version)
rc_wait_version "$D_URL" "$V" 30 && rc_ok "the watching daemon serves version $V" ||
    rc_fail "the watching daemon does not serve version $V"
rc_expect_eq "$(grep -c '"result":"refused"' "$S/audit.log" || true)" 0 \
    "the watching daemon never saw a partial pair (no refusal in its audit log)"

# ---------------------------------------------------------------- 2. kill revcheckd
DARGS=(--filter-dir "$F" --trusted-key "$T/key.pub" --state-dir "$S" --poll-interval 1)
hwm() {	# the persisted highest version
	python3 -c 'import json,sys; print(max(int(s["version"]) for s in json.load(open(sys.argv[1]))["signers"]))' \
	    "$S/rollback.json" 2>/dev/null || echo none
}
back=0
for i in $(seq 1 "$DKILLS"); do
	FB build --key "$T/key.pem" --out "$F" --keep 4 --quiet "$T/tokens.txt"
	V=$(cur_version)
	sleep "$(printf '0.%03d' $(( RANDOM % 40 )))"	# a kill at a random moment of the load
	kill -KILL "$D_PID"
	wait "$D_PID" 2>/dev/null || true
	rc_start D "${DARGS[@]}"
	if ! rc_wait_version "$D_URL" "$V" 30; then
		rc_fail "daemon kill $i: the restarted daemon does not serve version $V"
		continue
	fi
	rc_curl "$D_URL/readyz"
	rc_expect_status 200 "daemon kill $i: ready after restart"
	rc_expect_eq "$(hwm)" "$V" "daemon kill $i: persisted high-water mark is $V"
	back=$((back + 1))
done
rc_expect_eq "$back" "$DKILLS" "the daemon came back with the current filter after all $DKILLS kills"
# A rollback after the restarts is still refused: point current at the
# oldest kept version.
old=$(ls -d "$F"/v* | head -n 1)
old=${old##*/}
m=$(rc_log_mark "$S/audit.log")
rc_publish_link "$F" "$old"
kill -HUP "$D_PID"
rc_wait_log_since "$S/audit.log" "$m" "rollback: version $((10#${old#v})) " ||
    rc_fail "the rollback to $old was not audited"
rc_expect_match "$(rc_log_since "$S/audit.log" "$m" | grep rollback | tail -n 1)" "rollback: version $((10#${old#v})) is below the highest accepted $V" \
    "a rollback to $old after the restarts is refused"
rc_curl "$D_URL/v1/check?id=tok-1"
rc_expect_json filter_version "$V" "version $V keeps answering after the refused rollback"
# And after one more kill and restart on the rolled-back directory: no
# filter (the persisted mark refuses it), never the old one.
m=$(rc_log_mark "$S/audit.log")
kill -KILL "$D_PID"
wait "$D_PID" 2>/dev/null || true
rc_start D "${DARGS[@]}"
rc_wait_log_since "$S/audit.log" "$m" "rollback: version $((10#${old#v})) " ||
    rc_fail "the restarted daemon did not audit the rollback to $old"
rc_curl "$D_URL/v1/check?id=tok-1"
rc_expect_status 503 "restart on a rolled-back directory: no answer from the old filter"
rc_expect_json error no_filter
rc_publish_link "$F" "$(vname "$V")"
rc_wait_version "$D_URL" "$V" 30 && rc_ok "version $V is served again once current points back" ||
    rc_fail "version $V not served after current points back"
rc_stop D && rc_ok "SIGTERM: exit 0" || rc_fail "SIGTERM: non-zero exit"
echo "# $KILLS filterbuild kills survived ($kept before the switch, $switched after; publish span ${SPAN} ms), $back of $DKILLS daemon kills recovered"
rc_done
