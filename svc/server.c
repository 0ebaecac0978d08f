/* server.c - the HTTP front: libmicrohttpd setup, routing, bodies, replies */
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "fasthead.h"
#include "fastpath.h"
#include "log.h"
#include "longpoll.h"
#include "perthread.h"
#include "sbuf.h"
#include "check.h"
#include "server.h"
#include "util.h"

enum {
	M_GET = 1, M_HEAD = 2, M_POST = 4, M_ANY = 0xff,
};

struct route {
	const char	*path;
	enum metric_endpoint ep;
	unsigned	 methods;
	unsigned	 body_methods;	/* methods whose body the handler reads */
	const char	*allow;		/* Allow header for 405 */
	enum MHD_Result	(*fn)(const struct server_req *);
	const char	*body_type;	/* NULL: application/json */
};

static const struct route routes[] = {
	{ "/v1/check", EP_CHECK, M_GET | M_HEAD | M_POST, M_POST,
	    "GET, HEAD, POST", handle_check, NULL },
	{ "/v1/authz", EP_AUTHZ, M_ANY, 0, NULL, handle_authz, NULL },
	{ "/v1/introspect", EP_INTROSPECT, M_POST, M_POST, "POST",
	    handle_introspect, "application/x-www-form-urlencoded" },
	{ "/v1/status", EP_STATUS, M_GET | M_HEAD, 0, "GET, HEAD",
	    handle_status, NULL },
	{ "/v1/filter", EP_FILTER, M_GET | M_HEAD, 0, "GET, HEAD",
	    handle_filter, NULL },
	{ "/v1/delta", EP_DELTA, M_GET | M_HEAD, 0, "GET, HEAD",
	    handle_delta, NULL },
	{ "/metrics", EP_METRICS, M_GET | M_HEAD, 0, "GET, HEAD",
	    handle_metrics, NULL },
	{ "/healthz", EP_HEALTHZ, M_GET | M_HEAD, 0, "GET, HEAD",
	    handle_healthz, NULL },
	/* Kubernetes' name for the liveness probe: the same answer. */
	{ "/livez", EP_HEALTHZ, M_GET | M_HEAD, 0, "GET, HEAD",
	    handle_healthz, NULL },
	{ "/readyz", EP_READYZ, M_GET | M_HEAD, 0, "GET, HEAD",
	    handle_readyz, NULL },
	/* Prefixes (a path ending in '/'): the immutable names. */
	{ "/v1/filter/", EP_FILTER_FILE, M_GET | M_HEAD, 0, "GET, HEAD",
	    handle_filter, NULL },
	{ "/v1/delta/", EP_DELTA_FILE, M_GET | M_HEAD, 0, "GET, HEAD",
	    handle_delta, NULL },
};
#define NROUTES (sizeof(routes) / sizeof(routes[0]))

/* The OCSP responder: its path is a setting (ocspd_route). */
static const struct route ocsp_route = {
	NULL, EP_OCSP, M_GET | M_HEAD | M_POST, M_POST, "GET, HEAD, POST",
	handle_ocsp, "application/ocsp-request",
};

/* First allocation for a body; it doubles as data arrives. */
#define BODY_START	((size_t)64 * 1024)

/*
 * The most whitespace between a header's colon and its value that
 * check_field reads through; more is refused.
 */
#define MAX_FIELD_OWS	4096

/* Bytes of an over-cap chunked body drained before hanging up. */
#define DRAIN_MAX	(UINT64_C(1) << 20)

/*
 * Where a request is. libmicrohttpd calls on_access once the headers are
 * in, once per piece of body, once more at the end of the body, and
 * again after a suspended request resumes; the phase says which call
 * this is. on_uri starts every request (NEW or BAD_URI), on_completed
 * ends it (IDLE):
 *
 *   NEW, BAD_URI  --first call-->  ANSWERED (refused: a reply is queued)
 *                                  NO_BODY  (routed, nothing announced)
 *                                  BODY     (routed, a body announced)
 *   NO_BODY       --next call-->   ANSWERED (the handler ran)
 *   BODY          --body pieces--> BODY; --end of body--> ANSWERED
 *   ANSWERED      --any call-->    ANSWERED (what else is sent is dropped)
 *   any handler run               DEFERRED (suspended until its
 *                                  positives settle, on an edge)
 *   DEFERRED      --resumed-->     ANSWERED or DEFERRED (handler ran again)
 */
enum req_phase {
	REQ_IDLE = 0,	/* between requests */
	REQ_NEW,	/* on_uri passed it; on_access not called yet */
	REQ_BAD_URI,	/* on_uri refused the raw URI: 400 at the first call */
	REQ_NO_BODY,	/* routed, no body: the handler runs at the next call */
	REQ_BODY,	/* reading (or discarding) the announced body */
	REQ_DEFERRED,	/* suspended until its positives are settled */
	REQ_ANSWERED,	/* its reply is queued */
};

/*
 * One request's state. It lives in its connection's conn_track (one
 * request at a time per connection), so a request allocates nothing but
 * its body; only a connection that could not be tracked gets one of its
 * own (ct NULL), freed by on_completed.
 */
struct reqstate {
	enum req_phase	 phase;
	struct conn_track *ct;		/* its connection, or NULL */
	const struct route *rt;		/* set from NO_BODY and BODY on */
	char		*body;
	size_t		 len;
	size_t		 cap;		/* reserved from body_bytes too */
	uint64_t	 seen;
	bool		 keep;		/* accumulate (else discard) */
	bool		 too_large;	/* over the cap: 413 at the end */
	double		 started;	/* when its handler first ran */
	struct check_settle *settle;	/* its positives (edge), or NULL */
	const char	*bad_uri;	/* REQ_BAD_URI: why (static) */
	struct longpoll_node hold;	/* held for a change (server_hold) */
};

struct server {
	struct MHD_Daemon	*d;
	struct server_ctx	*ctx;
	struct fastpath		*fp;	/* owns the listening socket, or NULL */
	unsigned		 port;	/* the fast path's, bound */
};

