# pg.sh - a real PostgreSQL server for tests and benchmarks, owned by the script
#
# Source it after lib.sh (it uses $T, rc_free_port and lib.sh's exit hook):
#     . "$(dirname "$0")/lib.sh"; . "$(dirname "$0")/pg.sh"
#     rc_pg_start            initdb + pg_ctl in $T/pg on a free loopback port;
#                            sets PG_URL (postgresql://revcheck@127.0.0.1:PORT/postgres)
#     rc_psql SQL...         runs SQL (stops on the first error), prints rows unaligned
#     rc_pg_stop / rc_pg_restart [fast|immediate]
#     rc_follow_start DIR [options]  filterbuild follow on PG_URL with $T/key.pem
#                            into DIR (log: $T/follow.log); FOLLOW_PID is its pid
#     rc_follow_stop [SIGNAL]  stops it (TERM; KILL for a crash) and waits
#     rc_chain_ids           the ids of the chain in $F (base and deltas, as
#                            filterbuild verify --records reads it with
#                            $T/key.pub), sorted, on one line
#     rc_db_ids [URL]        the ids revcheck_revocations holds at URL
#                            (RC_REF_URL, else PG_URL), the same way
#     rc_chain_has WANT      waits (RC_WAIT_TRIES x 0.2 s, 30 s by default)
#                            until rc_chain_ids is WANT
#     rc_converged [URL]     waits until the chain holds what the database does
#     rc_chain_lacks ID      true when the chain does not hold ID
#     rc_follow_refuses REGEX WHAT  the follower refuses 2 more rounds
#                            (REGEX logged twice more in $T/follow.log, as
#                            it logs each round it refuses; the rounds back
#                            off, 1 s then 2 s) and signs no head meanwhile;
#                            fails the test, naming WHAT, when not
#     rc_version, rc_head_sha  $F's current version; its head file's SHA-256
#     rc_pg2_init DIR        a second cluster (a publisher) in DIR: initdb as
#                            rc_pg_start's (or fill DIR/data with pg_basebackup
#                            into rc_pg2_dir DIR for a standby)
#     rc_pg2_conf DIR SETTING...  its port (a free one: RC_PG2_PORT), its
#                            socket directory and each SETTING line
#     rc_pg2_ctl DIR ARGS..., rc_pg2_stop DIR  pg_ctl on it; a fast stop
#     WALSENDER, rc_ws_cont  a WAL sender a test stopped (SIGSTOP), let go
#                            at exit (it would hold up its server's shutdown)
#     rc_head_at, rc_chain_at  the signed issued_at of $F's head; the newest
#                            any delta or head of $F claims (Unix seconds)
#     rc_filter_at DIR       the signed issued_at of DIR's current filter
# Debian's postgresql package puts the server in /usr/lib/postgresql/N/bin.
# The server refuses to run as root: as root the cluster belongs to
# `nobody` (runuser), otherwise to the user running the test. Trust
# authentication on 127.0.0.1 only; the socket directory is the cluster's own.
# The server is stopped when the script exits, however it exits.

PG_BIN=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
PG_DIR=
PG_PORT=
PG_URL=
# A test killed by its timeout still stops the server (the EXIT trap runs).
trap "exit 143" TERM INT

# Runs a command as the cluster's owner.
rc_pg_as() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u nobody -- "$@"
	else
		"$@"
	fi
}

rc_pg_ctl() {
	rc_pg_as "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 "$@"
}

rc_pg_start() {
	if [ ! -x "$PG_BIN/initdb" ]; then
		echo "rc_pg_start: no initdb under /usr/lib/postgresql (apt-get install postgresql)" >&2
		return 1
	fi
	PG_DIR="$T/pg"
	mkdir -p "$PG_DIR"
	if [ "$(id -u)" -eq 0 ]; then
		chmod 0711 "$T"
		chown nobody "$PG_DIR"
	fi
	rc_pg_as "$PG_BIN/initdb" -D "$PG_DIR/data" -U revcheck --auth=trust \
	    --no-sync -E UTF8 --locale=C >"$PG_DIR/initdb.log" 2>&1 || {
		cat "$PG_DIR/initdb.log" >&2; return 1; }
	mkdir -p "$PG_DIR/sock"
	[ "$(id -u)" -ne 0 ] || chown nobody "$PG_DIR/sock"
	local try
	for try in 1 2 3 4 5; do
		PG_PORT=$(rc_free_port)
		cat >>"$PG_DIR/data/postgresql.conf" <<CONF
port = $PG_PORT
listen_addresses = '127.0.0.1'
unix_socket_directories = '$PG_DIR/sock'
fsync = off
max_connections = 50
CONF
		if rc_pg_ctl start >/dev/null 2>&1; then
			PG_URL="postgresql://revcheck@127.0.0.1:$PG_PORT/postgres"
			RC_AT_EXIT+=(rc_pg_stop)
			return 0
		fi
		grep -q "could not bind\|Address already in use" "$PG_DIR/server.log" || break
	done
	echo "rc_pg_start: the server did not start; log:" >&2
	tail -n 20 "$PG_DIR/server.log" >&2
	return 1
}

rc_pg_stop() {
	[ -n "$PG_DIR" ] && [ -e "$PG_DIR/data/postmaster.pid" ] || return 0
	rc_pg_ctl stop -m "${1:-fast}" >/dev/null 2>&1 || true
}

