/* handlers_ocsp.c - the OCSP responder's HTTP side: POST and GET requests, the check's decision, caching headers */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/sha.h>

#include "check.h"
#include "log.h"
#include "metrics.h"
#include "ocsp.h"
#include "server.h"
#include "util.h"

#define CTYPE_OCSP	"application/ocsp-response"

/* One OCSP answer on its way out. */
struct ocsp_out {
	enum ocsp_rstatus rs;
	int		 cert_status;	/* rs SUCCESSFUL: V_OCSP_CERTSTATUS_* */
	unsigned char	*der;		/* malloc'ed; NULL: ocsp_error_der */
	size_t		 len;
	bool		 cacheable;	/* GET, no nonce, signed */
	int64_t		 this_update;
	int64_t		 next_update;	/* 0: none */
};

static void
http_date(char *out, size_t cap, int64_t t)
{
	struct tm tm;
	time_t tt = (time_t)t;

	if (gmtime_r(&tt, &tm) == NULL ||
	    strftime(out, cap, "%a, %d %b %Y %H:%M:%S GMT", &tm) == 0)
		out[0] = '\0';
}

static void
count(const struct ocsp_out *o)
{
	if (o->rs != OCSP_RS_SUCCESSFUL) {
		metrics_inc(o->rs == OCSP_RS_MALFORMED ? MET_OCSP_MALFORMED :
		    o->rs == OCSP_RS_TRYLATER ? MET_OCSP_TRYLATER :
		    o->rs == OCSP_RS_UNAUTHORIZED ? MET_OCSP_UNAUTHORIZED :
		    MET_OCSP_INTERNAL);
		return;
	}
	metrics_inc(o->cert_status == V_OCSP_CERTSTATUS_GOOD ? MET_OCSP_GOOD :
	    o->cert_status == V_OCSP_CERTSTATUS_REVOKED ? MET_OCSP_REVOKED :
	    MET_OCSP_UNKNOWN);
}

/*
 * Queues o: 200 and the DER. A GET answer without a nonce may be cached
 * by HTTP caches until nextUpdate (RFC 5019 section 6); everything else
 * is no-store.
 */
static enum MHD_Result
reply(const struct server_req *r, struct ocsp_out *o)
{
	struct server_hdr h[4];
	unsigned char md[SHA256_DIGEST_LENGTH];
	char cc[96], lm[40], ex[40], etag[2 * 16 + 3], *body;
	int64_t now = util_now();
	size_t nh = 0;
	const unsigned char *der;

	/* A signed response is handed over; an error's bytes are copied. */
	if (o->der != NULL)
		body = (char *)o->der;
	else {
		der = ocsp_error_der(o->rs, &o->len);
		if ((body = malloc(o->len)) == NULL)
			return MHD_NO;
		memcpy(body, der, o->len);
	}
	der = (const unsigned char *)body;
	if (o->cacheable && o->next_update > now) {
		snprintf(cc, sizeof(cc), "max-age=%lld, public, no-transform, "
		    "must-revalidate", (long long)(o->next_update - now));
		h[nh].name = HDR_CACHE;
		h[nh++].value = cc;
		http_date(lm, sizeof(lm), o->this_update);
		h[nh].name = MHD_HTTP_HEADER_LAST_MODIFIED;
		h[nh++].value = lm;
		http_date(ex, sizeof(ex), o->next_update);
		h[nh].name = MHD_HTTP_HEADER_EXPIRES;
		h[nh++].value = ex;
		SHA256(der, o->len, md);
		etag[0] = '"';
		util_hex(etag + 1, md, 16);
		etag[33] = '"';
		etag[34] = '\0';
		h[nh].name = MHD_HTTP_HEADER_ETAG;
		h[nh++].value = etag;
	}
	count(o);
	o->der = NULL;	/* body owns it now */
	return server_reply(r, MHD_HTTP_OK, body, o->len, CTYPE_OCSP, h, nh);
}

/*
 * The request's DER: the body (POST, read in place) or the base64 after
 * the path, decoded into buf. Its length, or -1.
 */
