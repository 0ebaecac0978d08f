/* config_reload.c - SIGHUP: live keys, what changed, deep copies, restart-only keys kept */
#include <assert.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "config_opt.h"
#include "config_ocsp.h"
#include "config_trust.h"

/*
 * What SIGHUP applies without a restart (revcheckd.c reload_config): each
 * is read per request, per check or per attempt from the generation in
 * force (svc/live.h), or, for trusted_key and the log settings, applied
 * by the main thread. Every other key is read once at start (sockets,
 * threads, the sync thread, the loader's directories) and keeps its
 * running value until a restart. The issuers and introspection_clients
 * lists and the ocsp section (no flag) are live too.
 */
static const char *const live_keys[] = {
	"trusted_key", "max_age", "clock_skew", "max_batch", "max_body",
	"poll_interval", "authz_cert_header", "authz_cert_header_format",
	"authz_not_covered",
	"log_level", "log_format", "token_verification", "token_cache_size",
	"token_cache_max", "upstream_timeout", "upstream_connect_timeout",
	"upstream_retries", "upstream_max_waiting",
};

static bool
opt_is_live(const struct config_opt *o)
{
	size_t i;

	for (i = 0; i < sizeof(live_keys) / sizeof(live_keys[0]); i++)
		if (strcmp(live_keys[i], o->key) == 0)
			return true;
	return false;
}

bool
config_key_is_live(const char *key)
{
	const struct config_opt *o = config_find_opt(key);

	if (strcmp(key, "issuers") == 0 ||
	    strcmp(key, "introspection_clients") == 0 ||
	    strcmp(key, "ocsp") == 0)
		return true;
	return o != NULL && opt_is_live(o);
}

bool
config_str_differs(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a != b;
	return strcmp(a, b) != 0;
}

/* The bytes of a key kept at o->off (the types that have one). */
static size_t
opt_size(const struct config_opt *o)
{
	switch (o->type) {
	case OPT_DUR:
		return sizeof(int64_t);
	case OPT_U64:
		return sizeof(uint64_t);
	case OPT_UINT:
		return sizeof(unsigned);
	case OPT_BOOL:
		return sizeof(bool);
	default:
		return 0;
	}
}

/* True when key o has another value in a than in b. */
static bool
opt_differs(const struct config_opt *o, const struct config *a,
    const struct config *b)
{
	const char *pa = (const char *)a + o->off;
	const char *pb = (const char *)b + o->off;
	size_t i;

	switch (o->type) {
	case OPT_STR:
		return config_str_differs(*(char *const *)(const void *)pa,
		    *(char *const *)(const void *)pb);
	case OPT_NOTCOV:
		return a->authz_not_covered_allow != b->authz_not_covered_allow;
	case OPT_TOKMODE:
		return a->revocation_only != b->revocation_only;
	case OPT_CERTFMT:
		return a->authz_cert_xfcc != b->authz_cert_xfcc;
	case OPT_LEVEL:
		return a->log_level != b->log_level;
	case OPT_LOGFMT:
		return a->log_json != b->log_json;
	case OPT_KEYS:
		if (a->ntrusted != b->ntrusted)
			return true;
		for (i = 0; i < a->ntrusted; i++)
			if (strcmp(a->trusted_keys[i], b->trusted_keys[i]) != 0)
				return true;
		return false;
	default:
		return memcmp(pa, pb, opt_size(o)) != 0;
	}
}

/* Appends ", name" (or "name" first) to out, truncating to fit. */
static void
list_add(char *out, size_t outlen, size_t *len, size_t *n, const char *name)
{
	int w;

	w = snprintf(out + *len, outlen - *len, "%s%s", *n > 0 ? ", " : "",
	    name);
	if (w > 0 && (size_t)w < outlen - *len)
		*len += (size_t)w;
	(*n)++;
}

size_t
config_changed_keys(const struct config *a, const struct config *b,
    bool live, char *out, size_t outlen)
{
	const struct config_opt *o;
	size_t n = 0, len = 0;

	assert(outlen > 0);
	out[0] = '\0';
	for (o = config_opts; o < config_opts + config_nopts; o++)
		if (opt_is_live(o) == live && opt_differs(o, a, b))
			list_add(out, outlen, &len, &n, o->key);
	if (live && config_trust_issuers_differ(a, b))
		list_add(out, outlen, &len, &n, "issuers");
	if (live && config_trust_clients_differ(a, b))
		list_add(out, outlen, &len, &n, "introspection_clients");
	if (live && config_ocsp_differ(a, b))
		list_add(out, outlen, &len, &n, "ocsp");
	return n;
}

