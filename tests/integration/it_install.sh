#!/usr/bin/env bash
# it_install.sh - `make install` / `make uninstall` under DESTDIR, the man
# pages (render without warnings, cover every long option of --help), the
# example configs (revcheckd --check-config, nginx -t) and the two nginx
# examples running for real on loopback: the static filter origin and the
# auth_request site (bearer and mTLS) in front of a stub authz service.
# it-serial: runs make in the source tree
set -euo pipefail

# The Makefile sets these; run by hand, the last build (bin/) is used.
SRC=$(readlink -f "${REVCHECK_SRC:-$(dirname "$0")/../..}")
REVCHECKD=$(readlink -f "${REVCHECKD:-$SRC/bin/revcheckd}")
FILTERBUILD=$(readlink -f "${FILTERBUILD:-$SRC/bin/filterbuild}")
[ -x "$REVCHECKD" ] && [ -x "$FILTERBUILD" ] || { echo "FAIL: build first (make all)" >&2; exit 1; }
PREFIX=/usr/local

tmp=$(mktemp -d)
ngpid=""
cleanup() {
	if [ -n "$ngpid" ]; then
		kill "$ngpid" 2>/dev/null || true
		wait "$ngpid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

fail() { echo "FAIL it_install: $*" >&2; exit 1; }
ok() { echo "ok $*"; }

# The build the test runs with: make's BUILD is the directory of
# $REVCHECKD, relative to the source tree; the binaries are passed too, so
# that install copies exactly what is tested.
rel() {
	case "$1" in
	"$SRC"/*) printf '%s\n' "${1#"$SRC"/}" ;;
	/*) printf '%s\n' "$1" ;;
	*) printf '%s\n' "$1" ;;
	esac
}
build=$(dirname "$(rel "$REVCHECKD")")

D="$tmp/root"
mkdir -p "$D"
make_args=(-C "$SRC" --no-print-directory DESTDIR="$D" PREFIX="$PREFIX"
    BUILD="$build" REVCHECKD="$(rel "$REVCHECKD")" FILTERBUILD="$(rel "$FILTERBUILD")")

# --- make install --------------------------------------------------------
make "${make_args[@]}" install > "$tmp/install.log" 2>&1 ||
	fail "make install: $(tail -20 "$tmp/install.log")"

expect=(
	"$PREFIX/sbin/revcheckd"
	"$PREFIX/bin/filterbuild"
	"$PREFIX/share/man/man1/filterbuild.1"
	"$PREFIX/share/man/man8/revcheckd.8"
	"$PREFIX/share/doc/revcheck/postgresql-schema.sql"
	"$PREFIX/share/doc/revcheck/openapi.yaml"
)
for f in "$SRC"/systemd/*.service "$SRC"/systemd/*.timer; do
	expect+=("$PREFIX/lib/systemd/system/$(basename "$f")")
done
for f in "$SRC"/config/*.json "$SRC"/config/*.conf; do
	[ -e "$f" ] && expect+=("$PREFIX/etc/revcheck/$(basename "$f")")
done
for f in "${expect[@]}"; do
	[ -f "$D$f" ] || fail "make install did not create $f"
done
for u in revcheckd.service revcheckd-edge.service filterbuild.service filterbuild.timer; do
	[ -f "$D$PREFIX/lib/systemd/system/$u" ] || fail "unit $u not installed"
done
for c in revcheckd-edge.json nginx-revcheck.conf nginx-filter-origin.conf filterbuild.conf; do
	[ -f "$D$PREFIX/etc/revcheck/$c" ] || fail "config $c not installed"
done
[ -x "$D$PREFIX/sbin/revcheckd" ] && [ -x "$D$PREFIX/bin/filterbuild" ] ||
	fail "installed binaries are not executable"
cmp -s "$REVCHECKD" "$D$PREFIX/sbin/revcheckd" || fail "installed revcheckd is not the tested one"
cmp -s "$FILTERBUILD" "$D$PREFIX/bin/filterbuild" || fail "installed filterbuild is not the tested one"
ok "make install: ${#expect[@]} files in place"

# Every file the installed units start or read (ExecStart= binaries and
# their -c config) is installed where the unit looks for it.
for u in "$D$PREFIX"/lib/systemd/system/*.service; do
	for p in $(sed -n 's/^ExecStart=//p' "$u" | grep -oE "$PREFIX/[^ ]+" || true); do
		[ -e "$D$p" ] || fail "$(basename "$u") refers to $p, which make install does not provide"
	done
done
ok "installed units refer only to installed files"

# --- the example configs pass revcheckd --check-config -----------------
"$FILTERBUILD" keygen --out "$tmp/key.pem" --pub "$tmp/pub.pem" >/dev/null
# --check-config also checks the directories: the test's own stand in
# for the /var/lib paths the examples name.
mkdir -p "$tmp/filters" "$tmp/state"
# The token example names keys and secrets under /etc/revcheck/, which
# --check-config loads: a copy names stand-ins made here instead (an
# JWKS of a fresh key, random secrets), so what is checked is the example
# itself.
mkdir -p "$tmp/etc"
for c in "$D$PREFIX"/etc/revcheck/*.json; do
	if grep -q '"/etc/revcheck/' "$c"; then
		for f in $(grep -oE '/etc/revcheck/[A-Za-z0-9._-]+' "$c" | sort -u); do
			case $f in
			*.jwks)
				/usr/bin/python3 "$SRC/tests/integration/jwtmint.py" \
				    key p256 "$tmp/etc/k.pem"
				/usr/bin/python3 "$SRC/tests/integration/jwtmint.py" \
				    jwks "$tmp/etc/${f##*/}" "$tmp/etc/k.pem:k1" ;;
			*) head -c 48 /dev/urandom | base64 -w0 >"$tmp/etc/${f##*/}" ;;
			esac
		done
		sed "s|/etc/revcheck/|$tmp/etc/|g" "$c" >"$tmp/etc/${c##*/}"
		c=$tmp/etc/${c##*/}
	fi
	dirs=(--state-dir "$tmp/state")
	grep -q '"filter_dir"' "$c" && dirs+=(--filter-dir "$tmp/filters")
	out=$("$REVCHECKD" -c "$c" --trusted-key "$tmp/pub.pem" "${dirs[@]}" \
	    --check-config 2>&1) ||
		fail "$(basename "$c"): $out"
	[ "$out" = "configuration OK" ] || fail "$(basename "$c"): unexpected output: $out"
	ok "revcheckd --check-config $(basename "$c")"
done

# The edge unit's outbound restriction, as in force, is what the edge
# config's comments and OPERATIONS.md describe (and tell how to widen).
edge_unit=$SRC/systemd/revcheckd-edge.service
rules=$(grep -E '^(IPAddressDeny|IPAddressAllow|RestrictAddressFamilies)=' "$edge_unit")
[ -n "$rules" ] || fail "revcheckd-edge.service has no outbound restriction"
while read -r r; do
	for d in config/revcheckd-edge.json docs/OPERATIONS.md; do
		grep -qF -- "$r" "$SRC/$d" || fail "$d does not name the edge unit's $r"
	done
done <<<"$rules"
for d in config/revcheckd-edge.json docs/OPERATIONS.md; do
	grep -qE 'IPAddressAllow=[0-9a-f.:/ ]+$' "$SRC/$d" ||
		fail "$d does not show how to allow a remote origin (IPAddressAllow=ADDRESSES)"
done
ok "the edge's outbound restriction and how to widen it are in its config and OPERATIONS.md"

# --- the man pages --------------------------------------------------------
man1="$D$PREFIX/share/man/man1/filterbuild.1"
man8="$D$PREFIX/share/man/man8/revcheckd.8"
rendered=0
for m in "$man1" "$man8"; do
	if command -v groff >/dev/null 2>&1; then
		w=$(groff -man -Tutf8 -ww -z "$m" 2>&1) || fail "groff $(basename "$m"): $w"
		[ -z "$w" ] || fail "groff warns on $(basename "$m"): $w"
		rendered=1
	fi
	if command -v man >/dev/null 2>&1; then
		w=$(MANWIDTH=80 man --warnings -l "$m" 2>&1 >/dev/null) ||
			fail "man -l $(basename "$m"): $w"
		[ -z "$w" ] || fail "man warns on $(basename "$m"): $w"
		rendered=1
	fi
done
if [ "$rendered" -eq 1 ]; then
	ok "man pages render without warnings"
else
	echo "note: neither groff nor man is installed; man pages not rendered"
fi

# Every long option a --help prints appears in the man page, so the two
# cannot drift apart. The page source spells "-" as "\-".
man_text() { sed -e 's/\\-/-/g' -e 's/\\(aq/'"'"'/g' "$1"; }
check_opts() {	# NAME PAGE HELP-TEXT
	local o missing="" text
	text=$(man_text "$2")
	for o in $(printf '%s\n' "$3" | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u); do
		grep -E -- "${o}([^a-z0-9-]|\$)" <<<"$text" >/dev/null || missing="$missing $o"
	done
	[ -z "$missing" ] || fail "$1 --help options missing from $(basename "$2"):$missing"
}
help=$("$REVCHECKD" --help) || fail "revcheckd --help exited non-zero"
check_opts revcheckd "$man8" "$help"
help=$("$FILTERBUILD" --help) || fail "filterbuild --help exited non-zero"
check_opts filterbuild "$man1" "$help"
cmds=$(printf '%s\n' "$help" | sed -n '/^Commands:/,/^$/p' | awk 'NF >= 2 && $1 != "Commands:" { print $1 }')
[ -n "$cmds" ] || fail "filterbuild --help lists no commands"
for c in $cmds; do
	grep -qxF ".SS $c" "$man1" || fail "filterbuild.1 has no section for command '$c'"
	grep -qE "^\.B filterbuild $c( |\$)" "$man1" || fail "filterbuild.1 SYNOPSIS lacks '$c'"
	h=$("$FILTERBUILD" "$c" --help) || fail "filterbuild $c --help exited non-zero"
	check_opts "filterbuild $c" "$man1" "$h"
done
ok "man pages cover every long option of --help (revcheckd; filterbuild $(echo $cmds))"

# --- make uninstall -------------------------------------------------------
make "${make_args[@]}" uninstall > "$tmp/uninstall.log" 2>&1 ||
	fail "make uninstall: $(tail -20 "$tmp/uninstall.log")"
left=$(cd "$D" && find . \( -type f -o -type l \) | sort)
[ -z "$left" ] || fail "make uninstall left files behind: $left"
ok "make uninstall removes every installed file"

# --- another PREFIX, and an operator's edited config ---------------------
D2="$tmp/root2"
mkdir -p "$D2"
args2=(-C "$SRC" --no-print-directory DESTDIR="$D2" PREFIX=/opt/rc
    BUILD="$build" REVCHECKD="$(rel "$REVCHECKD")" FILTERBUILD="$(rel "$FILTERBUILD")")
make "${args2[@]}" install > "$tmp/install2.log" 2>&1 || fail "make install PREFIX=/opt/rc"
unit2="$D2/opt/rc/lib/systemd/system/revcheckd.service"
grep -q '^ExecStart=/opt/rc/sbin/revcheckd -c /opt/rc/etc/revcheck/revcheckd.json' "$unit2" ||
	fail "units do not name the PREFIX in use: $(grep ^ExecStart "$unit2")"
if grep -n '/usr/local' "$D2"/opt/rc/lib/systemd/system/* "$D2"/opt/rc/etc/revcheck/* \
    "$D2"/opt/rc/share/man/man*/*; then
	fail "installed units, configs or man pages still name /usr/local"
fi
grep -q '^\.I /opt/rc/etc/revcheck/revcheckd\.json$' "$D2/opt/rc/share/man/man8/revcheckd.8" ||
	fail "revcheckd.8 does not name /opt/rc/etc/revcheck/revcheckd.json"
ok "make install PREFIX=/opt/rc rewrites the paths in units, configs and man pages"
conf2="$D2/opt/rc/etc/revcheck/revcheckd.json"
printf '// edited by the operator\n' >> "$conf2"
cp "$conf2" "$tmp/edited.json"
make "${args2[@]}" install > "$tmp/install3.log" 2>&1 || fail "second make install"
cmp -s "$conf2" "$tmp/edited.json" || fail "make install replaced an edited config"
[ -f "$conf2.example" ] || fail "the new example was not put beside the edited config"
make "${args2[@]}" uninstall > "$tmp/uninstall2.log" 2>&1 || fail "make uninstall PREFIX=/opt/rc"
cmp -s "$conf2" "$tmp/edited.json" || fail "make uninstall removed an edited config"
left=$(cd "$D2" && find . \( -type f -o -type l \) | sort)
[ "$left" = "./opt/rc/etc/revcheck/revcheckd.json" ] || fail "uninstall left: $left"
ok "an edited config survives install (example beside it) and uninstall"

# --- nginx ------------------------------------------------------------
if ! command -v nginx >/dev/null 2>&1; then
	echo "note: nginx not installed; nginx examples not checked"
	echo "PASS it_install"
	exit 0
fi
command -v curl >/dev/null 2>&1 || fail "curl is needed"
command -v openssl >/dev/null 2>&1 || fail "openssl is needed"

# nginx runs its workers as "nobody" when started as root: they must be
# able to read the test files.
chmod 0755 "$tmp"
ng="$tmp/nginx"
mkdir -p "$ng"
chmod 0755 "$ng"

# TLS: a self-signed server certificate; a client CA and a client
# certificate for the mTLS site.
(
	cd "$ng"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -keyout server.key -out server.crt -subj /CN=localhost -days 1
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -keyout client-ca.key -out client-ca.pem -subj "/CN=revcheck test client CA" \
	    -days 1 -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -keyout client.key -out client.csr -subj /CN=client1
	openssl x509 -req -in client.csr -CA client-ca.pem -CAkey client-ca.key \
	    -CAcreateserial -out client.crt -days 1
) > "$tmp/openssl.log" 2>&1 || fail "openssl: $(cat "$tmp/openssl.log")"

# main.conf wraps one site in a minimal main configuration that writes
# only below $ng.
main_conf() {	# SITE-FILE EXTRA-HTTP-LINES
	cat > "$ng/main.conf" <<EOF
worker_processes 1;
pid $ng/nginx.pid;
error_log $ng/error.log warn;
events { worker_connections 64; }
http {
    access_log $ng/access.log;
    client_body_temp_path $ng/body;
    proxy_temp_path $ng/proxy;
    fastcgi_temp_path $ng/fastcgi;
    uwsgi_temp_path $ng/uwsgi;
    scgi_temp_path $ng/scgi;
    $2
    include $1;
}
EOF
}
nginx_t() {
	local out
	out=$(nginx -e "$ng/error.log" -t -c "$ng/main.conf" 2>&1) || fail "nginx -t $1: $out"
	grep -q 'test is successful' <<<"$out" || fail "nginx -t $1: $out"
	if printf '%s\n' "$out" | grep -E '\[(warn|emerg|alert|crit)\]'; then
		fail "nginx -t $1 warns: $out"
	fi
}

# The configs as shipped (certificate paths pointed at the test's).
# A cache directory goes under the test's own; its parent as shipped must
# exist where Debian's nginx is installed (nginx makes only the last part).
for c in "$SRC"/config/nginx-*.conf; do
	for d in $(awk '$1 == "proxy_cache_path" { print $2 }' "$c"); do
		[ -d "$(dirname "$d")" ] ||
			fail "$(basename "$c"): proxy_cache_path $d: its parent does not exist with Debian's nginx"
	done
	sed -e "s|/usr/local/etc/revcheck/tls/|$ng/|g" \
	    -e "s|^proxy_cache_path [^ ]*|proxy_cache_path $ng/cache|" "$c" > "$ng/site.conf"
	main_conf "$ng/site.conf" ""
	nginx_t "$(basename "$c")"
	ok "nginx -t $(basename "$c")"
done

# free_ports N: N distinct ports in 20000-31999 (below the ephemeral range)
# that nothing listens on.
free_ports() {
	local p got=" " n=0
	for _ in $(seq 500); do
		p=$((20000 + RANDOM % 12000))
		case "$got" in *" $p "*) continue ;; esac
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			got="$got$p "
			n=$((n + 1))
			[ "$n" -eq "$1" ] && { echo $got; return 0; }
		fi
	done
	return 1
}

