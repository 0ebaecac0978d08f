#!/usr/bin/env bash
# run.sh - revcheck benchmarks side by side with libbloom, Redis and nginx; prints ratios, never fails
#
# Usage: BUILD=build/bench [BENCH_LARGE=1] bench/run.sh   (normally `make bench`)
#
# Prints one line per comparison:
#   NAME: ours=X peer=Y ratio=Z UNIT (...)
# where ratio > 1 always means revcheck is ahead (peer/ours for times and
# memory, ours/peer for throughput), and writes the same to
# bench/results.json (rendered by python3's json module). Starts with
# bench/env.sh, so tests/integration/lib.sh's helpers pick the ports, start
# and stop revcheckd and nginx, and stop everything still running and
# remove the temp dir $T at exit (RC_KEEP=1 keeps it). Every peer is
# started here on 127.0.0.1, on a free port, and stopped on exit. Anything
# missing is skipped with a message; the script exits 0 whatever happens
# (also when interrupted). Knobs (environment):
#   BENCH_LARGE=1      add the 10^8-key scaling points (lookups and build), measured last
#   BENCH_DURATION=5   seconds per wrk run (BENCH_ROUNDS=5 rounds of the HTTP runs;
#                      the wrk single-check rows, which have no target, in the first 3)
#   BENCH_N=10000000   keys for lookups, build, memory and reload
#   BENCH_HTTP_N=1000000  keys in the filter and the Redis set for HTTP
#   BENCH_OUT=bench/results.json
#   BENCH_FB_OPTS="--layout blocked --valid-for 1d"  extra filterbuild build options
#   BENCH_WIDTHS_N=1000000  keys for the fuse width rows (fuse_w*)
#   BENCH_ONLY=fuse_widths  run only the fuse width rows
#   BENCH_ONLY=exact   run only the exact-layout rows (BENCH_LARGE=1 adds 10^8)

export LC_ALL=C
# ROOT, BUILD (absolute), REVCHECKD, FILTERBUILD, $T and lib.sh's helpers;
# its rc_cleanup runs at exit. `set -u` stays on, `set -e` is off, and
# pipefail too: a pipeline's status is its last command's, as it always
# was here.
. "$(dirname "$0")/env.sh"
set +o pipefail
cd "$ROOT" || exit 0
LARGE=${BENCH_LARGE:-0}
DUR=${BENCH_DURATION:-5}
N=${BENCH_N:-10000000}
HTTP_N=${BENCH_HTTP_N:-1000000}
OUT=${BENCH_OUT:-$ROOT/bench/results.json}
BB=$BUILD/bench			# our own bench programs
# Builds use the default FP rate (0.001) with the blocked layout.
FB_OPTS=${BENCH_FB_OPTS:---layout blocked --valid-for 1d}
START=$(date +%s)
COMMIT=$(git describe --always --dirty 2>/dev/null || echo unknown)

trap 'echo "bench: interrupted"; exit 0' INT TERM

log() { printf '# %s\n' "$*" >&2; }

# ---------------------------------------------------------------- results

RESULTS_TXT=()
ROWS=$T/results.rows		# one JSON object a line, in order
: >"$ROWS"
CPU_MODEL=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)

# add_row FIELD=STRING|FIELD:=NUMBER...: appends a row with these fields,
# in this order, to the results and rewrites $OUT with all of them (so an
# interrupted run keeps what it measured). A NUMBER that is not a plain
# number (empty, "-") is null. python3's json module does all the quoting.
add_row() {
	/usr/bin/python3 - "$ROWS" "$OUT" "$(nproc)" "$CPU_MODEL" "$COMMIT" \
	    "BUILD=${BUILD#"$ROOT"/} BENCH_LARGE=$LARGE bench/run.sh" "$@" <<'PY' || log "could not write $OUT"
import json, math, os, re, sys
rows, out, cpus, cpu, commit, command = sys.argv[1:7]
row = {}
for arg in sys.argv[7:]:
    key, _, v = arg.partition("=")
    if key.endswith(":"):
        key = key[:-1]
        if re.fullmatch(r"-?[0-9]+", v):
            v = int(v)
        elif re.fullmatch(r"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?", v) and math.isfinite(float(v)):
            v = float(v)
        else:
            v = None
    row[key] = v
with open(rows, "a") as f:
    f.write(json.dumps(row) + "\n")
with open(rows) as f:
    lines = f.read().splitlines()
head = [("command", command), ("commit", commit), ("cpus", int(cpus)), ("cpu", cpu)]
with open(out + ".tmp", "w") as f:
    f.write("{\n")
    for k, v in head:
        f.write("  %s: %s,\n" % (json.dumps(k), json.dumps(v)))
    f.write('  "results": [' + ",".join("\n    " + l for l in lines) + "\n  ]\n}\n")
os.replace(out + ".tmp", out)
PY
}

