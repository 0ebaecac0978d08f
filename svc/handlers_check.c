/* handlers_check.c - GET/POST /v1/check, /v1/authz and POST /v1/introspect */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "authzcred.h"
#include "batch.h"
#include "check.h"
#include "checkio.h"
#include "jwt.h"
#include "log.h"
#include "server.h"
#include "util.h"

static unsigned
retry_after(const struct server_req *r)
{
	unsigned p = r->live->cfg.poll_interval;

	return p > 0 ? p : 1;
}

static enum MHD_Result
gate_error(const struct server_req *r, enum check_gate g,
    enum stale_reason why)
{
	char msg[96];

	if (g == CHECK_GATE_NO_FILTER)
		return server_error(r, MHD_HTTP_SERVICE_UNAVAILABLE,
		    "no_filter", "no verified filter is loaded",
		    retry_after(r));
	snprintf(msg, sizeof(msg), "the filter is stale (%s); refusing to "
	    "answer from it", stale_reason_str(why));
	return server_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, "filter_stale",
	    msg, retry_after(r));
}

static enum MHD_Result
authority_error(const struct server_req *r, enum check_fail f)
{
	if (f == CHECK_FAIL_BEHIND)
		return server_error(r, MHD_HTTP_SERVICE_UNAVAILABLE,
		    "authority_behind", "the filter says possibly revoked and "
		    "the authority answered from an older filter version",
		    retry_after(r));
	return server_error(r, MHD_HTTP_SERVICE_UNAVAILABLE,
	    "authority_unavailable", "the filter says possibly revoked and "
	    "the authority that settles it cannot be reached",
	    retry_after(r));
}

/* The invalid_token answer object (a 401 body, or a batch item). */
static void
render_invalid(struct sbuf *b, enum jwt_verdict why, const char *msg)
{
	sbuf_adds(b, "{\"error\":\"invalid_token\",\"reason\":\"");
	sbuf_adds(b, jwt_verdict_str(why));
	sbuf_adds(b, "\",\"message\":");
	sbuf_add_jstrs(b, msg);
	sbuf_adds(b, "}");
}

/*
 * 401 for a token that failed verification: RFC 6750 section 3.1's
 * invalid_token, the stable reason in X-Revcheck-Status and the body.
 * msg never holds the token.
 */
static enum MHD_Result
invalid_token(const struct server_req *r, enum jwt_verdict why,
    const char *msg)
{
	struct server_hdr h[2];
	struct sbuf b;
	char *body;
	size_t len;

	sbuf_init(&b, 192, 0);
	render_invalid(&b, why, msg);
	sbuf_adds(&b, "\n");
	if ((body = sbuf_take(&b, &len)) == NULL)
		return MHD_NO;
	h[0].name = HDR_STATUS;
	h[0].value = jwt_verdict_str(why);
	h[1].name = MHD_HTTP_HEADER_WWW_AUTHENTICATE;
	h[1].value = "Bearer error=\"invalid_token\"";
	return server_reply(r, MHD_HTTP_UNAUTHORIZED, body, len,
	    CTYPE_JSON, h, 2);
}

/*
 * What decided an answer: the filter version and, with a delta chain in
 * service, the seq of its last delta (empty when none), copied out of
 * the snapshot before check_end.
 */
struct answer_tag {
	char	ver[24];
	char	seq[24];
};

static void
tag_set(struct answer_tag *t, const struct snapshot *s)
{
	(void)u64_dec(t->ver, s->version);
	t->seq[0] = '\0';
	if (s->pos.seq != 0)
		(void)u64_dec(t->seq, s->pos.seq);
}

/* Appends X-Revcheck-Filter-Version and -Delta-Seq to h; how many. */
static size_t
tag_headers(struct server_hdr *h, const struct answer_tag *t)
{
	h[0].name = HDR_FILTER_VERSION;
	h[0].value = t->ver;
	if (t->seq[0] == '\0')
		return 1;
	h[1].name = HDR_DELTA_SEQ;
	h[1].value = t->seq;
	return 2;
}

/*
 * Keys from one snapshot, 200 with the answer: one key's object, or (with
 * chain) a certificate chain's, where every certificate is checked and
 * the worst verdict answers (check_worst). A revoked certificate is
 * proven revoked whatever else happens; short of that, one the authority
 * cannot settle makes the whole answer 503, never not_revoked.
 */
