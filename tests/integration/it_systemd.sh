#!/usr/bin/env bash
# it_systemd.sh - the systemd units: `systemd-analyze verify` is clean,
# `systemd-analyze security --offline` rates every service at 2.0 or lower,
# and the daemon keeps the sd_notify contract the units rely on (READY=1,
# WATCHDOG=1, RELOADING=1 then READY=1 on SIGHUP, STOPPING=1).
#
# Works as root in a container where PID 1 is not systemd: verify runs on
# copies of the units whose ExecStart= names the built binaries (verify
# insists that they exist), and the man pages they cite are found through
# MANPATH. Skips (exit 0) only when systemd-analyze is not installed; it
# comes with Debian's "systemd" package.
set -euo pipefail

# The Makefile sets these; run by hand, the last build (bin/) is used.
SRC=$(readlink -f "${REVCHECK_SRC:-$(dirname "$0")/../..}")
REVCHECKD=$(readlink -f "${REVCHECKD:-$SRC/bin/revcheckd}")
FILTERBUILD=$(readlink -f "${FILTERBUILD:-$SRC/bin/filterbuild}")
[ -x "$REVCHECKD" ] && [ -x "$FILTERBUILD" ] || { echo "FAIL: build first (make all)" >&2; exit 1; }
MAX_EXPOSURE=2.0

if ! command -v systemd-analyze >/dev/null 2>&1; then
	echo "SKIP it_systemd: systemd-analyze not installed (Debian package: systemd)"
	exit 0
fi

