/* issued.c - the issued set of exact scopes: certificate and id files, streamed */
#include "issued.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "input_int.h"
#include "util.h"

#define ISSUED_LINE_MAX	(4 * REVKEY_ID_MAX)	/* a text line, a JSON string */

enum issued_kind {
	ISSUED_PEM = 0,
	ISSUED_DER,
	ISSUED_TEXT,
	ISSUED_JSON,
};

/* One file being read: where, and the key it gave last. */
struct issued_rd {
	const struct issued_set *s;
	size_t		 file;		/* index of the open file */
	enum issued_kind kind;
	FILE		*fp;		/* text, JSON */
	BIO		*bio;		/* certificates */
	uint64_t	 item;		/* line, element or certificate number */
	bool		 json_open;	/* JSON: the '[' was read */
	bool		 json_done;	/* JSON: the ']' was read */
	long		 size;		/* DER: the file's size */
	char		*line;		/* text: getline's buffer */
	size_t		 linecap;
	struct revkey	 k;		/* the last key */
	bool		 has_nb;	/* k from a certificate: nb set */
	int64_t		 nb;
};

struct issued_stream {
	struct issued_rd rd;
	const char	*scope;
	unsigned char	 enc[REVKEY_ENC_MAX];
};

static int
pem_no_password(char *buf, int size, int rwflag, void *u)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)u;
	return -1;
}

static void
rd_close(struct issued_rd *r)
{
	if (r->fp != NULL)
		fclose(r->fp);
	BIO_free(r->bio);
	r->fp = NULL;
	r->bio = NULL;
}

/* The kind of a file from its first bytes. 0, or -1 with err. */
static int
rd_sniff(const char *path, enum issued_kind *kind, char *err, size_t errlen)
{
	unsigned char b[64];
	size_t n, i = 0;
	FILE *fp;

	if ((fp = fopen(path, "rb")) == NULL) {
		util_errf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	n = fread(b, 1, sizeof(b), fp);
	fclose(fp);
	if (n >= 3 && memcmp(b, "\xef\xbb\xbf", 3) == 0)
		i = 3;
	while (i < n && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' ||
	    b[i] == '\n'))
		i++;
	if (n - i >= 10 && memcmp(b + i, "-----BEGIN", 10) == 0)
		*kind = ISSUED_PEM;
	else if (i == 0 && n >= 2 && b[0] == 0x30 && (b[1] & 0x80) != 0)
		*kind = ISSUED_DER;
	else if (i < n && b[i] == '[')
		*kind = ISSUED_JSON;
	else
		*kind = ISSUED_TEXT;
	return 0;
}

static int
rd_open(struct issued_rd *r, char *err, size_t errlen)
{
	const char *path = r->s->paths[r->file];
	struct stat st;

	if (rd_sniff(path, &r->kind, err, errlen) != 0)
		return -1;
	r->item = 0;
	r->json_open = r->json_done = false;
	if (r->kind == ISSUED_PEM || r->kind == ISSUED_DER)
		r->bio = BIO_new_file(path, r->kind == ISSUED_PEM ? "r" : "rb");
	else
		r->fp = fopen(path, "r");
	if (r->bio == NULL && r->fp == NULL) {
		util_errf(err, errlen, "%s: cannot open", path);
		ERR_clear_error();
		return -1;
	}
	/* Concatenated DER ends where the file does. */
	if (r->kind == ISSUED_DER) {
		if (stat(path, &st) != 0 || st.st_size > LONG_MAX) {
			util_errf(err, errlen, "%s: %s", path, strerror(errno));
			return -1;
		}
		r->size = (long)st.st_size;
	}
	return 0;
}

/* The next certificate's key. 1, 0 at the end, -1 with err. */
static int
rd_cert(struct issued_rd *r, char *err, size_t errlen)
{
	const char *path = r->s->paths[r->file];
	unsigned long e;
	char why[256];
	X509 *x;

	if (r->kind == ISSUED_DER && BIO_tell(r->bio) >= r->size)
		return 0;
	x = r->kind == ISSUED_PEM ? PEM_read_bio_X509(r->bio, NULL,
	    pem_no_password, NULL) : d2i_X509_bio(r->bio, NULL);
	if (x == NULL) {
		e = ERR_peek_last_error();
		ERR_clear_error();
		if (r->kind == ISSUED_PEM && ERR_GET_REASON(e) ==
		    PEM_R_NO_START_LINE)
			return r->item > 0 ? 0 : (util_errf(err, errlen, "%s: no "
			    "certificate", path), -1);
		util_errf(err, errlen, "%s: certificate %" PRIu64 ": does not "
		    "parse", path, r->item + 1);
		return -1;
	}
	r->item++;
	if (revkey_from_cert(&r->k, x, why, sizeof(why)) != 0 ||
	    revkey_cert_not_before(x, &r->nb) != 0) {
		X509_free(x);
		util_errf(err, errlen, "%s: certificate %" PRIu64 ": %s", path,
		    r->item, "no key or notBefore");
		return -1;
	}
	X509_free(x);
	r->has_nb = true;
	return 1;
}

