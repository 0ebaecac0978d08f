#!/usr/bin/env bash
# it_layouts.sh - the same end-to-end checks for each filter layout (classic, blocked, fuse at three widths) behind the real revcheckd
#
# For each layout: filterbuild compiles one token list and one CRL (made by
# tests/pki.sh with the real openssl CLI) at --fp-rate 0.01 (the fuse
# layout also at 0.05 and 0.0001: 5- and 14-bit fingerprints); revcheckd
# serves the pair; curl asks for every revoked id and certificate (all must
# answer revoked) and for thousands of never-revoked ids (all must answer
# not_revoked: the table settles the filter's false positives, and there
# must be some, few enough for the target). /v1/status and /metrics must
# report the layout and a sane fill ratio and estimated FP rate, and the
# counters must add up. An edge node synced from it must answer the same.
. "$(dirname "$0")/lib.sh"

FB() { "$FILTERBUILD" "$@"; }

NREV=1500	# revoked tokens
NABS=3000	# never-revoked tokens asked about
NSER=300	# never-revoked serials of the CA asked about

# ---------------------------------------------------------------- data
bash "$RC_SRC/tests/pki.sh" "$T/pki" >/dev/null 2>&1
FB keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
seq 1 "$NREV" | sed 's/^/tok-rev-/' >"$T/tokens.txt"
NREVCERTS=$(awk -F'\t' '$3 == "revoked"' "$T/pki/certs.tsv" | wc -l)

# One batch of everything revoked, one of everything that is not. The
# CA's scope comes from the first build (it is the same for every layout).
mkbatches() {	# mkbatches CA_SCOPE
	python3 - "$1" "$T/pki" "$NREV" "$NABS" "$NSER" "$T" <<'PY'
import json, os, random, sys
scope, pki, nrev, nabs, nser, t = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
rev, clean = [], []
for i in range(1, nrev + 1):
    rev.append({"id": "tok-rev-%d" % i})
revoked_serials = set()
for line in open(os.path.join(pki, "certs.tsv")):
    f, serial, status = line.rstrip("\n").split("\t")[:3]
    item = {"cert": open(os.path.join(pki, f)).read()}
    if status == "revoked":
        revoked_serials.add(serial)
        rev.append(item)
        rev.append({"id": serial, "scope": scope})
    else:
        clean.append(item)
        clean.append({"id": serial, "scope": scope})
for i in range(1, nabs + 1):
    clean.append({"id": "tok-ok-%d" % i})
# Serials no certificate has, in the CA's scope: 8 random bytes, no
# leading zero byte (the canonical form the service expects).
rnd = random.Random(4242)
n = 0
while n < nser:
    s = "%016x" % rnd.getrandbits(64)
    if s.startswith("00") or s in revoked_serials:
        continue
    clean.append({"id": s, "scope": scope})
    n += 1
json.dump({"items": rev}, open(os.path.join(t, "rev.json"), "w"))
# The edge settles each positive with one request upstream: fewer tokens.
json.dump({"items": rev[:200] + rev[nrev:]}, open(os.path.join(t, "rev-edge.json"), "w"))
json.dump({"items": clean}, open(os.path.join(t, "clean.json"), "w"))
print(len(rev), len(clean), 200 + len(rev) - nrev)
PY
}

# answers WANT: checks RC_BODY's results all have status WANT; prints
# "N_ITEMS N_AUTHORITATIVE" (answers the table settled).
answers() {
	python3 - "$1" "$RC_BODY_FILE" <<'PY'
import json, sys
want, f = sys.argv[1], sys.argv[2]
try:
    res = json.load(open(f))["results"]
except Exception as e:
    print("unparsable reply: %s" % e, file=sys.stderr)
    sys.exit(1)
bad = [r for r in res if r.get("status") != want]
for r in bad[:5]:
    print("  want %s: %s" % (want, json.dumps(r)[:200]), file=sys.stderr)
print(len(res), sum(1 for r in res if r.get("source") == "authoritative"))
sys.exit(1 if bad else 0)
PY
}

metric() {	# metric NAME: its value in $T/metrics
	awk -v n="revcheckd_$1" '$1 == n { print $2 }' "$T/metrics"
}

# in_range VALUE LO HI: LO < VALUE < HI (floating point).
in_range() {
	python3 -c 'import sys; v, lo, hi = map(float, sys.argv[1:]); sys.exit(0 if lo < v < hi else 1)' \
	    "$1" "$2" "$3" 2>/dev/null
}

