#!/usr/bin/env bash
# fleet.sh - a fleet on loopback: two followers, an origin, an nginx cache tier and 100 edges; revocation lag, origin egress, idle cost, failover
#
# Usage: BUILD=build/bench bench/fleet.sh   (make bench runs it; never fails)
# Knobs (environment):
#   FLEET_EDGES=100          edges (each a real revcheckd)
#   FLEET_RATE=5             revocations committed per second
#   FLEET_REVOCATIONS=150    revocations timed with the edges on the origin
#                            (the writing follower is killed FLEET_KILL_AT=12 s in)
#   FLEET_CACHE_REVOCATIONS=100   revocations timed through the cache tier
#   FLEET_IDLE_SECONDS=60    the idle window (nothing committed)
#   FLEET_POLL_MS=100        how often the driver asks each edge
# Starts its own PostgreSQL (tests/integration/pg.sh), two filterbuild
# follow processes on one directory (one writes, the other stands by), an
# origin revcheckd behind a byte-counting relay (bench/fleet.py proxy: the
# origin's egress), then FLEET_EDGES edges on the relay; bench/fleet.py
# drive commits revocations while it asks every edge about them (the
# answers are the checks the edges serve meanwhile), and kills the writing
# follower once. Then the same edges restarted behind the nginx cache tier
# (config/nginx-cache-tier.conf, its own relay to the origin). Prints one
# line per figure and per target with MET / NOT MET; numbers on a shared
# or loaded machine are not the product's.
. "$(dirname "$0")/env.sh"
. "$ROOT/tests/integration/pg.sh"
set +e

N=${FLEET_EDGES:-100}
RATE=${FLEET_RATE:-5}
COUNT=${FLEET_REVOCATIONS:-150}
CCOUNT=${FLEET_CACHE_REVOCATIONS:-100}
IDLE=${FLEET_IDLE_SECONDS:-60}
KILL_AT=${FLEET_KILL_AT:-12}
F=$T/filters
PY=$ROOT/bench/fleet.py
CACHE_CONF=$ROOT/config/nginx-cache-tier.conf
say() { echo "fleet: $*"; }
verdict() { awk -v v="$1" -v t="$2" 'BEGIN { print ((v ~ /^[0-9.]+$/ && v + 0 <= t + 0) ? "MET" : "NOT MET") }'; }
field() { echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -n 1; }

say "commit $(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)," \
    "CPU $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo) x $(nproc)"
say "$N edges, $RATE revocations/s; $COUNT timed on the origin (writer killed ${KILL_AT} s in), $CCOUNT through the cache tier"

"$FILTERBUILD" keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null || exit 0
rc_pg_start || { say "skipped (no PostgreSQL)"; exit 0; }
psql -X -q -v ON_ERROR_STOP=1 -f "$ROOT/config/postgresql-schema.sql" "$PG_URL" || exit 0
rc_psql -c "INSERT INTO revcheck_revocations (id) SELECT 'base-' || g FROM generate_series(1, 10000) g" >/dev/null

# The follower pair: the same arguments, one directory.
FPIDS=
fstart() {
	"$FILTERBUILD" follow --source "$PG_URL" --key "$T/key.pem" --out "$F" \
	    --valid-for 1h >>"$T/f$1.log" 2>&1 &
	rc_stop_at_exit "$!"
	disown "$!"	# its SIGKILL is the benchmark's, not news
	FPIDS=$FPIDS${FPIDS:+,}$!
}
fstart 1
rc_wait_log "$T/f1.log" "leader: took the lock" 1 60 || { say "skipped (no follower leads)"; exit 0; }
fstart 2
for _ in $(seq 1 600); do [ -e "$F/current/delta/head.rcd" ] && break; sleep 0.1; done

mkdir -p "$T/so"
rc_start O --filter-dir "$F" --trusted-key "$T/key.pub" --state-dir "$T/so" \
    --max-conns-per-ip 4096 --log-level warn || exit 0
