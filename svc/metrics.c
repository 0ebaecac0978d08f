/* metrics.c - process-wide counters, lock-free (relaxed atomics) */
#include <stdatomic.h>

#include "metrics.h"

static const unsigned codes[] = {
	200, 304, 400, 401, 403, 404, 405, 413, 414, 415, 431, 500, 503, 0
};
#define NCODES (sizeof(codes) / sizeof(codes[0]))	/* last: other */

static _Atomic uint64_t counters[MET_COUNT_];
static _Atomic uint64_t requests[EP_COUNT_][NCODES];

void
metrics_inc(enum metric m)
{
	atomic_fetch_add_explicit(&counters[m], 1, memory_order_relaxed);
}

void
metrics_add(enum metric m, uint64_t n)
{
	atomic_fetch_add_explicit(&counters[m], n, memory_order_relaxed);
}

void
metrics_tally_inc(struct metrics_tally *t, enum metric m)
{
	if (t == NULL)
		metrics_inc(m);
	else
		t->n[m]++;
}

void
metrics_tally_flush(struct metrics_tally *t)
{
	int m;

	for (m = 0; m < MET_COUNT_; m++) {
		if (t->n[m] != 0)
			metrics_add((enum metric)m, t->n[m]);
		t->n[m] = 0;
	}
}

uint64_t
metrics_get(enum metric m)
{
	return atomic_load_explicit(&counters[m], memory_order_relaxed);
}

void
metrics_request(enum metric_endpoint ep, unsigned status)
{
	size_t i;

	for (i = 0; i < NCODES - 1; i++)
		if (codes[i] == status)
			break;
	atomic_fetch_add_explicit(&requests[ep][i], 1, memory_order_relaxed);
}

const char *
metrics_name(enum metric m)
{
	static const char *names[MET_COUNT_] = {
		"checks", "filter_negative", "fallthrough",
		"confirmed_revoked", "false_positive", "not_covered",
		"refused_stale", "refused_no_filter",
		"authority_unavailable", "authority_behind", "bad_items", "slow_dropped",
		"body_memory_refused",
		"reloads_accepted",
		"reloads_rejected",
	};
	return (unsigned)m < MET_COUNT_ ? names[m] : "unknown";
}

const char *
metrics_endpoint_name(enum metric_endpoint ep)
{
	static const char *names[EP_COUNT_] = {
		"check", "authz", "status", "metrics", "healthz", "readyz",
		"filter", "other",
	};
	return (unsigned)ep < EP_COUNT_ ? names[ep] : "other";
}

void
metrics_render_requests(struct sbuf *b)
{
	size_t e, i;
	uint64_t v;

	sbuf_adds(b, "# HELP revcheckd_http_requests_total HTTP responses by "
	    "endpoint and status code.\n"
	    "# TYPE revcheckd_http_requests_total counter\n");
	for (e = 0; e < EP_COUNT_; e++) {
		for (i = 0; i < NCODES; i++) {
			v = atomic_load_explicit(&requests[e][i],
			    memory_order_relaxed);
			if (v == 0)
				continue;
			sbuf_addf(b, "revcheckd_http_requests_total{endpoint="
			    "\"%s\",code=\"", metrics_endpoint_name(
			    (enum metric_endpoint)e));
			if (codes[i] != 0)
				sbuf_add_u64(b, codes[i]);
			else
				sbuf_adds(b, "other");
			sbuf_adds(b, "\"} ");
			sbuf_add_u64(b, v);
			sbuf_adds(b, "\n");
		}
	}
}

void
metrics_reset(void)
{
	size_t e, i;

	for (i = 0; i < MET_COUNT_; i++)
		atomic_store(&counters[i], 0);
	for (e = 0; e < EP_COUNT_; e++)
		for (i = 0; i < NCODES; i++)
			atomic_store(&requests[e][i], 0);
}