/*
 * libmicrohttpd's connection timeout is an idle timeout: a client that
 * trickles one byte a second is never idle and never dropped. Every
 * connection is therefore tracked with one deadline for its next
 * request, headers and body (conn_timeout after it opened or after its
 * last request ended; cleared when the handler runs); server_sweep()
 * shuts down those past it. The list
 * lock also orders the sweep against the close notification, which
 * libmicrohttpd sends before it closes the socket, so a swept fd is
 * never one already reused by another connection. A request moves its
 * connection's deadline without the lock (an atomic store into its own
 * entry, which only the close notification frees, on the connection's
 * own thread, or the request's on_completed when the connection closed
 * in the middle of it): the lock is taken per connection, never per
 * request. The entry also holds the connection's current request.
 */
struct conn_track {
	struct conn_track *prev;
	struct conn_track *next;
	MHD_socket	 fd;
	_Atomic double	 deadline;	/* monotonic; 0 while in a request */
	bool		 closed;	/* closed in a request: on_completed frees */
	struct reqstate	 req;		/* the request on this connection */
};

static pthread_mutex_t track_mu = PTHREAD_MUTEX_INITIALIZER;

/*
 * Connections the fast path handed over, each with the deadline it had
 * there (fastpath.c): on_connection starts a handed connection's deadline
 * from it rather than afresh, or a client idle on the fast path that then
 * trickles a head would have conn_timeout twice. libmicrohttpd takes a
 * handed connection on its worker thread within moments; an entry older
 * than HANDED_STALE (never taken: closed on the way) is dropped, so a
 * later connection on the same fd never inherits it. Under track_mu.
 */
struct handed {
	struct handed	*next;
	int		 fd;
	double		 at;		/* monotonic: when handed */
	double		 deadline;
};
#define HANDED_STALE	5.0
static struct handed *handed_list;

/* The deadline the fast path gave fd, or def; the entry goes. */
static double
handed_take(int fd, double def)
{
	struct handed *h, **ph;
	double now = util_monotime(), d = def;

	for (ph = &handed_list; (h = *ph) != NULL;) {
		if (h->fd == fd || now - h->at > HANDED_STALE) {
			if (h->fd == fd && now - h->at <= HANDED_STALE &&
			    h->deadline < d)
				d = h->deadline;
			*ph = h->next;
			free(h);
		} else
			ph = &h->next;
	}
	return d;
}
static struct conn_track track_head = { .prev = &track_head,
    .next = &track_head, .fd = MHD_INVALID_SOCKET };


/*
 * Requests being handled, counted per thread (perthread.h) so that no
 * two requests write the same cache line: a thread adds one when a
 * request starts and takes one away when it ends (libmicrohttpd runs
 * both on the connection's thread; the sum is right either way).
 */
struct inflight_slot {
	_Atomic long	 n;
};

static struct perthread inflight_slots =
    PERTHREAD_INIT(sizeof(struct inflight_slot));
static _Thread_local struct inflight_slot *inflight_mine;
static _Atomic long inflight_shared;	/* a thread without a slot */

static void
inflight_add(long d)
{
	struct inflight_slot *sl = inflight_mine;

	if (sl == NULL && (sl = perthread_get(&inflight_slots,
	    (void **)&inflight_mine)) == NULL) {
		atomic_fetch_add(&inflight_shared, d);
		return;
	}
	atomic_store_explicit(&sl->n, atomic_load_explicit(&sl->n,
	    memory_order_relaxed) + d, memory_order_release);
}

/*
 * Bytes of request bodies buffered right now, across all connections,
 * and the cap (max_body_total): without it, thousands of connections
 * that never finish their bodies pin max_body each.
 */
static _Atomic uint64_t body_bytes;
static uint64_t body_cap;

/* Takes n bytes from the body budget. False (nothing taken) past the cap. */
static bool
body_reserve(size_t n)
{
	uint64_t cur = atomic_load(&body_bytes);

	do {
		if (n > body_cap || cur > body_cap - n)
			return false;
	} while (!atomic_compare_exchange_weak(&body_bytes, &cur, cur + n));
	return true;
}

static void
body_release(size_t n)
{
	atomic_fetch_sub(&body_bytes, n);
}

/* Gives back what a request holds: its body and its positives. */
static void
req_release(struct reqstate *st)
{
	free(st->body);
	body_release(st->cap);
	check_settle_free(st->settle);
	st->body = NULL;
	st->cap = 0;
	st->settle = NULL;
}

/* Sets the deadline of the request's connection (see conn_track). */
static void
req_deadline(const struct reqstate *st, double deadline)
{
	if (st->ct != NULL)
		atomic_store(&st->ct->deadline, deadline);
}

/*
 * Why the raw request URI (before libmicrohttpd unescapes it, which
 * takes a malformed escape such as "%zz" or a lone "%" literally) is
 * refused, or NULL when it is acceptable: no malformed escape, no control
 * byte anywhere, no escaped NUL in the path, which would cut the path
 * short where it is compared, no raw "+" in the query, and no raw
 * space or "#" (libmicrohttpd takes both into the URL).
 * libmicrohttpd decodes a query's "+" as a space (form encoding), while
 * a client that pastes a base64 token id into a URL means a plus: the
 * two ids differ, and the wrong one would be checked. "%2B" and "%20"
 * say which.
 */