tmp=$(mktemp -d)
pid=""
lpid=""
hpid=""
cleanup() {
	local p
	for p in "$pid" "$lpid" "$hpid"; do
		[ -n "$p" ] || continue
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

fail() { echo "FAIL it_systemd: $*" >&2; exit 1; }

units=()
for f in "$SRC"/systemd/*.service "$SRC"/systemd/*.timer; do
	[ -e "$f" ] && units+=("$(basename "$f")")
done
[ "${#units[@]}" -ge 6 ] || fail "expected at least 6 units in systemd/, found ${#units[@]}"
for u in revcheckd.service revcheckd-edge.service filterbuild.service filterbuild.timer \
    filterbuild-fetch.service filterbuild-fetch.timer; do
	[ -e "$SRC/systemd/$u" ] || fail "systemd/$u missing"
done

# --- the units say what the daemon and the brief require -----------------
rc="$SRC/systemd/revcheckd.service"
for d in 'Type=notify' 'NotifyAccess=main' 'ExecReload=/bin/kill -HUP $MAINPID' \
    'DynamicUser=yes' 'ProtectSystem=strict' 'NoNewPrivileges=yes' \
    'CapabilityBoundingSet=' 'MemoryDenyWriteExecute=yes' \
    'SystemCallFilter=@system-service' 'IPAddressDeny=any' \
    'ExecStart=/usr/local/sbin/revcheckd -c /usr/local/etc/revcheck/revcheckd.json'; do
	grep -qxF -- "$d" "$rc" || fail "revcheckd.service lacks the line '$d'"
done
grep -qE '^WatchdogSec=[1-9]' "$rc" || fail "revcheckd.service has no WatchdogSec="
# systemctl reload fails on a configuration the daemon would refuse: the
# check runs before the signal, on the file ExecStart= names.
for u in revcheckd.service revcheckd-edge.service; do
	start=$(sed -n 's/^ExecStart=//p' "$SRC/systemd/$u")
	reload=$(sed -n 's/^ExecReload=//p' "$SRC/systemd/$u")
	[ "$reload" = "$start --check-config
/bin/kill -HUP \$MAINPID" ] ||
		fail "$u: ExecReload= must run '$start --check-config', then kill -HUP; has: $reload"
done
grep -qE '^ReadOnlyPaths=/var/lib/revcheck$' "$rc" ||
	fail "revcheckd.service must see the filter directory read-only"
grep -qE '^ExecStart=/usr/local/bin/filterbuild build .*--valid-for 1h' \
	"$SRC/systemd/filterbuild.service" || fail "filterbuild.service ExecStart"
grep -qE '^LoadCredential=signing-key:' "$SRC/systemd/filterbuild.service" ||
	fail "filterbuild.service must load the key with LoadCredential="
grep -qxF 'Type=oneshot' "$SRC/systemd/filterbuild.service" ||
	fail "filterbuild.service must be Type=oneshot"

# The fetching build: least privilege that still reaches the CRLs'
# distribution points - network, but no capabilities, a read-only system
# and only its filter directory and CRL cache writable.
fu="$SRC/systemd/filterbuild-fetch.service"
for d in 'Type=oneshot' 'DynamicUser=yes' 'User=revcheck' 'ProtectSystem=strict' \
    'NoNewPrivileges=yes' 'CapabilityBoundingSet=' 'AmbientCapabilities=' \
    'StateDirectory=revcheck revcheck/filters' 'CacheDirectory=revcheck revcheck/crl' \
    'CacheDirectoryMode=0700' 'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX' \
    'MemoryDenyWriteExecute=yes' 'SystemCallFilter=@system-service' \
    'EnvironmentFile=/usr/local/etc/revcheck/filterbuild-fetch.conf'; do
	grep -qxF -- "$d" "$fu" || fail "filterbuild-fetch.service lacks the line '$d'"
done
grep -qE '^ExecStart=/usr/local/bin/filterbuild build .*--valid-for 1h' "$fu" ||
	fail "filterbuild-fetch.service ExecStart"
grep -qE '^(PrivateNetwork=yes|IPAddressDeny=any)' "$fu" &&
	fail "filterbuild-fetch.service cannot fetch without the network"
grep -qE '^OnCalendar=' "$SRC/systemd/filterbuild-fetch.timer" ||
	fail "filterbuild-fetch.timer has no OnCalendar="
grep -qE '^FILTERBUILD_INPUTS=https?://' "$SRC/config/filterbuild-fetch.conf" ||
	fail "config/filterbuild-fetch.conf lists no CRL URL"
grep -qE '^FILTERBUILD_OPTS=.*--issuer ' "$SRC/config/filterbuild-fetch.conf" ||
	fail "config/filterbuild-fetch.conf does not verify the fetched CRLs (--issuer)"

# --- systemd-analyze verify ---------------------------------------------
# Copies with ExecStart= on the built binaries; the real units name the
# installed paths under /usr/local.
mkdir -p "$tmp/units" "$tmp/man/man1" "$tmp/man/man8"
for u in "${units[@]}"; do
	sed -e "s|/usr/local/sbin/revcheckd|$REVCHECKD|g" \
	    -e "s|/usr/local/bin/filterbuild|$FILTERBUILD|g" \
	    "$SRC/systemd/$u" > "$tmp/units/$u"
done
cp "$SRC/man/filterbuild.1" "$tmp/man/man1/"
cp "$SRC/man/revcheckd.8" "$tmp/man/man8/"

for u in "${units[@]}"; do
	out=$(cd "$tmp/units" && MANPATH="$tmp/man" systemd-analyze verify "./$u" 2>&1) ||
		fail "systemd-analyze verify $u exited non-zero: $out"
	[ -z "$out" ] || fail "systemd-analyze verify $u printed: $out"
	echo "ok verify $u"
done

# --- systemd-analyze security -------------------------------------------
for u in "${units[@]}"; do
	case "$u" in *.service) ;; *) continue ;; esac
	out=$(cd "$tmp/units" && systemd-analyze security --offline=true "./$u" 2>&1) ||
		fail "systemd-analyze security $u exited non-zero: $out"
	level=$(printf '%s\n' "$out" |
	    sed -n 's/.*Overall exposure level for [^:]*: *\([0-9][0-9.]*\).*/\1/p')
	[ -n "$level" ] || fail "no exposure level for $u in: $out"
	awk -v l="$level" -v m="$MAX_EXPOSURE" 'BEGIN { exit !(l + 0 <= m + 0) }' ||
		fail "$u exposure $level is above $MAX_EXPOSURE: $(printf '%s\n' "$out" | grep '✗')"
	echo "ok security $u: exposure $level (limit $MAX_EXPOSURE)"
done

# --- the sd_notify contract ---------------------------------------------
# A datagram listener stands in for PID 1 on $NOTIFY_SOCKET; every message
# goes to one line of notify.log.
command -v python3 >/dev/null 2>&1 || fail "python3 is needed for the notify listener"
sock="$tmp/notify.sock"
python3 - "$sock" "$tmp/notify.log" <<'EOF' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as log:
    while True:
        msg = s.recv(4096).decode("utf-8", "replace")
        log.write(msg.replace("\n", " ").strip() + "\n")
EOF
lpid=$!
for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
[ -S "$sock" ] || fail "notify listener did not start"
: > "$tmp/notify.log"

"$FILTERBUILD" keygen --out "$tmp/key.pem" --pub "$tmp/pub.pem" >/dev/null
printf 'tok-revoked-1\ntok-revoked-2\n' > "$tmp/revoked.txt"
"$FILTERBUILD" build --key "$tmp/key.pem" --out "$tmp/filters" --valid-for 1h \
	--quiet "$tmp/revoked.txt"

free_port() {
	local p
	for _ in $(seq 100); do
		p=$((20000 + RANDOM % 12000))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return 0; }
	done
	return 1
}
port=$(free_port) || fail "no free port"
# StateDirectory= creates it under systemd.
mkdir -p "$tmp/state"

