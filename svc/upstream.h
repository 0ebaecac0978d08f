/* upstream.h - the edge's authority: filter positives settled by the origin's /v1/check */
#ifndef REVCHECK_SVC_UPSTREAM_H
#define REVCHECK_SVC_UPSTREAM_H

#include <stdbool.h>
#include <stdint.h>

#include <curl/curl.h>

#include "check.h"
#include "revkey.h"
#include "sbuf.h"
#include "snapshot.h"

/*
 * An edge node has no authoritative table: filter positives are sent to
 * the origin's POST /v1/check and the origin's answers are returned.
 * Whenever the origin cannot give a clear answer (connection error,
 * timeout, a status other than 200, a body that is not the answer to the
 * question asked, an answer from a filter older than the edge's) the
 * check is unavailable and the daemon replies 503: an edge never turns a
 * positive into not_revoked on its own.
 *
 * The calls run on a pool of lim.concurrency threads of their own, each
 * with its own libcurl handle (connections to the origin are reused), so
 * no HTTP worker ever waits on the origin: a request with positives hands
 * them over (upstream_settle) and is suspended until they are settled.
 * All of one request's distinct positives go to the origin as one batch
 * ({"items": [...]}, in chunks of UPSTREAM_BATCH), under one deadline for
 * all its attempts: (retries + 1) x timeout from when it was first asked.
 * At most lim.max_waiting requests wait on the authority at once; past
 * that a request is refused at once. curl_global_init() must have been
 * called before upstream_new() and curl_global_cleanup() only after
 * upstream_free().
 */
#define UPSTREAM_BATCH			500	/* keys per request to the origin */
#define UPSTREAM_MAX_ANSWER		(8 * 1024 * 1024)

struct upstream;

/* How hard a check tries; the config keys of the same names. */
struct upstream_limits {
	int64_t		timeout;	/* seconds per attempt, all included */
	int64_t		connect_timeout; /* seconds, at most timeout */
	unsigned	retries;	/* extra attempts after a failure */
	unsigned	concurrency;	/* pool threads, >= 1 */
	unsigned	max_waiting;	/* requests settling at once, >= 1 */
	const char	*ca_file;	/* CA bundle for TLS; NULL: the system's */
	bool		allow_http;	/* upstream_insecure_http */
};

/*
 * A client for url that keeps to lim (copied, ca_file too; both timeouts
 * > 0), with its pool threads started. url is https:// (peers and host
 * names always verified against lim.ca_file or the system's CAs), or
 * http:// only with lim.allow_http. Returns it, or NULL with err.
 */
struct upstream *upstream_new(const char *url,
    const struct upstream_limits *lim, char *err, size_t errlen);

/*
 * Fails every queued request and aborts the transfers in flight (their
 * keys fail as unavailable, their done callbacks run), then waits until
 * no request is settling. Later requests are refused at once. For
 * shutdown: call it before the HTTP server stops. NULL-safe.
 */
void upstream_quiesce(struct upstream *u);

/* Quiesces, stops the threads, frees the client. NULL-safe. */
void upstream_free(struct upstream *u);

/*
 * Settles st->keys[st->asked..st->n) on a pool thread: each gets its
 * outcome in st->res and st->rc (0 answered, -1 with res.fail
 * CHECK_FAIL_BEHIND when the origin answered from a filter version below
 * the one the key was asked for, CHECK_FAIL_UNAVAILABLE otherwise), then
 * st->asked becomes st->n and done(arg) is called on that thread. st
 * must stay valid until then. Sets st->deadline on first use. Returns 0,
 * or -1 at once (nothing called, st untouched) when lim.max_waiting
 * requests are already settling or the client is quiescing.
 */
int upstream_settle(struct upstream *u, struct check_settle *st,
    void (*done)(void *), void *arg);

/*
 * The check_authority_fn for check_set_authority(), arg being a struct
 * upstream: settles k in the calling thread (the same questions, answers
 * and deadline as upstream_settle, for callers without a settle slot).
 * Fills r and returns 0, or returns -1 with r->fail set.
 * Safe from many threads at once.
 */
int upstream_check(void *arg, const struct snapshot *s,
    const struct revkey *k, struct check_result *r);

/*
 * SIGHUP: takes lim's timeout, connect_timeout, retries and max_waiting
 * (the rest is fixed at upstream_new). A request already settling keeps
 * the deadline it was given; its later attempts use the new timeouts.
 * Safe from any thread. NULL-safe.
 */
void upstream_set_limits(struct upstream *u,
    const struct upstream_limits *lim);

/*
 * Why positives cannot be settled now ("authority_unavailable" after a
 * request to the origin failed and none has succeeded since,
 * "authority_behind" when its last answer was from an older filter,
 * "authority_busy" while lim.max_waiting requests wait), or NULL.
 */
const char *upstream_degraded(struct upstream *u);

/*
 * Adds "authority":{"url", "answered", "failed", "behind",
 * "retries", "requests", "waiting", "refused_busy", "degraded",
 * "last_error"} for /v1/status.
 */
void upstream_status(struct upstream *u, cJSON *root);

/*
 * A CURLOPT_XFERINFOFUNCTION whose data is an _Atomic bool: aborts the
 * transfer once it is true (shutdown). Shared with the filter sync.
 */
int upstream_xfer_abort(void *arg, curl_off_t dt, curl_off_t dn,
    curl_off_t ut, curl_off_t un);

/* Appends the revcheckd_upstream_* series in Prometheus text format. */
void upstream_metrics(struct upstream *u, struct sbuf *b);

#endif
