/* metrics.c - process-wide counters, lock-free (relaxed atomics) */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "metrics.h"

static const unsigned codes[] = {
	200, 304, 400, 401, 403, 404, 405, 413, 414, 415, 431, 500, 503, 0
};
#define NCODES (sizeof(codes) / sizeof(codes[0]))	/* last: other */

static _Atomic uint64_t counters[MET_COUNT_];
static _Atomic uint64_t requests[EP_COUNT_][NCODES];

/* Upper bounds in seconds; the last bucket is +Inf. */
static const double bounds[] = {
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10,
};
#define NBOUNDS (sizeof(bounds) / sizeof(bounds[0]))

struct hist {
	_Atomic uint64_t bucket[NBOUNDS + 1];	/* not cumulative */
	_Atomic uint64_t sum_ns;
};

static struct hist req_hist[EP_COUNT_];
static struct hist auth_hist;

static void
hist_observe(struct hist *h, double s)
{
	size_t i;

	if (!(s > 0))
		s = 0;
	for (i = 0; i < NBOUNDS && s > bounds[i]; i++)
		;
	atomic_fetch_add_explicit(&h->bucket[i], 1, memory_order_relaxed);
	if (s < 1e9)
		atomic_fetch_add_explicit(&h->sum_ns, (uint64_t)(s * 1e9),
		    memory_order_relaxed);
}

void
metrics_observe_request(enum metric_endpoint ep, double seconds)
{
	if ((unsigned)ep < EP_COUNT_)
		hist_observe(&req_hist[ep], seconds);
}

void
metrics_observe_authority(double seconds)
{
	hist_observe(&auth_hist, seconds);
}

/* One histogram's series; labels is "" or "endpoint=\"check\"". */
static void
hist_render(struct sbuf *b, const char *name, const char *labels,
    struct hist *h)
{
	uint64_t cum = 0;
	size_t i;

	for (i = 0; i <= NBOUNDS; i++) {
		cum += atomic_load_explicit(&h->bucket[i],
		    memory_order_relaxed);
		sbuf_addf(b, "%s_bucket{%s%sle=\"", name, labels,
		    labels[0] != '\0' ? "," : "");
		if (i < NBOUNDS)
			sbuf_addf(b, "%g", bounds[i]);
		else
			sbuf_adds(b, "+Inf");
		sbuf_adds(b, "\"} ");
		sbuf_add_u64(b, cum);
		sbuf_adds(b, "\n");
	}
	sbuf_addf(b, "%s_sum%s%s%s %.9f\n", name, labels[0] != '\0' ? "{" :
	    "", labels, labels[0] != '\0' ? "}" : "",
	    (double)atomic_load_explicit(&h->sum_ns, memory_order_relaxed) /
	    1e9);
	sbuf_addf(b, "%s_count%s%s%s ", name, labels[0] != '\0' ? "{" : "",
	    labels, labels[0] != '\0' ? "}" : "");
	sbuf_add_u64(b, cum);
	sbuf_adds(b, "\n");
}

static bool
hist_empty(struct hist *h)
{
	size_t i;

	for (i = 0; i <= NBOUNDS; i++)
		if (atomic_load_explicit(&h->bucket[i],
		    memory_order_relaxed) != 0)
			return false;
	return true;
}

void
metrics_render_histograms(struct sbuf *b)
{
	char labels[64];
	size_t e;

	sbuf_adds(b, "# HELP revcheckd_http_request_duration_seconds Time "
	    "from a complete request to its queued response, by endpoint.\n"
	    "# TYPE revcheckd_http_request_duration_seconds histogram\n");
	for (e = 0; e < EP_COUNT_; e++) {
		if (hist_empty(&req_hist[e]))
			continue;
		snprintf(labels, sizeof(labels), "endpoint=\"%s\"",
		    metrics_endpoint_name((enum metric_endpoint)e));
		hist_render(b, "revcheckd_http_request_duration_seconds",
		    labels, &req_hist[e]);
	}
	sbuf_adds(b, "# HELP revcheckd_authority_request_duration_seconds "
	    "Time of one call to the upstream authority (edge).\n"
	    "# TYPE revcheckd_authority_request_duration_seconds "
	    "histogram\n");
	hist_render(b, "revcheckd_authority_request_duration_seconds", "",
	    &auth_hist);
}
/* This thread's capture (metrics_capture_begin), NULL when none. */
static _Thread_local struct metrics_tally *capture;

void
metrics_inc(enum metric m)
{
	metrics_add(m, 1);
}

void
metrics_add(enum metric m, uint64_t n)
{
	if (capture != NULL) {
		capture->n[m] += n;
		return;
	}
	atomic_fetch_add_explicit(&counters[m], n, memory_order_relaxed);
}

void
metrics_capture_begin(struct metrics_tally *t)
{
	memset(t, 0, sizeof(*t));
	capture = t;
}

void
metrics_capture_end(bool keep)
{
	struct metrics_tally *t = capture;

	capture = NULL;
	if (t != NULL && keep)
		metrics_tally_flush(t);
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
		"reloads_refused",
	};
	return (unsigned)m < MET_COUNT_ ? names[m] : "unknown";
}

const char *
metrics_endpoint_name(enum metric_endpoint ep)
{
	static const char *names[EP_COUNT_] = {
		"check", "authz", "status", "metrics", "healthz", "readyz",
		"filter", "delta", "introspect", "other",
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
	for (e = 0; e < EP_COUNT_; e++) {
		for (i = 0; i <= NBOUNDS; i++)
			atomic_store(&req_hist[e].bucket[i], 0);
		atomic_store(&req_hist[e].sum_ns, 0);
	}
	for (i = 0; i <= NBOUNDS; i++)
		atomic_store(&auth_hist.bucket[i], 0);
	atomic_store(&auth_hist.sum_ns, 0);
}
