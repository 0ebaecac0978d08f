/* table.c - the table builder: collecting records and writing the file */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "table.h"
#include "table_int.h"
#include "util.h"

int
tb_keycmp(const unsigned char *a, size_t alen, const unsigned char *b,
    size_t blen)
{
	size_t n = alen < blen ? alen : blen;
	int c = memcmp(a, b, n);

	if (c != 0)
		return c;
	return (alen > blen) - (alen < blen);
}

bool
tb_reason_ok(const char *r, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)r[i];

		if (c < 0x20 || c == 0x7f)
			return false;
	}
	return true;
}

/* ---------------------------------------------------------------------- */
/* The merge rule of the builder (and of the tests' reference). */

int64_t
table_merge_revoked(const char *scope, int64_t have, int64_t t)
{
	if (revkey_scope_is_cutoff(scope))
		return t > have ? t : have;
	return t != 0 && (have == 0 || t < have) ? t : have;
}

/* ---------------------------------------------------------------------- */
/* Record encoding. */

static void
tb_rec_put(unsigned char *p, const struct revkey *k, int64_t revoked_at,
    const char *reason, size_t reason_len)
{
	p[0] = (unsigned char)k->scope_len;
	p[1] = (unsigned char)reason_len;
	util_put_le16(p + 2, (uint16_t)k->id_len);
	util_put_le64(p + 4, (uint64_t)revoked_at);
	p += TABLE_REC_HDR_LEN;
	memcpy(p, k->scope, k->scope_len);
	p += k->scope_len;
	*p++ = 0;
	memcpy(p, k->id, k->id_len);
	p += k->id_len;
	if (reason_len > 0)
		memcpy(p, reason, reason_len);
}

bool
tb_key_ok(const struct revkey *k)
{
	return k->scope_len >= 1 && k->scope_len <= REVKEY_SCOPE_MAX &&
	    k->id_len >= 1 && k->id_len <= REVKEY_ID_MAX &&
	    memchr(k->scope, 0, k->scope_len) == NULL;
}

int
rec_to_table_rec(const unsigned char *r, size_t avail, struct table_rec *out)
{
	size_t sl, il, rl;
	const unsigned char *p = r + TABLE_REC_HDR_LEN;

	memset(out, 0, sizeof(*out));
	if (avail < TABLE_REC_HDR_LEN)
		return -1;
	sl = rec_scope_len(r);
	il = rec_id_len(r);
	rl = rec_reason_len(r);
	if (sl == 0 || sl > REVKEY_SCOPE_MAX || il == 0 ||
	    il > REVKEY_ID_MAX || rl >= TABLE_REASON_MAX ||
	    tb_rec_size(sl, il, rl) > avail)
		return -1;
	memcpy(out->key.scope, p, sl);
	out->key.scope[sl] = '\0';
	out->key.scope_len = sl;
	memcpy(out->key.id, p + sl + 1, il);
	out->key.id_len = il;
	out->revoked_at = rec_revoked(r);
	memcpy(out->reason, p + sl + 1 + il, rl);
	out->reason[rl] = '\0';
	return 0;
}

/* ---------------------------------------------------------------------- */
/* The builder. */

void
table_builder_init(struct table_builder *b)
{
	assert(b != NULL);
	memset(b, 0, sizeof(*b));
	b->sorted = true;
}

void
tb_prefault_stop(struct table_builder *b)
{
	util_prefault_stop(b->apf);
	util_prefault_stop(b->epf);
	b->apf = b->epf = NULL;
}

void
table_builder_free(struct table_builder *b)
{
	if (b == NULL)
		return;
	tb_prefault_stop(b);
	free(b->arena);
	free(b->ents);
	free(b->offs);
	table_builder_init(b);
}

/*
 * Back from the packed form to one entry per record (the arena stays
 * the record area, records are appended after it). 0, or -1 when memory
 * runs out (b unchanged).
 */
