#!/usr/bin/env bash
# run-all.sh - runs every tests/integration/it_*.sh, prints each result, fails if any failed
#
# Usage: tests/integration/run-all.sh [PATTERN]   (PATTERN filters names, e.g. revcheckd)
#
# Tests run in IT_JOBS lanes at once (default one more than the CPUs where
# there are at least 2, else 1: most tests spend much of their time waiting
# on daemons, and on 2 CPUs three lanes keep about 1.25 of them busy): each
# test has its own temp dir, and each lane its own
# share of the port range rc_free_port draws from (IT_PORT_LO, IT_PORT_SPAN),
# so two tests never pick the same port. A test whose header carries the
# line "# it-serial: REASON" (it changes the machine, loads every CPU, or
# asserts on timings that another test's load would move) runs alone,
# after the others. Each test gets IT_TIMEOUT seconds (default 300); a
# test that hangs fails and the others still run. Results print as tests
# finish, with the last 40 lines of a failed test's output. Each run
# records how long each test took (IT_TIMES, default build/it-times in the
# source tree); the next run starts the longest ones first, so that no
# lane is left with a long test at the end (tests not yet timed go first;
# a tree with no record orders by tests/integration/it-times).
set -u

dir=$(cd "$(dirname "$0")" && pwd)
pattern=${1:-}
if [ -z "${IT_JOBS:-}" ]; then
	IT_JOBS=$(nproc 2>/dev/null || echo 1)
	[ "$IT_JOBS" -ge 2 ] && IT_JOBS=$((IT_JOBS + 1))
fi
times=${IT_TIMES:-$dir/../../build/it-times}
# A fresh tree (CI's clean clone) orders by the times kept in the source,
# tests/integration/it-times (a plain run on a 2-CPU machine).
order=$times
[ -s "$order" ] || order=$dir/it-times
# secs_of NAME: the seconds NAME took in the run recorded, 100000 if none.
secs_of() {
	local s
	s=$(awk -v n="$1" '$1 == n { s = $2 } END { print s }' "$order" 2>/dev/null)
	case "$s" in ''|*[!0-9]*) echo 100000 ;; *) echo "$s" ;; esac
}
case "$IT_JOBS" in
''|*[!0-9]*|0) echo "run-all: IT_JOBS must be a positive number, not \"$IT_JOBS\"" >&2; exit 2 ;;
esac
PORT_LO=20000
PORT_SPAN=12000
failed=()
total=0
parallel=()
serial=()

for t in "$dir"/it_*.sh; do
	[ -e "$t" ] || continue
	name=$(basename "$t" .sh)
	if [ -n "$pattern" ] && [[ "$name" != *"$pattern"* ]]; then
		continue
	fi
	total=$((total + 1))
	if head -n 40 "$t" | grep -q '^# it-serial:'; then
		serial+=("$t")
	else
		parallel+=("$t")
	fi
done
# The longest first (by the last run's times; ties keep the name order).
if [ ${#parallel[@]} -gt 1 ]; then
	mapfile -t parallel < <(for t in "${parallel[@]}"; do
		printf '%s\t%s\n' "$(secs_of "$(basename "$t" .sh)")" "$t"
	done | sort -t "$(printf '\t')" -k1,1nr -s | cut -f2-)
fi

if [ "$total" -eq 0 ]; then
	echo "run-all: no integration tests found${pattern:+ matching \"$pattern\"}"
	exit 1
fi

declare -A pid_slot=()	# pid of each test running -> its slot
logdir=$(mktemp -d "${TMPDIR:-/tmp}/run-all.XXXXXX")
# Interrupted, the runner stops the tests still running (timeout passes
# the signal on to each test, whose own exit hook stops its daemons).
trap 'kill -TERM "${!pid_slot[@]}" 2>/dev/null; wait; rm -rf "$logdir"' EXIT
trap 'exit 130' INT TERM

# start SLOT LANES TEST: runs TEST in the background in port share SLOT of
# LANES; sets the slot's pid, name and start time.
slot_name=()
slot_start=()
start() {
	local slot=$1 lanes=$2 t=$3 name span
	name=$(basename "$t" .sh)
	span=$((PORT_SPAN / lanes))
	IT_PORT_LO=$((PORT_LO + slot * span)) IT_PORT_SPAN=$span \
	    timeout --kill-after=10 "${IT_TIMEOUT:-300}" bash "$t" \
	    >"$logdir/$name.log" 2>&1 &
	pid_slot[$!]=$slot
	slot_name[$slot]=$name
	slot_start[$slot]=$(date +%s)
}

# reap: waits for one test to end, prints its result; sets FREE to its slot.
FREE=
reap() {
	local pid rc slot name why secs
	wait -n -p pid
	rc=$?
	slot=${pid_slot[$pid]}
	unset "pid_slot[$pid]"
	name=${slot_name[$slot]}
	secs=$(( $(date +%s) - ${slot_start[$slot]} ))
	printf '%s %s\n' "$name" "$secs" >>"$logdir/times"
	if [ "$rc" -eq 0 ]; then
		echo "PASS $name (${secs}s)"
	else
		why="exit $rc"
		if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
			why="timed out after ${IT_TIMEOUT:-300}s"
		fi
		echo "FAIL $name ($why, ${secs}s)"
		sed 's/^/    /' "$logdir/$name.log" | tail -n 40
		failed+=("$name")
	fi
	FREE=$slot
}

# run LANES TEST...: runs the tests, at most LANES at once.
run() {
	local lanes=$1 t slot
	shift
	for ((slot = 0; slot < lanes && $# > 0; slot++)); do
		start "$slot" "$lanes" "$1"
		shift
	done
	for t in "$@"; do
		reap
		start "$FREE" "$lanes" "$t"
	done
	while [ ${#pid_slot[@]} -gt 0 ]; do
		reap
	done
}

[ ${#parallel[@]} -eq 0 ] || run "$IT_JOBS" "${parallel[@]}"
[ ${#serial[@]} -eq 0 ] || run 1 "${serial[@]}"

# Keeps every test's last time: this run's, then the others recorded.
if [ -s "$logdir/times" ] && mkdir -p "$(dirname "$times")" 2>/dev/null; then
	{ cat "$logdir/times"; [ ! -f "$times" ] ||
	    awk 'NR == FNR { seen[$1] = 1; next } !($1 in seen)' \
	    "$logdir/times" "$times"; } >"$times.$$" &&
	    mv "$times.$$" "$times"
fi

if [ ${#failed[@]} -gt 0 ]; then
	echo "run-all: ${#failed[@]} of $total failed: ${failed[*]}"
	exit 1
fi
echo "run-all: all $total passed"
