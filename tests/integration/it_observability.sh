#!/usr/bin/env bash
# it_observability.sh - /metrics that alerts: promtool-clean output, histograms, build info, expiry, CRL times, FP target, alert rules, dashboard
#
# A real origin (filter from tests/pki.sh's CA and CRL) and a real edge
# answer a known number of checks; then:
# - `promtool check metrics` is clean on both nodes' /metrics;
# - the request histogram counts exactly the checks made, the authority
#   histogram counts the edge's calls to the origin;
# - revcheckd_build_info (version and source revision), Prometheus'
#   standard process_* metrics, ratio gauges named _ratio;
# - the filter's expiry and issue times, each CRL
#   scope's thisUpdate/nextUpdate and the FP target equal /v1/status;
# - a refused load is counted under the same word (refused) in both;
# - config/revcheckd-alerts.yml passes `promtool check rules` and
#   `promtool test rules tests/promtool/revcheckd-alerts.test.yml`;
# - config/grafana/revcheckd-dashboard.json parses and every metric it
#   (or an alert rule) names is one the two nodes export;
# - /v1/status has exactly the documented members on both nodes.
. "$(dirname "$0")/lib.sh"

command -v promtool >/dev/null || { rc_fail "promtool is missing (Debian package prometheus; make deps)"; rc_done; exit 1; }

FB() { "$FILTERBUILD" "$@"; }
bash "$RC_SRC/tests/pki.sh" "$T/pki" >/dev/null 2>&1
FB keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
FB keygen --out "$T/evil.pem" --pub "$T/evil.pub" >/dev/null
printf 'tok-rev-1\n' >"$T/tokens.txt"
F=$T/filters
mkdir -p "$F" "$T/so" "$T/se"
FB build --key "$T/key.pem" --out "$F" --valid-for 1h --fp-rate 0.01 --issuer "$T/pki/ca.pem" \
    --quiet "$T/tokens.txt" "$T/pki/crl.pem"

rc_start O --filter-dir "$F" --trusted-key "$T/key.pub" --state-dir "$T/so" --poll-interval 1
rc_wait_version "$O_URL" 1 || rc_fail "origin did not load version 1"
rc_start E --trusted-key "$T/key.pub" --state-dir "$T/se" --sync-interval 1 \
    --upstream-filter "$O_URL/v1/filter" --upstream-check "$O_URL/v1/check" --upstream-insecure-http
rc_wait_version "$E_URL" 1 || rc_fail "edge did not sync version 1"

# Exactly 5 checks on the origin; 2 positives on the edge, each an
# authority call to the origin's /v1/check.
for i in 1 2 3 4; do curl -s -o /dev/null "$O_URL/v1/check?id=tok-clean-$i"; done
curl -s -o /dev/null "$O_URL/v1/check?id=tok-rev-1"
curl -s -o /dev/null "$E_URL/v1/check?id=tok-rev-1"
curl -s -o /dev/null "$E_URL/v1/check?id=tok-rev-1"

# A refused load: a filter signed by an untrusted key.
FB build --key "$T/evil.pem" --out "$F" --valid-for 1h --issuer "$T/pki/ca.pem" \
    --quiet --allow-shrink "$T/tokens.txt" "$T/pki/crl.pem" 2>/dev/null
rc_wait_log "$T/so/audit.log" '"result":"refused"' || rc_fail "the untrusted filter was not refused"

curl -s "$O_URL/metrics" >"$T/o.prom"
curl -s "$E_URL/metrics" >"$T/e.prom"
curl -s "$O_URL/v1/status" >"$T/o.json"
curl -s "$E_URL/v1/status" >"$T/e.json"

# ---------------------------------------------------------------- promtool check metrics
for n in o e; do
	out=$(promtool check metrics <"$T/$n.prom" 2>&1) && rc=0 || rc=$?
	rc_expect_eq "$rc:$out" "0:" "promtool check metrics is clean on the $n node"
done