static const char *
uri_refused(const char *uri)
{
	static const char bad[] = "malformed percent-encoding or control "
	    "bytes in the URL";
	const unsigned char *p;
	bool in_path = true;

	for (p = (const unsigned char *)uri; *p != '\0'; p++) {
		if (*p < 0x20 || *p == 0x7f)
			return bad;
		if (*p == '?')
			in_path = false;
		if (*p == '+' && !in_path)
			return "a raw '+' in the query is ambiguous (a space "
			    "in form encoding): send %2B for a plus, %20 "
			    "for a space";
		/*
		 * Neither is part of a request target (RFC 9112 3.2): a
		 * reader that splits the request line at the first space,
		 * or drops a fragment, sees another id than "tok-1 x" or
		 * "tok-1#x".
		 */
		if (*p == ' ' || *p == '#')
			return "a raw space or '#' in the URL: send %20 or "
			    "%23";
		if (*p != '%')
			continue;
		if (util_hexval((unsigned char)p[1]) < 0 ||
		    util_hexval((unsigned char)p[2]) < 0)
			return bad;
		if (in_path && p[1] == '0' && p[2] == '0')
			return bad;
		p += 2;
	}
	return NULL;
}

/*
 * Starts every request: its state (the connection's, or one of its own
 * when the connection is untracked) becomes the request's con_cls, NEW,
 * or BAD_URI when the raw URI is refused, which on_access answers 400
 * before routing. NULL (out of memory) makes on_access close the
 * connection.
 */
static void *
on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci;
	struct conn_track *ct = NULL;
	struct reqstate *st;

	(void)cls;
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	if (ci != NULL)
		ct = ci->socket_context;
	if (ct != NULL) {
		st = &ct->req;
		/* on_completed ended the last one; never leak if it did not. */
		req_release(st);
		memset(st, 0, sizeof(*st));
		st->ct = ct;
	} else if ((st = calloc(1, sizeof(*st))) == NULL)
		return NULL;
	st->bad_uri = uri_refused(uri);
	st->phase = st->bad_uri == NULL ? REQ_NEW : REQ_BAD_URI;
	return st;
}

struct field_check {
	bool		 fold;		/* whitespace before a colon, obs-fold */
	unsigned	 hosts;
	unsigned	 clen;
	unsigned	 te;
};

/*
 * One header field as libmicrohttpd parsed it. libmicrohttpd 0.9.75 (its
 * strictness options either require Host or refuse whitespace before a
 * colon, never both, and neither refuses obs-fold) takes whitespace
 * before the colon into the name ("Transfer-Encoding "), and a folded
 * line onto the name of the field before it, which it copies out of the
 * request: "X-A: b" folded with " Transfer-Encoding: chunked" reads as
 * a field "X-ATransfer-Encoding: chunked" with value "b", and
 * "Content-Length: 1" folded with " 0" as "Content-Length0". Every field
 * it did not copy lies where it was read, its value after its name's
 * colon (a NUL now) and the whitespace it skipped: a field that does not
 * was folded, even when the fold added only name bytes.
 */
static enum MHD_Result
check_field(void *cls, enum MHD_ValueKind kind, const char *key,
    const char *value)
{
	struct field_check *fc = cls;
	uintptr_t k = (uintptr_t)key, v = (uintptr_t)value;
	size_t i, klen, gap;

	(void)kind;
	if (key == NULL || value == NULL)
		return MHD_YES;
	klen = strcspn(key, " \t");
	if (key[klen] != '\0' || klen == 0 || v <= k || v - k - 1 < klen ||
	    (gap = v - k - 1 - klen) > MAX_FIELD_OWS) {
		fc->fold = true;
		return MHD_NO;
	}
	for (i = 0; i < gap; i++)
		if (key[klen + 1 + i] != ' ' && key[klen + 1 + i] != '\t') {
			fc->fold = true;
			return MHD_NO;
		}
	if (strcasecmp(key, MHD_HTTP_HEADER_HOST) == 0)
		fc->hosts++;
	else if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0)
		fc->clen++;
	else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0)
		fc->te++;
	return MHD_YES;
}

/*
 * Why the request's head is refused by the rules that decide where a
 * request ends (RFC 9112 5.1, 5.2, 3.2, 6.1), or NULL: fasthead_judge's
 * rules, in its order and with its reasons, for what libmicrohttpd
 * parsed. Both framings at once is the request-smuggling shape (a proxy
 * in front may have framed the body the other way), and so are the
 * others: a proxy that reads the line otherwise frames the body
 * otherwise. Where this request ends is in doubt, so is the next one:
 * the caller closes the connection.
 */
static const char *
fields_refused(struct MHD_Connection *conn, const char *version)
{
	struct field_check fc = { false, 0, 0, 0 };

	MHD_get_connection_values(conn, MHD_HEADER_KIND, check_field, &fc);
	if (fc.fold)
		return FASTHEAD_FOLD_MSG;
	if (fc.clen > 0 && fc.te > 0)
		return FASTHEAD_CLTE_MSG;
	if (fc.hosts > 1)
		return FASTHEAD_HOST2_MSG;
	if (fc.hosts == 0 && version != NULL &&
	    strcmp(version, MHD_HTTP_VERSION_1_1) == 0)
		return FASTHEAD_NOHOST_MSG;
	return NULL;
}

struct hdr_count {
	const char	*name;
	unsigned	 n;
};

static enum MHD_Result
count_header(void *cls, enum MHD_ValueKind kind, const char *key,
    const char *value)
{
	struct hdr_count *hc = cls;

	(void)kind;
	(void)value;
	if (key != NULL && strcasecmp(key, hc->name) == 0)
		hc->n++;
	return MHD_YES;
}

unsigned
server_header_count(struct MHD_Connection *conn, const char *name)
{
	struct hdr_count hc = { name, 0 };

	MHD_get_connection_values(conn, MHD_HEADER_KIND, count_header, &hc);
	return hc.n;
}

unsigned
server_arg_count(struct MHD_Connection *conn, const char *name)
{
	struct hdr_count hc = { name, 0 };

	MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, count_header,
	    &hc);
	return hc.n;
}

unsigned long
server_inflight(void)
{
	const struct inflight_slot *sl;
	long n = atomic_load(&inflight_shared);

	for (sl = perthread_first(&inflight_slots); sl != NULL;
	    sl = perthread_next(sl))
		n += atomic_load_explicit(&sl->n, memory_order_acquire);
	return n > 0 ? (unsigned long)n : 0;
}

