#!/usr/bin/env bash
# it_inputs.sh - inputs that cannot quietly un-revoke: token-list shape, empty lists, dropped and shrunk scopes, inspect's changes
#
# Every refusal is a build that would have published fewer revocations
# than the operator meant: each case asserts the exit status, the message
# (file, line or scope named) and that DIR/current did not move.
. "$(dirname "$0")/lib.sh"

FB() { "$FILTERBUILD" "$@"; }
"$FILTERBUILD" keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null

# build_expect RC WHAT ARGS...: runs filterbuild build, keeps its stderr.
build_expect() {
	local want=$1 what=$2 rc=0
	shift 2
	FB build --key "$T/key.pem" --out "$T/d" --quiet "$@" 2>"$T/err" || rc=$?
	rc_expect_eq "$rc" "$want" "$what: exit status ($(head -c 300 "$T/err"))"
}
current() { readlink "$T/d/current" 2>/dev/null || echo none; }

printf 'tok-1\ntok-2\ntok-3\ntok-4\n' >"$T/four.txt"
echo '[{"id":"a1","scope":"tenant-b"},{"id":"a2","scope":"tenant-b"}]' >"$T/a.json"
build_expect 0 "first version" "$T/four.txt" "$T/a.json"
v1=$(current)

# 1. Not token lists: each refused, naming the first bad line.
cp "$RC_SRC/README.md" "$T/README.md"
build_expect 1 "a README as a token list" "$T/README.md" "$T/a.json"
rc_expect_match "$(cat "$T/err")" 'README.md:[0-9]+: column [0-9]+: whitespace inside an id' "README refusal names the line"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$T/c.key" -out "$T/cert.pem" -subj /CN=x -days 1 2>/dev/null
build_expect 1 "a PEM certificate as a token list" "$T/cert.pem"
rc_expect_match "$(cat "$T/err")" 'cert.pem:1: PEM armour' "PEM refusal names line 1"
# One line, so that no line of it can be a comment ('#' first: about one
# run in 256 had the whole file read as comments and refused as empty).
{ printf 'x'; head -c 100 /dev/urandom | tr -d '\n'; printf '\001'; } >"$T/random.bin"
build_expect 1 "100 random bytes as a token list" "$T/random.bin"
# The first bad byte decides the message: a space or tab between two
# other bytes of a line is one too (about one run in a hundred).
rc_expect_match "$(cat "$T/err")" 'random.bin:[0-9]+: (column [0-9]+: (control byte|bytes that are not UTF-8|whitespace inside an id)|NUL byte)' "binary refusal names a line"
rc_expect_eq "$(current)" "$v1" "refused lists published nothing"

# 2. An empty list would un-revoke every token of its scope.
: >"$T/empty.txt"
build_expect 1 "an empty token list" "$T/empty.txt" "$T/a.json"
rc_expect_match "$(cat "$T/err")" 'empty.txt: no ids: .*"default"' "empty list refusal names file and scope"
echo '[]' >"$T/empty.json"
build_expect 1 "an empty JSON list" "$T/four.txt" "$T/a.json" "$T/empty.json"
rc_expect_eq "$(current)" "$v1" "empty lists published nothing"

# 3. A dropped scope, a shrink past 50 % (and past --max-shrink).
build_expect 1 "a version without scope tenant-b" "$T/four.txt"
rc_expect_match "$(cat "$T/err")" 'scope "tenant-b" \(2 keys in version 1\) is not in the inputs' "dropped scope named"
printf 'tok-1\n' >"$T/one.txt"
build_expect 1 "default shrinking from 4 to 1" "$T/one.txt" "$T/a.json"
rc_expect_match "$(cat "$T/err")" 'scope "default" shrinks from 4 keys \(version 1\) to 1, by more than 50 %' "shrink named"
printf 'tok-1\ntok-2\n' >"$T/two.txt"
build_expect 0 "losing exactly 50 % is allowed" "$T/two.txt" "$T/a.json"
rc_expect_eq "$(current)" v00000000000000000002 "version 2 published"
build_expect 1 "--max-shrink 10 refuses losing 1 of 2" --max-shrink 10 "$T/one.txt" "$T/a.json"
build_expect 0 "--allow-shrink publishes the dropped scope" --allow-shrink "$T/one.txt"
rc_expect_eq "$(current)" v00000000000000000003 "version 3 published"

# 4. inspect shows per-scope counts and the change from version 2.
FB inspect "$T/d" >"$T/insp"
rc_expect_match "$(cat "$T/insp")" 'changes since: +version 2' "inspect names the previous version"
rc_expect_match "$(cat "$T/insp")" 'default: 1 keys, source list, -1 since version 2' "inspect shows the change"
rc_expect_match "$(cat "$T/insp")" 'tenant-b: DROPPED since version 2 \(had 2 keys\)' "inspect shows the dropped scope"
FB inspect --json "$T/d" >"$T/insp.json"
python3 - "$T/insp.json" <<'EOF' && rc_ok "inspect --json changes" || rc_fail "inspect --json changes"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["previous_version"] == 2, d
s = {x["scope"]: x for x in d["scopes"]}
assert s["default"]["keys"] == 1 and s["default"]["previous_keys"] == 2, s
assert s["default"]["keys_change"] == -1, s
assert d["dropped_scopes"] == [{"scope": "tenant-b", "previous_keys": 2}], d
EOF