# ---------------------------------------------------------------- values against /v1/status
head=$(git -C "$RC_SRC" rev-parse HEAD 2>/dev/null || echo unknown)
python3 - "$T/o.prom" "$T/e.prom" "$T/o.json" "$("$REVCHECKD" --version)" "$head" >"$T/values.out" 2>&1 <<'PY' &&
import json, re, sys, calendar, time
def parse(path):
    out = {}
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$', line.strip())
        assert m, f"unparsable line {line!r}"
        out[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return out
o, e = parse(sys.argv[1]), parse(sys.argv[2])
st = json.load(open(sys.argv[3]))
ver = sys.argv[4].split()[1]
def ts(s):
    return calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ"))
def eq(got, want, what):
    assert got == want, f"{what}: got {got}, want {want}"
f = st["filter"]
# The origin's /v1/check also answers the edge's authority calls.
auth = e['revcheckd_authority_request_duration_seconds_count']
assert auth >= 2, f"edge authority histogram: {auth}"
eq(o['revcheckd_http_request_duration_seconds_count{endpoint="check"}'], 5 + auth, "check histogram count")
eq(o['revcheckd_http_request_duration_seconds_bucket{endpoint="check",le="+Inf"}'], 5 + auth, "check +Inf bucket")
b = [v for k, v in o.items() if k.startswith('revcheckd_http_request_duration_seconds_bucket{endpoint="check"')]
assert b == sorted(b), f"buckets not cumulative: {b}"
assert o['revcheckd_http_request_duration_seconds_sum{endpoint="check"}'] > 0, "check histogram sum"
eq(o['revcheckd_authority_request_duration_seconds_count'], 0, "origin makes no authority calls")
bi = [k for k in o if k.startswith(f'revcheckd_build_info{{version="{ver}",revision="')]
assert len(bi) == 1 and o[bi[0]] == 1, f"build_info: {bi}"
rev = re.search(r'revision="([^"]*)"', bi[0]).group(1)
assert re.fullmatch(r'[0-9a-f]{7,40}(-dirty)?|unknown', rev), f"revision {rev!r}"
if sys.argv[5] != "unknown":
    assert sys.argv[5].startswith(rev.split("-")[0]), f"revision {rev} is not HEAD {sys.argv[5]}"
# Prometheus' standard process metrics, with values that can be true.
for m in ("process_cpu_seconds_total", "process_resident_memory_bytes",
        "process_virtual_memory_bytes", "process_open_fds", "process_max_fds",
        "process_start_time_seconds"):
    assert m in o and m in e, f"{m} missing"
assert 1 << 20 < o["process_resident_memory_bytes"] < o["process_virtual_memory_bytes"], "memory"
assert 3 <= o["process_open_fds"] <= o["process_max_fds"], "fds"
assert time.time() - 3600 < o["process_start_time_seconds"] <= time.time() + 1, "start time"
assert 0 <= o["process_cpu_seconds_total"] < 3600, "cpu"
# Ratios are named _ratio (Prometheus' convention), never _rate.
for p in sys.argv[1:3]:
    bad = re.findall(r'^# TYPE (\S*_rate\S*) ', open(p).read(), re.M)
    assert not bad, f"ratio gauges not named _ratio: {bad}"
assert 0 < o["revcheckd_filter_estimated_fp_ratio"] < 1, "estimated FP ratio"
assert "revcheckd_observed_fp_ratio" in o, "observed FP ratio"
eq(o['revcheckd_filter_expires_timestamp_seconds'], ts(f["expires_at"]), "expires")
eq(o['revcheckd_filter_issued_timestamp_seconds'], ts(f["issued_at"]), "issued")
eq(o['revcheckd_filter_fp_target_ratio'], f["fp_rate_target"], "fp target")
eq(f["fp_rate_target"], 0.01, "the --fp-rate given")
crl = [s for s in f["scopes"] if s["source"] == "crl"]
assert len(crl) == 1, crl
sc = crl[0]
lab = '{scope="%s",issuer="%s"}' % (sc["scope"], sc["issuer"])
eq(o['revcheckd_crl_this_update_timestamp_seconds' + lab], ts(sc["this_update"]), "CRL thisUpdate")
eq(o['revcheckd_crl_next_update_timestamp_seconds' + lab], ts(sc["next_update"]), "CRL nextUpdate")
assert st["reloads"]["refused"] >= 1, "a refused load in /v1/status"
assert "rejected" not in st["reloads"], "/v1/status still says rejected"
eq(o['revcheckd_reloads_total{result="refused"}'], st["reloads"]["refused"], "refused: /metrics = /v1/status")
PY
	rc_ok "histograms, build info and revision, process_* metrics, _ratio names, expiry, CRL times, FP target and refusals match /v1/status" ||
	rc_fail "metric values: $(cat "$T/values.out")"

# ---------------------------------------------------------------- /v1/status: the document's shape
# Exactly these members, the top level in this order, on an origin (a
# list and a CRL scope) and on an edge (plus sync and authority): the
# document docs/API.md describes, whoever assembles it.
python3 - "$T/o.json" "$T/e.json" >"$T/keys.out" 2>&1 <<'PY' &&
import json, sys
def paths(v, p, out):
    if isinstance(v, dict):
        for k, x in v.items():
            paths(x, f"{p}.{k}" if p else k, out)
    elif isinstance(v, list):
        out.add(p + "[]")
        for x in v:
            paths(x, p + "[]", out)
    else:
        out.add(p)
    return out
def words(prefix, names):
    return {f"{prefix}.{n}" for n in names.split()}
common = (words("service", "version mode started_at uptime_seconds now now_unix") |
    words("filter", "version issued_at expires_at age_seconds expires_in_seconds "
        "stale stale_reason loaded_at keys bits hashes layout fp_rate_target "
        "fill_ratio estimated_fp_rate signer sha256 table_sha256 authority scopes[]") |
    words("filter.delta", "seq overlay_keys overlay_bytes last_delta_at "
        "last_delta_age_seconds revocation_lag_seconds") |
    words("filter.scopes[]", "scope keys source issuer crl_number this_update "
        "next_update crl_sha256 crl_verified next_update_assumed coverage[]") |
    words("counters", "checks confirmed_revoked false_positive filter_negative "
        "fallthrough not_covered authority_behind authority_unavailable "
        "refused_stale refused_no_filter bad_items slow_dropped "
        "body_memory_refused observed_fp_rate exact.not_revoked exact.revoked "
        "exact.unproven") |
    words("reloads", "accepted refused highest_version") |
    words("reloads.last", "time event result version signer sha256 source reason") |
    words("config", "generation applied_at file restart_pending last_reload") |
    words("token_verification", "mode issuers[] cache.size cache.hits cache.misses"))
edge = (common | words("sync", "upstream_filter interval_seconds max_download "
        "max_lag_seconds last_attempt last_success result error "
        "upstream_version_seen newer_version_seen_at delta_seq_seen "
        "newer_delta_seen_at etag attempts failures "
        "consecutive_failures updates delta_fetches delta_bytes delta_error "
        "bytes mode upstream_wait_seconds persisted insecure_http") |
    words("authority", "url answered failed behind retries requests waiting "
        "refused_busy probes degraded last_error"))
top = ["service", "filter", "counters", "reloads", "disk_mismatch", "config",
    "token_verification"]
bad = []
# The origin's current pair was refused above: the one in service is not on disk.
origin = (common | {"source_quarantine"} |	# null: no quarantine.json
    words("disk_mismatch", "since served_version served_sha256 found"))
edge = edge | {"disk_mismatch"}	# null: no filter dir
for f, want, order in ((sys.argv[1], origin, top + ["source_quarantine"]),
        (sys.argv[2], edge, top + ["sync", "authority"])):
    st = json.load(open(f))
    got = paths(st, "", set())
    if got != want:
        bad.append(f"{f}: extra {sorted(got - want)} missing {sorted(want - got)}")
    if list(st) != order:
        bad.append(f"{f}: top-level order {list(st)}")
assert not bad, "; ".join(bad)
PY
	rc_ok "/v1/status has exactly the documented members on an origin and an edge" ||
	rc_fail "/v1/status members: $(cat "$T/keys.out")"

# ---------------------------------------------------------------- alert rules
out=$(promtool check rules "$RC_SRC/config/revcheckd-alerts.yml" 2>&1) &&
    rc_ok "promtool check rules" || rc_fail "promtool check rules: $out"
out=$(cd "$RC_SRC/tests/promtool" && promtool test rules revcheckd-alerts.test.yml 2>&1) &&
    rc_ok "promtool test rules: every alert fires where it should and only there" ||
    rc_fail "promtool test rules: $out"
# Every alert of the file, and each way the issue lists that it degrades.
alerts=$(sed -n 's/^ *- alert: *//p' "$RC_SRC/config/revcheckd-alerts.yml")
for a in RevcheckFilterRefused RevcheckDeltaRefused RevcheckJwksRefreshFailing RevcheckTargetDown \
    RevcheckFollowerStuck RevcheckSourceRowsQuarantined RevcheckEdgeDegraded RevcheckEdgeBehind \
    RevcheckFilterStaleSoon RevcheckFalsePositivesAboveTarget; do
	grep -qx "$a" <<<"$alerts" || rc_fail "no alert $a in config/revcheckd-alerts.yml"
done
for a in $alerts; do
	grep -q "alertname: $a\$" "$RC_SRC/tests/promtool/revcheckd-alerts.test.yml" &&
	    rc_ok "$a has a promtool test" || rc_fail "$a has no promtool test"
done

# ---------------------------------------------------------------- dashboard and rules name real metrics
python3 - "$RC_SRC/config/grafana/revcheckd-dashboard.json" "$RC_SRC/config/revcheckd-alerts.yml" \
    "$T/o.prom" "$T/e.prom" >"$T/dash.out" 2>&1 <<'PY' &&
import json, re, sys
dash = json.load(open(sys.argv[1]))
exported = set()
for p in sys.argv[3:]:
    for line in open(p):
        m = re.match(r'^# TYPE (\S+) (\S+)', line)
        if m:
            exported.add(m.group(1))
            if m.group(2) == "histogram":
                for s in ("_bucket", "_sum", "_count"):
                    exported.add(m.group(1) + s)
# Imported as it is: no __inputs to map, every ${...} a variable it defines.
assert "__inputs" not in dash, "an unused data-source input"
variables = {v["name"] for v in dash["templating"]["list"]}
used = set(re.findall(r'\$\{(\w+)\}', json.dumps(dash)))
assert used <= variables, f"undefined variables {used - variables}"
titles = {p["title"] for p in dash["panels"]}
for t in ("Deltas", "Revocation lag", "Tokens"):
    assert t in titles, f"no {t} panel"
exprs = []
for panel in dash["panels"]:
    assert panel.get("targets"), f"panel {panel.get('title')} has no query"
    exprs += [t["expr"] for t in panel["targets"]]
rules = open(sys.argv[2]).read()
exprs += re.findall(r'^\s*expr:\s*(.+)$', rules, re.M)
names = set()
for e in exprs:
    names |= set(re.findall(r'\brevcheckd_[a-z0-9_]+', e))
assert len(names) >= 15, f"only {len(names)} metrics referenced"
missing = sorted(names - exported)
assert not missing, f"not exported by revcheckd: {missing}"
print(len(names))
PY
	rc_ok "the dashboard parses; it and the alert rules name only exported metrics ($(cat "$T/dash.out"))" ||
	rc_fail "dashboard/rules: $(cat "$T/dash.out")"

# ---------------------------------------------------------------- probes are not refused checks
# A load balancer polling /readyz of an unready node must not make
# revcheckd_refused_*_total grow: they count checks clients did not get
# answered. A refused check still counts.
counter() { curl -s "$1/metrics" | sed -n "s/^revcheckd_$2_total \([0-9]*\)\$/\1/p"; }
G=$T/short
mkdir -p "$G" "$T/sp" "$T/sq" "$T/empty"
FB build --key "$T/key.pem" --out "$G" --valid-for 2s --quiet "$T/tokens.txt"
rc_start P --filter-dir "$G" --trusted-key "$T/key.pub" --state-dir "$T/sp"
rc_start Q --filter-dir "$T/empty" --trusted-key "$T/key.pub" --state-dir "$T/sq"
for _ in $(seq 1 300); do
	[ "$(curl -s -o /dev/null -w '%{http_code}' "$P_URL/readyz")" = 503 ] && break
	sleep 0.1
done
rc_curl "$P_URL/readyz"
rc_expect_json error filter_stale "the expired node's /readyz is 503 filter_stale"
for n in P Q; do
	url=$(eval "echo \$${n}_URL")
	s0=$(counter "$url" refused_stale) n0=$(counter "$url" refused_no_filter)
	for _ in $(seq 1 10); do curl -s -o /dev/null "$url/readyz"; done
	rc_expect_eq "$(counter "$url" refused_stale):$(counter "$url" refused_no_filter)" \
	    "$s0:$n0" "$n: ten 503 /readyz probes leave the refusal counters unchanged"
	curl -s -o /dev/null "$url/v1/check?id=tok-rev-1"
	if [ $n = P ]; then
		rc_expect_eq "$(counter "$url" refused_stale)" $((s0 + 1)) \
		    "$n: a refused check counts in refused_stale"
	else
		rc_expect_eq "$(counter "$url" refused_no_filter)" $((n0 + 1)) \
		    "$n: a refused check counts in refused_no_filter"
	fi
done

rc_done