static void
on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
    enum MHD_ConnectionNotificationCode code)
{
	const struct server_ctx *ctx = cls;
	const union MHD_ConnectionInfo *ci;
	struct conn_track *ct;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		ci = MHD_get_connection_info(conn,
		    MHD_CONNECTION_INFO_CONNECTION_FD);
		if (ci == NULL || (ct = calloc(1, sizeof(*ct))) == NULL)
			return;	/* untracked: the idle timeout still holds */
		ct->fd = ci->connect_fd;
		pthread_mutex_lock(&track_mu);
		atomic_init(&ct->deadline, handed_take(ct->fd,
		    util_monotime() + ctx->cfg->conn_timeout));
		ct->next = track_head.next;
		ct->prev = &track_head;
		track_head.next->prev = ct;
		track_head.next = ct;
		pthread_mutex_unlock(&track_mu);
		*socket_context = ct;
		return;
	}
	if ((ct = *socket_context) == NULL)
		return;
	pthread_mutex_lock(&track_mu);
	ct->prev->next = ct->next;
	ct->next->prev = ct->prev;
	pthread_mutex_unlock(&track_mu);
	*socket_context = NULL;
	/* Closed in the middle of a request: its on_completed frees ct. */
	if (ct->req.phase != REQ_IDLE)
		ct->closed = true;
	else
		free(ct);
}

unsigned
server_sweep(struct server *s)
{
	struct conn_track *ct;
	double now = util_monotime(), d;
	unsigned n = 0;

	if (s == NULL)
		return 0;
	pthread_mutex_lock(&track_mu);
	for (ct = track_head.next; ct != &track_head; ct = ct->next) {
		/* A request that moved the deadline meanwhile wins. */
		d = atomic_load(&ct->deadline);
		if (d != 0 && now > d &&
		    atomic_compare_exchange_strong(&ct->deadline, &d, 0.0)) {
			shutdown(ct->fd, SHUT_RDWR);
			n++;
		}
	}
	pthread_mutex_unlock(&track_mu);
	if (n > 0) {
		metrics_add(MET_SLOW_DROPPED, n);
		log_info("dropped %u connection%s that did not complete a "
		    "request (headers and body) within %u s", n,
		    n == 1 ? "" : "s",
		    s->ctx->cfg->conn_timeout);
	}
	return n;
}

static unsigned
method_bit(const char *m)
{
	if (strcmp(m, "GET") == 0)
		return M_GET;
	if (strcmp(m, "HEAD") == 0)
		return M_HEAD;
	if (strcmp(m, "POST") == 0)
		return M_POST;
	return 0x80;	/* any other method */
}

static const struct route *
route_find(const struct live *lv, const char *url)
{
	const char *rest;
	size_t i, n;

	for (i = 0; i < NROUTES; i++)
		if (strcmp(routes[i].path, url) == 0)
			return &routes[i];
	/* Envoy's ext_authz appends the original path to its prefix. */
	if (strncmp(url, "/v1/authz/", 10) == 0)
		for (i = 0; i < NROUTES; i++)
			if (routes[i].ep == EP_AUTHZ)
				return &routes[i];
	if (lv != NULL && ocspd_route(&lv->ocsp, url, &rest))
		return &ocsp_route;
	/* The immutable names: /v1/filter/V and /v1/delta/V/SEQ. */
	for (i = 0; i < NROUTES; i++) {
		n = strlen(routes[i].path);
		if (routes[i].path[n - 1] == '/' &&
		    strncmp(url, routes[i].path, n) == 0)
			return &routes[i];
	}
	return NULL;
}

enum MHD_Result
server_reply(const struct server_req *r, unsigned status, char *body,
    size_t len, const char *ctype, const struct server_hdr *hdrs,
    size_t nhdrs)
{
	struct MHD_Response *resp;

	if (body != NULL)
		resp = MHD_create_response_from_buffer(len, body,
		    MHD_RESPMEM_MUST_FREE);
	else
		resp = MHD_create_response_from_buffer(0, (void *)"",
		    MHD_RESPMEM_PERSISTENT);
	if (resp == NULL) {
		free(body);
		return MHD_NO;
	}
	if (r->method == NULL || strcmp(r->method, "HEAD") != 0)
		metrics_response_bytes(r->ep, len);
	return server_queue(r, status, resp, ctype, hdrs, nhdrs);
}

enum MHD_Result
server_queue(const struct server_req *r, unsigned status,
    struct MHD_Response *resp, const char *ctype,
    const struct server_hdr *hdrs, size_t nhdrs)
{
	enum MHD_Result ret;
	bool cache = false;
	size_t i;

	/* Made while positives wait to be asked: made again once they are. */
	if (r->settle != NULL && check_settle_pending(*r->settle)) {
		MHD_destroy_response(resp);
		*r->deferred = true;
		return MHD_YES;
	}
	if (ctype != NULL)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
		    ctype);
	for (i = 0; i < nhdrs; i++) {
		if (strcasecmp(hdrs[i].name, HDR_CACHE) == 0)
			cache = true;
		MHD_add_response_header(resp, hdrs[i].name, hdrs[i].value);
	}
	if (!cache)
		MHD_add_response_header(resp, HDR_CACHE, HDR_CACHE_DEFAULT);
	MHD_add_response_header(resp, HDR_NOSNIFF, HDR_NOSNIFF_VALUE);
	if (r->close || (r->ctx != NULL && atomic_load(&r->ctx->draining)))
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION,
		    "close");
	ret = MHD_queue_response(r->conn, status, resp);
	MHD_destroy_response(resp);
	metrics_request(r->ep, status);
	if (r->started > 0)
		metrics_observe_request(r->ep, util_monotime() - r->started);
	return ret;
}

