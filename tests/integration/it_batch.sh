#!/usr/bin/env bash
# it_batch.sh - a batch read in place answers byte for byte what the cJSON path answers, counts included
#
# POST /v1/check bodies of the common shape ({"items":[{"id","scope"?}...]})
# are read in place (svc/batch.c) and decided a chunk at a time through
# bloom_query_many; every other body goes through cJSON as before. Each
# body here is sent twice: as is (the fast path) and with one character
# of one id written as a JSON escape, the same JSON value, which only
# the cJSON path takes. The answers and the counters they move must be
# identical: revoked ids with their reason and time, absent ids, scopes
# the filter does not cover, X.509 serials in every spelling, ids and
# scopes the key rules refuse, characters the answer escapes, more than
# one chunk, the batch limit.
. "$(dirname "$0")/lib.sh"

FB() { "$FILTERBUILD" "$@"; }
SC=x509:$(printf '%064d' 7)
FB keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
cat >"$T/ids.json" <<EOF
[{"id": "tok-rev-1", "reason": "keyCompromise", "revoked_at": "2026-01-02T03:04:05Z"},
 {"id": "tok-rev-2"},
 {"id": "a<b>&c", "reason": "superseded"},
 {"id": "s-rev", "scope": "tenant-a"},
 {"id": "0a1b", "scope": "$SC", "reason": "cACompromise"}]
EOF
mkdir -p "$T/f" "$T/s"
FB build --key "$T/key.pem" --out "$T/f" --quiet "$T/ids.json"
rc_start R --filter-dir "$T/f" --trusted-key "$T/key.pub" --state-dir "$T/s" \
    --max-batch 200 || { rc_fail "revcheckd did not start"; rc_done; exit 1; }
rc_wait_ready "$R_URL" 20 || rc_fail "not ready"

# body NAME: writes $T/NAME.fast (the items below) and $T/NAME.slow (the
# same with the first "-" of an id written as \u002d).
body() {
	python3 - "$T/$1" "$2" <<'PY'
import json, sys
items = json.loads(sys.argv[2])
fast = json.dumps({"items": items}, separators=(",", ":"), ensure_ascii=True)
# The shape svc/batch.c reads in place (test_batch): only id and scope,
# printable ASCII, no escapes.
assert all(set(it) <= {"id", "scope"} and "id" in it for it in items)
assert "\\" not in fast and all(0x20 <= ord(c) <= 0x7e for c in fast), "not the fast shape"
open(sys.argv[1] + ".fast", "w").write(fast)
i = fast.index('"id":"') + 6
j = fast.index("-", i)
assert j < fast.index('"', i), "the first id needs a '-'"
open(sys.argv[1] + ".slow", "w").write(fast[:j] + "\\u002d" + fast[j + 1:])
PY
}

counters() {	# the check counters of /metrics, one per line
	curl -s "$R_URL/metrics" | grep -E '^revcheckd_(checks|filter_negative|fallthrough|confirmed_revoked|false_positive|not_covered|bad_items)_total ' || true
}

# same NAME WHAT: both bodies answer the same, and move the counters alike.
same() {
	local c0 c1 c2
	c0=$(counters)
	curl -s -D "$T/$1.fast.h" -o "$T/$1.fast.out" -H 'Content-Type: application/json' \
	    --data-binary "@$T/$1.fast" "$R_URL/v1/check"
	c1=$(counters)
	curl -s -D "$T/$1.slow.h" -o "$T/$1.slow.out" -H 'Content-Type: application/json' \
	    --data-binary "@$T/$1.slow" "$R_URL/v1/check"
	c2=$(counters)
	if cmp -s "$T/$1.fast.out" "$T/$1.slow.out"; then
		rc_ok "$2: the same answer"
	else
		rc_fail "$2: answers differ: $(head -c 300 "$T/$1.fast.out") // $(head -c 300 "$T/$1.slow.out")"
	fi
	rc_expect_eq "$(head -n 1 "$T/$1.fast.h" | tr -d '\r')" "$(head -n 1 "$T/$1.slow.h" | tr -d '\r')" "$2: the same status"
	# Counter deltas: (c1 - c0) must equal (c2 - c1).
	d=$(python3 - "$c0" "$c1" "$c2" <<'PY'
import sys
def p(t): return {l.split()[0]: int(l.split()[1]) for l in t.splitlines() if l.strip()}
a, b, c = (p(x) for x in sys.argv[1:4])
print("same" if all(b.get(k, 0) - a.get(k, 0) == c.get(k, 0) - b.get(k, 0) for k in set(a) | set(b) | set(c)) else "differ: %r %r %r" % (a, b, c))
PY
)
	rc_expect_eq "$d" same "$2: the same counts"
}

body mixed '[{"id":"tok-rev-1"},{"id":"tok-absent"},{"id":"a<b>&c"},{"id":"s-rev","scope":"tenant-a"},
  {"scope":"tenant-a","id":"tok-rev-1"},{"id":"x","scope":"nowhere"},
  {"id":"0A1B","scope":"'"$SC"'"},{"id":"0x0a:1b","scope":"'"$SC"'"},{"id":"-0a1b","scope":"'"$SC"'"},
  {"id":"00","scope":"'"$SC"'"},{"id":"zz","scope":"'"$SC"'"},{"id":""},{"id":"tok-rev-2"},
  {"id":"a","scope":"bad scope"},{"id":"a","scope":"x509:12"},{"id":"tok-rev-2"},
  {"id":"'"$(printf 'i%.0s' $(seq 1 1025))"'"},{"id":"'"$(printf 'i%.0s' $(seq 1 1024))"'"},
  {"id":"a","scope":"'"$(printf 's%.0s' $(seq 1 256))"'"}]'
same mixed "19 items of every kind"
rc_expect_match "$(cat "$T/mixed.fast.out")" '"status":"revoked","source":"authoritative","scope":"default","id":"tok-rev-1"' "a revoked id answers revoked"
rc_expect_match "$(cat "$T/mixed.fast.out")" '"reason":"keyCompromise"' "with its reason"
rc_expect_match "$(cat "$T/mixed.fast.out")" '"id":"a\\u003cb\\u003e\\u0026c"|"id":"a<b>&c"' "an id the answer escapes"
rc_expect_match "$(cat "$T/mixed.fast.out")" '"status":"not_covered"' "an uncovered scope"
rc_expect_match "$(cat "$T/mixed.fast.out")" '"error":"bad_request"' "refused ids answer in their slot"
n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["results"]))' "$T/mixed.fast.out")
rc_expect_eq "$n" 19 "one answer per item"

# More than one chunk (32 and 64 keys), revoked ones among them.
body many "$(python3 -c 'import json; print(json.dumps([{"id": "tok-%s-%d" % ("rev" if i % 37 == 1 else "ok", i % 3 if i % 37 == 1 else i)} for i in range(200)]))')"
same many "200 items, the batch limit"
rc_expect_match "$(cat "$T/many.fast.out")" '"status":"revoked"' "positives among 200"
body over "$(python3 -c 'import json; print(json.dumps([{"id": "tok-%d" % i} for i in range(201)]))')"
same over "201 items, over the limit"
rc_expect_match "$(head -n 1 "$T/over.fast.h")" ' 413' "over the limit: 413"
body one '[{"id":"tok-rev-1","scope":"default"}]'
same one "one item"
rc_done
