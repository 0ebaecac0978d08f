/* pair.c - sorted records to a signed filter and its table, published as one version */
#include "pair.h"

#include <assert.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#include "publish.h"
#include "util.h"

/*
 * The add loop hints ahead: records PAIR_AHEAD * 2 keys ahead (in the key
 * source), filter lines PAIR_AHEAD keys ahead through a ring of hashes.
 */
#define PAIR_AHEAD	8
#define PAIR_RING	16	/* a power of two above PAIR_AHEAD */

static void
pair_phase(const struct pair_opts *o, const char *step)
{
	if (o->phase != NULL)
		o->phase(o->phase_arg, step);
}

int
pair_filter(struct bloom *b, enum bloom_layout layout, size_t n,
    uint64_t m, uint32_t k, uint64_t seed, bloom_key_fn key, void *arg,
    char *err, size_t errlen)
{
	struct bloom_hash ring[PAIR_RING];
	const void *kb;
	size_t i, klen;

	assert(b != NULL && key != NULL);
	if (bloom_fuse_packed(layout) || layout == BLOOM_FUSE8) {
		if ((layout == BLOOM_FUSE ? bloom_build_fuse(b, k, n, seed, key,
		    arg) : layout == BLOOM_FUSE128 ? bloom_build_fuse128(b, k, n,
		    seed, key, arg) : bloom_build_fuse8(b, n, seed, key, arg)) == 0)
			return 0;
		(void)snprintf(err, errlen, "cannot build a fuse filter of %zu "
		    "keys: out of memory, over %" PRIu64 " keys, or no seed gave "
		    "a complete construction", n, BLOOM_FUSE_MAX_KEYS);
		return -1;
	}
	if (bloom_init(b, layout, m, k, seed) != 0) {
		(void)snprintf(err, errlen, "out of memory for a %" PRIu64
		    "-bit filter", m);
		return -1;
	}
	for (i = 0; i < n + PAIR_AHEAD; i++) {
		if (i < n) {
			kb = key(arg, i, &klen);
			ring[i & (PAIR_RING - 1)] = bloom_hash(b, kb, klen);
			bloom_prefetch(b, &ring[i & (PAIR_RING - 1)]);
		}
		if (i >= PAIR_AHEAD)
			bloom_add_hash(b, &ring[(i - PAIR_AHEAD) &
			    (PAIR_RING - 1)]);
	}
	return 0;
}

int
pair_layout(size_t n, double fp_rate, enum bloom_layout asked,
    enum bloom_layout *layout, char *err, size_t errlen)
{
	*layout = asked != 0 ? asked : bloom_pick_layout(n, fp_rate);
	if (bloom_fuse_packed(*layout) && bloom_fuse_width(fp_rate) == 0) {
		(void)snprintf(err, errlen, "--layout fuse reaches FP rates down "
		    "to 2^-16 (0.0000152587890625), above --fp-rate %g: use "
		    "--layout blocked or classic, or an --fp-rate of 2^-16 or "
		    "more", fp_rate);
		return -1;
	}
	if (*layout == BLOOM_FUSE8 && fp_rate < BLOOM_FUSE8_FP) {
		(void)snprintf(err, errlen, "the fuse8 layout has the fixed FP "
		    "rate 1/256, above the target %g", fp_rate);
		return -1;
	}
	return 0;
}

/* The key source over a sorted builder: hints the records ahead. */
static const void *
pair_key(void *arg, size_t i, size_t *len)
{
	table_builder_prefetch(arg, i + 2 * PAIR_AHEAD);
	return table_builder_key(arg, i, len);
}

/* The builder less the skipped ranges (exact scopes). */
struct pair_skipped {
	const struct table_builder *tb;
	const struct pair_range *r;
	size_t		 nr;
};

static const void *
pair_key_skipped(void *arg, size_t i, size_t *len)
{
	const struct pair_skipped *ps = arg;
	size_t j;

	for (j = 0; j < ps->nr && ps->r[j].start <= i; j++)
		i += ps->r[j].end - ps->r[j].start;
	return pair_key((void *)(uintptr_t)ps->tb, i, len);
}