# relay NAME TARGET_PORT: a byte-counting relay to the target (NAME_PORT, $T/NAME.count).
relay() {
	local port
	port=$(rc_free_port)
	python3 "$PY" proxy "$port" "$2" "$T/$1.count" 2>>"$T/$1.log" &
	rc_stop_at_exit "$!"
	printf -v "$1_PORT" '%s' "$port"
	for _ in $(seq 1 100); do [ -e "$T/$1.count" ] || curl -s -o /dev/null "http://127.0.0.1:$port/healthz"; [ -e "$T/$1.count" ] && break; sleep 0.1; done
}
bytes() { cat "$T/$1.count" 2>/dev/null || echo 0; }
# cpu_ms PID: user + system CPU time of PID so far, in milliseconds.
cpu_ms() { awk -v hz="$(getconf CLK_TCK)" '{ print int(($14 + $15) * 1000 / hz) }' "/proc/$1/stat" 2>/dev/null || echo 0; }
rss_mib() { awk '/^VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status" 2>/dev/null; }
relay P1 "$O_PORT"

# edges_start FILTER_BASE CHECK_BASE: (re)starts the N edges, all at once
# on distinct free ports (one that did not come up is started again by
# rc_start, on another port); their URLs in $T/edges.
EDGE_OPTS=${FLEET_EDGE_OPTS:-}
edge_args() {
	# shellcheck disable=SC2086
	echo --upstream-filter "$1/v1/filter" --upstream-check "$2/v1/check" \
	    --upstream-insecure-http --trusted-key "$T/key.pub" --state-dir "$T/e$3" \
	    --log-level warn $EDGE_OPTS
}
edges_start() {
	local i port ports=" " up
	: >"$T/edges"
	for i in $(seq 1 "$N"); do
		mkdir -p "$T/e$i"
		until port=$(rc_free_port) && [[ $ports != *" $port "* ]]; do :; done
		ports="$ports$port "
		# shellcheck disable=SC2046
		"$REVCHECKD" --listen "127.0.0.1:$port" $(edge_args "$1" "$2" "$i") >>"$T/E$i.log" 2>&1 &
		printf -v "E${i}_PID" '%s' "$!"
		printf -v "E${i}_PORT" '%s' "$port"
		printf -v "E${i}_URL" '%s' "http://127.0.0.1:$port"
		RC_DAEMONS+=("E$i")
	done
	for i in $(seq 1 "$N"); do
		up=0
		for _ in $(seq 1 300); do
			curl -s -o /dev/null --max-time 1 "$(eval "echo \$E${i}_URL")/healthz" && { up=1; break; }
			kill -0 "$(eval "echo \$E${i}_PID")" 2>/dev/null || break
			sleep 0.1
		done
		if [ "$up" = 0 ]; then
			rc_stop_pid "$(eval "echo \$E${i}_PID")"
			# shellcheck disable=SC2046
			rc_start "E$i" $(edge_args "$1" "$2" "$i") || return 1
		fi
		eval "echo \$E${i}_URL" >>"$T/edges"
	done
	for i in $(seq 1 "$N"); do rc_wait_ready "$(eval "echo \$E${i}_URL")" 120 || return 1; done
	# Steady state: every edge holds its long-poll (sync.mode push), when
	# its upstream holds requests; 60 s at most.
	for _ in $(seq 1 60); do
		PUSHING=0
		for i in $(seq 1 "$N"); do
			[[ $(curl -s --max-time 2 "$(eval "echo \$E${i}_URL")/v1/status") == *'"mode":"push"'* ]] &&
			    PUSHING=$((PUSHING + 1))
		done
		[ "$PUSHING" = "$N" ] && break
		sleep 1
	done
}
edges_stop() {
	local i
	for i in $(seq 1 "$N"); do kill -TERM "$(eval "echo \$E${i}_PID")" 2>/dev/null; done
	for i in $(seq 1 "$N"); do rc_stop "E$i" >/dev/null 2>&1; done
}
rss() {
	local i kb tot=0 max=0
	for i in $(seq 1 "$N"); do
		kb=$(awk '/^VmRSS/ {print $2}' "/proc/$(eval "echo \$E${i}_PID")/status" 2>/dev/null)
		tot=$((tot + ${kb:-0})); [ "${kb:-0}" -gt "$max" ] && max=${kb:-0}
	done
	echo "mean $((tot / N / 1024)) MiB, max $((max / 1024)) MiB, all $((tot / 1024)) MiB"
}

t0=$(date +%s)
edges_start "http://127.0.0.1:$P1_PORT" "http://127.0.0.1:$P1_PORT" ||
    { say "skipped (the edges did not come up)"; exit 0; }
say "$N edges up in $(( $(date +%s) - t0 )) s ($PUSHING holding a long-poll); RSS per edge: $(rss)"

# 1. Edges on the origin; the writer killed once.
b0=$(bytes P1); oc0=$(cpu_ms "$O_PID")
out=$(FLEET_POLL_MS=${FLEET_POLL_MS:-100} python3 "$PY" drive "$PG_URL" "$T/edges" "$COUNT" "$RATE" \
    "$KILL_AT" "$F/follow-leader.json" "$F" "$FPIDS")
b1=$(bytes P1); oc1=$(cpu_ms "$O_PID")
echo "$out" | sed 's/^/fleet: direct: /'
p99=$(field lag_p99 "$out"); max=$(field lag_max "$out")
eg_direct=$(( (b1 - b0) / COUNT ))
per_edge=$(( eg_direct / N ))
say "direct: origin egress $eg_direct B per revocation for $N edges ($per_edge B per edge); origin CPU $(( (oc1 - oc0) / COUNT )) ms per revocation, RSS $(rss_mib "$O_PID") MiB"
gap=$(field failover_gap "$out"); folag=$(field failover_lag_max "$out")
fails=$(( $(field failed "$out") + 0 )); wrong=$(( $(field wrong "$out") + 0 )); miss=$(( $(field missing "$out") + 0 ))

# 2. Idle: nothing committed.
sleep 2
i0=$(bytes P1); ic0=$(cpu_ms "$O_PID"); sleep "$IDLE"; i1=$(bytes P1); ic1=$(cpu_ms "$O_PID")
idle=$(awk -v b="$((i1 - i0))" -v n="$N" -v s="$IDLE" 'BEGIN { printf "%.0f", b / n / s * 60 }')
say "idle: $((i1 - i0)) B from the origin in $IDLE s = $idle B per edge per minute; origin CPU $(awk -v c="$((ic1 - ic0))" -v s="$IDLE" 'BEGIN { printf "%.1f", c / s }') ms per s, RSS $(rss_mib "$O_PID") MiB"

# 3. Through the cache tier.
p99c=; maxc=; eg_cache=
if [ ! -f "$CACHE_CONF" ]; then
	say "cache tier: skipped (config/nginx-cache-tier.conf is not in this tree)"
elif ! command -v nginx >/dev/null; then
	say "cache tier: skipped (no nginx)"
else
	relay P2 "$O_PORT"
	mkdir -p "$T/ng/cache"
	NGP=$(rc_free_port)
	# The shipped file, only its addresses and cache path ours (the origin
	# behind relay P2); connections for every edge's held long-poll.
	{
		rc_nginx_conf "$T/ng" | sed 's/worker_connections [0-9]*;/worker_connections 4096;/'
		sed -e "s|server 127.0.0.1:8080;|server 127.0.0.1:$P2_PORT;|" \
		    -e "s|listen 8081;|listen 127.0.0.1:$NGP;|" \
		    -e "s|/var/lib/nginx/revcheck-cache|$T/ng/cache|" "$CACHE_CONF"
		echo "}"
	} >"$T/ng/nginx.conf"
	if ! rc_nginx_run "$T/ng" "$NGP"; then
		say "cache tier: skipped (nginx did not start: $(tail -n 2 "$T/ng/error.log" 2>/dev/null))"
	else
		edges_stop
		edges_start "http://127.0.0.1:$NGP" "http://127.0.0.1:$P2_PORT" ||
		    say "cache tier: the edges did not come up"
		say "cache tier: $N edges up ($PUSHING holding a long-poll)"
		c0=$(bytes P2)
		outc=$(python3 "$PY" drive "$PG_URL" "$T/edges" "$CCOUNT" "$RATE")
		c1=$(bytes P2)
		echo "$outc" | sed 's/^/fleet: cache tier: /'
		p99c=$(field lag_p99 "$outc"); maxc=$(field lag_max "$outc")
		eg_cache=$(( (c1 - c0) / CCOUNT ))
		fails=$((fails + $(field failed "$outc") + 0)); wrong=$((wrong + $(field wrong "$outc") + 0))
		miss=$((miss + $(field missing "$outc") + 0))
		say "cache tier: origin egress $eg_cache B per revocation for $N edges ($(awk -v c="$eg_cache" -v e="$per_edge" 'BEGIN { printf "%.1f", (e > 0 ? c / e : 0) }')x one edge's)"
	fi
fi

# The targets.
say "target lag_direct: p99 ${p99}s (<= 0.5: $(verdict "$p99" 0.5)), max ${max}s (<= 2: $(verdict "$max" 2))"
if [ -n "$p99c" ]; then
	say "target lag_cache_tier: p99 ${p99c}s (<= 1: $(verdict "$p99c" 1)), max ${maxc}s (<= 2: $(verdict "$maxc" 2))"
	say "target egress_cache_tier: $eg_cache B per revocation (<= 3 x $per_edge: $(verdict "$eg_cache" $((3 * per_edge))))"
else
	say "target lag_cache_tier, egress_cache_tier: NOT MEASURED (no cache tier)"
fi
say "target idle: $idle B per edge per minute (<= 1024: $(verdict "$idle" 1024))"
fo_ok=NOT\ MET
if [ "$wrong" = 0 ] && [ "$miss" = 0 ] && [ "$(verdict "$gap" 5)" = MET ] &&
    [ "$(awk -v l="$folag" -v g="$gap" -v m="$max" 'BEGIN { print (l ~ /^[0-9.]+$/ && l + 0 <= g + m) }')" = 1 ]; then
	fo_ok=MET
fi
say "target failover: gap ${gap}s (<= 5), its revocations enforced within ${folag}s (<= gap + max lag), $wrong wrong, $miss not enforced, $fails failed answers: $fo_ok"
exit 0
