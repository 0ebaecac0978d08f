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

enum fasthead_verdict {
	FJ_MORE,	/* no end of head within buf: cannot judge it here */
	FJ_OK,		/* nothing that may frame it two ways */
	FJ_BAD,		/* refuse it (400) and close the connection */
};

/*
 * The reasons fasthead_judge gives, which server.c's fields_refused gives
 * alike for what libmicrohttpd parsed: one request, one answer, whichever
 * path judged it.
 */
#define FASTHEAD_FOLD_MSG	"whitespace before a header's colon or at " \
	"the start of a header line (obs-fold)"
#define FASTHEAD_CLTE_MSG	"both Content-Length and Transfer-Encoding"
#define FASTHEAD_HOST2_MSG	"repeated Host header"
#define FASTHEAD_NOHOST_MSG	"an HTTP/1.1 request without a Host header"

/*
 * Judges buf[0..len) (at most FASTHEAD_MAX bytes of it are read), the
 * start of one request, by the rules that decide where a request ends,
 * which every request must meet whichever path answers it (RFC 9112 5.1,
 * 5.2, 3.2, 6.1): FJ_BAD, *why set to one of the reasons above, for
 * whitespace between a field name and its colon or a field line that
 * starts with a space or tab (obs-fold, or whitespace before the first
 * field), then Content-Length with Transfer-Encoding, then Host twice,
 * then HTTP/1.1 without Host. Only a head libmicrohttpd would take as it
 * is read here is judged (CRLF line ends, no NUL, "METHOD TARGET
 * HTTP/1.x", a colon in every field line); for any other, FJ_OK: its
 * faults are libmicrohttpd's and server.c's to answer. FJ_MORE when the
 * blank line that ends the head is not within the bytes read. This
 * function can't fail.
 */
enum fasthead_verdict fasthead_judge(const char *buf, size_t len,
    const char **why);

#endif