# The watchdog period the unit sets would make the test slow; 2s asks for
# a ping at least every second.
NOTIFY_SOCKET="$sock" WATCHDOG_USEC=2000000 "$REVCHECKD" \
	--listen "127.0.0.1:$port" --filter-dir "$tmp/filters" \
	--trusted-key "$tmp/pub.pem" --state-dir "$tmp/state" \
	2> "$tmp/revcheckd.log" &
pid=$!

# wait_for PATTERN [COUNT]: until notify.log has COUNT lines matching.
wait_for() {
	local want=${2:-1}
	for _ in $(seq 300); do
		[ "$(grep -c -- "$1" "$tmp/notify.log" || true)" -ge "$want" ] && return 0
		kill -0 "$pid" 2>/dev/null || fail "revcheckd exited: $(cat "$tmp/revcheckd.log")"
		sleep 0.1
	done
	fail "no '$1' (x$want) on NOTIFY_SOCKET; got: $(tr '\n' '|' < "$tmp/notify.log")"
}

wait_for '^READY=1'
curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null || fail "READY=1 sent before /readyz is 200"
echo "ok READY=1 once serving"
wait_for 'WATCHDOG=1' 2
echo "ok WATCHDOG=1 pinged repeatedly"

ready_before=$(grep -c '^READY=1' "$tmp/notify.log")
kill -HUP "$pid"
wait_for 'RELOADING=1'
wait_for '^READY=1' $((ready_before + 1))
# RELOADING=1 must come before the READY=1 that ends the reload.
awk '/RELOADING=1/ { r = NR } /^READY=1/ { last = NR } END { exit !(r && last > r) }' \
	"$tmp/notify.log" || fail "READY=1 did not follow RELOADING=1: $(tr '\n' '|' < "$tmp/notify.log")"
echo "ok SIGHUP: RELOADING=1 then READY=1"

kill -TERM "$pid"
st=0
wait "$pid" || st=$?
pid=""
[ "$st" -eq 0 ] || fail "revcheckd exited $st on SIGTERM: $(cat "$tmp/revcheckd.log")"
grep -q 'STOPPING=1' "$tmp/notify.log" || fail "no STOPPING=1 on SIGTERM"
echo "ok SIGTERM: STOPPING=1, exit 0"

# --- the sandbox fits the programs --------------------------------------
# Under strace, every system call revcheckd (start, checks, reload, stop)
# and `filterbuild build` make must pass the units' SystemCallFilter=
# (@system-service minus @privileged and @resources), no mapping may be
# writable and executable (MemoryDenyWriteExecute=), and sockets stay
# within RestrictAddressFamilies=. Sanitizer builds are skipped: their
# runtime makes calls the production binaries do not.
if ! command -v strace >/dev/null 2>&1; then
	echo "note: strace not installed; syscall filter fit not checked"
elif grep -qE 'lib(a|ub|l)san' <<<"$(ldd "$REVCHECKD" "$FILTERBUILD" 2>/dev/null || true)"; then
	echo "note: sanitizer build; syscall filter fit not checked"