static enum MHD_Result
answer_keys(const struct server_req *r, const struct revkey *keys,
    size_t n, bool chain, const struct trust_cutoffs *cut)
{
	struct check_result res[CHECKIO_CHAIN_MAX_CERTS];
	bool ok[CHECKIO_CHAIN_MAX_CERTS];
	size_t unsettled = SIZE_MAX;	/* the first unsettled certificate */
	struct server_hdr h[3];
	struct answer_tag tag;
	const struct snapshot *s;
	enum stale_reason why;
	enum check_gate g;
	struct sbuf b;
	char *body;
	size_t len, i, w;

	g = check_begin(r->ctx->slot, &r->live->policy, util_now(), &s,
	    &why);
	if (g != CHECK_GATE_OK)
		return gate_error(r, g, why);
	for (i = 0; i < n; i++) {
		/* A token: its subject and session cutoffs too. */
		ok[i] = (cut != NULL ? check_token(s, &keys[i], cut, &res[i]) :
		    check_key(s, &keys[i], &res[i])) == 0;
		if (!ok[i]) {
			res[i].status = CHECK_NOT_COVERED;
			if (unsettled == SIZE_MAX)
				unsettled = i;
		}
	}
	w = check_worst(res, n);
	if (res[w].status != CHECK_REVOKED && unsettled != SIZE_MAX) {
		check_end(s);
		return authority_error(r, res[unsettled].fail);
	}
	sbuf_init(&b, 256 + n * 256, 0);
	if (chain)
		checkio_render_chain(&b, s, keys, res, ok, n, w);
	else
		checkio_render(&b, s, &keys[0], &res[0]);
	sbuf_adds(&b, "\n");
	tag_set(&tag, s);
	check_end(s);
	if ((body = sbuf_take(&b, &len)) == NULL)
		return MHD_NO;
	h[0].name = HDR_STATUS;
	h[0].value = check_status_str(res[w].status);
	return server_reply(r, MHD_HTTP_OK, body, len, CTYPE_JSON, h,
	    1 + tag_headers(&h[1], &tag));
}

/* One key: gate, check, 200 with the answer object. */
static enum MHD_Result
answer_one(const struct server_req *r, const struct revkey *k)
{
	return answer_keys(r, k, 1, false, NULL);
}

static enum MHD_Result
check_get(const struct server_req *r)
{
	const char *id = NULL, *scope = NULL;
	size_t idlen = 0, scopelen = 0;
	struct revkey k;
	char e[256], msg[300];

	/* Which copy counts would be ambiguous, as in a JSON body. */
	if (server_arg_count(r->conn, "id") > 1 ||
	    server_arg_count(r->conn, "scope") > 1)
		return server_error(r, MHD_HTTP_BAD_REQUEST, "bad_request",
		    "a repeated query parameter (\"id\" or \"scope\")", 0);
	if (MHD_lookup_connection_value_n(r->conn, MHD_GET_ARGUMENT_KIND,
	    "id", 2, &id, &idlen) != MHD_YES || id == NULL)
		return server_error(r, MHD_HTTP_BAD_REQUEST, "bad_request",
		    "query parameter \"id\" is required", 0);
	/*
	 * A scope named but not given ("&scope", "scope%00x=") is not the
	 * default scope: a reader that sees it would take the answer for
	 * another key than the one checked.
	 */
	if (MHD_lookup_connection_value_n(r->conn, MHD_GET_ARGUMENT_KIND,
	    "scope", 5, &scope, &scopelen) != MHD_YES || scope == NULL) {
		if (server_arg_count(r->conn, "scope") > 0)
			return server_error(r, MHD_HTTP_BAD_REQUEST,
			    "bad_request", "query parameter \"scope\" without "
			    "a value", 0);
		scope = REVKEY_DEFAULT_SCOPE;
	} else if (strlen(scope) != scopelen)
		return server_error(r, MHD_HTTP_BAD_REQUEST, "bad_request",
		    "scope contains a NUL byte", 0);
	if (revkey_from_text(&k, scope, id, idlen, e, sizeof(e)) == -1) {
		snprintf(msg, sizeof(msg), "bad id or scope: %s", e);
		return server_error(r, MHD_HTTP_BAD_REQUEST, "bad_request",
		    msg, 0);
	}
	return answer_one(r, &k);
}

int
check_get_fast(const struct server_ctx *ctx, const struct live *lv,
    const char *id, size_t id_len, const char *scope, size_t scope_len,
    struct sbuf *b, struct check_fast *out)
{
	struct check_settle *settle = NULL;
	struct metrics_tally cap;
	struct check_result res;
	struct answer_tag tag;
	const struct snapshot *s;
	enum stale_reason why;
	struct revkey k;
	char e[256];
	int rc = -1;

	if (scope != NULL && scope_len == 0)
		return -1;
	if (revkey_from_text(&k, scope != NULL ? scope : REVKEY_DEFAULT_SCOPE,
	    id, id_len, e, sizeof(e)) == -1)
		return -1;
	/* The refusal counts once: when libmicrohttpd's path makes it. */
	metrics_capture_begin(&cap);
	if (check_begin(ctx->slot, &lv->policy, util_now(), &s, &why) !=
	    CHECK_GATE_OK) {
		metrics_capture_end(false);
		return -1;
	}
	/* On an edge a positive is settled off this thread: not here. */
	if (ctx->settle != NULL)
		check_settle_bind(&settle);
	if (check_key(s, &k, &res) == 0) {
		checkio_render(b, s, &k, &res);
		sbuf_adds(b, "\n");
		tag_set(&tag, s);
		memcpy(out->ver, tag.ver, sizeof(out->ver));
		memcpy(out->seq, tag.seq, sizeof(out->seq));
		out->status = check_status_str(res.status);
		rc = sbuf_ok(b) ? 0 : -1;
	}
	if (ctx->settle != NULL) {
		check_settle_bind(NULL);
		check_settle_free(settle);
	}
	metrics_capture_end(rc == 0);
	check_end(s);
	return rc;
}

