/* netaddr.h - listen addresses: "HOST:PORT" text to a socket address, with errors that say what is wrong */
#ifndef REVCHECK_NETADDR_H
#define REVCHECK_NETADDR_H

#include <stddef.h>
#include <sys/socket.h>

#define NETADDR_MAX_HOST	253	/* a DNS name's longest text form */

/*
 * Parses ADDR:PORT, [V6ADDR]:PORT, HOST:PORT or :PORT / PORT (loopback
 * IPv4) into a sockaddr; PORT is 0 to 65535 (0: the kernel picks one).
 * A host name is resolved with getaddrinfo() and its first IPv4 address
 * is used (else its first IPv6 one), so "localhost:8080" listens on
 * 127.0.0.1. Returns 0, or -1 when the text does not parse or the name
 * does not resolve, with err (when not NULL) quoting s and saying which
 * part is wrong and what is wanted, starting "listen: ". The one parser
 * of listen addresses: revcheckd's listen and filterbuild follow's
 * --listen.
 */
int netaddr_parse_listen(const char *s, struct sockaddr_storage *ss,
    unsigned *socklen, char *err, size_t errlen);

#endif