static long
request_der(const struct server_req *r, unsigned char *buf, size_t cap,
    const unsigned char **der)
{
	const char *rest = "";

	if (strcmp(r->method, "POST") == 0) {
		if (r->body_len > cap)
			return -1;
		*der = (const unsigned char *)r->body;
		return (long)r->body_len;
	}
	*der = buf;
	if (!ocspd_route(&r->live->ocsp, r->url, &rest) || rest[0] == '\0')
		return -1;
	return ocsp_b64_decode(rest, strlen(rest), buf, cap);
}

/*
 * What the state s proves about k, as /v1/check decides it (check_key):
 * good on not_revoked, revoked with its time and reason, unknown when
 * the filter does not cover the key (a partial scope does not cover a
 * bare issuer and serial unless it covers every certificate of that
 * CA). -1 when the check could not settle a positive: tryLater.
 */
static int
decide(const struct snapshot *s, const struct revkey *k,
    struct ocsp_answer *a, enum check_fail *fail)
{
	struct check_result cr;

	if (check_key(s, k, &cr) == -1) {
		*fail = cr.fail;
		return -1;
	}
	switch (cr.status) {
	case CHECK_NOT_REVOKED:
		a->status = V_OCSP_CERTSTATUS_GOOD;
		break;
	case CHECK_REVOKED:
		a->status = V_OCSP_CERTSTATUS_REVOKED;
		a->revoked_at = cr.revoked_at;
		a->reason = ocsp_reason_code(cr.reason);
		break;
	case CHECK_NOT_COVERED:
	default:
		a->status = V_OCSP_CERTSTATUS_UNKNOWN;
		break;
	}
	return 0;
}

/* The state's stamp: what a cached response must have been made from. */
static void
state_stamp(const struct server_req *r, const struct snapshot *s,
    int64_t now, struct ocsp_stamp *st)
{
	int64_t left = stale_remaining(s->info, &r->live->policy, now);

	st->version = s->version;
	st->seq = s->pos.seq;
	st->this_update = s->info->issued_at;
	/* Never later than the moment the state stops being fresh. */
	st->next_update = left == INT64_MAX || left > INT64_MAX - now ? 0 :
	    now + left;
}

/*
 * Answers q for responder ri from the state in force: the cache, else
 * the check and a signature. Fills o; leaves o->rs malformedRequest when
 * q's serial makes no key. The key (a hash of the CA's name per request)
 * is made only on a cache miss: a cached answer was made for the same
 * responder and serial, whose key was made then.
 */
static void
answer(const struct server_req *r, const struct ocsp_req *q, size_t ri,
    bool get, struct ocsp_out *o)
{
	const struct ocsp_responder *rsp = r->live->ocsp.r[ri];
	struct ocsp_cache *cache = r->live->ocsp.cache;
	const struct snapshot *s;
	struct ocsp_answer a;
	struct ocsp_stamp st;
	struct revkey k;
	enum stale_reason why;
	enum check_fail fail = CHECK_FAIL_UNAVAILABLE;
	int64_t now = util_now();
	char err[256];

	if (check_begin(r->ctx->slot, &r->live->policy, now, &s, &why) !=
	    CHECK_GATE_OK) {
		o->rs = OCSP_RS_TRYLATER;
		return;
	}
	state_stamp(r, s, now, &st);
	o->this_update = st.this_update;
	o->next_update = st.next_update;
	if (!q->has_nonce && ocsp_cache_get(cache, (unsigned)ri, q, &st,
	    &o->der, &o->len, &o->cert_status) == 0) {
		check_end(s);
		metrics_inc(MET_OCSP_CACHE_HITS);
		o->rs = OCSP_RS_SUCCESSFUL;
		o->cacheable = get;
		return;
	}
	if (ocsp_responder_key(rsp, q, &k, err, sizeof(err)) == -1) {
		check_end(s);
		return;
	}
	memset(&a, 0, sizeof(a));
	a.reason = -1;
	a.this_update = st.this_update;
	a.next_update = st.next_update;
	if (decide(s, &k, &a, &fail) == -1) {
		check_end(s);
		o->rs = OCSP_RS_TRYLATER;
		return;
	}
	check_end(s);
	o->cert_status = a.status;
	if (ocsp_sign(rsp, q, &a, &o->der, &o->len, err, sizeof(err)) == -1) {
		log_warn("ocsp: %s: %s", ocsp_responder_name(rsp), err);
		o->rs = OCSP_RS_INTERNAL;
		return;
	}
	metrics_inc(MET_OCSP_SIGNATURES);
	o->rs = OCSP_RS_SUCCESSFUL;
	o->cacheable = get && !q->has_nonce;
	if (!q->has_nonce)
		ocsp_cache_put(cache, (unsigned)ri, q, &st, o->der, o->len,
		    a.status);
}