/* A batch item whose positive the authority did not settle. */
static void
render_unsettled(struct sbuf *b, enum check_fail f)
{
	server_render_error(b, check_fail_str(f), f == CHECK_FAIL_BEHIND ?
	    "possibly revoked; the authority answered from an older filter "
	    "version" : "possibly revoked; the authority cannot be reached");
}

/*
 * Ends a batch's body b (its results rendered), counts its tally and
 * answers it, tagged with the filter version that decided it.
 */
static enum MHD_Result
batch_reply(const struct server_req *r, struct sbuf *b,
    struct metrics_tally *tally, const struct answer_tag *tag)
{
	struct server_hdr h[2];
	char *body;
	size_t len;

	sbuf_adds(b, "]}\n");
	metrics_tally_flush(tally);
	if ((body = sbuf_take(b, &len)) == NULL)
		return MHD_NO;
	return server_reply(r, MHD_HTTP_OK, body, len, CTYPE_JSON, h,
	    tag_headers(h, tag));
}

static enum MHD_Result
check_batch(const struct server_req *r, const cJSON *items)
{
	struct check_result res;
	struct metrics_tally tally;
	const struct snapshot *s;
	struct revkey k;
	struct trust_cutoffs cut;
	enum stale_reason why;
	enum jwt_verdict jv;
	enum check_gate g;
	const cJSON *it;
	struct sbuf b;
	struct answer_tag tag;
	char e[300];
	size_t n, i = 0;

	n = (size_t)cJSON_GetArraySize(items);
	if (n > r->live->cfg.max_batch) {
		snprintf(e, sizeof(e), "batch of %zu items is over the limit "
		    "of %llu", n, (unsigned long long)r->live->cfg.max_batch);
		return server_error(r, MHD_HTTP_CONTENT_TOO_LARGE,
		    "payload_too_large", e, 0);
	}
	g = check_begin(r->ctx->slot, &r->live->policy, util_now(), &s,
	    &why);
	if (g != CHECK_GATE_OK)
		return gate_error(r, g, why);
	sbuf_init(&b, n < 4096 ? 64 + n * 160 : (size_t)1 << 20, 0);
	sbuf_adds(&b, "{\"filter_version\":");
	sbuf_add_u64(&b, s->version);
	sbuf_adds(&b, ",\"results\":[");
	memset(&tally, 0, sizeof(tally));
	cJSON_ArrayForEach(it, items) {
		if (i++ > 0)
			sbuf_adds(&b, ",");
		if (checkio_key_from_json_cut(it, &r->live->trust, &k, &cut, &jv,
		    e, sizeof(e)) == -1) {
			metrics_tally_inc(&tally, MET_BAD_ITEMS);
			if (checkio_invalid_token(jv))
				render_invalid(&b, jv, e);
			else
				server_render_error(&b, "bad_request", e);
		} else if (check_token_tally(s, &k, &cut, &res, &tally) == -1) {
			metrics_tally_inc(&tally, MET_BAD_ITEMS);
			render_unsettled(&b, res.fail);
		} else
			checkio_render(&b, s, &k, &res);
	}
	tag_set(&tag, s);
	check_end(s);
	return batch_reply(r, &b, &tally, &tag);
}

/* Items decided and rendered a chunk at a time (check_keys_tally). */
#define BATCH_CHUNK	32

struct batch_work {
	struct revkey	 keys[BATCH_CHUNK];
	struct check_result res[BATCH_CHUNK];
	int		 rc[BATCH_CHUNK];
	bool		 ok[BATCH_CHUNK];	/* the key could be derived */
	struct revkey	 scratch;
};

/*
 * A batch read in place (batch.h): every item is {"id"} or {"id",
 * "scope"}, so each answer is the one check_batch gives for it, from one
 * snapshot, with the filter asked for a chunk of keys at once. The body
 * under items must outlive the call.
 */