# 5. A current version that cannot be read cannot vouch for a comparison.
chmod u+w "$T/d/$(current)/filter.rcf"
printf 'XXXXXXXX' | dd of="$T/d/$(current)/filter.rcf" bs=1 conv=notrunc 2>/dev/null
build_expect 1 "unreadable current version" "$T/one.txt"
rc_expect_match "$(cat "$T/err")" 'cannot compare with the current version' "unreadable current named"
build_expect 0 "--allow-shrink without the comparison" --allow-shrink "$T/one.txt"

# 5b. Nor can one that is not signed by the build key or a --trusted-key: a
# current version replaced by one with fewer keys (here signed by another
# key) would otherwise let the shrink below through.
build_expect 0 "four keys again" "$T/four.txt" "$T/a.json"
FB keygen --out "$T/other.pem" --pub "$T/other.pub" >/dev/null
FB build --key "$T/other.pem" --out "$T/d" --quiet --allow-shrink "$T/one.txt" 2>/dev/null ||
	rc_fail "a version signed by another key"
v=$(current)
build_expect 1 "a current version signed by an unknown key" "$T/one.txt"
rc_expect_match "$(cat "$T/err")" "cannot compare with the current version: .*$v/filter.rcf: .*signed by neither --key nor a --trusted-key" \
    "the unverified current version is named"
rc_expect_eq "$(current)" "$v" "nothing published"
build_expect 0 "--trusted-key: the other key's version is compared with" --trusted-key "$T/other.pub" "$T/one.txt"

# 6. CRL replay and mixing (tests/pki.sh: other-crl-empty.pem is CRL number 0x1000
# of "other", other-crl.pem 0x1001 with other01 revoked).
bash "$RC_SRC/tests/pki.sh" "$T/pki" >/dev/null
P=$T/pki
OTHER01=$(awk -F'\t' '$1 == "certs/other01.pem" {print $2}' "$P/other-certs.tsv")
cb() { FB build --key "$T/key.pem" --out "$T/c" --quiet --issuer "$P/other.pem" "$@" 2>"$T/err"; }
cb "$P/other-crl-empty.pem" "$P/other-crl.pem" || rc_fail "two CRLs of one issuer: $(cat "$T/err")"
FB inspect --records "$T/c" >"$T/recs"
rc_expect_eq "$(awk -F'\t' '{print $2}' "$T/recs")" "$OTHER01" "the newest CRL (1001) wins, whatever the order"
rc_expect_match "$(FB inspect "$T/c")" 'crl number: +1001' "its CRL number describes the scope"
if cb "$P/other-crl-empty.pem"; then rc_fail "a replayed older CRL was published"; fi
rc_expect_match "$(cat "$T/err")" 'CRL of "CN=revcheck Other CA,O=revcheck tests" \(CRL number "1000".*older than the one version 1 used \(CRL number "1001".*--allow-crl-rollback' \
    "rollback refused, both numbers named"
rc_expect_eq "$(readlink "$T/c/current")" v00000000000000000001 "nothing published"
cb --allow-crl-rollback --allow-shrink "$P/other-crl-empty.pem" || rc_fail "--allow-crl-rollback: $(cat "$T/err")"
rc_expect_match "$(cat "$T/err")" 'older than the one version 1 used.*\(--allow-crl-rollback\)' "an allowed rollback is still logged"

