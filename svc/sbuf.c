/* sbuf.c - growable byte buffer for response bodies, with JSON string escaping */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sbuf.h"
#include "util.h"

void
sbuf_init(struct sbuf *b, size_t hint, size_t max)
{
	b->p = NULL;
	b->len = 0;
	b->max = max == 0 ? SIZE_MAX / 2 : max;
	b->cap = hint < 64 ? 64 : hint;
	if (b->cap > b->max)
		b->cap = b->max;	/* sbuf_add's inline test relies on it */
	b->oom = false;
}

void
sbuf_clear(struct sbuf *b)
{
	b->len = 0;
	b->oom = false;
	if (b->p != NULL)
		b->p[0] = '\0';
}

void
sbuf_free(struct sbuf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = 0;
}

bool
sbuf_ok(const struct sbuf *b)
{
	return !b->oom;
}

char *
sbuf_take(struct sbuf *b, size_t *len)
{
	char *p;

	if (b->oom) {
		sbuf_free(b);
		return NULL;
	}
	if (b->p == NULL && (b->p = malloc(1)) == NULL)
		return NULL;
	p = b->p;
	*len = b->len;
	b->p = NULL;
	b->len = 0;
	return p;
}

/* Makes room for n more bytes plus a NUL. */
static bool
reserve(struct sbuf *b, size_t n)
{
	size_t need, cap;
	char *np;

	if (b->oom)
		return false;
	if (n > b->max - b->len - 1 || b->len + n + 1 > b->max) {
		b->oom = true;
		return false;
	}
	need = b->len + n + 1;
	if (b->p != NULL && need <= b->cap)
		return true;
	cap = b->cap;
	while (cap < need)
		cap = cap > b->max / 2 ? b->max : cap * 2;
	if ((np = realloc(b->p, cap)) == NULL) {
		b->oom = true;
		return false;
	}
	b->p = np;
	b->cap = cap;
	return true;
}

void
sbuf_add_grow(struct sbuf *b, const void *p, size_t n)
{
	if (!reserve(b, n))
		return;
	memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void
sbuf_adds(struct sbuf *b, const char *s)
{
	sbuf_add(b, s, strlen(s));
}

void
sbuf_addf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	char tmp[256];
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->oom = true;
		return;
	}
	if ((size_t)n < sizeof(tmp)) {
		sbuf_add(b, tmp, (size_t)n);
		return;
	}
	if (!reserve(b, (size_t)n))
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->oom = true;
		return;
	}
	b->len += (size_t)n;
}

size_t
u64_dec(char out[U64_DEC_MAX], uint64_t v)
{
	char tmp[U64_DEC_MAX];
	size_t i = sizeof(tmp) - 1, n;

	tmp[i] = '\0';
	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	n = sizeof(tmp) - 1 - i;
	memcpy(out, tmp + i, n + 1);
	return n;
}

void
sbuf_add_u64(struct sbuf *b, uint64_t v)
{
	char tmp[U64_DEC_MAX];

	sbuf_add(b, tmp, u64_dec(tmp, v));
}

void
sbuf_add_i64(struct sbuf *b, int64_t v)
{
	if (v < 0) {
		sbuf_add(b, "-", 1);
		sbuf_add_u64(b, (uint64_t)0 - (uint64_t)v);
	} else
		sbuf_add_u64(b, (uint64_t)v);
}

/*
 * Bytes a JSON string carries as they are: printable ASCII but '"', '\\'
 * and the HTML-significant '<', '>', '&', one bit per byte below 128
 * (bit c & 63 of word c >> 6). One test per byte of every answer's id
 * and scope.
 */
static const uint64_t jstr_plain[2] = {
	UINT64_C(0xafffffbb00000000),	/* 0x20-0x3f but '"' '&' '<' '>' */
	UINT64_C(0x7fffffffefffffff),	/* 0x40-0x7e but '\\' */
};

static bool
is_plain(unsigned char c)
{
	return c < 128 && (jstr_plain[c >> 6] >> (c & 63) & 1) != 0;
}

void
sbuf_add_jstr(struct sbuf *b, const void *p, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = p;
	size_t i = 0, run, l;
	char esc[6];

	sbuf_add(b, "\"", 1);
	while (i < n) {
		/* Copy the longest run that needs no escaping in one go. */
		run = i;
		while (run < n && is_plain(s[run]))
			run++;
		if (run > i) {
			sbuf_add(b, s + i, run - i);
			i = run;
			continue;
		}
		if (s[i] == '"' || s[i] == '\\') {
			esc[0] = '\\';
			esc[1] = (char)s[i];
			sbuf_add(b, esc, 2);
			i++;
		} else if (s[i] < 0x80) {
			esc[0] = '\\';
			esc[1] = 'u';
			esc[2] = '0';
			esc[3] = '0';
			esc[4] = hex[s[i] >> 4];
			esc[5] = hex[s[i] & 15];
			sbuf_add(b, esc, 6);
			i++;
		} else if ((l = util_utf8_len(s + i, n - i)) != 0) {
			sbuf_add(b, s + i, l);
			i += l;
		} else {
			sbuf_add(b, "\\ufffd", 6);
			i++;
		}
	}
	sbuf_add(b, "\"", 1);
}