static int
tb_unpack(struct table_builder *b)
{
	struct table_ent *e;
	size_t i, cap = b->n > 0 ? b->n : 1;

	if (b->offs == NULL)
		return 0;
	tb_prefault_stop(b);
	if (cap > SIZE_MAX / sizeof(*e))
		return -1;
	e = realloc(b->offs, cap * sizeof(*e));
	if (e == NULL)
		return -1;
	/* Backwards: entry i (16 bytes) covers offsets 2i and 2i + 1. */
	for (i = b->n; i-- > 0;) {
		uint64_t o = ((uint64_t *)(void *)e)[i];

		e[i].off = o;
		e[i].pfx = 0;
	}
	b->offs = NULL;
	b->ents = e;
	b->ncap = cap;
	b->epop = 0;
	b->gap_at = b->gap_len = 0;
	return 0;
}

/*
 * Populates buf from byte have, which covers at least need bytes, up to
 * UTIL_POPULATE_STEP past need or to cap; returns the new populated end.
 * Below that step the faults are too few to batch.
 */
static size_t
tb_populate(void *buf, size_t have, size_t need, size_t cap)
{
	size_t to;

	if (cap < UTIL_POPULATE_STEP)
		return cap;
	to = need > cap - UTIL_POPULATE_STEP ? cap : need + UTIL_POPULATE_STEP;
	util_populate((unsigned char *)buf + have, to - have);
	return to;
}

/*
 * Makes buf ready up to need (have: ready so far, cap: its size): from the
 * prefault thread pf, which works from byte base on, or by populating.
 * Returns how far it is ready.
 */
static size_t
tb_ready(struct util_prefault *pf, size_t base, void *buf, size_t have,
    size_t need, size_t cap)
{
	if (pf != NULL && need > base)
		return base + util_prefault_need(pf, need - base);
	return tb_populate(buf, have, need, cap);
}

int
table_builder_reserve(struct table_builder *b, size_t nrecs, size_t bytes)
{
	struct table_ent *e;
	unsigned char *p;

	assert(b != NULL);
	if (b->offs != NULL || nrecs > TABLE_MAX_RECORDS - b->n ||
	    bytes > (size_t)TB_OFF_MASK - b->len)
		return -1;
	tb_prefault_stop(b);
	if (b->len + bytes > b->cap) {
		if ((p = realloc(b->arena, b->len + bytes)) == NULL)
			return -1;
		b->arena = p;
		b->cap = b->len + bytes;
	}
	if (b->n + nrecs > b->ncap) {
		if ((e = realloc(b->ents, (b->n + nrecs) * sizeof(*e))) ==
		    NULL)
			return -1;
		b->ents = e;
		b->ncap = b->n + nrecs;
	}
	b->abase = b->len;
	b->apop = b->len;
	b->apf = util_prefault_start(b->arena + b->len, b->cap - b->len);
	b->ebase = b->n * sizeof(*b->ents);
	b->epop = b->ebase;
	b->epf = util_prefault_start(b->ents + b->n, (b->ncap - b->n) *
	    sizeof(*b->ents));
	return 0;
}

