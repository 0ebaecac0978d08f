# lib.sh - shared helpers for integration tests: temp dirs, free ports, daemons, curl, asserts
#
# Source it from a tests/integration/it_*.sh script (bash):
#     . "$(dirname "$0")/lib.sh"
# It sets `set -euo pipefail`, finds the binaries (REVCHECKD, FILTERBUILD,
# REVCHECK_SRC from the environment, as the Makefile sets them, else
# bin/ in the source tree), makes $T (a temp dir removed on exit) and stops
# every daemon started with rc_start when the script exits, whatever way
# (RC_KEEP=1 keeps $T for a post-mortem; RC_VERBOSE=1 prints every pass).
#
# Daemons:   rc_start NAME [revcheckd args...]   sets NAME_URL, NAME_PORT, NAME_PID
#            rc_stop NAME                         SIGTERM, wait, fails unless exit 0
#            rc_wait_ready URL [SECONDS]          until /readyz answers 200 (30 s)
#            rc_wait_version URL VERSION [SECS]   until /v1/status serves VERSION
#                                                 (30 s)
#            rc_wait_json URL PATH VALUE [SECS]   until rc_json PATH of a GET of
#                                                 URL is VALUE (default 20 s)
# Waits end as soon as what they wait for is there: give them seconds to
# spare (a 2-CPU machine running three lanes, a sanitizer build 3x slower).
# Logs:      rc_wait_log FILE REGEX [COUNT] [SECS]  until COUNT lines of FILE
#                                                 match (1, 30 s): the whole file
#            rc_log_mark FILE                     prints FILE's line count now (0
#                                                 when absent): where the lines a
#                                                 case causes will start
#            rc_wait_log_since FILE MARK REGEX [COUNT] [SECS]   until COUNT lines
#                                                 after line MARK match (1, 30 s);
#                                                 says what it waited for when not
#            rc_log_since FILE MARK               prints the lines after line MARK
#            rc_log_has FILE MARK REGEX           true when a line after MARK
#                                                 matches (no wait; reads it all,
#                                                 so no SIGPIPE under pipefail)
# A case waits for its own event: a line an earlier case (or the start)
# may already have logged is waited for with a mark taken before the case
# acts, never by a grep of the whole log.
# Processes: rc_stop_at_exit PID                  rc_cleanup stops PID (another
#                                                 background process) at exit
#            rc_stop_pid PID [SIGNAL]             SIGNAL (TERM), SIGKILL after 5 s,
#                                                 reaped; never fails
# HTTP:      rc_curl [curl args...] URL           sets RC_STATUS, RC_BODY, RC_HEADERS
#            rc_header NAME                       a header of the last reply
#            rc_json PATH                         a field of RC_BODY: "status",
#                                                 "results.0.id", "filter.version"
# Asserts:   rc_expect_status CODE [what]; rc_expect_json PATH VALUE [what];
#            rc_expect_eq GOT WANT what; rc_expect_match TEXT REGEX what;
#            rc_ok what; rc_fail what; rc_done (prints the tally, sets the exit code)
# Servers:   tests/integration/pg.sh (a real PostgreSQL, sourced after this)
# Data:      rc_b64url STRING; rc_jwt ISS JTI (unsigned JWT; ISS "" for none);
#            rc_json_body KEY FILE  (a {"KEY": "<file contents>"} body file path)
#            rc_jwtmint ARGS...  keys, JWKS and signed JWTs by PyJWT (jwtmint.py)
#            rc_publish_link DIR VNAME   switch DIR/current to DIR/VNAME atomically
# nginx:     rc_nginx_conf DIR (the start of a config); rc_nginx_run DIR PORT
# TLS:       rc_tls_cert DIR   a test CA (DIR/ca.pem) and a server certificate
#                              for 127.0.0.1 (DIR/tls.crt, DIR/tls.key)
#            rc_nginx_tls DIR LOCATIONS   nginx serving LOCATIONS over TLS
#                              with DIR's test certificate; sets NG_TLS_BASE
set -euo pipefail

