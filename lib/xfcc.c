/* xfcc.c - Envoy's x-forwarded-client-cert header value, parsed from untrusted bytes */
#include <assert.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util.h"
#include "xfcc.h"

static const char *const key_names[XFCC_KEY_COUNT] = {
	"By", "Hash", "Cert", "Chain", "Subject", "URI", "DNS"
};

/*
 * The parse state: the input, the read position, and the output buffer
 * the values are written into. Every value is no longer than the pair it
 * came from less its "k=", so the values and their NULs fit in len + 1
 * bytes; put() checks it all the same.
 */
struct cursor {
	const unsigned char	*s;
	size_t			 len;
	size_t			 i;
	char			*out;
	size_t			 o;
	size_t			 cap;
};

const char *
xfcc_key_name(enum xfcc_key k)
{
	assert(k < XFCC_KEY_COUNT);
	return key_names[k];
}

static bool
is_blank(unsigned char c)
{
	return c == ' ' || c == '\t';
}

static bool
is_ctl(unsigned char c)
{
	return (c < 0x20 && c != '\t') || c == 0x7f;
}

static bool
is_keychar(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '_';
}

static void
skip_blanks(struct cursor *c)
{
	while (c->i < c->len && is_blank(c->s[c->i]))
		c->i++;
}

static int
put(struct cursor *c, unsigned char b)
{
	if (c->o >= c->cap)
		return -1;
	c->out[c->o++] = (char)b;
	return 0;
}

/* The key k[0..kl) names, or XFCC_KEY_COUNT for one this does not know. */
static enum xfcc_key
key_of(const unsigned char *k, size_t kl)
{
	size_t i;

	for (i = 0; i < XFCC_KEY_COUNT; i++)
		if (strlen(key_names[i]) == kl &&
		    strncasecmp((const char *)k, key_names[i], kl) == 0)
			return (enum xfcc_key)i;
	return XFCC_KEY_COUNT;
}

static bool
repeatable(enum xfcc_key k)
{
	return k == XFCC_BY || k == XFCC_URI || k == XFCC_DNS;
}

/* A double-quoted string at c->i (on its '"'), unescaped to the output. */
static int
read_quoted(struct cursor *c, char *err, size_t errlen)
{
	unsigned char ch, n;

	for (c->i++; c->i < c->len; c->i++) {
		ch = c->s[c->i];
		if (ch == '"') {
			c->i++;
			return 0;
		}
		if (is_ctl(ch)) {
			util_errf(err, errlen, "control byte in a quoted value");
			return -1;
		}
		if (ch == '\\') {
			if (c->i + 1 >= c->len)
				break;
			n = c->s[++c->i];
			if (is_ctl(n)) {
				util_errf(err, errlen,
				    "control byte in a quoted value");
				return -1;
			}
			/* Only \" and \\ are escapes; \, keeps its '\'. */
			if (n != '"' && n != '\\' && put(c, '\\') == -1)
				goto full;
			ch = n;
		}
		if (put(c, ch) == -1)
			goto full;
	}
	util_errf(err, errlen, "unterminated quoted value");
	return -1;
full:
	util_errf(err, errlen, "value longer than its input");
	return -1;
}

/* A token at c->i, copied to the output. */
static int
read_token(struct cursor *c, char *err, size_t errlen)
{
	unsigned char ch;

	for (; c->i < c->len; c->i++) {
		ch = c->s[c->i];
		if (ch == ',' || ch == ';' || is_blank(ch))
			break;
		if (ch < 0x21 || ch > 0x7e || ch == '"' || ch == '\\' ||
		    ch == '=') {
			util_errf(err, errlen, "a value with '\"', '\\', '=', "
			    "a control or a non-ASCII byte must be quoted");
			return -1;
		}
		if (put(c, ch) == -1) {
			util_errf(err, errlen, "value longer than its input");
			return -1;
		}
	}
	return 0;
}

/*
 * Strict %XX decoding of v[0..*len) in place: every byte visible ASCII,
 * '%' followed by two hex digits, never %00. '+' stays '+'.
 */
static int
pct_decode(char *v, size_t *len, char *err, size_t errlen)
{
	size_t i, o = 0;
	int hi, lo;
	unsigned char ch;

	for (i = 0; i < *len; i++) {
		ch = (unsigned char)v[i];
		if (ch < 0x21 || ch > 0x7e) {
			util_errf(err, errlen, "a blank, control or non-ASCII "
			    "byte in a URL-encoded value");
			return -1;
		}
		if (ch != '%') {
			v[o++] = (char)ch;
			continue;
		}
		if (*len - i < 3) {
			util_errf(err, errlen, "truncated %%-escape");
			return -1;
		}
		hi = util_hexval((unsigned char)v[i + 1]);
		lo = util_hexval((unsigned char)v[i + 2]);
		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
			util_errf(err, errlen, "bad %%-escape (not two hex "
			    "digits, or %%00)");
			return -1;
		}
		v[o++] = (char)(hi << 4 | lo);
		i += 2;
	}
	*len = o;
	return 0;
}