# The shipped sites on loopback test ports.
localize() {
	sed -e "s|/usr/local/etc/revcheck/tls/|$ng/|g" \
	    -e "s|/var/lib/revcheck/filters|$ng/filters|g" \
	    -e '/listen \[::\]/d' \
	    -e "s|listen 443 ssl;|listen 127.0.0.1:$p_bearer ssl;|" \
	    -e "s|listen 8443 ssl;|listen 127.0.0.1:$p_mtls ssl;|" \
	    -e "s|listen 80;|listen 127.0.0.1:$p_origin;|" \
	    -e "s|127.0.0.1:8080|127.0.0.1:$p_authz|" \
	    -e "s|127.0.0.1:9000|127.0.0.1:$p_app|" "$1"
}
live_conf() {
	{
	localize "$SRC/config/nginx-revcheck.conf"
	localize "$SRC/config/nginx-filter-origin.conf"
	# A stand-in for revcheckd's /v1/authz: the verdict follows the bearer
	# token or the certificate header. Any other client header reaching it
	# (X-Leak), or a request body, is refused: the site must forward the
	# credential only.
	cat <<EOF
server {
    listen 127.0.0.1:$p_authz;
    location = /v1/authz {
        if (\$http_x_leak != "") { return 403; }
        if (\$http_content_length != "") { return 403; }
        if (\$http_x_ssl_client_cert = "injected") { return 403; }
        if (\$http_x_ssl_client_cert ~ "BEGIN%20CERTIFICATE") { return 200; }
        if (\$http_authorization = "Bearer good") { return 200; }
        if (\$http_authorization = "Bearer revoked") { return 403; }
        if (\$http_authorization = "Bearer stale") { return 503; }
        return 401;
    }
    location / { return 404; }
}
server {
    listen 127.0.0.1:$p_app;
    location / { return 200 "app ok\n"; }
}
EOF
	} > "$ng/live.conf"
}

