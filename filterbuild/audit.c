/* audit.c - filterbuild audit: asks a fleet of revcheckd nodes for their filter state */
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>

#include "fb.h"
#include "util.h"

#define AUDIT_MAX_NODES		1024
#define AUDIT_MAX_BODY		(1024 * 1024)	/* a /v1/status reply */
#define AUDIT_URL_MAX		2048
#define AUDIT_DEFAULT_TIMEOUT	5		/* seconds per node */
#define AUDIT_DEFAULT_SKEW	10		/* seconds a node's clock may be off */
#define AUDIT_MAX_PROBLEMS	12

/* What one node said, or why it said nothing. */
struct node {
	const char	*base;		/* as given on the command line */
	char		 url[AUDIT_URL_MAX];	/* BASE/v1/status */
	bool		 reachable;
	char		 error[256];	/* why unreachable */
	char		 mode[16];
	bool		 has_filter;
	uint64_t	 version;
	char		 sha[65];	/* filter.sha256 of the base, "": none */
	int64_t		 age;
	int64_t		 expires_in;
	bool		 stale;
	char		 stale_reason[32];
	char		 sync_result[32];	/* "" on an origin */
	char		 sync_error[256];
	char		 delta_error[256];	/* sync.delta_error, "": none */
	uint64_t	 seen;		/* upstream_version_seen, 0: none */
	uint64_t	 highest;	/* reloads.highest_version */
	double		 fp_rate;
	/* The delta chain in service (filter.delta); 0 when not reported. */
	uint64_t	 delta_seq;
	/* The highest seq any audited node serves over the same base. */
	uint64_t	 delta_top;
	uint64_t	 delta_behind;
	uint64_t	 overlay_keys;
	int64_t		 delta_age;
	bool		 has_delta_age;
	int64_t		 lag;
	bool		 has_lag;
	/*
	 * The node's clock (service.now_unix) against this host's: seconds
	 * ahead (+) or behind (-) of the time the request took, 0 inside it.
	 */
	bool		 has_clock;
	int64_t		 clock_now;
	int64_t		 clock_off;
	uint64_t	 behind;
	/*
	 * Readiness, as a load balancer sees it: GET BASE/readyz (0 when
	 * it gave no HTTP answer), the reason of a 503, and the authority's
	 * degraded state from /v1/status ("" when none).
	 */
	char		 rurl[AUDIT_URL_MAX];
	long		 ready_code;
	char		 ready_reason[64];
	char		 degraded[64];
	/* /v1/status says a version it serves is gone from its disk. */
	bool		 gone;
	char		 gone_msg[200];
	const char	*problems[AUDIT_MAX_PROBLEMS];
	size_t		 nproblems;
	/* The text of the problems that carry numbers or a message. */
	char		 delta_msg[128];
	char		 delta_error_msg[300];
	char		 clock_msg[160];
	char		 ready_msg[128];
};

struct body {
	char	*p;
	size_t	 len;
	bool	 too_big;
};

static void
audit_usage(FILE *fp)
{
	fputs("usage: filterbuild audit [--json] [--max-age DUR] "
	    "[--max-lag N]\n"
	    "                        [--max-delta-lag N] [--max-skew DUR]\n"
	    "                        [--timeout DUR] URL...\n\n"
	    "Asks each revcheckd node (URL is its base, http://host:port) for\n"
	    "GET /v1/status and prints one row per node: version, delta\n"
	    "sequence, age, time until expiry, revocation lag of the last\n"
	    "delta, stale, last sync result (edges), observed false-positive\n"
	    "rate and how far the node's clock is from this host's.\n\n"
	    "  --json           one JSON document instead of the table\n"
	    "  --max-age DUR    a node whose filter is older than DUR fails\n"
	    "                   (N with s, m, h or d; default: no limit)\n"
	    "  --max-lag N      a node more than N versions behind the newest\n"
	    "                   version seen anywhere fails (default 0)\n"
	    "  --max-delta-lag N\n"
	    "                   a node more than N deltas behind another node\n"
	    "                   on the same base fails (default 0)\n"
	    "  --max-skew DUR   a node whose clock is more than DUR ahead of\n"
	    "                   or behind this host's fails (default 10s)\n"
	    "  --timeout DUR    per-node request timeout (default 5s)\n"
	    "  --help           this text\n\n"
	    "The newest version seen is the highest of every node's filter\n"
	    "version, highest accepted version and (edges) verified upstream\n"
	    "version. Nodes on the same base (version and filter sha256) are\n"
	    "compared by delta sequence: a node behind misses revocations.\n"
	    "https is verified against the system's CAs.\n"
	    "Each node's GET /readyz is asked too: a node a load balancer\n"
	    "would skip fails (\"not ready (authority_unavailable)\").\n"
	    "Exit status: 0 every node fresh, ready and up to date; 1 a node\n"
	    "is unreachable, has no filter, is stale, not ready (an edge's\n"
	    "authority unavailable or behind), too old, behind in version or\n"
	    "in deltas, serves a version no longer on its disk (disk_mismatch\n"
	    "in its status), its clock is off by more than --max-skew, or (an\n"
	    "edge) its last sync or delta sync failed; 2 usage error.\n",
	    fp);
}

