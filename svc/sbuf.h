/* sbuf.h - growable byte buffer for response bodies, with JSON string escaping */
#ifndef REVCHECK_SVC_SBUF_H
#define REVCHECK_SVC_SBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cjson/cJSON.h>

/*
 * A buffer that grows on demand. Appends never fail loudly: the first
 * allocation failure (or growth past max) sets oom, later appends do
 * nothing, and the caller checks sbuf_ok() once at the end. cap never
 * exceeds max, and p (when not NULL) always holds a NUL after len bytes.
 */
struct sbuf {
	char	*p;
	size_t	 len;
	size_t	 cap;
	size_t	 max;	/* 0: no limit beyond SIZE_MAX/2 */
	bool	 oom;
};

/* Starts with room for hint bytes (allocated lazily on first append). */
void sbuf_init(struct sbuf *b, size_t hint, size_t max);
void sbuf_free(struct sbuf *b);

/* Empties b, keeping its allocation for the next appends. */
void sbuf_clear(struct sbuf *b);

/* True when no append has failed. */
bool sbuf_ok(const struct sbuf *b);

/* Hands the buffer to the caller (free()), leaving b empty. NULL on oom. */
char *sbuf_take(struct sbuf *b, size_t *len);

/* sbuf_add when it has to grow the buffer (or refuse to). */
void sbuf_add_grow(struct sbuf *b, const void *p, size_t n);

/*
 * Appends n bytes. Inline while they fit (a batch answer makes a dozen
 * appends per item): then len + n + 1 <= cap <= max, what the slow path
 * would check.
 */
static inline void
sbuf_add(struct sbuf *b, const void *p, size_t n)
{
	if (b->p != NULL && !b->oom && n < b->cap - b->len) {
		memcpy(b->p + b->len, p, n);
		b->len += n;
		b->p[b->len] = '\0';
		return;
	}
	sbuf_add_grow(b, p, n);
}

void sbuf_adds(struct sbuf *b, const char *s);
/* Appends a string literal, its length known at compile time. */
#define sbuf_addlit(b, lit)	sbuf_add((b), "" lit, sizeof(lit) - 1)
void sbuf_addf(struct sbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void sbuf_add_u64(struct sbuf *b, uint64_t v);
/* v in decimal, NUL-terminated, in out; its length. No printf. */
#define U64_DEC_MAX	21	/* 20 digits and the NUL */
size_t u64_dec(char out[U64_DEC_MAX], uint64_t v);
void sbuf_add_i64(struct sbuf *b, int64_t v);

/*
 * Appends bytes as a quoted JSON string: '"' and '\\' escaped, control
 * characters and DEL as \u00XX, '<' '>' '&' as \u003c etc. (safe to embed
 * anywhere), valid UTF-8 kept, every byte of an invalid UTF-8 sequence
 * replaced by \ufffd. So arbitrary hostile input always yields valid JSON.
 */
void sbuf_add_jstr(struct sbuf *b, const void *p, size_t n);
void sbuf_add_jstrs(struct sbuf *b, const char *s);

/*
 * Appends a quoted Prometheus label value: '\\', '"' and newline escaped,
 * up to len bytes or the first NUL. Issuer names and CRL scopes are
 * printable ASCII, which is all this has to carry.
 */
void sbuf_add_label(struct sbuf *b, const char *s, size_t len);

/*
 * JSON that is not on the check path (status, audit) is built as a cJSON
 * tree with these and printed once by sbuf_add_json. cJSON numbers are
 * doubles, and cJSON copies strings byte for byte, so:
 * - json_add_str/strn add outside text (paths, reasons, messages, names)
 *   as a sanitized copy: valid UTF-8 kept, every byte of an invalid
 *   sequence (overlong, surrogate, truncated, stray) replaced by U+FFFD,
 *   cut at the first NUL (or after n bytes); json_add_opt adds null for
 *   NULL or "".
 * - json_add_u64/i64 add every digit (raw decimal text, no double);
 *   json_add_double prints %.6g, null when not finite; json_add_time an
 *   RFC 3339 string, null for 0.
 * - A NULL name appends to an array. On allocation failure a member is
 *   left out; the document stays valid.
 * sbuf_add_json prints the tree with '<' '>' '&', DEL and the control
 * characters cJSON writes as \n etc. escaped as \u00XX, as sbuf_add_jstr
 * writes them (an invalid byte shows as the character U+FFFD rather than
 * as \ufffd); a NULL root sets oom.
 */
cJSON *json_add(cJSON *o, const char *name, cJSON *item);
void json_add_strn(cJSON *o, const char *name, const char *s, size_t n);
void json_add_str(cJSON *o, const char *name, const char *s);
void json_add_opt(cJSON *o, const char *name, const char *s);
void json_add_u64(cJSON *o, const char *name, uint64_t v);
void json_add_i64(cJSON *o, const char *name, int64_t v);
void json_add_double(cJSON *o, const char *name, double v);
void json_add_time(cJSON *o, const char *name, int64_t t);
void sbuf_add_json(struct sbuf *b, const cJSON *root);

#endif
