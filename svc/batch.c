/* batch.c - the common POST /v1/check batch body read in place, no allocation per item */
#include <stdbool.h>
#include <string.h>

#include "batch.h"

/* A cursor over the body; every read is bounded by end. */
struct cur {
	const char	*p;
	const char	*end;
};

static void
skip_ws(struct cur *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' ||
	    *c->p == '\n' || *c->p == '\r'))
		c->p++;
}

/* Consumes ch after white space; false when the next byte is another. */
static bool
take(struct cur *c, char ch)
{
	skip_ws(c);
	if (c->p >= c->end || *c->p != ch)
		return false;
	c->p++;
	return true;
}

/*
 * A string of printable ASCII without escapes, after white space: its
 * bytes in *s, *len. False for anything else (an escape, a control or
 * non-ASCII byte, no closing quote), which leaves the body to cJSON.
 */
static bool
string(struct cur *c, const char **s, size_t *len)
{
	const char *q;

	if (!take(c, '"'))
		return false;
	for (q = c->p; q < c->end && *q != '"'; q++)
		if ((unsigned char)*q < 0x20 || (unsigned char)*q > 0x7e ||
		    *q == '\\')
			return false;
	if (q >= c->end)
		return false;
	*s = c->p;
	*len = (size_t)(q - c->p);
	c->p = q + 1;
	return true;
}

static bool
is_name(const char *s, size_t len, const char *name)
{
	return len == strlen(name) && memcmp(s, name, len) == 0;
}

/* One item: {"id":S} or {"id":S,"scope":S} in either order. */
static bool
item(struct cur *c, struct batch_item *it)
{
	const char *name, *val;
	size_t nl, vl;
	bool have_id = false, have_scope = false;

	if (!take(c, '{'))
		return false;
	do {
		if (!string(c, &name, &nl) || !take(c, ':') ||
		    !string(c, &val, &vl) || vl > UINT32_MAX)
			return false;
		if (is_name(name, nl, "id") && !have_id) {
			it->id = val;
			it->id_len = (uint32_t)vl;
			have_id = true;
		} else if (is_name(name, nl, "scope") && !have_scope) {
			it->scope = val;
			it->scope_len = (uint32_t)vl;
			have_scope = true;
		} else
			return false;	/* another member, or repeated */
	} while (take(c, ','));
	if (!have_id)
		return false;
	if (!have_scope) {
		it->scope = NULL;
		it->scope_len = 0;
	}
	return take(c, '}');
}

size_t
batch_items_bound(size_t len, size_t max)
{
	size_t b = len / 10 + 1;

	return b < max ? b : max;
}

int
batch_parse(const char *body, size_t len, struct batch_item *items,
    size_t max, size_t *n)
{
	struct cur c = { body, body + len };
	const char *name;
	size_t nl, k = 0;

	if (!take(&c, '{') || !string(&c, &name, &nl) ||
	    !is_name(name, nl, "items") || !take(&c, ':') || !take(&c, '['))
		return -1;
	skip_ws(&c);
	if (c.p < c.end && *c.p != ']') {
		do {
			if (k >= max || !item(&c, &items[k]))
				return -1;
			k++;
		} while (take(&c, ','));
	}
	if (!take(&c, ']') || !take(&c, '}'))
		return -1;
	skip_ws(&c);
	if (c.p != c.end)
		return -1;	/* trailing data */
	*n = k;
	return 0;
}