void
server_render_error(struct sbuf *b, const char *code, const char *msg)
{
	sbuf_adds(b, "{\"error\":");
	sbuf_add_jstrs(b, code);
	sbuf_adds(b, ",\"message\":");
	sbuf_add_jstrs(b, msg);
	sbuf_adds(b, "}");
}

enum MHD_Result
server_error(const struct server_req *r, unsigned status, const char *code,
    const char *msg, unsigned retry_after)
{
	struct server_hdr h[2];
	struct sbuf b;
	char ra[16], *body;
	size_t len = 0, nh = 0;
	const struct route *rt;

	sbuf_init(&b, 128, 0);
	server_render_error(&b, code, msg);
	sbuf_adds(&b, "\n");
	if ((body = sbuf_take(&b, &len)) == NULL)
		return MHD_NO;
	if (status == MHD_HTTP_SERVICE_UNAVAILABLE && retry_after > 0 &&
	    snprintf(ra, sizeof(ra), "%u", retry_after) < (int)sizeof(ra)) {
		h[nh].name = MHD_HTTP_HEADER_RETRY_AFTER;
		h[nh++].value = ra;
	}
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED &&
	    (rt = route_find(r->live, r->url)) != NULL && rt->allow != NULL) {
		h[nh].name = MHD_HTTP_HEADER_ALLOW;
		h[nh++].value = rt->allow;
	}
	return server_reply(r, status, body, len, CTYPE_JSON, h, nh);
}

/* True for the media type want, with or without parameters. */
static bool
is_media_type(const char *ct, const char *want)
{
	size_t n = strlen(want);

	if (ct == NULL)
		return false;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	if (strncasecmp(ct, want, n) != 0)
		return false;
	ct += n;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	return *ct == '\0' || *ct == ';';
}

int
server_hold(const struct server_req *r, unsigned secs, uint64_t gen)
{
	struct reqstate *st = r->st;
	double now = util_monotime();
	int rc;

	assert(st != NULL);
	if (st->hold.until == 0) {
		st->hold.until = now + secs;
		st->started = r->started;
	}
	if (now >= st->hold.until || r->ctx->longpoll == NULL)
		return 0;
	st->phase = REQ_DEFERRED;
	rc = longpoll_hold(r->ctx->longpoll, &st->hold, r->conn, gen);
	if (rc != 0)
		st->phase = REQ_ANSWERED;
	return rc == 0 ? 1 : rc == 1 ? -1 : 0;
}

static void
resume_conn(void *conn)
{
	MHD_resume_connection(conn);
}

/*
 * Runs a route's handler; the request is ANSWERED after it, or DEFERRED.
 * On an edge (ctx->settle) the positives it meets are collected in the
 * request's check_settle: while some are pending, its reply is dropped
 * (server_queue), the connection suspended and the keys handed to
 * ctx->settle, so no worker thread waits on the origin; on_access runs
 * the handler again once they are settled (or refused at once, when too
 * many requests wait: their positives then fail). Counts made by a
 * dropped pass are dropped with it.
 */
static enum MHD_Result
run_handler(struct server_req *r, struct reqstate *st)
{
	struct server_ctx *ctx = r->ctx;
	struct metrics_tally cap;
	enum MHD_Result ret;
	bool deferred = false;

	st->phase = REQ_ANSWERED;
	if (ctx->settle == NULL)
		return st->rt->fn(r);
	r->settle = &st->settle;
	r->deferred = &deferred;
	check_settle_bind(&st->settle);
	metrics_capture_begin(&cap);
	ret = st->rt->fn(r);
	metrics_capture_end(!deferred);
	check_settle_bind(NULL);
	if (!deferred) {
		check_settle_free(st->settle);
		st->settle = NULL;
		return ret;
	}
	if (st->settle->passes++ == 0)
		st->started = r->started;
	st->phase = REQ_DEFERRED;
	MHD_suspend_connection(r->conn);
	if (ctx->settle(ctx->settle_arg, st->settle, resume_conn,
	    r->conn) == -1) {
		check_settle_fail_pending(st->settle, CHECK_FAIL_UNAVAILABLE);
		MHD_resume_connection(r->conn);
	}
	return MHD_YES;
}

/*
 * The first call (NEW or BAD_URI): the headers are in, the body (if any)
 * is not. Refuses what it must (ANSWERED), or routes the request to
 * NO_BODY or BODY. The request's deadline keeps running until its handler
 * does.
 */
