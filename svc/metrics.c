/* metrics.c - counters and histograms per thread, summed when read */
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "metrics.h"
#include "perthread.h"

static const unsigned codes[] = {
	200, 304, 400, 401, 403, 404, 405, 413, 414, 415, 431, 500, 503, 0
};
#define NCODES (sizeof(codes) / sizeof(codes[0]))	/* last: other */

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

/*
 * Every count a thread makes goes to its own slab (perthread.h: its own
 * cache lines), written by that thread alone with a plain load and store
 * (atomic only so that a reader never sees a torn value); readers sum all
 * slabs. A thread that could not get a slab counts in the shared one with
 * atomic adds, as every thread did before.
 */
struct slab {
	_Atomic uint64_t counters[MET_COUNT_];
	_Atomic uint64_t requests[EP_COUNT_][NCODES];
	_Atomic uint64_t bytes[EP_COUNT_];
	struct hist	 req_hist[EP_COUNT_];
	struct hist	 auth_hist;
};

_Static_assert(sizeof(struct slab) % sizeof(_Atomic uint64_t) == 0,
    "a slab is an array of counters");

static struct perthread slabs = PERTHREAD_INIT(sizeof(struct slab));
static struct slab shared;
static _Thread_local struct slab *mine;

static struct slab *
local_slab(void)
{
	struct slab *s = mine;

	if (s == NULL && (s = perthread_get(&slabs, (void **)&mine)) == NULL)
		return &shared;
	return s;
}

static void
bump(struct slab *s, _Atomic uint64_t *c, uint64_t n)
{
	if (s == &shared)
		atomic_fetch_add_explicit(c, n, memory_order_relaxed);
	else
		atomic_store_explicit(c, atomic_load_explicit(c,
		    memory_order_relaxed) + n, memory_order_relaxed);
}

/* The sum of one counter over all slabs; off is its offset in a slab. */
static uint64_t
sum_at(size_t off)
{
	const struct slab *s;
	uint64_t v;

	v = atomic_load_explicit((const _Atomic uint64_t *)(const void *)
	    ((const char *)&shared + off), memory_order_relaxed);
	for (s = perthread_first(&slabs); s != NULL; s = perthread_next(s))
		v += atomic_load_explicit((const _Atomic uint64_t *)
		    (const void *)((const char *)s + off),
		    memory_order_relaxed);
	return v;
}

static void
hist_observe(struct slab *sl, struct hist *h, double s)
{
	size_t i;

	if (!(s > 0))
		s = 0;
	for (i = 0; i < NBOUNDS && s > bounds[i]; i++)
		;
	bump(sl, &h->bucket[i], 1);
	if (s < 1e9)
		bump(sl, &h->sum_ns, (uint64_t)(s * 1e9));
}

void
metrics_observe_request(enum metric_endpoint ep, double seconds)
{
	struct slab *sl;

	if ((unsigned)ep < EP_COUNT_) {
		sl = local_slab();
		hist_observe(sl, &sl->req_hist[ep], seconds);
	}
}

void
metrics_observe_authority(double seconds)
{
	struct slab *sl = local_slab();

	hist_observe(sl, &sl->auth_hist, seconds);
}

/* A histogram summed over all slabs; off is its offset in a slab. */
struct hist_sum {
	uint64_t	 bucket[NBOUNDS + 1];
	uint64_t	 sum_ns;
	uint64_t	 count;
};

static void
hist_sum(size_t off, struct hist_sum *out)
{
	size_t i;

	out->count = 0;
	for (i = 0; i <= NBOUNDS; i++) {
		out->bucket[i] = sum_at(off + offsetof(struct hist, bucket) +
		    i * sizeof(_Atomic uint64_t));
		out->count += out->bucket[i];
	}
	out->sum_ns = sum_at(off + offsetof(struct hist, sum_ns));
}

/* One histogram's series; labels is "" or "endpoint=\"check\"". */
static void
hist_render(struct sbuf *b, const char *name, const char *labels,
    const struct hist_sum *h)
{
	uint64_t cum = 0;
	size_t i;

	for (i = 0; i <= NBOUNDS; i++) {
		cum += h->bucket[i];
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
	    (double)h->sum_ns / 1e9);
	sbuf_addf(b, "%s_count%s%s%s ", name, labels[0] != '\0' ? "{" : "",
	    labels, labels[0] != '\0' ? "}" : "");
	sbuf_add_u64(b, cum);
	sbuf_adds(b, "\n");
}

