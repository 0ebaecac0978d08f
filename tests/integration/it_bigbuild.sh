#!/usr/bin/env bash
# it_bigbuild.sh - a build above the two-thread threshold still holds every id: revcheckd answers revoked for all of them
#
# From 2^16 records filterbuild sorts and moves the records on two threads
# (tb_radix2, tb_pack: two halves with a gap between them), writes and
# hashes the table on a second thread while the filter is built
# (pair_build_publish, O_DIRECT), and the fuse layout hashes its keys in
# first-cell order (fuse_hash_keys). A record lost or a key left out on
# any of those paths would answer not_revoked without proof. 140,000 ids,
# shuffled and with duplicates, are built with the default layout (fuse)
# and with --layout blocked; for each, the pair verifies, its record count
# is the number of distinct ids, revcheckd answers revoked for every one
# of them (POST batches of 10,000) and not_revoked for 20,000 ids never
# revoked.
. "$(dirname "$0")/lib.sh"

FB() { "$FILTERBUILD" "$@"; }
N=140000
FB keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
python3 - "$T" "$N" <<'PY'
import random, sys
t, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(7)
ids = ["tok-%016x" % rnd.getrandbits(64) for _ in range(n)]
ids += ids[:5000]			# duplicates: collapsed by the build
rnd.shuffle(ids)
open(t + "/ids.txt", "w").write("\n".join(ids) + "\n")
open(t + "/distinct", "w").write("%d\n" % len(set(ids)))
PY
distinct=$(cat "$T/distinct")

# ask URL FILE WANT: POSTs the ids of FILE in batches of 10,000; prints
# how many answers were WANT and how many were not.
ask() {
	python3 - "$1" "$2" "$3" <<'PY'
import json, sys, urllib.request
url, path, want = sys.argv[1], sys.argv[2], sys.argv[3]
ids = [l for l in open(path).read().split("\n") if l]
good = bad = 0
for i in range(0, len(ids), 10000):
    body = json.dumps({"items": [{"id": x} for x in ids[i:i + 10000]]}).encode()
    req = urllib.request.Request(url + "/v1/check", data=body,
                                 headers={"Content-Type": "application/json"})
    res = json.load(urllib.request.urlopen(req, timeout=60))
    for r in res["results"]:
        if r["status"] == want:
            good += 1
        else:
            bad += 1
print(good, bad)
PY
}
python3 -c 'import random; r = random.Random(11); print("\n".join("tok-%016x" % r.getrandbits(64) for _ in range(20000)))' \
    | grep -vxFf "$T/ids.txt" >"$T/absent.txt"
nabs=$(wc -l <"$T/absent.txt")

for layout in auto blocked; do
	out=$T/f.$layout
	if ! FB build --key "$T/key.pem" --out "$out" --layout "$layout" --quiet "$T/ids.txt" 2>"$T/fb.$layout.log"; then
		rc_fail "$layout: build failed: $(tail -c 300 "$T/fb.$layout.log")"
		continue
	fi
	FB verify --pub "$T/key.pub" "$out" >"$T/verify.$layout" 2>&1 &&
	    rc_ok "$layout: the pair verifies" || rc_fail "$layout: verify: $(cat "$T/verify.$layout")"
	rc_expect_match "$(cat "$T/verify.$layout")" "$distinct keys, $distinct records" \
	    "$layout: $distinct distinct ids, as many keys and records"
	mkdir -p "$T/s.$layout"
	rc_start R --filter-dir "$out" --trusted-key "$T/key.pub" --state-dir "$T/s.$layout" ||
	    { rc_fail "$layout: revcheckd did not start"; continue; }
	rc_wait_ready "$R_URL" 30 || rc_fail "$layout: not ready"
	rc_expect_eq "$(ask "$R_URL" "$T/ids.txt" revoked)" "$((N + 5000)) 0" \
	    "$layout: every one of $((N + 5000)) ids (duplicates included) answers revoked"
	rc_expect_eq "$(ask "$R_URL" "$T/absent.txt" not_revoked)" "$nabs 0" \
	    "$layout: $nabs ids never revoked answer not_revoked"
	rc_stop R || rc_fail "$layout: revcheckd SIGTERM: non-zero exit"
done
rc_done
