/* sync.h - edge mode: the filter sync loop and the upstream authority */
#ifndef REVCHECK_SVC_SYNC_H
#define REVCHECK_SVC_SYNC_H

#include "check.h"
#include "config.h"
#include "loader.h"
#include "sbuf.h"
#include "snapshot.h"

/*
 * An edge node downloads the signed filter from upstream_filter every
 * sync_interval seconds with a conditional GET (If-None-Match: the last
 * ETag), verifies it exactly as a local load does (loader_accept: pinned
 * keys, format, freshness, no rollback, same version with other bytes
 * refused), writes it atomically to STATE_DIR/SYNC_PERSIST_NAME and swaps
 * it in. A failed sync keeps the previous filter; it is logged, counted
 * and shown in the "sync" block of /v1/status.
 *
 * A version counts as seen upstream only once its signature verifies.
 * When a seen version is newer than the one serving and cannot be
 * loaded, the slot's newer_seen_at is set, and after max_lag seconds the
 * filter counts as stale (stale_check, STALE_LAG).
 *
 * Downloads: http and https only (redirects too), TLS always verified,
 * the size capped at max_download while the bytes arrive, bounded by
 * sync_connect_timeout and sync_timeout, aborted at once by sync_stop().
 */
#define SYNC_PERSIST_NAME	"edge-filter.rcf"
#define SYNC_LOW_SPEED_TIME	30	/* seconds below 1 byte/s aborts */
#define SYNC_MAX_REDIRS		3
#define SYNC_RECHECK_REFUSED	300	/* seconds before refused bytes are judged again */

struct sync;

/*
 * Starts edge mode for c (c->upstream_filter set): calls
 * curl_global_init(), registers the upstream authority with
 * check_set_authority() when c->upstream_check is set, loads the filter
 * persisted in the state directory when it is still acceptable (before
 * any network traffic), then starts the sync thread, whose first sync
 * runs at once. c, l and sl must outlive the sync. Returns the sync, or
 * NULL with err (nothing left running).
 */
struct sync *sync_start(const struct config *c, struct loader *l,
    struct snapshot_slot *sl, char *err, size_t errlen);

/*
 * Stops the thread (aborting a download in flight), unregisters the
 * authority, frees everything and calls curl_global_cleanup(). The HTTP
 * server must be stopped first. NULL-safe.
 */
void sync_stop(struct sync *s);

/* Asks for a sync now instead of at the end of the interval (SIGHUP). */
void sync_kick(struct sync *s);

/*
 * SIGHUP: the authority client takes c's upstream_timeout,
 * upstream_connect_timeout, upstream_retries and upstream_max_waiting
 * (upstream_set_limits). The sync settings are fixed at start. NULL-safe.
 */
void sync_set_limits(struct sync *s, const struct config *c);

/*
 * For server_ctx.settle (arg is the struct sync): upstream_settle() on
 * the edge's authority. -1 at once without one, or when it is full.
 */
int sync_settle(void *arg, struct check_settle *st, void (*done)(void *),
    void *done_arg);

/* For server_ctx.degraded: upstream_degraded(), NULL without an authority. */
const char *sync_degraded(void *arg);

/*
 * Settles nothing more: fails what waits on the authority so that every
 * suspended request is answered (503). Call before the HTTP server stops.
 * NULL-safe.
 */
void sync_quiesce(struct sync *s);

/*
 * For server_ctx.status_extra: adds "sync":{...} and, with an upstream
 * authority, "authority":{...}. arg is the struct sync.
 */
void sync_status_json(cJSON *root, void *arg);

/* For server_ctx.metrics_extra: the revcheckd_sync_* series. */
void sync_metrics(struct sbuf *b, void *arg);

#endif
