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
#include "util.h"

/*
 * A host name resolves through getaddrinfo(); the first IPv4 address wins
 * (so "localhost" is 127.0.0.1 whatever the resolver's order), else the
 * first IPv6 one.
 */
static int
resolve_host(const char *host, struct sockaddr_storage *ss, unsigned *socklen)
{
	struct addrinfo hints, *res = NULL, *ai, *pick = NULL;

	/* "300.1.1.1" is a bad address, not a name to look up. */
	if (strspn(host, "0123456789.") == strlen(host))
		return -1;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(host, NULL, &hints, &res) != 0)
		return -1;
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		if (ai->ai_family == AF_INET) {
			pick = ai;
			break;
		}
		if (ai->ai_family == AF_INET6 && pick == NULL)
			pick = ai;
	}
	if (pick == NULL || pick->ai_addrlen > sizeof(*ss)) {
		freeaddrinfo(res);
		return -1;
	}
	memcpy(ss, pick->ai_addr, pick->ai_addrlen);
	*socklen = (unsigned)pick->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

int
config_parse_listen(const char *s, struct sockaddr_storage *ss,
    unsigned *socklen)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	char host[CONFIG_MAX_HOST + 1];
	const char *colon, *port;
	uint64_t p;
	size_t hl;
	bool v6 = false;

	memset(ss, 0, sizeof(*ss));
	if (s[0] == '[') {
		const char *rb = strchr(s, ']');
		if (rb == NULL || rb[1] != ':')
			return -1;
		hl = (size_t)(rb - s - 1);
		if (hl == 0 || hl > INET6_ADDRSTRLEN)
			return -1;
		memcpy(host, s + 1, hl);
		host[hl] = '\0';
		port = rb + 2;
		v6 = true;
	} else if ((colon = strrchr(s, ':')) != NULL) {
		hl = (size_t)(colon - s);
		if (hl >= sizeof(host))
			return -1;
		memcpy(host, s, hl);
		host[hl] = '\0';
		port = colon + 1;
		if (strchr(host, ':') != NULL)
			return -1;	/* a bare v6 address needs brackets */
	} else {
		host[0] = '\0';
		port = s;
	}
	if (util_parse_u64(port, 65535, &p) == -1)
		return -1;
	if (v6) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)p);
		if (inet_pton(AF_INET6, host, &sin6->sin6_addr) != 1)
			return -1;
		*socklen = sizeof(*sin6);
		return 0;
	}
	sin->sin_family = AF_INET;
	sin->sin_port = htons((uint16_t)p);
	*socklen = sizeof(*sin);
	if (host[0] == '\0')
		sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else if (inet_pton(AF_INET, host, &sin->sin_addr) != 1) {
		if (resolve_host(host, ss, socklen) == -1)
			return -1;
		/* Both families keep the port at the same offset. */
		if (ss->ss_family == AF_INET6)
			sin6->sin6_port = htons((uint16_t)p);
		else
			sin->sin_port = htons((uint16_t)p);
	}
	return 0;
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

	if (config_parse_listen(l, &ss, &sl) == -1) {
		snprintf(err, errlen, "listen: \"%.64s\" is not HOST:PORT, "
		    "ADDR:PORT or [V6ADDR]:PORT, or its host name does not "
		    "resolve", l);
		return -1;
	}
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
