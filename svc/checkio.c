/* checkio.c - the check path's wire formats: request bodies and certificates to keys, results to JSON */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkio.h"
#include "server.h"
#include "util.h"

/*
 * The member names a check reads. One given twice in an object is
 * ambiguous: cJSON takes the first, another parser on the way (a proxy,
 * a client's log) may take the last, and the answer would be about
 * another id than the one the caller sees. So is one in another case
 * ("ID", "Scope"): Go's encoding/json, for one, matches member names
 * without regard to case (U+017F long s as "s" and U+212A Kelvin sign
 * as "k" too), and there the last of them wins.
 */
static const struct {
	const char	*name;
	const char	*why;
	const char	*case_why;
} read_names[] = {
	{ "id", "a repeated \"id\" member",
	    "a member named \"id\" in another case" },
	{ "scope", "a repeated \"scope\" member",
	    "a member named \"scope\" in another case" },
	{ "cert", "a repeated \"cert\" member",
	    "a member named \"cert\" in another case" },
	{ "token", "a repeated \"token\" member",
	    "a member named \"token\" in another case" },
	{ "chain", "a repeated \"chain\" member",
	    "a member named \"chain\" in another case" },
	{ "items", "a repeated \"items\" member",
	    "a member named \"items\" in another case" },
};

/*
 * True when s is name (lowercase ASCII) under case folding as Go's
 * encoding/json does it: ASCII letters in either case, U+017F for "s"
 * and U+212A for "k" (the only other runes whose fold sets hold a
 * letter of the read names).
 */
static bool
name_folds_to(const char *s, const char *name)
{
	const unsigned char *p = (const unsigned char *)s;
	unsigned char c;

	for (; *name != '\0'; name++) {
		if (p[0] == 0xc5 && p[1] == 0xbf) {
			c = 's';
			p += 2;
		} else if (p[0] == 0xe2 && p[1] == 0x84 && p[2] == 0xaa) {
			c = 'k';
			p += 3;
		} else if (*p >= 'A' && *p <= 'Z')
			c = (unsigned char)(*p++ - 'A' + 'a');
		else
			c = *p++;
		if (c != (unsigned char)*name)
			return false;
	}
	return *p == '\0';
}

/*
 * Why: a read name repeated, or given in another case, in an object
 * anywhere in v; NULL if none.
 */
static const char *
repeated_member(const cJSON *v)
{
	const cJSON *m;
	const char *r;
	unsigned seen = 0;
	size_t i;

	for (m = v->child; m != NULL; m = m->next) {
		for (i = 0; cJSON_IsObject(v) && m->string != NULL &&
		    i < sizeof(read_names) / sizeof(read_names[0]); i++) {
			if (strcmp(m->string, read_names[i].name) != 0) {
				if (name_folds_to(m->string,
				    read_names[i].name))
					return read_names[i].case_why;
				continue;
			}
			if (seen & (1u << i))
				return read_names[i].why;
			seen |= 1u << i;
		}
		if ((cJSON_IsObject(m) || cJSON_IsArray(m)) &&
		    (r = repeated_member(m)) != NULL)
			return r;
	}
	return NULL;
}

