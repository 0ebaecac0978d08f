/* server.h - the HTTP front: libmicrohttpd setup, routing, bodies, replies */
#ifndef REVCHECK_SVC_SERVER_H
#define REVCHECK_SVC_SERVER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <microhttpd.h>

#include "live.h"
#include "config.h"
#include "loader.h"
#include "metrics.h"
#include "sbuf.h"
#include "snapshot.h"
#include "stale.h"
#include "trust.h"

struct check_settle;	/* check.h: an edge request's pending positives */
struct longpoll;	/* longpoll.h: requests held for a change */
struct reqstate;	/* server.c's own: one request's state */

/* What every handler may read. Owned by main; outlives the server. */
struct server_ctx {
	/* The configuration at start: what only a restart changes. */
	const struct config	*cfg;
	struct snapshot_slot	*slot;
	struct loader		*loader;
	/*
	 * The settings in force (live.h): the staleness policy, the trusted
	 * issuers, every per-request setting. Each request reads one
	 * generation, as r->live.
	 */
	struct live_slot	*live;
	int64_t			 started_at;
	_Atomic bool		 draining;	/* replies carry Connection: close */
	/*
	 * Edge hook: adds more members to the /v1/status object (for
	 * example "sync":{...}). NULL on an origin.
	 */
	void			(*status_extra)(cJSON *root, void *arg);
	void			*status_extra_arg;
	/* Edge hook: appends more series to /metrics. NULL on an origin. */
	void			(*metrics_extra)(struct sbuf *b, void *arg);
	void			*metrics_extra_arg;
	/*
	 * Edge hook: settles a request's positives off the worker threads
	 * (the contract of upstream_settle); the request is suspended
	 * meanwhile and its handler runs again once done(done_arg) is
	 * called. NULL: positives are settled inside the handler.
	 */
	int			(*settle)(void *arg, struct check_settle *st,
				    void (*done)(void *), void *done_arg);
	void			*settle_arg;
	/* Edge hook: why positives cannot be settled now, or NULL (/readyz). */
	const char		*(*degraded)(void *arg);
	void			*degraded_arg;
	/* Set by server_start: the requests held (server_hold). */
	struct longpoll		*longpoll;
};

/* One request as a handler sees it; body is NUL-terminated (may be ""). */
struct server_req {
	struct MHD_Connection	*conn;
	struct server_ctx	*ctx;
	struct live		*live;		/* in force for this call */
	const char		*method;
	const char		*version;	/* "HTTP/1.1", ...; may be NULL */
	const char		*url;
	const char		*body;
	size_t			 body_len;
	enum metric_endpoint	 ep;
	bool			 close;		/* reply with Connection: close */
	double			 started;	/* monotonic, for the histogram */
	/* The request's positives (server.c); a reply queued while some
	 * are pending is dropped and the handler runs again later. */
	struct check_settle	**settle;
	bool			*deferred;
	struct reqstate		*st;		/* server.c's (server_hold) */
};

/*
 * Header names and values written by both libmicrohttpd's path
 * (server_queue and the handlers) and the fast path's own head
 * (fastpath.c): one spelling, so that the two answers stay alike.
 */
#define HDR_STATUS		"X-Revcheck-Status"
#define HDR_FILTER_VERSION	"X-Revcheck-Filter-Version"
#define HDR_DELTA_SEQ		"X-Revcheck-Delta-Seq"
#define HDR_CACHE		"Cache-Control"
#define HDR_CACHE_DEFAULT	"no-store"
#define HDR_NOSNIFF		"X-Content-Type-Options"
#define HDR_NOSNIFF_VALUE	"nosniff"
#define CTYPE_JSON		"application/json"

struct server_hdr {
	const char	*name;
	const char	*value;
};

struct server;

/*
 * Starts listening on ctx->cfg->listen with worker threads, always with a
 * connection timeout, a connection limit, a per-IP limit and the body
 * cap. Returns the server or NULL with err.
 */
struct server *server_start(struct server_ctx *ctx, char *err, size_t errlen);

/*
 * Stops accepting, waits up to drain_ms for requests in flight to finish,
 * then stops the workers and frees the server. NULL-safe.
 */
void server_stop(struct server *s, unsigned drain_ms);

/*
 * Hands a connected stream socket to the server as if it had been
 * accepted on the listening socket, so it takes the same libmicrohttpd
 * connection path (fuzzing and tests: one end of a socketpair). The peer
 * counts as a unix-socket peer (no per-IP limit). fd is taken over and
 * closed by the server, on failure too. Returns 0, or -1.
 */
int server_add_connection(struct server *s, int fd);

/*
 * The fast path's hand-off (fastpath.h): libmicrohttpd takes fd, accepted
 * from peer, as one of its connections, whose next request (headers and
 * body) must be in by deadline (monotonic), the one it had on the fast
 * path, not conn_timeout from now. -1: refused (its limits), and fd is
 * closed.
 */
int server_take_connection(struct server *s, int fd,
    const struct sockaddr *peer, socklen_t peerlen, double deadline);

/* The port the fast path listens on (":0" picks one), 0 without it. */
unsigned server_fast_port(const struct server *s);