size_t
config_restart_keys(const struct config *a, const struct config *b,
    char *out, size_t outlen)
{
	return config_changed_keys(a, b, false, out, outlen);
}

/* *dst becomes a copy of src (NULL stays NULL); false when out of memory. */
static bool
dup_into(char **dst, const char *src)
{
	*dst = NULL;
	return src == NULL || (*dst = strdup(src)) != NULL;
}

int
config_copy(struct config *dst, const struct config *src, char *err,
    size_t errlen)
{
	const struct config_issuer *si;
	struct config_issuer *di;
	const struct config_opt *o;
	size_t i, j;
	bool ok;

	/* Every pointer is replaced before anything can fail. */
	memcpy(dst, src, sizeof(*dst));
	for (o = config_opts; o < config_opts + config_nopts; o++)
		if (o->type == OPT_STR)
			*(char **)(void *)((char *)dst + o->off) = NULL;
	memset(dst->trusted_keys, 0, sizeof(dst->trusted_keys));
	memset(dst->issuers, 0, sizeof(dst->issuers));
	memset(dst->clients, 0, sizeof(dst->clients));
	memset(&dst->ocsp, 0, sizeof(dst->ocsp));
	ok = config_ocsp_copy(dst, src) && dup_into(&dst->config_file, src->config_file);
	for (o = config_opts; ok && o < config_opts + config_nopts; o++)
		if (o->type == OPT_STR)
			ok = dup_into((char **)(void *)((char *)dst + o->off),
			    *(char *const *)(const void *)((const char *)src +
			    o->off));
	for (i = 0; ok && i < src->ntrusted; i++)
		ok = dup_into(&dst->trusted_keys[i], src->trusted_keys[i]);
	for (i = 0; ok && i < src->nissuers; i++) {
		si = &src->issuers[i];
		di = &dst->issuers[i];
		*di = *si;
		di->issuer = di->jwks_file = di->jwks_uri = NULL;
		di->hs_secret_file = di->jwks_ca_file = NULL;
		memset(di->audiences, 0, sizeof(di->audiences));
		ok = dup_into(&di->issuer, si->issuer) &&
		    dup_into(&di->jwks_file, si->jwks_file) &&
		    dup_into(&di->jwks_uri, si->jwks_uri) &&
		    dup_into(&di->hs_secret_file, si->hs_secret_file) &&
		    dup_into(&di->jwks_ca_file, si->jwks_ca_file);
		for (j = 0; ok && j < si->naud; j++)
			ok = dup_into(&di->audiences[j], si->audiences[j]);
	}
	for (i = 0; ok && i < src->nclients; i++) {
		ok = dup_into(&dst->clients[i].id, src->clients[i].id) &&
		    dup_into(&dst->clients[i].secret_file,
		    src->clients[i].secret_file);
		for (j = 0; ok && j < src->clients[i].naud; j++) {
			ok = dup_into(&dst->clients[i].audiences[j],
			    src->clients[i].audiences[j]);
			dst->clients[i].naud = j + 1;
		}
	}
	if (!ok) {
		config_free(dst);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

int
config_keep_restart(struct config *b, const struct config *a, char *err,
    size_t errlen)
{
	const struct config_opt *o;
	char *dup, **p;

	for (o = config_opts; o < config_opts + config_nopts; o++) {
		if (opt_is_live(o))
			continue;
		/* Every restart-only key has an offset (no special type). */
		assert(o->type == OPT_STR || opt_size(o) > 0);
		if (o->type == OPT_STR) {
			if (!dup_into(&dup, *(char *const *)(const void *)(
			    (const char *)a + o->off))) {
				snprintf(err, errlen, "out of memory");
				return -1;
			}
			p = (char **)(void *)((char *)b + o->off);
			free(*p);
			*p = dup;
		} else
			memcpy((char *)b + o->off, (const char *)a + o->off,
			    opt_size(o));
		b->keys_set = (b->keys_set & ~CONFIG_KEY_BIT(o)) |
		    (a->keys_set & CONFIG_KEY_BIT(o));
	}
	return 0;
}