static enum MHD_Result
check_batch_items(const struct server_req *r, const struct batch_item *items,
    size_t n)
{
	struct metrics_tally tally;
	struct batch_work *w;
	const struct revkey *last;
	const struct snapshot *s;
	enum stale_reason why;
	enum check_gate g;
	struct sbuf b;
	struct answer_tag tag;
	char e[300];
	size_t i, j, m, k;

	if ((w = malloc(sizeof(*w))) == NULL)
		return MHD_NO;
	g = check_begin(r->ctx->slot, &r->live->policy, util_now(), &s,
	    &why);
	if (g != CHECK_GATE_OK) {
		free(w);
		return gate_error(r, g, why);
	}
	sbuf_init(&b, n < 4096 ? 64 + n * 160 : (size_t)1 << 20, 0);
	sbuf_adds(&b, "{\"filter_version\":");
	sbuf_add_u64(&b, s->version);
	sbuf_adds(&b, ",\"results\":[");
	memset(&tally, 0, sizeof(tally));
	for (i = 0; i < n; i += m) {
		m = n - i < BATCH_CHUNK ? n - i : BATCH_CHUNK;
		/*
		 * The items whose keys derive, packed for one decision. An
		 * item of the scope of the last key derived in full (not x509)
		 * takes that scope as it is; last is always below k.
		 */
		last = NULL;
		for (j = k = 0; j < m; j++) {
			if (last != NULL && checkio_key_same_scope(&w->keys[k],
			    last, items[i + j].scope, items[i + j].scope_len,
			    items[i + j].id, items[i + j].id_len) == 0) {
				w->ok[j] = true;
				k++;
				continue;
			}
			w->ok[j] = checkio_key_from_id(&w->keys[k],
			    items[i + j].scope, items[i + j].scope_len,
			    items[i + j].id, items[i + j].id_len, e,
			    sizeof(e)) == 0;
			if (w->ok[j])
				last = revkey_scope_is_x509(w->keys[k].scope) ?
				    NULL : &w->keys[k];
			k += w->ok[j];
		}
		check_keys_tally(s, w->keys, k, w->res, w->rc, &tally);
		for (j = k = 0; j < m; j++) {
			if (i + j > 0)
				sbuf_addlit(&b, ",");
			if (!w->ok[j]) {
				/* Derived again for its message (rare). */
				(void)checkio_key_from_id(&w->scratch,
				    items[i + j].scope,
				    items[i + j].scope_len, items[i + j].id,
				    items[i + j].id_len, e, sizeof(e));
				metrics_tally_inc(&tally, MET_BAD_ITEMS);
				server_render_error(&b, "bad_request", e);
				continue;
			}
			if (w->rc[k] == -1) {
				metrics_tally_inc(&tally, MET_BAD_ITEMS);
				render_unsettled(&b, w->res[k].fail);
			} else
				checkio_render(&b, s, &w->keys[k], &w->res[k]);
			k++;
		}
	}
	tag_set(&tag, s);
	check_end(s);
	free(w);
	return batch_reply(r, &b, &tally, &tag);
}

/*
 * The common batch shape read in place (batch.h); 0 when the body has
 * another shape, which the general path answers.
 */
static int
try_batch_items(const struct server_req *r, enum MHD_Result *ret)
{
	struct batch_item *items;
	size_t cap, n;

	cap = batch_items_bound(r->body_len, r->live->cfg.max_batch);
	if ((items = malloc(cap * sizeof(*items))) == NULL)
		return 0;
	if (batch_parse(r->body, r->body_len, items, cap, &n) == -1) {
		free(items);
		return 0;
	}
	*ret = check_batch_items(r, items, n);
	free(items);
	return 1;
}

static enum MHD_Result
check_post(const struct server_req *r)
{
	struct revkey keys[CHECKIO_CHAIN_MAX_CERTS];
	const cJSON *items;
	const char *why = NULL;
	struct revkey k;
	struct trust_cutoffs cut;
	enum jwt_verdict jv;
	char e[300];
	cJSON *root;
	enum MHD_Result ret;
	size_t n = 0;

	if (try_batch_items(r, &ret))
		return ret;
	if ((root = checkio_parse_body(r->body, r->body_len, &why)) == NULL)
		return server_error(r, MHD_HTTP_BAD_REQUEST, "bad_request",
		    why, 0);
	items = cJSON_GetObjectItemCaseSensitive(root, "items");
	if (items != NULL) {
		/*
		 * A batch beside a single check's members would answer 200
		 * for the items alone: a token or certificate sent with them
		 * never checked, a scope meant for them not applied.
		 */
		if (cJSON_GetObjectItemCaseSensitive(root, "id") != NULL ||
		    cJSON_GetObjectItemCaseSensitive(root, "scope") != NULL ||
		    cJSON_GetObjectItemCaseSensitive(root, "cert") != NULL ||
		    cJSON_GetObjectItemCaseSensitive(root, "chain") != NULL ||
		    cJSON_GetObjectItemCaseSensitive(root, "token") != NULL)
			ret = server_error(r, MHD_HTTP_BAD_REQUEST,
			    "bad_request", "\"items\" goes alone: \"id\", "
			    "\"scope\", \"cert\", \"chain\" and \"token\" belong "
			    "in its items", 0);
		else if (!cJSON_IsArray(items))
			ret = server_error(r, MHD_HTTP_BAD_REQUEST,
			    "bad_request", "\"items\" must be an array", 0);
		else
			ret = check_batch(r, items);
	} else if (cJSON_GetObjectItemCaseSensitive(root, "cert") != NULL) {
		/* One certificate answers as before; a chain per certificate. */
		if (checkio_chain_from_json(root, keys, &n, e, sizeof(e)) == -1)
			ret = server_error(r, MHD_HTTP_BAD_REQUEST,
			    "bad_request", e, 0);
		else if (n == 1 && cJSON_GetObjectItemCaseSensitive(root,
		    "chain") == NULL)
			ret = answer_one(r, &keys[0]);
		else
			ret = answer_keys(r, keys, n, true, NULL);
	} else if (cJSON_GetObjectItemCaseSensitive(root, "chain") != NULL)
		ret = server_error(r, MHD_HTTP_BAD_REQUEST, "bad_request",
		    "\"chain\" needs \"cert\", the certificate it leads to",
		    0);
	else if (checkio_key_from_json_cut(root, &r->live->trust, &k, &cut, &jv,
	    e, sizeof(e)) == -1)
		ret = checkio_invalid_token(jv) ? invalid_token(r, jv, e) :
		    server_error(r, MHD_HTTP_BAD_REQUEST, "bad_request", e, 0);
	else
		ret = answer_keys(r, &k, 1, false, &cut);
	cJSON_Delete(root);
	return ret;
}

