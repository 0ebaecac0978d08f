/* input.c - the input set: its scopes, one input read, the rows of a source */
/*
 * Every reader treats its input as hostile: sizes are capped, every DER
 * length is checked against the bytes that are really there, and every
 * error names the file and the line, element index or DER offset.
 *
 * Records enter the set's builder only through rd_add() and
 * input_keep_scope(), and scopes only through rd_set_scope(). A failed
 * input_read() truncates both back to their length at entry; scope
 * metadata of CRLs is applied only after the last point of failure, so
 * existing scopes are never modified by a failed call.
 */
#include "input_int.h"

#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/rand.h>
#include <xxhash.h>

#include "util.h"

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

void
rd_err(struct rd *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rd_verr(r, 0, fmt, ap);
	va_end(ap);
}

void
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

int
rd_set_scope(struct rd *r, const char *name)
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
		    !revkey_scope_is_cutoff(iss) && rd_set_scope(r, iss) != 0)
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

int
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

const char *
input_opts_scope(const struct input_opts *o)
{
	return o->scope != NULL ? o->scope : REVKEY_DEFAULT_SCOPE;
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

	if (len < 4 || b[0] != 0x30 || input_der_header(b, 0, len, &hdr, &clen)
	    != 0)
		return false;
	(void)clen;	/* a truncated CRL is still sniffed as DER */
	return hdr < len && b[hdr] == 0x30 && b[1] >= 0x80;
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
		if (input_is_space(buf[i]))
			continue;
		if (buf[i] == '=') {
			npad++;
			continue;
		}
		if (npad > 0 || (v = util_b64_value(buf[i], false)) < 0)
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
	    input_der_header(head, 0, nh, &hdr, &clen) != 0 ||
	    hdr > total || clen != total - hdr || head[hdr] != 0x30 ||
	    input_der_header(head, hdr, nh, &ihdr, &iclen) != 0 ||
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
	while (i < len && input_is_space(buf[i]))
		i++;
	/* A UTF-8 byte order mark before JSON is tolerated. */
	if (i + 3 <= len && memcmp(buf + i, UTF8_BOM, 3) == 0)
		i += 3;
	while (i < len && input_is_space(buf[i]))
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
		rc = rd_read_text(&r, (const char *)buf, len);
		break;
	case INPUT_JSON:
		rc = rd_read_json(&r, (const char *)buf, len);
		break;
	case INPUT_CRL:
		if (len == 0)
			rd_err(&r, "empty file, not a CRL");
		else if (looks_pem_crl((const char *)buf, len))
			rc = rd_read_crl_pem(&r, (const char *)buf, len);
		else if (memmem(buf, len, "-----BEGIN", 10) != NULL)
			rd_err(&r, "PEM file without an X509 CRL block");
		else
			rc = rd_crl_der(&r, buf, len, "");
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
	if (row->reason != NULL && !input_reason_valid(row->reason)) {
		snprintf(err, errlen, "reason is not at most %d printable "
		    "ASCII characters", TABLE_REASON_MAX - 1);
		return -1;
	}
	if (row->revoked_at < 0) {
		snprintf(err, errlen, "revoked_at is before 1970");
		return -1;
	}
	if (!row->any_bytes &&
	    (why = input_id_refused(row->id, row->id_len, false, &col)) != NULL) {
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

	if (input_row_rec(row, input_opts_scope(r->o), &rec, e, sizeof(e)) != 0) {
		rd_err(r, "row %" PRIu64 ": %s", idx, e);
		return -1;
	}
	if (rd_set_scope(r, rec.key.scope) != 0)
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
	if (idx == 0 && (rd_set_scope(&r, input_opts_scope(o)) != 0 ||
	    rd_refuse_empty(&r, input_opts_scope(o)) != 0))
		goto out;
	rc = 0;
out:
	return rd_end(&r, rc, nrecs0, nscopes0);
}

const struct ffile_scope *
input_scope_named(const struct input_set *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->nscopes; i++)
		if (strcmp(s->scopes[i].name, name) == 0)
			return &s->scopes[i];
	return NULL;
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
			rc = rd_set_scope(&r, old->name);
	}
	if (added != NULL)
		*added = rc == 0 ? s->nscopes - nscopes0 : 0;
	return rd_end(&r, rc, input_set_records(s), nscopes0);
}