static size_t
on_body(char *p, size_t size, size_t n, void *arg)
{
	struct body *b = arg;
	size_t len = size * n;
	char *np;

	if (len > AUDIT_MAX_BODY - b->len) {
		b->too_big = true;
		return 0;
	}
	if ((np = realloc(b->p, b->len + len + 1)) == NULL)
		return 0;
	b->p = np;
	memcpy(b->p + b->len, p, len);
	b->len += len;
	b->p[b->len] = '\0';
	return len;
}

static void
problem(struct node *n, const char *what)
{
	if (n->nproblems < AUDIT_MAX_PROBLEMS)
		n->problems[n->nproblems++] = what;
}

static const cJSON *
field(const cJSON *o, const char *name)
{
	return cJSON_GetObjectItemCaseSensitive(o, name);
}

/* A JSON number as an integer; def when absent or not a number. */
static int64_t
num(const cJSON *o, const char *name, int64_t def)
{
	const cJSON *v = field(o, name);

	if (!cJSON_IsNumber(v) || v->valuedouble != v->valuedouble ||
	    v->valuedouble > 9e18 || v->valuedouble < -9e18)
		return def;
	return (int64_t)v->valuedouble;
}

static uint64_t
unum(const cJSON *o, const char *name)
{
	int64_t v = num(o, name, 0);

	return v > 0 ? (uint64_t)v : 0;
}

static void
str(char *out, size_t cap, const cJSON *o, const char *name)
{
	const cJSON *v = field(o, name);

	out[0] = '\0';
	if (cJSON_IsString(v))
		snprintf(out, cap, "%s", v->valuestring);
}

/*
 * The node serves a version whose files are no longer in its filter
 * directory (served from memory, where it was verified): /v1/status
 * "disk_mismatch" is an object then ({"served_version", "found", ...}),
 * null otherwise. "served_not_on_disk" (true, or an object with
 * "version"), at the top or in "filter", says the same.
 */
static void
parse_gone(struct node *n, const cJSON *root, const cJSON *f)
{
	const cJSON *g = field(root, "disk_mismatch");
	char found[120] = "";

	if (cJSON_IsObject(g)) {
		n->gone = true;
		str(found, sizeof(found), g, "found");
		snprintf(n->gone_msg, sizeof(n->gone_msg), "serves version %"
		    PRIu64 ", no longer on its disk%s%s%s",
		    unum(g, "served_version"), found[0] != '\0' ? " (" : "",
		    found, found[0] != '\0' ? ")" : "");
		return;
	}
	g = field(root, "served_not_on_disk");
	if ((g == NULL || cJSON_IsNull(g) || cJSON_IsFalse(g)) &&
	    cJSON_IsObject(f))
		g = field(f, "served_not_on_disk");
	if (g == NULL || cJSON_IsNull(g) || cJSON_IsFalse(g))
		return;
	n->gone = true;
	if (cJSON_IsObject(g) && cJSON_IsNumber(field(g, "version")))
		snprintf(n->gone_msg, sizeof(n->gone_msg), "serves version %"
		    PRIu64 ", no longer on its disk", unum(g, "version"));
	else
		snprintf(n->gone_msg, sizeof(n->gone_msg), "serves a version "
		    "no longer on its disk");
}

