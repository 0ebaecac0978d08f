/* netaddr.c - listen addresses: "HOST:PORT" text to a socket address */
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "netaddr.h"
#include "util.h"

#define FORMS	"want HOST:PORT, ADDR:PORT, [V6ADDR]:PORT or PORT"

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

/*
 * Splits s into host[NETADDR_MAX_HOST + 1] ("" for none) and *port (into
 * s), *v6 when bracketed. 0, or -1 with err.
 */
static int
split_listen(const char *s, char *host, const char **port, bool *v6,
    char *err, size_t errlen)
{
	const char *colon, *rb;
	size_t hl;

	*v6 = false;
	if (s[0] == '[') {
		rb = strchr(s, ']');
		if (rb == NULL || rb[1] != ':') {
			util_errf(err, errlen, "listen: \"%.64s\": an IPv6 "
			    "address in brackets needs :PORT after it "
			    "([::1]:8080)", s);
			return -1;
		}
		hl = (size_t)(rb - s - 1);
		if (hl == 0 || hl > INET6_ADDRSTRLEN)
			goto bad_host;
		memcpy(host, s + 1, hl);
		host[hl] = '\0';
		*port = rb + 2;
		*v6 = true;
		return 0;
	}
	if ((colon = strrchr(s, ':')) == NULL) {
		host[0] = '\0';
		*port = s;
		return 0;
	}
	hl = (size_t)(colon - s);
	if (hl > NETADDR_MAX_HOST)
		goto bad_host;
	memcpy(host, s, hl);
	host[hl] = '\0';
	*port = colon + 1;
	if (strchr(host, ':') != NULL) {
		util_errf(err, errlen, "listen: \"%.64s\": an IPv6 address "
		    "needs brackets ([%s]:PORT)", s, host);
		return -1;
	}
	return 0;
bad_host:
	util_errf(err, errlen, "listen: \"%.64s\": the host is empty or "
	    "too long; " FORMS, s);
	return -1;
}

int
netaddr_parse_listen(const char *s, struct sockaddr_storage *ss,
    unsigned *socklen, char *err, size_t errlen)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	char host[NETADDR_MAX_HOST + 1];
	const char *port;
	uint64_t p;
	bool v6;

	memset(ss, 0, sizeof(*ss));
	if (split_listen(s, host, &port, &v6, err, errlen) == -1)
		return -1;
	if (util_parse_u64(port, 65535, &p) == -1) {
		util_errf(err, errlen, "listen: \"%.64s\": the port \"%.16s\" "
		    "is not a number from 0 to 65535 (" FORMS ")", s, port);
		return -1;
	}
	if (v6) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)p);
		*socklen = sizeof(*sin6);
		if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1)
			return 0;
		util_errf(err, errlen, "listen: \"%.64s\": \"%s\" is not an "
		    "IPv6 address", s, host);
		return -1;
	}
	sin->sin_family = AF_INET;
	sin->sin_port = htons((uint16_t)p);
	*socklen = sizeof(*sin);
	if (host[0] == '\0')
		sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else if (inet_pton(AF_INET, host, &sin->sin_addr) != 1) {
		if (resolve_host(host, ss, socklen) == -1) {
			util_errf(err, errlen, "listen: \"%.64s\": the host "
			    "\"%s\" is not an address and does not resolve",
			    s, host);
			return -1;
		}
		/* Both families keep the port at the same offset. */
		if (ss->ss_family == AF_INET6)
			sin6->sin6_port = htons((uint16_t)p);
		else
			sin->sin_port = htons((uint16_t)p);
	}
	return 0;
}
