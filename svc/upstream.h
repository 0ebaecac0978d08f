/* upstream.h - the edge's authority: filter positives settled by the origin's /v1/check */
#ifndef REVCHECK_SVC_UPSTREAM_H
#define REVCHECK_SVC_UPSTREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "check.h"
#include "revkey.h"
#include "sbuf.h"
#include "snapshot.h"

/*
 * An edge node has no authoritative table: a filter positive is sent to
 * the origin's POST /v1/check as {"id", "scope"} and the origin's answer
 * is returned. Whenever the origin cannot give a clear answer (connection
 * error, timeout, a status other than 200, a body that is not the answer
 * to the question asked) the check is unavailable and the daemon replies
 * 503 authority_unavailable: an edge never turns a positive into
 * not_revoked on its own.
 *
 * libcurl handles are pooled (taken by one request at a time, returned
 * after), so connections to the origin are reused across requests and
 * server threads. curl_global_init() must have been called before
 * upstream_new() and curl_global_cleanup() only after upstream_free().
 */
/*
 * The defaults of the config keys upstream_retries, upstream_connect_timeout
 * and upstream_timeout (config_init() takes them from here).
 */
#define UPSTREAM_RETRIES		2	/* extra attempts after a failure */
#define UPSTREAM_CONNECT_TIMEOUT	2	/* seconds */
#define UPSTREAM_TIMEOUT		4	/* seconds per attempt, all in */
#define UPSTREAM_MAX_ANSWER		(64 * 1024)
#define UPSTREAM_POOL_MAX		64	/* idle handles kept */

struct upstream;

/* How hard a check tries; the config keys of the same names. */
struct upstream_limits {
	int64_t		timeout;	/* seconds per attempt, all included */
	int64_t		connect_timeout; /* seconds, at most timeout */
	unsigned	retries;	/* extra attempts after a failure */
	const char	*ca_file;	/* CA bundle for TLS; NULL: the system's */
	bool		allow_http;	/* upstream_insecure_http */
};

/*
 * A client for url that keeps to lim (copied, ca_file too; both timeouts
 * > 0). url is https:// (peers and host names always verified against
 * lim.ca_file or the system's CAs), or http:// only with lim.allow_http.
 * Returns it, or NULL with err.
 */
struct upstream *upstream_new(const char *url,
    const struct upstream_limits *lim, char *err, size_t errlen);

/* Frees the client and its pooled handles. No request may be running. NULL-safe. */
void upstream_free(struct upstream *u);

/*
 * The check_authority_fn for check_set_authority(), arg being a struct
 * upstream: asks the origin about k, with up to lim.retries retries on
 * transport errors and 5xx replies, each attempt bounded by lim.timeout.
 * Fills r and returns 0 when the origin answered for exactly this scope
 * and id from a filter version at least s->version (the edge's own);
 * returns -1 otherwise, with r->fail CHECK_FAIL_BEHIND when the origin
 * answered from an older version (it may not know a revocation the edge's
 * filter holds) and CHECK_FAIL_UNAVAILABLE for every other failure.
 * Safe from many threads at once.
 */
int upstream_check(void *arg, const struct snapshot *s,
    const struct revkey *k, struct check_result *r);

/*
 * Appends ,"authority":{"url", "answered", "failed", "behind",
 * "retries", "last_error"} for /v1/status.
 */
void upstream_status(struct upstream *u, struct sbuf *b);

/* Appends the revcheckd_upstream_* series in Prometheus text format. */
void upstream_metrics(struct upstream *u, struct sbuf *b);

#endif