/*
 * Asks the server's own /healthz over loopback (the listen address, or
 * the loopback of its family for a wildcard address) and waits at most
 * timeout_ms. Returns 0 when it answered 200, -1 otherwise. For the
 * systemd watchdog: proof that the workers serve, not only that the
 * main loop runs.
 */
int server_probe(const struct server *s, unsigned timeout_ms);

/*
 * Shuts down connections that have not completed a request, headers and
 * body, within conn_timeout of opening or of their previous request
 * (trickling defeats libmicrohttpd's idle timeout). The deadline stops
 * once the whole request is in and its handler runs. Called from the
 * main loop about once a second. Returns how many were dropped.
 */
unsigned server_sweep(struct server *s);

/* Requests being handled right now (drain, tests). */
unsigned long server_inflight(void);

/* How many times the request carries header name (case-insensitive). */
unsigned server_header_count(struct MHD_Connection *conn, const char *name);
/* The same for query parameter name (as libmicrohttpd looks them up). */
unsigned server_arg_count(struct MHD_Connection *conn, const char *name);

/*
 * Queues a reply and counts it. body is malloc'ed and taken over (freed
 * even on failure); NULL with len 0 sends an empty body. hdrs may be NULL.
 * Returns MHD_YES, or MHD_NO when the connection should be closed.
 */
enum MHD_Result server_reply(const struct server_req *r, unsigned status,
    char *body, size_t len, const char *ctype, const struct server_hdr *hdrs,
    size_t nhdrs);

/*
 * Same with a response built by the caller, which this call destroys.
 * Adds ctype, hdrs, the default Cache-Control (no-store) when hdrs has
 * none, nosniff, and Connection: close while draining.
 */
enum MHD_Result server_queue(const struct server_req *r, unsigned status,
    struct MHD_Response *resp, const char *ctype,
    const struct server_hdr *hdrs, size_t nhdrs);

/*
 * Holds the request (suspended, no thread: longpoll.h) until the next
 * change of the snapshot in service or until secs seconds after its
 * handler first asked to be held, whichever comes first; then the
 * handler runs again. gen is longpoll_gen() read before the handler
 * looked at the snapshot. Returns 1 when held (the handler returns
 * MHD_YES and queues nothing), -1 when a change came since gen (look
 * again with a new gen), 0 when the handler must answer now: its wait
 * is over, or longpoll_max requests are held already (counted), or the
 * server is stopping.
 */
int server_hold(const struct server_req *r, unsigned secs, uint64_t gen);

/*
 * Appends the error object {"error": code, "message": msg}, both strings
 * escaped: the shape of every error answer, and of a batch item or chain
 * certificate that gets none. Can't fail (sbuf's sticky error).
 */
void server_render_error(struct sbuf *b, const char *code, const char *msg);

/*
 * Replies {"error": code, "message": msg} with the given status. Adds
 * Retry-After for 503 when retry_after > 0. msg must not hold raw input
 * (it is escaped anyway).
 */
enum MHD_Result server_error(const struct server_req *r, unsigned status,
    const char *code, const char *msg, unsigned retry_after);

/*
 * The fast path's GET /v1/check (fastpath.c), answered as check_get
 * answers it when that is a 200 decided now: the body is appended to b,
 * status is its X-Revcheck-Status, ver and seq its X-Revcheck-Filter-
 * Version and -Delta-Seq (seq "" for none). -1 for anything else (a bad
 * id or scope, no fresh filter, a positive the authority must settle):
 * libmicrohttpd's path answers that request, as it answers all others,
 * and nothing this call counted stays counted. scope NULL: the default.
 */
struct check_fast {
	const char	*status;
	char		 ver[24];
	char		 seq[24];
};
int check_get_fast(const struct server_ctx *ctx, const struct live *lv,
    const char *id, size_t id_len, const char *scope, size_t scope_len,
    struct sbuf *b, struct check_fast *out);

/* Handlers (handlers_check.c, handlers_admin.c). */
enum MHD_Result handle_check(const struct server_req *r);
enum MHD_Result handle_authz(const struct server_req *r);
enum MHD_Result handle_introspect(const struct server_req *r);
enum MHD_Result handle_status(const struct server_req *r);
enum MHD_Result handle_metrics(const struct server_req *r);
enum MHD_Result handle_healthz(const struct server_req *r);
enum MHD_Result handle_readyz(const struct server_req *r);
enum MHD_Result handle_filter(const struct server_req *r);
/*
 * GET /v1/delta?base=V&after=N: the delta files after N of the chain in
 * service over base V, back to back, then its head (an origin serving a
 * chain from its filter directory). ETag/If-None-Match: 304. 409
 * other_base when V is not the base in service, 404 no_chain without a
 * chain.
 */
enum MHD_Result handle_delta(const struct server_req *r);

/*
 * The OCSP responder (handlers_ocsp.c): POST PATH with a DER
 * OCSPRequest, or GET PATH/BASE64 (RFC 6960 appendix A, RFC 5019).
 * Once routed, every answer is 200 with an application/ocsp-response
 * body, an OCSP error status included (docs/API.md).
 */
enum MHD_Result handle_ocsp(const struct server_req *r);

/* Appends the OCSP series to /metrics (handlers_ocsp.c). */
void ocsp_metrics(struct sbuf *b, const struct live *lv);

#endif
