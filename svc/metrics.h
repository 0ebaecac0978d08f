/* metrics.h - counters and histograms per thread, summed when read */
#ifndef REVCHECK_SVC_METRICS_H
#define REVCHECK_SVC_METRICS_H

#include <stdbool.h>
#include <stdint.h>

#include "sbuf.h"

/*
 * Each thread counts in its own slab of cache lines (perthread.h), so
 * requests answered on different cores never write a line in common;
 * metrics_get and the render functions sum the slabs. A count made by a
 * thread that has exited stays in the sum. Every function here is safe
 * from any thread and can't fail.
 */
enum metric {
	MET_CHECKS = 0,		/* keys answered (batch items count one each) */
	MET_FILTER_NEGATIVE,	/* zero bit: not_revoked from the filter */
	MET_FALLTHROUGH,	/* filter positive sent to the authority */
	MET_CONFIRMED_REVOKED,	/* authority said revoked */
	MET_FALSE_POSITIVE,	/* authority said not revoked */
	MET_NOT_COVERED,	/* scope not in the filter */
	MET_REFUSED_STALE,	/* requests refused: filter_stale */
	MET_REFUSED_NO_FILTER,	/* requests refused: no_filter */
	MET_AUTHORITY_UNAVAILABLE, /* positives with no authority answer */
	MET_AUTHORITY_BEHIND,	/* answered from an older filter: refused */
	MET_BAD_ITEMS,		/* batch items answered with an error */
	MET_SLOW_DROPPED,	/* connections dropped past their request deadline */
	MET_BODY_REFUSED,	/* requests refused: body memory cap reached */
	MET_RELOAD_ACCEPTED,
	MET_RELOAD_REJECTED,
	MET_DELTA_HITS,		/* keys the delta overlay decided */
	MET_DELTA_APPLIED,	/* deltas applied */
	MET_DELTA_REFUSED,	/* delta chain files refused */
	MET_CONFIG_RELOAD_APPLIED, /* SIGHUPs applied */
	MET_CONFIG_RELOAD_REFUSED, /* SIGHUPs refused: nothing changed */
	MET_FAST_PATH,		/* single checks the fast path answered */
	MET_HANDOFF,		/* connections it handed to libmicrohttpd */
	/* OCSP responses by what they say (handlers_ocsp.c), in this order */
	MET_OCSP_GOOD,
	MET_OCSP_REVOKED,
	MET_OCSP_UNKNOWN,
	MET_OCSP_MALFORMED,
	MET_OCSP_INTERNAL,
	MET_OCSP_TRYLATER,
	MET_OCSP_UNAUTHORIZED,
	MET_OCSP_SIGNATURES,	/* OCSP responses signed */
	MET_OCSP_CACHE_HITS,	/* OCSP responses served from the cache */
	MET_EXACT_NOT_REVOKED,	/* not_revoked from an exact scope */
	MET_EXACT_REVOKED,	/* revoked from an exact scope alone */
	MET_EXACT_UNPROVEN,	/* exact positives without proof of being in
				   the issued set: table or authority */
	MET_COUNT_
};

enum metric_endpoint {
	EP_CHECK = 0, EP_AUTHZ, EP_STATUS, EP_METRICS, EP_HEALTHZ, EP_READYZ,
	EP_FILTER, EP_DELTA, EP_INTROSPECT, EP_OCSP, EP_OTHER,
	EP_FILTER_FILE,		/* /v1/filter/V: immutable */
	EP_DELTA_FILE,		/* /v1/delta/V/SEQ: immutable */
	EP_COUNT_
};

void metrics_inc(enum metric m);
void metrics_add(enum metric m, uint64_t n);
uint64_t metrics_get(enum metric m);

/*
 * Counts kept by one request and added to the thread's counters once
 * (metrics_tally_flush): a batch of 1000 items costs a dozen adds instead
 * of thousands.
 */
struct metrics_tally {
	uint64_t	 n[MET_COUNT_];
};

/* Counts one event in t, or straight in the process counters if t is NULL. */
void metrics_tally_inc(struct metrics_tally *t, enum metric m);

/* Adds t to the process counters (or to this thread's capture) and zeroes it. */
void metrics_tally_flush(struct metrics_tally *t);

/*
 * Captures every count this thread makes into t (zeroed here) until
 * metrics_capture_end(), which adds them to the process counters when
 * keep is true and drops them otherwise: a request whose first pass is
 * thrown away (its answer waits on the authority and is made again)
 * counts once. One capture per thread at a time.
 */
void metrics_capture_begin(struct metrics_tally *t);
void metrics_capture_end(bool keep);

/* Counts one response by endpoint and HTTP status. Can't fail. */
void metrics_request(enum metric_endpoint ep, unsigned status);

/*
 * Counts n bytes of response body queued by endpoint (what the node
 * sends, headers aside: revcheckd_http_response_bytes_total). Can't fail.
 */
void metrics_response_bytes(enum metric_endpoint ep, uint64_t n);

/*
 * Latency histograms, Prometheus style: one add for the bucket and one
 * for the sum per observation, in the thread's slab, no lock. Requests by
 * endpoint (from the complete request to its queued response) and each
 * call to the upstream authority (one attempt). Negative or NaN seconds
 * count as 0. Can't fail.
 */
void metrics_observe_request(enum metric_endpoint ep, double seconds);
void metrics_observe_authority(double seconds);

/*
 * Appends revcheckd_http_request_duration_seconds{endpoint=...} and
 * revcheckd_authority_request_duration_seconds (buckets, _sum, _count;
 * endpoints never requested are left out), and the OCSP endpoint's
 * histogram again as revcheckd_ocsp_request_seconds (always).
 */
void metrics_render_histograms(struct sbuf *b);

/* Stable names: "checks", "filter_negative", ...; "check", "authz", ... */
const char *metrics_name(enum metric m);
const char *metrics_endpoint_name(enum metric_endpoint ep);

/*
 * Appends the request counters in Prometheus text format:
 * revcheckd_http_requests_total{endpoint="check",code="200"} N
 * (only non-zero series), then the body bytes by endpoint
 * (revcheckd_http_response_bytes_total, endpoints that sent any).
 */
void metrics_render_requests(struct sbuf *b);

/* Zeroes every counter (tests). */
void metrics_reset(void);

#endif
