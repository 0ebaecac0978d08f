/* build_exact.c - filterbuild build: exact scopes over the issued set */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#include "exact.h"
#include "fb.h"
#include "util.h"

/* The records of one scope of the sorted builder, as an exact_src. */
struct bx_rsrc {
	const struct table_builder *tb;
	size_t		 start, end, i;
};

static int
bx_r_rewind(void *arg, char *err, size_t errlen)
{
	struct bx_rsrc *r = arg;

	(void)err;
	(void)errlen;
	r->i = r->start;
	return 0;
}

static int
bx_r_next(void *arg, const unsigned char **key, size_t *len, char *err,
    size_t errlen)
{
	struct bx_rsrc *r = arg;

	(void)err;
	(void)errlen;
	if (r->i >= r->end)
		return 0;
	*key = table_builder_key(r->tb, r->i++, len);
	return 1;
}

/* The [start, end) records of scope name in the sorted builder. */
static void
bx_range(const struct table_builder *tb, const char *name, size_t *start,
    size_t *end)
{
	size_t n = table_builder_count(tb), i = 0, sl, nl = strlen(name);
	const char *sc;

	*start = *end = 0;
	while (i < n) {
		sc = table_builder_scope(tb, i, &sl);
		if (sl == nl && memcmp(sc, name, nl) == 0) {
			*start = i;
			*end = table_builder_scope_end(tb, i);
			return;
		}
		i = table_builder_scope_end(tb, i);
	}
}

/* The set's scope entry named name, or NULL. */
static struct ffile_scope *
bx_set_scope(struct input_set *set, const char *name)
{
	size_t i;

	for (i = 0; i < set->nscopes; i++)
		if (strcmp(set->scopes[i].name, name) == 0)
			return &set->scopes[i];
	return NULL;
}

static int
bx_range_cmp(const void *a, const void *b)
{
	const struct pair_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * Scope sc made exact over the issued stream u, complete up to cutoff:
 * its records are R. Warns when ids of R were not in U. 0, or -1 with err.
 */
static int
bx_one(struct fb_exact *x, const struct table_builder *tb,
    struct ffile_scope *sc, const struct exact_src *u, int64_t cutoff,
    char *err, size_t errlen)
{
	struct bx_rsrc rs = { tb, 0, 0, 0 };
	struct exact_src r = { &rs, bx_r_rewind, bx_r_next };
	struct exact_stats st;
	unsigned char sb[8], *blob = NULL, **nb;
	size_t blen;
	char why[512];

	bx_range(tb, sc->name, &rs.start, &rs.end);
	if (RAND_bytes(sb, sizeof(sb)) != 1) {
		util_errf(err, errlen, "no randomness for a seed");
		return -1;
	}
	if (exact_build(&r, u, util_get_le64(sb), &blob, &blen, &st, why,
	    sizeof(why)) != 0) {
		util_errf(err, errlen, "scope %s: exact structure: %s", sc->name,
		    why);
		return -1;
	}
	if ((nb = realloc(x->blobs, (x->nblobs + 1) * sizeof(*nb))) == NULL) {
		free(blob);
		util_errf(err, errlen, "out of memory");
		return -1;
	}
	x->blobs = nb;
	x->blobs[x->nblobs++] = blob;
	/* A scope without records leaves nothing out (and no empty range). */
	if (rs.end > rs.start) {
		x->skip[x->nskip].start = rs.start;
		x->skip[x->nskip++].end = rs.end;
	}
	if (st.revoked_not_issued > 0)
		fb_err("warning: scope %s: %" PRIu64 " revoked id(s) not in the "
		    "issued set were added to it", sc->name,
		    st.revoked_not_issued);
	sc->exact = true;
	sc->ex.cutoff = cutoff;
	sc->ex.issued = st.issued;
	sc->ex.blob = blob;
	sc->ex.blob_len = blen;
	if (!x->quiet)
		printf("exact scope %s: |U| %" PRIu64 ", |R| %" PRIu64 ", w %"
		    PRIu32 ", %" PRIu64 " bits (%.3f x the bound %.0f)\n",
		    sc->name, st.issued, st.revoked, st.w, st.bits,
		    st.bound_bits > 0 ? (double)st.bits / st.bound_bits : 0.0,
		    st.bound_bits);
	return 0;
}

/* The --issued files' scopes made exact. 0, or -1 with err. */
static int
bx_files(struct fb_exact *x, struct input_set *set, char *err,
    size_t errlen)
{
	struct issued_stream *st;
	struct exact_src u;
	struct ffile_scope *sc;
	const struct issued_scope *is;
	int64_t cutoff;
	size_t i;

	if (issued_scan(&x->files, err, errlen) != 0)
		return -1;
	for (i = 0; i < x->files.nscopes; i++) {
		is = &x->files.scopes[i];
		if ((sc = bx_set_scope(set, is->name)) == NULL) {
			fb_err("warning: --issued: %" PRIu64 " id(s) of scope %s, "
			    "which no input covers: left out", is->listed,
			    is->name);
			continue;
		}
		if (is->from_list && x->cutoff == 0) {
			util_errf(err, errlen, "--issued: scope %s: an id list "
			    "needs --issued-cutoff (the time up to which it "
			    "lists every id issued)", is->name);
			return -1;
		}
		cutoff = x->cutoff != 0 ? x->cutoff : is->newest;
		if ((st = issued_stream_new(&x->files, is->name)) == NULL) {
			util_errf(err, errlen, "out of memory");
			return -1;
		}
		issued_stream_src(st, &u);
		if (bx_one(x, &set->builder, sc, &u, cutoff, err, errlen) != 0) {
			issued_stream_free(st);
			return -1;
		}
		issued_stream_free(st);
	}
	return 0;
}

int
fb_exact_build(struct fb_exact *x, struct input_set *set, char *err,
    size_t errlen)
{
	size_t i, n = 0;
	int rc = 0;

	/* A scope kept from the previous version is exact only if made so. */
	for (i = 0; i < set->nscopes; i++) {
		set->scopes[i].exact = false;
		memset(&set->scopes[i].ex, 0, sizeof(set->scopes[i].ex));
	}
	if (x->files.npaths > 0)
		n += ISSUED_MAX_SCOPES;
	if (x->pg != NULL)
		n += set->nscopes;
	if (n == 0)
		return 0;
	if ((x->skip = calloc(n, sizeof(*x->skip))) == NULL) {
		util_errf(err, errlen, "out of memory");
		return -1;
	}
	if (x->files.npaths > 0)
		rc = bx_files(x, set, err, errlen);
	if (rc == 0 && x->pg != NULL)
		rc = fb_exact_pg(x, set, err, errlen);
	if (rc == 0)
		qsort(x->skip, x->nskip, sizeof(*x->skip), bx_range_cmp);
	return rc;
}

/* A scope from the source's issued table (fb_exact_pg). */
int
fb_exact_scope(struct fb_exact *x, struct input_set *set, const char *name,
    const struct exact_src *u, int64_t cutoff, char *err, size_t errlen)
{
	struct ffile_scope *sc;

	if ((sc = bx_set_scope(set, name)) == NULL || sc->exact)
		return 0;	/* not covered, or made exact by --issued */
	return bx_one(x, &set->builder, sc, u, cutoff, err, errlen);
}

void
fb_exact_free(struct fb_exact *x)
{
	size_t i;

	for (i = 0; i < x->nblobs; i++)
		free(x->blobs[i]);
	free(x->blobs);
	free(x->skip);
	issued_free(&x->files);
	memset(x, 0, sizeof(*x));
}