/* The next id of a text list. 1, 0 at the end, -1 with err. */
static int
rd_text(struct issued_rd *r, char *err, size_t errlen)
{
	const char *path = r->s->paths[r->file], *bad;
	char why[256], *b, *e;
	size_t col;
	ssize_t n;

	while ((n = getline(&r->line, &r->linecap, r->fp)) != -1) {
		r->item++;
		b = r->line;
		e = r->line + n;
		if (r->item == 1 && n >= 3 && memcmp(b, "\xef\xbb\xbf", 3) == 0)
			b += 3;
		/* Lines and ids as a revocation list's (input_list.c). */
		while (b < e && input_is_space((unsigned char)*b))
			b++;
		while (e > b && input_is_space((unsigned char)e[-1]))
			e--;
		if (b == e || *b == '#')
			continue;
		if ((bad = memchr(b, '\0', (size_t)(e - b)) != NULL ? "NUL byte" :
		    (size_t)(e - b) >= 5 && memcmp(b, "-----", 5) == 0 ?
		    "PEM armour" : input_id_refused(b, (size_t)(e - b), true,
		    &col)) == NULL && memmem(b, (size_t)(e - b), "\xef\xbb\xbf",
		    3) != NULL)
			bad = "a byte order mark inside an id";
		if (bad != NULL || revkey_from_text(&r->k, r->s->list_scope, b,
		    (size_t)(e - b), why, sizeof(why)) != 0) {
			util_errf(err, errlen, "%s: line %" PRIu64 ": %s: not an "
			    "id list", path, r->item, bad != NULL ? bad : why);
			return -1;
		}
		r->has_nb = false;
		return 1;
	}
	if (ferror(r->fp)) {
		util_errf(err, errlen, "%s: read error", path);
		return -1;
	}
	return 0;
}

/* ---- JSON: an array of strings or {"id", "scope"} objects, streamed ---- */

static int
js_skip_ws(FILE *fp)
{
	int c;

	while ((c = getc(fp)) == ' ' || c == '\t' || c == '\r' || c == '\n')
		;
	return c;
}

/* Appends code point u as UTF-8 to out (room checked). 0 or -1. */
static int
js_put_utf8(char *out, size_t *n, size_t cap, uint32_t u)
{
	unsigned char b[4];
	size_t l;

	if (u < 0x80) {
		b[0] = (unsigned char)u;
		l = 1;
	} else if (u < 0x800) {
		b[0] = (unsigned char)(0xc0 | u >> 6);
		b[1] = (unsigned char)(0x80 | (u & 0x3f));
		l = 2;
	} else if (u < 0x10000) {
		b[0] = (unsigned char)(0xe0 | u >> 12);
		b[1] = (unsigned char)(0x80 | ((u >> 6) & 0x3f));
		b[2] = (unsigned char)(0x80 | (u & 0x3f));
		l = 3;
	} else {
		b[0] = (unsigned char)(0xf0 | u >> 18);
		b[1] = (unsigned char)(0x80 | ((u >> 12) & 0x3f));
		b[2] = (unsigned char)(0x80 | ((u >> 6) & 0x3f));
		b[3] = (unsigned char)(0x80 | (u & 0x3f));
		l = 4;
	}
	if (cap - *n < l)
		return -1;
	memcpy(out + *n, b, l);
	*n += l;
	return 0;
}

static int
js_hex4(FILE *fp, uint32_t *u)
{
	int i, c, v;

	*u = 0;
	for (i = 0; i < 4; i++) {
		if ((c = getc(fp)) == EOF || (v = util_hexval((unsigned char)c)) < 0)
			return -1;
		*u = *u << 4 | (uint32_t)v;
	}
	return 0;
}

