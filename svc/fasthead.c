/* fasthead.c - the request heads the fast path answers (fastpath.c) */
#include <string.h>
#include <strings.h>

#include "fasthead.h"
#include "util.h"

static const char prefix[] = "GET /v1/check?";
#define PREFIX_LEN	(sizeof(prefix) - 1)

static const char version[] = " HTTP/1.1";
#define VERSION_LEN	(sizeof(version) - 1)

/* RFC 9110 5.6.2 tchar. */
static bool
is_tchar(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9'))
		return true;
	return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/*
 * Decodes one query value v[0..n) into out (at most n bytes). False for
 * any byte the fast path does not take: outside 0x21-0x7e, a raw '+'
 * (libmicrohttpd reads a space; server.c refuses it), '=', '#', or a '%'
 * without two hex digits.
 */
static bool
value_decode(const char *v, size_t n, char *out, size_t *outlen)
{
	size_t i = 0, o = 0;
	unsigned char c;
	int hi, lo;

	while (i < n) {
		c = (unsigned char)v[i];
		if (c == '%') {
			if (n - i < 3)
				return false;
			hi = util_hexval((unsigned char)v[i + 1]);
			lo = util_hexval((unsigned char)v[i + 2]);
			if (hi < 0 || lo < 0)
				return false;
			out[o++] = (char)(hi << 4 | lo);
			i += 3;
			continue;
		}
		if (c < 0x21 || c > 0x7e || c == '+' || c == '=' || c == '#')
			return false;
		out[o++] = (char)c;
		i++;
	}
	*outlen = o;
	return true;
}

/* The query q[0..n): id once, scope at most once, nothing else. */
static bool
query_parse(const char *q, size_t n, struct fasthead *h, char *dec)
{
	const char *seg, *amp, *end = q + n;
	size_t slen, used = 0, dlen;
	bool have_id = false;

	h->scope = NULL;
	h->scope_len = 0;
	for (seg = q; seg <= end; seg = amp + 1) {
		amp = memchr(seg, '&', (size_t)(end - seg));
		if (amp == NULL)
			amp = end;
		slen = (size_t)(amp - seg);
		if (slen > 3 && memcmp(seg, "id=", 3) == 0 && !have_id) {
			if (!value_decode(seg + 3, slen - 3, dec + used, &dlen))
				return false;
			h->id = dec + used;
			h->id_len = dlen;
			have_id = true;
		} else if (slen > 6 && memcmp(seg, "scope=", 6) == 0 &&
		    h->scope == NULL) {
			if (!value_decode(seg + 6, slen - 6, dec + used, &dlen) ||
			    memchr(dec + used, '\0', dlen) != NULL)
				return false;
			h->scope = dec + used;
			h->scope_len = dlen;
		} else
			return false;
		/* Each ends in a NUL (the scope is read as a C string). */
		dec[used + dlen] = '\0';
		used += dlen + 1;
		if (amp == end)
			break;
	}
	return have_id;
}

/* One header line l[0..n) (no CRLF). False: not the fast path's. */
static bool
header_ok(const char *l, size_t n, unsigned *hosts)
{
	size_t i = 0, name_len, vs, ve;

	while (i < n && is_tchar((unsigned char)l[i]))
		i++;
	if (i == 0 || i == n || l[i] != ':')
		return false;	/* no name, or obs-fold, or space before ':' */
	name_len = i++;
	for (vs = i; vs < n && (l[vs] == ' ' || l[vs] == '\t'); vs++)
		;
	for (i = vs; i < n; i++)
		if (((unsigned char)l[i] < 0x20 && l[i] != '\t') ||
		    (unsigned char)l[i] > 0x7e)
			return false;
	for (ve = n; ve > vs && (l[ve - 1] == ' ' || l[ve - 1] == '\t'); ve--)
		;
#define NAME_IS(s) (name_len == sizeof(s) - 1 && \
	strncasecmp(l, s, sizeof(s) - 1) == 0)
	if (NAME_IS("Host")) {
		(*hosts)++;
		return true;
	}
	if (NAME_IS("Connection"))
		return ve - vs == 10 && strncasecmp(l + vs, "keep-alive", 10) == 0;
	return !(NAME_IS("Content-Length") || NAME_IS("Transfer-Encoding") ||
	    NAME_IS("Expect") || NAME_IS("Upgrade") ||
	    NAME_IS("Authorization"));
#undef NAME_IS
}

/* The request line l[0..n) (no CRLF): GET /v1/check?QUERY HTTP/1.1. */
static bool
request_line_ok(const char *l, size_t n, struct fasthead *h, char *dec)
{
	if (n < PREFIX_LEN + VERSION_LEN ||
	    memcmp(l + n - VERSION_LEN, version, VERSION_LEN) != 0)
		return false;
	return query_parse(l + PREFIX_LEN, n - PREFIX_LEN - VERSION_LEN, h,
	    dec);
}

