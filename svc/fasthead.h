/* fasthead.h - the request heads the fast path answers (fastpath.c) */
#ifndef REVCHECK_SVC_FASTHEAD_H
#define REVCHECK_SVC_FASTHEAD_H

#include <stdbool.h>
#include <stddef.h>

/*
 * The most of a request head the fast path looks at: a longer one (a
 * large JWT in some header, say) is libmicrohttpd's, which has the
 * configured max_header_size.
 */
#define FASTHEAD_MAX	4096

enum fasthead_kind {
	FH_MORE,	/* no end of head yet: read more, then ask again */
	FH_OTHER,	/* not one the fast path answers: libmicrohttpd's */
	FH_CHECK,	/* GET /v1/check?id=...[&scope=...] HTTP/1.1 */
};

/*
 * A parsed FH_CHECK head. id and scope point into the caller's dec
 * buffer, percent-decoded, each followed by a NUL; the id may hold any
 * byte (NUL too), the scope none that is NUL. scope is NULL when the
 * query has none.
 */
struct fasthead {
	size_t		 head_len;	/* bytes of the head, its blank line too */
	const char	*id;
	size_t		 id_len;
	const char	*scope;
	size_t		 scope_len;
};

/*
 * Reads buf[0..len), the start of what a connection sent, as the head of
 * one request. FH_CHECK only for a strict subset of HTTP/1.1 that cannot
 * mean two things: the request line exactly "GET /v1/check?QUERY
 * HTTP/1.1", a query of "id=V" and at most one "scope=V" in either order
 * and nothing else (no other or repeated parameter, no empty one, no '='
 * or raw '+' in a value, every '%' two hex digits), no byte outside
 * 0x21-0x7e in the target; header lines "Name: value" with token names
 * and values of printable ASCII or tabs ending in CRLF, exactly one Host,
 * and none of Content-Length, Transfer-Encoding, Expect, Upgrade,
 * Authorization, or a Connection other than keep-alive. Anything else
 * (a body, HTTP/1.0, another path or method, a bare LF, obs-fold, a head
 * over FASTHEAD_MAX) is FH_OTHER: libmicrohttpd and server.c answer it as
 * they answer every request, with every refusal they have. dec (decsz
 * bytes, at least FASTHEAD_MAX) receives the decoded values.
 */
enum fasthead_kind fasthead_parse(const char *buf, size_t len,
    struct fasthead *h, char *dec, size_t decsz);

#endif
