/* config_ocsp.c - the config's "ocsp" section: read, checked, compared, copied */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_json.h"
#include "config_ocsp.h"
#include "config_opt.h"

void
config_ocsp_free(struct config *c)
{
	size_t i;

	free(c->ocsp.path);
	for (i = 0; i < c->ocsp.nresponders; i++) {
		free(c->ocsp.responders[i].issuer);
		free(c->ocsp.responders[i].cert);
		free(c->ocsp.responders[i].key);
	}
	memset(&c->ocsp, 0, sizeof(c->ocsp));
}

/* One member of a responder object. 0, or -1 with err. */
static int
responder_member(struct config_ocsp_responder *r, const cJSON *m,
    const char *what, char *err, size_t errlen)
{
	if (strcmp(m->string, "issuer") == 0)
		return config_json_dup_str(&r->issuer, m, what, err, errlen);
	if (strcmp(m->string, "cert") == 0)
		return config_json_dup_str(&r->cert, m, what, err, errlen);
	if (strcmp(m->string, "key") == 0)
		return config_json_dup_str(&r->key, m, what, err, errlen);
	snprintf(err, errlen, "%s: unknown key (\"issuer\", \"cert\" and "
	    "\"key\" are)", what);
	return -1;
}

static int
load_responders(struct config *c, const cJSON *v, char *err, size_t errlen)
{
	struct config_ocsp_responder *r;
	const cJSON *el, *m;
	char what[160];

	if (!cJSON_IsArray(v)) {
		snprintf(err, errlen, "ocsp.responders: must be an array of "
		    "objects");
		return -1;
	}
	cJSON_ArrayForEach(el, v) {
		if (c->ocsp.nresponders == CONFIG_MAX_OCSP ||
		    !cJSON_IsObject(el)) {
			snprintf(err, errlen, "ocsp.responders: at most %d "
			    "objects", CONFIG_MAX_OCSP);
			return -1;
		}
		r = &c->ocsp.responders[c->ocsp.nresponders++];
		for (m = el->child; m != NULL; m = m->next) {
			if (m->string == NULL || m->string[0] == '_')
				continue;
			snprintf(what, sizeof(what), "ocsp.responders[%zu].%.64s",
			    c->ocsp.nresponders - 1, m->string);
			if (responder_member(r, m, what, err, errlen) == -1)
				return -1;
		}
	}
	return 0;
}

/* "cache_max": bytes, a whole number. 0, or -1 with err. */
static int
load_cache_max(struct config *c, const cJSON *v, char *err, size_t errlen)
{
	if (!cJSON_IsNumber(v) || v->valuedouble < 0 ||
	    v->valuedouble > (double)(UINT64_C(1) << 40) ||
	    v->valuedouble != (double)(uint64_t)v->valuedouble) {
		snprintf(err, errlen, "ocsp.cache_max: must be a whole number "
		    "of bytes from 0 (no cache) to 2^40");
		return -1;
	}
	c->ocsp.cache_max = (uint64_t)v->valuedouble;
	c->ocsp.cache_set = true;
	return 0;
}

int
config_ocsp_load(struct config *c, const cJSON *v, const char *origin,
    char *err, size_t errlen)
{
	const cJSON *m;
	char e[300];
	int rc;

	config_ocsp_free(c);
	if (!cJSON_IsObject(v)) {
		snprintf(err, errlen, "%s: key \"ocsp\": must be an object",
		    origin);
		return -1;
	}
	for (m = v->child; m != NULL; m = m->next) {
		if (m->string == NULL || m->string[0] == '_')
			continue;
		if (strcmp(m->string, "path") == 0)
			rc = config_json_dup_str(&c->ocsp.path, m, "ocsp.path", e,
			    sizeof(e));
		else if (strcmp(m->string, "responders") == 0)
			rc = load_responders(c, m, e, sizeof(e));
		else if (strcmp(m->string, "cache_max") == 0)
			rc = load_cache_max(c, m, e, sizeof(e));
		else {
			snprintf(e, sizeof(e), "ocsp.%.64s: unknown key "
			    "(\"path\", \"responders\" and \"cache_max\" are)",
			    m->string);
			rc = -1;
		}
		if (rc == -1) {
			snprintf(err, errlen, "%s: key %s", origin, e);
			return -1;
		}
	}
	return 0;
}

