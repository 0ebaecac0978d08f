#!/usr/bin/env bash
# it_owner.sh - a published filter or table, or a trusted key, owned by another user is refused; filter_owner admits one
#
# The owner is checked with fstat on the descriptor that is read: root, the
# daemon's own user, or the configured filter_owner. A pair whose table,
# then whose filter, belongs to "nobody" is refused at load (503
# no_filter, the log and /v1/status name the file, its owner and what was
# expected); with --filter-owner nobody (and with "filter_owner" given as a
# uid in a config file) the same files load and answer. A trusted key
# owned by nobody stops the start and --check-config unless filter_owner
# names nobody; a group-writable one is refused even then. Needs root to
# chown (CI runs as root).
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" -ne 0 ]; then
	echo "$RC_NAME: skipped: needs root to chown the published files"
	exit 0
fi
FB() { "$FILTERBUILD" "$@"; }
NOBODY=$(id -u nobody)

FB keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
printf 'tok-rev-1\n' >"$T/tokens.txt"
mkdir -p "$T/f" "$T/s"
FB build --key "$T/key.pem" --out "$T/f" --version 1 --quiet "$T/tokens.txt"
TAB=$(readlink -f "$T/f/current/table.rct")
FIL=$(find "$(readlink -f "$T/f/current")" -name '*.rcf' | head -n 1)
[ -f "$TAB" ] && [ -f "$FIL" ] && rc_ok "published pair found" ||
    rc_fail "no filter/table under $T/f/current"

refused() {	# refused NAME FILE WHAT
	local n=$1 file=$2 what=$3
	rc_start "$n" --filter-dir "$T/f" --trusted-key "$T/key.pub" \
	    --state-dir "$T/s" --poll-interval 3600 || rc_fail "$n did not start"
	local url
	url=$(eval "echo \${${n}_URL}")
	for _ in $(seq 1 300); do
		grep -q 'owned by uid' "$T/$n.log" && break
		sleep 0.1
	done
	grep -q "$(basename "$file"): owned by uid $NOBODY, expected root (0) or the daemon's uid 0" "$T/$n.log" &&
	    rc_ok "$what: the log names the file, its owner and what was expected" ||
	    rc_fail "$what: no owner refusal in the log"
	rc_curl "$url/v1/check?id=tok-rev-1"
	rc_expect_status 503 "$what: checks refused"
	rc_expect_json error no_filter "$what: no_filter"
	rc_curl "$url/v1/check?id=tok-fine"
	rc_expect_status 503 "$what: a negative is refused too"
	rc_curl "$url/v1/status"
	rc_expect_match "$(rc_json reloads.last.reason)" "owned by uid $NOBODY" \
	    "$what: status gives the reason"
	rc_stop "$n" || rc_fail "$n did not exit 0"
}

# 1. The table belongs to nobody.
chown nobody "$TAB"
refused A "$TAB" "table owned by nobody"
grep -q '"result":"refused".*owned by uid' "$T/s/audit.log" &&
    rc_ok "the audit log has the refusal" || rc_fail "no audit line"

# 2. The filter belongs to nobody, the table to root.
chown root "$TAB"
chown nobody "$FIL"
refused B "$FIL" "filter owned by nobody"

# 3. Both belong to nobody, and nobody is the configured owner.
chown nobody "$TAB"
rc_start C --filter-dir "$T/f" --trusted-key "$T/key.pub" --state-dir "$T/s" \
    --poll-interval 3600 --filter-owner nobody || rc_fail "C did not start"
rc_wait_version "$C_URL" 1 || rc_fail "C did not load with --filter-owner nobody"
rc_curl "$C_URL/v1/check?id=tok-rev-1"
rc_expect_json status revoked "--filter-owner nobody: the pair serves"
rc_stop C || rc_fail "C did not exit 0"

# 4. The same as a uid in a config file; an unknown user is a config error.
printf '{ "filter_owner": "%s" }\n' "$NOBODY" >"$T/owner.json"
rc_start D -c "$T/owner.json" --filter-dir "$T/f" --trusted-key "$T/key.pub" \
    --state-dir "$T/s" --poll-interval 3600 || rc_fail "D did not start"
rc_wait_version "$D_URL" 1 || rc_fail "D did not load with filter_owner $NOBODY"
rc_stop D || rc_fail "D did not exit 0"
printf '{ "filter_owner": "no-such-user-rc" }\n' >"$T/bad.json"
if "$REVCHECKD" -c "$T/bad.json" --filter-dir "$T/f" \
    --trusted-key "$T/key.pub" --check-config >"$T/bad.out" 2>&1; then
	rc_fail "an unknown filter_owner passed --check-config"
else
	grep -q 'filter_owner: no user "no-such-user-rc"' "$T/bad.out" &&
	    rc_ok "an unknown filter_owner is a config error" ||
	    rc_fail "unclear error: $(head -c 300 "$T/bad.out")"
fi
# 5. Trusted key files: the same owner rule, and no group or other write.
chown root "$TAB" "$FIL"
chown nobody "$T/key.pub"
out=$("$REVCHECKD" --filter-dir "$T/f" --trusted-key "$T/key.pub" \
    --state-dir "$T/s" --check-config 2>&1) &&
    rc_fail "--check-config passed a key owned by nobody" ||
    rc_expect_match "$out" "trusted_key: .*key\.pub: owned by uid $NOBODY" \
	"--check-config names the key and its owner"
port=$(rc_free_port)
if timeout 10 "$REVCHECKD" --listen "127.0.0.1:$port" --filter-dir "$T/f" \
    --trusted-key "$T/key.pub" --state-dir "$T/s" >"$T/E.log" 2>&1; then
	rc_fail "revcheckd started with a trusted key owned by nobody"
else
	rc_expect_match "$(cat "$T/E.log")" "trusted_key: .*key\.pub: owned by uid $NOBODY" \
	    "the start is refused, naming the key"
fi
out=$("$REVCHECKD" --filter-dir "$T/f" --trusted-key "$T/key.pub" \
    --state-dir "$T/s" --filter-owner nobody --check-config 2>&1) &&
    rc_expect_match "$out" "configuration OK" "filter_owner nobody admits the key" ||
    rc_fail "--check-config with filter_owner nobody: $out"
chmod g+w "$T/key.pub"
out=$("$REVCHECKD" --filter-dir "$T/f" --trusted-key "$T/key.pub" \
    --state-dir "$T/s" --filter-owner nobody --check-config 2>&1) &&
    rc_fail "a group-writable key passed" ||
    rc_expect_match "$out" 'key\.pub: writable by group or others \(mode 664\)' \
	"a group-writable key is refused"
rc_done
