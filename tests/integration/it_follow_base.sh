#!/usr/bin/env bash
# it_follow_base.sh - a follow directory always has a servable base; /v1/filter never sends an expired one (real PostgreSQL)
#
# Heads keep a delta chain fresh long after its base expired, but a node
# that starts fetches the base first and refuses an expired one. So the
# follower re-bases before the base expires (whatever --rebase-every
# says), and an edge started after the first base's validity comes up and
# answers. An origin whose chain outlives its base (here made with two
# `follow --once` runs) answers /v1/filter 503 filter_stale, never 200
# with an expired base.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pg.sh"

VF=20	# --valid-for, seconds; the head interval is 4 s: margin 5 s
FOPTS=(--interval 300ms --valid-for "${VF}s" --head-every 4s --rebase-every never)
F=$T/filters	# followed continuously
G=$T/frozen	# two --once runs: the second re-signs the head only
"$FILTERBUILD" keygen --out "$T/key.pem" --pub "$T/key.pub" >/dev/null
rc_pg_start
psql -X -q -v ON_ERROR_STOP=1 -f "$RC_SRC/config/postgresql-schema.sql" "$PG_URL"
rc_psql -c "INSERT INTO revcheck_revocations (id) VALUES ('a')"

follow_once() {
	"$FILTERBUILD" follow --source "$PG_URL" --key "$T/key.pem" --out "$G" \
	    "${FOPTS[@]}" --once >>"$T/follow-once.log" 2>&1
}
version() { readlink "$1/current" | sed 's/^v0*//'; }
# base_expired FILE T: "true" when the filter file had expired at Unix
# time T, the second the request for it was sent (asking inspect for
# "now" instead races a base that expires while it is fetched and read).
base_expired() {
	"$FILTERBUILD" inspect --json "$1" | python3 -c '
import calendar, json, sys, time
e = calendar.timegm(time.strptime(json.load(sys.stdin)["expires_at"], "%Y-%m-%dT%H:%M:%SZ"))
print(str(e <= int(sys.argv[1])).lower())' "$2"
}

t0=$(date +%s)
follow_once || rc_fail "follow --once publishes a base"
rc_follow_start "$F" "${FOPTS[@]}"
for _ in $(seq 1 300); do [ -e "$F/current/delta/head.rcd" ] && break; sleep 0.1; done
v1=$(version "$F")
g1=$(version "$G")
mkdir -p "$T/s1" "$T/s2"
rc_start O --filter-dir "$F" --trusted-key "$T/key.pub" --state-dir "$T/s1"
rc_start P --filter-dir "$G" --trusted-key "$T/key.pub" --state-dir "$T/s2"
rc_wait_ready "$O_URL" 30 || rc_fail "the origin on the followed directory is ready"
rc_wait_ready "$P_URL" 30 || rc_fail "the origin on the frozen directory is ready"

# Half-way through the base's validity the second run only re-signs the
# head (the base has more than the margin left): the chain of G now
# outlives its base by about ten seconds.
sleep $((t0 + VF / 2 - $(date +%s)))	# the time in the base's validity is the test
rc_curl "$P_URL/v1/status"
pexp=$(rc_json filter.expires_at)
follow_once || rc_fail "follow --once re-signs the head"
rc_expect_eq "$(version "$G")" "$g1" "a base with time left is kept"
# Until the frozen origin serves the new head (its expires_at moves on).
for _ in $(seq 1 150); do
	rc_curl "$P_URL/v1/status"
	[ "$(rc_json filter.expires_at)" != "$pexp" ] && break
	sleep 0.2
done
rc_expect_match "$(rc_json filter.expires_at)" '^20' "the frozen origin loaded the re-signed head"
[ "$(rc_json filter.expires_at)" != "$pexp" ] || rc_fail "the frozen origin did not load the re-signed head"

# Until the first base's validity is over, and a little after: every 200
# from /v1/filter carries a base that is not expired.
bad=0 n200=0
while [ "$(date +%s)" -lt $((t0 + VF + 4)) ]; do
	sent=$(date +%s)
	code=$(curl -s -o "$T/got.rcf" -w '%{http_code}' "$O_URL/v1/filter")
	if [ "$code" = 200 ]; then
		n200=$((n200 + 1))
		[ "$(base_expired "$T/got.rcf" "$sent")" = false ] || bad=$((bad + 1))
	fi
	sent=$(date +%s)
	code=$(curl -s -o "$T/got2.rcf" -w '%{http_code}' "$P_URL/v1/filter")
	if [ "$code" = 200 ] && [ "$(base_expired "$T/got2.rcf" "$sent")" != false ]; then
		bad=$((bad + 1))
	fi
	sleep 0.5
done
rc_expect_eq "$bad" 0 "/v1/filter never answers 200 with an expired base"
[ "$n200" -gt 0 ] || rc_fail "the followed origin served its base"

# The frozen origin: the base expired, the head is fresh. Its head
# outlives the base by about ten seconds; on a machine so loaded that the
# loop above overran that, there is nothing left to look at.
rc_curl "$P_URL/v1/status"
if [ "$(rc_json filter.expires_in_seconds)" -ge 3 ]; then
	rc_expect_json filter.stale false "the frozen chain is still fresh"
	rc_curl "$P_URL/v1/filter"
	rc_expect_status 503 "/v1/filter with an expired base and a fresh chain"
	rc_expect_json error filter_stale
	rc_expect_match "$(rc_json message)" "base filter has expired" \
	    "the message says the base expired"
else
	echo "# the frozen head expired before it was looked at (a slow machine)" >&2
fi

# The follower re-based before its first base expired.
v2=$(version "$F")
[ "$v2" -gt "$v1" ] && rc_ok "the follower re-based before expiry ($v1 -> $v2)" ||
    rc_fail "the follower re-based before expiry: still $v1"
grep -q "re-based: version $v2" "$T/follow.log" ||
    rc_fail "the re-base is logged"
rc_wait_version "$O_URL" "$v2" || rc_fail "the origin serves the new base"
rc_curl "$O_URL/v1/filter"
rc_expect_status 200 "/v1/filter of the re-based directory"
ma=$(rc_header Cache-Control | sed -n 's/.*max-age=\([0-9]*\).*/\1/p')
[ -n "$ma" ] && [ "$ma" -gt 0 ] && [ "$ma" -le "$VF" ] &&
    rc_ok "Cache-Control max-age ($ma) is within the base's validity" ||
    rc_fail "Cache-Control max-age: '$(rc_header Cache-Control)'"

# An edge that starts now, after the first base's validity, comes up and
# answers.
mkdir -p "$T/edge"
rc_start E --upstream-filter "$O_URL/v1/filter" --upstream-check "$O_URL/v1/check" \
    --upstream-insecure-http --trusted-key "$T/key.pub" --state-dir "$T/edge" \
    --sync-interval 1
rc_wait_ready "$E_URL" 30 && rc_ok "an edge started after the first base expired is ready" ||
    rc_fail "an edge started after the first base expired is ready: $(grep -E 'refus|stale' "$T/E.log" | tail -n 2)"
rc_curl "$E_URL/v1/check?id=zz-not-there"
rc_expect_json status not_revoked "the edge answers a negative"
rc_curl "$E_URL/v1/check?id=a"
rc_expect_json status revoked "the edge answers a revoked id"

rc_done