# 7. --keep-going: one bad CA does not freeze the others.
kb() { FB build --key "$T/key.pem" --out "$T/k" --quiet --issuer "$P/ca.pem" --issuer "$P/other.pem" "$@" 2>"$T/err"; }
kb "$P/crl.pem" "$P/other-crl.pem" "$T/four.txt" || rc_fail "keep-going base version: $(cat "$T/err")"
head -c 200 "$P/other-crl.der" >"$T/other-trunc.der"
rc=0; kb --report "$T/r1.json" "$P/crl.pem" "$T/other-trunc.der" "$T/four.txt" || rc=$?
rc_expect_eq "$rc" 1 "by default a bad input fails the build"
rc_expect_match "$(cat "$T/err")" 'other-trunc.der: truncated or malformed DER' "naming it"
rc_expect_eq "$(readlink "$T/k/current")" v00000000000000000001 "nothing published"
rc=0; kb --keep-going --report "$T/r2.json" "$P/crl.pem" "$T/other-trunc.der" "$T/four.txt" || rc=$?
rc_expect_eq "$rc" 3 "--keep-going publishes without it and exits 3"
rc_expect_eq "$(readlink "$T/k/current")" v00000000000000000002 "version 2 published"
FB inspect --records "$T/k" >"$T/krecs"
rc_expect_match "$(cat "$T/krecs")" "$OTHER01" "the other CA's revocation is kept from version 1"
rc_expect_match "$(FB inspect "$T/k")" 'kept: +from the previous version' "inspect says the scope was kept"
python3 - "$T/r1.json" "$T/r2.json" <<'PY' && rc_ok "both reports" || rc_fail "reports"
import json, sys
r1 = json.load(open(sys.argv[1])); r2 = json.load(open(sys.argv[2]))
assert r1["exit_status"] == 1 and r1["published_version"] is None, r1
assert [i["outcome"] for i in r1["inputs"]] == ["used", "failed"], r1
assert r2["exit_status"] == 3 and r2["published_version"] == 2, r2
assert r2["inputs_failed"] == 1, r2
o = {i["input"].rsplit("/", 1)[-1]: i for i in r2["inputs"]}
assert o["other-trunc.der"]["outcome"] == "failed" and "truncated" in o["other-trunc.der"]["error"], o
assert o["crl.pem"]["outcome"] == "used" and o["four.txt"]["outcome"] == "used", o
(p,) = r2["previous_scopes"]
assert p["outcome"] == "kept_from_previous" and p["from_version"] == 1, p
assert p["issuer"] == "CN=revcheck Other CA,O=revcheck tests", p
PY
# Past the kept CRL's nextUpdate (30 days), the scope is left out.
rc=0
REVCHECK_FAKE_NOW=$(( $(date +%s) + 40 * 86400 )) FB build --key "$T/key.pem" --out "$T/k" --quiet \
    --issuer "$P/ca.pem" --issuer "$P/other.pem" --keep-going --report "$T/r3.json" \
    "$T/other-trunc.der" "$T/four.txt" 2>"$T/err" || rc=$?
rc_expect_eq "$rc" 3 "past nextUpdate: published, exit 3 ($(head -c 300 "$T/err"))"
python3 - "$T/r3.json" <<'PY' && rc_ok "expired scopes are left out" || rc_fail "expired scopes"
import json, sys
r = json.load(open(sys.argv[1]))
outs = sorted(p["outcome"] for p in r["previous_scopes"])
assert outs == ["expired_not_covered", "expired_not_covered"], r
PY
rc_expect_eq "$(FB inspect --records "$T/k" | grep -c '^x509:' || true)" 0 "no X.509 scope left"

# --keep-going keeps records only from a current version whose filter
# verifies and whose table is the one the filter names.
kb "$P/crl.pem" "$P/other-crl.pem" "$T/four.txt" --allow-shrink || rc_fail "keep-going base again: $(cat "$T/err")"
tab=$T/k/$(readlink "$T/k/current")/table.rct
chmod u+w "$tab"
printf 'Z' | dd of="$tab" bs=1 seek=$(( $(stat -c %s "$tab") - 3 )) conv=notrunc 2>/dev/null
rc=0; kb --keep-going "$P/crl.pem" "$T/other-trunc.der" "$T/four.txt" || rc=$?
rc_expect_eq "$rc" 1 "a table that is not the filter's: nothing kept, build fails"
rc_expect_match "$(cat "$T/err")" 'cannot keep scopes of the current version: .*table.rct: not the table its signed filter names' \
    "the altered table is named"

# A lost "current" link: the highest version stands in for it. The
# history stays, the next version is above it (not 1, which every
# daemon's rollback state refuses) and the comparisons still hold.
mkdir -p "$T/l"
seq -f 'tok-l-%g' 1 10 >"$T/ten.txt"
seq -f 'tok-l-%g' 1 2 >"$T/two.txt"
lb() { FB build --key "$T/key.pem" --out "$T/l" --quiet "$@" 2>"$T/err"; }
lb "$T/ten.txt" && lb "$T/ten.txt" || rc_fail "lost link: two versions: $(cat "$T/err")"
rm "$T/l/current"
rc=0; lb "$T/two.txt" || rc=$?
rc_expect_eq "$rc" 1 "lost link: a shrink against the highest version is still refused"
rc_expect_match "$(cat "$T/err")" 'no "current" link; version 2, the highest there, stands in' \
    "lost link: the stand-in is named"
rc_expect_eq "$(ls -d "$T"/l/v* | wc -l)" 2 "lost link: the refused build removed no version"
lb "$T/ten.txt" || rc_fail "lost link: same ids: $(cat "$T/err")"
rc_expect_eq "$(readlink "$T/l/current")" v00000000000000000003 "lost link: version 3 published above the history"
rc_expect_eq "$(ls -d "$T"/l/v* | wc -l)" 3 "lost link: versions 1 and 2 kept"

rc_done