int
table_builder_add(struct table_builder *b, const struct revkey *k,
    int64_t revoked_at, const char *reason)
{
	size_t rlen = reason != NULL ? strlen(reason) : 0;
	size_t sz;

	assert(b != NULL && k != NULL);
	if (!tb_key_ok(k) || rlen >= TABLE_REASON_MAX ||
	    !tb_reason_ok(reason, rlen)) {
		errno = EINVAL;
		return -1;
	}
	if ((uint64_t)b->n >= TABLE_MAX_RECORDS) {
		errno = EINVAL;
		return -1;
	}
	if (tb_unpack(b) != 0) {
		errno = ENOMEM;
		return -1;
	}
	sz = tb_rec_size(k->scope_len, k->id_len, rlen);
	if (b->len + sz > b->cap) {
		size_t ncap = b->cap ? b->cap : 1 << 16;
		unsigned char *p;

		while (ncap < b->len + sz) {
			if (ncap > (size_t)TB_OFF_MASK / 2) {
				errno = ENOMEM;
				return -1;
			}
			ncap *= 2;
		}
		tb_prefault_stop(b);
		p = realloc(b->arena, ncap);
		if (p == NULL) {
			errno = ENOMEM;
			return -1;
		}
		b->arena = p;
		b->cap = ncap;
	}
	if (b->n == b->ncap) {
		size_t ncap = b->ncap ? b->ncap * 2 : 1024;
		struct table_ent *e;

		if (ncap > SIZE_MAX / sizeof(*e)) {
			errno = ENOMEM;
			return -1;
		}
		tb_prefault_stop(b);
		e = realloc(b->ents, ncap * sizeof(*e));
		if (e == NULL) {
			errno = ENOMEM;
			return -1;
		}
		b->ents = e;
		b->ncap = ncap;
	}
	if (b->len + sz > b->apop)
		b->apop = tb_ready(b->apf, b->abase, b->arena, b->apop,
		    b->len + sz, b->cap);
	if ((b->n + 1) * sizeof(*b->ents) > b->epop)
		b->epop = tb_ready(b->epf, b->ebase, b->ents, b->epop,
		    (b->n + 1) * sizeof(*b->ents), b->ncap * sizeof(*b->ents));
	tb_rec_put(b->arena + b->len, k, revoked_at, reason, rlen);
	b->ents[b->n].pfx = 0;
	b->ents[b->n].off = b->len;
	b->n++;
	b->len += sz;
	b->sorted = false;
	return 0;
}

int
table_builder_add_rec(struct table_builder *b, const struct table_rec *r)
{
	assert(r != NULL);
	if (memchr(r->reason, 0, sizeof(r->reason)) == NULL) {
		errno = EINVAL;
		return -1;
	}
	return table_builder_add(b, &r->key, r->revoked_at, r->reason);
}

size_t
table_builder_count(const struct table_builder *b)
{
	assert(b != NULL);
	return b->n;
}

void
table_builder_truncate(struct table_builder *b, size_t n)
{
	assert(b != NULL && n <= b->n && b->offs == NULL);
	if (n == b->n)
		return;
	b->len = n == 0 ? 0 : (size_t)(b->ents[n].off & TB_OFF_MASK);
	b->n = n;
}

void
table_builder_drop(struct table_builder *b, const bool *keep)
{
	size_t i, w = 0;

	assert(b != NULL && (keep != NULL || b->n == 0) && b->offs == NULL);
	for (i = 0; i < b->n; i++)
		if (keep[i])
			b->ents[w++] = b->ents[i];
	b->n = w;
	b->sorted = false;
}

/*
 * Emits the table file through a sink in chunks of at most TB_CHUNK bytes.
 * The sink returns 0 or -1 (and then has filled err).
 */
#define TB_CHUNK (1u << 20)

typedef int (*tb_sink_fn)(void *arg, const unsigned char *p, size_t n,
    char *err, size_t errlen);

struct tb_out {
	unsigned char	*buf;
	size_t		 len;
	tb_sink_fn	 sink;
	void		*arg;
	char		*err;
	size_t		 errlen;
};

static int
tb_out_flush(struct tb_out *o)
{
	int rc = 0;

	if (o->len > 0)
		rc = o->sink(o->arg, o->buf, o->len, o->err, o->errlen);
	o->len = 0;
	return rc;
}

static int
tb_out_put(struct tb_out *o, const unsigned char *p, size_t n)
{
	while (n > 0) {
		size_t room = TB_CHUNK - o->len, c = n < room ? n : room;

		memcpy(o->buf + o->len, p, c);
		o->len += c;
		p += c;
		n -= c;
		if (o->len == TB_CHUNK && tb_out_flush(o) != 0)
			return -1;
	}
	return 0;
}

