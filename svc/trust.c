/* trust.c - the trusted token issuers: their keys and secrets, token verification */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "log.h"
#include "trust.h"
#include "util.h"

int
trust_read_secret(const char *path, size_t min, unsigned char **out,
    size_t *len, char *err, size_t errlen)
{
	unsigned char *buf = NULL;
	size_t n = 0;

	*out = NULL;
	*len = 0;
	if (util_read_file(path, TRUST_SECRET_MAX, &buf, &n, err,
	    errlen) == -1)
		return -1;
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	if (n > 0 && buf[n - 1] == '\r')
		n--;
	if (n < min) {
		snprintf(err, errlen, "%s: secret shorter than %zu bytes", path,
		    min);
		OPENSSL_cleanse(buf, n);
		free(buf);
		return -1;
	}
	*out = buf;
	*len = n;
	return 0;
}

/* Loads one issuer's keys and secret. */
static int
issuer_load(struct trust_issuer *ti, const struct config_issuer *ci,
    char *err, size_t errlen)
{
	unsigned char *buf = NULL;
	size_t len = 0;
	char e[512];
	int rc = -1;

	ti->cfg = ci;
	if (ci->jwks_uri != NULL) {
		snprintf(err, errlen, "issuer %s: jwks_uri is not supported "
		    "by this build; use jwks_file", ci->issuer);
		return -1;
	}
	if (util_read_file(ci->jwks_file, JWKS_MAX_LEN, &buf, &len, e,
	    sizeof(e)) == -1) {
		snprintf(err, errlen, "issuer %s: %s", ci->issuer, e);
		return -1;
	}
	if (jwks_parse(&ti->keys, (const char *)buf, len, ci->jwks_file, e,
	    sizeof(e)) == -1) {
		snprintf(err, errlen, "issuer %s: %s", ci->issuer, e);
		goto out;
	}
	if (ti->keys.n == 0 && (ci->algs & ~JWA_HS_MASK) != 0)
		log_warn("issuer %s: %s holds no usable key; its signed "
		    "tokens are refused", ci->issuer, ci->jwks_file);
	if (ci->hs_secret_file != NULL && trust_read_secret(ci->hs_secret_file,
	    JWT_HS_MIN, &ti->hs, &ti->hs_len, e, sizeof(e)) == -1) {
		snprintf(err, errlen, "issuer %s: hs_secret_file: %s",
		    ci->issuer, e);
		goto out;
	}
	ti->ji.issuer = ci->issuer;
	ti->ji.keys = &ti->keys;
	ti->ji.audiences = (const char *const *)ci->audiences;
	ti->ji.naud = ci->naud;
	ti->ji.algs = ci->algs;
	ti->ji.leeway = ci->leeway;
	ti->ji.hs_secret = ti->hs;
	ti->ji.hs_len = ti->hs_len;
	log_info("issuer %s: %zu key(s) from %s%s", ci->issuer, ti->keys.n,
	    ci->jwks_file, ti->hs != NULL ? ", and an HS secret" : "");
	rc = 0;
out:
	free(buf);
	return rc;
}

int
trust_init(struct trust *t, const struct config *c, char *err,
    size_t errlen)
{
	size_t i;

	memset(t, 0, sizeof(*t));
	t->revocation_only = c->revocation_only;
	if (c->nissuers == 0)
		return 0;
	if ((t->iss = calloc(c->nissuers, sizeof(*t->iss))) == NULL) {
		snprintf(err, errlen, "issuers: out of memory");
		return -1;
	}
	for (i = 0; i < c->nissuers; i++) {
		t->n = i + 1;
		if (issuer_load(&t->iss[i], &c->issuers[i], err,
		    errlen) == -1) {
			trust_free(t);
			return -1;
		}
	}
	return 0;
}

void
trust_free(struct trust *t)
{
	size_t i;

	if (t == NULL)
		return;
	for (i = 0; i < t->n; i++) {
		jwks_free(&t->iss[i].keys);
		if (t->iss[i].hs != NULL)
			OPENSSL_cleanse(t->iss[i].hs, t->iss[i].hs_len);
		free(t->iss[i].hs);
	}
	free(t->iss);
	memset(t, 0, sizeof(*t));
}

int
trust_token(const struct trust *t, const char *tok, size_t len, int64_t now,
    struct revkey *k, enum jwt_verdict *why, char *err, size_t errlen)
{
	const struct trust_issuer *ti = NULL;
	struct jwt j;
	size_t i;
	int rc = -1;

	*why = JWT_MALFORMED;
	if (jwt_parse(&j, tok, len, err, errlen) == -1)
		return -1;
	if (jwt_key(&j, k, err, errlen) == -1)
		goto out;
	if (t != NULL && t->revocation_only) {
		*why = JWT_VALID;
		rc = 0;
		goto out;
	}
	*why = JWT_UNTRUSTED_ISSUER;
	if (t == NULL || t->n == 0) {
		snprintf(err, errlen, "no trusted issuer is configured, and "
		    "token_verification is not revocation-only");
		goto out;
	}
	for (i = 0; j.iss != NULL && i < t->n; i++)
		if (strcmp(t->iss[i].cfg->issuer, j.iss) == 0) {
			ti = &t->iss[i];
			break;
		}
	if (ti == NULL) {
		snprintf(err, errlen, j.iss == NULL ? "the token has no "
		    "\"iss\"" : "\"iss\" is not a trusted issuer");
		goto out;
	}
	rc = jwt_verify(&j, &ti->ji, now, why, err, errlen);
out:
	jwt_free(&j);
	return rc;
}

void
trust_status_json(struct sbuf *b, const struct trust *t)
{
	size_t i;
	int a;
	bool first;

	sbuf_adds(b, ",\"token_verification\":{\"mode\":\"");
	sbuf_adds(b, t == NULL || !t->revocation_only ? "required" :
	    "revocation-only");
	sbuf_adds(b, "\",\"issuers\":[");
	for (i = 0; t != NULL && i < t->n; i++) {
		if (i > 0)
			sbuf_adds(b, ",");
		sbuf_adds(b, "{\"issuer\":");
		sbuf_add_jstrs(b, t->iss[i].cfg->issuer);
		sbuf_adds(b, ",\"keys\":");
		sbuf_add_u64(b, t->iss[i].keys.n);
		sbuf_adds(b, ",\"algorithms\":[");
		first = true;
		for (a = JWA_INVALID + 1; a < JWA_COUNT; a++) {
			if ((t->iss[i].cfg->algs & JWA_BIT(a)) == 0)
				continue;
			sbuf_adds(b, first ? "\"" : ",\"");
			sbuf_adds(b, jwa_name((enum jwa)a));
			sbuf_adds(b, "\"");
			first = false;
		}
		sbuf_adds(b, "]}");
	}
	sbuf_adds(b, "]}");
}