enum MHD_Result
handle_check(const struct server_req *r)
{
	if (strcmp(r->method, "POST") == 0) {
		/*
		 * A POST answers its body: an "id" or "scope" in its query
		 * would be ignored while a reader of the URL (a log, a
		 * proxy, the caller) takes the answer for it.
		 */
		if (server_arg_count(r->conn, "id") > 0 ||
		    server_arg_count(r->conn, "scope") > 0)
			return server_error(r, MHD_HTTP_BAD_REQUEST,
			    "bad_request", "a POST is answered from its body: "
			    "\"id\" or \"scope\" in its query would be "
			    "ignored", 0);
		return check_post(r);
	}
	return check_get(r);
}

/*
 * What an allowed request is (the identity headers of a 200), each value
 * escaped by authzcred_escape; "" when there is none to send.
 */
struct authz_id {
	char	sub[AUTHZCRED_ID_BUF];		/* the token's sub */
	char	iss[AUTHZCRED_ID_BUF];		/* the token's iss */
	char	cert[AUTHZCRED_ID_BUF];		/* the client cert's subject */
};

/*
 * The authz answer; with ncerts > 0, "certificates" lists the verdict of
 * each certificate of the client-certificate header in its order. id
 * (only for a 200) adds the identity headers that are not "".
 */
static enum MHD_Result
authz_reply_certs(const struct server_req *r, unsigned status,
    const char *verdict, const struct answer_tag *tag,
    const enum check_status *certs, size_t ncerts, const struct authz_id *id)
{
	struct server_hdr h[8];
	struct sbuf b;
	char *body;
	size_t len, nh = 0, i;

	sbuf_init(&b, 128 + ncerts * 16, 0);
	sbuf_adds(&b, "{\"verdict\":\"");
	sbuf_adds(&b, verdict);
	sbuf_adds(&b, "\"");
	if (tag != NULL) {
		sbuf_adds(&b, ",\"filter_version\":");
		sbuf_adds(&b, tag->ver);
		if (tag->seq[0] != '\0') {
			sbuf_adds(&b, ",\"delta_seq\":");
			sbuf_adds(&b, tag->seq);
		}
	}
	if (ncerts > 0) {
		sbuf_adds(&b, ",\"certificates\":[");
		for (i = 0; i < ncerts; i++) {
			sbuf_adds(&b, i > 0 ? ",\"" : "\"");
			sbuf_adds(&b, check_status_str(certs[i]));
			sbuf_adds(&b, "\"");
		}
		sbuf_adds(&b, "]");
	}
	sbuf_adds(&b, "}\n");
	if ((body = sbuf_take(&b, &len)) == NULL)
		return MHD_NO;
	h[nh].name = HDR_STATUS;
	h[nh++].value = verdict;
	if (tag != NULL)
		nh += tag_headers(&h[nh], tag);
	/* RFC 6750 3.1: no error code when no credential was sent. */
	if (status == MHD_HTTP_UNAUTHORIZED) {
		h[nh].name = MHD_HTTP_HEADER_WWW_AUTHENTICATE;
		h[nh++].value = strcmp(verdict, "no_credential") == 0 ?
		    "Bearer" : "Bearer error=\"invalid_token\"";
	}
	if (id != NULL && status == MHD_HTTP_OK) {
		if (id->sub[0] != '\0') {
			h[nh].name = AUTHZCRED_HDR_SUBJECT;
			h[nh++].value = id->sub;
		}
		if (id->iss[0] != '\0') {
			h[nh].name = AUTHZCRED_HDR_ISSUER;
			h[nh++].value = id->iss;
		}
		if (id->cert[0] != '\0') {
			h[nh].name = AUTHZCRED_HDR_CERT_SUBJECT;
			h[nh++].value = id->cert;
		}
	}
	return server_reply(r, status, body, len, CTYPE_JSON, h, nh);
}

static enum MHD_Result
authz_reply(const struct server_req *r, unsigned status, const char *verdict,
    const struct answer_tag *tag)
{
	return authz_reply_certs(r, status, verdict, tag, NULL, 0, NULL);
}

/*
 * The token of an Authorization header value "Bearer" 1*(SP / HTAB)
 * token (RFC 6750 section 2.1; the scheme in any case), trailing blanks
 * dropped, with its length in *len; NULL for any other value.
 */
static const char *
bearer_token(const char *auth, size_t *len)
{
	const char *tok;
	size_t tl;

	if (strncasecmp(auth, "Bearer", 6) != 0 ||
	    (auth[6] != ' ' && auth[6] != '\t'))
		return NULL;
	tok = auth + 6;
	while (*tok == ' ' || *tok == '\t')
		tok++;
	tl = strlen(tok);
	while (tl > 0 && (tok[tl - 1] == ' ' || tok[tl - 1] == '\t'))
		tl--;
	if (tl == 0)
		return NULL;
	*len = tl;
	return tok;
}

