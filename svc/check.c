/* check.c - the check logic: filter, fall-through to the authority, fail closed */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "jwt.h"
#include "metrics.h"
#include "util.h"

static check_authority_fn authority_fn;
static void *authority_arg;

void
check_set_authority(check_authority_fn fn, void *arg)
{
	authority_fn = fn;
	authority_arg = arg;
}

const char *
check_status_str(enum check_status st)
{
	switch (st) {
	case CHECK_NOT_REVOKED:
		return "not_revoked";
	case CHECK_REVOKED:
		return "revoked";
	case CHECK_NOT_COVERED:
		return "not_covered";
	}
	return "unknown";
}

const char *
check_fail_str(enum check_fail f)
{
	return f == CHECK_FAIL_BEHIND ? "authority_behind" :
	    "authority_unavailable";
}

const char *
check_source_str(enum check_source src)
{
	return src == CHECK_SRC_FILTER ? "filter" : "authoritative";
}

enum check_gate
check_begin(struct snapshot_slot *sl, const struct stale_policy *p,
    int64_t now, struct snapshot **out, enum stale_reason *why)
{
	struct snapshot *s;
	enum stale_reason r;

	*out = NULL;
	*why = STALE_FRESH;
	if ((s = snapshot_acquire(sl)) == NULL) {
		metrics_inc(MET_REFUSED_NO_FILTER);
		return CHECK_GATE_NO_FILTER;
	}
	r = stale_check(s->info, p, now, atomic_load_explicit(
	    &sl->newer_seen_at, memory_order_relaxed));
	if (r != STALE_FRESH) {
		snapshot_release(s);
		*why = r;
		metrics_inc(MET_REFUSED_STALE);
		return CHECK_GATE_STALE;
	}
	*out = s;
	return CHECK_GATE_OK;
}

int
check_key(const struct snapshot *s, const struct revkey *k,
    struct check_result *r)
{
	return check_key_tally(s, k, r, NULL);
}

int
check_key_tally(const struct snapshot *s, const struct revkey *k,
    struct check_result *r, struct metrics_tally *t)
{
	struct table_rec rec;

	memset(r, 0, sizeof(*r));
	metrics_tally_inc(t, MET_CHECKS);
	if (ffile_scope(s->ff, k->scope) == NULL) {
		metrics_tally_inc(t, MET_NOT_COVERED);
		r->status = CHECK_NOT_COVERED;
		r->source = CHECK_SRC_FILTER;
		return 0;
	}
	if (!ffile_query(s->ff, k)) {
		metrics_tally_inc(t, MET_FILTER_NEGATIVE);
		r->status = CHECK_NOT_REVOKED;
		r->source = CHECK_SRC_FILTER;
		return 0;
	}
	metrics_tally_inc(t, MET_FALLTHROUGH);
	r->source = CHECK_SRC_AUTHORITATIVE;
	if (s->tab != NULL) {
		int found = table_lookup(s->tab, k, &rec);

		if (found == -1) {
			/* Cannot happen to a validated private copy; never absent. */
			r->fail = CHECK_FAIL_UNAVAILABLE;
			metrics_tally_inc(t, MET_AUTHORITY_UNAVAILABLE);
			return -1;
		}
		if (found == 1) {
			r->status = CHECK_REVOKED;
			r->revoked_at = rec.revoked_at;
			memcpy(r->reason, rec.reason, sizeof(r->reason));
			r->reason[sizeof(r->reason) - 1] = '\0';
		} else
			r->status = CHECK_NOT_REVOKED;
	} else if (authority_fn == NULL ||
	    authority_fn(authority_arg, s, k, r) == -1) {
		metrics_tally_inc(t, r->fail == CHECK_FAIL_BEHIND ?
		    MET_AUTHORITY_BEHIND : MET_AUTHORITY_UNAVAILABLE);
		return -1;
	}
	if (r->status == CHECK_REVOKED)
		metrics_tally_inc(t, MET_CONFIRMED_REVOKED);
	else
		metrics_tally_inc(t, MET_FALSE_POSITIVE);
	return 0;
}

cJSON *
check_parse_body(const char *body, size_t len, const char **why)
{
	const char *end = NULL;
	cJSON *root;
	size_t i;

	if (!sbuf_utf8_valid(body, len)) {
		*why = "the body is not valid UTF-8";
		return NULL;
	}
	if ((*why = util_json_refused(body, len)) != NULL)
		return NULL;
	root = cJSON_ParseWithLengthOpts(body, len, &end, false);
	if (root == NULL) {
		*why = "the body is not valid JSON";
		return NULL;
	}
	for (i = (size_t)(end - body); i < len; i++) {
		if (body[i] != ' ' && body[i] != '\t' &&
		    body[i] != '\r' && body[i] != '\n') {
			cJSON_Delete(root);
			*why = "trailing data after the JSON value";
			return NULL;
		}
	}
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		*why = "the body must be a JSON object";
		return NULL;
	}
	return root;
}