/* expires_at, lowered to the earliest CRL nextUpdate after issued_at. */
static int64_t
pair_expiry(const struct pair_opts *o, const struct ffile_scope *scopes,
    size_t nscopes)
{
	int64_t expires = o->expires_at;
	size_t i;

	for (i = 0; i < nscopes; i++)
		if (scopes[i].source == FFILE_SRC_CRL &&
		    scopes[i].next_update > o->issued_at &&
		    scopes[i].next_update < expires)
			expires = scopes[i].next_update;
	return expires;
}

/*
 * Steps 1 and 2 of every pair: the layout and its size unless the caller
 * fixed it, then the seed.
 */
static int
pair_shape(size_t n, const struct pair_opts *o, enum bloom_layout *layout,
    uint64_t *m, uint32_t *k, uint64_t *seed, char *err, size_t errlen)
{
	unsigned char seedb[8];

	if (pair_layout(n, o->fp_rate, o->layout, layout, err, errlen) != 0)
		return -1;
	if (o->m != 0 && !bloom_fuse_packed(*layout) && *layout != BLOOM_FUSE8) {
		*m = o->m;
		*k = o->k;
	} else if (bloom_size(*layout, n > 0 ? n : 1, o->fp_rate, m, k) != 0) {
		(void)snprintf(err, errlen, "cannot size a filter for %zu keys "
		    "at fp rate %g", n, o->fp_rate);
		return -1;
	}
	/* A fuse filter sizes itself; pair_filter takes its width as k. */
	if (bloom_fuse_packed(*layout))
		*k = bloom_fuse_width(o->fp_rate);
	if (o->fixed_seed) {
		*seed = o->seed;
	} else {
		if (RAND_bytes(seedb, sizeof(seedb)) != 1) {
			(void)snprintf(err, errlen, "no randomness for the hash "
			    "seed");
			return -1;
		}
		*seed = util_get_le64(seedb);
	}
	return 0;
}

/* The filter over every key of p->tb (distinct: sorted and unique). */
static int
pair_keys(struct pair *p, const struct pair_opts *o, char *err,
    size_t errlen)
{
	struct pair_skipped ps = { p->tb, o->skip, o->nskip };
	enum bloom_layout layout;
	uint64_t m, seed;
	uint32_t k;
	size_t n = table_builder_count(p->tb), i;

	for (i = 0; i < o->nskip; i++) {
		assert(o->skip[i].start <= o->skip[i].end && o->skip[i].end <= n &&
		    (i == 0 || o->skip[i - 1].end <= o->skip[i].start));
		n -= o->skip[i].end - o->skip[i].start;
	}
	if (pair_shape(n, o, &layout, &m, &k, &seed, err, errlen) != 0)
		return -1;
	if (o->nskip > 0)
		return pair_filter(&p->bloom, layout, n, m, k, seed,
		    pair_key_skipped, &ps, err, errlen);
	return pair_filter(&p->bloom, layout, n, m, k, seed, pair_key,
	    (void *)(uintptr_t)p->tb, err, errlen);
}

/* The signed header, once p->info holds the table's digest and size. */
static int
pair_sign(struct pair *p, const struct ffile_scope *scopes, size_t nscopes,
    const struct pair_opts *o, char *err, size_t errlen)
{
	pair_phase(o, "signing");
	p->info.version = o->version;
	p->info.issued_at = o->issued_at;
	p->info.expires_at = pair_expiry(o, scopes, nscopes);
	p->info.keys = table_builder_count(p->tb);
	p->info.fp_rate_target = o->fp_rate;
	p->info.scopes = (struct ffile_scope *)(uintptr_t)scopes;
	p->info.nscopes = (uint32_t)nscopes;
	if (ffile_encode(&p->info, &p->bloom, o->key, &p->filter,
	    &p->filter_len, err, errlen) != 0)
		return -1;
	p->info.layout = p->bloom.layout;
	p->info.m = p->bloom.m;
	p->info.k = p->bloom.k;
	p->info.seglog = p->bloom.seglog;
	p->info.width = bloom_fuse_packed(p->bloom.layout) ? p->bloom.width : 0;
	p->info.seed = p->bloom.seed;
	return 0;
}