rc_pg_restart() {
	rc_pg_ctl stop -m "${1:-fast}" >/dev/null 2>&1
	rc_pg_ctl start >/dev/null 2>&1
}

rc_psql() {
	psql -X -q -v ON_ERROR_STOP=1 -At "$PG_URL" "$@"
}

FOLLOW_PID=
rc_follow_start() {
	local dir=$1
	shift
	"$FILTERBUILD" follow --source "$PG_URL" --key "$T/key.pem" --out "$dir" \
	    "$@" >>"$T/follow.log" 2>&1 &
	FOLLOW_PID=$!
}

# rc_follow_chain DIR: a signing key ($T/key.pem, $T/key.pub), PostgreSQL
# with the schema and one revoked id ('a'), and filterbuild follow
# publishing into DIR (300 ms rounds, a head every 2 s, valid 10 min);
# waits for its first version and sets V1 to its number.
rc_follow_chain() {
	local dir=$1
	"$FILTERBUILD" keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
	rc_pg_start
	psql -X -q -v ON_ERROR_STOP=1 -f "$RC_SRC/config/postgresql-schema.sql" "$PG_URL"
	rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('a')"
	rc_follow_start "$dir" --interval 300ms --valid-for 10m --head-every 2s
	for ((_rc_ci = 0; _rc_ci < 150; _rc_ci++)); do [ -e "$dir/current" ] && break; sleep 0.2; done
	V1=$(readlink "$dir/current" | sed 's/^v0*//')
}

rc_follow_stop() {
	[ -n "$FOLLOW_PID" ] || return 0
	kill "-${1:-TERM}" "$FOLLOW_PID" 2>/dev/null || true
	wait "$FOLLOW_PID" 2>/dev/null || true
	FOLLOW_PID=
}
RC_AT_EXIT+=(rc_follow_stop)

rc_chain_ids() {
	"$FILTERBUILD" verify --pub "$T/key.pub" --records "$F" 2>>"$T/verify.err" |
	    cut -f2 | LC_ALL=C sort | tr '\n' ' '
}

rc_db_ids() {
	psql -X -q -At "${1:-${RC_REF_URL:-$PG_URL}}" \
	    -c "SELECT id FROM revcheck_revocations" | LC_ALL=C sort | tr '\n' ' '
}

rc_chain_has() {
	local i
	for ((i = 1; i <= ${RC_WAIT_TRIES:-150}; i++)); do
		[ "$(rc_chain_ids)" = "$1" ] && return 0
		sleep 0.2
	done
	echo "# chain: $(rc_chain_ids)  want: $1" >&2
	return 1
}

rc_converged() {
	rc_chain_has "$(rc_db_ids "$@")"
}

rc_follow_refuses() {
	local h m
	h=$(rc_head_sha)
	m=$(rc_log_mark "$T/follow.log")
	rc_wait_log_since "$T/follow.log" "$m" "$1" 2 ||
	    rc_fail "$2: the follower did not refuse two more rounds"
	rc_expect_eq "$(rc_head_sha)" "$h" "$2: no head is signed"
}

rc_version() { readlink "$F/current" | sed 's/^v0*//'; }
rc_head_sha() { sha256sum "$F/current/delta/head.rcd" 2>/dev/null | cut -c1-64; }
rc_chain_lacks() {
	case " $(rc_chain_ids) " in *" $1 "*) return 1 ;; esac
	return 0
}

# A delta's or head's signed issued_at: a little-endian u64 at offset 96.
rc_head_at() { od -An -t u8 -j 96 -N 8 "$F/current/delta/head.rcd" | tr -d ' '; }
rc_chain_at() {
	local f t max=0
	for f in "$F"/current/delta/*.rcd; do
		t=$(od -An -t u8 -j 96 -N 8 "$f" | tr -d ' ')
		[ "$t" -gt "$max" ] && max=$t
	done
	echo "$max"
}
rc_filter_at() {
	date -d "$("$FILTERBUILD" inspect --json "$1" | python3 -c \
	    'import json, sys; print(json.load(sys.stdin)["issued_at"])')" +%s
}

rc_pg2_dir() {
	mkdir -p "$1/sock"
	[ "$(id -u)" -ne 0 ] || chown nobody "$1" "$1/sock"
}

rc_pg2_init() {
	rc_pg2_dir "$1"
	rc_pg_as "$PG_BIN/initdb" -D "$1/data" -U revcheck --auth=trust \
	    --no-sync -E UTF8 --locale=C >"$1/initdb.log" 2>&1 || {
		cat "$1/initdb.log" >&2; return 1; }
	printf '%s\n' "listen_addresses = '127.0.0.1'" "fsync = off" \
	    >>"$1/data/postgresql.conf"
}

rc_pg2_conf() {
	local d=$1
	shift
	RC_PG2_PORT=$(rc_free_port)
	printf '%s\n' "port = $RC_PG2_PORT" "unix_socket_directories = '$d/sock'" \
	    "$@" >>"$d/data/postgresql.conf"
}

rc_pg2_ctl() {
	local d=$1
	shift
	rc_pg_as "$PG_BIN/pg_ctl" -D "$d/data" -l "$d/server.log" -w -t 60 "$@"
}

rc_pg2_stop() {
	[ -e "$1/data/postmaster.pid" ] || return 0
	rc_pg2_ctl "$1" stop -m fast >/dev/null 2>&1 || true
}

WALSENDER=
rc_ws_cont() { [ -z "$WALSENDER" ] || kill -CONT "$WALSENDER" 2>/dev/null || true; }