static enum MHD_Result
req_start(struct server_req *r, struct reqstate *st)
{
	struct MHD_Connection *conn = r->conn;
	const struct route *rt;
	const char *cl, *te, *why;
	uint64_t clen = 0, max = r->live->cfg.max_body;
	size_t ncap;
	unsigned mb;
	bool bad_uri = st->phase == REQ_BAD_URI;

	inflight_add(1);
	st->phase = REQ_ANSWERED;	/* until routed */
	if ((why = fields_refused(conn, r->version)) != NULL) {
		r->close = true;
		return server_error(r, MHD_HTTP_BAD_REQUEST, "bad_request",
		    why, 0);
	}
	if (bad_uri)
		return server_error(r, MHD_HTTP_BAD_REQUEST, "bad_request",
		    st->bad_uri, 0);
	if ((rt = route_find(r->live, r->url)) == NULL)
		return server_error(r, MHD_HTTP_NOT_FOUND, "not_found",
		    "no such endpoint", 0);
	r->ep = rt->ep;
	mb = method_bit(r->method);
	if ((rt->methods & mb) == 0)
		return server_error(r, MHD_HTTP_METHOD_NOT_ALLOWED,
		    "method_not_allowed", "method not allowed on this "
		    "endpoint", 0);
	cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_CONTENT_LENGTH);
	te = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_TRANSFER_ENCODING);
	/*
	 * So is either framing header twice: libmicrohttpd reads the first,
	 * a proxy may have framed the body by the last (RFC 9112 6.3 asks
	 * differing lengths to be refused; the same length twice gains
	 * nothing and is refused alike, as is "chunked" then "gzip").
	 */
	if (server_header_count(conn, MHD_HTTP_HEADER_CONTENT_LENGTH) > 1 ||
	    server_header_count(conn, MHD_HTTP_HEADER_TRANSFER_ENCODING) > 1) {
		r->close = true;
		return server_error(r, MHD_HTTP_BAD_REQUEST, "bad_request",
		    cl != NULL ? "repeated Content-Length header" :
		    "repeated Transfer-Encoding header", 0);
	}
	/*
	 * A second Authorization header could carry a revoked token behind
	 * a clean first one: which one counts is ambiguous, so neither does.
	 */
	if (server_header_count(conn, MHD_HTTP_HEADER_AUTHORIZATION) > 1) {
		r->close = true;
		return server_error(r, MHD_HTTP_BAD_REQUEST, "bad_request",
		    "repeated Authorization header", 0);
	}
	if ((rt->body_methods & mb) != 0 &&
	    !is_media_type(MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_CONTENT_TYPE), rt->body_type != NULL ?
	    rt->body_type : CTYPE_JSON))
		return server_error(r, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
		    "unsupported_media_type", rt->ep == EP_OCSP ?
		    "the body must be application/ocsp-request" :
		    rt->body_type != NULL ?
		    "the body must be application/x-www-form-urlencoded" :
		    "the body must be application/json", 0);
	if (cl != NULL && util_parse_u64(cl, UINT64_MAX, &clen) == 0 &&
	    clen > max)
		return server_error(r, MHD_HTTP_CONTENT_TOO_LARGE,
		    "payload_too_large", "request body over the configured "
		    "limit", 0);
	if (te != NULL && strcasecmp(te, "chunked") != 0)
		return server_error(r, MHD_HTTP_NOT_IMPLEMENTED,
		    "not_implemented", "only the chunked transfer coding is "
		    "supported", 0);
	st->rt = rt;
	if ((cl == NULL || clen == 0) && te == NULL) {
		if ((rt->body_methods & mb) != 0)
			return server_error(r, MHD_HTTP_BAD_REQUEST,
			    "bad_request", "a JSON body is required", 0);
		/*
		 * Answer on the next call: a reply queued while the headers
		 * are being processed makes libmicrohttpd close the
		 * connection.
		 */
		st->phase = REQ_NO_BODY;
		return MHD_YES;
	}
	st->keep = (rt->body_methods & mb) != 0;
	if (st->keep) {
		/*
		 * Grow with the data, not with what is announced; a chunked
		 * body starts at BODY_START, or at max_body + 1 when that is
		 * less (so that it never holds more of max_body_total than
		 * one body may use).
		 */
		ncap = clen > 0 && clen < BODY_START ? (size_t)clen + 1 :
		    BODY_START;
		if (max < BODY_START && ncap > (size_t)max + 1)
			ncap = (size_t)max + 1;
		if (!body_reserve(ncap)) {
			metrics_inc(MET_BODY_REFUSED);
			st->keep = false;
			r->close = true;
			return server_error(r, MHD_HTTP_SERVICE_UNAVAILABLE,
			    "overloaded", "too many request bodies are being "
			    "read at once", 1);
		}
		st->cap = ncap;
		if ((st->body = malloc(st->cap)) == NULL)
			return MHD_NO;
	}
	st->phase = REQ_BODY;
	return MHD_YES;
}

/* One piece of an announced body (BODY): kept, or counted and dropped. */
static enum MHD_Result
req_body(struct reqstate *st, uint64_t max, const char *upload,
    size_t *upsize)
{
	size_t ncap;
	char *nb;

	if (*upsize > max || st->seen > max - *upsize) {
		/*
		 * libmicrohttpd takes no reply in the middle of a body, and
		 * only a chunked body gets this far (a Content-Length over the
		 * cap is refused before it is read). Drop what was kept,
		 * drain a bounded amount more to answer 413, then hang up.
		 */
		st->too_large = true;
		free(st->body);
		body_release(st->cap);
		st->body = NULL;
		st->cap = 0;
		st->keep = false;
		if (st->seen > max + DRAIN_MAX) {
			*upsize = 0;
			return MHD_NO;
		}
	}
	if (st->keep) {
		if (st->len + *upsize + 1 > st->cap) {
			ncap = st->cap;
			while (ncap < st->len + *upsize + 1)
				ncap *= 2;
			if (ncap > max + 1)
				ncap = (size_t)max + 1;
			/*
			 * No reply can be queued in the middle of a body:
			 * past the budget, hang up.
			 */
			if (!body_reserve(ncap - st->cap)) {
				metrics_inc(MET_BODY_REFUSED);
				log_warn("closing a connection: request bodies "
				    "buffered at once reached max_body_total");
				*upsize = 0;
				return MHD_NO;
			}
			if ((nb = realloc(st->body, ncap)) == NULL) {
				body_release(ncap - st->cap);
				return MHD_NO;
			}
			st->body = nb;
			st->cap = ncap;
		}
		memcpy(st->body + st->len, upload, *upsize);
		st->len += *upsize;
	}
	st->seen += *upsize;
	*upsize = 0;
	return MHD_YES;
}

/* The end of an announced body (BODY): 413, 400 or the handler. */
static enum MHD_Result
req_body_end(struct server_req *r, struct reqstate *st)
{
	st->phase = REQ_ANSWERED;
	req_deadline(st, 0);	/* the whole body is in */
	if (st->too_large)
		return server_error(r, MHD_HTTP_CONTENT_TOO_LARGE,
		    "payload_too_large", "request body over the configured "
		    "limit", 0);
	if (st->keep) {
		st->body[st->len] = '\0';
		r->body = st->body;
		r->body_len = st->len;
		if (st->len == 0)
			return server_error(r, MHD_HTTP_BAD_REQUEST,
			    "bad_request", "a JSON body is required", 0);
	}
	return run_handler(r, st);
}