int
pair_build(struct pair *p, const struct table_builder *tb,
    const struct ffile_scope *scopes, size_t nscopes,
    const struct pair_opts *o, char *err, size_t errlen)
{
	assert(p != NULL && tb != NULL && o != NULL && o->key != NULL);
	memset(p, 0, sizeof(*p));
	p->tb = tb;
	pair_phase(o, "hashing");
	if (pair_keys(p, o, err, errlen) != 0)
		goto fail;
	/* The header binds the table by its hash; then the signature. */
	pair_phase(o, "hashing the table");
	if (table_builder_digest(tb, p->info.table_sha256, &p->info.table_len,
	    err, errlen) != 0)
		goto fail;
	if (pair_sign(p, scopes, nscopes, o, err, errlen) != 0)
		goto fail;
	return 0;
fail:
	pair_free(p);
	return -1;
}

static int
pair_write_table(void *arg, int fd, char *err, size_t errlen)
{
	return table_builder_write(arg, fd, NULL, NULL, err, errlen);
}

int
pair_publish(const struct pair *p, const char *dir, unsigned keep,
    char *err, size_t errlen)
{
	assert(p != NULL && p->filter != NULL && dir != NULL);
	return publish_pair_stream(dir, p->info.version, p->filter,
	    p->filter_len, pair_write_table, (void *)(uintptr_t)p->tb, keep,
	    err, errlen);
}

/* The table's writer thread of pair_build_publish. */
struct pair_writer {
	struct publish_txn	*txn;
	struct pair		*p;
	int			 rc;
	char			 err[512];
};

static int
pair_write_bound(void *arg, int fd, char *err, size_t errlen)
{
	struct pair *p = arg;

	return table_builder_write(p->tb, fd, p->info.table_sha256,
	    &p->info.table_len, err, errlen);
}

static void *
pair_writer_main(void *arg)
{
	struct pair_writer *w = arg;

	w->rc = publish_txn_file(w->txn, PUBLISH_TABLE_NAME, NULL, 0,
	    pair_write_bound, w->p, w->err, sizeof(w->err));
	return NULL;
}

int
pair_build_publish(struct pair *p, const struct table_builder *tb,
    const struct ffile_scope *scopes, size_t nscopes,
    const struct pair_opts *o, const char *dir, unsigned keep, char *err,
    size_t errlen)
{
	struct publish_txn txn;
	struct pair_writer w;
	pthread_t tid;
	bool thread;
	int rc;

	assert(p != NULL && tb != NULL && o != NULL && o->key != NULL &&
	    dir != NULL);
	memset(p, 0, sizeof(*p));
	p->tb = tb;
	/* The version and the directory first: refused before any work. */
	if (publish_txn_begin(&txn, dir, o->version, err, errlen) != 0)
		return -1;
	memset(&w, 0, sizeof(w));
	w.txn = &txn;
	w.p = p;
	pair_phase(o, "hashing and writing the table");
	thread = pthread_create(&tid, NULL, pair_writer_main, &w) == 0;
	rc = pair_keys(p, o, err, errlen);
	if (thread)
		(void)pthread_join(tid, NULL);
	else if (rc == 0)
		pair_writer_main(&w);	/* no thread: one after the other */
	if (rc == 0 && w.rc != 0) {
		(void)snprintf(err, errlen, "%s", w.err);
		rc = -1;
	}
	if (rc == 0)
		rc = pair_sign(p, scopes, nscopes, o, err, errlen);
	if (rc == 0) {
		pair_phase(o, "publishing");
		rc = publish_txn_file(&txn, PUBLISH_FILTER_NAME, p->filter,
		    p->filter_len, NULL, NULL, err, errlen);
	}
	if (rc != 0) {
		publish_txn_abort(&txn);
		pair_free(p);
		return -1;
	}
	if (publish_txn_commit(&txn, keep, err, errlen) != 0) {
		pair_free(p);
		return -1;
	}
	return 0;
}

void
pair_free(struct pair *p)
{
	if (p == NULL)
		return;
	free(p->filter);
	bloom_free(&p->bloom);
	memset(p, 0, sizeof(*p));
}
