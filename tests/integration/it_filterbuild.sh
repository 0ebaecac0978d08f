#!/usr/bin/env bash
# it_filterbuild.sh - filterbuild CLI end to end: keygen, build, inspect, verify, publish under SIGKILL
#
# Uses the real openssl CLI (through tests/pki.sh) for a CA, certificates
# and CRLs. Needs FILTERBUILD (the binary) and REVCHECK_SRC (the repo root);
# both default to this checkout's plain build.
set -euo pipefail

SRC=${REVCHECK_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
FB=${FILTERBUILD:-$SRC/bin/filterbuild}
KILL_RUNS=${IT_FILTERBUILD_KILL_RUNS:-24}

W=$(mktemp -d /tmp/it_filterbuild.XXXXXX)
BGPID=
cleanup() {
	if [ -n "$BGPID" ]; then kill -9 "$BGPID" 2>/dev/null || true; fi
	rm -rf "$W"
}
trap cleanup EXIT

FAILS=0
pass() { echo "ok - $*"; }
fail() { echo "FAIL - $*" >&2; FAILS=$((FAILS + 1)); }
check() { # check DESCRIPTION COMMAND...: the command must succeed
	local d=$1; shift
	if "$@"; then pass "$d"; else fail "$d"; fi
}

# A listing of a directory tree with link targets and file hashes.
snap() {
	(cd "$1" && find . -printf '%p %y %l %m\n' | LC_ALL=C sort &&
	    find . -type f -exec sha256sum {} + | LC_ALL=C sort)
}

# Runs filterbuild expecting exit status $1; keeps stdout and stderr.
expect_rc() {
	local want=$1; shift
	local rc=0
	"$FB" "$@" >"$W/out" 2>"$W/err" || rc=$?
	if [ "$rc" -ne "$want" ]; then
		echo "  filterbuild $* -> exit $rc, want $want" >&2
		sed 's/^/  stderr: /' "$W/err" >&2
		return 1
	fi
}

cd "$W"
"$SRC/tests/pki.sh" pki >/dev/null 2>&1 || { echo "pki.sh failed" >&2; exit 1; }

# ---------------------------------------------------------------- keygen
check "keygen prints a 64-hex key id" expect_rc 0 keygen --out k.pem --pub p.pem
grep -qE '^[0-9a-f]{64}$' out || fail "keygen output is not a key id"
KEYID=$(cat out)
check "private key mode 0600" test "$(stat -c %a k.pem)" = 600
check "public key mode 0644" test "$(stat -c %a p.pem)" = 644
cp k.pem k.orig
check "keygen refuses to overwrite" expect_rc 1 keygen --out k.pem
grep -q "already exists" err || fail "overwrite refusal does not say why"
check "refused overwrite leaves the key" cmp -s k.pem k.orig
check "keygen without --out is a usage error" expect_rc 2 keygen
check "keygen --help" expect_rc 0 keygen --help
check "keygen --force replaces" expect_rc 0 keygen --out k2.pem --pub p2.pem
K2ID=$(cat out)
check "keygen --force" expect_rc 0 keygen --out k2.pem --pub p2.pem --force
check "forced key is new" test "$(cat out)" != "$K2ID"
check "forced key mode 0600" test "$(stat -c %a k2.pem)" = 600
"$FB" keygen --out k2.pem --pub p2.pem --force >/dev/null
for c in build inspect verify; do
	check "$c --help" expect_rc 0 "$c" --help
	grep -q "usage: filterbuild $c" out || fail "$c --help has no usage line"
done
check "unknown command is a usage error" expect_rc 2 frobnicate

# ---------------------------------------------------------------- build
printf '# tokens\ntok-1\n  tok-2  \r\n\ntok-1\n' > ids.txt
cat > ids.json <<'EOF'
[ "tok-3", {"id": "tok-4", "scope": "tenant-a", "revoked_at": "2026-01-02T03:04:05Z", "reason": "compromised"} ]
EOF
check "build from text, JSON and CRLs" expect_rc 0 build --key k.pem --out d \
	--issuer pki/ca.pem --issuer pki/other.pem ids.txt ids.json pki/crl.pem pki/other-crl.der
check "build is silent on stderr when not a terminal" test ! -s err
grep -q "published version 1" out || fail "build summary missing"
check "verify a built DIR" expect_rc 0 verify --pub p.pem d
check "verify the filter file itself" expect_rc 0 verify --pub p.pem d/current/filter.rcf
check "verify with the wrong key fails" expect_rc 1 verify --pub p2.pem d
grep -q "^filterbuild: verify: d: signer .* not trusted" err || fail "wrong-key message: $(cat err)"
check "verify without --pub is a usage error" expect_rc 2 verify d

check "inspect --records" expect_rc 0 inspect --records d
CA_SCOPE=$(awk -F'\t' '$4 != "-" && $1 ~ /^x509:/ {print $1}' out | sort | uniq -c | sort -rn | awk 'NR==1{print $2}')
# Every revoked serial of the CA, with its date and reason; nothing else.
awk -F'\t' -v s="$CA_SCOPE" '$3 == "revoked" {print s "\t" $2 "\t" $5 "\t" $4}' pki/certs.tsv | sort > want.tsv
grep -F "$CA_SCOPE" out | sort > got.tsv
check "table holds every revoked serial with date and reason" diff -u want.tsv got.tsv
check "text ids are trimmed and collapse" test "$(grep -c '^default	tok-[12]	-	-$' out)" = 2
check "JSON object with scope, date and reason" grep -q '^tenant-a	tok-4	2026-01-02T03:04:05Z	compromised$' out

check "inspect --json" expect_rc 0 inspect --json --pub p.pem d
for f in version issued_at expires_at keys bits hashes fp_rate_target fill_ratio \
    estimated_fp_rate signer table_sha256 scopes layout seed filter_sha256 \
    expires_in_seconds expired stale; do
	grep -q "\"$f\":" out || fail "inspect --json lacks $f"
done
grep -q "\"signer\":[[:space:]]*\"$KEYID\"" out || fail "inspect signer is not the key id"
grep -q '"signature_ok":[[:space:]]*true' out || fail "inspect --pub does not report a valid signature"
grep -q '"records_missing_from_filter":[[:space:]]*0' out || fail "false negatives in the filter"
grep -q '"crl_number":' out || fail "inspect lacks CRL metadata"
check "inspect text" expect_rc 0 inspect --pub p.pem d
grep -q "^staleness: *fresh" out || fail "inspect text lacks staleness"
grep -q "^signature: *valid" out || fail "inspect text lacks signature status"
REVCHECK_FAKE_NOW=$(( $(date +%s) + 7200 )) "$FB" inspect --json d > stale.json
grep -q '"stale":[[:space:]]*true' stale.json || fail "an expired filter is not stale"
check "blocked layout builds and verifies" expect_rc 0 build --key k.pem --out dblk --layout blocked ids.txt
check "blocked layout verify" expect_rc 0 verify --pub p.pem dblk
"$FB" inspect --json dblk | grep -q '"layout":[[:space:]]*"blocked"' || fail "layout not recorded"
check "classic layout builds and verifies" expect_rc 0 build --key k.pem --out dcls --layout classic ids.txt
check "classic layout verify" expect_rc 0 verify --pub p.pem dcls
"$FB" inspect --json dcls | grep -q '"layout":[[:space:]]*"classic"' || fail "classic layout not recorded"
# The default is auto: at the default --fp-rate 0.001 and 10^5 ids the fuse
# layout (10-bit fingerprints, about 11.8 bits per key) is smaller than
# blocked (15.6) and meets the target, so it is picked; so it is at 1 %
# (7 bits); at 30 % (fuse's 4 bits are more than blocked needs) and below
# 2^-16 (no width meets it) blocked is.
seq 1 100000 | sed 's/^/auto-/' > auto.txt
check "auto (the default) at the default --fp-rate builds" expect_rc 0 build --key k.pem --out ddef auto.txt
grep -q "fuse layout" out || fail "the build summary does not name the layout auto picked: $(cat out)"
"$FB" inspect --json ddef > ddef.json || fail "inspect ddef"
grep -q '"layout":[[:space:]]*"fuse"' ddef.json || fail "default layout at 0.1 % is not fuse"
grep -q '"fingerprint_bits":[[:space:]]*10,' ddef.json || fail "0.1 % did not give 10-bit fingerprints: $(grep bits ddef.json)"
check "auto at the default --fp-rate verifies" expect_rc 0 verify --pub p.pem ddef
check "auto at --fp-rate 0.01 builds" expect_rc 0 build --key k.pem --out dauto \
	--fp-rate 0.01 auto.txt
"$FB" inspect --json dauto | grep -q '"layout":[[:space:]]*"fuse"' || fail "auto at 1 % did not pick fuse"
check "auto at 1 % verifies" expect_rc 0 verify --pub p.pem dauto
check "explicit --layout auto at --fp-rate 0.3" expect_rc 0 build --key k.pem --out dauto5 \
	--layout auto --fp-rate 0.3 auto.txt
"$FB" inspect --json dauto5 | grep -q '"layout":[[:space:]]*"blocked"' || fail "auto at 30 % did not pick blocked"
check "auto at --fp-rate 1e-6" expect_rc 0 build --key k.pem --out dauto6 \
	--fp-rate 0.000001 auto.txt
"$FB" inspect --json dauto6 | grep -q '"layout":[[:space:]]*"blocked"' || fail "auto below 2^-16 did not pick blocked"
# The fuse layout at 1 %: 7-bit fingerprints (FP 1/128).
check "fuse layout builds" expect_rc 0 build --key k.pem --out dfuse --layout fuse \
	--fp-rate 0.01 --issuer pki/ca.pem ids.txt ids.json pki/crl.pem
check "fuse layout verify" expect_rc 0 verify --pub p.pem dfuse
check "fuse layout verify of the filter file" expect_rc 0 verify --pub p.pem dfuse/current/filter.rcf
check "fuse verify with the wrong key fails" expect_rc 1 verify --pub p2.pem dfuse
check "fuse inspect --json" expect_rc 0 inspect --json --pub p.pem dfuse
grep -q '"layout":[[:space:]]*"fuse"' out || fail "fuse layout not recorded: $(grep layout out)"
grep -q '"hashes":[[:space:]]*3,' out || fail "a fuse filter does not report 3 cells per key"
SEGLEN=$(sed -n 's/.*"segment_length":[[:space:]]*\([0-9]*\).*/\1/p' out)
BITS=$(sed -n 's/.*"bits":[[:space:]]*\([0-9]*\).*/\1/p' out)
FW=$(sed -n 's/.*"fingerprint_bits":[[:space:]]*\([0-9]*\).*/\1/p' out)
if [ -z "$SEGLEN" ] || [ -z "$BITS" ] || [ "$FW" != 7 ]; then
	fail "fuse inspect --json lacks segment_length or bits, or fingerprint_bits '$FW' is not 7"
elif [ $((SEGLEN & (SEGLEN - 1))) -ne 0 ] || [ "$SEGLEN" -lt 2 ] ||
    [ "$SEGLEN" -gt 262144 ] || [ $((BITS % (FW * SEGLEN))) -ne 0 ] ||
    [ $((BITS / (FW * SEGLEN))) -lt 3 ]; then
	fail "fuse shape: segment_length $SEGLEN, bits $BITS, width $FW (want a power of 2 in 2..2^18, three or more whole segments)"
else
	pass "fuse shape: segment_length $SEGLEN, $((BITS / FW / SEGLEN)) segments of $FW-bit cells"
fi
grep -q '"estimated_fp_rate":[[:space:]]*0.0078125,' out || fail "fuse estimated FP rate is not 1/128"
grep -q '"signature_ok":[[:space:]]*true' out || fail "fuse inspect --pub: signature not valid"
grep -q '"records_missing_from_filter":[[:space:]]*0' out || fail "false negatives in the fuse filter"
check "fuse inspect text" expect_rc 0 inspect --pub p.pem dfuse
grep -qE '^layout: +fuse$' out || fail "inspect text layout is not fuse"
grep -qE '^segment length: +[0-9]+ cells of 7 bits$' out || fail "inspect text lacks the segment length and width"
# Records and table are the layout-independent half: same as the classic pair's.
"$FB" build --key k.pem --out dfusecls --layout classic --quiet --issuer pki/ca.pem \
	ids.txt ids.json pki/crl.pem
"$FB" inspect --records dfuse > fuse.tsv
"$FB" inspect --records dfusecls > fusecls.tsv
check "fuse and classic builds hold the same records" diff -u fusecls.tsv fuse.tsv
check "fuse table is the classic build's table" cmp -s dfuse/current/table.rct dfusecls/current/table.rct
check "fuse from an empty list builds" expect_rc 0 build --key k.pem --out dfuse0 --layout fuse \
	--fp-rate 0.01 --allow-shrink /dev/null
check "and verifies" expect_rc 0 verify --pub p.pem dfuse0
# Its lowest rate is 2^-16 (16-bit fingerprints): a lower target is
# refused, saying why, and DIR keeps exactly what it had.
snap dfuse > before.snap
check "fuse below 2^-16 is refused" expect_rc 1 build --key k.pem --out dfuse --layout fuse --fp-rate 0.000001 ids.txt
grep -q "2^-16" err || fail "fuse refusal does not mention 2^-16: $(cat err)"
check "fuse refusal is one line" test "$(wc -l < err)" = 1
check "fuse with --fp-rate 0.0000152 (just below 2^-16) is refused" expect_rc 1 build --key k.pem \
	--out dfuse --layout fuse --fp-rate 0.0000152 ids.txt
snap dfuse > after.snap
check "refused fuse builds leave DIR untouched" diff -u before.snap after.snap
check "fuse refusal left version 1 current" test "$(readlink dfuse/current)" = v00000000000000000001
# (ids.txt alone drops the first build's other scopes: --allow-shrink.)
check "fuse at exactly 2^-16 builds" expect_rc 0 build --key k.pem --out dfuse --layout fuse --fp-rate 0.0000152587890625 --allow-shrink --quiet ids.txt
"$FB" inspect --json dfuse | grep -q '"fingerprint_bits":[[:space:]]*16,' || fail "2^-16 did not give 16-bit fingerprints"
check "fuse at the default 0.001 builds" expect_rc 0 build --key k.pem --out dfuse --layout fuse --quiet ids.txt
"$FB" inspect --json dfuse | grep -q '"fingerprint_bits":[[:space:]]*10,' || fail "0.001 did not give 10-bit fingerprints"
check "fuse at 0.5 builds (4 bits, the narrowest)" expect_rc 0 build --key k.pem --out dfuse --layout fuse --fp-rate 0.5 --quiet ids.txt
"$FB" inspect --json --pub p.pem dfuse > f4.json || fail "inspect 4-bit fuse"
grep -q '"fingerprint_bits":[[:space:]]*4,' f4.json || fail "0.5 did not give 4-bit fingerprints"
grep -q '"records_missing_from_filter":[[:space:]]*0' f4.json || fail "false negatives in the 4-bit fuse filter"
check "the fuse rebuilds published versions 2, 3 and 4" test "$(readlink dfuse/current)" = v00000000000000000004
check "a fuse refusal into a new DIR creates nothing" expect_rc 1 build --key k.pem --out dnofuse --layout fuse --fp-rate 0.000001 ids.txt
check "no DIR left behind" test ! -e dnofuse
check "unknown layout is a usage error" expect_rc 2 build --key k.pem --out dfuse --layout bogus ids.txt
grep -q "bogus" err || fail "unknown layout error does not name it: $(cat err)"
for l in auto blocked classic fuse; do
	grep -q "$l" err || fail "unknown layout error does not list $l: $(cat err)"
done
check "build --help lists the fuse layout" expect_rc 0 build --help
grep -q "fuse" out || fail "build --help does not mention fuse"
check "stdin input" expect_rc 0 build --key k.pem --out dstdin --quiet - < ids.txt
check "--quiet prints nothing" test ! -s out -a ! -s err
check "CRL past nextUpdate is accepted with --allow-expired" expect_rc 0 build --key k.pem \
	--out dexp --issuer pki/ca.pem --allow-expired pki/crl-expired.pem
grep -q "warning" err || fail "--allow-expired gives no warning"

# ---------------------------------------------------------------- versions
mkdir -p dv
check "explicit version" expect_rc 0 build --key k.pem --out dv --version 5 ids.txt
check "default version is current + 1" expect_rc 0 build --key k.pem --out dv ids.txt
check "current is version 6" test "$(readlink dv/current)" = v00000000000000000006
snap dv > before.snap
for v in 6 3 1; do
	check "version $v refused" expect_rc 1 build --key k.pem --out dv --version "$v" ids.txt
	grep -q "not above the current version 6" err || fail "refusal does not say why"
done
snap dv > after.snap
check "refused versions leave DIR untouched" diff -u before.snap after.snap
for i in 1 2 3 4; do "$FB" build --key k.pem --out dv --quiet --keep 3 ids.txt; done
check "--keep 3 keeps three versions" test "$(ls -d dv/v* | wc -l)" = 3
check "newest pair still verifies" expect_rc 0 verify --pub p.pem dv

# ---------------------------------------------------------------- malformed inputs
snap dv > before.snap
printf 'abc\n' > good.txt
printf '[ "a", ]\n' > bad.json
head -c 100 pki/crl.der > trunc.der
bad() { # bad DESCRIPTION PATTERN ARGS...
	local d=$1 pat=$2; shift 2
	if expect_rc 1 build --key k.pem --out dv "$@"; then
		if grep -qE "$pat" err && [ "$(wc -l < err)" -ge 1 ]; then
			pass "$d: $(head -1 err)"
		else
			fail "$d: unclear error: $(cat err)"
		fi
	else
		fail "$d"
	fi
}
bad "bad hex serial" "serials-badhex.txt:[0-9]+: " \
	--scope "$CA_SCOPE" "$SRC/tests/data/serials-badhex.txt"
bad "invalid JSON" "bad.json:[0-9]+: " good.txt bad.json
bad "truncated DER" "trunc.der: .*offset [0-9]+" trunc.der
bad "CRL signed by another CA" "impostor-crl.pem: .*signature" --issuer pki/ca.pem pki/impostor-crl.pem
bad "expired CRL" "crl-expired.pem: .*expired" --issuer pki/ca.pem pki/crl-expired.pem
bad "CRL without its issuer's certificate" "crl.pem: .*no --issuer certificate for CRL issuer" pki/crl.pem
bad "missing input" "nope.txt" nope.txt
bad "bad signing key" "p.pem" --key p.pem ids.txt
snap dv > after.snap
check "malformed inputs leave DIR unchanged" diff -u before.snap after.snap
check "bad --fp-rate is a usage error" expect_rc 2 build --key k.pem --out dv --fp-rate 2 ids.txt
check "bad --valid-for is a usage error" expect_rc 2 build --key k.pem --out dv --valid-for 1y ids.txt

# ---------------------------------------------------------------- flipped bytes
"$FB" build --key k.pem --out dsmall --quiet ids.txt
F=dsmall/current/filter.rcf
N=$(stat -c %s "$F")
mkdir -p flip
cp dsmall/current/table.rct flip/table.rct
flipped_ok=0
# Every byte under a plain build; every third (random phase) under the
# sanitizers, whose start-up is slow. test_ffile flips every bit position
# of every byte in-process.
STEP=1
if grep -q __asan_init "$FB" 2>/dev/null; then STEP=3; fi
nflip=0
# The flipped copies are made in one python3 call, each in a directory of
# its own beside a link to the table: only verify runs once per copy.
python3 - "$F" flip "$STEP" "$((RANDOM % STEP))" <<'PY'
import os, sys
src, out, step, phase = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
data = open(src, "rb").read()
for i in range(phase, len(data), step):
    d = os.path.join(out, str(i))
    os.mkdir(d)
    b = bytearray(data)
    b[i] ^= 0x41
    with open(os.path.join(d, "filter.rcf"), "wb") as f:
        f.write(b)
    os.link(os.path.join(out, "table.rct"), os.path.join(d, "table.rct"))
PY
for d in flip/[0-9]*; do
	i=${d#flip/}
	nflip=$((nflip + 1))
	if "$FB" verify --quiet --pub p.pem "$d/filter.rcf" >/dev/null 2>"$W/err"; then
		fail "flipping byte $i of $N went unnoticed"
		flipped_ok=1
		continue
	fi
	mapfile -t errl <"$W/err"
	if [ "${#errl[@]}" -ne 1 ] || [[ ${errl[0]} != "filterbuild: verify: $d/filter.rcf: "* ]]; then
		fail "flipping byte $i: not one clear line: $(cat "$W/err")"
		flipped_ok=1
	fi
done
[ "$nflip" -ge $((N / STEP)) ] || { fail "only $nflip of $N bytes flipped"; flipped_ok=1; }
rm -rf flip/[0-9]*
[ "$flipped_ok" -eq 0 ] && pass "each of $nflip flipped bytes (of $N) fails verify"
cp "$F" flip/filter.rcf
check "unflipped copy verifies" expect_rc 0 verify --pub p.pem flip/filter.rcf
# Same inputs give the same table bytes, so take one of different inputs.
"$FB" build --key k.pem --out dsmall2 --quiet good.txt
cp dsmall2/current/table.rct flip/table.rct
check "a table from another build fails verify" expect_rc 1 verify --pub p.pem flip/filter.rcf
grep -qE "table (SHA-256|length .*) does not match" err || fail "binding failure not explained: $(cat err)"

# ---------------------------------------------------------------- concurrent publishers
ntmp() { find dv -maxdepth 1 -name '.tmp-*' | wc -l; }
n0=$(ntmp)
REVCHECK_PUBLISH_DELAY_US=250000 "$FB" build --key k.pem --out dv --quiet ids.txt &
BGPID=$!
# Until the first publisher holds the lock: its temporary directory,
# made under the lock, is there (30 s at most).
for _ in $(seq 1 300); do [ "$(ntmp)" -gt "$n0" ] && break; sleep 0.1; done
check "a second publisher to the same DIR is refused" expect_rc 1 build --key k.pem --out dv --quiet ids.txt
grep -q "another publish to this directory is in progress" err || fail "lock refusal not explained: $(cat err)"
check "the first publisher completes" wait "$BGPID"
BGPID=
check "and its pair verifies" expect_rc 0 verify --pub p.pem dv

# ---------------------------------------------------------------- vectors
# The committed vector: inspect --json and --records match the golden files
# (at the fixed time in now.txt), and it verifies against its public key.
V=$SRC/tests/vectors
(cd "$V" && REVCHECK_FAKE_NOW=$(cat now.txt) "$FB" inspect --json --pub pub.pem .) > vec.json
check "vector inspect --json matches tests/vectors/inspect.json" diff -u "$V/inspect.json" vec.json
(cd "$V" && "$FB" inspect --records .) > vec.tsv
check "vector records match tests/vectors/records.tsv" diff -u "$V/records.tsv" vec.tsv
check "vector verifies" expect_rc 0 verify --pub "$V/pub.pem" "$V/filter.rcf"
check "vector does not verify against another key" expect_rc 1 verify --pub p.pem "$V/filter.rcf"

# ---------------------------------------------------------------- golden pairs
# tests/data/pair holds what filterbuild published before lib/pair.c made
# its pairs (see tests/test_pair.c, which rebuilds them byte for byte with
# their seeds). Built again here from the same inputs at the same fake
# time, the table must be the same bytes and the filter header the same in
# every field the random seed does not decide. fuse.rcf is of the byte-cell
# layout filterbuild wrote then (now fuse8); at 0.004 today's fuse layout
# has 8-bit cells and the same shape, so only the layout's name and the 8
# bytes of padding differ.
G="$SRC/tests/data/pair"
inspect_fixed() { # inspect_fixed PATH: inspect --json less the seed's fields
	"$FB" inspect --json "$1" | python3 -c '
import json, sys
d = json.load(sys.stdin)
for k in ("path", "filter", "filter_sha256", "seed", "set_bits", "fill_ratio",
          "estimated_fp_rate", "now", "expires_in_seconds", "expired", "stale"):
    d.pop(k, None)
if isinstance(d.get("table"), dict):
    d["table"].pop("path", None)
if d.get("layout") == "fuse8":	# and 8 bytes of padding less
    d["layout"] = "fuse"
    d["filter_bytes"] += 8
print(json.dumps(d, sort_keys=True))'
}
# git keeps the key 0644; a signing key must be 0600 to be used.
install -m 600 "$G/key.pem" "$W/gold-key.pem"
for L in classic blocked fuse auto; do
	if [ "$L" = auto ]; then lopt=(); else lopt=(--layout "$L" --fp-rate 0.004); fi
	rm -rf "gold-$L"
	REVCHECK_FAKE_NOW=1924934400 "$FB" build --quiet --key "$W/gold-key.pem" \
	    --out "gold-$L" --version 7 "${lopt[@]}" --issuer "$G/GoodCACert.pem" \
	    "$SRC/tests/data/tokens.txt" "$SRC/tests/data/tokens-objects.json" \
	    "$SRC/tests/data/pkits/crls/GoodCACRL.crl" 2>"$W/err" ||
	    fail "golden $L: build failed: $(cat "$W/err")"
	check "golden $L: the same table bytes" cmp -s "gold-$L/current/table.rct" "$G/table.rct"
	mkdir -p "goldref-$L"
	cp "$G/$L.rcf" "goldref-$L/filter.rcf"
	cp "$G/table.rct" "goldref-$L/table.rct"
	check "golden $L: the same header but for the seed" test \
	    "$(REVCHECK_FAKE_NOW=1924934400 inspect_fixed "gold-$L/current")" = \
	    "$(REVCHECK_FAKE_NOW=1924934400 inspect_fixed "goldref-$L")"
done

# ---------------------------------------------------------------- SIGKILL mid-publish
seq 1 3000 | sed 's/^/kill-/' > many.txt
"$FB" build --key k.pem --out dk --quiet many.txt
killed_mid=0
kept_old=0
for ((r = 1; r <= KILL_RUNS; r++)); do
	old=$(readlink dk/current)
	REVCHECK_PUBLISH_DELAY_US=15000 "$FB" build --key k.pem --out dk --quiet --keep 2 many.txt &
	BGPID=$!
	# Land anywhere from before the first step to after the last.
	sleep "0.$(printf '%03d' $(( RANDOM % 180 )))"
	kill -9 "$BGPID" 2>/dev/null || true
	wait "$BGPID" 2>/dev/null || true
	BGPID=
	new=$(readlink dk/current)
	oldv=$((10#${old#v})); newv=$((10#${new#v}))
	if [ "$newv" -ne "$oldv" ] && [ "$newv" -ne $((oldv + 1)) ]; then
		fail "kill run $r: current went from $old to $new"
	fi
	if ! "$FB" verify --quiet --pub p.pem dk 2>"$W/err"; then
		fail "kill run $r: DIR does not verify: $(cat "$W/err")"
	fi
	if [ "$newv" -eq "$oldv" ]; then
		kept_old=$((kept_old + 1))
		# Killed inside the publish: its temporaries are still there.
		if ls -A dk | grep -qE '^(\.tmp-|\.current\.tmp|v)'; then
			[ -n "$(ls -A dk | grep -E '^\.(tmp-|current\.tmp)')" ] ||
			    [ "$(ls -d dk/v* | tail -1)" != "dk/$old" ] &&
			    killed_mid=$((killed_mid + 1))
		fi
	fi
done
pass "$KILL_RUNS SIGKILLed publishes: DIR always verified as the old or the new pair ($kept_old kept the old, $killed_mid of them killed mid-publish)"
check "some kills landed mid-publish" test "$killed_mid" -gt 0
check "a build after the kills succeeds" expect_rc 0 build --key k.pem --out dk --quiet --keep 2 many.txt
check "leftovers of killed runs are cleaned" test -z "$(ls -A dk | grep -E '^\.(tmp-|current\.tmp)')"
check "and verifies" expect_rc 0 verify --pub p.pem dk

if [ "$FAILS" -ne 0 ]; then
	echo "it_filterbuild: $FAILS failure(s)" >&2
	exit 1
fi
echo "it_filterbuild: all passed"