/* A string after its opening quote into out (cap bytes). 0 or -1. */
static int
js_string(FILE *fp, char *out, size_t cap, size_t *len)
{
	uint32_t u, lo;
	size_t n = 0;
	int c;

	while ((c = getc(fp)) != '"') {
		if (c == EOF || c < 0x20)
			return -1;
		if (c == '\\') {
			switch (c = getc(fp)) {
			case 'b': c = '\b'; break;
			case 'f': c = '\f'; break;
			case 'n': c = '\n'; break;
			case 'r': c = '\r'; break;
			case 't': c = '\t'; break;
			case '"': case '\\': case '/': break;
			case 'u':
				if (js_hex4(fp, &u) != 0)
					return -1;
				if (u >= 0xd800 && u < 0xdc00) {
					if (getc(fp) != '\\' || getc(fp) != 'u' ||
					    js_hex4(fp, &lo) != 0 || lo < 0xdc00 ||
					    lo > 0xdfff)
						return -1;
					u = 0x10000 + ((u - 0xd800) << 10) +
					    (lo - 0xdc00);
				} else if (u >= 0xdc00 && u < 0xe000)
					return -1;
				if (js_put_utf8(out, &n, cap, u) != 0)
					return -1;
				continue;
			default:
				return -1;
			}
		}
		if (n == cap)
			return -1;
		out[n++] = (char)c;
	}
	*len = n;
	return 0;
}

/* Skips a scalar (number, true, false, null) whose first byte is c. */
static int
js_skip_scalar(FILE *fp, int c, int *next)
{
	if (!(c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' ||
	    c == 'n'))
		return -1;
	while ((c = getc(fp)) != EOF && c != ',' && c != '}' && c != ']' &&
	    c != ' ' && c != '\t' && c != '\r' && c != '\n')
		;
	if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
		c = js_skip_ws(fp);
	*next = c;
	return 0;
}

/*
 * An object after its '{': "id" (required) and "scope" (optional)
 * strings; other members must be strings or scalars. 0 or -1.
 */
static int
js_object(FILE *fp, char *id, size_t *idlen, char *scope, size_t *slen)
{
	char name[16], skip[ISSUED_LINE_MAX];
	size_t nl, sl;
	int c;

	*idlen = *slen = 0;
	c = js_skip_ws(fp);
	if (c == '}')
		return *idlen > 0 ? 0 : -1;
	for (;;) {
		if (c != '"' || js_string(fp, name, sizeof(name) - 1, &nl) != 0 ||
		    js_skip_ws(fp) != ':')
			return -1;
		name[nl] = '\0';
		c = js_skip_ws(fp);
		if (c == '"') {
			if (strcmp(name, "id") == 0) {
				if (js_string(fp, id, ISSUED_LINE_MAX, idlen) != 0)
					return -1;
			} else if (strcmp(name, "scope") == 0) {
				if (js_string(fp, scope, REVKEY_SCOPE_MAX,
				    slen) != 0)
					return -1;
			} else if (js_string(fp, skip, sizeof(skip), &sl) != 0)
				return -1;
			c = js_skip_ws(fp);
		} else if (strcmp(name, "id") == 0 || strcmp(name, "scope") == 0 ||
		    js_skip_scalar(fp, c, &c) != 0)
			return -1;
		if (c == '}')
			return *idlen > 0 ? 0 : -1;
		if (c != ',')
			return -1;
		c = js_skip_ws(fp);
	}
}

/* The next id of a JSON list. 1, 0 at the end, -1 with err. */
static int
rd_json(struct issued_rd *r, char *err, size_t errlen)
{
	const char *path = r->s->paths[r->file];
	char id[ISSUED_LINE_MAX], scope[REVKEY_SCOPE_MAX + 1], why[256];
	size_t idlen, slen = 0;
	bool counted = false;
	int c;

	if (r->json_done)
		return 0;
	c = js_skip_ws(r->fp);
	if (!r->json_open) {
		if (c == 0xef && getc(r->fp) == 0xbb && getc(r->fp) == 0xbf)
			c = js_skip_ws(r->fp);
		if (c != '[')
			goto bad;
		r->json_open = true;
		c = js_skip_ws(r->fp);
		if (c == ']')
			goto end;
	} else if (c == ']')
		goto end;
	else if (c != ',' || (c = js_skip_ws(r->fp)) == EOF)
		goto bad;
	r->item++;
	counted = true;
	if (c == '"') {
		if (js_string(r->fp, id, sizeof(id), &idlen) != 0)
			goto bad;
	} else if (c != '{' || js_object(r->fp, id, &idlen, scope,
	    &slen) != 0)
		goto bad;
	scope[slen] = '\0';
	if (idlen == 0 || memchr(id, '\0', idlen) != NULL ||
	    revkey_from_text(&r->k, slen > 0 ? scope : r->s->list_scope, id,
	    idlen, why, sizeof(why)) != 0) {
		util_errf(err, errlen, "%s: element %" PRIu64 ": %s", path,
		    r->item, idlen == 0 ? "empty id" : "bad id or scope");
		return -1;
	}
	r->has_nb = false;
	return 1;
end:
	r->json_done = true;
	if (js_skip_ws(r->fp) != EOF) {
		util_errf(err, errlen, "%s: bytes after the array", path);
		return -1;
	}
	return 0;
bad:
	util_errf(err, errlen, "%s: element %" PRIu64 ": not a JSON array of "
	    "id strings or {\"id\", \"scope\"} objects", path, r->item +
	    (counted ? 0 : 1));
	return -1;
}