const char *
config_ocsp_path(const struct config *c)
{
	return c->ocsp.path != NULL ? c->ocsp.path : CONFIG_OCSP_PATH;
}

/* Paths the daemon answers itself: the OCSP path may not take them. */
static bool
shadows_endpoint(const char *p)
{
	static const char *const own[] = {
		"/v1", "/metrics", "/healthz", "/readyz",
	};
	size_t i, n;

	for (i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
		n = strlen(own[i]);
		if (strncmp(p, own[i], n) == 0 && (p[n] == '\0' ||
		    p[n] == '/'))
			return true;
	}
	return false;
}

int
config_ocsp_validate(const struct config *c, char *err, size_t errlen)
{
	const struct config_ocsp_responder *r;
	const char *p = config_ocsp_path(c);
	size_t i, n = strlen(p);

	if (p[0] != '/' || n > CONFIG_OCSP_PATH_MAX ||
	    strpbrk(p, "?#%% \t") != NULL || (n > 1 && p[n - 1] == '/') ||
	    shadows_endpoint(p)) {
		snprintf(err, errlen, "ocsp.path: must be \"/\" or a path such "
		    "as \"/ocsp\" (at most %d bytes, no trailing '/', no "
		    "query, not under /v1, /metrics, /healthz or /readyz)",
		    CONFIG_OCSP_PATH_MAX);
		return -1;
	}
	for (i = 0; i < c->ocsp.nresponders; i++) {
		r = &c->ocsp.responders[i];
		if (r->issuer == NULL || r->cert == NULL || r->key == NULL) {
			snprintf(err, errlen, "ocsp.responders[%zu]: \"issuer\" "
			    "(the CA certificate), \"cert\" (the responder "
			    "certificate) and \"key\" (its private key) are "
			    "all required", i);
			return -1;
		}
	}
	return 0;
}

bool
config_ocsp_differ(const struct config *a, const struct config *b)
{
	const struct config_ocsp_responder *x, *y;
	size_t i;

	if (config_str_differs(a->ocsp.path, b->ocsp.path) ||
	    a->ocsp.cache_max != b->ocsp.cache_max ||
	    a->ocsp.cache_set != b->ocsp.cache_set ||
	    a->ocsp.nresponders != b->ocsp.nresponders)
		return true;
	for (i = 0; i < a->ocsp.nresponders; i++) {
		x = &a->ocsp.responders[i];
		y = &b->ocsp.responders[i];
		if (config_str_differs(x->issuer, y->issuer) ||
		    config_str_differs(x->cert, y->cert) ||
		    config_str_differs(x->key, y->key))
			return true;
	}
	return false;
}

/* *dst becomes a copy of src (NULL stays NULL); false when out of memory. */
static bool
dup_into(char **dst, const char *src)
{
	*dst = NULL;
	return src == NULL || (*dst = strdup(src)) != NULL;
}

bool
config_ocsp_copy(struct config *dst, const struct config *src)
{
	const struct config_ocsp_responder *s;
	struct config_ocsp_responder *d;
	size_t i;

	memset(&dst->ocsp, 0, sizeof(dst->ocsp));
	dst->ocsp.cache_max = src->ocsp.cache_max;
	dst->ocsp.cache_set = src->ocsp.cache_set;
	if (!dup_into(&dst->ocsp.path, src->ocsp.path))
		return false;
	for (i = 0; i < src->ocsp.nresponders; i++) {
		s = &src->ocsp.responders[i];
		d = &dst->ocsp.responders[i];
		dst->ocsp.nresponders = i + 1;
		if (!dup_into(&d->issuer, s->issuer) ||
		    !dup_into(&d->cert, s->cert) || !dup_into(&d->key, s->key))
			return false;
	}
	return true;
}