/* The record area's length (computed by table_builder_sort_unique). */
static uint64_t
tb_records_len(const struct table_builder *b)
{
	return b->sorted ? b->rlen : 0;
}

/* Sends n bytes straight to the sink in chunks of at most TB_CHUNK. */
static int
tb_out_direct(struct tb_out *o, const unsigned char *p, size_t n)
{
	size_t c;

	for (; n > 0; p += c, n -= c) {
		c = n < TB_CHUNK ? n : TB_CHUNK;
		if (o->sink(o->arg, p, c, o->err, o->errlen) != 0)
			return -1;
	}
	return 0;
}

static int
tb_emit(const struct table_builder *b, tb_sink_fn sink, void *arg,
    uint64_t *total, char *err, size_t errlen)
{
	struct tb_out o = { NULL, 0, sink, arg, err, errlen };
	unsigned char hdr[TABLE_HDR_LEN], le[8];
	uint64_t rlen;
	size_t i;
	int rc = -1;

	if (!b->sorted) {
		util_errf(err, errlen, "table: records not sorted");
		return -1;
	}
	o.buf = malloc(TB_CHUNK);
	if (o.buf == NULL) {
		util_errf(err, errlen, "table: out of memory");
		return -1;
	}
	rlen = tb_records_len(b);
	memset(hdr, 0, sizeof(hdr));
	memcpy(hdr, TABLE_MAGIC, 8);
	util_put_le16(hdr + 8, TABLE_FORMAT);
	util_put_le64(hdr + 16, (uint64_t)b->n);
	util_put_le64(hdr + 24, rlen);
	if (tb_out_put(&o, hdr, sizeof(hdr)) != 0)
		goto out_free;
	for (i = 0; i < b->n; i++) {
		util_put_le64(le, tb_out_off(b, i));
		if (tb_out_put(&o, le, 8) != 0)
			goto out_free;
	}
	if (b->offs != NULL) {
		/* Packed: the arena is the record area, sent as it lies on
		 * both sides of the gap. */
		if (tb_out_flush(&o) != 0 || tb_out_direct(&o, b->arena,
		    (size_t)b->gap_at) != 0 || tb_out_direct(&o, b->arena +
		    b->gap_at + b->gap_len, (size_t)(rlen - b->gap_at)) != 0)
			goto out_free;
		goto done;
	}
	for (i = 0; i < b->n; i++) {
		const unsigned char *r = tb_rec(b, i);
		uint64_t sz = tb_out_off(b, i + 1) - tb_out_off(b, i);

		table_builder_prefetch(b, i + TB_AHEAD);
		/* The size the sort recorded is the record's own. */
		assert(sz == rec_size(r));
		if (tb_out_put(&o, r, (size_t)sz) != 0)
			goto out_free;
	}
done:
	if (tb_out_flush(&o) != 0)
		goto out_free;
	if (total != NULL)
		*total = TABLE_HDR_LEN + 8 * (uint64_t)b->n + rlen;
	rc = 0;
out_free:
	free(o.buf);
	return rc;
}

static int
tb_sink_sha(void *arg, const unsigned char *p, size_t n, char *err,
    size_t errlen)
{
	if (EVP_DigestUpdate(arg, p, n) != 1) {
		util_errf(err, errlen, "table: SHA-256 failed");
		return -1;
	}
	return 0;
}

int
table_builder_digest(const struct table_builder *b, unsigned char sha[32],
    uint64_t *len, char *err, size_t errlen)
{
	EVP_MD_CTX *ctx;
	unsigned int dlen = 0;
	int rc = -1;

	assert(b != NULL && sha != NULL && len != NULL);
	ctx = EVP_MD_CTX_new();
	if (ctx == NULL || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
		util_errf(err, errlen, "table: SHA-256 failed");
		goto out;
	}
	if (tb_emit(b, tb_sink_sha, ctx, len, err, errlen) != 0)
		goto out;
	if (EVP_DigestFinal_ex(ctx, sha, &dlen) != 1 || dlen != 32) {
		util_errf(err, errlen, "table: SHA-256 failed");
		goto out;
	}
	rc = 0;
out:
	EVP_MD_CTX_free(ctx);
	return rc;
}