void
metrics_render_histograms(struct sbuf *b)
{
	struct hist_sum h;
	char labels[64];
	size_t e;

	sbuf_adds(b, "# HELP revcheckd_http_request_duration_seconds Time "
	    "from a complete request to its queued response, by endpoint.\n"
	    "# TYPE revcheckd_http_request_duration_seconds histogram\n");
	for (e = 0; e < EP_COUNT_; e++) {
		hist_sum(offsetof(struct slab, req_hist) +
		    e * sizeof(struct hist), &h);
		if (h.count == 0)
			continue;
		snprintf(labels, sizeof(labels), "endpoint=\"%s\"",
		    metrics_endpoint_name((enum metric_endpoint)e));
		hist_render(b, "revcheckd_http_request_duration_seconds",
		    labels, &h);
	}
	sbuf_adds(b, "# HELP revcheckd_authority_request_duration_seconds "
	    "Time of one call to the upstream authority (edge).\n"
	    "# TYPE revcheckd_authority_request_duration_seconds "
	    "histogram\n");
	hist_sum(offsetof(struct slab, auth_hist), &h);
	hist_render(b, "revcheckd_authority_request_duration_seconds", "", &h);
	sbuf_adds(b, "# HELP revcheckd_ocsp_request_seconds Time from a "
	    "complete OCSP request to its queued response.\n"
	    "# TYPE revcheckd_ocsp_request_seconds histogram\n");
	hist_sum(offsetof(struct slab, req_hist) + EP_OCSP *
	    sizeof(struct hist), &h);
	hist_render(b, "revcheckd_ocsp_request_seconds", "", &h);
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
	struct slab *sl;

	if (capture != NULL) {
		capture->n[m] += n;
		return;
	}
	sl = local_slab();
	bump(sl, &sl->counters[m], n);
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
	if ((unsigned)m >= MET_COUNT_)
		return 0;
	return sum_at(offsetof(struct slab, counters) +
	    (size_t)m * sizeof(_Atomic uint64_t));
}

void
metrics_request(enum metric_endpoint ep, unsigned status)
{
	struct slab *sl;
	size_t i;

	if ((unsigned)ep >= EP_COUNT_)
		ep = EP_OTHER;
	for (i = 0; i < NCODES - 1; i++)
		if (codes[i] == status)
			break;
	sl = local_slab();
	bump(sl, &sl->requests[ep][i], 1);
}

void
metrics_response_bytes(enum metric_endpoint ep, uint64_t n)
{
	struct slab *sl;

	if ((unsigned)ep >= EP_COUNT_)
		ep = EP_OTHER;
	sl = local_slab();
	bump(sl, &sl->bytes[ep], n);
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
		"delta_hits", "deltas_applied", "deltas_refused",
		"config_reloads_applied", "config_reloads_refused",
		"fast_path_requests", "fast_path_handoffs",
		"ocsp_good", "ocsp_revoked", "ocsp_unknown",
		"ocsp_malformed_request", "ocsp_internal_error",
		"ocsp_try_later", "ocsp_unauthorized", "ocsp_signatures",
		"ocsp_cache_hits",
		"exact_not_revoked", "exact_revoked", "exact_unproven",
	};
	return (unsigned)m < MET_COUNT_ && names[m] != NULL ? names[m] :
	    "unknown";
}

const char *
metrics_endpoint_name(enum metric_endpoint ep)
{
	static const char *names[EP_COUNT_] = {
		"check", "authz", "status", "metrics", "healthz", "readyz",
		"filter", "delta", "introspect", "ocsp", "other",
		"filter_file", "delta_file",
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
			v = sum_at(offsetof(struct slab, requests) +
			    (e * NCODES + i) * sizeof(_Atomic uint64_t));
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
	sbuf_adds(b, "# HELP revcheckd_http_response_bytes_total Response "
	    "body bytes queued, by endpoint (headers not counted).\n"
	    "# TYPE revcheckd_http_response_bytes_total counter\n");
	for (e = 0; e < EP_COUNT_; e++) {
		v = sum_at(offsetof(struct slab, bytes) +
		    e * sizeof(_Atomic uint64_t));
		if (v == 0)
			continue;
		sbuf_addf(b, "revcheckd_http_response_bytes_total{endpoint="
		    "\"%s\"} ", metrics_endpoint_name((enum metric_endpoint)e));
		sbuf_add_u64(b, v);
		sbuf_adds(b, "\n");
	}
}

/* Zeroes one slab (tests: no thread counts meanwhile). */
static void
slab_zero(struct slab *sl)
{
	_Atomic uint64_t *c = (_Atomic uint64_t *)(void *)sl;
	size_t i;

	for (i = 0; i < sizeof(*sl) / sizeof(*c); i++)
		atomic_store_explicit(&c[i], 0, memory_order_relaxed);
}

void
metrics_reset(void)
{
	struct slab *sl;

	slab_zero(&shared);
	for (sl = perthread_first(&slabs); sl != NULL;
	    sl = perthread_next(sl))
		slab_zero(sl);
}