/*
 * The value at c->i into *v (NUL-terminated in the output), then the
 * blanks after it: c->i is left at the end, a ',' or a ';'.
 */
static int
read_value(struct cursor *c, bool pct, struct xfcc_value *v, char *err,
    size_t errlen)
{
	size_t start = c->o;
	int rc;

	if (c->i < c->len && c->s[c->i] == '"')
		rc = read_quoted(c, err, errlen);
	else
		rc = read_token(c, err, errlen);
	if (rc == -1)
		return -1;
	skip_blanks(c);
	if (c->i < c->len && c->s[c->i] != ',' && c->s[c->i] != ';') {
		util_errf(err, errlen, "bytes after a value (a quote inside "
		    "a value, or a blank in an unquoted one)");
		return -1;
	}
	v->len = c->o - start;
	if (pct && pct_decode(c->out + start, &v->len, err, errlen) == -1)
		return -1;
	c->o = start + v->len;
	if (put(c, '\0') == -1) {
		util_errf(err, errlen, "value longer than its input");
		return -1;
	}
	v->s = c->out + start;
	return 0;
}

/* One key=value pair at c->i into e; c->i is left as read_value leaves it. */
static int
read_pair(struct cursor *c, struct xfcc_elem *e, char *err, size_t errlen)
{
	struct xfcc_value v;
	enum xfcc_key k;
	size_t start;

	skip_blanks(c);
	start = c->i;
	while (c->i < c->len && is_keychar(c->s[c->i]))
		c->i++;
	if (c->i == start) {
		util_errf(err, errlen, c->i >= c->len || c->s[c->i] == ',' ||
		    c->s[c->i] == ';' ? "empty element or pair" :
		    "a key must be letters, digits, '-' or '_'");
		return -1;
	}
	if (c->i >= c->len || c->s[c->i] != '=') {
		util_errf(err, errlen, "a pair without '=' after its key");
		return -1;
	}
	k = key_of(c->s + start, c->i - start);
	c->i++;
	if (read_value(c, k == XFCC_CERT || k == XFCC_CHAIN, &v, err,
	    errlen) == -1)
		return -1;
	if (k == XFCC_KEY_COUNT)
		return 0;
	if (e->count[k] > 0 && !repeatable(k)) {
		util_errf(err, errlen, "%s twice in one element",
		    key_names[k]);
		return -1;
	}
	if (e->count[k]++ == 0)
		e->v[k] = v;
	return 0;
}

int
xfcc_parse(struct xfcc *x, const char *in, size_t len, char *err,
    size_t errlen)
{
	struct cursor c;
	struct xfcc_elem *e;
	size_t npairs;

	assert(x != NULL && (in != NULL || len == 0));
	memset(x, 0, sizeof(*x));
	if (len == 0 || len > XFCC_MAX_LEN) {
		util_errf(err, errlen, "empty, or longer than %d bytes",
		    XFCC_MAX_LEN);
		return -1;
	}
	memset(&c, 0, sizeof(c));
	c.s = (const unsigned char *)in;
	c.len = len;
	c.cap = len + 1;
	if ((c.out = malloc(c.cap)) == NULL) {
		util_errf(err, errlen, "out of memory");
		return -1;
	}
	x->buf = c.out;
	for (;;) {
		if (x->n == XFCC_MAX_ELEMS) {
			util_errf(err, errlen, "more than %d elements",
			    XFCC_MAX_ELEMS);
			goto fail;
		}
		e = &x->elem[x->n++];
		for (npairs = 1;; npairs++) {
			if (npairs > XFCC_MAX_PAIRS) {
				util_errf(err, errlen, "more than %d pairs in "
				    "one element", XFCC_MAX_PAIRS);
				goto fail;
			}
			if (read_pair(&c, e, err, errlen) == -1)
				goto fail;
			if (c.i >= c.len)
				return 0;
			if (c.s[c.i++] == ',')
				break;
		}
	}
fail:
	xfcc_free(x);
	return -1;
}

void
xfcc_free(struct xfcc *x)
{
	if (x == NULL)
		return;
	free(x->buf);
	memset(x, 0, sizeof(*x));
}