struct tb_membuf {
	unsigned char	*p;
	size_t		 len;
	size_t		 cap;
};

static int
tb_sink_mem(void *arg, const unsigned char *p, size_t n, char *err,
    size_t errlen)
{
	struct tb_membuf *m = arg;

	if (n > m->cap - m->len) {
		util_errf(err, errlen, "table: size changed while encoding");
		return -1;
	}
	memcpy(m->p + m->len, p, n);
	m->len += n;
	return 0;
}

int
table_builder_encode(const struct table_builder *b, unsigned char **out,
    size_t *outlen, char *err, size_t errlen)
{
	struct tb_membuf m = { NULL, 0, 0 };
	uint64_t total;

	assert(b != NULL && out != NULL && outlen != NULL);
	*out = NULL;
	*outlen = 0;
	total = TABLE_HDR_LEN + 8 * (uint64_t)b->n + tb_records_len(b);
	if (total > SIZE_MAX) {
		util_errf(err, errlen, "table: too large");
		return -1;
	}
	m.cap = (size_t)total;
	m.p = malloc(m.cap);
	if (m.p == NULL) {
		util_errf(err, errlen, "table: out of memory (%" PRIu64 " bytes)",
		    total);
		return -1;
	}
	if (tb_emit(b, tb_sink_mem, &m, NULL, err, errlen) != 0) {
		free(m.p);
		return -1;
	}
	assert(m.len == m.cap);
	*out = m.p;
	*outlen = m.len;
	return 0;
}

/* The file's bytes to fd through the direct writer, and to SHA-256. */
struct tb_fdsink {
	struct util_dwriter	 w;
	EVP_MD_CTX		*ctx;	/* NULL: no digest */
};

static int
tb_sink_fd(void *arg, const unsigned char *p, size_t n, char *err,
    size_t errlen)
{
	struct tb_fdsink *s = arg;

	if (s->ctx != NULL && EVP_DigestUpdate(s->ctx, p, n) != 1) {
		util_errf(err, errlen, "table: SHA-256 failed");
		return -1;
	}
	if (util_dw_write(&s->w, p, n) != 0) {
		util_errf(err, errlen, "table: write: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int
table_builder_write(const struct table_builder *b, int fd,
    unsigned char sha[32], uint64_t *len, char *err, size_t errlen)
{
	struct tb_fdsink s;
	unsigned int dlen = 0;
	int rc = -1;

	assert(b != NULL && fd >= 0);
	memset(&s, 0, sizeof(s));
	if (sha != NULL && ((s.ctx = EVP_MD_CTX_new()) == NULL ||
	    EVP_DigestInit_ex(s.ctx, EVP_sha256(), NULL) != 1)) {
		util_errf(err, errlen, "table: SHA-256 failed");
		goto out;
	}
	if (util_dw_open(&s.w, fd, true) != 0) {
		util_errf(err, errlen, "table: %s", strerror(errno));
		goto out;
	}
	if (tb_emit(b, tb_sink_fd, &s, len, err, errlen) != 0) {
		util_dw_abort(&s.w);
		goto out;
	}
	if (util_dw_close(&s.w) != 0) {
		util_errf(err, errlen, "table: write: %s", strerror(errno));
		goto out;
	}
	if (sha != NULL && (EVP_DigestFinal_ex(s.ctx, sha, &dlen) != 1 ||
	    dlen != 32)) {
		util_errf(err, errlen, "table: SHA-256 failed");
		goto out;
	}
	rc = 0;
out:
	EVP_MD_CTX_free(s.ctx);
	return rc;
}
