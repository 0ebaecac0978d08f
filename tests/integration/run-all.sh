#!/usr/bin/env bash
# run-all.sh - runs every tests/integration/it_*.sh, prints each result, fails if any failed
#
# Usage: tests/integration/run-all.sh [PATTERN]   (PATTERN filters names, e.g. revcheckd)
# Each test gets IT_TIMEOUT seconds (default 300); a test that hangs fails
# and the others still run.
set -u

dir=$(cd "$(dirname "$0")" && pwd)
pattern=${1:-}
failed=()
total=0

for t in "$dir"/it_*.sh; do
	[ -e "$t" ] || continue
	name=$(basename "$t" .sh)
	if [ -n "$pattern" ] && [[ "$name" != *"$pattern"* ]]; then
		continue
	fi
	total=$((total + 1))
	start=$(date +%s)
	log=$(mktemp "${TMPDIR:-/tmp}/$name.XXXXXX.log")
	if timeout --kill-after=10 "${IT_TIMEOUT:-300}" bash "$t" >"$log" 2>&1; then
		echo "PASS $name ($(( $(date +%s) - start ))s)"
	else
		rc=$?
		why="exit $rc"
		[ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && why="timed out after ${IT_TIMEOUT:-300}s"
		echo "FAIL $name ($why, $(( $(date +%s) - start ))s)"
		sed 's/^/    /' "$log" | tail -n 40
		failed+=("$name")
	fi
	rm -f "$log"
done

if [ "$total" -eq 0 ]; then
	echo "run-all: no integration tests found"
	exit 1
fi
if [ ${#failed[@]} -gt 0 ]; then
	echo "run-all: ${#failed[@]} of $total failed: ${failed[*]}"
	exit 1
fi
echo "run-all: all $total passed"