/* Claim name of verified claims, escaped into out; "" when not a string. */
static void
claim_id(char *out, const cJSON *claims, const char *name)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(claims, name);

	out[0] = '\0';
	if (cJSON_IsString(m) && m->valuestring != NULL)
		(void)authzcred_escape(out, m->valuestring,
		    strlen(m->valuestring));
}

/*
 * The key and cutoffs of the bearer token in Authorization header value
 * auth, proven valid, and (when it was verified: never in
 * revocation-only mode) its sub and iss into id. Returns NULL, or the
 * verdict of the 401 to answer.
 */
static const char *
authz_token(const struct server_req *r, const char *auth, struct revkey *k,
    struct trust_cutoffs *cut, struct authz_id *id)
{
	struct trust *t = &r->live->trust;
	cJSON *claims = NULL;
	enum jwt_verdict jv;
	const char *tok;
	char e[256];
	size_t tl;

	/*
	 * An Authorization header is a credential: one this cannot check
	 * (another scheme such as DPoP or Basic, no space after the scheme,
	 * no token) is refused, never passed over, or a clean certificate
	 * beside it would answer for it.
	 */
	if ((tok = bearer_token(auth, &tl)) == NULL) {
		log_debug("authz: Authorization header refused: not "
		    "\"Bearer\", spaces and a token");
		return "bad_credential";
	}
	if (trust_token_cut(t, tok, tl, util_now(), k, cut,
	    t->revocation_only ? NULL : &claims, &jv, e, sizeof(e)) == -1) {
		log_debug("authz: token refused: %s: %s", jwt_verdict_str(jv),
		    e);
		return jv == JWT_MALFORMED ? "bad_credential" :
		    jwt_verdict_str(jv);
	}
	if (claims != NULL) {
		claim_id(id->sub, claims, "sub");
		claim_id(id->iss, claims, "iss");
		cJSON_Delete(claims);
	}
	return NULL;
}

/*
 * Every credential present is checked; the worst verdict wins (revoked,
 * then not_covered, then not_revoked), so adding a clean credential can
 * never hide a revoked one. An allow names who was let in (struct
 * authz_id) for the gateway to pass on.
 */
enum MHD_Result
handle_authz(const struct server_req *r)
{
	const struct config *c = &r->live->cfg;
	struct revkey keys[1 + CHECKIO_CHAIN_MAX_CERTS];
	enum check_status st[1 + CHECKIO_CHAIN_MAX_CERTS];
	struct check_result res;
	const struct snapshot *s;
	enum stale_reason why;
	enum check_gate g;
	struct trust_cutoffs cut;
	struct authz_id id;
	bool has_token = false;
	const char *auth, *cert, *verdict;
	struct answer_tag tag;
	char e[256];
	size_t nk = 0, i, first_cert;
	bool revoked = false, uncovered = false, failed = false;
	enum check_fail fail = CHECK_FAIL_UNAVAILABLE;

	/* Which copy counts would be ambiguous (server.c refuses a
	 * repeated Authorization header the same way). */
	if (server_header_count(r->conn, c->authz_cert_header) > 1)
		return server_error(r, MHD_HTTP_BAD_REQUEST, "bad_request",
		    "repeated client certificate header", 0);
	auth = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_AUTHORIZATION);
	cert = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
	    c->authz_cert_header);
	id.sub[0] = id.iss[0] = id.cert[0] = '\0';
	if (auth != NULL) {
		if ((verdict = authz_token(r, auth, &keys[nk], &cut,
		    &id)) != NULL)
			return authz_reply(r, MHD_HTTP_UNAUTHORIZED, verdict,
			    NULL);
		nk++;
		has_token = true;
	}
	first_cert = nk;
	if (cert != NULL && cert[0] != '\0') {
		/* A chain: every certificate is a credential of its own. */
		if (authzcred_cert_keys(cert, c->authz_cert_xfcc, keys,
		    nk + CHECKIO_CHAIN_MAX_CERTS, &nk, id.cert, e,
		    sizeof(e)) == -1) {
			log_debug("authz: client certificate header refused: "
			    "%s", e);
			return authz_reply(r, MHD_HTTP_UNAUTHORIZED,
			    "bad_credential", NULL);
		}
	}
	if (nk == 0)
		return authz_reply(r, MHD_HTTP_UNAUTHORIZED, "no_credential",
		    NULL);
	g = check_begin(r->ctx->slot, &r->live->policy, util_now(), &s,
	    &why);
	if (g != CHECK_GATE_OK)
		return authz_reply(r, MHD_HTTP_SERVICE_UNAVAILABLE,
		    g == CHECK_GATE_NO_FILTER ? "no_filter" : "filter_stale",
		    NULL);
	tag_set(&tag, s);
	/*
	 * Every credential is checked before an unsettled one answers 503,
	 * so that an edge asks the authority about all of a request's
	 * positives in one go (check_settle).
	 */
	for (i = 0; i < nk; i++) {
		if ((has_token && i == 0 ? check_token(s, &keys[i], &cut,
		    &res) : check_key(s, &keys[i], &res)) == -1) {
			if (!failed)
				fail = res.fail;
			failed = true;
			continue;
		}
		st[i] = res.status;
		if (res.status == CHECK_REVOKED)
			revoked = true;
		else if (res.status == CHECK_NOT_COVERED)
			uncovered = true;
	}
	check_end(s);
	if (failed)
		return authz_reply(r, MHD_HTTP_SERVICE_UNAVAILABLE,
		    check_fail_str(fail), &tag);
	if (revoked)
		return authz_reply_certs(r, MHD_HTTP_FORBIDDEN, "revoked", &tag,
		    st + first_cert, nk - first_cert, NULL);
	if (uncovered && !c->authz_not_covered_allow)
		return authz_reply_certs(r, MHD_HTTP_FORBIDDEN, "not_covered",
		    &tag, st + first_cert, nk - first_cert, NULL);
	return authz_reply_certs(r, MHD_HTTP_OK, uncovered ? "not_covered" :
	    "not_revoked", &tag, st + first_cert, nk - first_cert, &id);
}