enum fasthead_kind
fasthead_parse(const char *buf, size_t len, struct fasthead *h, char *dec,
    size_t decsz)
{
	const char *p, *e, *cr;
	unsigned hosts = 0, nline;
	size_t n;

	if (len > FASTHEAD_MAX)
		len = FASTHEAD_MAX;
	if (decsz < FASTHEAD_MAX)
		return FH_OTHER;
	/* Not ours is known from the first bytes: no need to wait. */
	if (memcmp(buf, prefix, len < PREFIX_LEN ? len : PREFIX_LEN) != 0)
		return FH_OTHER;
	/*
	 * Line by line, each judged as soon as it is all in, so that a head
	 * that cannot become a plain check is not waited for: the request
	 * line, header lines, the blank line. Every line ends in CRLF: a
	 * bare CR or LF anywhere is libmicrohttpd's to judge.
	 */
	e = buf + len;
	for (p = buf, nline = 0;; p = cr + 2, nline++) {
		cr = memchr(p, '\r', (size_t)(e - p));
		if (memchr(p, '\n', (size_t)((cr != NULL ? cr : e) - p)) != NULL)
			return FH_OTHER;
		if (cr == NULL || cr + 1 == e)
			return len == FASTHEAD_MAX ? FH_OTHER : FH_MORE;
		if (cr[1] != '\n')
			return FH_OTHER;
		n = (size_t)(cr - p);
		if (nline == 0) {
			if (!request_line_ok(p, n, h, dec))
				return FH_OTHER;
		} else if (n == 0) {
			h->head_len = (size_t)(cr + 2 - buf);
			return hosts == 1 ? FH_CHECK : FH_OTHER;
		} else if (!header_ok(p, n, &hosts))
			return FH_OTHER;
	}
}

/* What fasthead_judge counts and finds in a head. */
struct framing {
	unsigned	 host;
	unsigned	 clen;
	unsigned	 te;
	bool		 fold;		/* whitespace before a colon, obs-fold */
};

/*
 * One field line l[0..n) (no CRLF) into f. False when libmicrohttpd
 * refuses the line itself (no colon), before server.c sees the request.
 */
static bool
judge_field(const char *l, size_t n, struct framing *f)
{
	const char *colon;
	size_t i, name_len;

	if ((colon = memchr(l, ':', n)) == NULL)
		return false;
	name_len = (size_t)(colon - l);
	for (i = 0; i < name_len; i++)
		if (l[i] == ' ' || l[i] == '\t')
			f->fold = true;
#define NAME_IS(s) (name_len == sizeof(s) - 1 && \
	strncasecmp(l, s, sizeof(s) - 1) == 0)
	if (NAME_IS("Host"))
		f->host++;
	else if (NAME_IS("Content-Length"))
		f->clen++;
	else if (NAME_IS("Transfer-Encoding"))
		f->te++;
#undef NAME_IS
	return true;
}

/* The request line l[0..n): METHOD SP TARGET SP HTTP/1.0 or HTTP/1.1. */
static bool
judge_request_line(const char *l, size_t n, bool *http11)
{
	static const char v10[] = " HTTP/1.0", v11[] = " HTTP/1.1";
	const size_t vlen = sizeof(v11) - 1;
	size_t i;

	if (n <= vlen)
		return false;
	*http11 = memcmp(l + n - vlen, v11, vlen) == 0;
	if (!*http11 && memcmp(l + n - vlen, v10, vlen) != 0)
		return false;
	for (i = 0; i < n - vlen && is_tchar((unsigned char)l[i]); i++)
		;
	if (i == 0 || i + 1 >= n - vlen || l[i] != ' ')
		return false;
	for (i++; i < n - vlen; i++)
		if ((unsigned char)l[i] < 0x21 || (unsigned char)l[i] > 0x7e)
			return false;
	return true;
}

enum fasthead_verdict
fasthead_judge(const char *buf, size_t len, const char **why)
{
	struct framing f = { 0, 0, 0, false };
	const char *p, *cr, *e;
	size_t n;
	bool http11 = false;

	*why = NULL;
	if (len > FASTHEAD_MAX)
		len = FASTHEAD_MAX;
	e = buf + len;
	/*
	 * Only a head every line of which libmicrohttpd takes as this reads
	 * it (CRLF line ends, no NUL, a plain request line, a colon in every
	 * field line) is judged here: anything else is handed on, and
	 * libmicrohttpd or server.c (fields_refused) refuses it.
	 */
	for (p = buf;; p = cr + 2) {
		cr = memchr(p, '\r', (size_t)(e - p));
		if (memchr(p, '\n', (size_t)((cr != NULL ? cr : e) - p)) !=
		    NULL)
			return FJ_OK;
		if (cr == NULL || cr + 1 == e)
			return FJ_MORE;
		if (cr[1] != '\n')
			return FJ_OK;
		n = (size_t)(cr - p);
		if (memchr(p, '\0', n) != NULL)
			return FJ_OK;
		if (p == buf) {
			if (!judge_request_line(p, n, &http11))
				return FJ_OK;
			continue;
		}
		if (n == 0)
			break;
		if (p[0] == ' ' || p[0] == '\t')
			f.fold = true;
		if (!judge_field(p, n, &f))
			return FJ_OK;
	}
	if (f.fold)
		*why = FASTHEAD_FOLD_MSG;
	else if (f.clen > 0 && f.te > 0)
		*why = FASTHEAD_CLTE_MSG;
	else if (f.host > 1)
		*why = FASTHEAD_HOST2_MSG;
	else if (http11 && f.host == 0)
		*why = FASTHEAD_NOHOST_MSG;
	return *why != NULL ? FJ_BAD : FJ_OK;
}