# The filter directory as filterbuild publishes it (any bytes will do for
# nginx): two versions, "current" on the first.
v1=v00000000000000000001
v2=v00000000000000000002
mkdir -p "$ng/filters/$v1" "$ng/filters/$v2"
head -c 4096 /dev/urandom > "$ng/filters/$v1/filter.rcf"
head -c 4096 /dev/urandom > "$ng/filters/$v2/filter.rcf"
echo "secret table" > "$ng/filters/$v1/table.rct"
echo "secret table" > "$ng/filters/$v2/table.rct"
# nginx's ETag is the file's mtime (seconds) and size: give the versions
# different ones, as builds minutes apart have.
touch -d '-60 seconds' "$ng/filters/$v1/filter.rcf"
ln -s "$v1" "$ng/filters/current"
chmod -R a+rX "$ng/filters"

# Other tests run servers too: when a port is taken between the probe and
# nginx's bind, start again on new ports.
for attempt in 1 2 3; do
	ports=$(free_ports 5) || fail "no free ports"
	read -r p_bearer p_mtls p_origin p_authz p_app <<<"$ports"
	live_conf
	main_conf "$ng/live.conf" ""
	nginx_t "live"
	: > "$ng/error.log"
	nginx -e "$ng/error.log" -c "$ng/main.conf" -g 'daemon off;' &
	ngpid=$!
	up=0
	for _ in $(seq 150); do
		if curl -s -o /dev/null "http://127.0.0.1:$p_app/"; then
			up=1
			break
		fi
		kill -0 "$ngpid" 2>/dev/null || break
		sleep 0.1
	done
	[ "$up" -eq 1 ] && break
	kill "$ngpid" 2>/dev/null || true
	wait "$ngpid" 2>/dev/null || true
	ngpid=""
	grep -q 'bind()' "$ng/error.log" || fail "nginx did not start: $(cat "$ng/error.log")"
	echo "note: a port was taken (attempt $attempt), retrying"