/* ---------------------------------------------------------------- /v1/introspect */

#define INTROSPECT_CRED_MAX	1024	/* bytes of a decoded Basic credential */

/*
 * RFC 7662 2.1: the caller authenticates. HTTP Basic with an
 * introspection client's id and secret, or "Bearer <secret>" with any
 * client's secret. The client that matches, or NULL.
 */
static const struct trust_client *
introspect_caller(const struct server_req *r)
{
	unsigned char buf[INTROSPECT_CRED_MAX + 3];
	const struct trust_client *cl = NULL;
	const char *auth, *p;
	unsigned char *colon;
	size_t n;
	int dl;

	auth = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_AUTHORIZATION);
	if (auth == NULL)
		return NULL;
	if (strncasecmp(auth, "Bearer ", 7) == 0) {
		for (p = auth + 7; *p == ' '; p++)
			;
		return trust_client_find(&r->live->trust, NULL, 0,
		    (const unsigned char *)p, strlen(p));
	}
	if (strncasecmp(auth, "Basic ", 6) != 0)
		return NULL;
	for (p = auth + 6; *p == ' '; p++)
		;
	n = strlen(p);
	if (n == 0 || n % 4 != 0 || n / 4 * 3 > INTROSPECT_CRED_MAX)
		return NULL;
	if ((dl = EVP_DecodeBlock(buf, (const unsigned char *)p, (int)n)) < 0)
		return NULL;
	if (p[n - 1] == '=')
		dl--;
	if (p[n - 2] == '=')
		dl--;
	if ((colon = memchr(buf, ':', (size_t)dl)) != NULL)
		cl = trust_client_find(&r->live->trust, (const char *)buf,
		    (size_t)(colon - buf), colon + 1,
		    (size_t)dl - (size_t)(colon - buf) - 1);
	OPENSSL_cleanse(buf, sizeof(buf));
	return cl;
}

/* True when s is one of cl's audiences. */
static bool
client_has_aud(const struct trust_client *cl, const char *s)
{
	size_t i;

	for (i = 0; i < cl->naud; i++)
		if (strcmp(s, cl->aud[i]) == 0)
			return true;
	return false;
}

/*
 * RFC 7662 section 4: a client learns about a token only when it is
 * among the token's audiences. True when "aud" (a string or an array of
 * strings; jwt_verify has already required one the issuer accepts)
 * names one of the calling client's audiences.
 */
static bool
introspect_aud_ok(const cJSON *claims, const struct trust_client *cl)
{
	const cJSON *aud = cJSON_GetObjectItemCaseSensitive(claims, "aud");
	const cJSON *it;

	if (cJSON_IsString(aud))
		return client_has_aud(cl, aud->valuestring);
	if (!cJSON_IsArray(aud))
		return false;
	cJSON_ArrayForEach(it, aud)
		if (cJSON_IsString(it) && client_has_aud(cl, it->valuestring))
			return true;
	return false;
}

/*
 * The value of form parameter name in an application/x-www-form-urlencoded
 * body, decoded into a fresh string. Returns 1 with *out, 0 when absent,
 * -1 when repeated (RFC 6749 3.1) or badly encoded.
 */
static int
form_value(const char *body, size_t len, const char *name, char **out)
{
	size_t nl = strlen(name), i = 0, j, vl;
	char *v = NULL;

	*out = NULL;
	while (i < len) {
		for (j = i; j < len && body[j] != '&'; j++)
			;
		if (j - i > nl && memcmp(body + i, name, nl) == 0 &&
		    body[i + nl] == '=') {
			if (v != NULL) {
				free(v);
				return -1;
			}
			vl = j - i - nl - 1;
			if ((v = malloc(vl + 1)) == NULL)
				return -1;
			memcpy(v, body + i + nl + 1, vl);
			v[vl] = '\0';
		}
		i = j + 1;
	}
	if (v == NULL)
		return 0;
	for (i = 0; v[i] != '\0'; i++)
		if (v[i] == '+')
			v[i] = ' ';
	vl = strlen(v);
	if (util_pct_decode(v, &vl) == -1 || memchr(v, '\0', vl) != NULL) {
		free(v);
		return -1;
	}
	v[vl] = '\0';
	*out = v;
	return 1;
}