int
check_key_from_json(const cJSON *obj, struct revkey *k, char *err,
    size_t errlen)
{
	const cJSON *id, *scope, *cert, *token, *m;
	const char *sc = REVKEY_DEFAULT_SCOPE;
	char e[256];
	size_t len;
	int n;

	if (!cJSON_IsObject(obj)) {
		snprintf(err, errlen, "a check must be a JSON object");
		return -1;
	}
	/*
	 * One pass over the members rather than four lookups (a batch does
	 * this per item); the first of a repeated name wins, as with
	 * cJSON_GetObjectItemCaseSensitive().
	 */
	id = scope = cert = token = NULL;
	for (m = obj->child; m != NULL; m = m->next) {
		if (m->string == NULL)
			continue;
		if (id == NULL && strcmp(m->string, "id") == 0)
			id = m;
		else if (scope == NULL && strcmp(m->string, "scope") == 0)
			scope = m;
		else if (cert == NULL && strcmp(m->string, "cert") == 0)
			cert = m;
		else if (token == NULL && strcmp(m->string, "token") == 0)
			token = m;
	}
	n = (id != NULL) + (cert != NULL) + (token != NULL);
	if (n != 1) {
		snprintf(err, errlen, n == 0 ? "one of \"id\", \"cert\" or "
		    "\"token\" is required" : "only one of \"id\", \"cert\" "
		    "and \"token\" may be given");
		return -1;
	}
	if (scope != NULL && id == NULL) {
		snprintf(err, errlen, "\"scope\" goes with \"id\" only");
		return -1;
	}
	if (id != NULL) {
		if (!cJSON_IsString(id)) {
			snprintf(err, errlen, "\"id\" must be a string");
			return -1;
		}
		if (scope != NULL) {
			if (!cJSON_IsString(scope)) {
				snprintf(err, errlen, "\"scope\" must be a "
				    "string");
				return -1;
			}
			sc = scope->valuestring;
		}
		len = strlen(id->valuestring);
		if (revkey_from_text(k, sc, id->valuestring, len, e,
		    sizeof(e)) == -1) {
			snprintf(err, errlen, "bad id or scope: %s", e);
			return -1;
		}
		return 0;
	}
	if (cert != NULL) {
		if (!cJSON_IsString(cert)) {
			snprintf(err, errlen, "\"cert\" must be a string "
			    "holding a PEM certificate");
			return -1;
		}
		len = strlen(cert->valuestring);
		if (revkey_from_cert_bytes(k, cert->valuestring, len, e,
		    sizeof(e)) == -1) {
			snprintf(err, errlen, "bad certificate: %s", e);
			return -1;
		}
		return 0;
	}
	if (!cJSON_IsString(token)) {
		snprintf(err, errlen, "\"token\" must be a string holding a "
		    "JWT");
		return -1;
	}
	len = strlen(token->valuestring);
	if (jwt_revkey(k, token->valuestring, len, e, sizeof(e)) == -1) {
		snprintf(err, errlen, "bad token: %s", e);
		return -1;
	}
	return 0;
}

void
check_render(struct sbuf *b, const struct snapshot *s,
    const struct revkey *k, const struct check_result *r)
{
	char idt[REVKEY_ID_TEXT_MAX];
	char ts[UTIL_RFC3339_LEN];
	size_t n;

	sbuf_adds(b, "{\"status\":\"");
	sbuf_adds(b, check_status_str(r->status));
	sbuf_adds(b, "\",\"source\":\"");
	sbuf_adds(b, check_source_str(r->source));
	sbuf_adds(b, "\",\"scope\":");
	sbuf_add_jstr(b, k->scope, k->scope_len);
	sbuf_adds(b, ",\"id\":");
	n = revkey_id_text(k, idt);
	sbuf_add_jstr(b, idt, n);
	sbuf_adds(b, ",\"filter_version\":");
	sbuf_add_u64(b, s->version);
	if (r->status == CHECK_REVOKED) {
		if (r->revoked_at != 0) {
			util_rfc3339(ts, r->revoked_at);
			sbuf_adds(b, ",\"revoked_at\":\"");
			sbuf_adds(b, ts);
			sbuf_adds(b, "\"");
		}
		if (r->reason[0] != '\0') {
			sbuf_adds(b, ",\"reason\":");
			sbuf_add_jstr(b, r->reason, strnlen(r->reason,
			    sizeof(r->reason)));
		}
	}
	sbuf_adds(b, "}");
}

void
check_render_error(struct sbuf *b, const char *code, const char *msg)
{
	sbuf_adds(b, "{\"error\":");
	sbuf_add_jstrs(b, code);
	sbuf_adds(b, ",\"message\":");
	sbuf_add_jstrs(b, msg);
	sbuf_adds(b, "}");
}