/* The next key of any file into r->k. 1, 0 after the last file, -1. */
static int
rd_next(struct issued_rd *r, char *err, size_t errlen)
{
	int rc;

	for (;;) {
		if (r->fp == NULL && r->bio == NULL) {
			if (r->file >= r->s->npaths)
				return 0;
			if (rd_open(r, err, errlen) != 0)
				return -1;
		}
		rc = r->kind == ISSUED_TEXT ? rd_text(r, err, errlen) :
		    r->kind == ISSUED_JSON ? rd_json(r, err, errlen) :
		    rd_cert(r, err, errlen);
		if (rc != 0)
			return rc;
		rd_close(r);
		r->file++;
	}
}

static void
rd_reset(struct issued_rd *r, const struct issued_set *s)
{
	rd_close(r);
	r->s = s;
	r->file = 0;
}

/* ---- the scan --------------------------------------------------------- */

static struct issued_scope *
scan_scope(struct issued_set *s, const char *name, size_t *cap)
{
	struct issued_scope *p;
	size_t i;

	for (i = 0; i < s->nscopes; i++)
		if (strcmp(s->scopes[i].name, name) == 0)
			return &s->scopes[i];
	if (s->nscopes == ISSUED_MAX_SCOPES)
		return NULL;
	if (s->nscopes == *cap) {
		*cap = *cap == 0 ? 8 : 2 * *cap;
		if ((p = realloc(s->scopes, *cap * sizeof(*p))) == NULL)
			return NULL;
		s->scopes = p;
	}
	p = &s->scopes[s->nscopes++];
	memset(p, 0, sizeof(*p));
	memcpy(p->name, name, strlen(name) + 1);
	return p;
}

int
issued_scan(struct issued_set *s, char *err, size_t errlen)
{
	struct issued_rd r;
	struct issued_scope *sc;
	size_t cap = 0;
	int rc;

	assert(s != NULL && s->list_scope != NULL);
	memset(&r, 0, sizeof(r));
	rd_reset(&r, s);
	while ((rc = rd_next(&r, err, errlen)) == 1) {
		if ((sc = scan_scope(s, r.k.scope, &cap)) == NULL) {
			util_errf(err, errlen, "%s: more than %d scopes, or out of "
			    "memory", s->paths[r.file], ISSUED_MAX_SCOPES);
			rc = -1;
			break;
		}
		sc->listed++;
		if (!r.has_nb)
			sc->from_list = true;
		else if (r.nb > sc->newest)
			sc->newest = r.nb;
	}
	rd_close(&r);
	free(r.line);
	return rc;
}

const struct issued_scope *
issued_scope(const struct issued_set *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->nscopes; i++)
		if (strcmp(s->scopes[i].name, name) == 0)
			return &s->scopes[i];
	return NULL;
}

void
issued_free(struct issued_set *s)
{
	if (s == NULL)
		return;
	free(s->scopes);
	s->scopes = NULL;
	s->nscopes = 0;
}

/* ---- one scope's stream ----------------------------------------------- */

static int
stream_rewind(void *arg, char *err, size_t errlen)
{
	struct issued_stream *st = arg;

	(void)err;
	(void)errlen;
	rd_reset(&st->rd, st->rd.s);
	return 0;
}

static int
stream_next(void *arg, const unsigned char **key, size_t *len, char *err,
    size_t errlen)
{
	struct issued_stream *st = arg;
	int rc;

	while ((rc = rd_next(&st->rd, err, errlen)) == 1) {
		if (strcmp(st->rd.k.scope, st->scope) != 0)
			continue;
		*len = revkey_encode(&st->rd.k, st->enc);
		*key = st->enc;
		return 1;
	}
	return rc;
}

struct issued_stream *
issued_stream_new(const struct issued_set *s, const char *scope)
{
	struct issued_stream *st;

	assert(s != NULL && scope != NULL);
	if ((st = calloc(1, sizeof(*st))) == NULL)
		return NULL;
	st->rd.s = s;
	st->scope = scope;
	return st;
}

void
issued_stream_src(struct issued_stream *st, struct exact_src *src)
{
	src->arg = st;
	src->rewind = stream_rewind;
	src->next = stream_next;
}

void
issued_stream_free(struct issued_stream *st)
{
	if (st == NULL)
		return;
	rd_close(&st->rd);
	free(st->rd.line);
	free(st);
}
