#!/usr/bin/env bash
# delta.sh - the delta-chain targets: revocation latency, bytes per change, no failed request through a re-base
#
# Usage: BUILD=build/bench bench/delta.sh   (make bench runs it; never fails)
# Knobs (environment):
#   DELTA_REVOCATIONS=1000   revocations timed (target: >= 1000)
#   DELTA_RATE=20            revocations committed per second
#   DELTA_LOAD_RATE=2000     checks per second at each node meanwhile (0: as
#                            fast as the load processes go)
#   DELTA_BASE_N=1000000     ids in the base (the full filter an edge would download)
#   DELTA_SIZES="10 1000 100000"   ids per delta for the bytes-per-change rows
#   DELTA_REBASE_SECONDS=60  at most this long under load waiting for the re-base
#                            to reach the edge (the load stops 3 s after it has)
# Starts its own PostgreSQL (tests/integration/pg.sh), filterbuild follow,
# an origin and an edge syncing from it every second, all on 127.0.0.1.
# Prints one line per target with MET / NOT MET; numbers on a shared or
# loaded machine are not the product's.
. "$(dirname "$0")/env.sh"
. "$ROOT/tests/integration/pg.sh"
set +e

R=${DELTA_REVOCATIONS:-1000}
RATE=${DELTA_RATE:-20}
BASE_N=${DELTA_BASE_N:-1000000}
SIZES=${DELTA_SIZES:-10 1000 100000}
RB_SECS=${DELTA_REBASE_SECONDS:-60}
F=$T/filters
say() { echo "delta: $*"; }

"$FILTERBUILD" keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null || exit 0
rc_pg_start || { say "skipped (no PostgreSQL)"; exit 0; }
psql -X -q -v ON_ERROR_STOP=1 -f "$ROOT/config/postgresql-schema.sql" "$PG_URL" || exit 0
rc_psql -c "INSERT INTO revcheck_revocations (id) SELECT 'base-' || g FROM generate_series(1, $BASE_N) g"
rc_follow_start "$F" --interval 200ms --valid-for 1h --head-every 5s \
    --rebase-after 250000 --rebase-every never --quiet
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
verdict() { awk -v v="$1" -v t="$2" 'BEGIN { print ((v ~ /^[0-9.]+$/ && v + 0 <= t + 0) ? "MET" : "NOT MET") }'; }
say "revocation_latency_origin_p99: ${p99o}s over $R revocations (target <= 1 s: $(verdict "$p99o" 1))"
say "revocation_latency_edge_p99: ${p99e}s over $R revocations (target <= 3 s: $(verdict "$p99e" 3))"

# 2. Bytes per change on the wire to the edge, against the full filter.
edge_field() { rc_curl "$E_URL/v1/status"; rc_json "$1"; }
full=$(stat -c %s "$F/current/filter.rcf")
total_b=0; total_ids=0; missed=0
for k in $SIZES; do
	b0=$(edge_field sync.delta_bytes); s0=$(edge_field filter.delta.seq)
	rc_psql -c "INSERT INTO revcheck_revocations (id) SELECT 'chg-$k-' || g FROM generate_series(1, $k) g"
	got=no
	for _ in $(seq 1 600); do
		rc_curl "$E_URL/v1/check?id=chg-$k-$k"
		[ "$(rc_json status)" = revoked ] && got=yes && break
		sleep 0.1
	done
	[ "$got" = yes ] || { missed=$((missed + 1)); say "bytes_per_change_$k: the edge did not enforce the delta within 60 s"; }
	sleep 1.5	# the fetch that follows the delta is counted too
	b1=$(edge_field sync.delta_bytes); s1=$(edge_field filter.delta.seq)
	d=$((b1 - b0))
	total_b=$((total_b + d)); total_ids=$((total_ids + k))
	say "bytes_per_change_$k: $d bytes for $k ids = $(awk -v d="$d" -v k="$k" 'BEGIN { printf "%.1f", d / k }') B/id (deltas $s0 -> $s1; the full filter is $full bytes: ratio $(awk -v f="$full" -v d="$d" 'BEGIN { printf "%.2f", (d > 0 ? f / d : 0) }')x)"
done
per=$(awk -v d="$total_b" -v k="$total_ids" 'BEGIN { printf "%.1f", d / k }')
say "bytes_per_change_amortised: $per B/id over $total_ids ids (target <= 32: $(awk -v p="$per" -v m="$missed" 'BEGIN { print ((m == 0 && p + 0 > 0 && p + 0 <= 32) ? "MET" : "NOT MET") }'))"
f0=$(edge_field sync.delta_fetches); b0=$(edge_field sync.delta_bytes)
sleep 10
f1=$(edge_field sync.delta_fetches); b1=$(edge_field sync.delta_bytes)
idle=$(( (b1 - b0) / (f1 - f0 > 0 ? f1 - f0 : 1) ))
say "idle_edge_bytes_per_interval: $idle B ($((f1 - f0)) fetches in 10 s; target <= 1024: $( [ "$((f1 - f0))" -gt 0 ] && [ "$idle" -le 1024 ] && echo MET || echo NOT MET))"

# 3. No failed request through a re-base under load (a new scope forces
# one): the load runs until the edge serves the new base, then 3 s more.
v0=$(readlink "$F/current")
ev0=$(edge_field filter.version)
python3 "$ROOT/bench/delta.py" load "$T/load.stop" "$RB_SECS" "$O_URL" "$E_URL" >"$T/load.out" &
lp=$!
for _ in $(seq 1 300); do [ -e "$T/load.stop.ready" ] && break; sleep 0.1; done
sleep 2
t_rb=$(date +%s.%N)
rc_psql -c "INSERT INTO revcheck_revocations (scope, id) VALUES ('rebase-scope', 'x')"
ev=$ev0
for _ in $(seq 1 $((RB_SECS * 5))); do
	ev=$(edge_field filter.version)
	[ "$ev" != "$ev0" ] && [ "$ev" != "<invalid>" ] && break
	sleep 0.2
done
t_edge=$(awk -v a="$t_rb" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
sleep 3
touch "$T/load.stop"
wait "$lp"
v1=$(readlink "$F/current")
fails=$(sed -n 's/.*failed=\([0-9]*\).*/\1/p' "$T/load.out")
ok=$( [ "${fails:-1}" = 0 ] && [ "$v0" != "$v1" ] && [ "$ev" != "$ev0" ] && echo MET || echo NOT MET)
say "rebase_failed_requests: $(cat "$T/load.out") at origin and edge across $v0 -> $v1 (edge at version $ev0 -> $ev ${t_edge}s after the insert; target 0: $ok)"
exit 0