elif ! strace -f -qq -o /dev/null true 2>/dev/null; then
	echo "note: ptrace not permitted here; syscall filter fit not checked"
else
	# expand @GROUP: every system call in a group, nested groups expanded.
	expand() {
		local e
		systemd-analyze syscall-filter "$1" | sed -n '2,$p' |
		    sed -e 's/^[[:space:]]*//' -e '/^#/d' -e '/^$/d' |
		    while read -r e; do
			case "$e" in @*) expand "$e" ;; *) echo "$e" ;; esac
		    done
	}
	expand @system-service | sort -u > "$tmp/allowed"
	{ expand @privileged; expand @resources; } | sort -u > "$tmp/denied"
	# What revcheckd's units take back out of the deny list (a later
	# SystemCallFilter= line of plain names): setpriority, for
	# loader_nice. Both units must agree; filterbuild's take nothing back.
	unit_allow() { sed -nE 's/^SystemCallFilter=([a-z0-9_ ]+)$/\1/p' "$1" | tr ' ' '\n' | sed '/^$/d' | sort -u; }
	unit_allow "$SRC/systemd/revcheckd.service" > "$tmp/allowback"
	[ "$(cat "$tmp/allowback")" = setpriority ] || fail "revcheckd.service takes back '$(tr '\n' ' ' < "$tmp/allowback")', expected setpriority"
	[ "$(unit_allow "$SRC/systemd/revcheckd-edge.service")" = "$(cat "$tmp/allowback")" ] ||
	    fail "revcheckd-edge.service and revcheckd.service take back different calls"
	comm -23 "$tmp/denied" "$tmp/allowback" > "$tmp/denied.rc"
	[ "$(wc -l < "$tmp/allowed")" -gt 100 ] || fail "could not list @system-service"

	rm -rf "$tmp/filters2"
	strace -f -qq -o "$tmp/fb.trace" "$FILTERBUILD" build --key "$tmp/key.pem" \
		--out "$tmp/filters2" --valid-for 1h --quiet "$tmp/revoked.txt" ||
		fail "filterbuild build under strace"

	# The fetching build: an http input served by python's http.server
	# (Last-Modified, so the second run is a conditional GET and a 304),
	# the cache in $CACHE_DIRECTORY as filterbuild-fetch.service sets it.
	hport=$(free_port) || fail "no free port"
	python3 -m http.server --bind 127.0.0.1 --directory "$tmp" "$hport" \
		>"$tmp/http.log" 2>&1 &
	hpid=$!
	for _ in $(seq 100); do
		curl -fsS -o /dev/null "http://127.0.0.1:$hport/revoked.txt" 2>/dev/null && break
		sleep 0.1
	done
	mkdir -m 0700 -p "$tmp/crlcache"
	for run in 1 2; do
		CACHE_DIRECTORY="$tmp/crlcache" strace -f -qq -o "$tmp/fbf$run.trace" \
			"$FILTERBUILD" build --key "$tmp/key.pem" --out "$tmp/filters3" \
			--valid-for 1h --quiet "http://127.0.0.1:$hport/revoked.txt" ||
			fail "fetching filterbuild build under strace (run $run)"
	done
	cat "$tmp/fbf1.trace" "$tmp/fbf2.trace" > "$tmp/fbf.trace"
	grep -q '"GET /revoked.txt HTTP/1.1" 304' "$tmp/http.log" ||
		fail "the second fetching build was not a 304: $(cat "$tmp/http.log")"
	kill "$hpid" 2>/dev/null || true
	wait "$hpid" 2>/dev/null || true
	hpid=""

	port=$(free_port) || fail "no free port"
	rm -rf "$tmp/state2" && mkdir -p "$tmp/state2"
	strace -f -qq -o "$tmp/rc.trace" "$REVCHECKD" --listen "127.0.0.1:$port" \
		--filter-dir "$tmp/filters2" --trusted-key "$tmp/pub.pem" \
		--state-dir "$tmp/state2" 2> "$tmp/revcheckd2.log" &
	spid=$!
	pid=""
	for _ in $(seq 300); do
		curl -fsS -o /dev/null "http://127.0.0.1:$port/readyz" 2>/dev/null && break
		kill -0 "$spid" 2>/dev/null || fail "revcheckd under strace exited: $(cat "$tmp/revcheckd2.log")"
		sleep 0.1
	done
	pid=$(sed -n '1s/^\([0-9]*\) .*/\1/p' "$tmp/rc.trace")
	[ -n "$pid" ] || fail "no pid in the trace"
	u="http://127.0.0.1:$port"
	curl -fsS -o /dev/null "$u/v1/check?id=tok-revoked-1" || fail "check under strace"
	curl -fsS -o /dev/null "$u/v1/check?id=someone-else" || fail "check under strace"
	curl -fsS -o /dev/null -H 'Content-Type: application/json' \
		-d '{"items":[{"id":"a"},{"id":"tok-revoked-2"}]}' "$u/v1/check" || fail "batch under strace"
	curl -fsS -o /dev/null "$u/v1/status" || fail "status under strace"
	curl -fsS -o /dev/null "$u/metrics" || fail "metrics under strace"
	curl -sS -o /dev/null "$u/v1/authz" -H 'Authorization: Bearer x.y.z' || true
	curl -sS -o /dev/null "$u/v1/filter" || true
	"$FILTERBUILD" build --key "$tmp/key.pem" --out "$tmp/filters2" --valid-for 1h \
		--quiet "$tmp/revoked.txt" || fail "second build"
	n=$(wc -l <"$tmp/revcheckd2.log")
	kill -HUP "$pid"
	# Until the SIGHUP re-verified the filter in service and the new
	# version is served (the reload traced), 30 s at most under strace.
	for _ in $(seq 300); do
		awk -v n="$n" 'NR > n && /SIGHUP: filter version [0-9]+ in service re-verified/ { f = 1 }
		    END { exit !f }' "$tmp/revcheckd2.log" &&
			[[ $(curl -s "$u/v1/status") == *'"filter":{"version":2,'* ]] && break
		sleep 0.1
	done
	[[ $(curl -s "$u/v1/status") == *'"filter":{"version":2,'* ]] ||
		fail "version 2 not served after SIGHUP under strace"
	curl -fsS -o /dev/null "$u/v1/check?id=someone-else" || fail "check after reload under strace"
	kill -TERM "$pid"
	st=0
	wait "$spid" || st=$?
	pid=""
	[ "$st" -eq 0 ] || fail "revcheckd under strace exited $st: $(cat "$tmp/revcheckd2.log")"

	for t in fb fbf rc; do
		sed -nE 's/^[0-9]+ +([a-z0-9_]+)\(.*/\1/p' "$tmp/$t.trace" | sort -u > "$tmp/$t.used"
		[ -s "$tmp/$t.used" ] || fail "empty trace $t"
		bad=$(comm -23 "$tmp/$t.used" "$tmp/allowed" | tr '\n' ' ')
		[ -z "$bad" ] || fail "$t makes calls outside @system-service: $bad"
		den=$tmp/denied
		[ "$t" = rc ] && den=$tmp/denied.rc
		bad=$(comm -12 "$tmp/$t.used" "$den" | tr '\n' ' ')
		[ -z "$bad" ] || fail "$t makes calls the units deny (@privileged @resources): $bad"
		wx=$(grep -E 'PROT_WRITE\|PROT_EXEC|PROT_EXEC\|PROT_WRITE' "$tmp/$t.trace" || true)
		[ -z "$wx" ] || fail "$t maps memory writable and executable (MemoryDenyWriteExecute=): ${wx:0:300}"
		bad=$(grep -oE 'socket(pair)?\(AF_[A-Z0-9]+' "$tmp/$t.trace" | sed 's/.*(//' |
		    grep -vxE 'AF_INET|AF_INET6|AF_UNIX' | sort -u | tr '\n' ' ' || true)
		[ -z "$bad" ] || fail "$t opens sockets outside RestrictAddressFamilies=: $bad"
	done
	echo "ok sandbox fit: $(wc -l < "$tmp/rc.used") calls of revcheckd, $(wc -l < "$tmp/fb.used") of filterbuild build, $(wc -l < "$tmp/fbf.used") of a fetching build, all allowed"
fi

echo "PASS it_systemd"