done
[ "$up" -eq 1 ] || fail "nginx did not start: $(cat "$ng/error.log")"

# status URL [CURL-ARGS...]: prints the HTTP status; headers in $ng/h,
# body in $ng/b.
status() {
	local url=$1
	shift
	curl -s -o "$ng/b" -D "$ng/h" -w '%{http_code}' "$@" "$url" || true
}
hdr() {
	awk -v n="$1" 'BEGIN { n = tolower(n) ":" }
	    tolower(substr($0, 1, length(n))) == n {
		sub(/^[^:]*: */, ""); sub(/\r$/, ""); print; exit }' "$ng/h"
}

# Static filter origin.
o="http://127.0.0.1:$p_origin/filters"
[ "$(status "$o/current/filter.rcf")" = 200 ] || fail "origin: current filter not served"
cmp -s "$ng/b" "$ng/filters/$v1/filter.rcf" || fail "origin: wrong bytes for current"
[ "$(hdr Cache-Control)" = "public, no-cache" ] || fail "origin: Cache-Control '$(hdr Cache-Control)'"
etag=$(hdr ETag)
[ -n "$etag" ] || fail "origin: no ETag"
[ "$(status "$o/current/filter.rcf" -H "If-None-Match: $etag")" = 304 ] ||
	fail "origin: If-None-Match did not give 304"
