#!/usr/bin/env bash
# it_hostile.sh - table-driven hostile HTTP: malformed and abusive requests get their exact status
#
# Every case of tests/integration/hostile.tsv is sent over a raw socket
# (rawhttp.py table) to a real revcheckd, once with its fast path and once
# without; each must get exactly its status (and JSON error code). Afterwards /healthz still answers, SIGTERM
# exits 0, and the daemon's stderr holds no sanitizer report (under
# SANITIZE=address,undefined LSan reports leaks at exit). Cases marked
# WANT!KNOWN in the table are reported daemon bugs: tolerated, listed.
. "$(dirname "$0")/lib.sh"

D=$(cd "$(dirname "$0")" && pwd)
SAN_RE='ERROR: (Address|Leak)Sanitizer|runtime error:|ThreadSanitizer|SUMMARY: (Address|Undefined)'

"$FILTERBUILD" keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
printf 'tok-1\ntok-2\ntok-3\n' >"$T/tokens.txt"
"$FILTERBUILD" build --key "$T/key.pem" --out "$T/f" --quiet "$T/tokens.txt"
mkdir -p "$T/state"

# A real certificate, a private key and a CSR (PEMs that are no certificate).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$T/leaf.key" -out "$T/leaf.pem" -subj /CN=hostile -days 2 2>/dev/null
openssl req -new -key "$T/leaf.key" -out "$T/leaf.csr" -subj /CN=hostile 2>/dev/null
python3 - "$T" <<'PY'
import base64, json, sys, urllib.parse
t = sys.argv[1]
def b64(s): return base64.urlsafe_b64encode(s.encode()).decode().rstrip("=")
def jwt(p): return b64('{"alg":"none"}') + "." + b64(p) + "." + b64("sig")
def jstr(f): return json.dumps(open(f).read())[1:-1]
# One PEM block holding the leaf's DER twice: the second goes unread.
der = base64.b64decode("".join(l for l in open(t + "/leaf.pem").read().splitlines() if not l.startswith("-----")))
two = "-----BEGIN CERTIFICATE-----\n" + base64.encodebytes(der + der).decode() + "-----END CERTIFICATE-----\n"
v = {"CERTJ": jstr(t + "/leaf.pem"), "KEYJ": jstr(t + "/leaf.key"),
     "CSRJ": jstr(t + "/leaf.csr"),
     "KEYURL": urllib.parse.quote(open(t + "/leaf.key").read(), safe=""),
     "TWODERJ": json.dumps(two)[1:-1], "TWODERURL": urllib.parse.quote(two, safe=""),
     "JWT_OK": jwt('{"jti":"tok-1"}'), "JWT_NOJTI": jwt('{"sub":"x"}'),
     "JWT_NUMJTI": jwt('{"jti":5}'), "JWT_EMPTYJTI": jwt('{"jti":""}'),
     "JWT_BADISS": jwt('{"jti":"a","iss":"has space"}')}
with open(t + "/vars", "w") as out:
    for k, x in v.items():
        open("%s/var.%s" % (t, k), "w").write(x)
        out.write("%s=@%s/var.%s\n" % (k, t, k))
PY
mapfile -t VARS <"$T/vars"

# The fast path (on by default) and libmicrohttpd alone must give every
# case the same answer: the table runs against both.
for path in fast mhd; do
	if [ "$path" = fast ]; then N=H; extra=(); else N=M; extra=(--fast-path=false); fi
	mkdir -p "$T/state-$N"
	rc_start "$N" --filter-dir "$T/f" --trusted-key "$T/key.pub" --state-dir "$T/state-$N" \
	    --max-body 65536 --max-batch 5 --conn-timeout 5 "${extra[@]}" \
	    --token-verification revocation-only	# unsigned tokens in hostile.tsv
	url=$(eval "echo \$${N}_URL") port=$(eval "echo \$${N}_PORT") pid=$(eval "echo \$${N}_PID")
	rc_wait_ready "$url" 10 || rc_fail "the daemon ($path path) did not load its filter"

	out=$(python3 "$D/rawhttp.py" table "$port" "$D/hostile.tsv" "${VARS[@]}") && rc=0 || rc=$?
	printf '%s\n' "$out" | grep -v '^ok ' || true
	summary=$(printf '%s\n' "$out" | tail -n 1)
	rc_expect_eq "$rc" 0 "$path path: every hostile request got its exact status ($summary)"
	ncases=$(printf '%s\n' "$summary" | sed -n 's/^table: \([0-9]*\) cases.*/\1/p')
	[ "${ncases:-0}" -ge 60 ] && rc_ok "at least 60 cases ($ncases)" ||
	    rc_fail "the table has ${ncases:-0} cases, want at least 60"

	kill -0 "$pid" 2>/dev/null && rc_ok "the daemon ($path path) survived the table" ||
	    rc_fail "the daemon ($path path) died during the table"
	rc_curl "$url/healthz"; rc_expect_status 200 "$path path: healthz after the whole table"
	rc_curl "$url/v1/check?id=tok-1"; rc_expect_json status revoked "$path path: a check after the table"
done
rc_curl "$H_URL/metrics"
rc_expect_match "$RC_BODY" 'revcheckd_http_requests_total\{endpoint="check",code="400"\} [1-9]' \
    "400s counted in the metrics"

rc_stop H && rc_ok "SIGTERM after the table: exit 0" || rc_fail "SIGTERM after the table: non-zero exit"
rc_stop M && rc_ok "SIGTERM after the table (no fast path): exit 0" ||
    rc_fail "SIGTERM after the table (no fast path): non-zero exit"
if grep -qE "$SAN_RE" "$T/H.log" "$T/M.log"; then
	rc_fail "sanitizer report in the daemon's stderr:"
	grep -E -A12 "$SAN_RE" "$T/H.log" "$T/M.log" | head -n 40 >&2
else
	rc_ok "no sanitizer report (leaks included) in the daemon's stderr"
fi
if grep -q __asan_init "$REVCHECKD" 2>/dev/null; then
	echo "# revcheckd is built with ASan/LSan: the leak check was live"
else
	echo "# revcheckd is not sanitized: the leak check needs SANITIZE=address,undefined"
fi
rc_done
