#!/usr/bin/env bash
# delta.sh - issue 16's targets: revocation latency, bytes per change, no failed request through a re-base
#
# Usage: BUILD=build/bench bench/delta.sh   (make bench runs it; never fails)
# Knobs (environment):
#   DELTA_REVOCATIONS=1000   revocations timed (target: >= 1000)
#   DELTA_RATE=20            revocations committed per second
#   DELTA_BASE_N=100000      ids in the base (the full filter an edge would download)
#   DELTA_SIZES="10 1000 100000"   ids per delta for the bytes-per-change rows
#   DELTA_REBASE_SECONDS=10  seconds of load around the re-base
# Starts its own PostgreSQL (tests/integration/pg.sh), filterbuild follow,
# an origin and an edge syncing from it every second, all on 127.0.0.1.
# Prints one line per target with MET / NOT MET; numbers on a shared or
# loaded machine are not the product's.
. "$(dirname "$0")/env.sh"
. "$ROOT/tests/integration/pg.sh"
set +e

R=${DELTA_REVOCATIONS:-1000}
RATE=${DELTA_RATE:-20}
BASE_N=${DELTA_BASE_N:-100000}
SIZES=${DELTA_SIZES:-10 1000 100000}
RB_SECS=${DELTA_REBASE_SECONDS:-10}
F=$T/filters
say() { echo "delta: $*"; }

"$FILTERBUILD" keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null || exit 0
rc_pg_start || { say "skipped (no PostgreSQL)"; exit 0; }
psql -X -q -v ON_ERROR_STOP=1 -f "$ROOT/config/postgresql-schema.sql" "$PG_URL" || exit 0
rc_psql -c "INSERT INTO revcheck_revocations (id) SELECT 'base-' || g FROM generate_series(1, $BASE_N) g"
"$FILTERBUILD" follow --source "$PG_URL" --key "$T/key.pem" --out "$F" --interval 200ms \
    --valid-for 1h --head-every 5s --rebase-after 250000 --rebase-every never --quiet \
    >"$T/follow.log" 2>&1 &
FPID=$!
stop_follow() { kill "$FPID" 2>/dev/null; wait "$FPID" 2>/dev/null; }
RC_AT_EXIT+=(stop_follow)
for _ in $(seq 1 600); do [ -e "$F/current/delta/head.rcd" ] && break; sleep 0.1; done
mkdir -p "$T/so" "$T/se"
rc_start O --filter-dir "$F" --trusted-key "$T/key.pub" --state-dir "$T/so" || exit 0
rc_start E --upstream-filter "$O_URL/v1/filter" --upstream-check "$O_URL/v1/check" \
    --upstream-insecure-http --trusted-key "$T/key.pub" --state-dir "$T/se" \
    --sync-interval 1 || exit 0
rc_wait_ready "$E_URL" 30

# 1. Revocation latency under load.
say "timing $R revocations at $RATE/s under load (origin and edge)"
out=$(python3 "$ROOT/bench/delta.py" latency "$PG_URL" "$O_URL" "$E_URL" "$R" "$RATE")
echo "$out" | sed 's/^/delta: /'
p99o=$(echo "$out" | sed -n 's/^origin .* p99=\([0-9.na]*\).*/\1/p')
p99e=$(echo "$out" | sed -n 's/^edge .* p99=\([0-9.na]*\).*/\1/p')
verdict() { awk -v v="$1" -v t="$2" 'BEGIN { print (v != "nan" && v + 0 <= t + 0) ? "MET" : "NOT MET" }'; }
say "revocation_latency_origin_p99: ${p99o}s over $R revocations (target <= 1 s: $(verdict "$p99o" 1))"
say "revocation_latency_edge_p99: ${p99e}s over $R revocations (target <= 3 s: $(verdict "$p99e" 3))"

# 2. Bytes per change on the wire to the edge, against the full filter.
edge_field() { rc_curl "$E_URL/v1/status"; rc_json "$1"; }
full=$(stat -c %s "$F/current/filter.rcf")
total_b=0; total_ids=0
for k in $SIZES; do
	b0=$(edge_field sync.delta_bytes); s0=$(edge_field filter.delta.seq)
	rc_psql -c "INSERT INTO revcheck_revocations (id) SELECT 'chg-$k-' || g FROM generate_series(1, $k) g"
	for _ in $(seq 1 600); do
		rc_curl "$E_URL/v1/check?id=chg-$k-$k"
		[ "$(rc_json status)" = revoked ] && break
		sleep 0.1
	done
	sleep 1.5	# the fetch that follows the delta is counted too
	b1=$(edge_field sync.delta_bytes); s1=$(edge_field filter.delta.seq)
	d=$((b1 - b0))
	total_b=$((total_b + d)); total_ids=$((total_ids + k))
	say "bytes_per_change_$k: $d bytes for $k ids = $(awk -v d="$d" -v k="$k" 'BEGIN { printf "%.1f", d / k }') B/id (deltas $s0 -> $s1; the full filter is $full bytes: ratio $(awk -v f="$full" -v d="$d" 'BEGIN { printf "%.2f", (d > 0 ? f / d : 0) }')x)"
done
per=$(awk -v d="$total_b" -v k="$total_ids" 'BEGIN { printf "%.1f", d / k }')
say "bytes_per_change_amortised: $per B/id over $total_ids ids (target <= 32: $(awk -v p="$per" 'BEGIN { print p + 0 <= 32 ? "MET" : "NOT MET" }'))"
f0=$(edge_field sync.delta_fetches); b0=$(edge_field sync.delta_bytes)
sleep 10
f1=$(edge_field sync.delta_fetches); b1=$(edge_field sync.delta_bytes)
idle=$(( (b1 - b0) / (f1 - f0 > 0 ? f1 - f0 : 1) ))
say "idle_edge_bytes_per_interval: $idle B ($((f1 - f0)) fetches in 10 s; target <= 1024: $( [ "$idle" -le 1024 ] && echo MET || echo NOT MET))"

# 3. No failed request through a re-base under load (a new scope forces one).
v0=$(readlink "$F/current")
python3 "$ROOT/bench/delta.py" load "$RB_SECS" "$O_URL" "$E_URL" >"$T/load.out" &
lp=$!
sleep 2
rc_psql -c "INSERT INTO revcheck_revocations (scope, id) VALUES ('rebase-scope', 'x')"
wait "$lp"
v1=$(readlink "$F/current")
rc_curl "$E_URL/v1/status"; ev=$(rc_json filter.version)
fails=$(sed -n 's/.*failed=\([0-9]*\).*/\1/p' "$T/load.out")
say "rebase_failed_requests: $(cat "$T/load.out") across $v0 -> $v1 (edge at version $ev; target 0: $( [ "${fails:-1}" = 0 ] && [ "$v0" != "$v1" ] && echo MET || echo NOT MET))"
exit 0