ln -s "$v2" "$ng/filters/current.tmp" && mv -T "$ng/filters/current.tmp" "$ng/filters/current"
[ "$(status "$o/current/filter.rcf" -H "If-None-Match: $etag")" = 200 ] ||
	fail "origin: a new version still answered 304"
cmp -s "$ng/b" "$ng/filters/$v2/filter.rcf" || fail "origin: wrong bytes after the switch"
[ "$(hdr ETag)" != "$etag" ] || fail "origin: ETag did not change with the version"
[ "$(status "$o/$v1/filter.rcf")" = 200 ] || fail "origin: versioned filter not served"
grep -q immutable <<<"$(hdr Cache-Control)" || fail "origin: a version is not cacheable for good"
for path in current/table.rct "$v1/table.rct" "" ../ current/; do
	s=$(status "$o/$path")
	[ "$s" = 404 ] || fail "origin: /filters/$path answered $s, want 404"
done
s=$(status "$o/current/filter.rcf" -X POST -d x)
[ "$s" = 405 ] || fail "origin: POST answered $s, want 405"
ok "nginx filter origin: current, 304, version switch, immutable versions, table hidden"

# auth_request, bearer tokens.
b="https://127.0.0.1:$p_bearer/"
[ "$(status "$b" -k)" = 401 ] || fail "bearer: no credential not 401"
[ "$(status "$b" -k -H 'Authorization: Bearer good')" = 200 ] || fail "bearer: good token refused"
grep -qx 'app ok' "$ng/b" || fail "bearer: app not reached"
[ "$(status "$b" -k -H 'Authorization: Bearer revoked')" = 403 ] || fail "bearer: revoked not 403"
[ "$(status "$b" -k -H 'Authorization: Bearer stale')" = 503 ] ||
	fail "bearer: authz 503 not turned into 503"
