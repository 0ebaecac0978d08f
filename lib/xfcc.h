/* xfcc.h - Envoy's x-forwarded-client-cert header value, parsed from untrusted bytes */
#ifndef REVCHECK_XFCC_H
#define REVCHECK_XFCC_H

#include <stddef.h>

/*
 * The value is a comma-separated list of elements, one per proxy the
 * request went through, each appended at the end by the proxy that saw
 * the client it describes: the LAST element is about the immediate client
 * of the nearest proxy. An element is a semicolon-separated list of
 * key=value pairs; keys are case-insensitive; a value is a token (no
 * '"', '\', ',', ';', '=', blank or control byte) or a double-quoted
 * string in which '\' escapes the next byte ("\"" is '"', "\\" is '\',
 * any other pair is kept as it is). Blanks (SP, HTAB) are allowed around
 * ',' and ';'. Cert and Chain carry URL-encoded PEM, decoded here
 * strictly: '%' then two hex digits, never a NUL byte. Unknown keys are
 * allowed (their syntax is checked) and ignored. Nothing here knows HTTP
 * or X.509: the caller parses the PEM.
 */

#define XFCC_MAX_LEN	(64 * 1024)	/* bytes of a header value */
#define XFCC_MAX_ELEMS	8		/* elements (proxies) */
#define XFCC_MAX_PAIRS	64		/* key=value pairs in one element */

enum xfcc_key {
	XFCC_BY = 0,	/* repeatable: SAN URIs of the proxy's own cert */
	XFCC_HASH,	/* SHA-256 of the client certificate, hex */
	XFCC_CERT,	/* the client certificate, PEM (decoded) */
	XFCC_CHAIN,	/* the client's chain, leaf first, PEM (decoded) */
	XFCC_SUBJECT,	/* the client certificate's subject, as sent */
	XFCC_URI,	/* repeatable: SAN URIs of the client certificate */
	XFCC_DNS,	/* repeatable: SAN DNS names of the client cert */
	XFCC_KEY_COUNT
};

/* A value: NUL-terminated bytes (len excludes the NUL), or s NULL. */
struct xfcc_value {
	const char	*s;
	size_t		 len;
};

/*
 * One element. For a repeatable key v[] holds its first value and
 * count[] how many there were; Hash, Cert, Chain and Subject appear at
 * most once.
 */
struct xfcc_elem {
	struct xfcc_value	 v[XFCC_KEY_COUNT];
	unsigned		 count[XFCC_KEY_COUNT];
};

struct xfcc {
	char			*buf;	/* owns every value's bytes */
	struct xfcc_elem	 elem[XFCC_MAX_ELEMS];
	size_t			 n;	/* elements, in header order */
};

/*
 * Parses the header value in[0..len) (need not be NUL-terminated) into
 * x, which the caller then frees with xfcc_free. Returns 0 with at least
 * one element, or -1 with err (safe to show: it never contains the
 * input) and x holding nothing to free: an empty or longer than
 * XFCC_MAX_LEN value, more than XFCC_MAX_ELEMS elements or
 * XFCC_MAX_PAIRS pairs in one, an empty element or pair, a key that is
 * not 1*(ALPHA / DIGIT / "-" / "_"), a control byte (other than HTAB
 * between items) or a byte over 0x7e outside a quoted string, an
 * unterminated quote, bytes after a closing quote, Hash, Cert, Chain or
 * Subject twice in one element, a bad %-escape or a %00 in Cert or
 * Chain, or no memory.
 */
int xfcc_parse(struct xfcc *x, const char *in, size_t len, char *err,
    size_t errlen);

/* Frees what xfcc_parse left in x; x may be zeroed or freed already. */
void xfcc_free(struct xfcc *x);

/* The canonical spelling of key k ("Cert", ...); static. */
const char *xfcc_key_name(enum xfcc_key k);

#endif
