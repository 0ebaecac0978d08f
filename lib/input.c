/* input.c - revocation list readers: text, JSON and X.509 CRLs (PEM or DER) */
/*
 * Every reader treats its input as hostile: sizes are capped, every DER
 * length is checked against the bytes that are really there, and every
 * error names the file and the line, element index or DER offset.
 *
 * Records enter the set's builder only through rd_add() and
 * input_keep_scope(), and scopes only through set_scope(). A failed
 * input_read() truncates both back to their length at entry; scope metadata of CRLs is applied only after the last point of
 * failure, so existing scopes are never modified by a failed call.
 */
#include "input.h"

#include <assert.h>
#include <ctype.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>
#include <xxhash.h>

#include "crl.h"
#include "log.h"
#include "util.h"

#define INPUT_PROGRESS_EVERY	65536
#define INPUT_MAX_CRLS		4096	/* CRLs in one PEM file */
#define INPUT_MAX_CRL_ISSUERS	256	/* issuers one indirect CRL names */
#define INPUT_DER_MAX_DEPTH	24

/* State of one input_read() call. */
struct rd {
	struct input_set	*s;
	const struct input_opts	*o;
	const char		*name;	/* for messages: path or "<stdin>" */
	char			*err;
	size_t			 errlen;
	size_t			 last_scope;	/* lookup cache, SIZE_MAX = none */
	/*
	 * Open-addressing index of s->scopes by name, built per call so that
	 * a list naming thousands of scopes stays linear: slot = index + 1,
	 * 0 = empty. NULL when it could not be allocated (linear search).
	 * The hash is seeded per call: the names come from the list, and
	 * with a hash known in advance a list can send them all to one
	 * cluster and make every lookup a scan (quadratic).
	 */
	uint32_t		*sidx;
	size_t			 sidx_cap;	/* power of two */
	uint64_t		 sidx_seed;
	uint64_t		 count;		/* records added by this call */
	size_t			 ndeps0;	/* s->ndeps at the start */
	size_t			 ncrls0;	/* s->ncrls at the start */
	/* The CRL being added: a delta (and its BaseCRLNumber), freshestCRL. */
	bool			 cur_delta;
	bool			 cur_announces;
	bool			 cur_indirect;
	char			 cur_base[FFILE_CRLNUM_MAX + 1];
	unsigned char		 cur_key[32];	/* its signer's key, or zeros */
	unsigned char		 cur_content[32];	/* crl_content_digest */
	/* Source metadata of the CRLs read, applied on success. */
	struct ffile_scope	*pend;
	size_t			 npend;
	size_t			 pcap;
};

/*
 * Formats "<name>: <message>", or "<name>:<line>: <message>" when line is
 * not 0, into the caller's error buffer.
 */
