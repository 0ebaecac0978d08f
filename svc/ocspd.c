/* ocspd.c - the OCSP responders in force: loaded from the config's files, with their signed-response cache */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "config_ocsp.h"
#include "loader.h"
#include "ocspd.h"

/* The most bytes read of a certificate or key file. */
#define OCSPD_FILE_MAX	(256 * 1024)

void
ocspd_free(struct ocspd *o)
{
	size_t i;

	for (i = 0; i < o->n; i++)
		ocsp_responder_free(o->r[i]);
	ocsp_cache_free(o->cache);
	memset(o, 0, sizeof(*o));
}

/* Loads responder i of c into o->r[i]. 0, or -1 with err. */
static int
load_one(struct ocspd *o, const struct config *c, size_t i, char *err,
    size_t errlen)
{
	const struct config_ocsp_responder *cr = &c->ocsp.responders[i];
	unsigned char *ca = NULL, *cert = NULL, *key = NULL;
	size_t calen = 0, certlen = 0, keylen = 0;
	char e[768];
	int rc = -1;

	if (loader_read_trusted(c, cr->issuer, OCSPD_FILE_MAX, &ca, &calen,
	    e, sizeof(e)) == -1 ||
	    loader_read_trusted(c, cr->cert, OCSPD_FILE_MAX, &cert, &certlen,
	    e, sizeof(e)) == -1 ||
	    loader_read_trusted(c, cr->key, OCSPD_FILE_MAX, &key, &keylen,
	    e, sizeof(e)) == -1) {
		snprintf(err, errlen, "ocsp.responders[%zu]: %s", i, e);
		goto out;
	}
	o->r[i] = ocsp_responder_new(ca, calen, cert, certlen, key, keylen,
	    e, sizeof(e));
	if (o->r[i] == NULL) {
		snprintf(err, errlen, "ocsp.responders[%zu] (issuer %s, cert "
		    "%s, key %s): %s", i, cr->issuer, cr->cert, cr->key, e);
		goto out;
	}
	rc = 0;
out:
	if (key != NULL)
		OPENSSL_cleanse(key, keylen);
	free(key);
	free(cert);
	free(ca);
	return rc;
}

int
ocspd_init(struct ocspd *o, const struct config *c, char *err,
    size_t errlen)
{
	size_t i;

	memset(o, 0, sizeof(*o));
	o->path = config_ocsp_path(c);
	o->path_len = strlen(o->path);
	for (i = 0; i < c->ocsp.nresponders; i++) {
		if (load_one(o, c, i, err, errlen) == -1)
			goto fail;
		o->n = i + 1;
	}
	if (o->n > 0 && (o->cache = ocsp_cache_new(c->ocsp.cache_set ?
	    c->ocsp.cache_max : CONFIG_OCSP_CACHE_DEF)) == NULL) {
		snprintf(err, errlen, "ocsp: out of memory");
		goto fail;
	}
	return 0;
fail:
	ocspd_free(o);
	return -1;
}

bool
ocspd_route(const struct ocspd *o, const char *url, const char **rest)
{
	if (o->n == 0)
		return false;
	if (o->path_len == 1) {
		/* "/": the request is "/" itself or "/" and base64. */
		if (url[0] != '/')
			return false;
		*rest = url + 1;
		return true;
	}
	if (strncmp(url, o->path, o->path_len) != 0)
		return false;
	if (url[o->path_len] == '\0') {
		*rest = url + o->path_len;
		return true;
	}
	if (url[o->path_len] != '/')
		return false;
	*rest = url + o->path_len + 1;
	return true;
}