enum MHD_Result
handle_ocsp(const struct server_req *r)
{
	static _Thread_local unsigned char buf[OCSP_REQ_MAX];
	const unsigned char *der = buf;
	struct ocsp_out o;
	struct ocsp_req q;
	char err[256];
	enum MHD_Result ret;
	bool get = strcmp(r->method, "POST") != 0;
	long n;
	size_t i;

	memset(&o, 0, sizeof(o));
	o.rs = OCSP_RS_MALFORMED;
	if ((n = request_der(r, buf, sizeof(buf), &der)) <= 0 ||
	    ocsp_request_parse(&q, der, (size_t)n, err, sizeof(err)) == -1)
		return reply(r, &o);
	for (i = 0; i < r->live->ocsp.n; i++)
		if (ocsp_responder_matches(r->live->ocsp.r[i], &q))
			break;
	if (i == r->live->ocsp.n)
		o.rs = OCSP_RS_UNAUTHORIZED;
	else
		answer(r, &q, i, get, &o);
	ocsp_request_free(&q);
	ret = reply(r, &o);
	return ret;
}

void
ocsp_metrics(struct sbuf *b, const struct live *lv)
{
	static const char *const st[] = {
		"good", "revoked", "unknown", "malformedRequest",
		"internalError", "tryLater", "unauthorized",
	};
	uint64_t entries = 0, bytes = 0;
	size_t i;

	sbuf_adds(b, "# HELP revcheckd_ocsp_responses_total OCSP responses "
	    "by status (the certStatus of a successful one, else the "
	    "responseStatus).\n# TYPE revcheckd_ocsp_responses_total "
	    "counter\n");
	for (i = 0; i < sizeof(st) / sizeof(st[0]); i++) {
		sbuf_addf(b, "revcheckd_ocsp_responses_total{status=\"%s\"} ",
		    st[i]);
		sbuf_add_u64(b, metrics_get((enum metric)(MET_OCSP_GOOD + i)));
		sbuf_adds(b, "\n");
	}
	sbuf_adds(b, "# HELP revcheckd_ocsp_signatures_total OCSP responses "
	    "signed.\n# TYPE revcheckd_ocsp_signatures_total counter\n"
	    "revcheckd_ocsp_signatures_total ");
	sbuf_add_u64(b, metrics_get(MET_OCSP_SIGNATURES));
	sbuf_adds(b, "\n# HELP revcheckd_ocsp_cache_hits_total OCSP responses "
	    "served from the signed-response cache.\n"
	    "# TYPE revcheckd_ocsp_cache_hits_total counter\n"
	    "revcheckd_ocsp_cache_hits_total ");
	sbuf_add_u64(b, metrics_get(MET_OCSP_CACHE_HITS));
	if (lv->ocsp.cache != NULL)
		ocsp_cache_stats(lv->ocsp.cache, &entries, &bytes);
	sbuf_adds(b, "\n# HELP revcheckd_ocsp_cache_bytes Signed OCSP "
	    "responses held (bounded by ocsp.cache_max).\n"
	    "# TYPE revcheckd_ocsp_cache_bytes gauge\nrevcheckd_ocsp_cache_bytes ");
	sbuf_add_u64(b, bytes);
	sbuf_adds(b, "\n# HELP revcheckd_ocsp_cache_entries Signed OCSP "
	    "responses held.\n# TYPE revcheckd_ocsp_cache_entries gauge\n"
	    "revcheckd_ocsp_cache_entries ");
	sbuf_add_u64(b, entries);
	sbuf_adds(b, "\n");
}