/* Steps the request's state machine (see enum req_phase). */
static enum MHD_Result
access_in(struct server_ctx *ctx, struct live *lv,
    struct MHD_Connection *conn, const char *url, const char *method,
    const char *version, const char *upload, size_t *upsize, void **con_cls)
{
	struct reqstate *st = *con_cls;
	struct server_req r;

	if (st == NULL)
		return MHD_NO;	/* on_uri ran out of memory */
	memset(&r, 0, sizeof(r));
	r.conn = conn;
	r.ctx = ctx;
	r.live = lv;
	r.method = method;
	r.version = version;
	r.url = url;
	r.body = "";
	r.st = st;
	r.ep = st->rt != NULL ? st->rt->ep : EP_OTHER;
	r.started = util_monotime();

	switch (st->phase) {
	case REQ_NEW:
	case REQ_BAD_URI:
		return req_start(&r, st);
	case REQ_NO_BODY:
		if (*upsize > 0) {
			*upsize = 0;	/* no body was announced: drop it */
			return MHD_YES;
		}
		req_deadline(st, 0);	/* the request is in */
		return run_handler(&r, st);
	case REQ_BODY:
		if (*upsize > 0)
			return req_body(st, lv->cfg.max_body, upload, upsize);
		return req_body_end(&r, st);
	case REQ_DEFERRED:
		/* Resumed: its positives have their outcome; answer now. */
		*upsize = 0;
		r.started = st->started;	/* the wait counts in its time */
		if (st->body != NULL) {
			r.body = st->body;
			r.body_len = st->len;
		}
		return run_handler(&r, st);
	case REQ_ANSWERED:
		*upsize = 0;	/* a reply is queued; drop the rest */
		return MHD_YES;
	case REQ_IDLE:
		break;
	}
	return MHD_NO;	/* not in a request: cannot happen */
}

/*
 * Every call for a request reads one generation of the settings in force
 * (live.h), inside a read section that ends with the call, so a SIGHUP
 * never frees what a handler is reading. A request suspended for its
 * positives reads the generation in force when it runs again.
 */
static enum MHD_Result
on_access(void *cls, struct MHD_Connection *conn, const char *url,
    const char *method, const char *version, const char *upload,
    size_t *upsize, void **con_cls)
{
	struct server_ctx *ctx = cls;
	struct live *lv;
	enum MHD_Result ret = MHD_NO;

	if ((lv = live_enter(ctx->live)) != NULL)
		ret = access_in(ctx, lv, conn, url, method, version, upload,
		    upsize, con_cls);
	live_leave();
	return ret;
}

static void
on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
    enum MHD_RequestTerminationCode toe)
{
	const struct server_ctx *ctx = cls;
	struct reqstate *st = *con_cls;
	bool counted;

	(void)conn;
	(void)toe;
	*con_cls = NULL;
	if (st == NULL)
		return;
	/* NEW and BAD_URI: refused before on_access counted it. */
	counted = st->phase != REQ_NEW && st->phase != REQ_BAD_URI;
	if (counted)
		req_deadline(st, util_monotime() + ctx->cfg->conn_timeout);
	req_release(st);
	st->phase = REQ_IDLE;
	if (st->ct == NULL)
		free(st);
	else if (st->ct->closed)
		free(st->ct);
	if (counted)
		inflight_add(-1);
}

__attribute__((format(printf, 2, 0)))
static void
on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512];
	size_t n;

	(void)cls;
	if (vsnprintf(msg, sizeof(msg), fmt, ap) < 0)
		return;
	n = strlen(msg);
	while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = '\0';
	log_warn("httpd: %s", msg);
}

/* The connections libmicrohttpd holds now (the fast path's limit). */
static unsigned
mhd_conns(struct server *s)
{
	const union MHD_DaemonInfo *di;

	di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
	return di != NULL ? di->num_connections : 0;
}

/* The port a listening socket is bound to (":0" picks one), or 0. */
static unsigned
bound_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == -1)
		return 0;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return 0;
}

unsigned
server_fast_port(const struct server *s)
{
	return s != NULL && s->fp != NULL ? s->port : 0;
}

/*
 * The listening socket the fast path owns, made as libmicrohttpd makes
 * its own: address reuse, IPv6 only for an IPv6 address, non-blocking.
 */
static int
listen_socket(const struct sockaddr_storage *ss, unsigned socklen)
{
	int fd, one = 1, e;

	fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	if (fd == -1)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ==
	    -1 || (ss->ss_family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6,
	    IPV6_V6ONLY, &one, sizeof(one)) == -1) ||
	    bind(fd, (const struct sockaddr *)ss, socklen) == -1 ||
	    listen(fd, 1024) == -1) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

