/* config_check.c - whether the settings hang together, listen addresses, filter_owner */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "config_opt.h"
#include "config_ocsp.h"
#include "config_trust.h"
#include "netaddr.h"
#include "util.h"

int
config_parse_listen(const char *s, struct sockaddr_storage *ss,
    unsigned *socklen)
{
	return netaddr_parse_listen(s, ss, socklen, NULL, 0);
}

/*
 * An upstream URL is https:// (TLS verified) unless plain http:// was
 * allowed by name: over http anyone on the path can answer not_revoked
 * for the authority, or hold an edge on an old filter with 304s.
 */
static int
upstream_url_check(const char *key, const char *url, bool allow_http,
    char *err, size_t errlen)
{
	if (url == NULL || strncmp(url, "https://", 8) == 0)
		return 0;
	if (strncmp(url, "http://", 7) != 0) {
		snprintf(err, errlen, "%s: must be an https:// URL", key);
		return -1;
	}
	if (!allow_http) {
		snprintf(err, errlen, "%s: \"%.100s\" is plain http, which "
		    "anyone on the path can answer for; use https:// or set "
		    "upstream_insecure_http", key, url);
		return -1;
	}
	return 0;
}

int
config_filter_owner(const struct config *c, uid_t *uid, bool *set,
    char *err, size_t errlen)
{
	struct passwd pw, *res = NULL;
	char buf[4096], *end;
	unsigned long long v;
	int rc;

	*set = false;
	if (c->filter_owner == NULL)
		return 0;
	if (c->filter_owner[0] >= '0' && c->filter_owner[0] <= '9') {
		errno = 0;
		v = strtoull(c->filter_owner, &end, 10);
		if (errno != 0 || *end != '\0' || v >= (uid_t)-1) {
			snprintf(err, errlen, "filter_owner: \"%.64s\" is not "
			    "a uid", c->filter_owner);
			return -1;
		}
		*uid = (uid_t)v;
		*set = true;
		return 0;
	}
	rc = getpwnam_r(c->filter_owner, &pw, buf, sizeof(buf), &res);
	if (rc != 0 || res == NULL) {
		snprintf(err, errlen, "filter_owner: no user \"%.64s\"%s%s",
		    c->filter_owner, rc != 0 ? ": " : "",
		    rc != 0 ? strerror(rc) : "");
		return -1;
	}
	*uid = pw.pw_uid;
	*set = true;
	return 0;
}

/* A key set in the file or a flag belongs to this mode (edge or origin). */
static int
mode_check(const struct config *c, const struct config_opt *o, char *err,
    size_t errlen)
{
	if ((c->keys_set & CONFIG_KEY_BIT(o)) == 0)
		return 0;
	if (o->need == NEED_EDGE && c->upstream_filter == NULL) {
		snprintf(err, errlen, "%s: only for edge nodes (needs "
		    "upstream_filter)", o->key);
		return -1;
	}
	if (o->need == NEED_AUTHORITY && c->upstream_check == NULL) {
		snprintf(err, errlen, "%s: only for edge nodes (needs "
		    "%s)", o->key, c->upstream_filter == NULL ?
		    "upstream_filter and upstream_check" :
		    "upstream_check, whose requests it bounds");
		return -1;
	}
	return 0;
}

/* A connect timeout fits inside the total timeout that includes it. */
static int
connect_check(const char *key, int64_t conn, const char *total_key,
    int64_t total, char *err, size_t errlen)
{
	if (conn <= total)
		return 0;
	snprintf(err, errlen, "%s: %llds is longer than %s (%llds), which "
	    "includes it", key, (long long)conn, total_key, (long long)total);
	return -1;
}

int
config_validate(const struct config *c, char *err, size_t errlen)
{
	uid_t owner;
	bool owner_set;
	struct sockaddr_storage ss;
	unsigned sl;
	const char *l = c->listen != NULL ? c->listen : CONFIG_DEFAULT_LISTEN;
	const struct config_opt *o;
	const char *h;

	if (netaddr_parse_listen(l, &ss, &sl, err, errlen) == -1)
		return -1;
	if (c->filter_dir == NULL && c->upstream_filter == NULL) {
		snprintf(err, errlen, "filter_dir: required (or "
		    "upstream_filter for an edge node)");
		return -1;
	}
	if (c->filter_dir != NULL && c->upstream_filter != NULL) {
		snprintf(err, errlen, "upstream_filter: an edge node has no "
		    "filter_dir; set one or the other");
		return -1;
	}
	if (config_filter_owner(c, &owner, &owner_set, err, errlen) == -1)
		return -1;
	if (c->ntrusted == 0) {
		snprintf(err, errlen, "trusted_key: at least one public key "
		    "is required");
		return -1;
	}
	if (c->upstream_check != NULL && c->upstream_filter == NULL) {
		snprintf(err, errlen, "upstream_check: only for edge nodes "
		    "(needs upstream_filter)");
		return -1;
	}
	if (upstream_url_check("upstream_filter", c->upstream_filter,
	    c->upstream_insecure_http, err, errlen) == -1 ||
	    upstream_url_check("upstream_check", c->upstream_check,
	    c->upstream_insecure_http, err, errlen) == -1)
		return -1;
	for (o = config_opts; o < config_opts + config_nopts; o++)
		if (mode_check(c, o, err, errlen) == -1)
			return -1;
	if (connect_check("upstream_connect_timeout",
	    c->upstream_connect_timeout, "upstream_timeout",
	    c->upstream_timeout, err, errlen) == -1 ||
	    connect_check("sync_connect_timeout", c->sync_connect_timeout,
	    "sync_timeout", c->sync_timeout, err, errlen) == -1)
		return -1;
	if (c->max_body_total < c->max_body) {
		snprintf(err, errlen, "max_body_total: smaller than max_body "
		    "(%llu), so no body of the largest size could be read",
		    (unsigned long long)c->max_body);
		return -1;
	}
	if (c->max_conns_per_ip > c->max_conns) {
		snprintf(err, errlen, "max_conns_per_ip: larger than "
		    "max_conns (%u)", c->max_conns);
		return -1;
	}
	if (c->authz_cert_header != NULL) {
		for (h = c->authz_cert_header; *h != '\0'; h++) {
			if (!((*h >= 'A' && *h <= 'Z') ||
			    (*h >= 'a' && *h <= 'z') ||
			    (*h >= '0' && *h <= '9') || *h == '-' ||
			    *h == '_')) {
				snprintf(err, errlen, "authz_cert_header: not "
				    "a valid header name");
				return -1;
			}
		}
		/* Envoy's header read as PEM would refuse every request. */
		if (!c->authz_cert_xfcc && strcasecmp(c->authz_cert_header,
		    "X-Forwarded-Client-Cert") == 0) {
			snprintf(err, errlen, "authz_cert_header: "
			    "X-Forwarded-Client-Cert is Envoy's format: set "
			    "authz_cert_header_format to \"xfcc\"");
			return -1;
		}
	}
	if (config_ocsp_validate(c, err, errlen) == -1)
		return -1;
	return config_trust_validate(c, err, errlen);
}