# emit NAME OURS PEER UNIT lower|higher TARGET NOTE [TOL [KEY=NUMBER...]]
# TARGET is the minimum ratio the target asks for, "zero" when OURS must be
# 0, or "-" for none; TOL (default 0) how far below TARGET is a tie; each
# KEY=NUMBER is one more field of the JSON row.
emit() {
	local name=$1 ours=$2 peer=$3 unit=$4 better=$5 target=$6 note=$7
	local tol=${8:-0} ratio verdict="" line kv extra=()
	shift $(($# < 8 ? $# : 8))
	for kv in "$@"; do
		extra+=("${kv%%=*}:=${kv#*=}")
	done
	ratio=$(awk -v o="$ours" -v p="$peer" -v b="$better" 'BEGIN {
		if (o == "" || p == "" || o + 0 <= 0 || p + 0 <= 0) { print "-"; exit }
		r = (b == "lower") ? p / o : o / p
		printf "%.3f", r }')
	if [ "$target" = "zero" ]; then
		if [ "$ours" = 0 ]; then verdict="target 0: MET"; else verdict="target 0: NOT MET"; fi
		target=0
	elif [ "$target" != "-" ] && [ "$ratio" != "-" ]; then
		if awk -v r="$ratio" -v t="$target" 'BEGIN { exit !(r >= t) }'; then
			verdict="target >=${target}x: MET"
		elif awk -v r="$ratio" -v t="$target" -v e="$tol" 'BEGIN { exit !(r >= t - e) }'; then
			verdict="target >=${target}x: TIE (within measurement noise, +-$tol)"
		else
			verdict="target >=${target}x: NOT MET"
		fi
	fi
	line="$name: ours=$ours peer=$peer ratio=$ratio $unit ($better is better${note:+; $note})${verdict:+ $verdict}"
	echo "$line"
	RESULTS_TXT+=("$line")
	add_row name="$name" ours:="$ours" peer:="$peer" ratio:="$ratio" unit="$unit" \
	    better="$better" target:="$target" verdict="${verdict:-none}" note="$note" \
	    "${extra[@]+"${extra[@]}"}"
}

# emit_within NAME OURS WANT REL UNIT NOTE: OURS must be WANT within +-REL
# (a fraction); ratio is OURS / WANT.
emit_within() {
	local name=$1 ours=$2 want=$3 rel=$4 unit=$5 note=$6 ratio verdict line pct
	ratio=$(awk -v o="$ours" -v w="$want" 'BEGIN {
		if (o == "" || w == "" || w + 0 <= 0) { print "-"; exit }
		printf "%.3f", o / w }')
	pct=$(awk -v r="$rel" 'BEGIN { printf "%g", r * 100 }')
	if [ "$ratio" = "-" ]; then
		verdict=""
	elif awk -v r="$ratio" -v e="$rel" 'BEGIN { exit !(r >= 1 - e && r <= 1 + e) }'; then
		verdict="target within ${pct} %: MET"
	else
		verdict="target within ${pct} %: NOT MET"
	fi
	line="$name: ours=$ours peer=$want ratio=$ratio $unit (ratio 1 is the target${note:+; $note})${verdict:+ $verdict}"
	echo "$line"
	RESULTS_TXT+=("$line")
	add_row name="$name" ours:="$ours" peer:="$want" ratio:="$ratio" unit="$unit" \
	    better=within target:="$rel" verdict="${verdict:-none}" note="$note"
}

skip() {
	local name=$1 why=$2
	echo "$name: skipped ($why)"
	RESULTS_TXT+=("$name: skipped ($why)")
	add_row name="$name" skipped="$why"
}

# ---------------------------------------------------------------- helpers

have() { command -v "$1" >/dev/null 2>&1; }

# Fields of a "k=v k=v" line.
field() { tr ' ' '\n' <<<"$1" | awk -F= -v k="$2" '$1 == k { print $2; exit }'; }

# wrk output -> "rps p99_ms non2xx errors"
wrk_parse() {
	awk '
	function ms(v) {
		if (v ~ /us$/) return substr(v, 1, length(v) - 2) / 1000
		if (v ~ /ms$/) return substr(v, 1, length(v) - 2) + 0
		if (v ~ /s$/) return substr(v, 1, length(v) - 1) * 1000
		return v + 0
	}
	/^Requests\/sec:/ { rps = $2 }
	$1 == "99%" { p99 = ms($2) }
	/Non-2xx or 3xx responses:/ { non2xx = $NF }
	/Socket errors:/ { gsub(/,/, ""); err = $4 + $6 + $8 + $10 }
	END { printf "%s %.3f %d %d\n", rps, p99, non2xx, err }' "$1"
}

# h2load_parse FILE -> "rps failed non2xx" of an h2load run.
h2load_parse() {
	awk '
	/^finished in/ { gsub(/,/, ""); rps = $4 }
	/^requests:/ { failed = $10 + $12 }
	/^status codes:/ { gsub(/,/, ""); non2xx = $5 + $7 + $9 }
	END { printf "%s %d %d\n", rps, failed, non2xx }' "$1"
}

rss_kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status" 2>/dev/null; }

deadline_ok() { [ $(( $(date +%s) - START )) -lt "${1:-1500}" ]; }

# ---------------------------------------------------------------- build our bench programs

WARN="-Wall -Wextra -Wstrict-prototypes -Wmissing-prototypes -Wshadow -Wpointer-arith -Wformat=2 -Wwrite-strings -Wvla"
CC=${CC:-cc}
mkdir -p "$BB"
echo "== revcheck benchmarks (commit $COMMIT, $(nproc) CPUs, $CPU_MODEL; results in ${OUT#"$ROOT"/})"
HAVE_LOOKUP=0
if [ ! -f "$BUILD/librevcheck.a" ]; then
	log "building $BUILD/librevcheck.a"
	make --no-print-directory BUILD="$BUILD" SANITIZE= "$BUILD/librevcheck.a" >"$T/make.log" 2>&1 ||
	    log "could not build librevcheck.a (see below)"
fi
$CC -std=c11 -D_GNU_SOURCE -O2 $WARN -o "$BB/genids" bench/genids.c 2>"$T/cc.log" &&
$CC -std=c11 -D_GNU_SOURCE -O2 $WARN -o "$BB/peakrss" bench/peakrss.c 2>>"$T/cc.log" || {
	cat "$T/cc.log" >&2
	echo "bench: cannot compile bench/genids.c or bench/peakrss.c; nothing measured"
	exit 0
}
# lbshim.c is compiled without -Ilib: its <bloom.h> is libbloom's.
if [ -f /usr/include/bloom.h ] && [ -f "$BUILD/librevcheck.a" ] &&
    $CC -std=c11 -D_GNU_SOURCE -O2 -g $WARN -c -o "$BB/lbshim.o" bench/lbshim.c 2>>"$T/cc.log" &&
    $CC -std=c11 -D_GNU_SOURCE -O2 -g $WARN -Ilib $(pkg-config --cflags libxxhash 2>/dev/null) \
	-c -o "$BB/lookup.o" bench/lookup.c 2>>"$T/cc.log" &&
    $CC -o "$BB/lookup" "$BB/lookup.o" "$BB/lbshim.o" "$BUILD/librevcheck.a" \
	$(pkg-config --libs openssl libxxhash libcjson 2>/dev/null) -ldl -lm 2>>"$T/cc.log"; then
	HAVE_LOOKUP=1
else
	cat "$T/cc.log" >&2
fi

HAVE_EXACT=0
if [ -f "$BUILD/librevcheck.a" ] &&
    $CC -std=c11 -D_GNU_SOURCE -O2 -g $WARN -Ilib $(pkg-config --cflags libxxhash 2>/dev/null) \
	-o "$BB/exact" bench/exact.c "$BUILD/librevcheck.a" \
	$(pkg-config --libs openssl libxxhash libcjson 2>/dev/null) -lpthread -ldl -lm 2>>"$T/cc.log"; then
	HAVE_EXACT=1
else
	cat "$T/cc.log" >&2
fi

# ---------------------------------------------------------------- 1a. the exact layout (issued set known)
# exact_rows N LOOKUPS: the exact structure of |U| = N at |R|/|U| = 0.01,
# 0.001 and 0.1 (bench/exact.c, U streamed): its size against
# 1.10 x log2 C(|U|, |R|) + 1 KiB (1.15 x at 0.1), bits per revoked id
# beside Clubcards', the build (at most 6 s at 10^7; 60 s and 2 GB at
# 10^8 with |R| = 10^6), and with LOOKUPS=1 lookups one at a time against
# the fuse layout over the same R (at most 1.5x its cost).
exact_rows() {
	local n=$1 lookups=$2 r line q tag k lim bits budget ns fns
	for r in 0.01 0.001 0.1; do
		q=1000000; [ "$lookups" = 1 ] || q=0
		tag="${n}_$r"
		if ! line=$(timeout 1200 "$BB/exact" "$n" "$r" "$q" 2>"$T/exact.err") || [ -z "$line" ]; then
			skip "exact_size_$tag" "bench/exact $n $r failed: $(head -c 300 "$T/exact.err")"
			continue
		fi
		echo "# $line" >&2
		lim=1.10; [ "$r" = 0.1 ] && lim=1.15
		bits=$(field "$line" bits)
		budget=$(awk -v b="$(field "$line" bound_bits)" -v l="$lim" 'BEGIN { printf "%.0f", l * b + 8192 }')
		emit "exact_size_$tag" "$bits" "$budget" bits lower 1 \
		    "|U|=$n |R|=$(field "$line" revoked) (ratio $r), w=$(field "$line" w): $(field "$line" bits_per_revoked) bits per revoked id = $(field "$line" to_bound)x the bound log2 C(|U|,|R|) ($(field "$line" bound_per_revoked) bits per revoked id); peer = the limit ${lim}x the bound + 1 KiB; stage 1 $(field "$line" stage1_bits) bits, stage 2 $(field "$line" stage2_bits) bits over $(field "$line" stage2_keys) keys"
		emit "exact_bits_per_revoked_$tag" "$(field "$line" bits_per_revoked)" 5.8 bits/revoked lower - \
		    "beside Clubcards' 5.8 bits per revoked certificate (Mozilla, 11.7 M revoked among 816 M certificates partitioned by issuer: a different distribution, not a target); today's fuse layout over the same R at p=0.001: $(field "$line" fuse_bits_per_revoked) bits per revoked id (and 0.1 % of U sent to the authority)"
		lim=6; [ "$n" -ge 100000000 ] && lim=60
		if [ "$n" -le 10000000 ] || [ "$r" = 0.01 ]; then
			emit "exact_build_s_$tag" "$(field "$line" build_s)" "$lim" s lower 1 \
			    "wall time of exact_build, U streamed twice (CPU $(field "$line" cpu_s) s; this machine is shared); peer = the limit"
		fi
		if [ "$n" -ge 100000000 ] && [ "$r" = 0.01 ]; then
			emit "exact_build_rss_$tag" "$(field "$line" maxrss_kb)" 2097152 kB lower 1 \
			    "peak RSS of the build process (U never held); peer = the limit, 2 GB"
		fi
		[ "$lookups" = 1 ] || continue
		for k in absent present; do
			ns=$(field "$line" ${k}_ns); fns=$(field "$line" fuse_${k}_ns)
			emit "exact_lookup_${k}_$tag" "$ns" "$fns" ns/lookup lower 0.667 \
			    "$k keys ($( [ $k = present ] && echo 'revoked' || echo 'in U, not revoked')), one exact_query at a time vs the fuse layout over the same R (bloom_query_inline, p=0.001), same keys, same run; ratio >= 0.667 is at most 1.5x the fuse cost"
		done
		emit "exact_wrong_$tag" "$(field "$line" wrong)" 0 answers lower zero \
		    "lookups answered wrongly (a revoked id not revoked, an id of U not revoked answered revoked)"
	done
}
if [ -n "${BENCH_ONLY:-}" ] && [ "${BENCH_ONLY:-}" != exact ]; then
	:
elif [ "$HAVE_EXACT" = 1 ]; then
	exact_rows 10000000 1
	if [ "${BENCH_ONLY:-}" = exact ] && [ "$LARGE" = 1 ]; then
		exact_rows 100000000 0
	fi
else
	skip exact "bench/exact could not be built (needs $BUILD/librevcheck.a)"
fi
if [ "${BENCH_ONLY:-}" = exact ]; then
	log "BENCH_ONLY=exact: the exact-layout rows only"
	exit 0
fi

# ---------------------------------------------------------------- 1b. fuse widths (memory, FP rate and lookups at every width)
# The fuse layout at every fingerprint width w = 4..16 (p = 2^-w) and at
# the default p = 0.001 (w = 10), 10^6 keys, against libbloom at the same
# p: bits per key against log2(1/p) (at most 1.15x: the ratio
# log2(1/p) / bits per key at least 0.870), the measured FP rate against
# 2^-w (within 10 %), lookups of absent keys one at a time and batched
# (at least 3x libbloom's bloom_check).

WIDTHS_N=${BENCH_WIDTHS_N:-1000000}
if [ "$HAVE_LOOKUP" = 1 ] && timeout 900 "$BB/lookup" --widths "$WIDTHS_N" >"$T/widths" 2>"$T/widths.err" &&
    [ -s "$T/widths" ]; then
	sed 's/^/# /' "$T/widths" >&2
	while read -r line; do
		w=$(field "$line" w); p=$(field "$line" p)
		tag=w$w; [ "$p" = 0.001 ] && tag="w${w}_p0.001"
		lg=$(awk -v p="$p" 'BEGIN { printf "%.4f", -log(p) / log(2) }')
		bpk=$(field "$line" bits_per_key)
		emit "fuse_${tag}_bits_per_key" "$bpk" "$lg" bits/key lower 0.870 \
		    "n=$WIDTHS_N p=$p: fuse array with ${w}-bit cells and padding ($(field "$line" bytes) B) = $(field "$line" ratio)x log2(1/p) = $lg bits; libbloom $(field "$line" lb_bytes) B; ratio >= 0.870 is at most 1.15x"
		emit_within "fuse_${tag}_fp_rate" "$(field "$line" fp)" \
		    "$(awk -v w="$w" 'BEGIN { printf "%.6e", 2 ^ -w }')" 0.1 fp-rate \
		    "n=$WIDTHS_N, measured over $(field "$line" fp_queries) absent keys against the filter's 2^-$w (1 sigma about 2.2 %)"
		emit "fuse_${tag}_lookup_single" "$(field "$line" fuse_ns)" "$(field "$line" lb_ns)" \
		    ns/lookup lower 3 "n=$WIDTHS_N p=$p, absent keys, one bloom_query_inline (hash+query, as ffile_query; the call: $(field "$line" fuse_call_ns) ns) at a time vs libbloom bloom_check at the same p (k=$(field "$line" lb_k))"
		emit "fuse_${tag}_lookup_batch" "$(field "$line" fuse_batch_ns)" "$(field "$line" lb_ns)" \
		    ns/lookup lower 3 "n=$WIDTHS_N p=$p, absent keys, batches of 1000 through bloom_query_keys (hashing and reading in one pipeline), vs libbloom"
		emit "fuse_${tag}_lookup_present_single" "$(field "$line" fuse_present_ns)" "$(field "$line" lb_present_ns)" \
		    ns/lookup lower 3 "n=$WIDTHS_N p=$p, present keys, one at a time (the call: $(field "$line" fuse_call_present_ns) ns) vs libbloom"
		emit "fuse_${tag}_lookup_present_batch" "$(field "$line" fuse_batch_present_ns)" "$(field "$line" lb_present_ns)" \
		    ns/lookup lower 3 "n=$WIDTHS_N p=$p, present keys, batches of 1000 vs libbloom"
	done <"$T/widths"
	[ -s "$T/widths.err" ] && sed 's/^/# widths: /' "$T/widths.err" >&2
elif [ "$HAVE_LOOKUP" = 1 ]; then
	skip fuse_widths "bench/lookup --widths failed: $(head -c 300 "$T/widths.err" 2>/dev/null)"
else
	skip fuse_widths "bench/lookup could not be built (needs $BUILD/librevcheck.a and libbloom-dev)"
fi
if [ "${BENCH_ONLY:-}" = fuse_widths ]; then
	log "BENCH_ONLY=fuse_widths: the fuse width rows only"
	exit 0
fi

# ---------------------------------------------------------------- 1. lookups in-process

lookup_rows() {		# N -> lines in $T/lookup.N
	timeout 900 "$BB/lookup" "$1" >"$T/lookup.$1" 2>"$T/lookup.$1.err"
	[ -s "$T/lookup.$1" ]
}

lk() {			# N VARIANT FIELD
	local line
	line=$(grep " variant=$2 " "$T/lookup.$1" | head -1)
	field "$line" "$3"
}

if [ "$HAVE_LOOKUP" = 1 ] && lookup_rows "$N" && grep -q 'variant=libbloom' "$T/lookup.$N"; then
	cat "$T/lookup.$N" | sed 's/^/# /' >&2
	lbb=$(lk "$N" libbloom bytes); lbf=$(lk "$N" libbloom fp)
	q=$( [ "$N" -lt 10000000 ] && echo $(( N < 2000000 ? 2000000 : N )) || echo 10000000 )
	# One standard deviation of a measured FP rate near p over q keys.
	sigma=$(awk -v p="$lbf" -v q="$q" 'BEGIN { printf "%.1e", sqrt(p * (1 - p) / q) }')
	for kind in absent present; do
		emit "lookup_${kind}_batch" "$(lk "$N" blocked-batch ${kind}_ns)" \
		    "$(lk "$N" libbloom ${kind}_ns)" ns/lookup lower 2 \
		    "n=$N p=0.01, blocked layout (the default), batches of 1000 through bloom_query_keys (the library's batch call: for blocked, hash 64 keys, then bloom_query_many's prefetch pipeline) vs libbloom bloom_check"
		emit "lookup_${kind}_single" "$(lk "$N" blocked ${kind}_ns)" \
		    "$(lk "$N" libbloom ${kind}_ns)" ns/lookup lower 2 \
		    "n=$N p=0.01, blocked layout, one bloom_query_inline (hash+query, inline as in ffile_query) at a time vs libbloom"
		emit "lookup_${kind}_fuse_batch" "$(lk "$N" fuse-batch ${kind}_ns)" \
		    "$(lk "$N" libbloom ${kind}_ns)" ns/lookup lower 2 \
		    "n=$N p=0.01, fuse layout (binary fuse filter of 7-bit cells, FP 2^-7: less memory and a lower FP rate than libbloom, rows lookup_*_fuse below), batches of 1000 through bloom_query_keys (each key hashed, its cells hinted, read 8 keys later)"
		emit "lookup_${kind}_fuse_single" "$(lk "$N" fuse ${kind}_ns)" \
		    "$(lk "$N" libbloom ${kind}_ns)" ns/lookup lower 2 \
		    "n=$N p=0.01, fuse layout, one bloom_query_inline at a time"
		emit "lookup_${kind}_classic_batch" "$(lk "$N" classic-batch ${kind}_ns)" \
		    "$(lk "$N" libbloom ${kind}_ns)" ns/lookup lower - \
		    "n=$N p=0.01, classic layout (libbloom's m and k: its 7 cache lines per key bound it), batches of 1000 through bloom_query_keys"
		emit "lookup_${kind}_classic" "$(lk "$N" classic ${kind}_ns)" \
		    "$(lk "$N" libbloom ${kind}_ns)" ns/lookup lower - \
		    "n=$N p=0.01, classic layout, one bloom_query_inline (for classic, the call bloom_query) at a time"
	done
	# Two FP rates measured over q keys each differ by noise alone up to
	# about 2 * sqrt(2) sigma: ratios that close to the target are ties.
	tol=$(awk -v s="$sigma" -v p="$lbf" 'BEGIN { printf "%.3f", 2 * sqrt(2) * s / p }')
	# FP no worse than libbloom's at the same memory or
	# less. The fuse layout meets both at once; the blocked layout meets
	# the FP rate with a little more memory (a blocked Bloom filter can't
	# match a classic one bit for bit: its per-block load varies).
	emit lookup_fp_rate_fuse "$(lk "$N" fuse fp)" "$lbf" fp-rate lower 1 \
	    "fuse layout built for p=0.01 ($(lk "$N" fuse bytes) B) vs libbloom ($lbb B), measured over $q absent keys (1 sigma = $sigma)" \
	    "$tol" ours_bytes="$(lk "$N" fuse bytes)" peer_bytes="$lbb"
	emit lookup_memory_fuse "$(lk "$N" fuse bytes)" "$lbb" bytes lower 1 \
	    "fingerprint array of the fuse filter for the same keys vs libbloom's bit array for p=0.01"
	emit lookup_fp_rate "$(lk "$N" blocked fp)" "$lbf" fp-rate lower 1 \
	    "blocked layout sized for p=0.01 ($(lk "$N" blocked bytes) B) vs libbloom ($lbb B), measured over $q absent keys (1 sigma = $sigma)" \
	    "$tol" ours_bytes="$(lk "$N" blocked bytes)" peer_bytes="$lbb"
	emit lookup_memory "$(lk "$N" blocked bytes)" "$lbb" bytes lower - \
	    "bit array of the blocked filter sized for p=0.01 vs libbloom's for p=0.01: what one cache line per key costs"
	emit lookup_fp_rate_same_memory "$(lk "$N" blocked-samemem fp)" "$lbf" fp-rate lower - \
	    "blocked layout squeezed into libbloom's bytes ($(lk "$N" blocked-samemem bytes) B), 1 sigma = $sigma" "$tol"
	emit lookup_fp_rate_classic "$(lk "$N" classic fp)" "$lbf" fp-rate lower - \
	    "classic layout at libbloom's memory ($(lk "$N" classic bytes) B, same k: equal in expectation, +-$tol is noise), 1 sigma = $sigma" "$tol"
elif [ "$HAVE_LOOKUP" = 1 ]; then
	skip lookup "bench/lookup failed or libbloom missing: $(head -c 300 "$T/lookup.$N.err" 2>/dev/null)"
else
	skip lookup "bench/lookup could not be built (needs $BUILD/librevcheck.a and libbloom-dev)"
fi

# ---------------------------------------------------------------- 7a. scaling of lookups

# The 10^8 point of `make bench-large` (LARGE_N) is measured last, after
# every row `make bench` has: a 10^8-key lookup run and build free about
# 9 GB and leave a 2 GB list in the page cache, and the rows after them
# (HTTP, tail latency) are then not measured as `make bench` measures them.
SCALE_N="100000 1000000 $N"
SCALE_N=$(tr ' ' '\n' <<<"$SCALE_N" | sort -n -u | tr '\n' ' ')
LARGE_N=100000000
# Filters to build: the scaling points, and the HTTP filter.
BUILD_N=$(tr ' ' '\n' <<<"$SCALE_N $HTTP_N" | sort -n -u | tr '\n' ' ')
scale_lookup() {	# N: the scale_lookup rows at N keys
	local n=$1
	if [ ! -s "$T/lookup.$n" ] && ! lookup_rows "$n"; then
		skip "scale_lookup_$n" "bench/lookup $n failed: $(head -c 200 "$T/lookup.$n.err")"
		return
	fi
	[ "$n" = "$N" ] || sed 's/^/# /' "$T/lookup.$n" >&2
	emit "scale_lookup_$n" "$(lk "$n" blocked-batch absent_ns)" \
	    "$(lk "$n" libbloom absent_ns)" ns/lookup lower - \
	    "absent keys, blocked batch vs libbloom; filter $(lk "$n" blocked bytes) B; single $(lk "$n" blocked absent_ns) ns"
	emit "scale_lookup_fuse_$n" "$(lk "$n" fuse-batch absent_ns)" \
	    "$(lk "$n" libbloom absent_ns)" ns/lookup lower - \
	    "absent keys, fuse batch vs libbloom; filter $(lk "$n" fuse bytes) B vs $(lk "$n" libbloom bytes) B; single $(lk "$n" fuse absent_ns) ns; in-process construction $(lk "$n" fuse build_s) s"
}
if [ "$HAVE_LOOKUP" = 1 ]; then
	for n in $SCALE_N; do
		scale_lookup "$n"
	done
fi

# ---------------------------------------------------------------- id lists

log "writing id lists"
"$BB/genids" "$N" 0 text >"$T/ids.txt"
"$BB/genids" "$HTTP_N" 0 text >"$T/ids_http.txt"
# The reload test publishes a second, different list of the same size.
"$BB/genids" "$N" 1 text >"$T/ids2.txt"
# filterbuild fsyncs what it publishes; on ext4 that can also wait for
# the id lists just written. Flush them first so no build pays for them.
sync

HAVE_FB=0
if [ -x "$FILTERBUILD" ] &&
    timeout 30 "$FILTERBUILD" keygen --out "$T/key.pem" --pub "$T/pub.pem" >"$T/keygen.log" 2>&1; then
	HAVE_FB=1
else
	log "filterbuild missing or keygen failed: $(head -c 300 "$T/keygen.log" 2>/dev/null)"
fi

scale_build_row() {	# N: the scale_build row of a build timed by fb_build
	local n=$1 w
	w=$(eval echo "\${BUILD_WALL_$n:-}")
	[ -n "$w" ] || return 0
	emit "scale_build_$n" "$w" "" s - - \
	    "filterbuild, $(awk -v w="$w" -v n="$n" 'BEGIN { printf "%.0f ns/key", w * 1e9 / n }'), peak RSS $(eval echo "\${BUILD_RSS_$n}") kB, output $(eval echo "\${BUILD_OUT_$n}") B"
}

# fb_build N IDS DIR TAG: timed build; sets FB_WALL FB_RSS_KB FB_OUT_BYTES.
fb_build() {
	local n=$1 ids=$2 dir=$3 tag=$4 st
	FB_WALL=""; FB_RSS_KB=""; FB_OUT_BYTES=""
	timeout 600 "$BB/peakrss" "$T/rss.$tag" "$FILTERBUILD" build --key "$T/key.pem" \
	    --out "$dir" $FB_OPTS --quiet "$ids" >"$T/fb.$tag.log" 2>&1
	st=$?
	if [ "$st" != 0 ]; then
		log "filterbuild build ($tag) exit $st: $(tail -c 300 "$T/fb.$tag.log")"
		return 1
	fi
	FB_WALL=$(field "$(cat "$T/rss.$tag")" wall_s)
	FB_RSS_KB=$(field "$(cat "$T/rss.$tag")" maxrss_kb)
	# What is written: every regular file of the published directory.
	FB_OUT_BYTES=$(find "$dir" -type f -printf '%s\n' | awk '{ s += $1 } END { printf "%.0f\n", s }')
}

# ---------------------------------------------------------------- 4 + 7b. builds

if [ "$HAVE_FB" = 1 ]; then
	for n in $BUILD_N; do
		if [ "$n" = "$N" ]; then ids=$T/ids.txt
		elif [ "$n" = "$HTTP_N" ]; then ids=$T/ids_http.txt
		else ids=$T/ids.$n.txt; "$BB/genids" "$n" 0 text >"$ids"; sync
		fi
		if fb_build "$n" "$ids" "$T/fb.$n" "b$n"; then
			eval "BUILD_WALL_$n=\$FB_WALL BUILD_RSS_$n=\$FB_RSS_KB BUILD_OUT_$n=\$FB_OUT_BYTES"
			echo "# build n=$n: ${FB_WALL}s, peak RSS ${FB_RSS_KB} kB, output $FB_OUT_BYTES B" >&2
		else
			skip "scale_build_$n" "filterbuild build failed: $(tail -c 200 "$T/fb.b$n.log")"
		fi
		[ "$n" = "$N" ] || [ "$n" = "$HTTP_N" ] || rm -f "$ids"
	done
	# 10^5 ... 10^7 (10^8 at the end): how the build cost grows (per key).
	for n in $SCALE_N; do
		scale_build_row "$n"
	done
	w=${BUILD_WALL_10000000:-}
	if [ "$N" = 10000000 ] && [ -n "$w" ]; then
		emit scale_req_build_seconds "$w" 30 s lower 1 \
		    "scale requirement: 10^7 ids build in at most 30 s (peer = the 30 s limit)"
		emit scale_req_peak_memory "$(awk -v r="$BUILD_RSS_10000000" 'BEGIN { printf "%.0f", r * 1024 }')" \
		    "$(awk -v o="$BUILD_OUT_10000000" 'BEGIN { printf "%.0f", 3 * o }')" bytes lower 1 \
		    "scale requirement: peak RSS at most 3x the output ($BUILD_OUT_10000000 B) (peer = the limit)"
		# The build target: 5 s, and the peak beyond the input file's bytes.
		emit build_10m_seconds "$w" 5 s lower 1 \
		    "build time: 10^7 ids into a signed pair in at most 5 s (peer = the limit)"
		in_b=$(stat -c %s "$T/ids.txt")
		emit build_10m_memory "$(awk -v r="$BUILD_RSS_10000000" -v i="$in_b" 'BEGIN { printf "%.0f", r * 1024 - i }')" \
		    "$(awk -v o="$BUILD_OUT_10000000" 'BEGIN { printf "%.0f", 1.5 * o }')" bytes lower 1 \
		    "build memory: peak RSS minus the input file ($in_b B) at most 1.5x the output ($BUILD_OUT_10000000 B) (peer = the limit)"
	fi
	# The same N ids as a fuse filter: construction peels, adds don't.
	w=$(eval echo "\${BUILD_WALL_$N:-}")
	SAVED_OPTS=$FB_OPTS
	FB_OPTS="--layout fuse --fp-rate 0.01 --valid-for 1d"
	if [ -n "$w" ] && fb_build "$N" "$T/ids.txt" "$T/fb.fuse" fuse; then
		emit build_fuse_seconds "$FB_WALL" "$w" s lower - \
		    "filterbuild build --layout fuse --fp-rate 0.01 vs the default blocked build (p=0.001) of the same $N ids; fuse peak RSS $FB_RSS_KB kB vs $(eval echo "\${BUILD_RSS_$N}") kB, output $FB_OUT_BYTES B"
	fi
	FB_OPTS=$SAVED_OPTS
	rm -rf "$T/fb.fuse"
else
	skip build "filterbuild not built yet ($FILTERBUILD)"
fi

# ---------------------------------------------------------------- check path on 1 and 2 threads
#
# bench/checkmt (built by `make bench-bin`): the daemon's check function
# in-process, no HTTP, on the HTTP_N-key pair; "spin" says how far this
# machine let 2 threads scale at all during the run.
[ -x "$BB/checkmt" ] || make --no-print-directory BUILD="$BUILD" SANITIZE= WERROR= bench-bin >"$T/checkmt.make" 2>&1
if [ -x "$BB/checkmt" ] && [ -d "$T/fb.$HTTP_N" ] &&
    timeout 300 "$BB/checkmt" "$T/fb.$HTTP_N" "${BENCH_CHECKMT_SECONDS:-2}" 1 2 >"$T/checkmt" 2>"$T/checkmt.err"; then
	sed 's/^/# /' "$T/checkmt" >&2
	cm() { grep "^checkmt variant=$1 threads=$2 " "$T/checkmt" | tr ' ' '\n' | awk -F= -v k="$3" '$1 == k { print $2 }'; }
	cs() { grep "^checkmt scaling variant=$1 threads=2 " "$T/checkmt" | tr ' ' '\n' | awk -F= -v k="$2" '$1 == k { print $2 }'; }
	emit check_path_2_threads "$(cm epoch 2 checks_per_s)" "$(cm epoch 1 checks_per_s)" checks/s higher 1.9 \
	    "check_begin+check_key+check_end in-process, $HTTP_N-key filter, 2 threads vs 1; per CPU second $(cs epoch cpu_vs_1)x; the shared reference count it replaced $(cs refcount vs_1)x (per CPU second $(cs refcount cpu_vs_1)x); this machine scaled arithmetic $(cs spin vs_1)x meanwhile" \
	    0 cpu_vs_1="$(cs epoch cpu_vs_1)" refcount_vs_1="$(cs refcount vs_1)" spin_vs_1="$(cs spin vs_1)"
else
	skip check_path_2_threads "bench/checkmt missing or failed: $(head -c 300 "$T/checkmt.err" "$T/checkmt.make" 2>/dev/null)"
fi

# ---------------------------------------------------------------- reload CPU
#
# bench/reloadcpu (built by `make bench-bin`): the loading thread's CPU
# per reload of the HTTP_N-id table, read cold as a new version is, into
# the released copy (revcheckd's default, reload_spare) against fresh
# memory (reload_spare false): what a reload costs the loading thread.
RT="$T/fb.$HTTP_N/current/table.rct"
if [ -x "$BB/reloadcpu" ] && [ -f "$RT" ] &&
    timeout 300 "$BB/reloadcpu" -c -k -r 15 "$RT" >"$T/reloadcpu.k" 2>"$T/reloadcpu.err" &&
    timeout 300 "$BB/reloadcpu" -c -r 15 "$RT" >"$T/reloadcpu.f" 2>>"$T/reloadcpu.err"; then
	sed 's/^/# /' "$T/reloadcpu.k" "$T/reloadcpu.f" >&2
	emit reload_cpu_ms "$(field "$(cat "$T/reloadcpu.k")" cpu_ms_median)" \
	    "$(field "$(cat "$T/reloadcpu.f")" cpu_ms_median)" ms lower - \
	    "loading thread's CPU per reload of the $HTTP_N-id table (median of 15, read cold), into the released copy (reload_spare, the default) vs fresh memory (reload_spare false); kernel $(field "$(cat "$T/reloadcpu.k")" sys_ms_median) vs $(field "$(cat "$T/reloadcpu.f")" sys_ms_median) ms"
else
	skip reload_cpu_ms "bench/reloadcpu missing or failed: $(head -c 300 "$T/reloadcpu.err" 2>/dev/null)"
fi

# ---------------------------------------------------------------- Redis

REDIS_PORT=""
REDIS_PID=""
redis_start() {
	have redis-server && have redis-cli || return 1
	REDIS_PORT=$(rc_free_port) || return 1
	mkdir -p "$T/redis"
	redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
	    --dir "$T/redis" --logfile "$T/redis/redis.log" --daemonize no \
	    --protected-mode yes >/dev/null 2>&1 &
	REDIS_PID=$!
	rc_stop_at_exit "$REDIS_PID"
	for _ in $(seq 1 50); do
		redis-cli -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG && return 0
		sleep 0.1
	done
	return 1
}
rcli() { redis-cli -h 127.0.0.1 -p "$REDIS_PORT" "$@"; }

# redis_load N: SADD the first N ids of domain 0 through --pipe; sets RL_WALL.
redis_load() {
	"$BB/genids" "$1" 0 resp >"$T/ids.resp"
	timeout 600 "$BB/peakrss" "$T/rss.redis$1" redis-cli -h 127.0.0.1 -p "$REDIS_PORT" \
	    --pipe <"$T/ids.resp" >"$T/redis-pipe.log" 2>&1
	rm -f "$T/ids.resp"
	RL_WALL=$(field "$(cat "$T/rss.redis$1" 2>/dev/null)" wall_s)
	grep -q 'errors: 0' "$T/redis-pipe.log"
}


# ---------------------------------------------------------------- wrk scripts and nginx

cat >"$T/get.lua" <<'EOF'
-- GET /v1/check for ids that are not in the filter, all different.
local threads = 0
local n = 0
local tag = ""
function setup(thread)
	threads = threads + 1
	thread:set("tid", threads)
end
function init(args)
	tag = string.format("%x-%d", os.time(), tid)
end
function request()
	n = n + 1
	return wrk.format("GET", "/v1/check?id=abs-" .. tag .. "-" .. n)
end
EOF
cat >"$T/post.lua" <<'EOF'
-- POST /v1/check with 1000 absent ids per request, 16 different bodies.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local bodies = {}
local threads = 0
local n = 0
function setup(thread)
	threads = threads + 1
	thread:set("tid", threads)
end
function init(args)
	math.randomseed(os.time() * 16 + tid)
	for b = 1, 16 do
		local t = {}
		for i = 1, 1000 do
			t[i] = string.format('{"id":"abs-%08x-%04d"}', math.random(0, 0x7fffffff), i)
		end
		bodies[b] = '{"items":[' .. table.concat(t, ",") .. ']}'
	end
end
function request()
	n = n + 1
	return wrk.format(nil, nil, nil, bodies[n % 16 + 1])
end
EOF


# ---------------------------------------------------------------- revcheckd

# revcheckd_start NAME FILTER_DIR: lib.sh's rc_start NAME (NAME_URL,
# NAME_PID; log in $T/NAME.log) serving FILTER_DIR, then until it is ready
# (the filter loaded), at most 60 s.
revcheckd_start() {
	local url
	mkdir -p "$T/state.$1"
	rc_start "$1" --filter-dir "$2" --trusted-key "$T/pub.pem" \
	    --state-dir "$T/state.$1" --log-level warn || return 1
	url=${1}_URL
	rc_wait_ready "${!url}" 60
}

HAVE_RC=0
[ -x "$REVCHECKD" ] && [ "$HAVE_FB" = 1 ] && have wrk && have curl && HAVE_RC=1


# ---------------------------------------------------------------- 2 + 3. HTTP, interleaved
#
# All three servers run at once (idle ones cost nothing) and the runs
# take turns for ROUNDS rounds: nginx, revcheckd GET, Redis, revcheckd
# POST. Each keeps its best round, so a burst of noise from the rest of
# this shared machine does not decide a ratio.

ROUNDS=${BENCH_ROUNDS:-5}
# The wrk single-check rows (no target: the single-check target is h2load's) in the first
# WRK_ROUNDS rounds only, to keep the run short. Five rounds rather than
# three: on a shared host one round of the same server ranged 131-266 k
# req/s (docs/BENCHMARKS.md), and a burst that spoils two of three rounds
# of one peer decided the single-check ratio.
WRK_ROUNDS=$((ROUNDS < 3 ? ROUNDS : 3))

# nginx_start: nginx in $T/nginx (lib.sh's rc_nginx_conf and rc_nginx_run,
# which sets NG_PID) on a free port NPORT, answering every path but "/"
# (rc_nginx_run's 404 probe) with the fixed JSON of a check: one worker a
# CPU, 1024 connections each, no access log.
nginx_start() {
	have nginx || return 1
	NPORT=$(rc_free_port) || return 1
	mkdir -p "$T/nginx"
	{
		rc_nginx_conf "$T/nginx" | sed -e "s/^worker_processes 1;/worker_processes $(nproc);/" \
		    -e 's/worker_connections 64;/worker_connections 1024;/' \
		    -e "s|access_log $T/nginx/access.log;|access_log off;|"
		cat <<EOF
    server {
        listen 127.0.0.1:$NPORT;
        keepalive_requests 1000000000;
        location = / { return 404; }
        location / {
            default_type application/json;
            return 200 '{"status":"not_revoked","source":"filter","scope":"default","id":"abs-0","filter_version":1}\n';
        }
    }
}
EOF
	} >"$T/nginx/nginx.conf"
	rc_nginx_run "$T/nginx" "$NPORT"
}

# better_rps VAR_PREFIX RPS P99 [EXTRA...]: keeps the round with the best rps.
keep_best() {
	local pfx=$1 rps=$2 p99=$3 cur
	cur=$(eval echo "\${${pfx}_RPS:-0}")
	[ -n "$rps" ] || return 0
	if awk -v a="$rps" -v b="$cur" 'BEGIN { exit !(a + 0 > b + 0) }'; then
		eval "${pfx}_RPS=\$rps ${pfx}_P99=\$p99"
	fi
}

REDIS_RPS=""; REDIS_P99=""; NGINX_RPS=""; NGINX_P99=""
NGINXH_RPS=""; RCH_RPS=""; RCH_BAD=0
RC_RPS=""; RC_P99=""; RC_NON2XX=0; B_RPS=""; B_P99=""; B_NON2XX=0
HAVE_REDIS_SET=0; HAVE_NGINX=0; HAVE_RC_HTTP=0
if redis_start; then
	if redis_load "$HTTP_N"; then
		HAVE_REDIS_SET=1
	else
		log "redis: loading $HTTP_N ids failed: $(tail -c 200 "$T/redis-pipe.log")"
	fi
	have redis-benchmark || HAVE_REDIS_SET=0
else
	log "redis-server or redis-cli missing or did not start"
fi
if have wrk && nginx_start; then
	HAVE_NGINX=1
else
	log "nginx or wrk missing, or nginx did not start: $(tail -c 300 "$T/nginx/error.log" 2>/dev/null)"
fi
if [ "$HAVE_RC" = 1 ] && [ -d "$T/fb.$HTTP_N" ] && revcheckd_start HTTPD "$T/fb.$HTTP_N"; then
	HAVE_RC_HTTP=1
	curl -sS --max-time 5 "$HTTPD_URL/v1/check?id=abs-sanity" >"$T/sample.json" 2>&1
	log "sample answer: $(head -c 300 "$T/sample.json")"
	curl -sS --max-time 5 -H 'Content-Type: application/json' \
	    --data '{"items":[{"id":"abs-1"},{"id":"abs-2"}]}' \
	    "$HTTPD_URL/v1/check" >"$T/sample-batch.json" 2>&1
	log "sample batch answer: $(head -c 300 "$T/sample-batch.json")"
fi

# h2load's URIs: absent ids, all different, read from a list (no script
# runs per request, as redis-benchmark draws its keys in C).
HAVE_H2LOAD=0
if have h2load; then
	HAVE_H2LOAD=1
	awk 'BEGIN { for (i = 0; i < 2000000; i++) printf "/v1/check?id=abs-h2-%d\n", i }' >"$T/h2.uris"
fi
h2load_run() {	# h2load_run BASE_URL OUT
	timeout $((DUR + 60)) h2load --h1 -t2 -c64 -D "$DUR" --warm-up-time 1 \
	    -i "$T/h2.uris" -B "$1" >"$2" 2>&1
}

for round in $(seq 1 "$ROUNDS"); do
	if [ "$HAVE_NGINX" = 1 ] && [ "$HAVE_H2LOAD" = 1 ]; then
		h2load_run "http://127.0.0.1:$NPORT" "$T/h2.nginx"
		read -r rps failed non2xx < <(h2load_parse "$T/h2.nginx")
		log "round $round nginx fixed answer (h2load): $rps req/s, failed $failed, non-2xx $non2xx"
		keep_best NGINXH "$rps" -
	fi
	if [ "$HAVE_RC_HTTP" = 1 ] && [ "$HAVE_H2LOAD" = 1 ]; then
		h2load_run "$HTTPD_URL" "$T/h2.get"
		read -r rps failed non2xx < <(h2load_parse "$T/h2.get")
		log "round $round revcheckd GET (h2load): $rps req/s, failed $failed, non-2xx $non2xx"
		RCH_BAD=$((RCH_BAD + failed + non2xx))
		keep_best RCH "$rps" -
	fi
	if [ "$HAVE_NGINX" = 1 ] && [ "$round" -le "$WRK_ROUNDS" ]; then
		timeout $((DUR + 30)) wrk -t2 -c64 -d"${DUR}s" --latency -s "$T/get.lua" \
		    "http://127.0.0.1:$NPORT" >"$T/wrk.nginx" 2>&1
		read -r rps p99 _ _ < <(wrk_parse "$T/wrk.nginx")
		log "round $round nginx fixed answer: $rps req/s, p99 $p99 ms"
		keep_best NGINX "$rps" "$p99"
	fi
	if [ "$HAVE_RC_HTTP" = 1 ] && [ "$round" -le "$WRK_ROUNDS" ]; then
		timeout $((DUR + 30)) wrk -t2 -c64 -d"${DUR}s" --latency -s "$T/get.lua" \
		    "$HTTPD_URL" >"$T/wrk.get" 2>&1
		read -r rps p99 non2xx err < <(wrk_parse "$T/wrk.get")
		log "round $round revcheckd GET: $rps req/s, p99 $p99 ms, non-2xx $non2xx, socket errors $err"
		RC_NON2XX=$((RC_NON2XX + non2xx))
		keep_best RC "$rps" "$p99"
	fi
	if [ "$HAVE_REDIS_SET" = 1 ]; then
		timeout 300 redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" -c 64 \
		    -n "${BENCH_REDIS_REQS:-500000}" -r 100000000 --csv \
		    SISMEMBER revoked __rand_int__ >"$T/redis-bench.csv" 2>&1
		rps=$(awk -F'","' 'NR == 2 { print $2 }' "$T/redis-bench.csv")
		p99=$(awk -F'","' 'NR == 2 { print $7 }' "$T/redis-bench.csv")
		log "round $round redis-benchmark SISMEMBER (set of $HTTP_N, -c 64): $rps req/s, p99 $p99 ms"
		keep_best REDIS "$rps" "$p99"
	fi
	if [ "$HAVE_RC_HTTP" = 1 ]; then
		timeout $((DUR + 30)) wrk -t2 -c16 -d"${DUR}s" --latency -s "$T/post.lua" \
		    "$HTTPD_URL/v1/check" >"$T/wrk.post" 2>&1
		read -r rps p99 non2xx err < <(wrk_parse "$T/wrk.post")
		log "round $round revcheckd POST x1000: $rps req/s, p99 $p99 ms, non-2xx $non2xx"
		B_NON2XX=$((B_NON2XX + non2xx))
		keep_best B "$rps" "$p99"
	fi
done
[ "$HAVE_NGINX" = 1 ] && rc_stop_pid "$NG_PID" && NG_PID=
[ "$HAVE_RC_HTTP" = 1 ] && rc_stop_pid "$HTTPD_PID" && HTTPD_PID=

if [ "$HAVE_RC_HTTP" = 1 ]; then
	# The single-check rows: h2load, which reads its URIs from a list, as
	# redis-benchmark draws its keys in C. wrk runs a Lua function per
	# request, and on a 2-CPU machine that cost is the load generator's
	# share of the CPUs the server needs: a server that answers a constant
	# and does nothing else reached only 1.18-1.24x Redis under wrk here
	# (docs/BENCHMARKS.md). The wrk rows stay, for comparison.
	note="GET /v1/check absent ids, $HTTP_N-key filter, h2load --h1 -t2 -c64 -D${DUR}s (distinct ids from a list), best of $ROUNDS"
	[ "$RCH_BAD" != 0 ] && note="$note; WARNING $RCH_BAD failed or non-2xx"
	if [ -n "$RCH_RPS" ] && [ -n "$REDIS_RPS" ]; then
		emit http_single_vs_redis "$RCH_RPS" "$REDIS_RPS" req/s higher 1.3 \
		    "$note vs redis-benchmark -c 64 SISMEMBER on a $HTTP_N-member set; single checks against Redis" \
		    0 ours_failed="$RCH_BAD"
	else
		skip http_single_vs_redis "h2load or redis-benchmark did not run (revcheckd h2load: ${RCH_RPS:-none}, redis: ${REDIS_RPS:-none})"
	fi
	if [ -n "$RCH_RPS" ] && [ -n "$NGINXH_RPS" ]; then
		emit http_single_vs_nginx "$RCH_RPS" "$NGINXH_RPS" req/s higher 0.9 \
		    "$note vs nginx 'return 200' fixed JSON, same h2load; single checks against the cheapest HTTP answer"
	else
		skip http_single_vs_nginx "h2load or nginx did not run (revcheckd h2load: ${RCH_RPS:-none}, nginx: ${NGINXH_RPS:-none})"
	fi
	note="GET /v1/check absent ids, $HTTP_N-key filter, wrk -t2 -c64 -d${DUR}s with a Lua request() a request, best of $WRK_ROUNDS"
	[ "$RC_NON2XX" != 0 ] && note="$note; WARNING $RC_NON2XX non-2xx answers"
	if [ -n "$REDIS_RPS" ]; then
		emit http_single_wrk_vs_redis "$RC_RPS" "$REDIS_RPS" req/s higher - \
		    "$note vs redis-benchmark -c 64 SISMEMBER (the load generator's cost differs: see http_single_vs_redis)" \
		    0 ours_p99_ms="$RC_P99" peer_p99_ms="$REDIS_P99" ours_non2xx="$RC_NON2XX"
		emit http_single_p99_vs_redis "$RC_P99" "$REDIS_P99" ms lower - \
		    "p99 latency of the best rounds (wrk vs redis-benchmark's own histogram)"
	else
		skip http_single_wrk_vs_redis "redis-benchmark did not run (revcheckd: $RC_RPS req/s, p99 $RC_P99 ms)"
	fi
	if [ -n "$NGINX_RPS" ]; then
		emit http_single_wrk_vs_nginx "$RC_RPS" "$NGINX_RPS" req/s higher - \
		    "$note vs nginx 'return 200' fixed JSON, same wrk" \
		    0 ours_p99_ms="$RC_P99" peer_p99_ms="$NGINX_P99"
		emit http_single_p99_vs_nginx "$RC_P99" "$NGINX_P99" ms lower - "p99 latency of the best rounds, same wrk"
	else
		skip http_single_wrk_vs_nginx "nginx did not run (revcheckd: $RC_RPS req/s, p99 $RC_P99 ms)"
	fi
	B_IDS=$(awk -v r="$B_RPS" 'BEGIN { printf "%.0f", r * 1000 }')
	note="POST /v1/check, 1000 absent ids per request, wrk -t2 -c16 -d${DUR}s, best of $ROUNDS; p99 $B_P99 ms per request"
	[ "$B_NON2XX" != 0 ] && note="$note; WARNING $B_NON2XX non-2xx answers"
	emit http_batch_ids_per_second "$B_IDS" 5000000 ids/s higher 1 \
	    "$note (peer = the batch target, 5 M ids/s)" 0 p99_ms="$B_P99" non2xx="$B_NON2XX"
else
	why="needs revcheckd ($REVCHECKD), filterbuild, wrk, curl and a $HTTP_N-key build"
	[ "$HAVE_RC" = 1 ] && [ -d "$T/fb.$HTTP_N" ] && why="revcheckd did not become ready: $(tail -c 300 "$T/HTTPD.log" 2>/dev/null)"
	skip http_single "$why${NGINX_RPS:+; nginx $NGINX_RPS req/s}${REDIS_RPS:+; redis $REDIS_RPS req/s}"
	skip http_batch "$why"
fi

# ---------------------------------------------------------------- 4 + 5. Redis with N ids

REDIS_MEM=""; REDIS_RSS=""; REDIS_LOAD_WALL=""; REDIS_HWM=""
if [ -n "$REDIS_PID" ] && kill -0 "$REDIS_PID" 2>/dev/null; then
	rcli flushall >/dev/null
	if redis_load "$N"; then
		REDIS_LOAD_WALL=$RL_WALL
		REDIS_MEM=$(rcli info memory | awk -F: '/^used_memory:/ { print $2 + 0 }')
		REDIS_RSS=$(( $(rss_kb "$REDIS_PID" VmRSS) * 1024 ))
		REDIS_HWM=$(( $(rss_kb "$REDIS_PID" VmHWM) * 1024 ))
		log "redis: $N ids SADDed in ${REDIS_LOAD_WALL}s, used_memory $REDIS_MEM B, RSS $REDIS_RSS B, peak $REDIS_HWM B"
	else
		log "redis: loading $N ids failed: $(tail -c 200 "$T/redis-pipe.log")"
	fi
	rc_stop_pid "$REDIS_PID"
fi

if [ -n "${BUILD_WALL_10000000:-}" ] && [ "$N" = 10000000 ] && [ -n "$REDIS_LOAD_WALL" ]; then
	emit build_seconds "$BUILD_WALL_10000000" "$REDIS_LOAD_WALL" s lower - \
	    "10^7 ids from a text file: filterbuild build (signed pair) vs redis-cli --pipe SADD (1000 members per SADD)"
	emit build_peak_memory "$(( BUILD_RSS_10000000 * 1024 ))" "$REDIS_HWM" bytes lower - \
	    "filterbuild peak RSS vs redis-server peak RSS (VmHWM) after the load"
elif [ -n "$REDIS_LOAD_WALL" ]; then
	skip build_seconds "no filterbuild figure for 10^7 ids (redis-cli --pipe took ${REDIS_LOAD_WALL}s)"
else
	skip build_seconds "filterbuild or redis missing"
fi

# ---------------------------------------------------------------- 4b. the table in private memory
# revcheckd copies the table into private memory (an edit of the file in
# place must not reach it); bench/tablecopy opens the same N-record table
# that way and the mapped way it replaced, and compares open time,
# resident memory and lookups.
if [ -f "$BUILD/librevcheck.a" ] &&
    $CC -std=c11 -D_GNU_SOURCE -O2 $WARN -Ilib $(pkg-config --cflags libxxhash 2>/dev/null) \
	-o "$BB/tablecopy" bench/tablecopy.c "$BUILD/librevcheck.a" \
	$(pkg-config --libs openssl libxxhash libcjson 2>/dev/null) -lm 2>"$T/cc.tablecopy.log" &&
    timeout 600 "$BB/tablecopy" "$N" >"$T/tablecopy" 2>"$T/tablecopy.err"; then
	tc() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" "$T/tablecopy"; }
	log "$(cat "$T/tablecopy")"
	emit table_copy_rss "$(tc copy_rss)" "$(tc bytes)" bytes lower - \
	    "resident memory the private copy of an $N-record table adds (the mapping it replaced added $(tc map_rss) B) vs the table's size"
	emit table_copy_open_seconds "$(tc copy_open_s)" "$(tc map_open_s)" s lower - \
	    "table_open (read into private memory and validate) vs mmap and validate, file in the page cache"
	emit table_copy_lookup_ns "$(tc copy_lookup_ns)" "$(tc map_lookup_ns)" ns/lookup lower - \
	    "present ids at random (id formatting included) from the private copy vs from the mapping after MADV_DONTNEED"
else
	cat "$T/cc.tablecopy.log" "$T/tablecopy.err" >&2 2>/dev/null
	skip table_copy_rss "bench/tablecopy did not build or run"
fi

# ---------------------------------------------------------------- 5 + 6. memory and reload at 10^7

# filter_version: the X-Revcheck-Filter-Version revcheckd answers with.
filter_version() {
	curl -sS --max-time 2 -D - -o /dev/null "$BIG_URL/v1/check?id=x" 2>/dev/null |
	    awk -F': ' 'tolower($1) == "x-revcheck-filter-version" { gsub(/\r/, "", $2); print $2 }'
}

if [ "$HAVE_RC" = 1 ] && [ -d "$T/fb.$N" ] && revcheckd_start BIG "$T/fb.$N"; then
	# Steady state first: this also touches the filter, so the RSS below
	# counts the pages a serving daemon really has resident.
	timeout $((DUR + 30)) wrk -t2 -c64 -d"${DUR}s" --latency -s "$T/get.lua" \
	    "$BIG_URL" >"$T/wrk.big" 2>&1
	read -r S_RPS S_P99 S_NON2XX S_ERR < <(wrk_parse "$T/wrk.big")
	log "revcheckd GET with $N keys: $S_RPS req/s, p99 $S_P99 ms, non-2xx $S_NON2XX"
	RSS=$(( $(rss_kb "$BIG_PID" VmRSS) * 1024 ))
	ANON=$(( $(rss_kb "$BIG_PID" RssAnon) * 1024 ))
	RFILE=$(( $(rss_kb "$BIG_PID" RssFile) * 1024 ))
	log "revcheckd with $N keys: RSS $RSS B (anon $ANON, file-backed $RFILE)"
	if [ -n "$REDIS_MEM" ]; then
		emit memory_vs_redis "$RSS" "$REDIS_MEM" bytes lower - \
		    "revcheckd VmRSS with a $N-key filter after ${DUR}s of checks (anon $ANON B, file-backed $RFILE B) vs Redis used_memory for the same ids (Redis RSS $REDIS_RSS B)" \
		    0 ours_anon="$ANON" ours_file="$RFILE" peer_rss="$REDIS_RSS"
	else
		skip memory_vs_redis "redis figure missing (revcheckd RSS $RSS B)"
	fi

	# 6. Reload under load. The new N-key pair is built beforehand into a
	# staging directory (building is filterbuild's work, not the
	# daemon's, and would only measure CPU contention on 2 cores); under
	# wrk it is then published the way filterbuild publishes: the complete
	# version directory renamed in, then DIR/current switched atomically.
	v0=$(filter_version)
	staged=""
	if [ -L "$T/fb.$N/current" ] && [ -n "$v0" ] &&
	    timeout 600 "$FILTERBUILD" build --key "$T/key.pem" --out "$T/stage" \
	    --version $((v0 + 1)) $FB_OPTS --quiet "$T/ids2.txt" >"$T/fb.reload.log" 2>&1; then
		staged=$(readlink "$T/stage/current")
	fi
	if [ -n "$staged" ] && [ -d "$T/stage/$staged" ]; then
		t_wrk=$(date +%s.%N)
		wrk -t2 -c64 -d600s --latency -s "$T/get.lua" \
		    "$BIG_URL" >"$T/wrk.reload" 2>&1 &
		WRK_PID=$!
		rc_stop_at_exit "$WRK_PID"
		sleep 3
		t_pub=$(date +%s.%N)
		mv "$T/stage/$staged" "$T/fb.$N/$staged" &&
		    ln -s "$staged" "$T/fb.$N/.current.bench" &&
		    mv -T "$T/fb.$N/.current.bench" "$T/fb.$N/current"
		v1=$v0
		for _ in $(seq 1 300); do
			v1=$(filter_version)
			[ -n "$v1" ] && [ "$v1" != "$v0" ] && break
			sleep 0.1
		done
		t_swap=$(awk -v a="$t_pub" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
		# wrk stops 3 s after the swap is seen; SIGINT makes it print.
		sleep 3
		rc_stop_pid "$WRK_PID" INT
		RDUR=$(awk -v a="$t_wrk" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
		read -r R_RPS R_P99 R_NON2XX R_ERR < <(wrk_parse "$T/wrk.reload")
		HWM=$(( $(rss_kb "$BIG_PID" VmHWM) * 1024 ))
		RSS2=$(( $(rss_kb "$BIG_PID" VmRSS) * 1024 ))
		log "reload: version $v0 -> $v1, seen ${t_swap}s after publish; $R_RPS req/s, p99 $R_P99 ms, non-2xx $R_NON2XX, socket errors $R_ERR"
		if [ -n "$v1" ] && [ "$v1" != "$v0" ]; then
			emit reload_non2xx "$R_NON2XX" 0 responses lower zero \
			    "non-2xx in ${RDUR}s of wrk -t2 -c64 (absent ids) across the swap to a new $N-key filter, version $v0 -> $v1 answering ${t_swap}s after publish; socket errors $R_ERR" \
			    0 socket_errors="$R_ERR" swap_seen_s="$t_swap"
			emit reload_p99_vs_steady "$R_P99" "$S_P99" ms lower - \
			    "p99 over the run with the swap vs ${DUR}s of steady state on the same $N-key daemon"
			if [ -n "$REDIS_MEM" ]; then
				emit memory_peak_across_reload "$HWM" "$REDIS_MEM" bytes lower - \
				    "revcheckd peak RSS (VmHWM) from start through the swap, old and new $N-key pairs held at once (RSS after: $RSS2 B) vs Redis used_memory"
			fi
		else
			skip reload "the new filter was not picked up within 30 s (version $v0 -> $v1): $(tail -c 300 "$T/BIG.log")"
		fi
	else
		skip reload "could not stage a new version (current version '$v0'): $(tail -c 200 "$T/fb.reload.log" 2>/dev/null)"
	fi
	rc_stop_pid "$BIG_PID"
	BIG_PID=
else
	why="needs revcheckd, filterbuild, wrk and a $N-key build"
	[ "$HAVE_RC" = 1 ] && [ -d "$T/fb.$N" ] && why="revcheckd did not become ready with $N keys: $(tail -c 300 "$T/BIG.log" 2>/dev/null)"
	skip memory_vs_redis "$why"
	skip reload "$why"
fi

# The delta-chain targets (revocation latency, bytes per change, re-base under
# load): PostgreSQL, filterbuild follow, an origin and an edge.
if deadline_ok 1500; then
	BUILD=$BUILD REVCHECKD=$REVCHECKD FILTERBUILD=$FILTERBUILD "$ROOT/bench/delta.sh"
else
	skip delta "out of time"
fi

# The fleet targets (revocation lag at 100 edges, origin egress with and
# without the cache tier, idle cost, failover): PostgreSQL, two followers,
# an origin, nginx and the edges.
if deadline_ok 1650; then
	BUILD=$BUILD REVCHECKD=$REVCHECKD FILTERBUILD=$FILTERBUILD "$ROOT/bench/fleet.sh"
else
	skip fleet "out of time"
fi

# The token targets: /v1/authz with a cached verified ES256 token against
# the unverified single check, uncached verification against openssl speed.
if deadline_ok 1700; then
	BUILD=$BUILD REVCHECKD=$REVCHECKD FILTERBUILD=$FILTERBUILD BENCH_DURATION=$DUR \
	    "$ROOT/bench/jwt.sh"
else
	skip jwt "out of time"
fi

# The OCSP targets: /ocsp against openssl ocsp and CFSSL ocspserve on
# repeated serials, and a signature per unique serial against openssl
# speed; its rows go into $OUT too.
if deadline_ok 1750; then
	: >"$T/ocsp.rows"
	BUILD=$BUILD REVCHECKD=$REVCHECKD FILTERBUILD=$FILTERBUILD OCSP_ROWS=$T/ocsp.rows \
	    "$ROOT/bench/ocsp.sh"
	while IFS=$'\t' read -r -a f; do
		[ "${#f[@]}" -eq 0 ] || add_row "${f[@]}"
	done <"$T/ocsp.rows"
else
	skip ocsp "out of time"
fi

# Tail latency: p99 and p99.9 at half of nginx's maximum rate
# (h2load), revcheckd against nginx, steady and with a reload a second.
if deadline_ok 1800; then
	BUILD=$BUILD REVCHECKD=$REVCHECKD FILTERBUILD=$FILTERBUILD BENCH_DURATION=$DUR \
	    TAIL_N=${TAIL_N:-$HTTP_N} "$ROOT/bench/tail.sh"
else
	skip tail "out of time"
fi

# ---------------------------------------------------------------- 7c. 10^8 keys, last (make bench-large)
#
# Lookups and a build at LARGE_N, and the build target's second half:
# the build's cost per id at 10^8 against this run's 10^7 build; the
# exact layout at |U| = 10^8.
if [ "$LARGE" = 1 ]; then
	if [ "$HAVE_EXACT" = 1 ]; then
		log "the exact layout at $LARGE_N issued ids"
		exact_rows "$LARGE_N" 0
	fi
	if [ "$HAVE_LOOKUP" = 1 ]; then
		log "lookups at $LARGE_N keys"
		scale_lookup "$LARGE_N"
		rm -f "$T/lookup.$LARGE_N"
	fi
	if [ "$HAVE_FB" = 1 ]; then
		log "building $LARGE_N ids"
		ids=$T/ids.$LARGE_N.txt
		"$BB/genids" "$LARGE_N" 0 text >"$ids"
		sync
		if fb_build "$LARGE_N" "$ids" "$T/fb.$LARGE_N" "b$LARGE_N"; then
			eval "BUILD_WALL_$LARGE_N=\$FB_WALL BUILD_RSS_$LARGE_N=\$FB_RSS_KB BUILD_OUT_$LARGE_N=\$FB_OUT_BYTES"
			echo "# build n=$LARGE_N: ${FB_WALL}s, peak RSS ${FB_RSS_KB} kB, output $FB_OUT_BYTES B" >&2
			scale_build_row "$LARGE_N"
		else
			skip "scale_build_$LARGE_N" "filterbuild build failed: $(tail -c 200 "$T/fb.b$LARGE_N.log")"
		fi
		rm -rf "$ids" "$T/fb.$LARGE_N"
		w=${BUILD_WALL_10000000:-}
		w8=$(eval echo "\${BUILD_WALL_$LARGE_N:-}")
		if [ "$N" = 10000000 ] && [ -n "$w" ] && [ -n "$w8" ]; then
			emit build_100m_cost_per_id \
			    "$(awk -v w="$w8" 'BEGIN { printf "%.1f", w * 1e9 / 1e8 }')" \
			    "$(awk -v w="$w" 'BEGIN { printf "%.1f", 1.3 * w * 1e9 / 1e7 }')" ns/id lower 1 \
			    "build scaling: a build's cost per id at 10^8 at most 1.3x that at 10^7 ($(awk -v w="$w" 'BEGIN { printf "%.1f", w * 1e9 / 1e7 }') ns/id) (peer = the limit)"
		fi
	fi
fi

echo "== done in $(( $(date +%s) - START ))s; ${#RESULTS_TXT[@]} lines, JSON in ${OUT#"$ROOT"/}"
exit 0