struct server *
server_start(struct server_ctx *ctx, char *err, size_t errlen)
{
	const struct config *c = ctx->cfg;
	struct sockaddr_storage ss;
	struct server *s;
	unsigned socklen, threads, flags;
	long ncpu;
	int lfd = -1;

	if (config_parse_listen(c->listen, &ss, &socklen) == -1) {
		snprintf(err, errlen, "listen: bad address \"%.64s\"",
		    c->listen);
		return NULL;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->ctx = ctx;
	body_cap = c->max_body_total;
	threads = c->threads;
	if (threads == 0) {
		ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		threads = ncpu > 0 && ncpu < 256 ? (unsigned)ncpu : 2;
	}
	flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
	    MHD_USE_ITC | MHD_USE_ERROR_LOG | MHD_USE_TURBO |
	    MHD_ALLOW_SUSPEND_RESUME;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	if (c->fast_path) {
		if ((lfd = listen_socket(&ss, socklen)) == -1) {
			snprintf(err, errlen, "cannot listen on %s: %s%s",
			    c->listen, strerror(errno), errno == EADDRINUSE ?
			    " (another process has this port: choose another "
			    "with listen or --listen)" : "");
			free(s);
			return NULL;
		}
		/* libmicrohttpd gets its connections from the fast path. */
		flags |= MHD_USE_NO_LISTEN_SOCKET;
	}
	s->d = MHD_start_daemon(flags, 0, NULL, NULL, on_access, ctx,
	    MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,
	    MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
	    MHD_OPTION_THREAD_POOL_SIZE, threads,
	    MHD_OPTION_CONNECTION_TIMEOUT, c->conn_timeout,
	    MHD_OPTION_CONNECTION_LIMIT, c->max_conns,
	    MHD_OPTION_PER_IP_CONNECTION_LIMIT, c->max_conns_per_ip,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)c->max_header_size,
	    MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024,
	    MHD_OPTION_NOTIFY_COMPLETED, on_completed, ctx,
	    MHD_OPTION_NOTIFY_CONNECTION, on_connection, ctx,
	    MHD_OPTION_URI_LOG_CALLBACK, on_uri, NULL,
	    MHD_OPTION_END);
	if (s->d == NULL) {
		snprintf(err, errlen, "cannot listen on %s: %s%s", c->listen,
		    errno != 0 ? strerror(errno) : "libmicrohttpd refused "
		    "the options", errno == EADDRINUSE ? " (another process "
		    "has this port: choose another with listen or --listen)" :
		    "");
		if (lfd != -1)
			close(lfd);
		free(s);
		return NULL;
	}
	if (lfd != -1)
		s->port = bound_port(lfd);
	if (lfd != -1 && (s->fp = fastpath_start(ctx, s,
	    server_take_connection, mhd_conns, lfd, threads, err,
	    errlen)) == NULL) {
		MHD_stop_daemon(s->d);
		free(s);
		return NULL;
	}
	/* Without it nothing is held: every long-poll is answered at once. */
	if ((ctx->longpoll = longpoll_start(c->longpoll_max)) != NULL)
		snapshot_slot_on_swap(ctx->slot, longpoll_wake, ctx->longpoll);
	return s;
}

int
server_take_connection(struct server *s, int fd, const struct sockaddr *peer,
    socklen_t peerlen, double deadline)
{
	struct handed *h;

	/* Without the entry (no memory) the deadline starts afresh. */
	if ((h = malloc(sizeof(*h))) != NULL) {
		h->fd = fd;
		h->at = util_monotime();
		h->deadline = deadline;
		pthread_mutex_lock(&track_mu);
		h->next = handed_list;
		handed_list = h;
		pthread_mutex_unlock(&track_mu);
	}
	if (MHD_add_connection(s->d, fd, peer, peerlen) == MHD_YES)
		return 0;
	/* Refused and closed: its entry must not reach a later fd. */
	pthread_mutex_lock(&track_mu);
	(void)handed_take(fd, 0);
	pthread_mutex_unlock(&track_mu);
	return -1;
}

int
server_add_connection(struct server *s, int fd)
{
	struct sockaddr_un peer;

	memset(&peer, 0, sizeof(peer));
	peer.sun_family = AF_UNIX;
	return MHD_add_connection(s->d, fd, (const struct sockaddr *)&peer,
	    sizeof(peer.sun_family)) == MHD_YES ? 0 : -1;
}

void
server_stop(struct server *s, unsigned drain_ms)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	unsigned waited = 0;

	if (s == NULL)
		return;
	/*
	 * Every answer from here says Connection: close, and the requests
	 * in flight get drain_ms to finish. The daemon is not quiesced:
	 * with a thread pool on epoll, libmicrohttpd 0.9.75's
	 * MHD_quiesce_daemon() takes the listening socket out of each
	 * worker's epoll set while the worker, seeing the quiesce, may do
	 * the same, and the loser aborts the process ("Failed to remove
	 * listen FD from epoll set", seen under strace in it_systemd.sh).
	 * A connection accepted meanwhile is answered and closed.
	 */
	atomic_store(&s->ctx->draining, true);
	/* Held requests are answered now, and no more are held. */
	snapshot_slot_on_swap(s->ctx->slot, NULL, NULL);
	longpoll_stop(s->ctx->longpoll);
	while (server_inflight() > 0 && waited < drain_ms) {
		nanosleep(&ts, NULL);
		waited += 10;
	}
	if (server_inflight() > 0)
		log_warn("stopping with %lu requests still in flight",
		    server_inflight());
	/* Its requests are answered on its threads: none is in flight. */
	fastpath_stop(s->fp);
	MHD_stop_daemon(s->d);
	longpoll_free(s->ctx->longpoll);
	s->ctx->longpoll = NULL;
	free(s);
}

int
server_probe(const struct server *s, unsigned timeout_ms)
{
	static const char req[] = "GET /healthz HTTP/1.0\r\n"
	    "User-Agent: revcheckd-watchdog\r\n\r\n";
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	struct timeval tv;
	unsigned socklen;
	char buf[16];
	size_t got = 0;
	ssize_t n;
	int fd, rc = -1;

	if (s == NULL ||
	    config_parse_listen(s->ctx->cfg->listen, &ss, &socklen) == -1)
		return -1;
	if (ss.ss_family == AF_INET && sin->sin_addr.s_addr == INADDR_ANY)
		sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (ss.ss_family == AF_INET6 &&
	    IN6_IS_ADDR_UNSPECIFIED(&sin6->sin6_addr))
		sin6->sin6_addr = in6addr_loopback;
	if ((fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	tv.tv_sec = timeout_ms / 1000;
	tv.tv_usec = (suseconds_t)(timeout_ms % 1000) * 1000;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) == -1 ||
	    connect(fd, (struct sockaddr *)&ss, socklen) == -1 ||
	    send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) !=
	    (ssize_t)(sizeof(req) - 1))
		goto out;
	while (got < 12 && (n = recv(fd, buf + got, 12 - got, 0)) > 0)
		got += (size_t)n;
	if (got == 12 && memcmp(buf, "HTTP/1.", 7) == 0 &&
	    memcmp(buf + 8, " 200", 4) == 0)
		rc = 0;
out:
	close(fd);
	return rc;
}