/* Reads a /v1/status document into n. -1 when it is not one. */
static int
parse_status(struct node *n, const char *buf, size_t len)
{
	cJSON *root;
	const cJSON *svc, *f, *c, *sy, *rl, *st, *d;

	if ((root = cJSON_ParseWithLength(buf, len)) == NULL ||
	    !cJSON_IsObject(root) ||
	    !cJSON_IsObject(svc = field(root, "service"))) {
		cJSON_Delete(root);
		return -1;
	}
	str(n->mode, sizeof(n->mode), svc, "mode");
	if ((n->has_clock = cJSON_IsNumber(field(svc, "now_unix"))))
		n->clock_now = num(svc, "now_unix", 0);
	f = field(root, "filter");
	if (cJSON_IsObject(f)) {
		n->has_filter = true;
		n->version = unum(f, "version");
		str(n->sha, sizeof(n->sha), f, "sha256");
		n->age = num(f, "age_seconds", 0);
		n->expires_in = num(f, "expires_in_seconds", 0);
		st = field(f, "stale");
		n->stale = !cJSON_IsFalse(st);
		str(n->stale_reason, sizeof(n->stale_reason), f,
		    "stale_reason");
		/* Negative ages and lags are kept: they say that two
		 * clocks differ, which is what an audit is for. */
		if (cJSON_IsObject(d = field(f, "delta"))) {
			n->delta_seq = unum(d, "seq");
			n->overlay_keys = unum(d, "overlay_keys");
			if ((n->has_delta_age = cJSON_IsNumber(field(d,
			    "last_delta_age_seconds"))))
				n->delta_age = num(d,
				    "last_delta_age_seconds", 0);
			if ((n->has_lag = cJSON_IsNumber(field(d,
			    "revocation_lag_seconds"))))
				n->lag = num(d, "revocation_lag_seconds", 0);
		}
	}
	parse_gone(n, root, f);
	if (cJSON_IsObject(d = field(root, "authority")))
		str(n->degraded, sizeof(n->degraded), d, "degraded");
	c = field(root, "counters");
	if (cJSON_IsObject(c) && cJSON_IsNumber(field(c, "observed_fp_rate")))
		n->fp_rate = field(c, "observed_fp_rate")->valuedouble;
	rl = field(root, "reloads");
	if (cJSON_IsObject(rl))
		n->highest = unum(rl, "highest_version");
	sy = field(root, "sync");
	if (cJSON_IsObject(sy)) {
		str(n->sync_result, sizeof(n->sync_result), sy, "result");
		str(n->sync_error, sizeof(n->sync_error), sy, "error");
		str(n->delta_error, sizeof(n->delta_error), sy,
		    "delta_error");
		n->seen = unum(sy, "upstream_version_seen");
	}
	cJSON_Delete(root);
	return 0;
}

/*
 * Whether a and b serve the same base: the same version and, when both
 * name it, the same filter sha256 (two bases of one version, a rebuild,
 * carry different chains whose sequences do not compare).
 */
static bool
same_base(const struct node *a, const struct node *b)
{
	if (!a->reachable || !a->has_filter || !b->reachable ||
	    !b->has_filter || a->version != b->version)
		return false;
	return a->sha[0] == '\0' || b->sha[0] == '\0' ||
	    strcmp(a->sha, b->sha) == 0;
}

/*
 * For each node with a filter: the highest delta seq that any audited
 * node serves over its base. A node below it answers not_revoked for what
 * the deltas it misses revoke, however fresh its base and clean its last
 * sync result: an edge whose chain fetches fail keeps a "unchanged" base
 * sync and only says so in sync.delta_error.
 */
static void
delta_tops(struct node *nodes, size_t nn)
{
	size_t i, j;

	for (i = 0; i < nn; i++) {
		nodes[i].delta_top = nodes[i].delta_seq;
		for (j = 0; j < nn; j++)
			if (same_base(&nodes[i], &nodes[j]) &&
			    nodes[j].delta_seq > nodes[i].delta_top)
				nodes[i].delta_top = nodes[j].delta_seq;
		nodes[i].delta_behind = nodes[i].delta_top -
		    nodes[i].delta_seq;
	}
}

/* One GET of url into b (capped at AUDIT_MAX_BODY); ebuf may be NULL. */
static CURLcode
get(CURL *h, const char *url, long timeout, struct body *b, char *ebuf)
{
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, timeout);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, timeout);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, ebuf);
	curl_easy_setopt(h, CURLOPT_USERAGENT,
	    "filterbuild-audit/" REVCHECK_VERSION);
	return curl_easy_perform(h);
}