RC_SRC=${REVCHECK_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
REVCHECKD=${REVCHECKD:-$RC_SRC/bin/revcheckd}
FILTERBUILD=${FILTERBUILD:-$RC_SRC/bin/filterbuild}
RC_PASS=0
RC_FAILED=0
RC_DAEMONS=()
# Other background processes rc_cleanup stops (rc_stop_at_exit).
RC_PIDS=()
# Commands run first at exit, for helpers that own more than revcheckd
# (pg.sh's server).
RC_AT_EXIT=()
RC_NAME=$(basename "$0" .sh)

T=$(mktemp -d "${TMPDIR:-/tmp}/revcheck-$RC_NAME.XXXXXX")

# python3 is Debian's, for this script and all it runs: the modules the
# tests import are Debian's packages (python3-jwt, python3-cryptography),
# and a version manager's shim earlier on PATH costs more than the tests'
# own work (pyenv's runs some fifteen scripts a call: 0.47 s against
# 0.03 s on a CI machine, a hundred calls in the longest tests).
if [ -x /usr/bin/python3 ]; then
	mkdir "$T/.bin"
	ln -s /usr/bin/python3 "$T/.bin/python3"
	PATH=$T/.bin:$PATH
fi

# sleep SECONDS: bash's own wait when given a plain number (read -t on a
# pipe nothing writes to), sleep(1) for anything else. Polling loops sleep
# hundreds of times a test, and a process costs 10-25 ms of CPU on some CI
# machines, whose CPUs these tests keep busy.
exec {RC_SLEEP_FD}<> <(:)
sleep() {
	local _rc_x
	if [ $# -eq 1 ] && [[ $1 =~ ^[0-9]*\.?[0-9]+$ ]]; then
		read -r -t "$1" -u "$RC_SLEEP_FD" _rc_x || true
		return 0
	fi
	command sleep "$@"
}

rc_cleanup() {
	local n pid h
	for h in "${RC_AT_EXIT[@]+"${RC_AT_EXIT[@]}"}"; do
		"$h" || true
	done
	for pid in "${RC_PIDS[@]+"${RC_PIDS[@]}"}"; do
		rc_stop_pid "$pid"
	done
	if [ -n "${NG_PID:-}" ]; then	# an nginx from rc_nginx_run
		kill -TERM "$NG_PID" 2>/dev/null || true
		wait "$NG_PID" 2>/dev/null || true
	fi
	for n in "${RC_DAEMONS[@]+"${RC_DAEMONS[@]}"}"; do
		pid=$(eval "echo \${${n}_PID:-}")
		rc_stop_pid "$pid"
	done
	if [ "${RC_KEEP:-0}" = 1 ]; then
		echo "# kept $T (RC_KEEP=1)" >&2
	else
		rm -rf "$T"
	fi
}
trap rc_cleanup EXIT

# rc_stop_pid PID [SIGNAL]: sends SIGNAL (default TERM) to PID, waits up
# to 5 s for it to exit, then SIGKILLs it and reaps it (when it is a child
# of this shell); forgets PID for rc_cleanup. Returns 0 whatever happened,
# also for an empty PID or one already gone.
rc_stop_pid() {
	local pid=$1 sig=${2:-TERM} p left=()
	[ -n "$pid" ] || return 0
	for p in "${RC_PIDS[@]+"${RC_PIDS[@]}"}"; do
		[ "$p" = "$pid" ] || left+=("$p")
	done
	RC_PIDS=("${left[@]+"${left[@]}"}")
	kill -"$sig" "$pid" 2>/dev/null || return 0
	for ((_rc_si = 0; _rc_si < 50; _rc_si++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	return 0
}

# rc_stop_at_exit PID: rc_cleanup stops PID (rc_stop_pid) when the script
# exits, unless rc_stop_pid has stopped it before.
rc_stop_at_exit() {
	RC_PIDS+=("$1")
}

rc_ok() {
	RC_PASS=$((RC_PASS + 1))
	[ "${RC_VERBOSE:-0}" = 1 ] && echo "ok - $*" || true
}

rc_fail() {
	RC_FAILED=$((RC_FAILED + 1))
	echo "FAIL - $*" >&2
	if [ -n "${RC_BODY_FILE:-}" ] && [ -s "$RC_BODY_FILE" ]; then
		echo "#   last reply: $RC_STATUS $(head -c 400 "$RC_BODY_FILE")" >&2
	fi
}

rc_done() {
	echo "$RC_NAME: $RC_PASS passed, $RC_FAILED failed"
	[ "$RC_FAILED" -eq 0 ]
}

# A TCP port in 20000-31999 nobody listens on (checked, not reserved): below
# the kernel's ephemeral range (32768-60999), so no client connection of
# another test can be holding it as its local port. run-all.sh gives each
# of its lanes its own share (IT_PORT_LO, IT_PORT_SPAN), so tests running
# at once never draw the same port.
rc_free_port() {
	local p lo=${IT_PORT_LO:-20000} span=${IT_PORT_SPAN:-12000}
	for ((_rc_pi = 0; _rc_pi < 100; _rc_pi++)); do
		p=$((lo + RANDOM % span))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	echo "rc_free_port: no free port found" >&2
	return 1
}

# rc_start_faketime NAME CLOCKFILE OFFSET [args]: rc_start under
# libfaketime, its wall clock OFFSET ("-120", "+0") from the real one;
# write another offset into CLOCKFILE to step it (monotonic clocks stay
# real).
rc_start_faketime() {
	local name=$1 clock=$2 offset=$3 lib
	shift 3
	lib=$(ls /usr/lib/*/faketime/libfaketime.so.1 2>/dev/null | head -n 1)
	[ -n "$lib" ] || { rc_fail "libfaketime is missing (make deps installs faketime)"; return 1; }
	echo "$offset" >"$clock"
	LD_PRELOAD=$lib FAKETIME_TIMESTAMP_FILE=$clock FAKETIME_NO_CACHE=1 \
	    FAKETIME_DONT_FAKE_MONOTONIC=1 \
	    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
	    rc_start "$name" "$@"
}

# rc_start NAME [args]: starts revcheckd on a free loopback port; retries
# another port when the bind fails; waits until /healthz answers.
rc_start() {
	local name=$1 port pid url log try m
	shift
	log="$T/$name.log"
	for try in 1 2 3 4 5; do
		m=$(rc_log_mark "$log")	# a restarted NAME appends to its log
		port=$(rc_free_port)
		url="http://127.0.0.1:$port"
		"$REVCHECKD" --listen "127.0.0.1:$port" "$@" >>"$log" 2>&1 &
		pid=$!
		for ((_rc_ri = 0; _rc_ri < 100; _rc_ri++)); do
			if ! kill -0 "$pid" 2>/dev/null; then
				break
			fi
			if curl -s -o /dev/null --max-time 1 "$url/healthz"; then
				printf -v "${name}_PORT" '%s' "$port"
				printf -v "${name}_PID" '%s' "$pid"
				printf -v "${name}_URL" '%s' "$url"
				RC_DAEMONS+=("$name")
				return 0
			fi
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		rc_log_has "$log" "$m" "cannot listen" || break
	done
	echo "rc_start $name: revcheckd did not come up; log:" >&2
	tail -n 20 "$log" >&2
	return 1
}

# rc_stop NAME: SIGTERM and wait; returns the daemon's exit status.
rc_stop() {
	local name=$1 pid rc=0
	pid=$(eval "echo \${${name}_PID:-}")
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || true
	wait "$pid" || rc=$?
	printf -v "${name}_PID" '%s' ""
	return $rc
}

RC_STATUS=
RC_BODY=
RC_BODY_FILE=
RC_HEADERS=

# rc_curl [curl args] URL: one request; never fails the script.
rc_curl() {
	RC_BODY_FILE="$T/.body"
	: >"$RC_BODY_FILE"
	: >"$T/.headers"
	RC_STATUS=$(curl -s -o "$RC_BODY_FILE" -D "$T/.headers" \
	    -w '%{http_code}' --max-time 10 "$@") || true
	[ -n "$RC_STATUS" ] || RC_STATUS=000
	rc_read_file RC_BODY "$RC_BODY_FILE"
	rc_read_file RC_HEADERS "$T/.headers"
	RC_HEADERS=${RC_HEADERS//$'\r'/}
}

# rc_read_file VAR FILE: VAR is FILE's bytes but NULs and trailing
# newlines (what $(tr -d '\0' <FILE) gives), read without a process:
# rc_curl runs hundreds of times a test, and a fork is dear on some CI
# machines.
rc_read_file() {
	local -n _v=$1
	local _c=
	_v=
	while IFS= read -r -d '' _c; do _v+=$_c; done <"$2"
	_v+=$_c
	while [[ $_v == *$'\n' ]]; do _v=${_v%$'\n'}; done
}

rc_header() {
	printf '%s\n' "$RC_HEADERS" | awk -v h="$1" \
	    'BEGIN { h = tolower(h) } { n = index($0, ":"); if (n > 0 && tolower(substr($0, 1, n - 1)) == h) { v = substr($0, n + 1); sub(/^[ \t]+/, "", v); print v } }' |
	    tail -n 1
}

# rc_json PATH: prints the value at a dotted path of RC_BODY (strings
# bare, null as "null", true/false lowercase, numbers as JSON).
rc_json() {
	python3 - "$1" "$RC_BODY_FILE" <<'PY'
import json, sys
path, f = sys.argv[1], sys.argv[2]
try:
    v = json.load(open(f))
    for p in path.split('.') if path else []:
        v = v[int(p)] if isinstance(v, list) else v.get(p) if isinstance(v, dict) else None
except Exception:
    print("<invalid>")
    sys.exit(0)
if isinstance(v, str):
    print(v)
else:
    print(json.dumps(v))
PY
}

rc_expect_eq() {
	if [ "$1" = "$2" ]; then rc_ok "$3"; else rc_fail "$3: got '$1', want '$2'"; fi
}

rc_expect_match() {
	# A here-string, not a pipe: under pipefail a writer that gets
	# SIGPIPE when grep -q has already matched would fail the test.
	if grep -Eq -- "$2" <<<"$1"; then rc_ok "$3"; else
		rc_fail "$3: '$(printf '%s' "$1" | head -c 300)' does not match /$2/"; fi
}

rc_expect_status() {
	rc_expect_eq "$RC_STATUS" "$1" "${2:-status} -> HTTP $1"
}

rc_expect_json() {
	rc_expect_eq "$(rc_json "$1")" "$2" "${3:-$1} = $2"
}

rc_wait_ready() {
	local url=$1 secs=${2:-30} i
	for ((i = 1; i <= secs * 10; i++)); do
		if [ "$(curl -s -o /dev/null -w '%{http_code}' "$url/readyz")" = 200 ]; then
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# rc_wait_log FILE REGEX [COUNT] [SECONDS]: until COUNT lines of FILE match
# REGEX (default 1, within 30 s); 1 when they do not in time. It reads the
# whole file: for a line an earlier case may have logged too, rc_log_mark
# and rc_wait_log_since.
rc_wait_log() {
	local i n
	for ((i = 1; i <= ${4:-30} * 10; i++)); do
		n=$(grep -cE -- "$2" "$1" || true)
		[ "$n" -ge "${3:-1}" ] && return 0
		sleep 0.1
	done
	return 1
}

# rc_log_mark FILE: prints how many lines FILE has now (0 when it does not
# exist yet), to pass to rc_wait_log_since and rc_log_since.
rc_log_mark() {
	local n=0
	[ ! -e "$1" ] || n=$(wc -l <"$1")
	echo $((n))
}

# rc_log_since FILE MARK: prints FILE's lines after line MARK.
rc_log_since() {
	[ ! -e "$1" ] || tail -n "+$(($2 + 1))" "$1"
}

# rc_log_has FILE MARK REGEX: true when a line of FILE after line MARK
# matches REGEX. grep -c reads to the end: a `| grep -q` would close the
# pipe early, and pipefail would turn the writer's SIGPIPE into false.
rc_log_has() {
	[ "$(rc_log_since "$1" "$2" | grep -cE -- "$3")" -gt 0 ]
}

# rc_wait_log_since FILE MARK REGEX [COUNT] [SECONDS]: until COUNT lines
# after line MARK of FILE match REGEX (default 1, within 30 s). Returns 1
# when they do not in time, and prints to stderr what it waited for and
# the last lines after MARK.
rc_wait_log_since() {
	local i n
	for ((i = 1; i <= ${5:-30} * 10; i++)); do
		n=$(rc_log_since "$1" "$2" | grep -cE -- "$3" || true)
		[ "$n" -ge "${4:-1}" ] && return 0
		sleep 0.1
	done
	echo "# rc_wait_log_since: ${4:-1} line(s) /$3/ after line $2 of $1 not seen in ${5:-30} s; last lines:" >&2
	rc_log_since "$1" "$2" | tail -n 5 | sed 's/^/#   /' >&2
	return 1
}

rc_wait_json() {
	local url=$1 path=$2 want=$3 secs=${4:-20} i
	for ((i = 1; i <= secs * 10; i++)); do
		rc_curl "$url"
		[ "$(rc_json "$path")" = "$want" ] && return 0
		sleep 0.1
	done
	return 1
}

rc_wait_version() {
	local url=$1 want=$2 secs=${3:-30} i body
	for ((i = 1; i <= secs * 10; i++)); do
		body=$(curl -s "$url/v1/status") || body=
		if [[ $body == *"\"filter\":{\"version\":$want,"* ]]; then
			return 0
		fi
		sleep 0.1
	done
	return 1
}

rc_b64url() {
	local s
	s=$(printf '%s' "$1" | base64 -w0)
	s=${s//+/-}
	s=${s//\//_}
	printf '%s' "${s//=/}"
}

# rc_jwtmint ARGS...: tests/integration/jwtmint.py under Debian's python3
# (python3-jwt, python3-cryptography); see that script for the commands.
rc_jwtmint() {
	/usr/bin/python3 "$RC_SRC/tests/integration/jwtmint.py" "$@"
}

# An unsigned JWT (alg none) carrying iss (omitted when empty) and jti.
rc_jwt() {
	local iss=$1 jti=$2 payload
	if [ -n "$iss" ]; then
		payload="{\"iss\":\"$iss\",\"jti\":\"$jti\",\"sub\":\"test\"}"
	else
		payload="{\"jti\":\"$jti\",\"sub\":\"test\"}"
	fi
	printf '%s.%s.%s' "$(rc_b64url '{"alg":"none","typ":"JWT"}')" \
	    "$(rc_b64url "$payload")" "$(rc_b64url sig)"
}

# rc_json_body KEY FILE: writes {"KEY": <FILE as a JSON string>} to a
# temp file and prints its path (for curl --data-binary @path).
rc_json_body() {
	local out
	out=$(mktemp "$T/body.XXXXXX")
	python3 -c 'import json,sys; print(json.dumps({sys.argv[1]: open(sys.argv[2]).read()}))' \
	    "$1" "$2" >"$out"
	echo "$out"
}

# rc_publish_link DIR VNAME: points DIR/current at DIR/VNAME atomically.
rc_publish_link() {
	ln -sfn "$2" "$1/current.rc-tmp"
	mv -T "$1/current.rc-tmp" "$1/current"
}

# rc_nginx_conf DIR: prints the start of an nginx.conf that keeps every
# file below DIR (pid, logs, temp paths; "user root;" when run as root)
# and opens the http block; the caller adds its servers and the closing "}".
rc_nginx_conf() {
	local dir=$1
	if [ "$(id -u)" -eq 0 ]; then echo "user root;"; fi
	cat <<EOF
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 64; }
http {
    access_log $dir/access.log;
    client_body_temp_path $dir/body;
    proxy_temp_path $dir/proxy;
    fastcgi_temp_path $dir/fastcgi;
    uwsgi_temp_path $dir/uwsgi;
    scgi_temp_path $dir/scgi;
EOF
}

# rc_tls_cert DIR: a test CA made with the openssl CLI (DIR/ca.pem,
# DIR/ca.key) and a server certificate it signed for IP 127.0.0.1
# (DIR/tls.crt, DIR/tls.key), valid for a day. Fails (with openssl's
# output) when openssl does.
rc_tls_cert() {
	local d=$1
	{
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		    -keyout "$d/ca.key" -out "$d/ca.pem" -subj "/CN=revcheck test CA" \
		    -days 1 -addext basicConstraints=critical,CA:TRUE \
		    -addext keyUsage=critical,keyCertSign
		openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		    -keyout "$d/tls.key" -out "$d/tls.csr" -subj /CN=127.0.0.1
		printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$d/ext.cnf"
		openssl x509 -req -in "$d/tls.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" \
		    -CAcreateserial -days 1 -extfile "$d/ext.cnf" -out "$d/tls.crt"
	} >"$d/openssl.log" 2>&1 || { cat "$d/openssl.log" >&2; return 1; }
}

# rc_nginx_tls DIR LOCATIONS: writes DIR/nginx.conf with a plain server
# (404 only, for rc_nginx_run's probe) and a TLS server on another free
# port holding the nginx LOCATIONS text, using rc_tls_cert DIR's
# certificate, starts it (new ports on a clash) and sets NG_TLS_BASE to
# https://127.0.0.1:PORT. Returns 1, with nginx's logs, when it does not
# come up.
rc_nginx_tls() {
	local dir=$1 locs=$2 try port tport
	for try in 1 2 3 4 5; do
		port=$(rc_free_port)
		tport=$(rc_free_port)
		{
			rc_nginx_conf "$dir"
			printf '    server {\n        listen 127.0.0.1:%s;\n' "$port"
			printf '        location / { return 404; }\n    }\n'
			printf '    server {\n        listen 127.0.0.1:%s ssl;\n' "$tport"
			printf '        ssl_certificate %s/tls.crt;\n' "$dir"
			printf '        ssl_certificate_key %s/tls.key;\n' "$dir"
			printf '%s\n        location / { return 404; }\n    }\n}\n' "$locs"
		} >"$dir/nginx.conf"
		if rc_nginx_run "$dir" "$port"; then
			NG_TLS_BASE="https://127.0.0.1:$tport"
			return 0
		fi
	done
	cat "$dir/stderr.log" "$dir/error.log" >&2 || true
	return 1
}

# rc_nginx_run DIR PORT: runs nginx with DIR/nginx.conf (logs in DIR), in
# the background, and waits until http://127.0.0.1:PORT/ answers 404 (the
# config's catch-all location). Sets NG_PID and returns 0; when nginx does
# not come up (a port taken meanwhile), stops it, clears NG_PID and returns
# 1 so the caller can write a config with other ports and try again.
# rc_cleanup stops the nginx NG_PID names when the test exits.
rc_nginx_run() {
	local dir=$1 port=$2
	nginx -e "$dir/error.log" -p "$dir/" -c "$dir/nginx.conf" \
	    -g 'daemon off;' >>"$dir/stderr.log" 2>&1 &
	NG_PID=$!
	for ((_rc_ni = 0; _rc_ni < 50; _rc_ni++)); do
		kill -0 "$NG_PID" 2>/dev/null || break
		if [ "$(curl -s -o /dev/null -w '%{http_code}' \
		    "http://127.0.0.1:$port/")" = 404 ]; then
			return 0
		fi
		sleep 0.1
	done
	kill -TERM "$NG_PID" 2>/dev/null || true
	wait "$NG_PID" 2>/dev/null || true
	NG_PID=
	return 1
}