void
sbuf_add_jstrs(struct sbuf *b, const char *s)
{
	sbuf_add_jstr(b, s, strlen(s));
}

void
sbuf_add_label(struct sbuf *b, const char *s, size_t len)
{
	size_t i;

	sbuf_adds(b, "\"");
	for (i = 0; i < len && s[i] != '\0'; i++) {
		if (s[i] == '\\')
			sbuf_adds(b, "\\\\");
		else if (s[i] == '"')
			sbuf_adds(b, "\\\"");
		else if (s[i] == '\n')
			sbuf_adds(b, "\\n");
		else
			sbuf_add(b, &s[i], 1);
	}
	sbuf_adds(b, "\"");
}

cJSON *
json_add(cJSON *o, const char *name, cJSON *item)
{
	bool ok;

	if (item == NULL)
		return NULL;
	ok = name != NULL ? cJSON_AddItemToObject(o, name, item) :
	    cJSON_AddItemToArray(o, item);
	if (!ok) {
		cJSON_Delete(item);
		return NULL;
	}
	return item;
}

void
json_add_strn(cJSON *o, const char *name, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, k = 0, l;
	char *t;

	n = strnlen(s, n);
	if (n > SIZE_MAX / 4 || (t = malloc(3 * n + 1)) == NULL)
		return;
	while (i < n) {
		if ((l = util_utf8_len(u + i, n - i)) != 0) {
			memcpy(t + k, s + i, l);
			k += l;
			i += l;
		} else {
			memcpy(t + k, "\xef\xbf\xbd", 3);	/* U+FFFD */
			k += 3;
			i++;
		}
	}
	t[k] = '\0';
	json_add(o, name, cJSON_CreateString(t));
	free(t);
}

void
json_add_str(cJSON *o, const char *name, const char *s)
{
	json_add_strn(o, name, s, SIZE_MAX);
}

void
json_add_opt(cJSON *o, const char *name, const char *s)
{
	if (s != NULL && s[0] != '\0')
		json_add_str(o, name, s);
	else
		json_add(o, name, cJSON_CreateNull());
}

void
json_add_u64(cJSON *o, const char *name, uint64_t v)
{
	char t[24];

	snprintf(t, sizeof(t), "%" PRIu64, v);
	json_add(o, name, cJSON_CreateRaw(t));
}

void
json_add_i64(cJSON *o, const char *name, int64_t v)
{
	char t[24];

	snprintf(t, sizeof(t), "%" PRId64, v);
	json_add(o, name, cJSON_CreateRaw(t));
}

void
json_add_double(cJSON *o, const char *name, double v)
{
	char t[32];

	if (!isfinite(v)) {
		json_add(o, name, cJSON_CreateNull());
		return;
	}
	snprintf(t, sizeof(t), "%.6g", v);
	json_add(o, name, cJSON_CreateRaw(t));
}

void
json_add_time(cJSON *o, const char *name, int64_t t)
{
	char ts[UTIL_RFC3339_LEN];

	if (t == 0) {
		json_add(o, name, cJSON_CreateNull());
		return;
	}
	util_rfc3339(ts, t);
	json_add(o, name, cJSON_CreateString(ts));
}

/* The byte a cJSON short escape \c stands for, or -1 when it is none. */
static int
short_escape(char c)
{
	switch (c) {
	case 'b':
		return '\b';
	case 'f':
		return '\f';
	case 'n':
		return '\n';
	case 'r':
		return '\r';
	case 't':
		return '\t';
	}
	return -1;
}

void
sbuf_add_json(struct sbuf *b, const cJSON *root)
{
	char *text, *p;
	size_t run;
	char esc[12];
	int c;

	if (root == NULL || (text = cJSON_PrintUnformatted(root)) == NULL) {
		b->oom = true;
		return;
	}
	/*
	 * Outside strings the text holds none of these bytes, and a '\\'
	 * always starts an escape: each is rewritten as sbuf_add_jstr
	 * writes it (\u00XX), other escapes are kept.
	 */
	for (p = text; *p != '\0'; p += run) {
		run = strcspn(p, "<>&\\\x7f");
		sbuf_add(b, p, run);
		if ((c = (unsigned char)p[run]) == '\0')
			break;
		if (c == '\\' && (c = short_escape(p[run + 1])) < 0) {
			sbuf_add(b, p + run, 2);
			run += 2;
			continue;
		}
		if (p[run] == '\\')
			run++;
		snprintf(esc, sizeof(esc), "\\u%04x", (unsigned)c);
		sbuf_add(b, esc, 6);
		run++;
	}
	cJSON_free(text);
}