NREVITEMS=
NCLEAN=
for spec in classic:0.01 blocked:0.01 fuse:0.01 fuse:0.05 fuse:0.0001; do
	layout=${spec%%:*}
	p=${spec#*:}
	tag=$layout-$p
	F=$T/filters-$tag
	FB build --key "$T/key.pem" --out "$F" --layout "$layout" --fp-rate "$p" \
	    --issuer "$T/pki/ca.pem" --quiet "$T/tokens.txt" "$T/pki/crl.pem"
	FB inspect --json "$F" >"$T/inspect-$tag.json"
	# The rate the filter has: p itself, or 2^-w for fuse's w-bit cells.
	w=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("fingerprint_bits", 0))' \
	    "$T/inspect-$tag.json")
	if [ "$layout" = fuse ]; then
		pe=$(python3 -c 'import sys; print(2.0 ** -int(sys.argv[1]))' "$w")
	else
		pe=$p
	fi
	if [ -z "$NREVITEMS" ]; then
		CA_SCOPE=$(python3 -c 'import json, sys
for s in json.load(open(sys.argv[1]))["scopes"]:
    if s["source"] == "crl":
        print(s["scope"])' "$T/inspect-$tag.json")
		rc_expect_match "$CA_SCOPE" '^x509:[0-9a-f]{64}$' "the CRL's scope"
		read -r NREVITEMS NCLEAN NREVEDGE < <(mkbatches "$CA_SCOPE")
	fi

	mkdir -p "$T/state-$tag"
	rc_start D --filter-dir "$F" --trusted-key "$T/key.pub" \
	    --state-dir "$T/state-$tag" --poll-interval 1
	rc_wait_ready "$D_URL" 30 || rc_fail "$layout: revcheckd not ready"

	# What the daemon says it serves.
	rc_curl "$D_URL/v1/status"
	rc_expect_status 200 "$layout: /v1/status"
	rc_expect_json filter.layout "$layout" "$layout: status layout"
	rc_expect_json filter.version 1 "$layout: status version"
	keys=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["keys"])' \
	    "$T/inspect-$tag.json")
	rc_expect_eq "$keys" $((NREV + NREVCERTS)) "$layout: keys in the filter"
	rc_expect_json filter.keys "$keys" "$layout: status keys match inspect"
	if [ "$layout" = fuse ]; then
		rc_expect_json filter.hashes 3 "fuse: three cells per key"
		rc_expect_eq "$w" "$(python3 -c 'import math, sys; print(math.ceil(-math.log2(float(sys.argv[1]))))' "$p")" \
		    "$tag: fingerprint width ceil(log2(1/p))"
		fp=$(rc_json filter.estimated_fp_rate)
		in_range "$fp" "$(awk -v e="$pe" 'BEGIN { print e * 0.999 }')" \
		    "$(awk -v e="$pe" 'BEGIN { print e * 1.001 }')" &&
		    rc_ok "$tag: estimated FP $fp = 2^-$w" ||
		    rc_fail "$tag: estimated FP $fp is not 2^-$w"
		fill_lo=0.05; fill_hi=0.6
	else
		fill_lo=0.3; fill_hi=0.7
		fp=$(rc_json filter.estimated_fp_rate)
		in_range "$fp" 0.001 0.03 && rc_ok "$layout: estimated FP $fp" ||
		    rc_fail "$layout: estimated FP $fp not near the 0.01 target"
	fi
	fill=$(rc_json filter.fill_ratio)
	in_range "$fill" "$fill_lo" "$fill_hi" && rc_ok "$layout: fill $fill" ||
	    rc_fail "$layout: fill ratio $fill not in ($fill_lo, $fill_hi)"

	# Everything revoked answers revoked, from the table.
	rc_curl -H 'Content-Type: application/json' --data-binary "@$T/rev.json" \
	    "$D_URL/v1/check"
	rc_expect_status 200 "$layout: batch of revoked items"
	if out=$(answers revoked); then
		read -r n auth <<<"$out"
		rc_expect_eq "$n:$auth" "$NREVITEMS:$NREVITEMS" \
		    "$layout: all $NREVITEMS revoked items revoked, by the table"
	else
		rc_fail "$layout: a revoked item did not answer revoked"
	fi

	# Nothing else does; the filter's positives among them are settled
	# by the table.
	rc_curl -H 'Content-Type: application/json' --data-binary "@$T/clean.json" \
	    "$D_URL/v1/check"
	rc_expect_status 200 "$layout: batch of never-revoked items"
	nfp=
	if out=$(answers not_revoked); then
		read -r n nfp <<<"$out"
		rc_expect_eq "$n" "$NCLEAN" "$layout: all $NCLEAN never-revoked items not_revoked"
	else
		rc_fail "$layout: a never-revoked item did not answer not_revoked"
	fi
	# pe (1 %, 2^-7, 2^-5 or 2^-14) of about 3300: some where over ten
	# are expected, and never several times the target.
	read -r fplo fphi < <(awk -v n="$NCLEAN" -v e="$pe" 'BEGIN {
		x = n * e; printf "%d %d\n", (x >= 10 ? 1 : 0), 3 * x + 5 }')
	if [ -n "$nfp" ] && [ "$nfp" -ge "$fplo" ] && [ "$nfp" -lt "$fphi" ]; then
		rc_ok "$tag: $nfp false positives of $NCLEAN settled by the table"
	else
		rc_fail "$tag: ${nfp:-?} false positives of $NCLEAN (want $fplo..$fphi)"
	fi

	# The counters agree with the answers.
	curl -s --max-time 10 "$D_URL/metrics" >"$T/metrics"
	rc_expect_eq "$(metric filter_loaded)" 1 "$layout: metrics filter_loaded"
	rc_expect_eq "$(metric filter_keys)" "$keys" "$layout: metrics filter_keys"
	rc_expect_eq "$(metric filter_version)" 1 "$layout: metrics filter_version"
	checks=$(metric checks_total)
	neg=$(metric filter_negative_total)
	fall=$(metric fallthrough_total)
	conf=$(metric confirmed_revoked_total)
	fpos=$(metric false_positive_total)
	rc_expect_eq "$checks" $((NREVITEMS + NCLEAN)) "$layout: checks counted"
	rc_expect_eq "$conf" "$NREVITEMS" "$layout: confirmed revoked counted"
	rc_expect_eq "$fpos" "${nfp:-?}" "$layout: false positives counted"
	rc_expect_eq "$((neg + fall))" "$checks" "$layout: negatives + fallthrough = checks"
	rc_expect_eq "$fall" "$((conf + fpos))" "$layout: fallthrough = confirmed + false positives"
	mfill=$(metric filter_fill_ratio)
	in_range "$mfill" "$fill_lo" "$fill_hi" && rc_ok "$layout: metrics fill $mfill" ||
	    rc_fail "$layout: metrics fill ratio $mfill not in ($fill_lo, $fill_hi)"
	mfp=$(metric filter_estimated_fp_ratio)
	if [ "$layout" = fuse ]; then
		in_range "$mfp" "$(awk -v e="$pe" 'BEGIN { print e * 0.999 }')" \
		    "$(awk -v e="$pe" 'BEGIN { print e * 1.001 }')" &&
		    rc_ok "$tag: metrics estimated FP $mfp = 2^-$w" ||
		    rc_fail "$tag: metrics estimated FP $mfp is not 2^-$w"
	else
		in_range "$mfp" 0.001 0.03 && rc_ok "$layout: metrics estimated FP $mfp" ||
		    rc_fail "$layout: metrics estimated FP $mfp not near 0.01"
	fi
	ofp=$(metric observed_fp_ratio)
	# Above 0 where some false positives are expected, below the count
	# bound above (3x the rate, plus 5) over the never-revoked items.
	in_range "$ofp" "$([ "$fplo" = 1 ] && echo 0 || echo -1)" \
	    "$(awk -v n="$NCLEAN" -v h="$fphi" 'BEGIN { print h / n }')" &&
	    rc_ok "$tag: observed FP $ofp" ||
	    rc_fail "$layout: observed FP rate $ofp"

	# An edge node syncs the same bytes from the origin and, having no
	# table, sends its positives there: same answers, and exactly the
	# same false positives as the origin's filter.
	rc_curl "$D_URL/v1/status"
	sha=$(rc_json filter.sha256)
	mkdir -p "$T/edge-$tag"
	rc_start E --trusted-key "$T/key.pub" --state-dir "$T/edge-$tag" \
	    --sync-interval 1 --poll-interval 1 \
	    --upstream-insecure-http --upstream-filter "$D_URL/v1/filter" --upstream-check "$D_URL/v1/check"
	rc_wait_version "$E_URL" 1 30 || rc_fail "$layout: edge did not sync version 1"
	rc_curl "$E_URL/v1/status"
	rc_expect_json service.mode edge "$layout: edge mode"
	rc_expect_json filter.layout "$layout" "$layout: edge serves the layout"
	rc_expect_json filter.sha256 "$sha" "$layout: edge serves the origin's bytes"
	rc_expect_json filter.authority upstream "$layout: edge authority upstream"
	rc_curl -H 'Content-Type: application/json' --data-binary "@$T/rev-edge.json" \
	    "$E_URL/v1/check"
	rc_expect_status 200 "$layout: edge batch of revoked items"
	if out=$(answers revoked); then
		read -r n auth <<<"$out"
		rc_expect_eq "$n:$auth" "$NREVEDGE:$NREVEDGE" \
		    "$layout: edge: all $NREVEDGE revoked items revoked, by the origin"
	else
		rc_fail "$layout: edge: a revoked item did not answer revoked"
	fi
	rc_curl -H 'Content-Type: application/json' --data-binary "@$T/clean.json" \
	    "$E_URL/v1/check"
	rc_expect_status 200 "$layout: edge batch of never-revoked items"
	if out=$(answers not_revoked); then
		read -r n efp <<<"$out"
		rc_expect_eq "$n:$efp" "$NCLEAN:${nfp:-?}" \
		    "$layout: edge: all not_revoked, the origin's $nfp false positives settled upstream"
	else
		rc_fail "$layout: edge: a never-revoked item did not answer not_revoked"
	fi
	rc_stop E || rc_fail "$layout: edge did not exit 0 on SIGTERM"

	rc_stop D || rc_fail "$layout: revcheckd did not exit 0 on SIGTERM"
done

rc_done
