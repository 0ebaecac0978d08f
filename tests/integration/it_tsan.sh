#!/usr/bin/env bash
# it_tsan.sh - the reload path and filterbuild's threads under ThreadSanitizer: no race reported
#
# Builds its own revcheckd and filterbuild with `make BUILD=build/tsan
# SANITIZE=thread` (libmicrohttpd, libcurl and OpenSSL are not
# instrumented: TSan sees our code and the pthread calls). First builds a
# pair of 2^17 ids with that filterbuild (its sort, pack and table-writer
# threads); then runs an origin that reloads a new
# filter every 0.3 s and an edge that syncs from it every second and
# settles positives upstream, both under keep-alive load for TSAN_SECONDS
# (default 10); every reload is a SIGHUP to both, which also swaps in a
# new generation of the settings in force. Asserts no "WARNING: ThreadSanitizer" in either log and a
# clean SIGTERM. Suppressions: tests/integration/tsan.supp (see there).
# Skipped in the sanitizer pass of `make test` (ASan and TSan cannot mix
# in one binary; this one builds its own, but the pass is long enough),
# unless TSAN_FORCE=1; skipped too when the compiler cannot build TSan.
# it-serial: builds a ThreadSanitizer tree and loads both CPUs
. "$(dirname "$0")/lib.sh"

D=$(cd "$(dirname "$0")" && pwd)
SECS=${TSAN_SECONDS:-10}
if grep -q __asan_init "$REVCHECKD" 2>/dev/null && [ "${TSAN_FORCE:-0}" != 1 ]; then
	echo "it_tsan: skipped in the ASan pass (TSAN_FORCE=1 runs it)"
	exit 0
fi
TB=${TSAN_BUILD:-build/tsan}
if ! env -u MAKEFLAGS -u MFLAGS make -C "$RC_SRC" --no-print-directory BUILD="$TB" \
    SANITIZE=thread "$TB/revcheckd" "$TB/filterbuild" >"$T/build.log" 2>&1; then
	if grep -qiE 'cannot find -ltsan|libtsan|unrecognized.*sanitize=thread' "$T/build.log"; then
		echo "it_tsan: skipped: this compiler cannot build with -fsanitize=thread"
		exit 0
	fi
	tail -n 20 "$T/build.log" >&2
	rc_fail "the TSan build failed"
	rc_done
fi
REVCHECKD=$RC_SRC/$TB/revcheckd
export TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1 history_size=4 suppressions=$D/tsan.supp"
TSAN_RE='WARNING: ThreadSanitizer|ERROR: ThreadSanitizer|ThreadSanitizer: (data race|heap-use-after-free|lock-order)'

# filterbuild's build threads: 2^17 ids are sorted and packed on two
# threads (above the 2^16 threshold) and the table is written and hashed
# by a third while the filter is built; the pair must verify.
awk 'BEGIN { for (i = 0; i < 131072; i++) printf "tok-%x\n", i * 2654435761 % 4294967296 }' >"$T/many.txt"
if "$RC_SRC/$TB/filterbuild" keygen --out "$T/tk.pem" --pub "$T/tk.pub" >/dev/null 2>"$T/fbt.log" &&
    "$RC_SRC/$TB/filterbuild" build --key "$T/tk.pem" --out "$T/tf" --quiet "$T/many.txt" 2>>"$T/fbt.log" &&
    "$FILTERBUILD" verify --pub "$T/tk.pub" "$T/tf" >>"$T/fbt.log" 2>&1; then
	rc_ok "filterbuild (TSan): 131072 ids built on its threads, the pair verifies"
else
	rc_fail "filterbuild (TSan) build or verify failed: $(tail -c 400 "$T/fbt.log")"
fi
if grep -qE "$TSAN_RE" "$T/fbt.log"; then
	rc_fail "filterbuild: ThreadSanitizer report"
	grep -E -A30 "$TSAN_RE" "$T/fbt.log" | head -n 80 >&2
else
	rc_ok "filterbuild: no ThreadSanitizer report"
fi

F=$T/filters
mkdir -p "$T/so" "$T/se"
"$FILTERBUILD" keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
seq -f 'tok-%g' 1 300 >"$T/tokens.txt"
publish() { "$FILTERBUILD" build --key "$T/key.pem" --out "$F" --keep 4 --quiet "$T/tokens.txt"; }
publish
rc_start O --filter-dir "$F" --trusted-key "$T/key.pub" --state-dir "$T/so" --poll-interval 1 --threads 4 \
    --token-verification revocation-only	# an unsigned token below
rc_wait_ready "$O_URL" 60 || rc_fail "origin not ready"
rc_start E --trusted-key "$T/key.pub" --state-dir "$T/se" --sync-interval 1 --threads 4 \
    --token-verification revocation-only --upstream-insecure-http \
    --upstream-filter "$O_URL/v1/filter" --upstream-check "$O_URL/v1/check"
rc_wait_ready "$E_URL" 60 || rc_fail "edge not ready"

touch "$T/run"
# Each SIGHUP also swaps in a new generation of the settings (live.h)
# under the requests reading it, on the origin and on the edge.
( n=0; while [ -e "$T/run" ]; do publish && n=$((n + 1)); kill -HUP "$O_PID"; kill -HUP "$E_PID"; sleep 0.3; done; echo "$n" >"$T/published" ) &
pub=$!
JWT=$(rc_jwt "" clean-jti)
python3 "$D/rawhttp.py" load "$O_PORT" "$SECS" 4 "JWT=$JWT" >"$T/load.O" &
lo=$!
python3 "$D/rawhttp.py" load "$E_PORT" "$SECS" 4 "JWT=$JWT" >"$T/load.E" &
le=$!
wait "$lo" "$le"
rm -f "$T/run"
wait "$pub"
for n in O E; do
	RC_BODY_FILE=$T/load.$n
	rc_expect_match "$(rc_json statuses)" '^\{"200": [0-9]+\}$' "$n: every response 200 under TSan"
	rc_expect_json version_down "[]" "$n: versions never went down"
	rc_expect_match "$(rc_json versions_seen)" '^([3-9]|[1-9][0-9]+)$' "$n: several versions served under load"
done
rc_stop E && rc_ok "edge SIGTERM: exit 0" || rc_fail "edge SIGTERM: non-zero exit"
rc_stop O && rc_ok "origin SIGTERM: exit 0" || rc_fail "origin SIGTERM: non-zero exit"
for n in O E; do
	if grep -qE "$TSAN_RE" "$T/$n.log"; then
		rc_fail "$n: ThreadSanitizer report"
		grep -E -A30 "$TSAN_RE" "$T/$n.log" | head -n 80 >&2
	else
		rc_ok "$n: no ThreadSanitizer report"
	fi
done
echo "# tsan: ${SECS}s, $(cat "$T/published") reloads; $(cat "$T/load.O" | python3 -c 'import json,sys; print(json.load(sys.stdin)["requests"])') origin and $(cat "$T/load.E" | python3 -c 'import json,sys; print(json.load(sys.stdin)["requests"])') edge requests"
rc_done
