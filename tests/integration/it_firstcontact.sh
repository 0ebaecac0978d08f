#!/usr/bin/env bash
# it_firstcontact.sh - what a new operator meets first: README's quick start run as written, flags, --check-config
#
# 1. Runs the indented command block under README's "Quick start by hand"
#    command by command in a shell at the top of the tree; the only change
#    is the port it starts from (a free one instead of 8080, then held by
#    another process, so that the block must skip it), and TMPDIR points into the
#    test's temp dir so that `mktemp -d` cleans up with it.
# 2. The state directory revcheckd creates, --check-config's directory
#    checks, a private key refused as --trusted-key, --listen with a host
#    name, exit 2 for usage errors in both programs, edge-only keys refused
#    on an origin, JSON config errors that say what was expected, and
#    generated keys outside the repository.
. "$(dirname "$0")/lib.sh"

# ---------------------------------------------------------------- README
block=$(awk '
	/^## Quick start by hand/ { on = 1; next }
	on && /^## / { exit }
	on && /^    / { sub(/^    /, ""); print }
' "$RC_SRC/README.md")
[ -n "$block" ] || rc_fail "README has no quick start block"
rc_expect_match "$block" '^port=8080 ' "the quick start starts from 8080, the port the test replaces"
port=$(rc_free_port)
block=${block//8080/$port}
# The port it starts from is held by another process: the quick start
# must go past it, not fail or talk to it.
python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8); time.sleep(600)' "$port" \
    </dev/null >/dev/null 2>&1 &
rc_stop_at_exit $!
for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done

in_git() { git -C "$RC_SRC" rev-parse --git-dir >/dev/null 2>&1; }
tree_state() { git -C "$RC_SRC" status --porcelain --ignored --untracked-files=all -- . \
    ':!build' ':!bin' 2>/dev/null | sort; }
before=
in_git && before=$(tree_state)

mkdir -p "$T/tmp"
(
	cd "$RC_SRC"
	export TMPDIR="$T/tmp"
	# A command that fails stops the run; a daemon left behind is stopped.
	trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
	set -e
	eval "$block"
) >"$T/qs.out" 2>"$T/qs.err" && qs_rc=0 || qs_rc=$?
rc_expect_eq "$qs_rc" 0 "README quick start runs to the end"
[ "$qs_rc" = 0 ] || { cat "$T/qs.err" >&2; }
out=$(cat "$T/qs.out")
used=$(sed -n 's/^revcheckd listens on 127\.0\.0\.1:\([0-9]*\)$/\1/p' <<<"$out")
[ -n "$used" ] && [ "$used" -gt "$port" ] &&
    rc_ok "quick start: the held port $port is skipped, and the one used ($used) is said" ||
    rc_fail "quick start: port used '$used' (held: $port)"
rc_expect_match "$out" '"status":"revoked".*"id":"tok-1"' "quick start: tok-1 is revoked"
rc_expect_match "$out" '"status":"not_revoked".*"id":"tok-3"' "quick start: tok-3 is not revoked"
rc_expect_match "$out" '^[0-9a-f]{64}$' "quick start: keygen printed the key id"
rc_expect_match "$out" 'signature_ok|signature: *(ok|valid)' "quick start: inspect checked the signature"
work=$(ls -d "$T"/tmp/tmp.* 2>/dev/null | head -n 1)
if [ -n "$work" ] && [ -d "$work/state" ]; then
	rc_expect_eq "$(stat -c %a "$work/state")" 750 "revcheckd created the state dir with mode 0750"
	[ -s "$work/state/rollback.json" ] && rc_ok "state written" ||
		rc_fail "no rollback state in the created state dir"
else
	rc_fail "the quick start left no state directory"
fi
rc_expect_match "$(cat "$T/qs.err")" 'created state directory' "the creation is logged"
if in_git; then
	rc_expect_eq "$(tree_state)" "$before" "the quick start wrote nothing into the repository"
	git -C "$RC_SRC" check-ignore -q demo/signing.pem &&
		rc_ok "make demo's keys (demo/) are gitignored" ||
		rc_fail "demo/signing.pem would be tracked"
fi

# ---------------------------------------------------------------- fixtures
"$FILTERBUILD" keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
printf 'tok-1\n' >"$T/tokens.txt"
"$FILTERBUILD" build --key "$T/key.pem" --out "$T/f" --valid-for 1h --quiet "$T/tokens.txt"
cc() {	# cc [args]: revcheckd --check-config; CC_RC, CC_OUT
	CC_RC=0
	CC_OUT=$("$REVCHECKD" --check-config "$@" 2>&1) || CC_RC=$?
}
ORIGIN=(--filter-dir "$T/f" --trusted-key "$T/key.pub")

# ---------------------------------------------------------------- --check-config and directories
mkdir -p "$T/s"
cc "${ORIGIN[@]}" --state-dir "$T/s"
rc_expect_eq "$CC_RC/$CC_OUT" "0/configuration OK" "--check-config on a good setup"
cc --filter-dir "$T/nope" --trusted-key "$T/key.pub" --state-dir "$T/s"
rc_expect_eq "$CC_RC" 1 "--check-config: a missing filter dir fails"
rc_expect_match "$CC_OUT" "filter_dir: $T/nope: No such file" "and names filter_dir"
cc "${ORIGIN[@]}" --state-dir "$T/no/such/state"
rc_expect_eq "$CC_RC" 1 "--check-config: a state dir that cannot be created fails"
rc_expect_match "$CC_OUT" "state_dir: .*cannot be created" "and names state_dir"
cc "${ORIGIN[@]}" --state-dir "$T/s-new"
rc_expect_eq "$CC_RC/$CC_OUT" "0/configuration OK" "--check-config: a missing state dir revcheckd can make passes"
[ ! -e "$T/s-new" ] && rc_ok "--check-config creates nothing" || rc_fail "--check-config made the state dir"
mkdir -p "$T/s-open" && chmod 0777 "$T/s-open"
cc "${ORIGIN[@]}" --state-dir "$T/s-open"
rc_expect_eq "$CC_RC" 1 "--check-config: a world-writable state dir fails"
rc_expect_match "$CC_OUT" "state_dir: .*writable by every user" "and says why"
cc "${ORIGIN[@]}" --state-dir "$T/s" --audit-log "$T/no/such/dir/audit.log"
rc_expect_match "$CC_RC/$CC_OUT" "^1/.*audit_log: $T/no/such/dir: No such file" \
    "--check-config: an audit log in a missing directory fails"
cc "${ORIGIN[@]}" --state-dir "$T/s" --audit-log "$T/s/elsewhere.log"
rc_expect_eq "$CC_RC/$CC_OUT" "0/configuration OK" "--check-config: an audit log in a usable directory passes"
printf 'x' >"$T/s-file"
cc "${ORIGIN[@]}" --state-dir "$T/s-file"
rc_expect_match "$CC_RC/$CC_OUT" "^1/.*not a directory" "--check-config: a file as state dir fails"
rc=0; "$REVCHECKD" "${ORIGIN[@]}" --state-dir "$T/s-open" --listen "127.0.0.1:$(rc_free_port)" \
    >"$T/open.log" 2>&1 || rc=$?
rc_expect_eq "$rc" 1 "revcheckd refuses to start on a world-writable state dir"

# ---------------------------------------------------------------- private key as trusted key
cc --filter-dir "$T/f" --trusted-key "$T/key.pem" --state-dir "$T/s"
rc_expect_eq "$CC_RC" 1 "--check-config: a private key as --trusted-key fails"
rc_expect_match "$CC_OUT" "key.pem: is a private key" "and says it is a private key"
rc=0; "$REVCHECKD" --filter-dir "$T/f" --trusted-key "$T/key.pem" --state-dir "$T/s" \
    --listen "127.0.0.1:$(rc_free_port)" >"$T/priv.log" 2>&1 || rc=$?
rc_expect_eq "$rc" 1 "revcheckd refuses to start with a private key as --trusted-key"
rc_expect_match "$(cat "$T/priv.log")" "private key" "the log says why"
rc=0; "$FILTERBUILD" verify --pub "$T/key.pem" "$T/f" >/dev/null 2>&1 || rc=$?
rc_expect_eq "$rc" 1 "filterbuild verify --pub refuses the private key too"

# ---------------------------------------------------------------- --listen with a host name
port=$(rc_free_port)
"$REVCHECKD" "${ORIGIN[@]}" --state-dir "$T/s" --listen "localhost:$port" >"$T/lh.log" 2>&1 &
LH_PID=$!
RC_DAEMONS+=(LH)
up=0
for _ in $(seq 1 300); do
	# /readyz, not /healthz: the daemon listens before its filter is loaded.
	if curl -sf -o /dev/null --max-time 1 "http://127.0.0.1:$port/readyz"; then up=1; break; fi
	kill -0 "$LH_PID" 2>/dev/null || break
	sleep 0.1
done
rc_expect_eq "$up" 1 "--listen localhost:PORT listens on 127.0.0.1"
rc_curl "http://127.0.0.1:$port/v1/check?id=tok-1"
rc_expect_json status revoked "a check through --listen localhost"
rc_stop LH || rc_fail "revcheckd on localhost did not stop cleanly"
cc "${ORIGIN[@]}" --state-dir "$T/s" --listen "no-such-host.invalid:8080"
rc_expect_eq "$CC_RC" 1 "--check-config: a host name that does not resolve fails"
rc_expect_match "$CC_OUT" "listen: .*does not resolve" "and says so"

# ---------------------------------------------------------------- usage errors exit 2
for args in "--bogus" "--listen" "stray-argument" "--max-batch many --filter-dir $T/f"; do
	rc=0; out=$("$REVCHECKD" $args 2>&1) || rc=$?
	rc_expect_eq "$rc" 2 "revcheckd $args: exit 2"
	rc_expect_match "$out" "try 'revcheckd --help'" "revcheckd $args: points at --help"
done
for args in "--bogus" "build --bogus" "nosuchcommand"; do
	rc=0; "$FILTERBUILD" $args >/dev/null 2>&1 || rc=$?
	rc_expect_eq "$rc" 2 "filterbuild $args: exit 2"
done
cc --filter-dir "$T/f" --state-dir "$T/s"
rc_expect_eq "$CC_RC" 1 "a configuration error (no trusted key) is exit 1, not a usage error"

# ---------------------------------------------------------------- edge-only keys on an origin
for kv in "--sync-interval 5" "--max-download 65536" "--max-lag 1m" "--sync-timeout 10"; do
	cc "${ORIGIN[@]}" --state-dir "$T/s" $kv
	k=${kv%% *}; k=${k#--}; k=${k//-/_}
	rc_expect_eq "$CC_RC" 1 "$kv refused on an origin"
	rc_expect_match "$CC_OUT" "$k: only for edge nodes" "$kv: the key is named"
done
printf '{ "filter_dir": "%s", "trusted_key": "%s", "sync_interval": "1m" }\n' \
    "$T/f" "$T/key.pub" >"$T/origin-edgekey.json"
cc -c "$T/origin-edgekey.json" --state-dir "$T/s"
rc_expect_match "$CC_RC/$CC_OUT" "^1/.*sync_interval: only for edge nodes" \
    "sync_interval in an origin's file refused"

# ---------------------------------------------------------------- JSON errors say what was expected
json_err() {	# json_err TEXT REGEX WHAT
	printf '%s' "$1" >"$T/bad.json"
	cc -c "$T/bad.json"
	rc_expect_eq "$CC_RC" 1 "$3: exit 1"
	rc_expect_match "$CC_OUT" "$2" "$3"
}
json_err $'{\n  "filter_dir": "/f",\n}\n' 'line 3, column 1: JSON syntax error: expected another member after .,.: JSON allows no trailing comma' "a trailing comma"
json_err $'{ \'filter_dir\': "/f" }' "column 3: .*expected a key in double quotes, not single" "single quotes"
json_err $'{ filter_dir: "/f" }' "expected a key: a string in double quotes" "a bare key"
json_err $'{ "filter_dir": "/f"\n  "listen": "x" }' "line 2, .*expected ',' between members" "a missing comma"
json_err $'{ "filter_dir": }' "column 17: .*expected a value" "a missing value"
json_err $'{ "filter_dir": "/f"' "file ends inside" "a missing closing brace"
json_err '{ "max_batch": [1] }' 'max_batch": wrong type \(expected a number or a string\)' "a wrong type"

rc_done