[ -n "$(hdr Retry-After)" ] || fail "bearer: 503 without Retry-After"
[ "$(status "$b" -k -H 'Authorization: Bearer good' -H 'X-Leak: 1' \
    -H 'X-SSL-Client-Cert: injected')" = 200 ] ||
	fail "bearer: client headers reached the authz subrequest"
[ "$(status "$b" -k -H 'Authorization: Bearer good' -d 'some body')" = 200 ] ||
	fail "bearer: the request body reached the authz subrequest"
ok "nginx auth_request (bearer): 200/401/403/503, only the credential forwarded"

# auth_request, client certificates.
m="https://127.0.0.1:$p_mtls/"
s=$(status "$m" -k --cert "$ng/client.crt" --key "$ng/client.key")
[ "$s" = 200 ] || fail "mtls: client certificate not accepted ($s)"
s=$(status "$m" -k --cert "$ng/client.crt" --key "$ng/client.key" -H 'X-SSL-Client-Cert: injected')
[ "$s" = 200 ] || fail "mtls: a client's own X-SSL-Client-Cert replaced the verified one ($s)"
s=$(status "$m" -k)
[ "$s" = 400 ] || fail "mtls: no client certificate answered $s, want 400"
ok "nginx auth_request (mTLS): verified certificate forwarded, a forged header ignored"

echo "PASS it_install"