/* Sends text as the JSON body of status, with hdrs. */
static enum MHD_Result
introspect_reply(const struct server_req *r, unsigned status,
    const char *text, const struct server_hdr *hdrs, size_t nhdrs)
{
	struct sbuf b;
	char *body;
	size_t len;

	sbuf_init(&b, 64, 0);
	sbuf_adds(&b, text);
	if ((body = sbuf_take(&b, &len)) == NULL)
		return MHD_NO;
	return server_reply(r, status, body, len, CTYPE_JSON, hdrs,
	    nhdrs);
}

/*
 * Copies the claims RFC 7662 2.2 names, when the token has them, each
 * escaped as every JSON answer is (sbuf_add_json: '<' '>' '&', DEL and
 * control characters as \u00XX; jwt_parse refused a token that is not
 * UTF-8), so a claim can never be read as markup by a consumer.
 */
static void
introspect_members(struct sbuf *b, const cJSON *claims)
{
	static const char *const names[] = { "iss", "sub", "aud", "exp",
	    "iat", "nbf", "jti", "scope", "client_id" };
	const cJSON *m;
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		m = cJSON_GetObjectItemCaseSensitive(claims, names[i]);
		if (m == NULL)
			continue;
		sbuf_adds(b, ",\"");
		sbuf_adds(b, names[i]);
		sbuf_adds(b, "\":");
		sbuf_add_json(b, m);
	}
}

/*
 * POST /v1/introspect (RFC 7662): {"active": true, ...} only for a token
 * that verifies, names one of the calling client's audiences in "aud"
 * (section 4), and is proven not revoked; {"active": false} for every
 * other token. A stale filter or an unsettled positive is a 503, as for
 * every check.
 */
enum MHD_Result
handle_introspect(const struct server_req *r)
{
	struct server_hdr h[2];
	struct answer_tag tag;
	struct check_result res;
	const struct snapshot *s;
	struct revkey k;
	enum stale_reason why;
	enum jwt_verdict jv;
	enum check_gate g;
	struct trust_cutoffs cut;
	const struct trust_client *cl;
	cJSON *claims = NULL;
	struct sbuf b;
	char *tok = NULL, *hint = NULL, e[256], *body;
	size_t len, nh;
	int f;

	if ((cl = introspect_caller(r)) == NULL) {
		h[0].name = MHD_HTTP_HEADER_WWW_AUTHENTICATE;
		h[0].value = "Basic realm=\"revcheck introspection\"";
		return introspect_reply(r, MHD_HTTP_UNAUTHORIZED,
		    "{\"error\":\"invalid_client\"}\n", h, 1);
	}
	if ((f = form_value(r->body, r->body_len, "token", &tok)) != 1 ||
	    form_value(r->body, r->body_len, "token_type_hint", &hint) == -1) {
		free(tok);
		return server_error(r, MHD_HTTP_BAD_REQUEST, "invalid_request",
		    f == 0 ? "the form parameter \"token\" is required" :
		    "\"token\" or \"token_type_hint\" repeated or badly "
		    "encoded", 0);
	}
	free(hint);	/* only JWTs are known: the hint changes nothing */
	f = trust_token_cut(&r->live->trust, tok, strlen(tok), util_now(), &k,
	    &cut, &claims, &jv, e, sizeof(e));
	free(tok);
	if (f == -1) {
		log_debug("introspect: inactive: %s: %s", jwt_verdict_str(jv),
		    e);
		return introspect_reply(r, MHD_HTTP_OK,
		    "{\"active\":false}\n", NULL, 0);
	}
	if (!introspect_aud_ok(claims, cl)) {
		log_debug("introspect: inactive: no audience of client %s",
		    cl->id);
		cJSON_Delete(claims);
		return introspect_reply(r, MHD_HTTP_OK,
		    "{\"active\":false}\n", NULL, 0);
	}
	g = check_begin(r->ctx->slot, &r->live->policy, util_now(), &s, &why);
	if (g != CHECK_GATE_OK) {
		cJSON_Delete(claims);
		return gate_error(r, g, why);
	}
	if (check_token(s, &k, &cut, &res) == -1) {
		check_end(s);
		cJSON_Delete(claims);
		return authority_error(r, res.fail);
	}
	/* What the filter decided names its version, as every check does. */
	tag_set(&tag, s);
	check_end(s);
	nh = tag_headers(h, &tag);
	if (res.status != CHECK_NOT_REVOKED) {
		cJSON_Delete(claims);
		return introspect_reply(r, MHD_HTTP_OK,
		    "{\"active\":false}\n", h, nh);
	}
	sbuf_init(&b, 512, 0);
	sbuf_adds(&b, "{\"active\":true,\"token_type\":\"Bearer\"");
	introspect_members(&b, claims);
	sbuf_adds(&b, "}\n");
	cJSON_Delete(claims);
	if ((body = sbuf_take(&b, &len)) == NULL)
		return MHD_NO;
	return server_reply(r, MHD_HTTP_OK, body, len, CTYPE_JSON,
	    h, nh);
}