static void rd_verr(struct rd *r, size_t line, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

static void
rd_verr(struct rd *r, size_t line, const char *fmt, va_list ap)
{
	char msg[1024];
	int n;

	if (r->errlen == 0)
		return;
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (n < 0)
		msg[0] = '\0';
	if (line != 0)
		n = snprintf(r->err, r->errlen, "%s:%zu: %s", r->name, line, msg);
	else
		n = snprintf(r->err, r->errlen, "%s: %s", r->name, msg);
	/* A cut message still starts with the file name; mark the cut. */
	if ((n < 0 || (size_t)n >= r->errlen) && r->errlen > 4)
		memcpy(r->err + r->errlen - 4, "...", 4);
}

static void rd_err(struct rd *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void rd_err_line(struct rd *r, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
rd_err(struct rd *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rd_verr(r, 0, fmt, ap);
	va_end(ap);
}

static void
rd_err_line(struct rd *r, size_t line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rd_verr(r, line, fmt, ap);
	va_end(ap);
}

void
input_set_init(struct input_set *s)
{
	assert(s != NULL);
	memset(s, 0, sizeof(*s));
	table_builder_init(&s->builder);
}

void
input_set_free(struct input_set *s)
{
	if (s == NULL)
		return;
	table_builder_free(&s->builder);
	free(s->scopes);
	free(s->deps);
	free(s->crls);
	memset(s, 0, sizeof(*s));
}

static uint64_t
scope_hash(const struct rd *r, const char *name)
{
	return XXH3_64bits_withSeed(name, strlen(name), r->sidx_seed);
}

static void
sidx_insert(struct rd *r, size_t i)
{
	size_t mask = r->sidx_cap - 1, j;

	j = (size_t)scope_hash(r, r->s->scopes[i].name) & mask;
	while (r->sidx[j] != 0)
		j = (j + 1) & mask;
	r->sidx[j] = (uint32_t)(i + 1);
}

/*
 * (Re)builds the index for at least want scopes at load at most 1/2.
 * Failure only drops the index: lookups fall back to a linear search.
 */
static void
sidx_build(struct rd *r, size_t want)
{
	size_t cap = 64, i;

	while (cap < 2 * want)
		cap *= 2;
	free(r->sidx);
	r->sidx_cap = 0;
	if ((r->sidx = calloc(cap, sizeof(*r->sidx))) == NULL)
		return;
	r->sidx_cap = cap;
	for (i = 0; i < r->s->nscopes; i++)
		sidx_insert(r, i);
}

size_t
input_set_records(const struct input_set *s)
{
	return table_builder_count(&s->builder);
}

static size_t
set_find_scope(struct rd *r, const char *name)
{
	struct input_set *s = r->s;
	size_t i, j, mask;

	if (r->last_scope < s->nscopes &&
	    strcmp(s->scopes[r->last_scope].name, name) == 0)
		return r->last_scope;
	if (r->sidx != NULL) {
		mask = r->sidx_cap - 1;
		for (j = (size_t)scope_hash(r, name) & mask; r->sidx[j] != 0;
		    j = (j + 1) & mask) {
			i = r->sidx[j] - 1;
			if (i < s->nscopes && strcmp(s->scopes[i].name,
			    name) == 0)
				return r->last_scope = i;
		}
		return SIZE_MAX;
	}
	for (i = 0; i < s->nscopes; i++)
		if (strcmp(s->scopes[i].name, name) == 0)
			return r->last_scope = i;
	return SIZE_MAX;
}

/*
 * Makes sure the set covers a scope, appending a list-sourced entry when
 * it is new. The only place scopes enter a set. A subject or session
 * cutoff scope ("sub:" or "sid:" and an issuer) covers its issuer's token
 * scope too, with no key when the issuer has no jti revoked: a token is
 * checked by its jti and its cutoffs together, and a jti scope not
 * covered would make every token of that issuer not_covered. Returns 0,
 * or -1 with the error set.
 */
static int
set_scope(struct rd *r, const char *name)
{
	struct input_set *s = r->s;
	struct ffile_scope *ns, *sc;
	const char *iss;
	size_t ncap, len;

	if (set_find_scope(r, name) != SIZE_MAX)
		return 0;
	len = strnlen(name, REVKEY_SCOPE_MAX + 1);
	if (!revkey_scope_valid(name, len)) {
		rd_err(r, "invalid scope \"%.*s\"", (int)(len > 80 ? 80 : len),
		    name);
		return -1;
	}
	if (revkey_scope_is_cutoff(name)) {
		_Static_assert(sizeof(REVKEY_SUB_PREFIX) ==
		    sizeof(REVKEY_SID_PREFIX), "one cutoff prefix length");
		iss = name + strlen(REVKEY_SUB_PREFIX);
		if (revkey_scope_valid(iss, strlen(iss)) &&
		    !revkey_scope_is_x509(iss) &&
		    !revkey_scope_is_cutoff(iss) && set_scope(r, iss) != 0)
			return -1;
	}
	if (s->nscopes >= FFILE_MAX_SCOPES) {
		rd_err(r, "more than %d scopes", FFILE_MAX_SCOPES);
		return -1;
	}
	if (s->nscopes == s->scap) {
		ncap = s->scap == 0 ? 8 : s->scap * 2;
		if ((ns = realloc(s->scopes, ncap * sizeof(*ns))) == NULL) {
			rd_err(r, "out of memory");
			return -1;
		}
		s->scopes = ns;
		s->scap = ncap;
	}
	sc = &s->scopes[s->nscopes];
	memset(sc, 0, sizeof(*sc));
	memcpy(sc->name, name, len);
	sc->name[len] = '\0';
	sc->source = FFILE_SRC_LIST;
	r->last_scope = s->nscopes++;
	if (r->sidx != NULL) {
		if (2 * s->nscopes > r->sidx_cap)
			sidx_build(r, s->nscopes);
		else
			sidx_insert(r, s->nscopes - 1);
	}
	return 0;
}

/* Adds a record; reports progress now and then. 0, or -1 with err. */
static int
rd_add(struct rd *r, const struct revkey *k, int64_t at, const char *reason)
{
	if (table_builder_add(&r->s->builder, k, at, reason) != 0) {
		rd_err(r, input_set_records(r->s) >= TABLE_MAX_RECORDS ?
		    "more than %llu records" : "out of memory",
		    (unsigned long long)TABLE_MAX_RECORDS);
		return -1;
	}
	r->count++;
	if (r->o->progress != NULL && r->count % INPUT_PROGRESS_EVERY == 0)
		r->o->progress(r->o->progress_arg, input_set_records(r->s));
	return 0;
}

static const char *
opts_scope(const struct input_opts *o)
{
	return o->scope != NULL ? o->scope : REVKEY_DEFAULT_SCOPE;
}

/*
 * A list fetched from a URL names an X.509 scope: refused. Its body came
 * from whoever serves the URL (over http, anyone on the path), and
 * whatever is served at a CRL's URL in place of the CRL would make the
 * CA's scope list-sourced, covering every serial unsigned. 0, or -1 with
 * err (what names the element, or "").
 */
static int
list_scope_ok(struct rd *r, const char *scope, const char *what)
{
	if (!r->o->fetched || !revkey_scope_is_x509(scope))
		return 0;
	rd_err(r, "%sX.509 scope %s named by a list fetched from a URL: a "
	    "list carries no signature, and only a CRL verified with --issuer "
	    "may speak for an X.509 scope (give the list as a local file if "
	    "it is meant)", what, scope);
	return -1;
}

/* ---- text ------------------------------------------------------------ */

static bool
is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' ||
	    c == '\f';
}

/*
 * True when every byte of u[0..n) lies in 0x21..0x7e (printable ASCII, no
 * space): eight bytes at a time, with the exact any-byte-below and
 * any-byte-above tests of word arithmetic. The ids of a real list nearly
 * always are; the others take id_refused's byte loop, which decides.
 */
static bool
id_plain(const unsigned char *u, size_t n)
{
	const uint64_t ones = UINT64_C(0x0101010101010101), high = ones << 7;
	uint64_t x;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		memcpy(&x, u + i, 8);
		/* A byte below 0x21, or a byte above 0x7e. */
		if ((((x - ones * 0x21) & ~x) | (x + ones * (127 - 0x7e)) | x) &
		    high)
			return false;
	}
	for (; i < n; i++)
		if (u[i] < 0x21 || u[i] > 0x7e)
			return false;
	return true;
}

/*
 * Why the bytes of one id are not those of a token id, or NULL when they
 * are: a control byte (a space or tab too, with words), or bytes that are
 * not UTF-8. *col is set to the 1-based column of the first bad byte.
 */
static const char *
id_refused(const char *b, size_t n, bool words, size_t *col)
{
	const unsigned char *u = (const unsigned char *)b;
	size_t i, l;

	if (id_plain(u, n))
		return NULL;
	for (i = 0; i < n; i += l) {
		*col = i + 1;
		l = 1;
		if (u[i] == ' ' || u[i] == '\t') {
			if (words)
				return "whitespace inside an id (a token list "
				    "has one id per line)";
			continue;
		}
		if (u[i] < 0x20 || u[i] == 0x7f)
			return "control byte in an id";
		if (u[i] >= 0x80 && (l = util_utf8_len(u + i, n - i)) == 0)
			return "bytes that are not UTF-8 (binary data)";
	}
	return NULL;
}

/*
 * An input that publishes no id at all replaces the scope's list with
 * nothing: every id it revoked would answer not_revoked. Refused unless
 * the caller allows it.
 */
static int
rd_refuse_empty(struct rd *r, const char *scope)
{
	if (r->o->allow_empty)
		return 0;
	rd_err(r, "no ids: an empty list would un-revoke every id of scope "
	    "\"%s\" (--allow-shrink to publish it)", scope);
	return -1;
}

#define UTF8_BOM	"\xef\xbb\xbf"

/*
 * Before a large list is read, room for a record per line (an id is at
 * most its line, scope and header added), so that the builder's memory is
 * prepared ahead by another thread rather than faulted in by this one.
 */
#define INPUT_RESERVE_MIN	((size_t)16 << 20)

static void
reserve_lines(struct rd *r, const char *buf, size_t len, const char *scope)
{
	const char *p = buf, *end = buf + len;
	size_t lines = 1;

	if (len < INPUT_RESERVE_MIN)
		return;
	while ((p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		lines++;
		p++;
	}
	(void)table_builder_reserve(&r->s->builder, lines, len + lines *
	    (TABLE_REC_HDR_LEN + strlen(scope) + 1));
}

/*
 * A token list is lines of single ids. Anything else (a PEM file, a
 * document, binary data) would publish its lines as ids, and garbage in
 * place of the real list un-revokes what that list revoked: it is refused
 * at its first bad line.
 */
static int
read_text(struct rd *r, const char *buf, size_t len)
{
	const char *scope = opts_scope(r->o), *line, *nl, *b, *e, *why, *bom;
	char kerr[256];
	struct revkey k;
	size_t pos = 0, lineno = 0, col, nids = 0;
	bool raw = !revkey_scope_is_x509(scope), plain;

	if (list_scope_ok(r, scope, "") != 0 || set_scope(r, scope) != 0)
		return -1;
	/*
	 * A UTF-8 byte order mark (Notepad, many exporters) is no part of
	 * the first id: kept, it would make that id one no check ever asks
	 * about, and un-revoke it. Anywhere else the mark is refused below.
	 */
	if (len >= 3 && memcmp(buf, UTF8_BOM, 3) == 0)
		pos = 3;
	reserve_lines(r, buf, len, scope);
	while (pos < len) {
		line = buf + pos;
		nl = memchr(line, '\n', len - pos);
		e = nl != NULL ? nl : buf + len;
		pos = (size_t)(e - buf) + (nl != NULL ? 1 : 0);
		lineno++;
		b = line;
		while (b < e && is_space((unsigned char)*b))
			b++;
		while (e > b && is_space((unsigned char)e[-1]))
			e--;
		if (b == e || *b == '#')
			continue;
		/* Bytes 0x21..0x7e only: no NUL, no mark, nothing refused. */
		plain = id_plain((const unsigned char *)b, (size_t)(e - b));
		if (!plain && memchr(b, '\0', (size_t)(e - b)) != NULL) {
			rd_err_line(r, lineno, "NUL byte in id");
			return -1;
		}
		if ((size_t)(e - b) >= 5 && memcmp(b, "-----", 5) == 0) {
			rd_err_line(r, lineno, "PEM armour: a PEM file is not a "
			    "token list");
			return -1;
		}
		if (!plain && (why = id_refused(b, (size_t)(e - b), true,
		    &col)) != NULL) {
			rd_err_line(r, lineno, "column %zu: %s: not a token "
			    "list", col + (size_t)(b - line), why);
			return -1;
		}
		if (!plain && (bom = memmem(b, (size_t)(e - b), UTF8_BOM, 3)) !=
		    NULL) {
			rd_err_line(r, lineno, "column %zu: a byte order mark "
			    "(U+FEFF) inside an id: no check would ask for "
			    "that id", (size_t)(bom - line) + 1);
			return -1;
		}
		/*
		 * Raw ids after the first keep its checked scope; an x509
		 * scope's serials, and a refused id (for its message), go
		 * through revkey_from_text.
		 */
		if ((nids == 0 || !raw || revkey_set_id(&k, b,
		    (size_t)(e - b)) != 0) && revkey_from_text(&k, scope, b,
		    (size_t)(e - b), kerr, sizeof(kerr)) != 0) {
			rd_err_line(r, lineno, "%s", kerr);
			return -1;
		}
		if (rd_add(r, &k, 0, NULL) != 0)
			return -1;
		nids++;
	}
	return nids == 0 ? rd_refuse_empty(r, scope) : 0;
}

/* ---- JSON ------------------------------------------------------------ */

static void
offset_line(const char *buf, size_t off, size_t *line, size_t *col)
{
	const char *p = buf, *end = buf + off, *nl;

	*line = 1;
	*col = 1;
	while (p < end && (nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		(*line)++;
		p = nl + 1;
	}
	*col = (size_t)(end - p) + 1;
}

static bool
reason_valid(const char *s)
{
	size_t i;

	for (i = 0; s[i] != '\0'; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return false;
	return i < TABLE_REASON_MAX;
}

/*
 * The known member a key is a near miss of ("Scope", "revokedAt",
 * " id"): equal to it once case and everything but letters and digits are
 * set aside, but not equal. NULL when none. Other unknown keys are an
 * exporter's own fields and are ignored; a near miss is a typo that would
 * put an id in the default scope or drop its reason, and is refused.
 */
static const char *
json_near_miss(const char *key)
{
	static const char *const known[] = { "id", "scope", "revoked_at",
	    "reason", "sub", "sid", "before" };
	char a[32], b[32];
	size_t i, n;
	const char *p;

	for (n = 0, p = key; *p != '\0' && n < sizeof(a) - 1; p++)
		if (isalnum((unsigned char)*p))
			a[n++] = (char)tolower((unsigned char)*p);
	if (*p != '\0')
		return NULL;
	a[n] = '\0';
	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		for (n = 0, p = known[i]; *p != '\0'; p++)
			if (*p != '_')
				b[n++] = *p;
		b[n] = '\0';
		if (strcmp(a, b) == 0)
			return known[i];
	}
	return NULL;
}

/* One array element: a string id, or an object with id and optionals. */
static int
json_element(struct rd *r, const cJSON *el, size_t idx)
{
	const char *scope = opts_scope(r->o), *id = NULL, *reason = NULL, *why;
	const char *prefix = NULL;
	char cscope[REVKEY_SCOPE_MAX + 1];
	size_t col;
	const cJSON *it, *jid = NULL, *jscope = NULL, *jat = NULL, *jreason = NULL;
	const cJSON *jsub = NULL, *jsid = NULL, *jbefore = NULL;
	const cJSON **slot;
	char kerr[256];
	struct revkey k;
	int64_t at = 0;

	if (cJSON_IsString(el)) {
		id = el->valuestring;
	} else if (cJSON_IsObject(el)) {
		for (it = el->child; it != NULL; it = it->next) {
			if (it->string == NULL)
				continue;
			if (strcmp(it->string, "id") == 0)
				slot = &jid;
			else if (strcmp(it->string, "scope") == 0)
				slot = &jscope;
			else if (strcmp(it->string, "revoked_at") == 0)
				slot = &jat;
			else if (strcmp(it->string, "reason") == 0)
				slot = &jreason;
			else if (strcmp(it->string, "sub") == 0)
				slot = &jsub;
			else if (strcmp(it->string, "sid") == 0)
				slot = &jsid;
			else if (strcmp(it->string, "before") == 0)
				slot = &jbefore;
			else if ((why = json_near_miss(it->string)) != NULL) {
				rd_err(r, "element %zu: unknown key \"%.40s\" "
				    "(did you mean \"%s\"?)", idx, it->string,
				    why);
				return -1;
			} else
				continue;	/* an exporter's own field */
			if (*slot != NULL) {
				rd_err(r, "element %zu: duplicate key \"%s\"",
				    idx, it->string);
				return -1;
			}
			*slot = it;
		}
		if ((jid != NULL) + (jsub != NULL) + (jsid != NULL) != 1) {
			rd_err(r, "element %zu: %s", idx, jid == NULL &&
			    jsub == NULL && jsid == NULL ? "object has no "
			    "\"id\" (nor \"sub\" or \"sid\")" : "only one of "
			    "\"id\", \"sub\" and \"sid\" may be given");
			return -1;
		}
		/*
		 * A subject or session cutoff: every token of that sub (sid)
		 * from the issuer named by scope, issued before "before".
		 */
		if (jid == NULL) {
			prefix = jsub != NULL ? REVKEY_SUB_PREFIX :
			    REVKEY_SID_PREFIX;
			jid = jsub != NULL ? jsub : jsid;
			if (jbefore == NULL || !cJSON_IsString(jbefore) ||
			    util_parse_rfc3339(jbefore->valuestring, &at) != 0 ||
			    at <= 0) {
				rd_err(r, "element %zu: a \"%s\" cutoff needs "
				    "\"before\", an RFC 3339 date after 1970",
				    idx, jsub != NULL ? "sub" : "sid");
				return -1;
			}
			if (jat != NULL) {
				rd_err(r, "element %zu: a cutoff takes "
				    "\"before\", not \"revoked_at\"", idx);
				return -1;
			}
		} else if (jbefore != NULL) {
			rd_err(r, "element %zu: \"before\" goes with \"sub\" "
			    "or \"sid\" only", idx);
			return -1;
		}
		if (!cJSON_IsString(jid)) {
			rd_err(r, "element %zu: \"%s\" is not a string", idx,
			    jid->string);
			return -1;
		}
		id = jid->valuestring;
		if (jscope != NULL && !cJSON_IsNull(jscope)) {
			if (!cJSON_IsString(jscope)) {
				rd_err(r, "element %zu: \"scope\" is not a "
				    "string", idx);
				return -1;
			}
			scope = jscope->valuestring;
		}
		if (jat != NULL && !cJSON_IsNull(jat)) {
			if (!cJSON_IsString(jat) ||
			    util_parse_rfc3339(jat->valuestring, &at) != 0 ||
			    at <= 0) {
				rd_err(r, "element %zu: \"revoked_at\" is not an "
				    "RFC 3339 date after 1970 (like "
				    "\"2026-01-31T12:00:00Z\")", idx);
				return -1;
			}
		}
		if (jreason != NULL && !cJSON_IsNull(jreason)) {
			if (!cJSON_IsString(jreason) ||
			    !reason_valid(jreason->valuestring)) {
				rd_err(r, "element %zu: \"reason\" is not a string "
				    "of at most %d printable ASCII characters",
				    idx, TABLE_REASON_MAX - 1);
				return -1;
			}
			reason = jreason->valuestring;
		}
	} else {
		rd_err(r, "element %zu: neither a string nor an object", idx);
		return -1;
	}
	if (!revkey_scope_valid(scope, strnlen(scope, REVKEY_SCOPE_MAX + 1))) {
		rd_err(r, "element %zu: invalid scope (1-%d printable "
		    "characters without spaces, or x509: and 64 lowercase hex "
		    "digits)", idx, REVKEY_SCOPE_MAX);
		return -1;
	}
	if (prefix != NULL) {
		if (revkey_scope_is_x509(scope) ||
		    revkey_scope_is_cutoff(scope)) {
			rd_err(r, "element %zu: a cutoff's scope is a token "
			    "issuer, not an X.509 or cutoff scope", idx);
			return -1;
		}
		col = (size_t)snprintf(cscope, sizeof(cscope), "%s%s", prefix,
		    scope);
		if (col >= sizeof(cscope)) {
			rd_err(r, "element %zu: the issuer is too long for a "
			    "cutoff (at most %zu bytes)", idx,
			    REVKEY_SCOPE_MAX - strlen(prefix));
			return -1;
		}
		scope = cscope;
	}
	(void)snprintf(kerr, sizeof(kerr), "element %zu: ", idx);
	if (list_scope_ok(r, scope, kerr) != 0 || set_scope(r, scope) != 0)
		return -1;
	if ((why = id_refused(id, strlen(id), false, &col)) != NULL) {
		rd_err(r, "element %zu: \"id\" column %zu: %s", idx, col, why);
		return -1;
	}
	if (revkey_from_text(&k, scope, id, strlen(id), kerr,
	    sizeof(kerr)) != 0) {
		rd_err(r, "element %zu: %s", idx, kerr);
		return -1;
	}
	return rd_add(r, &k, at, reason);
}

static int
read_json(struct rd *r, const char *buf, size_t len)
{
	const char *end = NULL, *nul, *why;
	const cJSON *el;
	cJSON *root;
	size_t idx = 0, line, col, off;
	int rc = -1;

	/* cJSON stops at a NUL: one inside the text would hide the rest. */
	if ((nul = memchr(buf, '\0', len)) != NULL) {
		offset_line(buf, (size_t)(nul - buf), &line, &col);
		rd_err_line(r, line, "NUL byte at offset %zu (column %zu): not "
		    "JSON text", (size_t)(nul - buf), col);
		return -1;
	}
	if ((why = util_json_refused(buf, len)) != NULL) {
		rd_err_line(r, 0, "%s: not accepted in a revocation list", why);
		return -1;
	}
	/* The buffer is NUL-terminated (util_read_file), so len + 1 is valid. */
	root = cJSON_ParseWithLengthOpts(buf, len + 1, &end, 1);
	if (root == NULL) {
		off = end != NULL && end >= buf && end <= buf + len ?
		    (size_t)(end - buf) : len;
		offset_line(buf, off, &line, &col);
		rd_err_line(r, line, "invalid JSON at offset %zu (column %zu)",
		    off, col);
		return -1;
	}
	if (!cJSON_IsArray(root)) {
		rd_err(r, "JSON top level is not an array");
		goto out;
	}
	if (root->child == NULL && (list_scope_ok(r, opts_scope(r->o), "") !=
	    0 || set_scope(r, opts_scope(r->o)) != 0 ||
	    rd_refuse_empty(r, opts_scope(r->o)) != 0))
		goto out;
	for (el = root->child; el != NULL; el = el->next, idx++)
		if (json_element(r, el, idx) != 0)
			goto out;
	rc = 0;
out:
	cJSON_Delete(root);
	return rc;
}

/* ---- DER structure check ------------------------------------------------ */

/*
 * Reads the identifier and length octets of a DER element at off, within
 * [off, end). Sets *hdr to their size and *clen to the declared content
 * length (which may run past end: the caller checks). Returns 0, or -1
 * when the header itself is cut or not DER (indefinite length, too long).
 */
static int
der_header(const unsigned char *b, size_t off, size_t end, size_t *hdr,
    uint64_t *clen)
{
	size_t p = off, n, i;
	uint64_t l = 0;

	if (p >= end)
		return -1;
	if ((b[p++] & 0x1f) == 0x1f) {		/* high tag number form */
		for (i = 0; p < end && (b[p] & 0x80) != 0; i++, p++)
			if (i >= 4)
				return -1;
		if (p >= end)
			return -1;
		p++;
	}
	if (p >= end)
		return -1;
	if (b[p] < 0x80) {
		l = b[p++];
	} else {
		n = b[p++] & 0x7f;
		if (n == 0 || n > 8 || n > end - p)
			return -1;
		for (i = 0; i < n; i++)
			l = (l << 8) | b[p++];
	}
	*hdr = p - off;
	*clen = l;
	return 0;
}

/*
 * Walks the elements in [off, end), descending into constructed ones.
 * Returns 0 when every length fits; otherwise -1 with *bad at the deepest
 * element whose header is cut or whose content runs past what is there.
 */
static int
der_walk(const unsigned char *b, size_t off, size_t end, int depth,
    size_t *bad)
{
	size_t hdr, cs;
	uint64_t clen;
	bool cons;

	while (off < end) {
		if (der_header(b, off, end, &hdr, &clen) != 0) {
			*bad = off;
			return -1;
		}
		cons = (b[off] & 0x20) != 0;
		cs = off + hdr;
		if (clen > end - cs) {
			*bad = off;
			if (cons && depth < INPUT_DER_MAX_DEPTH)
				(void)der_walk(b, cs, end, depth + 1, bad);
			return -1;
		}
		if (cons && depth < INPUT_DER_MAX_DEPTH &&
		    der_walk(b, cs, cs + (size_t)clen, depth + 1, bad) != 0)
			return -1;
		off = cs + (size_t)clen;
	}
	return 0;
}

/*
 * Checks that der is exactly one well-formed DER element. Returns 0, or -1
 * with *bad the offset of the first problem.
 */
static int
der_check(const unsigned char *der, size_t len, size_t *bad)
{
	size_t hdr;
	uint64_t clen;

	if (der_header(der, 0, len, &hdr, &clen) != 0) {
		*bad = 0;
		return -1;
	}
	if (clen > len - hdr)
		return der_walk(der, 0, len, 0, bad);
	if (hdr + clen != len) {
		*bad = hdr + (size_t)clen;
		return -1;
	}
	return der_walk(der, 0, len, 0, bad);
}

/* ---- CRLs ---------------------------------------------------------------- */

/* RFC 5280 CRLReason names, by code; code 7 is not used. */
static const char *const crl_reasons[] = {
	"unspecified", "keyCompromise", "cACompromise", "affiliationChanged",
	"superseded", "cessationOfOperation", "certificateHold", NULL,
	"removeFromCRL", "privilegeWithdrawn", "aACompromise",
};

static int
asn1_time_epoch(const ASN1_TIME *t, int64_t *out)
{
	struct tm tm;
	time_t v;

	if (t == NULL || ASN1_TIME_to_tm(t, &tm) != 1)
		return -1;
	v = timegm(&tm);
	if (v == (time_t)-1)
		return -1;
	*out = (int64_t)v;
	return 0;
}

/* The last OpenSSL error as text, and the error queue cleared. */
static const char *
ossl_reason(char *buf, size_t len)
{
	unsigned long e = ERR_peek_last_error();
	const char *rs;

	if (e == 0) {
		snprintf(buf, len, "no detail");
	} else {
		rs = ERR_reason_error_string(e);
		if (rs != NULL)
			snprintf(buf, len, "%s", rs);
		else
			snprintf(buf, len, "error %lu", e);
	}
	ERR_clear_error();
	return buf;
}

/*
 * A CRLNumber (RFC 5280 section 5.2.3: non-negative, at most 20 octets;
 * a BaseCRLNumber is one too) as lowercase hex into out. 0 or -1.
 */
static int
crlnum_hex(const ASN1_INTEGER *num, char *out, size_t cap)
{
	BIGNUM *bn;
	char *hex = NULL;
	size_t i, n;
	int rc = -1;

	if ((bn = ASN1_INTEGER_to_BN(num, NULL)) == NULL ||
	    BN_is_negative(bn) || BN_num_bytes(bn) > 20 ||
	    (hex = BN_bn2hex(bn)) == NULL || (n = strlen(hex)) >= cap)
		goto out;
	for (i = 0; i <= n; i++)
		out[i] = (char)(hex[i] >= 'A' && hex[i] <= 'F' ?
		    hex[i] - 'A' + 'a' : hex[i]);
	rc = 0;
out:
	OPENSSL_free(hex);
	BN_free(bn);
	return rc;
}

/* CRL number as lowercase hex into out; "" when absent. 0 or -1. */
static int
crl_number_hex(struct rd *r, const X509_CRL *crl, const char *where,
    char *out, size_t cap)
{
	ASN1_INTEGER *num;
	int crit = 0, rc = 0;

	out[0] = '\0';
	num = X509_CRL_get_ext_d2i(crl, NID_crl_number, &crit, NULL);
	if (num == NULL) {
		if (crit == -1)
			return 0;
		rd_err(r, "%smalformed or repeated CRL number extension", where);
		ERR_clear_error();
		return -1;
	}
	if (crlnum_hex(num, out, cap) != 0) {
		rd_err(r, "%sCRL number is negative or longer than 20 octets",
		    where);
		out[0] = '\0';
		rc = -1;
	}
	ASN1_INTEGER_free(num);
	ERR_clear_error();
	return rc;
}

static int
crl_pend(struct rd *r, const struct ffile_scope *sc)
{
	struct ffile_scope *np;
	size_t ncap;

	if (r->npend == r->pcap) {
		ncap = r->pcap == 0 ? 4 : r->pcap * 2;
		if ((np = realloc(r->pend, ncap * sizeof(*np))) == NULL) {
			rd_err(r, "out of memory");
			return -1;
		}
		r->pend = np;
		r->pcap = ncap;
	}
	r->pend[r->npend++] = *sc;
	return 0;
}

/* Remembers a separate CRL signer, checked against the whole set later. */
static int
crl_add_dep(struct rd *r, X509 *signer, const char *where)
{
	struct input_set *s = r->s;
	struct input_dep *nd, *d;
	char kerr[256], subj[128];
	size_t ncap;

	if (s->ndeps == s->dcap) {
		ncap = s->dcap == 0 ? 4 : s->dcap * 2;
		if ((nd = realloc(s->deps, ncap * sizeof(*nd))) == NULL) {
			rd_err(r, "out of memory");
			return -1;
		}
		s->deps = nd;
		s->dcap = ncap;
	}
	d = &s->deps[s->ndeps];
	memset(d, 0, sizeof(*d));
	if (revkey_from_cert(&d->key, signer, kerr, sizeof(kerr)) != 0) {
		rd_err(r, "%sCRL signer certificate: %s", where, kerr);
		return -1;
	}
	if (crl_name_text(X509_get_subject_name(signer), subj,
	    sizeof(subj)) != 0)
		(void)snprintf(subj, sizeof(subj), "?");
	(void)snprintf(d->what, sizeof(d->what), "%s: %sCRL signer \"%s\"",
	    r->name, where, subj);
	s->ndeps++;
	return 0;
}

/* The deltaCRLIndicator's BaseCRLNumber as lowercase hex. 0 or -1. */
static int
delta_base_number(const X509_CRL *crl, char *out, size_t cap)
{
	ASN1_INTEGER *num;
	int crit = 0, rc = -1;

	num = X509_CRL_get_ext_d2i(crl, NID_delta_crl, &crit, NULL);
	if (num != NULL)
		rc = crlnum_hex(num, out, cap);
	ASN1_INTEGER_free(num);
	ERR_clear_error();
	return rc;
}

/*
 * RFC 5280 section 6.3 checks that decide whether the CRL may be used at
 * all, in the order of the cheapest refusal first; sets sc's flags and,
 * for a CRL without nextUpdate, its assumed next_update. 0, or -1 with
 * err naming the file and the reason.
 */
static int
crl_validity(struct rd *r, X509_CRL *crl, const char *where,
    struct ffile_scope *sc)
{
	const struct input_opts *o = r->o;
	char why[512], when[UTIL_RFC3339_LEN];
	X509 *signer = NULL;
	bool separate = false;
	int64_t now;
	int rc;

	if (crl_check_critical(crl, why, sizeof(why)) != 0 ||
	    crl_check_sigalg(crl, o->allow_weak_sig, why, sizeof(why)) != 0) {
		rd_err(r, "%s%s", where, why);
		return -1;
	}
	/*
	 * A delta CRL lists changes, not the revoked set: it is applied to
	 * its base after the last input (input_resolve_crls), never used
	 * alone. A CRL with an issuingDistributionPoint covers only part of
	 * its issuer's certificates: its scope records which (crl_idp_parts).
	 */
	if (X509_CRL_get_ext_by_NID(crl, NID_delta_crl, -1) >= 0) {
		if (delta_base_number(crl, r->cur_base, sizeof(r->cur_base)) != 0
		    || sc->crl_number[0] == '\0') {
			rd_err(r, "%sdelta CRL with a malformed deltaCRLIndicator "
			    "or without a CRL number", where);
			return -1;
		}
		r->cur_delta = true;
	}
	if (crl_idp_parts(crl, sc, &r->cur_indirect, why, sizeof(why)) != 0) {
		rd_err(r, "%s%s", where, why);
		return -1;
	}
	/* Whether its delta came is known only after the last input. */
	r->cur_announces = X509_CRL_get_ext_by_NID(crl, NID_freshest_crl, -1)
	    >= 0;
	rc = crl_find_signer(crl, o->issuers, o->nissuers, &signer, &separate,
	    why, sizeof(why));
	if (rc == -1) {
		rd_err(r, "%s%s", where, why);
		return -1;
	}
	if (rc == 1 && !o->unverified_ok) {
		rd_err(r, "%sno --issuer certificate for CRL issuer \"%s\": its "
		    "signature cannot be verified (--unverified-crl to use it "
		    "anyway)", where, sc->issuer);
		return -1;
	}
	if (rc == 1) {
		/* Logged even with quiet: the operator must see it. */
		log_warn("%s: %sCRL of \"%s\" used UNVERIFIED: no --issuer "
		    "certificate for it (--unverified-crl)", r->name, where,
		    sc->issuer);
		sc->flags |= FFILE_SCOPE_UNVERIFIED;
	}
	if (rc == 0 && (X509_pubkey_digest(signer, EVP_sha256(), r->cur_key,
	    NULL) != 1)) {
		ERR_clear_error();
		rd_err(r, "%scannot hash the key of the CRL's signer", where);
		return -1;
	}
	if (separate && crl_add_dep(r, signer, where) != 0)
		return -1;
	now = o->now != 0 ? o->now : util_now();
	if (sc->this_update > now && sc->this_update - now > o->clock_skew) {
		util_rfc3339(when, sc->this_update);
		rd_err(r, "%sthisUpdate %s is in the future (more than %" PRId64
		    " s of clock skew)", where, when, o->clock_skew);
		return -1;
	}
	if (X509_CRL_get0_nextUpdate(crl) == NULL) {
		if (o->crl_validity <= 0 ||
		    sc->this_update > INT64_MAX - o->crl_validity) {
			rd_err(r, "%sCRL of \"%s\" has no nextUpdate: "
			    "--crl-validity DUR says how long after its "
			    "thisUpdate to use it", where, sc->issuer);
			return -1;
		}
		sc->next_update = sc->this_update + o->crl_validity;
		sc->flags |= FFILE_SCOPE_ASSUMED_NEXT;
	}
	if (now > sc->next_update) {
		util_rfc3339(when, sc->next_update);
		if (!o->allow_expired) {
			rd_err(r, "%sCRL of \"%s\" expired at %s (nextUpdate); "
			    "--allow-expired to use it anyway", where, sc->issuer,
			    when);
			return -1;
		}
		if (!o->quiet)
			log_warn("%s: %sCRL of \"%s\" expired at %s (nextUpdate)",
			    r->name, where, sc->issuer, when);
	}
	return 0;
}

/*
 * Remembers which records one CRL added (input_resolve_crls); via is 0
 * for the CRL itself, 1 + its index for an issuer it speaks for.
 */
static int
crl_note(struct rd *r, const struct ffile_scope *sc, size_t start,
    size_t via, const char *where)
{
	struct input_set *s = r->s;
	struct input_crl *nc, *c;
	size_t ncap;

	if (s->ncrls == s->ccap) {
		ncap = s->ccap == 0 ? 4 : s->ccap * 2;
		if ((nc = realloc(s->crls, ncap * sizeof(*nc))) == NULL) {
			rd_err(r, "out of memory");
			return -1;
		}
		s->crls = nc;
		s->ccap = ncap;
	}
	c = &s->crls[s->ncrls++];
	memset(c, 0, sizeof(*c));
	c->sc = *sc;
	c->delta = r->cur_delta;
	c->announces = r->cur_announces;
	c->indirect = r->cur_indirect;
	c->via = via;
	memcpy(c->base_number, r->cur_base, sizeof(c->base_number));
	memcpy(c->signer_key, r->cur_key, sizeof(c->signer_key));
	memcpy(c->content, r->cur_content, sizeof(c->content));
	c->start = start;
	c->end = input_set_records(s);
	(void)snprintf(c->what, sizeof(c->what), "%s%s%.*s", r->name,
	    where[0] != '\0' ? " " : "", (int)(where[0] != '\0' ?
	    strlen(where) - 2 : 0), where);
	return 0;
}

#define CRL_REASON_REMOVE	8	/* removeFromCRL */

/*
 * The certificate issuers of one CRL's entries: iss[0] is the CRL's own
 * issuer; an indirect CRL adds one per other certificateIssuer.
 */
struct crl_iss {
	char		 scope[REVKEY_X509_SCOPE_LEN + 1];
	char		 text[FFILE_ISSUER_MAX + 1];
	X509_NAME	*name;		/* owned; NULL for iss[0] */
};

struct crl_entries {
	STACK_OF(X509_REVOKED) *revs;
	struct crl_iss	*iss;
	size_t		 niss;
	uint16_t	*of;		/* entry index -> issuer index */
};

static void
crl_entries_free(struct crl_entries *e)
{
	size_t i;

	for (i = 0; e->iss != NULL && i < e->niss; i++)
		X509_NAME_free(e->iss[i].name);
	free(e->iss);
	free(e->of);
}

/* True when e names the issuer scope among the CRL's other issuers. */
static bool
crl_iss_has(const struct crl_entries *e, const char *scope)
{
	size_t i;

	for (i = 1; i < e->niss; i++)
		if (strcmp(e->iss[i].scope, scope) == 0)
			return true;
	return false;
}

/* Appends issuer dn (scope) to e. 0, or -1 with err. */
static int
crl_add_issuer(struct rd *r, struct crl_entries *e, const char *scope,
    const X509_NAME *dn, const char *where)
{
	struct crl_iss *ni, *x;

	if (e->niss >= INPUT_MAX_CRL_ISSUERS) {
		rd_err(r, "%sindirect CRL naming more than %d certificate "
		    "issuers", where, INPUT_MAX_CRL_ISSUERS);
		return -1;
	}
	if ((ni = realloc(e->iss, (e->niss + 1) * sizeof(*ni))) == NULL) {
		rd_err(r, "out of memory");
		return -1;
	}
	e->iss = ni;
	x = &e->iss[e->niss];
	memset(x, 0, sizeof(*x));
	memcpy(x->scope, scope, sizeof(x->scope));
	if ((x->name = X509_NAME_dup(dn)) == NULL ||
	    crl_name_text(dn, x->text, sizeof(x->text)) != 0) {
		X509_NAME_free(x->name);
		rd_err(r, "%scannot copy a certificate issuer name", where);
		return -1;
	}
	e->niss++;
	return 0;
}

/*
 * Sets e->of[i], the issuer of each entry, reading the entries in the
 * CRL's own order, as RFC 5280 section 5.3.3 says: an entry's
 * certificateIssuer names it; an entry without one has the issuer of the
 * entry before it; the first entries before any certificateIssuer are the
 * CRL issuer's. (Nothing before this sorts the entries: OpenSSL keeps
 * their DER order until a lookup by serial sorts them.) A certificateIssuer
 * in a CRL that is not indirect, or without exactly one directoryName,
 * refuses the CRL: its entries could otherwise land in the wrong scope.
 */
static int
crl_attribute(struct rd *r, X509_CRL *crl, struct crl_entries *e, int n,
    const char *where)
{
	GENERAL_NAMES *gens;
	const GENERAL_NAME *gn;
	const X509_NAME *dn;
	char scope[REVKEY_X509_SCOPE_LEN + 1];
	size_t cur = 0, j;
	int i, g, ndn, crit;

	if ((e->iss = calloc(1, sizeof(*e->iss))) == NULL ||
	    (n > 0 && (e->of = calloc((size_t)n, sizeof(*e->of))) == NULL)) {
		rd_err(r, "out of memory");
		return -1;
	}
	e->niss = 1;
	if (revkey_x509_scope(e->iss[0].scope, X509_CRL_get_issuer(crl)) != 0) {
		rd_err(r, "%scannot encode the CRL issuer", where);
		return -1;
	}
	for (i = 0; i < n; i++) {
		crit = 0;
		gens = X509_REVOKED_get_ext_d2i(sk_X509_REVOKED_value(e->revs, i),
		    NID_certificate_issuer, &crit, NULL);
		if (gens == NULL && crit != -1) {
			ERR_clear_error();
			rd_err(r, "%sentry %d: malformed or repeated certificate "
			    "issuer extension", where, i);
			return -1;
		}
		if (gens != NULL) {
			dn = NULL;
			ndn = 0;
			for (g = 0; g < sk_GENERAL_NAME_num(gens); g++) {
				gn = sk_GENERAL_NAME_value(gens, g);
				if (gn->type == GEN_DIRNAME) {
					dn = gn->d.directoryName;
					ndn++;
				}
			}
			if (!r->cur_indirect || ndn != 1 ||
			    revkey_x509_scope(scope, dn) != 0) {
				rd_err(r, "%sentry %d: %s", where, i,
				    !r->cur_indirect ? "certificate issuer "
				    "entry extension in a CRL that is not "
				    "indirect (RFC 5280 section 5.3.3)" :
				    ndn != 1 ? "certificate issuer with no or "
				    "several directory names: whose entry it is "
				    "is not clear" : "cannot encode the "
				    "certificate issuer");
				GENERAL_NAMES_free(gens);
				return -1;
			}
			for (j = 0; j < e->niss; j++)
				if (strcmp(e->iss[j].scope, scope) == 0)
					break;
			if (j == e->niss && crl_add_issuer(r, e, scope, dn,
			    where) != 0) {
				GENERAL_NAMES_free(gens);
				return -1;
			}
			cur = j;
			GENERAL_NAMES_free(gens);
		}
		e->of[i] = (uint16_t)cur;
	}
	return 0;
}

/* qsort_r order of entry indexes: issuer, serial, date, then position. */
static int
entry_cmp(const void *a, const void *b, void *arg)
{
	const struct crl_entries *e = arg;
	int x = *(const int *)a, y = *(const int *)b, c;
	const X509_REVOKED *ex = sk_X509_REVOKED_value(e->revs, x),
	    *ey = sk_X509_REVOKED_value(e->revs, y);

	c = (e->of[x] > e->of[y]) - (e->of[x] < e->of[y]);
	if (c == 0)
		c = ASN1_INTEGER_cmp(X509_REVOKED_get0_serialNumber(ex),
		    X509_REVOKED_get0_serialNumber(ey));
	if (c == 0)
		c = ASN1_TIME_compare(X509_REVOKED_get0_revocationDate(ex),
		    X509_REVOKED_get0_revocationDate(ey));
	if (c == 0 || c == -2)
		c = (x > y) - (x < y);
	return c;
}

/* The n entries' indexes sorted by entry_cmp, malloc'ed; NULL if no memory. */
static int *
entry_order(struct crl_entries *e, int n)
{
	int *ord = malloc((size_t)n * sizeof(*ord)), i;

	if (ord == NULL)
		return NULL;
	for (i = 0; i < n; i++)
		ord[i] = i;
	qsort_r(ord, (size_t)n, sizeof(*ord), entry_cmp, e);
	return ord;
}

/*
 * The scope metadata of an issuer x an indirect CRL (sc) speaks for:
 * that issuer's name, the CRL's times, number and hash, flagged
 * attributed (no CRL of its own), with the CRL's parts without a
 * distribution point name as delegated parts when delegated.
 */
static void
crl_via_scope(const struct ffile_scope *sc, const char *scope,
    const char *text, bool delegated, struct ffile_scope *out)
{
	unsigned i;

	memcpy(out, sc, sizeof(*out));
	(void)snprintf(out->name, sizeof(out->name), "%s", scope);
	(void)snprintf(out->issuer, sizeof(out->issuer), "%s", text);
	out->flags = (uint8_t)((sc->flags & (FFILE_SCOPE_UNVERIFIED |
	    FFILE_SCOPE_ASSUMED_NEXT)) | FFILE_SCOPE_ATTRIBUTED);
	out->npart = 0;
	for (i = 0; delegated && i < sc->npart; i++) {
		if (crl_part_named(&sc->part[i]))
			continue;
		out->part[out->npart] = sc->part[i];
		out->part[out->npart].flags = FFILE_PART_DELEGATED;
		out->npart++;
	}
}

/* The --delegate statement for issuer scope x and this CRL, or NULL. */
static const struct input_delegation *
crl_delegation(const struct rd *r, const char *x, const char *crl_issuer)
{
	size_t i;

	for (i = 0; i < r->o->ndelegations; i++)
		if (strcmp(r->o->delegations[i].ca_scope, x) == 0 &&
		    strcmp(r->o->delegations[i].crl_issuer_scope,
		    crl_issuer) == 0)
			return &r->o->delegations[i];
	return NULL;
}

/*
 * After an indirect CRL's records: its own pending metadata and note, then
 * one for each issuer it speaks for: those its entries named, and those
 * a --delegate names with it. 0, or -1 with err.
 */
static int
crl_note_all(struct rd *r, const struct ffile_scope *sc,
    const struct crl_entries *e, size_t start, const char *where)
{
	const struct input_delegation *dg;
	struct ffile_scope *xs;
	size_t main = r->s->ncrls, i;
	int rc = -1;

	if (crl_pend(r, sc) != 0 || crl_note(r, sc, start, 0, where) != 0)
		return -1;
	if (!r->cur_indirect)
		return 0;
	if ((xs = malloc(sizeof(*xs))) == NULL) {
		rd_err(r, "out of memory");
		return -1;
	}
	for (i = 1; i < e->niss; i++) {
		dg = crl_delegation(r, e->iss[i].scope, sc->name);
		crl_via_scope(sc, e->iss[i].scope, e->iss[i].text, dg != NULL,
		    xs);
		if (crl_pend(r, xs) != 0 ||
		    crl_note(r, xs, start, main + 1, where) != 0)
			goto out;
	}
	for (i = 0; i < r->o->ndelegations; i++) {
		dg = &r->o->delegations[i];
		if (strcmp(dg->crl_issuer_scope, sc->name) != 0 ||
		    strcmp(dg->ca_scope, sc->name) == 0)
			continue;
		if (crl_iss_has(e, dg->ca_scope))
			continue;	/* done above */
		if (set_scope(r, dg->ca_scope) != 0)
			goto out;
		crl_via_scope(sc, dg->ca_scope, dg->ca_issuer, true, xs);
		if (crl_pend(r, xs) != 0 ||
		    crl_note(r, xs, start, main + 1, where) != 0)
			goto out;
	}
	rc = 0;
out:
	free(xs);
	return rc;
}

/* Adds one parsed CRL: checks, scope, records, pending metadata. */
static int
crl_add(struct rd *r, X509_CRL *crl, const unsigned char *der, size_t derlen,
    const char *where)
{
	struct crl_entries e;
	const X509_REVOKED *ent;
	ASN1_ENUMERATED *re;
	struct ffile_scope sc;
	struct revkey k;
	char kerr[256], rbuf[24];
	const char *reason;
	int64_t at;
	long code;
	int i, j, n, crit, rc = -1, *ord = NULL;
	size_t start, t;

	memset(&sc, 0, sizeof(sc));
	memset(&e, 0, sizeof(e));
	sc.source = FFILE_SRC_CRL;
	r->cur_delta = r->cur_announces = r->cur_indirect = false;
	r->cur_base[0] = '\0';
	memset(r->cur_key, 0, sizeof(r->cur_key));
	if (revkey_x509_scope(sc.name, X509_CRL_get_issuer(crl)) != 0 ||
	    crl_name_text(X509_CRL_get_issuer(crl), sc.issuer,
	    sizeof(sc.issuer)) != 0) {
		rd_err(r, "%scannot encode the CRL issuer", where);
		return -1;
	}
	if (asn1_time_epoch(X509_CRL_get0_lastUpdate(crl), &sc.this_update)
	    != 0) {
		rd_err(r, "%sinvalid thisUpdate", where);
		return -1;
	}
	if (X509_CRL_get0_nextUpdate(crl) != NULL &&
	    asn1_time_epoch(X509_CRL_get0_nextUpdate(crl), &sc.next_update)
	    != 0) {
		rd_err(r, "%sinvalid nextUpdate", where);
		return -1;
	}
	if (util_sha256(sc.crl_sha256, der, derlen) != 0 ||
	    crl_content_digest(der, derlen, r->cur_content) != 0) {
		rd_err(r, "%sSHA-256 failed", where);
		return -1;
	}
	if (crl_number_hex(r, crl, where, sc.crl_number,
	    sizeof(sc.crl_number)) != 0)
		return -1;
	if (crl_validity(r, crl, where, &sc) != 0)
		return -1;
	e.revs = X509_CRL_get_REVOKED(crl);
	n = e.revs != NULL ? sk_X509_REVOKED_num(e.revs) : 0;
	if (crl_attribute(r, crl, &e, n, where) != 0)
		goto out;
	for (t = 0; t < e.niss; t++)
		if (set_scope(r, e.iss[t].scope) != 0)
			goto out;
	start = input_set_records(r->s);

	if (n > 0 && (ord = entry_order(&e, n)) == NULL) {
		rd_err(r, "out of memory");
		goto out;
	}
	for (j = 0; j < n; j++) {
		i = ord[j];
		ent = sk_X509_REVOKED_value(e.revs, i);
		/*
		 * A serial listed several times for one issuer: the entry in
		 * effect is the one with the latest revocation date (a hold
		 * later made a revocation), the last listed among equal
		 * dates. It alone gives the date and the reason; the others
		 * are skipped.
		 */
		if (j + 1 < n && e.of[i] == e.of[ord[j + 1]] && ASN1_INTEGER_cmp(
		    X509_REVOKED_get0_serialNumber(ent),
		    X509_REVOKED_get0_serialNumber(sk_X509_REVOKED_value(e.revs,
		    ord[j + 1]))) == 0)
			continue;
		if ((e.of[i] == 0 ? revkey_from_crl_entry(&k, crl, ent, kerr,
		    sizeof(kerr)) : revkey_from_issuer_serial(&k,
		    e.iss[e.of[i]].name, X509_REVOKED_get0_serialNumber(ent),
		    kerr, sizeof(kerr))) != 0) {
			rd_err(r, "%sentry %d: %s", where, i, kerr);
			goto out;
		}
		if (asn1_time_epoch(X509_REVOKED_get0_revocationDate(ent), &at)
		    != 0) {
			rd_err(r, "%sentry %d: invalid revocation date", where,
			    i);
			goto out;
		}
		reason = NULL;
		code = -1;
		crit = 0;
		re = X509_REVOKED_get_ext_d2i(ent, NID_crl_reason, &crit, NULL);
		if (re == NULL && crit != -1) {
			ERR_clear_error();
			rd_err(r, "%sentry %d: malformed or repeated reason code",
			    where, i);
			goto out;
		}
		if (re != NULL) {
			code = ASN1_ENUMERATED_get(re);
			ASN1_ENUMERATED_free(re);
			if (code >= 0 && (size_t)code < sizeof(crl_reasons) /
			    sizeof(crl_reasons[0]) && crl_reasons[code] != NULL) {
				reason = crl_reasons[code];
			} else {
				/* Unknown codes are kept, not dropped. */
				snprintf(rbuf, sizeof(rbuf), "reason%ld", code);
				reason = rbuf;
			}
		}
		if (code == CRL_REASON_REMOVE && !r->cur_delta) {
			/*
			 * removeFromCRL only means something in a delta CRL;
			 * in a complete CRL it says the certificate is not
			 * revoked, and counting it as revoked is no answer.
			 */
			rd_err(r, "%sentry %d: removeFromCRL in a CRL that is not "
			    "a delta CRL (RFC 5280 section 5.3.1)", where, i);
			goto out;
		}
		if (rd_add(r, &k, at, reason) != 0)
			goto out;
	}
	rc = crl_note_all(r, &sc, &e, start, where);
out:
	free(ord);
	crl_entries_free(&e);
	return rc;
}

/* One DER CRL, from a file or a PEM block. */
static int
crl_der(struct rd *r, const unsigned char *der, size_t len, const char *where)
{
	const unsigned char *p = der;
	char why[160];
	X509_CRL *crl;
	size_t bad = 0;
	int rc;

	if (len > LONG_MAX) {
		rd_err(r, "%sCRL too large", where);
		return -1;
	}
	if (der_check(der, len, &bad) != 0) {
		rd_err(r, "%struncated or malformed DER at offset %zu", where,
		    bad);
		return -1;
	}
	crl = d2i_X509_CRL(NULL, &p, (long)len);
	if (crl == NULL) {
		rd_err(r, "%snot a valid X.509 CRL (%s)", where,
		    ossl_reason(why, sizeof(why)));
		return -1;
	}
	if (p != der + len) {
		rd_err(r, "%strailing bytes after the CRL at offset %zu", where,
		    (size_t)(p - der));
		X509_CRL_free(crl);
		return -1;
	}
	rc = crl_add(r, crl, der, len, where);
	X509_CRL_free(crl);
	ERR_clear_error();
	return rc;
}

/*
 * The text around a file's PEM blocks, which PEM_read_bio() skips: only
 * blank lines and what `openssl crl -text` writes (its three headers and
 * indented lines) may be there. Anything else is refused, not skipped: a
 * token list with a CRL pasted after it would lose its ids unseen.
 */
static int
pem_text_ok(struct rd *r, const char *buf, size_t len)
{
	static const char *const hdr[] = { "Certificate Revocation List (CRL):",
	    "Revoked Certificates:", "No Revoked Certificates." };
	const char *p = buf, *end = buf + len, *nl;
	size_t line = 0, n, i;
	bool in = false;

	for (; p < end; p = nl + 1) {
		line++;
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end;
		n = (size_t)(nl - p);
		if (n > 0 && p[n - 1] == '\r')
			n--;
		if (!in && n >= 11 && memcmp(p, "-----BEGIN ", 11) == 0) {
			in = true;
			continue;
		}
		if (in) {
			in = !(n >= 9 && memcmp(p, "-----END ", 9) == 0);
			continue;
		}
		if (n == 0 || p[0] == ' ' || p[0] == '\t')
			continue;
		for (i = 0; i < sizeof(hdr) / sizeof(hdr[0]); i++)
			if (n == strlen(hdr[i]) && memcmp(p, hdr[i], n) == 0)
				break;
		if (i < sizeof(hdr) / sizeof(hdr[0]))
			continue;
		rd_err_line(r, line, "text outside the PEM blocks of a CRL "
		    "file (only `openssl crl -text` output may be there): a "
		    "file is either a list or CRLs; put each in a file of "
		    "its own");
		return -1;
	}
	return 0;
}

static int
read_crl_pem(struct rd *r, const char *buf, size_t len)
{
	char *name = NULL, *header = NULL, where[48], why[160];
	unsigned char *data = NULL;
	long dlen = 0;
	size_t nblk = 0;
	unsigned long e;
	BIO *bio;
	int rc = -1;

	if (len > INT_MAX) {
		rd_err(r, "PEM file over %d bytes", INT_MAX);
		return -1;
	}
	if (pem_text_ok(r, buf, len) != 0)
		return -1;
	if ((bio = BIO_new_mem_buf(buf, (int)len)) == NULL) {
		rd_err(r, "out of memory");
		return -1;
	}
	ERR_clear_error();
	for (;;) {
		if (PEM_read_bio(bio, &name, &header, &data, &dlen) != 1) {
			e = ERR_peek_last_error();
			if (nblk > 0 && ERR_GET_LIB(e) == ERR_LIB_PEM &&
			    ERR_GET_REASON(e) == PEM_R_NO_START_LINE) {
				ERR_clear_error();
				break;
			}
			rd_err(r, "PEM block %zu: %s", nblk + 1,
			    ossl_reason(why, sizeof(why)));
			goto out;
		}
		nblk++;
		snprintf(where, sizeof(where), "PEM block %zu: ", nblk);
		if (strcmp(name, PEM_STRING_X509_CRL) != 0) {
			rd_err(r, "%s\"%.40s\" where an X509 CRL was expected",
			    where, name);
			goto out;
		}
		if (nblk > INPUT_MAX_CRLS) {
			rd_err(r, "more than %d CRLs in one file",
			    INPUT_MAX_CRLS);
			goto out;
		}
		if (dlen <= 0 || crl_der(r, data, (size_t)dlen, where) != 0) {
			if (dlen <= 0)
				rd_err(r, "%sempty", where);
			goto out;
		}
		OPENSSL_free(name);
		OPENSSL_free(header);
		OPENSSL_free(data);
		name = header = NULL;
		data = NULL;
	}
	rc = 0;
out:
	OPENSSL_free(name);
	OPENSSL_free(header);
	OPENSSL_free(data);
	BIO_free(bio);
	return rc;
}

/* ---- dispatch ------------------------------------------------------------ */

static bool
looks_pem_crl(const char *buf, size_t len)
{
	static const char tag[] = "-----BEGIN X509 CRL-----";

	return memmem(buf, len, tag, sizeof(tag) - 1) != NULL;
}

/*
 * DER when the file starts with a SEQUENCE in long length form whose
 * content starts with another SEQUENCE (TBSCertList). A text list that
 * starts with '0' (0x30) does not pass: in text, '0' is followed by ASCII
 * (below 0x80) or, in UTF-8, by a lead byte that is no DER length form.
 */
static bool
looks_der(const unsigned char *b, size_t len)
{
	size_t hdr;
	uint64_t clen;

	if (len < 4 || b[0] != 0x30 || der_header(b, 0, len, &hdr, &clen) != 0)
		return false;
	(void)clen;	/* a truncated CRL is still sniffed as DER */
	return hdr < len && b[hdr] == 0x30 && b[1] >= 0x80;
}

/* The value of a standard base64 character (RFC 4648 section 4), or -1. */
static int
b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/*
 * What an unarmoured base64 file holds: "CRL" or "certificate" when
 * buf[0..len) is, whitespace aside, standard base64 (padding only at the
 * end) that decodes to exactly one DER SEQUENCE in long length form
 * holding a SEQUENCE: a TBSCertList starts with its version (INTEGER) or
 * signature algorithm (SEQUENCE), a TBSCertificate with [0] (its
 * version). Only the first bytes are decoded; *derlen is the length the
 * whole text decodes to. NULL for anything else (a list of ids has
 * characters outside base64, or does not decode to DER of its length).
 */
static const char *
base64_der_kind(const unsigned char *buf, size_t len, size_t *derlen)
{
	unsigned char head[24];
	size_t i, nchars = 0, npad = 0, nh = 0, hdr, ihdr, total;
	uint64_t clen, iclen;
	uint32_t acc = 0;
	unsigned bits = 0;
	int v;

	for (i = 0; i < len; i++) {
		if (is_space(buf[i]))
			continue;
		if (buf[i] == '=') {
			npad++;
			continue;
		}
		if (npad > 0 || (v = b64_value(buf[i])) < 0)
			return NULL;
		nchars++;
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (nh < sizeof(head))
				head[nh++] = (unsigned char)(acc >> bits);
		}
	}
	if (nchars < 64 || npad > 2 || nchars % 4 == 1 ||
	    (npad > 0 && (nchars + npad) % 4 != 0))
		return NULL;
	total = nchars / 4 * 3 + (nchars % 4 == 0 ? 0 : nchars % 4 - 1);
	if (nh < sizeof(head) || head[0] != 0x30 || head[1] < 0x81 ||
	    der_header(head, 0, nh, &hdr, &clen) != 0 || hdr > total ||
	    clen != total - hdr || head[hdr] != 0x30 ||
	    der_header(head, hdr, nh, &ihdr, &iclen) != 0 ||
	    hdr + ihdr >= nh)
		return NULL;
	*derlen = total;
	switch (head[hdr + ihdr]) {
	case 0xa0:
		return "certificate";
	case 0x02:
	case 0x30:
		return "CRL";
	default:
		return NULL;
	}
}

/*
 * Refuses buf when it is a CRL or certificate in base64 without its PEM
 * lines (base64_der_kind), saying so and how to fix it: read as a list,
 * the whole text would be one id, refused only for its length. 0 when it
 * is not.
 */
static int
refuse_bare_base64(struct rd *r, const unsigned char *buf, size_t len)
{
	const char *kind;
	size_t derlen;

	if ((kind = base64_der_kind(buf, len, &derlen)) == NULL)
		return 0;
	if (strcmp(kind, "CRL") == 0)
		rd_err(r, "looks like a base64 CRL without PEM armour (%zu "
		    "bytes of DER): wrap it in \"-----BEGIN X509 CRL-----\" "
		    "and \"-----END X509 CRL-----\" lines, or convert it: "
		    "base64 -d FILE | openssl crl -inform DER -out FILE.pem",
		    derlen);
	else
		rd_err(r, "looks like a base64 certificate without PEM armour "
		    "(%zu bytes of DER), not a CRL or a list of ids: a CA "
		    "certificate goes to --issuer, wrapped in \"-----BEGIN "
		    "CERTIFICATE-----\" and \"-----END CERTIFICATE-----\" "
		    "lines (or: base64 -d FILE | openssl x509 -inform DER "
		    "-out FILE.pem)", derlen);
	return -1;
}

static enum input_format
sniff(const unsigned char *buf, size_t len)
{
	size_t i = 0;

	if (looks_der(buf, len))
		return INPUT_CRL;
	while (i < len && is_space(buf[i]))
		i++;
	/* A UTF-8 byte order mark before JSON is tolerated. */
	if (i + 3 <= len && memcmp(buf + i, UTF8_BOM, 3) == 0)
		i += 3;
	while (i < len && is_space(buf[i]))
		i++;
	/* '{' too, so that a JSON object gets a JSON error, not a list. */
	if (i < len && (buf[i] == '[' || buf[i] == '{'))
		return INPUT_JSON;
	if (looks_pem_crl((const char *)buf, len))
		return INPUT_CRL;
	return INPUT_TEXT;
}

static int
commit_pending(struct rd *r)
{
	struct ffile_scope *sc;
	uint64_t keys;
	uint8_t flags;
	size_t i, j;

	for (i = 0; i < r->npend; i++) {
		j = set_find_scope(r, r->pend[i].name);
		assert(j != SIZE_MAX);
		sc = &r->s->scopes[j];
		/*
		 * Of several CRLs of one issuer, the newest describes it;
		 * an unverified one among them marks the scope. An issuer's
		 * own CRL always describes it before an indirect CRL of
		 * another issuer that only attributed entries to it
		 * (input_resolve_crls settles the rest).
		 */
		if (sc->source != FFILE_SRC_CRL ||
		    ((sc->flags & FFILE_SCOPE_ATTRIBUTED) != 0 &&
		    (r->pend[i].flags & FFILE_SCOPE_ATTRIBUTED) == 0) ||
		    (((sc->flags ^ r->pend[i].flags) &
		    FFILE_SCOPE_ATTRIBUTED) == 0 &&
		    r->pend[i].this_update > sc->this_update)) {
			keys = sc->keys;
			flags = sc->source == FFILE_SRC_CRL ? sc->flags : 0;
			*sc = r->pend[i];
			sc->keys = keys;
			sc->flags |= flags & FFILE_SCOPE_UNVERIFIED;
		} else
			sc->flags |= r->pend[i].flags & FFILE_SCOPE_UNVERIFIED;
	}
	return 0;
}

/* Starts one read of s. This function can't fail. */
static void
rd_begin(struct rd *r, struct input_set *s, const char *name,
    const struct input_opts *o, char *err, size_t errlen)
{
	memset(r, 0, sizeof(*r));
	r->s = s;
	r->o = o;
	r->name = name;
	r->err = err;
	r->errlen = errlen;
	r->last_scope = SIZE_MAX;
	r->ndeps0 = s->ndeps;
	r->ncrls0 = s->ncrls;
	/* Without a random seed the index still works, just not hardened. */
	if (RAND_bytes((unsigned char *)&r->sidx_seed,
	    sizeof(r->sidx_seed)) != 1)
		r->sidx_seed = (uint64_t)(uintptr_t)r ^ (uint64_t)time(NULL);
	sidx_build(r, s->nscopes);
}

/*
 * Ends a read: on failure (rc != 0) s goes back to nrecs0 records and
 * nscopes0 scopes. Frees r's own memory and returns rc.
 */
static int
rd_end(struct rd *r, int rc, size_t nrecs0, size_t nscopes0)
{
	if (rc != 0) {
		table_builder_truncate(&r->s->builder, nrecs0);
		r->s->nscopes = nscopes0;
		r->s->ndeps = r->ndeps0;
		r->s->ncrls = r->ncrls0;
	} else if (r->o->progress != NULL) {
		r->o->progress(r->o->progress_arg, input_set_records(r->s));
	}
	free(r->sidx);
	free(r->pend);
	return rc;
}

/* Parses buf[0..len), which must be followed by a NUL byte. */
static int
read_buf(struct input_set *s, const char *name, const unsigned char *buf,
    size_t len, const struct input_opts *o, char *err, size_t errlen)
{
	struct rd r;
	size_t nrecs0 = input_set_records(s), nscopes0 = s->nscopes;
	enum input_format fmt;
	int rc = -1;

	rd_begin(&r, s, name, o, err, errlen);
	fmt = o->format == INPUT_AUTO ? sniff(buf, len) : o->format;
	if (refuse_bare_base64(&r, buf, len) != 0)
		return rd_end(&r, -1, nrecs0, nscopes0);
	switch (fmt) {
	case INPUT_TEXT:
		rc = read_text(&r, (const char *)buf, len);
		break;
	case INPUT_JSON:
		rc = read_json(&r, (const char *)buf, len);
		break;
	case INPUT_CRL:
		if (len == 0)
			rd_err(&r, "empty file, not a CRL");
		else if (looks_pem_crl((const char *)buf, len))
			rc = read_crl_pem(&r, (const char *)buf, len);
		else if (memmem(buf, len, "-----BEGIN", 10) != NULL)
			rd_err(&r, "PEM file without an X509 CRL block");
		else
			rc = crl_der(&r, buf, len, "");
		break;
	default:
		rd_err(&r, "unknown input format %d", (int)fmt);
		break;
	}
	if (rc == 0)
		rc = commit_pending(&r);
	return rd_end(&r, rc, nrecs0, nscopes0);
}

int
input_read(struct input_set *s, const char *path,
    const struct input_opts *o, char *err, size_t errlen)
{
	unsigned char *buf = NULL;
	size_t len = 0;
	int rc;

	assert(s != NULL && path != NULL && o != NULL);
	if (util_read_file(path, (size_t)INPUT_MAX_FILE, &buf, &len, err,
	    errlen) != 0)
		return -1;
	rc = read_buf(s, strcmp(path, "-") == 0 ? "<stdin>" : path, buf, len,
	    o, err, errlen);
	free(buf);
	return rc;
}

int
input_read_buf(struct input_set *s, const char *name, const void *buf,
    size_t len, const struct input_opts *o, char *err, size_t errlen)
{
	unsigned char *copy;
	int rc;

	assert(s != NULL && name != NULL && o != NULL &&
	    (buf != NULL || len == 0));
	if (len > INPUT_MAX_FILE || len == SIZE_MAX) {
		snprintf(err, errlen, "%s: input over the limit of %llu bytes",
		    name, (unsigned long long)INPUT_MAX_FILE);
		return -1;
	}
	/* The parsers want a NUL after the bytes. */
	if ((copy = malloc(len + 1)) == NULL) {
		snprintf(err, errlen, "%s: out of memory", name);
		return -1;
	}
	if (len > 0)
		memcpy(copy, buf, len);
	copy[len] = '\0';
	rc = read_buf(s, name, copy, len, o, err, errlen);
	free(copy);
	return rc;
}

int
input_row_rec(const struct input_row *row, const char *default_scope,
    struct table_rec *out, char *err, size_t errlen)
{
	const char *scope = row->scope != NULL ? row->scope :
	    default_scope != NULL ? default_scope : REVKEY_DEFAULT_SCOPE;
	const char *why;
	char kerr[256];
	size_t col;

	memset(out, 0, sizeof(*out));
	if (!revkey_scope_valid(scope, strnlen(scope, REVKEY_SCOPE_MAX + 1))) {
		snprintf(err, errlen, "invalid scope (1-%d printable "
		    "characters without spaces, or x509: and 64 lowercase hex "
		    "digits)", REVKEY_SCOPE_MAX);
		return -1;
	}
	if (row->reason != NULL && !reason_valid(row->reason)) {
		snprintf(err, errlen, "reason is not at most %d printable "
		    "ASCII characters", TABLE_REASON_MAX - 1);
		return -1;
	}
	if (row->revoked_at < 0) {
		snprintf(err, errlen, "revoked_at is before 1970");
		return -1;
	}
	if (!row->any_bytes &&
	    (why = id_refused(row->id, row->id_len, false, &col)) != NULL) {
		snprintf(err, errlen, "id column %zu: %s", col, why);
		return -1;
	}
	if (revkey_from_text(&out->key, scope, row->id, row->id_len, kerr,
	    sizeof(kerr)) != 0) {
		snprintf(err, errlen, "%s", kerr);
		return -1;
	}
	out->revoked_at = row->revoked_at;
	if (row->reason != NULL)
		memcpy(out->reason, row->reason, strlen(row->reason) + 1);
	return 0;
}

/* One row of a source into the set. 0, or -1 with the error set. */
static int
row_add(struct rd *r, const struct input_row *row, uint64_t idx)
{
	struct table_rec rec;
	char e[512];

	if (input_row_rec(row, opts_scope(r->o), &rec, e, sizeof(e)) != 0) {
		rd_err(r, "row %" PRIu64 ": %s", idx, e);
		return -1;
	}
	if (set_scope(r, rec.key.scope) != 0)
		return -1;
	return rd_add(r, &rec.key, rec.revoked_at, rec.reason);
}

int
input_read_rows(struct input_set *s, const char *name, input_next_fn next,
    void *arg, const struct input_opts *o, char *err, size_t errlen)
{
	struct input_row row;
	struct rd r;
	size_t nrecs0, nscopes0;
	uint64_t idx = 0;
	int rc = -1, got;

	assert(s != NULL && name != NULL && next != NULL && o != NULL);
	nrecs0 = input_set_records(s);
	nscopes0 = s->nscopes;
	rd_begin(&r, s, name, o, err, errlen);
	for (;;) {
		memset(&row, 0, sizeof(row));
		got = next(arg, &row, err, errlen);
		if (got < 0)
			goto out;
		if (got == 0)
			break;
		idx++;
		if (row_add(&r, &row, idx) != 0)
			goto out;
	}
	if (idx == 0 && (set_scope(&r, opts_scope(o)) != 0 ||
	    rd_refuse_empty(&r, opts_scope(o)) != 0))
		goto out;
	rc = 0;
out:
	return rd_end(&r, rc, nrecs0, nscopes0);
}

/* qsort_r comparator: scope indices by name. */
static int
scope_idx_cmp(const void *a, const void *b, void *arg)
{
	const struct ffile_scope *sc = arg;

	return strcmp(sc[*(const size_t *)a].name, sc[*(const size_t *)b].name);
}

/*
 * The positions of s's scopes sorted by name, for count_find(); NULL when
 * there are none or memory runs out (count_find() then scans).
 */
static size_t *
scope_index(const struct input_set *s)
{
	size_t *ord, j;

	if (s->nscopes == 0 ||
	    (ord = malloc(s->nscopes * sizeof(*ord))) == NULL)
		return NULL;
	for (j = 0; j < s->nscopes; j++)
		ord[j] = j;
	qsort_r(ord, s->nscopes, sizeof(*ord), scope_idx_cmp, s->scopes);
	return ord;
}

/* strcmp of a NUL-terminated name with counted bytes. */
static int
name_cmp(const char *name, const char *b, size_t blen)
{
	size_t alen = strlen(name);
	int c = memcmp(name, b, alen < blen ? alen : blen);

	if (c != 0)
		return c;
	return (alen > blen) - (alen < blen);
}

/* The scope named (name, len), through the sorted index when there is one. */
static size_t
count_find(const struct input_set *s, const size_t *ord, const char *name,
    size_t len)
{
	size_t lo = 0, hi = s->nscopes, mid, i;
	int c;

	if (ord == NULL) {
		for (i = 0; i < s->nscopes; i++)
			if (name_cmp(s->scopes[i].name, name, len) == 0)
				return i;
		return SIZE_MAX;
	}
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		c = name_cmp(s->scopes[ord[mid]].name, name, len);
		if (c == 0)
			return ord[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return SIZE_MAX;
}

void
input_count_scopes(struct input_set *s)
{
	size_t i = 0, j, n, run, sidx, len, *ord;
	const char *name;

	for (j = 0; j < s->nscopes; j++)
		s->scopes[j].keys = 0;
	/* Without memory for the index, a linear search still works. */
	ord = scope_index(s);
	/* Sorted records keep each scope's records together. */
	n = input_set_records(s);
	while (i < n) {
		run = table_builder_scope_end(&s->builder, i);
		name = table_builder_scope(&s->builder, i, &len);
		sidx = count_find(s, ord, name, len);
		if (sidx != SIZE_MAX)
			s->scopes[sidx].keys += run - i;
		i = run;
	}
	free(ord);
}

/*
 * Two coverage parts for the same certificates from the same CRL issuer
 * (whatever CRL number or thisUpdate each names).
 */
static bool
part_same(const struct ffile_part *a, const struct ffile_part *b)
{
	return a->kind == b->kind && a->reasons == b->reasons &&
	    a->flags == b->flags && memcmp(a->dp, b->dp, 32) == 0 &&
	    memcmp(a->crl_issuer, b->crl_issuer, 32) == 0;
}

/*
 * Orders two CRL numbers (lowercase hex without leading zeros, "" when
 * absent): <0, 0, >0. An absent number sorts first.
 */
static int
crlnum_cmp(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	if (la != lb)
		return la < lb ? -1 : 1;
	return strcmp(a, b);
}

/*
 * <0 when the CRL with number na and thisUpdate ta is older than the one
 * with nb and tb, >0 newer, 0 when they cannot be ordered.
 */
static int
crl_age_cmp2(const char *na, int64_t ta, const char *nb, int64_t tb)
{
	int c = 0;

	if (na[0] != '\0' && nb[0] != '\0')
		c = crlnum_cmp(na, nb);
	if (c == 0)
		c = (ta > tb) - (ta < tb);
	return c;
}

/* crl_age_cmp2 of two scopes' CRLs. */
static int
crl_age_cmp(const struct ffile_scope *a, const struct ffile_scope *b)
{
	return crl_age_cmp2(a->crl_number, a->this_update, b->crl_number,
	    b->this_update);
}

/*
 * One CRL a scope's description names, with what it covers: the scope's
 * own CRL when it is covered whole (a part of any kind, every reason, no
 * name, from the issuer the scope is named after), else one coverage
 * part.
 */
struct crl_cover {
	const struct ffile_part *part;	/* NULL: the whole scope */
	struct ffile_part whole;	/* coverage of the whole scope */
	const char	*number;
	int64_t		 this_update;
};

/*
 * The CRLs sc's description names into c[FFILE_PART_MAX]: its count.
 * A scope flagged attributed without parts names none (it covers nothing
 * of its own).
 */
static unsigned
scope_covers(const struct ffile_scope *sc, struct crl_cover *c)
{
	const char *hex = sc->name + sizeof(REVKEY_X509_PREFIX) - 1;
	unsigned i;

	if (sc->npart == 0) {
		if ((sc->flags & FFILE_SCOPE_ATTRIBUTED) != 0)
			return 0;
		memset(&c[0], 0, sizeof(c[0]));
		c[0].whole.kind = FFILE_PART_ANY;
		c[0].whole.reasons = FFILE_REASONS_ALL;
		/* Not an X.509 scope name: its CRL meets no part's issuer. */
		if (!revkey_scope_is_x509(sc->name) || util_unhex(
		    c[0].whole.crl_issuer, 32, hex, strlen(hex), false) != 32)
			memset(c[0].whole.crl_issuer, 0xff, 32);
		c[0].number = sc->crl_number;
		c[0].this_update = sc->this_update;
		return 1;
	}
	for (i = 0; i < sc->npart && i < FFILE_PART_MAX; i++) {
		c[i].part = &sc->part[i];
		c[i].whole = sc->part[i];
		c[i].number = sc->part[i].crl_number;
		c[i].this_update = sc->part[i].this_update;
	}
	return i;
}

/*
 * True when some certificate is covered by both a and b for some reason:
 * CRLs of one issuer whose kinds, reasons and distribution points meet
 * (a part without a name covers every certificate of its kind).
 */
static bool
cover_overlaps(const struct ffile_part *a, const struct ffile_part *b)
{
	if (memcmp(a->crl_issuer, b->crl_issuer, 32) != 0)
		return false;
	if (a->kind != FFILE_PART_ANY && b->kind != FFILE_PART_ANY &&
	    a->kind != b->kind)
		return false;
	if ((a->reasons & b->reasons) == 0)
		return false;
	return !crl_part_named(a) || !crl_part_named(b) ||
	    memcmp(a->dp, b->dp, 32) == 0;
}

/* What a CRL of the scope covers, as text for a message. */
static void
cover_text(const struct crl_cover *c, unsigned i, char *out, size_t cap)
{
	const struct ffile_part *p = c->part;

	if (p == NULL) {
		(void)snprintf(out, cap, "the whole scope");
		return;
	}
	(void)snprintf(out, cap, "coverage part %u (%s certificates%s%s)", i,
	    crl_part_kind_name(p->kind), crl_part_named(p) ?
	    ", one distribution point" : "", p->reasons != FFILE_REASONS_ALL ?
	    ", some reasons" : "");
}

/*
 * A CRL older than one prev used for the same certificates: writes the
 * finding into msg and returns true. Every CRL now describing the scope
 * is compared with every CRL of the same issuer that prev used for it
 * wherever their coverage overlaps, so a change of coverage (a full CRL
 * replaced by partitions, or the other way round) is no way around the
 * check. For the same coverage the CRL number orders them (RFC 5280
 * section 5.2.3: monotonic per CRL scope); for another coverage the
 * numbers may count another sequence, so only an earlier thisUpdate
 * shows it older (crl_age_cmp2 with the numbers left out).
 */
static bool
scope_rolled_back(const struct ffile_scope *now, const struct ffile_scope *old,
    uint64_t version, char *msg, size_t msglen)
{
	struct crl_cover nc[FFILE_PART_MAX], oc[FFILE_PART_MAX];
	char hex[65], ntext[96], otext[96];
	unsigned i, j, nn, no;
	bool same = false;
	int n;

	if (now->source != FFILE_SRC_CRL || old->source != FFILE_SRC_CRL)
		return false;
	nn = scope_covers(now, nc);
	no = scope_covers(old, oc);
	for (i = 0; i < no; i++) {
		for (j = 0; j < nn; j++) {
			if (!cover_overlaps(&nc[j].whole, &oc[i].whole))
				continue;
			same = (nc[j].part == NULL && oc[i].part == NULL) ||
			    (nc[j].part != NULL && oc[i].part != NULL &&
			    part_same(nc[j].part, oc[i].part));
			if (same && nc[j].part == NULL &&
			    memcmp(now->crl_sha256, old->crl_sha256, 32) == 0)
				continue;	/* the same CRL */
			if (crl_age_cmp2(same ? nc[j].number : "",
			    nc[j].this_update, same ? oc[i].number : "",
			    oc[i].this_update) >= 0)
				continue;
			goto found;
		}
	}
	return false;
found:
	if (nc[j].part == NULL && oc[i].part == NULL) {
		n = snprintf(msg, msglen, "the CRL of \"%s\" (CRL number "
		    "\"%s\", thisUpdate %" PRId64 ") is older than the one "
		    "version %" PRIu64 " used (CRL number \"%s\", thisUpdate "
		    "%" PRId64 "): a replayed CRL un-revokes what was revoked "
		    "since", now->issuer, now->crl_number, now->this_update,
		    version, old->crl_number, old->this_update);
	} else if (same) {
		util_hex(hex, nc[j].part->crl_issuer, 32);
		cover_text(&nc[j], j, ntext, sizeof(ntext));
		n = snprintf(msg, msglen, "scope \"%s\" (\"%s\"): the CRL of "
		    "issuer x509:%s for %s has CRL number \"%s\", thisUpdate %"
		    PRId64 ", older than the one version %" PRIu64 " used (CRL "
		    "number \"%s\", thisUpdate %" PRId64 "): a replayed "
		    "partition un-revokes what was revoked since", now->name,
		    now->issuer, hex, ntext, nc[j].number, nc[j].this_update,
		    version, oc[i].number, oc[i].this_update);
	} else {
		util_hex(hex, nc[j].whole.crl_issuer, 32);
		cover_text(&nc[j], j, ntext, sizeof(ntext));
		cover_text(&oc[i], i, otext, sizeof(otext));
		n = snprintf(msg, msglen, "scope \"%s\" (\"%s\"): the CRL of "
		    "issuer x509:%s for %s (CRL number \"%s\", thisUpdate %"
		    PRId64 ") is older than the CRL version %" PRIu64 " used "
		    "for %s, which covers some of the same certificates (CRL "
		    "number \"%s\", thisUpdate %" PRId64 "): a replayed CRL "
		    "of another coverage un-revokes what was revoked since",
		    now->name, now->issuer, hex, ntext, nc[j].number,
		    nc[j].this_update, version, otext, oc[i].number,
		    oc[i].this_update);
	}
	if (n < 0)
		msg[0] = '\0';
	return true;
}

/* The scope named name in s, or NULL. Linear: called once per scope. */
static const struct ffile_scope *
set_scope_named(const struct input_set *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->nscopes; i++)
		if (strcmp(s->scopes[i].name, name) == 0)
			return &s->scopes[i];
	return NULL;
}

int
input_check_previous(const struct input_set *s,
    const struct ffile_info *prev, const struct input_prev_opts *o,
    char *err, size_t errlen)
{
	const struct ffile_scope *old, *now;
	char msg[1024];
	uint32_t i;
	size_t j, *ord;
	uint64_t lost;
	int n, rc = -1;

	assert(s != NULL && prev != NULL && o != NULL);
	/*
	 * Each scope of prev is looked up in s: through a sorted index, not
	 * a scan of s per scope (quadratic at the scope cap). Without memory
	 * for the index, count_find() scans.
	 */
	ord = scope_index(s);
	for (i = 0; i < prev->nscopes; i++) {
		old = &prev->scopes[i];
		j = count_find(s, ord, old->name, strlen(old->name));
		now = j != SIZE_MAX ? &s->scopes[j] : NULL;
		if (now != NULL && scope_rolled_back(now, old, prev->version,
		    msg, sizeof(msg))) {
			if (!o->allow_rollback) {
				snprintf(err, errlen, "%s; --allow-crl-rollback to "
				    "publish it anyway", msg);
				goto out;
			}
			log_warn("%s (--allow-crl-rollback)", msg);
		}
		for (j = 0; j < o->ngone; j++)
			if (strcmp(o->gone[j], old->name) == 0)
				break;
		if (j < o->ngone)
			continue;
		/* A database's empty or smaller scope is the truth. */
		if (now != NULL && o->authoritative != NULL &&
		    o->authoritative(o->auth_arg, old->name))
			continue;
		if (now == NULL) {
			n = snprintf(msg, sizeof(msg), "scope \"%s\" (%" PRIu64
			    " keys in version %" PRIu64 ") is not in the "
			    "inputs: dropping it would un-revoke its keys",
			    old->name, old->keys, prev->version);
		} else if (now->keys < old->keys &&
		    (lost = old->keys - now->keys) >
		    old->keys / 100 * o->max_shrink_pct +
		    old->keys % 100 * o->max_shrink_pct / 100) {
			n = snprintf(msg, sizeof(msg), "scope \"%s\" shrinks "
			    "from %" PRIu64 " keys (version %" PRIu64 ") to %"
			    PRIu64 ", by more than %u %%", old->name,
			    old->keys, prev->version, now->keys,
			    o->max_shrink_pct);
		} else
			continue;
		if (n < 0)
			msg[0] = '\0';
		if (!o->allow_shrink) {
			snprintf(err, errlen, "%s; --allow-shrink to publish "
			    "it anyway", msg);
			goto out;
		}
		if (!o->quiet)
			log_warn("%s (--allow-shrink)", msg);
	}
	rc = 0;
out:
	free(ord);
	return rc;
}

int
input_cover_scopes(struct input_set *s, const struct ffile_info *prev,
    size_t *added, char *err, size_t errlen)
{
	struct input_opts o;
	struct rd r;
	size_t nscopes0;
	uint32_t i;
	int rc = 0;

	assert(s != NULL && prev != NULL);
	memset(&o, 0, sizeof(o));
	nscopes0 = s->nscopes;
	rd_begin(&r, s, "previous version", &o, err, errlen);
	for (i = 0; i < prev->nscopes && rc == 0; i++) {
		const struct ffile_scope *old = &prev->scopes[i];

		if (old->source == FFILE_SRC_LIST &&
		    set_find_scope(&r, old->name) == SIZE_MAX)
			rc = set_scope(&r, old->name);
	}
	if (added != NULL)
		*added = rc == 0 ? s->nscopes - nscopes0 : 0;
	return rd_end(&r, rc, input_set_records(s), nscopes0);
}

/* True when the set holds the key (after sorting). */
static bool
set_has_key(const struct input_set *s, const struct revkey *k)
{
	unsigned char enc[REVKEY_ENC_MAX];
	const unsigned char *kb;
	size_t lo = 0, hi, mid, elen, klen;
	int c;

	elen = revkey_encode(k, enc);
	hi = table_builder_count(&s->builder);
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		kb = table_builder_key(&s->builder, mid, &klen);
		c = memcmp(kb, enc, klen < elen ? klen : elen);
		if (c == 0)
			c = (klen > elen) - (klen < elen);
		if (c == 0)
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* What vouches for a separate CRL signer: crl_covered_in over the set. */
static const struct ffile_scope *
signer_scope(void *arg, const char *name)
{
	const struct ffile_scope *sc;

	sc = set_scope_named(arg, name);
	if (sc == NULL || sc->source != FFILE_SRC_CRL ||
	    (sc->flags & FFILE_SCOPE_UNVERIFIED) != 0)
		return NULL;
	return sc;
}

int
input_check_signers(const struct input_set *s, char *err, size_t errlen)
{
	const struct input_dep *d;
	size_t i;

	for (i = 0; i < s->ndeps; i++) {
		d = &s->deps[i];
		/*
		 * The CRL the signer signed may be among them (a self-issued
		 * CRL signing key, PKITS 4.5.6; a cRLIssuer naming itself,
		 * PKITS 4.14.30): its own key must then not be listed in it.
		 */
		if (!crl_covered_in(signer_scope, (void *)(uintptr_t)s,
		    &d->key)) {
			snprintf(err, errlen, "%s: no verified CRL of its "
			    "issuer among the inputs shows that it is not "
			    "revoked; give that CRL too", d->what);
			return -1;
		}
		if (set_has_key(s, &d->key)) {
			snprintf(err, errlen, "%s is itself revoked: its CRL "
			    "must not be used", d->what);
			return -1;
		}
	}
	return 0;
}

/* Two CRLs of one issuer that cover the same part of its certificates. */
static bool
same_group(const struct ffile_scope *a, const struct ffile_scope *b)
{
	unsigned i;

	if (strcmp(a->name, b->name) != 0 || a->npart != b->npart)
		return false;
	for (i = 0; i < a->npart; i++)
		if (!part_same(&a->part[i], &b->part[i]))
			return false;
	return true;
}

/*
 * Two CRLs that are versions of one another: of one issuer and coverage,
 * and signed with the same key. A CA renewed with a new key may sign a
 * CRL with each key, each listing what that key issued (AD CS does): the
 * newer one does not replace the other, both are used.
 */
static bool
same_series(const struct input_crl *a, const struct input_crl *b)
{
	return same_group(&a->sc, &b->sc) &&
	    memcmp(a->signer_key, b->signer_key, sizeof(a->signer_key)) == 0;
}

/*
 * Adds part p to out's parts unless one for the same certificates from the
 * same CRL issuer is there; of two, the newer CRL's (for the rollback
 * check). 0, or -1 with err when there would be more than FFILE_PART_MAX.
 */
static int
parts_union(struct ffile_scope *out, const struct ffile_part *p,
    const char *issuer, char *err, size_t errlen)
{
	struct ffile_part *q;
	unsigned k;

	for (k = 0; k < out->npart; k++) {
		q = &out->part[k];
		if (!part_same(q, p))
			continue;
		if (crlnum_cmp(p->crl_number, q->crl_number) > 0 ||
		    (crlnum_cmp(p->crl_number, q->crl_number) == 0 &&
		    p->this_update > q->this_update))
			*q = *p;
		return 0;
	}
	if (out->npart == FFILE_PART_MAX) {
		snprintf(err, errlen, "CRLs of \"%s\": more than %d coverage "
		    "parts together", issuer, FFILE_PART_MAX);
		return -1;
	}
	out->part[out->npart++] = *p;
	return 0;
}

/*
 * Sets sc from the CRLs of its scope that are kept: its issuer's own CRLs
 * describe it (the newest one's metadata, of those covering it whole
 * when one does; the union of their coverage; the earliest nextUpdate); an indirect CRL of another issuer that speaks
 * for it adds its delegated parts, and describes it only when no CRL of
 * its own does (then flagged attributed). 0, or -1 with err.
 */
/*
 * Whether c describes a scope rather than d (NULL: none yet): the later
 * thisUpdate, then the higher CRL number, then the SHA-256, so that the
 * same CRLs describe it whatever order they were read in (two keys of a
 * renewed CA sign theirs at the same instant, numbered apart: a choice by
 * reading order could flip from build to build and look like rollback).
 */
static bool
describes_over(const struct ffile_scope *c, const struct ffile_scope *d)
{
	int n;

	if (d == NULL || c->this_update != d->this_update)
		return d == NULL || c->this_update > d->this_update;
	if ((n = crlnum_cmp(c->crl_number, d->crl_number)) != 0)
		return n > 0;
	return memcmp(c->crl_sha256, d->crl_sha256, 32) > 0;
}

static int
scope_from_kept(const struct input_set *s, const bool *keep,
    struct ffile_scope *sc, char *err, size_t errlen)
{
	const struct ffile_scope *c, *newest = NULL, *newest_via = NULL;
	const struct ffile_scope *newest_whole = NULL;
	struct ffile_scope *out;
	int64_t next = 0, next_via = 0, next_dg = 0;
	bool whole = false;
	uint8_t flags = 0, flags_via = 0;
	size_t i;
	unsigned j;
	int rc = -1;

	if ((out = calloc(1, sizeof(*out))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (i = 0; i < s->ncrls; i++) {
		c = &s->crls[i].sc;
		if (!keep[i] || strcmp(c->name, sc->name) != 0)
			continue;
		if (s->crls[i].via != 0) {
			if (describes_over(c, newest_via))
				newest_via = c;
			if (next_via == 0 || c->next_update < next_via)
				next_via = c->next_update;
			/* Its parts are delegated ones (crl_via_scope). */
			if (c->npart > 0 && (next_dg == 0 ||
			    c->next_update < next_dg))
				next_dg = c->next_update;
			flags_via |= c->flags;
		} else {
			if (describes_over(c, newest))
				newest = c;
			if (next == 0 || c->next_update < next)
				next = c->next_update;
			flags |= c->flags;
			if (c->npart == 0) {
				whole = true;
				if (describes_over(c, newest_whole))
					newest_whole = c;
			}
		}
		for (j = 0; j < c->npart && !whole; j++)
			if (parts_union(out, &c->part[j], c->issuer, err,
			    errlen) != 0)
				goto done;
	}
	rc = 0;
	if (newest == NULL && newest_via == NULL)
		goto done;
	j = whole ? 0 : out->npart;
	/*
	 * Covered whole, the scope is described by its newest CRL that
	 * covers it whole, not by a partition given with it: the rollback
	 * check compares that CRL with the one the previous version used.
	 */
	if (whole)
		newest = newest_whole;
	if (newest == NULL) {
		newest = newest_via;
		next = next_via;
		flags = (uint8_t)(flags_via & (FFILE_SCOPE_UNVERIFIED |
		    FFILE_SCOPE_ASSUMED_NEXT | FFILE_SCOPE_ATTRIBUTED));
	} else {
		/* An unverified CRL that speaks for it marks it too. */
		flags = (uint8_t)((flags & ~FFILE_SCOPE_ATTRIBUTED) |
		    (flags_via & FFILE_SCOPE_UNVERIFIED));
		/*
		 * Covered in part by an indirect CRL's delegated parts, the
		 * scope is good only while that CRL is: --keep-going keeps a
		 * scope until its nextUpdate.
		 */
		if (!whole && next_dg != 0 && next_dg < next)
			next = next_dg;
	}
	memcpy(out, newest, offsetof(struct ffile_scope, npart));
	out->keys = sc->keys;
	out->next_update = next;
	out->flags = flags;
	out->npart = (uint8_t)j;
	*sc = *out;
done:
	free(out);
	return rc;
}

/*
 * Applies delta d to its kept base b: the delta's removeFromCRL records go
 * (keep[] false) with the base's records of those serials, which must be
 * holds. 0, or -1 with err.
 */
static int
delta_apply(const struct input_set *s, const struct input_crl *d,
    const struct input_crl *b, bool *keep, char *err, size_t errlen)
{
	struct table_rec dr, br;
	size_t i, j;

	for (i = d->start; i < d->end; i++) {
		if (table_builder_get(&s->builder, i, &dr) != 0 ||
		    strcmp(dr.reason, "removeFromCRL") != 0)
			continue;
		keep[i] = false;
		for (j = b->start; j < b->end; j++) {
			if (table_builder_get(&s->builder, j, &br) != 0 ||
			    revkey_cmp(&br.key, &dr.key) != 0)
				continue;
			if (strcmp(br.reason, "certificateHold") != 0) {
				snprintf(err, errlen, "%s: removeFromCRL for a "
				    "serial its base %s revoked for \"%s\", not "
				    "held: refused", d->what, b->what,
				    br.reason[0] != '\0' ? br.reason :
				    "no reason");
				return -1;
			}
			keep[j] = false;
		}
	}
	return 0;
}

int
input_resolve_crls(struct input_set *s, bool quiet, bool no_delta,
    char *err, size_t errlen)
{
	struct input_crl *c, *d;
	struct ffile_scope *sc;
	size_t i, j, k, win, n = input_set_records(s), *base = NULL;
	bool *keep = NULL, *rkeep = NULL, *twin = NULL, dropped = false;
	int cmp, rc = -1;

	if (s->ncrls == 0)
		return 0;
	if ((keep = calloc(s->ncrls, sizeof(*keep))) == NULL ||
	    (twin = calloc(s->ncrls, sizeof(*twin))) == NULL ||
	    (base = calloc(s->ncrls, sizeof(*base))) == NULL ||
	    (rkeep = malloc(n > 0 ? n : 1)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	memset(rkeep, 1, n > 0 ? n : 1);
	/*
	 * 1. Complete CRLs: the winner of each group (one issuer, one
	 * coverage, one signing key: partial CRLs of one issuer are parts of
	 * a set, and CRLs signed with two keys of a renewed CA list what each
	 * key issued, not versions of one another), deciding once per group.
	 */
	for (i = 0; i < s->ncrls; i++) {
		if (s->crls[i].delta || s->crls[i].via != 0)
			continue;
		for (j = 0; j < i; j++)
			if (!s->crls[j].delta && s->crls[j].via == 0 &&
			    same_series(&s->crls[j], &s->crls[i]))
				break;
		if (j < i)
			continue;
		win = i;
		for (j = i + 1; j < s->ncrls; j++) {
			if (s->crls[j].delta || s->crls[j].via != 0 ||
			    !same_series(&s->crls[j], &s->crls[i]))
				continue;
			if (memcmp(s->crls[j].sc.crl_sha256,
			    s->crls[win].sc.crl_sha256, 32) == 0)
				continue;	/* the same CRL twice */
			cmp = crl_age_cmp(&s->crls[j].sc, &s->crls[win].sc);
			/*
			 * The same thisUpdate, number and content (entries,
			 * extensions, nextUpdate) signed two ways (a CA
			 * publishing one CRL under two signature algorithms):
			 * either will do; the lower SHA-256 wins, so the choice
			 * does not follow reading order.
			 */
			if (cmp == 0 && memcmp(s->crls[j].content,
			    s->crls[win].content, 32) == 0) {
				k = memcmp(s->crls[j].sc.crl_sha256,
				    s->crls[win].sc.crl_sha256, 32) < 0 ? j : win;
				if (!quiet)
					log_info("%s and %s: one CRL of \"%s\" "
					    "signed two ways (the same entries, "
					    "thisUpdate and number); using %s",
					    s->crls[win].what, s->crls[j].what,
					    s->crls[j].sc.issuer, s->crls[k].what);
				twin[k == j ? win : j] = true;
				win = k;
				continue;
			}
			if (cmp == 0) {
				snprintf(err, errlen, "%s and %s: two different "
				    "CRLs of \"%s\" that cannot be ordered (CRL "
				    "number \"%s\", thisUpdate the same); give "
				    "one", s->crls[win].what, s->crls[j].what,
				    s->crls[j].sc.issuer, s->crls[j].sc.crl_number);
				goto out;
			}
			if (cmp > 0)
				win = j;
		}
		keep[win] = true;
	}
	/* 2. Deltas: each finds its kept base; the newest per base wins. */
	for (i = 0; i < s->ncrls; i++) {
		d = &s->crls[i];
		if (!d->delta || d->via != 0)
			continue;
		for (j = 0; j < s->ncrls; j++) {
			c = &s->crls[j];
			if (keep[j] && !c->delta && c->via == 0 &&
			    same_series(c, d) &&
			    c->sc.crl_number[0] != '\0' &&
			    crlnum_cmp(c->sc.crl_number, d->base_number) >= 0 &&
			    crlnum_cmp(d->sc.crl_number, c->sc.crl_number) > 0)
				break;
		}
		if (j == s->ncrls) {
			snprintf(err, errlen, "%s: delta CRL of \"%s\" (base CRL "
			    "number \"%s\") without its base among the inputs: "
			    "a delta alone lists changes, not the revoked set",
			    d->what, d->sc.issuer, d->base_number);
			goto out;
		}
		base[i] = j + 1;
		for (j = 0; j < i; j++)
			if (keep[j] && base[j] == base[i]) {
				if (crlnum_cmp(d->sc.crl_number,
				    s->crls[j].sc.crl_number) <= 0)
					break;	/* an older delta: drop this one */
				keep[j] = false;
			}
		keep[i] = j == i;
	}
	/* What an indirect CRL speaks for stays exactly when it does. */
	for (i = 0; i < s->ncrls; i++)
		if (s->crls[i].via != 0)
			keep[i] = keep[s->crls[i].via - 1];
	for (i = 0; i < s->ncrls; i++) {
		if (s->crls[i].via != 0)
			continue;
		if (!keep[i]) {
			dropped = true;
			if (!quiet && !twin[i])
				log_warn("%s: CRL %s of \"%s\" superseded by a "
				    "newer CRL of that issuer in this build: its "
				    "entries are not used", s->crls[i].what,
				    s->crls[i].sc.crl_number[0] != '\0' ?
				    s->crls[i].sc.crl_number : "(no number)",
				    s->crls[i].sc.issuer);
			for (j = s->crls[i].start; j < s->crls[i].end; j++)
				rkeep[j] = false;
		} else if (s->crls[i].delta) {
			dropped = true;
			if (delta_apply(s, &s->crls[i], &s->crls[base[i] - 1],
			    rkeep, err, errlen) != 0)
				goto out;
		}
	}
	/* 3. A base announcing a delta that did not come. */
	for (i = 0; i < s->ncrls; i++) {
		if (!keep[i] || s->crls[i].delta || s->crls[i].via != 0 ||
		    !s->crls[i].announces)
			continue;
		for (j = 0; j < s->ncrls; j++)
			if (keep[j] && base[j] == i + 1)
				break;
		if (j < s->ncrls)
			continue;
		if (!no_delta) {
			snprintf(err, errlen, "%s: CRL of \"%s\" announces a "
			    "delta CRL (freshestCRL) that is not among the "
			    "inputs: --no-delta to use the base alone",
			    s->crls[i].what, s->crls[i].sc.issuer);
			goto out;
		}
		log_warn("%s: CRL of \"%s\" announces a delta CRL; used "
		    "without it (--no-delta)", s->crls[i].what,
		    s->crls[i].sc.issuer);
	}
	/*
	 * 4. Each scope: the newest kept CRL describes it, with the union
	 * of the kept CRLs' coverage and the earliest nextUpdate among them.
	 */
	for (j = 0; j < s->nscopes; j++) {
		sc = &s->scopes[j];
		if (sc->source == FFILE_SRC_CRL &&
		    scope_from_kept(s, keep, sc, err, errlen) != 0)
			goto out;
	}
	if (dropped)
		table_builder_drop(&s->builder, rkeep);
	rc = 0;
out:
	free(keep);
	free(twin);
	free(base);
	free(rkeep);
	return rc;
}

/*
 * Appends every record of scope name in prev's table to s. 0, or -1 with
 * err (s's records as they were).
 */
static int
keep_records(struct input_set *s, const char *name, const struct table *prev,
    char *err, size_t errlen)
{
	struct table_rec rec;
	size_t nrecs0 = input_set_records(s);
	uint64_t i, n = table_count(prev);

	for (i = 0; i < n; i++) {
		if (table_get(prev, i, &rec) != 0) {
			snprintf(err, errlen, "previous table: record %" PRIu64
			    " unreadable", i);
			goto fail;
		}
		if (strcmp(rec.key.scope, name) != 0)
			continue;
		if (table_builder_add(&s->builder, &rec.key, rec.revoked_at,
		    rec.reason) != 0) {
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
	}
	return 0;
fail:
	table_builder_truncate(&s->builder, nrecs0);
	return -1;
}

int
input_keep_scope(struct input_set *s, const struct ffile_scope *sc,
    const struct table *prev, char *err, size_t errlen)
{
	struct ffile_scope *ns;
	size_t ncap;
	unsigned i;

	if (set_scope_named(s, sc->name) != NULL ||
	    s->nscopes >= FFILE_MAX_SCOPES) {
		snprintf(err, errlen, "scope \"%s\": cannot be kept", sc->name);
		return -1;
	}
	if (s->nscopes == s->scap) {
		ncap = s->scap == 0 ? 8 : s->scap * 2;
		if ((ns = realloc(s->scopes, ncap * sizeof(*ns))) == NULL) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		s->scopes = ns;
		s->scap = ncap;
	}
	if (keep_records(s, sc->name, prev, err, errlen) != 0)
		return -1;
	ns = &s->scopes[s->nscopes];
	*ns = *sc;
	ns->flags |= FFILE_SCOPE_KEPT;
	/*
	 * Kept alone, its indirect CRL no longer vouches for other issuers'
	 * certificates: what it attributed to them is not kept with it.
	 */
	for (i = 0; i < ns->npart; i++)
		ns->part[i].flags &= (uint8_t)~FFILE_PART_INDIRECT;
	s->nscopes++;
	return 0;
}

/*
 * Whether a part of a scope's own CRLs (the previous version's) and a
 * part delegated to it cover some certificate in common: kinds, reasons
 * and distribution point names meet, whoever issued the CRLs.
 */
static bool
parts_meet(const struct ffile_part *own, const struct ffile_part *dg)
{
	if (own->kind != FFILE_PART_ANY && dg->kind != FFILE_PART_ANY &&
	    own->kind != dg->kind)
		return false;
	if ((own->reasons & dg->reasons) == 0)
		return false;
	return !crl_part_named(own) || !crl_part_named(dg) ||
	    memcmp(own->dp, dg->dp, 32) == 0;
}

/* Whether two parts cover the same certificates from the same CRL issuer. */
static bool
parts_alike(const struct ffile_part *a, const struct ffile_part *b)
{
	return a->kind == b->kind && a->reasons == b->reasons &&
	    memcmp(a->dp, b->dp, 32) == 0 &&
	    memcmp(a->crl_issuer, b->crl_issuer, 32) == 0;
}

/*
 * Whether part p of sc (the previous version's scope) came from one of
 * its own CRLs and ns (this build's) has no part of its own like it: that
 * CRL is not among the inputs (or failed). (A scope covered whole by its
 * own CRL has no parts: drop_delegated_over_lost() sees that one lost.)
 */
static bool
own_part_lost(const struct ffile_scope *ns, const struct ffile_part *p)
{
	unsigned i;

	if ((p->flags & FFILE_PART_DELEGATED) != 0)
		return false;
	if ((ns->flags & FFILE_SCOPE_ATTRIBUTED) == 0 && ns->npart == 0)
		return false;	/* covered whole by a CRL of its own */
	for (i = 0; i < ns->npart; i++)
		if ((ns->part[i].flags & FFILE_PART_DELEGATED) == 0 &&
		    parts_alike(&ns->part[i], p))
			return false;
	return true;
}

/*
 * Drops the delegated parts of ns that cover some certificate a lost own
 * CRL of sc covered (own_part_lost; all of them when sc was covered whole
 * by its own CRL and ns no longer is): those certificates were answered
 * from both CRLs, and the delegated one alone is not what proved them
 * not revoked. They answer not_covered. Returns how many it dropped.
 */
static unsigned
drop_delegated_over_lost(struct ffile_scope *ns, const struct ffile_scope *sc)
{
	bool whole_lost, drop;
	unsigned i, j, k = 0, dropped = 0;

	whole_lost = sc->npart == 0 && (ns->npart > 0 ||
	    (ns->flags & FFILE_SCOPE_ATTRIBUTED) != 0);
	for (i = 0; i < ns->npart; i++) {
		drop = false;
		if ((ns->part[i].flags & FFILE_PART_DELEGATED) != 0) {
			drop = whole_lost;
			for (j = 0; !drop && j < sc->npart; j++)
				drop = own_part_lost(ns, &sc->part[j]) &&
				    parts_meet(&sc->part[j], &ns->part[i]);
		}
		if (drop)
			dropped++;
		else
			ns->part[k++] = ns->part[i];
	}
	ns->npart = (uint8_t)k;
	return dropped;
}

/*
 * ns (this build's scope, with no CRL of its own: only what other
 * issuers' indirect CRLs give it) takes sc's own CRLs back from the
 * previous version: prev's records of the scope, sc's metadata and own
 * coverage (flagged kept), with the delegated parts of this build, good
 * until the earlier of sc's nextUpdate and theirs. 0, or -1 with err (s
 * unchanged).
 */
static int
keep_own_into(struct input_set *s, struct ffile_scope *ns,
    const struct ffile_scope *sc, const struct table *prev, char *err,
    size_t errlen)
{
	struct ffile_scope *out;
	int64_t next = sc->next_update;
	unsigned i;
	int rc = -1;

	if ((out = calloc(1, sizeof(*out))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	*out = *sc;
	out->npart = 0;
	for (i = 0; i < sc->npart; i++) {
		if ((sc->part[i].flags & FFILE_PART_DELEGATED) != 0)
			continue;	/* this build's delegated parts instead */
		out->part[out->npart] = sc->part[i];
		out->part[out->npart].flags &= (uint8_t)~FFILE_PART_INDIRECT;
		out->npart++;
	}
	for (i = 0; sc->npart > 0 && i < ns->npart; i++)
		if (parts_union(out, &ns->part[i], sc->issuer, err,
		    errlen) != 0)
			goto out;
	if (sc->npart > 0 && ns->npart > 0 && ns->next_update < next)
		next = ns->next_update;
	out->next_update = next;
	out->flags = (uint8_t)((sc->flags | FFILE_SCOPE_KEPT |
	    (ns->flags & FFILE_SCOPE_UNVERIFIED)) & ~FFILE_SCOPE_ATTRIBUTED);
	if (keep_records(s, sc->name, prev, err, errlen) != 0)
		goto out;
	out->keys = ns->keys;
	*ns = *out;
	rc = 0;
out:
	free(out);
	return rc;
}

int
input_keep_previous(struct input_set *s, const struct ffile_scope *sc,
    const struct table *prev, int64_t now, enum input_kept *what, char *err,
    size_t errlen)
{
	struct ffile_scope *ns = NULL;
	size_t j;

	*what = INPUT_KEPT_NONE;
	if (sc->source != FFILE_SRC_CRL)
		return 0;
	for (j = 0; j < s->nscopes && ns == NULL; j++)
		if (strcmp(s->scopes[j].name, sc->name) == 0)
			ns = &s->scopes[j];
	if (ns == NULL) {
		if (sc->next_update <= now) {
			*what = INPUT_KEPT_LEFT_OUT;
			return 0;
		}
		if (input_keep_scope(s, sc, prev, err, errlen) != 0)
			return -1;
		*what = INPUT_KEPT;
		return 0;
	}
	/* Without a CRL of its own in prev, it has none to lose. */
	if ((sc->flags & FFILE_SCOPE_ATTRIBUTED) != 0 ||
	    ns->source != FFILE_SRC_CRL)
		return 0;
	/*
	 * Still named, but only by other issuers' indirect CRLs: its own
	 * CRLs failed. What they covered is kept from prev while their
	 * nextUpdate lies ahead, and not_covered after it, never answered
	 * from the delegated CRLs alone.
	 */
	if ((ns->flags & FFILE_SCOPE_ATTRIBUTED) != 0) {
		if (sc->next_update > now) {
			if (keep_own_into(s, ns, sc, prev, err, errlen) != 0)
				return -1;
			*what = INPUT_KEPT;
		} else {
			(void)drop_delegated_over_lost(ns, sc);
			*what = INPUT_KEPT_LEFT_OUT;
		}
		return 0;
	}
	/*
	 * Described by CRLs of its own, but not by every one prev used (a
	 * partition failed): the delegated parts that covered the same
	 * certificates go with it.
	 */
	if (drop_delegated_over_lost(ns, sc) > 0)
		*what = INPUT_KEPT_NARROWED;
	return 0;
}