static void
fetch(CURL *h, struct node *n, long timeout)
{
	struct body b = { NULL, 0, false };
	char ebuf[CURL_ERROR_SIZE];
	CURLcode cc;
	int64_t t0, t1;
	long code = 0;

	ebuf[0] = '\0';
	t0 = util_now();
	cc = get(h, n->url, timeout, &b, ebuf);
	t1 = util_now();
	if (cc == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	if (b.too_big)
		snprintf(n->error, sizeof(n->error), "reply over %d bytes",
		    AUDIT_MAX_BODY);
	else if (cc != CURLE_OK)
		snprintf(n->error, sizeof(n->error), "%s", ebuf[0] != '\0' ?
		    ebuf : curl_easy_strerror(cc));
	else if (code != 200)
		snprintf(n->error, sizeof(n->error), "HTTP %ld from "
		    "/v1/status", code);
	else if (b.p == NULL || parse_status(n, b.p, b.len) == -1)
		snprintf(n->error, sizeof(n->error), "the reply is not a "
		    "revcheckd status document");
	else
		n->reachable = true;
	free(b.p);
	/*
	 * Both clocks count whole seconds down: a node in step with this
	 * host reads a second from t0 to t1. Outside it, the distance to the
	 * nearer end is how far its clock is off, at least.
	 */
	if (n->reachable && n->has_clock)
		n->clock_off = n->clock_now < t0 ? n->clock_now - t0 :
		    n->clock_now > t1 ? n->clock_now - t1 : 0;
}

/*
 * /readyz: what a load balancer sees. A 503 is revcheckd saying it is not
 * ready (its "degraded" reason, else its "error"); any other status
 * (a proxy in front that does not pass /readyz) or no answer says
 * nothing, and /v1/status's authority.degraded stands in.
 */
static void
fetch_ready(CURL *h, struct node *n, long timeout)
{
	struct body b = { NULL, 0, false };
	const cJSON *v;
	cJSON *root;

	n->ready_code = 0;
	if (get(h, n->rurl, timeout, &b, NULL) == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &n->ready_code);
	if (n->ready_code == 503 && b.p != NULL &&
	    (root = cJSON_ParseWithLength(b.p, b.len)) != NULL) {
		v = field(root, "degraded");
		if (!cJSON_IsString(v))
			v = field(root, "error");
		if (cJSON_IsString(v))
			snprintf(n->ready_reason, sizeof(n->ready_reason), "%s",
			    v->valuestring);
		cJSON_Delete(root);
	}
	free(b.p);
}

/* Seconds as text, or "-" when unknown. */
static const char *
secs(char *out, size_t cap, bool known, int64_t v)
{
	if (!known)
		snprintf(out, cap, "-");
	else
		snprintf(out, cap, "%" PRId64 "s", v);
	return out;
}

static void
print_table(const struct node *nodes, size_t nn, uint64_t newest,
    size_t bad)
{
	char ver[24], age[24], exp[24], fp[24], stale[48], dseq[24], lag[24];
	char clk[24];
	const struct node *n;
	int w = 4;
	size_t i, j;

	for (i = 0; i < nn; i++)
		if ((int)strlen(nodes[i].base) > w)
			w = (int)strlen(nodes[i].base);
	printf("%-*s  %-6s  %8s  %6s  %8s  %10s  %8s  %-18s  %-15s  %-9s  %7s  "
	    "%s\n", w, "URL", "MODE", "VERSION", "DELTA", "AGE", "EXPIRES_IN",
	    "LAG", "STALE", "SYNC", "FP_RATE", "CLOCK", "STATUS");
	for (i = 0; i < nn; i++) {
		n = &nodes[i];
		if (!n->reachable) {
			printf("%-*s  %-6s  %8s  %6s  %8s  %10s  %8s  %-18s  %-15s  "
			    "%-9s  %7s  unreachable\n", w, n->base, "-", "-",
			    "-", "-", "-", "-", "-", "-", "-", "-");
			continue;
		}
		if (n->has_filter)
			snprintf(ver, sizeof(ver), "%" PRIu64, n->version);
		else
			snprintf(ver, sizeof(ver), "-");
		snprintf(fp, sizeof(fp), "%.3g", n->fp_rate);
		if (!n->has_filter)
			snprintf(stale, sizeof(stale), "-");
		else if (n->stale)
			snprintf(stale, sizeof(stale), "yes (%s)",
			    n->stale_reason[0] ? n->stale_reason : "?");
		else
			snprintf(stale, sizeof(stale), "no");
		snprintf(dseq, sizeof(dseq), "%" PRIu64, n->delta_seq);
		if (n->has_clock)
			snprintf(clk, sizeof(clk), "%+" PRId64 "s", n->clock_off);
		else
			snprintf(clk, sizeof(clk), "-");
		printf("%-*s  %-6s  %8s  %6s  %8s  %10s  %8s  %-18s  %-15s  %-9s  "
		    "%7s  ", w, n->base, n->mode[0] ? n->mode : "?", ver,
		    n->has_filter ? dseq : "-",
		    secs(age, sizeof(age), n->has_filter, n->age),
		    secs(exp, sizeof(exp), n->has_filter, n->expires_in),
		    secs(lag, sizeof(lag), n->has_filter && n->has_lag, n->lag),
		    stale, n->sync_result[0] ? n->sync_result : "-", fp, clk);
		if (n->nproblems == 0)
			printf("OK\n");
		for (j = 0; j < n->nproblems; j++)
			printf("%s%s", j ? "; " : "", n->problems[j]);
		if (n->nproblems > 0)
			printf("\n");
	}
	printf("newest version seen: %" PRIu64 "; %zu of %zu node%s with "
	    "problems\n", newest, bad, nn, nn == 1 ? "" : "s");
}

/*
 * A node a load balancer would skip, or that answers filter positives
 * 503: /readyz said 503, or /v1/status names its authority degraded
 * (unavailable, behind, busy). A stale filter or none is its own problem
 * already, so a 503 for that reason adds nothing.
 */
static void
not_ready(struct node *n)
{
	const char *why = n->ready_reason[0] != '\0' ? n->ready_reason :
	    n->degraded;

	if (n->ready_code == 200 && n->degraded[0] == '\0')
		return;
	if (n->ready_code != 503 && n->degraded[0] == '\0')
		return;		/* no say from /readyz, nothing degraded */
	if (strcmp(why, "filter_stale") == 0 || strcmp(why, "no_filter") == 0)
		return;
	snprintf(n->ready_msg, sizeof(n->ready_msg), "not ready%s%s%s",
	    why[0] != '\0' ? " (" : "", why, why[0] != '\0' ? ")" : "");
	problem(n, n->ready_msg);
}

/*
 * The members of a reachable node with a filter: version, sha256, ages,
 * stale, behind and the "delta" object. false when out of memory.
 */
static bool
json_filter(cJSON *o, const struct node *n)
{
	cJSON *p;

	cJSON_AddNumberToObject(o, "version", (double)n->version);
	if (n->sha[0] != '\0')
		cJSON_AddStringToObject(o, "sha256", n->sha);
	else
		cJSON_AddNullToObject(o, "sha256");
	cJSON_AddNumberToObject(o, "age_seconds", (double)n->age);
	cJSON_AddNumberToObject(o, "expires_in_seconds",
	    (double)n->expires_in);
	cJSON_AddBoolToObject(o, "stale", n->stale);
	if (n->stale_reason[0] != '\0')
		cJSON_AddStringToObject(o, "stale_reason", n->stale_reason);
	else
		cJSON_AddNullToObject(o, "stale_reason");
	cJSON_AddNumberToObject(o, "behind", (double)n->behind);
	if ((p = cJSON_AddObjectToObject(o, "delta")) == NULL)
		return false;
	cJSON_AddNumberToObject(p, "seq", (double)n->delta_seq);
	cJSON_AddNumberToObject(p, "overlay_keys", (double)n->overlay_keys);
	cJSON_AddNumberToObject(p, "highest_seq_on_base",
	    (double)n->delta_top);
	cJSON_AddNumberToObject(p, "behind", (double)n->delta_behind);
	if (n->has_delta_age)
		cJSON_AddNumberToObject(p, "last_delta_age_seconds",
		    (double)n->delta_age);
	else
		cJSON_AddNullToObject(p, "last_delta_age_seconds");
	if (n->has_lag)
		cJSON_AddNumberToObject(p, "revocation_lag_seconds",
		    (double)n->lag);
	else
		cJSON_AddNullToObject(p, "revocation_lag_seconds");
	return true;
}

/*
 * The members of a reachable node: mode, readiness, clock, its filter
 * (json_filter) and, on an edge, its last sync. false when out of memory.
 */
static bool
json_reachable(cJSON *o, const struct node *n)
{
	cJSON_AddStringToObject(o, "mode", n->mode);
	if (n->ready_code == 200 || n->ready_code == 503)
		cJSON_AddBoolToObject(o, "ready", n->ready_code == 200);
	else
		cJSON_AddNullToObject(o, "ready");
	if (n->degraded[0] != '\0')
		cJSON_AddStringToObject(o, "degraded", n->degraded);
	else
		cJSON_AddNullToObject(o, "degraded");
	cJSON_AddBoolToObject(o, "served_not_on_disk", n->gone);
	if (n->has_clock)
		cJSON_AddNumberToObject(o, "clock_offset_seconds",
		    (double)n->clock_off);
	else
		cJSON_AddNullToObject(o, "clock_offset_seconds");
	if (n->has_filter) {
		if (!json_filter(o, n))
			return false;
	} else
		cJSON_AddNullToObject(o, "version");
	if (n->sync_result[0] != '\0') {
		cJSON_AddStringToObject(o, "sync_result", n->sync_result);
		if (n->sync_error[0] != '\0')
			cJSON_AddStringToObject(o, "sync_error", n->sync_error);
		if (n->delta_error[0] != '\0')
			cJSON_AddStringToObject(o, "delta_error",
			    n->delta_error);
		else
			cJSON_AddNullToObject(o, "delta_error");
		if (n->seen != 0)
			cJSON_AddNumberToObject(o, "upstream_version_seen",
			    (double)n->seen);
	}
	cJSON_AddNumberToObject(o, "observed_fp_rate", n->fp_rate);
	return true;
}

/* One node's object, appended to arr. false when out of memory. */
static bool
json_node(cJSON *arr, const struct node *n)
{
	cJSON *o, *p;
	size_t j;

	if ((o = cJSON_CreateObject()) == NULL)
		return false;
	cJSON_AddItemToArray(arr, o);
	cJSON_AddStringToObject(o, "url", n->base);
	cJSON_AddBoolToObject(o, "reachable", n->reachable);
	if (!n->reachable)
		cJSON_AddStringToObject(o, "error", n->error);
	else if (!json_reachable(o, n))
		return false;
	cJSON_AddBoolToObject(o, "ok", n->nproblems == 0);
	if ((p = cJSON_AddArrayToObject(o, "problems")) == NULL)
		return false;
	for (j = 0; j < n->nproblems; j++)
		cJSON_AddItemToArray(p, cJSON_CreateString(n->problems[j]));
	return true;
}

static int
print_json(const struct node *nodes, size_t nn, uint64_t newest, size_t bad)
{
	cJSON *root, *arr;
	char *txt;
	size_t i;
	int rc = -1;

	if ((root = cJSON_CreateObject()) == NULL)
		return -1;
	cJSON_AddNumberToObject(root, "newest_version", (double)newest);
	cJSON_AddBoolToObject(root, "ok", bad == 0);
	cJSON_AddNumberToObject(root, "nodes_with_problems", (double)bad);
	if ((arr = cJSON_AddArrayToObject(root, "nodes")) == NULL)
		goto out;
	for (i = 0; i < nn; i++)
		if (!json_node(arr, &nodes[i]))
			goto out;
	if ((txt = cJSON_Print(root)) == NULL)
		goto out;
	printf("%s\n", txt);
	free(txt);
	rc = 0;
out:
	cJSON_Delete(root);
	return rc;
}

/* What the command line asks of the audit. */
struct audit_opts {
	bool		 json;
	int64_t		 max_age;	/* 0: no limit */
	int64_t		 timeout;
	int64_t		 max_skew;
	uint64_t	 max_lag;
	uint64_t	 max_dlag;
};

/*
 * A duration option's value (arg) into *out, at most max. 0, or
 * FB_EXIT_USAGE after a message naming the option and range.
 */
static int
audit_duration(const char *opt, const char *arg, int64_t max,
    const char *range, int64_t *out)
{
	if (util_parse_duration(arg, out) == -1 || *out > max)
		return fb_usage_err("audit", "%s: bad duration \"%.64s\" (%s)",
		    opt, arg, range);
	return 0;
}

/* A count option's value (arg) of what into *out. 0, or FB_EXIT_USAGE. */
static int
audit_count(const char *opt, const char *arg, const char *what,
    uint64_t *out)
{
	if (util_parse_u64(arg, UINT32_MAX, out) == -1)
		return fb_usage_err("audit", "%s: \"%.64s\" is not a number "
		    "of %s", opt, arg, what);
	return 0;
}

/*
 * Reads the options into ao and checks the node URLs (argv from optind).
 * 0, -1 after --help, or FB_EXIT_USAGE after a message.
 */
static int
audit_parse(struct audit_opts *ao, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json",    no_argument,	NULL, 'j' },
		{ "max-age", required_argument, NULL, 'a' },
		{ "max-lag", required_argument, NULL, 'l' },
		{ "max-delta-lag", required_argument, NULL, 'd' },
		{ "timeout", required_argument, NULL, 't' },
		{ "max-skew", required_argument, NULL, 's' },
		{ "help",    no_argument,	NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	size_t nn, i;
	int ch, rc = 0;

	memset(ao, 0, sizeof(*ao));
	ao->timeout = AUDIT_DEFAULT_TIMEOUT;
	ao->max_skew = AUDIT_DEFAULT_SKEW;
	fb_getopt_reset();
	while (rc == 0 && (ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 'j': ao->json = true; break;
		case 'a':
			rc = audit_duration("--max-age", optarg, INT64_MAX,
			    "N with s, m, h or d", &ao->max_age);
			break;
		case 'l':
			rc = audit_count("--max-lag", optarg, "versions",
			    &ao->max_lag);
			break;
		case 'd':
			rc = audit_count("--max-delta-lag", optarg, "deltas",
			    &ao->max_dlag);
			break;
		case 't':
			rc = audit_duration("--timeout", optarg, 3600,
			    "1s to 1h", &ao->timeout);
			break;
		case 's':
			rc = audit_duration("--max-skew", optarg, 86400,
			    "0s to 1d", &ao->max_skew);
			break;
		case 'h': audit_usage(stdout); return -1;
		default: return fb_usage_err("audit", "bad option");
		}
	}
	if (rc != 0)
		return rc;
	nn = (size_t)(argc - optind);
	if (nn == 0)
		return fb_usage_err("audit", "want at least one node URL "
		    "(http://host:port)");
	if (nn > AUDIT_MAX_NODES)
		return fb_usage_err("audit", "more than %d nodes",
		    AUDIT_MAX_NODES);
	for (i = 0; i < nn; i++) {
		const char *u = argv[optind + (int)i];

		if (strncmp(u, "http://", 7) != 0 &&
		    strncmp(u, "https://", 8) != 0)
			return fb_usage_err("audit", "\"%.200s\" is not an "
			    "http:// or https:// URL", u);
	}
	return 0;
}

/*
 * The nodes of bases[0..nn) with their /v1/status and /readyz URLs
 * (calloc'ed). NULL after a message, with *rc the exit status.
 */
static struct node *
audit_nodes(char **bases, size_t nn, int *rc)
{
	struct node *nodes;
	size_t i, blen;
	int k;

	if ((nodes = calloc(nn, sizeof(*nodes))) == NULL) {
		fb_err("audit: out of memory");
		*rc = FB_EXIT_FAIL;
		return NULL;
	}
	for (i = 0; i < nn; i++) {
		nodes[i].base = bases[i];
		blen = strlen(nodes[i].base);
		while (blen > 0 && nodes[i].base[blen - 1] == '/')
			blen--;
		k = snprintf(nodes[i].url, sizeof(nodes[i].url),
		    "%.*s/v1/status", (int)blen, nodes[i].base);
		if (k >= 0 && (size_t)k < sizeof(nodes[i].url))
			k = snprintf(nodes[i].rurl, sizeof(nodes[i].rurl),
			    "%.*s/readyz", (int)blen, nodes[i].base);
		if (k < 0 || (size_t)k >= sizeof(nodes[i].rurl)) {
			*rc = fb_usage_err("audit", "URL too long: %.80s...",
			    nodes[i].base);
			free(nodes);
			return NULL;
		}
	}
	return nodes;
}

/*
 * Asks every node for its status, and each that answers for its
 * readiness. The newest version seen anywhere: the highest filter
 * version, upstream version seen or highest accepted version.
 */
static uint64_t
audit_fetch_all(CURL *h, struct node *nodes, size_t nn, long timeout)
{
	uint64_t newest = 0;
	size_t i;

	for (i = 0; i < nn; i++) {
		fetch(h, &nodes[i], timeout);
		if (!nodes[i].reachable)
			continue;
		fetch_ready(h, &nodes[i], timeout);
		if (nodes[i].version > newest)
			newest = nodes[i].version;
		if (nodes[i].seen > newest)
			newest = nodes[i].seen;
		if (nodes[i].highest > newest)
			newest = nodes[i].highest;
	}
	return newest;
}

/*
 * A node judges staleness by its own clock: one behind keeps an expired
 * filter in service (and answers not_revoked from it) for as long as it
 * is behind; one ahead refuses fresh filters early. Neither shows in its
 * own status.
 */
static void
judge_clock(struct node *n, int64_t max_skew)
{
	if (!n->has_clock || (n->clock_off >= -max_skew &&
	    n->clock_off <= max_skew))
		return;
	snprintf(n->clock_msg, sizeof(n->clock_msg),
	    n->clock_off < 0 ? "clock %" PRId64 "s behind this "
	    "host's: expired filters stay fresh that long" :
	    "clock %" PRId64 "s ahead of this host's: fresh "
	    "filters expire that early", n->clock_off < 0 ?
	    -n->clock_off : n->clock_off);
	problem(n, n->clock_msg);
}

/* The problems of a node's filter, its syncs and its lag behind others. */
static void
judge_filter(struct node *n, const struct audit_opts *ao, uint64_t newest)
{
	if (n->stale)
		problem(n, "stale");
	/* An edge serving a fresh filter still fails when
	 * its syncs do: it will not see the next version. */
	if (n->sync_error[0] != '\0')
		problem(n, "last sync failed");
	/* The chain fetch fails apart from the base sync:
	 * the edge keeps its base and misses every delta. */
	if (n->delta_error[0] != '\0') {
		snprintf(n->delta_error_msg, sizeof(n->delta_error_msg),
		    "delta sync failed: %.256s", n->delta_error);
		problem(n, n->delta_error_msg);
	}
	if (ao->max_age > 0 && n->age > ao->max_age)
		problem(n, "older than --max-age");
	n->behind = newest - n->version;
	if (n->behind > ao->max_lag)
		problem(n, "behind the newest version");
	if (n->delta_behind > ao->max_dlag) {
		snprintf(n->delta_msg, sizeof(n->delta_msg),
		    "delta %" PRIu64 " behind: at seq %" PRIu64
		    ", another node at %" PRIu64,
		    n->delta_behind, n->delta_seq, n->delta_top);
		problem(n, n->delta_msg);
	}
}

/* Records every problem of n, in the order the output lists them. */
static void
judge(struct node *n, const struct audit_opts *ao, uint64_t newest)
{
	if (!n->reachable) {
		problem(n, "unreachable");
		return;
	}
	judge_clock(n, ao->max_skew);
	not_ready(n);
	if (n->gone)
		problem(n, n->gone_msg);
	if (!n->has_filter)
		problem(n, "no filter loaded");
	else
		judge_filter(n, ao, newest);
}

int
fb_audit(int argc, char **argv)
{
	struct audit_opts ao;
	struct node *nodes;
	uint64_t newest;
	size_t nn, i, bad = 0;
	CURL *h = NULL;
	int ret;

	if ((ret = audit_parse(&ao, argc, argv)) != 0)
		return ret < 0 ? FB_EXIT_OK : ret;
	nn = (size_t)(argc - optind);
	if ((nodes = audit_nodes(argv + optind, nn, &ret)) == NULL)
		return ret;
	ret = FB_EXIT_FAIL;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		fb_err("audit: libcurl initialisation failed");
		free(nodes);
		return FB_EXIT_FAIL;
	}
	if ((h = curl_easy_init()) == NULL) {
		fb_err("audit: libcurl initialisation failed");
		goto out;
	}
	newest = audit_fetch_all(h, nodes, nn, (long)ao.timeout);
	delta_tops(nodes, nn);
	for (i = 0; i < nn; i++) {
		judge(&nodes[i], &ao, newest);
		if (nodes[i].nproblems > 0)
			bad++;
	}
	if (ao.json) {
		if (print_json(nodes, nn, newest, bad) == -1) {
			fb_err("audit: out of memory");
			goto out;
		}
	} else
		print_table(nodes, nn, newest, bad);
	for (i = 0; i < nn && !ao.json; i++)
		if (!nodes[i].reachable)
			fb_err("audit: %s: %s", nodes[i].url, nodes[i].error);
	ret = bad == 0 ? FB_EXIT_OK : FB_EXIT_FAIL;
out:
	if (h != NULL)
		curl_easy_cleanup(h);
	curl_global_cleanup();
	free(nodes);
	return ret;
}