cJSON *
checkio_parse_body(const char *body, size_t len, const char **why)
{
	const char *end = NULL;
	cJSON *root;
	size_t i;

	if (!util_utf8_valid(body, len)) {
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
	if ((*why = repeated_member(root)) != NULL) {
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

bool
checkio_invalid_token(enum jwt_verdict why)
{
	return why != JWT_VALID && why != JWT_MALFORMED;
}

int
checkio_key_from_id(struct revkey *k, const char *scope, size_t scope_len,
    const char *id, size_t id_len, char *err, size_t errlen)
{
	char sc[REVKEY_SCOPE_MAX + 2], e[256];

	/*
	 * A longer scope is invalid whatever it holds: its first 256 bytes
	 * say so, as revkey_from_text reads no further.
	 */
	if (scope == NULL)
		scope_len = sizeof(REVKEY_DEFAULT_SCOPE) - 1;
	if (scope_len > REVKEY_SCOPE_MAX + 1)
		scope_len = REVKEY_SCOPE_MAX + 1;
	memcpy(sc, scope != NULL ? scope : REVKEY_DEFAULT_SCOPE, scope_len);
	sc[scope_len] = '\0';
	if (revkey_from_text(k, sc, id, id_len, e, sizeof(e)) == -1) {
		snprintf(err, errlen, "bad id or scope: %s", e);
		return -1;
	}
	return 0;
}

int
checkio_key_same_scope(struct revkey *k, const struct revkey *prev,
    const char *scope, size_t scope_len, const char *id, size_t id_len)
{
	if (scope == NULL) {
		scope = REVKEY_DEFAULT_SCOPE;
		scope_len = sizeof(REVKEY_DEFAULT_SCOPE) - 1;
	}
	if (scope_len != prev->scope_len ||
	    memcmp(scope, prev->scope, scope_len) != 0)
		return -1;
	return revkey_set_like(k, prev, id, id_len);
}

int
checkio_key_from_json(const cJSON *obj, struct trust *tr,
    struct revkey *k, enum jwt_verdict *why, char *err, size_t errlen)
{
	return checkio_key_from_json_cut(obj, tr, k, NULL, why, err, errlen);
}

int
checkio_key_from_json_cut(const cJSON *obj, struct trust *tr,
    struct revkey *k, struct trust_cutoffs *cut, enum jwt_verdict *why,
    char *err, size_t errlen)
{
	const cJSON *id, *scope, *cert, *token, *chain, *m;
	char e[256];
	size_t len, nk = 0;
	int n;

	*why = JWT_VALID;
	if (cut != NULL)
		memset(cut, 0, sizeof(*cut));
	if (!cJSON_IsObject(obj)) {
		snprintf(err, errlen, "a check must be a JSON object");
		return -1;
	}
	/*
	 * One pass over the members rather than four lookups (a batch does
	 * this per item); the first of a repeated name wins, as with
	 * cJSON_GetObjectItemCaseSensitive() (a request body with one was
	 * refused by checkio_parse_body).
	 */
	id = scope = cert = token = chain = NULL;
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
		else if (chain == NULL && strcmp(m->string, "chain") == 0)
			chain = m;
	}
	/*
	 * A chain needs an answer per certificate: only a single check
	 * (checkio_chain_from_json) takes one. Ignoring it here would answer
	 * for the leaf alone.
	 */
	if (chain != NULL) {
		snprintf(err, errlen, "\"chain\" is accepted only with "
		    "\"cert\" in a single check, not in a batch item");
		return -1;
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
		if (scope != NULL && !cJSON_IsString(scope)) {
			snprintf(err, errlen, "\"scope\" must be a string");
			return -1;
		}
		return checkio_key_from_id(k, scope != NULL ?
		    scope->valuestring : NULL, scope != NULL ?
		    strlen(scope->valuestring) : 0, id->valuestring,
		    strlen(id->valuestring), err, errlen);
	}
	if (cert != NULL) {
		if (!cJSON_IsString(cert)) {
			snprintf(err, errlen, "\"cert\" must be a string "
			    "holding a PEM certificate");
			return -1;
		}
		/* Several PEM blocks are a chain: refused, never cut to one. */
		len = strlen(cert->valuestring);
		if (checkio_keys_from_pem(cert->valuestring, len, k, 1, &nk, e,
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
	if (trust_token_cut(tr, token->valuestring, len, util_now(), k, cut,
	    NULL, why, e, sizeof(e)) == -1) {
		snprintf(err, errlen, "%s%s", *why == JWT_MALFORMED ?
		    "bad token: " : "", e);
		return -1;
	}
	return 0;
}

#define PEM_CERT_BEGIN	"-----BEGIN CERTIFICATE-----"
#define PEM_CERT_END	"-----END CERTIFICATE-----"

static bool
pem_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

int
checkio_keys_from_pem(const char *text, size_t len, struct revkey *keys,
    size_t max, size_t *n, char *err, size_t errlen)
{
	const size_t bl = sizeof(PEM_CERT_BEGIN) - 1;
	const size_t el = sizeof(PEM_CERT_END) - 1;
	const char *p = text, *end = text + len, *e;
	size_t pos = 0, start = *n;
	char why[256];

	if (len == 0) {
		snprintf(err, errlen, "empty certificate");
		return -1;
	}
	if (memmem(text, len, "-----BEGIN", 10) == NULL) {
		/* No armour: one DER certificate, nothing after it. */
		if (*n >= max) {
			snprintf(err, errlen, "more than %zu certificates",
			    max);
			return -1;
		}
		if (revkey_from_cert_bytes(&keys[*n], text, len, why,
		    sizeof(why)) == -1) {
			snprintf(err, errlen, "certificate 1: %s", why);
			return -1;
		}
		(*n)++;
		return 0;
	}
	for (;;) {
		while (p < end && pem_space(*p))
			p++;
		if (p == end)
			break;
		pos++;
		if ((size_t)(end - p) < bl || memcmp(p, PEM_CERT_BEGIN, bl) !=
		    0) {
			snprintf(err, errlen, "certificate %zu: text that is "
			    "not a PEM CERTIFICATE block", pos);
			return -1;
		}
		e = memmem(p + bl, (size_t)(end - p) - bl, PEM_CERT_END, el);
		if (e == NULL) {
			snprintf(err, errlen, "certificate %zu: no \"%s\" line",
			    pos, PEM_CERT_END);
			return -1;
		}
		/* A BEGIN inside the block would let the parser skip text. */
		if (memmem(p + bl, (size_t)(e - p) - bl, "-----BEGIN", 10) !=
		    NULL) {
			snprintf(err, errlen, "certificate %zu: a BEGIN line "
			    "before its END line", pos);
			return -1;
		}
		e += el;
		if (*n >= max) {
			snprintf(err, errlen, "more than %zu certificates",
			    max);
			return -1;
		}
		if (revkey_from_cert_bytes(&keys[*n], p, (size_t)(e - p), why,
		    sizeof(why)) == -1) {
			snprintf(err, errlen, "certificate %zu: %s", pos, why);
			return -1;
		}
		(*n)++;
		p = e;
	}
	if (*n == start) {
		snprintf(err, errlen, "no certificate");
		return -1;
	}
	return 0;
}

int
checkio_chain_from_json(const cJSON *obj, struct revkey *keys, size_t *n,
    char *err, size_t errlen)
{
	const cJSON *cert = NULL, *chain = NULL, *el, *m;
	size_t total, len, i = 0;
	char e[256];

	*n = 0;
	if (!cJSON_IsObject(obj)) {
		snprintf(err, errlen, "a check must be a JSON object");
		return -1;
	}
	for (m = obj->child; m != NULL; m = m->next) {
		if (m->string == NULL)
			continue;
		if (cert == NULL && strcmp(m->string, "cert") == 0)
			cert = m;
		else if (chain == NULL && strcmp(m->string, "chain") == 0)
			chain = m;
		else if (strcmp(m->string, "id") == 0 ||
		    strcmp(m->string, "token") == 0 ||
		    strcmp(m->string, "scope") == 0) {
			snprintf(err, errlen, "\"%s\" may not be given with "
			    "\"cert\"", m->string);
			return -1;
		}
	}
	if (cert == NULL || !cJSON_IsString(cert)) {
		snprintf(err, errlen, "\"cert\" must be a string holding a "
		    "PEM certificate");
		return -1;
	}
	if (chain != NULL && !cJSON_IsArray(chain)) {
		snprintf(err, errlen, "\"chain\" must be an array of PEM "
		    "certificates");
		return -1;
	}
	total = strlen(cert->valuestring);
	if (total > CHECKIO_CHAIN_MAX_BYTES) {
		snprintf(err, errlen, "certificates over the limit of %d bytes",
		    CHECKIO_CHAIN_MAX_BYTES);
		return -1;
	}
	if (checkio_keys_from_pem(cert->valuestring, total, keys,
	    CHECKIO_CHAIN_MAX_CERTS, n, e, sizeof(e)) == -1) {
		snprintf(err, errlen, "bad certificate in \"cert\": %s", e);
		return -1;
	}
	cJSON_ArrayForEach(el, chain) {
		if (!cJSON_IsString(el)) {
			snprintf(err, errlen, "chain[%zu] must be a string "
			    "holding a PEM certificate", i);
			return -1;
		}
		len = strlen(el->valuestring);
		if (len > CHECKIO_CHAIN_MAX_BYTES - total) {
			snprintf(err, errlen, "certificates over the limit of "
			    "%d bytes", CHECKIO_CHAIN_MAX_BYTES);
			return -1;
		}
		total += len;
		if (checkio_keys_from_pem(el->valuestring, len, keys,
		    CHECKIO_CHAIN_MAX_CERTS, n, e, sizeof(e)) == -1) {
			snprintf(err, errlen, "bad certificate in chain[%zu]: "
			    "%s (at most %d certificates in all)", i, e,
			    CHECKIO_CHAIN_MAX_CERTS);
			return -1;
		}
		i++;
	}
	return 0;
}

/* The members of one answer object, without its braces. */
static void
render_fields(struct sbuf *b, const struct snapshot *s,
    const struct revkey *k, const struct check_result *r)
{
	char idt[REVKEY_ID_TEXT_MAX];
	char ts[UTIL_RFC3339_LEN];
	size_t n;

	sbuf_addlit(b, "\"status\":\"");
	sbuf_adds(b, check_status_str(r->status));
	sbuf_addlit(b, "\",\"source\":\"");
	sbuf_adds(b, check_source_str(r->source));
	sbuf_addlit(b, "\",\"scope\":");
	sbuf_add_jstr(b, k->scope, k->scope_len);
	sbuf_addlit(b, ",\"id\":");
	n = revkey_id_text(k, idt);
	sbuf_add_jstr(b, idt, n);
	sbuf_addlit(b, ",\"filter_version\":");
	sbuf_add_u64(b, s->version);
	/* With a chain in service, the answer names the delta too. */
	if (s->pos.seq != 0) {
		sbuf_addlit(b, ",\"delta_seq\":");
		sbuf_add_u64(b, s->pos.seq);
	}
	if (r->status == CHECK_REVOKED) {
		if (r->revoked_at != 0) {
			util_rfc3339(ts, r->revoked_at);
			sbuf_addlit(b, ",\"revoked_at\":\"");
			sbuf_adds(b, ts);
			sbuf_addlit(b, "\"");
		}
		if (r->reason[0] != '\0') {
			sbuf_addlit(b, ",\"reason\":");
			sbuf_add_jstr(b, r->reason, strnlen(r->reason,
			    sizeof(r->reason)));
		}
	}
}

void
checkio_render(struct sbuf *b, const struct snapshot *s,
    const struct revkey *k, const struct check_result *r)
{
	sbuf_addlit(b, "{");
	render_fields(b, s, k, r);
	sbuf_addlit(b, "}");
}

void
checkio_render_chain(struct sbuf *b, const struct snapshot *s,
    const struct revkey *keys, const struct check_result *r, const bool *ok,
    size_t n, size_t worst)
{
	size_t i;

	assert(worst < n && ok[worst]);
	sbuf_adds(b, "{");
	render_fields(b, s, &keys[worst], &r[worst]);
	sbuf_adds(b, ",\"decided_by\":");
	sbuf_add_u64(b, worst);
	sbuf_adds(b, ",\"chain\":[");
	for (i = 0; i < n; i++) {
		if (i > 0)
			sbuf_adds(b, ",");
		if (ok[i])
			checkio_render(b, s, &keys[i], &r[i]);
		else
			server_render_error(b, check_fail_str(r[i].fail),
			    "possibly revoked; the authority cannot settle "
			    "it");
	}
	sbuf_adds(b, "]}");
}
